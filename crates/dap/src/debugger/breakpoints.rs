//! setBreakpoints, setFunctionBreakpoints, setInstructionBreakpoints,
//! setExceptionBreakpoints, exceptionInfo, dataBreakpointInfo, setDataBreakpoints: what the
//! client asked for, kept across launches and planted when a program runs.

use super::*;

impl Debugger {
    pub(super) fn breakpoint_from_status(
        &mut self,
        status: &engine::BreakpointStatus,
    ) -> Option<Breakpoint> {
        let (id, key) = self.ids.of_engine(status.id)?.clone();
        let (source, line) = match &key {
            BreakpointKey::Line(file, line) => (
                self.source_bps
                    .get(file)
                    .map(|(s, _)| s.clone())
                    .or_else(|| Some(self.local_source(file))),
                status.line.map_or(*line, |l| i64::from(l.get())),
            ),
            _ => (
                status.file.as_deref().map(|f| self.local_source(f)),
                status.line.map_or(0, |l| i64::from(l.get())),
            ),
        };
        Some(Breakpoint {
            id: Some(id.0),
            verified: status.verified,
            message: status.message.clone(),
            source,
            line: (line > 0).then(|| self.line_out(line)),
            instruction_reference: status.addresses.first().map(|a| format!("{a:#x}")),
            reason: None,
        })
    }

    /// Records which engine breakpoint `key` became, and describes it for the client.
    pub(super) fn bind_status(
        &mut self,
        st: &engine::BreakpointStatus,
        key: BreakpointKey,
    ) -> Breakpoint {
        self.ids.bind(st.id, &key);
        self.breakpoint_from_status(st)
            .unwrap_or_else(|| Breakpoint::unverified(st.message.clone()))
    }

    pub(super) fn apply_stored_breakpoints(&mut self) {
        let files: Vec<PathBuf> = self.source_bps.keys().cloned().collect();
        let mut changed = Vec::new();
        for file in files {
            if let Ok(bps) = self.apply_source(&file) {
                changed.extend(bps);
            }
        }
        // Those that would wait for the background index are set when it is done.
        if !self.function_bps.is_empty() && !self.hold_stored_functions() {
            if let Ok(bps) = self.apply_functions() {
                changed.extend(bps);
            }
        }
        if !self.instruction_bps.is_empty() {
            if let Ok(bps) = self.apply_instructions() {
                changed.extend(bps);
            }
        }
        if !self.data_bps.is_empty() {
            if let Ok(bps) = self.apply_data() {
                changed.extend(bps);
            }
        }
        if let Err(e) = self.apply_signal_filters() {
            self.console(format!("cannot set the signal filters: {}", e.0));
        }
        for bp in changed {
            self.after("breakpoint", json!({"reason": "changed", "breakpoint": bp}));
        }
    }

    pub(super) fn pending(
        &mut self,
        key: BreakpointKey,
        source: Option<Source>,
        line: Option<i64>,
    ) -> Breakpoint {
        Breakpoint {
            id: Some(self.ids.id_for(&key).0),
            verified: false,
            message: Some("pending: resolved when the program starts".into()),
            source,
            line,
            instruction_reference: None,
            reason: Some("pending".into()),
        }
    }

    pub(crate) fn set_breakpoints(
        &mut self,
        args: SetBreakpointsArguments,
    ) -> Result<BreakpointsBody, Failure> {
        let Some(path) = args.source.path.clone().filter(|p| !p.is_empty()) else {
            return Err(
                "setBreakpoints needs a source path (tandem gives out no source references)".into(),
            );
        };
        let specs = match (args.breakpoints, args.lines) {
            (Some(b), _) => b,
            (None, Some(lines)) => lines
                .into_iter()
                .map(|line| types::SourceBreakpoint {
                    line,
                    column: None,
                    condition: None,
                    hit_condition: None,
                    log_message: None,
                })
                .collect(),
            (None, None) => Vec::new(),
        };
        let file = PathBuf::from(&path);
        self.source_bps
            .insert(file.clone(), (args.source.clone(), specs));
        let breakpoints = self.apply_source(&file)?;
        if self
            .source_bps
            .get(&file)
            .is_some_and(|(_, specs)| specs.is_empty())
        {
            self.source_bps.remove(&file);
        }
        Ok(BreakpointsBody { breakpoints })
    }

