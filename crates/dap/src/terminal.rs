//! `"console": "integratedTerminal"`: the program runs under tandem on a pseudo-terminal
//! tandem owns, and the editor's terminal shows it through `tandem terminal-relay`, which
//! the client starts with a `runInTerminal` request. The relay reaches tandem through a
//! Unix socket in a directory only this user can enter. When the client cannot run the
//! relay, the program's output goes to the debug console instead.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::outbox::OutputSender;
use crate::output::{self, Chunk};

/// How long the relay has to connect before the output goes to the debug console.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// A terminal waiting for its relay.
pub struct Terminal {
    /// The relay's command line (for `runInTerminal`).
    pub args: Vec<String>,
    /// Set when the client could not start the relay.
    pub give_up: Arc<AtomicBool>,
}

/// A private directory for the socket: $XDG_RUNTIME_DIR when set, else the temp dir.
fn private_dir() -> std::io::Result<PathBuf> {
    let base = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_dir())
        .unwrap_or_else(std::env::temp_dir);
    for n in 0..100u32 {
        let dir = base.join(format!("tandem-term-{}-{n}", std::process::id()));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(
        "no free directory name for the terminal socket",
    ))
}

/// Starts serving the program's pty (`master` for writing keys, `output` for reading
/// what it prints) to the relay that will connect.
pub fn start(master: File, output: File, tx: OutputSender) -> std::io::Result<Terminal> {
    let dir = private_dir()?;
    let socket = dir.join("terminal");
    let listener = UnixListener::bind(&socket)?;
    listener.set_nonblocking(true)?;
    let exe = std::env::current_exe()?;
    let relay_args = vec![
        exe.display().to_string(),
        "terminal-relay".into(),
        socket.display().to_string(),
    ];
    let give_up = Arc::new(AtomicBool::new(false));
    let flag = give_up.clone();
    std::thread::Builder::new()
        .name("dap-terminal".into())
        .spawn(move || {
            let deadline = Instant::now() + CONNECT_TIMEOUT;
            let stream = loop {
                match listener.accept() {
                    Ok((s, _)) => break Some(s),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        if flag.load(Ordering::Acquire) || Instant::now() > deadline {
                            break None;
                        }
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    Err(_) => break None,
                }
            };
            let _ = std::fs::remove_file(&socket);
            let _ = std::fs::remove_dir(&dir);
            let Some(stream) = stream.and_then(|s| s.set_nonblocking(false).ok().map(|()| s))
            else {
                tracing::warn!("no terminal connected: the program's output goes to the console");
                output::spawn_reader(output, "stdout", tx);
                // As in the console: the program reads end of file (^D at the start of
                // a line, in the pty's canonical mode).
                let mut master = master;
                let _ = master.write_all(b"\x04");
                return;
            };
            let Ok(mut keys) = stream.try_clone() else {
                output::spawn_reader(output, "stdout", tx);
                return;
            };
            let mut master = master;
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = keys.read(&mut buf) {
                    if n == 0 || master.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            });
            let mut output = output;
            let mut screen = stream;
            let mut buf = [0u8; 8192];
            loop {
                match output.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        if screen.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    // EIO: the program's side of the pty is closed.
                    Err(_) => break,
                }
            }
            let _ = screen.shutdown(std::net::Shutdown::Both);
            let _ = tx.send(Chunk::End);
        })?;
    Ok(Terminal {
        args: relay_args,
        give_up,
    })
}
