//! Sample for crates/engine value tests: every Rust type the variables view renders
//! natively (strings, collections, enums with niches, smart pointers, cells, maps),
//! stopped in `inspect` and compared with gdb.

use std::cell::{Cell, RefCell};
use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::BuildHasherDefault;
use std::ffi::OsString;
use std::hint::black_box;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;

type Fixed = BuildHasherDefault<DefaultHasher>;

#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub x: i32,
    pub y: i32,
}

#[derive(Debug)]
pub struct Pair(pub u8, pub i64);

#[derive(Debug)]
pub struct Unit;

#[derive(Debug)]
pub enum Shape {
    Circle(u32),
    Rect { w: u16, h: u16 },
    Empty,
}

#[derive(Debug, Clone, Copy)]
pub enum Color {
    Red,
    Green,
    Blue,
}

#[derive(Debug)]
pub enum Tree {
    Leaf(i32),
    Node(Box<Tree>, Box<Tree>),
}

pub mod geometry {
    pub fn area(w: u32, h: u32) -> u32 {
        w * h
    }

    pub struct Rect {
        pub w: u32,
        pub h: u32,
    }

    impl Rect {
        pub fn area(&self) -> u32 {
            area(self.w, self.h)
        }
    }
}

#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn inspect(
    s: &str,
    owned: &String,
    v: &Vec<i32>,
    slice: &[u16],
    p: &Point,
    shape: &Shape,
    n: u64,
) -> u64 {
    let text = "tab\there \"quoted\" é";
    let empty = String::new();
    let words: Vec<String> = vec!["one".to_string(), "two".to_string()];
    let nums = [1i32, 2, 3, 4];
    let bytes: [u8; 4] = [0, 65, 255, 10];
    let deque: VecDeque<i32> = {
        let mut d = VecDeque::with_capacity(4);
        d.push_back(3);
        d.push_back(4);
        d.push_front(2);
        d.push_front(1);
        d
    };
    let some: Option<i32> = Some(5);
    let none: Option<i32> = None;
    let some_ref: Option<&Point> = Some(p);
    let none_box: Option<Box<i32>> = None;
    let ok: Result<&str, i32> = Ok("x");
    let err: Result<u8, String> = Err("bad".to_string());
    let color = Color::Green;
    let circle = Shape::Circle(7);
    let rect = Shape::Rect { w: 3, h: 4 };
    let nothing = Shape::Empty;
    let tree = Tree::Node(Box::new(Tree::Leaf(1)), Box::new(Tree::Leaf(2)));
    let boxed: Box<Point> = Box::new(Point { x: 10, y: 20 });
    let rc = Rc::new(Point { x: 1, y: 2 });
    let rc2 = rc.clone();
    let weak = Rc::downgrade(&rc);
    let arc = Arc::new(String::from("shared"));
    let cell = Cell::new(42u32);
    let refcell = RefCell::new(vec![1u8, 2]);
    let borrowed = refcell.borrow();
    // A fixed hasher keeps the table's order the same on every run.
    let mut map: HashMap<String, i32, Fixed> = HashMap::default();
    map.insert("a".to_string(), 1);
    map.insert("b".to_string(), 2);
    map.insert("c".to_string(), 3);
    let mut set: HashSet<u32, Fixed> = HashSet::default();
    set.insert(7);
    set.insert(9);
    let path = PathBuf::from("/tmp/some/file.txt");
    let os = OsString::from("os-string");
    let path_ref: &std::path::Path = path.as_path();
    let os_ref: &std::ffi::OsStr = os.as_os_str();
    let tuple = (1u8, -2i16, 'z');
    let pair = Pair(9, -9);
    let unit = ();
    let zst = Unit;
    let ch = 'a';
    let emoji = '\u{1f600}';
    let big: i128 = -170141183460469231731687303715884105728;
    let ubig: u128 = 340282366920938463463374607431768211455;
    let raw: *const Point = p;
    let null: *const i32 = std::ptr::null();
    let flag = true;
    let float = 2.5f64;
    let offset = 10i32;
    let add = |x: i32| x + offset;
    let r = geometry::Rect { w: 2, h: 3 };
    black_box((&text, &empty, &words, &nums, &bytes, &deque));
    black_box((&some, &none, &some_ref, &none_box, &ok, &err, &color));
    black_box((&circle, &rect, &nothing, &tree, &boxed, &rc2, &weak, &arc));
    black_box((&cell, &borrowed, &map, &set, &path, &os, &tuple, &pair));
    black_box((&unit, &zst, &ch, &emoji, &big, &ubig, &raw, &null, &flag));
    black_box((&float, &add, &r, &path_ref, &os_ref));
    let total = n + s.len() as u64 + owned.len() as u64 + v.len() as u64 + slice.len() as u64;
    let total = total + p.x as u64 + add(1) as u64 + r.area() as u64;
    black_box(shape); // break here
    total
}

fn main() {
    let owned = String::from("owned string");
    let v = vec![10, 20, 30];
    let arr = [5u16, 6, 7];
    let p = Point { x: 3, y: -4 };
    let shape = Shape::Rect { w: 2, h: 5 };
    let total = inspect("hello", &owned, &v, &arr[..], &p, &shape, 1);
    println!("{total}");
}
