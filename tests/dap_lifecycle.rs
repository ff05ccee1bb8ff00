//! `tandem dap` over stdio and TCP: initialize, error responses that keep the session alive,
//! terminate, disconnect and end of input, with every emitted message validated.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};
use support::Peer;

fn assert_echoes(resp: &Value, seq: i64, command: &str) {
    assert_eq!(resp["type"], "response");
    assert_eq!(resp["request_seq"], seq, "{resp}");
    assert_eq!(resp["command"], command, "{resp}");
}

fn assert_failed(resp: &Value) {
    assert_eq!(resp["success"], false, "{resp}");
    let message = resp["message"].as_str().unwrap_or_default();
    assert!(
        !message.is_empty(),
        "an error response needs a readable message: {resp}"
    );
}

#[test]
fn initialize_answers_with_honest_capabilities() {
    let mut peer = Peer::dap();
    let resp = peer.dap_initialize();
    assert_echoes(&resp, 1, "initialize");
    assert_eq!(resp["success"], true);
    let caps = resp["body"].as_object().expect("capabilities body");
    assert!(resp["seq"].as_i64().unwrap() >= 1);
    // The configuration phase opens right after the response.
    let ev = peer.recv();
    assert_eq!(ev["event"], "initialized", "{ev}");
    // Every capability is a plain `true` (absent means unsupported), and every request a
    // capability names is served: without a program it fails for that reason, never as
    // an unknown command.
    for (name, value) in caps {
        if name.starts_with("supports") || name.starts_with("support") {
            assert_eq!(value, &json!(true), "{name}");
        }
    }
    let requests = [
        ("supportsConfigurationDoneRequest", "configurationDone"),
        ("supportsFunctionBreakpoints", "setFunctionBreakpoints"),
        ("supportsSetVariable", "setVariable"),
        ("supportsRestartRequest", "restart"),
        ("supportsModulesRequest", "modules"),
        ("supportsTerminateRequest", "terminate"),
        ("supportsSetExpression", "setExpression"),
        ("supportsReadMemoryRequest", "readMemory"),
        ("supportsWriteMemoryRequest", "writeMemory"),
        ("supportsCancelRequest", "cancel"),
        ("supportsBreakpointLocationsRequest", "breakpointLocations"),
        (
            "supportsInstructionBreakpoints",
            "setInstructionBreakpoints",
        ),
        ("supportsDataBreakpoints", "setDataBreakpoints"),
        ("supportsDisassembleRequest", "disassemble"),
        ("supportsCompletionsRequest", "completions"),
        ("supportsExceptionInfoRequest", "exceptionInfo"),
        ("supportsLoadedSourcesRequest", "loadedSources"),
        ("supportsStepInTargetsRequest", "stepInTargets"),
    ];
    let mut served = 0;
    for (capability, command) in requests {
        if !caps.contains_key(capability) {
            continue;
        }
        let resp = peer.dap_request(command, json!({}));
        let message = resp["message"].as_str().unwrap_or_default();
        assert!(
            !message.contains("unknown command"),
            "{capability} is advertised but {command} is not served: {resp}"
        );
        served += 1;
    }
    assert!(served >= 10, "only {served} requests advertised");
    // Signal filters: the fatal signals stop by default.
    let filters = caps["exceptionBreakpointFilters"].as_array().unwrap();
    for sig in ["SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGABRT"] {
        let f = filters.iter().find(|f| f["filter"] == sig).unwrap();
        assert_eq!(f["default"], true, "{sig}");
    }
}

#[test]
fn unknown_commands_fail_and_the_session_continues() {
    let mut peer = Peer::dap();
    peer.dap_initialize();
    let resp = peer.dap_request("flyToTheMoon", json!({"speed": 3}));
    assert_echoes(&resp, 2, "flyToTheMoon");
    assert_failed(&resp);
    assert!(resp["message"].as_str().unwrap().contains("flyToTheMoon"));
    let resp = peer.dap_request("launch", json!({"program": "/no/such/program"}));
    assert_failed(&resp);
    assert!(resp["message"]
        .as_str()
        .unwrap()
        .contains("/no/such/program"));
    let resp = peer.dap_request("disconnect", json!({}));
    assert_eq!(resp["success"], true);
}

