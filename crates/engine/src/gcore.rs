//! Writing an ELF core file (ET_CORE, x86-64) of a live process stopped under ptrace, as
//! the kernel writes one (the layout gdb, lldb and [`crate::corefile::CoreFile`] read).
//!
//! Notes, in the kernel's order: NT_PRSTATUS of the first thread, NT_PRPSINFO, NT_SIGINFO
//! (only when the stop is a signal the program received), NT_AUXV, NT_FILE, then the
//! thread's NT_FPREGSET and NT_X86_XSTATE; every other thread follows with NT_PRSTATUS,
//! NT_FPREGSET, NT_X86_XSTATE. The first thread is the one that stopped; with a signal,
//! every thread's `pr_cursig` is that signal, as in the kernel's cores.
//!
//! Memory: one PT_LOAD per mapping of /proc/PID/maps, except `[vvar]`, `[vvar_vclock]`,
//! `[vsyscall]` and the code tandem placed in the debuggee (conditions compiled into it),
//! which are not the program's. A readable mapping is written whole (p_filesz =
//! p_memsz), as gdb's gcore does; a mapping that cannot be read (no `r` permission,
//! device memory under /dev) or that is a file's shared mapping (its bytes are the file's)
//! has p_filesz 0, as the kernel writes it. Pages of a readable
//! mapping that still cannot be read are zeros. Pages of zeros are not written but left
//! as holes of a sparse file: a thread's untouched 8 MiB stack costs no disk.
//!
//! Memory is read through the tracer, which shows the original bytes under its int3s and
//! jump patches: a core shows the program, never the debugger.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use tracer::{Pid, RuntimeAddr, Tid, Tracer};

use crate::corefile::{
    EM_X86_64, ET_CORE, NT_AUXV, NT_FILE, NT_FPREGSET, NT_PRPSINFO, NT_PRSTATUS, NT_SIGINFO,
    NT_X86_XSTATE, PT_LOAD, PT_NOTE,
};
use crate::error::{Error, Result};

const PAGE: u64 = 4096;
const EHDR: u64 = 64;
const PHDR: u64 = 56;
const PF_X: u32 = 1;
const PF_W: u32 = 2;
const PF_R: u32 = 4;
/// A page of zeros, to find pages that need not be written.
static ZERO_PAGE: [u8; PAGE as usize] = [0; PAGE as usize];
/// Memory is read this much at a time.
const CHUNK: usize = 1 << 20;

/// The signal the program stopped with, for NT_SIGINFO and `pr_cursig`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StopSignal {
    /// The thread that received it.
    pub tid: Tid,
    /// The signal number.
    pub signo: i32,
    /// `si_code`.
    pub code: i32,
    /// The fault address, for SIGSEGV, SIGBUS, SIGILL, SIGFPE.
    pub addr: Option<u64>,
}

/// What [`crate::Session::write_core`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreWritten {
    /// The file.
    pub path: PathBuf,
    /// Its length (pages of zeros are holes: the disk used can be less).
    pub bytes: u64,
    /// The bytes of memory actually written (pages that are not all zeros).
    pub data_bytes: u64,
    /// Threads recorded.
    pub threads: usize,
    /// PT_LOAD segments.
    pub segments: usize,
}

/// One PT_LOAD to write.
struct Segment {
    start: u64,
    end: u64,
    flags: u32,
    /// Written whole when true; p_filesz 0 otherwise.
    dump: bool,
    offset: u64,
}

/// What /proc says about the process and each thread, for the notes.
#[derive(Default)]
struct ProcStat {
    state: char,
    ppid: i32,
    pgrp: i32,
    sid: i32,
    flags: u64,
    nice: i64,
    utime: u64,
    stime: u64,
    cutime: u64,
    cstime: u64,
}

fn proc_stat(path: &str) -> ProcStat {
    let Ok(text) = std::fs::read_to_string(path) else {
        return ProcStat::default();
    };
    let Some(rest) = text.rfind(')').map(|i| &text[i + 1..]) else {
        return ProcStat::default();
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let num = |i: usize| f.get(i).and_then(|s| s.parse::<i64>().ok()).unwrap_or(0);
    ProcStat {
        state: f.first().and_then(|s| s.chars().next()).unwrap_or('R'),
        ppid: num(1) as i32,
        pgrp: num(2) as i32,
        sid: num(3) as i32,
        flags: num(6) as u64,
        utime: num(11) as u64,
        stime: num(12) as u64,
        cutime: num(13) as u64,
        cstime: num(14) as u64,
        nice: num(16),
    }
}

/// A field of /proc/…/status (`Uid:`, `SigBlk:`), its first word.
fn status_field(status: &str, key: &str) -> Option<String> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next())
        .map(str::to_owned)
}

