//! Signals: the siginfo of a signal stop, the per-signal policy, the signal a thread resumes with.

use super::*;

impl Tracer {
    /// What the kernel says about the signal a stopped thread is stopped with (its
    /// siginfo): valid at a `Signal` stop, until the thread runs again.
    pub fn signal_info(&self, tid: Tid) -> Result<SigInfo> {
        if self.thread(tid)?.running {
            return Err(Error::Running);
        }
        let info = sys::siginfo(tid).map_err(|e| Error::ptrace("PTRACE_GETSIGINFO", tid, e))?;
        let (signo, code) = (info.si_signo, info.si_code);
        let fault = matches!(
            signo,
            libc::SIGSEGV | libc::SIGBUS | libc::SIGFPE | libc::SIGILL | libc::SIGTRAP
        );
        // SAFETY: the union member read matches the kind of signal: si_addr for the
        // kernel's fault signals, si_pid for signals sent by a process.
        let addr = if fault && code > 0 {
            Some(unsafe { info.si_addr() } as u64)
        } else {
            None
        };
        let sender = if code <= 0 {
            // SAFETY: as above (SI_USER, SI_TKILL, SI_QUEUE carry the sender's pid).
            Some(unsafe { info.si_pid() })
        } else {
            None
        };
        Ok(SigInfo {
            signo,
            code,
            addr,
            sender,
        })
    }

    /// Sets the policy for one signal.
    pub fn set_signal_policy(&mut self, signo: i32, policy: SignalPolicy) {
        if let Some(p) = self.policy.get_mut(signo as usize) {
            *p = policy;
        }
    }
    /// The policy for one signal.
    pub fn signal_policy(&self, signo: i32) -> SignalPolicy {
        self.policy
            .get(signo as usize)
            .copied()
            .unwrap_or(SignalPolicy::default_for(signo))
    }
    /// The signal a stopped thread will receive when resumed (or none): overrides
    /// what the policy decided at the stop.
    pub fn set_pending_signal(&mut self, tid: Tid, signo: Option<i32>) -> Result<()> {
        let t = self
            .threads
            .get_mut(&tid)
            .ok_or(Error::UnknownThread(tid))?;
        t.deliver = signo.unwrap_or(0);
        if t.deliver_info.is_some_and(|i| Some(i.si_signo) != signo) {
            t.deliver_info = None;
        }
        Ok(())
    }
}
