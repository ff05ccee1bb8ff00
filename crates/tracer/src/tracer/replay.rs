//! Replay: going back to a position by running a fork of the snapshot before it with
//! every recorded system call emulated, and forward again until the present, where the
//! live process (kept stopped meanwhile) takes over (docs/reverse.md).
//!
//! While a replay is shown, the tracer's process fields (pid, threads, /proc/PID/mem)
//! are the replay's; the live process is parked with the int3s written into it, and is
//! brought up to date with the breakpoint table when it comes back.

use std::ops::ControlFlow;

use super::record::{kill_process, Move, Position};
use super::sched::{self, Sched, ThreadIndex};
use super::syscalls::{self, Class};
use super::*;

mod follow;
use follow::Follow;

/// What [`Tracer::scan`] calls at every breakpoint trap on the way.
pub type OnTrap<'a> = &'a mut dyn FnMut(&mut Tracer, Tid, RuntimeAddr);

/// What a scan of the past met on the way ([`Tracer::scan_stops`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanStop {
    /// A breakpoint trapped (the pc is back at its address).
    Breakpoint(RuntimeAddr),
    /// A hardware watchpoint fired after an instruction; DR6 says which slots. The
    /// position the tracer gives meanwhile is that of the last trap, step or system
    /// call before it (a watchpoint is no move).
    Watchpoint {
        /// The debug status register at the stop.
        dr6: u64,
    },
    /// The replay's own instruction faulted (SIGSEGV, SIGBUS, ...), as the recorded
    /// program did: a scan that does not end here goes on into a divergence.
    Fault {
        /// The signal.
        signo: i32,
    },
}

/// What [`Tracer::scan_stops`] calls at every stop on the way; `Break` ends the scan
/// there, with the replay shown at that stop.
pub type OnStop<'a> = &'a mut dyn FnMut(&mut Tracer, Tid, ScanStop) -> ControlFlow<()>;

/// A process the tracer is not showing: its per-process fields.
pub(super) struct Parked {
    pid: Pid,
    threads: HashMap<Tid, Thread>,
    mem: Option<File>,
    leader_stat: Option<File>,
    phase: Phase,
    /// The addresses whose int3 is written into it, with the bytes under them.
    int3s: BTreeMap<u64, u8>,
}

pub(super) struct Replay {
    pub live: Option<Parked>,
    pub live_pos: Position,
    cursor: u64,
    /// The event of the snapshot (or waypoint) this replay was forked from.
    pub base: u64,
    /// The current system call is emulated (skipped, its result injected).
    emulated: bool,
    /// Its recorded result replaces the real one.
    any_result: bool,
    /// Arguments changed at entry (mmap at the recorded address), restored at exit.
    restore: Option<(u64, u64)>,
    /// Stop with `Replayed` once this many calls are replayed.
    pub stop_at_event: Option<u64>,
    /// Making the moves of a target: no system call may come.
    in_moves: bool,
    follow: Option<Follow>,
    /// The stop just reported was a trap only the follow's guard wanted.
    guard_trap: bool,
    pub diverged: Option<String>,
    /// The replay's threads (re-created by its clones) and which one runs.
    pub sched: Sched,
    /// The thread that runs at the present (after the recording's last event).
    present_thread: ThreadIndex,
    /// The current call makes a thread: the recorded thread-id words are written.
    thread_call: bool,
    /// The buffer holds several intervals separated by flush events (`batch_ends`):
    /// where each but the last ends in it, in bytes (`sysbuf_sync`).
    pub(super) batch: Vec<u64>,
}

impl Replay {
    /// The recorded event the replay is at.
    pub(super) fn cursor(&self) -> u64 {
        self.cursor
    }

    /// Passes flush events given in one batch (`sysbuf_sync`).
    pub(super) fn set_cursor(&mut self, cursor: u64) {
        self.cursor = cursor;
    }
}

impl Tracer {
    fn park(&mut self) -> Parked {
        Parked {
            pid: self.pid,
            threads: std::mem::take(&mut self.threads),
            mem: self.mem.take(),
            leader_stat: self.leader_stat.take(),
            phase: self.phase,
            int3s: self
                .breakpoints
                .iter()
                .filter(|(a, _)| !self.absent.contains(a))
                .map(|(a, b)| (*a, b.saved))
                .collect(),
        }
    }

