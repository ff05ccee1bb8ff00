//! `textDocument/publishDiagnostics`: a warning when a source is newer than the binary that
//! serves it, and the compiler's diagnostics after each save.
//!
//! Compiler checks: C and C++ run `cc`/`c++ -fsyntax-only -fdiagnostics-format=json` with
//! the file's flags from `compile_commands.json` when one is present (the classic
//! `file:line:col: error: message` text is parsed when the compiler does not speak JSON);
//! Rust files of a Cargo package run `cargo check --message-format=json`. A check runs in its
//! own process group on its own thread; a newer save of the same file (or package) kills the
//! group of the check it supersedes, whose results are then dropped. Each child is reaped with
//! `Child::wait` on the thread that started it: tandem's tracer threads wait with
//! `__WNOTHREAD`, so they never reap it first.
//!
//! Unsaved text: after each `didChange` of a C or C++ document (debounced by [`DEBOUNCE`]) the
//! compiler checks the buffer itself, read from stdin (`-x c -` / `-x c++ -`) with the file's
//! flags and `-iquote` its directory so its quoted includes still resolve; `<stdin>` in the
//! compiler's answer is the document. A check of a file, saved or unsaved, supersedes the
//! running one of the same file: its process group is killed and its results are dropped, so a
//! stale result is never published. [`diagnose_text`] is the same check as a plain function.
//! Rust files are checked on save only (`cargo check` needs the files on disk).
//!
//! Diagnostics are kept per file in parts (stale-binary warning, compiler, breakpoint hints)
//! and published together, since a publication replaces everything the client shows for the
//! file.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use serde_json::{json, Value};

mod parse;

pub use parse::Found;
use parse::{parse_cargo, parse_gcc_json, parse_gcc_text, ERROR, HINT, WARNING};

use crate::sources::{is_ident_byte, Lang};
use crate::text::{line_bounds, position_in, PositionEncoding, WirePosition};
use crate::uri;
use crate::workspace::Served;

/// A check still running after this long is killed.
const CHECK_TIMEOUT: Duration = Duration::from_secs(300);

/// How long an unsaved text must stay unchanged before the compiler checks it: a burst of
/// keystrokes starts one compile, not one per key.
pub const DEBOUNCE: Duration = Duration::from_millis(30);

/// Where diagnostics go: the client, through the server's outbox.
pub type Publish = Arc<dyn Fn(&str, Vec<Value>) + Send + Sync>;

#[derive(Default)]
struct FileDiagnostics {
    stale: Vec<Value>,
    compiler: Vec<Value>,
    /// Hints for breakpoints the debug adapter moved or could not bind.
    breakpoints: Vec<Value>,
}

struct Running {
    generation: u64,
    child: Arc<Mutex<Slot>>,
}

/// The child process of a check, and whether the check was superseded (then a child that
/// starts late is killed at once).
#[derive(Default)]
struct Slot {
    child: Option<Child>,
    killed: bool,
}

#[derive(Default)]
struct State {
    files: HashMap<PathBuf, FileDiagnostics>,
    /// Running checks by key (the file for C, the package directory for Cargo).
    running: HashMap<PathBuf, Running>,
    /// Files each check key reported on last time, to clear them when fixed.
    reported: HashMap<PathBuf, HashSet<PathBuf>>,
    generation: u64,
}

/// The diagnostics of a session.
pub struct Diagnostics {
    publish: Publish,
    encoding: PositionEncoding,
    state: Mutex<State>,
}