    pub(super) fn apply_source(&mut self, file: &Path) -> Result<Vec<Breakpoint>, Failure> {
        let Some((source, specs)) = self.source_bps.get(file).cloned() else {
            return Ok(Vec::new());
        };
        let lines: Vec<i64> = specs.iter().map(|s| self.line_in(s.line)).collect();
        let Some(d) = self.debuggee.as_ref() else {
            return Ok(lines
                .iter()
                .map(|&line| {
                    self.pending(
                        BreakpointKey::Line(file.to_path_buf(), line),
                        Some(source.clone()),
                        (1..=i64::from(u32::MAX))
                            .contains(&line)
                            .then(|| self.line_out(line)),
                    )
                })
                .collect());
        };
        let engine_specs: Vec<engine::SourceBreakpoint> = specs
            .iter()
            .zip(&lines)
            .map(|(s, &line)| engine::SourceBreakpoint {
                line: u32::try_from(line).unwrap_or(0),
                condition: s.condition.clone(),
                hit_condition: s.hit_condition.clone(),
                log_message: s.log_message.clone(),
            })
            .collect();
        // The owner tells every view (the language server's hints) where they bound.
        let statuses = d
            .session
            .live()?
            .set_line_breakpoints(file, &engine_specs)
            .map_err(fail)?;
        Ok(statuses
            .iter()
            .zip(&lines)
            .map(|(st, &line)| {
                let id = self
                    .ids
                    .bind(st.id, &BreakpointKey::Line(file.to_path_buf(), line));
                let bound = st.line.map_or(line, |l| i64::from(l.get()));
                let message = if u32::try_from(line).map_or(true, |l| l == 0) {
                    Some(format!("line {} does not exist", self.line_out(line)))
                } else {
                    st.message.clone()
                };
                Breakpoint {
                    id: Some(id.0),
                    verified: st.verified,
                    message,
                    source: Some(source.clone()),
                    // A line the engine cannot take (past u32) is not echoed back.
                    line: (1..=i64::from(u32::MAX))
                        .contains(&bound)
                        .then(|| self.line_out(bound)),
                    instruction_reference: st.addresses.first().map(|a| format!("{a:#x}")),
                    reason: (!st.verified).then(|| "pending".to_string()),
                }
            })
            .collect())
    }

    pub(crate) fn set_function_breakpoints(
        &mut self,
        args: SetFunctionBreakpointsArguments,
    ) -> Result<BreakpointsBody, Failure> {
        self.function_bps = args.breakpoints;
        Ok(BreakpointsBody {
            breakpoints: self.apply_functions()?,
        })
    }

    pub(super) fn apply_functions(&mut self) -> Result<Vec<Breakpoint>, Failure> {
        let specs = self.function_bps.clone();
        let Some(d) = self.debuggee.as_ref() else {
            return Ok(specs
                .iter()
                .map(|s| self.pending(BreakpointKey::Function(s.name.clone()), None, None))
                .collect());
        };
        let engine_specs: Vec<engine::FunctionBreakpoint> = specs
            .iter()
            .map(|s| engine::FunctionBreakpoint {
                name: s.name.trim().to_string(),
                condition: s.condition.clone(),
                hit_condition: s.hit_condition.clone(),
            })
            .collect();
        let statuses = d
            .session
            .live()?
            .engine()
            .set_function_breakpoints(&engine_specs)
            .map_err(fail)?;
        Ok(statuses
            .iter()
            .zip(&specs)
            .map(|(st, s)| self.bind_status(st, BreakpointKey::Function(s.name.clone())))
            .collect())
    }

    pub(crate) fn set_instruction_breakpoints(
        &mut self,
        args: SetInstructionBreakpointsArguments,
    ) -> Result<BreakpointsBody, Failure> {
        self.instruction_bps = args.breakpoints;
        Ok(BreakpointsBody {
            breakpoints: self.apply_instructions()?,
        })
    }

    pub(super) fn apply_instructions(&mut self) -> Result<Vec<Breakpoint>, Failure> {
        let specs = self.instruction_bps.clone();
        let mut addrs = Vec::new();
        let mut wanted = Vec::new();
        for s in &specs {
            let base = parse_address(&s.instruction_reference)?;
            let address = base.wrapping_add_signed(s.offset.unwrap_or(0));
            addrs.push(address);
            wanted.push(engine::InstructionBreakpoint {
                address,
                condition: s.condition.clone(),
                hit_condition: s.hit_condition.clone(),
            });
        }
        let Some(d) = self.debuggee.as_ref() else {
            return Ok(addrs
                .iter()
                .map(|a| self.pending(BreakpointKey::Instruction(*a), None, None))
                .collect());
        };
        let statuses = d
            .session
            .live()?
            .engine()
            .set_instruction_breakpoints(&wanted)
            .map_err(fail)?;
        Ok(statuses
            .iter()
            .zip(&addrs)
            .map(|(st, addr)| {
                let mut bp = self.bind_status(st, BreakpointKey::Instruction(*addr));
                bp.instruction_reference = Some(format!("{addr:#x}"));
                bp
            })
            .collect())
    }

