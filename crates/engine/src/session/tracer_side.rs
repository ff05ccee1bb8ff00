//! The tracer-thread side of a session: `Core`, the state that decides about stops (the
//! breakpoint table, the step in progress, the module map), and its handling of every
//! tracer event, breakpoint hit and condition.

use super::*;

pub(super) struct Core {
    pub(super) pid: Pid,
    pub(super) modules: Modules,
    pub(super) bps: BTreeMap<BreakpointId, Bp>,
    pub(super) by_addr: HashMap<RuntimeAddr, Vec<BreakpointId>>,
    pub(super) next_bp: u32,
    pub(super) step: Option<StepPlan>,
    /// After stepping a thread off a breakpoint it was not stopped by, continue.
    pub(super) continue_after_step: bool,
    pub(super) last_stop: Option<(Tid, bool)>,
    /// When the last stop was at function breakpoints only: their names (see
    /// [`unwind::hide_inlined_at_entry`]).
    pub(super) stop_at_user_bp: Option<Vec<String>>,
    pub(super) running: bool,
    pub(super) exited: bool,
    pub(super) events: route::EventTx,
    /// The dynamic linker's `_dl_debug_state`, called after every library load.
    pub(super) dl_hook: Option<u64>,
    /// Modules before this index were searched for pending breakpoints.
    pub(super) scanned: usize,
    pub(super) enums: Arc<Enumerators>,
    pub(super) source_map: SourceMap,
    /// Data breakpoints and the debug-register slots they use.
    pub(super) data: data::DataTable,
    /// Signals that stop (the others pass silently).
    pub(super) signal_stops: crate::signals::SignalSet,
    /// The signal of the last stop, when it was one.
    pub(super) last_signal: Option<(Tid, crate::signals::SignalInfo)>,
    /// Exception events that stop, their internal breakpoints, the last one.
    pub(super) exceptions: exceptions::ExceptionTable,
    /// Whether conditions may run in the debuggee (see `crate::jit`).
    pub(super) jit: bool,
    /// Breakpoints were planted while the process ran (or in a new image or library):
    /// their conditions move into the debuggee at the next false hit.
    pub(super) jit_pending: bool,
    /// A stop was just shown: what requests will ask first is prepared right after.
    pub(super) stop_shown: bool,
    /// What is known at the stop shown last, so the first requests after a stop are
    /// answered without a round trip to the tracer thread. `None` while running.
    pub(super) at_stop: Option<AtStop>,
    /// Frame ids, shared with [`Session`]: never reused within a session.
    pub(super) frame_ids: Arc<AtomicU64>,
    /// The end of the recording (reverseDebugging) was told to the user.
    pub(super) recording_end_told: bool,
}

/// The state of a stop that every front-end asks for first.
pub(super) struct AtStop {
    /// The threads, sorted.
    pub(super) threads: Vec<Tid>,
    /// The stopped thread's frames, unwound on the tracer thread right after the stop
    /// was sent (while the front-end forwards it).
    pub(super) frames: Option<(Tid, Vec<FrameData>)>,
}

/// Unwinds `tid` at a stop with frame ids from `first` on, reading /proc/PID/maps again
/// only when a frame lies in code of a module not seen yet.
pub(super) fn unwind_thread(
    t: &mut Tracer,
    c: &mut Core,
    tid: Tid,
    first: u64,
) -> Result<Vec<FrameData>> {
    let regs = t.regs(tid)?;
    let mem = TracerMemory(t);
    let unwind = |modules: &Modules| {
        unwind::frames(
            FrameRegs::from_registers(&regs),
            modules,
            &mem,
            unwind::MAX_FRAMES,
            first,
        )
    };
    let mut frames = unwind(&c.modules);
    if frames.iter().any(|f| f.module.is_none()) {
        c.modules.refresh(c.pid);
        frames = unwind(&c.modules);
    }
    for f in &mut frames {
        f.tid = Some(tid);
    }
    if let (Some((stopped, _)), Some(keep)) = (c.last_stop, &c.stop_at_user_bp) {
        if stopped == tid {
            unwind::hide_inlined_at_entry(&mut frames, keep);
        }
    }
    Ok(frames)
}

