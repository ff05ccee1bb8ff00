//! Corrupt DWARF in one unit costs that unit only (issue #27). The two-unit C++ sample of
//! tests/debug_formats.rs (samples/cpp/formats: shapes.cpp, then main.cpp) is built with
//! `-g`, and a copy of it has one unit's DIEs damaged in `.debug_info`: an abbreviation
//! code that does not exist, or a unit length running past the section's end (a truncated
//! unit). Through the real `tandem dap`, the other unit's breakpoints, frames and values
//! equal those of the intact build, the damaged unit is named in an `output` event, and
//! nothing panics.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;
use support::dap::{line_of, sample_path, scratch_dir, DapClient};

fn source(name: &str) -> PathBuf {
    sample_path(&format!("cpp/formats/{name}"))
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The intact build: shapes.cpp's unit first, main.cpp's second.
fn build(tag: &str) -> PathBuf {
    let dir = scratch_dir(&format!("corrupt-{tag}"));
    for s in ["shapes.cpp", "main.cpp"] {
        run(Command::new("g++")
            .current_dir(&dir)
            .args(["-O0", "-g", "-c"])
            .arg(source(s))
            .arg("-o")
            .arg(Path::new(s).with_extension("o")));
    }
    run(Command::new("g++")
        .current_dir(&dir)
        .args(["shapes.o", "main.o", "-o", "prog"]));
    dir.join("prog")
}

/// `.debug_info`'s file offset and size (`readelf -S -W`).
fn debug_info(program: &Path) -> (usize, usize) {
    let text = run(Command::new("readelf").args(["-S", "-W"]).arg(program));
    let line = text.lines().find(|l| l.contains(" .debug_info ")).unwrap();
    let words: Vec<&str> = line
        .split_once("] ")
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    let hex = |s: &str| usize::from_str_radix(s, 16).unwrap();
    (hex(words[3]), hex(words[4]))
}

/// The `.debug_info` offsets of the units, in order, with the first child DIE of each
/// (`readelf --debug-dump=info`).
fn units(program: &Path) -> Vec<(usize, usize)> {
    let text = run(Command::new("readelf")
        .arg("--debug-dump=info")
        .arg(program));
    let mut out: Vec<(usize, usize)> = Vec::new();
    let mut pending: Option<usize> = None;
    for l in text.lines() {
        if let Some(rest) = l.trim().strip_prefix("Compilation Unit @ offset ") {
            let off = rest.trim_end_matches(':').trim_start_matches("0x");
            pending = Some(usize::from_str_radix(off, 16).unwrap());
        } else if let (Some(unit), Some(rest)) = (pending, l.trim().strip_prefix("<1><")) {
            let die = rest.split_once('>').unwrap().0;
            out.push((unit, usize::from_str_radix(die, 16).unwrap()));
            pending = None;
        }
    }
    out
}

/// A copy of `program` with `patch` applied to its `.debug_info` bytes, given the units.
fn damaged(program: &Path, tag: &str, patch: impl Fn(&mut [u8], &[(usize, usize)])) -> PathBuf {
    let (at, size) = debug_info(program);
    let units = units(program);
    assert_eq!(units.len(), 2, "{units:?}");
    let mut bytes = std::fs::read(program).unwrap();
    patch(&mut bytes[at..at + size], &units);
    let copy = program.with_file_name(format!("prog-{tag}"));
    std::fs::write(&copy, bytes).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    copy
}

const MAIN_EXPRS: [&str; 4] = ["t", "label.value", "counter", "rects.size()"];
const AREA_EXPRS: [&str; 3] = ["base", "extra", "r.width"];

/// What a session shows at one line breakpoint (`file`, `marker`): the frames' names and
/// lines, the values of `exprs`, and every `output` event's text. A function breakpoint
/// on `function` is set too (a name lookup walks every unit of a small program).
fn observe(
    program: &Path,
    file: &str,
    marker: &str,
    function: &str,
    exprs: &[&str],
) -> (Vec<(String, i64)>, Vec<String>, String) {
    let mut c = DapClient::new();
    c.initialize();
    c.ok("launch", json!({"program": program}));
    let r = c.request(
        "setFunctionBreakpoints",
        json!({"breakpoints": [{"name": function}]}),
    );
    assert_eq!(r["success"], true, "{r}");
    let path = source(file);
    let body = c.ok(
        "setBreakpoints",
        json!({"source": {"path": path}, "breakpoints": [{"line": line_of(&path, marker)}]}),
    );
    assert_eq!(body["breakpoints"][0]["verified"], true, "{body}");
    c.ok("configurationDone", json!({}));
    // The function breakpoint may stop first (it is in the other unit): go on to the line.
    let line = line_of(&path, marker);
    let (frames, values) = loop {
        let stop = c.event("stopped");
        let tid = stop["body"]["threadId"].as_i64().unwrap();
        let frames = c.frames(tid);
        if frames[0]["line"].as_i64() == Some(line) {
            let frame = frames[0]["id"].as_i64().unwrap();
            let values: Vec<String> = exprs
                .iter()
                .map(|e| c.evaluate(frame, e)["result"].as_str().unwrap().to_string())
                .collect();
            break (frames, values);
        }
        c.ok("continue", json!({"threadId": tid}));
    };
    let frames = frames
        .iter()
        .filter(|f| f["source"]["path"].is_string())
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                f["line"].as_i64().unwrap(),
            )
        })
        .collect();
    c.drain_events(std::time::Duration::from_millis(200));
    let outputs: String = c.output.iter().map(|(_, text)| text.as_str()).collect();
    let r = c.request("disconnect", json!({}));
    assert_eq!(r["success"], true, "{r}");
    c.peer.wait_exit(support::PATIENCE);
    let log = c.peer.stderr();
    assert!(!log.contains("panicked"), "{log}");
    (frames, values, outputs)
}

