//! `tandem lsp` over stdio: the lifecycle, error codes, cancellation and document sync, each
//! rule checked through the real binary with every emitted message validated.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::Peer;

const SHORT: Duration = Duration::from_millis(300);

fn error_code(resp: &Value) -> i64 {
    resp["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("expected an error response: {resp}"))
}

fn initialized(capabilities: Value) -> (Peer, Value) {
    let mut peer = Peer::lsp();
    let resp = peer.lsp_initialize(capabilities);
    (peer, resp)
}

#[test]
fn initialize_advertises_server_info_and_sync() {
    let (peer, resp) = initialized(json!({}));
    let result = &resp["result"];
    assert_eq!(result["serverInfo"]["name"], "tandem");
    assert_eq!(
        result["capabilities"]["positionEncoding"], "utf-16",
        "utf-16 is the default"
    );
    assert_eq!(result["capabilities"]["textDocumentSync"]["change"], 2);
    assert_eq!(
        result["capabilities"]["textDocumentSync"]["openClose"],
        true
    );
    // Nothing is advertised that does not work yet.
    let mut keys: Vec<&String> = result["capabilities"].as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "codeLensProvider",
            "declarationProvider",
            "definitionProvider",
            "documentSymbolProvider",
            "executeCommandProvider",
            "experimental",
            "hoverProvider",
            "inlineValueProvider",
            "positionEncoding",
            "semanticTokensProvider",
            "textDocumentSync",
            "workspaceSymbolProvider"
        ]
    );
    // `experimental.tandem.features` says which mode runs (docs/editors.md).
    assert_eq!(
        result["capabilities"]["experimental"]["tandem"]["features"], "full",
        "{result}"
    );
    assert!(peer.validated > 0 || support::lsp_model().is_none());
}

#[test]
fn position_encoding_is_negotiated() {
    for (offer, chosen) in [
        (json!(["utf-16", "utf-8"]), "utf-8"),
        (json!(["utf-32", "utf-16"]), "utf-16"),
        (json!(["utf-32"]), "utf-32"),
        (json!([]), "utf-16"),
    ] {
        let (_peer, resp) = initialized(json!({"general": {"positionEncodings": offer}}));
        assert_eq!(
            resp["result"]["capabilities"]["positionEncoding"], chosen,
            "offer {offer}"
        );
    }
}

#[test]
fn requests_before_initialize_are_refused_and_notifications_dropped() {
    let mut peer = Peer::lsp();
    peer.lsp_notify("textDocument/didOpen", json!({"textDocument": {"uri": "file:///x.c", "languageId": "c", "version": 1, "text": ""}}));
    let resp = peer.lsp_request("textDocument/hover", json!({}));
    assert_eq!(error_code(&resp), -32002);
    let resp = peer.lsp_request("shutdown", Value::Null);
    assert_eq!(error_code(&resp), -32002);
    let resp = peer.lsp_initialize(json!({}));
    assert!(resp["result"].is_object());
    let resp = peer.lsp_request("tandem/document", json!({"uri": "file:///x.c"}));
    assert_eq!(
        error_code(&resp),
        -32602,
        "the early didOpen must have been dropped"
    );
}

#[test]
fn unknown_requests_fail_and_unknown_notifications_are_ignored() {
    let (mut peer, _) = initialized(json!({}));
    peer.lsp_notify("custom/whatever", json!({"x": 1}));
    peer.lsp_notify("$/setTrace", json!({"value": "off"}));
    let resp = peer.lsp_request("custom/unknown", json!({}));
    assert_eq!(error_code(&resp), -32601);
    assert!(
        peer.try_recv(SHORT).is_none(),
        "notifications get no answer"
    );
}

#[test]
fn ids_are_echoed_exactly() {
    let (mut peer, _) = initialized(json!({}));
    peer.send(&json!({"jsonrpc": "2.0", "id": "1", "method": "custom/x"}));
    let a = peer.recv();
    peer.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "custom/x"}));
    let b = peer.recv();
    assert_eq!(a["id"], json!("1"));
    assert_eq!(b["id"], json!(1));
}

