//! Waiting: reaping stops with `waitpid(-1, __WALL | __WNOTHREAD)`, the all-stop, and turning each wait status into an event.

use super::*;

impl Tracer {
    /// Waits for the next event, blocking. After `Stopped` the process is all-stopped.
    pub fn wait(&mut self) -> Result<Event> {
        loop {
            if let Some(ev) = self.next_event(true, false)? {
                return Ok(ev);
            }
        }
    }

    /// Like [`Tracer::wait`] but returns `Ok(None)` when a signal interrupts the wait,
    /// so a thread serving commands can look at them (see [`crate::handle`]).
    pub fn wait_interruptible(&mut self) -> Result<Option<Event>> {
        self.next_event(true, true)
    }

    /// Reaps what is ready without blocking; also notices the death of a stopped
    /// process (SIGKILL from outside).
    pub fn poll(&mut self) -> Result<Option<Event>> {
        self.next_event(false, false)
    }

    pub(super) fn next_event(&mut self, block: bool, interruptible: bool) -> Result<Option<Event>> {
        if let Some(ev) = self.held.take() {
            return Ok(Some(ev));
        }
        let ev = self.next_event_raw(block, interruptible)?;
        if self.rec.is_none() {
            return Ok(ev);
        }
        if let Some(Event::Stopped { tid, reason }) = ev {
            if reason == StopReason::Paused {
                // A pause is never shown inside the buffer's code.
                self.sysbuf_leave(tid);
            }
            self.note_stop(tid, &reason);
            let arrived = self.rec.as_mut().and_then(|rec| {
                std::mem::take(&mut rec.arrived).then(|| rec.present_stop.unwrap_or(reason))
            });
            if let Some(reason) = arrived {
                // The replay reached the present: the stop is the live process's, in
                // the thread that runs there (a fault it stopped at, when that is what
                // the present is).
                return Ok(Some(Event::Stopped {
                    tid: self.shown_thread(),
                    reason,
                }));
            }
        }
        Ok(ev)
    }

    fn next_event_raw(&mut self, block: bool, interruptible: bool) -> Result<Option<Event>> {
        if let Some(ev) = self.queue.pop_front() {
            return Ok(Some(ev));
        }
        match self.phase {
            Phase::Exited => return Err(Error::Exited),
            Phase::Stopped if block => return Err(Error::NotRunning),
            _ => {}
        }
        // While a recorded or replayed process has one thread, its stops are the only
        // ones that can come (a fork ends a recording at its entry; a clone's new
        // thread is in `threads` from its event on): waiting for it alone spares the
        // kernel a walk over every snapshot and waypoint (each a traced child, 70 and
        // more) at every stop, which cost more than the stop itself.
        let who = match (&self.rec, self.threads.len()) {
            (Some(_), 1) => self.threads.keys().next().map_or(-1, |t| t.0),
            _ => -1,
        };
        loop {
            let w = match self.take_own_stash() {
                Some(w) => w,
                None => match sys::wait(who, !block, self.arm_slice() || interruptible) {
                    Ok(Some(w)) => w,
                    Ok(None) => {
                        // A time slice may be over (its timer woke the wait).
                        self.slice_check();
                        if interruptible || !block {
                            return Ok(None);
                        }
                        continue;
                    }
                    Err(Errno::ECHILD) => {
                        self.phase = Phase::Exited;
                        self.threads.clear();
                        return Err(Error::Exited);
                    }
                    Err(e) => return Err(Error::ptrace("waitpid", Tid(self.pid.0), e)),
                },
            };
            if !self.threads.contains_key(&w.tid) {
                stash_push(w);
                continue;
            }
            let collecting = self.phase == Phase::Stopped;
            self.pin_to_program(w.tid);
            match self.handle_status(w, collecting)? {
                // A command waits (the wake signal came while this thread was busy):
                // it is answered before the next stop.
                Outcome::Absorbed if interruptible && self.woken() => return Ok(None),
                Outcome::Absorbed => {}
                Outcome::StepOverAgain(tid) if !collecting => {
                    if self.stop_all()? {
                        self.phase = Phase::Stopped;
                        if std::mem::take(&mut self.pause_requested) {
                            // The interrupts of a pause asked for meanwhile were reaped
                            // by the all-stop: the pause is this stop.
                            self.queue.push_back(Event::Stopped {
                                tid,
                                reason: StopReason::Paused,
                            });
                        } else {
                            self.continue_all()?;
                        }
                    }
                }
                Outcome::StepOverAgain(_) => {}
                Outcome::Info(ev) => return Ok(Some(ev)),
                Outcome::Gone(ev) => return Ok(Some(ev)),
                Outcome::Report(tid, reason) if collecting => {
                    self.deferred.push_back((tid, reason));
                }
                Outcome::Report(tid, reason) => {
                    self.finish_step_over_early(tid);
                    // The stop answers a pause only if it is shown; a hit the engine
                    // passes over still owes the pause (see take_owed_pause).
                    if std::mem::take(&mut self.pause_requested) {
                        self.pause_owed = Some(tid);
                    }
                    if self.stop_all()? {
                        self.phase = Phase::Stopped;
                        self.queue.push_back(Event::Stopped { tid, reason });
                    }
                    return Ok(self.queue.pop_front());
                }
            }
            // A step-over that ended in a continue may have found a stop to report.
            if self.phase == Phase::Exited || !self.queue.is_empty() {
                return Ok(self.queue.pop_front());
            }
            if self.phase == Phase::Stopped && block {
                return Err(Error::NotRunning);
            }
        }
    }