#[test]
fn an_unknown_abbreviation_in_one_unit_costs_that_unit_only() {
    let program = build("abbrev");
    // shapes.cpp's first child DIE gets abbreviation code 16383 (ULEB 0xff 0x7f), which
    // its table does not have: the unit's DIE tree cannot be walked past its root.
    let bad = damaged(&program, "bad-abbrev", |info, units| {
        let die = units[0].1;
        info[die] = 0xff;
        info[die + 1] = 0x7f;
    });
    let intact = observe(
        &program,
        "main.cpp",
        "main prints",
        "shapes::area",
        &MAIN_EXPRS,
    );
    let seen = observe(&bad, "main.cpp", "main prints", "shapes::area", &MAIN_EXPRS);
    assert_eq!(seen.0, intact.0, "main's frames");
    assert_eq!(seen.1, intact.1, "main's values");
    assert!(!intact.2.contains("cannot be read"), "{}", intact.2);
    let note = seen
        .2
        .lines()
        .find(|l| l.contains("cannot be read"))
        .unwrap_or_else(|| panic!("no output event names the bad unit: {}", seen.2));
    assert!(note.contains("shapes.cpp"), "{note}");
    assert!(note.contains("offset 0x0"), "{note}");
}

#[test]
fn a_truncated_last_unit_costs_that_unit_only() {
    let program = build("truncated");
    // main.cpp's unit says it is longer than what is left of the section, as if the
    // file had been cut inside it.
    let bad = damaged(&program, "truncated", |info, units| {
        let unit = units[1].0;
        let len = (info.len() - unit + 64) as u32;
        info[unit..unit + 4].copy_from_slice(&len.to_le_bytes());
    });
    let intact = observe(&program, "shapes.cpp", "area returns", "main", &AREA_EXPRS);
    let seen = observe(&bad, "shapes.cpp", "area returns", "main", &AREA_EXPRS);
    // shapes::area's own frame and values; main's frame has no function there any more.
    assert_eq!(seen.0[0], intact.0[0], "area's frame");
    assert_eq!(seen.1, intact.1, "area's values");
    let note = seen
        .2
        .lines()
        .find(|l| l.contains("cannot be read"))
        .unwrap_or_else(|| panic!("no output event names the bad unit: {}", seen.2));
    let main_unit = units(&program)[1].0;
    assert!(
        note.contains(&format!("offset {main_unit:#x}")),
        "{note} (main.cpp's unit is at {main_unit:#x})"
    );
}
