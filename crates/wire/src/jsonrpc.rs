//! JSON-RPC 2.0 envelopes as LSP uses them: requests, notifications, responses and error codes.
//!
//! Ids are echoed exactly: the number `1` and the string `"1"` are different ids, and a number
//! keeps the spelling the client sent. Batches are not part of LSP and are answered with
//! [`codes::INVALID_REQUEST`].

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The standard and LSP-specific error codes.
pub mod codes {
    pub const PARSE_ERROR: i32 = -32700;
    pub const INVALID_REQUEST: i32 = -32600;
    pub const METHOD_NOT_FOUND: i32 = -32601;
    pub const INVALID_PARAMS: i32 = -32602;
    pub const INTERNAL_ERROR: i32 = -32603;
    pub const SERVER_NOT_INITIALIZED: i32 = -32002;
    pub const UNKNOWN_ERROR_CODE: i32 = -32001;
    pub const REQUEST_FAILED: i32 = -32803;
    pub const SERVER_CANCELLED: i32 = -32802;
    pub const CONTENT_MODIFIED: i32 = -32801;
    pub const REQUEST_CANCELLED: i32 = -32800;
}

/// A request id: an integer or a string, kept exactly as received.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Id {
    Number(serde_json::Number),
    String(String),
}

impl From<i64> for Id {
    fn from(n: i64) -> Self {
        Id::Number(n.into())
    }
}

impl From<&str> for Id {
    fn from(s: &str) -> Self {
        Id::String(s.to_owned())
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Number(n) => write!(f, "{n}"),
            Id::String(s) => write!(f, "{s:?}"),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    pub id: Id,
    pub method: String,
    pub params: Option<Value>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Notification {
    pub method: String,
    pub params: Option<Value>,
}

/// A response; `id` is `None` only for errors about messages whose id could not be read.
#[derive(Clone, Debug, PartialEq)]
pub struct Response {
    pub id: Option<Id>,
    pub outcome: Result<Value, ResponseError>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResponseError {
    pub code: i32,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ResponseError {
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        ResponseError {
            code,
            message: message.into(),
            data: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    Request(Request),
    Notification(Notification),
    Response(Response),
}

impl Response {
    pub fn ok(id: Id, result: Value) -> Self {
        Response {
            id: Some(id),
            outcome: Ok(result),
        }
    }

    pub fn err(id: Option<Id>, code: i32, message: impl Into<String>) -> Self {
        Response {
            id,
            outcome: Err(ResponseError::new(code, message)),
        }
    }
}

/// Why a well-framed body is not a usable message; each maps to the error response to send.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    #[error("parse error: {0}")]
    Parse(String),
    #[error("batch requests are not supported")]
    Batch,
    /// The message is JSON but not a valid JSON-RPC 2.0 message; `id` is set when it could be read.
    #[error("invalid request: {reason}")]
    Invalid { id: Option<Id>, reason: String },
}

impl DecodeError {
    /// The error response the peer should get for this message.
    pub fn to_response(&self) -> Response {
        match self {
            DecodeError::Parse(_) => Response::err(None, codes::PARSE_ERROR, self.to_string()),
            DecodeError::Batch => Response::err(None, codes::INVALID_REQUEST, self.to_string()),
            DecodeError::Invalid { id, .. } => {
                Response::err(id.clone(), codes::INVALID_REQUEST, self.to_string())
            }
        }
    }
}

/// Decodes one frame body into a message.
pub fn decode(body: &[u8]) -> Result<Message, DecodeError> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| DecodeError::Parse(e.to_string()))?;
    let mut object = match value {
        Value::Object(object) => object,
        Value::Array(_) => return Err(DecodeError::Batch),
        _ => return Err(invalid(None, "a message must be a json object")),
    };
    let id = match object.remove("id") {
        None => None,
        Some(Value::Number(n)) => Some(Id::Number(n)),
        Some(Value::String(s)) => Some(Id::String(s)),
        Some(Value::Null) => return Err(invalid(None, "id must not be null")),
        Some(_) => return Err(invalid(None, "id must be a number or a string")),
    };
    match object.get("jsonrpc") {
        Some(Value::String(v)) if v == "2.0" => {}
        _ => return Err(invalid(id, "jsonrpc must be \"2.0\"")),
    }
    match object.remove("method") {
        Some(Value::String(method)) => {
            // `"params": null` is read as absent: some clients send it for `exit` and `shutdown`.
            let params = object.remove("params").filter(|p| !p.is_null());
            if let Some(p) = &params {
                if !(p.is_object() || p.is_array()) {
                    return Err(invalid(id, "params must be an object or an array"));
                }
            }
            Ok(match id {
                Some(id) => Message::Request(Request { id, method, params }),
                None => Message::Notification(Notification { method, params }),
            })
        }
        Some(_) => Err(invalid(id, "method must be a string")),
        None => decode_response(id, object),
    }
}

fn decode_response(id: Option<Id>, mut object: Map<String, Value>) -> Result<Message, DecodeError> {
    let Some(id) = id else {
        return Err(invalid(None, "a message needs a method or an id"));
    };
    let outcome = match (object.remove("result"), object.remove("error")) {
        (Some(result), None) => Ok(result),
        (None, Some(error)) => Err(serde_json::from_value::<ResponseError>(error)
            .map_err(|e| invalid(Some(id.clone()), &format!("malformed error object: {e}")))?),
        _ => {
            return Err(invalid(
                Some(id),
                "a response needs exactly one of result and error",
            ))
        }
    };
    Ok(Message::Response(Response {
        id: Some(id),
        outcome,
    }))
}

fn invalid(id: Option<Id>, reason: &str) -> DecodeError {
    DecodeError::Invalid {
        id,
        reason: reason.to_owned(),
    }
}

/// Serialises a message as a JSON-RPC 2.0 body.
pub fn encode(message: &Message) -> Vec<u8> {
    // Serialising cannot fail: every key is a string.
    serde_json::to_vec(&Envelope(message)).unwrap_or_default()
}

/// A message as its JSON object, serialised from borrowed parts: params and results (which
/// may hold thousands of values) are written where they are, never copied. Keys come in
/// sorted order, as a `serde_json::Map` of the envelope writes them.
struct Envelope<'a>(&'a Message);

impl Serialize for Envelope<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        match self.0 {
            Message::Request(r) => {
                map.serialize_entry("id", &r.id)?;
                map.serialize_entry("jsonrpc", "2.0")?;
                map.serialize_entry("method", &r.method)?;
                if let Some(p) = &r.params {
                    map.serialize_entry("params", p)?;
                }
            }
            Message::Notification(n) => {
                map.serialize_entry("jsonrpc", "2.0")?;
                map.serialize_entry("method", &n.method)?;
                if let Some(p) = &n.params {
                    map.serialize_entry("params", p)?;
                }
            }
            Message::Response(r) => match &r.outcome {
                Ok(result) => {
                    map.serialize_entry("id", &r.id)?;
                    map.serialize_entry("jsonrpc", "2.0")?;
                    map.serialize_entry("result", result)?;
                }
                Err(error) => {
                    map.serialize_entry("error", &error_value(error))?;
                    map.serialize_entry("id", &r.id)?;
                    map.serialize_entry("jsonrpc", "2.0")?;
                }
            },
        }
        map.end()
    }
}

fn error_value(error: &ResponseError) -> Value {
    serde_json::to_value(error).unwrap_or(Value::Null)
}
