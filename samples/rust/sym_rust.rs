//! Sample for crates/symbols tests: Rust names, enums with variant parts.

mod geometry {
    pub struct Point {
        pub x: i64,
        pub y: i64,
    }

    impl Point {
        pub fn new(x: i64, y: i64) -> Point {
            Point { x, y }
        }

        pub fn manhattan(&self) -> i64 {
            self.x.abs() + self.y.abs()
        }
    }

    pub fn distance(a: &Point, b: &Point) -> i64 {
        let dx = a.x - b.x;
        let dy = a.y - b.y;
        dx * dx + dy * dy
    }
}

pub enum Shape {
    Circle(u32),
    Rect { w: u16, h: u16 },
    Empty,
}

fn describe(s: &Shape) -> u32 {
    match s {
        Shape::Circle(r) => *r,
        Shape::Rect { w, h } => u32::from(*w) * u32::from(*h),
        Shape::Empty => 0,
    }
}

fn main() {
    let a = geometry::Point::new(1, 2);
    let b = geometry::Point::new(4, 6);
    let shapes = [Shape::Circle(3), Shape::Rect { w: 2, h: 5 }, Shape::Empty];
    let total: u32 = shapes.iter().map(describe).sum();
    println!("{} {} {}", geometry::distance(&a, &b), a.manhattan(), total);
}
