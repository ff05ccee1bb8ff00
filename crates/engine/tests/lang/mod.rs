//! Helpers for the Rust and C++ value tests: compile samples with rustc and g++, stop
//! at a marked line, dump variables trees, compare with snapshots and with gdb.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use engine::{ScopeKind, Session, SessionEvent, Value};

use crate::common::{self, Sample};

fn samples(sub: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../samples")
        .join(sub)
}

/// Compiles samples/rust/NAME.rs with `rustc -g -C opt-level=0`.
pub fn compile_rust(name: &str) -> Sample {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(name);
    let source = samples("rust")
        .join(format!("{name}.rs"))
        .canonicalize()
        .expect("sample");
    let out = Command::new("rustc")
        .args(["-g", "-C", "opt-level=0", "--edition", "2021", "-o"])
        .arg(&path)
        .arg(&source)
        .output()
        .expect("running rustc");
    assert!(
        out.status.success(),
        "rustc failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Sample { dir, path, source }
}

/// Compiles samples/cpp/NAME.cpp with `g++ -g -O0`.
pub fn compile_cpp(name: &str) -> Sample {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(name);
    let source = samples("cpp")
        .join(format!("{name}.cpp"))
        .canonicalize()
        .expect("sample");
    let out = Command::new("g++")
        .args(["-g", "-O0", "-std=c++17", "-o"])
        .arg(&path)
        .arg(&source)
        .output()
        .expect("running g++");
    assert!(
        out.status.success(),
        "g++ failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Sample { dir, path, source }
}

/// The 1-based line of the sample that contains `marker`.
pub fn line_of(sample: &Sample, marker: &str) -> u32 {
    let text = std::fs::read_to_string(&sample.source).expect("source");
    text.lines()
        .position(|l| l.contains(marker))
        .map(|i| i as u32 + 1)
        .expect("marker")
}

/// Launches the sample and runs to the line containing `marker`.
pub fn stop_at_line(sample: &Sample, marker: &str) -> (Session, engine::Stop) {
    let line = line_of(sample, marker);
    let session = common::launch(sample);
    let st = session
        .set_line_breakpoints(
            &sample.source,
            &[engine::SourceBreakpoint {
                line,
                ..Default::default()
            }],
        )
        .expect("set");
    assert!(st.iter().all(|s| s.verified), "{st:?}");
    session.resume().expect("resume");
    let stop = common::expect_stop(&session);
    (session, stop)
}

/// Hides addresses (heap and stack addresses differ between machines).
pub fn mask(text: &str) -> String {
    let mut out = String::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'0' && b.get(i + 1) == Some(&b'x') {
            let mut j = i + 2;
            while j < b.len() && b[j].is_ascii_hexdigit() {
                j += 1;
            }
            if j - i - 2 >= 5 {
                out.push_str("0x…");
                i = j;
                continue;
            }
        }
        let ch = text[i..].chars().next().expect("char");
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

fn walk(session: &Session, v: &Value, indent: usize, depth: u32, out: &mut Vec<String>) {
    let mut line = format!(
        "{}{}: {} = {}",
        "  ".repeat(indent),
        v.name,
        v.type_name,
        mask(&v.rendered)
    );
    if let Some(n) = v.child_count {
        line.push_str(&format!(
            " ({n}{})",
            if v.indexed { " indexed" } else { "" }
        ));
    }
    out.push(line);
    if let (Some(r), true) = (v.children, depth > 0) {
        let children = session.children(r, 0, Some(12)).expect("children");
        for c in &children {
            walk(session, c, indent + 1, depth - 1, out);
        }
    }
}

/// The locals and arguments of frame 0 as an indented tree, `depth` levels deep.
pub fn dump_tree(session: &Session, tid: tracer::Tid, depth: u32) -> String {
    let frames = session.stack_trace(tid).expect("stack");
    let f = &frames[0];
    let mut out = vec![format!("frame {}", f.function.clone().unwrap_or_default())];
    let mut vars = session.variables(f.id, ScopeKind::Arguments).expect("args");
    vars.extend(session.variables(f.id, ScopeKind::Locals).expect("locals"));
    for v in &vars {
        walk(session, v, 0, depth, &mut out);
    }
    out.join("\n") + "\n"
}

/// Compares `actual` with tests/snapshots/NAME.txt; `UPDATE_SNAPSHOTS=1` rewrites it.
pub fn snapshot(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(format!("{name}.txt"));
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() || !path.exists() {
        std::fs::write(&path, actual).expect("write snapshot");
        return;
    }
    let expected = std::fs::read_to_string(&path).expect("snapshot");
    if expected != actual {
        let diff: Vec<String> = expected
            .lines()
            .zip(actual.lines())
            .filter(|(a, b)| a != b)
            .take(20)
            .map(|(a, b)| format!("- {a}\n+ {b}"))
            .collect();
        panic!(
            "snapshot {name} differs (UPDATE_SNAPSHOTS=1 rewrites it):\n{}\n(expected {} lines, got {})",
            diff.join("\n"),
            expected.lines().count(),
            actual.lines().count()
        );
    }
}

/// Waits for the program to end.
pub fn finish(session: &Session) {
    session.resume().ok();
    loop {
        match session.wait_stop(common::STOP) {
            Ok(SessionEvent::Exited { .. }) | Err(_) => return,
            Ok(SessionEvent::Stopped(_)) => {
                session.resume().ok();
            }
            Ok(_) => {}
        }
    }
}

/// The gdb side of the Rust differential test: every argument and local of frame 0
/// flattened to `path = leaf` lines, through the Rust pretty printers where they apply.
/// References and `Box` are followed (the engine shows the pointee in place); raw
/// pointers are leaves; an enum adds `path@ = Variant`; chars become `U+hex`.
pub const GDB_RUST_FLAT: &str = r#"
import gdb

def rust_debug_str(lazy):
    v = lazy.value()
    t = v.type.strip_typedefs()
    if t.code == gdb.TYPE_CODE_ARRAY:
        lo, hi = t.range()
        data = bytes(int(v[i]) & 0xff for i in range(lo, hi + 1))
    else:
        data = lazy.address and gdb.selected_inferior().read_memory(lazy.address, lazy.length).tobytes() or b""
    text = data.decode("utf-8", "replace")
    out = []
    for ch in text:
        if ch == "\t": out.append("\\t")
        elif ch == "\n": out.append("\\n")
        elif ch == "\r": out.append("\\r")
        elif ch == "\\": out.append("\\\\")
        elif ch == '"': out.append('\\"')
        elif ch == "\0": out.append("\\0")
        elif ord(ch) < 0x20 or ord(ch) == 0x7f: out.append("\\u{%x}" % ord(ch))
        else: out.append(ch)
    return '"' + "".join(out) + '"'

def leafstr(v):
    t = v.type.strip_typedefs()
    if t.code == gdb.TYPE_CODE_CHAR:
        return "U+%x" % int(v)
    if t.code == gdb.TYPE_CODE_FLT:
        if gdb.selected_frame().language() == "rust":
            return repr(float(v))
        return str(v)
    return str(v)

def flat(path, v, out, depth=0):
    if depth > 6:
        return
    t = v.type.strip_typedefs()
    pp = gdb.default_visualizer(v)
    if pp is not None:
        hint = pp.display_hint() if hasattr(pp, "display_hint") else None
        if hint == "string":
            out.append("%s = %s" % (path, str(v)))
            return
        ts = pp.to_string() if hasattr(pp, "to_string") else None
        if isinstance(ts, str) and "use count" in ts:
            import re
            m = re.search(r"use count (\d+), weak count (-?\d+)", ts)
            if m:
                out.append("%s.use_count = %s" % (path, m.group(1)))
                out.append("%s.weak_count = %s" % (path, m.group(2)))
        if not hasattr(pp, "children"):
            s = pp.to_string()
            if hasattr(s, "value") and not isinstance(s, gdb.Value):
                s = rust_debug_str(s)
            out.append("%s = %s" % (path, str(s)))
            return
        kids = list(pp.children())
        if hint == "map":
            for i in range(0, len(kids) - 1, 2):
                flat("%s[%s]" % (path, leafstr(kids[i][1])), kids[i + 1][1], out, depth + 1)
        else:
            for name, c in kids:
                if name == "get()":
                    flat(path, c, out, depth + 1)
                    continue
                flat(path + (name if name.startswith("[") else "." + name), c, out, depth + 1)
        return
    if t.code == gdb.TYPE_CODE_PTR:
        # gdb loses the names of Rust pointer types (`&T` reads `*mut T`): follow
        # every non-null pointer, as the engine shows references, Box and a raw
        # pointer's pointee.
        if int(v) == 0:
            out.append("%s = 0x0" % path)
            return
        try:
            flat(path, v.dereference(), out, depth + 1)
        except gdb.error:
            out.append("%s = <error>" % path)
        return
    if t.code == gdb.TYPE_CODE_ARRAY:
        lo, hi = t.range()
        for i in range(lo, hi + 1):
            flat("%s[%d]" % (path, i), v[i], out, depth + 1)
        return
    if t.code in (gdb.TYPE_CODE_STRUCT, gdb.TYPE_CODE_UNION):
        fields = t.fields()
        if len(fields) == 2 and fields[0].name is None:
            variant = fields[1].name
            inner = v[fields[1]]
            if not [f for f in inner.type.strip_typedefs().fields() if f.name]:
                out.append("%s = %s" % (path, variant))
                return
            out.append("%s@ = %s" % (path, variant))
            for f in inner.type.strip_typedefs().fields():
                if f.name and not f.artificial:
                    flat(path + "." + f.name.lstrip("_"), inner[f], out, depth + 1)
            return
        if len(fields) == 1 and fields[0].name == "inner":
            flat(path, v["inner"], out, depth + 1)
            return
        for f in fields:
            if f.name is None or f.name in ("_marker", "phantom") or f.name.startswith("_vptr"):
                continue
            if f.is_base_class:
                flat(path + ".<" + f.name + ">", v[f], out, depth + 1)
                continue
            name = f.name[2:] if f.name.startswith("__") and f.name[2:].isdigit() else f.name
            flat(path + "." + name, v[f], out, depth + 1)
        if not fields:
            out.append("%s = %s" % (path, str(v).split("::")[-1]))
        return
    if t.code == gdb.TYPE_CODE_ENUM:
        out.append("%s = %s" % (path, str(v).split("::")[-1]))
        return
    out.append("%s = %s" % (path, leafstr(v)))

def dump():
    f = gdb.selected_frame()
    b = f.block()
    seen = set()
    while b is not None:
        for s in b:
            if not (s.is_variable or s.is_argument) or s.name in seen:
                continue
            seen.add(s.name)
            out = []
            try:
                flat(s.name, s.value(f), out)
            except Exception as e:
                out.append("%s = <error %s>" % (s.name, e))
            for line in out:
                print("LEAF " + line)
        if b.function is not None:
            break
        b = b.superblock
    print("END")

class Flat(gdb.Command):
    def __init__(self):
        super().__init__("flatlocals", gdb.COMMAND_USER)
    def invoke(self, arg, from_tty):
        dump()
Flat()
"#;

/// Runs gdb (with the Rust pretty printers; libstdc++'s load with the library) to
/// `file:line` and returns its leaves.
pub fn gdb_rust_leaves(program: &Path, location: &str, dir: &Path) -> Vec<String> {
    let script = dir.join("flat.py");
    std::fs::write(&script, GDB_RUST_FLAT).expect("write script");
    let sysroot = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .expect("rustc --print sysroot");
    let sysroot = String::from_utf8_lossy(&sysroot.stdout).trim().to_string();
    let printers = Path::new(&sysroot).join("lib/rustlib/etc/gdb_load_rust_pretty_printers.py");
    let cmds = dir.join("flat.gdb");
    let mut text = String::from("set pagination off\nset confirm off\nset debuginfod enabled off\nset startup-with-shell off\nunset environment LINES\nunset environment COLUMNS\n");
    if printers.exists() {
        text.push_str(&format!("source {}\n", printers.display()));
    }
    text.push_str(&format!(
        "source {}\nbreak {location}\nrun\nflatlocals\nkill\n",
        script.display()
    ));
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
        .filter_map(|l| l.strip_prefix("LEAF ").map(str::to_string))
        .collect()
}

/// Decodes a Rust `char` literal as `Debug` prints it into `U+hex`.
pub fn char_code(lit: &str) -> Option<String> {
    let inner = lit.strip_prefix('\'')?.strip_suffix('\'')?;
    let c = match inner {
        "\\n" => '\n',
        "\\t" => '\t',
        "\\r" => '\r',
        "\\0" => '\0',
        "\\'" => '\'',
        "\\\\" => '\\',
        "\\\"" => '"',
        s if s.starts_with("\\u{") => char::from_u32(
            u32::from_str_radix(s.trim_start_matches("\\u{").trim_end_matches('}'), 16).ok()?,
        )?,
        s => {
            let mut chars = s.chars();
            let c = chars.next()?;
            if chars.next().is_some() {
                return None;
            }
            c
        }
    };
    Some(format!("U+{:x}", c as u32))
}

/// The short name a `Debug` rendering starts with for a value of this type: the
/// pointee's for references and `Box`, the last path segment without generics.
fn debug_short(type_name: &str) -> String {
    let mut t = type_name
        .trim_start_matches("&mut ")
        .trim_start_matches('&')
        .to_string();
    if let Some(rest) = t.strip_prefix("alloc::boxed::Box<") {
        t = rest.split(',').next().unwrap_or(rest).to_string();
    }
    let base = t.split('<').next().unwrap_or(&t).to_string();
    base.rsplit("::").next().unwrap_or(&base).to_string()
}

fn engine_flat(session: &Session, path: &str, v: &Value, out: &mut Vec<String>, depth: u32) {
    let leaf_text = if v.type_name == "char" {
        char_code(&v.rendered).unwrap_or_else(|| v.rendered.clone())
    } else {
        v.rendered.clone()
    };
    let is_string = v.rendered.starts_with('"')
        && !matches!(debug_short(&v.type_name).as_str(), "Rc" | "Arc" | "Weak");
    let Some(r) = v.children.filter(|_| !is_string && depth < 7) else {
        out.push(format!("{path} = {leaf_text}"));
        return;
    };
    // An enum's rendering starts with its active variant's name.
    let ident: String = v
        .rendered
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    let short = debug_short(&v.type_name);
    let wrapper = matches!(
        short.as_str(),
        "Rc" | "Arc" | "Weak" | "Ref" | "RefMut" | "Cell" | "RefCell"
    );
    if !ident.is_empty()
        && ident.chars().next().is_some_and(char::is_uppercase)
        && ident != short
        && !wrapper
        && v.rendered[ident.len()..].starts_with(['(', ' '])
    {
        out.push(format!("{path}@ = {ident}"));
    }
    let children = session.children(r, 0, Some(64)).expect("children");
    for c in children.iter().filter(|c| !c.name.starts_with("_vptr")) {
        let p = if c.name.starts_with('[') {
            format!("{path}{}", c.name)
        } else if c.name.starts_with('*') {
            // A raw pointer's pointee stands in the pointer's place, as gdb's side
            // follows every pointer.
            path.to_string()
        } else {
            format!("{path}.{}", c.name)
        };
        engine_flat(session, &p, c, out, depth + 1);
    }
}

/// The engine's leaves of frame 0, in the gdb script's format.
pub fn engine_leaves(session: &Session, tid: tracer::Tid) -> Vec<String> {
    let frames = session.stack_trace(tid).expect("stack");
    let f = &frames[0];
    let mut vars = session.variables(f.id, ScopeKind::Locals).expect("locals");
    vars.extend(session.variables(f.id, ScopeKind::Arguments).expect("args"));
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for v in &vars {
        if v.name.ends_with("(shadowed)") || !seen.insert(v.name.clone()) {
            continue;
        }
        engine_flat(session, &v.name, v, &mut out, 0);
    }
    out
}
