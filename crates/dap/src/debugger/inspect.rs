//! threads, stackTrace, scopes, variables, setVariable, setExpression, evaluate, source,
//! modules, completions, loadedSources, breakpointLocations: reading the stopped program.

use super::*;

impl Debugger {
    pub(crate) fn threads(&mut self, _: Option<NoArguments>) -> Result<ThreadsBody, Failure> {
        let Some(d) = self.debuggee.as_mut() else {
            return Ok(ThreadsBody {
                threads: Vec::new(),
            });
        };
        if let Some(listed) = &d.listed {
            return Ok(ThreadsBody {
                threads: listed
                    .iter()
                    .map(|(id, name)| Thread {
                        id: *id,
                        name: name.clone(),
                    })
                    .collect(),
            });
        }
        let tids = d.session.inspect().threads().map_err(fail)?;
        let pid = d.session.pid();
        let body = ThreadsBody {
            threads: tids
                .into_iter()
                .map(|tid| {
                    // A thread in a container also shows its id there: "main (1234, 7 in
                    // container)".
                    let inner = match &d.session {
                        Target::Live(_) => procman::containers::ns_tid(pid, tid.0),
                        Target::Core(_) => None,
                    };
                    let ids = match inner {
                        Some(inner) if inner != tid.0 => {
                            format!("{}, {inner} in container", tid.0)
                        }
                        _ => tid.0.to_string(),
                    };
                    Thread {
                        id: i64::from(tid.0),
                        name: d
                            .session
                            .inspect()
                            .thread_name(tid)
                            .map_or_else(|| format!("thread {ids}"), |n| format!("{n} ({ids})")),
                    }
                })
                .collect(),
        };
        // Kept only at a stop, where the list cannot change.
        if d.session.is_stopped() {
            d.listed = Some(
                body.threads
                    .iter()
                    .map(|t| (t.id, t.name.clone()))
                    .collect(),
            );
        }
        Ok(body)
    }

    /// The frames of a thread's stack, unwound once per stop.
    pub(super) fn frames_of(
        &mut self,
        tid: Tid,
    ) -> Result<Vec<(engine::Frame, DapFrameId)>, Failure> {
        let d = self
            .debuggee
            .as_mut()
            .ok_or_else(|| Failure("no program is being debugged".into()))?;
        if let Some(frames) = d.stacks.get(&tid) {
            return Ok(frames.clone());
        }
        let frames = d.session.inspect().stack_trace(tid).map_err(fail)?;
        let with_ids: Vec<(engine::Frame, DapFrameId)> = frames
            .into_iter()
            .enumerate()
            .map(|(index, f)| {
                let id = self.handles.add_frame(FrameHandle {
                    frame: f.id,
                    tid,
                    index,
                });
                (f, id)
            })
            .collect();
        d.stacks.insert(tid, with_ids.clone());
        Ok(with_ids)
    }

    pub(crate) fn stack_trace(
        &mut self,
        args: StackTraceArguments,
    ) -> Result<StackTraceBody, Failure> {
        let tid = self.thread(args.thread_id)?;
        {
            let d = self.debuggee()?;
            if !d.session.inspect().threads().map_err(fail)?.contains(&tid) {
                return Err(format!("unknown thread {}", args.thread_id).into());
            }
        }
        let frames = self.frames_of(tid)?;
        let total = frames.len();
        let start = usize::try_from(args.start_frame.unwrap_or(0).max(0)).unwrap_or(usize::MAX);
        let levels = match args.levels {
            Some(n) if n > 0 => usize::try_from(n).unwrap_or(usize::MAX),
            _ => usize::MAX,
        };
        let modules = self.debuggee()?.modules.clone();
        let stack_frames = frames
            .iter()
            .skip(start)
            .take(levels)
            .map(|(f, id)| self.stack_frame(f, *id, &modules))
            .collect();
        Ok(StackTraceBody {
            stack_frames,
            total_frames: total as i64,
        })
    }