fn hex_field(status: &str, key: &str) -> u64 {
    status_field(status, key)
        .and_then(|v| u64::from_str_radix(&v, 16).ok())
        .unwrap_or(0)
}

/// Clock ticks as a `struct timeval` (16 bytes).
fn timeval(ticks: u64, out: &mut Vec<u8>) {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    out.extend_from_slice(&(ticks / hz).to_le_bytes());
    out.extend_from_slice(&((ticks % hz) * 1_000_000 / hz).to_le_bytes());
}

/// One note: header, name and descriptor, each padded to 4 bytes.
fn note(out: &mut Vec<u8>, name: &[u8], kind: u32, desc: &[u8]) {
    let namesz = name.len() as u32 + 1;
    out.extend_from_slice(&namesz.to_le_bytes());
    out.extend_from_slice(&(desc.len() as u32).to_le_bytes());
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(name);
    out.push(0);
    while out.len() % 4 != 0 {
        out.push(0);
    }
    out.extend_from_slice(desc);
    while out.len() % 4 != 0 {
        out.push(0);
    }
}

/// `struct elf_prstatus` (336 bytes) of one thread.
fn prstatus(
    pid: Pid,
    tid: Tid,
    regs: &libc::user_regs_struct,
    cursig: i32,
    proc_: &ProcStat,
    fpvalid: bool,
) -> Vec<u8> {
    let thread = proc_stat(&format!("/proc/{}/task/{}/stat", pid.0, tid.0));
    let status = std::fs::read_to_string(format!("/proc/{}/task/{}/status", pid.0, tid.0))
        .unwrap_or_default();
    let mut d = Vec::with_capacity(336);
    // elf_siginfo: signo, code, errno.
    d.extend_from_slice(&cursig.to_le_bytes());
    d.extend_from_slice(&0i32.to_le_bytes());
    d.extend_from_slice(&0i32.to_le_bytes());
    d.extend_from_slice(&(cursig as i16).to_le_bytes());
    d.extend_from_slice(&[0, 0]);
    d.extend_from_slice(&hex_field(&status, "SigPnd:").to_le_bytes());
    d.extend_from_slice(&hex_field(&status, "SigBlk:").to_le_bytes());
    for v in [tid.0, proc_.ppid, proc_.pgrp, proc_.sid] {
        d.extend_from_slice(&v.to_le_bytes());
    }
    timeval(thread.utime, &mut d);
    timeval(thread.stime, &mut d);
    timeval(proc_.cutime, &mut d);
    timeval(proc_.cstime, &mut d);
    // user_regs_struct, in the kernel's order.
    let r = regs;
    for v in [
        r.r15, r.r14, r.r13, r.r12, r.rbp, r.rbx, r.r11, r.r10, r.r9, r.r8, r.rax, r.rcx, r.rdx,
        r.rsi, r.rdi, r.orig_rax, r.rip, r.cs, r.eflags, r.rsp, r.ss, r.fs_base, r.gs_base, r.ds,
        r.es, r.fs, r.gs,
    ] {
        d.extend_from_slice(&v.to_le_bytes());
    }
    d.extend_from_slice(&i32::from(fpvalid).to_le_bytes());
    d.extend_from_slice(&[0; 4]);
    d
}

/// `struct elf_prpsinfo` (136 bytes).
fn prpsinfo(pid: Pid, proc_: &ProcStat) -> Vec<u8> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", pid.0)).unwrap_or_default();
    let id = |key| {
        status_field(&status, key)
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    };
    let comm = std::fs::read_to_string(format!("/proc/{}/comm", pid.0)).unwrap_or_default();
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", pid.0)).unwrap_or_default();
    let mut d = Vec::with_capacity(136);
    let sname = proc_.state as u8;
    let state = b"RSDTZW".iter().position(|c| *c == sname).unwrap_or(0) as u8;
    d.extend_from_slice(&[
        state,
        sname,
        u8::from(sname == b'Z'),
        proc_.nice as i8 as u8,
    ]);
    d.extend_from_slice(&[0; 4]);
    d.extend_from_slice(&proc_.flags.to_le_bytes());
    d.extend_from_slice(&id("Uid:").to_le_bytes());
    d.extend_from_slice(&id("Gid:").to_le_bytes());
    for v in [pid.0, proc_.ppid, proc_.pgrp, proc_.sid] {
        d.extend_from_slice(&v.to_le_bytes());
    }
    let mut fname = [0u8; 16];
    let comm = comm.trim_end().as_bytes();
    let n = comm.len().min(15);
    fname[..n].copy_from_slice(&comm[..n]);
    d.extend_from_slice(&fname);
    let mut args = [0u8; 80];
    let cmd: Vec<u8> = cmdline
        .strip_suffix(&[0])
        .unwrap_or(&cmdline)
        .iter()
        .map(|b| if *b == 0 { b' ' } else { *b })
        .collect();
    let n = cmd.len().min(79);
    args[..n].copy_from_slice(&cmd[..n]);
    d.extend_from_slice(&args);
    d
}

