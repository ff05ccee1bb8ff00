//! The debug formats compilers and linkers write besides plain DWARF (issue #27): split
//! DWARF (`-gsplit-dwarf`, `.dwo` files and a `.dwp` package, DWARF 4 and 5), compressed
//! sections (zlib, zstd), `gdb-add-index`'s `.gdb_index` and clang's `.debug_names`.
//! One two-unit C++ sample (samples/cpp/formats) is built each way and debugged through
//! the real `tandem dap`: function and FILE:LINE breakpoints, frames, locals and values
//! must equal the plain build's, and the plain build's equal gdb's.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};
use support::dap::{line_of, sample_path, scratch_dir, value, DapClient};
use support::{Peer, Protocol};

const SOURCES: [&str; 2] = ["shapes.cpp", "main.cpp"];

fn source(name: &str) -> PathBuf {
    sample_path(&format!("cpp/formats/{name}"))
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Compiles each unit to an object in a fresh directory (the compiler's working
/// directory, so a `.dwo` is named relative to it) and links them into `prog`.
fn build(tag: &str, compiler: &str, flags: &[&str], link_flags: &[&str]) -> PathBuf {
    let dir = scratch_dir(&format!("formats-{tag}"));
    let mut objects = Vec::new();
    for s in SOURCES {
        let object = Path::new(s).with_extension("o");
        run(Command::new(compiler)
            .current_dir(&dir)
            .args(["-O0", "-c"])
            .args(flags)
            .arg(source(s))
            .arg("-o")
            .arg(&object));
        objects.push(object);
    }
    run(Command::new(compiler)
        .current_dir(&dir)
        .args(link_flags)
        .args(&objects)
        .args(["-o", "prog"]));
    dir.join("prog")
}

fn has_section(program: &Path, name: &str) -> bool {
    sections(program).iter().any(|(n, _)| n == name)
}

/// `readelf -S -W`: each section's name and flags.
fn sections(program: &Path) -> Vec<(String, String)> {
    let out = Command::new("readelf")
        .args(["-S", "-W"])
        .arg(program)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .filter_map(|l| {
            let rest = l.split_once("] ")?.1;
            let words: Vec<&str> = rest.split_whitespace().collect();
            // Name Type Address Off Size ES Flg Lk Inf Al: flags are absent when empty.
            let name = words.first()?.to_string();
            let flags = if words.len() >= 10 { words[6] } else { "" };
            Some((name, flags.to_string()))
        })
        .collect()
}

/// What a session shows at the sample's stops.
#[derive(Debug, PartialEq)]
struct Seen {
    /// At the function breakpoint `shapes::area`: frames (name, line) and arguments.
    entry_frames: Vec<(String, i64)>,
    entry_args: Vec<(String, String)>,
    /// At `area returns` (shapes.cpp): locals and expressions.
    area_locals: Vec<(String, String)>,
    area_exprs: Vec<String>,
    /// At `main prints` (main.cpp): frames and expressions.
    main_frames: Vec<(String, i64)>,
    main_exprs: Vec<String>,
}

const AREA_EXPRS: [&str; 5] = ["base", "extra", "r.width", "r.scale", "tagged.value"];
const MAIN_EXPRS: [&str; 4] = ["t", "label.value", "counter", "rects.size()"];

fn frames_of(frames: &[Value]) -> Vec<(String, i64)> {
    frames
        .iter()
        .filter(|f| f["source"]["path"].is_string() && f["line"].as_i64().unwrap_or(0) > 0)
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                f["line"].as_i64().unwrap(),
            )
        })
        .collect()
}

fn pairs(vars: &[Value]) -> Vec<(String, String)> {
    vars.iter()
        .map(|v| (v["name"].as_str().unwrap().to_string(), value(v)))
        .collect()
}

fn line_bp(c: &mut DapClient, file: &str, marker: &str) {
    let path = source(file);
    let line = line_of(&path, marker);
    let body = c.ok(
        "setBreakpoints",
        json!({"source": {"path": path}, "breakpoints": [{"line": line}]}),
    );
    assert_eq!(body["breakpoints"][0]["verified"], true, "{body}");
}

fn stopped_frame(c: &mut DapClient) -> (i64, Vec<Value>) {
    let stop = c.event("stopped");
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    let frames = c.frames(tid);
    (tid, frames)
}

fn exprs(c: &mut DapClient, frame: i64, list: &[&str]) -> Vec<String> {
    list.iter()
        .map(|e| {
            let r = c.evaluate(frame, e);
            r["result"].as_str().unwrap().to_string()
        })
        .collect()
}

