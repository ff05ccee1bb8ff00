//! The owner of debug sessions: fan-out to several views, state for late views, run
//! control through the owner, ending on every path.

mod common;

use engine::{FunctionBreakpoint, LaunchOptions, SessionEvent, SourceMap, StopCause};
use procman::{DebugEvent, DebugState, EndMode, ManagerEvent, ProcessManager, ViewId};
use std::time::Duration;
use tracer::{Pid, StdioMode};

fn options(path: &std::path::Path, args: &[&str]) -> LaunchOptions {
    LaunchOptions {
        program: path.to_path_buf(),
        args: args.iter().map(Into::into).collect(),
        stdio: StdioMode::Null,
        ..LaunchOptions::default()
    }
}

fn next<T>(rx: &crossbeam_channel::Receiver<T>) -> T {
    rx.recv_timeout(Duration::from_secs(10)).expect("event")
}

/// The events of a subscription up to and including `Ended`, in a comparable form.
fn drain(rx: &crossbeam_channel::Receiver<DebugEvent>) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        let ev = next(rx);
        let end = ev == DebugEvent::Ended;
        seen.push(match ev {
            DebugEvent::Engine(SessionEvent::Stopped(stop)) => format!("stopped {:?}", stop.cause),
            other => format!("{other:?}"),
        });
        if end {
            break;
        }
    }
    assert!(
        rx.recv_timeout(Duration::from_millis(100)).is_err(),
        "nothing after Ended"
    );
    seen
}

#[test]
fn every_view_sees_the_same_events_and_a_late_one_reads_the_state() {
    let sample = common::compile("proc_target", &["-g", "-O0"]);
    let m = ProcessManager::new();
    let bus = m.subscribe();
    let s = m
        .launch_debug(options(&sample.path, &["3", "5"]))
        .expect("launch");
    assert!(
        matches!(next(&bus), ManagerEvent::DebugStarted { session, pid } if session == s.id() && pid == s.pid())
    );
    assert_eq!(m.debug_sessions().len(), 1);
    assert!(m.debug_session(s.id()).is_some());
    // Launched: stopped at the entry point, before any subscriber existed.
    assert!(matches!(s.state(), DebugState::Stopped(ref stop) if stop.cause == StopCause::Entry));
    assert_eq!(m.paused_debuggees().len(), 1);

    // The first subscriber also gets the engine's notes from the start; the views
    // compared below come after it.
    let _starter = s.subscribe();
    let a = s.subscribe();
    let b = s.subscribe();
    let dropped = s.subscribe();
    drop(dropped);
    let bp = s
        .engine()
        .set_function_breakpoints(&[FunctionBreakpoint {
            name: "proc_bp_target".into(),
            ..FunctionBreakpoint::default()
        }])
        .expect("breakpoint");
    assert!(bp[0].verified);
    let dap = ViewId::new();
    let agent = ViewId::new();
    s.resume(dap).expect("resume");
    // The second view waits for the stop and reads the same stack.
    let stop = procman::wait_on(&b, Duration::from_secs(10), |_| {}).expect("stop");
    let DebugState::Stopped(stop) = stop else {
        panic!("{stop:?}")
    };
    assert!(matches!(stop.cause, StopCause::Breakpoint(_)));
    assert_eq!(s.stopped(), Some(stop.clone()));
    let frames = s.stop_frames().expect("frames");
    assert_eq!(frames[0].function.as_deref(), Some("proc_bp_target"));
    assert_eq!(s.stop_frames().expect("cached"), frames);
    assert_eq!(m.paused_debuggees()[0].tid, stop.tid);

    // A view that comes now learns the state, then every later event.
    let (state, late) = s.subscribe_with_state();
    assert_eq!(state, DebugState::Stopped(stop.clone()));

    // Another view resumes: every view hears who did.
    s.engine().set_function_breakpoints(&[]).expect("clear");
    s.resume(agent).expect("resume");
    assert!(
        s.stop_frames().is_err() || s.has_ended(),
        "no frames while running"
    );
    let seen_a = drain(&a);
    let mut seen_b = vec![format!("{:?}", DebugEvent::Resumed { by: dap })];
    seen_b.push(format!("stopped {:?}", stop.cause));
    seen_b.extend(drain(&b));
    assert_eq!(seen_a, seen_b, "same events, same order, once each");
    let expected_tail = [
        format!("{:?}", DebugEvent::Resumed { by: agent }),
        format!("{:?}", DebugEvent::Engine(SessionEvent::Exited { code: 5 })),
        format!("{:?}", DebugEvent::Ended),
    ];
    assert!(seen_a.ends_with(&expected_tail), "{seen_a:?}");
    assert_eq!(drain(&late), expected_tail);
    assert_eq!(
        s.state(),
        DebugState::Ended {
            code: Some(5),
            signal: None
        }
    );
    assert!(s.resume(dap).is_err(), "an ended session refuses to run");
    assert!(matches!(s.stop_frames(), Err(procman::Error::Ended)));
    assert!(m.paused_debuggees().is_empty());
    assert!(m.debug_sessions().is_empty());

    // The manager's stream: stop, resumes, end of this session.
    let mut kinds = Vec::new();
    while let Ok(ev) = bus.recv_timeout(Duration::from_millis(200)) {
        kinds.push(match ev {
            ManagerEvent::DebugStopped { tid, .. } => {
                assert_eq!(tid, stop.tid);
                "stopped"
            }
            ManagerEvent::DebugResumed { .. } => "resumed",
            ManagerEvent::DebugEnded { session, .. } => {
                assert_eq!(session, s.id());
                "ended"
            }
            other => panic!("unexpected {other:?}"),
        });
    }
    assert_eq!(kinds, ["resumed", "stopped", "resumed", "ended"]);
    // A subscriber after the end gets a closed stream and the final state.
    let (state, rx) = s.subscribe_with_state();
    assert!(matches!(state, DebugState::Ended { .. }));
    assert!(rx.recv_timeout(Duration::from_millis(50)).is_err());
}