/// Ids for one stack trace's frames (and their inlined frames).
pub(super) const FRAME_IDS_PER_TRACE: u64 = unwind::MAX_FRAMES as u64 * 2;

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Core {
    pub(super) fn send(&self, ev: SessionEvent) {
        self.events.send(ev);
    }

    /// Tells the user, once each, of the units of the opened modules whose DIEs were
    /// found unreadable since the last stop (corrupt DWARF costs that unit only; the
    /// user should know why its functions and variables are missing).
    pub(super) fn report_unreadable_units(&self) {
        for m in self.modules.all() {
            let Some(binary) = m.opened_binary() else {
                continue;
            };
            for unit in binary.take_unreadable_units() {
                self.send(SessionEvent::Output(format!(
                    "warning: {}: {unit}\n",
                    binary.path().display()
                )));
            }
        }
    }

    pub(super) fn stopped(
        &mut self,
        tid: Tid,
        cause: StopCause,
        at_bp: bool,
        return_value: Option<ReturnValue>,
    ) {
        self.stopped_with(tid, cause, at_bp, return_value, None);
    }

    pub(super) fn stopped_with(
        &mut self,
        tid: Tid,
        cause: StopCause,
        at_bp: bool,
        return_value: Option<ReturnValue>,
        description: Option<String>,
    ) {
        self.running = false;
        self.stop_shown = true;
        self.last_stop = Some((tid, at_bp));
        self.stop_at_user_bp = None;
        if !matches!(cause, StopCause::Signal(_)) {
            self.last_signal = None;
        }
        self.report_unreadable_units();
        self.send(SessionEvent::Stopped(Stop {
            tid,
            cause,
            return_value,
            description,
        }));
    }

    pub(super) fn clear_step(&mut self, t: &mut Tracer) {
        if let Some(plan) = self.step.take() {
            if let Some((addr, _)) = plan.temp {
                let _ = t.remove_breakpoint(RuntimeAddr(addr));
            }
        }
    }

    /// Resumes after an event nobody is shown (a false condition, a library load, a
    /// step's internal stop) — unless a pause asked for meanwhile is still owed: then
    /// that is the stop.
    pub(super) fn resume(&mut self, t: &mut Tracer) {
        if let Some(tid) = t.take_owed_pause() {
            self.clear_step(t);
            self.stopped(tid, StopCause::Pause, false, None);
            return;
        }
        self.running = true;
        self.at_stop = None;
        if let Err(e) = t.resume() {
            tracing::warn!("resuming: {e}");
        }
    }

    /// After a stop was sent: the threads and the stopped thread's frames, which every
    /// front-end asks for first, while the front-end is still forwarding the stop.
    pub(super) fn prepare_stop(&mut self, t: &mut Tracer) {
        let threads = t.threads();
        let frames = self.last_stop.and_then(|(tid, _)| {
            let first = self
                .frame_ids
                .fetch_add(FRAME_IDS_PER_TRACE, Ordering::Relaxed);
            unwind_thread(t, self, tid, first).ok().map(|f| (tid, f))
        });
        self.at_stop = Some(AtStop { threads, frames });
        // Unwinding read the units of the frames: one found unreadable is told now, not
        // at the next stop.
        self.report_unreadable_units();
    }

    pub(super) fn on_event(&mut self, t: &mut Tracer, ev: Event) {
        if !self.recording_end_told {
            if let Some(why) = t.recording_ended() {
                self.recording_end_told = true;
                if !ev.is_exit() {
                    self.send(SessionEvent::Output(format!("{why}\n")));
                }
            }
        }
        match ev {
            Event::Stopped { tid, reason } => self.on_stop(t, tid, reason),
            Event::ThreadCreated { tid, .. } => self.send(SessionEvent::ThreadStarted(tid)),
            Event::ThreadExited { tid } => self.send(SessionEvent::ThreadExited(tid)),
            Event::ForkDetached {
                child,
                vfork,
                stopped: true,
                ..
            } => self.send(SessionEvent::ChildForked { pid: child, vfork }),
            Event::ForkDetached {
                child,
                stopped: false,
                ..
            } => self.send(SessionEvent::ChildDetached { pid: child }),
            Event::Exited { code } => {
                self.exited = true;
                self.running = false;
                self.at_stop = None;
                self.send(SessionEvent::Exited { code });
            }
            Event::Signaled { signo, .. } => {
                self.exited = true;
                self.running = false;
                self.at_stop = None;
                self.send(SessionEvent::Signaled { signo });
            }
            _ => {}
        }
    }

    pub(super) fn on_stop(&mut self, t: &mut Tracer, tid: Tid, reason: tracer::StopReason) {
        use tracer::StopReason as R;
        match reason {
            R::Breakpoint { addr } => self.on_breakpoint(t, tid, addr.0),
            R::Step => self.on_step(t, tid),
            R::Attached => self.stopped(tid, StopCause::Attached, false, None),
            R::Exec { .. } => self.on_exec(t, tid),
            R::Entry => self.stopped(tid, StopCause::Entry, false, None),
            R::Paused => {
                self.clear_step(t);
                self.stopped(tid, StopCause::Pause, false, None);
            }
            R::Watchpoint { dr6 } => self.on_watchpoint(t, tid, dr6),
            R::Signal { signo, .. } => self.on_signal(t, tid, signo),
            R::GroupStop { signo } => self.on_group_stop(t, tid, signo),
            R::Replayed => {
                // A replay going forward cannot go on (docs/reverse.md): say why.
                self.clear_step(t);
                let why = t
                    .recording()
                    .and_then(|r| r.diverged)
                    .unwrap_or_else(|| "the replay stopped".into());
                self.send(SessionEvent::Output(format!("{why}\n")));
                self.stopped_with(tid, StopCause::Pause, false, None, Some(why));
            }
            _ => {
                self.clear_step(t);
                self.stopped(tid, StopCause::Pause, false, None);
            }
        }
    }

    /// The program called exec: its image, every module and every int3 are gone. Load
    /// the new executable, re-resolve every breakpoint in it (libraries follow through
    /// the dynamic linker's hook, as at launch) and keep running, as gdb does.
    pub(super) fn on_exec(&mut self, t: &mut Tracer, tid: Tid) {
        let info = t.info().clone();
        let binary = info
            .exe
            .as_ref()
            .map(|exe| Binary::open(exe).map(|b| (exe.clone(), Arc::new(b))));
        let (exe, binary) = match binary {
            Some(Ok(found)) => found,
            Some(Err(e)) => {
                tracing::warn!("after exec: cannot load the new program: {e}");
                self.stopped(tid, StopCause::Entry, false, None);
                return;
            }
            None => {
                tracing::warn!("after exec: the new program is unknown");
                self.stopped(tid, StopCause::Entry, false, None);
                return;
            }
        };
        let bias = LoadBias(info.load_bias.unwrap_or(0));
        self.modules = Modules::new(Module::with_binary(exe.clone(), 0, 0, bias, binary.clone()));
        self.modules.set_main_range(self.pid);
        self.modules.refresh(self.pid);
        self.scanned = self.modules.all().len();
        self.enums = Arc::new(Enumerators::new(binary));
        self.step = None;
        self.by_addr.clear();
        self.data_after_exec();
        self.exceptions.addrs.clear();
        let loaded: Vec<Arc<Module>> = self.modules.all().to_vec();
        self.plant_exceptions(t, &loaded);
        self.dl_hook = dl_debug_state(&self.modules, &info).filter(|&hook| {
            t.insert_breakpoint(RuntimeAddr(hook))
                .map_err(|e| tracing::warn!("cannot watch library loads at {hook:#x}: {e}"))
                .is_ok()
        });
        self.send(SessionEvent::Output(format!(
            "process {} is executing new program: {}\n",
            self.pid.0,
            exe.display()
        )));
        self.send(SessionEvent::Executed {
            program: exe.clone(),
        });
        let all: Vec<Arc<Module>> = self.modules.all().to_vec();
        self.jit_pending = true;
        let Core {
            bps,
            by_addr,
            source_map,
            events,
            ..
        } = self;
        for bp in bps.values_mut() {
            bp.addrs.clear();
            bp.scopes.clear();
            bp.jit_tried = false;
            if matches!(bp.key, BpKey::Address(_)) {
                // An address in the old image means nothing in the new one.
                continue;
            }
            let found = resolve_in(&all, &bp.key, source_map);
            for a in &found.addrs {
                match t.insert_breakpoint(*a) {
                    Ok(()) => {
                        bp.addrs.push(*a);
                        by_addr.entry(*a).or_default().push(bp.id);
                    }
                    Err(e) => tracing::warn!("planting a breakpoint at {a}: {e}"),
                }
            }
            let _ = events.send(SessionEvent::BreakpointResolved(BreakpointStatus {
                id: bp.id,
                verified: !bp.addrs.is_empty(),
                message: bp
                    .addrs
                    .is_empty()
                    .then(|| "pending: not found in the new program".to_string()),
                file: found.file,
                line: found.line,
                moved: found.moved,
                addresses: bp.addrs.iter().map(|a| a.0).collect(),
            }));
        }
        self.resume(t);
    }

    /// The hot path: decide on the tracer thread whether a hit stops.
    pub(super) fn on_breakpoint(&mut self, t: &mut Tracer, tid: Tid, addr: u64) {
        if Some(addr) == self.dl_hook {
            self.library_event(t);
        }
        // The return of a frame whose local is watched (the hidden breakpoint of the
        // watch's scope; recursion is told apart by the sp).
        let ended = self.scopes_returning_at(t, tid, addr);
        let stop_ids = self.user_hits(t, tid, addr);
        let ended = self.end_watches(t, &ended);
        if !stop_ids.is_empty() {
            self.clear_step(t);
            // Only function breakpoints hide inlined frames: gdb gives a source line's
            // or an address's breakpoint the innermost (inlined) function there, so
            // such a stop is shown inside the inlined call.
            let names: Option<Vec<String>> = stop_ids
                .iter()
                .map(|id| match self.bps.get(id).map(|b| &b.key) {
                    Some(BpKey::Function(name)) => Some(name.clone()),
                    _ => None,
                })
                .collect();
            self.stopped(tid, StopCause::Breakpoint(stop_ids), true, None);
            self.stop_at_user_bp = names;
            return;
        }
        if !ended.is_empty() {
            self.watch_scope_returned(t, tid, addr, ended);
            return;
        }
        if let Some(kind) = self.exceptions.at(addr) {
            self.on_exception(t, tid, kind);
            return;
        }
        if let Some(plan) = self.step.as_ref() {
            if let Some((temp, expected_sp)) = plan.temp {
                if temp == addr && plan.tid == tid {
                    let sp = t.regs(tid).map(|r| r.sp()).unwrap_or(0);
                    if expected_sp.is_none_or(|e| e == sp) {
                        self.temp_reached(t, tid);
                        return;
                    }
                }
            }
        }
        self.accelerate_pending(t);
        self.resume(t);
    }

    /// Places what the breakpoints not tried yet can use (`accelerate`): at a resume,
    /// before any thread runs, so no hit happens half-placed. A breakpoint without a
    /// condition gains only a faster resume from its hits, so it waits for no
    /// branch-target scan: until its modules' scans are done (started here, in the
    /// background) its hits step over the int3, and a later resume places the copies.
    pub(super) fn accelerate_pending(&mut self, t: &mut Tracer) {
        if !std::mem::take(&mut self.jit_pending) {
            return;
        }
        let mut ids = Vec::new();
        for b in self.bps.values().filter(|b| !b.jit_tried) {
            let waiting: Vec<Arc<Module>> = if b.condition.is_some() {
                Vec::new()
            } else {
                b.addrs
                    .iter()
                    .filter_map(|a| self.modules.find(a.0))
                    .filter(|m| !m.branch_targets_ready())
                    .collect()
            };
            if waiting.is_empty() {
                ids.push(b.id);
            } else {
                self.jit_pending = true;
                for m in waiting {
                    Module::scan_branch_targets_in_background(m);
                }
            }
        }
        for id in ids {
            accelerate(t, self, id);
        }
    }

    /// Libraries were loaded or unloaded: plant pending breakpoints in the new ones.
    pub(super) fn library_event(&mut self, t: &mut Tracer) {
        self.modules.refresh(self.pid);
        let all: Vec<Arc<Module>> = self.modules.all().to_vec();
        let new = all.get(self.scanned..).unwrap_or_default();
        self.scanned = all.len();
        if new.is_empty() {
            return;
        }
        self.plant_exceptions(t, new);
        let Core {
            bps,
            by_addr,
            source_map,
            events,
            jit_pending,
            ..
        } = self;
        for bp in bps.values_mut().filter(|b| b.addrs.is_empty()) {
            let found = resolve_in(new, &bp.key, source_map);
            plant_resolved(t, bp, found, by_addr, jit_pending, events);
        }
    }

    /// Counts the hit on every user breakpoint at `addr` and returns those that stop.
    pub(super) fn user_hits(&mut self, t: &mut Tracer, tid: Tid, addr: u64) -> Vec<BreakpointId> {
        let mut stop_ids = Vec::new();
        let Some(ids) = self.by_addr.get(&RuntimeAddr(addr)) else {
            return stop_ids;
        };
        let Core {
            bps,
            modules,
            events,
            enums,
            ..
        } = self;
        for id in ids {
            let Some(bp) = bps.get_mut(id) else { continue };
            if !bp.enabled {
                continue;
            }
            if let Some(cond) = &bp.condition {
                let sites = Sites {
                    function: bp.key.function(),
                    cache: &mut bp.scopes,
                };
                match eval_condition(t, tid, addr, modules, enums, sites, cond) {
                    Ok(false) => continue,
                    Ok(true) => {}
                    Err(e) => {
                        // Like gdb: a condition that cannot be evaluated stops, and says why.
                        let _ = events.send(SessionEvent::Output(format!(
                            "error in condition of breakpoint {}: {e}\n",
                            bp.id
                        )));
                    }
                }
            }
            // Going forward in a replay, the hits happened already: they are not
            // counted again and logpoints do not log again (docs/reverse.md) — nor is
            // the hit where the replay reaches the present, the live process's own.
            let replaying = t.is_replaying() || t.arrived_at_present();
            if !replaying {
                bp.hits += 1;
            }
            if let Some(hc) = bp.hit_condition {
                if !hc.allows(bp.hits) {
                    continue;
                }
            }
            if let (Some(_), true) = (&bp.log, replaying) {
                continue;
            }
            if let Some(log) = &bp.log {
                let sites = Sites {
                    function: bp.key.function(),
                    cache: &mut bp.scopes,
                };
                let text = render_log(t, tid, addr, modules, enums, sites, log);
                let _ = events.send(SessionEvent::Output(text));
                continue;
            }
            stop_ids.push(bp.id);
        }
        stop_ids
    }
}

