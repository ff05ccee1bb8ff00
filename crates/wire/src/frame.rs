//! Content-Length framing: an incremental decoder over bytes, a blocking reader and a writer.
//!
//! The rules, shared by LSP and DAP:
//! - header lines end in CRLF; a bare LF is accepted on input, CRLF is always written;
//! - header names are case-insensitive, unknown headers are ignored;
//! - `Content-Length` is required, must appear once and counts bytes of the body;
//! - `Content-Type` is optional; its charset, when given, must be utf-8 (or `utf8`);
//! - the header block and the body are bounded by [`Limits`]: input beyond them is an error,
//!   never an unbounded allocation;
//! - end of input inside a frame is its own error ([`FrameError::UnexpectedEof`]).

use std::io::{self, Read, Write};
use std::sync::Mutex;

use bytes::{Buf, Bytes, BytesMut};

/// Bounds that protect memory from a hostile or broken peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest header block, in bytes, counting line terminators.
    pub max_header_bytes: usize,
    /// Largest body, in bytes.
    pub max_body_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_header_bytes: 8 * 1024,
            max_body_bytes: 64 * 1024 * 1024,
        }
    }
}

/// Why a byte stream could not be split into frames. Every variant ends the connection.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    #[error("header block exceeds {limit} bytes")]
    HeaderTooLarge { limit: usize },
    #[error("body of {length} bytes exceeds the limit of {limit} bytes")]
    BodyTooLarge { length: usize, limit: usize },
    #[error("header block has no content-length")]
    MissingContentLength,
    #[error("content-length given more than once")]
    DuplicateContentLength,
    #[error("content-length is not a byte count: {0:?}")]
    InvalidContentLength(String),
    #[error("unsupported content-type charset: {0:?}")]
    UnsupportedCharset(String),
    #[error("malformed header line: {0:?}")]
    MalformedHeader(String),
    #[error("end of input inside a frame")]
    UnexpectedEof,
    #[error("i/o error: {0}")]
    Io(#[from] io::Error),
}

#[derive(Debug)]
enum State {
    /// Reading header lines. `consumed` counts header bytes taken so far.
    Header {
        consumed: usize,
        content_length: Option<usize>,
        started: bool,
    },
    /// Waiting for `length` body bytes.
    Body { length: usize },
}

/// The incremental frame parser: feed it bytes as they arrive, take whole bodies out.
///
/// It consumes from the front of a [`BytesMut`] only what it has parsed, so a caller may append
/// any number of short reads between calls; two frames in one read come out one per call.
#[derive(Debug)]
pub struct FrameDecoder {
    limits: Limits,
    state: State,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        FrameDecoder::new(Limits::default())
    }
}

impl FrameDecoder {
    pub fn new(limits: Limits) -> Self {
        FrameDecoder {
            limits,
            state: State::Header {
                consumed: 0,
                content_length: None,
                started: false,
            },
        }
    }

    /// True when the decoder has seen part of a frame that is not complete yet.
    pub fn in_frame(&self) -> bool {
        match self.state {
            State::Header { started, .. } => started,
            State::Body { .. } => true,
        }
    }

    /// Takes the next complete body out of `src`, `Ok(None)` when more bytes are needed.
    pub fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Bytes>, FrameError> {
        loop {
            match &mut self.state {
                State::Body { length } => {
                    let length = *length;
                    if src.len() < length {
                        src.reserve(length - src.len());
                        return Ok(None);
                    }
                    let body = src.split_to(length).freeze();
                    self.state = State::Header {
                        consumed: 0,
                        content_length: None,
                        started: false,
                    };
                    return Ok(Some(body));
                }
                State::Header {
                    consumed,
                    content_length,
                    started,
                } => {
                    if !src.is_empty() {
                        *started = true;
                    }
                    let Some(newline) = src.iter().position(|&b| b == b'\n') else {
                        if *consumed + src.len() > self.limits.max_header_bytes {
                            return Err(FrameError::HeaderTooLarge {
                                limit: self.limits.max_header_bytes,
                            });
                        }
                        return Ok(None);
                    };
                    *consumed += newline + 1;
                    if *consumed > self.limits.max_header_bytes {
                        return Err(FrameError::HeaderTooLarge {
                            limit: self.limits.max_header_bytes,
                        });
                    }
                    let mut line = &src[..newline];
                    if let [rest @ .., b'\r'] = line {
                        line = rest;
                    }
                    if line.is_empty() {
                        let length = content_length.ok_or(FrameError::MissingContentLength)?;
                        src.advance(newline + 1);
                        self.state = State::Body { length };
                        continue;
                    }
                    let parsed = parse_header(line, &self.limits)?;
                    if let Some(length) = parsed {
                        if content_length.replace(length).is_some() {
                            return Err(FrameError::DuplicateContentLength);
                        }
                    }
                    src.advance(newline + 1);
                }
            }
        }
    }
}