#[test]
fn invalid_json_in_a_valid_frame_is_a_parse_error_and_the_session_continues() {
    let (mut peer, _) = initialized(json!({}));
    peer.send_body(b"{\"jsonrpc\": \"2.0\", \"id\": 5, \"method\": ");
    let resp = peer.recv();
    assert_eq!(error_code(&resp), -32700);
    assert_eq!(resp["id"], Value::Null);
    peer.send_body(b"[{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"shutdown\"}]");
    let resp = peer.recv();
    assert_eq!(error_code(&resp), -32600, "batches are refused");
    peer.send_body(b"{\"id\":7,\"method\":\"shutdown\"}");
    let resp = peer.recv();
    assert_eq!(
        (error_code(&resp), resp["id"].clone()),
        (-32600, json!(7)),
        "jsonrpc field is required"
    );
    let resp = peer.lsp_request("shutdown", Value::Null);
    assert_eq!(resp["result"], Value::Null);
}

#[test]
fn invalid_params_are_reported() {
    let mut peer = Peer::lsp();
    let resp = peer.lsp_request("initialize", json!({"capabilities": "none"}));
    assert_eq!(error_code(&resp), -32602);
    assert!(peer.lsp_initialize(json!({}))["result"].is_object());
}

#[test]
fn second_initialize_is_an_error() {
    let (mut peer, _) = initialized(json!({}));
    let resp = peer.lsp_request(
        "initialize",
        json!({"processId": null, "rootUri": null, "capabilities": {}}),
    );
    assert_eq!(error_code(&resp), -32600);
}

#[test]
fn cancel_request_answers_a_pending_request_once() {
    let (mut peer, _) = initialized(json!({}));
    peer.send(
        &json!({"jsonrpc": "2.0", "id": 42, "method": "tandem/test/sleep", "params": {"ms": 3000}}),
    );
    peer.lsp_notify("$/cancelRequest", json!({"id": 42}));
    let resp = peer.recv_response(&json!(42));
    assert_eq!(error_code(&resp), -32800);
    // A string id is a different request: cancelling "43" leaves 43 alone.
    peer.send(
        &json!({"jsonrpc": "2.0", "id": 43, "method": "tandem/test/sleep", "params": {"ms": 200}}),
    );
    peer.lsp_notify("$/cancelRequest", json!({"id": "43"}));
    let resp = peer.recv_response(&json!(43));
    assert_eq!(resp["result"]["slept"], 200);
    // Cancelling something already answered is ignored, and the first request never answers twice.
    peer.lsp_notify("$/cancelRequest", json!({"id": 43}));
    let resp = peer.lsp_request("custom/ping", json!({}));
    assert_eq!(error_code(&resp), -32601);
    assert!(peer.try_recv(Duration::from_millis(500)).is_none());
}

#[test]
fn requests_are_served_concurrently() {
    let (mut peer, _) = initialized(json!({}));
    peer.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tandem/test/sleep", "params": {"ms": 1500}}),
    );
    peer.send(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tandem/test/sleep", "params": {"ms": 10}}),
    );
    let first = peer.recv();
    assert_eq!(
        first["id"], 2,
        "the short request answers first: responses may be out of order"
    );
    let second = peer.recv();
    assert_eq!(second["id"], 1);
}

#[test]
fn shutdown_then_exit_is_zero() {
    let (mut peer, _) = initialized(json!({}));
    let resp = peer.lsp_request("shutdown", Value::Null);
    assert!(resp.get("result").is_some() && resp["result"].is_null());
    let resp = peer.lsp_request("textDocument/hover", json!({}));
    assert_eq!(
        error_code(&resp),
        -32600,
        "requests after shutdown are invalid"
    );
    peer.lsp_notify("exit", Value::Null);
    assert_eq!(peer.wait_exit(Duration::from_secs(10)).code(), Some(0));
}

