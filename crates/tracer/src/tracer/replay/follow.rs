//! Following the live process's moves in the present's interval: a replay going
//! forward knows it reached the present when it made them all (docs/reverse.md).
//!
//! The follow counts what the replay's own execution did since the interval's start —
//! every arrival at the current live trap move's address (its guard int3 in place, a
//! step landing there counted once), every single-step during a live step move — at
//! every stop the replay reports, a seek's as well as the user's. So it does not depend
//! on how the point shown was described: a point a search reached by other moves (traps
//! it planted) is as far along the live moves as the execution that got there.

use super::*;

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

    /// Advances the follow by one trap (at `trap`) or one step (ending at `step_pc`)
    /// of the shown replay.
    pub(super) fn follow_advance(&mut self, trap: Option<u64>, step_pc: Option<u64>) {
        let mut trap = trap;
        let mut step = step_pc.is_some();
        loop {
            let Some(r) = self.rec.as_mut().and_then(|r| r.replay.as_mut()) else {
                return;
            };
            let Some(mut f) = r.follow else {
                return;
            };
            let cur = r.live_pos.path.get(f.idx).copied();
            let completed = match cur {
                Some(Move::Trap { addr, count }) => {
                    if trap == Some(addr.0) {
                        f.done += 1;
                        f.landed = false;
                    } else if step_pc == Some(addr.0) {
                        // The last arrival is the present (the live process trapped
                        // there, the instruction not run); an earlier one is counted
                        // when the thread leaves it.
                        if f.done + 1 == count {
                            f.done += 1;
                        } else {
                            f.landed = true;
                        }
                    }
                    f.done >= count
                }
                Some(Move::Step { count }) => {
                    if step {
                        f.done += 1;
                    }
                    f.done >= count
                }
                None => false,
            };
            r.follow = Some(f);
            if !completed {
                return;
            }
            self.end_follow_guard();
            self.start_follow(Follow {
                idx: f.idx + 1,
                ..Follow::default()
            });
            // A step that ends a live step move on the address of the next trap move is
            // an arrival there too: the live process, resumed from that landing, trapped
            // at once (its first trap of that move).
            if !matches!(cur, Some(Move::Step { .. })) {
                return;
            }
            trap = None;
            step = false;
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
        let guard_trap =
            matches!(reason, StopReason::Breakpoint { addr } if self.guard_only(addr.0));
        if let Some(r) = self.replay_mut() {
            r.guard_trap = guard_trap;
        }
        // A step someone asked for that also met a watchpoint is a step all the same.
        let stepped = match reason {
            StopReason::Step => true,
            StopReason::Watchpoint { dr6 } => dr6 & DR6_SINGLE_STEP != 0,
            _ => false,
        };
        match reason {
            StopReason::Breakpoint { addr } => self.follow_advance(Some(addr.0), None),
            _ if stepped => {
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
        if self.replay_at_present() {
            self.leave_replay();
            if let Some(rec) = self.rec.as_mut() {
                rec.arrived = true;
                rec.at_present = true;
            }
        }
    }

    /// Whether `addr` is an int3 only the follow's guard wants: its traps are the
    /// follow's count, no news for anyone else (a seek, a scan).
    pub(super) fn guard_only(&self, addr: u64) -> bool {
        let guard = self
            .rec
            .as_ref()
            .and_then(|r| r.replay.as_ref())
            .and_then(|r| r.follow)
            .and_then(|f| f.guard);
        guard == Some(addr) && self.breakpoints.get(&addr).is_some_and(|b| b.refs == 1)
    }

    /// Whether the stop just reported was a trap only the follow's guard wanted (and
    /// forgets it).
    pub(super) fn take_guard_trap(&mut self) -> bool {
        self.replay_mut()
            .is_some_and(|r| std::mem::take(&mut r.guard_trap))
    }

    /// Whether the shown replay is at the present, no seek under way (a scan of the
    /// past to the present leaves it there): the live process is there too, and it is
    /// the one that goes on.
    pub(in crate::tracer) fn replay_at_present(&self) -> bool {
        let seeking = self
            .rec
            .as_ref()
            .and_then(|r| r.replay.as_ref())
            .is_some_and(|r| r.in_moves || r.stop_at_event.is_some());
        !seeking && self.follow_done()
    }

    /// Before a forward resume of the shown replay: live single-steps still to make in
    /// the present's interval are made first, as the live process made them (the follow
    /// counts only steps it sees). They end where the resume would have stopped: a step
    /// that lands on an int3 arrives at its breakpoint, which is reported as its trap
    /// would be (a seek counts that arrival of its trap move, a user breakpoint stops)
    /// with the thread on it as after a trap, the landing step being the move (a trap
    /// there too would describe that point twice); any stop other than a step (a
    /// watchpoint, a fault) is reported as it is. That stop is held for the next wait;
    /// returns whether one is. A resume from an int3 the thread has not trapped at
    /// traps there first, as any resume does.
    pub(in crate::tracer) fn replay_before_resume(&mut self) -> Result<bool> {
        loop {
            let Some(r) = self.rec.as_ref().and_then(|r| r.replay.as_ref()) else {
                return Ok(false);
            };
            let Some(f) = r.follow else {
                return Ok(false);
            };
            let Some(Move::Step { count }) = r.live_pos.path.get(f.idx).copied() else {
                return Ok(false);
            };
            if f.done >= count {
                return Ok(false);
            }
            let tid = self.shown_thread();
            if self.on_untrapped_int3(tid)? {
                return Ok(false);
            }
            self.step(tid)?;
            let (tid, reason) = self.replay_wait()?;
            if !self.is_replaying() {
                // The present: the live process goes on.
                return Ok(false);
            }
            if reason != StopReason::Step {
                self.held = Some(Event::Stopped { tid, reason });
                return Ok(true);
            }
            let pc = self.regs(tid)?.pc();
            if self.breakpoints.contains_key(&pc) && !self.absent.contains(&pc) {
                if let Some(t) = self.threads.get_mut(&tid) {
                    t.at_bp = Some(pc);
                }
                let reason = StopReason::Breakpoint {
                    addr: RuntimeAddr(pc),
                };
                // The follow's count of a trap move (a landing that is no arrival yet
                // is one now), not the position's (the step was its move).
                self.replay_noted(tid, &reason);
                self.held = Some(Event::Stopped { tid, reason });
                return Ok(true);
            }
        }
    }

    /// Whether `tid` is on an int3 of the shown process it has not trapped at (a step
    /// or a watchpoint stop left it there): a resume executes it.
    fn on_untrapped_int3(&mut self, tid: Tid) -> Result<bool> {
        let pc = self.regs(tid)?.pc();
        Ok(self.breakpoints.contains_key(&pc)
            && !self.absent.contains(&pc)
            && self.threads.get(&tid).is_some_and(|t| t.at_bp != Some(pc)))
    }
}
