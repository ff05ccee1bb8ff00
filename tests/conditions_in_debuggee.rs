//! Conditions evaluated in the debuggee (engine/src/jit.rs): the same conditional
//! breakpoints stop at exactly the same hits as on the int3 path (tandem run with
//! TANDEM_CONDITIONS_IN_DEBUGGEE=0), with several threads hitting one site, and an
//! attached process is left with its original code and without the placed code.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

#[path = "reliability_util.rs"]
mod reliability_util;
mod support;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};
use support::dap::{build, line_of, sample_path, tracer_of, wait_until, DapClient, KillOnDrop};
use support::{Peer, Protocol};

fn program() -> PathBuf {
    build("c/jit_cond.c", "gcc", &["-g", "-O0", "-pthread"])
}

fn source() -> PathBuf {
    sample_path("c/jit_cond.c")
}

/// One stop: the line, the thread and the value of `i` there.
type Stop = (i64, i64, String);

/// Launches the sample (3,000 iterations) with conditional breakpoints on `lines`, and
/// records every stop until the program exits. `jit` false runs tandem with conditions
/// kept on the int3 path.
fn stops(jit: bool, breakpoints: &[(i64, &str)]) -> (Vec<Stop>, Vec<String>) {
    let (stops, errors, _) = stops_logged(jit, breakpoints);
    (stops, errors)
}

/// Like [`stops`], also returning tandem's debug log (which says where each condition runs).
fn stops_logged(jit: bool, breakpoints: &[(i64, &str)]) -> (Vec<Stop>, Vec<String>, String) {
    stops_in(&program(), &source(), jit, breakpoints)
}

/// Like [`stops_logged`], for any program built from `source` taking an iteration count.
fn stops_in(
    program: &std::path::Path,
    source: &std::path::Path,
    jit: bool,
    breakpoints: &[(i64, &str)],
) -> (Vec<Stop>, Vec<String>, String) {
    let envs: &[(&str, &str)] = if jit {
        &[("TANDEM_LOG", "engine=debug")]
    } else {
        &[
            ("TANDEM_CONDITIONS_IN_DEBUGGEE", "0"),
            ("TANDEM_LOG", "engine=debug"),
        ]
    };
    let mut c = DapClient::with_peer(Peer::spawn(Protocol::Dap, &[], envs));
    launch_with_conditions(&mut c, program, source, breakpoints);
    let mut seen = Vec::new();
    while let Some(stop) = next_stop(&mut c) {
        let thread = stop["body"]["threadId"].as_i64().unwrap();
        let frames = c.frames(thread);
        let top = &frames[0];
        let i = c.evaluate(top["id"].as_i64().unwrap(), "i")["result"]
            .as_str()
            .unwrap()
            .to_string();
        seen.push((top["line"].as_i64().unwrap(), thread, i));
        assert!(seen.len() < 500, "runaway stops: {:?}", &seen[..10]);
        c.ok("continue", json!({"threadId": thread}));
    }
    let errors = c
        .output
        .iter()
        .filter(|(_, text)| text.contains("error in condition"))
        .map(|(_, text)| text.clone())
        .collect();
    let log = c.peer.stderr();
    c.finish();
    (seen, errors, log)
}

/// initialize → launch `program` (3,000 iterations) → conditional breakpoints on lines
/// of `source` (each verified) → configurationDone.
fn launch_with_conditions(
    c: &mut DapClient,
    program: &std::path::Path,
    source: &std::path::Path,
    breakpoints: &[(i64, &str)],
) {
    c.initialize();
    c.ok(
        "launch",
        json!({"program": program, "args": ["3000"], "cwd": std::env::temp_dir()}),
    );
    let bps: Vec<Value> = breakpoints
        .iter()
        .map(|(line, cond)| json!({"line": line, "condition": cond}))
        .collect();
    let body = c.ok(
        "setBreakpoints",
        json!({"source": {"path": source}, "breakpoints": bps}),
    );
    for bp in body["breakpoints"].as_array().unwrap() {
        assert_eq!(bp["verified"], true, "{bp}");
    }
    c.ok("configurationDone", json!({}));
}

/// The next `stopped` event, or `None` once the program has terminated.
fn next_stop(c: &mut DapClient) -> Option<Value> {
    loop {
        let m = c
            .peer
            .try_recv(Duration::from_secs(60))
            .expect("no event within 60 s");
        match m["event"].as_str() {
            Some("stopped") => return Some(m),
            Some("terminated") => return None,
            Some("output") => {
                let category = m["body"]["category"].as_str().unwrap_or("console");
                let text = m["body"]["output"].as_str().unwrap_or_default();
                c.output.push((category.to_string(), text.to_string()));
            }
            _ => {}
        }
    }
}