#[test]
fn exit_without_shutdown_is_one() {
    let (mut peer, _) = initialized(json!({}));
    peer.lsp_notify("exit", Value::Null);
    assert_eq!(peer.wait_exit(Duration::from_secs(10)).code(), Some(1));
}

#[test]
fn exit_before_initialize_is_one() {
    let mut peer = Peer::lsp();
    peer.lsp_notify("exit", Value::Null);
    assert_eq!(peer.wait_exit(Duration::from_secs(10)).code(), Some(1));
}

#[test]
fn end_of_input_ends_the_process() {
    let (mut peer, _) = initialized(json!({}));
    peer.close_stdin();
    assert_eq!(peer.wait_exit(Duration::from_secs(10)).code(), Some(1));

    let (mut peer, _) = initialized(json!({}));
    peer.lsp_request("shutdown", Value::Null);
    peer.close_stdin();
    assert_eq!(
        peer.wait_exit(Duration::from_secs(10)).code(),
        Some(0),
        "orderly shutdown then EOF"
    );
}

#[test]
fn half_a_frame_then_end_of_input_does_not_hang() {
    let (mut peer, _) = initialized(json!({}));
    peer.send_raw(b"Content-Length: 100\r\n\r\n{\"jsonrpc\":");
    peer.close_stdin();
    assert_eq!(peer.wait_exit(Duration::from_secs(10)).code(), Some(1));
    assert!(
        peer.stderr().contains("end of input inside a frame"),
        "{}",
        peer.stderr()
    );
}

#[test]
fn a_framing_error_closes_the_connection_with_a_logged_reason() {
    let (mut peer, _) = initialized(json!({}));
    peer.send_raw(b"Content-Length: twelve\r\n\r\n{}");
    assert_eq!(peer.wait_exit(Duration::from_secs(10)).code(), Some(1));
    assert!(
        peer.stderr().contains("content-length is not a byte count"),
        "{}",
        peer.stderr()
    );
    assert!(peer.output_closed(Duration::from_secs(2)));
}

#[test]
fn oversize_header_closes_the_connection() {
    let mut peer = Peer::lsp();
    peer.send_raw(&vec![b'X'; 20_000]);
    assert_eq!(peer.wait_exit(Duration::from_secs(10)).code(), Some(1));
    assert!(
        peer.stderr().contains("header block exceeds"),
        "{}",
        peer.stderr()
    );
}

#[test]
fn frames_split_into_single_bytes_are_understood() {
    let mut peer = Peer::lsp();
    let body = serde_json::to_vec(&json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null,"rootUri":null,"capabilities":{},"clientInfo":{"name":"测试 é 🦀"}}})).unwrap();
    let frame = wire::encode_frame(&body);
    for b in frame {
        peer.send_raw(&[b]);
    }
    let resp = peer.recv();
    assert_eq!(resp["id"], 1);
    assert!(resp["result"]["capabilities"].is_object());
}

fn open(peer: &mut Peer, uri: &str, text: &str) {
    peer.lsp_notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "c", "version": 1, "text": text}}),
    );
}

fn change(peer: &mut Peer, uri: &str, version: i32, changes: Value) {
    peer.lsp_notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": changes}),
    );
}

fn text_of(peer: &mut Peer, uri: &str) -> (String, i64) {
    let resp = peer.lsp_request("tandem/document", json!({"uri": uri}));
    (
        resp["result"]["text"].as_str().unwrap().to_owned(),
        resp["result"]["version"].as_i64().unwrap(),
    )
}

fn range(l0: u32, c0: u32, l1: u32, c1: u32) -> Value {
    json!({"start": {"line": l0, "character": c0}, "end": {"line": l1, "character": c1}})
}