    pub(crate) fn set_exception_breakpoints(
        &mut self,
        args: SetExceptionBreakpointsArguments,
    ) -> Result<Option<BreakpointsBody>, Failure> {
        let mut filters = args.filters;
        filters.extend(
            args.filter_options
                .unwrap_or_default()
                .into_iter()
                .map(|o| o.filter_id),
        );
        let breakpoints = filters
            .iter()
            .map(|f| {
                let ok = crate::filters::filter(f).is_some();
                Breakpoint {
                    verified: ok,
                    ..Breakpoint::unverified(
                        (!ok).then(|| format!("unknown exception filter '{f}'")),
                    )
                }
            })
            .collect();
        self.signal_filters = Some(filters);
        self.apply_signal_filters()?;
        Ok(Some(BreakpointsBody { breakpoints }))
    }

    /// The signals that stop: the filters set, or the fatal ones by default.
    pub(super) fn apply_signal_filters(&mut self) -> Result<(), Failure> {
        let Some(d) = self.debuggee.as_ref() else {
            return Ok(());
        };
        // Until the client sets filters, the defaults the capabilities announce apply;
        // once it does, its set replaces them (as VS Code expects: it sends the filters
        // marked `default` plus the ticked ones).
        let chosen: Vec<&crate::filters::Filter> = match &self.signal_filters {
            Some(ids) => ids
                .iter()
                .filter_map(|f| crate::filters::filter(f))
                .collect(),
            None => crate::filters::FILTERS
                .iter()
                .filter(|f| f.default)
                .collect(),
        };
        let signals: Vec<i32> = chosen
            .iter()
            .filter_map(|f| match f.event {
                crate::filters::FilterEvent::Signal(s) => Some(s),
                crate::filters::FilterEvent::Exception(_) => None,
            })
            .collect();
        d.session
            .live()?
            .engine()
            .set_signal_stops(&signals)
            .map_err(fail)?;
        let stops: Vec<engine::ExceptionStop> = chosen
            .iter()
            .filter_map(|f| match f.event {
                crate::filters::FilterEvent::Exception(k) => Some(k),
                crate::filters::FilterEvent::Signal(_) => None,
            })
            .collect();
        // Not planted yet (libstdc++ not loaded) is fine: the engine plants them when
        // the library loads.
        d.session
            .live()?
            .engine()
            .set_exception_stops(&stops)
            .map_err(fail)?;
        Ok(())
    }

    pub(crate) fn exception_info(
        &mut self,
        args: ExceptionInfoArguments,
    ) -> Result<ExceptionInfoBody, Failure> {
        let tid = self.thread(args.thread_id)?;
        if let Some(e) = self.live()?.engine().last_exception(tid) {
            let id = match e.kind {
                engine::ExceptionStop::RustPanic => "rust-panic",
                engine::ExceptionStop::CppThrow => "cpp-throw",
                _ => "cpp-catch",
            };
            let description = match (&e.type_name, &e.message) {
                (Some(t), Some(m)) => format!("{t}: {m}"),
                (Some(t), None) => t.clone(),
                (None, Some(m)) => m.clone(),
                (None, None) => id.to_string(),
            };
            return Ok(ExceptionInfoBody {
                exception_id: id.into(),
                description: Some(description),
                break_mode: "always".into(),
                details: Some(ExceptionDetails {
                    message: e.message,
                    type_name: e.type_name,
                    evaluate_name: None,
                    stack_trace: None,
                }),
            });
        }
        let info = self.live()?.engine().exception_info(tid).ok_or_else(|| {
            Failure(format!(
                "thread {} did not stop for a signal",
                args.thread_id
            ))
        })?;
        Ok(ExceptionInfoBody {
            exception_id: info.name.clone(),
            description: Some(info.description.clone()),
            break_mode: "always".into(),
            details: Some(ExceptionDetails {
                message: Some(info.description),
                type_name: Some(info.name),
                evaluate_name: None,
                stack_trace: None,
            }),
        })
    }