/// `siginfo_t` (128 bytes) of the stop's signal.
fn siginfo(sig: &StopSignal) -> Vec<u8> {
    let mut d = vec![0u8; 128];
    d[0..4].copy_from_slice(&sig.signo.to_le_bytes());
    d[8..12].copy_from_slice(&sig.code.to_le_bytes());
    if let Some(addr) = sig.addr {
        d[16..24].copy_from_slice(&addr.to_le_bytes());
    }
    d
}

/// `user_fpregs_struct` (512 bytes, the FXSAVE layout).
fn fpregset(fp: &libc::user_fpregs_struct) -> Vec<u8> {
    let mut d = Vec::with_capacity(512);
    for v in [fp.cwd, fp.swd, fp.ftw, fp.fop] {
        d.extend_from_slice(&v.to_le_bytes());
    }
    d.extend_from_slice(&fp.rip.to_le_bytes());
    d.extend_from_slice(&fp.rdp.to_le_bytes());
    d.extend_from_slice(&fp.mxcsr.to_le_bytes());
    d.extend_from_slice(&fp.mxcr_mask.to_le_bytes());
    for v in fp.st_space.iter().chain(fp.xmm_space.iter()) {
        d.extend_from_slice(&v.to_le_bytes());
    }
    d.resize(512, 0);
    d
}

/// NT_FILE: every file-backed mapping (start, end, offset in pages) and its name.
fn file_note(maps: &[tracer::procfs::Mapping]) -> Vec<u8> {
    let files: Vec<&tracer::procfs::Mapping> =
        maps.iter().filter(|m| m.path.starts_with('/')).collect();
    let mut d = Vec::new();
    d.extend_from_slice(&(files.len() as u64).to_le_bytes());
    d.extend_from_slice(&PAGE.to_le_bytes());
    for m in &files {
        d.extend_from_slice(&m.start.0.to_le_bytes());
        d.extend_from_slice(&m.end.0.to_le_bytes());
        d.extend_from_slice(&(m.offset / PAGE).to_le_bytes());
    }
    for m in &files {
        d.extend_from_slice(m.path.as_bytes());
        d.push(0);
    }
    d
}

/// The mappings as PT_LOAD segments: pseudo mappings and placed code left out.
fn segments(
    maps: &[tracer::procfs::Mapping],
    placed: &[(RuntimeAddr, RuntimeAddr)],
) -> Vec<Segment> {
    let mut out = Vec::new();
    for m in maps {
        if matches!(m.path.as_str(), "[vvar]" | "[vvar_vclock]" | "[vsyscall]") {
            continue;
        }
        let perms = m.perms.as_bytes();
        let flag = |i: usize, c: u8, f: u32| if perms.get(i) == Some(&c) { f } else { 0 };
        let flags = flag(0, b'r', PF_R) | flag(1, b'w', PF_W) | flag(2, b'x', PF_X);
        let device = m.path.starts_with("/dev/") && m.path != "/dev/zero";
        // A shared mapping of a file is that file (the kernel's default coredump_filter
        // leaves it out too): readers take its bytes from the file, as NT_FILE names it.
        let shared_file = perms.get(3) == Some(&b's') && m.path.starts_with('/') && !device;
        let dump = flags & PF_R != 0 && !device && !shared_file;
        // What is left of the mapping once the placed code is cut out of it.
        let mut pieces = vec![(m.start.0, m.end.0)];
        for (s, e) in placed {
            pieces = pieces
                .into_iter()
                .flat_map(|(a, b)| {
                    if e.0 <= a || b <= s.0 {
                        vec![(a, b)]
                    } else {
                        [(a, s.0.max(a)), (e.0.min(b), b)]
                            .into_iter()
                            .filter(|(x, y)| x < y)
                            .collect()
                    }
                })
                .collect();
        }
        for (start, end) in pieces {
            out.push(Segment {
                start,
                end,
                flags,
                dump,
                offset: 0,
            });
        }
    }
    out
}