impl Diagnostics {
    pub fn new(publish: Publish, encoding: PositionEncoding) -> Arc<Diagnostics> {
        Arc::new(Diagnostics {
            publish,
            encoding,
            state: Mutex::new(State::default()),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn publish_file(&self, state: &State, file: &Path) {
        let all = state
            .files
            .get(file)
            .map(|d| {
                d.stale
                    .iter()
                    .chain(&d.compiler)
                    .chain(&d.breakpoints)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        (self.publish)(&uri::from_path(file), all);
    }

    /// Re-decides the stale-binary warning of `file` against the binaries serving it.
    pub fn check_stale(&self, file: &Path, served: &[Arc<Served>]) {
        let source_time = mtime(file);
        let newer: Vec<&Served> = served
            .iter()
            .filter(|s| s.serves_source(file))
            .filter(|s| matches!((source_time, s.mtime()), (Some(src), Some(bin)) if src > bin))
            .map(|s| &**s)
            .collect();
        let stale: Vec<Value> = newer
            .first()
            .map(|s| {
                json!({
                    "range": { "start": { "line": 0, "character": 0 }, "end": { "line": 0, "character": 0 } },
                    "severity": WARNING,
                    "source": "tandem",
                    "message": format!(
                        "this file is newer than {}, which was built from it: rebuild for accurate debugging",
                        s.path.display()
                    ),
                })
            })
            .into_iter()
            .collect();
        let mut state = self.state();
        let entry = state.files.entry(file.to_path_buf()).or_default();
        if entry.stale == stale {
            return;
        }
        entry.stale = stale;
        self.publish_file(&state, file);
    }

    /// Replaces the breakpoint hints of `file`: (0-based line, message) each, shown as a
    /// hint over the whole line.
    pub fn set_breakpoint_hints(&self, file: &Path, hints: &[(u32, String)]) {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let bounds = line_bounds(&text);
        let values: Vec<Value> = hints
            .iter()
            .map(|(line, message)| {
                let (start, end) = match bounds.get(*line as usize) {
                    Some(&(s, e)) => (
                        position_in(&text, &bounds, s, self.encoding),
                        position_in(&text, &bounds, e, self.encoding),
                    ),
                    None => {
                        let p = WirePosition {
                            line: *line,
                            column: 0,
                        };
                        (p, p)
                    }
                };
                json!({
                    "range": {
                        "start": { "line": start.line, "character": start.column },
                        "end": { "line": end.line, "character": end.column },
                    },
                    "severity": HINT,
                    "source": "tandem",
                    "message": message,
                })
            })
            .collect();
        let mut state = self.state();
        let entry = state.files.entry(file.to_path_buf()).or_default();
        if entry.breakpoints == values {
            return;
        }
        entry.breakpoints = values;
        self.publish_file(&state, file);
    }

    /// Removes every breakpoint hint (the debugging session that set them ended).
    pub fn clear_breakpoint_hints(&self) {
        let mut state = self.state();
        let files: Vec<PathBuf> = state
            .files
            .iter_mut()
            .filter(|(_, d)| !d.breakpoints.is_empty())
            .map(|(f, d)| {
                d.breakpoints.clear();
                f.clone()
            })
            .collect();
        for file in files {
            self.publish_file(&state, &file);
        }
    }

    /// Starts the compiler's check of `file` (just saved), superseding a running check of
    /// the same file or package.
    pub fn check_saved(self: &Arc<Self>, file: &Path, roots: &[PathBuf]) {
        let Some(plan) = plan_check(file, roots) else {
            tracing::debug!(file = %file.display(), "no compiler check for this file");
            return;
        };
        let (generation, child_slot) = self.supersede(&plan.key);
        let this = self.clone();
        let spawned = std::thread::Builder::new()
            .name("lsp-check".into())
            .spawn(move || this.run_check(&plan, generation, &child_slot));
        if let Err(e) = spawned {
            tracing::error!("cannot start a compiler check: {e}");
        }
    }

    /// Starts the compiler's check of the unsaved `text` of `file` (a C or C++ document just
    /// edited) once it has stayed unchanged for [`DEBOUNCE`], superseding a running check of
    /// the same file. Other files get no check: Rust files are checked on save only.
    pub fn check_unsaved(self: &Arc<Self>, file: &Path, text: String, roots: &[PathBuf]) {
        let plan = match plan_unsaved(file, roots) {
            Ok(plan) => plan,
            Err(e) => {
                tracing::debug!(file = %file.display(), "no check of the unsaved text: {e}");
                return;
            }
        };
        let (generation, slot) = self.supersede(&plan.key);
        let this = self.clone();
        let spawned = std::thread::Builder::new()
            .name("lsp-check-unsaved".into())
            .spawn(move || {
                std::thread::sleep(DEBOUNCE);
                if !this.is_current(&plan.key, generation) {
                    return;
                }
                let outcome = run_plan(&plan, &slot, Some(&text));
                let mut state = this.state();
                if !this.take_current(&mut state, &plan.key, generation) {
                    return;
                }
                let Some(out) = outcome else {
                    return;
                };
                let values = parse_unsaved(&plan, &out)
                    .iter()
                    .map(|f| to_lsp(f, this.encoding, &text))
                    .collect();
                state.files.entry(plan.file.clone()).or_default().compiler = values;
                this.publish_file(&state, &plan.file);
            });
        if let Err(e) = spawned {
            tracing::error!("cannot start a compiler check: {e}");
        }
    }

    /// Makes a new check of `key` the current one: the running check of the same key, if
    /// any, is killed and its results will be dropped.
    fn supersede(&self, key: &Path) -> (u64, Arc<Mutex<Slot>>) {
        let slot = Arc::new(Mutex::new(Slot::default()));
        let mut state = self.state();
        state.generation += 1;
        let generation = state.generation;
        let old = state.running.insert(
            key.to_path_buf(),
            Running {
                generation,
                child: slot.clone(),
            },
        );
        if let Some(old) = old {
            kill_group(&old.child);
        }
        (generation, slot)
    }

    fn is_current(&self, key: &Path, generation: u64) -> bool {
        self.state()
            .running
            .get(key)
            .is_some_and(|r| r.generation == generation)
    }

    /// Whether the check `generation` of `key` is still the current one; if so it is
    /// finished (no longer running). Called with the state locked until its results are in.
    fn take_current(&self, state: &mut State, key: &Path, generation: u64) -> bool {
        let current = state
            .running
            .get(key)
            .is_some_and(|r| r.generation == generation);
        if !current {
            tracing::debug!(key = %key.display(), "check superseded, results dropped");
            return false;
        }
        state.running.remove(key);
        true
    }

    fn run_check(&self, plan: &Plan, generation: u64, slot: &Arc<Mutex<Slot>>) {
        let outcome = run_plan(plan, slot, None);
        let mut state = self.state();
        if !self.take_current(&mut state, &plan.key, generation) {
            return;
        }
        let Some(out) = outcome else {
            return;
        };
        let base = plan.cwd.clone().unwrap_or_default();
        let found = match plan.format {
            Format::GccJson if !out.text_format => parse_gcc_json(&out.stderr, &base),
            Format::GccJson => parse_gcc_text(&out.stderr, &base),
            Format::Cargo => parse_cargo(&out.stdout, &base),
        };
        let mut by_file: HashMap<PathBuf, Vec<Value>> = HashMap::new();
        // The saved file is always published, so fixed errors are cleared.
        by_file.entry(plan.file.clone()).or_default();
        let mut texts: HashMap<PathBuf, String> = HashMap::new();
        for f in found {
            let file = f.file.clone();
            let text = texts
                .entry(file.clone())
                .or_insert_with(|| std::fs::read_to_string(&file).unwrap_or_default());
            let value = to_lsp(&f, self.encoding, text);
            by_file.entry(file).or_default().push(value);
        }
        let previous = state
            .reported
            .insert(plan.key.clone(), by_file.keys().cloned().collect())
            .unwrap_or_default();
        for gone in previous.difference(&by_file.keys().cloned().collect()) {
            by_file.entry(gone.clone()).or_default();
        }
        for (file, diags) in by_file {
            state.files.entry(file.clone()).or_default().compiler = diags;
            self.publish_file(&state, &file);
        }
    }
}

/// Kills the process group of a running check (its compiler's children too); a check
/// whose compiler has not started yet kills it as soon as it starts.
fn kill_group(slot: &Mutex<Slot>) {
    let mut guard = slot.lock().unwrap_or_else(|p| p.into_inner());
    guard.killed = true;
    if let Some(child) = guard.child.as_ref() {
        kill_child_group(child);
    }
}

fn kill_child_group(child: &Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: kill(2) with a negative pid signals the process group the child leads (it
        // was spawned with `process_group(0)`); the child is not reaped while it sits in its
        // slot, so the group id cannot have been reused.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    GccJson,
    Cargo,
}

/// The command that checks a file.
#[derive(Clone, Debug)]
struct Plan {
    key: PathBuf,
    file: PathBuf,
    command: Vec<String>,
    cwd: Option<PathBuf>,
    format: Format,
}

struct Output {
    stdout: String,
    stderr: String,
    text_format: bool,
}

/// Runs a plan's command; a compiler that refuses JSON diagnostics is asked again for text.
fn run_plan(plan: &Plan, slot: &Arc<Mutex<Slot>>, stdin: Option<&str>) -> Option<Output> {
    let mut outcome = run_command(&plan.command, plan.cwd.as_deref(), slot, stdin);
    if let (Some(Output { stderr, .. }), Format::GccJson) = (&outcome, plan.format) {
        if !stderr.trim_start().starts_with('[') && stderr.contains("diagnostics-format") {
            let mut command = plan.command.clone();
            command.retain(|a| a != "-fdiagnostics-format=json");
            outcome = run_command(&command, plan.cwd.as_deref(), slot, stdin);
            if let Some(out) = &mut outcome {
                out.text_format = true;
            }
        }
    }
    outcome
}

/// Runs a check's command in its own process group, with `stdin` as its input (else none);
/// `None` when it was killed or could not start.
fn run_command(
    command: &[String],
    cwd: Option<&Path>,
    slot: &Arc<Mutex<Slot>>,
    stdin: Option<&str>,
) -> Option<Output> {
    use std::io::Write as _;
    use std::os::unix::process::CommandExt;
    let (program, args) = command.split_first()?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(cwd) = cwd {
        cmd.current_dir(cwd);
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(%program, "cannot run the compiler check: {e}");
            return None;
        }
    };
    let (out, err, input) = (child.stdout.take(), child.stderr.take(), child.stdin.take());
    {
        let mut slot = slot.lock().unwrap_or_else(|p| p.into_inner());
        if slot.killed {
            // Superseded while it was starting.
            kill_child_group(&child);
        }
        slot.child = Some(child);
    }
    let watchdog_slot = slot.clone();
    let (done_tx, done_rx) = crossbeam_channel::bounded::<()>(0);
    let watchdog = std::thread::Builder::new()
        .name("lsp-check-timeout".into())
        .spawn(move || {
            if done_rx.recv_timeout(CHECK_TIMEOUT).is_err() {
                kill_group(&watchdog_slot);
            }
        });
    let (stdout, stderr) = std::thread::scope(|scope| {
        if let (Some(mut input), Some(text)) = (input, stdin) {
            scope.spawn(move || {
                // A compiler killed or failing early closes its input: nothing to do then.
                let _ = input.write_all(text.as_bytes());
            });
        }
        let err_reader = scope.spawn(move || {
            let mut s = String::new();
            if let Some(mut e) = err {
                let _ = e.read_to_string(&mut s);
            }
            s
        });
        let mut stdout = String::new();
        if let Some(mut o) = out {
            let _ = o.read_to_string(&mut stdout);
        }
        (stdout, err_reader.join().unwrap_or_default())
    });
    drop(done_tx);
    if let Ok(w) = watchdog {
        let _ = w.join();
    }
    let child = slot.lock().unwrap_or_else(|p| p.into_inner()).child.take();
    let status = child.map(|mut c| c.wait());
    match status {
        Some(Ok(s)) if s.code().is_some() => Some(Output {
            stdout,
            stderr,
            text_format: false,
        }),
        Some(Ok(s)) => {
            tracing::debug!(%program, "check ended by {s}");
            None
        }
        Some(Err(e)) => {
            tracing::warn!(%program, "cannot wait for the compiler check: {e}");
            None
        }
        None => None,
    }
}

/// What to run for a saved file: Cargo for Rust files of a package, the C compiler (with
/// compile_commands.json flags) for C and C++.
fn plan_check(file: &Path, roots: &[PathBuf]) -> Option<Plan> {
    let ext = file.extension()?.to_str()?;
    let lang = Lang::of(file);
    if lang == Lang::Rust {
        let dir = file
            .ancestors()
            .skip(1)
            .take_while(|d| roots.is_empty() || roots.iter().any(|r| d.starts_with(r)))
            .find(|d| d.join("Cargo.toml").is_file())?
            .to_path_buf();
        return Some(Plan {
            key: dir.clone(),
            file: file.to_path_buf(),
            command: ["cargo", "check", "--message-format=json", "--quiet"]
                .map(str::to_owned)
                .to_vec(),
            cwd: Some(dir),
            format: Format::Cargo,
        });
    }
    if !is_c_family(ext) {
        return None;
    }
    let (mut command, cwd) = compile_command(file, roots).unwrap_or_else(|| {
        let cc = if lang == Lang::Cpp { "c++" } else { "cc" };
        (vec![cc.to_owned()], file.parent().map(Path::to_path_buf))
    });
    command.push("-fsyntax-only".into());
    command.push("-fdiagnostics-format=json".into());
    command.push(file.display().to_string());
    Some(Plan {
        key: file.to_path_buf(),
        file: file.to_path_buf(),
        command,
        cwd,
        format: Format::GccJson,
    })
}

/// The compiler and flags for `file` from a compile_commands.json at a root (or its
/// `build/`), without the output, the input and dependency-file options.
fn compile_command(file: &Path, roots: &[PathBuf]) -> Option<(Vec<String>, Option<PathBuf>)> {
    for root in roots {
        for db in [
            root.join("compile_commands.json"),
            root.join("build/compile_commands.json"),
        ] {
            let Ok(text) = std::fs::read_to_string(&db) else {
                continue;
            };
            let Ok(Value::Array(entries)) = serde_json::from_str::<Value>(&text) else {
                tracing::warn!(db = %db.display(), "compile_commands.json is not a list");
                continue;
            };
            for e in entries {
                let dir = PathBuf::from(e["directory"].as_str().unwrap_or("."));
                let Some(entry_file) = e["file"].as_str() else {
                    continue;
                };
                let entry_path = dir.join(entry_file);
                if symbols::lines::normalize_path(&entry_path)
                    != symbols::lines::normalize_path(file)
                {
                    continue;
                }
                let args: Vec<String> = match (&e["arguments"], e["command"].as_str()) {
                    (Value::Array(a), _) => a
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect(),
                    (_, Some(c)) => split_command(c),
                    _ => continue,
                };
                let mut out = Vec::new();
                let mut skip = false;
                for a in args {
                    if skip {
                        skip = false;
                        continue;
                    }
                    match a.as_str() {
                        "-o" | "-MF" | "-MT" | "-MQ" => skip = true,
                        "-c" | "-MD" | "-MMD" | "-M" | "-MM" => {}
                        _ if a == entry_file || dir.join(&a) == entry_path => {}
                        _ => out.push(a),
                    }
                }
                if out.is_empty() {
                    continue;
                }
                return Some((out, Some(dir)));
            }
        }
    }
    None
}

/// Splits a shell command line on blanks, honouring quotes and backslashes.
fn split_command(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, c) if c.is_whitespace() => {
                if any {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            (None, '"' | '\'') => {
                quote = Some(c);
                any = true;
            }
            (Some(q), c) if c == q => quote = None,
            (q, '\\') if q != Some('\'') => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
                any = true;
            }
            (_, c) => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        out.push(cur);
    }
    out
}

/// Byte offsets of a diagnostic's range in `text` (the file's text: on disk after a save, the
/// buffer for unsaved text); `None` when its line is past the end.
fn span(f: &Found, text: &str, bounds: &[(usize, usize)]) -> Option<(usize, usize)> {
    let &(ls, le) = bounds.get(f.line.saturating_sub(1) as usize)?;
    let at = |col: Option<u32>| {
        let mut offset = (ls + col.unwrap_or(0) as usize).min(le);
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        offset
    };
    let start = at(f.start);
    let end = match f.end {
        Some(_) => at(f.end),
        None => {
            // Without an end, the identifier at the caret (or one character).
            let bytes = text.as_bytes();
            let mut e = start;
            while e < bytes.len() && is_ident_byte(bytes[e]) {
                e += 1;
            }
            if e == start && e < bytes.len() && bytes[e] != b'\n' {
                e += text[e..].chars().next().map_or(0, char::len_utf8);
            }
            e
        }
    };
    Some((start, end.max(start)))
}

/// The LSP diagnostic, with columns converted through `text`, the file's text.
fn to_lsp(f: &Found, encoding: PositionEncoding, text: &str) -> Value {
    let bounds = line_bounds(text);
    let (start, end) = match span(f, text, &bounds) {
        Some((s, e)) => (
            position_in(text, &bounds, s, encoding),
            position_in(text, &bounds, e, encoding),
        ),
        None => {
            let p = WirePosition {
                line: f.line.saturating_sub(1),
                column: 0,
            };
            (p, p)
        }
    };
    let range = |a: WirePosition, b: WirePosition| json!({ "start": { "line": a.line, "character": a.column }, "end": { "line": b.line, "character": b.column } });
    let mut d = json!({
        "range": range(start, end),
        "severity": f.severity,
        "source": if f.code.as_deref().is_some_and(|c| c.starts_with("-W")) || f.file.extension().is_some_and(|e| e != "rs") { "cc" } else { "rustc" },
        "message": f.message,
    });
    if let Some(code) = &f.code {
        d["code"] = json!(code);
    }
    if !f.related.is_empty() {
        d["relatedInformation"] = f
            .related
            .iter()
            .map(|(file, line, col, message)| {
                let p = WirePosition {
                    line: line.saturating_sub(1),
                    column: *col,
                };
                json!({ "location": { "uri": uri::from_path(file), "range": range(p, p) }, "message": message })
            })
            .collect();
    }
    d
}

/// How serious a [`TextDiagnostic`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
    Information,
    Hint,
}

impl Severity {
    fn of(lsp: u32) -> Severity {
        match lsp {
            ERROR => Severity::Error,
            WARNING => Severity::Warning,
            HINT => Severity::Hint,
            _ => Severity::Information,
        }
    }

    /// `error`, `warning`, `information` or `hint`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Information => "information",
            Severity::Hint => "hint",
        }
    }
}

/// One compiler diagnostic of a text, in the text's own terms. Lines are 1-based; columns are
/// 1-based and count bytes of the line (UTF-8), as compilers count them; the end is exclusive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextDiagnostic {
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
    pub severity: Severity,
    pub message: String,
    /// The option that enabled a warning (`-Wunused-variable`), when the compiler names it.
    pub code: Option<String>,
    /// The compiler's notes that point into the text: (line, column, message).
    pub notes: Vec<(u32, u32, String)>,
}

