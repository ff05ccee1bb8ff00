//! Changing the debuggee's text while it runs, without ever harming it.
//!
//! The rules (docs/architecture.md, "target"):
//! - **Every text write happens with every thread stopped.** [`Tracer::edit_text`] stops a
//!   running process (as a pause would, reporting nothing), runs the edit and resumes it;
//!   the primitive edits (int3s, jump patches, memory writes) do that by themselves when
//!   called on a running process. Stopping the world also moves every thread out of
//!   placed code, so no thread runs bytes that are being written.
//! - **A trap of a breakpoint that is gone is nobody's news.** A thread that executed an
//!   int3 (or a placed condition's trap) has its SIGTRAP queued; the stop it reports may
//!   be our interrupt, with that SIGTRAP still pending behind it. Such traps are taken
//!   under the tracer's eyes while the world is stopped ([`Tracer::collect_pending_traps`]),
//!   and a trap that arrives for an address whose breakpoint was removed meanwhile
//!   ("moribund", as gdb calls it) moves the thread back onto the restored instruction
//!   and resumes it silently.
//! - **A jump goes in only where no thread can return into the bytes it covers**: no
//!   thread's pc and no word on any thread's stack (a signal frame's saved pc, a return
//!   address) lies strictly inside them.
//! - **A step of the tracer's own ends with its trap taken**, even when a job-control stop
//!   or an interrupt is reported first (the instruction ran, its SIGTRAP is still
//!   pending): otherwise it surfaces later as a step nobody asked for. A single-step trap
//!   on a thread nobody steps, without the trap flag or inside placed code, is such a
//!   leftover and passes silently.
//! - **No thread resumes inside the bytes of an active jump**, whether all threads resume
//!   or one alone: it is moved to the copy of the instruction it is at first.
//! - **Placed code is never freed while the process lives**: a signal frame may hold a pc
//!   inside it and return there at any later time. Removing a patch restores the site's
//!   bytes only; at detach, a region some stack still points into stays mapped.

use super::*;

/// A siginfo that says only which signal (for one whose own siginfo was unreadable).
fn plain_siginfo(sig: i32) -> libc::siginfo_t {
    // SAFETY: siginfo_t is plain data; all zeroes is a valid value.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    info.si_signo = sig;
    info.si_code = libc::SI_TKILL;
    info
}

/// How much of one thread's stack is searched for pcs that could return into a patch.
const MAX_STACK_SCAN: u64 = 1 << 20;

/// Every thread's pc and stack words, sorted; `None` when they cannot all be read.
pub(super) type StackWords = Option<Vec<u64>>;

/// Whether a word lies in `lo..hi` (unknown stacks: yes).
fn holds(words: &StackWords, lo: u64, hi: u64) -> bool {
    match words {
        None => true,
        Some(words) => {
            let i = words.partition_point(|&w| w < lo);
            words.get(i).is_some_and(|&w| w < hi)
        }
    }
}

impl Tracer {
    /// Runs `f` with every thread of the process stopped, for a change of its text or
    /// memory. A running process is stopped first (nothing is reported for that stop;
    /// hits and signals collected meanwhile are reported as usual afterwards) and
    /// resumed after `f`; a stopped one is left as it is.
    pub fn edit_text<R>(&mut self, f: impl FnOnce(&mut Tracer) -> R) -> Result<R> {
        let held = self.hold()?;
        // Nothing runs during the edit: what the stacks hold is read once for all of its
        // placements (a setBreakpoints of a whole file may place thousands).
        let outer = std::mem::replace(&mut self.editing, true);
        let r = f(self);
        if !outer {
            self.editing = false;
            self.stacks = None;
            for (tid, pc, sp) in std::mem::take(&mut self.removed_marks) {
                if self.breakpoints.contains_key(&pc) {
                    if let Some(t) = self.threads.get_mut(&tid) {
                        t.returns.push(pc, sp);
                    }
                }
            }
        }
        if held {
            self.release()?;
        }
        Ok(r)
    }

    /// Brings a running process to an all-stop without reporting it. Returns whether it
    /// was running (and so must be released).
    fn hold(&mut self) -> Result<bool> {
        // A thread stepping over a breakpoint finishes its step first: the step's end is
        // what decides whether the process runs on or stops.
        let mut events = Vec::new();
        while matches!(self.phase, Phase::SteppingOver { .. }) {
            match self.next_event(true, false) {
                Ok(Some(ev)) => events.push(ev),
                Ok(None) => {}
                Err(Error::NotRunning) => break,
                Err(e) => return Err(e),
            }
        }
        for ev in events.into_iter().rev() {
            self.queue.push_front(ev);
        }
        if self.phase != Phase::Running {
            return Ok(false);
        }
        if !self.stop_all()? {
            return Err(Error::Exited);
        }
        self.phase = Phase::Stopped;
        tracing::trace!(pid = self.pid.0, "world stopped for a text edit");
        Ok(true)
    }

