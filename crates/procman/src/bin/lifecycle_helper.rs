//! Test helper for procman's lifecycle tests: a tiny "tandem" that owns debuggees.
//!
//! Usage: `procman-lifecycle-helper MODE OUT_FILE PROGRAM ATTACH_PID`
//! Launches PROGRAM twice and attaches to ATTACH_PID through a [`ProcessManager`],
//! resumes all three, writes `launched PID PID` and `attached PID` lines to OUT_FILE,
//! then per MODE: `wait` (for a signal; the signal hook is installed), `exit`
//! (returns from main: the manager is dropped), `panic` (panics on the main thread).

use procman::{ProcessManager, ViewId};
use std::io::Write;
use tracer::{Pid, StdioMode};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, mode, out, program, attach] = args.as_slice() else {
        return Err("usage: procman-lifecycle-helper MODE OUT_FILE PROGRAM ATTACH_PID".into());
    };
    let manager = ProcessManager::new();
    procman::install_signal_hook(manager.shutdown_handle())?;
    let mut launched = Vec::new();
    let mut sessions = Vec::new();
    let me = ViewId::new();
    for _ in 0..2 {
        let s = manager.launch_debug(engine::LaunchOptions {
            program: program.into(),
            stdio: StdioMode::Null,
            ..engine::LaunchOptions::default()
        })?;
        s.resume(me)?;
        launched.push(s.pid().0);
        sessions.push(s);
    }
    let a = manager.attach_debug(Pid(attach.parse()?), engine::SourceMap::default())?;
    a.resume(me)?;
    sessions.push(a);
    let mut f = std::fs::File::create(format!("{out}.tmp"))?;
    writeln!(f, "launched {} {}", launched[0], launched[1])?;
    writeln!(f, "attached {attach}")?;
    drop(f);
    std::fs::rename(format!("{out}.tmp"), out)?;
    match mode.as_str() {
        "exit" => {
            std::thread::sleep(std::time::Duration::from_millis(100));
            Ok(())
        }
        "panic" => {
            std::thread::sleep(std::time::Duration::from_millis(100));
            panic!("the helper panics on purpose");
        }
        _ => loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
        },
    }
}
