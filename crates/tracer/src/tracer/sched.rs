//! Threads while recording and replaying: one thread runs at a time, as rr does
//! (docs/reverse.md, "Threads"). The other threads wait in ptrace stops; futex calls
//! are emulated by the tracer (a wait that would block parks its thread, a wake
//! unparks), so no thread ever waits inside the kernel, the order in which threads run
//! is the tracer's choice, and the recording's interleaved log of system calls, each
//! tagged by a thread index stable across record and replay, is the schedule a replay
//! follows exactly.

use super::*;
use std::time::{Duration, Instant};

pub(super) const SYS_FUTEX: u64 = 202;
pub(super) const SYS_EXIT: u64 = 60;
pub(super) const SYS_CLONE3: u64 = 435;
const SYS_SET_TID_ADDRESS: u64 = 218;
pub(super) const CLONE_VM: u64 = 0x100;
pub(super) const CLONE_THREAD: u64 = 0x10000;
pub(super) const CLONE_CHILD_CLEARTID: u64 = 0x20_0000;
const FUTEX_WAIT: u64 = 0;
const FUTEX_WAKE: u64 = 1;
const FUTEX_WAIT_BITSET: u64 = 9;
const FUTEX_WAKE_BITSET: u64 = 10;
/// FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME: neither changes what an emulated call does.
const FUTEX_CMD_MASK: u64 = !(128 | 256);
const EAGAIN: u64 = (-11i64) as u64;
const SYS_SCHED_YIELD: u64 = 24;
const SYS_NANOSLEEP: u64 = 35;
const SYS_CLOCK_NANOSLEEP: u64 = 230;
/// The event number of a preemption (no system call has it).
pub(super) const PREEMPT_EVENT: u64 = 1 << 33;
/// How long a thread runs while others could before it is preempted.
const SLICE: Duration = Duration::from_millis(30);
/// How many times a replay passes a preemption point's pc with other registers before
/// it gives up (each pass is a trap and a step: a tight loop that ran a whole slice
/// is millions of passes; without a branch counter it cannot be skipped).
const MAX_GUARD_PASSES: u64 = 20_000;
/// How long the running thread may stay inside one system call while others could run
/// before the recording ends (a call only another thread of the program could end
/// would otherwise wait forever: only futex waits give the processor away).
const BLOCK_LIMIT: Duration = Duration::from_secs(1);

/// What identifies a thread's state at a preemption point: its general registers (the
/// flags only as far as instructions set them).
pub(super) type RegsKey = [u64; 19];

pub(super) fn regs_key(r: &libc::user_regs_struct) -> RegsKey {
    [
        r.r15,
        r.r14,
        r.r13,
        r.r12,
        r.rbp,
        r.rbx,
        r.r11,
        r.r10,
        r.r9,
        r.r8,
        r.rax,
        r.rcx,
        r.rdx,
        r.rsi,
        r.rdi,
        r.rip,
        r.rsp,
        r.eflags & 0xcd5,
        r.fs_base,
    ]
}

/// The key of a preemption point; at a site the system-call buffer patched (the thread
/// preempted in the handler, put back before the site) rcx and r11 are left out: they
/// are the handler's there, dead in the program before its `syscall`.
fn preempt_key(r: &libc::user_regs_struct, at_site: bool) -> RegsKey {
    let mut k = regs_key(r);
    if at_site {
        k[6] = 0;
        k[11] = 0;
    }
    k
}

/// A thread's place in the order of creation (0 is the main thread): the same thread
/// has the same index in the recording and in every replay, whatever its kernel id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(super) struct ThreadIndex(pub u32);

impl ThreadIndex {
    fn at(self) -> usize {
        self.0 as usize
    }
}

/// A thread parked in an emulated futex wait (recording only).
#[derive(Clone, Copy, Debug)]
struct Waiter {
    thread: ThreadIndex,
    uaddr: u64,
    bitset: u32,
    /// The recorded event of its wait, whose result is known when it is woken.
    event: usize,
}

