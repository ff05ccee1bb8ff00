//! Parking a fork child between two tracers without a job-control stop.
//!
//! A child handed to another session is detached by the tracer that saw the fork and
//! seized by the next one. It must not run in between. A `SIGSTOP` would hold it, but a
//! job-control stop is seen by the program: its parent gets a `SIGCHLD` with
//! `CLD_STOPPED` (and `CLD_CONTINUED` after), and `waitpid(WUNTRACED)` reports the stop.
//! So the child is parked instead in `rt_sigsuspend` with every signal blocked, made by
//! its own `syscall` instruction (the one that returned from the fork, two bytes before
//! its pc): only SIGKILL (or a job-control stop from outside) ends that wait, no handler
//! runs, and the parent is told nothing.
//!
//! The child's registers at the fork's return are kept below its stack pointer (beyond
//! the red zone), after the 8-byte signal mask the call reads, with a magic word, so any
//! unparker — the next tracer, the process manager freeing a child nobody took, or the
//! guard process after tandem died — can restore them without being told. The bytes the
//! record covered are put back by an unparker in this process. Restoring the registers
//! at a ptrace stop inside the call makes it return as the fork did (no restart), and the
//! kernel puts the program's own signal mask back on the way out.

use std::collections::HashMap;
use std::os::unix::fs::FileExt;
use std::sync::{Mutex, OnceLock};

use crate::sys::{self, Status};
use crate::types::{Pid, Tid};

/// "tndmpark", little-endian.
const MAGIC: u64 = u64::from_le_bytes(*b"tndmpark");
/// Bytes below the stack pointer the program may still use (the x86-64 red zone).
const RED_ZONE: u64 = 128;
const REGS_LEN: usize = std::mem::size_of::<libc::user_regs_struct>();
/// The mask, the magic, the registers.
const RECORD_LEN: usize = 16 + REGS_LEN;

/// Per parked child (by pid): its record's address and the bytes the record covered.
type Saved = HashMap<i32, (u64, Vec<u8>)>;

/// The bytes each parked child's record covered, for unparkers in this process.
fn saved_bytes() -> &'static Mutex<Saved> {
    static SAVED: OnceLock<Mutex<Saved>> = OnceLock::new();
    SAVED.get_or_init(Default::default)
}

fn mem(pid: Pid) -> Option<std::fs::File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(format!("/proc/{}/mem", pid.0))
        .ok()
}

fn regs_bytes(regs: &libc::user_regs_struct) -> [u8; REGS_LEN] {
    // SAFETY: user_regs_struct is plain old data (27 u64s).
    unsafe { std::mem::transmute_copy(regs) }
}

fn regs_from(bytes: &[u8]) -> Option<libc::user_regs_struct> {
    let bytes: [u8; REGS_LEN] = bytes.try_into().ok()?;
    // SAFETY: every bit pattern is a valid user_regs_struct (27 u64s).
    Some(unsafe { std::mem::transmute::<[u8; REGS_LEN], libc::user_regs_struct>(bytes) })
}

/// Parks the fork child `tid`, in a ptrace stop of the caller's, so that it waits in
/// `rt_sigsuspend` once detached. False (nothing changed) when its pc does not follow a
/// `syscall` instruction or its stack cannot hold the record: the caller falls back to
/// a stop signal.
pub(crate) fn park(tid: Tid) -> bool {
    let Ok(regs) = sys::get_regs(tid) else {
        return false;
    };
    let Some(file) = mem(Pid(tid.0)) else {
        return false;
    };
    let mut insn = [0u8; 2];
    if regs.rip < 2 || file.read_at(&mut insn, regs.rip - 2).ok() != Some(2) || insn != [0x0f, 0x05]
    {
        return false;
    }
    let Some(base) = regs
        .rsp
        .checked_sub(RED_ZONE + RECORD_LEN as u64)
        .map(|b| b & !15)
    else {
        return false;
    };
    let mut old = vec![0u8; RECORD_LEN];
    if file.read_at(&mut old, base).ok() != Some(RECORD_LEN) {
        return false;
    }
    let mut record = Vec::with_capacity(RECORD_LEN);
    record.extend_from_slice(&u64::MAX.to_le_bytes());
    record.extend_from_slice(&MAGIC.to_le_bytes());
    record.extend_from_slice(&regs_bytes(&regs));
    if file.write_at(&record, base).ok() != Some(RECORD_LEN) {
        let _ = file.write_at(&old, base);
        return false;
    }
    let mut parked = regs;
    parked.rip -= 2;
    parked.rax = libc::SYS_rt_sigsuspend as u64;
    parked.orig_rax = u64::MAX;
    parked.rdi = base;
    parked.rsi = 8;
    if sys::set_regs(tid, &parked).is_err() {
        let _ = file.write_at(&old, base);
        return false;
    }
    saved_bytes()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(tid.0, (base, old));
    tracing::debug!(child = tid.0, base, "fork child parked in rt_sigsuspend");
    true
}

