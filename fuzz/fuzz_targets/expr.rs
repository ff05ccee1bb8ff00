//! Fuzzes the expression parser shared by conditions, watch, hover and the CLI
//! (`engine::expr::parse`): any text parses or yields an error, never a panic or a stack
//! overflow, whichever names are types.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let no_types = |_: &str| false;
    let some_types = |name: &str| matches!(name, "T" | "int" | "char" | "size_t" | "Point");
    let _ = engine::expr::parse(text, &no_types);
    let _ = engine::expr::parse(text, &some_types);
});
