//! Recording: every system call seen at its entry and exit (PTRACE_SYSCALL), its result
//! and the bytes the kernel wrote kept, positions in time, and snapshots made by an
//! injected `fork` (docs/reverse.md).
//!
//! A position is the number of system calls before it plus the moves since the last
//! one: "run to the n-th next execution of this address", "single-step n times". Moves
//! do not depend on which breakpoints are in place, and replay makes them again.

use super::sched::{self, Sched, ThreadIndex};
use super::syscalls::{self, Class};
use super::*;
use std::time::{Duration, Instant};

/// Snapshots are made at a system call's exit when this many calls, or this much time,
/// passed since the last one.
const SNAPSHOT_EVERY_CALLS: u64 = 256;
const SNAPSHOT_EVERY: Duration = Duration::from_millis(200);
/// Flushes of the system-call buffer that count as one call toward a snapshot.
const FLUSHES_PER_CALL: u64 = 4;
/// At most this many snapshots are kept; past it the densest of the older ones are thinned.
const MAX_SNAPSHOTS: usize = 24;
/// The newest snapshots are never thinned: a step back from the present starts near it.
const KEEP_NEWEST: usize = 6;
const CLONE_PARENT: u64 = 0x8000;
/// Snapshots and waypoints are not made while the machine has less than this share of
/// its memory available (a program that rewrites a big heap between two snapshots
/// makes each one hold a copy of it); `TANDEM_SNAPSHOT_MIN_AVAILABLE_MB` sets the
/// floor in MiB instead.
const MIN_AVAILABLE_SHARE: u64 = 8;

/// Thins one snapshot where they are densest: of the older ones (the first and the
/// newest [`KEEP_NEWEST`] excepted) the one whose neighbours are closest goes, so the
/// past keeps snapshots evenly spread — a search far back replays one gap, not the
/// whole recording (an earlier rule, every other one of the older half, emptied
/// everything between the first and the newest dozen).
fn thin_one(rec: &mut Recorder) {
    let n = rec.snapshots.len();
    let victim = (1..n.saturating_sub(KEEP_NEWEST))
        .min_by_key(|&i| rec.snapshots[i + 1].event - rec.snapshots[i - 1].event);
    if let Some(i) = victim {
        kill_stopped(rec.snapshots.remove(i).pid);
    }
}

/// Whether memory is too short for another snapshot or waypoint (see
/// [`MIN_AVAILABLE_SHARE`]).
pub(super) fn memory_short() -> bool {
    let Some((total, available)) = procfs::memory() else {
        return false;
    };
    let floor = std::env::var("TANDEM_SNAPSHOT_MIN_AVAILABLE_MB")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(total / MIN_AVAILABLE_SHARE, |mb| mb.saturating_mul(1 << 20));
    available < floor
}

/// One move from a position to a later one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Move {
    /// Run until the `count`-th trap at `addr` (its breakpoint in place meanwhile).
    Trap {
        /// The breakpoint's address.
        addr: RuntimeAddr,
        /// How many traps there.
        count: u64,
    },
    /// Single-step `count` instructions.
    Step {
        /// How many.
        count: u64,
    },
}

/// A point in a recording: `event` system calls happened before it, then `path`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Position {
    /// System calls completed before this point.
    pub event: u64,
    /// The moves since the last of them.
    pub path: Vec<Move>,
}

impl Position {
    pub(super) fn push(&mut self, m: Move) {
        match (self.path.last_mut(), m) {
            (Some(Move::Trap { addr, count }), Move::Trap { addr: a, count: c }) if *addr == a => {
                *count += c
            }
            (Some(Move::Step { count }), Move::Step { count: c }) => *count += c,
            _ => self.path.push(m),
        }
    }

