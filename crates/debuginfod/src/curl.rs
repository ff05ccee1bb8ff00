//! One https GET through the system's `curl`, with the contract of `http::get`: the body
//! streamed into a writer, progress as bytes arrive, the idle timeout, cancellation
//! within [`SLICE`], and an HTTP error as [`Error::Status`].
//!
//! Why a child process and not a TLS crate: rustls needs ring (C and assembly compiled
//! into every build) and native-tls links OpenSSL; curl is on nearly every system, and
//! brings what users of https servers rely on — the system's CA store (and
//! `CURL_CA_BUNDLE` for a private CA), `HTTPS_PROXY`/`NO_PROXY`, HTTP/2.
//!
//! curl writes the body to its stdout, which a reader thread forwards here; the response
//! heads go to a file (`-D`), read once the body starts, for the size the server
//! announced. `-q` (first) keeps `~/.curlrc` out; `--proto =https` and
//! `--proto-redir =https` keep redirects from downgrading to http; the URL is an argument
//! (`--url`), never seen by a shell.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::http::Limits;
use crate::{Cancel, Error, Progress};

/// How often the download looks at the cancel flag.
const SLICE: Duration = Duration::from_millis(100);
/// Redirects followed before giving up, as `http::get`.
const MAX_REDIRECTS: u32 = 4;

/// curl's arguments for GETting `url`, its response heads written to `heads`.
pub(crate) fn args(url: &str, heads: &Path, limits: Limits) -> Vec<OsString> {
    let idle = limits.idle.as_secs().max(1).to_string();
    let connect = format!("{:.3}", limits.connect.as_secs_f64());
    let mut args: Vec<OsString> = [
        // Must come first: no ~/.curlrc.
        "-q",
        "--silent",
        "--show-error",
        "--fail",
        "--location",
        "--max-redirs",
        &MAX_REDIRECTS.to_string(),
        "--proto",
        "=https",
        "--proto-redir",
        "=https",
        "--connect-timeout",
        &connect,
        // Less than a byte a second for the idle time: a backstop of the idle timer of
        // `get_with`, which is exact.
        "--speed-limit",
        "1",
        "--speed-time",
        &idle,
        "--user-agent",
        "tandem",
        "--dump-header",
    ]
    .iter()
    .map(OsString::from)
    .collect();
    args.push(heads.into());
    args.push("--url".into());
    args.push(url.into());
    args
}

/// A running curl, killed and reaped when dropped (an error, a cancel, a panic).
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// GETs `url` into `out` with `program` (normally `curl` on PATH); `heads` is a scratch
/// file for the response heads, removed before returning.
pub(crate) fn get(
    program: &Path,
    url: &str,
    out: &mut dyn Write,
    heads: &Path,
    limits: Limits,
    progress: &mut dyn FnMut(Progress),
    cancel: &Cancel,
) -> Result<(), Error> {
    let result = get_with(program, url, out, heads, limits, progress, cancel);
    let _ = std::fs::remove_file(heads);
    result
}

