//! launch, attach, configurationDone, restart, disconnect, terminate: starting and ending the
//! session through the process manager, and where the program's output goes.

use super::*;

impl Debugger {
    pub(crate) fn launch(&mut self, args: LaunchArguments) -> Result<(), Failure> {
        if self.debuggee.is_some() {
            return Err("a program is already being debugged".into());
        }
        let options = launch::launch_options(&args)?;
        self.launch_with(args, options)
    }

    /// Launches with options already made from `args`.
    pub(super) fn launch_with(
        &mut self,
        args: LaunchArguments,
        mut options: engine::LaunchOptions,
    ) -> Result<(), Failure> {
        if self.debuggee.is_some() || self.fetching() {
            return Err("a program is already being debugged".into());
        }
        let terminal = match args.console.as_deref() {
            Some("integratedTerminal") => Some("integrated"),
            Some("externalTerminal") => Some("external"),
            _ => None,
        };
        let terminal = match terminal {
            Some(kind) if self.client.run_in_terminal => {
                options.stdio = procman::tracer::StdioMode::Pty;
                Some(kind)
            }
            Some(_) => {
                self.console(
                    "the client cannot run a terminal (no runInTerminal support): \
                     the program's output goes to the debug console",
                );
                None
            }
            None => None,
        };
        options.follow_children = self.children_policy(children::ChildrenArgs {
            follow: args.follow_children.as_deref(),
            filter: args.child_filter.as_deref(),
            kind: args.kind.as_deref(),
            source_map: args.source_map_json(),
            cwd: args.cwd.as_deref(),
            is_child: false,
        })?;
        let source_map = options.source_map.clone();
        let record = options.record;
        let program = options.program.display().to_string();
        let cwd = options.cwd.clone();
        let progress = self.progress_start("Launching", &program);
        let session = self.manager.launch_debug(options);
        self.progress_end(progress);
        let session = session.map_err(|e| format!("cannot launch {program}: {e}"))?;
        self.launch_args = Some(args.clone());
        let stdio = session.engine().take_stdio();
        self.start_debuggee(session, args.stop_on_entry, source_map, "launch");
        if record {
            // Going back is a capability of this session only: the client hears of it
            // once the recording runs (initialize cannot know).
            self.after(
                "capabilities",
                json!({"capabilities": {"supportsStepBack": true, "supportsRestartFrame": true}}),
            );
        }
        if let Some(stdio) = stdio {
            self.connect_output(stdio, terminal, &program, cwd);
        }
        Ok(())
    }

    /// Sends the program's output to the debug console, or to a terminal of the
    /// client's through `runInTerminal`.
    pub(super) fn connect_output(
        &mut self,
        stdio: procman::tracer::Stdio,
        terminal: Option<&str>,
        program: &str,
        cwd: Option<PathBuf>,
    ) {
        let mut open_streams = 0;
        let mut flushers = Vec::new();
        let mut keep_stdin = None;
        match (terminal, stdio.stdin, stdio.stdout) {
            (Some(kind), Some(master), Some(out)) => {
                match crate::terminal::start(master, out, self.output_tx.clone()) {
                    Ok(t) => {
                        open_streams = 1;
                        let cwd = cwd
                            .or_else(|| std::env::current_dir().ok())
                            .map(|c| c.display().to_string())
                            .unwrap_or_else(|| "/".into());
                        let title = Path::new(program).file_name().map_or_else(
                            || program.to_string(),
                            |n| n.to_string_lossy().into_owned(),
                        );
                        let seq = self.out.request(
                            "runInTerminal",
                            json!({"kind": kind, "title": title, "cwd": cwd, "args": t.args}),
                        );
                        self.terminal_request = Some((seq, t.give_up));
                    }
                    Err(e) => self.console(format!("cannot set up the terminal: {e}")),
                }
            }
            (_, stdin, stdout) => {
                // The debug console writes to stdin (`> text`); a program reading it
                // from a terminal waits for a line, from a pipe it may read the end.
                keep_stdin = stdin;
                for (file, category) in [(stdout, "stdout"), (stdio.stderr, "stderr")] {
                    if let Some(file) = file {
                        if let Some(f) =
                            output::spawn_flushable_reader(file, category, self.output_tx.clone())
                        {
                            flushers.push(f);
                            open_streams += 1;
                        }
                    }
                }
            }
        }
        if let Some(d) = self.debuggee.as_mut() {
            d.open_streams = open_streams;
            d.flushers = flushers;
            d.stdin = keep_stdin;
        }
    }

