//! Function breakpoints on functions of shared libraries that are already loaded
//! (libc's `puts`), with gdb's `break` and `bt` as the oracle.

mod common;

use std::process::Command;

use engine::{FunctionBreakpoint, SessionEvent, SourceBreakpoint, StopCause};

/// `function line` per frame of gdb's backtrace at each hit of `break puts` set while
/// stopped at eng2_libc.c:13, until the program exits.
fn gdb_backtraces(sample: &common::Sample) -> Vec<Vec<(String, u32)>> {
    let mut cmd = Command::new("gdb");
    cmd.args([
        "-batch",
        "-nx",
        "-ex",
        "set width 0",
        "-ex",
        "set pagination off",
    ]);
    cmd.args([
        "-ex",
        "break eng2_libc.c:13",
        "-ex",
        "run",
        "-ex",
        "break puts",
    ]);
    for _ in 0..3 {
        cmd.args(["-ex", "continue", "-ex", "echo @@stop\\n", "-ex", "bt"]);
    }
    let out = cmd.arg(&sample.path).output().expect("running gdb");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut stops: Vec<Vec<(String, u32)>> = Vec::new();
    for line in text.lines() {
        if line == "@@stop" {
            stops.push(Vec::new());
            continue;
        }
        let (Some(stop), Some(rest)) = (stops.last_mut(), line.strip_prefix('#')) else {
            continue;
        };
        // `#1  0x... in greet (who=...) at FILE:8` or `#0  __GI__IO_puts (...) at FILE:35`
        let rest = rest.split_once("  ").map_or(rest, |(_, r)| r);
        let rest = rest.split_once(" in ").map_or(rest, |(_, r)| r);
        let function = rest.split(' ').next().unwrap_or("").to_string();
        let line_no = rest
            .rsplit_once(':')
            .and_then(|(_, l)| l.trim().parse().ok())
            .unwrap_or(0);
        stop.push((function, line_no));
    }
    stops
}

#[test]
fn break_on_puts_in_loaded_libc_agrees_with_gdb() {
    let sample = common::compile("eng2_libc", &["-g", "-O0"]);
    let oracle = gdb_backtraces(&sample);
    assert_eq!(oracle.len(), 3, "{oracle:?}");

    let session = common::launch(&sample);
    session
        .set_line_breakpoints(
            &sample.source,
            &[SourceBreakpoint {
                line: 13,
                ..Default::default()
            }],
        )
        .unwrap();
    session.resume().unwrap();
    let stop = common::expect_stop(&session);
    assert_eq!(common::position(&session, stop.tid), "main 13");
    // libc is loaded now: the breakpoint resolves at once, not pending.
    let st = session
        .set_function_breakpoints(&[FunctionBreakpoint {
            name: "puts".into(),
            ..Default::default()
        }])
        .unwrap();
    assert!(st[0].verified, "{st:?}");
    assert_eq!(st[0].addresses.len(), 1, "{st:?}");
    // gdb's line in puts (0 when libc has no debug information on the machine).
    assert_eq!(st[0].line.map_or(0, |l| l.get()), oracle[0][0].1);

    for (n, expected) in oracle.iter().enumerate() {
        session.resume().unwrap();
        let stop = common::expect_stop(&session);
        assert_eq!(stop.cause, StopCause::Breakpoint(vec![st[0].id]), "hit {n}");
        let frames = session.stack_trace(stop.tid).unwrap();
        let ours: Vec<(String, u32)> = frames
            .iter()
            .map(|f| {
                (
                    f.function.clone().unwrap_or_default(),
                    f.line.map_or(0, |l| l.get()),
                )
            })
            .take_while(|(f, _)| f != "__libc_start_call_main")
            .collect();
        assert_eq!(
            ours.len(),
            expected.len(),
            "hit {n}: {ours:?} vs {expected:?}"
        );
        // gdb names libc's puts by its internal alias (`__GI__IO_puts`).
        assert!(ours[0].0.ends_with("puts"), "{ours:?}");
        assert!(expected[0].0.ends_with("puts"), "{expected:?}");
        assert_eq!(ours[0].1, expected[0].1, "hit {n}: line in puts");
        assert_eq!(&ours[1..], &expected[1..], "hit {n}: callers");
        assert!(frames[0]
            .module
            .as_deref()
            .is_some_and(|m| m.contains("libc")));
    }
    session.resume().unwrap();
    loop {
        match session.wait_stop(common::STOP).unwrap() {
            SessionEvent::Exited { code } => {
                assert_eq!(code, 0);
                break;
            }
            SessionEvent::Stopped(s) => panic!("unexpected stop {s:?}"),
            _ => {}
        }
    }
}
