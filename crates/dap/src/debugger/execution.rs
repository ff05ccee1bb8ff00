//! continue, next, stepIn, stepOut, pause: run control through the owner, which tells
//! every view that the program runs again.

use super::*;

impl Debugger {
    pub(super) fn thread(&self, id: i64) -> Result<Tid, Failure> {
        i32::try_from(id)
            .ok()
            .filter(|t| *t > 0)
            .map(Tid)
            .ok_or_else(|| Failure(format!("unknown thread {id}")))
    }

    /// The program runs again (continue or a step of `tid`): ids given out are stale,
    /// and the client hears `continued` after the response.
    pub(super) fn before_run(&mut self, tid: Option<Tid>) {
        if let Some(tid) = tid {
            self.after(
                "continued",
                json!({"threadId": tid.0, "allThreadsContinued": true}),
            );
        }
        self.handles.invalidate();
        if let Some(d) = self.debuggee.as_mut() {
            d.stacks.clear();
            d.listed = None;
            d.return_value = None;
            d.signal = None;
        }
    }

    pub(crate) fn continue_(&mut self, args: ContinueArguments) -> Result<ContinueBody, Failure> {
        self.live()?.resume(self.view).map_err(fail)?;
        let tid = i32::try_from(args.thread_id).ok().map(Tid);
        self.before_run(tid);
        Ok(ContinueBody {
            all_threads_continued: true,
        })
    }

    pub(super) fn step(&mut self, args: StepArguments, kind: StepKind) -> Result<(), Failure> {
        let tid = self.thread(args.thread_id)?;
        let d = self.debuggee()?;
        let threads = d.session.inspect().threads().map_err(fail)?;
        if !threads.contains(&tid) {
            return Err(format!("unknown thread {}", args.thread_id).into());
        }
        let kind = match (kind, args.granularity.as_deref()) {
            (StepKind::Out, _) => StepKind::Out,
            (_, Some("instruction")) => StepKind::Instruction,
            (k, _) => k,
        };
        d.session.live()?.step(tid, kind, self.view).map_err(fail)?;
        self.before_run(Some(tid));
        Ok(())
    }

    /// Steps back (a session launched with `reverseDebugging`): by line, or by
    /// instruction with `granularity: "instruction"`.
    pub(crate) fn step_back(&mut self, args: StepArguments) -> Result<(), Failure> {
        let tid = self.thread(args.thread_id)?;
        let d = self.debuggee()?;
        let threads = d.session.inspect().threads().map_err(fail)?;
        if !threads.contains(&tid) {
            return Err(format!("unknown thread {}", args.thread_id).into());
        }
        let kind = match args.granularity.as_deref() {
            Some("instruction") => StepKind::Instruction,
            _ => StepKind::Over,
        };
        d.session
            .live()?
            .step_back(tid, kind, self.view)
            .map_err(fail)?;
        self.before_run(Some(tid));
        Ok(())
    }

    /// Goes back to the last breakpoint hit before now (a session launched with
    /// `reverseDebugging`).
    pub(crate) fn reverse_continue(&mut self, args: ContinueArguments) -> Result<(), Failure> {
        self.live()?.reverse_continue(self.view).map_err(fail)?;
        let tid = i32::try_from(args.thread_id).ok().map(Tid);
        self.before_run(tid);
        Ok(())
    }

    /// Goes back to the start of a frame's function invocation (a session launched
    /// with `reverseDebugging`), memory as it was then; a `stopped` event with reason
    /// `restart` follows the response.
    pub(crate) fn restart_frame(&mut self, args: RestartFrameArguments) -> Result<(), Failure> {
        let handle = self.frame(args.frame_id)?;
        self.live()?
            .restart_frame(handle.frame, self.view)
            .map_err(fail)?;
        self.before_run(Some(handle.tid));
        Ok(())
    }

    pub(crate) fn next(&mut self, args: StepArguments) -> Result<(), Failure> {
        self.step(args, StepKind::Over)
    }

    pub(crate) fn step_in(&mut self, args: StepArguments) -> Result<(), Failure> {
        let Some(target) = args.target_id else {
            return self.step(args, StepKind::In);
        };
        let tid = self.thread(args.thread_id)?;
        let target = u64::try_from(target).map_err(|_| {
            Failure(format!(
                "unknown step-in target {target} (targets are valid until the program runs again)"
            ))
        })?;
        self.live()?
            .step_into(tid, target, self.view)
            .map_err(fail)?;
        self.before_run(Some(tid));
        Ok(())
    }

    /// The calls the rest of the frame's line makes (see
    /// `engine::Session::step_in_targets`); only the innermost frame of a thread has any.
    pub(crate) fn step_in_targets(
        &mut self,
        args: StepInTargetsArguments,
    ) -> Result<StepInTargetsBody, Failure> {
        let handle = self.frame(args.frame_id)?;
        let d = self.debuggee()?;
        let targets = if handle.index == 0 {
            d.session
                .live()?
                .engine()
                .step_in_targets(handle.tid, handle.frame)
                .map_err(fail)?
        } else {
            Vec::new()
        };
        Ok(StepInTargetsBody {
            targets: targets
                .into_iter()
                .map(|t| StepInTarget {
                    id: i64::try_from(t.id).unwrap_or(i64::MAX),
                    label: t.label,
                    line: t.line.map(|l| i64::from(l.get())),
                    column: t.column.map(|c| self.column_out(i64::from(c.get()))),
                })
                .collect(),
        })
    }

    pub(crate) fn step_out(&mut self, args: StepArguments) -> Result<(), Failure> {
        self.step(args, StepKind::Out)
    }

    pub(crate) fn pause(&mut self, args: PauseArguments) -> Result<(), Failure> {
        let tid = self.thread(args.thread_id)?;
        let d = self.debuggee()?;
        if !d.session.inspect().threads().map_err(fail)?.contains(&tid) {
            return Err(format!("unknown thread {}", args.thread_id).into());
        }
        match d.session.live()?.pause() {
            Ok(()) => Ok(()),
            // Already stopped: nothing to do, as the specification asks.
            Err(procman::Error::Engine(engine::Error::Running)) => Ok(()),
            Err(e) => Err(fail(e)),
        }
    }
}
