//! Recording: `rdtsc` and `rdtscp` made to fault (`prctl(PR_SET_TSC, PR_TSC_SIGSEGV)`,
//! injected at the first system-call boundary, inherited by every snapshot) and
//! emulated: the tracer reads the time-stamp counter itself, gives the program the value
//! and records it as an event; a replay gives the recorded value at the same point.

use super::*;

const SYS_PRCTL: u64 = 157;
const PR_SET_TSC: u64 = 26;
const PR_TSC_SIGSEGV: u64 = 2;
/// The event number of an emulated `rdtsc`/`rdtscp` (no system call has it).
pub(super) const TSC_EVENT: u64 = 1 << 32;

impl Tracer {
    /// Makes `rdtsc` fault in the stopped, recorded process.
    pub(super) fn trap_tsc(&mut self) -> Result<()> {
        let tid = self
            .injection_thread()
            .ok_or_else(|| Error::Placement("no stopped thread".into()))?;
        let at = sys::get_regs(tid)
            .map_err(|e| Error::ptrace("PTRACE_GETREGS", tid, e))?
            .rip;
        let r = self.inject_syscall(at, SYS_PRCTL, [PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0, 0])?;
        if r != 0 {
            return Err(Error::Placement(format!(
                "prctl(PR_SET_TSC) failed ({})",
                r as i64
            )));
        }
        Ok(())
    }

    /// A SIGSEGV of a recorded (or replayed) thread: when it is an `rdtsc`/`rdtscp`
    /// trapped by `PR_SET_TSC`, the instruction is emulated and the signal dropped.
    pub(super) fn tsc_fault(&mut self, tid: Tid, collecting: bool) -> Result<Option<Outcome>> {
        let mut regs = sys::get_regs(tid).map_err(|e| Error::ptrace("PTRACE_GETREGS", tid, e))?;
        let mut b = [0u8; 3];
        if self.read_memory(RuntimeAddr(regs.rip), &mut b).unwrap_or(0) < 2 {
            return Ok(None);
        }
        let len = match b {
            [0x0f, 0x31, _] => 2,
            [0x0f, 0x01, 0xf9] => 3,
            _ => return Ok(None),
        };
        let cursor = self.replay_cursor();
        let interval = if self.is_replaying() {
            sysbuf::Interval::default()
        } else {
            self.sysbuf_take()
        };
        let Some(rec) = self.rec.as_mut() else {
            return Ok(None);
        };
        let (value, aux, replayed) = match rec.replay.as_ref() {
            Some(_) => match rec.events.get(cursor as usize) {
                Some(ev) if ev.nr == TSC_EVENT => (ev.result, ev.args[0], true),
                _ => {
                    self.replay_diverged(
                        "the recording diverged here: an rdtsc the recording does not have",
                    );
                    return Ok(Some(Outcome::Report(tid, StopReason::Replayed)));
                }
            },
            None => {
                let mut aux = 0u32;
                // SAFETY: rdtscp reads the counter and IA32_TSC_AUX; no memory but `aux`.
                let value = unsafe { std::arch::x86_64::__rdtscp(&mut aux) };
                rec.log(TSC_EVENT, [u64::from(aux), 0, 0, 0, 0, 0], value, interval);
                rec.since_snapshot += 1;
                (value, u64::from(aux), false)
            }
        };
        regs.rax = value & 0xffff_ffff;
        regs.rdx = value >> 32;
        if len == 3 {
            regs.rcx = aux & 0xffff_ffff;
        }
        regs.rip += len;
        sys::set_regs(tid, &regs).map_err(|e| Error::ptrace("PTRACE_SETREGS", tid, e))?;
        if let Some(t) = self.threads.get_mut(&tid) {
            t.regs = Some(regs);
        }
        if replayed {
            if let Some(o) = self.replay_advance(tid)? {
                return Ok(Some(o));
            }
        }
        if self.threads.get(&tid).is_some_and(|t| t.stepping) {
            return Ok(Some(self.step_done(tid)));
        }
        if !collecting {
            self.resume_thread(tid);
        }
        Ok(Some(Outcome::Absorbed))
    }
}