    /// Whether `self` is `other` or a point on the way to it within the same interval
    /// between system calls (a prefix of its moves, the last one partly made).
    pub fn leads_to(&self, other: &Position) -> bool {
        if self.event != other.event {
            return self.event < other.event;
        }
        if self.path.len() > other.path.len() {
            return false;
        }
        let n = self.path.len();
        if n == 0 {
            return true;
        }
        if self.path[..n - 1] != other.path[..n - 1] {
            return false;
        }
        match (self.path[n - 1], other.path[n - 1]) {
            (Move::Trap { addr, count }, Move::Trap { addr: a, count: c }) => {
                addr == a && count <= c
            }
            (Move::Step { count }, Move::Step { count: c }) => count <= c,
            _ => false,
        }
    }
}

/// What the recording holds, for the engine and the user.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordingInfo {
    /// System calls recorded with a stop each (the log's events; rdtsc's too).
    pub events: u64,
    /// System calls recorded inside the program, without a stop (docs/reverse.md).
    pub buffered: u64,
    /// Snapshots kept, and the event count each was taken at.
    pub snapshots: Vec<u64>,
    /// Where the shown process is.
    pub position: Option<Position>,
    /// Where the live process is (the end of the recording).
    pub present: Option<Position>,
    /// Whether the shown process is a replay (not the live one).
    pub replaying: bool,
    /// Why recording ended, when it did.
    pub ended: Option<String>,
    /// Why the last replay stopped by itself ("the recording diverged here ...").
    pub diverged: Option<String>,
}

/// One recorded system call.
#[derive(Clone, Debug)]
pub(super) struct SysRecord {
    /// The thread that made it (and ran until it).
    pub thread: ThreadIndex,
    pub nr: u64,
    pub args: [u64; 6],
    pub result: u64,
    /// What the kernel (may have) written, read right after the call.
    pub writes: Vec<(u64, Vec<u8>)>,
    /// A preemption: the registers the thread had where it was interrupted.
    pub regs: Option<Box<sched::RegsKey>>,
    /// The calls buffered inside the program since the event before, and the code the
    /// buffer wrote meanwhile (sysbuf.rs); a replay installs them entering the interval.
    pub interval: Option<Box<sysbuf::Interval>>,
}

/// A copy-on-write fork of the debuggee, stopped, made after `event` system calls. The
/// process has one thread (a fork copies only the thread that makes it): the program's
/// other threads are kept as saved states and re-created in every replay of it.
#[derive(Clone, Debug)]
pub(super) struct Snapshot {
    pub pid: Pid,
    pub event: u64,
    /// The thread index the process's one thread is.
    pub main: ThreadIndex,
    /// Its emulated futex wait, when it was parked: the event whose result it gets.
    pub main_park: Option<usize>,
    pub threads: Vec<sched::SavedThread>,
}

pub(super) struct Recorder {
    pub events: Vec<SysRecord>,
    pub snapshots: Vec<Snapshot>,
    /// Snapshots replays left behind, by event (`waypoints.rs`), and the order they
    /// were made in (the first made goes first).
    pub waypoints: Vec<Snapshot>,
    pub waypoint_order: Vec<u64>,
    /// The shown process's position; `None` while it is not known exactly (after a
    /// pause, a watchpoint or a signal, until the next system call).
    pub pos: Option<Position>,
    /// The system call between its entry and exit stops.
    pub entry: Option<(u64, [u64; 6])>,
    pub since_snapshot: u64,
    pub last_snapshot: Instant,
    pub replay: Option<replay::Replay>,
    /// The live process came back while a replay ran forward: the event being
    /// reported is about it.
    pub arrived: bool,
    /// The stop being reported is a replay's arrival at the present: a breakpoint hit
    /// there is the live process's, counted when it happened.
    pub at_present: bool,
    /// The step being reported ended at a system call's exit: its position is that
    /// call's boundary, no move after it.
    pub syscall_stepped: bool,
    /// The live process's threads and which one runs.
    pub sched: Sched,
    /// The time slice's timer (made when a second thread appears).
    pub timer: Option<sys::ThreadTimer>,
    /// When the armed timer fires.
    pub armed: Option<Instant>,
    /// The last exact position before `pos` became unknown (a watchpoint, a signal):
    /// what a scan of the past, or the search for a fault's point, starts from.
    pub last_known: Option<Position>,
    /// How the live process stopped when its position was found after the fact (a
    /// fault, [`Tracer::locate_fault`]): a replay arriving there reports this stop.
    pub present_stop: Option<StopReason>,
    /// Memory was found short for snapshots once (said in the log once).
    pub memory_warned: bool,
    /// The instructions the live program faulted at (its own SIGFPE, SIGSEGV, ... that
    /// a handler took). Every fault of the past was a live fault first, so a replay
    /// with an int3 on each of them has an exact position after one too: its arrival
    /// there is a move, and the fault is no move ([`Tracer::note_stop`]).
    pub fault_sites: Vec<RuntimeAddr>,
    /// The live process stopped at a fault (its instruction and the stop), until it
    /// is resumed: its position is found then ([`Tracer::settle_live_fault`]).
    pub live_fault: Option<(RuntimeAddr, StopReason)>,
    /// The present's interval (after the last event) as the live process had it when
    /// a replay began: what a replay installs when it gets there.
    pub tail: sysbuf::Interval,
    /// Calls buffered in the program so far (the intervals' calls).
    pub buffered: u64,
    /// Flush events so far.
    pub flushes: u64,
}

