//! `textDocument/codeLens` ("Run" and "Debug" above `main` and Rust `#[test]` functions) and
//! the server side of the `tandem.run` command.
//!
//! A lens is offered for a function only when a binary serving the workspace contains it, so
//! the command names a program that exists. `tandem.run` is executed by the server: the
//! program runs with its output forwarded as `window/logMessage` and its exit status shown
//! with `window/showMessage`. `tandem.debug` needs the editor's debugger, so the server does
//! not execute it: editors bind it to a DAP launch (docs/editors.md).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Deserialize;
use serde_json::{json, Value};
use symbols::SymbolKind;

use crate::features::{find_word, pos, range_json, same_file, Context, Lang};

/// The command the server executes (advertised in `executeCommandProvider`).
pub const RUN: &str = "tandem.run";
/// The command editors bind to a debug launch (not executed by the server).
pub const DEBUG: &str = "tandem.debug";

/// What `tandem.run` and `tandem.debug` receive: a DAP-style launch configuration.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Launch {
    pub program: PathBuf,
    #[serde(default)]
    pub args: Vec<String>,
    pub cwd: Option<PathBuf>,
    #[serde(default)]
    pub name: String,
}

/// Whether the Rust function declared on 0-based `line0` carries `#[test]` among the
/// attributes just above it.
fn is_rust_test(
    text: &str,
    bounds_line: impl Fn(u32) -> Option<(usize, usize)>,
    line0: u32,
) -> bool {
    let mut l = line0;
    for _ in 0..8 {
        let Some(prev) = l.checked_sub(1) else {
            return false;
        };
        l = prev;
        let Some((s, e)) = bounds_line(l) else {
            return false;
        };
        let line = text[s..e].trim();
        if line == "#[test]" || line.starts_with("#[test]") {
            return true;
        }
        if !(line.starts_with("#[") || line.starts_with("///") || line.is_empty()) {
            return false;
        }
    }
    false
}

/// The Run/Debug lenses of `path`, each with its 0-based line.
pub fn code_lenses(cx: &mut Context, path: &Path) -> Vec<(u32, Value)> {
    let lang = Lang::of(path);
    let Some(text) = cx.sources.text(path) else {
        return Vec::new();
    };
    let mut lenses: Vec<(u32, Value)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let served = cx.served.clone();
    for s in &served {
        let files = s.names.files_where(|f| same_file(f, path));
        for &sym in files.iter().flat_map(|&f| s.names.in_file(f)) {
            if s.names.brief(sym).map(|b| b.kind) != Some(SymbolKind::Function) {
                continue;
            }
            let Some(e) = s.entry(sym, true).filter(|e| e.range.is_some()) else {
                continue;
            };
            let (Some(file), Some(line)) = (e.decl_file.as_deref(), e.decl_line) else {
                continue;
            };
            let short = e.short_name();
            let parts = e.name.split("::").count();
            let is_main = short == "main" && (lang != Lang::Rust || parts == 2);
            if !(is_main || lang == Lang::Rust) || !same_file(file, path) {
                continue;
            }
            let line0 = cx.sources.to_current(path, line.zero_based());
            let bounds = |l: u32| crate::features::line_span(&text, l);
            let test = !is_main && lang == Lang::Rust && is_rust_test(&text, bounds, line0);
            if !(is_main || test) || !seen.insert((s.path.clone(), e.name.clone())) {
                continue;
            }
            // The name must be declared there (a generated `main`, such as libtest's,
            // points at a line that only mentions it).
            let Some((ws, we)) = find_word(&text, line0, short) else {
                continue;
            };
            if !text[we..].trim_start().starts_with(['(', '<']) {
                continue;
            }
            let range = range_json(pos(&text, ws, cx.encoding), pos(&text, we, cx.encoding));
            let cwd = cx
                .roots
                .first()
                .cloned()
                .or_else(|| s.path.parent().map(Path::to_path_buf));
            let program = s.path.display().to_string();
            let binary_name = s
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let (args, what) = if test {
                // libtest names a test by its path without the crate.
                let test_name = e.name.split_once("::").map_or(&*e.name, |(_, rest)| rest);
                (
                    vec![
                        test_name.to_owned(),
                        "--exact".to_owned(),
                        "--nocapture".to_owned(),
                    ],
                    format!("test {test_name}"),
                )
            } else {
                (Vec::new(), binary_name)
            };
            let launch = |verb: &str| {
                json!({
                    "type": "tandem",
                    "request": "launch",
                    "name": format!("{verb} {what}"),
                    "program": program,
                    "args": args,
                    "cwd": cwd,
                })
            };
            for (title, command, verb) in [("▶ Run", RUN, "Run"), ("Debug", DEBUG, "Debug")] {
                lenses.push((
                    line0,
                    json!({
                        "range": range,
                        "command": { "title": title, "command": command, "arguments": [launch(verb)] },
                    }),
                ));
            }
        }
    }
    lenses.sort_by_key(|l| l.0);
    lenses
}

/// Something the running program or its end says to the user.
pub enum RunEvent {
    /// A line of its output.
    Output(String),
    /// It ended: a message for `window/showMessage`, and whether it failed.
    Ended { message: String, failed: bool },
}

/// Runs `launch.program` to its end on the calling thread, reporting its output lines and its
/// end through `report`. The child is waited for with `Child::wait`: tandem's tracer threads
/// reap only their own tracees (`__WNOTHREAD`), so another thread's child stays ours to wait.
pub fn run(launch: &Launch, report: &(dyn Fn(RunEvent) + Sync)) {
    let mut cmd = Command::new(&launch.program);
    cmd.args(&launch.args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(cwd) = &launch.cwd {
        cmd.current_dir(cwd);
    }
    let name = launch.program.display().to_string();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            report(RunEvent::Ended {
                message: format!("cannot run {name}: {e}"),
                failed: true,
            });
            return;
        }
    };
    let stderr = child.stderr.take();
    std::thread::scope(|scope| {
        if let Some(err) = stderr {
            scope.spawn(move || {
                for line in BufReader::new(err).lines().map_while(Result::ok) {
                    report(RunEvent::Output(line));
                }
            });
        }
        if let Some(out) = child.stdout.take() {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                report(RunEvent::Output(line));
            }
        }
    });
    let (message, failed) = match child.wait() {
        Ok(status) if status.success() => (format!("{name} exited with status 0"), false),
        Ok(status) => match status.code() {
            Some(code) => (format!("{name} exited with status {code}"), true),
            None => (format!("{name} ended by {status}"), true),
        },
        Err(e) => (format!("cannot wait for {name}: {e}"), true),
    };
    report(RunEvent::Ended { message, failed });
}
