//! An ELF core file (x86-64), read-only: its threads and their registers (NT_PRSTATUS), the
//! fatal signal (NT_SIGINFO, else pr_cursig), the files it mapped (NT_FILE), the auxv and
//! its memory (PT_LOAD segments; bytes a segment omits are read from the mapped file, as
//! the kernel leaves out read-only file-backed pages).
//!
//! Every offset and length is checked: a truncated or corrupt core is an error, never a
//! panic.

use std::path::{Path, PathBuf};

use symbols::{MemoryReader, RuntimeAddr};

use crate::error::{Error, Result};

// The ELF core format's numbers, for reading cores here and writing them (`gcore.rs`).
pub(crate) const PT_LOAD: u32 = 1;
pub(crate) const PT_NOTE: u32 = 4;
pub(crate) const ET_CORE: u16 = 4;
pub(crate) const EM_X86_64: u16 = 62;
pub(crate) const NT_PRSTATUS: u32 = 1;
pub(crate) const NT_FPREGSET: u32 = 2;
pub(crate) const NT_PRPSINFO: u32 = 3;
pub(crate) const NT_AUXV: u32 = 6;
pub(crate) const NT_X86_XSTATE: u32 = 0x202;
pub(crate) const NT_SIGINFO: u32 = 0x5349_4749;
pub(crate) const NT_FILE: u32 = 0x4649_4c45;
/// Offset of xmm0 in the FXSAVE area (`user_fpregs_struct`).
const FX_XMM: usize = 160;
/// Offset of st(0) in the FXSAVE area (8 slots of 16 bytes, stack order).
const FX_ST: usize = 32;
/// Offset of `pr_reg` in x86-64's `struct elf_prstatus`.
const PR_REG: usize = 112;
/// `user_regs_struct` has 27 eight-byte registers.
const USER_REGS: usize = 27;

/// One thread of the core.
#[derive(Clone, Debug)]
pub struct CoreThread {
    /// Its id (`pr_pid`).
    pub tid: i32,
    /// The signal it was stopped by (`pr_cursig`), 0 when none.
    pub signal: i32,
    /// Its general registers.
    pub regs: tracer::Registers,
    /// xmm0–xmm15 (NT_FPREGSET), when the core has them.
    pub xmm: Option<Box<[[u8; 16]; 16]>>,
    /// st(0)–st(7), 10 bytes each (NT_FPREGSET), when the core has them.
    pub st: Option<Box<[[u8; 10]; 8]>>,
}

/// The fatal signal the core records (NT_SIGINFO).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoreSignal {
    /// The signal number.
    pub signo: i32,
    /// `si_code`.
    pub code: i32,
    /// The fault address (`si_addr`) of SIGSEGV, SIGBUS, SIGILL, SIGFPE.
    pub addr: Option<u64>,
}

/// A file mapping recorded in NT_FILE.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreMapping {
    /// First mapped byte.
    pub start: u64,
    /// One past the last mapped byte.
    pub end: u64,
    /// Offset in the file of `start`.
    pub offset: u64,
    /// The file as the process named it.
    pub path: PathBuf,
}

#[derive(Clone, Debug)]
struct Segment {
    vaddr: u64,
    memsz: u64,
    offset: u64,
    filesz: u64,
}

/// A parsed core file.
#[derive(Debug)]
pub struct CoreFile {
    data: Vec<u8>,
    segments: Vec<Segment>,
    /// The threads, in the core's order (the faulting thread first in kernel cores).
    pub threads: Vec<CoreThread>,
    /// The fatal signal, when recorded.
    pub signal: Option<CoreSignal>,
    /// The mapped files.
    pub mappings: Vec<CoreMapping>,
    /// The auxiliary vector.
    pub auxv: Vec<(u64, u64)>,
}

fn bad(what: &str) -> Error {
    Error::Core(what.to_string())
}

fn u16_at(d: &[u8], at: usize) -> Result<u16> {
    d.get(at..at.checked_add(2).ok_or_else(|| bad("truncated core"))?)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .ok_or_else(|| bad("truncated core"))
}

fn u32_at(d: &[u8], at: usize) -> Result<u32> {
    d.get(at..at.checked_add(4).ok_or_else(|| bad("truncated core"))?)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or_else(|| bad("truncated core"))
}

fn u64_at(d: &[u8], at: usize) -> Result<u64> {
    d.get(at..at.checked_add(8).ok_or_else(|| bad("truncated core"))?)
        .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
        .ok_or_else(|| bad("truncated core"))
}

fn usize_of(v: u64) -> Result<usize> {
    usize::try_from(v).map_err(|_| bad("offset out of range"))
}

impl CoreFile {
    /// Reads and parses a core file.
    pub fn open(path: &Path) -> Result<CoreFile> {
        let data = std::fs::read(path)
            .map_err(|e| Error::Core(format!("cannot read {}: {e}", path.display())))?;
        CoreFile::parse(data)
    }