    /// The original byte at `addr` in the parked live process, while a replay is shown
    /// (under an int3 it still has, the byte kept for it).
    pub(super) fn live_byte(&self, addr: u64) -> Option<u8> {
        let live = self.rec.as_ref()?.replay.as_ref()?.live.as_ref()?;
        if let Some(saved) = live.int3s.get(&addr) {
            return Some(*saved);
        }
        let mut b = [0u8; 1];
        match live.mem.as_ref()?.read_at(&mut b, addr) {
            Ok(1) => Some(b[0]),
            _ => None,
        }
    }

    fn unpark(&mut self, p: Parked) {
        self.pid = p.pid;
        self.info.pid = p.pid;
        self.threads = p.threads;
        self.mem = p.mem;
        self.leader_stat = p.leader_stat;
        self.phase = p.phase;
        self.absent.clear();
        self.sync_int3s(&p.int3s, false);
    }

    /// Shows `pid` (a stopped, clean fork of the debuggee traced by this thread).
    fn adopt(&mut self, pid: Pid) {
        self.absent_maps = None;
        self.pid = pid;
        self.info.pid = pid;
        self.threads.clear();
        self.threads.insert(
            Tid(pid.0),
            Thread {
                sysgood: true,
                ..Thread::default()
            },
        );
        self.mem = open_mem(pid);
        self.leader_stat = File::open(format!("/proc/{}/task/{}/stat", pid.0, pid.0)).ok();
        self.phase = Phase::Stopped;
        self.all_absent();
    }

    /// Makes the shown process's int3s those of the breakpoint table, given the ones
    /// it has (with the bytes under them); its debug registers get the watchpoints. A
    /// replay (`replay`) gets those whose code it has mapped; the others are planted
    /// when it maps them (`absent.rs`).
    fn sync_int3s(&mut self, has: &BTreeMap<u64, u8>, replay: bool) {
        let gone: Vec<(u64, u8)> = has
            .iter()
            .filter(|(a, _)| !self.breakpoints.contains_key(a))
            .map(|(a, b)| (*a, *b))
            .collect();
        for (a, b) in gone {
            let _ = self.write_raw(a, &[b]);
        }
        let new: Vec<u64> = self
            .breakpoints
            .keys()
            .filter(|a| !has.contains_key(a))
            .copied()
            .collect();
        self.absent.extend(new);
        self.plant_absent(replay);
        if self.debugregs_used {
            let watch = self.watch;
            for tid in self.threads() {
                let _ = write_debug_regs(tid, &watch);
            }
        }
    }

    /// Whether the shown process is a replay.
    pub fn is_replaying(&self) -> bool {
        self.rec.as_ref().is_some_and(|r| r.replay.is_some())
    }

    /// Whether the stop being reported is where a replay going forward reached the
    /// present: the live process shows again, stopped where it was, and a breakpoint
    /// hit there is the one it made (counted then), not a new one.
    pub fn arrived_at_present(&self) -> bool {
        self.rec.as_ref().is_some_and(|r| r.at_present)
    }

