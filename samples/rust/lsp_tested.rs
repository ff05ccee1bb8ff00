//! Sample for tandem's language-server tests: code lenses above `main` and `#[test]`s.

fn double(x: i32) -> i32 {
    x * 2
}

fn main() {
    println!("double 21 = {}", double(21));
}

#[cfg(test)]
mod tests {
    use super::double;

    #[test]
    fn doubles() {
        assert_eq!(double(2), 4);
    }
}