fn start(program: &Path) -> DapClient {
    // A split program is indexed in the background, and its index cached: not in ~/.cache.
    let cache = scratch_dir("formats-cache").display().to_string();
    let mut c = DapClient::with_peer(Peer::spawn(
        Protocol::Dap,
        &[],
        &[("XDG_CACHE_HOME", &cache)],
    ));
    c.initialize();
    c.ok("launch", json!({"program": program}));
    c
}

/// Debugs `program` through its three stops; returns what it showed and tandem's log.
fn observe(program: &Path) -> (Seen, String) {
    let mut c = start(program);
    let body = c.ok(
        "setFunctionBreakpoints",
        json!({"breakpoints": [{"name": "shapes::area"}]}),
    );
    assert_eq!(body["breakpoints"][0]["verified"], true, "{body}");
    line_bp(&mut c, "shapes.cpp", "area returns");
    line_bp(&mut c, "main.cpp", "main prints");
    c.ok("configurationDone", json!({}));

    let (tid, frames) = stopped_frame(&mut c);
    let frame = frames[0]["id"].as_i64().unwrap();
    let entry_frames = frames_of(&frames);
    let entry_args = pairs(&c.scope_vars(frame, "Arguments"));

    c.ok("continue", json!({"threadId": tid}));
    let (tid, frames) = stopped_frame(&mut c);
    let frame = frames[0]["id"].as_i64().unwrap();
    let area_locals = pairs(&c.scope_vars(frame, "Locals"));
    let area_exprs = exprs(&mut c, frame, &AREA_EXPRS);

    // Past the other calls of area, to main.
    c.ok("setFunctionBreakpoints", json!({"breakpoints": []}));
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": source("shapes.cpp")}, "breakpoints": []}),
    );
    c.ok("continue", json!({"threadId": tid}));
    let (_, frames) = stopped_frame(&mut c);
    let frame = frames[0]["id"].as_i64().unwrap();
    let main_frames = frames_of(&frames);
    let main_exprs = exprs(&mut c, frame, &MAIN_EXPRS);

    let r = c.request("disconnect", json!({}));
    assert_eq!(r["success"], true, "{r}");
    c.peer.wait_exit(support::PATIENCE);
    let log = c.peer.stderr();
    (
        Seen {
            entry_frames,
            entry_args,
            area_locals,
            area_exprs,
            main_frames,
            main_exprs,
        },
        log,
    )
}

/// gdb's frames and values at the same stops.
fn gdb_seen(program: &Path) -> (Vec<(String, i64)>, Vec<String>, Vec<String>) {
    let area = line_of(&source("shapes.cpp"), "area returns");
    let main = line_of(&source("main.cpp"), "main prints");
    let mut cmds: Vec<String> = vec![
        "set pagination off".into(),
        "set width 0".into(),
        "break shapes::area".into(),
        "run".into(),
        "echo BT\\n".into(),
        "bt".into(),
        "echo ENDBT\\n".into(),
        "delete".into(),
        format!("break shapes.cpp:{area}"),
        "continue".into(),
    ];
    for e in AREA_EXPRS {
        cmds.extend([
            "echo EXPR\\n".into(),
            format!("output {e}"),
            "echo \\n".into(),
        ]);
    }
    cmds.extend([
        "delete".into(),
        format!("break main.cpp:{main}"),
        "continue".into(),
    ]);
    for e in MAIN_EXPRS {
        cmds.extend([
            "echo EXPR\\n".into(),
            format!("output {e}"),
            "echo \\n".into(),
        ]);
    }
    let (out, err) = support::gdb::batch(program, &cmds);
    let (_, after) = out
        .split_once("BT\n")
        .unwrap_or_else(|| panic!("gdb: {out}{err}"));
    let (bt, rest) = after.split_once("ENDBT\n").unwrap();
    let mut frames = Vec::new();
    for line in bt.lines() {
        let Some(frame) = line.strip_prefix('#') else {
            continue;
        };
        let rest = frame.split_once(' ').unwrap().1.trim_start();
        let rest = rest.split_once(" in ").map_or(rest, |(_, r)| r);
        let Some((_, at)) = rest.rsplit_once(" at ") else {
            continue;
        };
        let name = rest.split(" (").next().unwrap().to_string();
        frames.push((name, at.rsplit(':').next().unwrap().trim().parse().unwrap()));
    }
    let values: Vec<String> = rest
        .split("EXPR\n")
        .skip(1)
        .map(|p| p.lines().next().unwrap_or_default().to_string())
        .collect();
    let (area, main) = values.split_at(AREA_EXPRS.len());
    (frames, area.to_vec(), main.to_vec())
}