    pub(crate) fn attach(&mut self, args: AttachArguments) -> Result<(), Failure> {
        if self.debuggee.is_some() {
            return Err("a program is already being debugged".into());
        }
        if let Some(gone) = self.handed_over_child_gone(&args) {
            // A child that ended before its session started: the session ends cleanly.
            self.console(format!(
                "child process {gone} ended before its session started"
            ));
            self.after("terminated", json!({}));
            return Ok(());
        }
        let pid = launch::attach_pid(&args)?;
        self.attach_to(args, pid)
    }

    /// Attaches to the process `args` named, found already.
    pub(super) fn attach_to(
        &mut self,
        args: AttachArguments,
        pid: procman::tracer::Pid,
    ) -> Result<(), Failure> {
        if self.debuggee.is_some() || self.fetching() {
            return Err("a program is already being debugged".into());
        }
        let source_map = launch::attach_source_map(&args, pid);
        let follow_children = self.children_policy(children::ChildrenArgs {
            follow: args.follow_children.as_deref(),
            filter: args.child_filter.as_deref(),
            kind: args.kind.as_deref(),
            source_map: args.source_map_json(),
            cwd: args.cwd.as_deref(),
            is_child: args.tandem_child.is_some(),
        })?;
        let options = engine::AttachOptions {
            handed_over: args.tandem_child.is_some(),
            vfork_child: args.tandem_child.as_ref().is_some_and(|c| c.vfork),
            follow_children,
        };
        let progress = self.progress_start("Attaching", &format!("process {}", pid.0));
        let session = self
            .manager
            .attach_debug_with(pid, source_map.clone(), options);
        self.progress_end(progress);
        let session = session.map_err(|e| format!("cannot attach to process {}: {e}", pid.0))?;
        self.launch_args = None;
        self.start_debuggee(session, args.stop_on_entry, source_map, "attach");
        Ok(())
    }

    pub(super) fn progress_start(&mut self, title: &str, message: &str) -> Option<String> {
        if !self.client.progress {
            return None;
        }
        self.progress += 1;
        let id = format!("tandem-{}", self.progress);
        self.out.event(
            "progressStart",
            Some(json!({"progressId": id, "title": title, "message": message})),
        );
        Some(id)
    }

    pub(super) fn progress_end(&mut self, id: Option<String>) {
        if let Some(id) = id {
            self.out
                .event("progressEnd", Some(json!({"progressId": id})));
        }
    }

    pub(super) fn start_debuggee(
        &mut self,
        session: Arc<DebugSession>,
        stop_on_entry: bool,
        source_map: SourceMap,
        method: &str,
    ) {
        let pid = session.pid();
        let row = procman::read_process(pid);
        let mut name = row
            .as_ref()
            .and_then(|r| r.exe.clone())
            .map_or_else(|| format!("process {}", pid.0), |e| e.display().to_string());
        // A process in another PID namespace: its pid there too.
        if let Some(inner) = row.as_ref().map(|r| r.inner_pid()) {
            if inner != pid {
                name = format!("{name} ({} in its container)", inner.0);
            }
        }
        self.ids.unbind_all();
        self.handles.invalidate();
        self.debuggee = Some(Debuggee {
            events: session.subscribe(),
            launched: session.launched(),
            session: Target::Live(session),
            stop_on_entry,
            started: false,
            source_map,
            focus: Some(Tid(pid.0)),
            stacks: HashMap::new(),
            listed: None,
            return_value: None,
            signal: None,
            modules: Vec::new(),
            open_streams: 0,
            flushers: Vec::new(),
            stdin: None,
        });
        self.after(
            "process",
            json!({
                "name": name,
                "systemProcessId": pid.0,
                "isLocalProcess": true,
                "startMethod": method,
                "pointerSize": 64,
            }),
        );
        if let Ok(threads) = self.debuggee().map(|d| d.session.inspect().threads()) {
            for tid in threads.unwrap_or_default() {
                self.after("thread", json!({"reason": "started", "threadId": tid.0}));
            }
        }
        self.refresh_modules();
        self.apply_stored_breakpoints();
        if self.configured {
            self.start_running();
        }
    }