/// The modules one `setBreakpoints` resolves in (main, then non-system libraries) and
/// their files' lines, resolved once.
#[derive(Default)]
pub(super) struct LineMemo {
    /// The main executable's module(s), taken on first use.
    pub(super) main_modules: Option<Vec<Arc<Module>>>,
    /// The loaded libraries that are not system libraries.
    pub(super) other_modules: Vec<Arc<Module>>,
    pub(super) main: FileLines,
    pub(super) others: FileLines,
}

/// Plants the addresses of `found` that `bp` does not have yet and, when any was
/// planted, reports the breakpoint's new status (its conditions move into the debuggee
/// at the next false hit). Runs on the tracer thread.
pub(super) fn plant_resolved(
    t: &mut Tracer,
    bp: &mut Bp,
    found: Resolution,
    by_addr: &mut HashMap<RuntimeAddr, Vec<BreakpointId>>,
    jit_pending: &mut bool,
    events: &route::EventTx,
) {
    let mut added = false;
    for a in &found.addrs {
        if bp.addrs.contains(a) {
            continue;
        }
        match t.insert_breakpoint(*a) {
            Ok(()) => {
                bp.addrs.push(*a);
                by_addr.entry(*a).or_default().push(bp.id);
                added = true;
            }
            Err(e) => tracing::warn!("planting a breakpoint at {a}: {e}"),
        }
    }
    if !added {
        return;
    }
    bp.addrs.sort_unstable();
    bp.jit_tried = false;
    *jit_pending = true;
    let _ = events.send(SessionEvent::BreakpointResolved(BreakpointStatus {
        id: bp.id,
        verified: true,
        message: None,
        file: found.file,
        line: found.line,
        moved: found.moved,
        addresses: bp.addrs.iter().map(|a| a.0).collect(),
    }));
}

