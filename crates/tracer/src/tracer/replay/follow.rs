//! Following the live process's moves in the present's interval: a replay going
//! forward knows it reached the present when it made them all (docs/reverse.md).

use super::*;

/// How many of `target`'s moves, from the first, lead to `live` (the rest, if any,
/// are moves made after that prefix and before the live process's next move: a
/// position found by a scan in the present's interval).
pub(super) fn live_prefix_len(target: &Position, live: &Position) -> usize {
    (0..=target.path.len())
        .rev()
        .find(|&k| {
            Position {
                event: target.event,
                path: target.path[..k].to_vec(),
            }
            .leads_to(live)
        })
        .unwrap_or(0)
}

/// Progress along the live process's moves in the last interval between system calls
/// (the one the present is in): when they are all made, the replay is at the present.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Follow {
    pub(super) idx: usize,
    pub(super) done: u64,
    /// A single-step landed on the address of the current trap move without trapping.
    pub(super) landed: bool,
    /// The breakpoint this follow put in for its current trap move.
    pub(super) guard: Option<u64>,
}

impl Tracer {
    /// Follows the live moves from `f`; at their end the present is reached.
    pub(super) fn start_follow(&mut self, mut f: Follow) {
        // A follow begun on the way (the seek passed the present's system call) gives
        // way to this one: its guard must not outlive it.
        self.end_follow_guard();
        let Some(live) = self.replay_mut().map(|r| r.live_pos.clone()) else {
            return;
        };
        if let Some(Move::Trap { addr, .. }) = live.path.get(f.idx) {
            if self.insert_breakpoint_here(*addr).is_ok() {
                f.guard = Some(addr.0);
            }
        }
        if let Some(r) = self.replay_mut() {
            r.follow = Some(f);
        }
    }

    /// Takes the int3 that finds a preemption point out (the breakpoint table is shared
    /// with the live process, which must never get it).
    pub(super) fn drop_preempt_guard(&mut self) {
        let guard = self
            .rec
            .as_mut()
            .and_then(|r| r.replay.as_mut())
            .and_then(|r| r.sched.preempt_guard.take());
        if let Some(g) = guard {
            let _ = self.remove_breakpoint_here(RuntimeAddr(g));
        }
    }

    pub(super) fn end_follow_guard(&mut self) {
        let guard = self
            .replay_mut()
            .and_then(|r| r.follow.as_mut())
            .and_then(|f| f.guard.take());
        if let Some(g) = guard {
            let _ = self.remove_breakpoint_here(RuntimeAddr(g));
        }
    }

    /// Whether the follow is at its end (the replay is at the present).
    pub(super) fn follow_done(&self) -> bool {
        let Some(r) = self.rec.as_ref().and_then(|r| r.replay.as_ref()) else {
            return false;
        };
        r.follow.is_some_and(|f| f.idx >= r.live_pos.path.len())
    }

    /// Advances the follow by one trap or one step of the shown replay.
    pub(super) fn follow_advance(&mut self, trap: Option<u64>, step_pc: Option<u64>) {
        let Some(r) = self.rec.as_mut().and_then(|r| r.replay.as_mut()) else {
            return;
        };
        let Some(mut f) = r.follow else {
            return;
        };
        let cur = r.live_pos.path.get(f.idx).copied();
        let mut completed = false;
        match cur {
            Some(Move::Trap { addr, count }) => {
                if trap == Some(addr.0) {
                    f.done += 1;
                    f.landed = false;
                } else if step_pc == Some(addr.0) {
                    if f.done + 1 == count {
                        f.done += 1;
                    } else {
                        f.landed = true;
                    }
                }
                completed = f.done >= count;
            }
            Some(Move::Step { count }) => {
                if step_pc.is_some() {
                    f.done += 1;
                }
                completed = f.done >= count;
            }
            None => {}
        }
        r.follow = Some(f);
        if completed {
            self.end_follow_guard();
            let next = Follow {
                idx: f.idx + 1,
                ..Follow::default()
            };
            self.start_follow(next);
        }
    }

    /// The shown replay stopped at `pc` without trapping there: if that is the
    /// address of the follow's current trap move, leaving it is that arrival.
    pub(super) fn follow_landed(&mut self, pc: u64) {
        let Some(r) = self.rec.as_mut().and_then(|r| r.replay.as_mut()) else {
            return;
        };
        let at = matches!(r.follow.map(|f| r.live_pos.path.get(f.idx)),
            Some(Some(Move::Trap { addr, .. })) if addr.0 == pc);
        if let Some(f) = r.follow.as_mut().filter(|_| at) {
            f.landed = true;
        }
    }

    /// A step of the shown replay is about to start at `pc`: leaving the address of the
    /// current trap move after landing there counts as that arrival.
    pub(in crate::tracer) fn replay_before_step(&mut self, pc: u64) {
        let Some(r) = self.rec.as_mut().and_then(|r| r.replay.as_mut()) else {
            return;
        };
        let Some(f) = r.follow.as_mut() else {
            return;
        };
        if f.landed {
            if let Some(Move::Trap { addr, .. }) = r.live_pos.path.get(f.idx) {
                if addr.0 == pc {
                    f.landed = false;
                    f.done += 1;
                }
            }
        }
    }

    /// The shown replay reported a stop (see `note_stop`).
    pub(in crate::tracer) fn replay_noted(&mut self, tid: Tid, reason: &StopReason) {
        let pc = self.threads.get(&tid).and_then(|t| t.regs).map(|r| r.rip);
        match reason {
            StopReason::Breakpoint { addr } => self.follow_advance(Some(addr.0), None),
            StopReason::Step => {
                let pc = pc.or_else(|| sys::get_regs(tid).ok().map(|r| r.rip));
                self.follow_advance(None, pc);
            }
            // A watchpoint trigger (after the instruction before) or a pause with the pc
            // on the current trap move's address has arrived there without trapping. A
            // resume runs into the int3 and traps (the arrival counted then), but the
            // engine, resuming from a stop it did not make at a breakpoint, steps off
            // the int3 first (as gdb does): that step counts it (`replay_before_step`).
            StopReason::Watchpoint { .. } | StopReason::Paused => {
                let pc = pc.or_else(|| sys::get_regs(tid).ok().map(|r| r.rip));
                if let Some(pc) = pc {
                    self.follow_landed(pc);
                }
            }
            _ => {}
        }
        let seeking = self
            .rec
            .as_ref()
            .and_then(|r| r.replay.as_ref())
            .is_some_and(|r| r.in_moves || r.stop_at_event.is_some());
        if !seeking && self.follow_done() {
            self.leave_replay();
            if let Some(rec) = self.rec.as_mut() {
                rec.arrived = true;
                rec.at_present = true;
            }
        }
    }

    /// Before a forward resume of the shown replay: live single-steps still to make in
    /// the present's interval are made first, as the live process made them.
    pub(in crate::tracer) fn replay_before_resume(&mut self) -> Result<()> {
        loop {
            let Some(r) = self.rec.as_ref().and_then(|r| r.replay.as_ref()) else {
                return Ok(());
            };
            let Some(f) = r.follow else {
                return Ok(());
            };
            let Some(Move::Step { count }) = r.live_pos.path.get(f.idx).copied() else {
                return Ok(());
            };
            if f.done >= count {
                return Ok(());
            }
            let tid = self.shown_thread();
            self.step(tid)?;
            self.replay_wait()?;
            if !self.is_replaying() {
                return Ok(());
            }
        }
    }
}
