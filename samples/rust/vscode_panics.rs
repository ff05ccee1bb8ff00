//! Sample for tests/vscode_flow.rs: one panic of the kind named by the first argument
//! (`index`, `format`, `none`, `err`, `literal`, `expect`, `str`), after a line of output.

fn pick(v: &[i32], i: usize) -> i32 {
    v[i] // index panics here
}

fn parse(s: &str) -> Result<i32, std::num::ParseIntError> {
    s.parse::<i32>()
}

fn main() {
    let kind = std::env::args().nth(1).unwrap_or_default();
    println!("before the panic: {kind}");
    let v = vec![1, 2, 3];
    let i = std::hint::black_box(6usize);
    let x = std::hint::black_box(42i64);
    let name = std::hint::black_box(String::from("tandem"));
    match kind.as_str() {
        "index" => println!("{}", pick(&v, i)),
        "format" => panic!("x = {}, name = {name}, neg = {}", x, -x),
        "none" => {
            let o: Option<u8> = std::hint::black_box(None);
            println!("{}", o.unwrap());
        }
        "err" => println!("{}", parse("zz").unwrap()),
        "literal" => panic!("a literal message"),
        "expect" => {
            let o: Option<u8> = std::hint::black_box(None);
            println!("{}", o.expect("the value was expected"));
        }
        "str" => panic!("{}", name.as_str()),
        _ => println!("no panic"),
    }
}