/// Writes `data` at `offset` leaving whole pages of zeros as holes; the bytes written.
fn write_sparse(file: &File, offset: u64, data: &[u8]) -> std::io::Result<u64> {
    let mut written = 0;
    let mut run: Option<usize> = None;
    let page = PAGE as usize;
    let mut at = 0;
    while at <= data.len() {
        let end = (at + page).min(data.len());
        // A slice comparison is one memcmp, fast even in a debug build.
        let zero = at == data.len() || data[at..end] == ZERO_PAGE[..end - at];
        match (zero, run) {
            (false, None) => run = Some(at),
            (true, Some(from)) => {
                file.write_all_at(&data[from..at], offset + from as u64)?;
                written += (at - from) as u64;
                run = None;
            }
            _ => {}
        }
        if at == data.len() {
            break;
        }
        at = end;
    }
    Ok(written)
}

/// Reads `buf.len()` bytes at `addr` through the tracer (original bytes under int3s and
/// patches); what cannot be read, a page at a time, stays zero.
fn read_fill(t: &Tracer, addr: u64, buf: &mut [u8]) {
    let mut done = 0usize;
    while done < buf.len() {
        match t.read_memory(RuntimeAddr(addr + done as u64), &mut buf[done..]) {
            Ok(n) if n > 0 => done += n,
            _ => {
                // Skip to the next page: this one is unreadable.
                let here = addr + done as u64;
                let next = (here / PAGE + 1) * PAGE;
                let skip = ((next - here) as usize).min(buf.len() - done);
                buf[done..done + skip].fill(0);
                done += skip;
            }
        }
    }
}

