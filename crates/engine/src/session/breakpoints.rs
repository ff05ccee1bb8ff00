//! Breakpoints of a session: line, function and instruction breakpoints resolved in
//! every module, installed on the tracer thread, enabled and disabled.

use super::*;

impl Session {
    /// Enables or disables a breakpoint: a disabled one keeps its id, locations and hit
    /// count, but its hits are neither counted nor stop (nor log).
    pub fn set_breakpoint_enabled(&self, id: BreakpointId, enabled: bool) -> Result<()> {
        let mut c = lock(&self.core);
        if let Some(bp) = c.data.get_mut(id) {
            bp.enabled = enabled;
            return Ok(());
        }
        let bp = c
            .bps
            .get_mut(&id)
            .ok_or_else(|| Error::Eval(format!("no breakpoint {id}")))?;
        bp.enabled = enabled;
        Ok(())
    }

    /// The hit counts of the line breakpoints, each at the line its first location is
    /// on. Read from the session's state, without a round trip to the tracer thread.
    pub fn line_breakpoint_hits(&self) -> Vec<LineHits> {
        let c = lock(&self.core);
        let mut out: Vec<LineHits> = c
            .bps
            .values()
            .filter_map(|bp| {
                let BpKey::Line(file, requested) = &bp.key else {
                    return None;
                };
                let bound = bp.addrs.first().and_then(|a| {
                    let m = c.modules.find(a.0)?;
                    m.binary()?
                        .frame_location_for_addr(m.to_file(a.0))
                        .ok()??
                        .line
                });
                let line = bound.or_else(|| Line::new(*requested))?;
                Some(LineHits {
                    id: bp.id,
                    file: file.clone(),
                    line,
                    hits: bp.hits,
                })
            })
            .collect();
        out.sort_by_key(|h| h.id);
        out
    }

    /// Sets the instruction breakpoints (runtime addresses, each with an optional
    /// condition and hit condition), replacing the ones set before.
    pub fn set_instruction_breakpoints(
        &self,
        specs: &[InstructionBreakpoint],
    ) -> Result<Vec<BreakpointStatus>> {
        let mut wanted = Vec::new();
        let mut statuses = Vec::new();
        for spec in specs {
            let a = spec.address;
            let (file, line) = {
                let c = lock(&self.core);
                c.modules
                    .find(a)
                    .and_then(|m| {
                        let loc = m.binary()?.frame_location_for_addr(m.to_file(a)).ok()??;
                        Some((Some(loc.file), loc.line))
                    })
                    .unwrap_or((None, None))
            };
            let mut status = BreakpointStatus {
                id: BreakpointId(0),
                verified: true,
                message: None,
                file,
                line,
                moved: false,
                addresses: vec![a],
            };
            let compiled = self.compile(
                spec.condition.as_deref(),
                spec.hit_condition.as_deref(),
                None,
            );
            let (condition, hit, log) = match compiled {
                Ok(c) => c,
                Err(e) => {
                    status.message = Some(e.to_string());
                    (None, None, None)
                }
            };
            statuses.push(status);
            wanted.push((BpKey::Address(a), vec![RuntimeAddr(a)], condition, hit, log));
        }
        let ids = self.install(wanted, |k| matches!(k, BpKey::Address(_)))?;
        for (s, id) in statuses.iter_mut().zip(ids) {
            s.id = id;
        }
        Ok(statuses)
    }

    /// Sets the line breakpoints of one source file, replacing the ones set before in
    /// that file (the DAP `setBreakpoints` semantics). Ids stay the same for lines set again.
    pub fn set_line_breakpoints(
        &self,
        file: &Path,
        specs: &[SourceBreakpoint],
    ) -> Result<Vec<BreakpointStatus>> {
        let file = self.source_path(file);
        let mut wanted = Vec::new();
        let mut statuses = Vec::new();
        let mut memo = LineMemo::default();
        for spec in specs {
            let key = BpKey::Line(file.clone(), spec.line);
            let mut status = BreakpointStatus {
                id: BreakpointId(0),
                verified: false,
                message: None,
                file: None,
                line: None,
                moved: false,
                addresses: Vec::new(),
            };
            let mut addrs = Vec::new();
            if spec.line == 0 {
                status.message = Some("line 0 does not exist".into());
            } else {
                let found = if specs.len() > 1 {
                    self.resolve_line_now(&key, &mut memo)
                } else {
                    self.resolve_now(&key)
                };
                if found.addrs.is_empty() {
                    status.message = Some(format!(
                        "pending: no code at or after line {} in {} in the loaded modules",
                        spec.line,
                        file.display()
                    ));
                }
                status.line = found.line;
                status.moved = found.moved;
                status.file = found.file;
                addrs = found.addrs;
            }
            let compiled = self.compile(
                spec.condition.as_deref(),
                spec.hit_condition.as_deref(),
                spec.log_message.as_deref(),
            );
            let (condition, hit, log) = match compiled {
                Ok(c) => c,
                Err(e) => {
                    status.message = Some(e.to_string());
                    (None, None, None)
                }
            };
            status.verified = !addrs.is_empty();
            status.addresses = addrs.iter().map(|a| a.0).collect();
            wanted.push((key, addrs, condition, hit, log));
            statuses.push(status);
        }
        let group = file.clone();
        let ids = self.install(
            wanted,
            move |k| matches!(k, BpKey::Line(f, _) if *f == group),
        )?;
        for (s, id) in statuses.iter_mut().zip(ids) {
            s.id = id;
        }
        Ok(statuses)
    }