    pub(super) fn stack_frame(
        &self,
        f: &engine::Frame,
        id: DapFrameId,
        modules: &[engine::ModuleInfo],
    ) -> StackFrame {
        let pc = f.pc.0;
        let source = f.file.as_deref().map(|p| self.local_source(p));
        let line = f.line.map_or(0, |l| i64::from(l.get()));
        let has_source = source
            .as_ref()
            .is_some_and(|s| s.presentation_hint.is_none())
            && line > 0;
        let name = match &f.function {
            Some(n) => n.clone(),
            None => format!("{pc:#x}"),
        };
        let module = modules
            .iter()
            .find(|m| (m.start..m.end).contains(&pc))
            .map(|m| m.path.display().to_string());
        StackFrame {
            id: id.0,
            name,
            line: if line > 0 { self.line_out(line) } else { 0 },
            column: if line > 0 {
                self.column_out(f.column.map_or(1, |c| i64::from(c.get())))
            } else {
                0
            },
            source,
            instruction_pointer_reference: Some(format!("{pc:#x}")),
            module_id: module,
            // A frame rebuilt from a tail call is shown, as gdb shows it, but subtly: it
            // has no registers of its own.
            presentation_hint: (!has_source || f.tail_call).then(|| "subtle".to_string()),
        }
    }

    pub(super) fn frame(&self, id: i64) -> Result<FrameHandle, Failure> {
        self.handles.frame(DapFrameId(id)).ok_or_else(|| {
            Failure(format!(
                "unknown frame id {id} (frames are valid until the program runs again)"
            ))
        })
    }

    pub(crate) fn scopes(&mut self, args: ScopesArguments) -> Result<ScopesBody, Failure> {
        let handle = self.frame(args.frame_id)?;
        let top = handle.index == 0 && self.debuggee()?.focus == Some(handle.tid);
        let scope = |h: &mut Handles, kind| {
            h.add_var(VarHandle::Scope {
                frame: handle.frame,
                kind,
                top,
            })
            .0
        };
        // (name, hint, kind, expensive): registers and a unit's statics are fetched
        // only when the client opens them.
        const SCOPES: [(&str, &str, ScopeKind, bool); 4] = [
            ("Locals", "locals", ScopeKind::Locals, false),
            ("Arguments", "arguments", ScopeKind::Arguments, false),
            ("Globals and statics", "globals", ScopeKind::Globals, true),
            ("Registers", "registers", ScopeKind::Registers, true),
        ];
        let scopes = SCOPES
            .iter()
            .map(|&(name, hint, kind, expensive)| Scope {
                name: name.into(),
                presentation_hint: Some(hint.into()),
                variables_reference: scope(&mut self.handles, kind),
                named_variables: (kind == ScopeKind::Registers).then_some(17),
                expensive,
            })
            .collect();
        Ok(ScopesBody { scopes })
    }

    pub(super) fn var_handle(&self, reference: i64) -> Result<VarHandle, Failure> {
        self.handles.var(VarRef(reference)).cloned().ok_or_else(|| {
            Failure(format!(
                "unknown variables reference {reference} (values are valid until the program runs again)"
            ))
        })
    }

    /// A DAP variable for an engine value (a handle for its children when it has any).
    pub(super) fn variable(
        &mut self,
        v: engine::Value,
        frame: Option<FrameId>,
        evaluate_name: Option<String>,
    ) -> Variable {
        let indexed = v.indexed;
        let reference = v.children.map_or(0, |c| {
            self.handles
                .add_var(VarHandle::Value {
                    value: c,
                    frame,
                    evaluate_name: evaluate_name.clone(),
                    indexed,
                })
                .0
        });
        let count = v.child_count.and_then(|c| i64::try_from(c).ok());
        Variable {
            name: v.name,
            value: v.rendered,
            type_name: (!v.type_name.is_empty()).then_some(v.type_name),
            evaluate_name,
            variables_reference: reference,
            named_variables: if reference != 0 && !indexed {
                count
            } else {
                None
            },
            indexed_variables: if reference != 0 && indexed {
                count
            } else {
                None
            },
            memory_reference: v.address.map(|a| format!("{a:#x}")),
        }
    }