    /// Resumes a process stopped by [`Tracer::hold`]; a pause asked for meanwhile is
    /// reported instead, and a hit collected meanwhile is reported first.
    fn release(&mut self) -> Result<()> {
        if self.phase != Phase::Stopped {
            return Ok(());
        }
        if std::mem::take(&mut self.pause_requested) {
            let tid = Tid(self.pid.0);
            let tid = if self.threads.contains_key(&tid) {
                tid
            } else {
                match self.threads.keys().next() {
                    Some(t) => *t,
                    None => return Ok(()),
                }
            };
            self.queue.push_back(Event::Stopped {
                tid,
                reason: StopReason::Paused,
            });
            return Ok(());
        }
        self.continue_all()
    }

    /// Keeps `sig`, which stopped a thread while the tracer stepped it, for delivery when
    /// the thread resumes. One signal can be delivered per resume: when another already
    /// waits, this one is sent to the thread again, so none is lost.
    pub(super) fn keep_signal(&mut self, tid: Tid, sig: i32) {
        // Read now: this is the signal's own delivery stop.
        let info = sys::siginfo(tid).ok();
        self.keep_signal_with(tid, sig, info);
    }

    /// [`Tracer::keep_signal`] with the siginfo already read at the signal's stop.
    pub(super) fn keep_signal_with(&mut self, tid: Tid, sig: i32, info: Option<libc::siginfo_t>) {
        let info = info.filter(|i| i.si_signo == sig);
        let Some(t) = self.threads.get_mut(&tid) else {
            return;
        };
        // The newest is delivered on the resume; one already waiting (even of the same
        // number: real-time signals queue) is queued again then, never dropped.
        let older = (t.deliver != 0).then_some((t.deliver, t.deliver_info));
        t.deliver = sig;
        t.deliver_info = info;
        if let Some((older, older_info)) = older {
            let info = older_info.unwrap_or_else(|| plain_siginfo(older));
            self.kept_signals.entry(tid).or_default().push(info);
        }
    }

    /// Queues again the signals kept for `tid` (every thread: `None`), each with its own
    /// siginfo where the kernel allows it, before the thread resumes.
    pub(super) fn requeue_kept(&mut self, tid: Option<Tid>) {
        let tids: Vec<Tid> = match tid {
            Some(t) => vec![t],
            None => self.kept_signals.keys().copied().collect(),
        };
        for tid in tids {
            if self.threads.get(&tid).is_some_and(|t| t.running) {
                continue;
            }
            for info in self.kept_signals.remove(&tid).unwrap_or_default() {
                if let Err(e) = sys::requeue_signal(self.pid.0, tid.0, &info) {
                    tracing::warn!(
                        tid = tid.0,
                        sig = info.si_signo,
                        "queuing a kept signal again: {e}"
                    );
                }
            }
        }
    }

    /// Remembers that a trap at `trap` is no longer anybody's: a thread reporting it
    /// later goes back to `resume_at` and runs on.
    pub(super) fn retire_trap(&mut self, trap: u64, resume_at: u64) {
        self.moribund.insert(trap, resume_at);
    }

    /// A SIGTRAP at `addr` (the int3 just executed) of a breakpoint removed since: where
    /// the thread resumes, or `None` when the trap is not a retired one (an int3 that is
    /// the program's own, or a breakpoint set there again).
    pub(super) fn moribund_trap(&self, addr: u64) -> Option<u64> {
        let back = *self.moribund.get(&addr)?;
        if back == addr {
            // The int3 was in the program's text: it must be gone from there.
            let mut b = [0u8; 1];
            if self.read_raw(addr, &mut b).is_err() || b[0] == INT3 {
                return None;
            }
        }
        Some(back)
    }

