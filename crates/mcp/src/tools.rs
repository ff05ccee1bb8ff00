//! The tools: their names, descriptions and input schemas (`tools/list`), and each call
//! from JSON arguments to the [`Host`] or [`Code`] and back to a compact JSON result.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::code::{self, Code};
use crate::host::{
    AttachRequest, BreakpointReport, BreakpointSpec, FrameReport, Host, LaunchRequest, RunState,
    Step, ValueReport,
};

/// How long a call that runs the program waits for a stop unless told (`wait_ms`).
pub const DEFAULT_WAIT_MS: u64 = 3000;
/// The longest wait a call may ask for.
pub const MAX_WAIT_MS: u64 = 60_000;
/// A rendered value longer than this is cut (with its length said).
const MAX_VALUE_CHARS: usize = 240;
/// `debug_output` returns at most this many of the last bytes.
const OUTPUT_LIMIT: usize = 16 * 1024;

/// A failed tool call: the message becomes an `isError` result.
pub type ToolResult = Result<Value, String>;

/// The `tools/list` entries.
pub fn list() -> Value {
    let wait = json!({"type": "integer", "minimum": 0, "maximum": MAX_WAIT_MS,
        "description": "How long to wait for the program to stop or exit, in ms (default 3000); past it the state is 'running'"});
    let session = json!({"type": "integer", "description": "A session id from debug_launch, debug_attach or debug_sessions"});
    let breakpoint = json!({"type": "object", "properties": {
            "location": {"type": "string", "description": "file.c:LINE (a path suffix is enough) or a function name"},
            "condition": {"type": "string", "description": "Stop only when this C expression is true"},
            "log": {"type": "string", "description": "Log this message ({expr} interpolated) instead of stopping"}},
        "required": ["location"]});
    let breakpoints = json!({"type": "array", "items": breakpoint});
    let frame = json!({"type": "integer", "minimum": 0, "description": "Frame index from debug_stack, 0 = innermost (default 0)"});
    let thread =
        json!({"type": "integer", "description": "Thread id (default: the thread that stopped)"});
    let position = |what: &str| {
        json!({"type": "object", "properties": {
            "file": {"type": "string", "description": "Source file (absolute, or relative to the workspace root)"},
            "line": {"type": "integer", "minimum": 1, "description": "1-based line"},
            "column": {"type": "integer", "minimum": 1, "description": format!("1-based column (bytes) of the identifier to {what}")}},
          "required": ["file", "line", "column"]})
    };
    let state_note = " Returns state: stopped (reason, thread, frames, locals of the top frame), running, or exited (exit_code).";
    let tools = vec![
        tool("debug_launch", &format!("Start a program under the debugger with breakpoints and run it until it stops, exits, or wait_ms passes.{state_note}"),
            json!({"type": "object", "properties": {
                "program": {"type": "string", "description": "Path of the executable (built with -g)"},
                "args": {"type": "array", "items": {"type": "string"}},
                "cwd": {"type": "string", "description": "Working directory"},
                "env": {"type": "object", "additionalProperties": {"type": ["string", "null"]}, "description": "Variables to set (null removes one)"},
                "breakpoints": breakpoints,
                "stop_on_entry": {"type": "boolean", "description": "Stop at the entry point instead of running"},
                "record": {"type": "boolean", "description": "Record the program from its first instruction so the session can go back in time (debug_step_back, debug_reverse_continue, debug_last_write); single-threaded programs"},
                "wait_ms": wait}, "required": ["program"]})),
        tool("debug_attach", &format!("Attach the debugger to a running process (by pid, or program name, optionally inside a container) and let it run.{state_note}"),
            json!({"type": "object", "properties": {
                "pid": {"type": "integer", "description": "Process id (inside the container when 'container' is given)"},
                "container": {"type": "string", "description": "Container id prefix or name"},
                "program": {"type": "string", "description": "Executable name of the one process to attach to"},
                "breakpoints": breakpoints, "wait_ms": wait}})),
        tool("debug_continue", &format!("Continue a stopped program (or keep waiting for a running one).{state_note}"),
            json!({"type": "object", "properties": {"session": session, "wait_ms": wait}, "required": ["session"]})),
        tool("debug_step", &format!("Step one line: over calls, into them, or out of the current function; with 'target', into that one call of the current line (the calls before it run normally).{state_note}"),
            json!({"type": "object", "properties": {"session": session,
                "kind": {"type": "string", "enum": ["over", "in", "out"]},
                "target": {"type": "string", "description": "With kind 'in': the function whose call on the current line to step into (function pointers and virtual calls by the function they reach)"},
                "target_index": {"type": "integer", "minimum": 1, "description": "Which call of 'target' on the line, 1 = the first the program makes (default 1)"},
                "thread": thread, "wait_ms": wait}, "required": ["session", "kind"]})),
        tool("debug_step_back", &format!("Go back one line in a recorded session (launched with record: true): to the start of the line executed before this one, calls stepped over; from a function's first line, to its caller's line of the call. With kind 'instruction', one instruction.{state_note}"),
            json!({"type": "object", "properties": {"session": session,
                "kind": {"type": "string", "enum": ["line", "instruction"]},
                "thread": thread, "wait_ms": wait}, "required": ["session"]})),
        tool("debug_reverse_continue", &format!("Go back in a recorded session to the last breakpoint hit before now whose condition held (or a write a data breakpoint watches), else to the recording's start.{state_note}"),
            json!({"type": "object", "properties": {"session": session, "wait_ms": wait}, "required": ["session"]})),
        tool("debug_last_write", &format!("Go back in a recorded session to the last write before now to the variable or lvalue 'expression' names (g_count, p->next, a[3]; 1, 2, 4 or 8 bytes): the program is shown just before the instruction that wrote it, the description gives the value before and after. Answers where nothing wrote it since the recording's start (for a local, since its frame began: an earlier write to its stack slot was another variable's).{state_note}"),
            json!({"type": "object", "properties": {"session": session, "expression": {"type": "string"}, "frame": frame, "wait_ms": wait},
                "required": ["session", "expression"]})),
        tool("debug_pause", "Interrupt a running program; returns the stop.",
            json!({"type": "object", "properties": {"session": session}, "required": ["session"]})),
        tool("debug_breakpoints", "Replace every breakpoint of a session with 'set'; answers whether each was verified and the line it bound to.",
            json!({"type": "object", "properties": {"session": session, "set": breakpoints}, "required": ["session", "set"]})),
        tool("debug_stack", "The frames of a stopped thread (function, file, line), innermost first.",
            json!({"type": "object", "properties": {"session": session, "thread": thread}, "required": ["session"]})),
        tool("debug_variables", "The arguments and locals of a frame; with 'path' (an expression such as p->next, pts[2] or s.name) that value and its members or elements.",
            json!({"type": "object", "properties": {"session": session, "frame": frame,
                "path": {"type": "string", "description": "Expression whose children to list"}}, "required": ["session"]})),
        tool("debug_evaluate", "Evaluate a C-like expression in a frame of the stopped program (no side effects).",
            json!({"type": "object", "properties": {"session": session, "expression": {"type": "string"}, "frame": frame},
                "required": ["session", "expression"]})),
        tool("debug_output", "What the program wrote to stdout and stderr so far (and logpoint messages), the last 16 KiB.",
            json!({"type": "object", "properties": {"session": session}, "required": ["session"]})),
        tool("debug_end", "End a session: a launched program is killed, an attached one detached and left running. A session another view (an editor) started is only let go of.",
            json!({"type": "object", "properties": {"session": session}, "required": ["session"]})),
        tool("debug_sessions", "The debug sessions: this server's and those of other views of the same tandem (an editor's, when tandem mcp runs inside the workspace's tandem lsp), with their state; own is false for the others; parent is the session of the process that forked this one (a child followed in a session of its own), else null.",
            json!({"type": "object", "properties": {}})),
        tool("code_symbols", "Find functions, global variables and types by name in the workspace's binaries (debug information).",
            json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]})),
        tool("code_definition", "Where the identifier at a position is defined.", position("look up")),
        tool("code_hover", "Declaration, type, size and layout of the identifier at a position.", position("describe")),
        tool("code_diagnostics", "Compiler errors and warnings of a C or C++ file, or of a draft 'text' checked as if it were that file.",
            json!({"type": "object", "properties": {
                "file": {"type": "string", "description": "Source file (absolute, or relative to the workspace root)"},
                "text": {"type": "string", "description": "The draft contents to check instead of the file on disk"}},
              "required": ["file"]})),
    ];
    json!({"tools": tools})
}

