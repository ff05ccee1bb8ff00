//! Running: resume, single-step, interrupt (pause) and the per-thread continue, with the step over a breakpoint.

use super::*;

impl Tracer {
    pub(super) fn require_stopped(&self) -> Result<()> {
        match self.phase {
            Phase::Stopped => Ok(()),
            Phase::Exited => Err(Error::Exited),
            _ => Err(Error::Running),
        }
    }

    /// Resumes every thread (all-stop continue). A thread sitting on a breakpoint is
    /// first stepped over it while the others stay stopped, so no hit is lost. If a
    /// stop collected earlier is still unreported, nothing is resumed and that stop
    /// is what the next [`Tracer::wait`] returns.
    pub fn resume(&mut self) -> Result<()> {
        self.require_stopped()?;
        if self.replay_at_present() {
            self.leave_replay();
        }
        self.settle_live_fault();
        if self.is_replaying() {
            if self.replay_before_resume()? {
                // A stop on the way, held for the next wait.
                return Ok(());
            }
            self.require_stopped()?;
        }
        self.continue_all()
    }

    /// Single-steps one thread; the others stay stopped. The next wait returns
    /// `Stopped { reason: Step }` (or whatever stopped the thread first).
    pub fn step(&mut self, tid: Tid) -> Result<()> {
        self.require_stopped()?;
        let tid = if self.replay_at_present() {
            // The live process is there: it makes the step, in its own thread.
            self.leave_replay();
            self.shown_thread()
        } else {
            tid
        };
        self.require_runner(tid)?;
        self.settle_live_fault();
        let pc = self.regs(tid)?.pc();
        if self.is_replaying() {
            self.replay_before_step(pc);
        }
        // A pc inside a patch's bytes (stepped there) steps with the original bytes.
        let addr = if self.breakpoints.contains_key(&pc) {
            Some(pc)
        } else {
            self.active_patch_inside(pc)
        };
        if let Some(a) = addr {
            self.write_bp_byte(a, false)?;
        }
        self.phase = Phase::SteppingOver {
            tid,
            addr,
            then: After::ReportStep,
        };
        if let Some(t) = self.threads.get_mut(&tid) {
            t.stepping = true;
        }
        self.resume_thread(tid);
        Ok(())
    }

    /// Whether a pause asked for is still owed: a stop came before the interrupt and the
    /// caller, about to resume because that stop is not shown (a condition that does not
    /// hold), must report a pause instead (by the thread returned). Showing the stop, or
    /// resuming on the user's request, also settles it: take it then and drop it.
    pub fn take_owed_pause(&mut self) -> Option<Tid> {
        self.pause_owed
            .take()
            .filter(|tid| self.threads.contains_key(tid))
    }

    /// Stops a running process (pause). Returns `false` when it was not running; else
    /// the next wait returns a `Stopped` event (reason `Paused`, or whatever stopped a
    /// thread first).
    pub fn interrupt(&mut self) -> Result<bool> {
        tracing::debug!(
            phase = ?self.phase,
            threads = ?self
                .threads
                .iter()
                .map(|(t, s)| (t.0, s.running, s.interrupt_sent, s.new, s.stepping))
                .collect::<Vec<_>>(),
            "pause"
        );
        if !self.is_running() {
            return Ok(false);
        }
        self.pause_requested = true;
        for (tid, t) in self.threads.iter_mut() {
            if t.running && !t.interrupt_sent && !t.new && sys::interrupt(*tid).is_ok() {
                t.interrupt_sent = true;
            }
        }
        Ok(true)
    }

    pub(super) fn continue_all(&mut self) -> Result<()> {
        while let Some((tid, reason)) = self.deferred.pop_front() {
            // A breakpoint removed since its hit was collected is no news any more.
            if let StopReason::Breakpoint { addr } = reason {
                if !self.breakpoints.contains_key(&addr.0) {
                    continue;
                }
            }
            if !self.threads.contains_key(&tid) {
                continue;
            }
            self.phase = Phase::Stopped;
            self.queue.push_back(Event::Stopped { tid, reason });
            return Ok(());
        }
        self.leave_patch_sites();
        // Step threads off breakpoints one at a time, the others stopped.
        let on_bp: Option<(Tid, u64)> = self.threads.iter().find_map(|(tid, t)| {
            let addr = t.at_bp?;
            (!t.running && t.regs.is_some_and(|r| r.rip == addr)).then_some((*tid, addr))
        });
        if let Some((tid, addr)) = on_bp {
            if self.breakpoints.contains_key(&addr) {
                self.write_bp_byte(addr, false)?;
                self.phase = Phase::SteppingOver {
                    tid,
                    addr: Some(addr),
                    then: After::ContinueAll,
                };
                if let Some(t) = self.threads.get_mut(&tid) {
                    t.stepping = true;
                }
                self.resume_thread(tid);
                return Ok(());
            }
            if let Some(t) = self.threads.get_mut(&tid) {
                t.at_bp = None;
            }
            return self.continue_all();
        }
        if !self.kept_signals.is_empty() {
            self.requeue_kept(None);
        }
        // A signal's delivery notes where on its own stack the thread was (`home_sp`).
        if self
            .threads
            .values()
            .any(|t| !t.running && t.deliver != 0 && t.home.is_none())
        {
            self.learn_homes();
        }
        // No allocation on this path: it runs on every breakpoint hit. While recording
        // or replaying, only the scheduled thread runs.
        let only = self.only_runner();
        for (tid, t) in self.threads.iter_mut() {
            if !t.running && only.is_none_or(|o| o == *tid) {
                resume_one(*tid, t);
            }
        }
        self.phase = Phase::Running;
        Ok(())
    }

    /// Restarts one stopped thread the way its state asks for.
    pub(super) fn resume_thread(&mut self, tid: Tid) {
        if self.kept_signals.contains_key(&tid) {
            self.requeue_kept(Some(tid));
        }
        if !self.patches.is_empty() {
            self.leave_patch_site(tid, false);
        }
        if self
            .threads
            .get(&tid)
            .is_some_and(|t| t.deliver != 0 && t.home.is_none())
        {
            self.learn_homes();
        }
        if let Some(t) = self.threads.get_mut(&tid) {
            resume_one(tid, t);
        }
    }

    pub(super) fn write_bp_byte(&mut self, addr: u64, insert: bool) -> Result<()> {
        if let Some(p) = self.patches.get(&addr).filter(|p| p.active) {
            let bytes = if insert {
                p.jump_bytes()
            } else {
                p.saved.clone()
            };
            return self.write_raw(addr, &bytes);
        }
        // No int3 of the shown process (`absent.rs`): nothing to take out or put back.
        if self.absent.contains(&addr) {
            return Ok(());
        }
        let byte = if insert {
            INT3
        } else {
            match self.breakpoints.get(&addr) {
                // Inside a site the system-call buffer patched, what is under the int3
                // depends on the process shown (a replay from before the patch).
                Some(bp) => self.sysbuf_byte_under(addr).unwrap_or(bp.saved),
                None => return Ok(()),
            }
        };
        self.write_raw(addr, &[byte])
    }
}
