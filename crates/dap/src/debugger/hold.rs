//! A `setFunctionBreakpoints` held while the program's full index builds in the
//! background, with a cancellable progress, instead of blocking the main loop.
//!
//! On a big program (see `engine::Session::function_waiting_for_index`) a function that
//! neither an ELF symbol nor its siblings' units find is only found through the name
//! table, which the engine builds on a thread of its own. Resolving it at once would
//! block the main loop until the table is done: the indexing progress would be held
//! back and nothing could cancel the wait. So the request is held, as a `launch` is
//! held for a debuginfod download (`debuginfo.rs`): the main loop keeps forwarding
//! the engine's events (the indexing `progressUpdate`s flow) and answers when the
//! table is done (the engine's last `Indexing` event), when the program is gone, or
//! when the client cancels — `cancel` with the held request's `requestId` or with the
//! progress's `progressId` answers it `cancelled` and sets none of its breakpoints.
//!
//! The function breakpoints set before a launch are held the same way when the launch
//! would otherwise wait for the table to set them: the launch is answered, they stay
//! pending, and once the table is done they are set and reported as `breakpoint`
//! events (`changed`); cancelling the progress leaves them pending. Not when the
//! configuration is done already: the program then runs at once, and must not run
//! past them, so the launch sets them, waiting.
//!
//! Every request that arrives while one is held waits behind it, in order (a
//! `configurationDone` or `continue` must not run the program before the breakpoints
//! it was asked after are set), except `cancel`, served at once. A `disconnect` or
//! `terminate` answers the held request with an error first, then takes its turn
//! after the requests before it.

use super::*;
use crate::server::Adapter;

/// Function breakpoints waiting for the name table.
pub(super) struct HeldFunctions {
    /// The request to answer: `None` for the breakpoints stored before a launch.
    request: Option<(i64, SetFunctionBreakpointsArguments)>,
    progress_id: Option<String>,
}

/// `setFunctionBreakpoints`: held while it would wait for the name table, else served.
pub(crate) fn set_function_breakpoints(a: &mut Adapter, req: &dap::Request) {
    // A session about to end does not wait for the table: its end would wait too.
    if !a.ends_soon() && a.debugger().hold_functions(req) {
        return;
    }
    a.handle::<SetFunctionBreakpoints>(req, |a, args| a.debugger().set_function_breakpoints(args));
}

/// `cancel`: of the held request (or its progress), of a request waiting behind it, or
/// of what `Debugger::cancel` knows.
pub(crate) fn cancel(a: &mut Adapter, req: &dap::Request) {
    a.handle::<Cancel>(req, |a, args| {
        if let Some(args) = &args {
            if let Some(id) = args.request_id.filter(|id| a.is_deferred(*id)) {
                // Answered `cancelled` when its turn comes (`on_request`).
                a.cancelled.insert(id);
            }
            if let Some(seq) = a
                .debugger()
                .cancel_held(args.progress_id.as_deref(), args.request_id)
            {
                // The main loop may have noted it when reading ahead: it is answered.
                a.cancelled.remove(&seq);
            }
        }
        a.debugger().cancel(args)
    });
}

impl Adapter {
    /// `req` to serve now, or `None` when it waits behind a held request.
    pub(crate) fn defer_if_held(&mut self, req: dap::Request) -> Option<dap::Request> {
        if !self.debugger.holding() || req.command == Cancel::COMMAND {
            return Some(req);
        }
        if req.command == Disconnect::COMMAND || req.command == Terminate::COMMAND {
            self.debugger
                .abandon_held("the session ends before the program's index was built");
            if self.deferred.is_empty() {
                return Some(req);
            }
        }
        tracing::debug!(seq = req.seq, command = %req.command, "waits behind a held request");
        self.deferred.push_back(req);
        None
    }

    /// Whether a request waiting behind a held one ends the session.
    fn ends_soon(&self) -> bool {
        self.deferred
            .iter()
            .any(|r| r.command == Disconnect::COMMAND || r.command == Terminate::COMMAND)
    }

    fn is_deferred(&self, seq: i64) -> bool {
        self.deferred.iter().any(|r| r.seq == seq)
    }
}

impl Debugger {
    /// Whether a `setFunctionBreakpoints` waits for the name table.
    pub(crate) fn holding(&self) -> bool {
        self.held_functions.is_some()
    }

