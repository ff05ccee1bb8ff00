//! One plain-HTTP GET, streamed into a writer, with an idle timeout and cancellation:
//! all a debuginfod download needs (`Content-Length` or chunked bodies, up to a few
//! redirects to other `http://` URLs). `https://` URLs go to `curl.rs`.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use crate::{Cancel, Error, Progress};

/// How often a blocked read looks at the cancel flag.
const SLICE: Duration = Duration::from_millis(100);
/// The largest response head accepted.
const MAX_HEAD: usize = 64 * 1024;
/// Redirects followed before giving up.
const MAX_REDIRECTS: usize = 4;

#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub connect: Duration,
    pub idle: Duration,
}

/// GETs `url` into `out`.
pub(crate) fn get(
    url: &str,
    out: &mut dyn Write,
    limits: Limits,
    progress: &mut dyn FnMut(Progress),
    cancel: &Cancel,
) -> Result<(), Error> {
    let mut url = url.to_string();
    for _ in 0..=MAX_REDIRECTS {
        match get_once(&url, out, limits, progress, cancel)? {
            None => return Ok(()),
            Some(next) => url = next,
        }
    }
    Err(Error::Protocol {
        url,
        reason: "too many redirects".into(),
    })
}

struct Target {
    host: String,
    port: u16,
    path: String,
}

fn parse_url(url: &str) -> Result<Target, Error> {
    let bad = |reason: &str| Error::BadUrl {
        url: url.to_string(),
        reason: reason.to_string(),
    };
    let Some(rest) = url.strip_prefix("http://") else {
        if url.starts_with("https://") {
            // Only a redirect gets here: `Client` hands https URLs to curl.
            return Err(bad("an http server's redirect to https is not followed; \
                 give the https URL in DEBUGINFOD_URLS"));
        }
        return Err(bad("not an http:// URL"));
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, tail) = v6.split_once(']').ok_or_else(|| bad("bad IPv6 address"))?;
        let port = tail.strip_prefix(':').unwrap_or("80");
        (h.to_string(), port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), p),
            None => (authority.to_string(), "80"),
        }
    };
    let port = port.parse::<u16>().map_err(|_| bad("bad port"))?;
    if host.is_empty() {
        return Err(bad("no host"));
    }
    Ok(Target {
        host,
        port,
        path: path.to_string(),
    })
}

fn connect(url: &str, t: &Target, limits: Limits) -> Result<TcpStream, Error> {
    let io = |source| Error::Io {
        context: url.to_string(),
        source,
    };
    let addrs = (t.host.as_str(), t.port).to_socket_addrs().map_err(io)?;
    let mut last = None;
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, limits.connect) {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(e),
        }
    }
    Err(io(last.unwrap_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::NotFound, "no address")
    })))
}

/// Reads into `buf`, waking every [`SLICE`] to honour `cancel`; `Ok(0)` at the end of the
/// stream, `Error::Timeout` after `idle` without a byte.
fn read_some(
    stream: &mut TcpStream,
    buf: &mut [u8],
    url: &str,
    limits: Limits,
    cancel: &Cancel,
) -> Result<usize, Error> {
    let started = Instant::now();
    loop {
        if cancel.is_cancelled() {
            return Err(Error::Cancelled);
        }
        match stream.read(buf) {
            Ok(n) => return Ok(n),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) =>
            {
                if started.elapsed() >= limits.idle {
                    return Err(Error::Timeout {
                        url: url.to_string(),
                        seconds: limits.idle.as_secs(),
                    });
                }
            }
            Err(source) => {
                return Err(Error::Io {
                    context: url.to_string(),
                    source,
                })
            }
        }
    }
}

