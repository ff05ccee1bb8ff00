//! The tracer thread and its Send handle: pause within 100 ms, several debuggees at
//! once, other children of the test process unaffected by the tracers' waits.

mod common;

use crossbeam_channel::Receiver;
use std::time::{Duration, Instant};
use tracer::{Event, LaunchConfig, RuntimeAddr, StopAt, StopReason, TracerHandle};

fn launch(
    sample: &common::Sample,
    args: &[&str],
) -> (TracerHandle, Receiver<Event>, tracer::LaunchInfo) {
    let (tx, rx) = crossbeam_channel::unbounded();
    let config = LaunchConfig {
        program: sample.path.clone(),
        args: args.iter().map(Into::into).collect(),
        stop_at: StopAt::Entry,
        ..LaunchConfig::default()
    };
    let (h, io) = tracer::spawn_launch(
        config,
        Box::new(move |_tracer: &mut tracer::Tracer, ev| {
            let _ = tx.send(ev);
        }),
    )
    .expect("launch");
    (h, rx, io)
}

fn next(rx: &Receiver<Event>) -> Event {
    rx.recv_timeout(Duration::from_secs(10)).expect("event")
}

#[test]
fn pause_a_busy_loop_within_100ms() {
    let sample = common::compile("proc_spin", &["-g", "-O0"]);
    let (h, rx, _io) = launch(&sample, &[]);
    let pid = h.pid();
    assert!(matches!(
        next(&rx),
        Event::Stopped {
            reason: StopReason::Entry,
            ..
        }
    ));
    for _ in 0..5 {
        h.resume().expect("resume");
        std::thread::sleep(Duration::from_millis(30));
        let start = Instant::now();
        assert!(h.pause().expect("pause"));
        let ev = next(&rx);
        let took = start.elapsed();
        assert_eq!(
            ev,
            Event::Stopped {
                tid: pid.into(),
                reason: StopReason::Paused
            }
        );
        assert!(took < Duration::from_millis(100), "pause took {took:?}");
        assert_eq!(common::state(pid.0), Some('t'));
        // Stopped: a second pause is a no-op.
        assert!(!h.pause().expect("pause"));
        let pc = h.regs(pid.into()).expect("regs").pc();
        assert_ne!(pc, 0);
    }
    h.end(tracer::EndMode::Default).expect("end");
    assert_eq!(common::state(pid.0), None, "killed and reaped");
    assert!(matches!(h.resume(), Err(tracer::Error::TracerGone)));
}

#[test]
fn several_debuggees_at_once_and_other_children_still_waitable() {
    let sample = common::compile("proc_target", &["-g", "-O0"]);
    let runs: Vec<_> = (0..3)
        .map(|i| {
            let s = &sample;
            // Keep the pipes open: the program prints, and would get SIGPIPE.
            let (h, rx, io) = launch(s, &["200", &format!("{}", 20 + i)]);
            (h, rx, i, io)
        })
        .collect();
    let workers: Vec<_> = runs
        .into_iter()
        .map(|(h, rx, i, io)| {
            let path = sample.path.clone();
            std::thread::spawn(move || {
                assert!(matches!(next(&rx), Event::Stopped { .. }));
                let bias = h.info().load_bias.expect("bias");
                let func = RuntimeAddr(common::symbol(&path, "proc_bp_target") + bias);
                h.insert_breakpoint(func).expect("insert");
                h.resume().expect("resume");
                let mut hits = 0;
                loop {
                    match next(&rx) {
                        Event::Stopped {
                            reason: StopReason::Breakpoint { addr },
                            ..
                        } => {
                            assert_eq!(addr, func);
                            hits += 1;
                            h.resume().expect("resume");
                        }
                        Event::Exited { code } => {
                            assert_eq!(code, 20 + i);
                            break;
                        }
                        other => panic!("unexpected {other:?}"),
                    }
                }
                assert_eq!(hits, 200);
                drop(io);
            })
        })
        .collect();
    // Meanwhile, an ordinary child of this process is waited for by std: the tracer
    // threads' waits (__WNOTHREAD) must not steal its exit status.
    for _ in 0..5 {
        let status = std::process::Command::new("true").status().expect("true");
        assert!(status.success());
    }
    for w in workers {
        w.join().expect("worker");
    }
}

