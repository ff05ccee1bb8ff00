//! `tandem terminal-relay SOCKET`: what an editor's terminal runs for a program launched
//! with `"console": "integratedTerminal"`. The program itself runs under tandem, on a
//! pseudo-terminal tandem owns; this relay connects the editor's terminal to it: keys
//! typed go to the program, what the program writes shows in the terminal. The terminal is
//! put in raw mode so that line editing and echo happen once, in the program's pty.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

use anyhow::{Context, Result};

#[derive(clap::Args, Debug)]
pub struct RelayArgs {
    /// The Unix socket the debug adapter listens on for this program's terminal.
    socket: PathBuf,
}

/// Restores the terminal's settings when dropped.
struct RawMode(Option<libc::termios>);

impl RawMode {
    fn enter() -> RawMode {
        // SAFETY: isatty/tcgetattr/tcsetattr on fd 0 with a zeroed, then filled, termios.
        unsafe {
            if libc::isatty(0) != 1 {
                return RawMode(None);
            }
            let mut saved: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(0, &mut saved) != 0 {
                return RawMode(None);
            }
            let mut raw = saved;
            libc::cfmakeraw(&mut raw);
            libc::tcsetattr(0, libc::TCSANOW, &raw);
            RawMode(Some(saved))
        }
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        if let Some(saved) = self.0 {
            // SAFETY: restores the settings read in `enter`.
            unsafe { libc::tcsetattr(0, libc::TCSANOW, &saved) };
        }
    }
}

pub fn run(args: RelayArgs) -> Result<i32> {
    let stream = UnixStream::connect(&args.socket)
        .with_context(|| format!("cannot reach tandem at {}", args.socket.display()))?;
    let _raw = RawMode::enter();
    let mut to_program = stream.try_clone()?;
    // Keys → program. Ends with the terminal's input; the program side ends the relay.
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut buf = [0u8; 4096];
        loop {
            match stdin.read(&mut buf) {
                Ok(0) | Err(_) => {
                    let _ = to_program.shutdown(std::net::Shutdown::Write);
                    break;
                }
                Ok(n) => {
                    if to_program.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
    });
    // Program → screen, until the program's side closes.
    let mut from_program = stream;
    let mut stdout = std::io::stdout().lock();
    let mut buf = [0u8; 8192];
    loop {
        match from_program.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if stdout
                    .write_all(&buf[..n])
                    .and_then(|()| stdout.flush())
                    .is_err()
                {
                    break;
                }
            }
        }
    }
    Ok(0)
}