/// The record of a parked thread whose registers are `regs` (at a ptrace stop, before or
/// inside the parking call): its address and the registers to restore.
fn record_of(
    file: &std::fs::File,
    regs: &libc::user_regs_struct,
) -> Option<(u64, libc::user_regs_struct)> {
    let base = regs.rdi;
    let mut record = vec![0u8; RECORD_LEN];
    if file.read_at(&mut record, base).ok()? != RECORD_LEN {
        return None;
    }
    let magic = u64::from_le_bytes(record[8..16].try_into().ok()?);
    let saved = regs_from(&record[16..])?;
    let here = regs.rip == saved.rip || regs.rip + 2 == saved.rip;
    (magic == MAGIC && here && regs.rsi == 8).then_some((base, saved))
}

/// Undoes [`park`] on `tid`, in a ptrace stop of the caller's: its registers as at the
/// fork's return, the record's bytes as they were. False when it is not parked.
pub(crate) fn unpark_traced(tid: Tid) -> bool {
    let Ok(regs) = sys::get_regs(tid) else {
        return false;
    };
    let Some(file) = mem(Pid(tid.0)) else {
        return false;
    };
    let Some((base, saved)) = record_of(&file, &regs) else {
        return false;
    };
    if sys::set_regs(tid, &saved).is_err() {
        return false;
    }
    let old = saved_bytes()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&tid.0)
        .filter(|(b, _)| *b == base)
        .map(|(_, old)| old)
        .unwrap_or_else(|| vec![0u8; RECORD_LEN]);
    let _ = file.write_at(&old, base);
    tracing::debug!(child = tid.0, "parked fork child restored");
    true
}

/// Whether `pid` (untraced) waits parked by [`park`], as `/proc` shows it without
/// ptrace: blocked in `rt_sigsuspend` on a record with the magic word.
pub fn is_parked(pid: Pid) -> bool {
    let Ok(line) = std::fs::read_to_string(format!("/proc/{}/syscall", pid.0)) else {
        return false;
    };
    let mut words = line.split_whitespace();
    if words.next() != Some(&libc::SYS_rt_sigsuspend.to_string()) {
        return false;
    }
    let Some(base) = words
        .next()
        .and_then(|w| u64::from_str_radix(w.trim_start_matches("0x"), 16).ok())
    else {
        return false;
    };
    let Some(file) = mem(pid) else {
        return false;
    };
    let mut magic = [0u8; 8];
    file.read_at(&mut magic, base + 8).ok() == Some(8) && u64::from_le_bytes(magic) == MAGIC
}

/// Lets a parked child that nobody traces run on from its fork, as if never stopped:
/// seizes it, interrupts the wait, restores it, detaches. False when it is not parked
/// (or cannot be traced): the caller falls back to SIGCONT. The caller must be allowed to
/// ptrace it: tandem always is (the child is its tracee's descendant, or tandem is root);
/// the guard process is under Yama `ptrace_scope` 1 only as root, so a parked child of an
/// *attached* program outlives a SIGKILLed tandem parked there for a non-root user.
pub fn release(pid: Pid) -> bool {
    let tid = Tid(pid.0);
    if sys::seize(tid, 0).is_err() {
        return false;
    }
    let _ = sys::interrupt(tid);
    let stopped = loop {
        match sys::wait(pid.0, false, false) {
            Ok(Some(w)) => match sys::decode(w.status) {
                Status::Stopped(..) => break true,
                Status::Exited(_) | Status::Signaled(..) => break false,
                Status::Other => continue,
            },
            Ok(None) => continue,
            Err(_) => break false,
        }
    };
    if !stopped {
        return false;
    }
    let restored = unpark_traced(tid);
    let _ = sys::detach(tid, 0);
    restored
}

/// Whether this process parked `pid` and has not unparked it yet.
fn parked_here(pid: Pid) -> bool {
    saved_bytes()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .contains_key(&pid.0)
}

/// Lets a handed-over fork child that nobody traces run on, however it waits: parked
/// ([`release`]) or in a job-control stop (SIGCONT, which also drops a SIGSTOP not acted
/// on yet). A child this process parked is released at once, wherever it is on its way
/// into the parking call (its registers already name it; a loaded machine may not have
/// run it since the detach). One parked by another process may still be on its way: it
/// is given a moment to get there. A pid that is gone or traced again is left alone.
pub fn free(pid: Pid) {
    if crate::procfs::tracer_of(pid) == Some(0) && parked_here(pid) && release(pid) {
        return;
    }
    for _ in 0..1000 {
        if crate::procfs::tracer_of(pid) != Some(0) {
            return;
        }
        if is_parked(pid) {
            if release(pid) {
                return;
            }
            break;
        }
        let running = std::fs::read_to_string(format!("/proc/{}/syscall", pid.0))
            .map(|l| l.starts_with("running"))
            .unwrap_or(false);
        if !running {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    if crate::procfs::tracer_of(pid) == Some(0) && !is_parked(pid) {
        let _ = sys::kill(pid.0, libc::SIGCONT);
    }
}
