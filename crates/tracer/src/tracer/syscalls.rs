//! What recording and replay do with each system call: emulate it (the recorded result
//! and the bytes the kernel wrote are injected), run it again for real (it shapes the
//! process's own address space or kernel state), or end the recording (not supported yet).
//!
//! The table is a whitelist: a call not named here ends the recording with a message,
//! so a replay never shows a past that the recording cannot vouch for.

/// How a system call is treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Class {
    /// Skipped on replay; its result and the memory it wrote are injected. Its effects
    /// outside the process (writes to files, the terminal, sockets) happen once.
    Emulate,
    /// Executed again on replay (the address space, signal state, the process's own
    /// file table for read-only opens); its result must be the recorded one.
    Real,
    /// Executed again on replay, its result replaced by the recorded one (close: the
    /// replay's file table may lack descriptors an emulated open gave the program).
    RealAnyResult,
    /// A new thread (`clone` with `CLONE_THREAD`, `clone3`, whose flags the recorder
    /// checks): executed again on replay, a real thread is made; its result and the
    /// thread-id words the kernel wrote get the recorded id.
    Thread,
    /// Ends the recording, with this reason.
    Unsupported(&'static str),
}

/// A region the kernel may have written, as (address, length), known from the call's
/// arguments, its result and (for some) memory read after the call.
pub(super) type Region = (u64, u64);

pub(super) const SYS_OPEN: u64 = 2;
pub(super) const SYS_MMAP: u64 = 9;
pub(super) const SYS_IOCTL: u64 = 16;
pub(super) const SYS_OPENAT: u64 = 257;
pub(super) const SYS_CLONE: u64 = 56;
pub(super) const MAP_FIXED: u64 = 0x10;

const TCGETS: u64 = 0x5401;
const TIOCGWINSZ: u64 = 0x5413;
const FIONREAD: u64 = 0x541b;
const TIOCGPGRP: u64 = 0x540f;