fn get_with(
    program: &Path,
    url: &str,
    out: &mut dyn Write,
    heads: &Path,
    limits: Limits,
    progress: &mut dyn FnMut(Progress),
    cancel: &Cancel,
) -> Result<(), Error> {
    let spawned = Command::new(program)
        .args(args(url, heads, limits))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let child = match spawned {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::Curl {
                url: url.to_string(),
                reason: format!(
                    "https needs curl on PATH ({} was not found)",
                    program.display()
                ),
            })
        }
        Err(source) => {
            return Err(Error::Io {
                context: format!("running {} for {url}", program.display()),
                source,
            })
        }
    };
    let mut running = Running(child);
    let (Some(mut stdout), Some(mut stderr)) = (running.0.stdout.take(), running.0.stderr.take())
    else {
        return Err(Error::Curl {
            url: url.to_string(),
            reason: "curl's output could not be read".into(),
        });
    };

    // A blocking read of the pipe cannot look at the cancel flag, so a thread reads and
    // this one waits on the channel a slice at a time.
    let (tx, rx) = mpsc::sync_channel::<std::io::Result<Vec<u8>>>(16);
    std::thread::Builder::new()
        .name("debuginfod-curl".into())
        .spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match stdout.read(&mut buf) {
                    Ok(0) => return,
                    Ok(n) => {
                        if tx.send(Ok(buf[..n].to_vec())).is_err() {
                            return;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                }
            }
        })
        .map_err(|source| Error::Io {
            context: format!("reading curl's output for {url}"),
            source,
        })?;

    let mut received = 0u64;
    let mut total = None;
    // The head is read as the body starts; a few more times if it announced no size then.
    let mut head_reads = 0;
    // The idle timeout is kept here, as `http::get` keeps it: curl's `--speed-time` judges
    // an average over a window of seconds, so it gives up several seconds late.
    let mut last_data = Instant::now();
    loop {
        if cancel.is_cancelled() {
            // `running` kills curl as it is dropped.
            return Err(Error::Cancelled);
        }
        match rx.recv_timeout(SLICE) {
            Ok(Ok(bytes)) => {
                if total.is_none() && head_reads < 8 {
                    // curl writes (and flushes) a response's head before its body.
                    head_reads += 1;
                    total = read_heads(heads).and_then(|h| h.size);
                    if received == 0 {
                        progress(Progress { received, total });
                    }
                }
                out.write_all(&bytes).map_err(|source| Error::Io {
                    context: format!("writing the download of {url}"),
                    source,
                })?;
                received += bytes.len() as u64;
                last_data = Instant::now();
                progress(Progress { received, total });
            }
            Ok(Err(source)) => {
                return Err(Error::Io {
                    context: format!("reading curl's output for {url}"),
                    source,
                })
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if last_data.elapsed() >= limits.idle {
                    return Err(Error::Timeout {
                        url: url.to_string(),
                        seconds: limits.idle.as_secs(),
                    });
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let status = running.0.wait().map_err(|source| Error::Io {
        context: format!("waiting for curl ({url})"),
        source,
    })?;
    let mut message = String::new();
    let _ = stderr.read_to_string(&mut message);
    if status.success() {
        progress(Progress { received, total });
        return Ok(());
    }
    Err(failure(url, status.code(), &message, heads, limits))
}

/// The error of a curl that exited with `code` and said `message`.
fn failure(url: &str, code: Option<i32>, message: &str, heads: &Path, limits: Limits) -> Error {
    // `curl: (60) SSL certificate problem: …`, then maybe advice over several lines.
    let lines = || message.lines().map(str::trim);
    let said = lines()
        .find(|l| l.starts_with("curl: ("))
        .or_else(|| lines().rfind(|l| !l.is_empty()))
        .unwrap_or("")
        .to_string();
    match code {
        // --fail: the server answered with an HTTP error.
        Some(22) => {
            let status = read_heads(heads)
                .map(|h| h.status)
                .filter(|s| *s >= 400)
                .or_else(|| {
                    said.rsplit_once("error: ")
                        .and_then(|(_, s)| s.trim().parse().ok())
                });
            match status {
                Some(status) => Error::Status {
                    url: url.to_string(),
                    status,
                },
                None => curl_said(url, &said, code),
            }
        }
        Some(28) if said.contains("too slow") => Error::Timeout {
            url: url.to_string(),
            seconds: limits.idle.as_secs(),
        },
        // The certificate is not trusted (60) or not acceptable (58, 77, 83).
        Some(58 | 60 | 77 | 83) => Error::Curl {
            url: url.to_string(),
            reason: format!(
                "{said} (a server with a private CA is trusted through CURL_CA_BUNDLE=FILE)"
            ),
        },
        _ => curl_said(url, &said, code),
    }
}

fn curl_said(url: &str, said: &str, code: Option<i32>) -> Error {
    let reason = match (said.is_empty(), code) {
        (false, _) => said.to_string(),
        (true, Some(code)) => format!("curl failed (exit status {code})"),
        (true, None) => "curl was killed by a signal".to_string(),
    };
    Error::Curl {
        url: url.to_string(),
        reason,
    }
}

/// What the last response head in curl's `--dump-header` file says.
#[derive(Debug, PartialEq, Eq)]
struct Head {
    status: u16,
    /// `Content-Length`, else debuginfod's `X-Debuginfod-Size`.
    size: Option<u64>,
}

fn read_heads(path: &Path) -> Option<Head> {
    let bytes = std::fs::read(path).ok()?;
    parse_heads(&String::from_utf8_lossy(&bytes))
}

/// The last head of a `--dump-header` file: one head per response, a redirect's before
/// its target's, each a status line (`HTTP/1.1 200 OK`, `HTTP/2 200`) and header lines.
fn parse_heads(text: &str) -> Option<Head> {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.iter().rposition(|l| l.starts_with("HTTP/"))?;
    let status = lines[start].split_whitespace().nth(1)?.parse().ok()?;
    let mut length = None;
    let mut announced = None;
    for line in &lines[start + 1..] {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim().parse::<u64>().ok();
        if name.trim().eq_ignore_ascii_case("content-length") {
            length = value;
        } else if name.trim().eq_ignore_ascii_case("x-debuginfod-size") {
            announced = value;
        }
    }
    Some(Head {
        status,
        size: length.or(announced),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curl_reads_no_curlrc_and_gets_the_url_as_an_argument() {
        let limits = Limits {
            connect: Duration::from_secs(5),
            idle: Duration::from_secs(90),
        };
        let args = args("https://-x.example/a b", Path::new("/tmp/h"), limits);
        let args: Vec<String> = args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(args[0], "-q");
        let at = |flag: &str| {
            args.iter()
                .position(|a| a == flag)
                .and_then(|i| args.get(i + 1))
                .cloned()
                .unwrap_or_default()
        };
        assert_eq!(at("--url"), "https://-x.example/a b");
        assert_eq!(at("--proto"), "=https");
        assert_eq!(at("--proto-redir"), "=https");
        assert_eq!(at("--connect-timeout"), "5.000");
        assert_eq!(at("--speed-time"), "90");
        assert_eq!(at("--dump-header"), "/tmp/h");
        assert!(args.iter().any(|a| a == "--fail"));
    }

    #[test]
    fn the_last_head_counts() {
        let text = "HTTP/1.1 302 Found\r\nLocation: https://b/x\r\nContent-Length: 5\r\n\r\n\
                    HTTP/2 200\r\ncontent-type: application/octet-stream\r\n\
                    x-debuginfod-size: 7168\r\n\r\n";
        assert_eq!(
            parse_heads(text),
            Some(Head {
                status: 200,
                size: Some(7168)
            })
        );
        let text = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(
            parse_heads(text),
            Some(Head {
                status: 404,
                size: Some(0)
            })
        );
        assert_eq!(parse_heads(""), None);
    }

    #[test]
    fn an_http_error_is_a_status() {
        let limits = Limits {
            connect: Duration::from_secs(5),
            idle: Duration::from_secs(90),
        };
        let none = Path::new("/nonexistent/heads");
        let e = failure(
            "u",
            Some(22),
            "curl: (22) The requested URL returned error: 404\n",
            none,
            limits,
        );
        assert!(matches!(e, Error::Status { status: 404, .. }), "{e}");
        let e = failure(
            "u",
            Some(28),
            "curl: (28) Operation too slow. Less than 1 bytes/sec transferred the last 90 seconds",
            none,
            limits,
        );
        assert!(matches!(e, Error::Timeout { seconds: 90, .. }), "{e}");
        let e = failure(
            "u",
            Some(60),
            "curl: (60) SSL certificate problem: self-signed certificate\nMore details here: x",
            none,
            limits,
        );
        let e = e.to_string();
        assert!(e.contains("CURL_CA_BUNDLE"), "{e}");
        assert!(e.contains("(60) SSL certificate problem"), "{e}");
        assert!(!e.contains("More details"), "{e}");
    }
}
