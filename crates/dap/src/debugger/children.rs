//! Fork children in sessions of their own: the launch/attach attributes `followChildren`
//! and `childFilter`, the `startDebugging` reverse request that opens a child's session,
//! and the children let go (refused, unanswered, filtered out) running free.
//!
//! A child the program forks is handed over by the engine ([`SessionEvent::ChildForked`]):
//! freed of every breakpoint and patch, untraced, waiting parked (`tracer::park`). Its
//! session is a new adapter the client starts for the `attach` configuration sent here
//! (`tandemChild` in it makes that adapter take the waiting child over); the child runs on
//! at that session's `configurationDone`. A child nobody takes over is let run on from
//! its fork (`tracer::park::free`) as it would without the debugger.
//!
//! [`SessionEvent::ChildForked`]: engine::SessionEvent::ChildForked

use super::*;

/// How long the client has to answer a `startDebugging` before the child is let go.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// What happens to the children of the program (`followChildren`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum Follow {
    /// Each child in a session of its own (`startDebugging`).
    Sessions,
    /// Each child in this session, its threads beside the program's.
    Same,
    /// Children run without the debugger (breakpoints removed at the fork).
    #[default]
    Detach,
}

/// The children policy of the session and the `startDebugging` requests in flight.
#[derive(Debug, Default)]
pub(super) struct Children {
    follow: Follow,
    /// Only children whose command line matches are followed.
    filter: Option<regex::Regex>,
    /// The `type` of the parent's configuration, given to the children's.
    kind: Option<String>,
    /// The parent's source map and working directory, given to the children's.
    source_map: Option<Value>,
    cwd: Option<String>,
    /// `startDebugging` requests by seq: the child and when it was asked.
    asked: HashMap<i64, (i32, Instant)>,
    /// Children whose session the client opened: ended with the program.
    followed: Vec<i32>,
    /// This session's process is itself a fork child handed over (`tandemChild`).
    is_child: bool,
}

/// The parts of a launch or attach configuration the children policy reads.
pub(super) struct ChildrenArgs<'a> {
    pub follow: Option<&'a str>,
    pub filter: Option<&'a str>,
    pub kind: Option<&'a str>,
    pub source_map: Option<Value>,
    pub cwd: Option<&'a str>,
    /// The session is a handed-over child's (`tandemChild`).
    pub is_child: bool,
}

impl Debugger {
    /// Reads `followChildren` / `childFilter`; returns whether the engine hands the
    /// program's children over (else they are detached at the fork).
    pub(super) fn children_policy(&mut self, args: ChildrenArgs<'_>) -> Result<bool, Failure> {
        let follow = match args.follow {
            None if self.client.start_debugging => Follow::Sessions,
            None => Follow::Same,
            Some("sessions") if self.client.start_debugging => Follow::Sessions,
            Some("sessions") => {
                self.console(
                    "followChildren \"sessions\": the client cannot open child sessions \
                     (no startDebugging support), so the program's children are debugged \
                     in this session",
                );
                Follow::Same
            }
            Some("same") => Follow::Same,
            Some("detach") => Follow::Detach,
            Some(other) => {
                return Err(format!(
                    "followChildren must be \"sessions\", \"same\" or \"detach\", not {other:?}"
                )
                .into())
            }
        };
        let filter = match args.filter.filter(|f| !f.is_empty()) {
            Some(f) => {
                Some(regex::Regex::new(f).map_err(|e| format!("childFilter is not a regex: {e}"))?)
            }
            None => None,
        };
        self.children = Children {
            follow,
            filter,
            kind: args.kind.map(str::to_string),
            source_map: args.source_map,
            cwd: args.cwd.map(str::to_string),
            asked: HashMap::new(),
            followed: Vec::new(),
            is_child: args.is_child,
        };
        Ok(follow != Follow::Detach)
    }

    /// A child was detached at its fork (not followed): say so, as gdb does.
    pub(super) fn on_child_detached(&mut self, pid: procman::tracer::Pid) {
        let why = if self.client.start_debugging {
            "followChildren \"sessions\" debugs each in a session of its own"
        } else {
            "the client cannot open child sessions (no startDebugging)"
        };
        self.console(format!(
            "[detached from child process {}: it runs without the debugger; {why}]",
            pid.0
        ));
    }

    /// A child was handed over: ask the client for its session, or let it go.
    pub(super) fn on_child_forked(&mut self, pid: procman::tracer::Pid, vfork: bool) {
        let row = procman::read_process(pid);
        let command = row
            .as_ref()
            .map(|r| r.cmdline.join(" "))
            .filter(|c| !c.is_empty())
            .or_else(|| row.as_ref().map(|r| r.name.clone()))
            .unwrap_or_default();
        if self.children.follow == Follow::Detach {
            return release(pid.0);
        }
        if let Some(filter) = &self.children.filter {
            if !filter.is_match(&command) {
                self.console(format!(
                    "[child process {} does not match childFilter: it runs without the debugger]",
                    pid.0
                ));
                return release(pid.0);
            }
        }
        let short = row
            .as_ref()
            .and_then(|r| r.cmdline.first())
            .map(|a| {
                Path::new(a)
                    .file_name()
                    .map_or(a.clone(), |n| n.to_string_lossy().into())
            })
            .unwrap_or_else(|| command.clone());
        let parent = self.debuggee.as_ref().map(|d| d.session.pid().0);
        let mut configuration = json!({
            "type": self.children.kind.clone().unwrap_or_else(|| "tandem".into()),
            "request": "attach",
            "name": format!("{short} [{}]", pid.0),
            "pid": pid.0,
            "tandemChild": {"vfork": vfork, "parent": parent},
            "followChildren": "sessions",
        });
        if let Some(filter) = &self.children.filter {
            configuration["childFilter"] = json!(filter.as_str());
        }
        if let Some(map) = &self.children.source_map {
            configuration["sourceMap"] = map.clone();
        }
        if let Some(cwd) = &self.children.cwd {
            configuration["cwd"] = json!(cwd);
        }
        if self.children.follow == Follow::Same {
            return self.same_child(pid.0, configuration);
        }
        let seq = self.out.request(
            "startDebugging",
            json!({"request": "attach", "configuration": configuration}),
        );
        self.children.asked.insert(seq, (pid.0, Instant::now()));
    }