    /// Goes to `target`, an earlier point of the recording (or the present): a fork of
    /// the last snapshot before it runs there with every system call emulated. The
    /// process shown is then that replay, stopped; nothing is reported.
    pub fn goto(&mut self, target: &Position) -> Result<()> {
        self.require_stopped()?;
        let Some(rec) = self.rec.as_ref() else {
            return Err(Error::Replay(match &self.rec_ended {
                Some(why) => format!("there is no recording to go back in: {why}"),
                None => "this session does not record: launch with reverseDebugging".into(),
            }));
        };
        let present = match &rec.replay {
            Some(r) => r.live_pos.clone(),
            None => rec.pos.clone().ok_or_else(|| {
                Error::Replay(
                    "the present is not at a point the recording can return to (after a pause, a watchpoint or a signal); run to a breakpoint or step first".into(),
                )
            })?,
        };
        // In the present's interval a point a scan found may be "a prefix of the
        // present's moves, then other moves before its next one": the same event.
        if !target.leads_to(&present) && target.event != present.event {
            return Err(Error::Replay("that point is not in the recording".into()));
        }
        if *target == present {
            if rec.replay.is_some() {
                self.leave_replay();
            }
            return Ok(());
        }
        // The latest recorded snapshot or waypoint before the target.
        let recorded = rec.snapshots.iter().rev().find(|s| s.event <= target.event);
        let waypoint = rec.waypoints.iter().rev().find(|s| s.event <= target.event);
        let Some(snap) = (match (recorded, waypoint) {
            (Some(s), Some(w)) if w.event > s.event => Some(w),
            (Some(s), _) => Some(s),
            _ => None,
        })
        .cloned() else {
            return Err(Error::Replay(
                "that point is before the recording's start".into(),
            ));
        };
        let started = std::time::Instant::now();
        // A fork of the snapshot runs, so the snapshot stays as it was.
        self.held = None;
        self.end_follow_guard();
        self.drop_preempt_guard();
        if let Some(r) = self.replay_mut() {
            r.follow = None;
        }
        if !self.is_replaying() {
            // The present's buffered calls, for a replay that gets back to it.
            let tail = self.sysbuf_peek();
            if let Some(rec) = self.rec.as_mut() {
                rec.tail = tail;
            }
        }
        let shown = self.park();
        self.adopt(snap.pid);
        let copy = self.fork_copy();
        self.threads.clear();
        let old = self.park();
        drop(old);
        let copy = match copy {
            Ok(c) => c,
            Err(e) => {
                self.unpark(shown);
                return Err(e);
            }
        };
        let live = if self.is_replaying() {
            let tids: Vec<Tid> = shown.threads.keys().copied().collect();
            kill_process(shown.pid, &tids);
            None
        } else {
            Some(shown)
        };
        self.adopt(copy);
        let threads = match self.recreate_threads(&snap) {
            Ok(t) => t,
            Err(e) => {
                let tids: Vec<Tid> = self.threads.keys().copied().collect();
                kill_process(self.pid, &tids);
                self.threads.clear();
                match live {
                    Some(l) => self.unpark(l),
                    // A replay was shown (and is gone): back to the live process.
                    None => self.leave_replay(),
                }
                return Err(e);
            }
        };
        // After the threads are back: each gets the watchpoints too.
        self.sync_int3s(&BTreeMap::new(), true);
        self.start_replay(live, present, snap.event, threads)?;
        self.pin_replay();
        // The snapshot's next event may be a preemption (of another thread than the
        // one its fork copied).
        self.plant_preempt_guard();
        // A replay forked at the start of the present's interval follows the live moves
        // from there (one that enters it later starts then, `replay_advance`).
        if self
            .replay_mut()
            .is_some_and(|r| r.cursor == r.live_pos.event)
        {
            self.start_follow(Follow::default());
        }
        let seek_started = std::time::Instant::now();
        let res = self.seek(target, None).map(|_| ());
        tracing::debug!(
            from = snap.event,
            to = target.event,
            moves = target.path.len(),
            fork_us = seek_started.duration_since(started).as_micros() as u64,
            seek_us = seek_started.elapsed().as_micros() as u64,
            "went to a point of the recording"
        );
        // Nothing the replay cannot vouch for is shown: back to the present. Nor is a
        // replay at the present (a target reached by other moves than the live ones):
        // the live process is there.
        if res.is_err() || self.replay_at_present() {
            self.leave_replay();
        }
        res
    }

    fn start_replay(
        &mut self,
        live: Option<Parked>,
        present: Position,
        event: u64,
        threads: Vec<(ThreadIndex, Tid)>,
    ) -> Result<()> {
        let snap_event = event;
        let rec = self.rec.as_mut().ok_or(Error::Exited)?;
        let present_thread = rec.sched.current;
        // The thread of the snapshot's next event runs first.
        let mut sched = Sched::with_threads(&threads);
        sched.current = rec
            .events
            .get(snap_event as usize)
            .map_or(present_thread, |e| e.thread);
        match rec.replay.as_mut() {
            Some(r) => {
                r.cursor = snap_event;
                r.base = snap_event;
                r.guard_trap = false;
                r.diverged = None;
                r.stop_at_event = None;
                r.in_moves = false;
                r.sched = sched;
                r.present_thread = present_thread;
            }
            None => {
                rec.replay = Some(replay::Replay {
                    live,
                    live_pos: present,
                    cursor: snap_event,
                    base: snap_event,
                    emulated: false,
                    any_result: false,
                    restore: None,
                    stop_at_event: None,
                    in_moves: false,
                    follow: None,
                    guard_trap: false,
                    diverged: None,
                    sched,
                    present_thread,
                    thread_call: false,
                    batch: Vec::new(),
                })
            }
        }
        rec.pos = Some(Position {
            event: snap_event,
            path: Vec::new(),
        });
        self.install_interval(snap_event)
    }

