//! The DAP main loop: one session from `initialize` to `disconnect`.
//!
//! A reader thread turns input into frames; this loop decodes each and answers it. Every
//! response echoes the request's `seq` as `request_seq` and its `command`; a body that cannot be
//! decoded gets an error response with whatever of `seq` and `command` could be read, and the
//! session continues. Only a framing error or the end of input ends the session without a
//! `disconnect`.

use std::io::{Read, Write};

use crossbeam_channel::Receiver;
use serde::Serialize;
use serde_json::Value;
use wire::dap::{self, ProtocolMessage, SeqCounter};
use wire::{FrameWriter, Inbound, Limits};

use crate::types::{self, Capabilities, Disconnect, ErrorMessage, Initialize, Request, Terminate};

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
}

/// Serves one DAP session over a byte stream pair.
pub fn serve<R, W>(input: R, output: W, config: Config) -> std::io::Result<Ending>
where
    R: Read + Send + 'static,
    W: Write + Send + 'static,
{
    let inbound = wire::spawn_reader(input, config.limits)?;
    let mut session = Session {
        out: Outbox {
            writer: FrameWriter::new(Box::new(output)),
            seq: SeqCounter::default(),
        },
        initialized: false,
        last_seq: 0,
    };
    Ok(session.run(&inbound))
}

struct Session {
    out: Outbox,
    /// Set once `initialize` has been answered.
    initialized: bool,
    /// The `seq` of the last request received.
    last_seq: i64,
}

/// What handling one request leads to.
enum Next {
    Continue,
    End(Ending),
}

/// A request's failure: the message of the error response.
struct Failure(String);

impl<T: Into<String>> From<T> for Failure {
    fn from(message: T) -> Self {
        Failure(message.into())
    }
}

impl Session {
    fn run(&mut self, inbound: &Receiver<Inbound>) -> Ending {
        loop {
            let Ok(event) = inbound.recv() else {
                return Ending::Abrupt;
            };
            match event {
                Inbound::Frame(body) => match dap::decode(&body) {
                    Ok(ProtocolMessage::Request(req)) => {
                        self.last_seq = req.seq;
                        if let Next::End(ending) = self.on_request(req) {
                            return ending;
                        }
                    }
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
                Inbound::Closed => {
                    tracing::warn!("input closed without disconnect");
                    return Ending::Abrupt;
                }
                Inbound::Failed(err) => {
                    tracing::error!("closing the connection: {err}");
                    return Ending::Abrupt;
                }
            }
        }
    }

    fn on_request(&mut self, req: dap::Request) -> Next {
        tracing::debug!(seq = req.seq, command = %req.command, "request");
        let command = req.command.as_str();
        if !self.initialized
            && ![Initialize::COMMAND, Disconnect::COMMAND, Terminate::COMMAND].contains(&command)
        {
            self.out.error(
                req.seq,
                command,
                "the adapter is not initialized: send initialize first",
            );
            return Next::Continue;
        }
        match command {
            Initialize::COMMAND => {
                self.handle::<Initialize>(&req, |s, args| s.initialize(args));
            }
            Disconnect::COMMAND => {
                if self.handle::<Disconnect>(&req, |_, _| Ok(())) {
                    return Next::End(Ending::Disconnected);
                }
            }
            Terminate::COMMAND => {
                if self.handle::<Terminate>(&req, |_, _| Ok(())) {
                    // With no debuggee running, terminating is immediate.
                    self.out.event("terminated", None::<()>);
                }
            }
            "launch" | "attach" => self.out.error(
                req.seq,
                command,
                &format!("{command} is not implemented in this build of tandem"),
            ),
            _ => self
                .out
                .error(req.seq, command, &format!("unknown command '{command}'")),
        }
        Next::Continue
    }

    /// Decodes the arguments, runs the handler and answers; true when it succeeded.
    fn handle<R: Request>(
        &mut self,
        req: &dap::Request,
        handler: impl FnOnce(&mut Self, R::Arguments) -> Result<R::Body, Failure>,
    ) -> bool {
        let args = req.arguments.clone().unwrap_or(Value::Null);
        let outcome = serde_json::from_value::<R::Arguments>(args)
            .map_err(|e| Failure(format!("invalid arguments for {}: {e}", R::COMMAND)))
            .and_then(|args| handler(self, args));
        match outcome {
            Ok(body) => {
                self.out.success(req.seq, R::COMMAND, body);
                true
            }
            Err(Failure(message)) => {
                self.out.error(req.seq, R::COMMAND, &message);
                false
            }
        }
    }

    fn initialize(&mut self, args: types::InitializeArguments) -> Result<Capabilities, Failure> {
        if self.initialized {
            return Err("the adapter is already initialized".into());
        }
        tracing::info!(client = ?args.client_name, adapter = %args.adapter_id, "initialize");
        self.initialized = true;
        Ok(Capabilities {
            supports_terminate_request: Some(true),
            ..Capabilities::default()
        })
    }
}

/// The write side: whole frames under one lock, numbered by one counter.
struct Outbox {
    writer: FrameWriter<Box<dyn Write + Send>>,
    seq: SeqCounter,
}

impl Outbox {
    fn send(&self, message: &ProtocolMessage) {
        if let Err(err) = self.writer.write_frame(&dap::encode(message)) {
            tracing::warn!("cannot write to the client: {err}");
        }
    }

    fn success(&self, request_seq: i64, command: &str, body: impl Serialize) {
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

    fn error(&self, request_seq: i64, command: &str, message: &str) {
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
            body: serde_json::to_value(serde_json::json!({ "error": error })).ok(),
        }));
    }

    fn event(&self, event: &str, body: Option<impl Serialize>) {
        let body = body.and_then(|b| serde_json::to_value(b).ok());
        self.send(&ProtocolMessage::Event(dap::Event {
            seq: self.seq.next(),
            event: event.to_owned(),
            body,
        }));
    }
}