/// What an emulated futex call does, decided at its entry.
#[derive(Clone, Copy, Debug)]
pub(super) enum Futex {
    /// Returns this without waiting.
    Result(u64),
    /// Parks the thread on `uaddr` until a wake.
    Park { uaddr: u64, bitset: u32 },
}

/// The threads of one process (the live one, or a replay) and which of them runs.
#[derive(Clone, Debug)]
pub(super) struct Sched {
    /// Index → kernel id; `None` once the thread exited.
    tids: Vec<Option<Tid>>,
    /// The thread that runs (the only one resumed).
    pub current: ThreadIndex,
    /// Index → the address its exit clears and wakes (CLONE_CHILD_CLEARTID,
    /// set_tid_address); recording only.
    clear_tid: Vec<u64>,
    waiters: Vec<Waiter>,
    /// The futex call of the current thread between its entry and exit stops.
    pub futex: Option<Futex>,
    /// The clear-tid address of the thread a clone between its entry and exit makes.
    pub clone_clear_tid: u64,
    /// When the current thread got the processor.
    slice_from: Instant,
    /// Recording: the current thread was interrupted to be preempted.
    preempting: Option<Tid>,
    /// Recording: when the current thread entered the system call it is in.
    pub entered_at: Option<Instant>,
    /// Replay: the int3 that finds the next preemption point, and how often it was
    /// passed.
    pub preempt_guard: Option<u64>,
    guard_passes: u64,
}

/// A thread of the program other than the one a snapshot's fork copied: what a replay
/// of the snapshot re-creates it from.
#[derive(Clone, Debug)]
pub(super) struct SavedThread {
    index: ThreadIndex,
    regs: libc::user_regs_struct,
    /// Its extended state (NT_X86_XSTATE: x87, SSE, AVX, ...).
    xstate: Vec<u8>,
    sigmask: u64,
    clear_tid: u64,
    /// Parked in an emulated futex wait: the event whose result it gets.
    park: Option<usize>,
}

const NT_X86_XSTATE: u32 = 0x202;

impl Sched {
    /// The threads of a replay made from a snapshot: index and kernel id of each.
    pub(super) fn with_threads(threads: &[(ThreadIndex, Tid)]) -> Sched {
        let n = threads.iter().map(|(i, _)| i.at() + 1).max().unwrap_or(1);
        let mut s = Sched::new(Tid(0));
        s.tids = vec![None; n];
        s.clear_tid = vec![0; n];
        for (i, t) in threads {
            s.tids[i.at()] = Some(*t);
        }
        s
    }

    fn park_event(&self, i: ThreadIndex) -> Option<usize> {
        self.waiters.iter().find(|w| w.thread == i).map(|w| w.event)
    }

    pub(super) fn new(leader: Tid) -> Sched {
        Sched {
            tids: vec![Some(leader)],
            current: ThreadIndex(0),
            clear_tid: vec![0],
            waiters: Vec::new(),
            futex: None,
            clone_clear_tid: 0,
            slice_from: Instant::now(),
            preempting: None,
            entered_at: None,
            preempt_guard: None,
            guard_passes: 0,
        }
    }

    /// Live threads.
    pub(super) fn live(&self) -> usize {
        self.tids.iter().flatten().count()
    }

    pub(super) fn tid(&self, i: ThreadIndex) -> Option<Tid> {
        self.tids.get(i.at()).copied().flatten()
    }

    pub(super) fn index_of(&self, tid: Tid) -> Option<ThreadIndex> {
        self.tids
            .iter()
            .position(|t| *t == Some(tid))
            .map(|i| ThreadIndex(i as u32))
    }

    pub(super) fn current_tid(&self) -> Option<Tid> {
        self.tid(self.current)
    }

    fn parked(&self, i: ThreadIndex) -> bool {
        self.waiters.iter().any(|w| w.thread == i)
    }

    /// Gives the processor to thread `i`.
    fn switch_to(&mut self, i: ThreadIndex) {
        tracing::trace!(from = self.current.0, to = i.0, "switch");
        self.current = i;
        self.slice_from = Instant::now();
        self.preempting = None;
    }

