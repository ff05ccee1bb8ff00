//! The MCP lifecycle and dispatch over JSON-RPC 2.0 (`initialize`, `ping`, `tools/list`,
//! `tools/call`, notifications), shared by both transports, and the stdio transport:
//! one JSON-RPC message per line, as MCP's stdio transport specifies (no Content-Length).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::call::Call;
use crate::code::Code;
use crate::host::Host;
use crate::tools;

/// Protocol revisions this server speaks, newest first (the initialize handshake era).
pub const PROTOCOL_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];
/// A message longer than this is refused (and the line skipped) rather than buffered.
const MAX_MESSAGE_BYTES: usize = 16 << 20;

/// JSON-RPC error codes.
mod codes {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
}

/// What an MCP server is started with.
#[derive(Clone, Debug)]
pub struct Config {
    /// The workspace root of the `code_*` tools (and of relative paths).
    pub root: PathBuf,
    /// The process manager that owns every debuggee of this process.
    pub manager: Arc<procman::ProcessManager>,
}

/// One MCP server: one view of the process's debug sessions (its own and every other
/// view's) and its workspace, shared by every connection of a transport.
#[derive(Debug)]
pub struct Server {
    host: Host,
    code: Arc<Code>,
}

impl Server {
    /// A server; the workspace starts indexing in the background.
    pub fn new(config: Config) -> Arc<Server> {
        let code = Arc::new(Code::new(config.root));
        Server::with_code(config.manager, code)
    }

    /// A server answering code questions from a workspace index shared with other
    /// servers (the connections a `tandem lsp` serves for one workspace).
    pub fn with_code(manager: Arc<procman::ProcessManager>, code: Arc<Code>) -> Arc<Server> {
        Arc::new(Server {
            host: Host::new(manager),
            code,
        })
    }

    /// Ends every debug session this server started and removes its breakpoints from
    /// the sessions of other views.
    pub fn end_sessions(&self) {
        self.host.end_all();
    }

    /// Answers one message: `Some(response)` for a request (or a message that cannot be
    /// read), `None` for a notification or a response.
    pub fn handle(&self, body: &[u8]) -> Option<Value> {
        self.handle_with(body, &|_| {}, &|_| false)
    }

    /// [`Server::handle`] for a transport that can send notifications while a request
    /// runs (`notify`) and read what the client sends meanwhile: `cancelled(id)` says
    /// whether the client cancelled request `id`. A cancelled request gets no response.
    pub fn handle_with(
        &self,
        body: &[u8],
        notify: &dyn Fn(Value),
        cancelled: &dyn Fn(&Value) -> bool,
    ) -> Option<Value> {
        let message: Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(e) => {
                return Some(error(
                    Value::Null,
                    codes::PARSE_ERROR,
                    &format!("parse error: {e}"),
                ))
            }
        };
        let Some(object) = message.as_object() else {
            return Some(error(
                Value::Null,
                codes::INVALID_REQUEST,
                "a message is one JSON-RPC object (batches are not part of MCP since 2025-06-18)",
            ));
        };
        let id = object.get("id").cloned();
        let Some(method) = object.get("method").and_then(Value::as_str) else {
            // A response to a request of ours (we send none), or garbage.
            if object.contains_key("result") || object.contains_key("error") {
                return None;
            }
            return Some(error(
                id.unwrap_or(Value::Null),
                codes::INVALID_REQUEST,
                "not a JSON-RPC request",
            ));
        };
        let Some(id) = id else {
            tracing::debug!(method, "notification");
            return None;
        };
        if !(id.is_string() || id.is_number()) {
            return Some(error(
                Value::Null,
                codes::INVALID_REQUEST,
                "a request id is a string or a number",
            ));
        }
        let params = object.get("params").cloned().unwrap_or(Value::Null);
        let answer = match method {
            "initialize" => Ok(initialize(&params)),
            "ping" => Ok(json!({})),
            "tools/list" => Ok(tools::list()),
            "tools/call" => {
                let token = params["_meta"]["progressToken"].clone();
                let token = (token.is_string() || token.is_number()).then_some(token);
                let is_cancelled = || cancelled(&id);
                let cx = Call::new(token, notify, &is_cancelled);
                let answer = self.call(&params, &cx);
                if cx.was_cancelled() {
                    return None;
                }
                answer
            }
            other => Err((
                codes::METHOD_NOT_FOUND,
                format!("method not found: {other}"),
            )),
        };
        Some(match answer {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err((code, message)) => error(id, code, &message),
        })
    }

    fn call(&self, params: &Value, cx: &Call<'_>) -> Result<Value, (i64, String)> {
        let name = params["name"].as_str().ok_or((
            codes::INVALID_PARAMS,
            "tools/call needs a tool 'name'".to_string(),
        ))?;
        if !tools::exists(name) {
            return Err((codes::INVALID_PARAMS, format!("unknown tool: {name}")));
        }
        let empty = Map::new();
        let args = match params.get("arguments") {
            None | Some(Value::Null) => &empty,
            Some(Value::Object(map)) => map,
            Some(_) => {
                return Err((
                    codes::INVALID_PARAMS,
                    "'arguments' must be an object".to_string(),
                ))
            }
        };
        tracing::debug!(name, "tool call");
        Ok(match tools::call(&self.host, &self.code, name, args, cx) {
            Ok(result) => json!({
                "content": [{"type": "text", "text": result.to_string()}],
                "structuredContent": result,
                "isError": false,
            }),
            Err(message) => json!({
                "content": [{"type": "text", "text": message}],
                "isError": true,
            }),
        })
    }
}

