//! What the owner reports about the session (stops, output, threads, exit, resumes by
//! other views), turned into DAP events.

use super::*;

impl Debugger {
    pub(crate) fn on_output(&mut self, chunk: Chunk) {
        match chunk {
            Chunk::Text { category, text } => self.out.event(
                "output",
                Some(json!({"category": category, "output": text})),
            ),
            Chunk::End => {
                if let Some(d) = self.debuggee.as_mut() {
                    d.open_streams = d.open_streams.saturating_sub(1);
                }
            }
            Chunk::Flushed => {}
        }
    }

    /// Forwards everything the stopped program has written so far, before its `stopped`
    /// event: each reader reads what is waiting and answers (bounded wait).
    pub(super) fn flush_output(&mut self, output_rx: &Receiver<Chunk>) {
        let asked = self
            .debuggee
            .as_ref()
            .map_or(0, |d| d.flushers.iter().filter(|f| f.request()).count());
        let deadline = Instant::now() + Duration::from_millis(200);
        let mut answered = 0;
        while answered < asked {
            let left = deadline.saturating_duration_since(Instant::now());
            match output_rx.recv_timeout(left) {
                Ok(Chunk::Flushed) => answered += 1,
                Ok(c @ Chunk::End) => {
                    answered += 1;
                    self.on_output(c);
                }
                Ok(c) => self.on_output(c),
                Err(_) => {
                    tracing::debug!("output flush: {answered} of {asked} readers answered");
                    break;
                }
            }
        }
    }

    /// An event of the session this adapter views.
    pub(crate) fn on_debuggee_event(&mut self, ev: DebugEvent, output_rx: &Receiver<Chunk>) {
        match ev {
            DebugEvent::Engine(ev) => self.on_engine_event(ev, output_rx),
            // Another view let the program run: what this client holds is stale.
            DebugEvent::Resumed { by } if by != self.view => {
                let tid = self
                    .debuggee
                    .as_ref()
                    .map(|d| d.focus.unwrap_or(Tid(d.session.pid().0)));
                self.before_run(tid);
                self.flush_after();
            }
            DebugEvent::Ended => self.on_debuggee_gone(),
            _ => {}
        }
    }

    pub(super) fn on_engine_event(&mut self, ev: SessionEvent, output_rx: &Receiver<Chunk>) {
        tracing::debug!(?ev, "debuggee event");
        match ev {
            SessionEvent::Stopped(stop) => {
                self.flush_output(output_rx);
                self.on_stop(stop)
            }
            SessionEvent::Output(text) => self.out.event(
                "output",
                Some(json!({"category": "console", "output": text})),
            ),
            SessionEvent::BreakpointResolved(status) => {
                if let Some(bp) = self.breakpoint_from_status(&status) {
                    self.out.event(
                        "breakpoint",
                        Some(json!({"reason": "changed", "breakpoint": bp})),
                    );
                }
            }
            SessionEvent::WatchScopeEnded(id) => self.on_watch_scope_ended(id),
            SessionEvent::ThreadStarted(tid) => {
                if let Some(d) = self.debuggee.as_mut() {
                    d.listed = None;
                }
                self.out.event(
                    "thread",
                    Some(json!({"reason": "started", "threadId": tid.0})),
                )
            }
            SessionEvent::ThreadExited(tid) => {
                if let Some(d) = self.debuggee.as_mut() {
                    d.listed = None;
                }
                self.out.event(
                    "thread",
                    Some(json!({"reason": "exited", "threadId": tid.0})),
                )
            }
            SessionEvent::Exited { code } => self.on_exit(code, None, output_rx),
            SessionEvent::Signaled { signo } => self.on_exit(128 + signo, Some(signo), output_rx),
            SessionEvent::Indexing { done, total } => self.on_indexing(done, total),
            SessionEvent::ChildForked { pid, vfork } => self.on_child_forked(pid, vfork),
            SessionEvent::Executed { .. } => self.on_child_exec(),
            SessionEvent::ChildDetached { pid } => self.on_child_detached(pid),
            other => tracing::debug!(?other, "debuggee event ignored"),
        }
    }

    /// The background index's progress as `progressStart` / `progressUpdate` /
    /// `progressEnd` (for a client that asked for progress). The build itself is not
    /// cancellable: a request that waits for it has a cancellable progress of its own
    /// (`hold.rs`).
    fn on_indexing(&mut self, done: usize, total: usize) {
        if self.indexing.is_none() && done < total {
            self.indexing = self.progress_start("Indexing debug information", &units(0, total));
        }
        let Some(id) = self.indexing.clone() else {
            return;
        };
        if done < total {
            let percentage = (done * 100).checked_div(total).unwrap_or(0);
            self.out.event(
                "progressUpdate",
                Some(json!({"progressId": id, "message": units(done, total),
                            "percentage": percentage})),
            );
        } else {
            self.out.event(
                "progressEnd",
                Some(json!({"progressId": id, "message": units(done, total)})),
            );
            self.indexing = None;
        }
    }

    pub(super) fn on_exit(&mut self, code: i32, signal: Option<i32>, output_rx: &Receiver<Chunk>) {
        let Some(mut d) = self.debuggee.take() else {
            return;
        };
        let out = self.out.clone();
        drain_output(output_rx, &mut d.open_streams, |c| {
            if let Chunk::Text { category, text } = c {
                out.event(
                    "output",
                    Some(json!({"category": category, "output": text})),
                );
            }
        });
        if let Some(signo) = signal {
            self.console(format!(
                "program terminated by signal {} ({})",
                engine::signals::signal_name(signo),
                engine::signals::signal_description(signo)
            ));
        } else {
            self.console(format!("program exited with code {code}"));
        }
        self.handles.invalidate();
        self.out.event("exited", Some(json!({"exitCode": code})));
        self.out.event("terminated", Some(json!({})));
    }

