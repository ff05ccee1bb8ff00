//! Checks shared by the reliability suites: nothing left behind (no zombie, no ptrace-stop,
//! launched children gone, attached processes running with their original code), and the
//! resource figures (RSS, open descriptors) of a running tandem.
#![allow(dead_code)]

use std::path::Path;
use std::time::Duration;

use crate::support::dap::{alive, build, tracer_of, wait_until};

/// The reliability sample with every fault mode, built `-g -O0 -pthread`.
pub fn faults_sample() -> std::path::PathBuf {
    build("c/rel_faults.c", "gcc", &["-g", "-O0", "-pthread"])
}

/// The state letter of /proc/PID/stat (`R`, `S`, `t`, `Z`, …), `None` once gone.
pub fn state(pid: i64) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')').next()?.trim().chars().next()
}

/// The parent pid of a process, `None` once gone.
pub fn ppid(pid: i64) -> Option<i64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')')
        .next()?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Every live process whose parent is `parent`, with its state.
pub fn children_of(parent: i64) -> Vec<(i64, char)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i64>().ok())
        .filter(|pid| ppid(*pid) == Some(parent))
        .filter_map(|pid| Some((pid, state(pid)?)))
        .collect()
}

/// The states of every thread of a process.
pub fn thread_states(pid: i64) -> Vec<(i64, char)> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i64>().ok())
        .filter_map(|tid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).ok()?;
            Some((tid, stat.rsplit(')').next()?.trim().chars().next()?))
        })
        .collect()
}

/// The `.text` section of an ELF file: its address (file-relative) and its bytes.
pub fn elf_text(path: &Path) -> (u64, Vec<u8>) {
    let data = std::fs::read(path).unwrap();
    let u16_at = |o: usize| u16::from_le_bytes(data[o..o + 2].try_into().unwrap()) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(data[o..o + 4].try_into().unwrap()) as usize;
    let u64_at = |o: usize| u64::from_le_bytes(data[o..o + 8].try_into().unwrap());
    assert_eq!(&data[..5], b"\x7fELF\x02", "a 64-bit ELF file");
    let shoff = u64_at(0x28) as usize;
    let shentsize = u16_at(0x3a);
    let shnum = u16_at(0x3c);
    let shstrndx = u16_at(0x3e);
    let section = |i: usize| shoff + i * shentsize;
    let strtab = u64_at(section(shstrndx) + 0x18) as usize;
    for i in 0..shnum {
        let s = section(i);
        let name_at = strtab + u32_at(s);
        let name_end = name_at + data[name_at..].iter().position(|b| *b == 0).unwrap();
        if &data[name_at..name_end] == b".text" {
            let addr = u64_at(s + 0x10);
            let offset = u64_at(s + 0x18) as usize;
            let size = u64_at(s + 0x20) as usize;
            return (addr, data[offset..offset + size].to_vec());
        }
    }
    panic!("no .text in {}", path.display());
}

/// The load bias of `program` in process `pid` (the start of its mapping at offset 0).
pub fn load_bias(pid: i64, program: &Path) -> u64 {
    let canonical = program.canonicalize().unwrap();
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    for line in maps.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() >= 6
            && fields[2] == "00000000"
            && Path::new(fields[5]) == canonical.as_path()
        {
            let start = fields[0].split('-').next().unwrap();
            return u64::from_str_radix(start, 16).unwrap();
        }
    }
    panic!("{} is not mapped in {pid}:\n{maps}", program.display());
}

/// Asserts that the code of `program` in process `pid` is byte for byte the file's `.text`
/// (no int3 left behind).
pub fn assert_text_intact(pid: i64, program: &Path) {
    use std::os::unix::fs::FileExt;
    let (addr, expected) = elf_text(program);
    let bias = load_bias(pid, program);
    let mem = std::fs::File::open(format!("/proc/{pid}/mem")).unwrap();
    let mut actual = vec![0u8; expected.len()];
    mem.read_exact_at(&mut actual, bias + addr).unwrap();
    if let Some(i) = (0..expected.len()).find(|i| actual[*i] != expected[*i]) {
        panic!(
            "text of {pid} differs from {} at .text+{i:#x}: {:#04x} instead of {:#04x}",
            program.display(),
            actual[i],
            expected[i]
        );
    }
}

/// Nothing left behind by `tandem` (pid `tandem`, possibly gone): every launched process
/// gone, every attached one running untraced with its original code, and no child of
/// tandem a zombie or in a ptrace stop.
pub fn assert_clean(tandem: i64, launched: &[i64], attached: &[(i64, &Path)]) {
    for &pid in launched {
        assert!(
            wait_until(Duration::from_secs(10), || !alive(pid)),
            "launched debuggee {pid} is still alive ({:?})",
            state(pid)
        );
        // Gone for good: reaped, not a zombie kept by a parent that is still alive.
        assert!(
            wait_until(Duration::from_secs(10), || state(pid).is_none()
                || ppid(pid) != Some(tandem)),
            "launched debuggee {pid} is an unreaped zombie of tandem"
        );
    }
    for &(pid, program) in attached {
        assert!(alive(pid), "attached process {pid} died");
        assert!(
            wait_until(Duration::from_secs(10), || tracer_of(pid) == 0),
            "attached process {pid} is still traced by {}",
            tracer_of(pid)
        );
        // Running: no thread in a ptrace or job-control stop.
        assert!(
            wait_until(Duration::from_secs(10), || thread_states(pid)
                .iter()
                .all(|(_, s)| *s != 't' && *s != 'T')),
            "attached process {pid} has stopped threads: {:?}",
            thread_states(pid)
        );
        assert_text_intact(pid, program);
    }
    let leftovers = || {
        children_of(tandem)
            .into_iter()
            .filter(|(_, s)| matches!(s, 'Z' | 't' | 'T'))
            .collect::<Vec<_>>()
    };
    assert!(
        wait_until(Duration::from_secs(10), || leftovers().is_empty()),
        "children of tandem left behind: {:?}",
        leftovers()
    );
}

/// Resident set size of a process, in KiB.
pub fn rss_kib(pid: i64) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Number of open file descriptors of a process.
pub fn fd_count(pid: i64) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// Number of threads of a process.
pub fn thread_count(pid: i64) -> usize {
    thread_states(pid).len()
}

/// A directory removed when the test ends, passing or not.
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    /// A fresh, canonical directory under the temp dir, named after `tag` and this process.
    pub fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("tandem-rel-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir.canonicalize().unwrap())
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
