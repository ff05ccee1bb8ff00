//! Sample for crates/engine exception tests: a panic with a literal message caught by
//! `catch_unwind`, then one with a formatted message that ends the program.

fn check(n: u32) -> u32 {
    if n > 2 {
        panic!("too big: {}", n);
    }
    n
}

fn main() {
    std::panic::set_hook(Box::new(|_| {}));
    let caught = std::panic::catch_unwind(|| {
        panic!("boom");
    });
    assert!(caught.is_err());
    let n = std::hint::black_box(5);
    println!("{}", check(n));
}