/// An interval worth keeping (most events of a program that buffers nothing have none).
pub(super) fn boxed(i: sysbuf::Interval) -> Option<Box<sysbuf::Interval>> {
    (!i.is_empty()).then(|| Box::new(i))
}

impl Recorder {
    /// Counts an interval's buffered calls and keeps it for the event that ends it.
    pub(super) fn interval(&mut self, i: sysbuf::Interval) -> Option<Box<sysbuf::Interval>> {
        self.buffered += i.count();
        boxed(i)
    }

    /// Appends an event of the running thread to the log, with the calls buffered since
    /// the event before (`interval`); the present is right after it. What else the
    /// caller knows of it (`writes`, `regs`) goes into the record returned.
    pub(super) fn log(
        &mut self,
        nr: u64,
        args: [u64; 6],
        result: u64,
        interval: sysbuf::Interval,
    ) -> &mut SysRecord {
        let interval = self.interval(interval);
        self.events.push(SysRecord {
            thread: self.sched.current,
            nr,
            args,
            result,
            writes: Vec::new(),
            regs: None,
            interval,
        });
        self.pos = Some(Position {
            event: self.events.len() as u64,
            path: Vec::new(),
        });
        let at = self.events.len() - 1;
        &mut self.events[at]
    }
}

fn is_restart(ret: u64) -> bool {
    (512..=516).contains(&(ret as i64).wrapping_neg())
}

impl Tracer {
    /// Starts recording a stopped process: its time functions become system calls
    /// (vDSO), every resume traces system calls, and a first snapshot is made.
    pub(super) fn start_recording(&mut self) -> Result<()> {
        self.require_stopped()?;
        if self.threads.len() != 1 {
            return Err(Error::Placement(
                "multi-threaded recording is not supported yet".into(),
            ));
        }
        let tid = Tid(self.pid.0);
        sys::set_options(
            tid,
            base_options() | libc::PTRACE_O_EXITKILL | libc::PTRACE_O_TRACESYSGOOD,
        )
        .map_err(|e| Error::ptrace("PTRACE_SETOPTIONS", tid, e))?;
        let patched = self.patch_vdso()?;
        tracing::debug!(patched, "vdso entry points made into system calls");
        self.pin = pin::Pin::new();
        for t in self.threads.values_mut() {
            t.sysgood = true;
        }
        self.rec = Some(Box::new(Recorder {
            events: Vec::new(),
            snapshots: Vec::new(),
            waypoints: Vec::new(),
            waypoint_order: Vec::new(),
            pos: Some(Position::default()),
            entry: None,
            since_snapshot: 0,
            last_snapshot: Instant::now(),
            replay: None,
            arrived: false,
            at_present: false,
            syscall_stepped: false,
            sched: Sched::new(tid),
            timer: None,
            armed: None,
            last_known: None,
            present_stop: None,
            memory_warned: false,
            fault_sites: Vec::new(),
            live_fault: None,
            tail: sysbuf::Interval::default(),
            buffered: 0,
            flushes: 0,
        }));
        // Stopped inside execve (its exec event): the first snapshot is made at its
        // exit, the first system-call boundary.
        for t in self.threads.values_mut() {
            t.in_syscall = true;
        }
        Ok(())
    }