/// Why [`diagnose_text`] has no answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DiagnoseError {
    /// Only C and C++ texts are checked; Rust files are checked on save (`cargo check`).
    #[error("{0} is not a C or C++ file (rust files are checked on save only)")]
    Unsupported(PathBuf),
    /// The compiler could not be run, or was killed.
    #[error("the compiler {0} did not run to its end")]
    Compiler(String),
}

/// The compiler's diagnostics of `text` as the contents of `file` (a C or C++ source, which
/// need not be saved or even exist): the compiler of `file`'s entry in the nearest
/// compile_commands.json above it (or in a `build/` beside one), with that entry's flags, else
/// `cc`/`c++`, reads the text from stdin. Diagnostics in other files (headers) are left out.
pub fn diagnose_text(file: &Path, text: &str) -> Result<Vec<TextDiagnostic>, DiagnoseError> {
    let file = if file.is_absolute() {
        symbols::lines::normalize_path(file)
    } else {
        symbols::lines::normalize_path(&std::env::current_dir().unwrap_or_default().join(file))
    };
    let roots: Vec<PathBuf> = file.ancestors().skip(1).map(Path::to_path_buf).collect();
    let plan = plan_unsaved(&file, &roots)?;
    let slot = Arc::new(Mutex::new(Slot::default()));
    let out = run_plan(&plan, &slot, Some(text)).ok_or_else(|| {
        DiagnoseError::Compiler(plan.command.first().cloned().unwrap_or_default())
    })?;
    let bounds = line_bounds(text);
    let at = |offset: usize| {
        let p = position_in(text, &bounds, offset, PositionEncoding::Utf8);
        (p.line + 1, p.column + 1)
    };
    Ok(parse_unsaved(&plan, &out)
        .into_iter()
        .map(|f| {
            let ((line, column), (end_line, end_column)) = match span(&f, text, &bounds) {
                Some((s, e)) => (at(s), at(e)),
                None => ((f.line, 1), (f.line, 1)),
            };
            TextDiagnostic {
                line,
                column,
                end_line,
                end_column,
                severity: Severity::of(f.severity),
                notes: f
                    .related
                    .into_iter()
                    .filter(|(file, ..)| *file == plan.file)
                    .map(|(_, line, col, message)| (line, col + 1, message))
                    .collect(),
                message: f.message,
                code: f.code,
            }
        })
        .collect())
}