/// Where a breakpoint resolved in some modules.
#[derive(Default)]
pub(super) struct Resolution {
    pub(super) addrs: Vec<RuntimeAddr>,
    pub(super) file: Option<PathBuf>,
    pub(super) line: Option<Line>,
    pub(super) moved: bool,
}

/// Every line of one file resolved at once, per module (by its index in the list
/// resolved in): a `setBreakpoints` of many lines reads the file's line tables once
/// instead of once per line.
pub(super) type FileLines = HashMap<usize, Vec<symbols::LineResolution>>;

/// `resolve_line(file, line)` answered from the whole file's resolutions: the first with
/// code at or after `line` (what `Binary::resolve_file_lines` promises).
pub(super) fn resolve_from(
    all: &[symbols::LineResolution],
    line: Line,
) -> Option<symbols::LineResolution> {
    let i = all.partition_point(|r| r.line < line);
    let mut r = all.get(i)?.clone();
    r.requested = line;
    Some(r)
}

/// From this much DWARF on, a function breakpoint set before the main executable's
/// background index is done is found through the ELF symbol table and completed when
/// the index is (see `index.rs`); below it, building the index takes a fraction of a
/// second and the answer is whole at once (every inlined copy in the response).
pub(super) const QUICK_LOOKUP_BYTES: u64 = 8 << 20;