#[test]
fn incremental_sync_in_each_encoding() {
    // "🦀" is 4 UTF-8 bytes, 2 UTF-16 units and 1 UTF-32 unit; "é" is 2, 1 and 1.
    let text = "int café = 1; // 🦀 数据\nint b;\n";
    for (encoding, crab_end) in [("utf-8", 22), ("utf-16", 19), ("utf-32", 18)] {
        let (mut peer, resp) = initialized(json!({"general": {"positionEncodings": [encoding]}}));
        assert_eq!(resp["result"]["capabilities"]["positionEncoding"], encoding);
        let uri = "file:///tmp/enc.c";
        open(&mut peer, uri, text);
        // Replace the character right after the crab (a space) with "!".
        change(
            &mut peer,
            uri,
            2,
            json!([{"range": range(0, crab_end, 0, crab_end + 1), "text": "!"}]),
        );
        let (got, version) = text_of(&mut peer, uri);
        assert_eq!(got, "int café = 1; // 🦀!数据\nint b;\n", "{encoding}");
        assert_eq!(version, 2);
        // Insert at the end of the document, then delete a whole line across the line break.
        change(
            &mut peer,
            uri,
            3,
            json!([
                {"range": range(2, 0, 2, 0), "text": "int c;\n"},
                {"range": range(1, 0, 2, 0), "text": ""}
            ]),
        );
        assert_eq!(
            text_of(&mut peer, uri).0,
            "int café = 1; // 🦀!数据\nint c;\n",
            "{encoding}"
        );
    }
}

#[test]
fn full_sync_replaces_the_text_and_close_forgets_it() {
    let (mut peer, _) = initialized(json!({}));
    let uri = "file:///tmp/full.c";
    open(&mut peer, uri, "old");
    change(&mut peer, uri, 7, json!([{"text": "new text"}]));
    assert_eq!(text_of(&mut peer, uri), ("new text".to_owned(), 7));
    peer.lsp_notify(
        "textDocument/didClose",
        json!({"textDocument": {"uri": uri}}),
    );
    let resp = peer.lsp_request("tandem/document", json!({"uri": uri}));
    assert_eq!(error_code(&resp), -32602);
}

#[test]
fn out_of_range_edits_are_refused_without_corrupting_the_document() {
    let (mut peer, _) = initialized(json!({"general": {"positionEncodings": ["utf-16"]}}));
    let uri = "file:///tmp/range.c";
    open(&mut peer, uri, "a🦀b\nline two\n");
    // Line 9 does not exist; the first (valid) change of the same batch must not apply either.
    change(
        &mut peer,
        uri,
        2,
        json!([
            {"range": range(0, 0, 0, 1), "text": "X"},
            {"range": range(9, 0, 9, 1), "text": "Y"}
        ]),
    );
    // Column 2 in UTF-16 is the middle of the crab's surrogate pair.
    change(
        &mut peer,
        uri,
        3,
        json!([{"range": range(0, 2, 0, 3), "text": "Z"}]),
    );
    let (text, version) = text_of(&mut peer, uri);
    assert_eq!(text, "a🦀b\nline two\n");
    assert_eq!(version, 1);
    let log = peer.stderr_when(
        |l| l.contains("past the end") && l.contains("inside a character"),
        Duration::from_secs(5),
    );
    assert!(
        log.contains("refused") && log.contains("past the end"),
        "{log}"
    );
    assert!(log.contains("inside a character"), "{log}");
    // The document still takes valid edits afterwards.
    change(
        &mut peer,
        uri,
        4,
        json!([{"range": range(1, 0, 1, 4), "text": "LINE"}]),
    );
    assert_eq!(text_of(&mut peer, uri).0, "a🦀b\nLINE two\n");
}

#[test]
fn stdout_carries_only_frames_even_with_debug_logging() {
    // Peer runs tandem with TANDEM_LOG=debug; its reader fails the test on any byte that is
    // not part of a frame. Exercise a few paths that log.
    let (mut peer, _) = initialized(json!({}));
    peer.lsp_notify("custom/x", json!({}));
    peer.lsp_request("custom/y", json!({}));
    peer.lsp_request("shutdown", Value::Null);
    peer.lsp_notify("exit", Value::Null);
    assert_eq!(peer.wait_exit(Duration::from_secs(10)).code(), Some(0));
    assert!(peer.output_closed(Duration::from_secs(2)));
    assert!(peer.stderr().contains("DEBUG"), "debug logs go to stderr");
}
