//! Counting what requests parse: units and DIE trees read on behalf of a request, apart
//! from those the background index reads, so tests and logs can show a stop stays lazy.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

thread_local! {
    /// Set on the threads that build the full symbol index, whose parsing is not any
    /// request's.
    static BACKGROUND: Cell<bool> = const { Cell::new(false) };
}

/// Marks the current thread as a background indexing thread (or not) from now on.
pub(crate) fn set_background(on: bool) {
    BACKGROUND.with(|b| b.set(on));
}

/// Whether the current thread is building the index in the background.
pub(crate) fn in_background() -> bool {
    BACKGROUND.with(Cell::get)
}

/// Counts of parsing done outside the background index, per binary.
#[derive(Debug, Default)]
pub(crate) struct RequestCounters {
    units: AtomicUsize,
    walks: AtomicUsize,
}

impl RequestCounters {
    /// A unit (abbreviations, root DIE, line program header) was parsed.
    pub(crate) fn unit_parsed(&self) {
        if !in_background() {
            self.units.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A unit's DIE tree was walked; logged (target `tandem::parse`) when a request
    /// needed it, with the running count, which tests read.
    pub(crate) fn die_walk(&self, path: &std::path::Path, unit: usize, units: usize) {
        if in_background() {
            return;
        }
        let walks = self.walks.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::debug!(
            target: "tandem::parse",
            path = %path.display(),
            unit,
            walks,
            units,
            "a request walked a unit's DIEs"
        );
    }

    pub(crate) fn units(&self) -> usize {
        self.units.load(Ordering::Relaxed)
    }

    pub(crate) fn walks(&self) -> usize {
        self.walks.load(Ordering::Relaxed)
    }
}