    /// Whether this tracer records (and so can go back).
    pub fn is_recording(&self) -> bool {
        self.rec.is_some()
    }

    /// What the recording holds; `None` when the process was never recorded.
    pub fn recording(&self) -> Option<RecordingInfo> {
        if self.rec.is_none() && self.rec_ended.is_none() {
            return None;
        }
        let Some(rec) = &self.rec else {
            return Some(RecordingInfo {
                ended: self.rec_ended.clone(),
                diverged: self.rec_diverged.clone(),
                ..RecordingInfo::default()
            });
        };
        let present = match &rec.replay {
            Some(r) => Some(r.live_pos.clone()),
            None => rec.pos.clone(),
        };
        Some(RecordingInfo {
            events: rec.events.len() as u64,
            buffered: rec.buffered,
            snapshots: rec.snapshots.iter().map(|s| s.event).collect(),
            position: rec.pos.clone(),
            present,
            replaying: rec.replay.is_some(),
            ended: self.rec_ended.clone(),
            diverged: rec
                .replay
                .as_ref()
                .and_then(|r| r.diverged.clone())
                .or_else(|| self.rec_diverged.clone()),
        })
    }

    /// Why the recording ended, once it did.
    pub fn recording_ended(&self) -> Option<&str> {
        self.rec_ended.as_deref()
    }

    /// The position of the shown process, when known exactly.
    pub fn position(&self) -> Option<Position> {
        self.rec.as_ref()?.pos.clone()
    }

    /// Ends the recording (the program goes on live, unharmed): snapshots killed, a
    /// replay given up for the live process, system calls no longer traced.
    pub(super) fn end_recording(&mut self, why: String) {
        tracing::info!("{why}");
        if self.rec.as_ref().is_some_and(|r| r.replay.is_some()) {
            // Only a live process may end a recording: a replay never goes past it.
            tracing::warn!("the recording ended during a replay");
        }
        self.sysbuf_stop();
        self.unpin();
        let rec = self.rec.take();
        for t in self.threads.values_mut() {
            t.sysgood = false;
            t.in_syscall = false;
        }
        if let Some(rec) = rec {
            for s in rec.snapshots.iter().chain(&rec.waypoints) {
                kill_stopped(s.pid);
            }
            self.release_threads(rec.sched);
        }
        self.rec_ended = Some(why);
    }

    /// Notes a stop the tracer reports in the position of the shown process.
    pub(super) fn note_stop(&mut self, tid: Tid, reason: &StopReason) {
        let fault_pc = match reason {
            StopReason::Signal { .. } if self.rec.is_some() => {
                self.regs(tid).ok().map(|r| RuntimeAddr(r.pc()))
            }
            _ => None,
        };
        let Some(rec) = self.rec.as_mut() else {
            return;
        };
        rec.at_present = false;
        if rec.replay.is_none() && !rec.arrived {
            rec.present_stop = None;
        }
        let m = match reason {
            StopReason::Breakpoint { addr } => Some(Move::Trap {
                addr: *addr,
                count: 1,
            }),
            StopReason::Step if std::mem::take(&mut rec.syscall_stepped) => None,
            StopReason::Step => Some(Move::Step { count: 1 }),
            StopReason::Replayed | StopReason::Entry => None,
            // A fault right after the arrival at its instruction (an int3 of a known
            // fault site, stepped over): the instruction did not run, so the state is
            // that arrival's and the position holds. The handler's run from here is
            // made again by replaying the same moves.
            StopReason::Signal { .. }
                if rec.pos.as_ref().is_some_and(|p| {
                    matches!(p.path.last(), Some(Move::Trap { addr, .. })
                        if Some(*addr) == fault_pc && rec.fault_sites.contains(addr))
                }) =>
            {
                None
            }
            _ => {
                // A pause, a watchpoint, a signal: where it happened is not a move
                // that can be made again.
                if rec.pos.is_some() {
                    rec.last_known = rec.pos.take();
                }
                None
            }
        };
        let live = rec.replay.is_none();
        if let (Some(m), Some(pos)) = (m, rec.pos.as_mut()) {
            pos.push(m);
        }
        if rec.replay.is_some() {
            self.replay_noted(tid, reason);
        }
        if live {
            // The handler traps at the next call, an event: a position lost here (a
            // pause) is exact again there, and the moves since the last event stay
            // those made since the last stop, as when every call was an event (short:
            // a seek into the present's interval makes them, and the follow of the
            // live moves counts fewer arrivals on the way).
            self.sysbuf_force();
        }
    }

