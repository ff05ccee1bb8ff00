//! Eight threads hitting one breakpoint 1,000 times each: all-stop, every hit once.

mod common;

use std::collections::{HashMap, HashSet};
use tracer::{Event, LaunchConfig, RuntimeAddr, StopAt, StopReason, Tracer};

#[test]
fn eight_threads_one_breakpoint() {
    let sample = common::compile("proc_threads", &["-g", "-O0", "-pthread"]);
    let config = LaunchConfig {
        program: sample.path.clone(),
        args: vec!["1000".into()],
        stop_at: StopAt::Entry,
        ..LaunchConfig::default()
    };
    let (mut t, _io) = Tracer::launch(&config).expect("launch");
    let pid = t.pid();
    t.wait().expect("entry");
    let bias = t.info().load_bias.expect("bias");
    let func = RuntimeAddr(common::symbol(&sample.path, "proc_thread_hit") + bias);
    t.insert_breakpoint(func).expect("insert");
    t.resume().expect("resume");

    let mut hits: HashMap<tracer::Tid, u64> = HashMap::new();
    let mut index_of: HashMap<tracer::Tid, u64> = HashMap::new();
    let mut created = HashSet::new();
    let mut exited = HashSet::new();
    let code = loop {
        match t.wait().expect("event") {
            Event::Stopped {
                tid,
                reason: StopReason::Breakpoint { addr },
            } => {
                assert_eq!(addr, func);
                let regs = t.regs(tid).expect("regs");
                assert_eq!(regs.pc(), func.0);
                // The same thread always passes the same index: the hit is reported
                // for the thread that made it.
                let index = regs.0.rdi;
                assert!(index < 8);
                assert_eq!(*index_of.entry(tid).or_insert(index), index);
                *hits.entry(tid).or_default() += 1;
                // All-stop: every other thread is in a ptrace-stop ('t').
                for other in t.threads() {
                    if let Some(s) = tracer::procfs::task_state(pid, other) {
                        assert!(s == 't' || s == 'Z' || s == 'X', "thread {other} is {s}");
                    }
                }
                t.resume().expect("resume");
            }
            Event::ThreadCreated { tid, parent } => {
                assert_eq!(parent.0, pid.0);
                created.insert(tid);
            }
            Event::ThreadExited { tid } => {
                exited.insert(tid);
            }
            Event::Exited { code } => break code,
            other => panic!("unexpected {other:?}"),
        }
    };
    assert_eq!(code, 0, "the program counted 1000 calls per thread");
    assert_eq!(hits.len(), 8, "{hits:?}");
    assert!(hits.values().all(|&n| n == 1000), "{hits:?}");
    let indices: HashSet<u64> = index_of.values().copied().collect();
    assert_eq!(indices.len(), 8);
    assert_eq!(created.len(), 8);
    assert_eq!(exited, created, "every created thread exited");
}

#[test]
fn main_thread_exits_first() {
    // The main thread calls pthread_exit and stays a zombie until the worker is
    // done: all-stop must not wait for it to stop.
    let sample = common::compile("proc_leader_exit", &["-g", "-O0", "-pthread"]);
    let config = LaunchConfig {
        program: sample.path.clone(),
        stop_at: StopAt::Entry,
        ..LaunchConfig::default()
    };
    let (mut t, _io) = Tracer::launch(&config).expect("launch");
    t.wait().expect("entry");
    let bias = t.info().load_bias.expect("bias");
    let func = RuntimeAddr(common::symbol(&sample.path, "proc_worker_step") + bias);
    t.insert_breakpoint(func).expect("insert");
    t.resume().expect("resume");
    let mut hits = 0;
    let code = loop {
        match t.wait().expect("event") {
            Event::Stopped {
                reason: StopReason::Breakpoint { .. },
                tid,
            } => {
                assert_ne!(tid.0, t.pid().0, "the worker hits");
                hits += 1;
                t.resume().expect("resume");
            }
            Event::Exited { code } => break code,
            _ => {}
        }
    };
    assert_eq!(hits, 50);
    assert_eq!(code, 0);
}
