//! Helpers shared by the engine tests: compile samples, run gdb as the oracle, walk
//! the engine's value trees the way the gdb script walks gdb's.
#![allow(dead_code, unused_imports)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use engine::{ScopeKind, Session, SessionEvent, Value};

/// How long a test waits for one stop.
pub const STOP: Duration = Duration::from_secs(30);

pub use testsupport::{compile, Sample};

/// The C samples, `samples/c`.
pub fn samples_dir() -> PathBuf {
    testsupport::samples().join("c")
}

/// Launches a sample with its output discarded.
pub fn launch(sample: &Sample) -> Session {
    Session::launch(engine::LaunchOptions {
        program: sample.path.clone(),
        stdio: tracer::StdioMode::Null,
        disable_aslr: true,
        // gdb's inferiors run without these (the script unsets them): the same
        // environment gives the same stack addresses and the same stack garbage.
        env: tracer::Env::Merge(vec![("LINES".into(), None), ("COLUMNS".into(), None)]),
        ..Default::default()
    })
    .expect("launch")
}

/// The gdb script: at every stop, each frame up to main with its function and line,
/// then every argument and local (innermost block first, shadowed names skipped) as
/// leaves `path = value`. Pointers are leaves; arrays, structs and unions are walked.
pub const GDB_DUMP: &str = r#"
import gdb

def leaves(path, v, out, depth=0):
    t = v.type.strip_typedefs()
    if depth > 6:
        return
    if v.is_optimized_out:
        out.append("%s = <optimized out>" % path)
        return
    if t.code == gdb.TYPE_CODE_ARRAY and t.target().strip_typedefs().code == gdb.TYPE_CODE_INT and t.target().strip_typedefs().sizeof == 1 and "char" in t.target().strip_typedefs().name:
        out.append("%s = %s" % (path, str(v)))
    elif t.code == gdb.TYPE_CODE_ARRAY:
        lo, hi = t.range()
        for i in range(lo, min(hi, lo + 64) + 1):
            leaves("%s[%d]" % (path, i), v[i], out, depth + 1)
    elif t.code in (gdb.TYPE_CODE_STRUCT, gdb.TYPE_CODE_UNION):
        for f in t.fields():
            name = f.name if f.name else ""
            leaves(path + "." + name if name else path, v[f], out, depth + 1)
    else:
        try:
            out.append("%s = %s" % (path, str(v)))
        except gdb.error as e:
            out.append("%s = <error>" % path)

def dump():
    f = gdb.newest_frame()
    idx = 0
    while f is not None:
        name = f.name() or "??"
        sal = f.find_sal()
        print("FRAME %d %s %d" % (idx, name, sal.line if sal.symtab else 0))
        seen = set()
        try:
            b = f.block()
        except RuntimeError:
            b = None
        while b is not None:
            for s in b:
                if not (s.is_variable or s.is_argument or s.is_constant) or s.name in seen:
                    continue
                seen.add(s.name)
                out = []
                try:
                    leaves(s.name, s.value(f), out)
                except gdb.error:
                    out.append("%s = <error>" % s.name)
                for line in out:
                    print("VAR %d %s" % (idx, line))
            if b.function is not None:
                break
            b = b.superblock
        if name == "main":
            break
        f = f.older()
        idx += 1
    print("END")

class Stop(gdb.Command):
    def __init__(self):
        super().__init__("dumpstop", gdb.COMMAND_USER)
    def invoke(self, arg, from_tty):
        dump()
Stop()
"#;

/// Runs gdb over `program` with breakpoints at `locations`, dumping every stop until
/// the program exits; returns one dump per stop.
pub fn gdb_stops(program: &Path, locations: &[String], dir: &Path) -> Vec<Vec<String>> {
    let script = dir.join("dump.py");
    std::fs::write(&script, GDB_DUMP).expect("write script");
    let mut cmds = dir.join("cmds.gdb").into_os_string();
    cmds.push("");
    let mut text = String::from("set pagination off\nset confirm off\nset debuginfod enabled off\nset startup-with-shell off\nunset environment LINES\nunset environment COLUMNS\n");
    text.push_str(&format!("source {}\n", script.display()));
    for l in locations {
        text.push_str(&format!("break {l}\n"));
    }
    text.push_str("run\n");
    for _ in 0..64 {
        text.push_str("dumpstop\ncontinue\n");
    }
    std::fs::write(&cmds, text).expect("write cmds");
    let out = Command::new("timeout")
        .arg("120")
        .arg("gdb")
        .args(["-nx", "-batch", "-x"])
        .arg(&cmds)
        .arg(program)
        .output()
        .expect("running gdb");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut stops = Vec::new();
    let mut current = Vec::new();
    for line in stdout.lines() {
        if line == "END" {
            stops.push(std::mem::take(&mut current));
        } else if line.starts_with("FRAME ") || line.starts_with("VAR ") {
            current.push(line.to_string());
        }
    }
    stops
}