    pub(crate) fn variables(&mut self, args: VariablesArguments) -> Result<VariablesBody, Failure> {
        let handle = self.var_handle(args.variables_reference)?;
        let start = u64::try_from(args.start.unwrap_or(0)).unwrap_or(0);
        let count = args
            .count
            .filter(|c| *c > 0)
            .and_then(|c| u64::try_from(c).ok());
        let d = self.debuggee()?;
        let session = d.session.clone();
        let variables = match handle {
            VarHandle::Scope { frame, kind, top } => {
                if args.filter.as_deref() == Some("indexed") {
                    return Ok(VariablesBody {
                        variables: Vec::new(),
                    });
                }
                let mut values = session.inspect().variables(frame, kind).map_err(fail)?;
                if kind == ScopeKind::Locals && top {
                    if let Some(mut rv) = d.return_value.clone() {
                        rv.name = format!("{} returned", rv.name);
                        values.insert(0, rv);
                    }
                }
                let end = count.map_or(values.len(), |c| {
                    usize::try_from(start.saturating_add(c)).unwrap_or(usize::MAX)
                });
                values
                    .into_iter()
                    .enumerate()
                    .filter(|(i, _)| (*i as u64) >= start && *i < end)
                    .map(|(_, v)| {
                        let eval = scope_evaluate_name(&v.name, kind);
                        self.variable(v, Some(frame), eval)
                    })
                    .collect()
            }
            VarHandle::Value {
                value,
                frame,
                evaluate_name,
                indexed,
            } => {
                match args.filter.as_deref() {
                    Some("indexed") if !indexed => {
                        return Ok(VariablesBody {
                            variables: Vec::new(),
                        })
                    }
                    Some("named") if indexed => {
                        return Ok(VariablesBody {
                            variables: Vec::new(),
                        })
                    }
                    _ => {}
                }
                let values = session
                    .inspect()
                    .children(value, start, count)
                    .map_err(fail)?;
                values
                    .into_iter()
                    .map(|v| {
                        let eval = evaluate_name
                            .as_deref()
                            .and_then(|p| child_evaluate_name(p, &v.name));
                        self.variable(v, frame, eval)
                    })
                    .collect()
            }
        };
        Ok(VariablesBody { variables })
    }

    pub(super) fn assigned(
        &mut self,
        v: engine::Value,
        frame: FrameId,
        target: &str,
    ) -> SetVariableBody {
        let var = self.variable(v, Some(frame), Some(target.to_string()));
        if self.client.invalidated {
            // Other views of the same memory (a pointee, an alias) may have changed too.
            self.after("invalidated", json!({"areas": ["variables"]}));
        }
        SetVariableBody {
            value: var.value,
            type_name: var.type_name,
            variables_reference: var.variables_reference,
            named_variables: var.named_variables,
            indexed_variables: var.indexed_variables,
            memory_reference: var.memory_reference,
        }
    }

    pub(crate) fn set_variable(
        &mut self,
        args: SetVariableArguments,
    ) -> Result<SetVariableBody, Failure> {
        let handle = self.var_handle(args.variables_reference)?;
        let (frame, target) = match handle {
            VarHandle::Scope { frame, kind, .. } => {
                let Some(target) = scope_evaluate_name(&args.name, kind) else {
                    return Err(format!("'{}' cannot be assigned here", args.name).into());
                };
                (frame, target)
            }
            VarHandle::Value {
                frame: Some(frame),
                evaluate_name: Some(parent),
                ..
            } => {
                let Some(target) = child_evaluate_name(&parent, &args.name) else {
                    return Err(format!("'{}' cannot be assigned", args.name).into());
                };
                (frame, target)
            }
            VarHandle::Value { .. } => {
                return Err(format!("'{}' cannot be assigned", args.name).into())
            }
        };
        let v = self
            .live()?
            .engine()
            .set_variable(frame, &target, &args.value)
            .map_err(fail)?;
        Ok(self.assigned(v, frame, &target))
    }