fn initialize(params: &Value) -> Value {
    let asked = params["protocolVersion"].as_str().unwrap_or("");
    let version = PROTOCOL_VERSIONS
        .iter()
        .find(|v| **v == asked)
        .unwrap_or(&PROTOCOL_VERSIONS[0]);
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": false}},
        "serverInfo": {"name": "tandem", "title": "tandem debugger", "version": env!("CARGO_PKG_VERSION")},
        "instructions": "Debug native programs (C, C++, Rust built with -g) on this machine: \
            debug_launch with breakpoints returns where the program stopped, with frames and locals; \
            then debug_step / debug_continue / debug_evaluate / debug_variables; debug_end when done. \
            Calls that run the program return within wait_ms with state running if it has not stopped. \
            code_* tools answer from the workspace's debug information and compiler.",
    })
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Serves MCP on a byte stream of newline-delimited JSON-RPC messages until its end.
///
/// The input is read on a thread of its own, so that what the client sends while a tool
/// call runs is seen: a `notifications/cancelled` naming the call cancels it (see
/// [`crate::call`]); anything else is served after it, in order.
pub fn serve_stdio<R: Read + Send + 'static, W: Write>(
    server: &Server,
    input: R,
    output: W,
) -> std::io::Result<()> {
    let (tx, rx) = std::sync::mpsc::channel::<std::io::Result<Vec<u8>>>();
    std::thread::Builder::new()
        .name("mcp-input".into())
        .spawn(move || {
            let mut reader = BufReader::new(input);
            loop {
                let mut line = Vec::new();
                let read = read_line(&mut reader, &mut line);
                let end = !matches!(read, Ok(n) if n > 0);
                if matches!(read, Ok(0)) || tx.send(read.map(|_| line)).is_err() || end {
                    return;
                }
            }
        })?;
    let output = RefCell::new(output);
    let write = |message: &Value| -> std::io::Result<()> {
        let mut bytes = message.to_string().into_bytes();
        bytes.push(b'\n');
        let mut out = output.borrow_mut();
        out.write_all(&bytes)?;
        out.flush()
    };
    // Messages that arrived while a call ran, served after it.
    let pending: RefCell<VecDeque<Vec<u8>>> = RefCell::default();
    loop {
        let queued = pending.borrow_mut().pop_front();
        let line = match queued {
            Some(line) => line,
            None => match rx.recv() {
                Ok(read) => read?,
                Err(_) => return Ok(()),
            },
        };
        let answer = if line.len() > MAX_MESSAGE_BYTES {
            Some(error(
                Value::Null,
                codes::INVALID_REQUEST,
                "message too large",
            ))
        } else {
            let text = trim(&line);
            if text.is_empty() || cancelled_later(text, &pending.borrow()) {
                continue;
            }
            let notify = |message: Value| {
                if let Err(e) = write(&message) {
                    tracing::debug!("cannot send a notification: {e}");
                }
            };
            let cancelled = |id: &Value| {
                let mut found = false;
                while let Ok(Ok(next)) = rx.try_recv() {
                    if cancellation_of(trim(&next)).as_ref() == Some(id) {
                        found = true;
                    } else {
                        pending.borrow_mut().push_back(next);
                    }
                }
                found
            };
            server.handle_with(text, &notify, &cancelled)
        };
        if let Some(answer) = answer {
            write(&answer)?;
        }
    }
}

/// The id of the request a `notifications/cancelled` message names.
fn cancellation_of(message: &[u8]) -> Option<Value> {
    let v: Value = serde_json::from_slice(message).ok()?;
    (v["method"] == "notifications/cancelled").then(|| v["params"]["requestId"].clone())
}

/// Whether request `message` was cancelled by a notification that came after it (both
/// waiting behind a call that ran): it is not served then.
fn cancelled_later(message: &[u8], pending: &VecDeque<Vec<u8>>) -> bool {
    if pending.is_empty() {
        return false;
    }
    let Some(id) = serde_json::from_slice::<Value>(message)
        .ok()
        .and_then(|v| v.get("id").cloned())
    else {
        return false;
    };
    pending
        .iter()
        .any(|m| cancellation_of(trim(m)).as_ref() == Some(&id))
}

/// Reads one line (without keeping more than [`MAX_MESSAGE_BYTES`] + 1 bytes of it);
/// returns the bytes consumed, 0 at the end of input.
fn read_line<R: BufRead>(reader: &mut R, line: &mut Vec<u8>) -> std::io::Result<usize> {
    let mut consumed = 0;
    loop {
        let buf = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok(consumed);
        }
        let (chunk, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (&buf[..=i], true),
            None => (buf, false),
        };
        let room = (MAX_MESSAGE_BYTES + 1).saturating_sub(line.len());
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let n = chunk.len();
        reader.consume(n);
        consumed += n;
        if done {
            return Ok(consumed);
        }
    }
}

fn trim(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &bytes[start..end]
}