/// Whether `b` is big enough that its full index is built in the background (see
/// [`QUICK_LOOKUP_BYTES`]). A split-DWARF program always is: its skeleton units say
/// nothing of the size of its `.dwo` files, and building the index opens every one.
pub(super) fn indexed_in_background(b: &Binary) -> bool {
    b.debug_info_bytes() >= QUICK_LOOKUP_BYTES || b.has_split_units()
}

/// Whether `m` is the main executable and its name table is built in the background
/// and not ready yet.
fn table_building(m: &Module, b: &Binary) -> bool {
    m.main && !b.has_index_cache() && indexed_in_background(b)
}

/// Function `name` of a binary whose name table is not ready, found without it: through
/// an index section (`.gdb_index`, `.debug_names`: the whole answer), its ELF symbol (its
/// out-of-line copies), or the units of its siblings' code. `None` when only the table
/// finds it. The inlined copies the first two miss are added when the table is done
/// (`index.rs`).
fn found_without_table(b: &Binary, name: &str) -> Option<Vec<symbols::Function>> {
    b.functions_by_index_section(name)
        .or_else(|| {
            b.functions_by_symbol_name(name)
                .ok()
                .filter(|f| !f.is_empty())
        })
        .or_else(|| b.functions_by_sibling_symbols(name))
}