/// The class of call `nr` with arguments `a`.
pub(super) fn class(nr: u64, a: &[u64; 6]) -> Class {
    use Class::*;
    match nr {
        // read, write, pread64, pwrite64, readv, writev, preadv, pwritev, preadv2, pwritev2
        0 | 1 | 17 | 18 | 19 | 20 | 295 | 296 | 327 | 328 => Emulate,
        // stat, fstat, lstat, newfstatat, statx, access, faccessat, faccessat2, lseek
        4 | 5 | 6 | 262 | 332 | 21 | 269 | 439 | 8 => Emulate,
        // poll, select, ppoll, pselect6
        7 | 23 | 271 | 270 => Emulate,
        // sched_yield, nanosleep, clock_nanosleep, getpid, gettid, getppid, uid/gid calls
        24 | 35 | 230 | 39 | 186 | 110 | 102 | 104 | 107 | 108 | 115 | 118 | 120 => Emulate,
        // time, gettimeofday, clock_gettime, clock_getres, getrandom, uname, sysinfo
        201 | 96 | 228 | 229 | 318 | 63 | 99 => Emulate,
        // getcwd, readlink, readlinkat, getdents64, getrlimit, getrusage, times, getcpu,
        // sched_getaffinity, statfs, fstatfs
        79 | 89 | 267 | 217 | 97 | 98 | 100 | 309 | 204 | 137 | 138 => Emulate,
        // prlimit64 only as a query (no new limit)
        302 if a[2] == 0 => Emulate,
        // fcntl, dup, dup2, dup3, fsync, fdatasync, ftruncate, pipe, pipe2, unlink,
        // unlinkat, rename, renameat, mkdir, mkdirat, fchmod, chmod, umask, fadvise64
        72 | 32 | 33 | 292 | 74 | 75 | 77 | 22 | 293 | 87 | 263 | 82 | 264 | 316 | 83 | 258
        | 91 | 90 | 95 | 221 => Emulate,
        // socket, connect, sendto, recvfrom, sendmsg, recvmsg, shutdown, bind, listen,
        // getsockname, getpeername, setsockopt, getsockopt
        41 | 42 | 44 | 45 | 46 | 47 | 48 | 49 | 50 | 51 | 52 | 54 | 55 => Emulate,
        // futex: single-threaded, nobody else to wake or to wait for; with more threads the
        // scheduler emulates it (sched.rs)
        202 => Emulate,
        SYS_IOCTL => match a[1] {
            TCGETS | TIOCGWINSZ | FIONREAD | TIOCGPGRP => Emulate,
            _ => Unsupported("an ioctl whose effects are not known yet"),
        },
        SYS_OPEN | SYS_OPENAT => {
            let flags = if nr == SYS_OPEN { a[1] } else { a[2] };
            // O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_TMPFILE
            if flags & (0o1 | 0o2 | 0o100 | 0o1000 | 0o2000 | 0o20000000) == 0 {
                Real
            } else {
                Emulate
            }
        }
        // prctl(PR_SET_SYSCALL_USER_DISPATCH): the program's own dispatch would take the
        // place of the recorder's (the system-call buffer's, sysbuf.rs)
        157 if a[0] == 59 => {
            Unsupported("a program that dispatches its own system calls cannot be recorded yet")
        }
        // close; set_tid_address (its result is the thread id, the live one's is given)
        3 | 218 => RealAnyResult,
        // mmap, mprotect, munmap, brk, rt_sigaction, rt_sigprocmask, rt_sigreturn,
        // mremap, madvise, sigaltstack, arch_prctl, set_tid_address, set_robust_list,
        // rseq, prctl, exit, exit_group, mlock, munlock, membarrier
        9 | 10 | 11 | 12 | 13 | 14 | 15 | 25 | 28 | 131 | 158 | 273 | 334 | 157 | 60 | 231
        | 149 | 150 | 324 => Real,
        // clone with CLONE_THREAD, clone3 (glibc's pthread_create; a fork by clone3 is
        // refused by the recorder, which reads its flags), fork, vfork
        56 if a[0] & 0x10000 != 0 => Thread,
        435 => Thread,
        56 => Unsupported("recording a program that forks is not supported yet"),
        57 | 58 => Unsupported("recording a program that forks is not supported yet"),
        59 | 322 => Unsupported("recording across exec is not supported yet"),
        // kill, tkill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo: signals are not recorded
        62 | 200 | 234 | 129 | 297 => {
            Unsupported("signals sent by the program are not recorded yet")
        }
        // shmget, shmat, memfd_create, pkey_mprotect, userfaultfd, io_uring_setup
        29 | 30 | 319 | 329 | 323 | 425 => {
            Unsupported("shared memory and asynchronous I/O cannot be recorded faithfully yet")
        }
        _ => Unsupported("a system call tandem does not record yet"),
    }
}

/// How many arguments of call `nr` are compared on replay to detect divergence.
pub(super) fn compared_args(nr: u64) -> usize {
    match nr {
        // getpid, gettid, getppid, ids, sched_yield, rt_sigreturn, fork
        39 | 186 | 110 | 102 | 104 | 107 | 108 | 24 | 15 | 57 => 0,
        // time, brk, close, exit, exit_group, uname, sysinfo, dup, pipe
        201 | 12 | 3 | 60 | 231 | 63 | 99 | 32 | 22 => 1,
        // clock_gettime, gettimeofday, getrandom (buffer, length), fstat, munmap
        228 | 96 | 5 | 11 | 229 | 97 | 98 => 2,
        _ => 3,
    }
}