    pub(crate) fn data_breakpoint_info(
        &mut self,
        args: DataBreakpointInfoArguments,
    ) -> Result<DataBreakpointInfoBody, Failure> {
        let unavailable = |why: String| DataBreakpointInfoBody {
            data_id: None,
            description: why,
            access_types: None,
            can_persist: None,
        };
        let Some(d) = self.debuggee.as_ref() else {
            return Ok(unavailable("no program is being debugged".into()));
        };
        let Ok(session) = d.session.live().cloned() else {
            return Ok(unavailable(
                "a core file does not run: nothing can be watched".into(),
            ));
        };
        let info = if args.as_address == Some(true) {
            let Ok(address) = parse_address(&args.name) else {
                return Ok(unavailable(format!("'{}' is not an address", args.name)));
            };
            let size = args.bytes.and_then(|b| u64::try_from(b).ok()).unwrap_or(8);
            session
                .engine()
                .data_breakpoint_info_for_address(address, size)
        } else {
            let (frame, expression) = match args.variables_reference.filter(|r| *r > 0) {
                Some(r) => match self.var_handle(r)? {
                    VarHandle::Scope { frame, kind, .. } => {
                        match scope_evaluate_name(&args.name, kind) {
                            Some(e) if kind != ScopeKind::Registers => (Some(frame), e),
                            _ => {
                                return Ok(unavailable(format!("'{}' is not in memory", args.name)))
                            }
                        }
                    }
                    VarHandle::Value {
                        frame,
                        evaluate_name: Some(parent),
                        ..
                    } => match child_evaluate_name(&parent, &args.name) {
                        Some(e) => (frame, e),
                        None => {
                            return Ok(unavailable(format!("'{}' cannot be watched", args.name)))
                        }
                    },
                    VarHandle::Value { .. } => {
                        return Ok(unavailable(format!("'{}' cannot be watched", args.name)))
                    }
                },
                None => {
                    let frame = match args.frame_id {
                        Some(id) => Some(self.frame(id)?.frame),
                        None => self.eval_frame(None).ok(),
                    };
                    (frame, args.name.clone())
                }
            };
            session.engine().data_breakpoint_info(frame, &expression)
        };
        Ok(match info {
            Ok(info) => DataBreakpointInfoBody {
                data_id: Some(info.data_id()),
                description: info.description.clone(),
                access_types: Some(
                    info.access_types
                        .iter()
                        .map(|a| access_name(*a).to_string())
                        .collect(),
                ),
                can_persist: Some(false),
            },
            Err(e) => unavailable(e.to_string()),
        })
    }

    pub(crate) fn set_data_breakpoints(
        &mut self,
        args: SetDataBreakpointsArguments,
    ) -> Result<BreakpointsBody, Failure> {
        self.data_bps = args.breakpoints;
        Ok(BreakpointsBody {
            breakpoints: self.apply_data()?,
        })
    }

    pub(super) fn apply_data(&mut self) -> Result<Vec<Breakpoint>, Failure> {
        let specs = self.data_bps.clone();
        let mut wanted = Vec::new();
        for s in &specs {
            let (address, size) = engine::watch::parse_data_id(&s.data_id).ok_or_else(|| {
                Failure(format!(
                    "'{}' is not a data id from dataBreakpointInfo",
                    s.data_id
                ))
            })?;
            let access = match s.access_type.as_deref() {
                Some("read") => engine::DataAccess::Read,
                Some("readWrite") => engine::DataAccess::ReadWrite,
                None | Some("write") => engine::DataAccess::Write,
                Some(other) => return Err(format!("unknown access type '{other}'").into()),
            };
            wanted.push(engine::DataBreakpoint {
                address,
                size,
                access,
                condition: s.condition.clone(),
                hit_condition: s.hit_condition.clone(),
            });
        }
        let keys: Vec<BreakpointKey> = specs.iter().map(data_key).collect();
        let Some(d) = self.debuggee.as_ref() else {
            return Ok(keys
                .into_iter()
                .map(|k| self.pending(k, None, None))
                .collect());
        };
        let statuses = d
            .session
            .live()?
            .engine()
            .set_data_breakpoints(&wanted)
            .map_err(fail)?;
        Ok(statuses
            .iter()
            .zip(&keys)
            .map(|(st, key)| {
                let id = self.ids.bind(st.id, key);
                Breakpoint {
                    id: Some(id.0),
                    verified: st.verified,
                    message: st.message.clone(),
                    source: None,
                    line: None,
                    instruction_reference: None,
                    reason: None,
                }
            })
            .collect())
    }
}

impl Debugger {
    /// The engine deleted a data breakpoint whose frame is gone (a watched local's
    /// function returned, or a `longjmp` left it): the client hears that it is removed,
    /// with gdb's words on the console, and it is no longer set again with the others.
    pub(super) fn on_watch_scope_ended(&mut self, id: engine::BreakpointId) {
        let Some((dap_id, key)) = self.ids.of_engine(id).cloned() else {
            return;
        };
        self.data_bps.retain(|s| data_key(s) != key);
        self.ids.forget(&key);
        self.out.event(
            "breakpoint",
            Some(json!({"reason": "removed", "breakpoint": {"id": dap_id.0, "verified": false}})),
        );
        self.console(engine::watch::scope_ended_message(dap_id.0));
    }
}

/// What a data breakpoint is set as: its data id and access.
fn data_key(s: &types::DataBreakpoint) -> BreakpointKey {
    BreakpointKey::Data(format!(
        "{}:{}",
        s.data_id,
        s.access_type.as_deref().unwrap_or("write")
    ))
}
