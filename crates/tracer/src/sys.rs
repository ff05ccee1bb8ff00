//! Thin wrappers over the raw ptrace, wait and signal system calls.
//!
//! These call `libc` directly (not `nix`) to keep the breakpoint hot path to one
//! system call per request with no conversions in between.

use crate::types::Tid;
use nix::errno::Errno;
use std::mem::MaybeUninit;

pub(crate) type SysResult<T> = std::result::Result<T, Errno>;

fn check(ret: libc::c_long) -> SysResult<libc::c_long> {
    if ret == -1 {
        Err(Errno::last())
    } else {
        Ok(ret)
    }
}

/// A ptrace request without a meaningful return value.
pub(crate) fn ptrace(req: libc::c_uint, tid: Tid, addr: usize, data: usize) -> SysResult<()> {
    // SAFETY: the requests used with this helper take plain integers or pointers to
    // buffers owned by the caller, as documented at each call site.
    let ret = unsafe {
        libc::ptrace(
            req,
            tid.0,
            addr as *mut libc::c_void,
            data as *mut libc::c_void,
        )
    };
    check(ret).map(|_| ())
}

pub(crate) fn seize(tid: Tid, options: libc::c_int) -> SysResult<()> {
    ptrace(libc::PTRACE_SEIZE, tid, 0, options as usize)
}

pub(crate) fn interrupt(tid: Tid) -> SysResult<()> {
    ptrace(libc::PTRACE_INTERRUPT, tid, 0, 0)
}

pub(crate) fn cont(tid: Tid, sig: i32) -> SysResult<()> {
    ptrace(libc::PTRACE_CONT, tid, 0, sig as usize)
}

/// Continues to the next system-call entry or exit (PTRACE_SYSCALL).
pub(crate) fn syscall(tid: Tid, sig: i32) -> SysResult<()> {
    ptrace(libc::PTRACE_SYSCALL, tid, 0, sig as usize)
}

pub(crate) fn set_options(tid: Tid, options: libc::c_int) -> SysResult<()> {
    ptrace(libc::PTRACE_SETOPTIONS, tid, 0, options as usize)
}

/// Reads one word of a stopped tracee's memory (PTRACE_PEEKDATA).
pub(crate) fn peek_word(tid: Tid, addr: u64) -> SysResult<u64> {
    Errno::clear();
    // SAFETY: PEEKDATA takes an address in the tracee and returns the word read.
    let ret = unsafe {
        libc::ptrace(
            libc::PTRACE_PEEKDATA,
            tid.0,
            addr as *mut libc::c_void,
            std::ptr::null_mut::<libc::c_void>(),
        )
    };
    if ret == -1 && Errno::last() != Errno::UnknownErrno {
        return Err(Errno::last());
    }
    Ok(ret as u64)
}

pub(crate) fn singlestep(tid: Tid, sig: i32) -> SysResult<()> {
    ptrace(libc::PTRACE_SINGLESTEP, tid, 0, sig as usize)
}

pub(crate) fn listen(tid: Tid) -> SysResult<()> {
    ptrace(libc::PTRACE_LISTEN, tid, 0, 0)
}

pub(crate) fn detach(tid: Tid, sig: i32) -> SysResult<()> {
    ptrace(libc::PTRACE_DETACH, tid, 0, sig as usize)
}

pub(crate) fn event_msg(tid: Tid) -> SysResult<u64> {
    let mut msg: libc::c_ulong = 0;
    ptrace(
        libc::PTRACE_GETEVENTMSG,
        tid,
        0,
        &mut msg as *mut libc::c_ulong as usize,
    )?;
    Ok(msg)
}

pub(crate) fn siginfo(tid: Tid) -> SysResult<libc::siginfo_t> {
    let mut info = MaybeUninit::<libc::siginfo_t>::zeroed();
    ptrace(libc::PTRACE_GETSIGINFO, tid, 0, info.as_mut_ptr() as usize)?;
    // SAFETY: the kernel filled the structure (and it was zeroed before).
    Ok(unsafe { info.assume_init() })
}

/// Replaces the siginfo of the thread's current stop: a signal injected on the next
/// resume is delivered with it (the kernel keeps it when the numbers match), instead of
/// as an SI_USER signal from the tracer.
pub(crate) fn set_siginfo(tid: Tid, info: &libc::siginfo_t) -> SysResult<()> {
    ptrace(
        libc::PTRACE_SETSIGINFO,
        tid,
        0,
        info as *const libc::siginfo_t as usize,
    )?;
    Ok(())
}

/// Queues a signal to a thread again with the siginfo it first came with, where the
/// kernel allows it from another process (si_code < 0 and not SI_TKILL: sigqueue, timers,
/// message queues, aio); else as a plain tgkill (the number only).
pub(crate) fn requeue_signal(pid: i32, tid: i32, info: &libc::siginfo_t) -> SysResult<()> {
    if info.si_code < 0 && info.si_code != libc::SI_TKILL {
        let mut copy = *info;
        // SAFETY: plain system call on a valid siginfo the kernel only reads.
        let ret = unsafe {
            libc::syscall(
                libc::SYS_rt_tgsigqueueinfo,
                pid,
                tid,
                info.si_signo,
                &mut copy as *mut libc::siginfo_t,
            )
        };
        if check(ret).is_ok() {
            return Ok(());
        }
    }
    tgkill(pid, tid, info.si_signo)
}