/// Compares the two paths for each condition, and with what C says; `placed` says
/// whether the condition must run in the debuggee (else it stays on the int3 path).
fn same_stops(line: i64, condition: &str, expected: Option<&[i64]>, placed: bool) {
    let (fast, fast_errors, log) = stops_logged(true, &[(line, condition)]);
    assert_eq!(
        log.contains("condition runs in the debuggee"),
        placed,
        "`{condition}`: where it ran:\n{log}"
    );
    let (slow, slow_errors, slow_log) = stops_logged(false, &[(line, condition)]);
    // On the int3 path, hits resume through a copy of the site's instruction.
    assert!(
        slow_log.contains("hits resume through a copy"),
        "`{condition}`:\n{slow_log}"
    );
    let values =
        |s: &[Stop]| -> Vec<String> { s.iter().map(|(l, _, i)| format!("{l}:{i}")).collect() };
    assert_eq!(
        values(&fast),
        values(&slow),
        "`{condition}`: stops in the debuggee differ from the int3 path's"
    );
    assert_eq!(
        fast_errors.len(),
        slow_errors.len(),
        "`{condition}`: {fast_errors:?} vs {slow_errors:?}"
    );
    if let Some(expected) = expected {
        let want: Vec<String> = expected.iter().map(|i| format!("{line}:{i}")).collect();
        assert_eq!(values(&fast), want, "`{condition}`");
    }
}

#[test]
fn conditions_stop_at_the_same_hits_in_the_debuggee_and_on_the_int3_path() {
    let work = line_of(&source(), "LINE_WORK");
    let expect = |f: &dyn Fn(i64) -> bool| -> Vec<i64> { (0..3000).filter(|i| f(*i)).collect() };
    let cases: Vec<(&str, Option<Vec<i64>>)> = vec![
        ("i == 2999", Some(vec![2999])),
        ("i % 1000 == 999", Some(expect(&|i| i % 1000 == 999))),
        (
            "i * 3 - 7 > 8950 && i < 2990",
            Some(expect(&|i| i * 3 - 7 > 8950 && i < 2990)),
        ),
        // unsigned char, signed char and unsigned long locals.
        (
            "c == 200 && i > 2000",
            Some(expect(&|i| i % 256 == 200 && i > 2000)),
        ),
        ("sc < -126", Some(expect(&|i| ((i as u8) as i8) < -126))),
        (
            "u > 7900000000000 && u < 7950000000000",
            Some(expect(&|i| {
                let u = (i as u64).wrapping_mul(2654435761);
                u > 7_900_000_000_000 && u < 7_950_000_000_000
            })),
        ),
        // Members and a constant index of a struct local; an enumerator.
        (
            "local.count == 12 || local.level > 248",
            Some(expect(&|i| i % 13 == 12 || i % 500 - 250 > 248)),
        ),
        (
            "local.color == BLUE && local.values[2] == 333",
            Some(expect(&|i| i % 3 == 2 && i / 3 == 333)),
        ),
        // Casts, unary operators, shifts and bitwise operators.
        (
            "(unsigned char)(i * 7) == 3",
            Some(expect(&|i| (i * 7) % 256 == 3)),
        ),
        ("-i < -2995", Some(expect(&|i| -i < -2995))),
        ("~i == -1001", Some(vec![1000])),
        (
            "(i >> 3) == 100 && !(i & 1)",
            Some(expect(&|i| i >> 3 == 100 && i & 1 == 0)),
        ),
        // Unsigned int wrapping, a global long.
        ("g_unsigned + i == 4294967295u", Some(vec![5])),
        (
            "g_total > 4000000 && i % 250 == 0",
            Some(expect(&|i| i * (i - 1) / 2 > 4_000_000 && i % 250 == 0)),
        ),
        // Shift counts past the width: the placed code leaves them to the debugger.
        ("(1 << (i % 70)) == 0 && i > 2950", None),
        // Through a pointer: stays on the int3 path, same answers.
        (
            "s->count == 5 && i > 2980",
            Some(expect(&|i| i % 13 == 5 && i > 2980)),
        ),
    ];
    for (condition, expected) in &cases {
        let placed = !condition.contains("->");
        same_stops(work, condition, expected.as_deref(), placed);
    }
}