    /// A system-call stop (entry or exit) of a recorded thread.
    pub(super) fn syscall_stop(&mut self, tid: Tid, collecting: bool) -> Result<Outcome> {
        let Some(t) = self.threads.get_mut(&tid) else {
            return Ok(Outcome::Absorbed);
        };
        let entering = !t.in_syscall;
        t.in_syscall = entering;
        let step = !entering && std::mem::take(&mut t.syscall_step);
        let mut outcome = None;
        let mut recorded = false;
        if self.rec.is_some() {
            let regs = sys::get_regs(tid).map_err(|e| Error::ptrace("PTRACE_GETREGS", tid, e))?;
            if let Some(t) = self.threads.get_mut(&tid) {
                t.regs = Some(regs);
            }
            outcome = if self.rec.as_ref().is_some_and(|r| r.replay.is_some()) {
                if entering {
                    self.replay_entry(tid, regs)?
                } else {
                    self.replay_exit(tid, regs)?
                }
            } else if entering {
                if let Some(rec) = self.rec.as_mut() {
                    rec.sched.entered_at = Some(Instant::now());
                }
                self.record_entry(tid, regs);
                None
            } else {
                if let Some(rec) = self.rec.as_mut() {
                    rec.sched.entered_at = None;
                }
                recorded = self.record_exit(tid, regs)?;
                self.sysbuf_after_exit(tid);
                None
            };
        }
        if let Some(o) = outcome {
            return Ok(o);
        }
        if self.pause_requested && !collecting {
            // The stop consumed the pause's interrupt. A pause shows a system-call
            // boundary: from an entry stop the call goes on, interrupted again (a
            // blocking call returns to be restarted), and its exit stop is the pause.
            if entering {
                self.resume_thread(tid);
                if sys::interrupt(tid).is_ok() {
                    if let Some(t) = self.threads.get_mut(&tid) {
                        t.interrupt_sent = true;
                    }
                }
                return Ok(Outcome::Absorbed);
            }
            if let Some(t) = self.threads.get_mut(&tid) {
                t.stepping = false;
            }
            return Ok(Outcome::Report(tid, StopReason::Paused));
        }
        if step {
            if !collecting && self.sysbuf_step_on(tid) {
                return Ok(Outcome::Absorbed);
            }
            let o = self.step_done(tid);
            if matches!(o, Outcome::Report(_, StopReason::Step)) {
                if let Some(rec) = self.rec.as_mut() {
                    rec.syscall_stepped = true;
                }
            }
            return Ok(o);
        }
        // After a call's exit the schedule may give the processor to another thread.
        let next = if entering {
            tid
        } else if self.is_replaying() {
            self.replay_pick(tid)
        } else if self.rec.is_some() && recorded {
            self.sched_pick(tid)
        } else {
            tid
        };
        if !collecting {
            self.resume_thread(next);
        }
        Ok(Outcome::Absorbed)
    }