#[test]
fn dropping_the_handle_kills_a_running_debuggee() {
    let sample = common::compile("proc_spin", &["-g", "-O0"]);
    let (h, rx, _io) = launch(&sample, &[]);
    let pid = h.pid();
    next(&rx);
    h.resume().expect("resume");
    std::thread::sleep(Duration::from_millis(20));
    drop(h);
    assert_eq!(common::state(pid.0), None);
}

#[test]
fn sigkill_while_stopped_through_the_handle() {
    let sample = common::compile("proc_spin", &["-g", "-O0"]);
    let (h, rx, _io) = launch(&sample, &[]);
    let pid = h.pid();
    next(&rx);
    // SAFETY: kill(2) of our debuggee.
    unsafe { libc::kill(pid.0, libc::SIGKILL) };
    // The tracer thread notices the death on its own, without a command.
    assert_eq!(
        next(&rx),
        Event::Signaled {
            signo: libc::SIGKILL,
            core_dumped: false
        }
    );
    assert_eq!(common::state(pid.0), None, "reaped");
    assert!(h.resume().is_err());
}

#[test]
fn pause_stops_every_thread_of_a_busy_process() {
    let sample = common::compile("proc_threads", &["-g", "-O0", "-pthread"]);
    let (h, rx, _io) = launch(&sample, &["1000000000"]);
    let pid = h.pid();
    next(&rx);
    h.resume().expect("resume");
    // Let the eight workers start.
    let start = Instant::now();
    while tracer::procfs::threads_of(pid).expect("tasks").len() < 9 {
        assert!(start.elapsed() < Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(20));
    let start = Instant::now();
    assert!(h.pause().expect("pause"));
    let ev = loop {
        match next(&rx) {
            Event::ThreadCreated { .. } => continue,
            ev => break ev,
        }
    };
    let took = start.elapsed();
    assert!(
        matches!(
            ev,
            Event::Stopped {
                reason: StopReason::Paused,
                ..
            }
        ),
        "{ev:?}"
    );
    // Latency is the single-threaded test's business (100 ms); nine threads on a
    // loaded 2-core machine get more slack here.
    assert!(took < Duration::from_secs(1), "pause took {took:?}");
    let threads = h.threads().expect("threads");
    assert_eq!(threads.len(), 9);
    for tid in threads {
        assert_eq!(
            tracer::procfs::task_state(pid, tid),
            Some('t'),
            "thread {tid}"
        );
        h.regs(tid).expect("every thread's registers are readable");
    }
    h.end(tracer::EndMode::Kill).expect("kill");
    assert_eq!(common::state(pid.0), None);
}

#[test]
fn the_handle_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<TracerHandle>();
    assert_send_sync::<Event>();
}

#[test]
fn the_sink_decides_on_the_tracer_thread() {
    // A conditional breakpoint, engine-style: the sink resumes at once when the
    // condition (first argument even) is false; only true hits cross threads.
    let sample = common::compile("proc_target", &["-g", "-O0"]);
    let (tx, rx) = crossbeam_channel::unbounded();
    let config = LaunchConfig {
        program: sample.path.clone(),
        args: vec!["10".into(), "0".into()],
        stop_at: StopAt::Entry,
        stdio: tracer::StdioMode::Null,
        ..LaunchConfig::default()
    };
    let (h, _io) = tracer::spawn_launch(
        config,
        Box::new(move |t: &mut tracer::Tracer, ev| {
            if let Event::Stopped {
                tid,
                reason: StopReason::Breakpoint { .. },
            } = ev
            {
                let arg = t.regs(tid).expect("regs").0.rdi;
                if arg % 2 == 1 {
                    t.resume().expect("resume");
                    return;
                }
            }
            let _ = tx.send(ev);
        }),
    )
    .expect("launch");
    next(&rx);
    let func = RuntimeAddr(
        common::symbol(&sample.path, "proc_bp_target") + h.info().load_bias.expect("bias"),
    );
    h.insert_breakpoint(func).expect("bp");
    h.resume().expect("resume");
    let mut args = Vec::new();
    loop {
        match next(&rx) {
            Event::Stopped { tid, .. } => {
                args.push(h.regs(tid).expect("regs").0.rdi);
                h.resume().expect("resume");
            }
            Event::Exited { code } => {
                assert_eq!(code, 0);
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(args, vec![0, 2, 4, 6, 8]);
}