    /// Gives the shown replay the interval before event `cursor` (the present's after
    /// the last one): the code the buffer wrote in it and the calls it buffered.
    ///
    /// When the event ending it is a flush of the buffer, the intervals after it are
    /// given at once, up to the next event that is not a flush (or one a seek stops at,
    /// or the present's): the handler then traps once for them all, and the flushes on
    /// the way are passed when a stop finds the buffer past them (`sysbuf_sync`).
    fn install_interval(&mut self, cursor: u64) -> Result<()> {
        if self.sysbuf.is_none() {
            return Ok(());
        }
        let Some(rec) = self.rec.as_ref() else {
            return Ok(());
        };
        let Some(r) = rec.replay.as_ref() else {
            return Ok(());
        };
        let interval_at = |k: u64| -> sysbuf::Interval {
            match rec.events.get(k as usize) {
                Some(ev) => ev.interval.as_deref().cloned().unwrap_or_default(),
                None => rec.tail.clone(),
            }
        };
        let mut whole = interval_at(cursor);
        let mut ends = Vec::new();
        // A flush event e is passed silently only if the replay must not stop at e + 1.
        let limit = r.stop_at_event.unwrap_or(u64::MAX).min(r.live_pos.event);
        let mut k = cursor;
        while !r.in_moves
            && k + 1 < limit
            && rec
                .events
                .get(k as usize)
                .is_some_and(|e| e.nr == sysbuf::FLUSH_EVENT)
        {
            let next = interval_at(k + 1);
            if next.calls.is_empty() || whole.calls.len() + next.calls.len() > sysbuf::BATCH_MAX {
                break;
            }
            ends.push(whole.calls.len() as u64);
            whole.calls.extend_from_slice(&next.calls);
            whole.code.extend(next.code);
            k += 1;
        }
        if let Some(r) = self.replay_mut() {
            r.batch = ends;
        }
        self.sysbuf_install(&whole)
    }

    /// Replays the recording from its start to `to` (at most the present) with the
    /// breakpoints `extra` in place too, calling `on_trap` at every breakpoint trap on
    /// the way, `to` itself excepted; the replay shown is then at `to`. This is how the
    /// past is searched (the last hit of a breakpoint, the lines before a point).
    pub fn scan(
        &mut self,
        to: &Position,
        extra: &[RuntimeAddr],
        on_trap: OnTrap<'_>,
    ) -> Result<()> {
        self.scan_stops(None, to, extra, &mut |t, tid, stop| {
            if let ScanStop::Breakpoint(addr) = stop {
                on_trap(t, tid, addr);
            }
            ControlFlow::Continue(())
        })
        .map(|_| ())
    }

    /// [`Tracer::scan`] from the system-call boundary `from` (the recording's start
    /// when `None`), also calling `on_stop` at every watchpoint trigger (the debug
    /// registers set with [`Tracer::set_watchpoints`] are in the replay too). Returns
    /// whether `on_stop` ended the scan early; the replay shown is then there.
    pub fn scan_stops(
        &mut self,
        from: Option<u64>,
        to: &Position,
        extra: &[RuntimeAddr],
        on_stop: OnStop<'_>,
    ) -> Result<bool> {
        let first = self
            .rec
            .as_ref()
            .and_then(|r| r.snapshots.first())
            .map(|s| s.event)
            .ok_or_else(|| Error::Replay("the recording has no snapshot yet".into()))?;
        self.goto(&Position {
            event: from.unwrap_or(first).max(first),
            path: Vec::new(),
        })?;
        if !self.is_replaying() {
            return Err(Error::Replay(
                "the recording has nothing before this point".into(),
            ));
        }
        let mut planted = Vec::new();
        for a in extra {
            if self.insert_breakpoint(*a).is_ok() {
                planted.push(*a);
            }
        }
        // An int3 on each instruction the program faulted at keeps the position exact
        // after the fault (the arrival there is a move): a write or a hit in a signal
        // handler is then a point the replay can go to. Their traps are the tracer's
        // own, not the caller's news.
        let sites = self
            .rec
            .as_ref()
            .map(|r| r.fault_sites.clone())
            .unwrap_or_default();
        let mut hidden = Vec::new();
        for a in sites {
            if !self.breakpoints.contains_key(&a.0) && self.insert_breakpoint(a).is_ok() {
                hidden.push(a);
            }
        }
        let res = if hidden.is_empty() {
            self.seek(to, Some(on_stop))
        } else {
            let mut filtered = |t: &mut Tracer, tid: Tid, stop: ScanStop| match stop {
                ScanStop::Breakpoint(a) if hidden.contains(&a) => ControlFlow::Continue(()),
                other => on_stop(t, tid, other),
            };
            self.seek(to, Some(&mut filtered))
        };
        for a in hidden {
            let _ = self.remove_breakpoint(a);
        }
        for a in planted {
            let _ = self.remove_breakpoint(a);
        }
        if res.is_err() {
            self.leave_replay();
        }
        res
    }

