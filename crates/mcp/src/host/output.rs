//! What a program this host launched writes: its two terminals read by threads of the
//! host (so output written before a stop is there at the stop: the terminals are polled
//! before answering), and the engine's messages (logpoints, notes) from the view's
//! subscription, in one bounded buffer.

use std::io::Read;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use engine::SessionEvent;
use procman::DebugEvent;

use super::{lock, OutputReport, OUTPUT_KEPT};

#[derive(Default)]
struct Bytes {
    bytes: Vec<u8>,
    total: u64,
    /// Readers still open (stdout, stderr).
    open: usize,
}

/// One session's output.
#[derive(Default)]
pub(super) struct Output {
    bytes: Mutex<Bytes>,
    done: Condvar,
    /// Clones of the program's streams, to see whether bytes are still unread.
    streams: Mutex<Vec<std::fs::File>>,
}

impl Output {
    fn push(&self, data: &[u8]) {
        let mut out = lock(&self.bytes);
        out.total += data.len() as u64;
        out.bytes.extend_from_slice(data);
        if out.bytes.len() > OUTPUT_KEPT {
            let cut = out.bytes.len() - OUTPUT_KEPT;
            out.bytes.drain(..cut);
        }
    }

    /// Reads the program's streams (the host took them from the engine).
    pub(super) fn read_streams(
        self: &std::sync::Arc<Self>,
        stdio: procman::tracer::Stdio,
        id: u64,
    ) {
        drop(stdio.stdin);
        let mut open = 0;
        for file in [stdio.stdout, stdio.stderr].into_iter().flatten() {
            if let Ok(clone) = file.try_clone() {
                lock(&self.streams).push(clone);
            }
            open += usize::from(spawn_reader(file, self.clone(), id));
        }
        lock(&self.bytes).open = open;
    }

    /// Keeps the engine's messages (logpoints, notes) from the view's subscription until
    /// the session ends.
    pub(super) fn watch<E>(self: &std::sync::Arc<Self>, events: E, id: u64)
    where
        E: IntoIterator<Item = DebugEvent> + Send + 'static,
    {
        let me = self.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("mcp-events-{id}"))
            .spawn(move || {
                for ev in events {
                    if let DebugEvent::Engine(SessionEvent::Output(text)) = ev {
                        me.push(text.as_bytes());
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("cannot start an event reader: {e}");
        }
    }

    /// At most the last `limit` bytes, after the readers took what is waiting (or, when
    /// the program is gone, its last bytes).
    pub(super) fn report(&self, exited: bool, limit: usize) -> OutputReport {
        if !exited {
            // What the program wrote before it stopped is in its terminals: let the
            // readers take it first (they are quick; the wait is bounded).
            let deadline = Instant::now() + Duration::from_millis(200);
            while lock(&self.streams).iter().any(readable_now) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        let mut out = lock(&self.bytes);
        if exited {
            let deadline = Instant::now() + Duration::from_millis(500);
            while out.open > 0 {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                out = self
                    .done
                    .wait_timeout(out, left)
                    .map(|(g, _)| g)
                    .unwrap_or_else(|p| p.into_inner().0);
            }
        }
        cut(&out.bytes, out.total, limit)
    }
}

/// The last `limit` bytes of `bytes` (never half a UTF-8 sequence), of `total` written.
pub(super) fn cut(bytes: &[u8], total: u64, limit: usize) -> OutputReport {
    let start = bytes.len().saturating_sub(limit);
    let start = (start..bytes.len())
        .find(|&i| bytes[i] & 0xC0 != 0x80)
        .unwrap_or(bytes.len());
    OutputReport {
        text: String::from_utf8_lossy(&bytes[start..]).into_owned(),
        total_bytes: total,
        omitted_bytes: total.saturating_sub((bytes.len() - start) as u64),
    }
}

/// Copies one of the program's streams into the output; false when no thread could be
/// started.
fn spawn_reader(mut file: std::fs::File, out: std::sync::Arc<Output>, id: u64) -> bool {
    std::thread::Builder::new()
        .name(format!("mcp-output-{id}"))
        .spawn(move || {
            let mut buf = vec![0u8; 8192];
            loop {
                match file.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => out.push(&buf[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    // EIO on a terminal whose last writer is gone is its end of file.
                    Err(_) => break,
                }
            }
            let mut bytes = lock(&out.bytes);
            bytes.open = bytes.open.saturating_sub(1);
            drop(bytes);
            out.done.notify_all();
        })
        .map_err(|e| tracing::warn!("cannot start an output reader: {e}"))
        .is_ok()
}

/// Whether a read of `file` would not block now (bytes are waiting).
fn readable_now(file: &std::fs::File) -> bool {
    use std::os::fd::AsRawFd;
    let mut p = libc::pollfd {
        fd: file.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: polling one valid descriptor through a live struct, without waiting.
    let r = unsafe { libc::poll(&mut p, 1, 0) };
    r > 0 && p.revents & libc::POLLIN != 0
}
