//! Signals as a debugger shows them: names, the kernel's reasons (`si_code`) in words,
//! and which signals stop the debuggee by default.

/// A signal the debuggee stopped with (DAP `exceptionInfo`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignalInfo {
    /// The signal number.
    pub signo: i32,
    /// `SIGSEGV`.
    pub name: String,
    /// `si_code` from its siginfo.
    pub code: i32,
    /// The faulting address (`si_addr`) of SIGSEGV, SIGBUS, SIGFPE and SIGILL raised
    /// by a fault.
    pub fault_address: Option<u64>,
    /// `SIGSEGV: address not mapped to object at 0x0`.
    pub description: String,
}

/// The signals that stop the debuggee unless told otherwise: the ones that kill it.
/// (A SIGTRAP that tandem did not cause always stops.)
pub const DEFAULT_STOPS: [i32; 5] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGFPE,
    libc::SIGILL,
    libc::SIGABRT,
];

/// `SIGSEGV` for 11; real-time signals as gdb names them (`SIG34`).
pub fn signal_name(signo: i32) -> String {
    let name = match signo {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGSTKFLT => "SIGSTKFLT",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGURG => "SIGURG",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGWINCH => "SIGWINCH",
        libc::SIGIO => "SIGIO",
        libc::SIGPWR => "SIGPWR",
        libc::SIGSYS => "SIGSYS",
        n => return format!("SIG{n}"),
    };
    name.to_string()
}

/// What a signal means, in a few words (`segmentation fault` for SIGSEGV), for
/// messages such as "program terminated by signal SIGSEGV (segmentation fault)".
pub fn signal_description(signo: i32) -> String {
    let text = match signo {
        0 => "no signal",
        libc::SIGHUP => "hangup",
        libc::SIGINT => "interrupt",
        libc::SIGQUIT => "quit",
        libc::SIGILL => "illegal instruction",
        libc::SIGTRAP => "trace/breakpoint trap",
        libc::SIGABRT => "aborted",
        libc::SIGBUS => "bus error",
        libc::SIGFPE => "arithmetic exception",
        libc::SIGKILL => "killed",
        libc::SIGUSR1 => "user defined signal 1",
        libc::SIGSEGV => "segmentation fault",
        libc::SIGUSR2 => "user defined signal 2",
        libc::SIGPIPE => "broken pipe",
        libc::SIGALRM => "alarm clock",
        libc::SIGTERM => "terminated",
        libc::SIGSTKFLT => "stack fault",
        libc::SIGCHLD => "child status changed",
        libc::SIGCONT => "continued",
        libc::SIGSTOP => "stopped (signal)",
        libc::SIGTSTP => "stopped",
        libc::SIGTTIN => "stopped (tty input)",
        libc::SIGTTOU => "stopped (tty output)",
        libc::SIGURG => "urgent I/O condition",
        libc::SIGXCPU => "CPU time limit exceeded",
        libc::SIGXFSZ => "file size limit exceeded",
        libc::SIGVTALRM => "virtual timer expired",
        libc::SIGPROF => "profiling timer expired",
        libc::SIGWINCH => "window changed",
        libc::SIGIO => "I/O possible",
        libc::SIGPWR => "power failure",
        libc::SIGSYS => "bad system call",
        n => return format!("real-time signal {n}"),
    };
    text.to_string()
}