    /// The recording's start: the first snapshot's position.
    pub fn recording_start(&self) -> Option<Position> {
        let first = self.rec.as_ref()?.snapshots.first()?.event;
        Some(Position {
            event: first,
            path: Vec::new(),
        })
    }

    fn replay_mut(&mut self) -> Option<&mut Replay> {
        self.rec.as_mut()?.replay.as_mut()
    }

    fn check_diverged(&mut self) -> Result<()> {
        match self.replay_mut().and_then(|r| r.diverged.take()) {
            Some(why) => Err(Error::Replay(why)),
            None => Ok(()),
        }
    }

    /// Waits for the replay's next stop; an exit is a divergence.
    fn replay_wait(&mut self) -> Result<(Tid, StopReason)> {
        loop {
            match self.wait()? {
                Event::Stopped { tid, reason } => {
                    self.check_diverged()?;
                    return Ok((tid, reason));
                }
                ev if ev.is_exit() => {
                    return Err(Error::Replay(
                        "the recording diverged here: the replay ended".into(),
                    ))
                }
                _ => {}
            }
        }
    }

    /// [`Tracer::replay_wait`] keeping the position over a watchpoint trigger (which is
    /// no move: the position is still that of the last trap, step or system call).
    fn scan_wait(&mut self) -> Result<(Tid, StopReason)> {
        let got = self.replay_wait()?;
        if matches!(got.1, StopReason::Watchpoint { .. }) {
            if let Some(rec) = self.rec.as_mut() {
                if rec.pos.is_none() {
                    rec.pos = rec.last_known.clone();
                }
            }
        }
        Ok(got)
    }

    /// Sets the shown replay's position in the moves of an interval: `done` (the
    /// target's moves made so far), then `extras` (traps met since, at other addresses).
    fn set_moves_pos(&mut self, event: u64, done: &[Move], extras: &[Move]) {
        let mut pos = Position {
            event,
            path: done.to_vec(),
        };
        for m in extras {
            pos.push(*m);
        }
        if let Some(rec) = self.rec.as_mut() {
            rec.pos = Some(pos);
        }
    }