    /// Parses the bytes of a core file.
    pub fn parse(data: Vec<u8>) -> Result<CoreFile> {
        if data.len() < 64 || &data[..4] != b"\x7fELF" {
            return Err(bad("not an ELF file"));
        }
        if data[4] != 2 || data[5] != 1 {
            return Err(bad("not a 64-bit little-endian ELF file"));
        }
        if u16_at(&data, 16)? != ET_CORE {
            return Err(bad("not a core file (ELF type is not ET_CORE)"));
        }
        if u16_at(&data, 18)? != EM_X86_64 {
            return Err(bad("not an x86-64 core file"));
        }
        let phoff = usize_of(u64_at(&data, 32)?)?;
        let phentsize = usize::from(u16_at(&data, 54)?);
        let phnum = usize::from(u16_at(&data, 56)?);
        if phentsize < 56 {
            return Err(bad("bad program header size"));
        }
        let mut core = CoreFile {
            data: Vec::new(),
            segments: Vec::new(),
            threads: Vec::new(),
            signal: None,
            mappings: Vec::new(),
            auxv: Vec::new(),
        };
        let mut notes = Vec::new();
        for i in 0..phnum {
            let h = phoff
                .checked_add(i * phentsize)
                .filter(|h| h.checked_add(56).is_some_and(|e| e <= data.len()))
                .ok_or_else(|| bad("truncated core (program headers)"))?;
            let kind = u32_at(&data, h)?;
            let offset = u64_at(&data, h + 8)?;
            let vaddr = u64_at(&data, h + 16)?;
            let filesz = u64_at(&data, h + 32)?;
            let memsz = u64_at(&data, h + 40)?;
            match kind {
                PT_LOAD => {
                    // A truncated core keeps the segments it still has in full.
                    let avail = (data.len() as u64).saturating_sub(offset).min(filesz);
                    core.segments.push(Segment {
                        vaddr,
                        memsz,
                        offset,
                        filesz: avail,
                    });
                }
                PT_NOTE => notes.push((usize_of(offset)?, usize_of(filesz)?)),
                _ => {}
            }
        }
        for (off, len) in notes {
            let end = off
                .checked_add(len)
                .ok_or_else(|| bad("bad note segment"))?;
            let seg = data
                .get(off..end)
                .ok_or_else(|| bad("truncated core (notes)"))?;
            core.read_notes(seg)?;
        }
        if core.threads.is_empty() {
            return Err(bad("the core has no thread (no NT_PRSTATUS note)"));
        }
        core.data = data;
        Ok(core)
    }

    fn read_notes(&mut self, seg: &[u8]) -> Result<()> {
        let mut at = 0usize;
        let align4 = |n: usize| (n + 3) & !3;
        while at + 12 <= seg.len() {
            let namesz = u32_at(seg, at)? as usize;
            let descsz = u32_at(seg, at + 4)? as usize;
            let kind = u32_at(seg, at + 8)?;
            let desc_at = at + 12 + align4(namesz);
            let desc_end = desc_at
                .checked_add(descsz)
                .filter(|e| *e <= seg.len())
                .ok_or_else(|| bad("truncated note"))?;
            let name = seg.get(at + 12..at + 12 + namesz).unwrap_or_default();
            let desc = &seg[desc_at..desc_end];
            if name.starts_with(b"CORE") || name.starts_with(b"LINUX") {
                self.note(kind, desc)?;
            }
            at = align4(desc_end);
        }
        Ok(())
    }