/// Why the signal was sent, from `si_code`, in the words of `siginfo(3)`.
fn reason(signo: i32, code: i32) -> Option<&'static str> {
    let specific = match (signo, code) {
        (libc::SIGSEGV, 1) => "address not mapped to object",
        (libc::SIGSEGV, 2) => "invalid permissions for mapped object",
        (libc::SIGSEGV, 3) => "failed address bound checks",
        (libc::SIGSEGV, 4) => "access denied by memory protection keys",
        (libc::SIGBUS, 1) => "invalid address alignment",
        (libc::SIGBUS, 2) => "nonexistent physical address",
        (libc::SIGBUS, 3) => "object-specific hardware error",
        (libc::SIGBUS, 4) => "hardware memory error consumed on a machine check",
        (libc::SIGBUS, 5) => "hardware memory error detected",
        (libc::SIGFPE, 1) => "integer divide by zero",
        (libc::SIGFPE, 2) => "integer overflow",
        (libc::SIGFPE, 3) => "floating-point divide by zero",
        (libc::SIGFPE, 4) => "floating-point overflow",
        (libc::SIGFPE, 5) => "floating-point underflow",
        (libc::SIGFPE, 6) => "floating-point inexact result",
        (libc::SIGFPE, 7) => "floating-point invalid operation",
        (libc::SIGFPE, 8) => "subscript out of range",
        (libc::SIGILL, 1) => "illegal opcode",
        (libc::SIGILL, 2) => "illegal operand",
        (libc::SIGILL, 3) => "illegal addressing mode",
        (libc::SIGILL, 4) => "illegal trap",
        (libc::SIGILL, 5) => "privileged opcode",
        (libc::SIGILL, 6) => "privileged register",
        (libc::SIGILL, 7) => "coprocessor error",
        (libc::SIGILL, 8) => "internal stack error",
        (libc::SIGTRAP, 1) => "process breakpoint",
        (libc::SIGTRAP, 2) => "process trace trap",
        _ => "",
    };
    if !specific.is_empty() {
        return Some(specific);
    }
    Some(match code {
        libc::SI_USER => "sent by kill",
        0x80 => "sent by the kernel",
        libc::SI_QUEUE => "sent by sigqueue",
        libc::SI_TIMER => "a POSIX timer expired",
        libc::SI_MESGQ => "a message arrived on a message queue",
        libc::SI_ASYNCIO => "asynchronous I/O completed",
        libc::SI_SIGIO => "queued SIGIO",
        libc::SI_TKILL => "sent by tkill",
        _ => return None,
    })
}

impl SignalInfo {
    /// Builds the description from the kernel's siginfo.
    pub(crate) fn from_siginfo(info: &tracer::SigInfo) -> SignalInfo {
        let name = signal_name(info.signo);
        let fault_address = info.addr.filter(|_| {
            matches!(
                info.signo,
                libc::SIGSEGV | libc::SIGBUS | libc::SIGFPE | libc::SIGILL
            )
        });
        let mut description = name.clone();
        if let Some(r) = reason(info.signo, info.code) {
            description.push_str(": ");
            description.push_str(r);
        }
        if let Some(a) = fault_address {
            description.push_str(&format!(" at {a:#x}"));
        } else if let Some(pid) = info.sender.filter(|p| *p > 0) {
            description.push_str(&format!(" from process {pid}"));
        }
        SignalInfo {
            signo: info.signo,
            name,
            code: info.code,
            fault_address,
            description,
        }
    }
}

/// A set of signal numbers 1–64.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SignalSet(u128);

impl SignalSet {
    pub(crate) fn of(signals: &[i32]) -> SignalSet {
        let mut set = SignalSet(0);
        for &s in signals {
            if (1..=64).contains(&s) {
                set.0 |= 1 << s;
            }
        }
        set
    }

    pub(crate) fn contains(self, signo: i32) -> bool {
        (1..=64).contains(&signo) && self.0 & (1 << signo) != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_read_like_siginfo() {
        let segv = SignalInfo::from_siginfo(&tracer::SigInfo {
            signo: libc::SIGSEGV,
            code: 1,
            addr: Some(0),
            sender: None,
        });
        assert_eq!(segv.name, "SIGSEGV");
        assert_eq!(segv.fault_address, Some(0));
        assert_eq!(
            segv.description,
            "SIGSEGV: address not mapped to object at 0x0"
        );
        let abrt = SignalInfo::from_siginfo(&tracer::SigInfo {
            signo: libc::SIGABRT,
            code: libc::SI_TKILL,
            addr: None,
            sender: Some(42),
        });
        assert_eq!(abrt.description, "SIGABRT: sent by tkill from process 42");
        assert_eq!(signal_name(34), "SIG34");
        let set = SignalSet::of(&[libc::SIGUSR1, 99, 0]);
        assert!(set.contains(libc::SIGUSR1) && !set.contains(libc::SIGSEGV) && !set.contains(99));
    }
}
