//! Recording: the tracer thread runs on the CPU its recorded thread last ran on.
//!
//! A recorded program stops at the system-call buffer's flushes and at every traced
//! call, each stop a round trip between the program and the tracer thread. When the
//! two run on different CPUs every round trip crosses CPUs (a wake-up by
//! inter-processor interrupt, both sides, often from an idle CPU): measured on this
//! 2-core machine, a recorded syscall-heavy loop took 0.8 s or 2-3.6 s from one run to
//! the next, against 0.77 s every time with both on one CPU. rr pins the recorded
//! process; tandem does not touch the program's affinity (the program could see it:
//! `sched_getaffinity`, a thread pool sized by it), and pins its own tracer thread to
//! where the program runs instead, checked every few dozen stops. The scheduler then
//! keeps the program there, where its waker is.

use nix::sched::{self, CpuSet};
use nix::unistd::Pid as NixPid;

use super::*;

/// Stops between two checks of where the program runs.
const CHECK_EVERY: u32 = 64;

/// The CPU a thread last ran on (field 39 of /proc/TID/stat; a thread of any process,
/// a replay's too).
fn cpu_of(tid: Tid) -> Option<usize> {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", tid.0)).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    // After the name: state is field 3, so processor (39) is the 37th here.
    rest.split_whitespace().nth(36)?.parse().ok()
}

/// Restricts thread `tid` (0: the calling thread) to `set`.
fn set_affinity(tid: i32, set: &CpuSet) -> bool {
    sched::sched_setaffinity(NixPid::from_raw(tid), set).is_ok()
}

/// The set of CPU `cpu` alone.
fn only(cpu: usize) -> Option<CpuSet> {
    let mut set = CpuSet::new();
    set.set(cpu).ok()?;
    Some(set)
}

/// The tracer thread's pinning: its own affinity before, and where it is now.
pub(super) struct Pin {
    original: CpuSet,
    cpu: Option<usize>,
    stops: u32,
}

impl Pin {
    /// The calling thread's affinity, kept to put back.
    pub(super) fn new() -> Option<Pin> {
        let original = sched::sched_getaffinity(NixPid::from_raw(0)).ok()?;
        Some(Pin {
            original,
            cpu: None,
            stops: CHECK_EVERY - 1,
        })
    }

    /// Moves the calling (tracer) thread to `cpu` if its own affinity allows it; whether
    /// it is there now.
    fn move_to(&mut self, cpu: usize) -> bool {
        if self.cpu == Some(cpu) {
            return true;
        }
        let moved = self.original.is_set(cpu).unwrap_or(false)
            && only(cpu).is_some_and(|set| set_affinity(0, &set));
        if moved {
            self.cpu = Some(cpu);
        }
        moved
    }
}

impl Drop for Pin {
    fn drop(&mut self) {
        if self.cpu.is_some() {
            set_affinity(0, &self.original);
        }
    }
}

impl Tracer {
    /// A stop of the recorded program or of a replay: every [`CHECK_EVERY`] of them the
    /// tracer thread moves to the CPU the running thread last ran on, if it may run
    /// there.
    pub(super) fn pin_to_program(&mut self, tid: Tid) {
        if self.rec.is_none() {
            return;
        }
        let Some(pin) = self.pin.as_mut() else {
            return;
        };
        pin.stops += 1;
        if pin.stops < CHECK_EVERY {
            return;
        }
        pin.stops = 0;
        if let Some(cpu) = cpu_of(tid) {
            pin.move_to(cpu);
        }
    }

    /// A replay's process is about to run: it and the tracer thread share the CPU the
    /// tracer runs on. A replay is a fork of a snapshot, never the program: its
    /// `sched_getaffinity` and `getcpu` calls are given their recorded results, so it
    /// cannot tell; its threads (and those it re-creates) inherit the mask.
    pub(super) fn pin_replay(&mut self) {
        if !self.is_replaying() {
            return;
        }
        let Some(pin) = self.pin.as_mut() else {
            return;
        };
        let Ok(cpu) = sched::sched_getcpu() else {
            return;
        };
        let (true, Some(set)) = (pin.move_to(cpu), only(cpu)) else {
            return;
        };
        pin.stops = 0;
        for tid in self.threads.keys() {
            if !set_affinity(tid.0, &set) {
                tracing::debug!(tid = tid.0, cpu, "a replay's thread keeps its affinity");
            }
        }
    }

    /// The recording ended: the tracer thread may run anywhere again.
    pub(super) fn unpin(&mut self) {
        self.pin = None;
    }
}
