//! Ending: kill, detach (int3s removed, traps drained, every thread released) and `Drop`.

use super::*;

impl Tracer {
    /// Kills the process (SIGKILL) and reaps every thread. Returns the final event.
    pub fn kill(mut self) -> Result<Event> {
        self.kill_inner()
    }

    /// Like [`Tracer::kill`] but keeps the (now exited) tracer.
    pub(crate) fn kill_in_place(&mut self) -> Result<Event> {
        self.kill_inner()
    }

    pub(super) fn kill_inner(&mut self) -> Result<Event> {
        self.drop_recording();
        if self.phase == Phase::Exited {
            return Err(Error::Exited);
        }
        let _ = sys::kill(self.pid.0, libc::SIGKILL);
        loop {
            let w = match self.take_own_stash() {
                Some(w) => w,
                None => match sys::wait(-1, false, false) {
                    Ok(Some(w)) => w,
                    Ok(None) => continue,
                    Err(_) => break,
                },
            };
            if !self.threads.contains_key(&w.tid) {
                stash_push(w);
                continue;
            }
            match sys::decode(w.status) {
                Status::Exited(code) if w.tid.0 == self.pid.0 => {
                    self.mark_gone();
                    return Ok(Event::Exited { code });
                }
                Status::Signaled(signo, core_dumped) if w.tid.0 == self.pid.0 => {
                    self.mark_gone();
                    return Ok(Event::Signaled { signo, core_dumped });
                }
                Status::Exited(_) | Status::Signaled(..) => {
                    self.threads.remove(&w.tid);
                }
                // A thread caught in a stop before SIGKILL landed: let it die.
                Status::Stopped(..) => {
                    let _ = sys::cont(w.tid, 0);
                }
                Status::Other => {}
            }
        }
        self.mark_gone();
        Ok(Event::Signaled {
            signo: libc::SIGKILL,
            core_dumped: false,
        })
    }

    /// A fork child handed over but never picked up by another tracer is not left
    /// waiting: it runs on.
    pub(super) fn release_handed_over(&mut self) {
        for pid in std::mem::take(&mut self.handed_over) {
            // Untraced: nobody took it.
            if procfs::tracer_of(pid) == Some(0) {
                tracing::info!(pid = pid.0, "continuing a fork child nobody followed");
                crate::park::free(pid);
            }
        }
    }

    pub(super) fn mark_gone(&mut self) {
        self.release_handed_over();
        self.threads.clear();
        self.breakpoints.clear();
        self.absent.clear();
        self.patches.clear();
        self.regions.clear();
        self.moribund.clear();
        self.retired.clear();
        self.phase = Phase::Exited;
        self.mem = None;
    }

    /// Detaches: every thread stopped, every int3 removed, debug registers cleared, a
    /// pc left just past a removed int3 moved back, every thread resumed.
    pub fn detach(mut self) -> Result<()> {
        self.detach_inner()
    }

    pub(super) fn detach_inner(&mut self) -> Result<()> {
        self.drop_recording();
        if self.phase == Phase::Exited {
            return Ok(());
        }
        if self.is_running() {
            self.finish_step_over_early(Tid(self.pid.0));
            self.pause_requested = true;
            if !self.stop_all()? {
                self.mark_gone();
                return Ok(());
            }
            self.pause_requested = false;
            self.phase = Phase::Stopped;
        }
        self.sysbuf_release();
        let traps: Vec<(u64, u64)> = self.patch_traps();
        self.remove_all_patches();
        self.unmap_regions();
        let removed: Vec<(u64, u8)> = self
            .breakpoints
            .iter()
            .filter(|(a, _)| !self.absent.contains(a))
            .map(|(a, b)| (*a, b.saved))
            .collect();
        for (a, b) in &removed {
            if let Err(e) = self.write_raw(*a, &[*b]) {
                tracing::warn!(addr = a, "restoring a breakpoint byte failed: {e}");
            }
        }
        self.breakpoints.clear();
        let tids = self.threads();
        for &tid in &tids {
            if self.debugregs_used {
                let _ = sys::poke_debugreg(tid, 7, 0);
            }
            if !removed.is_empty() && procfs::thread_has_pending_sigtrap(self.pid, tid) {
                self.drain_sigtrap(tid, &removed, &traps);
            }
            if !traps.is_empty() {
                self.clear_trap_flag(tid);
            }
        }
        self.requeue_kept(None);
        for &tid in &tids {
            let sig = self.threads.get(&tid).map(|t| t.deliver).unwrap_or(0);
            if let Some(info) = self
                .threads
                .get(&tid)
                .and_then(|t| t.deliver_info)
                .filter(|i| sig != 0 && i.si_signo == sig)
            {
                let _ = sys::set_siginfo(tid, &info);
            }
            if let Err(e) = sys::detach(tid, sig) {
                tracing::debug!(tid = tid.0, "PTRACE_DETACH: {e}");
            }
        }
        self.mark_gone();
        Ok(())
    }

    /// A thread that hit an int3 just before being stopped has SIGTRAP pending; on
    /// detach it would kill the process. Let the thread take it under our eyes,
    /// move its pc back onto the restored instruction and drop the signal.
    pub(super) fn drain_sigtrap(&mut self, tid: Tid, removed: &[(u64, u8)], traps: &[(u64, u64)]) {
        for _ in 0..4 {
            if sys::cont(tid, 0).is_err() {
                return;
            }
            let w = loop {
                match sys::wait(tid.0, false, false) {
                    Ok(Some(w)) => break w,
                    Ok(None) => continue,
                    Err(_) => return,
                }
            };
            match sys::decode(w.status) {
                Status::Stopped(libc::SIGTRAP, 0) => {
                    if let Ok(mut regs) = sys::get_regs(tid) {
                        let addr = regs.rip.wrapping_sub(1);
                        if removed.iter().any(|(a, _)| *a == addr) {
                            regs.rip = addr;
                            let _ = sys::set_regs(tid, &regs);
                        } else if let Some((_, site)) = traps.iter().find(|(t, _)| *t == addr) {
                            regs.rip = *site;
                            let _ = sys::set_regs(tid, &regs);
                        }
                    }
                    return;
                }
                Status::Stopped(sig, 0) => {
                    // Another signal came first: keep it for the detach.
                    self.keep_signal(tid, sig);
                    return;
                }
                Status::Stopped(..) => continue,
                _ => {
                    self.threads.remove(&tid);
                    return;
                }
            }
        }
    }
}

impl Drop for Tracer {
    /// Ending a tracer never leaves its process behind: a launched one is killed and
    /// reaped, an attached one detached cleanly. This also runs while a panic unwinds
    /// the tracer thread.
    fn drop(&mut self) {
        self.release_handed_over();
        self.drop_recording();
        if self.phase == Phase::Exited {
            return;
        }
        let res = match self.info.origin {
            Origin::Launched => self.kill_inner().map(|_| ()),
            Origin::Attached => self.detach_inner(),
        };
        if let Err(e) = res {
            tracing::warn!(pid = self.pid.0, "ending the tracer: {e}");
        }
    }
}
