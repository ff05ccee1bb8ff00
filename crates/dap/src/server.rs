//! The DAP main loop: one session from `initialize` to `disconnect`.
//!
//! One thread owns the adapter's state and reacts to one closed set of events in a single
//! `select!`: a frame from the client, an event of the debuggee (stops, output of
//! logpoints, threads, exit) and the debuggee's own stdout/stderr. Requests that arrive
//! while the program runs (pause, setBreakpoints, threads) are answered at once: the
//! engine serves them without waiting for a stop.
//!
//! Every response echoes the request's `seq` as `request_seq` and its `command`; a body
//! that cannot be decoded gets an error response with whatever of `seq` and `command`
//! could be read, and the session continues. Only a framing error or the end of input
//! ends the session without a `disconnect`.

use std::collections::{HashSet, VecDeque};
use std::io::{Read, Write};
use std::sync::Arc;

use crossbeam_channel::Receiver;
use serde_json::Value;
use wire::dap::{self, ProtocolMessage};
use wire::{Inbound, Limits};

use procman::ProcessManager;

use crate::debugger::Debugger;
use crate::outbox::{Failure, Outbox};
use crate::output::Chunk;
use crate::types::{self, Request};

/// How a session ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// The client sent `disconnect`.
    Disconnected,
    /// The input closed or broke without a `disconnect`.
    Abrupt,
}

impl Ending {
    pub fn exit_code(self) -> i32 {
        match self {
            Ending::Disconnected => 0,
            Ending::Abrupt => 1,
        }
    }
}

/// Settings of one adapter session.
#[derive(Clone, Debug, Default)]
pub struct Config {
    pub limits: Limits,
    /// The process manager that owns the debuggees (one per adapter when `None`).
    pub manager: Option<Arc<ProcessManager>>,
}

/// Serves one DAP session over a byte stream pair.
pub fn serve<R, W>(input: R, output: W, config: Config) -> std::io::Result<Ending>
where
    R: Read + Send + 'static,
    W: Write + Send + 'static,
{
    let manager = config
        .manager
        .unwrap_or_else(|| Arc::new(ProcessManager::new()));
    serve_with(input, output, config.limits, manager, None)
}

/// Serves the session of a child process in this session (`debugger/same.rs`): the
/// parent's process manager, and frame ids and variables references from `ids`.
pub(crate) fn serve_child<R, W>(
    input: R,
    output: W,
    manager: Arc<ProcessManager>,
    ids: (i64, i64),
) -> std::io::Result<Ending>
where
    R: Read + Send + 'static,
    W: Write + Send + 'static,
{
    serve_with(input, output, Limits::default(), manager, Some(ids))
}

fn serve_with<R, W>(
    input: R,
    output: W,
    limits: Limits,
    manager: Arc<ProcessManager>,
    ids: Option<(i64, i64)>,
) -> std::io::Result<Ending>
where
    R: Read + Send + 'static,
    W: Write + Send + 'static,
{
    let inbound = wire::spawn_reader(input, limits)?;
    let out = Arc::new(Outbox::new(Box::new(output)));
    let (output_tx, output_rx) = crossbeam_channel::unbounded();
    let mut adapter = Adapter {
        out: out.clone(),
        initialized: false,
        last_seq: 0,
        queue: VecDeque::new(),
        deferred: VecDeque::new(),
        cancelled: HashSet::new(),
        debugger: Debugger::new(out, manager, output_tx),
        output_rx,
    };
    if let Some((lo, hi)) = ids {
        adapter.debugger.use_ids(lo, hi);
    }
    Ok(adapter.run(&inbound))
}

/// Everything the main loop reacts to.
enum Event {
    Client(Inbound),
    /// A request that waited behind a held one, now served.
    Deferred(dap::Request),
    Debuggee(procman::DebugEvent),
    /// The debuggee's event stream closed (the session ended).
    DebuggeeGone,
    Output(Chunk),
    /// A report of a debuginfod download a `launch` waits for.
    Fetch(crate::debugger::debuginfo::FetchEvent),
    /// A child's `startDebugging` went unanswered too long.
    ChildTimeout,
    /// A message of the adapter of a child process in this session.
    Child(crate::debugger::ChildMessage),
}

pub(crate) struct Adapter {
    pub(crate) out: Arc<Outbox>,
    /// Set once `initialize` has been answered.
    pub(crate) initialized: bool,
    /// The `seq` of the last request received.
    last_seq: i64,
    /// Client messages read ahead of the one being handled (to see `cancel`s early).
    queue: VecDeque<Inbound>,
    /// Requests waiting behind a held one (`debugger/hold.rs`), in order.
    pub(crate) deferred: VecDeque<dap::Request>,
    /// Requests the client cancelled before they were handled.
    pub(crate) cancelled: HashSet<i64>,
    pub(crate) debugger: Debugger,
    output_rx: Receiver<Chunk>,
}

/// What handling one request leads to.
pub(crate) enum Flow {
    Continue,
    End(Ending),
}

