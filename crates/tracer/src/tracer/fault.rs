//! The point in the recording of a fault the program's own instruction raised: a live
//! stop at a SIGSEGV has no exact position (a signal is no move), so going back from it
//! first finds it again in a replay (docs/reverse.md).

use std::ops::ControlFlow;

use super::record::{Move, Position};
use super::replay::ScanStop;
use super::*;

impl Tracer {
    /// The live process is stopped at a fault its own instruction raised (the engine
    /// knows the signal): finds its position — the last exact one before it, then the
    /// n-th arrival at the faulting instruction, n counted by a replay of the interval
    /// with an int3 there until the replay faults too — and makes it the present's.
    /// Errors when the process is not such a stop or the replay does not fault there.
    /// A replay going forward to that point later reports `stop` (the fault) there.
    pub fn locate_fault(&mut self, stop: StopReason) -> Result<Position> {
        self.require_stopped()?;
        let tid = Tid(self.pid.0);
        let pc = self.regs(tid)?.pc();
        let not_here = || Error::Replay("this stop is not a fault the recording can find".into());
        let rec = self.rec.as_mut().ok_or_else(not_here)?;
        if rec.replay.is_some() {
            return Err(not_here());
        }
        if let Some(p) = &rec.pos {
            return Ok(p.clone());
        }
        let base = rec.last_known.clone().ok_or_else(not_here)?;
        // A present far enough past the base that the scan runs to the fault.
        let mut far = base.clone();
        far.push(Move::Trap {
            addr: RuntimeAddr(pc),
            count: u64::MAX / 2,
        });
        rec.pos = Some(far.clone());
        let mut last: Option<Position> = None;
        let mut faulted = false;
        let res = self.scan_stops(
            Some(base.event),
            &far,
            &[RuntimeAddr(pc)],
            &mut |t, _, stop| match stop {
                ScanStop::Breakpoint(a) if a.0 == pc => {
                    last = t.position();
                    ControlFlow::Continue(())
                }
                ScanStop::Fault { .. } => {
                    faulted = true;
                    ControlFlow::Break(())
                }
                _ => ControlFlow::Continue(()),
            },
        );
        self.leave_replay();
        let found = match (res, faulted, last) {
            (Ok(_), true, Some(p)) => Ok(p),
            (Err(e), _, _) => Err(e),
            _ => Err(Error::Replay(
                "the recording diverged here: the replay did not fault where the program did"
                    .into(),
            )),
        };
        if let Some(rec) = self.rec.as_mut() {
            rec.pos = found.as_ref().ok().cloned();
            if rec.pos.is_some() {
                rec.present_stop = Some(stop);
            }
        }
        found
    }

    /// Before the live process resumes from a fault its own instruction raised (a
    /// handler is about to take it): finds the fault's position, as a reverse request
    /// there would ([`Tracer::locate_fault`]), so the moves after it — a breakpoint in
    /// the handler — extend an exact position and the reverse requests work from there.
    /// Without it the position stays unknown until the next system call. A process
    /// with more than one thread is left as it was (its fault's point is not searched
    /// yet).
    pub(super) fn settle_live_fault(&mut self) {
        let Some(rec) = self.rec.as_mut() else {
            return;
        };
        let Some((pc, stop)) = rec.live_fault.take() else {
            return;
        };
        if rec.replay.is_some() || rec.pos.is_some() || self.threads.len() != 1 {
            return;
        }
        let tid = Tid(self.pid.0);
        if self.regs(tid).map(|r| r.pc()).ok() != Some(pc.0) {
            return;
        }
        if let Err(e) = self.locate_fault(stop) {
            tracing::debug!("the fault's point was not found before resuming: {e}");
        }
    }
}
