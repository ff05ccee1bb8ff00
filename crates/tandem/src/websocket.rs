//! WebSocket transport for web editors (Monaco, Theia, code-server): `--listen ws://ADDR`.
//!
//! Each text frame carries one JSON message, without Content-Length headers. The sessions
//! themselves are the ordinary `lsp::serve` / `dap::serve` over byte streams: [`WsReader`]
//! turns each incoming message into a Content-Length frame, and [`WsWriter`] cuts the
//! server's frames (with the one decoder in `wire`) back into one text message each.
//!
//! One pump thread per connection owns the socket (tungstenite's `WebSocket` is not split
//! into halves): it reads with a short timeout and sends what the session wrote in between,
//! so pings are answered and nothing waits longer than one tick.
//!
//! Browsers let any page open a WebSocket to 127.0.0.1, and a debug adapter runs programs:
//! a handshake carrying an `Origin` header is accepted only when that origin is a loopback
//! host (`localhost`, `127.0.0.0/8`, `[::1]`) or was allowed with `--allow-origin`. Clients
//! that are not browsers send no Origin and are accepted (the listener is loopback only).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use anyhow::{Context, Result};
use bytes::BytesMut;
use crossbeam_channel::{Receiver, Sender, TryRecvError};
use tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tungstenite::{Message, WebSocket};
use wire::{FrameDecoder, Limits};

/// How long the pump waits for the client before sending what the session wrote.
const TICK: Duration = Duration::from_millis(5);

/// How long a client may take to complete the opening handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether a browser page from `origin` may connect.
pub fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    if allowed.iter().any(|a| a == origin) {
        return true;
    }
    let Some((scheme, rest)) = origin.split_once("://") else {
        return false;
    };
    if !matches!(scheme, "http" | "https") {
        return false;
    }
    // host[:port]; an IPv6 host is bracketed.
    let host = if let Some(v6) = rest.strip_prefix('[') {
        match v6.split_once(']') {
            Some((h, _)) => h,
            None => return false,
        }
    } else {
        rest.split(':').next().unwrap_or_default()
    };
    match host {
        "localhost" => true,
        h => h
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback()),
    }
}

/// Completes the opening handshake on `stream` and starts its pump; the session reads
/// from the reader and writes to the writer.
// The handshake callback's error type is tungstenite's HTTP response, large by nature.
#[allow(clippy::result_large_err)]
pub fn accept(stream: TcpStream, allowed: &[String]) -> Result<(WsReader, WsWriter)> {
    stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT))?;
    let check = |req: &Request, resp: Response| -> Result<Response, ErrorResponse> {
        let origin = req
            .headers()
            .get("origin")
            .map(|o| o.to_str().unwrap_or("<not text>"));
        match origin {
            Some(origin) if !origin_allowed(origin, allowed) => {
                tracing::warn!(%origin, "refused a WebSocket connection from a web page");
                let mut refused = ErrorResponse::new(Some(format!(
                    "origin {origin} is not allowed (tandem --allow-origin)"
                )));
                *refused.status_mut() = tungstenite::http::StatusCode::FORBIDDEN;
                Err(refused)
            }
            _ => Ok(resp),
        }
    };
    let ws = tungstenite::accept_hdr(stream, check)
        .map_err(|e| anyhow::anyhow!("websocket handshake failed: {e}"))?;
    ws.get_ref()
        .set_read_timeout(Some(TICK))
        .context("cannot set the socket timeout")?;
    let (in_tx, in_rx) = crossbeam_channel::unbounded::<Vec<u8>>();
    let (out_tx, out_rx) = crossbeam_channel::unbounded::<String>();
    std::thread::Builder::new()
        .name("ws-pump".into())
        .spawn(move || pump(ws, &in_tx, &out_rx))
        .context("cannot start the websocket thread")?;
    Ok((
        WsReader {
            rx: in_rx,
            pending: Vec::new(),
            at: 0,
        },
        WsWriter {
            tx: out_tx,
            decoder: FrameDecoder::new(Limits::default()),
            buf: BytesMut::new(),
        },
    ))
}

fn would_block(e: &tungstenite::Error) -> bool {
    matches!(e, tungstenite::Error::Io(io)
        if matches!(io.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut))
}