fn tool(name: &str, description: &str, schema: Value) -> Value {
    json!({"name": name, "description": description, "inputSchema": schema})
}

/// Whether `name` is a tool (unknown ones are a JSON-RPC error, not a tool error).
pub fn exists(name: &str) -> bool {
    list()["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["name"] == name))
}

/// Runs one tool.
pub fn call(
    host: &Host,
    code: &Code,
    name: &str,
    args: &Map<String, Value>,
    cx: &crate::call::Call<'_>,
) -> ToolResult {
    let a = Args(args);
    match name {
        "debug_launch" => {
            let cwd = a.opt_str("cwd")?.map(|c| code.path(&c));
            let req = LaunchRequest {
                program: a.str("program")?,
                args: a.str_list("args")?,
                cwd,
                env: a.env()?,
                breakpoints: a.breakpoints("breakpoints")?,
                stop_on_entry: a.opt_bool("stop_on_entry")?.unwrap_or(false),
                record: a.opt_bool("record")?.unwrap_or(false),
            };
            let (id, bps, state) = host.launch(req, a.wait()?, cx).map_err(|e| e.0)?;
            Ok(started(id, &bps, &state))
        }
        "debug_attach" => {
            let req = AttachRequest {
                pid: a.opt_int("pid")?.map(|p| i32::try_from(p).unwrap_or(-1)),
                container: a.opt_str("container")?,
                program: a.opt_str("program")?,
                breakpoints: a.breakpoints("breakpoints")?,
            };
            let (id, bps, state) = host.attach(req, a.wait()?, cx).map_err(|e| e.0)?;
            Ok(started(id, &bps, &state))
        }
        "debug_continue" => {
            let id = a.session()?;
            let state = host.resume(id, a.wait()?).map_err(|e| e.0)?;
            Ok(with_session(id, state_json(&state)))
        }
        "debug_step" => {
            let id = a.session()?;
            let kind = match a.str("kind")?.as_str() {
                "over" => Step::Over,
                "in" => Step::In,
                "out" => Step::Out,
                other => return Err(format!("'kind' is over, in or out, not '{other}'")),
            };
            let kind = match (kind, a.opt_str("target")?) {
                (Step::In, Some(name)) => {
                    let index = a.opt_int("target_index")?.unwrap_or(1);
                    let index = u32::try_from(index)
                        .ok()
                        .filter(|i| *i >= 1)
                        .ok_or_else(|| format!("'target_index' is 1 or more, not {index}"))?;
                    Step::Into(name, index)
                }
                (_, Some(_)) => {
                    return Err("'target' steps into a call: 'kind' must be 'in'".into())
                }
                (kind, None) => kind,
            };
            let thread = a.opt_int("thread")?.map(|t| i32::try_from(t).unwrap_or(-1));
            let state = host.step(id, kind, thread, a.wait()?).map_err(|e| e.0)?;
            Ok(with_session(id, state_json(&state)))
        }
        "debug_step_back" => {
            let id = a.session()?;
            let instruction = match a.opt_str("kind")?.as_deref() {
                None | Some("line") => false,
                Some("instruction") => true,
                Some(other) => return Err(format!("'kind' is line or instruction, not '{other}'")),
            };
            let thread = a.opt_int("thread")?.map(|t| i32::try_from(t).unwrap_or(-1));
            let state = host
                .step_back(id, instruction, thread, a.wait()?)
                .map_err(|e| e.0)?;
            Ok(with_session(id, state_json(&state)))
        }
        "debug_reverse_continue" => {
            let id = a.session()?;
            let state = host.reverse_continue(id, a.wait()?).map_err(|e| e.0)?;
            Ok(with_session(id, state_json(&state)))
        }
        "debug_last_write" => {
            let id = a.session()?;
            let state = host
                .last_write(id, &a.str("expression")?, a.frame()?, a.wait()?)
                .map_err(|e| e.0)?;
            Ok(with_session(id, state_json(&state)))
        }
        "debug_pause" => {
            let id = a.session()?;
            let state = host.pause(id).map_err(|e| e.0)?;
            Ok(with_session(id, state_json(&state)))
        }
        "debug_breakpoints" => {
            let id = a.session()?;
            if !args.contains_key("set") {
                return Err("'set' is required (an empty list removes every breakpoint)".into());
            }
            let bps = host
                .set_breakpoints(id, &a.breakpoints("set")?, cx)
                .map_err(|e| e.0)?;
            Ok(
                json!({"session": id, "breakpoints": bps.iter().map(breakpoint_json).collect::<Vec<_>>()}),
            )
        }
        "debug_stack" => {
            let id = a.session()?;
            let thread = a.opt_int("thread")?.map(|t| i32::try_from(t).unwrap_or(-1));
            let frames = host.stack(id, thread).map_err(|e| e.0)?;
            Ok(json!({"session": id, "frames": frames.iter().map(frame_json).collect::<Vec<_>>()}))
        }
        "debug_variables" => {
            let id = a.session()?;
            let frame = a.frame()?;
            let path = a.opt_str("path")?;
            let tree = host
                .variables(id, frame, path.as_deref())
                .map_err(|e| e.0)?;
            let mut out = json!({"session": id, "frame": frame});
            if path.is_some() {
                out["value"] = value_json(&tree.value);
            }
            out["variables"] = tree.children.iter().map(value_json).collect();
            if tree.omitted > 0 {
                out["omitted"] = json!(tree.omitted);
            }
            Ok(out)
        }
        "debug_evaluate" => {
            let id = a.session()?;
            let v = host
                .evaluate(id, &a.str("expression")?, a.frame()?)
                .map_err(|e| e.0)?;
            if v.error {
                return Err(v.value);
            }
            let mut out = value_json(&v);
            out["session"] = json!(id);
            Ok(out)
        }
        "debug_output" => {
            let id = a.session()?;
            let out = host.output(id, OUTPUT_LIMIT).map_err(|e| e.0)?;
            let mut v = json!({"session": id, "output": out.text, "total_bytes": out.total_bytes});
            if out.omitted_bytes > 0 {
                v["omitted_bytes"] = json!(out.omitted_bytes);
            }
            Ok(v)
        }
        "debug_end" => {
            let id = a.session()?;
            let (state, goes_on) = host.end(id).map_err(|e| e.0)?;
            let mut out = with_session(id, state_json(&state));
            if goes_on {
                out["note"] = json!("another view started this session: it goes on there; this server removed its breakpoints and let go of it");
            }
            Ok(out)
        }
        "debug_sessions" => {
            let list: Vec<Value> = host
                .sessions()
                .iter()
                .map(|s| json!({"session": s.id, "pid": s.pid, "program": s.program, "origin": s.origin, "state": s.state, "own": s.own, "parent": s.parent}))
                .collect();
            Ok(json!({"sessions": list}))
        }
        "code_symbols" => code.symbols(&a.str("query")?),
        "code_definition" => {
            let (file, line, column) = a.position()?;
            code.definition(&file, line, column)
        }
        "code_hover" => {
            let (file, line, column) = a.position()?;
            code.hover(&file, line, column)
        }
        "code_diagnostics" => {
            let file = code.path(&a.str("file")?);
            code::diagnose(&file, a.opt_str("text")?.as_deref())
        }
        other => Err(format!("unknown tool '{other}'")),
    }
}

fn started(id: u64, bps: &[BreakpointReport], state: &RunState) -> Value {
    let mut out = with_session(id, state_json(state));
    if !bps.is_empty() {
        out["breakpoints"] = bps.iter().map(breakpoint_json).collect();
    }
    out
}

fn with_session(id: u64, mut v: Value) -> Value {
    v["session"] = json!(id);
    v
}

/// The JSON of a session's state; what every call that runs the program answers.
pub fn state_json(state: &RunState) -> Value {
    match state {
        RunState::Running => json!({"state": "running"}),
        RunState::Exited { code, signal } => {
            let mut v = json!({"state": "exited", "exit_code": code});
            if let Some(s) = signal {
                v["signal"] = json!(s);
            }
            v
        }
        RunState::Stopped(stop) => {
            let mut v = json!({"state": "stopped", "reason": stop.reason, "thread": stop.thread});
            if let Some(d) = &stop.description {
                v["description"] = json!(d);
            }
            if let Some(s) = &stop.signal {
                v["signal"] = json!(s);
            }
            if let Some(a) = stop.fault_address {
                v["fault_address"] = json!(format!("{a:#x}"));
            }
            if let Some(top) = stop.frames.iter().find(|f| f.line.is_some()) {
                if let Some(f) = &top.file {
                    v["file"] = json!(f);
                }
                v["line"] = json!(top.line);
                if let Some(f) = &top.function {
                    v["function"] = json!(f);
                }
            }
            v["frames"] = stop.frames.iter().map(frame_json).collect();
            v["locals"] = stop.locals.iter().map(value_json).collect();
            v
        }
    }
}

fn breakpoint_json(b: &BreakpointReport) -> Value {
    let mut v = json!({"location": b.location, "verified": b.verified});
    if let Some(f) = &b.file {
        v["file"] = json!(f);
    }
    if let Some(l) = b.line {
        v["line"] = json!(l);
    }
    if let Some(m) = &b.message {
        v["message"] = json!(m);
    }
    v
}

fn frame_json(f: &FrameReport) -> Value {
    let mut v = json!({"index": f.index, "function": f.function.as_deref().unwrap_or("??")});
    match (&f.file, f.line) {
        (Some(file), Some(line)) => {
            v["file"] = json!(file);
            v["line"] = json!(line);
        }
        _ => v["address"] = json!(format!("{:#x}", f.address)),
    }
    v
}

fn value_json(v: &ValueReport) -> Value {
    let mut out = json!({"name": v.name, "value": truncate(&v.value)});
    if !v.type_name.is_empty() {
        out["type"] = json!(v.type_name);
    }
    if let Some(n) = v.children {
        out["children"] = json!(n);
    }
    if v.error {
        out["error"] = json!(true);
    }
    out
}

/// Cuts a long rendering, saying how long it was.
fn truncate(text: &str) -> String {
    let count = text.chars().count();
    if count <= MAX_VALUE_CHARS {
        return text.to_string();
    }
    let kept: String = text.chars().take(MAX_VALUE_CHARS).collect();
    format!("{kept}… ({count} chars)")
}

/// Typed access to a call's arguments, with messages an agent can act on.
struct Args<'a>(&'a Map<String, Value>);