#[test]
fn an_error_in_a_condition_stops_alike_in_the_debuggee() {
    // Division by zero: the placed code traps, the debugger reports the error and stops.
    let rare = line_of(&source(), "LINE_RARE");
    let (fast, fast_errors) = stops(true, &[(rare, "i / zero == 1")]);
    let (slow, slow_errors) = stops(false, &[(rare, "i / zero == 1")]);
    let values = |s: &[Stop]| -> Vec<String> { s.iter().map(|(_, _, i)| i.clone()).collect() };
    assert_eq!(values(&fast), values(&slow));
    assert_eq!(values(&fast), ["0", "500", "1000", "1500", "2000", "2500"]);
    assert_eq!(fast_errors.len(), 6, "{fast_errors:?}");
    assert_eq!(slow_errors.len(), 6, "{slow_errors:?}");
}

#[test]
fn threads_hitting_one_site_stop_once_each_in_the_debuggee() {
    let line = line_of(&source(), "LINE_THREAD");
    for condition in ["i == 1500", "s.values[2] == 3000"] {
        let (fast, _) = stops(true, &[(line, condition)]);
        let (slow, _) = stops(false, &[(line, condition)]);
        let mut a: Vec<String> = fast.iter().map(|(_, _, i)| i.clone()).collect();
        let mut b: Vec<String> = slow.iter().map(|(_, _, i)| i.clone()).collect();
        a.sort();
        b.sort();
        assert_eq!(a, b, "`{condition}`");
        let threads: std::collections::HashSet<i64> = fast.iter().map(|(_, t, _)| *t).collect();
        assert_eq!(
            threads.len(),
            fast.len(),
            "each thread stops once: {fast:?}"
        );
        let want = if condition == "i == 1500" { 4 } else { 3 };
        assert_eq!(fast.len(), want, "`{condition}`: {fast:?}");
    }
}

/// Anonymous executable mappings of a process (where placed code lives).
fn anonymous_code(pid: i64) -> Vec<String> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    maps.lines()
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() == 5 && f[1].contains('x')
        })
        .map(str::to_string)
        .collect()
}

fn byte_at(pid: i64, addr: u64) -> u8 {
    use std::os::unix::fs::FileExt;
    let mem = std::fs::File::open(format!("/proc/{pid}/mem")).unwrap();
    let mut b = [0u8; 1];
    mem.read_exact_at(&mut b, addr).unwrap();
    b[0]
}

#[test]
fn memory_reads_show_the_original_code_while_the_jump_is_in_place() {
    let mut c = DapClient::new();
    let line = line_of(&source(), "LINE_WORK");
    launch_with_conditions(&mut c, &program(), &source(), &[(line, "i == 2500")]);
    let stop = c.event("stopped");
    let pid = c.debuggee_pid.unwrap();
    let thread = stop["body"]["threadId"].as_i64().unwrap();
    let top = c.frames(thread)[0].clone();
    assert_eq!(
        c.evaluate(top["id"].as_i64().unwrap(), "i")["result"],
        "2500"
    );
    let ip = top["instructionPointerReference"]
        .as_str()
        .unwrap()
        .to_string();
    let addr = u64::from_str_radix(ip.trim_start_matches("0x"), 16).unwrap();
    // The jump is in the process; the debugger shows the program's own bytes.
    assert_eq!(byte_at(pid, addr), 0xe9, "the site holds the jump");
    assert!(!anonymous_code(pid).is_empty(), "placed code is mapped");
    let read = c.ok("readMemory", json!({"memoryReference": ip, "count": 8}));
    let bytes = base64_decode(read["data"].as_str().unwrap());
    let (text_addr, text) = reliability_util::elf_text(&program());
    let bias = reliability_util::load_bias(pid, &program());
    let at = (addr - bias - text_addr) as usize;
    assert_eq!(
        bytes,
        text[at..at + 8],
        "readMemory shows the original bytes"
    );
    let dis = c.ok(
        "disassemble",
        json!({"memoryReference": ip, "instructionCount": 1, "resolveSymbols": false}),
    );
    let first = dis["instructions"][0]["instruction"].as_str().unwrap();
    assert!(
        !first.starts_with("jmp"),
        "disassembly shows the original: {first}"
    );
    c.finish();
}

fn base64_decode(s: &str) -> Vec<u8> {
    let table = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            _ => 63,
        }
    };
    let clean: Vec<u8> = s.bytes().filter(|b| *b != b'=').collect();
    let mut out = Vec::new();
    for chunk in clean.chunks(4) {
        let mut n = 0u32;
        for (k, b) in chunk.iter().enumerate() {
            n |= table(*b) << (18 - 6 * k);
        }
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    out
}