    /// Runs the shown replay from an interval's start to `target`, calling `on_stop` at
    /// every trap and watchpoint trigger on the way (`target` itself excepted). Returns
    /// whether `on_stop` ended it early (the replay is then at that stop).
    ///
    /// A position met in the moves is "the target's moves made so far, then the traps
    /// met since at other addresses". In the present's interval the follow of the live
    /// moves counts every trap and step of the way (`follow.rs`), so going forward from
    /// wherever the seek ends finds the present, however the target was described.
    fn seek(&mut self, target: &Position, mut on_stop: Option<OnStop<'_>>) -> Result<bool> {
        let scanning = on_stop.is_some();
        let mut call = |t: &mut Tracer, tid: Tid, stop: ScanStop| -> bool {
            match on_stop.as_mut() {
                Some(f) => f(t, tid, stop).is_break(),
                None => false,
            }
        };
        let cursor = self.replay_mut().map_or(0, |r| r.cursor);
        if cursor < target.event {
            if let Some(r) = self.replay_mut() {
                r.stop_at_event = Some(target.event);
            }
            // The intervals given at the replay's start may run past the target.
            if self.replay_mut().is_some_and(|r| !r.batch.is_empty()) {
                self.install_interval(cursor)?;
            }
            self.resume()?;
            loop {
                let stop = match self.scan_wait()? {
                    (_, StopReason::Replayed) => break,
                    (tid, StopReason::Breakpoint { addr }) => {
                        Some((tid, ScanStop::Breakpoint(addr)))
                    }
                    (tid, StopReason::Watchpoint { dr6 }) => {
                        Some((tid, ScanStop::Watchpoint { dr6 }))
                    }
                    (tid, StopReason::Signal { signo, code }) if wait::is_fault(signo, code) => {
                        Some((tid, ScanStop::Fault { signo }))
                    }
                    _ => None,
                };
                if let Some((tid, stop)) = stop {
                    if call(self, tid, stop) {
                        if let Some(r) = self.replay_mut() {
                            r.stop_at_event = None;
                        }
                        return Ok(true);
                    }
                }
                self.resume()?;
            }
        }
        if let Some(r) = self.replay_mut() {
            r.in_moves = true;
        }
        let tid = self.shown_thread();
        let last = target.path.len().saturating_sub(1);
        let event = target.event;
        let moved = (|| -> Result<bool> {
            let mut done: Vec<Move> = Vec::new();
            let mut extras: Vec<Move> = Vec::new();
            for (i, m) in target.path.iter().enumerate() {
                match *m {
                    Move::Trap { addr, count } => {
                        self.insert_breakpoint(addr)?;
                        let mut n = 0;
                        while n < count {
                            self.resume()?;
                            let stop = match self.scan_wait()? {
                                (tid, StopReason::Breakpoint { addr: a }) => {
                                    // A trap only the follow's guard wanted: counted by
                                    // the follow, no news for the scan.
                                    let guard = a != addr && self.take_guard_trap();
                                    if a == addr {
                                        n += 1;
                                        extras.clear();
                                        done.truncate(i);
                                        done.push(Move::Trap { addr, count: n });
                                    } else {
                                        extras.push(Move::Trap { addr: a, count: 1 });
                                    }
                                    self.set_moves_pos(event, &done, &extras);
                                    let at_target = a == addr && n == count && i == last;
                                    (!at_target && !guard).then_some((tid, ScanStop::Breakpoint(a)))
                                }
                                (tid, StopReason::Watchpoint { dr6 }) => {
                                    Some((tid, ScanStop::Watchpoint { dr6 }))
                                }
                                // The program's own fault (a handler takes it, as it
                                // did when recorded): passed on, no move.
                                (tid, StopReason::Signal { signo, code })
                                    if wait::is_fault(signo, code) =>
                                {
                                    scanning.then_some((tid, ScanStop::Fault { signo }))
                                }
                                other => {
                                    return Err(Error::Replay(format!(
                                        "the recording diverged here: {other:?} on the way back"
                                    )))
                                }
                            };
                            if let Some((tid, stop)) = stop {
                                if call(self, tid, stop) {
                                    let _ = self.remove_breakpoint(addr);
                                    return Ok(true);
                                }
                            }
                        }
                        self.remove_breakpoint(addr)?;
                    }
                    Move::Step { count } => {
                        for n in 1..=count {
                            self.step(tid)?;
                            let trigger = match self.scan_wait()?.1 {
                                StopReason::Step => None,
                                StopReason::Watchpoint { dr6 } => Some(dr6),
                                other => {
                                    return Err(Error::Replay(format!(
                                        "the recording diverged here: {other:?} on the way back"
                                    )))
                                }
                            };
                            extras.clear();
                            done.truncate(i);
                            done.push(Move::Step { count: n });
                            self.set_moves_pos(event, &done, &extras);
                            if let Some(dr6) = trigger {
                                if call(self, tid, ScanStop::Watchpoint { dr6 }) {
                                    return Ok(true);
                                }
                            }
                            // A step that lands on a breakpoint does not trap there, but
                            // it is an arrival a scan looks for.
                            let at_target = i == last && n == count;
                            if scanning && !at_target {
                                let pc = self.regs(tid)?.pc();
                                if self.breakpoints.contains_key(&pc)
                                    && !self.guard_only(pc)
                                    && call(self, tid, ScanStop::Breakpoint(RuntimeAddr(pc)))
                                {
                                    return Ok(true);
                                }
                            }
                        }
                    }
                }
            }
            Ok(false)
        })();
        if let Some(r) = self.replay_mut() {
            r.in_moves = false;
        }
        if moved? {
            return Ok(true);
        }
        if let Some(rec) = self.rec.as_mut() {
            rec.pos = Some(target.clone());
        }
        Ok(false)
    }

    /// Gives up the shown replay for the live process, which shows again, stopped where
    /// it was, with the breakpoint table's int3s.
    pub fn leave_replay(&mut self) {
        self.held = None;
        self.end_follow_guard();
        self.drop_preempt_guard();
        let Some(r) = self.rec.as_mut().and_then(|r| r.replay.take()) else {
            return;
        };
        let replay_pid = self.pid;
        let tids: Vec<Tid> = self.threads.keys().copied().collect();
        self.threads.clear();
        kill_process(replay_pid, &tids);
        if let Some(live) = r.live {
            self.unpark(live);
        }
        let pos = r.live_pos;
        if let Some(rec) = self.rec.as_mut() {
            rec.pos = Some(pos);
        }
    }