    pub(super) fn take_own_stash(&self) -> Option<WaitResult> {
        STASH.with(|s| {
            let mut s = s.borrow_mut();
            if s.is_empty() {
                return None;
            }
            let i = s.iter().position(|w| self.threads.contains_key(&w.tid))?;
            s.remove(i)
        })
    }

    /// A stop other than the step's own ended a step-over: put the breakpoint back.
    ///
    /// When the stepping thread has not run the site's instruction yet (a signal or an
    /// interrupt came first), its next trap there is the same hit: marked so that it is
    /// stepped over silently (see `SignalReturns`).
    pub(super) fn finish_step_over_early(&mut self, tid: Tid) {
        if let Phase::SteppingOver { tid: t0, addr, .. } = self.phase {
            if let Some(a) = addr {
                if self.breakpoints.contains_key(&a) {
                    let _ = self.write_bp_byte(a, true);
                    self.mark_unfinished_hit(t0, a);
                }
            }
            if let Some(t) = self.threads.get_mut(&t0) {
                t.stepping = false;
            }
            let _ = tid;
            self.phase = Phase::Running;
        }
    }

    /// Marks the hit at `addr` of a stopped thread still at `addr` as unfinished: its
    /// next trap there with the same sp is not news.
    fn mark_unfinished_hit(&mut self, tid: Tid, addr: u64) {
        let Some(t) = self.threads.get(&tid) else {
            return;
        };
        if t.running {
            return;
        }
        let Some(regs) = t.regs.or_else(|| sys::get_regs(tid).ok()) else {
            return;
        };
        if regs.rip != addr {
            return;
        }
        if let Some(t) = self.threads.get_mut(&tid) {
            t.regs = Some(regs);
            t.returns.push(addr, regs.rsp);
        }
    }

    /// A signal to be passed silently met the step over a breakpoint before the site's
    /// instruction ran. Single-stepping into the handler would run it with the site's
    /// int3 out (a hit missed by every thread meanwhile) and end in a trap at the
    /// handler's first instruction that is nobody's; instead, as gdb does, the int3 goes
    /// back in, the step-over is given up and the hit marked unfinished, and everything
    /// resumes with the signal delivered: the handler runs (its own hits are reported as
    /// usual), sigreturn brings the thread back onto the int3, and that trap starts the
    /// step-over again.
    fn signal_cuts_step_over(&mut self, tid: Tid) -> Outcome {
        let Phase::SteppingOver { addr, then, .. } = self.phase else {
            return Outcome::Absorbed;
        };
        self.finish_step_over_early(tid);
        if then == After::ContinueAll && self.pause_requested {
            return Outcome::Report(tid, StopReason::Paused);
        }
        let _ = addr;
        self.phase = Phase::Stopped;
        if let Err(e) = self.continue_all() {
            tracing::warn!("resuming after a signal cut a step-over short failed: {e}");
        }
        Outcome::Absorbed
    }