#[test]
fn detach_removes_every_jump_and_the_placed_code() {
    let program = program();
    // Many iterations: it runs through the site for the whole test.
    let target = KillOnDrop(
        Command::new(&program)
            .args(["2000000000"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = target.pid();
    let mut c = DapClient::with_peer(Peer::spawn(
        Protocol::Dap,
        &[],
        &[("TANDEM_LOG", "target=debug,engine=debug")],
    ));
    c.initialize();
    c.ok("attach", json!({"pid": pid}));
    let line = line_of(&source(), "LINE_WORK");
    let body = c.ok(
        "setBreakpoints",
        json!({"source": {"path": source()}, "breakpoints": [{"line": line, "condition": "i == -5"}]}),
    );
    assert_eq!(body["breakpoints"][0]["verified"], true);
    c.ok("configurationDone", json!({}));
    // Attaching stops the program; run on through millions of false hits.
    if let Some(stop) = c.event_within("stopped", Duration::from_secs(5)) {
        c.ok("continue", json!({"threadId": stop["body"]["threadId"]}));
    }
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        !anonymous_code(pid).is_empty(),
        "placed code is mapped while attached"
    );
    let sink_before = sink(&mut c, pid);
    std::thread::sleep(Duration::from_millis(200));
    assert_ne!(
        sink(&mut c, pid),
        sink_before,
        "the program runs through the site"
    );
    let log = c.peer.stderr();
    c.finish();
    let mut target = target;
    if let Ok(Some(status)) = target.0.try_wait() {
        panic!("the attached program ended: {status}; tandem's log:\n{log}");
    }
    assert!(
        wait_until(Duration::from_secs(10), || tracer_of(pid) == 0),
        "still traced"
    );
    reliability_util::assert_text_intact(pid, &program);
    assert!(
        anonymous_code(pid).is_empty(),
        "placed code left behind: {:?}",
        anonymous_code(pid)
    );
    assert!(support::dap::alive(pid));
}

/// The program's `sink` counter, read from its memory (the symbol's address from `nm`).
fn sink(_c: &mut DapClient, pid: i64) -> i64 {
    use std::os::unix::fs::FileExt;
    let nm = Command::new("nm").arg(program()).output().unwrap();
    let text = String::from_utf8_lossy(&nm.stdout);
    let addr = text
        .lines()
        .find(|l| l.ends_with(" sink"))
        .and_then(|l| u64::from_str_radix(l.split_whitespace().next()?, 16).ok())
        .expect("sink in nm");
    let bias = reliability_util::load_bias(pid, &program());
    let mem = std::fs::File::open(format!("/proc/{pid}/mem")).unwrap();
    let mut b = [0u8; 8];
    mem.read_exact_at(&mut b, bias + addr).unwrap();
    i64::from_le_bytes(b)
}

/// Lines reached by stepping from a stop at a patched site and over calls that pass it,
/// then the next stop: the same on both paths.
fn stepping_trace(jit: bool) -> Vec<String> {
    let envs: &[(&str, &str)] = if jit {
        &[]
    } else {
        &[("TANDEM_CONDITIONS_IN_DEBUGGEE", "0")]
    };
    let mut c = DapClient::with_peer(Peer::spawn(Protocol::Dap, &[], envs));
    let line = line_of(&source(), "LINE_WORK");
    launch_with_conditions(&mut c, &program(), &source(), &[(line, "i % 100 == 10")]);
    let mut trace = Vec::new();
    let mut stop = c.event("stopped");
    // Out of `work` into main's loop, to the call, into `work` again and over its lines
    // onto the patched site (condition false there), past it, out, and on to the next
    // true hit.
    let mut steps = vec!["next"; 10];
    steps.push("stepIn");
    steps.extend(["next"; 5]);
    steps.extend(["stepOut", "continue"]);
    for step in steps {
        let thread = stop["body"]["threadId"].as_i64().unwrap();
        let top = c.frames(thread)[0].clone();
        let i = c.evaluate(top["id"].as_i64().unwrap(), "i")["result"].clone();
        trace.push(format!(
            "{} {} i={i} {}",
            top["name"], top["line"], stop["body"]["reason"]
        ));
        c.ok(step, json!({"threadId": thread}));
        stop = c.event("stopped");
    }
    let thread = stop["body"]["threadId"].as_i64().unwrap();
    let top = c.frames(thread)[0].clone();
    let i = c.evaluate(top["id"].as_i64().unwrap(), "i")["result"].clone();
    trace.push(format!(
        "{} {} i={i} {}",
        top["name"], top["line"], stop["body"]["reason"]
    ));
    c.finish();
    trace
}

#[test]
fn stepping_through_a_patched_site_goes_where_the_int3_path_goes() {
    let fast = stepping_trace(true);
    let slow = stepping_trace(false);
    assert_eq!(fast, slow);
    assert!(fast[0].contains("i=\"10\""), "{fast:?}");
    assert!(fast.last().unwrap().contains("i=\"110\""), "{fast:?}");
    // `next` from work's closing brace returns to the start of the caller's next line,
    // where gdb stops too.
    let after = format!(
        "\"main\" {} i=\"10\" \"step\"",
        line_of(&source(), "LINE_AFTER_CALL")
    );
    assert_eq!(fast[3], after, "{fast:?}");
    let landed = format!(
        "\"work\" {} i=\"11\" \"step\"",
        line_of(&source(), "LINE_WORK")
    );
    assert!(
        fast.contains(&landed),
        "stepping into work stops on the patched line: {fast:?}"
    );
}

#[test]
fn a_condition_set_while_running_moves_into_the_debuggee_at_its_first_hit() {
    let mut c = DapClient::new();
    c.initialize();
    c.ok(
        "launch",
        json!({"program": program(), "args": ["2000000000"]}),
    );
    c.ok("configurationDone", json!({}));
    std::thread::sleep(Duration::from_millis(100));
    let pid = c.debuggee_pid.unwrap();
    assert!(anonymous_code(pid).is_empty());
    let line = line_of(&source(), "LINE_WORK");
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": source()},
               "breakpoints": [{"line": line, "condition": "i % 3000000 == 2999999"}]}),
    );
    let stop = c.event("stopped");
    let thread = stop["body"]["threadId"].as_i64().unwrap();
    let top = c.frames(thread)[0].clone();
    let i: i64 = c.evaluate(top["id"].as_i64().unwrap(), "i")["result"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(i % 3_000_000, 2_999_999);
    assert!(
        !anonymous_code(pid).is_empty(),
        "the condition runs in the debuggee"
    );
    assert_eq!(
        byte_at(
            pid,
            u64::from_str_radix(
                top["instructionPointerReference"]
                    .as_str()
                    .unwrap()
                    .trim_start_matches("0x"),
                16
            )
            .unwrap()
        ),
        0xe9
    );
    c.finish();
}

