//! Data breakpoints tied to a frame (a local, a parameter or a register watched): the
//! hidden breakpoint at the frame's return address, the frame's presence on its
//! thread's stack, and the watch's end — deleted, as gdb deletes such a watchpoint,
//! instead of stopping later at writes to a variable that no longer exists.

use tracer::{Tid, Tracer};

use super::super::{lock, Core, Session, SessionEvent, StepKind, StopCause};
use crate::ids::BreakpointId;
use crate::mem::{FrameRegs, TracerMemory};
use crate::modules::Modules;
use crate::unwind;
use crate::watch::{scope_ended_message, WatchScope};
use tracer::RuntimeAddr;

/// Whether the frame of `scope` is still on its thread's stack in the process shown:
/// `None` when that cannot be told (the unwinding stopped below the frame, or the thread
/// is not known in a replay).
pub(in crate::session) fn scope_alive(
    t: &mut Tracer,
    modules: &Modules,
    scope: &WatchScope,
) -> Option<bool> {
    let pid = t.pid().0;
    let threads = t.threads();
    let tid = if threads.contains(&scope.tid) {
        scope.tid
    } else if scope.main_thread && threads.contains(&Tid(pid)) {
        Tid(pid)
    } else if t.is_replaying() {
        // A thread other than the main one has another id in each replay.
        return None;
    } else {
        // The thread ended: its stack with it.
        return Some(false);
    };
    let regs = t.regs(tid).ok()?;
    let mem = TracerMemory(t);
    unwind::frame_on_stack(
        FrameRegs::from_registers(&regs),
        modules,
        &mem,
        scope.cfa,
        scope.function,
    )
}

impl Core {
    /// The scoped data breakpoints whose frame returns where `tid` is now, at `pc`: their
    /// return address, the sp at or above their CFA (a deeper invocation of the same
    /// function returning to the same address has a lower sp: the watch goes on), and the
    /// frame no longer on the stack.
    pub(in crate::session) fn scopes_returning_at(
        &self,
        t: &mut Tracer,
        tid: Tid,
        pc: u64,
    ) -> Vec<BreakpointId> {
        let candidates: Vec<(BreakpointId, WatchScope)> = self
            .data
            .bps
            .iter()
            .filter_map(|b| Some((b.id, b.scope?)))
            .filter(|(_, s)| s.ret == Some(pc) && s.owned_by(tid, t.pid().0))
            .collect();
        if candidates.is_empty() {
            return Vec::new();
        }
        let sp = t.regs(tid).map(|r| r.sp()).unwrap_or(0);
        candidates
            .into_iter()
            .filter(|(_, s)| sp >= s.cfa && scope_alive(t, &self.modules, s) != Some(true))
            .map(|(id, _)| id)
            .collect()
    }

    /// The enabled data breakpoints tied to a frame, with their frames.
    pub(in crate::session) fn data_scopes(&self) -> Vec<(BreakpointId, WatchScope)> {
        self.data
            .bps
            .iter()
            .filter(|b| b.enabled && !b.slots.is_empty())
            .filter_map(|b| Some((b.id, b.scope?)))
            .collect()
    }

    /// The scoped data breakpoints whose frame is known to be gone from its stack.
    pub(in crate::session) fn scopes_gone(&self, t: &mut Tracer) -> Vec<BreakpointId> {
        self.data
            .bps
            .iter()
            .filter_map(|b| Some((b.id, b.scope?)))
            .filter(|(_, s)| scope_alive(t, &self.modules, s) == Some(false))
            .map(|(id, _)| id)
            .collect()
    }

