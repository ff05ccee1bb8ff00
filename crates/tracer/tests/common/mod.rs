//! Helpers shared by the tracer tests: the workspace's test support, ELF symbols and bytes.
#![allow(dead_code, unused_imports)]

use std::path::Path;

pub use testsupport::{compile, gone, process_state as state, Sample};

/// The file address of a symbol in the ELF symbol table.
pub fn symbol(path: &Path, name: &str) -> u64 {
    use object::{Object, ObjectSymbol};
    let data = std::fs::read(path).expect("reading the sample");
    let file = object::File::parse(&*data).expect("parsing ELF");
    file.symbols()
        .find(|s| s.name() == Ok(name))
        .map(|s| s.address())
        .unwrap_or_else(|| panic!("no symbol {name}"))
}

/// The bytes of the file at a file address, through the section that holds it.
pub fn file_bytes(path: &Path, addr: u64, len: usize) -> Vec<u8> {
    use object::{Object, ObjectSection};
    let data = std::fs::read(path).expect("reading the sample");
    let file = object::File::parse(&*data).expect("parsing ELF");
    for s in file.sections() {
        if addr >= s.address() && addr + len as u64 <= s.address() + s.size() {
            let d = s.data().expect("section data");
            let off = (addr - s.address()) as usize;
            return d[off..off + len].to_vec();
        }
    }
    panic!("address {addr:#x} in no section");
}
