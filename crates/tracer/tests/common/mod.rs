//! Helpers shared by the target tests: compile samples, find symbols, scan /proc.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// A sample compiled into its own temporary directory.
pub struct Sample {
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
}

pub fn samples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/c")
}

/// Compiles samples/c/NAME.c with gcc and the given flags.
pub fn compile(name: &str, flags: &[&str]) -> Sample {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(name);
    let src = samples_dir().join(format!("{name}.c"));
    let out = Command::new("gcc")
        .args(flags)
        .arg("-o")
        .arg(&path)
        .arg(&src)
        .output()
        .expect("running gcc");
    assert!(
        out.status.success(),
        "gcc failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Sample { dir, path }
}

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

/// The state letter of a process, None when it is gone (reaped).
pub fn state(pid: i32) -> Option<char> {
    tracer::procfs::process_state(tracer::Pid(pid))
}
