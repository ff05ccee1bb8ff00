//! A core file as a DAP session (`attach` or `launch` with `coreFile`, the lldb-dap and
//! gdb convention): one `stopped` event, every thread of the core, stack traces, scopes,
//! variables, evaluate, readMemory, modules and exceptionInfo, read from an
//! `engine::CoreSession`. Requests that would run or change the program answer an error,
//! and a `capabilities` event says so.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use engine::{CoreSession, FrameId, ScopeKind, SourceMap, StopCause, ValueRef};
use procman::CoreDebug;
use serde_json::{json, Value};
use wire::dap;

use crate::server::{Adapter, Ending, Flow};

/// The core being inspected.
pub(crate) struct CoreDebuggee {
    /// Owned by the process manager, so the language server shows the core's values too.
    owner: Arc<CoreDebug>,
    /// Build-time → local source paths (`sourceMap`, and guesses as for a launch).
    source_map: SourceMap,
    /// Variables references: a scope of a frame, or a value's children.
    vars: HashMap<i64, CoreVar>,
    next_var: i64,
}

enum CoreVar {
    Scope(FrameId, ScopeKind),
    Value(ValueRef),
}

impl CoreDebuggee {
    fn session(&self) -> &CoreSession {
        self.owner.engine()
    }

    fn var(&mut self, v: CoreVar) -> i64 {
        self.next_var += 1;
        self.vars.insert(self.next_var, v);
        self.next_var
    }
}

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
    if !opening && a.debugger().core.is_none() {
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
    let core = a.debugger().core.as_mut()?;
    let answer = match command {
        "disconnect" | "terminate" => {
            a.debugger().core = None;
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
        "threads" => Ok(
            json!({"threads": core.session().threads().iter().map(|t| json!({
            "id": t.0, "name": format!("thread {}", t.0)})).collect::<Vec<_>>()}),
        ),
        "stackTrace" => stack_trace(core, &args),
        "scopes" => scopes(core, &args),
        "variables" => variables(core, &args),
        "evaluate" => evaluate(core, &args),
        "readMemory" => read_memory(core, &args),
        "disassemble" => disassemble(core, &args),
        "modules" => {
            let modules: Vec<Value> = core
                .session()
                .modules()
                .iter()
                .map(|m| {
                    json!({"id": m.path.display().to_string(),
                    "name": m.path.file_name().map(|n| n.to_string_lossy().into_owned()),
                    "path": m.path.display().to_string(), "isUserCode": m.main,
                    "addressRange": format!("{:#x}-{:#x}", m.start, m.end)})
                })
                .collect();
            Ok(json!({"modules": modules, "totalModules": modules.len()}))
        }
        "exceptionInfo" => match core.session().exception_info() {
            Some(info) => Ok(
                json!({"exceptionId": info.name, "description": info.description,
                "breakMode": "always", "details": {"message": info.description}}),
            ),
            None => Err("the core records no signal".to_string()),
        },
        _ => Err(format!("{command}: not supported on a core file")),
    };
    match answer {
        Ok(body) => out.success(seq, command, body),
        Err(e) => out.error(seq, command, &e),
    }
    Some(Flow::Continue)
}

fn open(a: &mut Adapter, args: &Value) -> Result<(), String> {
    if a.debugger().debuggee.is_some() || a.debugger().core.is_some() {
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
    a.debugger().core = Some(CoreDebuggee {
        owner,
        source_map,
        vars: HashMap::new(),
        next_var: 0,
    });
    Ok(())
}

/// After the response: the capabilities of a core session, then its one stop.
fn after_open(a: &mut Adapter) {
    let out = a.out.clone();
    let Some(core) = a.debugger().core.as_ref() else {
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
    for w in core.session().warnings() {
        out.event(
            "output",
            Some(json!({"category": "console", "output": format!("warning: {w}\n")})),
        );
    }
    let stop = core.session().stop();
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

fn int(args: &Value, key: &str) -> Result<i64, String> {
    args.get(key)
        .and_then(Value::as_i64)
        .ok_or_else(|| format!("{key} is required"))
}

fn stack_trace(core: &mut CoreDebuggee, args: &Value) -> Result<Value, String> {
    let tid = procman::tracer::Tid(int(args, "threadId")? as i32);
    let frames = core.session().stack_trace(tid).map_err(|e| e.to_string())?;
    let start = args.get("startFrame").and_then(Value::as_u64).unwrap_or(0) as usize;
    let levels = args
        .get("levels")
        .and_then(Value::as_u64)
        .filter(|l| *l > 0)
        .map_or(usize::MAX, |l| l as usize);
    let out: Vec<Value> = frames
        .iter()
        .skip(start)
        .take(levels)
        .map(|f| {
            let line = f.line.map_or(0, |l| i64::from(l.get()));
            let mut v = json!({"id": f.id.0, "name": f.function.clone().unwrap_or_else(|| format!("{:#x}", f.pc.0)),
                "line": line, "column": if line > 0 { f.column.map_or(1, |c| i64::from(c.get())) } else { 0 },
                "instructionPointerReference": format!("{:#x}", f.pc.0)});
            if let Some(file) = &f.file {
                let file = core.source_map.to_local(file);
                v["source"] = json!({"name": file.file_name().map(|n| n.to_string_lossy().into_owned()),
                    "path": file.display().to_string()});
            }
            if let Some(m) = &f.module {
                v["moduleId"] = json!(m);
            }
            if f.inlined {
                v["presentationHint"] = json!("normal");
            }
            v
        })
        .collect();
    Ok(json!({"stackFrames": out, "totalFrames": frames.len()}))
}

fn scopes(core: &mut CoreDebuggee, args: &Value) -> Result<Value, String> {
    let frame = FrameId(int(args, "frameId")? as u64);
    let mut scopes = Vec::new();
    for (name, kind, hint) in [
        ("Arguments", ScopeKind::Arguments, "arguments"),
        ("Locals", ScopeKind::Locals, "locals"),
        ("Registers", ScopeKind::Registers, "registers"),
    ] {
        let r = core.var(CoreVar::Scope(frame, kind));
        scopes.push(
            json!({"name": name, "presentationHint": hint, "variablesReference": r,
            "expensive": false}),
        );
    }
    Ok(json!({"scopes": scopes}))
}

fn value_json(core: &mut CoreDebuggee, v: engine::Value) -> Value {
    let r = v.children.map_or(0, |c| core.var(CoreVar::Value(c)));
    let mut out = json!({"name": v.name, "value": v.rendered, "type": v.type_name,
        "variablesReference": r});
    if let Some(n) = v.child_count.filter(|_| v.indexed) {
        out["indexedVariables"] = json!(n);
    }
    if let Some(a) = v.address {
        out["memoryReference"] = json!(format!("{a:#x}"));
    }
    out
}

fn variables(core: &mut CoreDebuggee, args: &Value) -> Result<Value, String> {
    let r = int(args, "variablesReference")?;
    let values = match core.vars.get(&r) {
        Some(CoreVar::Scope(frame, kind)) => core.session().variables(*frame, *kind),
        Some(CoreVar::Value(v)) => {
            let start = args.get("start").and_then(Value::as_u64).unwrap_or(0);
            let count = args.get("count").and_then(Value::as_u64).filter(|c| *c > 0);
            core.session().children(*v, start, count)
        }
        None => return Err(format!("unknown variables reference {r}")),
    }
    .map_err(|e| e.to_string())?;
    let out: Vec<Value> = values.into_iter().map(|v| value_json(core, v)).collect();
    Ok(json!({"variables": out}))
}

fn evaluate(core: &mut CoreDebuggee, args: &Value) -> Result<Value, String> {
    let expression = args
        .get("expression")
        .and_then(Value::as_str)
        .ok_or("expression is required")?;
    let frame = match args.get("frameId").and_then(Value::as_i64) {
        Some(f) => FrameId(f as u64),
        None => {
            let stop = core.session().stop();
            let frames = core
                .session()
                .stack_trace(stop.tid)
                .map_err(|e| e.to_string())?;
            frames.first().ok_or("no frame to evaluate in")?.id
        }
    };
    let v = core
        .session()
        .evaluate(frame, expression)
        .map_err(|e| e.to_string())?;
    let mut body = value_json(core, v);
    if let Some(o) = body.as_object_mut() {
        let value = o.remove("value").unwrap_or(Value::Null);
        o.remove("name");
        o.insert("result".into(), value);
    }
    Ok(body)
}

fn read_memory(core: &mut CoreDebuggee, args: &Value) -> Result<Value, String> {
    let reference = args
        .get("memoryReference")
        .and_then(Value::as_str)
        .ok_or("memoryReference is required")?;
    let base = super::parse_address(reference).map_err(|f| f.0)?;
    let offset = args.get("offset").and_then(Value::as_i64).unwrap_or(0);
    let count = int(args, "count")?.clamp(0, 16 << 20) as usize;
    let addr = base.wrapping_add_signed(offset);
    let bytes = core
        .session()
        .read_memory(addr, count)
        .map_err(|e| e.to_string())?;
    let mut body = json!({"address": format!("{addr:#x}")});
    if bytes.len() < count {
        body["unreadableBytes"] = json!(count - bytes.len());
    }
    use base64::Engine as _;
    body["data"] = json!(base64::engine::general_purpose::STANDARD.encode(&bytes));
    Ok(body)
}

fn disassemble(core: &mut CoreDebuggee, args: &Value) -> Result<Value, String> {
    let reference = args
        .get("memoryReference")
        .and_then(Value::as_str)
        .ok_or("memoryReference is required")?;
    let base = super::parse_address(reference).map_err(|f| f.0)?;
    let addr = base.wrapping_add_signed(args.get("offset").and_then(Value::as_i64).unwrap_or(0));
    let count = usize::try_from(int(args, "instructionCount")?)
        .map_err(|_| "instructionCount must not be negative".to_string())?;
    let offset = args
        .get("instructionOffset")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let instructions = core
        .session()
        .disassemble(addr, offset, count)
        .map_err(|e| e.to_string())?;
    let out: Vec<Value> = instructions
        .into_iter()
        .map(|i| {
            let mut v = json!({"address": format!("{:#x}", i.address),
                "instruction": if i.invalid { "??".to_string() } else { i.text }});
            if !i.bytes.is_empty() {
                v["instructionBytes"] = json!(i
                    .bytes
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect::<Vec<_>>()
                    .join(" "));
            }
            if let Some(s) = i.symbol {
                v["symbol"] = json!(s);
            }
            if let Some(l) = i.line {
                v["line"] = json!(l.get());
            }
            if i.invalid {
                v["presentationHint"] = json!("invalid");
            }
            v
        })
        .collect();
    Ok(json!({"instructions": out}))
}
