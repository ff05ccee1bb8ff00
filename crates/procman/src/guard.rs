//! The guard of handed-over fork children: a small process of its own that ends or frees
//! them if tandem dies before their sessions take them over.
//!
//! A child the engine hands over ([`engine::SessionEvent::ChildForked`]) waits untraced,
//! parked ([`tracer::park`]) or in a job-control stop, until its session attaches. If tandem is killed outright in
//! that window (SIGKILL, OOM), nothing inside tandem can run, and the child would stay
//! stopped for good. So the binary enables a guard ([`enable`]): the same executable
//! started with `TANDEM_CHILD_GUARD` set ([`serve`]), reading `k PID` (a child of a
//! launched program: killed with it), `c PID` (of an attached one: let run) and `- PID`
//! (taken over, freed or killed by tandem) on its stdin. When its stdin ends — tandem
//! exited or died, the pipe's write end closes with it — it acts on every child still
//! listed that is still waiting (untraced): SIGKILL, or let run from where it waits
//! ([`tracer::park::free`]), and exits.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};

use tracer::Pid;

/// The environment variable that makes the executable the guard.
pub const GUARD_ENV: &str = "TANDEM_CHILD_GUARD";

/// The executable to start as the guard, once [`enable`]d.
static EXE: OnceLock<PathBuf> = OnceLock::new();

/// The running guard: its process and the write end of its stdin.
static GUARD: Mutex<Option<(Child, ChildStdin)>> = Mutex::new(None);

/// Lets handed-over children be guarded by `exe` run with [`GUARD_ENV`] (the binary
/// calls this with its own path; library users without a guard get none).
pub fn enable(exe: PathBuf) {
    let _ = EXE.set(exe);
}

/// Tells the guard (started on first use) one line; a guard that cannot be started or
/// written to is logged, never an error for the session.
fn tell(line: &str) {
    let Some(exe) = EXE.get() else {
        return;
    };
    let Ok(mut guard) = GUARD.lock() else {
        return;
    };
    if guard.is_none() {
        let started = Command::new(exe)
            .env(GUARD_ENV, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        match started {
            Ok(mut child) => {
                if let Some(stdin) = child.stdin.take() {
                    *guard = Some((child, stdin));
                }
            }
            Err(e) => {
                tracing::warn!("starting the guard of handed-over children: {e}");
                return;
            }
        }
    }
    if let Some((_, stdin)) = guard.as_mut() {
        if let Err(e) = writeln!(stdin, "{line}").and_then(|()| stdin.flush()) {
            tracing::warn!("telling the guard of handed-over children: {e}");
            *guard = None;
        }
    }
}

/// A child was handed over and waits for its session; `kill` when its program dies with
/// tandem (launched), else it is let run if tandem dies first.
pub(crate) fn watch(pid: Pid, kill: bool) {
    tell(&format!("{} {}", if kill { "k" } else { "c" }, pid.0));
}

/// A handed-over child no longer waits: taken over, freed or killed.
pub(crate) fn forget(pid: Pid) {
    if EXE.get().is_some() {
        tell(&format!("- {}", pid.0));
    }
}

/// Whether `pid` still waits as a handed-over child does: stopped and untraced.
fn still_waiting(pid: i32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(str::trim)
            .unwrap_or_default()
            .to_string()
    };
    field("TracerPid:") == "0"
        && (field("State:").starts_with('T') || tracer::park::is_parked(Pid(pid)))
}

/// The guard's own main: reads the children to guard until its stdin ends, then ends or
/// frees those still waiting. Returns the exit code.
pub fn serve() -> i32 {
    let mut children: HashMap<i32, bool> = HashMap::new();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let mut words = line.split_whitespace();
        let (Some(op), Some(pid)) = (words.next(), words.next().and_then(|p| p.parse().ok()))
        else {
            continue;
        };
        match op {
            "k" => {
                children.insert(pid, true);
            }
            "c" => {
                children.insert(pid, false);
            }
            _ => {
                children.remove(&pid);
            }
        }
    }
    for (pid, kill) in children {
        if !still_waiting(pid) {
            continue;
        }
        if kill {
            let p = nix::unistd::Pid::from_raw(pid);
            let _ = nix::sys::signal::kill(p, nix::sys::signal::SIGKILL);
        } else {
            tracer::park::free(Pid(pid));
        }
    }
    0
}
