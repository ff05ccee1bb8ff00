//! `--listen ws://127.0.0.1:PORT`: the language server and the debug adapter over WebSocket,
//! one JSON message per text frame and no Content-Length, as web editors (Monaco, Theia,
//! code-server) speak them — driven by a real WebSocket client (tungstenite's), every message
//! validated against the protocol definitions; browser pages from foreign origins refused.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};
use tungstenite::client::IntoClientRequest;
use tungstenite::{Message, WebSocket};

/// A `tandem` listening on a WebSocket; killed when dropped.
struct Server {
    child: Child,
    url: String,
    runtime: std::path::PathBuf,
}

impl Server {
    fn start(sub: &str) -> Server {
        let runtime =
            std::env::temp_dir().join(format!("tandem-ws-run-{}-{sub}", std::process::id()));
        std::fs::create_dir_all(&runtime).unwrap();
        let mut child = Command::new(support::tandem_bin())
            .args([sub, "--listen", "ws://127.0.0.1:0"])
            .env("XDG_RUNTIME_DIR", &runtime)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let line = lines.next().unwrap().unwrap();
        let url = line
            .strip_prefix("tandem: listening on ")
            .unwrap_or_else(|| panic!("{line}"))
            .to_owned();
        assert!(url.starts_with("ws://127.0.0.1:"), "{url}");
        // Keep draining stderr so the server never blocks on it.
        std::thread::spawn(move || for _ in lines {});
        Server {
            child,
            url,
            runtime,
        }
    }

    fn connect(&self, origin: Option<&str>) -> Result<WebSocket<TcpStream>, tungstenite::Error> {
        let mut request = self.url.as_str().into_client_request().unwrap();
        if let Some(origin) = origin {
            request
                .headers_mut()
                .insert("Origin", origin.parse().unwrap());
        }
        let addr = self.url.trim_start_matches("ws://");
        let stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(support::PATIENCE)).unwrap();
        tungstenite::client(request, stream)
            .map(|(ws, _)| ws)
            .map_err(|e| match e {
                tungstenite::HandshakeError::Failure(e) => e,
                tungstenite::HandshakeError::Interrupted(_) => panic!("handshake interrupted"),
            })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.runtime);
    }
}

/// The next message: one text frame holding exactly one JSON value.
fn next(ws: &mut WebSocket<TcpStream>) -> Value {
    loop {
        match ws.read().unwrap() {
            Message::Text(text) => {
                assert!(
                    !text.starts_with("Content-Length"),
                    "framing headers on a websocket: {text}"
                );
                return serde_json::from_str(&text)
                    .unwrap_or_else(|e| panic!("not one JSON message ({e}): {text}"));
            }
            Message::Ping(_) | Message::Pong(_) => {}
            other => panic!("unexpected frame {other:?}"),
        }
    }
}

fn send(ws: &mut WebSocket<TcpStream>, msg: Value) {
    ws.send(Message::text(msg.to_string())).unwrap();
}

#[test]
fn lsp_over_websocket() {
    let server = Server::start("lsp");
    let mut ws = server.connect(None).unwrap();
    send(
        &mut ws,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"processId": null, "rootUri": null, "capabilities": {}}}),
    );
    let resp = next(&mut ws);
    if let Some(model) = support::lsp_model() {
        model
            .validate_server_message(&resp, Some("initialize"))
            .unwrap();
    }
    assert_eq!(resp["id"], 1);
    assert_eq!(resp["result"]["serverInfo"]["name"], "tandem");
    assert_eq!(resp["result"]["capabilities"]["inlineValueProvider"], true);
    send(
        &mut ws,
        json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
    );
    // Two requests in one burst come back as two frames, ids echoed exactly.
    send(
        &mut ws,
        json!({"jsonrpc": "2.0", "id": "a", "method": "shutdown"}),
    );
    send(
        &mut ws,
        json!({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}),
    );
    let first = next(&mut ws);
    let second = next(&mut ws);
    assert_eq!(first["id"], "a");
    assert_eq!(first["result"], Value::Null);
    assert_eq!(second["id"], 2);
    assert!(second["error"].is_object(), "{second}");
    send(&mut ws, json!({"jsonrpc": "2.0", "method": "exit"}));
    // The session ends by closing the connection.
    loop {
        match ws.read() {
            Ok(Message::Close(_)) => continue,
            Ok(m) => panic!("unexpected {m:?}"),
            Err(_) => break,
        }
    }
}

#[test]
fn dap_over_websocket_with_a_browser_origin() {
    let server = Server::start("dap");
    // A page served from loopback (a local web IDE) may connect.
    let mut ws = server.connect(Some("http://localhost:3000")).unwrap();
    send(
        &mut ws,
        json!({"seq": 1, "type": "request", "command": "initialize",
               "arguments": {"adapterID": "tandem", "linesStartAt1": true, "columnsStartAt1": true}}),
    );
    let resp = next(&mut ws);
    let event = next(&mut ws);
    if let Some(schema) = support::dap_schema() {
        schema.validate(&resp).unwrap();
        schema.validate(&event).unwrap();
    }
    assert_eq!(resp["request_seq"], 1);
    assert_eq!(resp["success"], true);
    assert_eq!(event["event"], "initialized");
    // Broken JSON in a frame is an error response; the session goes on.
    ws.send(Message::text(
        "{\"seq\": 2, \"type\": \"request\", \"command\": \"threads\"",
    ))
    .unwrap();
    let err = next(&mut ws);
    assert_eq!(err["success"], false, "{err}");
    send(
        &mut ws,
        json!({"seq": 3, "type": "request", "command": "disconnect"}),
    );
    let bye = next(&mut ws);
    assert_eq!(bye["request_seq"], 3);
    assert_eq!(bye["success"], true);
}

#[test]
fn pages_from_other_origins_are_refused() {
    let server = Server::start("dap");
    match server.connect(Some("https://evil.example")) {
        Err(tungstenite::Error::Http(resp)) => assert_eq!(resp.status(), 403),
        Err(e) => panic!("refused the wrong way: {e}"),
        Ok(_) => panic!("a foreign origin was accepted"),
    }
    // The listener still serves well-behaved clients afterwards.
    let mut ws = server.connect(None).unwrap();
    send(
        &mut ws,
        json!({"seq": 1, "type": "request", "command": "initialize", "arguments": {"adapterID": "x"}}),
    );
    assert_eq!(next(&mut ws)["success"], true);
}

#[test]
fn websocket_listeners_are_loopback_only() {
    let out = Command::new(support::tandem_bin())
        .args(["lsp", "--listen", "ws://0.0.0.0:0"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("only loopback"), "{stderr}");
}