    /// The next thread able to run after the current one, round robin.
    pub(super) fn next_runnable(&self) -> Option<ThreadIndex> {
        let n = self.tids.len();
        (1..=n)
            .map(|k| ThreadIndex(((self.current.at() + k) % n) as u32))
            .find(|i| self.tid(*i).is_some() && !self.parked(*i))
    }
}

impl Tracer {
    /// The scheduler of the shown process (the replay's while one is shown).
    pub(super) fn sched(&self) -> Option<&Sched> {
        let rec = self.rec.as_ref()?;
        match &rec.replay {
            Some(r) => Some(&r.sched),
            None => Some(&rec.sched),
        }
    }

    pub(super) fn sched_mut(&mut self) -> Option<&mut Sched> {
        let rec = self.rec.as_mut()?;
        match &mut rec.replay {
            Some(r) => Some(&mut r.sched),
            None => Some(&mut rec.sched),
        }
    }

    /// The only thread resumed while recording or replaying a multi-threaded stretch;
    /// `None` when every thread may run.
    pub(super) fn only_runner(&self) -> Option<Tid> {
        self.sched().and_then(|s| s.current_tid())
    }

    /// The thread the shown point of a recording belongs to (the one that runs there),
    /// else the main thread.
    pub fn shown_thread(&self) -> Tid {
        self.only_runner().unwrap_or(Tid(self.pid.0))
    }

    /// Refuses to run a thread that is not the one scheduled: what it did would not be
    /// in the recording's schedule.
    pub(super) fn require_runner(&self, tid: Tid) -> Result<()> {
        match self.sched() {
            Some(s) if s.live() > 1 && s.current_tid() != Some(tid) => Err(Error::Replay(
                "while recording a multi-threaded program only the thread that runs can be stepped or resumed alone; this thread waits".into(),
            )),
            _ => Ok(()),
        }
    }

    /// A thread the shown process created (its clone event): it joins the schedule,
    /// waiting until it is chosen.
    pub(super) fn sched_thread_created(&mut self, new: Tid) {
        let Some(s) = self.sched_mut() else {
            return;
        };
        let ctid = std::mem::take(&mut s.clone_clear_tid);
        s.tids.push(Some(new));
        s.clear_tid.push(ctid);
        if s.live() == 2 {
            // Slices count from here: before, the thread had the processor alone.
            s.slice_from = Instant::now();
        }
    }