    fn note(&mut self, kind: u32, d: &[u8]) -> Result<()> {
        match kind {
            NT_PRSTATUS => {
                let signal = i32::from(u16_at(d, 12)? as i16);
                let tid = u32_at(d, 32)? as i32;
                let mut r = [0u64; USER_REGS];
                for (i, slot) in r.iter_mut().enumerate() {
                    *slot = u64_at(d, PR_REG + 8 * i)?;
                }
                // user_regs_struct's fields in the kernel's order.
                let u = libc::user_regs_struct {
                    r15: r[0],
                    r14: r[1],
                    r13: r[2],
                    r12: r[3],
                    rbp: r[4],
                    rbx: r[5],
                    r11: r[6],
                    r10: r[7],
                    r9: r[8],
                    r8: r[9],
                    rax: r[10],
                    rcx: r[11],
                    rdx: r[12],
                    rsi: r[13],
                    rdi: r[14],
                    orig_rax: r[15],
                    rip: r[16],
                    cs: r[17],
                    eflags: r[18],
                    rsp: r[19],
                    ss: r[20],
                    fs_base: r[21],
                    gs_base: r[22],
                    ds: r[23],
                    es: r[24],
                    fs: r[25],
                    gs: r[26],
                };
                self.threads.push(CoreThread {
                    tid,
                    signal,
                    regs: tracer::Registers(u),
                    xmm: None,
                    st: None,
                });
            }
            // Each thread's FP registers follow its NT_PRSTATUS.
            NT_FPREGSET => {
                if let (Some(t), Some(area)) =
                    (self.threads.last_mut(), d.get(FX_XMM..FX_XMM + 256))
                {
                    let mut xmm = Box::new([[0u8; 16]; 16]);
                    for (i, r) in xmm.iter_mut().enumerate() {
                        r.copy_from_slice(&area[i * 16..i * 16 + 16]);
                    }
                    t.xmm = Some(xmm);
                }
                if let (Some(t), Some(area)) = (self.threads.last_mut(), d.get(FX_ST..FX_ST + 128))
                {
                    let mut st = Box::new([[0u8; 10]; 8]);
                    for (i, r) in st.iter_mut().enumerate() {
                        r.copy_from_slice(&area[i * 16..i * 16 + 10]);
                    }
                    t.st = Some(st);
                }
            }
            NT_SIGINFO => {
                let signo = u32_at(d, 0)? as i32;
                let code = u32_at(d, 8)? as i32;
                let faults = matches!(
                    signo,
                    libc::SIGSEGV | libc::SIGBUS | libc::SIGILL | libc::SIGFPE
                );
                let addr = if faults { Some(u64_at(d, 16)?) } else { None };
                if signo != 0 && self.signal.is_none() {
                    self.signal = Some(CoreSignal { signo, code, addr });
                }
            }
            NT_AUXV => {
                let mut at = 0;
                while at + 16 <= d.len() {
                    let (k, v) = (u64_at(d, at)?, u64_at(d, at + 8)?);
                    if k == 0 {
                        break;
                    }
                    self.auxv.push((k, v));
                    at += 16;
                }
            }
            NT_FILE => {
                let count = usize_of(u64_at(d, 0)?)?;
                let page = u64_at(d, 8)?;
                let names_at = count
                    .checked_mul(24)
                    .and_then(|n| n.checked_add(16))
                    .filter(|n| *n <= d.len())
                    .ok_or_else(|| bad("bad NT_FILE note"))?;
                let mut names = d[names_at..].split(|b| *b == 0);
                for i in 0..count {
                    let e = 16 + i * 24;
                    let name = names.next().ok_or_else(|| bad("bad NT_FILE note"))?;
                    self.mappings.push(CoreMapping {
                        start: u64_at(d, e)?,
                        end: u64_at(d, e + 8)?,
                        offset: u64_at(d, e + 16)?.saturating_mul(page),
                        path: PathBuf::from(String::from_utf8_lossy(name).into_owned()),
                    });
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Reads each mapped file from `root` + its path where such a file exists.
    pub fn use_sysroot(&mut self, root: &Path) {
        for m in &mut self.mappings {
            let rel = m.path.strip_prefix("/").unwrap_or(&m.path);
            let there = root.join(rel);
            if there.is_file() {
                m.path = there;
            }
        }
    }

    /// The value of an auxv entry.
    pub fn aux(&self, key: u64) -> Option<u64> {
        self.auxv.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }

    /// Reads up to `buf.len()` bytes at `addr`; how many could be read (contiguously).
    pub fn read_at(&self, addr: u64, buf: &mut [u8]) -> usize {
        let mut done = 0;
        while done < buf.len() {
            let at = addr.wrapping_add(done as u64);
            let n = self.read_some(at, &mut buf[done..]);
            if n == 0 {
                break;
            }
            done += n;
        }
        done
    }

    fn read_some(&self, at: u64, buf: &mut [u8]) -> usize {
        if let Some(s) = self
            .segments
            .iter()
            .find(|s| s.vaddr <= at && at - s.vaddr < s.memsz)
        {
            let rel = at - s.vaddr;
            if rel < s.filesz {
                let n = (s.filesz - rel).min(buf.len() as u64) as usize;
                let src = s
                    .offset
                    .checked_add(rel)
                    .and_then(|from| usize::try_from(from).ok())
                    .and_then(|from| self.data.get(from..from.checked_add(n)?));
                if let Some(src) = src {
                    buf[..n].copy_from_slice(src);
                    return n;
                }
                return 0;
            }
            // Not in the core: the mapped file's bytes (read-only file mappings), else
            // nothing (memory the core left out).
            let limit = (s.memsz - rel).min(buf.len() as u64) as usize;
            return self.read_file_backed(at, &mut buf[..limit]);
        }
        self.read_file_backed(at, buf)
    }

    fn read_file_backed(&self, at: u64, buf: &mut [u8]) -> usize {
        let Some(m) = self.mappings.iter().find(|m| m.start <= at && at < m.end) else {
            return 0;
        };
        let n = (m.end - at).min(buf.len() as u64) as usize;
        let Ok(mut f) = std::fs::File::open(&m.path) else {
            return 0;
        };
        use std::io::{Read, Seek, SeekFrom};
        let Some(pos) = m.offset.checked_add(at - m.start) else {
            return 0;
        };
        if f.seek(SeekFrom::Start(pos)).is_err() {
            return 0;
        }
        let mut done = 0;
        while done < n {
            match f.read(&mut buf[done..n]) {
                Ok(0) | Err(_) => break,
                Ok(k) => done += k,
            }
        }
        done
    }
}

impl MemoryReader for CoreFile {
    fn read(&self, addr: RuntimeAddr, buf: &mut [u8]) -> std::io::Result<()> {
        if self.read_at(addr.0, buf) == buf.len() {
            Ok(())
        } else {
            Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("cannot access memory at {:#x} (not in the core)", addr.0),
            ))
        }
    }
}