/// Moves messages between the socket and the session until either side ends.
fn pump(
    mut ws: WebSocket<TcpStream>,
    to_session: &Sender<Vec<u8>>,
    from_session: &Receiver<String>,
) {
    loop {
        match ws.read() {
            Ok(Message::Text(text)) => {
                if to_session.send(text.as_bytes().to_vec()).is_err() {
                    break;
                }
            }
            // Lenient: a client that sends its JSON as binary frames is understood too.
            Ok(Message::Binary(data)) => {
                if to_session.send(data.to_vec()).is_err() {
                    break;
                }
            }
            Ok(Message::Close(_)) => {
                // tungstenite queued the closing reply; flush it and end.
                let _ = ws.flush();
                return;
            }
            Ok(_) => {}
            Err(e) if would_block(&e) => {}
            Err(tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed) => return,
            Err(e) => {
                tracing::warn!("websocket: {e}");
                return;
            }
        }
        loop {
            match from_session.try_recv() {
                Ok(text) => {
                    if let Err(e) = ws.send(Message::text(text)) {
                        if !would_block(&e) {
                            tracing::warn!("websocket: cannot send: {e}");
                            return;
                        }
                    }
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    // The session ended: close the connection properly.
                    let _ = ws.close(None);
                    let _ = ws.flush();
                    return;
                }
            }
        }
        match ws.flush() {
            Ok(()) => {}
            Err(e) if would_block(&e) => {}
            Err(_) => return,
        }
    }
}

/// The session's input: each message as one Content-Length frame.
pub struct WsReader {
    rx: Receiver<Vec<u8>>,
    pending: Vec<u8>,
    at: usize,
}

impl Read for WsReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.at >= self.pending.len() {
            match self.rx.recv() {
                Ok(body) => {
                    self.pending = wire::encode_frame(&body);
                    self.at = 0;
                }
                // The connection closed: end of input.
                Err(_) => return Ok(0),
            }
        }
        let n = out.len().min(self.pending.len() - self.at);
        out[..n].copy_from_slice(&self.pending[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// The session's output: its frames, one text message each.
pub struct WsWriter {
    tx: Sender<String>,
    decoder: FrameDecoder,
    buf: BytesMut,
}

impl Write for WsWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        loop {
            match self.decoder.decode(&mut self.buf) {
                Ok(Some(body)) => {
                    let text = String::from_utf8_lossy(&body).into_owned();
                    self.tx.send(text).map_err(|_| {
                        std::io::Error::new(std::io::ErrorKind::BrokenPipe, "websocket closed")
                    })?;
                }
                Ok(None) => break,
                Err(e) => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        e.to_string(),
                    ))
                }
            }
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_or_allowed_origins() {
        let none: Vec<String> = Vec::new();
        assert!(origin_allowed("http://localhost:3000", &none));
        assert!(origin_allowed("http://127.0.0.1:8080", &none));
        assert!(origin_allowed("https://[::1]:8443", &none));
        assert!(origin_allowed("http://localhost", &none));
        assert!(!origin_allowed("https://evil.example", &none));
        assert!(!origin_allowed("http://localhost.evil.example", &none));
        assert!(!origin_allowed("null", &none));
        assert!(!origin_allowed("file://", &none));
        let allowed = vec!["https://ide.example.com".to_owned()];
        assert!(origin_allowed("https://ide.example.com", &allowed));
    }

    #[test]
    fn frames_become_messages_and_back() {
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut w = WsWriter {
            tx,
            decoder: FrameDecoder::new(Limits::default()),
            buf: BytesMut::new(),
        };
        let two = [
            wire::encode_frame(b"{\"a\":1}"),
            wire::encode_frame("{\"é\":2}".as_bytes()),
        ]
        .concat();
        // Written in awkward pieces, as a writer may.
        for chunk in two.chunks(5) {
            w.write_all(chunk).unwrap();
        }
        assert_eq!(rx.try_recv().unwrap(), "{\"a\":1}");
        assert_eq!(rx.try_recv().unwrap(), "{\"é\":2}");
        let (in_tx, in_rx) = crossbeam_channel::unbounded();
        in_tx.send(b"{}".to_vec()).unwrap();
        drop(in_tx);
        let mut r = WsReader {
            rx: in_rx,
            pending: Vec::new(),
            at: 0,
        };
        let mut all = Vec::new();
        r.read_to_end(&mut all).unwrap();
        assert_eq!(all, wire::encode_frame(b"{}"));
    }
}
