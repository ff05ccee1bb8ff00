//! Breakpoints in a shared library while recording (samples/c/rev_libcall.c): the
//! recording's first snapshot is taken at execve's return, before the dynamic linker
//! maps libc, so a replay from it cannot write a libc int3 at its start; it plants it
//! when its own replay of the `mmap` maps libc. A function breakpoint on `getppid` is
//! hit going back at the points it was hit going forward and where gdb's
//! `reverse-continue` under `record full` stops, and going forward again from the
//! recording's start (with the breakpoint removed and set again there, where libc is
//! not mapped yet) at the same points, to the live program.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use serde_json::{json, Value};
use support::dap::{build, line_of, sample_path, DapClient};
use support::gdb_record::gdb_record_batch;

const SAMPLE: &str = "c/rev_libcall.c";
const ROUNDS: usize = 5;

/// A hit of the libc function: its caller's name and line, and the caller's `i`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Hit {
    caller: String,
    line: i64,
    i: String,
}

/// gdb under `record full` from `main`: the hits of `getppid` going forward to the
/// done line, then those of as many `reverse-continue`s.
fn gdb_hits(program: &std::path::Path) -> (Vec<Hit>, Vec<Hit>) {
    let done = line_of(&sample_path(SAMPLE), "done line");
    let show = "python tandem_show()".to_string();
    let mut cmds: Vec<String> = vec![
        "set pagination off".into(),
        "set environment GLIBC_TUNABLES glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX2_Usable,-AVX2,-EVEX,-BMI2".into(),
        concat!(
            "python exec(\"def tandem_show():\\n f = gdb.selected_frame()\\n o = f.older()\\n",
            " try:\\n  i = str(o.read_var('i'))\\n except Exception:\\n  i = '?'\\n",
            " print('STOP|%s|%s|%d|%s' % (f.name(), o.name(), o.find_sal().line, i))\\n\")"
        )
        .into(),
        "break main".into(),
        "run".into(),
        "record full".into(),
        "delete".into(),
        "break getppid".into(),
        format!("break rev_libcall.c:{done}"),
    ];
    for _ in 0..ROUNDS {
        cmds.push("continue".into());
        cmds.push(show.clone());
    }
    // The done line.
    cmds.push("continue".into());
    for _ in 0..ROUNDS {
        cmds.push("reverse-continue".into());
        cmds.push(show.clone());
    }
    let (stdout, stderr) = gdb_record_batch(program, &cmds);
    let stops: Vec<(String, Hit)> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("STOP|"))
        .map(|l| {
            let f: Vec<&str> = l.split('|').collect();
            let hit = Hit {
                caller: f[1].to_string(),
                line: f[2].parse().unwrap(),
                i: f[3].to_string(),
            };
            (f[0].to_string(), hit)
        })
        .collect();
    assert_eq!(stops.len(), 2 * ROUNDS, "gdb:\n{stdout}\n{stderr}");
    let hits = |s: &[(String, Hit)]| -> Vec<Hit> {
        s.iter()
            .map(|(f, h)| {
                assert!(f.contains("getppid"), "gdb stopped in {f}:\n{stdout}");
                h.clone()
            })
            .collect()
    };
    (hits(&stops[..ROUNDS]), hits(&stops[ROUNDS..]))
}

/// The stop's thread, after checking its reason (one of `reasons`).
fn stopped(c: &mut DapClient, reasons: &[&str]) -> i64 {
    let st = c.event("stopped");
    let reason = st["body"]["reason"].as_str().unwrap();
    assert!(reasons.contains(&reason), "{st} {:?}", c.output);
    st["body"]["threadId"].as_i64().unwrap()
}

/// A hit of the function breakpoint (live, replayed or found going back).
const HIT: &[&str] = &["function breakpoint", "breakpoint"];

/// tandem's stop in `getppid`: its caller and the caller's `i`.
fn hit(c: &mut DapClient, tid: i64) -> Hit {
    let frames = c.frames(tid);
    let name = frames[0]["name"].as_str().unwrap();
    assert!(name.contains("getppid"), "stopped in {name}: {frames:?}");
    let caller: &Value = &frames[1];
    let fid = caller["id"].as_i64().unwrap();
    Hit {
        caller: caller["name"].as_str().unwrap().to_string(),
        line: caller["line"].as_i64().unwrap(),
        i: c.evaluate(fid, "i")["result"].as_str().unwrap().to_string(),
    }
}

fn top_line(c: &mut DapClient, tid: i64) -> i64 {
    c.frames(tid)[0]["line"].as_i64().unwrap()
}

#[test]
fn a_libc_function_breakpoint_is_hit_going_back_where_it_was_hit_going_forward() {
    let program = build(SAMPLE, "gcc", &["-g", "-O0"]);
    let (gdb_forward, gdb_back) = gdb_hits(&program);
    let src = sample_path(SAMPLE);
    let done = line_of(&src, "done line");
    let mut c = DapClient::new();
    c.initialize();
    c.ok(
        "launch",
        json!({"program": program, "stdio": "pipes", "reverseDebugging": true}),
    );
    c.event("capabilities");
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": src}, "breakpoints": [{"line": done}]}),
    );
    let fbp = json!({"breakpoints": [{"name": "getppid"}]});
    let body = c.ok("setFunctionBreakpoints", fbp.clone());
    assert_eq!(body["breakpoints"][0]["verified"], true, "{body}");
    c.ok("configurationDone", json!({}));

    // Forward, live: a hit per round, then the done line.
    let mut forward = Vec::new();
    for _ in 0..ROUNDS {
        let tid = stopped(&mut c, HIT);
        forward.push(hit(&mut c, tid));
        c.ok("continue", json!({"threadId": tid}));
    }
    let mut tid = stopped(&mut c, &["breakpoint"]);
    assert_eq!(top_line(&mut c, tid), done);
    assert_eq!(forward, gdb_forward, "the hits going forward vs gdb's");

    // Back: each hit again, latest first, as gdb's reverse-continue finds them, then
    // the recording's start.
    let mut back = Vec::new();
    for _ in 0..ROUNDS {
        c.ok("reverseContinue", json!({"threadId": tid}));
        tid = stopped(&mut c, HIT);
        back.push(hit(&mut c, tid));
    }
    assert_eq!(back, gdb_back, "reverseContinue vs gdb's reverse-continue");
    let mut reversed = forward.clone();
    reversed.reverse();
    assert_eq!(
        back, reversed,
        "the hits going back are those going forward"
    );
    c.ok("reverseContinue", json!({"threadId": tid}));
    tid = stopped(&mut c, &["entry"]);

    // At the recording's start libc is not mapped yet: the breakpoint goes and comes
    // back there, and going forward it is hit at the same points again, then the done
    // line where the live program is, which runs on to its end.
    c.ok("setFunctionBreakpoints", json!({"breakpoints": []}));
    let body = c.ok("setFunctionBreakpoints", fbp);
    assert_eq!(body["breakpoints"][0]["verified"], true, "{body}");
    let mut again = Vec::new();
    for _ in 0..ROUNDS {
        c.ok("continue", json!({"threadId": tid}));
        tid = stopped(&mut c, HIT);
        again.push(hit(&mut c, tid));
    }
    assert_eq!(again, forward, "forward again from the recording's start");
    c.ok("continue", json!({"threadId": tid}));
    tid = stopped(&mut c, &["breakpoint"]);
    assert_eq!(top_line(&mut c, tid), done, "the present");
    c.ok("continue", json!({"threadId": tid}));
    let exited = c.event("exited");
    assert_eq!(exited["body"]["exitCode"], 0);
    c.finish();
}