    /// Interrupts every running thread and reaps until all are stopped. Stops that
    /// are news (breakpoint hits, signals) are kept in `deferred` and reported on a
    /// later resume. Returns false when the process exited meanwhile.
    pub(super) fn stop_all(&mut self) -> Result<bool> {
        let pid = self.pid;
        let leader_stat = &self.leader_stat;
        for (tid, t) in self.threads.iter_mut() {
            if !t.running || t.interrupt_sent || t.new {
                continue;
            }
            // A main thread that called pthread_exit is a zombie that never stops.
            if tid.0 == pid.0 && leader_is_zombie(leader_stat) {
                t.running = false;
                continue;
            }
            match sys::interrupt(*tid) {
                Ok(()) => t.interrupt_sent = true,
                Err(e) => tracing::debug!(tid = tid.0, "PTRACE_INTERRUPT: {e}"),
            }
        }
        while self.threads.values().any(|t| t.running) {
            let w = match self.take_own_stash() {
                Some(w) => w,
                None => match sys::wait(-1, false, false) {
                    Ok(Some(w)) => w,
                    Ok(None) => continue,
                    Err(Errno::ECHILD) => {
                        self.phase = Phase::Exited;
                        self.threads.clear();
                        return Ok(false);
                    }
                    Err(e) => return Err(Error::ptrace("waitpid", Tid(pid.0), e)),
                },
            };
            if !self.threads.contains_key(&w.tid) {
                stash_push(w);
                continue;
            }
            if !self.collect(w)? {
                return Ok(false);
            }
        }
        if !self.collect_pending_traps()? {
            return Ok(false);
        }
        self.evacuate_patches();
        Ok(true)
    }