    /// A system call's entry in the shown replay.
    pub(super) fn replay_entry(
        &mut self,
        tid: Tid,
        mut regs: libc::user_regs_struct,
    ) -> Result<Option<Outcome>> {
        let Some(rec) = self.rec.as_mut() else {
            return Ok(None);
        };
        let Some(r) = rec.replay.as_mut() else {
            return Ok(None);
        };
        let nr = regs.orig_rax;
        let args = [regs.rdi, regs.rsi, regs.rdx, regs.r10, regs.r8, regs.r9];
        let unconsumed = if r.in_moves {
            None
        } else {
            self.sysbuf_unconsumed()
        };
        let Some(rec) = self.rec.as_mut() else {
            return Ok(None);
        };
        let Some(r) = rec.replay.as_mut() else {
            return Ok(None);
        };
        let why = if let Some(why) = unconsumed {
            Some(why)
        } else if r.in_moves {
            Some(format!(
                "the recording diverged here: system call {nr} where the recording has none"
            ))
        } else {
            match rec.events.get(r.cursor as usize) {
                None => Some(
                    "the replay reached the end of the recording without reaching the present"
                        .to_string(),
                ),
                Some(ev) if ev.thread != r.sched.current => Some(format!(
                    "the recording diverged here: system call {nr} by thread {} where the recording has thread {}",
                    r.sched.current.0, ev.thread.0
                )),
                Some(ev) => {
                    let k = syscalls::compared_args(nr);
                    if ev.nr != nr || ev.args[..k] != args[..k] {
                        Some(format!(
                            "the recording diverged here: system call {nr} {:x?} where the recording has {} {:x?}",
                            &args[..k],
                            ev.nr,
                            &ev.args[..k]
                        ))
                    } else {
                        None
                    }
                }
            }
        };
        if let Some(why) = why {
            tracing::warn!("{why}");
            r.diverged = Some(why);
            // The call must not run: skipped, and the replay stops here.
            regs.orig_rax = u64::MAX;
            let _ = sys::set_regs(tid, &regs);
            return Ok(Some(Outcome::Report(tid, StopReason::Replayed)));
        }
        let ev = &rec.events[r.cursor as usize];
        r.restore = None;
        r.any_result = false;
        r.thread_call = false;
        match syscalls::class(nr, &args) {
            Class::Emulate | Class::Unsupported(_) => {
                r.emulated = true;
                regs.orig_rax = u64::MAX;
                sys::set_regs(tid, &regs).map_err(|e| Error::ptrace("PTRACE_SETREGS", tid, e))?;
            }
            class => {
                r.emulated = false;
                r.thread_call = class == Class::Thread;
                r.any_result = class == Class::RealAnyResult || r.thread_call;
                if nr == syscalls::SYS_MMAP && (ev.result as i64) >= 0 && ev.result != args[0] {
                    r.restore = Some((regs.rdi, regs.r10));
                    regs.rdi = ev.result;
                    regs.r10 |= syscalls::MAP_FIXED;
                    sys::set_regs(tid, &regs)
                        .map_err(|e| Error::ptrace("PTRACE_SETREGS", tid, e))?;
                }
            }
        }
        Ok(None)
    }

    /// A system call's exit in the shown replay: the recorded result and memory.
    pub(super) fn replay_exit(
        &mut self,
        tid: Tid,
        mut regs: libc::user_regs_struct,
    ) -> Result<Option<Outcome>> {
        let Some(rec) = self.rec.as_mut() else {
            return Ok(None);
        };
        let Some(r) = rec.replay.as_mut() else {
            return Ok(None);
        };
        if r.diverged.is_some() {
            return Ok(None);
        }
        let Some(ev) = rec.events.get(r.cursor as usize) else {
            return Ok(None);
        };
        let mut why = None;
        if r.emulated {
            regs.rax = ev.result;
        } else {
            if let Some((rdi, r10)) = r.restore.take() {
                regs.rdi = rdi;
                regs.r10 = r10;
            }
            if !r.any_result && regs.rax != ev.result {
                why = Some(format!(
                    "the recording diverged here: system call {} returned {:#x} where the recording has {:#x}",
                    ev.nr, regs.rax, ev.result
                ));
            }
            regs.rax = ev.result;
        }
        let writes: Vec<(u64, Vec<u8>)> = if r.emulated || r.thread_call {
            ev.writes.clone()
        } else {
            Vec::new()
        };
        let shaped = (!r.emulated).then_some((ev.nr, ev.args, ev.result));
        if let Some(why) = why {
            tracing::warn!("{why}");
            r.diverged = Some(why);
            return Ok(Some(Outcome::Report(tid, StopReason::Replayed)));
        }
        let next = r.cursor + 1;
        let stop = r.stop_at_event == Some(next);
        for (a, b) in &writes {
            self.write_raw(*a, b)?;
        }
        sys::set_regs(tid, &regs).map_err(|e| Error::ptrace("PTRACE_SETREGS", tid, e))?;
        if let Some(t) = self.threads.get_mut(&tid) {
            t.regs = Some(regs);
        }
        if let Some((nr, args, result)) = shaped {
            self.replay_remapped(nr, args, result);
        }
        self.maybe_waypoint(tid, next, stop);
        self.replay_advance(tid)
    }