    /// Takes, under the tracer's eyes, the SIGTRAP still pending behind the stop of a
    /// thread that executed one of our int3s (or a placed condition's trap) just before
    /// our interrupt reached it. Its hit is collected like any other; without this the
    /// signal would be delivered when the thread runs on — a spurious SIGTRAP, and a pc
    /// one byte into an instruction.
    pub(super) fn collect_pending_traps(&mut self) -> Result<bool> {
        if self.breakpoints.is_empty() && self.patches.is_empty() && self.moribund.is_empty() {
            return Ok(true);
        }
        let tids: Vec<Tid> = self.threads.keys().copied().collect();
        for tid in tids {
            let Some(t) = self.threads.get(&tid) else {
                continue;
            };
            if t.running || t.new || t.deliver != 0 || t.group_stop {
                continue;
            }
            let regs = match t.regs {
                Some(r) => r,
                None => match sys::get_regs(tid) {
                    Ok(r) => r,
                    Err(_) => continue,
                },
            };
            if let Some(t) = self.threads.get_mut(&tid) {
                t.regs = Some(regs);
            }
            let prev = regs.rip.wrapping_sub(1);
            let ours = self.breakpoints.contains_key(&prev)
                || self.patch_of_trap(prev).is_some()
                || self.moribund.contains_key(&prev);
            if !ours
                || self
                    .threads
                    .get(&tid)
                    .is_some_and(|t| t.at_bp == Some(regs.rip))
            {
                continue;
            }
            if !procfs::thread_has_pending_sigtrap(self.pid, tid) {
                continue;
            }
            tracing::debug!(
                tid = tid.0,
                pc = regs.rip,
                "taking a pending breakpoint trap"
            );
            if let Err(e) = sys::cont(tid, 0) {
                tracing::debug!(tid = tid.0, "resuming for a pending trap: {e}");
                continue;
            }
            if let Some(t) = self.threads.get_mut(&tid) {
                t.running = true;
                t.regs = None;
            }
            let w = loop {
                match sys::wait(tid.0, false, false) {
                    Ok(Some(w)) => break w,
                    Ok(None) => continue,
                    Err(e) => return Err(Error::ptrace("waitpid", tid, e)),
                }
            };
            if !self.collect(w)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Whether a thread could come back into the bytes `(start, end)` strictly past a
    /// site: its pc is there, or a word on its stack points there (a signal frame's saved
    /// pc, a return address). A stack that cannot be searched whole counts as yes. During
    /// [`Tracer::edit_text`] the stacks are read once for all of its placements.
    pub(super) fn may_return_into(&mut self, start: u64, end: u64) -> bool {
        if end <= start + 1 {
            return false;
        }
        let words = if self.editing {
            if self.stacks.is_none() {
                self.learn_homes();
                self.stacks = Some(self.stack_words());
            }
            self.stacks.clone().flatten()
        } else {
            self.learn_homes();
            self.stack_words()
        };
        holds(&words, start + 1, end)
    }

    /// Notes the own stack of every stopped thread not seen before: the process's
    /// `[stack]` for the main thread, else the mapping of its sp at its first stop
    /// (`first_sp`: a new thread's first stop is on its own stack), or of its sp now for
    /// a thread found at attach (one attached inside a handler on an alternate stack is
    /// the rare case this gets wrong).
    pub(super) fn learn_homes(&mut self) {
        if self.threads.values().all(|t| t.home.is_some() || t.running) {
            return;
        }
        let Ok(maps) = procfs::read_maps(self.pid) else {
            return;
        };
        let main = Tid(self.pid.0);
        for (tid, t) in self.threads.iter_mut() {
            if t.home.is_some() || t.running {
                continue;
            }
            let home = if *tid == main {
                maps.iter().find(|m| m.path == "[stack]")
            } else {
                let first = Some(t.first_sp).filter(|sp| *sp != 0);
                let Some(sp) =
                    first.or_else(|| t.regs.or_else(|| sys::get_regs(*tid).ok()).map(|r| r.rsp))
                else {
                    continue;
                };
                maps.iter().find(|m| m.start.0 <= sp && sp < m.end.0)
            };
            t.home = home.map(|m| (m.start.0, m.end.0));
        }
    }

    /// Every thread's pc and every word of every thread's stack (from its sp to the end
    /// of the stack's mapping), sorted; `None` when some thread runs or a stack cannot be
    /// read whole.
    fn stack_words(&self) -> StackWords {
        let maps = procfs::read_maps(self.pid).ok()?;
        let mut words = Vec::new();
        for (tid, t) in &self.threads {
            if t.running {
                return None;
            }
            let regs = t.regs.or_else(|| sys::get_regs(*tid).ok())?;
            words.push(regs.rip);
            let sp = regs.rsp & !7;
            let m = maps.iter().find(|m| m.start.0 <= sp && sp < m.end.0)?;
            let mut scans = vec![(sp, m.end.0)];
            if let Some((lo, hi)) = t.home {
                if !(lo <= sp && sp < hi) {
                    // On another stack (a handler on its alternate stack): what it
                    // interrupted is live on its own stack, from the sp it had then.
                    if !(lo <= t.home_sp && t.home_sp < hi) {
                        return None;
                    }
                    scans.push((t.home_sp & !7, hi));
                }
            }
            for (from, to) in scans {
                if to - from > MAX_STACK_SCAN {
                    return None;
                }
                let mut buf = vec![0u8; (to - from) as usize];
                match self.read_raw(from, &mut buf) {
                    Ok(n) if n == buf.len() => {}
                    _ => return None,
                }
                words.extend(
                    buf.chunks_exact(8).map(|w| {
                        u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]])
                    }),
                );
            }
        }
        words.sort_unstable();
        words.dedup();
        Some(words)
    }

    /// The regions of placed code some thread may still return into (its pc, or a word on
    /// its stack, inside them): they stay mapped when the others are unmapped.
    pub(super) fn regions_in_use(&mut self, regions: &[patch::Region]) -> Vec<bool> {
        self.learn_homes();
        let words = self.stack_words();
        regions
            .iter()
            .map(|r| {
                let (start, end) = r.span();
                holds(&words, start, end)
            })
            .collect()
    }
}
