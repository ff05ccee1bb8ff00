// Statics by path for tests/scopes_gdb.rs: the same name at the crate root and in two
// modules, a nested module, a const, a unit-only enum and a struct static; stopped in
// main and in geometry::area, and compared with gdb's Rust `output`.
static COUNTER: i32 = -5;
static mut HITS: u64 = 0;

pub mod geometry {
    pub static COUNTER: i32 = 7;
    pub static SCALE: f64 = 2.5;
    pub const SIDES: u8 = 4;

    #[derive(Clone, Copy, Debug, PartialEq)]
    pub enum Color {
        Red,
        Green,
        Blue,
    }

    #[derive(Debug)]
    pub struct Pt {
        pub x: i32,
        pub y: i32,
    }

    pub static ORIGIN: Pt = Pt { x: 1, y: -2 };
    pub static FAVOURITE: Color = Color::Blue;

    pub mod inner {
        pub static COUNTER: i64 = 70;
        pub static NAME: &str = "inner";
    }

    pub fn area(p: &Pt) -> i32 {
        let a = p.x * p.y + COUNTER;
        println!("area {a}"); // PATHS AREA
        a
    }
}

fn main() {
    let p = geometry::Pt { x: 3, y: 4 };
    unsafe {
        HITS += 1;
    }
    let a = geometry::area(&p);
    let c = geometry::FAVOURITE;
    println!("{} {:?} {} {} {}", a, c, geometry::SCALE, geometry::inner::COUNTER, COUNTER); // PATHS MAIN
    println!("{} {} {:?} {}", geometry::SIDES, geometry::inner::NAME, geometry::ORIGIN, unsafe { HITS });
}