#[test]
fn malformed_arguments_fail_and_the_session_continues() {
    let mut peer = Peer::dap();
    let resp = peer.dap_request("initialize", json!({"adapterID": 5}));
    assert_echoes(&resp, 1, "initialize");
    assert_failed(&resp);
    let resp = peer.dap_request("initialize", json!({"clientID": "x"}));
    assert_failed(&resp);
    let resp = peer.dap_request(
        "initialize",
        json!({"adapterID": "tandem", "linesStartAt1": "yes"}),
    );
    assert_failed(&resp);
    let resp = peer.dap_initialize();
    assert_eq!(resp["success"], true);
    let resp = peer.dap_request("disconnect", json!({"terminateDebuggee": "please"}));
    assert_failed(&resp);
    let resp = peer.dap_request("initialize", json!({"adapterID": "tandem"}));
    assert_failed(&resp);
    assert!(resp["message"]
        .as_str()
        .unwrap()
        .contains("already initialized"));
}

#[test]
fn requests_before_initialize_are_refused() {
    let mut peer = Peer::dap();
    let resp = peer.dap_request("threads", Value::Null);
    assert_echoes(&resp, 1, "threads");
    assert_failed(&resp);
    assert_eq!(peer.dap_initialize()["success"], true);
}

#[test]
fn undecodable_messages_get_an_error_response() {
    let mut peer = Peer::dap();
    peer.send_body(b"{\"seq\": 1, \"type\": \"request\", ");
    let resp = peer.recv();
    assert_failed(&resp);
    assert_eq!(
        resp["request_seq"], 1,
        "the seq is read from broken json where it can be"
    );
    peer.send_body(b"not json at all");
    let resp = peer.recv();
    assert_failed(&resp);
    assert_eq!(resp["request_seq"], 2, "else the next seq is assumed");
    // JSON that is not a DAP message: seq and command are echoed as far as they were readable.
    peer.send(&json!({"seq": 7, "type": "bogus", "command": "threads"}));
    let resp = peer.recv();
    assert_failed(&resp);
    assert_echoes(&resp, 7, "threads");
    peer.send(&json!({"seq": 8, "type": "request"}));
    let resp = peer.recv();
    assert_failed(&resp);
    assert_eq!(resp["request_seq"], 8);
    assert_eq!(peer.dap_initialize()["success"], true);
}

#[test]
fn responses_echo_request_seq_and_command_even_when_seq_is_unusual() {
    let mut peer = Peer::dap();
    peer.send(&json!({"seq": 1000, "type": "request", "command": "initialize", "arguments": {"adapterID": "x"}}));
    let resp = peer.recv();
    assert_echoes(&resp, 1000, "initialize");
    assert_eq!(peer.recv()["event"], "initialized");
    peer.send(&json!({"seq": 1000, "type": "request", "command": "nope"}));
    let resp = peer.recv();
    assert_echoes(&resp, 1000, "nope");
}

#[test]
fn terminate_then_disconnect_exits_zero() {
    let mut peer = Peer::dap();
    peer.dap_initialize();
    assert_eq!(peer.recv()["event"], "initialized");
    peer.send(&json!({"seq": 2, "type": "request", "command": "terminate"}));
    let resp = peer.recv();
    assert_echoes(&resp, 2, "terminate");
    assert_eq!(resp["success"], true);
    let event = peer.recv();
    assert_eq!(
        (event["type"].as_str(), event["event"].as_str()),
        (Some("event"), Some("terminated"))
    );
    let resp = peer.dap_request("disconnect", json!({"restart": false}));
    assert_eq!(resp["success"], true);
    assert_eq!(peer.wait_exit(Duration::from_secs(10)).code(), Some(0));
}

