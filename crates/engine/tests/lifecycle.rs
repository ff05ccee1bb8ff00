//! Attach, pause, detach, modules and breakpoint lines on real processes.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use engine::{Session, SessionEvent, SourceBreakpoint, StopCause};
use tracer::Pid;

struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn attach_break_detach_keeps_the_process_running() {
    let sample = common::compile("eng_bench", &["-g", "-O0"]);
    let mut child = Child(
        Command::new(&sample.path)
            .arg("2000000000")
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    std::thread::sleep(Duration::from_millis(50));
    let pid = Pid(child.0.id() as i32);
    let session = Session::attach(pid, Default::default()).unwrap();
    let st = session
        .set_line_breakpoints(
            &sample.source,
            &[SourceBreakpoint {
                line: 8,
                ..Default::default()
            }],
        )
        .unwrap();
    session.resume().unwrap();
    let stop = common::expect_stop(&session);
    assert_eq!(stop.cause, StopCause::Breakpoint(vec![st[0].id]));
    let frames = session.stack_trace(stop.tid).unwrap();
    assert_eq!(frames[0].function.as_deref(), Some("work"));
    assert_eq!(frames[1].function.as_deref(), Some("main"));
    session.detach().unwrap();
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        child.0.try_wait().unwrap().is_none(),
        "still running after detach"
    );
    assert_eq!(tracer::procfs::tracer_of(pid), Some(0));
}

#[test]
fn pause_stops_a_running_process() {
    let sample = common::compile("eng_bench", &["-g", "-O0"]);
    let session = engine::Session::launch(engine::LaunchOptions {
        program: sample.path.clone(),
        args: vec!["2000000000".into()],
        stdio: tracer::StdioMode::Null,
        ..Default::default()
    })
    .unwrap();
    assert!(session.resume().is_ok());
    assert!(matches!(
        session.stack_trace(tracer::Tid(pid_of(&session))),
        Err(engine::Error::Running)
    ));
    std::thread::sleep(Duration::from_millis(30));
    session.pause().unwrap();
    let stop = common::expect_stop(&session);
    assert_eq!(stop.cause, StopCause::Pause);
    let frames = session.stack_trace(stop.tid).unwrap();
    assert!(frames.iter().any(|f| f.function.as_deref() == Some("main")));
    session.terminate().unwrap();
}

fn pid_of(session: &Session) -> i32 {
    session.pid().0
}

#[test]
fn modules_and_breakpoint_lines() {
    let sample = common::compile("eng_steps", &["-g", "-O0"]);
    let session = common::launch(&sample);
    let modules = session.modules();
    assert!(modules[0].main);
    assert!(modules
        .iter()
        .any(|m| m.path.to_string_lossy().contains("libc.so")));
    let lines: Vec<u32> = session
        .breakpoint_lines(&sample.source)
        .unwrap()
        .iter()
        .map(|l| l.get())
        .collect();
    assert!(
        lines.contains(&9) && lines.contains(&37) && !lines.contains(&13),
        "{lines:?}"
    );
    session.resume().unwrap();
    assert_eq!(
        session.wait_stop(common::STOP).unwrap(),
        SessionEvent::Exited { code: 5 }
    );
    assert!(matches!(session.resume(), Err(engine::Error::Exited)));
}

#[test]
fn pending_breakpoint_in_a_dlopened_library_resolves_and_hits() {
    let main = common::compile("eng_dlopen", &["-g", "-O0"]);
    let lib = main.dir.path().join("libplugin.so");
    let src = common::samples_dir()
        .join("eng_plugin.c")
        .canonicalize()
        .unwrap();
    let out = Command::new("gcc")
        .args(["-g", "-O0", "-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(&src)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let session = engine::Session::launch(engine::LaunchOptions {
        program: main.path.clone(),
        args: vec![lib.clone().into_os_string()],
        stdio: tracer::StdioMode::Null,
        ..Default::default()
    })
    .unwrap();
    let line = session
        .set_line_breakpoints(
            &src,
            &[SourceBreakpoint {
                line: 6,
                ..Default::default()
            }],
        )
        .unwrap();
    assert!(!line[0].verified);
    assert!(line[0]
        .message
        .as_deref()
        .unwrap_or("")
        .starts_with("pending"));
    let func = session
        .set_function_breakpoints(&[engine::FunctionBreakpoint {
            name: "plugin_add".into(),
            ..Default::default()
        }])
        .unwrap();
    assert!(!func[0].verified);
    session.resume().unwrap();
    let mut resolved = Vec::new();
    let stop = loop {
        match session.events().recv_timeout(common::STOP).unwrap() {
            SessionEvent::BreakpointResolved(st) => resolved.push(st),
            SessionEvent::Stopped(stop) => break stop,
            other => panic!("{other:?}"),
        }
    };
    let mut ids: Vec<_> = resolved.iter().map(|s| s.id).collect();
    ids.sort();
    assert_eq!(ids, vec![line[0].id, func[0].id]);
    assert!(resolved
        .iter()
        .all(|s| s.verified && s.line.map(|l| l.get()) == Some(6)));
    // Both breakpoints sit after the prologue, on line 6.
    let StopCause::Breakpoint(mut hit) = stop.cause else {
        panic!("{stop:?}")
    };
    hit.sort();
    assert_eq!(hit, ids);
    let frames = session.stack_trace(stop.tid).unwrap();
    assert_eq!(frames[0].function.as_deref(), Some("plugin_add"));
    assert_eq!(frames[0].module.as_deref(), Some("libplugin.so"));
    assert_eq!(frames[1].function.as_deref(), Some("main"));
    let f = frames[0].id;
    assert_eq!(session.evaluate(f, "a * 10 + b").unwrap().rendered, "45");
    assert_eq!(session.evaluate(f, "plugin_scale").unwrap().rendered, "3");
    session.resume().unwrap();
    assert_eq!(
        session.wait_stop(common::STOP).unwrap(),
        SessionEvent::Exited { code: 27 }
    );
}