    /// The frame an expression is evaluated in: the given one, else the innermost frame
    /// of the thread that stopped.
    pub(super) fn eval_frame(&mut self, frame_id: Option<i64>) -> Result<FrameId, Failure> {
        if let Some(id) = frame_id {
            return Ok(self.frame(id)?.frame);
        }
        let focus = self
            .debuggee()?
            .focus
            .ok_or_else(|| Failure("the program is running".into()))?;
        let frames = self.frames_of(focus)?;
        frames
            .first()
            .map(|(f, _)| f.id)
            .ok_or_else(|| Failure("the stopped thread has no frames".into()))
    }

    pub(crate) fn set_expression(
        &mut self,
        args: SetExpressionArguments,
    ) -> Result<SetVariableBody, Failure> {
        let frame = self.eval_frame(args.frame_id)?;
        let v = self
            .live()?
            .engine()
            .set_variable(frame, &args.expression, &args.value)
            .map_err(fail)?;
        Ok(self.assigned(v, frame, &args.expression))
    }

    pub(crate) fn evaluate(&mut self, args: EvaluateArguments) -> Result<EvaluateBody, Failure> {
        let expression = args.expression.trim();
        if expression.is_empty() {
            return Err("nothing to evaluate".into());
        }
        if args.context.as_deref() == Some("repl") {
            if let Some(line) = args.expression.trim_start().strip_prefix('>') {
                return self.write_stdin(line.strip_prefix(' ').unwrap_or(line));
            }
        }
        let frame = self.eval_frame(args.frame_id)?;
        let v = self
            .debuggee()?
            .session
            .inspect()
            .evaluate(frame, expression)
            .map_err(fail)?;
        if v.error && args.context.as_deref() == Some("hover") {
            // A hover shows a value or nothing.
            return Err(v.rendered.into());
        }
        let var = self.variable(v, Some(frame), Some(expression.to_string()));
        Ok(EvaluateBody {
            result: var.value,
            type_name: var.type_name,
            variables_reference: var.variables_reference,
            named_variables: var.named_variables,
            indexed_variables: var.indexed_variables,
            memory_reference: var.memory_reference,
        })
    }

    /// `> text` in the debug console: `text` and a newline to the program's stdin; a
    /// lone `>` ends its input (end of file: Ctrl-D on a terminal, closing a pipe).
    pub(super) fn write_stdin(&mut self, line: &str) -> Result<EvaluateBody, Failure> {
        use std::io::Write;
        let d = self
            .debuggee
            .as_mut()
            .ok_or("no program is being debugged")?;
        let stdin = d
            .stdin
            .as_mut()
            .ok_or("the program's stdin is not the debug console's")?;
        let end = line.is_empty();
        let is_tty = {
            use std::os::fd::AsRawFd;
            // SAFETY: isatty on a descriptor we own.
            unsafe { libc::isatty(stdin.as_raw_fd()) == 1 }
        };
        let result = if end && !is_tty {
            d.stdin = None;
            "stdin closed".to_string()
        } else {
            let bytes: Vec<u8> = if end {
                vec![4]
            } else {
                format!("{line}\n").into_bytes()
            };
            stdin
                .write_all(&bytes)
                .map_err(|e| format!("cannot write to the program's stdin: {e}"))?;
            if end {
                "end of input sent".to_string()
            } else {
                String::new()
            }
        };
        Ok(EvaluateBody {
            result,
            type_name: None,
            variables_reference: 0,
            named_variables: None,
            indexed_variables: None,
            memory_reference: None,
        })
    }

    pub(crate) fn source(&mut self, args: SourceArguments) -> Result<SourceBody, Failure> {
        let path = args
            .source
            .and_then(|s| s.path)
            .filter(|p| !p.is_empty())
            .ok_or_else(|| {
                Failure(format!(
                    "unknown source reference {} (tandem gives out none)",
                    args.source_reference
                ))
            })?;
        let content =
            std::fs::read_to_string(&path).map_err(|e| format!("cannot read {path}: {e}"))?;
        Ok(SourceBody {
            content,
            mime_type: None,
        })
    }