/// Whether finding function `name` in module `m` would wait for its name table (see
/// [`resolve_in_with`]; libraries never wait). The units read to decide are kept
/// (`Binary::unit_functions`), so resolving after this walks none again.
pub(super) fn waits_for_index(m: &Module, name: &str) -> bool {
    m.binary()
        .is_some_and(|b| table_building(m, b) && found_without_table(b, name).is_none())
}

/// Resolves a breakpoint's request in `modules`.
pub(super) fn resolve_in(modules: &[Arc<Module>], key: &BpKey, map: &SourceMap) -> Resolution {
    resolve_in_with(modules, key, map, None)
}

/// [`resolve_in`], answering line requests from `memo` (filled on first use per module).
pub(super) fn resolve_in_with(
    modules: &[Arc<Module>],
    key: &BpKey,
    map: &SourceMap,
    mut memo: Option<&mut FileLines>,
) -> Resolution {
    let mut out = Resolution::default();
    for (index, m) in modules.iter().enumerate() {
        let Some(b) = m.binary() else { continue };
        match key {
            BpKey::Line(file, line) => {
                let Some(line) = Line::new(*line) else {
                    continue;
                };
                let res = match memo.as_deref_mut() {
                    Some(memo) => {
                        let all = memo
                            .entry(index)
                            .or_insert_with(|| b.resolve_file_lines(file, map).unwrap_or_default());
                        Ok(resolve_from(all, line))
                    }
                    None => b.resolve_line(file, line, map),
                };
                if let Ok(Some(res)) = res {
                    out.line = out.line.or(Some(res.line));
                    out.moved |= res.moved();
                    if out.file.is_none() {
                        out.file = res.locations.first().map(|l| l.file.clone());
                    }
                    out.addrs
                        .extend(res.locations.iter().map(|l| m.bias.to_runtime(l.addr)));
                }
            }
            BpKey::Address(_) => {}
            BpKey::Function(name) => {
                // A system library's DWARF (libc's separate debug file) is large: find
                // its functions by ELF symbol, reading only the units that match.
                // The main executable's name table may still be building in the
                // background: until it is, find the function without it when that can
                // be done, and wait for the table only when it cannot.
                // The name table (or a `.gdb_index`, `.debug_names`) names the units
                // that define the function: walking those gives the whole answer
                // (inlined copies too) at once.
                let found = if table_building(m, b) {
                    found_without_table(b, name).map_or_else(|| b.functions_by_name(name), Ok)
                } else if let Some(found) =
                    m.main.then(|| b.functions_by_index_section(name)).flatten()
                {
                    Ok(found)
                } else if !m.main && is_system(&m.path) {
                    b.functions_by_symbol_name(name)
                } else {
                    b.functions_by_name(name)
                };
                for f in found.unwrap_or_default() {
                    for a in f.breakpoint_addrs() {
                        out.addrs.push(m.bias.to_runtime(a));
                        if out.line.is_none() {
                            if let Ok(Some(loc)) = b.frame_location_for_addr(a) {
                                out.file = Some(loc.file);
                                out.line = loc.line;
                            }
                        }
                    }
                }
            }
        }
    }
    out.addrs.sort_unstable();
    out.addrs.dedup();
    out
}

