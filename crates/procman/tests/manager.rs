//! Sessions, the shared event stream, output capture, ending on every path.

mod common;

use procman::{ManagerEvent, OutputStream, ProcessManager};
use std::time::Duration;
use tracer::{AttachConfig, Event, LaunchConfig, Pid, StdioMode, StopAt, StopReason};

fn config(path: &std::path::Path, args: &[&str]) -> LaunchConfig {
    LaunchConfig {
        program: path.to_path_buf(),
        args: args.iter().map(Into::into).collect(),
        stop_at: StopAt::Entry,
        ..LaunchConfig::default()
    }
}

fn next(rx: &crossbeam_channel::Receiver<ManagerEvent>) -> ManagerEvent {
    rx.recv_timeout(Duration::from_secs(10)).expect("event")
}

#[test]
fn two_subscribers_see_stops_output_and_exit() {
    let sample = common::compile("proc_target", &["-g", "-O0"]);
    let m = ProcessManager::new();
    let a = m.subscribe();
    let b = m.subscribe();
    let s = m.launch(config(&sample.path, &["2", "5"])).expect("launch");
    let id = s.id();
    assert_eq!(m.sessions().len(), 1);
    assert!(m.session(id).is_some());
    s.target().resume().ok();
    for rx in [&a, &b] {
        let mut seen_start = false;
        let mut seen_stop = false;
        let mut out = Vec::new();
        let mut exit = None;
        while exit.is_none() || out.is_empty() {
            match next(rx) {
                ManagerEvent::Started { session, pid, .. } => {
                    assert_eq!((session, pid), (id, s.pid()));
                    seen_start = true;
                }
                ManagerEvent::Target {
                    event: Event::Stopped { reason, .. },
                    ..
                } => {
                    assert!(seen_start, "Started comes first");
                    assert_eq!(reason, StopReason::Entry);
                    seen_stop = true;
                }
                ManagerEvent::Target {
                    event: Event::Exited { code },
                    ..
                } => exit = Some(code),
                ManagerEvent::Output { stream, data, .. } => {
                    assert_eq!(stream, OutputStream::Stdout);
                    out.extend(data);
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        assert!(seen_start && seen_stop);
        assert_eq!(exit, Some(5));
        assert_eq!(out, b"done 1\n");
    }
    drop(s);
    assert!(matches!(next(&a), ManagerEvent::Ended { session } if session == id));
    assert!(m.sessions().is_empty());
}

#[test]
fn stdin_reaches_the_debuggee_through_a_pty() {
    // cat echoes what it reads; on a pty the line discipline echoes it too.
    let m = ProcessManager::new();
    let rx = m.subscribe();
    let s = m
        .launch(LaunchConfig {
            program: "cat".into(),
            stdio: StdioMode::Pty,
            stop_at: StopAt::Exec,
            ..LaunchConfig::default()
        })
        .expect("launch cat");
    s.target().resume().expect("resume");
    s.write_stdin(b"hello\n").expect("stdin");
    let mut got = Vec::new();
    while !String::from_utf8_lossy(&got).contains("hello") {
        if let ManagerEvent::Output { stream, data, .. } = next(&rx) {
            assert_eq!(stream, OutputStream::Pty);
            got.extend(data);
        }
    }
    s.end().expect("end");
    assert!(common::gone(s.pid().0));
}

#[test]
fn shutdown_kills_launched_and_detaches_attached() {
    let spin = common::compile("proc_spin", &["-g", "-O0"]);
    let other = common::Child::spawn(&spin.path);
    let m = ProcessManager::new();
    let mut launched = Vec::new();
    let mut keep = Vec::new();
    for _ in 0..2 {
        let s = m
            .launch(LaunchConfig {
                stdio: StdioMode::Null,
                ..config(&spin.path, &[])
            })
            .expect("launch");
        s.target().resume().expect("resume");
        launched.push(s.pid().0);
        keep.push(s);
    }
    let a = m
        .attach(Pid(other.pid()), AttachConfig::default())
        .expect("attach");
    // Leave a breakpoint in the attached process: detaching must remove it.
    let bias = a.target().info().load_bias.expect("bias");
    let sym = symbol(&spin.path, "proc_spin_work");
    a.target()
        .insert_breakpoint(tracer::RuntimeAddr(sym + bias))
        .expect("bp");
    a.target().resume().expect("resume");
    keep.push(a);
    std::thread::sleep(Duration::from_millis(50));
    m.shutdown();
    for pid in launched {
        assert!(common::gone(pid), "launched {pid} killed and reaped");
    }
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        common::running_untraced(other.pid()),
        "attached one keeps running"
    );
    // Sessions handed out still answer, with an error.
    assert!(keep[0].target().resume().is_err());
}

#[test]
fn dropping_the_manager_ends_everything() {
    let spin = common::compile("proc_spin", &["-g", "-O0"]);
    let other = common::Child::spawn(&spin.path);
    let m = ProcessManager::new();
    let s = m.launch(config(&spin.path, &[])).expect("launch");
    s.target().resume().expect("resume");
    let a = m
        .attach(Pid(other.pid()), AttachConfig::default())
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
    let s = m.launch(config(&spin.path, &[])).expect("launch");
    let s2 = m.session(s.id()).expect("second handle");
    let pid = s.pid().0;
    drop(s);
    assert_eq!(common::state(pid), Some('t'), "a handle is left");
    drop(s2);
    assert!(common::gone(pid));
    let a = m
        .attach(Pid(other.pid()), AttachConfig::default())
        .expect("attach");
    drop(a);
    assert!(common::running_untraced(other.pid()));
}

#[test]
fn attach_errors_pass_through() {
    let m = ProcessManager::new();
    let me = Pid(std::process::id() as i32);
    let err = m.attach(me, AttachConfig::default()).expect_err("eperm");
    assert!(err.to_string().contains("operation not permitted"), "{err}");
}

fn symbol(path: &std::path::Path, name: &str) -> u64 {
    use object::{Object, ObjectSymbol};
    let data = std::fs::read(path).expect("read");
    let file = object::File::parse(&*data).expect("elf");
    file.symbols()
        .find(|s| s.name() == Ok(name))
        .map(|s| s.address())
        .expect("symbol")
}

#[test]
fn a_followed_fork_child_becomes_its_own_session() {
    let sample = common::compile("proc_fork", &["-g", "-O0"]);
    let m = ProcessManager::new();
    let rx = m.subscribe();
    let parent = m
        .launch(LaunchConfig {
            fork_policy: tracer::ForkPolicy::Follow,
            stdio: StdioMode::Null,
            ..config(&sample.path, &["fork"])
        })
        .expect("launch");
    // Every stop (the parent's entry, the child's attach) is resumed in the loop.
    let mut child_session = None;
    let mut exits = std::collections::HashMap::new();
    while exits.len() < 2 {
        match next(&rx) {
            ManagerEvent::Target {
                event:
                    Event::ForkDetached {
                        child,
                        stopped: true,
                        ..
                    },
                ..
            } => {
                let s = m
                    .attach_fork_child(child, tracer::ForkPolicy::Detach)
                    .expect("follow");
                child_session = Some(s);
            }
            ManagerEvent::Target {
                session,
                event: Event::Stopped { .. },
            } => {
                let s = m.session(session).expect("session");
                s.target().resume().expect("resume");
            }
            ManagerEvent::Target {
                session,
                event: Event::Exited { code },
            } => {
                exits.insert(session, code);
            }
            _ => {}
        }
    }
    let child = child_session.expect("child session");
    assert_eq!(exits.get(&child.id()), Some(&3));
    assert_eq!(exits.get(&parent.id()), Some(&13));
}

#[test]
fn sessions_and_the_manager_cross_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<procman::Session>();
    assert_send_sync::<ProcessManager>();
    assert_send_sync::<procman::ShutdownHandle>();
    assert_send_sync::<ManagerEvent>();
}
