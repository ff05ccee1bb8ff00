//! Fuzzes DAP request handling without a debuggee: the input is decoded as every request
//! type's arguments, then served by a real `dap::serve` session over in-memory streams —
//! `initialize`, the input as the arguments of a request the first byte picks, the input as
//! a whole message, and a `threads` follow-up. Every request must get exactly one response
//! and the output must stay well framed. Requests that start or attach to processes
//! (`launch`, `attach`, `restart`) are never served: the fuzzer must not run programs.
#![no_main]

use std::io::{Cursor, Write};
use std::sync::{Arc, Mutex};

use bytes::BytesMut;
use dap::types::*;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use wire::{FrameDecoder, Limits};

/// The commands the session may be asked (everything served but what runs programs).
const COMMANDS: &[&str] = &[
    "initialize",
    "configurationDone",
    "setBreakpoints",
    "setFunctionBreakpoints",
    "setInstructionBreakpoints",
    "setExceptionBreakpoints",
    "setDataBreakpoints",
    "dataBreakpointInfo",
    "breakpointLocations",
    "continue",
    "next",
    "stepIn",
    "stepOut",
    "pause",
    "threads",
    "stackTrace",
    "scopes",
    "variables",
    "setVariable",
    "setExpression",
    "evaluate",
    "source",
    "loadedSources",
    "modules",
    "readMemory",
    "writeMemory",
    "cancel",
    "exceptionInfo",
    "completions",
    "disassemble",
    "terminate",
    "disconnect",
    "unknownThing",
];

/// Commands that would start or attach to a process.
const FORBIDDEN: &[&str] = &[
    "launch",
    "attach",
    "restart",
    "runInTerminal",
    "startDebugging",
];

fn deserialize<R: Request>(value: &Value) {
    let _ = serde_json::from_value::<R::Arguments>(value.clone());
}

fn every_arguments_type(value: &Value) {
    deserialize::<Launch>(value);
    deserialize::<Attach>(value);
    deserialize::<Restart>(value);
    deserialize::<ConfigurationDone>(value);
    deserialize::<SetBreakpoints>(value);
    deserialize::<SetFunctionBreakpoints>(value);
    deserialize::<SetInstructionBreakpoints>(value);
    deserialize::<SetExceptionBreakpoints>(value);
    deserialize::<SetDataBreakpoints>(value);
    deserialize::<DataBreakpointInfo>(value);
    deserialize::<BreakpointLocations>(value);
    deserialize::<Continue>(value);
    deserialize::<Next>(value);
    deserialize::<StepIn>(value);
    deserialize::<StepOut>(value);
    deserialize::<Pause>(value);
    deserialize::<Threads>(value);
    deserialize::<StackTrace>(value);
    deserialize::<Scopes>(value);
    deserialize::<Variables>(value);
    deserialize::<SetVariable>(value);
    deserialize::<SetExpression>(value);
    deserialize::<Evaluate>(value);
    deserialize::<SourceRequest>(value);
    deserialize::<LoadedSources>(value);
    deserialize::<Modules>(value);
    deserialize::<ReadMemory>(value);
    deserialize::<WriteMemory>(value);
    deserialize::<Cancel>(value);
    deserialize::<ExceptionInfo>(value);
    deserialize::<Completions>(value);
    deserialize::<Disassemble>(value);
    deserialize::<Initialize>(value);
    deserialize::<Disconnect>(value);
    deserialize::<Terminate>(value);
}

/// Whether a body could reach a handler that runs a program, by any reading of it.
fn dangerous(body: &[u8]) -> bool {
    let named = |command: Option<&str>| command.is_some_and(|c| FORBIDDEN.contains(&c));
    if let Ok(value) = serde_json::from_slice::<Value>(body) {
        if named(value.get("command").and_then(Value::as_str)) {
            return true;
        }
    }
    if let Ok(wire::dap::ProtocolMessage::Request(req)) = wire::dap::decode(body) {
        if named(Some(req.command.as_str())) {
            return true;
        }
    }
    false
}

#[derive(Clone, Default)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut out) = self.0.lock() {
            out.extend_from_slice(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(value) = serde_json::from_slice::<Value>(data) {
        every_arguments_type(&value);
    }
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let command = COMMANDS[usize::from(pick) % COMMANDS.len()];
    let mut bodies: Vec<Vec<u8>> = vec![
        br#"{"seq":1,"type":"request","command":"initialize","arguments":{"adapterID":"fuzz"}}"#
            .to_vec(),
    ];
    let mut request =
        format!(r#"{{"seq":2,"type":"request","command":"{command}","arguments":"#).into_bytes();
    request.extend_from_slice(rest);
    request.push(b'}');
    bodies.push(request);
    bodies.push(rest.to_vec());
    bodies.retain(|b| !dangerous(b));
    // The follow-up: a session that is still serving answers it.
    bodies.push(br#"{"seq":1000,"type":"request","command":"threads"}"#.to_vec());
    let input: Vec<u8> = bodies.iter().flat_map(|b| wire::encode_frame(b)).collect();
    let sink = Sink::default();
    let ending = dap::serve(Cursor::new(input), sink.clone(), dap::Config::default());
    let Ok(out) = sink.0.lock().map(|o| o.clone()) else {
        return;
    };
    // The output is well framed JSON, and the follow-up was answered unless a disconnect or
    // terminate among the inputs ended the session first.
    let mut decoder = FrameDecoder::new(Limits::default());
    let mut buf = BytesMut::from(&out[..]);
    let mut answered_followup = false;
    let mut ended = false;
    while let Some(body) = decoder.decode(&mut buf).expect("tandem's output is framed") {
        let msg: Value = serde_json::from_slice(&body).expect("tandem's output is JSON");
        if msg["type"] == "response" {
            assert!(msg["request_seq"].as_i64().is_some_and(|s| s >= 1), "{msg}");
            if msg["request_seq"] == 1000 {
                answered_followup = true;
            }
            if msg["success"] == true && matches!(msg["command"].as_str(), Some("disconnect")) {
                ended = true;
            }
        }
    }
    assert!(
        answered_followup || ended || ending.is_err(),
        "the session stopped answering"
    );
});
