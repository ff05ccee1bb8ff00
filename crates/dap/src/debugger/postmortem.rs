//! A core file as a DAP session (`attach` or `launch` with `coreFile`, the lldb-dap and
//! gdb convention): opening it, its one `stopped` event, its exceptionInfo, and the
//! requests that would run or change the program (an error, and a `capabilities` event
//! says so). Threads, stacks, scopes, variables, evaluate, readMemory, disassemble and
//! modules are the live handlers', reading the core through `engine::Inspect`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use engine::{SourceMap, StopCause};
use procman::CoreDebug;
use serde_json::{json, Value};
use wire::dap;

use super::{Debuggee, Debugger, Target};
use crate::server::{Adapter, Ending, Flow};

/// Requests that would run or change the program.
const REFUSED: [&str; 15] = [
    "continue",
    "next",
    "stepIn",
    "stepInTargets",
    "stepOut",
    "stepBack",
    "reverseContinue",
    "pause",
    "setVariable",
    "setExpression",
    "writeMemory",
    "restart",
    "restartFrame",
    "goto",
    "setDataBreakpoints",
];

fn core_file(req: &dap::Request) -> Option<String> {
    req.arguments
        .as_ref()?
        .get("coreFile")?
        .as_str()
        .map(str::to_owned)
}

/// Handles the request when it opens a core (`attach`/`launch` with `coreFile`) or when a
/// core is open; `None` leaves it to the live paths.
pub(crate) fn route(a: &mut Adapter, req: &dap::Request) -> Option<Flow> {
    let command = req.command.as_str();
    let opening = matches!(command, "attach" | "launch") && core_file(req).is_some();
    if !opening && !a.debugger().is_core() {
        return None;
    }
    let out = a.out.clone();
    let seq = req.seq;
    let args = req.arguments.clone().unwrap_or(Value::Null);
    if opening {
        match open(a, &args) {
            Ok(()) => {
                out.success(seq, command, Value::Null);
                after_open(a);
            }
            Err(e) => out.error(seq, command, &e),
        }
        return Some(Flow::Continue);
    }
    if REFUSED.contains(&command) {
        out.error(
            seq,
            command,
            &format!("{command}: not possible on a core file (the program is not running)"),
        );
        return Some(Flow::Continue);
    }
    let answer = match command {
        "disconnect" | "terminate" => {
            a.debugger().close_core();
            out.success(seq, command, Value::Null);
            if command == "terminate" {
                out.event("terminated", Some(json!({})));
                return Some(Flow::Continue);
            }
            return Some(Flow::End(Ending::Disconnected));
        }
        "configurationDone"
        | "setBreakpoints"
        | "setFunctionBreakpoints"
        | "setExceptionBreakpoints"
        | "setInstructionBreakpoints" => {
            // Accepted and kept unverified: nothing runs.
            let n = args
                .get("breakpoints")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            let bps: Vec<Value> = (0..n)
                .map(|_| json!({"verified": false, "message": "a core file does not run"}))
                .collect();
            Ok(if command == "configurationDone" {
                Value::Null
            } else {
                json!({"breakpoints": bps})
            })
        }
        "exceptionInfo" => match a.debugger().core()?.engine().exception_info() {
            Some(info) => Ok(
                json!({"exceptionId": info.name, "description": info.description,
                "breakMode": "always", "details": {"message": info.description}}),
            ),
            None => Err("the core records no signal".to_string()),
        },
        // Reading the core: the live handlers, through `engine::Inspect`.
        _ => return None,
    };
    match answer {
        Ok(body) => out.success(seq, command, body),
        Err(e) => out.error(seq, command, &e),
    }
    Some(Flow::Continue)
}

fn open(a: &mut Adapter, args: &Value) -> Result<(), String> {
    if a.debugger().debuggee.is_some() {
        return Err("a program is already being debugged".into());
    }
    let core = args
        .get("coreFile")
        .and_then(Value::as_str)
        .ok_or("coreFile must be a path")?;
    let program = args
        .get("program")
        .and_then(Value::as_str)
        .ok_or("a core file needs \"program\": the executable that wrote it")?;
    let sysroot = args
        .get("sysroot")
        .and_then(Value::as_str)
        .map(PathBuf::from);
    let spec = match args.get("sourceMap") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            serde_json::from_value::<crate::types::SourceMapSpec>(v.clone())
                .map_err(|_| "sourceMap must be an object {from: to} or a list of [from, to]")?,
        ),
    };
    let mut source_map = crate::launch::source_map(spec.as_ref());
    engine::guess_source_map(&mut source_map, Path::new(program));
    let owner = a
        .debugger()
        .manager
        .open_core(Path::new(program), Path::new(core), sysroot.as_deref())
        .map_err(|e| format!("cannot open {core} with {program}: {e}"))?;
    a.debugger().open_core(owner, source_map);
    Ok(())
}

/// After the response: the capabilities of a core session, then its one stop.
fn after_open(a: &mut Adapter) {
    let out = a.out.clone();
    let Some(core) = a.debugger().core().cloned() else {
        return;
    };
    out.event(
        "capabilities",
        Some(json!({"capabilities": {
            "supportsSetVariable": false, "supportsSetExpression": false,
            "supportsWriteMemoryRequest": false, "supportsRestartRequest": false,
            "supportsDataBreakpoints": false, "supportsStepBack": false,
            "supportsGotoTargetsRequest": false, "supportsRestartFrame": false,
            "supportTerminateDebuggee": false, "supportSuspendDebuggee": false,
            "supportsStepInTargetsRequest": false, "supportsInstructionBreakpoints": false,
            "supportsFunctionBreakpoints": false, "supportsConditionalBreakpoints": false,
            "supportsHitConditionalBreakpoints": false, "supportsLogPoints": false,
        }})),
    );
    for w in core.engine().warnings() {
        out.event(
            "output",
            Some(json!({"category": "console", "output": format!("warning: {w}\n")})),
        );
    }
    let stop = core.stop();
    let (reason, description) = match &stop.cause {
        StopCause::Signal(_) => ("exception", stop.description.clone()),
        _ => ("pause", None),
    };
    let mut body = json!({"reason": reason, "threadId": stop.tid.0, "allThreadsStopped": true,
        "preserveFocusHint": false});
    if let Some(d) = description {
        body["description"] = json!(d);
        body["text"] = json!(d);
    }
    out.event("stopped", Some(body));
}

impl Debugger {
    /// The core being inspected, if one is.
    pub(crate) fn core(&self) -> Option<&Arc<CoreDebug>> {
        match self.debuggee.as_ref().map(|d| &d.session) {
            Some(Target::Core(c)) => Some(c),
            _ => None,
        }
    }

    /// The core as this adapter's debuggee: read by the same handlers as a live stop.
    fn open_core(&mut self, owner: Arc<CoreDebug>, source_map: SourceMap) {
        self.ids.unbind_all();
        self.handles.invalidate();
        let stop = owner.stop();
        self.debuggee = Some(Debuggee {
            session: Target::Core(owner),
            events: self.never.clone(),
            launched: false,
            stop_on_entry: false,
            started: true,
            source_map,
            focus: Some(stop.tid),
            stacks: HashMap::new(),
            listed: None,
            return_value: None,
            signal: None,
            modules: Vec::new(),
            open_streams: 0,
            flushers: Vec::new(),
            stdin: None,
        });
        self.refresh_modules();
    }

    /// Lets the core go (the process manager forgets it when its last view does).
    fn close_core(&mut self) {
        self.debuggee = None;
        self.handles.invalidate();
    }
}
