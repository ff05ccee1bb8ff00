//! Waypoints: snapshots a replay leaves behind (docs/reverse.md, "Waypoints"). A replay
//! of a single-threaded stretch is forked at system-call boundaries on a grid (every 64
//! calls in the 1,024 before the point it goes to, every 1,024 before those) and where a seek stops at a boundary (a search's stretch
//! start, the point a step back goes to), so the next replay into the same part of the
//! past starts a few calls before its target instead of at the last recorded snapshot,
//! up to 1,024 calls back. A replay is faithful, so its state at a boundary is the
//! recording's there; a waypoint is used exactly as a recorded snapshot.

use super::record::{kill_stopped, Snapshot};
use super::*;

/// Calls between two waypoints of the grid in the last [`NEAR`] calls before the
/// point a seek goes to, and elsewhere.
const WAYPOINT_EVERY: u64 = 64;
const WAYPOINT_FAR: u64 = 1024;
const NEAR: u64 = 1024;
/// Waypoints kept: past that the one made first goes (a fork of a small program is a
/// few hundred kB of page tables and kernel state; its pages are shared).
const MAX_WAYPOINTS: usize = 48;

impl Tracer {
    /// The shown replay is stopped at the exit of the call before `event` (its state is
    /// the recording's at that boundary): made a waypoint if `event` is on the grid or
    /// a seek stops there (`stop`), far enough from the snapshot the replay started
    /// at, and the process has one thread (a fork copies only the thread that makes
    /// it; re-creating the others from a replay is not done yet).
    pub(super) fn maybe_waypoint(&mut self, tid: Tid, event: u64, stop: bool) {
        let Some(rec) = self.rec.as_ref() else {
            return;
        };
        let Some(r) = rec.replay.as_ref() else {
            return;
        };
        // Dense just before where the seek goes (where the next step back starts),
        // sparse on the way there: a fork costs about what replaying 5-10 calls does.
        let near = r
            .stop_at_event
            .is_some_and(|s| s.saturating_sub(event) <= NEAR);
        let every = if near { WAYPOINT_EVERY } else { WAYPOINT_FAR };
        if !(stop || event % every == 0)
            || event < r.base + 8
            || self.threads.len() != 1
            || r.sched.live() != 1
            || r.diverged.is_some()
            || rec.waypoints.iter().any(|s| s.event == event)
            || rec.snapshots.iter().any(|s| s.event == event)
            || super::record::memory_short()
        {
            return;
        }
        let main = r.sched.index_of(tid).unwrap_or(r.sched.current);
        let started = std::time::Instant::now();
        let child = match self.fork_copy() {
            Ok(c) => c,
            Err(e) => {
                tracing::debug!(event, "a waypoint failed: {e}");
                return;
            }
        };
        let Some(rec) = self.rec.as_mut() else {
            kill_stopped(child);
            return;
        };
        let at = rec.waypoints.partition_point(|s| s.event < event);
        rec.waypoints.insert(
            at,
            Snapshot {
                pid: child,
                event,
                main,
                main_park: None,
                threads: Vec::new(),
            },
        );
        rec.waypoint_order.push(event);
        if rec.waypoints.len() > MAX_WAYPOINTS {
            let oldest = rec.waypoint_order.remove(0);
            if let Some(i) = rec.waypoints.iter().position(|s| s.event == oldest) {
                kill_stopped(rec.waypoints.remove(i).pid);
            }
        }
        tracing::debug!(pid = child.0, event, took = ?started.elapsed(), "waypoint");
    }
}
