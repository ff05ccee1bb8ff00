//! Signals on the tracer thread: the policy that lets only chosen signals stop (the
//! others are delivered without a stop), and what the last signal stop was.

use tracer::{SignalPolicy, Tid, Tracer};

use super::{lock, Core, Session, StopCause};
use crate::error::Result;
use crate::signals::{signal_name, SignalInfo, SignalSet};

/// Sets the tracer's policy for every signal: those in `stops` stop, all are
/// delivered on resume. SIGTRAP keeps the tracer's own policy (it stops and is not
/// delivered: tandem's traps never reach it, so one that does is not the program's
/// to see); SIGKILL cannot be stopped.
pub(super) fn apply_policy(t: &mut Tracer, stops: SignalSet) {
    for signo in 1..=64 {
        if signo == libc::SIGTRAP || signo == libc::SIGKILL {
            continue;
        }
        t.set_signal_policy(
            signo,
            SignalPolicy {
                stop: stops.contains(signo),
                pass: true,
            },
        );
    }
}

impl Core {
    /// A signal whose policy says stop: stop, remembering what the kernel says of it.
    /// Resuming delivers it (the tracer keeps it pending on the thread).
    pub(super) fn on_signal(&mut self, t: &mut Tracer, tid: Tid, signo: i32) {
        self.clear_step(t);
        let info = match t.signal_info(tid) {
            Ok(i) => SignalInfo::from_siginfo(&i),
            Err(e) => {
                tracing::debug!("no siginfo for thread {tid}: {e}");
                SignalInfo {
                    signo,
                    name: signal_name(signo),
                    code: 0,
                    fault_address: None,
                    description: signal_name(signo),
                }
            }
        };
        let description = info.description.clone();
        self.last_signal = Some((tid, info));
        self.stopped_with(
            tid,
            StopCause::Signal(signo),
            false,
            None,
            Some(description),
        );
    }

    /// The process entered a job-control stop (SIGSTOP, SIGTSTP, ...). It stops the
    /// session only when its signal is one that stops; otherwise the process is left
    /// to job control (resumed threads stay stopped until SIGCONT).
    pub(super) fn on_group_stop(&mut self, t: &mut Tracer, tid: Tid, signo: i32) {
        if !self.signal_stops.contains(signo) {
            self.resume(t);
            return;
        }
        self.clear_step(t);
        let name = signal_name(signo);
        let description = format!("{name}: stopped by job control");
        self.last_signal = Some((
            tid,
            SignalInfo {
                signo,
                name,
                code: 0,
                fault_address: None,
                description: description.clone(),
            },
        ));
        self.stopped_with(
            tid,
            StopCause::Signal(signo),
            false,
            None,
            Some(description),
        );
    }
}

impl Session {
    /// Sets the signals that stop the debuggee (DAP exception filters); every other
    /// signal is delivered to the program without a stop. The default is
    /// [`crate::signals::DEFAULT_STOPS`] (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT); a
    /// SIGTRAP that tandem did not cause always stops. A signal that stopped is
    /// delivered when the program resumes, so a SIGSEGV then continue ends the program
    /// with that signal, as in gdb. Numbers outside 1–64 are ignored.
    pub fn set_signal_stops(&self, stop: &[i32]) -> Result<()> {
        let set = SignalSet::of(stop);
        let core = self.core.clone();
        self.handle.call(move |t: &mut Tracer| {
            lock(&core).signal_stops = set;
            apply_policy(t, set);
        })?;
        Ok(())
    }

    /// The signal thread `tid` stopped with at the last stop (DAP `exceptionInfo`);
    /// `None` when the last stop was not a signal of that thread.
    pub fn exception_info(&self, tid: Tid) -> Option<SignalInfo> {
        let c = lock(&self.core);
        c.last_signal
            .as_ref()
            .filter(|(t, _)| *t == tid)
            .map(|(_, info)| info.clone())
    }
}