    fn record_entry(&mut self, tid: Tid, mut regs: libc::user_regs_struct) {
        let nr = regs.orig_rax;
        let args = [regs.rdi, regs.rsi, regs.rdx, regs.r10, regs.r8, regs.r9];
        match self.sched_entry(tid, &mut regs) {
            Err(why) => {
                return self.end_recording(format!(
                    "recording stopped at system call {nr}: {why}; the program goes on live"
                ))
            }
            Ok(true) => {
                if let Some(rec) = self.rec.as_mut() {
                    rec.entry = Some((nr, args));
                }
                return;
            }
            Ok(false) => {}
        }
        match syscalls::class(nr, &args) {
            Class::Unsupported(why) => self.end_recording(format!(
                "recording stopped at system call {nr}: {why}; the program goes on live"
            )),
            _ => {
                if let Some(rec) = self.rec.as_mut() {
                    rec.entry = Some((nr, args));
                }
            }
        }
    }

    fn record_exit(&mut self, tid: Tid, regs: libc::user_regs_struct) -> Result<bool> {
        let Some((nr, args)) = self.rec.as_mut().and_then(|r| r.entry.take()) else {
            if self.rec.as_ref().is_some_and(|r| r.snapshots.is_empty()) {
                // The first boundary: rdtsc faults from here on (snapshots inherit it).
                if let Err(e) = self.trap_tsc() {
                    self.end_recording(format!("recording stopped: {e}"));
                    return Ok(false);
                }
                if let Err(e) = self.sysbuf_start() {
                    tracing::warn!("system calls are not buffered: {e}");
                }
                self.take_snapshot()?;
            }
            return Ok(false);
        };
        let mut regs = regs;
        if nr == sched::SYS_FUTEX {
            let event = self.rec.as_ref().map_or(0, |r| r.events.len());
            if let Some(r) = self.sched_futex_exit(tid, &mut regs, event) {
                regs.rax = r;
            }
        }
        let result = regs.rax;
        if is_restart(result) {
            // Interrupted (a pause): the kernel runs the same call again on resume.
            return Ok(false);
        }
        let read_u64 = |a: u64| sys::peek_word(tid, a).ok();
        let regions = syscalls::written(nr, &args, result, &read_u64);
        let mut writes = Vec::with_capacity(regions.len());
        for (addr, len) in regions {
            let mut buf = vec![0u8; len as usize];
            match self.read_raw(addr, &mut buf) {
                Ok(n) => {
                    buf.truncate(n);
                    writes.push((addr, buf));
                }
                Err(e) => tracing::debug!(nr, addr, "bytes a system call wrote: {e}"),
            }
        }
        let interval = self.sysbuf_take();
        let Some(rec) = self.rec.as_mut() else {
            return Ok(false);
        };
        rec.log(nr, args, result, interval).writes = writes;
        rec.since_snapshot += 1;
        self.snapshot_if_due();
        Ok(true)
    }

    /// The handler's flush trap while recording: the buffered calls since the last event
    /// are an event of their own (an exact position; maybe a snapshot).
    pub(super) fn record_flush(&mut self) -> Result<()> {
        let interval = self.sysbuf_take();
        let Some(rec) = self.rec.as_mut() else {
            return Ok(());
        };
        rec.log(sysbuf::FLUSH_EVENT, [0; 6], 0, interval);
        // A flush is a boundary, not a call a replay makes with two stops: a replay
        // passes runs of them at once. Counted as a quarter of one, so snapshots come
        // every few tens of thousands of buffered calls (forks cost more than that).
        rec.flushes += 1;
        if rec.flushes % FLUSHES_PER_CALL == 0 {
            rec.since_snapshot += 1;
        }
        self.snapshot_if_due();
        Ok(())
    }

    /// A snapshot when enough calls or time went by since the last one.
    fn snapshot_if_due(&mut self) {
        let due = self.rec.as_ref().is_some_and(|rec| {
            rec.since_snapshot >= SNAPSHOT_EVERY_CALLS
                || rec.last_snapshot.elapsed() >= SNAPSHOT_EVERY
        });
        if due {
            if let Err(e) = self.take_snapshot() {
                tracing::warn!("a snapshot failed: {e}");
            }
        }
    }