    pub(crate) fn modules(
        &mut self,
        args: Option<ModulesArguments>,
    ) -> Result<ModulesBody, Failure> {
        let Some(d) = self.debuggee.as_mut() else {
            return Ok(ModulesBody {
                modules: Vec::new(),
                total_modules: 0,
            });
        };
        let all = d.session.inspect().modules();
        d.modules = all.clone();
        let start = args
            .as_ref()
            .and_then(|a| a.start_module)
            .and_then(|s| usize::try_from(s).ok())
            .unwrap_or(0);
        let count = args
            .as_ref()
            .and_then(|a| a.module_count)
            .filter(|c| *c > 0)
            .and_then(|c| usize::try_from(c).ok())
            .unwrap_or(usize::MAX);
        Ok(ModulesBody {
            total_modules: all.len() as i64,
            modules: all.iter().skip(start).take(count).map(module).collect(),
        })
    }

    pub(crate) fn completions(
        &mut self,
        args: CompletionsArguments,
    ) -> Result<CompletionsBody, Failure> {
        let frame = match args.frame_id {
            Some(id) => Some(self.frame(id)?.frame),
            None => self.eval_frame(None).ok(),
        };
        // The text before the cursor; columns count UTF-16 code units.
        let column = if self.client.columns_start_at0 {
            args.column
        } else {
            args.column - 1
        };
        let units: Vec<u16> = args.text.encode_utf16().collect();
        let upto = usize::try_from(column.max(0)).unwrap_or(0).min(units.len());
        let prefix = String::from_utf16_lossy(&units[..upto]);
        let word: usize = prefix
            .chars()
            .rev()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .map(char::len_utf16)
            .sum();
        let start = upto - word;
        let items = self.live()?.engine().completions(frame, &prefix);
        Ok(CompletionsBody {
            targets: items
                .into_iter()
                .map(|c| CompletionItem {
                    label: c.label,
                    kind: Some(
                        match c.kind {
                            engine::CompletionKind::Variable => "variable",
                            engine::CompletionKind::Function => "function",
                            engine::CompletionKind::Type => "class",
                            engine::CompletionKind::Field => "field",
                        }
                        .to_string(),
                    ),
                    start: Some(if self.client.columns_start_at0 {
                        start as i64
                    } else {
                        start as i64 + 1
                    }),
                    length: Some(word as i64),
                })
                .collect(),
        })
    }

    pub(crate) fn loaded_sources(
        &mut self,
        _: Option<NoArguments>,
    ) -> Result<LoadedSourcesBody, Failure> {
        let Some(d) = self.debuggee.as_ref() else {
            return Ok(LoadedSourcesBody {
                sources: Vec::new(),
            });
        };
        let files = d.session.live()?.engine().sources();
        Ok(LoadedSourcesBody {
            sources: files.iter().map(|f| self.local_source(f)).collect(),
        })
    }

    pub(crate) fn breakpoint_locations(
        &mut self,
        args: BreakpointLocationsArguments,
    ) -> Result<BreakpointLocationsBody, Failure> {
        let Some(path) = args.source.path.as_deref() else {
            return Err("breakpointLocations needs a source path".into());
        };
        let first = self.line_in(args.line);
        let last = args.end_line.map_or(first, |l| self.line_in(l));
        let Some(d) = self.debuggee.as_ref() else {
            return Ok(BreakpointLocationsBody {
                breakpoints: Vec::new(),
            });
        };
        let lines = d
            .session
            .live()?
            .engine()
            .breakpoint_lines(Path::new(path))
            .map_err(fail)?;
        Ok(BreakpointLocationsBody {
            breakpoints: lines
                .into_iter()
                .map(|l| i64::from(l.get()))
                .filter(|l| (first..=last).contains(l))
                .map(|line| BreakpointLocation {
                    line: self.line_out(line),
                })
                .collect(),
        })
    }
}