fn walk(session: &Session, path: &str, v: &Value, out: &mut Vec<String>, idx: usize, depth: u32) {
    // Pointers and char arrays (strings) are leaves, as in the gdb script.
    let is_string = v.type_name.starts_with("char [")
        || v.type_name.starts_with("unsigned char [")
        || v.type_name.starts_with("signed char [");
    let structured = v.children.is_some() && !v.type_name.ends_with('*') && !is_string;
    if structured && depth < 7 {
        let children = session
            .children(v.children.expect("ref"), 0, Some(65))
            .expect("children");
        for c in &children {
            let p = if c.name.starts_with('[') {
                format!("{path}{}", c.name)
            } else if c.name.is_empty() {
                path.to_string()
            } else {
                format!("{path}.{}", c.name)
            };
            walk(session, &p, c, out, idx, depth + 1);
        }
    } else {
        out.push(format!("VAR {idx} {path} = {}", v.rendered));
    }
}

/// The engine's dump of the current stop, in the gdb script's format.
pub fn engine_stop(session: &Session, tid: tracer::Tid) -> Vec<String> {
    let frames = session.stack_trace(tid).expect("stack");
    let mut out = Vec::new();
    for (idx, f) in frames.iter().enumerate() {
        let name = f.function.clone().unwrap_or_else(|| "??".into());
        out.push(format!(
            "FRAME {idx} {name} {}",
            f.line.map_or(0, |l| l.get())
        ));
        let mut seen = std::collections::HashSet::new();
        let mut vars = session.variables(f.id, ScopeKind::Locals).expect("locals");
        vars.extend(session.variables(f.id, ScopeKind::Arguments).expect("args"));
        for v in &vars {
            if v.name.ends_with("(shadowed)") || !seen.insert(v.name.clone()) {
                continue;
            }
            walk(session, &v.name, v, &mut out, idx, 0);
        }
        if name == "main" {
            break;
        }
    }
    out
}

/// Runs the engine over `program` with breakpoints at FILE:LINE `lines`, dumping every
/// stop until the program exits. Returns the dumps and the exit code.
pub fn engine_stops(sample: &Sample, lines: &[u32]) -> (Vec<Vec<String>>, i32) {
    let session = launch(sample);
    let specs: Vec<engine::SourceBreakpoint> = lines
        .iter()
        .map(|l| engine::SourceBreakpoint {
            line: *l,
            ..Default::default()
        })
        .collect();
    let st = session
        .set_line_breakpoints(&sample.source, &specs)
        .expect("set");
    assert!(st.iter().all(|s| s.verified), "{st:?}");
    session.resume().expect("resume");
    let mut stops = Vec::new();
    loop {
        match session.wait_stop(STOP).expect("stop") {
            SessionEvent::Stopped(stop) => {
                stops.push(engine_stop(&session, stop.tid));
                session.resume().expect("resume");
            }
            SessionEvent::Exited { code } => return (stops, code),
            other => panic!("unexpected {other:?}"),
        }
        assert!(stops.len() < 64, "too many stops");
    }
}

/// Sorts each frame's variables so the order of locals does not matter, keeping
/// frames in order.
pub fn normalize(stop: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut vars: Vec<String> = Vec::new();
    for line in stop {
        if line.starts_with("FRAME ") {
            vars.sort();
            out.append(&mut vars);
            out.push(line.clone());
        } else {
            vars.push(line.clone());
        }
    }
    vars.sort();
    out.append(&mut vars);
    out
}

/// Runs gdb to `location`, then each command of `steps` (`next`, `step`, `finish`,
/// `stepi`), printing after each `function line`; returns those positions.
pub fn gdb_steps(program: &Path, location: &str, steps: &[&str], dir: &Path) -> Vec<String> {
    let cmds = dir.join("steps.gdb");
    let mut text = String::from(
        "set pagination off\nset confirm off\nset debuginfod enabled off\nset startup-with-shell off\n",
    );
    text.push_str("define pos\npython f = gdb.selected_frame(); print('POS %s %d' % (f.name(), f.find_sal().line))\nend\n");
    text.push_str(&format!("break {location}\nrun\npos\n"));
    for s in steps {
        text.push_str(&format!("{s}\npos\n"));
    }
    std::fs::write(&cmds, text).expect("write cmds");
    let out = Command::new("timeout")
        .arg("120")
        .arg("gdb")
        .args(["-nx", "-batch", "-x"])
        .arg(&cmds)
        .arg(program)
        .output()
        .expect("running gdb");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("POS ").map(str::to_string))
        .collect()
}

/// `function line` of the top frame.
pub fn position(session: &Session, tid: tracer::Tid) -> String {
    let frames = session.stack_trace(tid).expect("stack");
    let f = &frames[0];
    format!(
        "{} {}",
        f.function.clone().unwrap_or_else(|| "??".into()),
        f.line.map_or(0, |l| l.get())
    )
}

/// Waits for a stop and returns it (panics on exit or timeout).
pub fn expect_stop(session: &Session) -> engine::Stop {
    match session.wait_stop(STOP).expect("stop") {
        SessionEvent::Stopped(stop) => stop,
        other => panic!("expected a stop, got {other:?}"),
    }
}