    /// A thread other than the main one died while recording. When it ended by its own
    /// `exit` (the current thread) that is an event of the log, and the next thread
    /// runs; threads killed by an `exit_group` are just gone.
    pub(super) fn record_thread_exit(&mut self, tid: Tid, collecting: bool) -> Option<Outcome> {
        let interval = self.sysbuf_take();
        let rec = self.rec.as_mut()?;
        let current = rec.sched.current_tid() == Some(tid);
        let (nr, args) = match rec.entry {
            Some((nr, args)) if current && nr == sched::SYS_EXIT => (nr, args),
            _ => {
                self.sched_forget(tid);
                return None;
            }
        };
        rec.entry = None;
        rec.log(nr, args, 0, interval);
        let next = self.sched_thread_exited(tid);
        if let (Some(next), false) = (next, collecting) {
            if self.rec.is_some() {
                self.resume_thread(next);
            }
        }
        Some(Outcome::Info(Event::ThreadExited { tid }))
    }

    /// Makes a snapshot of the stopped, recorded process at a system-call boundary.
    pub(super) fn take_snapshot(&mut self) -> Result<()> {
        let event = match self.rec.as_ref().and_then(|r| r.pos.as_ref()) {
            Some(p) if p.path.is_empty() => p.event,
            _ => return Ok(()),
        };
        if self.rec.as_ref().is_some_and(|r| !r.snapshots.is_empty()) && memory_short() {
            self.shed_snapshots();
            return Ok(());
        }
        // A fork copies only the thread that makes it: the others are saved.
        let injector = self
            .injection_thread()
            .ok_or_else(|| Error::Placement("no stopped thread to fork".into()))?;
        let Some((main, main_park, threads)) = self.save_threads(injector) else {
            return Ok(());
        };
        let child = self.fork_copy()?;
        let Some(rec) = self.rec.as_mut() else {
            kill_stopped(child);
            return Ok(());
        };
        rec.snapshots.push(Snapshot {
            pid: child,
            event,
            main,
            main_park,
            threads,
        });
        rec.since_snapshot = 0;
        rec.last_snapshot = Instant::now();
        if rec.snapshots.len() > MAX_SNAPSHOTS {
            thin_one(rec);
        }
        tracing::debug!(pid = child.0, event, "snapshot");
        Ok(())
    }

    /// Memory is short: no snapshot is made, every waypoint goes (a replay makes them
    /// again) and so does one of the older snapshots (never the first: the recording's
    /// start stays reachable). Going back replays longer stretches; nothing is lost.
    fn shed_snapshots(&mut self) {
        let Some(rec) = self.rec.as_mut() else {
            return;
        };
        // Asked again at the next snapshot's time, not at every call.
        rec.since_snapshot = 0;
        rec.last_snapshot = Instant::now();
        if !rec.memory_warned {
            rec.memory_warned = true;
            tracing::warn!(
                "memory is short: snapshots are thinned and no new one is made until it is not"
            );
        }
        for w in rec.waypoints.drain(..) {
            kill_stopped(w.pid);
        }
        rec.waypoint_order.clear();
        if rec.snapshots.len() > KEEP_NEWEST + 1 {
            thin_one(rec);
        }
    }

