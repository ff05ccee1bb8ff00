//! Signal policy (stop/pass per signal) and job-control stops under SEIZE.

mod common;

use std::time::Duration;
use tracer::{Event, LaunchConfig, SignalPolicy, StopAt, StopReason, Tracer};

fn launch(sample: &common::Sample) -> Tracer {
    let config = LaunchConfig {
        program: sample.path.clone(),
        stop_at: StopAt::Entry,
        ..LaunchConfig::default()
    };
    let (mut t, _io) = Tracer::launch(&config).expect("launch");
    t.wait().expect("entry");
    t
}

#[test]
fn signals_stop_and_pass_by_default() {
    let sample = common::compile("proc_signal", &["-g", "-O0"]);
    let mut t = launch(&sample);
    let mut stops = 0;
    let code = loop {
        t.resume().expect("resume");
        match t.wait().expect("event") {
            Event::Stopped {
                reason: StopReason::Signal { signo, .. },
                ..
            } => {
                assert_eq!(signo, libc::SIGUSR1);
                stops += 1;
            }
            Event::Exited { code } => break code,
            other => panic!("unexpected {other:?}"),
        }
    };
    assert_eq!(stops, 3);
    assert_eq!(code, 3, "every signal was delivered");
}

#[test]
fn signals_can_be_suppressed_silently() {
    let sample = common::compile("proc_signal", &["-g", "-O0"]);
    let mut t = launch(&sample);
    t.set_signal_policy(
        libc::SIGUSR1,
        SignalPolicy {
            stop: false,
            pass: false,
        },
    );
    t.resume().expect("resume");
    assert_eq!(t.wait().expect("exit"), Event::Exited { code: 0 });
}

#[test]
fn a_stopped_signal_can_be_withheld() {
    let sample = common::compile("proc_signal", &["-g", "-O0"]);
    let mut t = launch(&sample);
    t.resume().expect("resume");
    let tid = match t.wait().expect("signal") {
        Event::Stopped { tid, .. } => tid,
        other => panic!("unexpected {other:?}"),
    };
    t.set_pending_signal(tid, None).expect("withhold");
    t.set_signal_policy(
        libc::SIGUSR1,
        SignalPolicy {
            stop: false,
            pass: true,
        },
    );
    t.resume().expect("resume");
    assert_eq!(t.wait().expect("exit"), Event::Exited { code: 2 });
}

#[test]
fn group_stop_listens_until_sigcont() {
    let sample = common::compile("proc_spin", &["-g", "-O0"]);
    let mut t = launch(&sample);
    let pid = t.pid();
    t.resume().expect("resume");
    std::thread::sleep(Duration::from_millis(20));
    // SAFETY: kill(2) of our debuggee.
    unsafe { libc::kill(pid.0, libc::SIGSTOP) };
    assert_eq!(
        t.wait().expect("group stop"),
        Event::Stopped {
            tid: pid.into(),
            reason: StopReason::GroupStop {
                signo: libc::SIGSTOP
            }
        }
    );
    // Resumed with PTRACE_LISTEN: still stopped by job control.
    t.resume().expect("listen");
    let bias = t.info().load_bias.expect("bias");
    let counter = tracer::RuntimeAddr(common::symbol(&sample.path, "proc_spin_counter") + bias);
    let read = |t: &Tracer| {
        let mut b = [0u8; 8];
        // Reading memory needs no stop: process_vm_readv.
        t.read_memory(counter, &mut b).expect("read");
        u64::from_le_bytes(b)
    };
    let a = read(&t);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(read(&t), a, "still stopped after LISTEN");
    assert!(t.poll().expect("poll").is_none());
    // SIGCONT ends the job-control stop; the program runs again.
    // SAFETY: kill(2) of our debuggee.
    unsafe { libc::kill(pid.0, libc::SIGCONT) };
    let start = std::time::Instant::now();
    loop {
        let _ = t.poll().expect("poll");
        if read(&t) != a {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(5), "did not continue");
        std::thread::sleep(Duration::from_millis(5));
    }
    // And it can be paused again.
    assert!(t.interrupt().expect("pause"));
    assert_eq!(
        t.wait().expect("paused"),
        Event::Stopped {
            tid: pid.into(),
            reason: StopReason::Paused
        }
    );
}