fn plain() -> &'static (PathBuf, Seen) {
    static PLAIN: std::sync::OnceLock<(PathBuf, Seen)> = std::sync::OnceLock::new();
    PLAIN.get_or_init(|| {
        let program = build("plain", "g++", &["-g"], &[]);
        let (seen, _) = observe(&program);
        (program, seen)
    })
}

/// What `program` shows equals the plain build's.
fn same_as_plain(program: &Path) -> String {
    let (seen, log) = observe(program);
    assert_eq!(
        seen,
        plain().1,
        "{} against the plain build",
        program.display()
    );
    log
}

#[test]
fn the_plain_build_matches_gdb() {
    let (program, seen) = plain();
    let (frames, area, main) = gdb_seen(program);
    assert_eq!(
        seen.entry_frames, frames,
        "frames at shapes::area against gdb's"
    );
    assert_eq!(seen.area_exprs, area, "{AREA_EXPRS:?} against gdb's");
    assert_eq!(seen.main_exprs, main, "{MAIN_EXPRS:?} against gdb's");
    for (name, value) in &seen.area_locals {
        let at = AREA_EXPRS.iter().position(|e| e == name);
        if let Some(at) = at {
            assert_eq!(value, &area[at], "local {name} against gdb's");
        }
    }
    assert!(seen
        .entry_args
        .iter()
        .any(|(n, v)| n == "extra" && v == "1"));
}

/// `-gsplit-dwarf` with the given DWARF version: the objects' DIEs are in `.dwo` files
/// beside them; the executable has skeletons.
fn split_build(tag: &str, version: &str) -> PathBuf {
    let program = build(tag, "g++", &["-g", version, "-gsplit-dwarf"], &[]);
    let dir = program.parent().unwrap();
    for s in SOURCES {
        assert!(dir.join(Path::new(s).with_extension("dwo")).is_file());
    }
    program
}

#[test]
fn split_dwarf_5_dwo_files_match_the_plain_build() {
    same_as_plain(&split_build("split5", "-gdwarf-5"));
}

#[test]
fn split_dwarf_4_gnu_dwo_files_match_the_plain_build() {
    same_as_plain(&split_build("split4", "-gdwarf-4"));
}

/// The `.dwo` files packed into `prog.dwp` beside the executable, and removed, so only
/// the package can answer. binutils' `dwp` 2.40 packs DWARF 4 but crashes on DWARF 5,
/// which LLVM's `llvm-dwp-19` packs.
fn packaged(tag: &str, version: &str) -> PathBuf {
    let program = split_build(tag, version);
    let dir = program.parent().unwrap();
    let packer = if version == "-gdwarf-5" {
        "llvm-dwp-19"
    } else {
        "dwp"
    };
    run(Command::new(packer)
        .current_dir(dir)
        .args(["-e", "prog", "-o", "prog.dwp"]));
    for s in SOURCES {
        std::fs::remove_file(dir.join(Path::new(s).with_extension("dwo"))).unwrap();
    }
    program
}

#[test]
fn a_dwp_package_matches_the_plain_build() {
    same_as_plain(&packaged("dwp5", "-gdwarf-5"));
}

#[test]
fn a_dwarf_4_dwp_package_matches_the_plain_build() {
    same_as_plain(&packaged("dwp4", "-gdwarf-4"));
}

#[test]
fn dwo_files_are_found_beside_the_executable_when_the_build_directory_moved() {
    let program = split_build("moved", "-gdwarf-5");
    let dir = program.parent().unwrap();
    let moved = dir.with_file_name(format!(
        "{}-elsewhere",
        dir.file_name().unwrap().to_string_lossy()
    ));
    let _ = std::fs::remove_dir_all(&moved);
    std::fs::rename(dir, &moved).unwrap();
    // The compilation directory the skeletons name no longer exists.
    assert!(!dir.exists());
    same_as_plain(&moved.join("prog"));
}