pub(crate) fn get_regs(tid: Tid) -> SysResult<libc::user_regs_struct> {
    let mut regs = MaybeUninit::<libc::user_regs_struct>::zeroed();
    ptrace(libc::PTRACE_GETREGS, tid, 0, regs.as_mut_ptr() as usize)?;
    // SAFETY: the kernel filled the structure (and it was zeroed before).
    Ok(unsafe { regs.assume_init() })
}

pub(crate) fn set_regs(tid: Tid, regs: &libc::user_regs_struct) -> SysResult<()> {
    ptrace(
        libc::PTRACE_SETREGS,
        tid,
        0,
        regs as *const libc::user_regs_struct as usize,
    )
}

pub(crate) fn get_fpregs(tid: Tid) -> SysResult<libc::user_fpregs_struct> {
    let mut regs = MaybeUninit::<libc::user_fpregs_struct>::zeroed();
    ptrace(libc::PTRACE_GETFPREGS, tid, 0, regs.as_mut_ptr() as usize)?;
    // SAFETY: the kernel filled the structure (and it was zeroed before).
    Ok(unsafe { regs.assume_init() })
}

pub(crate) fn set_fpregs(tid: Tid, regs: &libc::user_fpregs_struct) -> SysResult<()> {
    ptrace(
        libc::PTRACE_SETFPREGS,
        tid,
        0,
        regs as *const libc::user_fpregs_struct as usize,
    )
}

/// Reads register set `kind` (an `NT_*` note type) into `buf` with PTRACE_GETREGSET;
/// how many bytes the kernel filled.
pub(crate) fn get_regset(tid: Tid, kind: u32, buf: &mut [u8]) -> SysResult<usize> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // The iovec points into `buf`, valid for its length; the kernel shortens iov_len
    // to what it wrote.
    ptrace(
        libc::PTRACE_GETREGSET,
        tid,
        kind as usize,
        &mut iov as *mut libc::iovec as usize,
    )?;
    Ok(iov.iov_len.min(buf.len()))
}

/// Offset of debug register `n` in `struct user`.
fn debugreg_offset(n: usize) -> usize {
    std::mem::offset_of!(libc::user, u_debugreg) + n * 8
}

pub(crate) fn peek_debugreg(tid: Tid, n: usize) -> SysResult<u64> {
    Errno::clear();
    // SAFETY: PEEKUSER reads one word at an offset inside `struct user`.
    let ret = unsafe {
        libc::ptrace(
            libc::PTRACE_PEEKUSER,
            tid.0,
            debugreg_offset(n) as *mut libc::c_void,
            std::ptr::null_mut::<libc::c_void>(),
        )
    };
    if ret == -1 && Errno::last_raw() != 0 {
        return Err(Errno::last());
    }
    Ok(ret as u64)
}

pub(crate) fn poke_debugreg(tid: Tid, n: usize, value: u64) -> SysResult<()> {
    ptrace(
        libc::PTRACE_POKEUSER,
        tid,
        debugreg_offset(n),
        value as usize,
    )
}

/// The decoded result of one `waitpid`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WaitResult {
    pub tid: Tid,
    pub status: i32,
}

/// `waitpid(pid, __WALL | __WNOTHREAD [| WNOHANG])`. `Ok(None)` means nothing was
/// ready (WNOHANG) or the call was interrupted by a signal (EINTR) when
/// `interruptible` is set.
pub(crate) fn wait(pid: i32, nohang: bool, interruptible: bool) -> SysResult<Option<WaitResult>> {
    let mut flags = libc::__WALL | libc::__WNOTHREAD;
    if nohang {
        flags |= libc::WNOHANG;
    }
    loop {
        let mut status = 0;
        // SAFETY: plain system call with a pointer to a local.
        let ret = unsafe { libc::waitpid(pid, &mut status, flags) };
        if ret > 0 {
            return Ok(Some(WaitResult {
                tid: Tid(ret),
                status,
            }));
        }
        if ret == 0 {
            return Ok(None);
        }
        match Errno::last() {
            Errno::EINTR if interruptible => return Ok(None),
            Errno::EINTR => continue,
            e => return Err(e),
        }
    }
}

pub(crate) fn tgkill(pid: i32, tid: i32, sig: i32) -> SysResult<()> {
    // SAFETY: plain system call.
    let ret = unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, sig) };
    check(ret).map(|_| ())
}

pub(crate) fn kill(pid: i32, sig: i32) -> SysResult<()> {
    // SAFETY: plain system call.
    let ret = unsafe { libc::kill(pid, sig) };
    check(ret as libc::c_long).map(|_| ())
}

