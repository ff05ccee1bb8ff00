//! The debuggee's stdout and stderr, read on their own threads and handed to the main loop
//! as text: a UTF-8 sequence split between two reads is joined before it is decoded, and
//! bytes that are not UTF-8 become U+FFFD rather than being dropped.
//!
//! At a stop the main loop asks every reader to flush ([`Flusher`]): the program is
//! stopped, so what it wrote is already waiting in the pipe or terminal; the reader
//! reads until nothing is left and answers [`Chunk::Flushed`], so the output printed
//! before a breakpoint or a crash reaches the client before the `stopped` event.

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crossbeam_channel::Sender;

/// A piece of the debuggee's output, or the end of one stream.
#[derive(Debug)]
pub enum Chunk {
    Text {
        /// The DAP output category (`stdout` or `stderr`).
        category: &'static str,
        text: String,
    },
    End,
    /// A reader has forwarded everything that was readable when asked to flush.
    Flushed,
}

/// Asks one reader to forward what is readable now.
#[derive(Debug)]
pub struct Flusher {
    wake: OwnedFd,
    alive: Arc<AtomicBool>,
}

impl Flusher {
    /// Asks for a flush; false when the reader has ended (no answer will come).
    pub fn request(&self) -> bool {
        if !self.alive.load(Ordering::Acquire) {
            return false;
        }
        let one: u64 = 1;
        // SAFETY: writing 8 bytes from a live u64 to an eventfd we own.
        let n = unsafe {
            libc::write(
                self.wake.as_raw_fd(),
                (&one as *const u64).cast(),
                std::mem::size_of::<u64>(),
            )
        };
        n == 8
    }
}

/// Starts a thread that forwards `file` until its end.
pub fn spawn_reader(file: File, category: &'static str, tx: Sender<Chunk>) -> bool {
    start(file, category, tx, None).is_ok()
}

/// [`spawn_reader`] that can be asked to flush.
pub fn spawn_flushable_reader(
    file: File,
    category: &'static str,
    tx: Sender<Chunk>,
) -> Option<Flusher> {
    // SAFETY: eventfd has no preconditions; the descriptor is checked and owned below.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    if fd < 0 {
        tracing::warn!(
            "cannot create an eventfd: {}",
            std::io::Error::last_os_error()
        );
        return spawn_reader(file, category, tx).then_some(None).flatten();
    }
    // SAFETY: `fd` was just returned by eventfd and is owned by nobody else.
    let wake = unsafe { OwnedFd::from_raw_fd(fd) };
    let reader_wake = wake.try_clone().ok()?;
    let alive = Arc::new(AtomicBool::new(true));
    start(file, category, tx, Some((reader_wake, alive.clone()))).ok()?;
    Some(Flusher { wake, alive })
}

/// Whether a read of `fd` would not block now. For a terminal this is decided after
/// the kernel has moved what the program wrote into the terminal's read buffer (its
/// poll flushes the pending buffer work first; FIONREAD does not, and can say 0 while
/// the last writes are still on their way).
fn readable_now(fd: i32) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        // SAFETY: polling one valid descriptor through a live struct.
        let r = unsafe { libc::poll(&mut p, 1, 0) };
        if r == -1 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        return r > 0 && p.revents != 0;
    }
}

struct ReaderState {
    file: File,
    category: &'static str,
    tx: Sender<Chunk>,
    buf: Vec<u8>,
    pending: Vec<u8>,
}

impl ReaderState {
    /// One read; false at the end of the stream (or when nobody listens any more).
    fn read_once(&mut self) -> bool {
        loop {
            match self.file.read(&mut self.buf) {
                Ok(0) => return false,
                Ok(n) => {
                    self.pending.extend_from_slice(&self.buf[..n]);
                    let text = take_text(&mut self.pending);
                    return text.is_empty()
                        || self
                            .tx
                            .send(Chunk::Text {
                                category: self.category,
                                text,
                            })
                            .is_ok();
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                // EIO on a pty whose last writer is gone is its end of file.
                Err(_) => return false,
            }
        }
    }
}

fn start(
    file: File,
    category: &'static str,
    tx: Sender<Chunk>,
    flush: Option<(OwnedFd, Arc<AtomicBool>)>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name(format!("dap-{category}"))
        .spawn(move || {
            let mut st = ReaderState {
                file,
                category,
                tx,
                buf: vec![0u8; 16 * 1024],
                pending: Vec::new(),
            };
            match &flush {
                None => while st.read_once() {},
                Some((wake, _)) => serve_with_flush(&mut st, wake),
            }
            if let Some((_, alive)) = &flush {
                alive.store(false, Ordering::Release);
            }
            if !st.pending.is_empty() {
                let text = String::from_utf8_lossy(&st.pending).into_owned();
                let _ = st.tx.send(Chunk::Text { category, text });
            }
            let _ = st.tx.send(Chunk::End);
        })
        .map(|_| ())
        .map_err(|e| {
            tracing::warn!("cannot start the {category} reader: {e}");
            e
        })
}

/// Reads while waiting also on `wake`: a flush request reads what is readable now and
/// answers [`Chunk::Flushed`].
fn serve_with_flush(st: &mut ReaderState, wake: &OwnedFd) {
    let fd = st.file.as_raw_fd();
    loop {
        let mut fds = [
            libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: wake.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: polling two valid descriptors through a live array.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if r == -1 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        if fds[0].revents != 0 && !st.read_once() {
            return;
        }
        if fds[1].revents != 0 {
            let mut count = 0u64;
            // SAFETY: reading 8 bytes into a live u64 from an eventfd we own.
            unsafe {
                libc::read(
                    wake.as_raw_fd(),
                    (&mut count as *mut u64).cast(),
                    std::mem::size_of::<u64>(),
                )
            };
            while readable_now(fd) {
                if !st.read_once() {
                    return;
                }
            }
            if st.tx.send(Chunk::Flushed).is_err() {
                return;
            }
        }
    }
}

/// Decodes what `pending` holds, keeping an incomplete UTF-8 sequence at its end for the
/// next read.
fn take_text(pending: &mut Vec<u8>) -> String {
    let mut out = String::new();
    let mut rest: &[u8] = pending;
    loop {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                out.push_str(s);
                rest = &[];
                break;
            }
            Err(e) => {
                let (good, bad) = rest.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(good).unwrap_or_default());
                match e.error_len() {
                    Some(n) => {
                        out.push('\u{FFFD}');
                        rest = &bad[n..];
                    }
                    // Incomplete at the end: wait for the rest of the sequence.
                    None => {
                        rest = bad;
                        break;
                    }
                }
            }
        }
    }
    let keep = rest.to_vec();
    *pending = keep;
    out
}

#[cfg(test)]
mod tests {
    use super::take_text;

    #[test]
    fn split_sequences_are_joined_and_invalid_bytes_replaced() {
        let mut p = "é".as_bytes()[..1].to_vec();
        assert_eq!(take_text(&mut p), "");
        p.extend_from_slice(&"é".as_bytes()[1..]);
        p.extend_from_slice(b"x\xffy");
        assert_eq!(take_text(&mut p), "éx\u{FFFD}y");
        assert!(p.is_empty());
    }
}