#[test]
fn breakpoint_lines_reach_every_view() {
    let sample = common::compile("proc_target", &["-g", "-O0"]);
    let src =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/c/proc_target.c");
    let m = ProcessManager::new();
    let bus = m.subscribe();
    let s = m.launch_debug(options(&sample.path, &[])).expect("launch");
    let rx = s.subscribe();
    // Line 8 is the body of proc_bp_target; line 500 does not exist.
    let specs: Vec<engine::SourceBreakpoint> = [8, 500]
        .iter()
        .map(|&line| engine::SourceBreakpoint {
            line,
            ..Default::default()
        })
        .collect();
    let st = s.set_line_breakpoints(&src, &specs).expect("set");
    assert!(st[0].verified && !st[1].verified);
    let DebugEvent::BreakpointLines { file, lines } = next(&rx) else {
        panic!("breakpoint lines")
    };
    assert_eq!(file, src);
    assert_eq!(lines, vec![(8, Some(8)), (500, None)]);
    loop {
        if let ManagerEvent::BreakpointLines { lines: l, .. } = next(&bus) {
            assert_eq!(l, lines);
            break;
        }
    }
    s.terminate().expect("terminate");
    // The kill may be seen by the engine first (SIGKILL), then the end.
    let mut ev = next(&rx);
    if ev == DebugEvent::Engine(SessionEvent::Signaled { signo: 9 }) {
        ev = next(&rx);
    }
    assert_eq!(ev, DebugEvent::Ended);
    assert!(matches!(s.state(), DebugState::Ended { .. }));
    assert!(common::gone(s.pid().0));
}

#[test]
fn shutdown_kills_launched_and_detaches_attached() {
    let spin = common::compile("proc_spin", &["-g", "-O0"]);
    let other = common::Child::spawn(&spin.path);
    let m = ProcessManager::new();
    let me = ViewId::new();
    let mut launched = Vec::new();
    let mut keep = Vec::new();
    for _ in 0..2 {
        let s = m.launch_debug(options(&spin.path, &[])).expect("launch");
        s.resume(me).expect("resume");
        launched.push(s.pid().0);
        keep.push(s);
    }
    let a = m
        .attach_debug(Pid(other.pid()), SourceMap::default())
        .expect("attach");
    assert!(
        matches!(a.state(), DebugState::Stopped(ref stop) if stop.cause == StopCause::Attached)
    );
    // Leave a breakpoint in the attached process: detaching must remove it.
    a.engine()
        .set_function_breakpoints(&[FunctionBreakpoint {
            name: "proc_spin_work".into(),
            ..FunctionBreakpoint::default()
        }])
        .expect("bp");
    let ended = a.subscribe();
    keep.push(a);
    std::thread::sleep(Duration::from_millis(50));
    m.shutdown();
    for pid in launched {
        assert!(common::gone(pid), "launched {pid} killed and reaped");
    }
    assert_eq!(next(&ended), DebugEvent::Ended);
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        common::running_untraced(other.pid()),
        "attached one keeps running"
    );
    // Sessions handed out still answer, with an error.
    assert!(keep[0].resume(me).is_err());
    assert!(m.debug_sessions().is_empty());
}

#[test]
fn dropping_the_manager_ends_everything() {
    let spin = common::compile("proc_spin", &["-g", "-O0"]);
    let other = common::Child::spawn(&spin.path);
    let m = ProcessManager::new();
    let s = m.launch_debug(options(&spin.path, &[])).expect("launch");
    s.resume(ViewId::new()).expect("resume");
    let a = m
        .attach_debug(Pid(other.pid()), SourceMap::default())
        .expect("attach");
    let pid = s.pid().0;
    drop(m);
    assert!(common::gone(pid));
    assert!(common::running_untraced(other.pid()));
    drop((s, a));
}

#[test]
fn dropping_the_last_session_handle_ends_it() {
    let spin = common::compile("proc_spin", &["-g", "-O0"]);
    let other = common::Child::spawn(&spin.path);
    let m = ProcessManager::new();
    let s = m.launch_debug(options(&spin.path, &[])).expect("launch");
    let s2 = m.debug_session(s.id()).expect("second handle");
    let pid = s.pid().0;
    drop(s);
    assert_eq!(common::state(pid), Some('t'), "a handle is left");
    drop(s2);
    assert!(common::gone(pid));
    let a = m
        .attach_debug(Pid(other.pid()), SourceMap::default())
        .expect("attach");
    drop(a);
    assert!(common::running_untraced(other.pid()));
}