pub(crate) fn gettid() -> i32 {
    // SAFETY: plain system call without arguments.
    unsafe { libc::gettid() }
}

/// Decoded wait status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    Exited(i32),
    Signaled(i32, bool),
    /// A ptrace stop: signal number and ptrace event (0 = signal-delivery-stop).
    Stopped(i32, i32),
    Other,
}

pub(crate) fn decode(status: i32) -> Status {
    if libc::WIFEXITED(status) {
        Status::Exited(libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        Status::Signaled(libc::WTERMSIG(status), libc::WCOREDUMP(status))
    } else if libc::WIFSTOPPED(status) {
        Status::Stopped(libc::WSTOPSIG(status), (status >> 16) & 0xff)
    } else {
        Status::Other
    }
}

/// A one-shot `CLOCK_MONOTONIC` timer that sends a signal to one thread of this process
/// (the recorder's time slice: it wakes the tracer thread out of `waitpid`).
pub(crate) struct ThreadTimer(libc::timer_t);

impl ThreadTimer {
    /// A timer that sends `signo` to thread `tid` of this process when it fires.
    pub(crate) fn new(tid: i32, signo: i32) -> SysResult<ThreadTimer> {
        // SAFETY: a zeroed sigevent is valid; timer_create writes the id into `id`.
        unsafe {
            let mut ev: libc::sigevent = std::mem::zeroed();
            ev.sigev_notify = libc::SIGEV_THREAD_ID;
            ev.sigev_signo = signo;
            ev.sigev_notify_thread_id = tid;
            let mut id: libc::timer_t = std::ptr::null_mut();
            if libc::timer_create(libc::CLOCK_MONOTONIC, &mut ev, &mut id) != 0 {
                return Err(Errno::last());
            }
            Ok(ThreadTimer(id))
        }
    }

    /// Fires once after `after` (zero disarms).
    pub(crate) fn arm(&self, after: std::time::Duration) -> SysResult<()> {
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: after.as_secs() as libc::time_t,
                tv_nsec: libc::c_long::from(after.subsec_nanos() as i32),
            },
        };
        // SAFETY: the timer id is live (owned by self); the spec is a local.
        let ret = unsafe { libc::timer_settime(self.0, 0, &spec, std::ptr::null_mut()) };
        if ret != 0 {
            return Err(Errno::last());
        }
        Ok(())
    }
}

impl Drop for ThreadTimer {
    fn drop(&mut self) {
        // SAFETY: the id came from timer_create and is deleted once.
        unsafe {
            libc::timer_delete(self.0);
        }
    }
}

/// Writes register set `kind` (an `NT_*` note type) from `buf` with PTRACE_SETREGSET.
pub(crate) fn set_regset(tid: Tid, kind: u32, buf: &[u8]) -> SysResult<()> {
    let mut iov = libc::iovec {
        iov_base: buf.as_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // The kernel only reads through the iovec, which points into `buf`.
    ptrace(
        libc::PTRACE_SETREGSET,
        tid,
        kind as usize,
        &mut iov as *mut libc::iovec as usize,
    )
}

/// A stopped thread's signal mask (PTRACE_GETSIGMASK).
pub(crate) fn get_sigmask(tid: Tid) -> SysResult<u64> {
    let mut mask = 0u64;
    ptrace(
        libc::PTRACE_GETSIGMASK,
        tid,
        8,
        &mut mask as *mut u64 as usize,
    )?;
    Ok(mask)
}

/// Sets a stopped thread's signal mask (PTRACE_SETSIGMASK).
pub(crate) fn set_sigmask(tid: Tid, mask: u64) -> SysResult<()> {
    ptrace(
        libc::PTRACE_SETSIGMASK,
        tid,
        8,
        &mask as *const u64 as usize,
    )
}

/// `PTRACE_SET_SYSCALL_USER_DISPATCH_CONFIG` (Linux 6.4): the tracer turns syscall user
/// dispatch on or off for a stopped tracee.
const PTRACE_SET_SYSCALL_USER_DISPATCH_CONFIG: libc::c_uint = 0x4210;

#[repr(C)]
struct SudConfig {
    mode: u64,
    selector: u64,
    offset: u64,
    len: u64,
}

/// Turns syscall user dispatch on for `tid`: every system call made from outside
/// `[offset, offset + len)` (the address after its `syscall` instruction) raises SIGSYS
/// instead of running (`Some`), or off (`None`). Not inherited by forks or new threads.
pub(crate) fn set_syscall_dispatch(tid: Tid, allowed: Option<(u64, u64)>) -> SysResult<()> {
    let (mode, offset, len) = match allowed {
        Some((offset, len)) => (1, offset, len),
        None => (0, 0, 0),
    };
    let cfg = SudConfig {
        mode,
        selector: 0,
        offset,
        len,
    };
    ptrace(
        PTRACE_SET_SYSCALL_USER_DISPATCH_CONFIG,
        tid,
        std::mem::size_of::<SudConfig>(),
        &cfg as *const SudConfig as usize,
    )
}