#[test]
fn end_of_input_without_disconnect_exits_nonzero() {
    let mut peer = Peer::dap();
    peer.dap_initialize();
    peer.close_stdin();
    assert_eq!(peer.wait_exit(Duration::from_secs(10)).code(), Some(1));

    let mut peer = Peer::dap();
    peer.send_raw(b"Content-Length: 50\r\n\r\n{\"seq\":1");
    peer.close_stdin();
    assert_eq!(peer.wait_exit(Duration::from_secs(10)).code(), Some(1));
    assert!(peer.stderr().contains("end of input inside a frame"));
}

#[test]
fn framing_errors_close_the_session() {
    let mut peer = Peer::dap();
    peer.send_raw(b"Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}");
    assert_eq!(peer.wait_exit(Duration::from_secs(10)).code(), Some(1));
    assert!(
        peer.stderr()
            .contains("content-length given more than once"),
        "{}",
        peer.stderr()
    );
}

/// Starts `tandem <sub> --listen 127.0.0.1:0` and returns the child and its address.
fn listening(sub: &str) -> (std::process::Child, String) {
    let mut child = Command::new(support::tandem_bin())
        .args([sub, "--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let line = lines.next().unwrap().unwrap();
    let addr = line
        .strip_prefix("tandem: listening on ")
        .unwrap_or_else(|| panic!("{line}"))
        .to_owned();
    (child, addr)
}

fn tcp_request(
    stream: &mut TcpStream,
    reader: &mut wire::FrameReader<TcpStream>,
    msg: Value,
) -> Value {
    use std::io::Write;
    stream
        .write_all(&wire::encode_frame(&serde_json::to_vec(&msg).unwrap()))
        .unwrap();
    loop {
        let body = reader.read_frame().unwrap().unwrap();
        let value: Value = serde_json::from_slice(&body).unwrap();
        if let Some(schema) = support::dap_schema() {
            if value.get("type").is_some() {
                schema.validate(&value).unwrap();
            }
        }
        // Events (`initialized`) are not what a request waits for.
        if value["type"] != "event" {
            return value;
        }
    }
}

#[test]
fn tcp_serves_one_session_per_connection() {
    for sub in ["dap", "lsp"] {
        let (mut child, addr) = listening(sub);
        let mut streams = Vec::new();
        for _ in 0..2 {
            let stream = TcpStream::connect(&addr).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(20)))
                .unwrap();
            let reader = wire::FrameReader::new(stream.try_clone().unwrap());
            streams.push((stream, reader));
        }
        // Both connections are live at once, each with its own session state.
        for (stream, reader) in &mut streams {
            let resp = if sub == "dap" {
                tcp_request(
                    stream,
                    reader,
                    json!({"seq": 1, "type": "request", "command": "initialize", "arguments": {"adapterID": "t"}}),
                )
            } else {
                tcp_request(
                    stream,
                    reader,
                    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": null, "rootUri": null, "capabilities": {}}}),
                )
            };
            assert!(
                resp["success"] == true || resp["result"].is_object(),
                "{resp}"
            );
        }
        let (stream, reader) = &mut streams[0];
        if sub == "dap" {
            let resp = tcp_request(
                stream,
                reader,
                json!({"seq": 2, "type": "request", "command": "disconnect"}),
            );
            assert_eq!(resp["success"], true);
        }
        drop(streams);
        // The listener outlives its sessions.
        assert!(child.try_wait().unwrap().is_none());
        TcpStream::connect(&addr).expect("still listening");
        child.kill().unwrap();
        child.wait().unwrap();
    }
}

#[test]
fn listening_beyond_loopback_is_refused() {
    let out = Command::new(support::tandem_bin())
        .args(["dap", "--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("only loopback"));
    assert!(out.stdout.is_empty());
}