#[test]
fn detaching_can_leave_the_process_stopped_or_ask_it_to_end() {
    let spin = common::compile("proc_spin", &["-g", "-O0"]);
    let m = ProcessManager::new();
    let mut stopped = common::Child::spawn(&spin.path);
    let a = m
        .attach_debug(Pid(stopped.pid()), SourceMap::default())
        .expect("attach");
    a.end(EndMode::DetachStopped).expect("detach stopped");
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        common::state(stopped.pid()),
        Some('T'),
        "stopped, waiting for SIGCONT"
    );
    assert_eq!(
        tracer::procfs::tracer_of(Pid(stopped.pid())),
        Some(0),
        "untraced"
    );
    let mut asked = common::Child::spawn(&spin.path);
    let b = m
        .attach_debug(Pid(asked.pid()), SourceMap::default())
        .expect("attach");
    b.end(EndMode::DetachTerminate)
        .expect("detach and terminate");
    let status = asked.0.wait().expect("wait");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGTERM));
    let _ = stopped.0.kill();
}

#[test]
fn attach_errors_pass_through() {
    let m = ProcessManager::new();
    let me = Pid(std::process::id() as i32);
    let err = m.attach_debug(me, SourceMap::default()).expect_err("eperm");
    assert!(err.to_string().contains("not permitted"), "{err}");
}

#[test]
fn sessions_and_the_manager_cross_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<procman::DebugSession>();
    assert_send_sync::<ProcessManager>();
    assert_send_sync::<procman::ShutdownHandle>();
    assert_send_sync::<ManagerEvent>();
    assert_send_sync::<DebugEvent>();
}

#[test]
fn a_resume_always_precedes_the_stop_it_leads_to() {
    // Two views take turns resuming from their own threads, each right at the stop it
    // sees; a third only watches. Every stop must come after the resume that led to it:
    // the watcher sees Resumed and Stopped strictly alternate.
    let sample = common::compile("proc_target", &["-g", "-O0"]);
    let m = ProcessManager::new();
    let s = m
        .launch_debug(options(&sample.path, &["200", "0"]))
        .expect("launch");
    let _starter = s.subscribe();
    let watcher = s.subscribe();
    s.engine()
        .set_function_breakpoints(&[FunctionBreakpoint {
            name: "proc_bp_target".into(),
            ..FunctionBreakpoint::default()
        }])
        .expect("breakpoint");
    let views: Vec<_> = (0..2)
        .map(|n| {
            let s = s.clone();
            let rx = s.subscribe();
            std::thread::spawn(move || {
                let me = ViewId::new();
                let mut turn = 0usize;
                loop {
                    match rx.recv_timeout(Duration::from_secs(10)).expect("event") {
                        DebugEvent::Engine(SessionEvent::Stopped(_)) => {
                            if turn % 2 == n {
                                s.resume(me).expect("resume");
                            }
                            turn += 1;
                        }
                        DebugEvent::Ended => return turn,
                        _ => {}
                    }
                }
            })
        })
        .collect();
    s.resume(ViewId::new()).expect("first resume");
    let mut last = "stopped";
    let mut stops = 0;
    loop {
        match next(&watcher) {
            DebugEvent::Resumed { .. } => {
                assert_eq!(last, "stopped", "a resume follows a stop");
                last = "resumed";
            }
            DebugEvent::Engine(SessionEvent::Stopped(_)) => {
                assert_eq!(last, "resumed", "a stop follows its resume");
                last = "stopped";
                stops += 1;
            }
            DebugEvent::Ended => break,
            _ => {}
        }
    }
    assert_eq!(stops, 200);
    for v in views {
        assert_eq!(v.join().expect("view"), 200);
    }
}

#[test]
fn the_owner_can_keep_the_program_output_for_late_views() {
    let sample = common::compile("proc_target", &["-g", "-O0"]);
    let m = ProcessManager::new();
    let s = m
        .launch_debug(LaunchOptions {
            stdio: StdioMode::Pipes,
            ..options(&sample.path, &["2", "4"])
        })
        .expect("launch");
    let rx = s.subscribe();
    assert!(s.capture_output());
    assert!(!s.capture_output(), "the streams are read once");
    s.resume(ViewId::new()).expect("resume");
    let mut text = String::new();
    loop {
        match next(&rx) {
            DebugEvent::Output {
                stream: procman::OutputStream::Stdout,
                text: t,
            } => text.push_str(&t),
            DebugEvent::Ended => break,
            _ => {}
        }
    }
    // The exit may be seen before the last read: wait for the kept output.
    for _ in 0..100 {
        if s.output().concat().contains("done 1") {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(s.output().concat(), "done 1\n");
    assert!(text.is_empty() || text == "done 1\n", "{text:?}");
}
