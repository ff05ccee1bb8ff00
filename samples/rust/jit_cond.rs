//! Conditions evaluated in the debuggee, Rust side (tests/conditions_in_debuggee.rs): the
//! same conditional breakpoints stop at the same hits with and without it, Rust's integer
//! semantics included (mathematical comparisons, overflow as an error).
use std::hint::black_box;

fn work(i: usize, small: u8, signed: i32, big: u64) {
    let doubled = i * 2;
    black_box((i, small, signed, big, doubled)); // LINE_RUST_WORK
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(3000);
    for i in 0..n {
        work(i, (i % 256) as u8, i as i32 - 1500, (i as u64) * 3_000_000_000);
    }
}