    /// Forks the stopped process by an injected raw `clone` (never the program's
    /// `fork()`: no atfork handlers run; `CLONE_PARENT` without an exit signal, so the
    /// copy is the tracer's child, not the program's) and returns the child, stopped,
    /// traced by this thread, its registers those of the parent, every int3 and the injected
    /// instruction taken out of its memory. It never runs until a replay uses it.
    pub(super) fn fork_copy(&mut self) -> Result<Pid> {
        let tid = self
            .injection_thread()
            .ok_or_else(|| Error::Placement("no stopped thread to fork".into()))?;
        let saved = sys::get_regs(tid).map_err(|e| Error::ptrace("PTRACE_GETREGS", tid, e))?;
        let at = saved.rip;
        let mut text = [0u8; 2];
        if self.read_raw(at, &mut text)? < 2 {
            return Err(Error::Placement("no code to run a system call at".into()));
        }
        // clone(CLONE_PARENT) with no exit signal: a fork whose parent is the tracer's
        // (the debuggee gets no SIGCHLD, no zombie and no child to wait for).
        let mut child = None;
        let ret = self.inject_syscall_on(
            tid,
            at,
            syscalls::SYS_CLONE,
            [CLONE_PARENT, 0, 0, 0, 0, 0],
            &mut |event, msg| {
                if matches!(event, libc::PTRACE_EVENT_FORK | libc::PTRACE_EVENT_CLONE) {
                    child = Some(Pid(msg as i32));
                }
            },
        )?;
        let child = match child {
            Some(c) if c.0 > 0 => c,
            _ => {
                return Err(Error::Placement(format!(
                    "the injected fork failed ({})",
                    ret as i64
                )))
            }
        };
        // Its first stop (auto-attached).
        loop {
            match sys::wait(child.0, false, false) {
                Ok(Some(w)) if matches!(sys::decode(w.status), Status::Stopped(..)) => break,
                Ok(Some(_)) => return Err(Error::Exited),
                Ok(None) => continue,
                Err(e) => return Err(Error::ptrace("waitpid", Tid(child.0), e)),
            }
        }
        let ctid = Tid(child.0);
        let clean = (|| -> Result<()> {
            let mem = open_mem(child).ok_or(Error::Exited)?;
            let mut bytes: Vec<(u64, Vec<u8>)> = self.original_bytes();
            bytes.push((at, text.to_vec()));
            for (a, b) in &bytes {
                mem.write_at(b, *a).map_err(|source| Error::Memory {
                    addr: RuntimeAddr(*a),
                    len: b.len(),
                    source,
                })?;
            }
            let mut regs = saved;
            regs.orig_rax = u64::MAX;
            sys::set_regs(ctid, &regs).map_err(|e| Error::ptrace("PTRACE_SETREGS", ctid, e))?;
            Ok(())
        })();
        if let Err(e) = clean {
            kill_stopped(child);
            return Err(e);
        }
        Ok(child)
    }

    /// Kills every snapshot and a replay's process (the session ends).
    pub(super) fn drop_recording(&mut self) {
        self.unpin();
        if self.rec.as_ref().is_some_and(|r| r.replay.is_some()) {
            self.leave_replay();
        }
        if let Some(rec) = self.rec.take() {
            for s in rec.snapshots.iter().chain(&rec.waypoints) {
                kill_stopped(s.pid);
            }
            // A detach must not leave a parked thread to return -ENOSYS from its
            // skipped futex call: it makes the wait again.
            self.release_threads(rec.sched);
        }
    }
}

/// Kills a stopped process this thread traces whose threads are `tids` (a replay of a
/// multi-threaded stretch) and reaps every one: a traced thread's exit is reported to
/// the tracer, and the main thread's only after the others were reaped.
pub(super) fn kill_process(pid: Pid, tids: &[Tid]) {
    let _ = sys::kill(pid.0, libc::SIGKILL);
    for t in tids.iter().filter(|t| t.0 != pid.0) {
        loop {
            match sys::wait(t.0, false, false) {
                Ok(Some(w)) => {
                    if matches!(
                        sys::decode(w.status),
                        Status::Exited(_) | Status::Signaled(..)
                    ) {
                        break;
                    }
                }
                Ok(None) => continue,
                Err(_) => break,
            }
        }
    }
    kill_stopped(pid);
}

/// Kills a stopped process this thread traces (a snapshot, a replay) and reaps it.
pub(super) fn kill_stopped(pid: Pid) {
    let _ = sys::kill(pid.0, libc::SIGKILL);
    loop {
        match sys::wait(pid.0, false, false) {
            Ok(Some(w)) => {
                if matches!(
                    sys::decode(w.status),
                    Status::Exited(_) | Status::Signaled(..)
                ) {
                    return;
                }
                let _ = sys::cont(w.tid, 0);
            }
            Ok(None) => continue,
            Err(_) => return,
        }
    }
}