impl Args<'_> {
    fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key).filter(|v| !v.is_null())
    }

    fn str(&self, key: &str) -> Result<String, String> {
        self.opt_str(key)?
            .ok_or_else(|| format!("'{key}' is required"))
    }

    fn opt_str(&self, key: &str) -> Result<Option<String>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("'{key}' must be a string")),
        }
    }

    fn opt_int(&self, key: &str) -> Result<Option<i64>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_i64()
                .map(Some)
                .ok_or_else(|| format!("'{key}' must be an integer")),
        }
    }

    fn opt_bool(&self, key: &str) -> Result<Option<bool>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_bool()
                .map(Some)
                .ok_or_else(|| format!("'{key}' must be true or false")),
        }
    }

    fn session(&self) -> Result<u64, String> {
        let id = self.opt_int("session")?.ok_or("'session' is required")?;
        u64::try_from(id).map_err(|_| format!("no session {id}"))
    }

    fn frame(&self) -> Result<usize, String> {
        let f = self.opt_int("frame")?.unwrap_or(0);
        usize::try_from(f).map_err(|_| format!("no frame {f}: frames count from 0"))
    }

    fn wait(&self) -> Result<Duration, String> {
        let ms = self.opt_int("wait_ms")?.unwrap_or(DEFAULT_WAIT_MS as i64);
        let ms = u64::try_from(ms).map_err(|_| "'wait_ms' must not be negative".to_string())?;
        Ok(Duration::from_millis(ms.min(MAX_WAIT_MS)))
    }

    fn str_list(&self, key: &str) -> Result<Vec<String>, String> {
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|i| {
                    i.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| format!("'{key}' must be a list of strings"))
                })
                .collect(),
            Some(_) => Err(format!("'{key}' must be a list of strings")),
        }
    }

    fn env(&self) -> Result<Vec<(String, Option<String>)>, String> {
        match self.get("env") {
            None => Ok(Vec::new()),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(k, v)| {
                    if k.is_empty() || k.contains('=') {
                        return Err(format!("invalid environment variable name '{k}'"));
                    }
                    match v {
                        Value::String(s) => Ok((k.clone(), Some(s.clone()))),
                        Value::Null => Ok((k.clone(), None)),
                        _ => Err(format!("env '{k}' must be a string or null")),
                    }
                })
                .collect(),
            Some(_) => Err("'env' must be an object of strings".into()),
        }
    }

    fn breakpoints(&self, key: &str) -> Result<Vec<BreakpointSpec>, String> {
        let items = match self.get(key) {
            None => return Ok(Vec::new()),
            Some(Value::Array(items)) => items,
            Some(_) => {
                return Err(format!(
                    "'{key}' must be a list of {{location, condition?, log?}}"
                ))
            }
        };
        items
            .iter()
            .map(|item| match item {
                // A bare string is read as a location, a shorthand agents reach for.
                Value::String(s) => Ok(BreakpointSpec {
                    location: s.clone(),
                    ..Default::default()
                }),
                Value::Object(map) => {
                    let a = Args(map);
                    Ok(BreakpointSpec {
                        location: a.str("location")?,
                        condition: a.opt_str("condition")?.filter(|c| !c.trim().is_empty()),
                        log: a.opt_str("log")?.filter(|c| !c.is_empty()),
                    })
                }
                _ => Err(format!("each of '{key}' is {{location, condition?, log?}}")),
            })
            .collect()
    }

    fn position(&self) -> Result<(String, u32, u32), String> {
        let file = self.str("file")?;
        let num = |key: &str| -> Result<u32, String> {
            let n = self
                .opt_int(key)?
                .ok_or_else(|| format!("'{key}' is required"))?;
            u32::try_from(n)
                .ok()
                .filter(|n| *n >= 1)
                .ok_or_else(|| format!("'{key}' counts from 1"))
        };
        Ok((file, num("line")?, num("column")?))
    }
}

/// The workspace root used when neither `--root` nor a working directory is known.
pub fn default_root() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"))
}
