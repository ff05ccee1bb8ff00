//! Sample for tandem's language-server tests: Rust paths, impls and a struct layout.

mod geometry {
    pub struct Point {
        pub x: i64,
        pub tag: u8,
        pub y: i32,
    }

    impl Point {
        pub fn new(x: i64, y: i32) -> Point {
            Point { x, tag: 1, y }
        }

        pub fn manhattan(&self) -> i64 {
            self.x.abs() + i64::from(self.y.abs()) + i64::from(self.tag)
        }
    }

    pub fn distance(a: &Point, b: &Point) -> i64 {
        let dx = a.x - b.x;
        dx * dx
    }
}

fn main() {
    let a = geometry::Point::new(1, 2);
    let b = geometry::Point::new(4, 6);
    println!("{} {}", geometry::distance(&a, &b), a.manhattan());
}
