//! A debuggee that execs another program: modules are reloaded and breakpoints
//! re-resolved in the new image (gdb's behaviour is the oracle), with no stop at exec.

mod common;

use std::process::Command;

use engine::{FunctionBreakpoint, SessionEvent, StopCause};

/// gdb's line of the stop at `child_work` after the exec.
fn gdb_child_line(parent: &common::Sample, child: &common::Sample) -> u32 {
    let out = Command::new("gdb")
        .args(["-batch", "-nx", "-ex", "set breakpoint pending on"])
        .args(["-ex", "break child_work", "-ex", "run", "--args"])
        .arg(&parent.path)
        .arg(&child.path)
        .output()
        .expect("running gdb");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find(|l| l.starts_with("Breakpoint 1, child_work"))
        .and_then(|l| l.rsplit_once(':'))
        .and_then(|(_, n)| n.trim().parse().ok())
        .expect("gdb stopped in child_work")
}

#[test]
fn breakpoints_are_re_resolved_after_exec() {
    let parent = common::compile("eng2_exec", &["-g", "-O0"]);
    let child = common::compile("eng2_exec_child", &["-g", "-O0"]);
    let expected_line = gdb_child_line(&parent, &child);

    let session = engine::Session::launch(engine::LaunchOptions {
        program: parent.path.clone(),
        args: vec![child.path.clone().into()],
        stdio: tracer::StdioMode::Null,
        ..Default::default()
    })
    .unwrap();
    let st = session
        .set_function_breakpoints(&[
            FunctionBreakpoint {
                name: "before_exec".into(),
                ..Default::default()
            },
            FunctionBreakpoint {
                name: "child_work".into(),
                ..Default::default()
            },
        ])
        .unwrap();
    assert!(st[0].verified && !st[1].verified, "{st:?}");

    session.resume().unwrap();
    let stop = common::expect_stop(&session);
    assert_eq!(stop.cause, StopCause::Breakpoint(vec![st[0].id]));
    assert_eq!(common::position(&session, stop.tid), "before_exec 8");

    // The exec itself does not stop; the next stop is in the new program.
    session.resume().unwrap();
    let mut resolved = None;
    let stop = loop {
        match session.events().recv_timeout(common::STOP).unwrap() {
            SessionEvent::Stopped(stop) => break stop,
            SessionEvent::BreakpointResolved(b) if b.id == st[1].id => resolved = Some(b),
            SessionEvent::Exited { code } => panic!("exited with {code} without stopping"),
            _ => {}
        }
    };
    let resolved = resolved.expect("child_work resolved after exec");
    assert!(resolved.verified, "{resolved:?}");
    assert_eq!(stop.cause, StopCause::Breakpoint(vec![st[1].id]));
    assert_eq!(
        common::position(&session, stop.tid),
        format!("child_work {expected_line}")
    );
    let frames = session.stack_trace(stop.tid).unwrap();
    assert_eq!(frames[1].function.as_deref(), Some("main"));
    assert_eq!(session.evaluate(frames[0].id, "n").unwrap().rendered, "3");
    assert!(session
        .evaluate(frames[0].id, "tag")
        .unwrap()
        .rendered
        .ends_with("\"from-parent\""));
    let main = &session.modules()[0];
    assert!(main.path.ends_with("eng2_exec_child"), "{main:?}");

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
