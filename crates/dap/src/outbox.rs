//! The write side of a session and what handlers answer with: the `Outbox` (whole frames
//! under one lock, numbered by one counter), a request's `Failure`, and the wait for the
//! debuggee's last output. Below the server, the dispatcher and the debugger alike.

use std::io::Write;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use serde::Serialize;
use serde_json::{json, Value};
use wire::dap::{self, ProtocolMessage, SeqCounter};
use wire::FrameWriter;

use crate::output::Chunk;
use crate::types::ErrorMessage;

/// A request's failure: the message of the error response.
#[derive(Debug)]
pub struct Failure(pub String);

impl<T: Into<String>> From<T> for Failure {
    fn from(message: T) -> Self {
        Failure(message.into())
    }
}

/// The write side: whole frames under one lock, numbered by one counter.
pub struct Outbox {
    writer: FrameWriter<Box<dyn Write + Send>>,
    seq: SeqCounter,
}

impl Outbox {
    pub(crate) fn new(output: Box<dyn Write + Send>) -> Outbox {
        Outbox {
            writer: FrameWriter::new(output),
            seq: SeqCounter::default(),
        }
    }
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

    /// A response relayed as another adapter gave it (a child process's, see
    /// `debugger/same.rs`).
    pub fn response(
        &self,
        request_seq: i64,
        command: &str,
        success: bool,
        message: Option<String>,
        body: Option<Value>,
    ) {
        self.send(&ProtocolMessage::Response(dap::Response {
            seq: self.seq.next(),
            request_seq,
            success,
            command: command.to_owned(),
            message,
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
