//! MCP's Streamable HTTP transport, the part a tool server needs: the client POSTs one
//! JSON-RPC message per request and gets the answer as `application/json` (202 for a
//! notification). No server-initiated stream (GET answers 405) and no session id: every
//! connection drives the same [`Server`], so each sees the sessions the others started.
//!
//! Request heads are parsed with `httparse`; a connection is served on its own thread and
//! kept alive between requests. Browser pages from other origins are refused (DNS
//! rebinding); with a token every request must carry `Authorization: Bearer TOKEN`.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use crate::server::Server;

/// Checks the token of a request (`None`: it carried none). Built by the binary over its
/// constant-time comparison, shared with the other listeners.
pub type TokenCheck = Arc<dyn Fn(Option<&str>) -> bool + Send + Sync>;

/// A request head may be at most this large.
const MAX_HEAD_BYTES: usize = 16 * 1024;
/// A request body may be at most this large.
const MAX_BODY_BYTES: usize = 16 << 20;
/// A connection idle this long between requests is closed.
const IDLE: Duration = Duration::from_secs(300);

/// Serves every connection of `listener` on its own thread, forever.
pub fn serve(listener: TcpListener, server: Arc<Server>, token: Option<TokenCheck>) {
    for stream in listener.incoming() {
        match stream {
            Ok(stream) => {
                let server = server.clone();
                let token = token.clone();
                let peer = stream
                    .peer_addr()
                    .map(|a| a.to_string())
                    .unwrap_or_default();
                let spawned = std::thread::Builder::new()
                    .name(format!("mcp-{peer}"))
                    .spawn(move || {
                        if let Err(e) = connection(stream, &server, token.as_ref()) {
                            tracing::debug!(%peer, "connection ended: {e}");
                        }
                    });
                if let Err(e) = spawned {
                    tracing::error!("cannot start a connection thread: {e}");
                }
            }
            Err(e) => tracing::warn!("accept failed: {e}"),
        }
    }
}

struct Request {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

enum Incoming {
    Request(Request),
    Closed,
    Refused(u16, &'static str),
}

fn connection(
    mut stream: TcpStream,
    server: &Server,
    token: Option<&TokenCheck>,
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(IDLE))?;
    let mut buf = Vec::new();
    loop {
        let req = match read_request(&mut stream, &mut buf)? {
            Incoming::Closed => return Ok(()),
            Incoming::Refused(status, why) => {
                respond(&mut stream, status, "text/plain", why.as_bytes(), true)?;
                return Ok(());
            }
            Incoming::Request(r) => r,
        };
        let close = req
            .header("connection")
            .is_some_and(|c| c.eq_ignore_ascii_case("close"));
        let (status, kind, body): (u16, &str, Vec<u8>) = answer(&req, server, token);
        respond(&mut stream, status, kind, &body, close)?;
        if close {
            return Ok(());
        }
    }
}

fn answer(
    req: &Request,
    server: &Server,
    token: Option<&TokenCheck>,
) -> (u16, &'static str, Vec<u8>) {
    let text = |s: &str| s.as_bytes().to_vec();
    let path = req.path.split('?').next().unwrap_or("");
    if path != "/mcp" && path != "/" {
        return (404, "text/plain", text("the MCP endpoint is /mcp"));
    }
    if let Some(origin) = req.header("origin") {
        if !loopback_origin(origin) {
            return (403, "text/plain", text("origin refused"));
        }
    }
    if let Some(check) = token {
        let given = req
            .header("authorization")
            .and_then(|a| {
                a.strip_prefix("Bearer ")
                    .or_else(|| a.strip_prefix("bearer "))
            })
            .map(str::trim);
        if !check(given) {
            return (
                401,
                "text/plain",
                text("a valid 'Authorization: Bearer TOKEN' is required"),
            );
        }
    }
    match req.method.as_str() {
        "POST" => match server.handle(&req.body) {
            Some(answer) => (200, "application/json", answer.to_string().into_bytes()),
            None => (202, "text/plain", Vec::new()),
        },
        // There is no session to end (every connection shares the server's sessions).
        "DELETE" => (200, "text/plain", Vec::new()),
        _ => (
            405,
            "text/plain",
            text("POST JSON-RPC messages to this endpoint"),
        ),
    }
}

/// Whether a browser page of `origin` may call: loopback pages only.
fn loopback_origin(origin: &str) -> bool {
    let rest = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
        .unwrap_or("");
    let host = match rest.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => rest.split(':').next().unwrap_or(""),
    };
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn read_request(stream: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<Incoming> {
    let mut chunk = [0u8; 8192];
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut parsed = httparse::Request::new(&mut headers);
        match parsed.parse(buf) {
            Ok(httparse::Status::Complete(head_len)) => {
                let method = parsed.method.unwrap_or("").to_string();
                let path = parsed.path.unwrap_or("").to_string();
                let headers: Vec<(String, String)> = parsed
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_string(),
                            String::from_utf8_lossy(h.value).into_owned(),
                        )
                    })
                    .collect();
                let find = |n: &str| {
                    headers
                        .iter()
                        .find(|(k, _)| k.eq_ignore_ascii_case(n))
                        .map(|(_, v)| v.clone())
                };
                if find("transfer-encoding").is_some() {
                    return Ok(Incoming::Refused(
                        411,
                        "send the body with a Content-Length",
                    ));
                }
                let length = match find("content-length").map(|v| v.trim().parse::<usize>()) {
                    None => 0,
                    Some(Ok(n)) if n <= MAX_BODY_BYTES => n,
                    Some(Ok(_)) => return Ok(Incoming::Refused(413, "body too large")),
                    Some(Err(_)) => return Ok(Incoming::Refused(400, "bad Content-Length")),
                };
                buf.drain(..head_len);
                while buf.len() < length {
                    let n = read_some(stream, &mut chunk)?;
                    if n == 0 {
                        return Ok(Incoming::Closed);
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                let body: Vec<u8> = buf.drain(..length).collect();
                return Ok(Incoming::Request(Request {
                    method,
                    path,
                    headers,
                    body,
                }));
            }
            Ok(httparse::Status::Partial) => {
                if buf.len() > MAX_HEAD_BYTES {
                    return Ok(Incoming::Refused(431, "request head too large"));
                }
            }
            Err(_) => return Ok(Incoming::Refused(400, "bad request")),
        }
        let n = read_some(stream, &mut chunk)?;
        if n == 0 {
            return Ok(Incoming::Closed);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn read_some(stream: &mut TcpStream, chunk: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match stream.read(chunk) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

fn respond(
    stream: &mut TcpStream,
    status: u16,
    kind: &str,
    body: &[u8],
    close: bool,
) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        202 => "Accepted",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        411 => "Length Required",
        413 => "Payload Too Large",
        431 => "Request Header Fields Too Large",
        _ => "Error",
    };
    let mut head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n",
        body.len()
    );
    if status == 405 {
        head.push_str("Allow: POST, DELETE\r\n");
    }
    if close {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    let mut out = head.into_bytes();
    out.extend_from_slice(body);
    stream.write_all(&out)?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_origins() {
        assert!(loopback_origin("http://localhost:3000"));
        assert!(loopback_origin("http://127.0.0.1"));
        assert!(loopback_origin("http://[::1]:8080"));
        assert!(!loopback_origin("https://evil.example"));
        assert!(!loopback_origin("http://localhost.evil.example"));
        assert!(!loopback_origin("null"));
    }
}