/// One request; `Some(location)` when the answer is a redirect.
fn get_once(
    url: &str,
    out: &mut dyn Write,
    limits: Limits,
    progress: &mut dyn FnMut(Progress),
    cancel: &Cancel,
) -> Result<Option<String>, Error> {
    let target = parse_url(url)?;
    let mut stream = connect(url, &target, limits)?;
    let io = |source| Error::Io {
        context: url.to_string(),
        source,
    };
    stream.set_read_timeout(Some(SLICE)).map_err(io)?;
    stream.set_write_timeout(Some(limits.idle)).map_err(io)?;
    let host = if target.port == 80 {
        target.host.clone()
    } else {
        format!("{}:{}", target.host, target.port)
    };
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: tandem\r\nAccept: */*\r\n\
         Accept-Encoding: identity\r\nConnection: close\r\n\r\n",
        target.path
    );
    stream.write_all(request.as_bytes()).map_err(io)?;

    // The head, then whatever of the body came with it.
    let mut buf = vec![0u8; 64 * 1024];
    let mut head = Vec::new();
    let (status, length, chunked, location, body_start) = loop {
        let n = read_some(&mut stream, &mut buf, url, limits, cancel)?;
        if n == 0 {
            return Err(Error::Protocol {
                url: url.to_string(),
                reason: "the connection closed before an answer".into(),
            });
        }
        head.extend_from_slice(&buf[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut response = httparse::Response::new(&mut headers);
        match response.parse(&head) {
            Ok(httparse::Status::Complete(len)) => {
                let find = |name: &str| {
                    response
                        .headers
                        .iter()
                        .find(|h| h.name.eq_ignore_ascii_case(name))
                        .and_then(|h| std::str::from_utf8(h.value).ok())
                        .map(|v| v.trim().to_string())
                };
                let length = find("content-length").and_then(|v| v.parse::<u64>().ok());
                let chunked = find("transfer-encoding")
                    .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
                break (
                    response.code.unwrap_or(0),
                    length.or_else(|| find("x-debuginfod-size").and_then(|v| v.parse().ok())),
                    chunked,
                    find("location"),
                    len,
                );
            }
            Ok(httparse::Status::Partial) if head.len() < MAX_HEAD => {}
            Ok(httparse::Status::Partial) => {
                return Err(Error::Protocol {
                    url: url.to_string(),
                    reason: "the answer's head is too long".into(),
                })
            }
            Err(e) => {
                return Err(Error::Protocol {
                    url: url.to_string(),
                    reason: format!("not an HTTP answer: {e}"),
                })
            }
        }
    };
    if matches!(status, 301 | 302 | 303 | 307 | 308) {
        let Some(location) = location else {
            return Err(Error::Status {
                url: url.to_string(),
                status,
            });
        };
        let next = if location.starts_with('/') {
            format!("http://{host}{location}")
        } else {
            location
        };
        return Ok(Some(next));
    }
    if status != 200 {
        return Err(Error::Status {
            url: url.to_string(),
            status,
        });
    }
    let mut body = Body {
        out,
        received: 0,
        total: if chunked { None } else { length },
        progress,
    };
    body.progress();
    let rest = head[body_start..].to_vec();
    if chunked {
        let mut pending = rest;
        let mut decoder = Chunked::default();
        loop {
            decoder.feed(&pending, &mut body, url)?;
            if decoder.done {
                break;
            }
            let n = read_some(&mut stream, &mut buf, url, limits, cancel)?;
            if n == 0 {
                return Err(truncated(url));
            }
            pending = buf[..n].to_vec();
        }
    } else {
        body.write(&rest, url)?;
        loop {
            if length.is_some_and(|l| body.received >= l) {
                break;
            }
            let n = read_some(&mut stream, &mut buf, url, limits, cancel)?;
            if n == 0 {
                if length.is_some() {
                    return Err(truncated(url));
                }
                break;
            }
            body.write(&buf[..n], url)?;
        }
    }
    body.progress();
    Ok(None)
}

fn truncated(url: &str) -> Error {
    Error::Protocol {
        url: url.to_string(),
        reason: "the connection closed before the whole file arrived".into(),
    }
}

struct Body<'a> {
    out: &'a mut dyn Write,
    received: u64,
    total: Option<u64>,
    progress: &'a mut dyn FnMut(Progress),
}

impl Body<'_> {
    fn write(&mut self, bytes: &[u8], url: &str) -> Result<(), Error> {
        if bytes.is_empty() {
            return Ok(());
        }
        self.out.write_all(bytes).map_err(|source| Error::Io {
            context: format!("writing the download of {url}"),
            source,
        })?;
        self.received += bytes.len() as u64;
        self.progress();
        Ok(())
    }

    fn progress(&mut self) {
        (self.progress)(Progress {
            received: self.received,
            total: self.total,
        });
    }
}

/// A `Transfer-Encoding: chunked` decoder fed whatever arrives.
#[derive(Default)]
struct Chunked {
    /// Bytes of the current chunk still to copy.
    left: u64,
    /// A size line (or the CRLF after a chunk) being read.
    line: Vec<u8>,
    /// Expecting the CRLF that ends a chunk's data.
    after_data: bool,
    done: bool,
}

impl Chunked {
    fn feed(&mut self, mut input: &[u8], body: &mut Body<'_>, url: &str) -> Result<(), Error> {
        let bad = || Error::Protocol {
            url: url.to_string(),
            reason: "bad chunked encoding".into(),
        };
        while !input.is_empty() && !self.done {
            if self.left > 0 {
                let take = usize::try_from(self.left)
                    .unwrap_or(usize::MAX)
                    .min(input.len());
                body.write(&input[..take], url)?;
                self.left -= take as u64;
                input = &input[take..];
                if self.left == 0 {
                    self.after_data = true;
                }
                continue;
            }
            let Some(nl) = input.iter().position(|b| *b == b'\n') else {
                self.line.extend_from_slice(input);
                if self.line.len() > 1024 {
                    return Err(bad());
                }
                return Ok(());
            };
            self.line.extend_from_slice(&input[..nl]);
            input = &input[nl + 1..];
            let line = std::mem::take(&mut self.line);
            let text = std::str::from_utf8(&line).map_err(|_| bad())?.trim();
            if self.after_data {
                if !text.is_empty() {
                    return Err(bad());
                }
                self.after_data = false;
                continue;
            }
            let size = text.split(';').next().unwrap_or("").trim();
            let size = u64::from_str_radix(size, 16).map_err(|_| bad())?;
            if size == 0 {
                // Trailers are not needed: the connection closes after them.
                self.done = true;
            } else {
                self.left = size;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let t = parse_url("http://127.0.0.1:8002").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (t.host.as_str(), t.port, t.path.as_str()),
            ("127.0.0.1", 8002, "/")
        );
        let t = parse_url("http://example.org/x/buildid/ab/debuginfo")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((t.port, t.path.as_str()), (80, "/x/buildid/ab/debuginfo"));
        let t = parse_url("http://[::1]:9/a").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((t.host.as_str(), t.port), ("::1", 9));
        let e = parse_url("https://debuginfod.example/")
            .err()
            .map(|e| e.to_string());
        assert!(e.is_some_and(|e| e.contains("redirect to https")));
        assert!(parse_url("ftp://x/").is_err());
        assert!(parse_url("http://:80/").is_err());
    }

    #[test]
    fn chunked_bodies_in_any_split() {
        let wire = b"4\r\nWiki\r\n5;ext=1\r\npedia\r\n0\r\n\r\n";
        for split in 1..wire.len() {
            let mut out = Vec::new();
            let mut seen = 0;
            let mut progress = |p: Progress| seen = p.received;
            let mut body = Body {
                out: &mut out,
                received: 0,
                total: None,
                progress: &mut progress,
            };
            let mut d = Chunked::default();
            for part in wire.chunks(split) {
                d.feed(part, &mut body, "u")
                    .unwrap_or_else(|e| panic!("{e}"));
            }
            assert!(d.done);
            assert_eq!(out, b"Wikipedia");
            assert_eq!(seen, 9);
        }
    }
}