    /// This session's process executed a new program: a child whose new command line
    /// `childFilter` does not match is detached (breakpoints removed, running on) and
    /// its session ends. The filter is matched at the fork against the command line the
    /// child inherits and again at each exec against the new one.
    pub(super) fn on_child_exec(&mut self) {
        let Some(filter) = self
            .children
            .filter
            .as_ref()
            .filter(|_| self.children.is_child)
        else {
            return;
        };
        let Some(pid) = self.debuggee.as_ref().map(|d| d.session.pid()) else {
            return;
        };
        let command = procman::read_process(pid)
            .map(|r| r.cmdline.join(" "))
            .unwrap_or_default();
        if filter.is_match(&command) {
            return;
        }
        self.console(format!(
            "child process {} now runs `{command}`, which childFilter does not match: \
             detached, it runs without the debugger",
            pid.0
        ));
        if let Some(d) = self.debuggee.take() {
            if let Target::Live(live) = &d.session {
                if let Err(e) = live.end(procman::EndMode::Detach) {
                    self.console(format!("detaching process {}: {e}", pid.0));
                }
            }
        }
        self.handles.invalidate();
        self.out.event("terminated", Some(json!({})));
    }

    /// The pid of a handed-over child (`tandemChild`) that is gone (exited, killed, a
    /// zombie) before its session could take it over.
    pub(super) fn handed_over_child_gone(&self, args: &AttachArguments) -> Option<i64> {
        args.tandem_child.as_ref()?;
        let Some(PidSpec::Number(pid)) = args.pid else {
            return None;
        };
        let pid32 = i32::try_from(pid).ok()?;
        let row = procman::read_process(procman::tracer::Pid(pid32));
        row.is_none_or(|r| r.state == 'Z' || r.state == 'X')
            .then_some(pid)
    }

    /// The client's answer to a `startDebugging`; returns whether `resp` was one.
    pub(super) fn on_child_answer(&mut self, resp: &dap::Response) -> bool {
        let Some((pid, _)) = self.children.asked.remove(&resp.request_seq) else {
            return false;
        };
        if resp.success {
            self.children.followed.push(pid);
        } else {
            release(pid);
            self.console(format!(
                "the client did not open a session for child process {pid} ({}): it runs \
                 without the debugger",
                resp.message.as_deref().unwrap_or("no reason given")
            ));
        }
        true
    }

    /// When the oldest unanswered `startDebugging` times out, if any.
    pub(crate) fn child_deadline(&self) -> Option<Instant> {
        self.children
            .asked
            .values()
            .map(|(_, at)| *at + ANSWER_TIMEOUT)
            .min()
    }

    /// Lets go the children whose `startDebugging` was not answered in time.
    pub(crate) fn on_child_timeouts(&mut self) {
        let now = Instant::now();
        let late: Vec<i64> = self
            .children
            .asked
            .iter()
            .filter(|(_, (_, at))| *at + ANSWER_TIMEOUT <= now)
            .map(|(seq, _)| *seq)
            .collect();
        for seq in late {
            if let Some((pid, _)) = self.children.asked.remove(&seq) {
                release(pid);
                self.console(format!(
                    "the client did not answer startDebugging for child process {pid} in \
                     {} s: it runs without the debugger",
                    ANSWER_TIMEOUT.as_secs()
                ));
            }
        }
    }

    /// The program is being killed (its session ends with `terminateDebuggee`): its
    /// children in sessions of their own end with it, as the program's own processes.
    /// Only those still its children (a pid reused by another process is left alone).
    pub(super) fn end_children(&mut self) {
        let parent = self.debuggee.as_ref().map(|d| d.session.pid());
        for pid in std::mem::take(&mut self.children.followed) {
            let pid = procman::tracer::Pid(pid);
            if parent.is_some() && procman::read_process(pid).map(|r| r.ppid) == parent {
                procman::kill_child(pid);
            }
        }
        for (_, (pid, _)) in self.children.asked.drain() {
            let pid = procman::tracer::Pid(pid);
            if parent.is_some() && procman::read_process(pid).map(|r| r.ppid) == parent {
                procman::kill_child(pid);
            }
        }
    }
}

impl Drop for Children {
    /// The session ends, however it ends: children still waiting for theirs run free.
    fn drop(&mut self) {
        for (_, (pid, _)) in self.asked.drain() {
            release(pid);
        }
    }
}

/// A handed-over child nobody takes over runs as it would without the debugger.
fn release(pid: i32) {
    procman::release_child(procman::tracer::Pid(pid));
}