/// What a condition needs at breakpoint address `addr`, computed once and kept.
///
/// `function` is the name of the function breakpoint being decided, if it is one: such a
/// stop is shown in the caller of inlined calls starting at the address
/// ([`unwind::hide_inlined_at_entry`]), so its condition is read in that frame, as gdb
/// reads it in the frame it shows.
pub(super) fn hit_site(
    module: &Module,
    binary: &Binary,
    addr: u64,
    function: Option<&str>,
    scopes: &mut HashMap<u64, Arc<HitSite>>,
) -> Result<Arc<HitSite>> {
    if let Some(s) = scopes.get(&addr) {
        return Ok(s.clone());
    }
    let file_pc = module.to_file(addr);
    let inline_index = match binary.function_at(file_pc).ok().flatten() {
        Some(f) => {
            let hidden = function.map_or(0, |name| unwind::inlined_hidden_at(&f, file_pc, name));
            (f.inlined.len() - hidden) as u32
        }
        None => 0,
    };
    let s = Arc::new(HitSite {
        scope: binary.scope_at(file_pc)?,
        inline_index,
        row: binary.unwind_row(file_pc).ok().flatten(),
    });
    scopes.insert(addr, s.clone());
    Ok(s)
}

/// Moves a breakpoint's condition into the debuggee at each of its addresses where it
/// can run there (see `crate::jit`); elsewhere the int3 stays.
pub(super) fn accelerate(t: &mut Tracer, c: &mut Core, id: BreakpointId) {
    let Core {
        bps,
        modules,
        enums,
        jit,
        ..
    } = c;
    let Some(bp) = bps.get_mut(&id) else { return };
    bp.jit_tried = true;
    let cond = bp
        .condition
        .as_ref()
        .filter(|_| *jit && bp.enabled && bp.hit_condition.is_none() && bp.log.is_none());
    for &RuntimeAddr(addr) in &bp.addrs {
        let module = modules.find(addr);
        if let Some(cond) = cond {
            let site = module.as_ref().and_then(|m| {
                let b = m.binary()?.clone();
                Some((m, hit_site(m, &b, addr, bp.key.function(), &mut bp.scopes)))
            });
            let outcome = match site {
                Some((m, Ok(site))) => crate::jit::accelerate(t, &**m, enums, &site, addr, cond),
                Some((_, Err(e))) => Err(e.to_string()),
                None => Err("no symbols at the site".into()),
            };
            match outcome {
                Ok(true) => {
                    tracing::debug!(addr, "breakpoint {id}: condition runs in the debuggee");
                    continue;
                }
                // Placed but not jumped to: its copy still serves resuming from hits.
                Ok(false) => {
                    tracing::debug!(addr, "breakpoint {id}: the jump cannot go in yet");
                    continue;
                }
                Err(why) => tracing::debug!(
                    addr,
                    "breakpoint {id}: condition stays with the debugger: {why}"
                ),
            }
        }
        // Every hit that resumes runs a copy of the site's instruction instead of
        // stepping over the int3.
        let placed = match &module {
            Some(m) => crate::jit::place_step_over(t, &**m, addr),
            None => Err("no module at the site".into()),
        };
        match placed {
            Ok(_) => tracing::debug!(addr, "breakpoint {id}: hits resume through a copy"),
            Err(why) => tracing::debug!(addr, "breakpoint {id}: stepped over after hits: {why}"),
        }
    }
}

