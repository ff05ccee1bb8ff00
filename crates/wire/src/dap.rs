//! DAP envelopes: the `ProtocolMessage` base of requests, responses and events.
//!
//! Only the envelope lives here; argument and body types belong to the `dap` crate. A body that
//! is JSON but not a request still yields as much as could be read (`seq`, `command`), so the
//! adapter can answer with an error response that echoes them.

use std::sync::atomic::{AtomicI64, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Request {
    pub seq: i64,
    pub command: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Response {
    pub seq: i64,
    pub request_seq: i64,
    pub success: bool,
    pub command: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub seq: i64,
    pub event: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
}

/// One DAP message, tagged by its `type` field.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ProtocolMessage {
    Request(Request),
    Response(Response),
    Event(Event),
}

/// A body that is not a valid DAP message, with what could be read of it.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{reason}")]
pub struct DecodeError {
    pub seq: Option<i64>,
    pub command: Option<String>,
    pub reason: String,
}

/// Decodes one frame body.
pub fn decode(body: &[u8]) -> Result<ProtocolMessage, DecodeError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| DecodeError {
        seq: scan_number(body, "seq"),
        command: scan_string(body, "command"),
        reason: format!("invalid json: {e}"),
    })?;
    let seq = value.get("seq").and_then(Value::as_i64);
    let command = value
        .get("command")
        .and_then(Value::as_str)
        .map(str::to_owned);
    serde_json::from_value(value).map_err(|e| DecodeError {
        seq,
        command,
        reason: format!("invalid message: {e}"),
    })
}

/// Finds `"key": <digits>` in a body that is not valid JSON, so the error response can still
/// name the request it answers.
fn scan_number(body: &[u8], key: &str) -> Option<i64> {
    let rest = after_key(body, key)?;
    let digits: Vec<u8> = rest
        .iter()
        .copied()
        .take_while(u8::is_ascii_digit)
        .collect();
    std::str::from_utf8(&digits).ok()?.parse().ok()
}

/// Finds `"key": "<text without quotes or escapes>"` in a body that is not valid JSON.
fn scan_string(body: &[u8], key: &str) -> Option<String> {
    let rest = after_key(body, key)?.strip_prefix(b"\"")?;
    let end = rest.iter().position(|&b| b == b'"' || b == b'\\')?;
    (rest[end] == b'"').then(|| String::from_utf8_lossy(&rest[..end]).into_owned())
}

/// The bytes after `"key"`, optional white space, `:` and optional white space.
fn after_key<'a>(body: &'a [u8], key: &str) -> Option<&'a [u8]> {
    let needle = format!("\"{key}\"");
    let start = body
        .windows(needle.len())
        .position(|w| w == needle.as_bytes())?
        + needle.len();
    let rest = body[start..].trim_ascii_start().strip_prefix(b":")?;
    Some(rest.trim_ascii_start())
}

/// Serialises one message.
pub fn encode(message: &ProtocolMessage) -> Vec<u8> {
    // Serialising these types cannot fail: every map key is a string.
    serde_json::to_vec(message).unwrap_or_default()
}

/// Hands out the `seq` numbers of one side of a session, starting at 1.
#[derive(Debug)]
pub struct SeqCounter(AtomicI64);

impl Default for SeqCounter {
    fn default() -> Self {
        SeqCounter(AtomicI64::new(1))
    }
}

impl SeqCounter {
    pub fn next(&self) -> i64 {
        self.0.fetch_add(1, Ordering::Relaxed)
    }
}
