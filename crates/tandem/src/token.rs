//! The session token of a listener that others can reach (`--listen 0.0.0.0:PORT --token
//! T`): the first message of every connection must carry it — DAP: `initialize` with
//! `arguments.tandemToken`; LSP: `initialize` with `initializationOptions.tandem.token` —
//! or the connection is answered with an error and closed before any session starts.

use std::io::{Cursor, Read, Write};

use anyhow::{bail, Context, Result};
use bytes::BytesMut;
use serde_json::{json, Value};
use wire::{FrameDecoder, Limits};

use crate::Protocol;

/// The first message may be at most this large: nobody has authenticated yet.
const FIRST_MESSAGE_LIMIT: usize = 1 << 20;

/// Reads the connection's first message and checks its token. On success, returns a
/// reader that yields every byte read so far and then the rest of `input`, so the session
/// sees the stream unchanged. On failure, answers the message with an error on `output`
/// and returns the reason.
pub fn check_first_message<R: Read, W: Write>(
    protocol: Protocol,
    token: &str,
    mut input: R,
    mut output: W,
) -> Result<std::io::Chain<Cursor<Vec<u8>>, R>> {
    let mut seen = Vec::new();
    let mut buf = BytesMut::new();
    let mut decoder = FrameDecoder::new(Limits {
        max_body_bytes: FIRST_MESSAGE_LIMIT,
        ..Limits::default()
    });
    let mut chunk = [0u8; 4096];
    let body = loop {
        match decoder.decode(&mut buf) {
            Ok(Some(body)) => break body,
            Ok(None) => {}
            Err(e) => bail!("bad first frame: {e}"),
        }
        let n = match input.read(&mut chunk) {
            Ok(0) => bail!("closed before the first message"),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => bail!("cannot read: {e}"),
        };
        seen.extend_from_slice(&chunk[..n]);
        buf.extend_from_slice(&chunk[..n]);
    };
    let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    match verify(protocol, token, &message) {
        Ok(()) => Ok(Cursor::new(seen).chain(input)),
        Err(reason) => {
            let answer = refusal(protocol, &message, &reason.to_string());
            let _ = output
                .write_all(&wire::encode_frame(answer.to_string().as_bytes()))
                .and_then(|()| output.flush());
            Err(reason)
        }
    }
}

/// Whether `message` is an `initialize` carrying `token`.
fn verify(protocol: Protocol, token: &str, message: &Value) -> Result<()> {
    let given = match protocol {
        Protocol::Dap => {
            if message["command"] != "initialize" {
                bail!("the first request must be 'initialize' with the session token");
            }
            message["arguments"]["tandemToken"].as_str()
        }
        Protocol::Lsp => {
            if message["method"] != "initialize" {
                bail!("the first request must be 'initialize' with the session token");
            }
            message["params"]["initializationOptions"]["tandem"]["token"].as_str()
        }
    };
    let given = given.context("the session token is missing")?;
    if !constant_time_eq(given.as_bytes(), token.as_bytes()) {
        bail!("the session token is wrong");
    }
    Ok(())
}

/// The answer to a refused first message: a DAP error response, or a JSON-RPC error.
fn refusal(protocol: Protocol, message: &Value, reason: &str) -> Value {
    match protocol {
        Protocol::Dap => json!({
            "seq": 1,
            "type": "response",
            "request_seq": message["seq"].as_i64().filter(|s| *s > 0).unwrap_or(1),
            "command": message["command"].as_str().unwrap_or("initialize"),
            "success": false,
            "message": reason,
            "body": {"error": {"id": 1, "format": reason, "showUser": true}},
        }),
        Protocol::Lsp => json!({
            "jsonrpc": "2.0",
            "id": message.get("id").cloned().unwrap_or(Value::Null),
            "error": { "code": -32600, "message": reason },
        }),
    }
}

/// Compares in time that depends only on the lengths, never on where the bytes differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = u8::from(a.len() != b.len());
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        diff |= x ^ y;
    }
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_and_unequal_tokens() {
        assert!(constant_time_eq(b"s3cret", b"s3cret"));
        assert!(!constant_time_eq(b"s3cret", b"s3creT"));
        assert!(!constant_time_eq(b"s3cret", b"s3cret!"));
        assert!(!constant_time_eq(b"", b"x"));
        assert!(constant_time_eq(b"", b""));
    }

    #[test]
    fn the_token_is_read_from_initialize() {
        let dap = json!({"seq": 1, "type": "request", "command": "initialize",
                         "arguments": {"tandemToken": "t"}});
        assert!(verify(Protocol::Dap, "t", &dap).is_ok());
        assert!(verify(Protocol::Dap, "u", &dap).is_err());
        let lsp = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                         "params": {"initializationOptions": {"tandem": {"token": "t"}}}});
        assert!(verify(Protocol::Lsp, "t", &lsp).is_ok());
        let other = json!({"seq": 1, "type": "request", "command": "launch",
                           "arguments": {"tandemToken": "t"}});
        assert!(verify(Protocol::Dap, "t", &other).is_err());
    }
}