/// Parses one header line; returns the body length when it is `Content-Length`.
fn parse_header(line: &[u8], limits: &Limits) -> Result<Option<usize>, FrameError> {
    let malformed = || FrameError::MalformedHeader(String::from_utf8_lossy(line).into_owned());
    let colon = line.iter().position(|&b| b == b':').ok_or_else(malformed)?;
    let name = std::str::from_utf8(&line[..colon])
        .map_err(|_| malformed())?
        .trim();
    let value = std::str::from_utf8(&line[colon + 1..])
        .map_err(|_| malformed())?
        .trim();
    if name.is_empty() {
        return Err(malformed());
    }
    if name.eq_ignore_ascii_case("content-length") {
        if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
            return Err(FrameError::InvalidContentLength(value.to_owned()));
        }
        // All digits: the only parse failure left is overflow, which is too large anyway.
        let length = value.parse::<usize>().unwrap_or(usize::MAX);
        if length > limits.max_body_bytes {
            return Err(FrameError::BodyTooLarge {
                length,
                limit: limits.max_body_bytes,
            });
        }
        return Ok(Some(length));
    }
    if name.eq_ignore_ascii_case("content-type") {
        check_charset(value)?;
    }
    Ok(None)
}

fn check_charset(content_type: &str) -> Result<(), FrameError> {
    for param in content_type.split(';').skip(1) {
        let Some((key, value)) = param.split_once('=') else {
            continue;
        };
        if key.trim().eq_ignore_ascii_case("charset") {
            let charset = value.trim().trim_matches('"');
            if !(charset.eq_ignore_ascii_case("utf-8") || charset.eq_ignore_ascii_case("utf8")) {
                return Err(FrameError::UnsupportedCharset(charset.to_owned()));
            }
        }
    }
    Ok(())
}

/// The header block written before a body of `length` bytes.
pub(crate) fn frame_header(length: usize) -> String {
    format!("Content-Length: {length}\r\n\r\n")
}

/// Builds one frame: the header block (CRLF terminated) followed by the body.
pub fn encode_frame(body: &[u8]) -> Vec<u8> {
    let header = frame_header(body.len());
    let mut frame = Vec::with_capacity(header.len() + body.len());
    frame.extend_from_slice(header.as_bytes());
    frame.extend_from_slice(body);
    frame
}

/// Reads whole frames from a blocking byte stream.
#[derive(Debug)]
pub struct FrameReader<R> {
    inner: R,
    buf: BytesMut,
    decoder: FrameDecoder,
}

impl<R: Read> FrameReader<R> {
    pub fn new(inner: R) -> Self {
        FrameReader::with_limits(inner, Limits::default())
    }

    pub fn with_limits(inner: R, limits: Limits) -> Self {
        FrameReader {
            inner,
            buf: BytesMut::with_capacity(8 * 1024),
            decoder: FrameDecoder::new(limits),
        }
    }

    /// The next body; `Ok(None)` at a clean end of input between frames.
    pub fn read_frame(&mut self) -> Result<Option<Bytes>, FrameError> {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            if let Some(body) = self.decoder.decode(&mut self.buf)? {
                return Ok(Some(body));
            }
            let n = match self.inner.read(&mut chunk) {
                Ok(n) => n,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(FrameError::Io(err)),
            };
            if n == 0 {
                return if self.decoder.in_frame() || !self.buf.is_empty() {
                    Err(FrameError::UnexpectedEof)
                } else {
                    Ok(None)
                };
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

/// Writes whole frames: each frame is one `write_all` under a lock, then flushed, so frames
/// from different threads never interleave.
#[derive(Debug)]
pub struct FrameWriter<W> {
    inner: Mutex<W>,
}

impl<W: Write> FrameWriter<W> {
    pub fn new(inner: W) -> Self {
        FrameWriter {
            inner: Mutex::new(inner),
        }
    }

    pub fn write_frame(&self, body: &[u8]) -> io::Result<()> {
        let frame = encode_frame(body);
        // A poisoned lock only means another writer panicked mid-call; the stream itself is
        // still usable because each frame is written whole or not at all from our side.
        let mut inner = self
            .inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        inner.write_all(&frame)?;
        inner.flush()
    }

    /// The underlying sink, once no other thread writes.
    pub fn into_inner(self) -> W {
        self.inner
            .into_inner()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// What the reader thread of a connection delivers.
#[derive(Debug)]
pub enum Inbound {
    /// One whole body.
    Frame(Bytes),
    /// The peer closed the stream between frames.
    Closed,
    /// The stream broke or could not be framed; the connection is over.
    Failed(FrameError),
}

/// Reads frames on a thread of its own and delivers them on a channel, so a front-end's main
/// loop can `select!` over input and its other event sources. The thread ends after delivering
/// `Closed` or `Failed`, or when the receiver is dropped.
pub fn spawn_reader<R: Read + Send + 'static>(
    input: R,
    limits: Limits,
) -> io::Result<crossbeam_channel::Receiver<Inbound>> {
    let (tx, rx) = crossbeam_channel::unbounded();
    std::thread::Builder::new()
        .name("frame-reader".into())
        .spawn(move || {
            let mut reader = FrameReader::with_limits(input, limits);
            loop {
                let event = match reader.read_frame() {
                    Ok(Some(body)) => Inbound::Frame(body),
                    Ok(None) => Inbound::Closed,
                    Err(err) => Inbound::Failed(err),
                };
                let last = !matches!(event, Inbound::Frame(_));
                if tx.send(event).is_err() || last {
                    break;
                }
            }
        })?;
    Ok(rx)
}