#[test]
fn a_missing_dwo_is_named_and_the_rest_stays_debuggable() {
    let program = split_build("missing", "-gdwarf-5");
    let gone = program.parent().unwrap().join("shapes.dwo");
    std::fs::remove_file(&gone).unwrap();
    let mut c = start(&program);
    let note = loop {
        let e = c.event("output");
        let text = e["body"]["output"].as_str().unwrap().to_string();
        if text.contains("split DWARF") {
            break text;
        }
    };
    assert!(
        note.contains(&gone.display().to_string()),
        "the note names the file: {note}"
    );
    // The unit without its DIEs keeps its line table: a line breakpoint there holds.
    line_bp(&mut c, "shapes.cpp", "area returns");
    line_bp(&mut c, "main.cpp", "main prints");
    c.ok("configurationDone", json!({}));
    let (tid, frames) = stopped_frame(&mut c);
    let top = &frames[0];
    assert_eq!(
        top["line"].as_i64().unwrap(),
        line_of(&source("shapes.cpp"), "area returns"),
        "{top}"
    );
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": source("shapes.cpp")}, "breakpoints": []}),
    );
    c.ok("continue", json!({"threadId": tid}));
    let (_, frames) = stopped_frame(&mut c);
    let frame = frames[0]["id"].as_i64().unwrap();
    // main's unit is whole: its frame and values are the plain build's.
    assert_eq!(frames_of(&frames)[0], plain().1.main_frames[0]);
    assert_eq!(exprs(&mut c, frame, &MAIN_EXPRS), plain().1.main_exprs);
    c.finish();
}

/// Whether every named DWARF section of `program` is SHF_COMPRESSED (readelf's `C`).
fn debug_sections_compressed(program: &Path) -> bool {
    let debug: Vec<(String, String)> = sections(program)
        .into_iter()
        .filter(|(n, _)| n == ".debug_info" || n == ".debug_line" || n == ".debug_str")
        .collect();
    debug.len() == 3 && debug.iter().all(|(_, f)| f.contains('C'))
}

#[test]
fn zlib_compressed_sections_match_the_plain_build() {
    let program = build("gz-zlib", "g++", &["-g", "-gz=zlib"], &["-gz=zlib"]);
    assert!(
        debug_sections_compressed(&program),
        "{:?}",
        sections(&program)
    );
    same_as_plain(&program);
}

#[test]
fn zstd_compressed_sections_match_the_plain_build() {
    // GCC 12 knows -gz=zlib only: objcopy compresses with zstd.
    let program = build("gz-zstd", "g++", &["-g"], &[]);
    run(Command::new("objcopy")
        .arg("--compress-debug-sections=zstd")
        .arg(&program));
    assert!(
        debug_sections_compressed(&program),
        "{:?}",
        sections(&program)
    );
    let ch = Command::new("readelf")
        .args(["-t", "-W"])
        .arg(&program)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&ch.stdout).contains("ZSTD"),
        "readelf -t shows zstd compression"
    );
    same_as_plain(&program);
}

#[test]
fn a_gdb_add_index_build_matches_the_plain_build() {
    let program = build("gdb-index", "g++", &["-g"], &[]);
    run(Command::new("gdb-add-index").arg(&program));
    assert!(has_section(&program, ".gdb_index"));
    same_as_plain(&program);
}

#[test]
fn clang_debug_names_build_matches_gdb() {
    let program = build("clang-names", "clang++-19", &["-g", "-gpubnames"], &[]);
    assert!(has_section(&program, ".debug_names"));
    let (seen, _) = observe(&program);
    let (frames, area, main) = gdb_seen(&program);
    assert_eq!(seen.entry_frames, frames, "frames against gdb's");
    assert_eq!(seen.area_exprs, area, "{AREA_EXPRS:?} against gdb's");
    assert_eq!(seen.main_exprs, main, "{MAIN_EXPRS:?} against gdb's");
    // Another compiler, the same program: what the sample computes is the same.
    assert_eq!(seen.area_exprs, plain().1.area_exprs);
    assert_eq!(seen.main_exprs, plain().1.main_exprs);
}

/// What a clang build shows equals gdb's, and the sample computes what the plain build
/// (GCC) does.
fn clang_matches_gdb(program: &Path) {
    let (seen, _) = observe(program);
    let (frames, area, main) = gdb_seen(program);
    assert_eq!(seen.entry_frames, frames, "frames against gdb's");
    assert_eq!(seen.area_exprs, area, "{AREA_EXPRS:?} against gdb's");
    assert_eq!(seen.main_exprs, main, "{MAIN_EXPRS:?} against gdb's");
    assert_eq!(seen.area_exprs, plain().1.area_exprs);
    assert_eq!(seen.main_exprs, plain().1.main_exprs);
}