    /// The recorded event the replay is at.
    pub(super) fn replay_cursor(&self) -> u64 {
        self.rec
            .as_ref()
            .and_then(|r| r.replay.as_ref())
            .map_or(0, |r| r.cursor)
    }

    /// The replay cannot go on: said by the stop it reports.
    pub(super) fn replay_diverged(&mut self, why: &str) {
        tracing::warn!("{why}");
        if let Some(r) = self.replay_mut() {
            r.diverged = Some(why.to_string());
        }
    }

    /// One recorded event was replayed: the position moves on; the replay may have
    /// reached the point it was sent to, or the present (the live process goes on).
    pub(super) fn replay_advance(&mut self, tid: Tid) -> Result<Option<Outcome>> {
        let Some(rec) = self.rec.as_mut() else {
            return Ok(None);
        };
        let Some(r) = rec.replay.as_mut() else {
            return Ok(None);
        };
        r.cursor += 1;
        let cursor = r.cursor;
        if let Err(e) = self.install_interval(cursor) {
            self.replay_diverged(&format!("the recording diverged here: {e}"));
            return Ok(Some(Outcome::Report(tid, StopReason::Replayed)));
        }
        let Some(rec) = self.rec.as_mut() else {
            return Ok(None);
        };
        let Some(r) = rec.replay.as_mut() else {
            return Ok(None);
        };
        // The thread of the next event is the one that runs until it.
        r.sched.current = rec
            .events
            .get(cursor as usize)
            .map_or(r.present_thread, |e| e.thread);
        let tid = r.sched.current_tid().unwrap_or(tid);
        let stop = r.stop_at_event == Some(cursor);
        if stop {
            r.stop_at_event = None;
        }
        let live_event = r.live_pos.event;
        rec.pos = Some(Position {
            event: cursor,
            path: Vec::new(),
        });
        self.plant_preempt_guard();
        if cursor == live_event {
            self.start_follow(Follow::default());
        }
        if stop {
            return Ok(Some(Outcome::Report(tid, StopReason::Replayed)));
        }
        if self.follow_done() {
            // The present is right here: the live process goes on from there, as if
            // the replay had been it.
            self.leave_replay();
            if let Some(rec) = self.rec.as_mut() {
                rec.arrived = true;
            }
            self.continue_all()?;
            return Ok(Some(Outcome::Absorbed));
        }
        Ok(None)
    }
}

impl Tracer {
    /// Replay: the thread to resume after a call's exit stop: the one the recording
    /// ran next.
    pub(super) fn replay_pick(&mut self, tid: Tid) -> Tid {
        self.only_runner().unwrap_or(tid)
    }

    /// Replay: a thread other than the main one died. Its own `exit` is the recorded
    /// event at the cursor; the next thread of the recording runs on. Returns what to
    /// report, if anything.
    pub(super) fn replay_thread_exited(&mut self, tid: Tid, collecting: bool) -> Outcome {
        let Some(i) = self.sched_forget(tid) else {
            return Outcome::Info(Event::ThreadExited { tid });
        };
        let cursor = self.replay_cursor();
        let expected = self
            .rec
            .as_ref()
            .and_then(|r| r.events.get(cursor as usize))
            .is_some_and(|e| e.nr == sched::SYS_EXIT && e.thread == i);
        if !expected {
            self.replay_diverged(
                "the recording diverged here: a thread ended where the recording has it go on",
            );
            return Outcome::Report(self.shown_thread(), StopReason::Replayed);
        }
        match self.replay_advance(tid) {
            Ok(Some(o)) => o,
            Ok(None) => {
                if !collecting {
                    let next = self.shown_thread();
                    self.resume_thread(next);
                }
                Outcome::Info(Event::ThreadExited { tid })
            }
            Err(e) => {
                self.replay_diverged(&format!("the recording diverged here: {e}"));
                Outcome::Report(self.shown_thread(), StopReason::Replayed)
            }
        }
    }
}