/// Writes a core file of the stopped process `t` traces to `path`: `first` is recorded
/// first (the thread that stopped), `signal` when the stop is a signal the program got.
/// The file is written beside `path` under a temporary name and renamed when complete,
/// with mode 0600 (it holds the process's memory).
pub(crate) fn write_core(
    t: &mut Tracer,
    first: Option<Tid>,
    signal: Option<StopSignal>,
    path: &Path,
) -> Result<CoreWritten> {
    let pid = t.pid();
    let mut tids = t.threads();
    tids.sort();
    if let Some(i) = first.and_then(|f| tids.iter().position(|t| *t == f)) {
        let f = tids.remove(i);
        tids.insert(0, f);
    }
    let proc_ = proc_stat(&format!("/proc/{}/stat", pid.0));
    let maps = tracer::procfs::read_maps(pid)?;
    let auxv = std::fs::read(format!("/proc/{}/auxv", pid.0))
        .map_err(|e| Error::Core(format!("cannot read /proc/{}/auxv: {e}", pid.0)))?;

    let mut notes = Vec::new();
    for (i, &tid) in tids.iter().enumerate() {
        let regs = t.regs(tid)?;
        let fp = t.fp_regs(tid).ok();
        // As the kernel: every thread's pr_cursig is the signal the core is written for
        // (readers such as gdb's take it from whichever thread they read last).
        let cursig = signal.map_or(0, |s| s.signo);
        note(
            &mut notes,
            b"CORE",
            NT_PRSTATUS,
            &prstatus(pid, tid, &regs.0, cursig, &proc_, fp.is_some()),
        );
        if i == 0 {
            note(&mut notes, b"CORE", NT_PRPSINFO, &prpsinfo(pid, &proc_));
            if let Some(sig) = signal.filter(|s| s.tid == tid) {
                note(&mut notes, b"CORE", NT_SIGINFO, &siginfo(&sig));
            }
            note(&mut notes, b"CORE", NT_AUXV, &auxv);
            note(&mut notes, b"CORE", NT_FILE, &file_note(&maps));
        }
        if let Some(fp) = fp {
            note(&mut notes, b"CORE", NT_FPREGSET, &fpregset(&fp.0));
        }
        match t.xstate(tid) {
            Ok(x) if !x.is_empty() => note(&mut notes, b"LINUX", NT_X86_XSTATE, &x),
            Ok(_) => {}
            Err(e) => tracing::debug!(tid = tid.0, "no xstate: {e}"),
        }
    }

    let mut segs = segments(&maps, &t.placed_code_regions());
    let phnum = segs.len() + 1;
    if phnum >= 0xffff {
        return Err(Error::Core(format!(
            "too many mappings for one core file ({})",
            segs.len()
        )));
    }
    let notes_at = EHDR + PHDR * phnum as u64;
    let mut cursor = (notes_at + notes.len() as u64).next_multiple_of(PAGE);
    for s in &mut segs {
        s.offset = cursor;
        if s.dump {
            cursor += s.end - s.start;
        }
    }

    let mut head = Vec::with_capacity(notes_at as usize);
    head.extend_from_slice(b"\x7fELF\x02\x01\x01");
    head.resize(16, 0);
    head.extend_from_slice(&ET_CORE.to_le_bytes());
    head.extend_from_slice(&EM_X86_64.to_le_bytes());
    head.extend_from_slice(&1u32.to_le_bytes());
    head.extend_from_slice(&0u64.to_le_bytes()); // e_entry
    head.extend_from_slice(&EHDR.to_le_bytes()); // e_phoff
    head.extend_from_slice(&0u64.to_le_bytes()); // e_shoff
    head.extend_from_slice(&0u32.to_le_bytes()); // e_flags
    head.extend_from_slice(&(EHDR as u16).to_le_bytes());
    head.extend_from_slice(&(PHDR as u16).to_le_bytes());
    head.extend_from_slice(&(phnum as u16).to_le_bytes());
    head.extend_from_slice(&[0; 6]); // no section headers
    let mut phdr =
        |kind: u32, flags: u32, offset: u64, vaddr: u64, filesz: u64, memsz: u64, align: u64| {
            head.extend_from_slice(&kind.to_le_bytes());
            head.extend_from_slice(&flags.to_le_bytes());
            head.extend_from_slice(&offset.to_le_bytes());
            head.extend_from_slice(&vaddr.to_le_bytes());
            head.extend_from_slice(&0u64.to_le_bytes()); // p_paddr
            head.extend_from_slice(&filesz.to_le_bytes());
            head.extend_from_slice(&memsz.to_le_bytes());
            head.extend_from_slice(&align.to_le_bytes());
        };
    phdr(PT_NOTE, 0, notes_at, 0, notes.len() as u64, 0, 4);
    for s in &segs {
        let size = s.end - s.start;
        let filesz = if s.dump { size } else { 0 };
        phdr(PT_LOAD, s.flags, s.offset, s.start, filesz, size, PAGE);
    }
    head.extend_from_slice(&notes);

    let name = path
        .file_name()
        .ok_or_else(|| Error::Core(format!("{} names no file", path.display())))?;
    let tmp = path.with_file_name(format!(".{}.tandem-partial", name.to_string_lossy()));
    let cannot = |e: std::io::Error| Error::Core(format!("cannot write {}: {e}", path.display()));
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(cannot)?;
    let written = (|| -> std::io::Result<u64> {
        (&file).write_all(&head)?;
        let mut data = 0u64;
        let mut buf = vec![0u8; CHUNK];
        for s in segs.iter().filter(|s| s.dump) {
            let mut at = s.start;
            while at < s.end {
                let n = ((s.end - at) as usize).min(CHUNK);
                read_fill(t, at, &mut buf[..n]);
                data += write_sparse(&file, s.offset + (at - s.start), &buf[..n])?;
                at += n as u64;
            }
        }
        file.set_len(cursor)?;
        Ok(data)
    })();
    let data_bytes = match written {
        Ok(d) => d,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(cannot(e));
        }
    };
    if let Err(e) = std::fs::rename(&tmp, path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(cannot(e));
    }
    Ok(CoreWritten {
        path: path.to_path_buf(),
        bytes: cursor,
        data_bytes,
        threads: tids.len(),
        segments: segs.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_of_zeros_are_holes() {
        let dir = std::env::temp_dir().join(format!("tandem-gcore-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_default();
        let path = dir.join("sparse");
        let file = File::create(&path).expect("create");
        let mut data = vec![0u8; 4 * PAGE as usize];
        data[PAGE as usize + 5] = 1;
        data[3 * PAGE as usize] = 2;
        let n = write_sparse(&file, 0, &data).expect("write");
        assert_eq!(n, 2 * PAGE);
        file.set_len(data.len() as u64).expect("len");
        assert_eq!(std::fs::read(&path).expect("read"), data);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