/// The check of an unsaved C or C++ text read from stdin: the file's flags (as for a save),
/// `-iquote` the file's directory for its quoted includes, and the language named with `-x`.
fn plan_unsaved(file: &Path, roots: &[PathBuf]) -> Result<Plan, DiagnoseError> {
    let unsupported = || DiagnoseError::Unsupported(file.to_path_buf());
    let ext = file
        .extension()
        .and_then(|e| e.to_str())
        .ok_or_else(unsupported)?;
    let lang = Lang::of(file);
    if lang == Lang::Rust || !is_c_family(ext) {
        return Err(unsupported());
    }
    let (mut command, cwd) = compile_command(file, roots).unwrap_or_else(|| {
        let cc = if lang == Lang::Cpp { "c++" } else { "cc" };
        (vec![cc.to_owned()], file.parent().map(Path::to_path_buf))
    });
    let cpp = lang == Lang::Cpp || command.first().is_some_and(|c| c.ends_with("++"));
    command.push("-fsyntax-only".into());
    command.push("-fdiagnostics-format=json".into());
    if let Some(dir) = file.parent() {
        command.push("-iquote".into());
        command.push(dir.display().to_string());
    }
    command.extend(["-x", if cpp { "c++" } else { "c" }, "-"].map(str::to_owned));
    Ok(Plan {
        key: file.to_path_buf(),
        file: file.to_path_buf(),
        command,
        cwd,
        format: Format::GccJson,
    })
}