    /// The first of `names` whose function breakpoint would wait for the main
    /// executable's name table, still building in the background: a front-end can hold
    /// the request with progress (and let it be cancelled) instead of blocking on
    /// [`Session::set_function_breakpoints`]. `None` when none would wait (the table is
    /// ready, or each name is found without it), which costs what resolving would; the
    /// units read to decide are kept for the resolution.
    pub fn function_waiting_for_index(&self, names: &[&str]) -> Option<String> {
        if !self.is_indexing() {
            return None;
        }
        let main: Vec<Arc<Module>> = lock(&self.core)
            .modules
            .all()
            .iter()
            .filter(|m| m.main)
            .cloned()
            .collect();
        names
            .iter()
            .find(|name| main.iter().any(|m| waits_for_index(m, name)))
            .map(|name| name.to_string())
    }

    /// Whether the main executable's name table is building in the background (an
    /// `Indexing` event with `done == total` follows when it is done).
    pub fn is_indexing(&self) -> bool {
        self.index.building.load(Ordering::Acquire)
    }

    /// How far the background build of the name table is, while it is built: (units
    /// gathered, units of the main executable).
    pub fn index_progress(&self) -> Option<(usize, usize)> {
        self.is_indexing().then(|| {
            (
                self.index.units.load(Ordering::Relaxed),
                self.main.unit_count(),
            )
        })
    }

    /// Sets the function breakpoints, replacing every function breakpoint set before.
    pub fn set_function_breakpoints(
        &self,
        specs: &[FunctionBreakpoint],
    ) -> Result<Vec<BreakpointStatus>> {
        let mut wanted = Vec::new();
        let mut statuses = Vec::new();
        for spec in specs {
            let mut status = BreakpointStatus {
                id: BreakpointId(0),
                verified: false,
                message: None,
                file: None,
                line: None,
                moved: false,
                addresses: Vec::new(),
            };
            let found = self.resolve_now(&BpKey::Function(spec.name.clone()));
            status.file = found.file;
            status.line = found.line;
            let addrs = found.addrs;
            if addrs.is_empty() {
                status.message = Some(format!(
                    "pending: no function named '{}' in the loaded modules",
                    spec.name
                ));
            }
            let (condition, hit, log) = match self.compile(
                spec.condition.as_deref(),
                spec.hit_condition.as_deref(),
                None,
            ) {
                Ok(c) => c,
                Err(e) => {
                    status.message = Some(e.to_string());
                    (None, None, None)
                }
            };
            status.verified = !addrs.is_empty();
            status.addresses = addrs.iter().map(|a| a.0).collect();
            wanted.push((
                BpKey::Function(spec.name.clone()),
                addrs,
                condition,
                hit,
                log,
            ));
            statuses.push(status);
        }
        let ids = self.install(wanted, |k| matches!(k, BpKey::Function(_)))?;
        for (s, id) in statuses.iter_mut().zip(ids) {
            s.id = id;
        }
        Ok(statuses)
    }

    #[allow(clippy::type_complexity)]
    pub(super) fn compile(
        &self,
        condition: Option<&str>,
        hit: Option<&str>,
        log: Option<&str>,
    ) -> Result<(
        Option<expr::Expr>,
        Option<HitCondition>,
        Option<Vec<LogPart>>,
    )> {
        let is_type = self.is_type_fn();
        let condition = condition
            .filter(|c| !c.trim().is_empty())
            .map(|c| expr::parse(c, &is_type))
            .transpose()?;
        let hit = hit
            .filter(|h| !h.trim().is_empty())
            .map(HitCondition::parse)
            .transpose()?;
        let log = log.map(|l| parse_log(l, &is_type)).transpose()?;
        Ok((condition, hit, log))
    }

    pub(super) fn install(
        &self,
        wanted: Vec<Wanted>,
        replaces: impl Fn(&BpKey) -> bool + Send + 'static,
    ) -> Result<Vec<BreakpointId>> {
        let core = self.core.clone();
        self.handle
            .call(move |t: &mut Tracer| {
                // Every text write happens with every thread stopped: a running program
                // is stopped for the edit (nothing is reported) and resumed after it.
                t.edit_text(|t| install_now(t, &core, wanted, replaces))
            })
            .map_err(Error::from)?
            .map_err(Error::from)
    }
}

/// One breakpoint a request asks for: where, the addresses it resolved to, its condition,
/// hit condition and log message.
pub(super) type Wanted = (
    BpKey,
    Vec<RuntimeAddr>,
    Option<expr::Expr>,
    Option<HitCondition>,
    Option<Vec<LogPart>>,
);