#[test]
fn clang_split_dwarf_dwo_files_match_gdb() {
    // clang's -gsplit-dwarf is DWARF 5 with split line tables in each .dwo.
    let program = build("clang-split", "clang++-19", &["-g", "-gsplit-dwarf"], &[]);
    clang_matches_gdb(&program);
}

#[test]
fn clang_split_dwarf_with_type_units_in_a_dwp_matches_the_clang_build() {
    // gdb 13 cannot read this one ("A fatal error internal to GDB"): the oracle is the
    // same sources built by clang with the same flags but without type units, itself
    // checked against gdb above.
    let program = build(
        "clang-split-types",
        "clang++-19",
        &["-g", "-gsplit-dwarf", "-fdebug-types-section"],
        &[],
    );
    let dir = program.parent().unwrap();
    run(Command::new("llvm-dwp-19")
        .current_dir(dir)
        .args(["-e", "prog", "-o", "prog.dwp"]));
    for s in SOURCES {
        std::fs::remove_file(dir.join(Path::new(s).with_extension("dwo"))).unwrap();
    }
    let reference = build(
        "clang-split-ref",
        "clang++-19",
        &["-g", "-gsplit-dwarf"],
        &[],
    );
    assert_eq!(observe(&program).0, observe(&reference).0);
}

#[test]
fn type_units_match_the_plain_build() {
    // DWARF 5 type units in .debug_info, and DWARF 4's .debug_types section.
    same_as_plain(&build(
        "types5",
        "g++",
        &["-g", "-gdwarf-5", "-fdebug-types-section"],
        &[],
    ));
    same_as_plain(&build(
        "types4",
        "g++",
        &["-g", "-gdwarf-4", "-fdebug-types-section"],
        &[],
    ));
}

#[test]
fn type_units_in_dwo_files_match_the_plain_build() {
    same_as_plain(&build(
        "split-types",
        "g++",
        &["-g", "-gdwarf-5", "-gsplit-dwarf", "-fdebug-types-section"],
        &[],
    ));
}

/// What `shapes::total` shows of its `const std::vector<Rect> &` parameter.
const TOTAL_EXPRS: [&str; 4] = ["rects", "rects.size()", "rects[1].width", "rects[0].scale"];

/// tandem's and gdb's values of [`TOTAL_EXPRS`] at the entry of `shapes::total`.
fn total_values(program: &Path) -> (Vec<String>, Vec<String>) {
    let mut c = start(program);
    let body = c.ok(
        "setFunctionBreakpoints",
        json!({"breakpoints": [{"name": "shapes::total"}]}),
    );
    assert_eq!(body["breakpoints"][0]["verified"], true, "{body}");
    c.ok("configurationDone", json!({}));
    let (_, frames) = stopped_frame(&mut c);
    let seen = exprs(&mut c, frames[0]["id"].as_i64().unwrap(), &TOTAL_EXPRS);
    c.ok("disconnect", json!({}));
    let mut cmds: Vec<String> = vec![
        "set pagination off".into(),
        "set width 0".into(),
        "break shapes::total".into(),
        "run".into(),
    ];
    for e in TOTAL_EXPRS {
        cmds.extend([
            "echo EXPR\\n".into(),
            format!("output {e}"),
            "echo \\n".into(),
        ]);
    }
    let (out, _) = support::gdb::batch(program, &cmds);
    let gdb: Vec<String> = out
        .split("EXPR\n")
        .skip(1)
        .map(|p| p.lines().next().unwrap_or_default().to_string())
        .collect();
    (seen, gdb)
}

#[test]
fn a_class_declared_in_one_unit_and_defined_in_another_reads_as_gdb_reads_it() {
    // clang's default (limited) debug info defines std::vector<Rect> in main.cpp's unit
    // only: shapes.cpp's has a declaration, which gdb completes by name.
    let program = build("clang-limited", "clang++-19", &["-g"], &[]);
    let (seen, gdb) = total_values(&program);
    assert_eq!(seen, gdb, "{TOTAL_EXPRS:?} against gdb's");
    assert_eq!(seen[1], "2", "{seen:?}");
    // The same through type units, and through a const reference in a full build.
    let types = build(
        "clang-limited-types",
        "clang++-19",
        &["-g", "-fdebug-types-section"],
        &[],
    );
    assert_eq!(total_values(&types).0, seen, "with type units");
    let (plain_seen, plain_gdb) = total_values(&plain().0);
    assert_eq!(
        plain_seen, plain_gdb,
        "{TOTAL_EXPRS:?} of the GCC build against gdb's"
    );
}