    /// Holds `req` when one of its functions would wait for the name table.
    fn hold_functions(&mut self, req: &dap::Request) -> bool {
        if self.holding() {
            return false;
        }
        let Some(args) = req
            .arguments
            .clone()
            .and_then(|v| serde_json::from_value::<SetFunctionBreakpointsArguments>(v).ok())
        else {
            return false;
        };
        let names: Vec<String> = args
            .breakpoints
            .iter()
            .map(|b| b.name.trim().to_string())
            .collect();
        self.hold(&names, Some((req.seq, args)))
    }

    /// Holds the function breakpoints stored before the launch that just started the
    /// program when setting them would wait for the name table (and the program waits
    /// for `configurationDone` meanwhile): true when they are held.
    pub(super) fn hold_stored_functions(&mut self) -> bool {
        if self.holding() || self.configured || self.function_bps.is_empty() {
            return false;
        }
        let names: Vec<String> = self
            .function_bps
            .iter()
            .map(|b| b.name.trim().to_string())
            .collect();
        self.hold(&names, None)
    }

    /// Holds `request` (or, for `None`, the breakpoints stored before the launch) when
    /// one of `names` would wait for the name table, with a cancellable progress naming
    /// it: true when held.
    fn hold(
        &mut self,
        names: &[String],
        request: Option<(i64, SetFunctionBreakpointsArguments)>,
    ) -> bool {
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let Ok(session) = self.live() else {
            return false;
        };
        let Some(name) = session.engine().function_waiting_for_index(&names) else {
            return false;
        };
        tracing::debug!(seq = ?request.as_ref().map(|r| r.0), %name, "function breakpoints wait for the index");
        let progress_id = self.progress_start_cancellable(
            "Waiting for the debug information index",
            &format!("finding function '{name}' needs the program's full index"),
        );
        self.held_functions = Some(HeldFunctions {
            request,
            progress_id,
        });
        true
    }

    /// Answers the held request once it no longer waits: the table is done (or its
    /// build ended), or the program is gone (its breakpoints are then pending, as
    /// before a launch). Called after every event of the debuggee.
    pub(crate) fn settle_held(&mut self) {
        if !self.holding() {
            return;
        }
        let waiting = self
            .live()
            .is_ok_and(|session| session.engine().is_indexing());
        if waiting {
            return;
        }
        let Some(held) = self.held_functions.take() else {
            return;
        };
        self.end_held_progress(held.progress_id, "done");
        let Some((seq, args)) = held.request else {
            // Stored before the launch: answered pending then, reported now.
            if let Ok(bps) = self.apply_functions() {
                for bp in bps {
                    self.after("breakpoint", json!({"reason": "changed", "breakpoint": bp}));
                }
            }
            self.flush_after();
            return;
        };
        match self.set_function_breakpoints(args) {
            Ok(body) => self.out.success(seq, SetFunctionBreakpoints::COMMAND, body),
            Err(Failure(message)) => self
                .out
                .error(seq, SetFunctionBreakpoints::COMMAND, &message),
        }
        self.flush_after();
    }

    /// `cancel` of the held request or of its progress: answered `cancelled`, none of
    /// its breakpoints set (those set before stay). Its seq, when it was cancelled.
    fn cancel_held(&mut self, progress_id: Option<&str>, request_id: Option<i64>) -> Option<i64> {
        let held = self.held_functions.as_ref()?;
        let seq = held.request.as_ref().map(|(seq, _)| *seq);
        let ours = progress_id.is_some() && progress_id == held.progress_id.as_deref();
        if !ours && (request_id.is_none() || request_id != seq) {
            return None;
        }
        self.abandon_held("cancelled");
        seq
    }

    /// Answers the held request, if any, with an error and sets none of its breakpoints
    /// (breakpoints stored before the launch stay pending).
    fn abandon_held(&mut self, message: &str) {
        let Some(held) = self.held_functions.take() else {
            return;
        };
        self.end_held_progress(held.progress_id, "cancelled");
        match held.request {
            Some((seq, _)) => {
                tracing::debug!(seq, message, "held setFunctionBreakpoints answered");
                self.out
                    .error(seq, SetFunctionBreakpoints::COMMAND, message);
            }
            None if message == "cancelled" => self.console(
                "the function breakpoints set before the launch stay pending: the wait for \
                 the program's index was cancelled (set them again to have them)",
            ),
            None => {}
        }
    }

    fn end_held_progress(&self, progress_id: Option<String>, message: &str) {
        if let Some(id) = progress_id {
            self.out.event(
                "progressEnd",
                Some(json!({"progressId": id, "message": message})),
            );
        }
    }
}
