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

/// Restricts the calling thread to `cpu` (`None`: to `mask`).
fn set_affinity(cpu: Option<usize>, mask: &libc::cpu_set_t) -> bool {
    // SAFETY: cpu_set_t is plain data; the CPU_* helpers write inside it, and
    // sched_setaffinity(0, ...) applies to the calling thread only.
    unsafe {
        let mut set: libc::cpu_set_t = *mask;
        if let Some(cpu) = cpu {
            libc::CPU_ZERO(&mut set);
            libc::CPU_SET(cpu, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// Restricts thread `tid` (of a replay) to `cpu`.
fn set_thread_affinity(tid: Tid, cpu: usize) {
    // SAFETY: as in `set_affinity`, for another thread of the tracer's own children.
    let ok = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(tid.0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    };
    if !ok {
        tracing::debug!(tid = tid.0, cpu, "a replay's thread keeps its affinity");
    }
}

/// The tracer thread's pinning: its own affinity before, and where it is now.
pub(super) struct Pin {
    original: libc::cpu_set_t,
    cpu: Option<usize>,
    stops: u32,
}

impl Pin {
    /// The calling thread's affinity, kept to put back.
    pub(super) fn new() -> Option<Pin> {
        // SAFETY: a zeroed cpu_set_t is a valid empty set, filled by the call.
        let mut original: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: writes at most size_of::<cpu_set_t>() bytes into `original`.
        let ok = unsafe {
            libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut original)
        } == 0;
        ok.then_some(Pin {
            original,
            cpu: None,
            stops: CHECK_EVERY - 1,
        })
    }
}

impl Drop for Pin {
    fn drop(&mut self) {
        if self.cpu.is_some() {
            set_affinity(None, &self.original);
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
        let Some(cpu) = cpu_of(tid) else {
            return;
        };
        // SAFETY: CPU_ISSET only reads the set.
        let allowed =
            cpu < libc::CPU_SETSIZE as usize && unsafe { libc::CPU_ISSET(cpu, &pin.original) };
        if pin.cpu != Some(cpu) && allowed && set_affinity(Some(cpu), &pin.original) {
            pin.cpu = Some(cpu);
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
        // SAFETY: sched_getcpu has no arguments and only reads the CPU number.
        let Ok(cpu) = usize::try_from(unsafe { libc::sched_getcpu() }) else {
            return;
        };
        // SAFETY: CPU_ISSET only reads the set.
        let allowed =
            cpu < libc::CPU_SETSIZE as usize && unsafe { libc::CPU_ISSET(cpu, &pin.original) };
        if !allowed || !set_affinity(Some(cpu), &pin.original) {
            return;
        }
        pin.cpu = Some(cpu);
        pin.stops = 0;
        for tid in self.threads.keys() {
            set_thread_affinity(*tid, cpu);
        }
    }

    /// The recording ended: the tracer thread may run anywhere again.
    pub(super) fn unpin(&mut self) {
        self.pin = None;
    }
}