impl Adapter {
    fn next_event(&mut self, inbound: &Receiver<Inbound>) -> Option<Event> {
        // What waited behind a held request came before anything read ahead.
        if !self.debugger.holding() {
            if let Some(req) = self.deferred.pop_front() {
                return Some(Event::Deferred(req));
            }
        }
        if let Some(m) = self.queue.pop_front() {
            return Some(Event::Client(m));
        }
        if let Some(m) = self.debugger.same.take_pending() {
            return Some(Event::Child(m));
        }
        let children = self.debugger.same.receiver();
        let events = self.debugger.events();
        let fetches = self.debugger.fetch_events();
        // A child's `startDebugging` the client has not answered in time.
        let late = self
            .debugger
            .child_deadline()
            .map_or_else(crossbeam_channel::never, crossbeam_channel::at);
        let ev = crossbeam_channel::select! {
            recv(late) -> _ => Event::ChildTimeout,
            recv(children) -> m => match m {
                Ok(m) => Event::Child(m),
                Err(_) => return None,
            },
            recv(inbound) -> m => Event::Client(m.ok()?),
            recv(events) -> e => match e {
                Ok(e) => Event::Debuggee(e),
                Err(_) => Event::DebuggeeGone,
            },
            recv(self.output_rx) -> c => match c {
                Ok(c) => Event::Output(c),
                Err(_) => return None,
            },
            recv(fetches) -> f => match f {
                Ok(f) => Event::Fetch(f),
                Err(_) => return None,
            },
        };
        if matches!(ev, Event::Client(_)) {
            // Read ahead what is already there, so a `cancel` can reach the requests
            // queued before it.
            while let Ok(m) = inbound.try_recv() {
                self.note_cancel(&m);
                self.queue.push_back(m);
            }
        }
        Some(ev)
    }

    fn note_cancel(&mut self, m: &Inbound) {
        let Inbound::Frame(body) = m else { return };
        if let Ok(ProtocolMessage::Request(req)) = dap::decode(body) {
            if req.command == types::Cancel::COMMAND {
                if let Some(id) = req
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("requestId"))
                    .and_then(Value::as_i64)
                {
                    self.cancelled.insert(id);
                }
            }
        }
    }

    fn run(&mut self, inbound: &Receiver<Inbound>) -> Ending {
        loop {
            let Some(event) = self.next_event(inbound) else {
                return Ending::Abrupt;
            };
            match event {
                Event::Client(Inbound::Frame(body)) => match dap::decode(&body) {
                    Ok(ProtocolMessage::Request(req)) => {
                        self.last_seq = req.seq;
                        if let Some(Flow::End(ending)) =
                            self.defer_if_held(req).map(|req| self.on_request(req))
                        {
                            return ending;
                        }
                    }
                    Ok(ProtocolMessage::Response(resp)) => self.debugger.on_client_response(resp),
                    Ok(other) => {
                        tracing::debug!(?other, "non-request message from the client ignored")
                    }
                    Err(err) => {
                        tracing::warn!("undecodable message: {err}");
                        // The protocol needs a request_seq of at least 1: when the body gives
                        // none, assume the client numbered it next after the last request.
                        let seq = err.seq.unwrap_or(self.last_seq + 1).max(1);
                        self.last_seq = seq;
                        let command = err.command.clone().unwrap_or_default();
                        self.out.error(seq, &command, &err.reason);
                    }
                },
                Event::Client(Inbound::Closed) => {
                    tracing::warn!("input closed without disconnect");
                    return Ending::Abrupt;
                }
                Event::Client(Inbound::Failed(err)) => {
                    tracing::error!("closing the connection: {err}");
                    return Ending::Abrupt;
                }
                Event::Deferred(req) => {
                    if let Some(Flow::End(ending)) =
                        self.defer_if_held(req).map(|req| self.on_request(req))
                    {
                        return ending;
                    }
                }
                Event::Debuggee(ev) => {
                    self.debugger.on_debuggee_event(ev, &self.output_rx);
                    self.debugger.settle_held();
                }
                Event::DebuggeeGone => {
                    self.debugger.on_debuggee_gone();
                    self.debugger.settle_held();
                }
                Event::Output(chunk) => self.debugger.on_output(chunk),
                Event::Fetch(report) => self.on_fetch(report),
                Event::ChildTimeout => self.debugger.on_child_timeouts(),
                Event::Child(m) => self.debugger.on_same_message(m),
            }
        }
    }

    /// Decodes the arguments, runs the handler and answers, then sends the events the
    /// handler queued (so a `stopped` never precedes the response that caused it); true
    /// when it succeeded.
    pub(crate) fn handle<R: Request>(
        &mut self,
        req: &dap::Request,
        handler: impl FnOnce(&mut Self, R::Arguments) -> Result<R::Body, Failure>,
    ) -> bool {
        let args = req.arguments.clone().unwrap_or(Value::Null);
        let outcome = serde_json::from_value::<R::Arguments>(args)
            .map_err(|e| Failure(format!("invalid arguments for {}: {e}", R::COMMAND)))
            .and_then(|args| handler(self, args));
        let ok = match outcome {
            Ok(body) => {
                self.out.success(req.seq, R::COMMAND, body);
                true
            }
            Err(Failure(message)) => {
                self.out.error(req.seq, R::COMMAND, &message);
                false
            }
        };
        self.debugger.flush_after();
        ok
    }

    pub(crate) fn debugger(&mut self) -> &mut Debugger {
        &mut self.debugger
    }

    pub(crate) fn out(&self) -> &Outbox {
        &self.out
    }
}