    /// Deletes data breakpoints whose frame is gone: their debug registers are freed,
    /// their hidden breakpoint removed, and each is reported
    /// ([`SessionEvent::WatchScopeEnded`]). Returns those that were enabled: their end
    /// stops the program, as gdb stops when it deletes a watchpoint.
    pub(in crate::session) fn end_watches(
        &mut self,
        t: &mut Tracer,
        ids: &[BreakpointId],
    ) -> Vec<BreakpointId> {
        if ids.is_empty() {
            return Vec::new();
        }
        let mut regs = *t.watchpoints();
        let mut stops = Vec::new();
        let mut ended = Vec::new();
        self.data.bps.retain(|b| {
            if !ids.contains(&b.id) {
                return true;
            }
            ended.push((b.id, b.enabled, b.planted));
            for &s in &b.slots {
                if let Some(slot) = regs.slots.get_mut(s) {
                    *slot = None;
                }
            }
            false
        });
        if let Err(e) = t.set_watchpoints(&regs) {
            tracing::warn!("freeing the debug registers of a watch whose frame is gone: {e}");
        }
        for (id, enabled, planted) in ended {
            if let Some(ret) = planted {
                let _ = t.remove_breakpoint(RuntimeAddr(ret));
            }
            self.send(SessionEvent::WatchScopeEnded(id));
            if enabled {
                stops.push(id);
            }
        }
        stops
    }

    /// At a stop: the watches whose frame a `longjmp` or an exception left (no return
    /// went through their hidden breakpoint) are deleted, so the program does not stop
    /// later at a write to the slot by another frame.
    pub(in crate::session) fn end_gone_watches(&mut self, t: &mut Tracer) {
        if self.data.bps.iter().all(|b| b.scope.is_none()) {
            return;
        }
        let gone = self.scopes_gone(t);
        self.end_watches(t, &gone);
    }

    /// `tid` came back at `addr` from the frames of the watches `ended` (deleted
    /// already): a step out of that frame ends as the step it is, with the returned
    /// value (gdb's `finish` shows both); anything else stops there, as gdb's
    /// `watchpoint_scope` breakpoint stops a `continue` or a `next`.
    pub(in crate::session) fn watch_scope_returned(
        &mut self,
        t: &mut Tracer,
        tid: Tid,
        addr: u64,
        ended: Vec<BreakpointId>,
    ) {
        let sp = t.regs(tid).map(|r| r.sp()).unwrap_or(0);
        let finishing = self.step.as_ref().and_then(|p| {
            let (temp, expected) = p.temp?;
            (p.tid == tid
                && p.kind == StepKind::Out
                && temp == addr
                && expected.is_none_or(|e| e == sp))
            .then_some(p.out_of)
        });
        match finishing {
            Some(out_of) => {
                let value = self.return_value(t, tid, out_of);
                self.clear_step(t);
                self.stopped(tid, StopCause::Step, true, value);
            }
            None => {
                self.clear_step(t);
                self.stop_scope_ended(tid, ended, true);
            }
        }
    }

    /// A single-step of `tid` (a line step or an instruction step) arrived at the
    /// return address of watched frames: they are deleted. A line step stops there
    /// (gdb's `next` out of the frame stops right after the return, mid-line); an
    /// instruction step ends there anyway. Returns whether the step was ended.
    pub(in crate::session) fn step_met_scope_end(&mut self, t: &mut Tracer, tid: Tid) -> bool {
        let Ok(pc) = t.regs(tid).map(|r| r.pc()) else {
            return false;
        };
        let ended = self.scopes_returning_at(t, tid, pc);
        let ended = self.end_watches(t, &ended);
        let line_step = self
            .step
            .as_ref()
            .is_some_and(|p| p.tid == tid && p.kind != StepKind::Instruction);
        if ended.is_empty() || !line_step {
            return false;
        }
        self.clear_step(t);
        self.stop_scope_ended(tid, ended, false);
        true
    }

    /// Stops because the frames of the data breakpoints `ids` are gone (already
    /// deleted by [`Core::end_watches`]), with gdb's words.
    pub(in crate::session) fn stop_scope_ended(
        &mut self,
        tid: Tid,
        ids: Vec<BreakpointId>,
        at_bp: bool,
    ) {
        let words: Vec<String> = ids.iter().map(scope_ended_message).collect();
        self.stopped_with(
            tid,
            StopCause::WatchScope(ids),
            at_bp,
            None,
            Some(words.join(" ")),
        );
    }
}

impl Session {
    /// The frame a watch on `address` (from `data_breakpoint_info`) is tied to, if any.
    pub(in crate::session) fn watch_scope_of(&self, address: u64, size: u64) -> Option<WatchScope> {
        lock(&self.core)
            .data
            .labels
            .get(&(address, size))
            .and_then(|l| l.scope)
    }
}