/// A breakpoint's cache of its sites, and the name of the function it breaks on (see
/// [`hit_site`]).
pub(super) struct Sites<'a> {
    pub(super) function: Option<&'a str>,
    pub(super) cache: &'a mut HashMap<u64, Arc<HitSite>>,
}

/// Builds the expression environment of frame 0 at a breakpoint and runs `f` in it.
pub(super) fn with_frame0<R>(
    t: &mut Tracer,
    tid: Tid,
    addr: u64,
    modules: &Modules,
    enums: &Enumerators,
    sites: Sites<'_>,
    f: impl FnOnce(&Env<'_>) -> Result<R>,
) -> Result<R> {
    let module = modules
        .find(addr)
        .ok_or_else(|| Error::Eval("no module at the breakpoint".into()))?;
    let binary = module
        .binary()
        .ok_or_else(|| Error::Eval("no symbols at the breakpoint".into()))?;
    let site = hit_site(&module, binary, addr, sites.function, sites.cache)?;
    let general = FrameRegs::from_registers(&t.regs(tid)?);
    let cfa = site.row.as_ref().and_then(|r| r.cfa(&general).ok());
    // Thread-local variables in a condition or a log message are the hitting thread's.
    let thread_pointer = t.thread_pointer(tid).ok();
    let regs = LiveRegs {
        general: &general,
        tracer: t,
        tid,
    };
    let mem = TracerMemory(t);
    // Recovered from the caller's call site only if the expression reads an entry value.
    let entry = unwind::LazyEntryRegisters {
        regs: &general,
        pc: addr,
        row: site.row.as_ref(),
        module: &module,
        modules,
        mem: &mem,
        cell: std::cell::OnceCell::new(),
    };
    let all = modules.all();
    let tls = crate::tls::ThreadTls {
        mem: &mem,
        thread_pointer,
        modules: all,
    };
    let env = Env {
        binary,
        bias: module.bias,
        mem: &mem,
        regs: &regs,
        pc: addr,
        cfa,
        scope: &site.scope,
        inline_index: site.inline_index,
        enums: module.main.then_some(enums),
        entry_regs: Some(&entry),
        modules: Some(&all),
        tls: Some(&tls),
    };
    f(&env)
}

pub(super) fn eval_condition(
    t: &mut Tracer,
    tid: Tid,
    addr: u64,
    modules: &Modules,
    enums: &Enumerators,
    sites: Sites<'_>,
    cond: &expr::Expr,
) -> Result<bool> {
    with_frame0(t, tid, addr, modules, enums, sites, |env| {
        let v = env.eval(cond)?;
        env.truthy(&v)
    })
}

pub(super) fn render_log(
    t: &mut Tracer,
    tid: Tid,
    addr: u64,
    modules: &Modules,
    enums: &Enumerators,
    sites: Sites<'_>,
    parts: &[LogPart],
) -> String {
    let r = with_frame0(t, tid, addr, modules, enums, sites, |env| {
        let mut out = String::new();
        for p in parts {
            match p {
                LogPart::Text(s) => out.push_str(s),
                LogPart::Expr(e, _) => match env.eval(e) {
                    Ok(v) => out.push_str(&env.text(&v)),
                    Err(err) => out.push_str(&format!("<error: {err}>")),
                },
            }
        }
        out.push('\n');
        Ok(out)
    });
    r.unwrap_or_else(|e| format!("<error: {e}>\n"))
}
