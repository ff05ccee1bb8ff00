//! A small blocking DAP client: one adapter process on stdio, Content-Length frames through
//! `wire`, responses matched by `request_seq`, events kept in arrival order until asked for.

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use crossbeam_channel::{Receiver, RecvTimeoutError};
use serde_json::{json, Value};
use wire::dap::{Event, ProtocolMessage, Response};
use wire::{FrameWriter, Inbound, Limits};

/// One adapter session.
pub struct DapClient {
    name: String,
    child: Child,
    writer: FrameWriter<ChildStdin>,
    inbound: Receiver<Inbound>,
    seq: i64,
    events: VecDeque<Event>,
    responses: HashMap<i64, Response>,
    /// How long any single wait may take before the scenario is abandoned.
    timeout: Duration,
}

impl DapClient {
    /// Starts the adapter; its stderr goes to `log`.
    pub fn spawn(name: &str, mut command: Command, log: &Path, timeout: Duration) -> Result<Self> {
        let log_file =
            File::create(log).with_context(|| format!("creating log {}", log.display()))?;
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log_file))
            .spawn()
            .with_context(|| format!("starting {name}: {command:?}"))?;
        let stdin = child.stdin.take().context("adapter stdin")?;
        let stdout = child.stdout.take().context("adapter stdout")?;
        let inbound = wire::spawn_reader(stdout, Limits::default())?;
        Ok(DapClient {
            name: name.to_owned(),
            child,
            writer: FrameWriter::new(stdin),
            inbound,
            seq: 0,
            events: VecDeque::new(),
            responses: HashMap::new(),
            timeout,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends a request and returns its `seq`, without waiting.
    pub fn send(&mut self, command: &str, arguments: Value) -> Result<i64> {
        self.seq += 1;
        let message = json!({
            "seq": self.seq,
            "type": "request",
            "command": command,
            "arguments": arguments,
        });
        let body = serde_json::to_vec(&message)?;
        self.writer
            .write_frame(&body)
            .with_context(|| format!("{}: sending {command}", self.name))?;
        Ok(self.seq)
    }

    /// Waits for the response to `seq`; an unsuccessful response is an error.
    pub fn response(&mut self, seq: i64) -> Result<Value> {
        let deadline = Instant::now() + self.timeout;
        loop {
            if let Some(response) = self.responses.remove(&seq) {
                if !response.success {
                    bail!(
                        "{}: {} failed: {}",
                        self.name,
                        response.command,
                        response.message.unwrap_or_default()
                    );
                }
                return Ok(response.body.unwrap_or(Value::Null));
            }
            self.pump(deadline)
                .with_context(|| format!("{}: waiting for the response to #{seq}", self.name))?;
        }
    }

    /// Sends a request and waits for its response body.
    pub fn request(&mut self, command: &str, arguments: Value) -> Result<Value> {
        let seq = self.send(command, arguments)?;
        self.response(seq)
    }

    /// Waits for the next event called `name`, dropping no other event: events that arrived
    /// earlier and are not asked for stay queued.
    pub fn event(&mut self, name: &str) -> Result<Value> {
        let deadline = Instant::now() + self.timeout;
        loop {
            if let Some(i) = self.events.iter().position(|e| e.event == name) {
                let event = self.events.remove(i).context("queued event")?;
                return Ok(event.body.unwrap_or(Value::Null));
            }
            self.pump(deadline)
                .with_context(|| format!("{}: waiting for a `{name}` event", self.name))?;
        }
    }

    /// The first queued event called `name`, without waiting for more input.
    pub fn queued_event(&mut self, name: &str) -> Option<Value> {
        let i = self.events.iter().position(|e| e.event == name)?;
        self.events.remove(i).and_then(|e| e.body)
    }

    /// Reads one message and files it.
    fn pump(&mut self, deadline: Instant) -> Result<()> {
        let left = deadline.saturating_duration_since(Instant::now());
        let inbound = match self.inbound.recv_timeout(left) {
            Ok(inbound) => inbound,
            Err(RecvTimeoutError::Timeout) => bail!("timed out after {:?}", self.timeout),
            Err(RecvTimeoutError::Disconnected) => bail!("adapter output closed"),
        };
        let body = match inbound {
            Inbound::Frame(body) => body,
            Inbound::Closed => bail!("adapter closed its output"),
            Inbound::Failed(err) => return Err(anyhow!(err).context("adapter framing")),
        };
        match wire::dap::decode(&body).map_err(|e| anyhow!("bad message from adapter: {e}"))? {
            ProtocolMessage::Response(response) => {
                self.responses.insert(response.request_seq, response);
            }
            ProtocolMessage::Event(event) => self.events.push_back(event),
            ProtocolMessage::Request(request) => {
                // Reverse requests (runInTerminal, startDebugging) are not part of any scenario.
                let refusal = json!({
                    "seq": 0,
                    "type": "response",
                    "request_seq": request.seq,
                    "success": false,
                    "command": request.command,
                    "message": "not supported by tandem-bench",
                });
                self.writer.write_frame(&serde_json::to_vec(&refusal)?)?;
            }
        }
        Ok(())
    }

    /// Ends the session: `disconnect` (killing the debuggee), then the adapter is given a
    /// moment to exit before it is killed.
    pub fn close(mut self) -> Result<()> {
        let timeout = self.timeout;
        self.timeout = Duration::from_secs(5);
        let said_bye = self
            .send("disconnect", json!({ "terminateDebuggee": true }))
            .and_then(|seq| self.response(seq));
        self.timeout = timeout;
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if self.child.try_wait()?.is_some() {
                return said_bye.map(|_| ());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        eprintln!(
            "tandem-bench: {} did not exit after disconnect; killing it",
            self.name
        );
        Ok(())
    }
}

impl Drop for DapClient {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}