#[test]
fn rust_conditions_stop_at_the_same_hits_in_the_debuggee_and_on_the_int3_path() {
    let program = build("rust/jit_cond.rs", "rustc", &["-g", "-Copt-level=0"]);
    let source = sample_path("rust/jit_cond.rs");
    let line = line_of(&source, "LINE_RUST_WORK");
    let expect = |f: &dyn Fn(i64) -> bool| -> Vec<i64> { (0..3000).filter(|i| f(*i)).collect() };
    let cases: Vec<(&str, Option<Vec<i64>>)> = vec![
        ("i == 2999", Some(vec![2999])),
        ("i % 1000 == 999", Some(expect(&|i| i % 1000 == 999))),
        (
            "small == 200 && i > 2000",
            Some(expect(&|i| i % 256 == 200 && i > 2000)),
        ),
        ("signed < -1490", Some(expect(&|i| i - 1500 < -1490))),
        (
            "big > 8000000000000 && big < 8100000000000",
            Some(expect(&|i| {
                i * 3_000_000_000 > 8_000_000_000_000 && i * 3_000_000_000 < 8_100_000_000_000
            })),
        ),
        ("doubled + 3 == 4003", Some(vec![2000])),
        ("signed - 10 < -1508", Some(expect(&|i| i - 1510 < -1508))),
        ("i >> 2 == 700", Some(expect(&|i| i >> 2 == 700))),
        ("i > 2997 && i - 2998 == 0", Some(vec![2998])),
        // Overflow is an error, which stops: u8 arithmetic past 255.
        (
            "i > 2995 && small * 2 > 300",
            Some(vec![2996, 2997, 2998, 2999]),
        ),
    ];
    for (condition, expected) in &cases {
        let (fast, fast_errors, log) = stops_in(&program, &source, true, &[(line, condition)]);
        assert!(
            log.contains("condition runs in the debuggee"),
            "`{condition}` should run in the debuggee:\n{log}"
        );
        let (slow, slow_errors, _) = stops_in(&program, &source, false, &[(line, condition)]);
        let values = |s: &[Stop]| -> Vec<String> { s.iter().map(|(_, _, i)| i.clone()).collect() };
        assert_eq!(values(&fast), values(&slow), "`{condition}`");
        assert_eq!(fast_errors.len(), slow_errors.len(), "`{condition}`");
        if let Some(expected) = expected {
            let want: Vec<String> = expected.iter().map(|i| i.to_string()).collect();
            assert_eq!(values(&fast), want, "`{condition}`");
        }
    }
}