    /// After configuration: report the entry stop, or let the program run.
    pub(super) fn start_running(&mut self) {
        let Some(d) = self.debuggee.as_mut() else {
            return;
        };
        if d.started {
            return;
        }
        d.started = true;
        let Ok(live) = d.session.live().cloned() else {
            return;
        };
        let pid = live.pid();
        if d.stop_on_entry {
            let tid = Tid(pid.0);
            d.focus = Some(tid);
            self.after(
                "stopped",
                json!({"reason": "entry", "threadId": tid.0, "allThreadsStopped": true}),
            );
        } else if let Err(e) = live.resume(self.view) {
            self.console(format!("cannot start the program: {e}"));
        } else {
            self.after(
                "continued",
                json!({"threadId": pid.0, "allThreadsContinued": true}),
            );
        }
    }

    pub(crate) fn configuration_done(&mut self, _: Option<NoArguments>) -> Result<(), Failure> {
        self.configured = true;
        self.start_running();
        Ok(())
    }

    pub(crate) fn restart(&mut self, args: Option<RestartArguments>) -> Result<(), Failure> {
        let new_args = match args.and_then(|a| a.arguments) {
            Some(v) => Some(
                serde_json::from_value::<LaunchArguments>(v)
                    .map_err(|e| format!("invalid arguments for restart: {e}"))?,
            ),
            None => None,
        };
        let Some(args) = new_args.or_else(|| self.launch_args.clone()) else {
            return Err("restart works for launched programs; detach and attach again".into());
        };
        if let Some(d) = self.debuggee.take() {
            if !d.launched {
                self.debuggee = Some(d);
                return Err("restart works for launched programs; detach and attach again".into());
            }
            if let Ok(live) = d.session.live() {
                let _ = live.terminate();
            }
        }
        self.configured = true;
        self.launch(args)
    }

    pub(crate) fn disconnect(&mut self, args: Option<DisconnectArguments>) -> Result<(), Failure> {
        let args = args.unwrap_or_default();
        let Some(launched) = self.debuggee.as_ref().map(|d| d.launched) else {
            return Ok(());
        };
        let terminate = args.terminate_debuggee.unwrap_or(launched);
        self.end_same_children(terminate);
        if terminate {
            self.end_children();
        }
        if let Some(d) = self.debuggee.take() {
            let how = if terminate {
                procman::EndMode::Kill
            } else if args.suspend_debuggee == Some(true) {
                // Detached and then stopped: it waits, untraced, for SIGCONT.
                procman::EndMode::DetachStopped
            } else {
                procman::EndMode::Detach
            };
            if let Target::Live(live) = &d.session {
                live.end(how).map_err(fail)?;
            }
        }
        Ok(())
    }

    pub(crate) fn terminate(&mut self, _: Option<TerminateArguments>) -> Result<(), Failure> {
        let launched = self.debuggee.as_ref().is_some_and(|d| d.launched);
        self.end_same_children(launched);
        if launched {
            self.end_children();
        }
        if let Some(d) = self.debuggee.take() {
            // An attached program is asked to end as the system asks it: detached,
            // then SIGTERM.
            let how = if d.launched {
                procman::EndMode::Kill
            } else {
                procman::EndMode::DetachTerminate
            };
            if let Target::Live(live) = &d.session {
                live.end(how).map_err(fail)?;
            }
        }
        self.handles.invalidate();
        self.after("terminated", json!({}));
        Ok(())
    }

    pub(crate) fn on_client_response(&mut self, resp: dap::Response) {
        tracing::debug!(command = %resp.command, success = resp.success, "response from the client");
        if self.on_child_answer(&resp) {
            return;
        }
        if let Some((seq, give_up)) = &self.terminal_request {
            if resp.request_seq == *seq {
                if !resp.success {
                    give_up.store(true, std::sync::atomic::Ordering::Release);
                    self.console(format!(
                        "the client could not start the terminal ({}): the program's output goes to the debug console",
                        resp.message.as_deref().unwrap_or("no reason given")
                    ));
                }
                self.terminal_request = None;
            }
        }
    }

    pub(crate) fn cancel(&mut self, args: Option<CancelArguments>) -> Result<(), Failure> {
        // Requests still queued when their cancel arrived were answered "cancelled" by
        // the main loop; a launch waiting for a debuginfod download is let go on without
        // it; anything else has been answered already.
        if let Some(args) = args {
            self.cancel_fetch(args.progress_id.as_deref(), args.request_id);
        }
        Ok(())
    }
}