pub(super) fn install_now(
    t: &mut Tracer,
    core: &Mutex<Core>,
    wanted: Vec<Wanted>,
    replaces: impl Fn(&BpKey) -> bool,
) -> Vec<BreakpointId> {
    let functions = wanted.iter().any(|w| matches!(w.0, BpKey::Function(_)));
    let mut c = lock(core);
    // Old breakpoints of this group, by key (to keep their ids and hit counts).
    let old_ids: Vec<BreakpointId> = c
        .bps
        .values()
        .filter(|b| replaces(&b.key))
        .map(|b| b.id)
        .collect();
    let mut old: HashMap<BpKey, Bp> = HashMap::new();
    for id in old_ids {
        if let Some(bp) = c.bps.remove(&id) {
            for a in &bp.addrs {
                let _ = t.remove_breakpoint(*a);
            }
            old.insert(bp.key.clone(), bp);
        }
    }
    let mut ids = Vec::new();
    for (key, addrs, condition, hit_condition, log) in wanted {
        // Setting the same location again keeps its id, hit count and
        // enabled state.
        let (id, hits, enabled) = match old.remove(&key) {
            Some(b) => (b.id, b.hits, b.enabled),
            None => {
                let id = BreakpointId(c.next_bp);
                c.next_bp += 1;
                (id, 0, true)
            }
        };
        let mut planted = Vec::new();
        for a in addrs {
            match t.insert_breakpoint(a) {
                Ok(()) => planted.push(a),
                Err(e) => tracing::warn!("planting a breakpoint at {a}: {e}"),
            }
        }
        c.bps.insert(
            id,
            Bp {
                id,
                key,
                addrs: planted,
                condition,
                hit_condition,
                log,
                hits,
                enabled,
                scopes: HashMap::new(),
                jit_tried: false,
            },
        );
        ids.push(id);
    }
    // A function breakpoint resolved without the index, which was finished before it
    // got here, would miss the completion that came with the index: complete it now.
    if functions {
        index::complete_function_breakpoints(t, &mut c);
    }
    let mut by_addr: HashMap<RuntimeAddr, Vec<BreakpointId>> = HashMap::new();
    for bp in c.bps.values() {
        for a in &bp.addrs {
            by_addr.entry(*a).or_default().push(bp.id);
        }
    }
    c.by_addr = by_addr;
    for id in &ids {
        if c.bps.get(id).is_some_and(|bp| bp.condition.is_some()) {
            // A condition that can run in the debuggee saves a stop at every hit
            // from the first one on: worth the branch-target scan now.
            accelerate(t, &mut c, *id);
        } else {
            // Only the resume from a hit gains from a copy of the site: placed at the
            // first resume (`Core::accelerate_pending`), so the first stop does not
            // wait for the module's branch-target scan, which starts now beside it.
            c.jit_pending = true;
            if let Some(bp) = c.bps.get(id) {
                for &RuntimeAddr(addr) in &bp.addrs {
                    if let Some(m) = c.modules.find(addr) {
                        crate::modules::Module::scan_branch_targets_in_background(m);
                    }
                }
            }
        }
    }
    ids
}

impl Session {
    /// [`Session::resolve_now`] for a line, with the file's lines resolved once per module
    /// for all the lines of one request.
    pub(super) fn resolve_line_now(&self, key: &BpKey, memo: &mut LineMemo) -> Resolution {
        if memo.main_modules.is_none() {
            let modules: Vec<Arc<Module>> = lock(&self.core).modules.all().to_vec();
            let (main, rest): (Vec<Arc<Module>>, Vec<Arc<Module>>) =
                modules.into_iter().partition(|m| m.main);
            memo.other_modules = rest.into_iter().filter(|m| !is_system(&m.path)).collect();
            memo.main_modules = Some(main);
        }
        let main = memo.main_modules.as_deref().unwrap_or_default();
        let found = resolve_in_with(main, key, &self.source_map, Some(&mut memo.main));
        if !found.addrs.is_empty() {
            return found;
        }
        resolve_in_with(
            &memo.other_modules,
            key,
            &self.source_map,
            Some(&mut memo.others),
        )
    }

    /// Resolves in the main executable, else in the loaded non-system libraries, else
    /// (functions only) in the loaded system libraries such as libc.
    pub(super) fn resolve_now(&self, key: &BpKey) -> Resolution {
        let modules: Vec<Arc<Module>> = lock(&self.core).modules.all().to_vec();
        let (main, rest): (Vec<Arc<Module>>, Vec<Arc<Module>>) =
            modules.into_iter().partition(|m| m.main);
        let (system, others): (Vec<Arc<Module>>, Vec<Arc<Module>>) =
            rest.into_iter().partition(|m| is_system(&m.path));
        let found = resolve_in(&main, key, &self.source_map);
        if !found.addrs.is_empty() {
            return found;
        }
        let found = resolve_in(&others, key, &self.source_map);
        if !found.addrs.is_empty() || !matches!(key, BpKey::Function(_)) {
            return found;
        }
        resolve_in(&system, key, &self.source_map)
    }
}
