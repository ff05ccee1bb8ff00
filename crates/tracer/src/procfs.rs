//! What /proc says about a process: threads, state, auxiliary vector, mappings.

use crate::error::{Error, Result};
use crate::types::{Pid, RuntimeAddr, Tid};
use std::path::PathBuf;

/// The thread ids listed in /proc/PID/task.
pub fn threads_of(pid: Pid) -> Result<Vec<Tid>> {
    let dir = format!("/proc/{}/task", pid.0);
    let entries = std::fs::read_dir(&dir).map_err(|e| Error::io(format!("reading {dir}"), e))?;
    let mut tids: Vec<Tid> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
        .map(Tid)
        .collect();
    tids.sort();
    Ok(tids)
}

/// The one-letter state of a task from /proc/PID/task/TID/stat (`R`, `S`, `t`, `Z`, ...),
/// or `None` when the task does not exist.
pub fn task_state(pid: Pid, tid: Tid) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{}/task/{}/stat", pid.0, tid.0)).ok()?;
    stat_state(&stat)
}

/// The process a thread belongs to (its `Tgid`), `None` when the thread does not exist.
pub fn process_of(tid: Tid) -> Option<Pid> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", tid.0)).ok()?;
    let tgid = status.lines().find_map(|l| l.strip_prefix("Tgid:"))?;
    tgid.trim().parse().ok().map(Pid)
}

/// The one-letter state of a process from /proc/PID/stat, `None` when it does not exist.
pub fn process_state(pid: Pid) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.0)).ok()?;
    stat_state(&stat)
}

pub(crate) fn stat_state(stat: &str) -> Option<char> {
    // The command name is in parentheses and may itself contain ") ".
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().next()?.chars().next()
}

/// Whether SIGTRAP is pending for this one thread (SigPnd in its status file).
/// The thread group (process) a task belongs to (`Tgid:` of /proc/TID/status).
pub(crate) fn tgid_of(tid: Tid) -> Option<i32> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", tid.0)).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

pub(crate) fn thread_has_pending_sigtrap(pid: Pid, tid: Tid) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{}/task/{}/status", pid.0, tid.0))
    else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigPnd:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (libc::SIGTRAP - 1)) != 0)
}

/// The auxiliary vector entries a debugger needs to relocate file addresses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Auxv {
    /// AT_ENTRY: the program's entry point at run time.
    pub entry: Option<RuntimeAddr>,
    /// AT_PHDR: the program headers of the executable in memory.
    pub phdr: Option<RuntimeAddr>,
    /// AT_PHENT: size of one program header.
    pub phent: u64,
    /// AT_PHNUM: number of program headers.
    pub phnum: u64,
    /// AT_BASE: where the dynamic loader is mapped (0 for static programs).
    pub interp_base: Option<RuntimeAddr>,
    /// AT_SYSINFO_EHDR: the vDSO.
    pub vdso: Option<RuntimeAddr>,
}

/// Reads /proc/PID/auxv.
pub fn read_auxv(pid: Pid) -> Result<Auxv> {
    let path = format!("/proc/{}/auxv", pid.0);
    let bytes = std::fs::read(&path).map_err(|e| Error::io(format!("reading {path}"), e))?;
    let mut auxv = Auxv::default();
    for pair in bytes.chunks_exact(16) {
        let mut k = [0u8; 8];
        let mut v = [0u8; 8];
        k.copy_from_slice(&pair[..8]);
        v.copy_from_slice(&pair[8..]);
        let (key, value) = (u64::from_ne_bytes(k), u64::from_ne_bytes(v));
        match key {
            libc::AT_ENTRY => auxv.entry = Some(RuntimeAddr(value)),
            libc::AT_PHDR => auxv.phdr = Some(RuntimeAddr(value)),
            libc::AT_PHENT => auxv.phent = value,
            libc::AT_PHNUM => auxv.phnum = value,
            libc::AT_BASE if value != 0 => auxv.interp_base = Some(RuntimeAddr(value)),
            libc::AT_SYSINFO_EHDR => auxv.vdso = Some(RuntimeAddr(value)),
            _ => {}
        }
    }
    Ok(auxv)
}

/// One line of /proc/PID/maps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// First byte.
    pub start: RuntimeAddr,
    /// One past the last byte.
    pub end: RuntimeAddr,
    /// `rwxp`-style permissions.
    pub perms: String,
    /// Offset in the mapped file.
    pub offset: u64,
    /// The file, or a pseudo name like `[stack]`; empty for anonymous memory.
    pub path: String,
}

/// Reads /proc/PID/maps.
pub fn read_maps(pid: Pid) -> Result<Vec<Mapping>> {
    let path = format!("/proc/{}/maps", pid.0);
    let text =
        std::fs::read_to_string(&path).map_err(|e| Error::io(format!("reading {path}"), e))?;
    let mut out = Vec::new();
    for line in text.lines() {
        let mut parts = line.splitn(6, ' ');
        let (Some(range), Some(perms), Some(offset)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let _dev = parts.next();
        let _inode = parts.next();
        let name = parts.next().unwrap_or("").trim_start().to_string();
        let Some((s, e)) = range.split_once('-') else {
            continue;
        };
        let (Ok(s), Ok(e), Ok(off)) = (
            u64::from_str_radix(s, 16),
            u64::from_str_radix(e, 16),
            u64::from_str_radix(offset, 16),
        ) else {
            continue;
        };
        out.push(Mapping {
            start: RuntimeAddr(s),
            end: RuntimeAddr(e),
            perms: perms.to_string(),
            offset: off,
            path: name,
        });
    }
    Ok(out)
}

/// The executable of a process (/proc/PID/exe).
pub fn exe_of(pid: Pid) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{}/exe", pid.0)).ok()
}

/// The machine's memory and how much of it is available (MemTotal and MemAvailable of
/// /proc/meminfo), in bytes.
pub(crate) fn memory() -> Option<(u64, u64)> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let field = |name: &str| -> Option<u64> {
        let kb: u64 = info
            .lines()
            .find_map(|l| l.strip_prefix(name))?
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(kb * 1024)
    };
    Some((field("MemTotal:")?, field("MemAvailable:")?))
}

/// The Yama ptrace_scope setting, when the kernel has Yama.
pub(crate) fn ptrace_scope() -> Option<u32> {
    std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

/// The tracer of a process (TracerPid in /proc/PID/status), 0 when untraced.
pub fn tracer_of(pid: Pid) -> Option<i32> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", pid.0)).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("TracerPid:"))
        .and_then(|v| v.trim().parse().ok())
}