    /// Recording: what the entry of call `nr` by the current thread of a multi-threaded
    /// program means for the schedule. `Err` ends the recording with that reason;
    /// `Ok(true)`: the call is emulated (skipped here, its result given at its exit).
    pub(super) fn sched_entry(
        &mut self,
        tid: Tid,
        regs: &mut libc::user_regs_struct,
    ) -> std::result::Result<bool, String> {
        let nr = regs.orig_rax;
        let a = [regs.rdi, regs.rsi, regs.rdx, regs.r10, regs.r8, regs.r9];
        match nr {
            SYS_CLONE3 | 56 => {
                let (flags, ctid) = if nr == 56 {
                    (a[0], a[3])
                } else {
                    let flags = sys::peek_word(tid, a[0]).map_err(|e| e.to_string())?;
                    let ctid = sys::peek_word(tid, a[0] + 16).map_err(|e| e.to_string())?;
                    (flags, ctid)
                };
                if flags & CLONE_THREAD == 0 || flags & CLONE_VM == 0 {
                    return Err("recording a program that forks is not supported yet".into());
                }
                if let Some(s) = self.sched_mut() {
                    s.clone_clear_tid = if flags & CLONE_CHILD_CLEARTID != 0 {
                        ctid
                    } else {
                        0
                    };
                }
                Ok(false)
            }
            SYS_EXIT if tid.0 == self.pid.0 && self.sched().is_some_and(|s| s.live() > 1) => {
                // Its exit is reported only when the last thread ends: the schedule
                // would wait for it forever.
                Err("the main thread ends before the others (pthread_exit in main), which is not recorded yet".into())
            }
            SYS_SET_TID_ADDRESS => {
                if let Some(s) = self.sched_mut() {
                    let i = s.current.at();
                    if let Some(c) = s.clear_tid.get_mut(i) {
                        *c = a[0];
                    }
                }
                Ok(false)
            }
            SYS_FUTEX if self.sched().is_some_and(|s| s.live() > 1) => {
                let plan = match a[1] & FUTEX_CMD_MASK {
                    FUTEX_WAIT | FUTEX_WAIT_BITSET => {
                        let mut word = [0u8; 4];
                        if self.read_raw(a[0], &mut word).unwrap_or(0) < 4 {
                            return Err("a futex wait on memory tandem cannot read".into());
                        }
                        if u64::from(u32::from_ne_bytes(word)) != a[2] & 0xffff_ffff {
                            Futex::Result(EAGAIN)
                        } else {
                            let bitset = if a[1] & FUTEX_CMD_MASK == FUTEX_WAIT_BITSET {
                                a[5] as u32
                            } else {
                                u32::MAX
                            };
                            Futex::Park {
                                uaddr: a[0],
                                bitset,
                            }
                        }
                    }
                    FUTEX_WAKE | FUTEX_WAKE_BITSET => {
                        let bitset = if a[1] & FUTEX_CMD_MASK == FUTEX_WAKE_BITSET {
                            a[5] as u32
                        } else {
                            u32::MAX
                        };
                        Futex::Result(self.futex_wake(a[0], a[2] as u32, bitset))
                    }
                    _ => {
                        return Err(
                            "a futex operation tandem does not record yet (requeue, wake-op, priority inheritance)"
                                .into(),
                        )
                    }
                };
                if let Some(s) = self.sched_mut() {
                    s.futex = Some(plan);
                }
                regs.orig_rax = u64::MAX;
                sys::set_regs(tid, regs).map_err(|e| e.to_string())?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Wakes at most `n` threads parked on `uaddr` whose bitset meets `bitset`, first
    /// parked first; their waits return 0. Returns how many.
    fn futex_wake(&mut self, uaddr: u64, n: u32, bitset: u32) -> u64 {
        let Some(rec) = self.rec.as_mut() else {
            return 0;
        };
        let s = &mut rec.sched;
        let mut woken = Vec::new();
        s.waiters.retain(|w| {
            let take = (woken.len() as u32) < n && w.uaddr == uaddr && w.bitset & bitset != 0;
            if take {
                woken.push(*w);
            }
            !take
        });
        for w in &woken {
            if let Some(ev) = rec.events.get_mut(w.event) {
                ev.result = 0;
            }
            if let Some(t) = s.tid(w.thread) {
                if let Ok(mut regs) = sys::get_regs(t) {
                    regs.rax = 0;
                    let _ = sys::set_regs(t, &regs);
                    if let Some(th) = self.threads.get_mut(&t) {
                        th.regs = Some(regs);
                    }
                }
            }
        }
        woken.len() as u64
    }

    /// Recording: the exit stop of an emulated futex call of the current thread. Its
    /// result is set, or the thread parks. Returns the result to record.
    pub(super) fn sched_futex_exit(
        &mut self,
        tid: Tid,
        regs: &mut libc::user_regs_struct,
        event: usize,
    ) -> Option<u64> {
        let plan = self.sched_mut()?.futex.take()?;
        match plan {
            Futex::Result(r) => {
                regs.rax = r;
                let _ = sys::set_regs(tid, regs);
                Some(r)
            }
            Futex::Park { uaddr, bitset } => {
                let s = self.sched_mut()?;
                let thread = s.current;
                s.waiters.push(Waiter {
                    thread,
                    uaddr,
                    bitset,
                    event,
                });
                // Known when it is woken.
                Some(0)
            }
        }
    }

    /// Recording: after the exit stop of the current thread's call (or its death): the
    /// thread to resume. A thread that parked gives the processor to the next one able
    /// to run; when none can, the recording ends and the waits run live.
    pub(super) fn sched_pick(&mut self, tid: Tid) -> Tid {
        let Some(s) = self.sched() else {
            return tid;
        };
        let cur = s.current;
        let cur_ok = s.tid(cur).is_some() && !s.parked(cur);
        if cur_ok {
            // Its slice is over, or it yields (sleeps): the next thread able to run.
            let last = self
                .rec
                .as_ref()
                .and_then(|r| r.events.last())
                .map(|e| e.nr);
            let yields = matches!(
                last,
                Some(SYS_SCHED_YIELD | SYS_NANOSLEEP | SYS_CLOCK_NANOSLEEP)
            );
            let next = s.next_runnable().filter(|n| *n != cur);
            if let (Some(next), true) = (next, yields || s.slice_from.elapsed() >= SLICE) {
                let t = s.tid(next).unwrap_or(tid);
                if let Some(s) = self.sched_mut() {
                    s.switch_to(next);
                }
                return t;
            }
            return s.tid(cur).unwrap_or(tid);
        }
        match s.next_runnable() {
            Some(next) => {
                let t = s.tid(next).unwrap_or(tid);
                if let Some(s) = self.sched_mut() {
                    s.switch_to(next);
                }
                t
            }
            None => {
                self.end_recording(
                    "recording stopped: every thread of the program waits (a futex with a timeout, or for something outside); the program goes on live"
                        .into(),
                );
                tid
            }
        }
    }

    /// Recording: the current thread died by its own `exit`: its clear-tid word was
    /// zeroed by the kernel, and the wake the kernel does on it is emulated (no thread
    /// waits in the kernel). Returns the thread to resume, if any.
    pub(super) fn sched_thread_exited(&mut self, tid: Tid) -> Option<Tid> {
        let s = self.sched()?;
        let i = s.index_of(tid)?;
        let clear = s.clear_tid.get(i.at()).copied().unwrap_or(0);
        if let Some(s) = self.sched_mut() {
            s.tids[i.at()] = None;
            s.waiters.retain(|w| w.thread != i);
        }
        if clear != 0 {
            self.futex_wake(clear, u32::MAX, u32::MAX);
        }
        if self.sched().is_some_and(|s| s.current != i) {
            return None;
        }
        Some(self.sched_pick(tid))
    }

    /// Replay: a thread died.
    pub(super) fn sched_forget(&mut self, tid: Tid) -> Option<ThreadIndex> {
        let s = self.sched_mut()?;
        let i = s.index_of(tid)?;
        s.tids[i.at()] = None;
        Some(i)
    }

    /// The recording ends while threads are parked: each goes back onto its futex call,
    /// which it makes again live (the kernel's own wait and wake take over), and every
    /// held thread but the current one (the caller's) runs again.
    pub(super) fn release_threads(&mut self, s: Sched) {
        for w in &s.waiters {
            let Some(t) = s.tid(w.thread) else { continue };
            if let Ok(mut regs) = sys::get_regs(t) {
                regs.rax = SYS_FUTEX;
                regs.rip -= 2;
                let _ = sys::set_regs(t, &regs);
                if let Some(th) = self.threads.get_mut(&t) {
                    th.regs = Some(regs);
                }
            }
        }
        if self.phase == Phase::Stopped || s.live() < 2 {
            return;
        }
        let cur = s.current_tid();
        let held: Vec<Tid> = self
            .threads
            .iter()
            .filter(|(t, th)| Some(**t) != cur && !th.running)
            .map(|(t, _)| *t)
            .collect();
        for t in held {
            self.resume_thread(t);
        }
    }
}

impl Tracer {
    /// Recording, before waiting: while another thread could run, the current one has
    /// a time slice; its timer wakes the wait when it ends. Returns whether a slice is
    /// running (the wait must then be interruptible).
    pub(super) fn arm_slice(&mut self) -> bool {
        if self.is_replaying() || self.phase != Phase::Running {
            return false;
        }
        let Some(rec) = self.rec.as_mut() else {
            return false;
        };
        let s = &rec.sched;
        if s.live() < 2
            || s.preempting.is_some()
            || s.next_runnable().is_none_or(|n| n == s.current)
        {
            return false;
        }
        let mut deadline = s.slice_from + SLICE;
        if let Some(at) = s.entered_at.filter(|_| Instant::now() >= deadline) {
            // Over its slice inside a call: it switches at the exit, unless it blocks.
            deadline = deadline.max(at + BLOCK_LIMIT);
        }
        if rec.armed == Some(deadline) {
            return true;
        }
        if rec.timer.is_none() {
            crate::handle::install_wake_handler();
            match sys::ThreadTimer::new(sys::gettid(), crate::handle::wake_signal()) {
                Ok(t) => rec.timer = Some(t),
                Err(e) => {
                    tracing::warn!("the recorder's time slice timer: {e}");
                    return false;
                }
            }
        }
        let after = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_micros(100));
        if let Some(t) = &rec.timer {
            if t.arm(after).is_err() {
                return false;
            }
        }
        rec.armed = Some(deadline);
        tracing::trace!(?after, "time slice armed");
        true
    }

    /// Recording: the wait was interrupted; when the slice is over, the current thread
    /// is interrupted where it runs (not inside a system call: it is switched at the
    /// call's exit instead).
    pub(super) fn slice_check(&mut self) {
        let Some(rec) = self.rec.as_mut() else {
            return;
        };
        if rec.armed.is_none_or(|d| Instant::now() < d) {
            return;
        }
        rec.armed = None;
        let Some(tid) = rec.sched.current_tid() else {
            return;
        };
        if rec.sched.preempting.is_some() {
            return;
        }
        if rec
            .sched
            .entered_at
            .is_some_and(|at| at.elapsed() >= BLOCK_LIMIT)
        {
            return self.end_recording(format!(
                "recording stopped: a thread waited more than {} s in a system call while other threads of the program waited (blocking calls other than futex waits are not recorded in multi-threaded programs yet); the program goes on live",
                BLOCK_LIMIT.as_secs()
            ));
        }
        let Some(t) = self.threads.get_mut(&tid) else {
            return;
        };
        if !t.running || t.interrupt_sent || t.in_syscall || t.stepping {
            return;
        }
        if sys::interrupt(tid).is_ok() {
            t.interrupt_sent = true;
            rec.sched.preempting = Some(tid);
        }
    }

    /// Recording: thread `tid` stopped for another reason first; the interrupt of a
    /// preemption asked for is consumed (the next slice asks again).
    pub(super) fn preemption_consumed(&mut self, tid: Tid) {
        if let Some(rec) = self.rec.as_mut() {
            if rec.sched.preempting == Some(tid) {
                rec.sched.preempting = None;
            }
        }
    }

    /// Recording: the interrupt stop of a preemption. The thread's registers are the
    /// event (a replay stops that thread where its registers are these), and the next
    /// thread runs. `None`: this stop is not a preemption.
    pub(super) fn preempted(&mut self, tid: Tid, collecting: bool) -> Option<Outcome> {
        if self.is_replaying() || self.pause_requested || self.phase != Phase::Running {
            return None;
        }
        let rec = self.rec.as_mut()?;
        if rec.sched.preempting != Some(tid) {
            return None;
        }
        rec.sched.preempting = None;
        let next = rec
            .sched
            .next_runnable()
            .filter(|n| *n != rec.sched.current)?;
        // Out of the system-call buffer's code: the point is in the program.
        let at_site = self.sysbuf_before_preempt(tid);
        let interval = self.sysbuf_take();
        let rec = self.rec.as_mut()?;
        let regs = sys::get_regs(tid).ok()?;
        rec.log(
            PREEMPT_EVENT,
            [u64::from(at_site), 0, 0, 0, 0, 0],
            0,
            interval,
        )
        .regs = Some(Box::new(preempt_key(&regs, at_site)));
        rec.since_snapshot += 1;
        rec.sched.switch_to(next);
        let to = rec.sched.current_tid()?;
        tracing::trace!(tid = tid.0, pc = regs.rip, "preempted");
        if let Some(t) = self.threads.get_mut(&tid) {
            t.regs = Some(regs);
        }
        if !collecting {
            self.resume_thread(to);
        }
        Some(Outcome::Absorbed)
    }

    /// Replay: the next event is a preemption of the thread that now runs: an int3 at
    /// its pc finds it.
    pub(super) fn plant_preempt_guard(&mut self) {
        let Some(rec) = self.rec.as_ref() else {
            return;
        };
        let Some(r) = rec.replay.as_ref() else {
            return;
        };
        if r.sched.preempt_guard.is_some() {
            return;
        }
        let Some(rip) = rec
            .events
            .get(r.cursor() as usize)
            .filter(|e| e.nr == PREEMPT_EVENT)
            .and_then(|e| e.regs.as_ref())
            .map(|k| k[15])
        else {
            return;
        };
        if self.insert_breakpoint_here(RuntimeAddr(rip)).is_ok() {
            if let Some(s) = self.sched_mut() {
                s.preempt_guard = Some(rip);
                s.guard_passes = 0;
            }
        }
    }

    /// Replay: a trap at `addr` with registers `regs` (rip already back on `addr`).
    /// At the preemption point the recording switched threads here: the replay does
    /// too. `Some(true)`: handled, nothing to report; `Some(false)`: the guard's trap
    /// elsewhere in time, to pass silently; `None`: not the guard's.
    pub(super) fn replay_guard_trap(
        &mut self,
        tid: Tid,
        addr: u64,
        regs: &libc::user_regs_struct,
    ) -> Option<bool> {
        let rec = self.rec.as_ref()?;
        let r = rec.replay.as_ref()?;
        if r.sched.preempt_guard != Some(addr) {
            return None;
        }
        let ev = rec.events.get(r.cursor() as usize)?;
        let here = ev.nr == PREEMPT_EVENT
            && ev.thread == r.sched.current
            && ev.regs.as_deref() == Some(&preempt_key(regs, ev.args[0] == 1))
            && self.sysbuf_consumed();
        let thread = ev.thread.0;
        if !here {
            let passes = self.sched_mut().map_or(0, |s| {
                s.guard_passes += 1;
                s.guard_passes
            });
            if passes >= MAX_GUARD_PASSES {
                self.replay_diverged(&format!(
                    "the recording diverged here: thread {} was preempted at {addr:#x} in a loop that ran without system calls, and this replay cannot find the point without a branch counter ({MAX_GUARD_PASSES} passes)",
                    thread
                ));
            }
            return Some(false);
        }
        if let Some(s) = self.sched_mut() {
            s.preempt_guard = None;
        }
        let _ = self.remove_breakpoint_here(RuntimeAddr(addr));
        let _ = tid;
        Some(true)
    }
}

impl Tracer {
    /// Replay: a breakpoint trap that may be the preemption guard's (see
    /// [`Tracer::replay_guard_trap`]): at the point, the next thread of the recording
    /// runs; elsewhere, the guard's int3 is stepped over silently unless a user
    /// breakpoint is there too.
    pub(super) fn replay_preempt_trap(
        &mut self,
        tid: Tid,
        addr: u64,
        regs: libc::user_regs_struct,
        collecting: bool,
    ) -> Result<Option<Outcome>> {
        let Some(here) = self.replay_guard_trap(tid, addr, &regs) else {
            return Ok(None);
        };
        if let Some(t) = self.threads.get_mut(&tid) {
            t.regs = Some(regs);
            t.stepping = false;
        }
        if here {
            if let Some(o) = self.replay_advance(tid)? {
                return Ok(Some(o));
            }
            if !collecting {
                let next = self.shown_thread();
                self.resume_thread(next);
            }
            return Ok(Some(Outcome::Absorbed));
        }
        let gave_up = self
            .rec
            .as_ref()
            .and_then(|r| r.replay.as_ref())
            .is_some_and(|r| r.diverged.is_some());
        if gave_up {
            return Ok(Some(Outcome::Report(tid, StopReason::Replayed)));
        }
        if self.breakpoints.get(&addr).is_some_and(|b| b.refs > 1) {
            return Ok(None);
        }
        if let Some(t) = self.threads.get_mut(&tid) {
            t.at_bp = Some(addr);
        }
        Ok(Some(Outcome::StepOverAgain(tid)))
    }
}

impl Tracer {
    /// Recording, before a snapshot made by `injector`: the index of the thread the
    /// fork copies, its park, and the saved states of the others. `None` when a thread
    /// is in a state a replay could not re-create (inside a system call, not yet at its
    /// first stop, running): no snapshot then.
    pub(super) fn save_threads(
        &self,
        injector: Tid,
    ) -> Option<(ThreadIndex, Option<usize>, Vec<SavedThread>)> {
        let s = &self.rec.as_ref()?.sched;
        let main = s.index_of(injector)?;
        let mut saved = Vec::new();
        for (i, t) in s.tids.iter().enumerate() {
            let Some(tid) = *t else { continue };
            let index = ThreadIndex(i as u32);
            if index == main {
                continue;
            }
            let th = self.threads.get(&tid)?;
            if th.running || th.new || th.in_syscall || th.group_stop || th.listening {
                return None;
            }
            let regs = sys::get_regs(tid).ok()?;
            let mut xstate = vec![0u8; 16384];
            let n = sys::get_regset(tid, NT_X86_XSTATE, &mut xstate).ok()?;
            xstate.truncate(n);
            saved.push(SavedThread {
                index,
                regs,
                xstate,
                sigmask: sys::get_sigmask(tid).ok()?,
                clear_tid: s.clear_tid.get(i).copied().unwrap_or(0),
                park: s.park_event(index),
            });
        }
        Some((main, s.park_event(main), saved))
    }

    /// Replay: re-creates in the shown copy of `snap` (one thread) the program's other
    /// threads, each by an injected `clone` given its saved registers, extended state,
    /// signal mask and clear-tid word; a parked thread gets its wait's recorded result.
    /// Returns every thread's index and kernel id.
    pub(super) fn recreate_threads(
        &mut self,
        snap: &super::record::Snapshot,
    ) -> Result<Vec<(ThreadIndex, Tid)>> {
        let main = Tid(self.pid.0);
        let result_of = |t: &Tracer, ev: Option<usize>| {
            ev.and_then(|e| t.rec.as_ref()?.events.get(e).map(|e| e.result))
        };
        if let Some(r) = result_of(self, snap.main_park) {
            let mut regs =
                sys::get_regs(main).map_err(|e| Error::ptrace("PTRACE_GETREGS", main, e))?;
            regs.rax = r;
            sys::set_regs(main, &regs).map_err(|e| Error::ptrace("PTRACE_SETREGS", main, e))?;
        }
        let mut out = vec![(snap.main, main)];
        for st in &snap.threads {
            let at = sys::get_regs(main)
                .map_err(|e| Error::ptrace("PTRACE_GETREGS", main, e))?
                .rip;
            let mut flags = CLONE_VM | CLONE_THREAD | 0x200 | 0x400 | 0x800 | 0x40000;
            if st.clear_tid != 0 {
                flags |= CLONE_CHILD_CLEARTID;
            }
            let mut new = None;
            self.inject_syscall_on(
                main,
                at,
                56,
                [flags, st.regs.rsp, 0, st.clear_tid, 0, 0],
                &mut |event, msg| {
                    if event == libc::PTRACE_EVENT_CLONE {
                        new = Some(Tid(msg as i32));
                    }
                },
            )?;
            let new = new.filter(|t| t.0 > 0).ok_or_else(|| {
                Error::Replay("re-creating a thread of the snapshot failed".into())
            })?;
            self.threads.insert(
                new,
                Thread {
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
            match first.map(|w| sys::decode(w.status)) {
                Ok(Status::Stopped(..)) => {}
                _ => return Err(Error::Replay("a re-created thread did not stop".into())),
            }
            let mut regs = st.regs;
            regs.orig_rax = u64::MAX;
            if let Some(r) = result_of(self, st.park) {
                regs.rax = r;
            }
            let err = |what: &'static str| move |e| Error::ptrace(what, new, e);
            sys::set_regs(new, &regs).map_err(err("PTRACE_SETREGS"))?;
            sys::set_regset(new, NT_X86_XSTATE, &st.xstate).map_err(err("PTRACE_SETREGSET"))?;
            sys::set_sigmask(new, st.sigmask).map_err(err("PTRACE_SETSIGMASK"))?;
            out.push((st.index, new));
        }
        Ok(out)
    }
}
