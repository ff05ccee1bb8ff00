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
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use serde::Serialize;
use serde_json::{json, Value};
use wire::dap::{self, ProtocolMessage, SeqCounter};
use wire::{FrameWriter, Inbound, Limits};

use procman::ProcessManager;

use crate::debugger::Debugger;
use crate::output::Chunk;
use crate::types::{self, Capabilities, ErrorMessage, Request};

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
    let inbound = wire::spawn_reader(input, config.limits)?;
    let out = Arc::new(Outbox {
        writer: FrameWriter::new(Box::new(output)),
        seq: SeqCounter::default(),
    });
    let manager = config
        .manager
        .unwrap_or_else(|| Arc::new(ProcessManager::new()));
    let (output_tx, output_rx) = crossbeam_channel::unbounded();
    let mut adapter = Adapter {
        out: out.clone(),
        initialized: false,
        last_seq: 0,
        queue: VecDeque::new(),
        cancelled: HashSet::new(),
        debugger: Debugger::new(out, manager, output_tx),
        output_rx,
    };
    Ok(adapter.run(&inbound))
}

/// Everything the main loop reacts to.
enum Event {
    Client(Inbound),
    Debuggee(procman::DebugEvent),
    /// The debuggee's event stream closed (the session ended).
    DebuggeeGone,
    Output(Chunk),
}

pub(crate) struct Adapter {
    out: Arc<Outbox>,
    /// Set once `initialize` has been answered.
    initialized: bool,
    /// The `seq` of the last request received.
    last_seq: i64,
    /// Client messages read ahead of the one being handled (to see `cancel`s early).
    queue: VecDeque<Inbound>,
    /// Requests the client cancelled before they were handled.
    cancelled: HashSet<i64>,
    debugger: Debugger,
    output_rx: Receiver<Chunk>,
}

/// What handling one request leads to.
pub(crate) enum Flow {
    Continue,
    End(Ending),
}

/// A request's failure: the message of the error response.
#[derive(Debug)]
pub struct Failure(pub String);

impl<T: Into<String>> From<T> for Failure {
    fn from(message: T) -> Self {
        Failure(message.into())
    }
}

impl Adapter {
    fn next_event(&mut self, inbound: &Receiver<Inbound>) -> Option<Event> {
        if let Some(m) = self.queue.pop_front() {
            return Some(Event::Client(m));
        }
        let events = self.debugger.events();
        let ev = crossbeam_channel::select! {
            recv(inbound) -> m => Event::Client(m.ok()?),
            recv(events) -> e => match e {
                Ok(e) => Event::Debuggee(e),
                Err(_) => Event::DebuggeeGone,
            },
            recv(self.output_rx) -> c => match c {
                Ok(c) => Event::Output(c),
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
                        if let Flow::End(ending) = self.on_request(req) {
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
                Event::Debuggee(ev) => self.debugger.on_debuggee_event(ev, &self.output_rx),
                Event::DebuggeeGone => self.debugger.on_debuggee_gone(),
                Event::Output(chunk) => self.debugger.on_output(chunk),
            }
        }
    }

    fn on_request(&mut self, req: dap::Request) -> Flow {
        tracing::debug!(seq = req.seq, command = %req.command, "request");
        let command = req.command.clone();
        if self.cancelled.remove(&req.seq) {
            self.out.error(req.seq, &command, "cancelled");
            return Flow::Continue;
        }
        let pre_init = [
            types::Initialize::COMMAND,
            types::Disconnect::COMMAND,
            types::Terminate::COMMAND,
        ];
        if !self.initialized && !pre_init.contains(&command.as_str()) {
            self.out.error(
                req.seq,
                &command,
                "the adapter is not initialized: send initialize first",
            );
            return Flow::Continue;
        }
        if command == types::Initialize::COMMAND {
            if self.handle::<types::Initialize>(&req, |a, args| a.initialize(args)) {
                // Configuration requests are welcome from now on, before or after launch.
                self.out.event("initialized", None::<()>);
            }
            return Flow::Continue;
        }
        let start = Instant::now();
        let next = crate::dispatch::dispatch(self, &req);
        tracing::debug!(command = %command, elapsed = ?start.elapsed(), "handled");
        next
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

    fn initialize(&mut self, args: types::InitializeArguments) -> Result<Capabilities, Failure> {
        if self.initialized {
            return Err("the adapter is already initialized".into());
        }
        tracing::info!(client = ?args.client_name, adapter = %args.adapter_id, "initialize");
        self.initialized = true;
        self.debugger.set_client(&args);
        Ok(crate::dispatch::capabilities())
    }
}

/// The write side: whole frames under one lock, numbered by one counter.
pub struct Outbox {
    writer: FrameWriter<Box<dyn Write + Send>>,
    seq: SeqCounter,
}

impl std::fmt::Debug for Outbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbox").finish_non_exhaustive()
    }
}

impl Outbox {
    fn send(&self, message: &ProtocolMessage) {
        if let Err(err) = self.writer.write_frame(&dap::encode(message)) {
            tracing::warn!("cannot write to the client: {err}");
        }
    }

    pub fn success(&self, request_seq: i64, command: &str, body: impl Serialize) {
        let body = serde_json::to_value(body).ok().filter(|b| !b.is_null());
        self.send(&ProtocolMessage::Response(dap::Response {
            seq: self.seq.next(),
            request_seq,
            success: true,
            command: command.to_owned(),
            message: None,
            body,
        }));
    }

    pub fn error(&self, request_seq: i64, command: &str, message: &str) {
        let error = ErrorMessage {
            id: 1,
            format: message.to_owned(),
            show_user: false,
        };
        self.send(&ProtocolMessage::Response(dap::Response {
            seq: self.seq.next(),
            request_seq,
            success: false,
            command: command.to_owned(),
            message: Some(message.to_owned()),
            body: serde_json::to_value(json!({ "error": error })).ok(),
        }));
    }

    pub fn event(&self, event: &str, body: Option<impl Serialize>) {
        let body = body.and_then(|b| serde_json::to_value(b).ok());
        self.send(&ProtocolMessage::Event(dap::Event {
            seq: self.seq.next(),
            event: event.to_owned(),
            body,
        }));
    }

    /// Sends a request to the client (`runInTerminal`); its response arrives in the main
    /// loop. Returns the request's seq.
    pub fn request(&self, command: &str, arguments: Value) -> i64 {
        let seq = self.seq.next();
        self.send(&ProtocolMessage::Request(dap::Request {
            seq,
            command: command.to_owned(),
            arguments: Some(arguments),
        }));
        seq
    }
}

/// Waits (bounded) for the debuggee's output streams to end, so everything it printed
/// is sent before the `exited` event.
pub(crate) fn drain_output(rx: &Receiver<Chunk>, open: &mut usize, mut forward: impl FnMut(Chunk)) {
    let deadline = Instant::now() + Duration::from_millis(500);
    while *open > 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Chunk::End) => *open -= 1,
            Ok(c) => forward(c),
            Err(_) => break,
        }
    }
    while let Ok(c) = rx.try_recv() {
        match c {
            Chunk::End => *open = open.saturating_sub(1),
            c => forward(c),
        }
    }
}

/// An output channel for the readers.
pub(crate) type OutputSender = Sender<Chunk>;