fn is_c_family(ext: &str) -> bool {
    matches!(
        ext,
        "c" | "h" | "cc" | "cpp" | "cxx" | "C" | "hpp" | "hh" | "hxx"
    )
}

/// The diagnostics of an unsaved check that are about the text (`<stdin>`), named by the
/// plan's file; notes in the text are named so too.
fn parse_unsaved(plan: &Plan, out: &Output) -> Vec<Found> {
    let base = plan.cwd.clone().unwrap_or_default();
    let found = if out.text_format {
        parse_gcc_text(&out.stderr, &base)
    } else {
        parse_gcc_json(&out.stderr, &base)
    };
    let is_stdin = |p: &Path| p.file_name().is_some_and(|n| n == "<stdin>");
    found
        .into_iter()
        .filter(|f| is_stdin(&f.file))
        .map(|mut f| {
            f.file = plan.file.clone();
            for r in &mut f.related {
                if is_stdin(&r.0) {
                    r.0 = plan.file.clone();
                }
            }
            f
        })
        .collect()
}

fn mtime(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_are_split() {
        assert_eq!(
            split_command(r#"cc -DX="a b" -I 'inc dir' -c a\ b.c"#),
            ["cc", "-DX=a b", "-I", "inc dir", "-c", "a b.c"]
        );
    }
}