    pub(crate) fn on_debuggee_gone(&mut self) {
        if self.debuggee.take().is_some() {
            self.handles.invalidate();
            self.out.event("terminated", Some(json!({})));
        }
    }

    pub(super) fn on_stop(&mut self, stop: engine::Stop) {
        self.handles.invalidate();
        let step = stop.cause == StopCause::Step;
        let mut body = json!({"threadId": stop.tid.0, "allThreadsStopped": true});
        let (reason, description) = match &stop.cause {
            StopCause::Entry => ("entry", None),
            StopCause::Attached => ("entry", Some("attached".to_string())),
            StopCause::Step => ("step", None),
            StopCause::Pause => ("pause", None),
            StopCause::Restart => ("restart", stop.description.clone()),
            StopCause::Breakpoint(ids) => {
                let mut reason = "breakpoint";
                let mut dap_ids = Vec::new();
                for id in ids {
                    if let Some((dap_id, key)) = self.ids.of_engine(*id) {
                        dap_ids.push(dap_id.0);
                        if reason == "breakpoint" {
                            reason = key.stop_reason();
                        }
                    }
                }
                body["hitBreakpointIds"] = json!(dap_ids);
                (reason, None)
            }
            StopCause::DataBreakpoint(ids) => {
                let dap_ids: Vec<i64> = ids
                    .iter()
                    .filter_map(|id| self.ids.of_engine(*id).map(|(d, _)| d.0))
                    .collect();
                body["hitBreakpointIds"] = json!(dap_ids);
                ("data breakpoint", stop.description.clone())
            }
            // The data breakpoints are deleted (a `breakpoint` event said so): no ids
            // to name, gdb's words with the ids the client knew them by.
            StopCause::WatchScope(ids) => {
                let words: Vec<String> = ids
                    .iter()
                    .filter_map(|id| self.ids.of_engine(*id))
                    .map(|(d, _)| engine::watch::scope_ended_message(d.0))
                    .collect();
                ("data breakpoint", Some(words.join(" ")))
            }
            StopCause::Exception { kind, message } => {
                let (text, what) = match kind {
                    engine::ExceptionStop::RustPanic => ("panic", "Rust panic"),
                    engine::ExceptionStop::CppThrow => ("throw", "C++ exception thrown"),
                    engine::ExceptionStop::CppCatch => ("catch", "C++ exception caught"),
                    _ => ("exception", "exception"),
                };
                body["text"] = json!(text);
                (
                    "exception",
                    Some(match stop.description.clone().or_else(|| message.clone()) {
                        Some(m) => format!("{what}: {m}"),
                        None => what.to_string(),
                    }),
                )
            }
            StopCause::Signal(signo) => {
                body["text"] = json!(engine::signals::signal_name(*signo));
                (
                    "exception",
                    Some(stop.description.clone().unwrap_or_else(|| {
                        format!(
                            "{} ({})",
                            engine::signals::signal_name(*signo),
                            engine::signals::signal_description(*signo)
                        )
                    })),
                )
            }
            _ => ("pause", None),
        };
        body["reason"] = json!(reason);
        if let Some(description) = description {
            body["description"] = json!(description);
        }
        if let Some(d) = self.debuggee.as_mut() {
            d.focus = Some(stop.tid);
            d.stacks.clear();
            d.listed = None;
            d.return_value = stop.return_value.and_then(|r| r.value);
            d.signal = match stop.cause {
                StopCause::Signal(signo) => Some((stop.tid, signo)),
                _ => None,
            };
        }
        self.out.event("stopped", Some(body));
        // Libraries loaded since the last stop are told after the stop, not before: the
        // engine unwinds the stopped thread under its core lock right after it sends the
        // stop (`Core::prepare_stop`), and reading the modules needs that lock, so a
        // refresh first held `stopped` back for the whole unwind (~100 ms on ripgrep's
        // debug build). DAP allows `module` events at any time; a `stackTrace` sent after
        // `stopped` is answered after this refresh, from the frames the unwind kept.
        if !step {
            self.refresh_modules();
            self.flush_after();
        }
    }

    /// Sends `module` events for the libraries loaded or unloaded since the last look.
    pub(super) fn refresh_modules(&mut self) {
        let Some(d) = self.debuggee.as_mut() else {
            return;
        };
        let now = d.session.inspect().modules();
        let before: HashSet<&PathBuf> = d.modules.iter().map(|m| &m.path).collect();
        let after_paths: HashSet<&PathBuf> = now.iter().map(|m| &m.path).collect();
        let mut events = Vec::new();
        for m in &now {
            if !before.contains(&m.path) {
                events.push(json!({"reason": "new", "module": module_json(m)}));
            }
        }
        for m in &d.modules {
            if !after_paths.contains(&m.path) {
                events.push(json!({"reason": "removed", "module": module_json(m)}));
            }
        }
        d.modules = now;
        for e in events {
            self.after("module", e);
        }
    }
}

fn units(done: usize, total: usize) -> String {
    format!("{done} of {total} units")
}
