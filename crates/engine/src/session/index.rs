//! The program's name table (`symbols::Binary::build_index_cache`), built on a background
//! thread once the session has started, with progress events, written to the index cache
//! and mapped from there; when it is done, function breakpoints resolved before it
//! through the ELF symbol table get their inlined copies too.
//!
//! Why: the table walks every unit's DIEs (seconds on a large C++ program), and the
//! first stop needs none of it — a function breakpoint by name is found through
//! `.symtab` and the one unit holding the function ([`super::tracer_side::resolve_in`]),
//! a line through line-program headers. Only inlined copies of a function need every
//! unit, so they are added when the table is ready, as a `BreakpointResolved` event,
//! the way a library load adds the breakpoint's locations in the library. The table is
//! built one unit at a time and no in-memory index is kept: a cold session then holds
//! what a warm one (which mapped the file) holds.

use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Mutex, Weak};

use super::*;

/// The on-disk index cache shared by every session and face (see
/// [`symbols::IndexCache::from_env`]).
pub(crate) fn index_cache() -> Option<symbols::IndexCache> {
    symbols::IndexCache::from_env()
}

/// Progress is reported at most this many times per build (and at the end).
const PROGRESS_STEPS: usize = 20;

/// How far the main executable's name table is built in the background, shared by the
/// session and the thread that builds it.
#[derive(Debug, Default)]
pub(super) struct IndexState {
    /// Set while the table builds: until then a lookup that needs it waits.
    pub(super) building: AtomicBool,
    /// The units gathered so far.
    pub(super) units: AtomicUsize,
}

/// Starts the thread that builds `main`'s index; it reports through `events` and,
/// when done, completes the function breakpoints on the tracer thread of `handle` (if
/// the session still exists). `building` is set while the thread runs and cleared
/// before its last `Indexing` event (`done == total`), so whoever sees it set will see
/// that event.
pub(super) fn start(
    main: Arc<Binary>,
    handle: Weak<TracerHandle>,
    core: Weak<Mutex<Core>>,
    events: route::EventTx,
    state: Arc<IndexState>,
) {
    // Below the quick-lookup size every lookup builds the index at once (it takes
    // milliseconds), so there is nothing to build in the background nor to report.
    if !main.info().has_dwarf
        || main.has_index_cache()
        || !super::tracer_side::indexed_in_background(&main)
    {
        return;
    }
    // A warm session: the cache file of this build names the units of every function,
    // so lookups need no walk of every unit (see `symbols::cache`).
    let cache = index_cache();
    if cache.as_ref().is_some_and(|c| main.load_index_cache(c)) {
        return;
    }
    state.building.store(true, Ordering::Release);
    let guard = Building {
        state: state.clone(),
        events: events.clone(),
        total: main.unit_count(),
    };
    let spawned = std::thread::Builder::new()
        .name("tandem-index".into())
        .spawn(move || {
            let guard = guard;
            // Below the session's own threads: the build's threads (which inherit this
            // nice value) take both cores only when the session and the debuggee do not.
            // SAFETY: setpriority only reads its arguments; with PRIO_PROCESS and a thread
            // id it changes this thread's nice value alone (Linux). Failing is harmless.
            unsafe {
                libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 10);
            }
            let total = main.unit_count();
            let started = Instant::now();
            let _ = events.send(SessionEvent::Indexing { done: 0, total });
            let step = total.div_ceil(PROGRESS_STEPS).max(1);
            let reported = std::sync::atomic::AtomicUsize::new(0);
            let built = main.build_index_cache(cache.as_ref(), &|done, total| {
                guard.state.units.fetch_max(done, Ordering::Relaxed);
                let bucket = done / step;
                if done < total
                    && reported.fetch_max(bucket, std::sync::atomic::Ordering::Relaxed) < bucket
                {
                    let _ = events.send(SessionEvent::Indexing { done, total });
                }
            });
            if let (Err(e), Some(cache)) = (built, &cache) {
                tracing::warn!(dir = %cache.dir().display(), "cannot write the index cache: {e}");
            }
            // What the build read and allocated is not kept: the table is mapped (or
            // one buffer), the units' tables were dropped as it went.
            main.release_file_pages();
            release_free_heap();
            tracing::debug!(
                path = %main.path().display(),
                units = total,
                elapsed = ?started.elapsed(),
                "background index built"
            );
            guard.state.building.store(false, Ordering::Release);
            let _ = events.send(SessionEvent::Indexing { done: total, total });
            for unit in main.take_unreadable_units() {
                let _ = events.send(SessionEvent::Output(format!(
                    "warning: {}: {unit}\n",
                    main.path().display()
                )));
            }
            let (Some(handle), Some(core)) = (handle.upgrade(), core.upgrade()) else {
                return;
            };
            let result = handle.call(move |t: &mut Tracer| {
                t.edit_text(|t| complete_function_breakpoints(t, &mut lock(&core)))
            });
            if let Err(e) = result {
                tracing::debug!("function breakpoints not completed: {e}");
            }
        });
    if let Err(e) = spawned {
        state.building.store(false, Ordering::Release);
        tracing::warn!("cannot start the background index: {e}");
    }
}

/// The session's "the name table is building" flag, cleared however the index thread
/// ends: a thread that ends early (a panic) still sends the last `Indexing` event, so
/// nothing waits for it for ever.
struct Building {
    state: Arc<IndexState>,
    events: route::EventTx,
    total: usize,
}

impl Drop for Building {
    fn drop(&mut self) {
        if self.state.building.swap(false, Ordering::AcqRel) {
            let total = self.total;
            let _ = self
                .events
                .send(SessionEvent::Indexing { done: total, total });
        }
    }
}

/// Gives the heap pages freed by the background build back to the system: glibc keeps
/// the free memory of its arenas (the build's threads each had one) for later
/// allocations, which a session that is done indexing will not make.
fn release_free_heap() {
    // SAFETY: malloc_trim only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Adds to every function breakpoint the locations the full index finds in the main
/// executable beyond those it has (inlined copies), once that index is built; reports
/// each breakpoint that changed. Runs on the tracer thread.
pub(super) fn complete_function_breakpoints(t: &mut Tracer, c: &mut Core) {
    let main: Vec<Arc<Module>> = c
        .modules
        .all()
        .iter()
        .filter(|m| m.main && m.binary().is_some_and(|b| b.has_index_cache()))
        .cloned()
        .collect();
    if main.is_empty() {
        return;
    }
    let Core {
        bps,
        by_addr,
        source_map,
        events,
        jit_pending,
        ..
    } = c;
    for bp in bps.values_mut() {
        if !matches!(bp.key, BpKey::Function(_)) {
            continue;
        }
        let found = tracer_side::resolve_in(&main, &bp.key, source_map);
        tracer_side::plant_resolved(t, bp, found, by_addr, jit_pending, events);
    }
}