/// Reads what call `nr` with arguments `a` and result `ret` may have written into the
/// program's memory. `read_u64` reads a word of the program (for iovecs, msghdrs and
/// pointers stored in structures).
pub(super) fn written(
    nr: u64,
    a: &[u64; 6],
    ret: u64,
    read_u64: &dyn Fn(u64) -> Option<u64>,
) -> Vec<Region> {
    let ok = (ret as i64) >= 0;
    let n = ret;
    let mut out = Vec::new();
    let mut push = |addr: u64, len: u64| {
        if addr != 0 && len != 0 && len <= (1 << 30) {
            out.push((addr, len));
        }
    };
    let iovecs = |iov: u64, count: u64, mut total: u64, push: &mut dyn FnMut(u64, u64)| {
        for i in 0..count.min(1024) {
            if total == 0 {
                break;
            }
            let (Some(base), Some(len)) = (read_u64(iov + 16 * i), read_u64(iov + 16 * i + 8))
            else {
                break;
            };
            let take = len.min(total);
            push(base, take);
            total -= take;
        }
    };
    match nr {
        0 | 17 | 89 | 217 | 318 if ok => push(a[1 - usize::from(nr == 318)], n),
        267 if ok => push(a[2], n),
        79 if ok => push(a[0], n),
        19 | 295 | 327 if ok => iovecs(a[1], a[2], n, &mut push),
        4..=6 if ok => push(a[1], 144),
        262 if ok => push(a[2], 144),
        332 if ok => push(a[4], 256),
        7 | 271 if ok => push(a[0], a[1].saturating_mul(8)),
        23 | 270 => {
            let words = a[0].div_ceil(64) * 8;
            push(a[1], words);
            push(a[2], words);
            push(a[3], words);
            if nr == 23 {
                push(a[4], 16);
            }
        }
        35 | 230 => push(if nr == 35 { a[1] } else { a[3] }, 16),
        201 => push(a[0], 8),
        96 if ok => {
            push(a[0], 16);
            push(a[1], 8);
        }
        228 | 229 if ok => push(a[1], 16),
        204 if ok => push(a[2], n),
        137 | 138 if ok => push(a[1], 120),
        63 if ok => push(a[0], 390),
        99 if ok => push(a[0], 112),
        97 if ok => push(a[1], 16),
        302 if ok => push(a[3], 16),
        98 if ok => push(a[1], 144),
        100 if ok => push(a[0], 32),
        309 if ok => {
            push(a[0], 4);
            push(a[1], 4);
        }
        22 | 293 if ok => push(a[0], 8),
        // clone, clone3: the new thread's id where CLONE_PARENT_SETTID/CHILD_SETTID say
        56 | 435 if ok => {
            let (flags, ctid, ptid) = if nr == 56 {
                (a[0], a[3], a[2])
            } else {
                (
                    read_u64(a[0]).unwrap_or(0),
                    read_u64(a[0] + 16).unwrap_or(0),
                    read_u64(a[0] + 24).unwrap_or(0),
                )
            };
            if flags & 0x10_0000 != 0 {
                push(ptid, 4);
            }
            if flags & 0x100_0000 != 0 {
                push(ctid, 4);
            }
        }
        // F_GETLK (5) writes a struct flock.
        72 if ok && a[1] == 5 => push(a[2], 32),
        SYS_IOCTL if ok => match a[1] {
            TCGETS => push(a[2], 36),
            TIOCGWINSZ => push(a[2], 8),
            FIONREAD | TIOCGPGRP => push(a[2], 4),
            _ => {}
        },
        45 if ok => {
            push(a[1], n);
            if a[4] != 0 && a[5] != 0 {
                push(a[5], 4);
                push(
                    a[4],
                    read_u64(a[5]).map_or(128, |l| (l & 0xffff_ffff).min(128)),
                );
            }
        }
        47 if ok => {
            // struct msghdr: name, namelen, iov, iovlen, control, controllen, flags.
            let m = a[1];
            push(m, 56);
            if let (Some(name), Some(namelen)) = (read_u64(m), read_u64(m + 8)) {
                push(name, (namelen & 0xffff_ffff).min(128));
            }
            if let (Some(iov), Some(cnt)) = (read_u64(m + 16), read_u64(m + 24)) {
                iovecs(iov, cnt, n, &mut push);
            }
            if let (Some(ctl), Some(len)) = (read_u64(m + 32), read_u64(m + 40)) {
                push(ctl, len.min(4096));
            }
        }
        // getsockname, getpeername, getsockopt: the length word, then the value
        51 | 52 if ok => {
            push(a[2], 4);
            push(
                a[1],
                read_u64(a[2]).map_or(128, |l| (l & 0xffff_ffff).min(128)),
            );
        }
        55 if ok => {
            push(a[4], 4);
            push(
                a[3],
                read_u64(a[4]).map_or(64, |l| (l & 0xffff_ffff).min(256)),
            );
        }
        _ => {}
    }
    out
}