    /// Keeps what one wait result of a known thread says while the process is being
    /// stopped: news for later, the thread left stopped. False when the process is gone.
    pub(super) fn collect(&mut self, w: WaitResult) -> Result<bool> {
        match self.handle_status(w, true)? {
            Outcome::Absorbed | Outcome::StepOverAgain(_) => {}
            Outcome::Info(ev) => self.queue.push_back(ev),
            Outcome::Report(tid, reason) => self.deferred.push_back((tid, reason)),
            Outcome::Gone(ev) => {
                self.queue.push_back(ev);
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Classifies one wait result of a known thread. With `collecting`, threads are
    /// left stopped; otherwise absorbed stops are resumed.
    pub(super) fn handle_status(&mut self, w: WaitResult, collecting: bool) -> Result<Outcome> {
        let tid = w.tid;
        match sys::decode(w.status) {
            Status::Exited(code) => Ok(self.thread_gone(tid, Event::Exited { code }, collecting)),
            Status::Signaled(signo, core_dumped) => {
                Ok(self.thread_gone(tid, Event::Signaled { signo, core_dumped }, collecting))
            }
            Status::Other => Ok(Outcome::Absorbed),
            Status::Stopped(sig, ev) => {
                // A replay given several intervals at once passes the flushes it went by.
                self.sysbuf_sync();
                if let Some(t) = self.threads.get_mut(&tid) {
                    t.running = false;
                    // Any trap consumes a PTRACE_INTERRUPT requested before it; one
                    // requested while the thread was already trapped fires on the next
                    // resume and is absorbed by event_stop.
                    t.interrupt_sent = false;
                    t.call_event = match ev {
                        libc::PTRACE_EVENT_CLONE
                        | libc::PTRACE_EVENT_FORK
                        | libc::PTRACE_EVENT_VFORK
                        | libc::PTRACE_EVENT_VFORK_DONE
                        | libc::PTRACE_EVENT_EXEC => ev,
                        _ => 0,
                    };
                }
                if ev != libc::PTRACE_EVENT_STOP {
                    // A stop before a preemption's interrupt consumed it.
                    self.preemption_consumed(tid);
                }
                match ev {
                    0 if sig == libc::SIGTRAP | 0x80 => self.syscall_stop(tid, collecting),
                    0 => self.signal_stop(tid, sig, collecting),
                    libc::PTRACE_EVENT_STOP => Ok(self.event_stop(tid, sig, collecting)),
                    libc::PTRACE_EVENT_CLONE => {
                        let new = Tid(sys::event_msg(tid).unwrap_or(0) as i32);
                        // clone without CLONE_THREAD makes a process, not a thread: a
                        // fork child like any other (its breakpoints out, detached or
                        // handed over).
                        if new.0 > 0 && procfs::tgid_of(new).is_some_and(|tgid| tgid != self.pid.0)
                        {
                            let child = Pid(new.0);
                            self.detach_fork_child(child, false);
                            self.after_info(tid, collecting);
                            return Ok(Outcome::Info(Event::ForkDetached {
                                parent: tid,
                                child,
                                vfork: false,
                                stopped: self.fork_policy == ForkPolicy::Follow,
                            }));
                        }
                        if new.0 > 0 && self.rec.is_some() {
                            // Recorded: the new thread waits in its first stop until
                            // the schedule gives it the processor (sched.rs).
                            self.threads.insert(
                                new,
                                Thread {
                                    running: true,
                                    new: true,
                                    sysgood: true,
                                    ..Thread::default()
                                },
                            );
                            let first = stash_take(new).map(Ok).unwrap_or_else(|| loop {
                                match sys::wait(new.0, false, false) {
                                    Ok(Some(w)) => break Ok(w),
                                    Ok(None) => continue,
                                    Err(e) => break Err(e),
                                }
                            });
                            if let Ok(w) = first {
                                let _ = self.handle_status(w, true)?;
                            }
                            self.sched_thread_created(new);
                            if !self.is_replaying() {
                                // Dispatch is per thread: the new one's calls are
                                // buffered too.
                                self.sysbuf_thread(new);
                            }
                        } else if new.0 > 0 {
                            self.threads.insert(
                                new,
                                Thread {
                                    running: true,
                                    new: true,
                                    ..Thread::default()
                                },
                            );
                            if let Some(w) = stash_take(new) {
                                // Its first stop came before this event.
                                let _ = self.handle_status(w, collecting)?;
                            }
                        }
                        self.after_info(tid, collecting);
                        Ok(Outcome::Info(Event::ThreadCreated {
                            tid: new,
                            parent: tid,
                        }))
                    }
                    libc::PTRACE_EVENT_FORK | libc::PTRACE_EVENT_VFORK => {
                        let vfork = ev == libc::PTRACE_EVENT_VFORK;
                        let child = Pid(sys::event_msg(tid).unwrap_or(0) as i32);
                        self.detach_fork_child(child, vfork);
                        self.after_info(tid, collecting);
                        Ok(Outcome::Info(Event::ForkDetached {
                            parent: tid,
                            child,
                            vfork,
                            stopped: self.fork_policy == ForkPolicy::Follow,
                        }))
                    }
                    libc::PTRACE_EVENT_VFORK_DONE => {
                        if std::mem::take(&mut self.vfork_bps_removed) {
                            let addrs: Vec<u64> = self.breakpoints.keys().copied().collect();
                            for a in addrs {
                                let _ = self.write_bp_byte(a, true);
                            }
                        }
                        self.after_info(tid, collecting);
                        Ok(Outcome::Absorbed)
                    }
                    libc::PTRACE_EVENT_EXEC => {
                        let former = Tid(sys::event_msg(tid).unwrap_or(tid.0 as u64) as i32);
                        let leader = Tid(self.pid.0);
                        let kept = self.threads.remove(&tid).unwrap_or_default();
                        self.threads.clear();
                        self.threads.insert(
                            leader,
                            Thread {
                                running: false,
                                ..kept
                            },
                        );
                        if let Some(t) = self.threads.get_mut(&leader) {
                            t.stepping = false;
                            t.regs = None;
                            t.at_bp = None;
                            t.returns = SignalReturns::default();
                        }
                        // The old image and its breakpoints are gone; the kernel
                        // cleared the debug registers too.
                        self.breakpoints.clear();
                        self.shares_parent_memory = false;
                        self.patches.clear();
                        self.regions.clear();
                        self.sysbuf = None;
                        self.moribund.clear();
                        self.retired.clear();
                        self.watch = DebugRegisters::default();
                        self.deferred.clear();
                        self.refresh_image();
                        if let Phase::SteppingOver { .. } = self.phase {
                            self.phase = Phase::Running;
                        }
                        Ok(Outcome::Report(
                            leader,
                            StopReason::Exec { former_tid: former },
                        ))
                    }
                    _ => {
                        self.after_info(tid, collecting);
                        Ok(Outcome::Absorbed)
                    }
                }
            }
        }
    }

    /// After an informational stop: resume the thread unless all are being stopped.
    pub(super) fn after_info(&mut self, tid: Tid, collecting: bool) {
        if !collecting {
            self.resume_thread(tid);
        }
    }

    pub(super) fn thread_gone(&mut self, tid: Tid, exit: Event, collecting: bool) -> Outcome {
        if tid.0 == self.pid.0 && self.is_replaying() {
            // A replay never ends before the present: it diverged.
            self.threads.clear();
            self.leave_replay();
            if let Some(rec) = self.rec.as_mut() {
                rec.pos = None;
            }
            self.rec_diverged = Some("the recording diverged here: the replay ended".into());
            return Outcome::Report(Tid(self.pid.0), StopReason::Replayed);
        }
        if tid.0 == self.pid.0 && self.rec.is_some() {
            self.drop_recording();
            self.rec_ended = Some("recording ended: the program ended".into());
        }
        if tid.0 == self.pid.0 {
            self.threads.clear();
            self.phase = Phase::Exited;
            self.mem = None;
            return Outcome::Gone(exit);
        }
        if self.threads.remove(&tid).is_none() {
            return Outcome::Absorbed;
        }
        if self.is_replaying() {
            return self.replay_thread_exited(tid, collecting);
        }
        if self.rec.is_some() {
            if let Some(o) = self.record_thread_exit(tid, collecting) {
                return o;
            }
        }
        if let Phase::SteppingOver {
            tid: t0,
            addr,
            then,
        } = self.phase
        {
            if t0 == tid {
                if let Some(a) = addr {
                    let _ = self.write_bp_byte(a, true);
                }
                self.phase = Phase::Running;
                if then == After::ContinueAll {
                    self.phase = Phase::Stopped;
                    let _ = self.continue_all();
                } else {
                    self.deferred
                        .push_back((Tid(self.pid.0), StopReason::Paused));
                    self.phase = Phase::Stopped;
                    let _ = self.continue_all();
                }
            }
        }
        Outcome::Info(Event::ThreadExited { tid })
    }

    pub(super) fn signal_stop(&mut self, tid: Tid, sig: i32, collecting: bool) -> Result<Outcome> {
        if sig == libc::SIGSEGV && self.rec.is_some() {
            if let Some(o) = self.tsc_fault(tid, collecting)? {
                return Ok(o);
            }
        }
        if sig == libc::SIGSYS {
            if let Some(o) = self.sysbuf_sigsys(tid, collecting)? {
                return Ok(o);
            }
        }
        if sig == libc::SIGILL
            && self.is_replaying()
            && sys::get_regs(tid).is_ok_and(|r| self.sysbuf_diverged_at(r.rip))
        {
            self.replay_diverged(
                "the recording diverged here: a system call made inside the program differs from the recorded one",
            );
            return Ok(Outcome::Report(tid, StopReason::Replayed));
        }
        if sig == libc::SIGTRAP {
            let code = match sys::siginfo(tid) {
                Ok(info) => info.si_code,
                Err(_) => return Ok(Outcome::Absorbed),
            };
            let stepping = self.threads.get(&tid).is_some_and(|t| t.stepping);
            // A single-step that delivered a signal ends at the handler's first
            // instruction with the kernel's ptrace_notify trap (si_code SIGTRAP).
            if code == libc::TRAP_TRACE
                || (stepping && (code == TRAP_BRKPT || code == TRAP_SIGNAL_DELIVERED))
            {
                // A single-stepped instruction that also met a watchpoint's condition
                // traps once, as a single-step: DR6 tells.
                if !self.watch.is_empty() {
                    let dr6 = sys::peek_debugreg(tid, 6).unwrap_or(0);
                    if dr6 & 0xf != 0 {
                        let _ = sys::poke_debugreg(tid, 6, 0);
                        let in_buffer = self.sysbuf.is_some()
                            && sys::get_regs(tid).is_ok_and(|r| self.sysbuf_in_code(r.rip));
                        if !in_buffer {
                            return Ok(self.watch_stop(tid, dr6 | DR6_SINGLE_STEP));
                        }
                    }
                }
                if !stepping && code == libc::TRAP_TRACE {
                    if let Some(outcome) = self.stale_step_trap(tid, collecting) {
                        return Ok(outcome);
                    }
                }
                if stepping && !collecting && self.sysbuf_step_on(tid) {
                    return Ok(Outcome::Absorbed);
                }
                return Ok(self.step_done(tid));
            }
            if code == libc::SI_KERNEL && self.sysbuf.is_some() {
                if let Some(o) = self.sysbuf_flush_trap(tid, collecting)? {
                    return Ok(o);
                }
            }
            if code == libc::SI_KERNEL {
                let regs =
                    sys::get_regs(tid).map_err(|e| Error::ptrace("PTRACE_GETREGS", tid, e))?;
                let addr = regs.rip.wrapping_sub(1);
                if self.breakpoints.contains_key(&addr) {
                    let mut regs = regs;
                    regs.rip = addr;
                    sys::set_regs(tid, &regs)
                        .map_err(|e| Error::ptrace("PTRACE_SETREGS", tid, e))?;
                    if self.is_replaying() {
                        if let Some(o) = self.replay_preempt_trap(tid, addr, regs, collecting)? {
                            return Ok(o);
                        }
                    }
                    let mut again = false;
                    if let Some(t) = self.threads.get_mut(&tid) {
                        t.regs = Some(regs);
                        t.at_bp = Some(addr);
                        t.stepping = false;
                        again = t.returns.take(addr, regs.rsp);
                        if !again {
                            t.returns.forget_below(regs.rsp);
                        }
                    }
                    if again {
                        tracing::debug!(tid = tid.0, addr, "back on a hit a signal interrupted");
                        return Ok(Outcome::StepOverAgain(tid));
                    }
                    return Ok(Outcome::Report(
                        tid,
                        StopReason::Breakpoint {
                            addr: RuntimeAddr(addr),
                        },
                    ));
                }
                // The trap of a patch's placed code: its condition held at the site.
                if let Some(site) = self.patch_of_trap(addr) {
                    let mut regs = regs;
                    regs.rip = site;
                    sys::set_regs(tid, &regs)
                        .map_err(|e| Error::ptrace("PTRACE_SETREGS", tid, e))?;
                    if let Some(t) = self.threads.get_mut(&tid) {
                        t.regs = Some(regs);
                        t.at_bp = Some(site);
                        t.stepping = false;
                    }
                    return Ok(Outcome::Report(
                        tid,
                        StopReason::Breakpoint {
                            addr: RuntimeAddr(site),
                        },
                    ));
                }
                // The trap of a breakpoint removed after this thread executed it: back
                // onto the restored instruction, silently.
                if let Some(back) = self.moribund_trap(addr) {
                    let mut regs = regs;
                    regs.rip = back;
                    sys::set_regs(tid, &regs)
                        .map_err(|e| Error::ptrace("PTRACE_SETREGS", tid, e))?;
                    tracing::debug!(tid = tid.0, addr, "a trap of a removed breakpoint");
                    if let Some(t) = self.threads.get_mut(&tid) {
                        t.regs = Some(regs);
                        t.stepping = false;
                    }
                    if !collecting {
                        self.resume_thread(tid);
                    }
                    return Ok(Outcome::Absorbed);
                }
                tracing::debug!(
                    tid = tid.0,
                    pc = regs.rip,
                    covering = ?self.patch_covering(addr),
                    "a kernel SIGTRAP that is no breakpoint's"
                );
                if let Some(t) = self.threads.get_mut(&tid) {
                    t.regs = Some(regs);
                }
            }
            if code == TRAP_HWBKPT {
                let dr6 = sys::peek_debugreg(tid, 6).unwrap_or(0);
                let _ = sys::poke_debugreg(tid, 6, 0);
                if self.sysbuf.is_some()
                    && sys::get_regs(tid).is_ok_and(|r| self.sysbuf_in_code(r.rip))
                {
                    // The buffer's handler copied a call's bytes: the kernel's writes
                    // trigger no watchpoint either.
                    if !collecting {
                        self.resume_thread(tid);
                    }
                    return Ok(Outcome::Absorbed);
                }
                return Ok(self.watch_stop(tid, dr6 & !DR6_SINGLE_STEP));
            }
            return Ok(self.policy_stop(tid, sig, code, None, collecting));
        }
        let info = sys::siginfo(tid).ok();
        let code = info.map_or(0, |i| i.si_code);
        Ok(self.policy_stop(tid, sig, code, info, collecting))
    }

    pub(super) fn policy_stop(
        &mut self,
        tid: Tid,
        sig: i32,
        code: i32,
        info: Option<libc::siginfo_t>,
        collecting: bool,
    ) -> Outcome {
        let policy = self.signal_policy(sig);
        if self.rec.is_some() && !self.is_replaying() && is_fault(sig, code) {
            let pc = self.regs(tid).map(|r| r.pc()).ok();
            if let (Some(pc), Some(rec)) = (pc, self.rec.as_mut()) {
                if !rec.fault_sites.contains(&RuntimeAddr(pc)) {
                    rec.fault_sites.push(RuntimeAddr(pc));
                }
                rec.live_fault = Some((RuntimeAddr(pc), StopReason::Signal { signo: sig, code }));
            }
        }
        if policy.pass && self.rec.is_some() && !self.is_replaying() && !is_fault(sig, code) {
            // A replay could not deliver it at the same point: the recording ends here
            // and the program goes on live (a fault is replayed by itself).
            self.end_recording(format!(
                "recording stopped: signal {sig} arrived and signals are not recorded yet; the program goes on live"
            ));
        }
        if policy.pass {
            // Delivered from this very stop, with its siginfo; one already waiting is
            // kept for later, never overwritten.
            match info {
                Some(info) => self.keep_signal_with(tid, sig, Some(info)),
                None => self.keep_signal(tid, sig),
            }
        }
        if policy.stop {
            if let Some(t) = self.threads.get_mut(&tid) {
                t.stepping = false;
            }
            return Outcome::Report(tid, StopReason::Signal { signo: sig, code });
        }
        if !collecting {
            if let Phase::SteppingOver {
                tid: t0,
                addr: Some(_),
                then: After::ContinueAll,
            } = self.phase
            {
                if t0 == tid && sig != 0 && policy.pass {
                    return self.signal_cuts_step_over(tid);
                }
            }
            // Passing a signal while a step someone asked for runs enters the handler;
            // the step ends at its first instruction (reported as the step's end).
            self.resume_thread(tid);
        }
        Outcome::Absorbed
    }

    /// A hardware breakpoint or watchpoint trapped. When it ended a step-over, the
    /// breakpoint stepped over goes back in, and the watchpoint is reported instead
    /// of continuing: it is news.
    ///
    /// DR6's single-step bit is kept only for a step someone asked for
    /// ([`Tracer::step`]); an internal step off a breakpoint on the way to continuing
    /// is nobody's news, so the caller just sees a watchpoint and may resume.
    pub(super) fn watch_stop(&mut self, tid: Tid, mut dr6: u64) -> Outcome {
        if let Some(t) = self.threads.get_mut(&tid) {
            t.stepping = false;
        }
        if let Phase::SteppingOver {
            tid: t0,
            addr,
            then,
        } = self.phase
        {
            if t0 == tid {
                if then == After::ContinueAll {
                    dr6 &= !DR6_SINGLE_STEP;
                }
                if let Some(a) = addr {
                    if self.breakpoints.contains_key(&a) {
                        let _ = self.write_bp_byte(a, true);
                    }
                }
                self.phase = Phase::Running;
            }
        }
        Outcome::Report(tid, StopReason::Watchpoint { dr6 })
    }

    /// A single-step trap for a thread nobody is stepping. Either the trap of a step of
    /// the tracer's own that was reported late (a job-control stop came first and the
    /// step's loop had moved on): the trap flag is not set, nothing is news; or the trap
    /// flag leaked into the program's flags inside placed code (a pushfq under a step):
    /// it is cleared. Both pass silently. The program's own trap flag elsewhere is its
    /// business (`None`: handled as before).
    fn stale_step_trap(&mut self, tid: Tid, collecting: bool) -> Option<Outcome> {
        if matches!(self.phase, Phase::SteppingOver { tid: t0, .. } if t0 == tid) {
            return None;
        }
        let regs = sys::get_regs(tid).ok()?;
        let flag = regs.eflags & patch::TRAP_FLAG != 0;
        let pc = regs.rip;
        let placed = self.patches.values().any(|p| p.in_code(pc))
            || self.retired.iter().any(|r| r.code.0 <= pc && pc < r.code.1);
        if flag && !placed {
            return None;
        }
        tracing::debug!(
            tid = tid.0,
            pc = regs.rip,
            flag,
            "a late trap of the tracer's own step"
        );
        if flag {
            self.clear_trap_flag(tid);
        }
        if !collecting {
            self.resume_thread(tid);
        }
        Some(Outcome::Absorbed)
    }

    pub(super) fn step_done(&mut self, tid: Tid) -> Outcome {
        if let Some(t) = self.threads.get_mut(&tid) {
            t.stepping = false;
        }
        match self.phase {
            Phase::SteppingOver {
                tid: t0,
                addr,
                then,
            } if t0 == tid => {
                if let Some(a) = addr {
                    if self.breakpoints.contains_key(&a) {
                        let _ = self.write_bp_byte(a, true);
                    }
                }
                match then {
                    After::ReportStep => {
                        self.phase = Phase::Running;
                        Outcome::Report(tid, StopReason::Step)
                    }
                    After::ContinueAll if self.pause_requested => {
                        self.phase = Phase::Running;
                        Outcome::Report(tid, StopReason::Paused)
                    }
                    After::ContinueAll => {
                        self.phase = Phase::Stopped;
                        if let Err(e) = self.continue_all() {
                            tracing::warn!("resuming after a step-over failed: {e}");
                        }
                        Outcome::Absorbed
                    }
                }
            }
            _ => {
                tracing::debug!(tid = tid.0, phase = ?self.phase, "a step trap outside a step-over");
                Outcome::Report(tid, StopReason::Step)
            }
        }
    }

    pub(super) fn event_stop(&mut self, tid: Tid, sig: i32, collecting: bool) -> Outcome {
        let Some(t) = self.threads.get_mut(&tid) else {
            return Outcome::Absorbed;
        };
        let was_new = std::mem::take(&mut t.new);
        if was_new {
            // Its own stack, while it is surely on it (see `learn_homes`).
            if let (Ok(regs), Some(t)) = (sys::get_regs(tid), self.threads.get_mut(&tid)) {
                t.first_sp = regs.rsp;
            }
        }
        if was_new && !self.watch.is_empty() {
            // Threads do not inherit debug registers: give a new thread the process's
            // watchpoints before it runs its first instruction.
            let regs = self.watch;
            if let Err(e) = write_debug_regs(tid, &regs) {
                tracing::warn!(tid = tid.0, "watchpoints on a new thread: {e}");
            }
        }
        let Some(t) = self.threads.get_mut(&tid) else {
            return Outcome::Absorbed;
        };
        let _was_interrupted = std::mem::take(&mut t.interrupt_sent);
        let was_listening = std::mem::take(&mut t.listening);
        if !is_stop_signal(sig) && self.rec.is_some() {
            if let Some(o) = self.preempted(tid, collecting) {
                if let Some(t) = self.threads.get_mut(&tid) {
                    t.group_stop = false;
                }
                return o;
            }
        }
        let Some(t) = self.threads.get_mut(&tid) else {
            return Outcome::Absorbed;
        };
        if is_stop_signal(sig) {
            t.group_stop = true;
            if collecting {
                return Outcome::Absorbed;
            }
            if self.pause_requested {
                return Outcome::Report(tid, StopReason::Paused);
            }
            if was_listening {
                // Still stopped by job control: keep listening.
                self.resume_thread(tid);
                return Outcome::Absorbed;
            }
            return Outcome::Report(tid, StopReason::GroupStop { signo: sig });
        }
        // SIGTRAP: our interrupt, a new thread's first stop, or the end of a
        // job-control stop (SIGCONT) of a listening thread.
        t.group_stop = false;
        if collecting {
            return Outcome::Absorbed;
        }
        if self.pause_requested {
            return Outcome::Report(tid, StopReason::Paused);
        }
        match self.phase {
            // A new thread appearing during a step-over waits for the next continue.
            Phase::SteppingOver { tid: t0, .. } if t0 != tid && was_new => Outcome::Absorbed,
            _ => {
                self.resume_thread(tid);
                Outcome::Absorbed
            }
        }
    }

    /// Frees a fork child of breakpoints and detaches it.
    pub(super) fn detach_fork_child(&mut self, child: Pid, vfork: bool) {
        if child.0 <= 0 {
            return;
        }
        // The child is auto-attached and reports a first stop: wait for it.
        let ctid = Tid(child.0);
        let first = stash_take(ctid).map(Ok).unwrap_or_else(|| loop {
            match sys::wait(child.0, false, false) {
                Ok(Some(w)) => break Ok(w),
                Ok(None) => continue,
                Err(e) => break Err(e),
            }
        });
        let Ok(first) = first else {
            return;
        };
        if !matches!(sys::decode(first.status), Status::Stopped(..)) {
            return;
        }
        let saved: Vec<(u64, Vec<u8>)> = self.original_bytes();
        if vfork {
            // Parent and child share memory until the child execs or exits: take the
            // breakpoints out until the vfork-done event.
            for (a, b) in &saved {
                let _ = self.write_raw(*a, b);
            }
            self.vfork_bps_removed = !saved.is_empty();
        } else if !saved.is_empty() {
            if let Some(mem) = open_mem(child) {
                for (a, b) in &saved {
                    let _ = mem.write_at(b, *a);
                }
            }
        }
        if self.fork_policy == ForkPolicy::Follow {
            // Parked in a wait of its own (no job-control stop its parent would be
            // told of); else a SIGSTOP queued now (PTRACE_DETACH only injects a signal
            // from a signal-delivery-stop, and this is an event stop) stops it right
            // after the detach, before any instruction of its own.
            if !crate::park::park(ctid) {
                let _ = sys::tgkill(child.0, child.0, libc::SIGSTOP);
            }
            self.handed_over
                .retain(|p| procfs::process_state(*p).is_some());
            self.handed_over.push(child);
        }
        if let Err(e) = sys::detach(ctid, 0) {
            tracing::warn!(child = child.0, "detaching a fork child failed: {e}");
        }
    }
}

/// A fault the program's own instruction raised (replayed by itself at the same point),
/// not a signal sent to it.
pub(super) fn is_fault(sig: i32, code: i32) -> bool {
    matches!(
        sig,
        libc::SIGSEGV | libc::SIGBUS | libc::SIGFPE | libc::SIGILL | libc::SIGTRAP
    ) && code > 0
}

impl Tracer {
    /// Whether a wake signal came since this was last asked (a command waits).
    pub(super) fn woken(&mut self) -> bool {
        let now = crate::handle::WAKES.load(std::sync::atomic::Ordering::Relaxed);
        let woken = now != self.wakes_seen;
        self.wakes_seen = now;
        woken
    }
}
