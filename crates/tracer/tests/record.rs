//! Recording and replay: a program that reads a file, the time, its pid and getrandom()
//! is recorded; going back to an earlier breakpoint hit shows exactly the state it had
//! there, going forward again reaches the later hits and then the live process, and the
//! program's output happens once. Snapshots and replays are gone after the end.

mod common;

use std::io::Read;
use tracer::{Event, LaunchConfig, Position, RuntimeAddr, StopAt, StopReason, Tracer};

/// What a hit of `note(i, r)` shows: its arguments and the global sum.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
struct Seen {
    i: u64,
    r: u64,
    sum: u64,
}

fn seen(t: &mut Tracer, sum_addr: RuntimeAddr) -> Seen {
    let tid = t.threads()[0];
    let regs = t.regs(tid).expect("regs");
    let mut b = [0u8; 8];
    t.read_memory(sum_addr, &mut b).expect("g_sum");
    Seen {
        i: regs.0.rdi & 0xffff_ffff,
        r: regs.0.rsi & 0xffff_ffff,
        sum: u64::from_le_bytes(b),
    }
}

fn next_hit(t: &mut Tracer, at: RuntimeAddr) {
    t.resume().expect("resume");
    loop {
        match t.wait().expect("event") {
            Event::Stopped {
                reason: StopReason::Breakpoint { addr },
                ..
            } if addr == at => return,
            Event::Stopped { reason, .. } => {
                panic!("unexpected stop {reason:?}: {:?}", t.recording())
            }
            ev if ev.is_exit() => panic!("exited early: {ev:?}"),
            _ => {}
        }
    }
}

/// The processes whose parent is `pid` (snapshots are the tracer's children, made with
/// CLONE_PARENT: never the debuggee's).
fn children_of(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        let rest = stat.rsplit(')').next().unwrap_or("");
        if rest
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse::<i32>().ok())
            == Some(pid)
        {
            out.push(p);
        }
    }
    out
}

#[test]
fn back_to_an_earlier_hit_and_forward_to_the_present() {
    let sample = common::compile("rev_io", &["-g", "-O0"]);
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("in.txt");
    let output = dir.path().join("out.txt");
    std::fs::write(&input, "from the file\n").expect("input");
    let config = LaunchConfig {
        program: sample.path.clone(),
        args: vec![input.clone().into(), output.clone().into()],
        stop_at: StopAt::Entry,
        record: true,
        ..LaunchConfig::default()
    };
    let (mut t, io) = Tracer::launch(&config).expect("launch");
    let live = t.pid();
    t.wait().expect("entry");
    assert!(t.is_recording());
    let bias = t.info().load_bias.expect("bias");
    let note = RuntimeAddr(common::symbol(&sample.path, "note") + bias);
    let sum = RuntimeAddr(common::symbol(&sample.path, "g_sum") + bias);
    t.insert_breakpoint(note).expect("insert");

    let mut hits: Vec<(Position, Seen)> = Vec::new();
    for _ in 0..5 {
        next_hit(&mut t, note);
        let pos = t.position().expect("a hit has an exact position");
        hits.push((pos, seen(&mut t, sum)));
    }
    assert_eq!(
        hits.iter().map(|h| h.1.i).collect::<Vec<_>>(),
        [0, 1, 2, 3, 4]
    );
    let info = t.recording().expect("recording");
    assert!(info.events > 20, "system calls recorded: {}", info.events);
    // The file read, the time, the pid, getrandom and the writes to the output file
    // were recorded inside the program (docs/reverse.md, "Buffered system calls").
    assert!(info.buffered >= 5, "calls buffered: {}", info.buffered);
    assert!(!info.snapshots.is_empty());
    assert_eq!(info.ended, None, "still recording");
    let live_regs = t.regs(t.threads()[0]).expect("regs").0;

    // Back to the second hit: a replay, showing what the live process saw there.
    t.goto(&hits[1].0).expect("goto");
    assert!(t.is_replaying());
    assert_ne!(t.pid(), live, "a replay is a copy");
    assert_eq!(seen(&mut t, sum), hits[1].1);
    assert_eq!(t.position().as_ref(), Some(&hits[1].0));

    // Further back, then forward through the later hits.
    t.goto(&hits[0].0).expect("goto first");
    assert_eq!(seen(&mut t, sum), hits[0].1);
    for h in &hits[1..4] {
        next_hit(&mut t, note);
        assert!(t.is_replaying());
        assert_eq!(seen(&mut t, sum), h.1, "forward in the replay");
    }
    // The fifth hit is the present: the live process shows again.
    next_hit(&mut t, note);
    assert!(!t.is_replaying(), "the present is the live process");
    assert_eq!(t.pid(), live);
    assert_eq!(seen(&mut t, sum), hits[4].1);
    assert_eq!(t.regs(t.threads()[0]).expect("regs").0.rip, live_regs.rip);

    // Back once more and straight to the present.
    t.goto(&hits[2].0).expect("goto third");
    assert_eq!(seen(&mut t, sum), hits[2].1);
    let present = t.recording().expect("info").present.expect("present");
    t.goto(&present).expect("to the present");
    assert!(!t.is_replaying());

    // Before the start, or a point never reached, is refused.
    let later = Position {
        event: hits[4].0.event + 5,
        path: Vec::new(),
    };
    assert!(t.goto(&later).is_err());

    assert!(
        children_of(live.0).is_empty(),
        "the program has no child of ours"
    );
    let snapshots: Vec<i32> = children_of(std::process::id() as i32)
        .into_iter()
        .filter(|p| {
            *p != live.0 && tracer::procfs::tracer_of(tracer::Pid(*p)).is_some_and(|t| t > 0)
        })
        .collect();
    assert!(!snapshots.is_empty(), "snapshots are forks kept stopped");
    t.remove_breakpoint(note).expect("remove");
    t.resume().expect("resume");
    let code = loop {
        match t.wait().expect("event") {
            Event::Exited { code } => break code,
            Event::Stopped { reason, .. } => panic!("unexpected stop {reason:?}"),
            _ => {}
        }
    };
    let mut stdout = String::new();
    io.stdio
        .stdout
        .expect("stdout")
        .read_to_string(&mut stdout)
        .expect("read stdout");
    // One line per iteration: nothing was written again by a replay.
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{stdout}");
    for (k, (_, s)) in hits.iter().enumerate() {
        // note() prints the sum after adding to it.
        assert_eq!(
            lines[k],
            format!("step {} r={} sum={}", s.i, s.r, s.sum + s.r + s.i)
        );
    }
    let written = std::fs::read_to_string(&output).expect("output file");
    assert_eq!(written.lines().count(), 6, "{written}");
    assert!(written.ends_with("in=from the file\n"), "{written}");
    let last = hits[4].1;
    assert_eq!(code, ((last.sum + last.r + last.i) % 7) as i32 + 10);
    drop(t);
    for p in snapshots {
        assert!(common::gone(p), "snapshot {p} left behind");
    }
}

/// Going back a few instructions: positions reached by single-steps replay exactly.
#[test]
fn steps_are_positions_too() {
    let sample = common::compile("rev_io", &["-g", "-O0"]);
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("in.txt");
    std::fs::write(&input, "x\n").expect("input");
    let config = LaunchConfig {
        program: sample.path.clone(),
        args: vec![input.into(), dir.path().join("out.txt").into()],
        stop_at: StopAt::Entry,
        stdio: tracer::StdioMode::Null,
        record: true,
        ..LaunchConfig::default()
    };
    let (mut t, _io) = Tracer::launch(&config).expect("launch");
    t.wait().expect("entry");
    let bias = t.info().load_bias.expect("bias");
    let note = RuntimeAddr(common::symbol(&sample.path, "note") + bias);
    t.insert_breakpoint(note).expect("insert");
    next_hit(&mut t, note);
    next_hit(&mut t, note);
    let tid = t.threads()[0];
    let mut trail = Vec::new();
    for _ in 0..6 {
        trail.push((
            t.position().expect("position"),
            t.regs(tid).expect("regs").0,
        ));
        t.step(tid).expect("step");
        assert!(matches!(
            t.wait().expect("step"),
            Event::Stopped {
                reason: StopReason::Step,
                ..
            }
        ));
    }
    for (pos, regs) in trail.iter().rev() {
        t.goto(pos).expect("goto");
        let now = t.regs(t.threads()[0]).expect("regs").0;
        assert_eq!((now.rip, now.rsp, now.rbp), (regs.rip, regs.rsp, regs.rbp));
    }
    // Forward by steps in the replay reaches the present, the live process.
    for _ in 0..6 {
        let tid = t.threads()[0];
        t.step(tid).expect("step");
        t.wait().expect("step");
    }
    assert!(!t.is_replaying());
    t.remove_breakpoint(note).expect("remove");
    t.resume().expect("resume");
    loop {
        match t.wait().expect("event") {
            Event::Exited { .. } => break,
            Event::Stopped { reason, .. } => panic!("unexpected stop {reason:?}"),
            _ => {}
        }
    }
}

/// Single-stepping across a system call the buffer patched is one step, live and in a
/// replay, and never stops inside tandem's handler: 400 steps from a hit in rev_bench
/// (each round calls getppid and getpid), then the same steps again from a replay of
/// that hit, each landing where the live ones did, with the same registers.
#[test]
fn steps_across_buffered_calls_are_the_same_live_and_replayed() {
    let sample = common::compile("rev_bench", &["-g", "-O1"]);
    let config = LaunchConfig {
        program: sample.path.clone(),
        args: vec!["syscalls".into(), "3000".into()],
        stop_at: StopAt::Entry,
        stdio: tracer::StdioMode::Null,
        record: true,
        ..LaunchConfig::default()
    };
    let (mut t, _io) = Tracer::launch(&config).expect("launch");
    t.wait().expect("entry");
    let bias = t.info().load_bias.expect("bias");
    let tick = RuntimeAddr(common::symbol(&sample.path, "tick") + bias);
    t.insert_breakpoint(tick).expect("insert");
    next_hit(&mut t, tick);
    let start = t.position().expect("position");
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", t.pid().0)).expect("maps");
    let mut trail = Vec::new();
    for _ in 0..400 {
        let tid = t.threads()[0];
        t.step(tid).expect("step");
        assert!(matches!(
            t.wait().expect("step"),
            Event::Stopped {
                reason: StopReason::Step,
                ..
            }
        ));
        let r = t.regs(tid).expect("regs").0;
        assert!(
            pc_in_named_mapping(&maps, r.rip),
            "a step stops in the program, not in tandem's code: {:#x}",
            r.rip
        );
        trail.push((r.rip, r.rsp, r.rax, r.rdi));
    }
    let info = t.recording().expect("recording");
    assert!(info.buffered > 100, "calls buffered: {}", info.buffered);
    t.goto(&start).expect("back to the hit");
    assert!(t.is_replaying());
    for (k, want) in trail.iter().enumerate() {
        let tid = t.threads()[0];
        t.step(tid).expect("step");
        t.wait().expect("step");
        // The last step reaches the present: the live process's thread.
        let tid = t.threads()[0];
        let r = t.regs(tid).expect("regs").0;
        assert_eq!((r.rip, r.rsp, r.rax, r.rdi), *want, "step {k} replayed");
    }
    assert!(!t.is_replaying(), "the last step is the present");
}

/// A buffered call that waits for another process (a read of stdin, a pipe the test
/// writes): a pause while it waits is shown at the program's call, the call goes on
/// when resumed, and going back gives the read's bytes back.
#[test]
fn a_buffered_read_that_waits_is_paused_and_gone_back_over() {
    use std::io::Write;
    let sample = common::compile("rev_stdin", &["-g", "-O0"]);
    let config = LaunchConfig {
        program: sample.path.clone(),
        stop_at: StopAt::Entry,
        record: true,
        ..LaunchConfig::default()
    };
    let (mut t, io) = Tracer::launch(&config).expect("launch");
    let mut stdin = io.stdio.stdin.expect("stdin");
    t.wait().expect("entry");
    let bias = t.info().load_bias.expect("bias");
    let note = RuntimeAddr(common::symbol(&sample.path, "note") + bias);
    let total = RuntimeAddr(common::symbol(&sample.path, "g_total") + bias);
    t.insert_breakpoint(note).expect("insert");
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", t.pid().0)).expect("maps");
    let mut hits = Vec::new();
    for value in [5u64, 7, 30] {
        t.resume().expect("resume");
        // Waiting in read(0): the pause is shown in the program.
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(t.interrupt().expect("pause"));
        match t.wait().expect("pause") {
            Event::Stopped {
                reason: StopReason::Paused,
                tid,
            } => {
                let pc = t.regs(tid).expect("regs").0.rip;
                assert!(pc_in_named_mapping(&maps, pc), "paused at {pc:#x}");
            }
            other => panic!("unexpected {other:?}"),
        }
        writeln!(stdin, "{value}").expect("write stdin");
        next_hit(&mut t, note);
        let tid = t.threads()[0];
        assert_eq!(
            t.regs(tid).expect("regs").0.rdi,
            value,
            "read what was written"
        );
        hits.push(t.position().expect("a hit's position"));
    }
    let info = t.recording().expect("recording");
    assert!(info.ended.is_none(), "still recording: {:?}", info.ended);
    assert!(info.buffered >= 3, "reads buffered: {}", info.buffered);
    // Back to the first hit: the replay's read gives "5" again, nothing waits.
    t.goto(&hits[0]).expect("back");
    let tid = t.threads()[0];
    assert_eq!(t.regs(tid).expect("regs").0.rdi, 5);
    let mut b = [0u8; 8];
    t.read_memory(total, &mut b).expect("g_total");
    assert_eq!(u64::from_le_bytes(b), 0, "before the first note");
    next_hit(&mut t, note);
    let tid = t.threads()[0];
    assert_eq!(t.regs(tid).expect("regs").0.rdi, 7);
    // The third hit is the present: the live process again.
    next_hit(&mut t, note);
    assert!(!t.is_replaying());
    let tid = t.threads()[0];
    assert_eq!(t.regs(tid).expect("regs").0.rdi, 30);
    drop(stdin);
    t.remove_breakpoint(note).expect("remove");
    t.resume().expect("resume");
    let code = loop {
        match t.wait().expect("event") {
            Event::Exited { code } => break code,
            Event::Stopped { reason, .. } => panic!(
                "unexpected stop {reason:?} (note at {note:?}): {:?}",
                t.recording()
            ),
            _ => {}
        }
    };
    assert_eq!(code, 42);
}

/// A multi-threaded program is recorded one thread at a time (docs/reverse.md,
/// "Threads"): eight threads, each calling `proc_thread_hit(index)` three times. A
/// replay re-creates the threads and shows each earlier hit in the thread that made it
/// (its `index` argument) with the counters as they were; forward again reaches the
/// present, and the program runs to its end recorded, unharmed.
#[test]
fn threads_are_recorded_one_at_a_time_and_replayed() {
    let sample = common::compile("proc_threads", &["-g", "-O0", "-pthread"]);
    let config = LaunchConfig {
        program: sample.path.clone(),
        args: vec!["3".into()],
        stop_at: StopAt::Entry,
        stdio: tracer::StdioMode::Null,
        record: true,
        ..LaunchConfig::default()
    };
    let (mut t, _io) = Tracer::launch(&config).expect("launch");
    let live = t.pid();
    t.wait().expect("entry");
    let bias = t.info().load_bias.expect("bias");
    let hit = RuntimeAddr(common::symbol(&sample.path, "proc_thread_hit") + bias);
    let counters = RuntimeAddr(common::symbol(&sample.path, "proc_hits") + bias);
    t.insert_breakpoint(hit).expect("insert");
    let look = |t: &mut Tracer| -> (u64, Vec<u8>) {
        let tid = t.shown_thread();
        let index = t.regs(tid).expect("regs").0.rdi;
        let mut b = vec![0u8; 64];
        t.read_memory(counters, &mut b).expect("proc_hits");
        (index, b)
    };
    let mut hits = Vec::new();
    for _ in 0..14 {
        next_hit(&mut t, hit);
        let pos = t.position().expect("a hit has an exact position");
        hits.push((pos, look(&mut t)));
    }
    let indexes: Vec<u64> = hits.iter().map(|h| h.1 .0).collect();
    assert!(
        indexes.windows(2).any(|w| w[0] != w[1]),
        "hits of several threads: {indexes:?}"
    );
    assert_eq!(t.recording().expect("info").ended, None, "still recording");

    for k in [12, 2, 7] {
        t.goto(&hits[k].0).expect("goto");
        assert!(t.is_replaying());
        assert_eq!(look(&mut t), hits[k].1, "hit {k} replayed");
    }
    for h in &hits[8..13] {
        next_hit(&mut t, hit);
        assert!(t.is_replaying());
        assert_eq!(look(&mut t), h.1, "forward in the replay");
    }
    next_hit(&mut t, hit);
    assert!(!t.is_replaying(), "the present is the live process");
    assert_eq!(t.pid(), live);
    assert_eq!(look(&mut t), hits[13].1);

    t.remove_breakpoint(hit).expect("remove");
    t.resume().expect("resume");
    let code = loop {
        match t.wait().expect("event") {
            Event::Exited { code } => break code,
            Event::Stopped { reason, tid } => panic!(
                "unexpected stop {reason:?} of {tid:?} (the hit is at {hit:?}): {:?}",
                t.recording()
            ),
            _ => {}
        }
    };
    assert_eq!(code, 0, "the threads all ran their iterations");
    let ended = t.recording().expect("was recorded").ended.expect("ended");
    assert!(ended.contains("the program ended"), "{ended}");
    assert!(children_of(live.0).is_empty());
}

/// A thread blocked in a call only another thread of the program can end (a read of a
/// pipe the worker writes) would wait forever with one thread running at a time. With
/// every call traced, after a second the recording ends, and the program goes on live
/// and unharmed.
#[test]
fn a_call_only_another_thread_can_end_ends_the_recording() {
    let sample = common::compile("rev_pipe", &["-g", "-O0", "-pthread"]);
    let config = LaunchConfig {
        program: sample.path.clone(),
        stop_at: StopAt::Entry,
        stdio: tracer::StdioMode::Null,
        record: true,
        trace_every_syscall: true,
        ..LaunchConfig::default()
    };
    let (mut t, _io) = Tracer::launch(&config).expect("launch");
    t.wait().expect("entry");
    t.resume().expect("resume");
    let code = loop {
        match t.wait().expect("event") {
            Event::Exited { code } => break code,
            Event::Stopped { reason, .. } => panic!("unexpected stop {reason:?}"),
            _ => {}
        }
    };
    assert_eq!(code, 0, "the read got the worker's bytes");
    let ended = t.recording().expect("was recorded").ended.expect("ended");
    assert!(
        ended.contains("blocking calls other than futex waits"),
        "{ended}"
    );
}

/// The same program with its calls buffered: the read waits inside the handler, the
/// time slice preempts the main thread there (it goes back before the read's site),
/// the worker runs and writes, and the read is made again and gets its bytes. The
/// recording goes on: going back shows the worker's hit in the worker's thread, and
/// forward again reaches the main thread after its read.
#[test]
fn a_buffered_call_only_another_thread_can_end_is_preempted_and_recorded() {
    let sample = common::compile("rev_pipe", &["-g", "-O0", "-pthread"]);
    let config = LaunchConfig {
        program: sample.path.clone(),
        stop_at: StopAt::Entry,
        stdio: tracer::StdioMode::Null,
        record: true,
        ..LaunchConfig::default()
    };
    let (mut t, _io) = Tracer::launch(&config).expect("launch");
    t.wait().expect("entry");
    let bias = t.info().load_bias.expect("bias");
    let worker = RuntimeAddr(common::symbol(&sample.path, "worker") + bias);
    let got = RuntimeAddr(common::symbol(&sample.path, "got") + bias);
    t.insert_breakpoint(worker).expect("insert");
    t.insert_breakpoint(got).expect("insert");
    next_hit(&mut t, worker);
    let at_worker = t.position().expect("a hit's position");
    let worker_pc = t.regs(t.shown_thread()).expect("regs").0.rip;
    next_hit(&mut t, got);
    let info = t.recording().expect("recording");
    assert_eq!(info.ended, None, "still recording");
    assert!(info.buffered > 0, "calls buffered: {}", info.buffered);
    let tid = t.shown_thread();
    let b = t.regs(tid).expect("regs").0.rdi;
    let mut read = [0u8; 2];
    t.read_memory(RuntimeAddr(b), &mut read).expect("b");
    assert_eq!(&read, b"hi", "the read got the worker's bytes");
    // Back to the worker's hit, then forward to the read's end again.
    t.goto(&at_worker).expect("back");
    assert!(t.is_replaying());
    assert_eq!(t.regs(t.shown_thread()).expect("regs").0.rip, worker_pc);
    next_hit(&mut t, got);
    assert!(!t.is_replaying(), "the present is the live process");
    t.remove_breakpoint(worker).expect("remove");
    t.remove_breakpoint(got).expect("remove");
    t.resume().expect("resume");
    let code = loop {
        match t.wait().expect("event") {
            Event::Exited { code } => break code,
            Event::Stopped { reason, .. } => panic!("unexpected stop {reason:?}"),
            _ => {}
        }
    };
    assert_eq!(code, 0);
}

/// Every thread waits, one with a timeout nobody will cut short (a worker in
/// pthread_cond_timedwait, the main thread joining it): the parked futex waits can only
/// end with time, so the recording ends and each wait is made again live; the timed
/// wait times out as it would have, and the program ends right.
#[test]
fn when_every_thread_waits_the_waits_go_on_live() {
    let sample = common::compile("rev_timedwait", &["-g", "-O0", "-pthread"]);
    let config = LaunchConfig {
        program: sample.path.clone(),
        stop_at: StopAt::Entry,
        stdio: tracer::StdioMode::Null,
        record: true,
        ..LaunchConfig::default()
    };
    let (mut t, _io) = Tracer::launch(&config).expect("launch");
    t.wait().expect("entry");
    t.resume().expect("resume");
    let code = loop {
        match t.wait().expect("event") {
            Event::Exited { code } => break code,
            Event::Stopped { reason, .. } => panic!("unexpected stop {reason:?}"),
            _ => {}
        }
    };
    assert_eq!(code, 0, "the timed wait returned ETIMEDOUT");
    let ended = t.recording().expect("was recorded").ended.expect("ended");
    assert!(
        ended.contains("every thread of the program waits"),
        "{ended}"
    );
}

/// Four threads contending for one mutex while making system calls inside it
/// (samples/c/rev_contend.c): switches land inside the critical section, the others
/// park on the mutex and are woken by its unlock. A replay to hits deep in the
/// recording (from snapshots made among the threads, which re-create them) shows each
/// in the thread that made it, with the totals as they were.
#[test]
fn contended_mutexes_replay_exactly() {
    let sample = common::compile("rev_contend", &["-g", "-O0", "-pthread"]);
    let config = LaunchConfig {
        program: sample.path.clone(),
        stop_at: StopAt::Entry,
        stdio: tracer::StdioMode::Null,
        record: true,
        ..LaunchConfig::default()
    };
    let (mut t, _io) = Tracer::launch(&config).expect("launch");
    t.wait().expect("entry");
    let bias = t.info().load_bias.expect("bias");
    let tally = RuntimeAddr(common::symbol(&sample.path, "tally") + bias);
    let total = RuntimeAddr(common::symbol(&sample.path, "total") + bias);
    let turns = RuntimeAddr(common::symbol(&sample.path, "turns") + bias);
    t.insert_breakpoint(tally).expect("insert");
    let look = |t: &mut Tracer| -> [u64; 4] {
        let regs = t.regs(t.shown_thread()).expect("regs").0;
        let mut a = [0u8; 8];
        let mut b = [0u8; 8];
        t.read_memory(total, &mut a).expect("total");
        t.read_memory(turns, &mut b).expect("turns");
        [
            regs.rdi,
            regs.rsi,
            u64::from_le_bytes(a),
            u64::from_le_bytes(b),
        ]
    };
    let mut hits = Vec::new();
    for k in 0..1800 {
        next_hit(&mut t, tally);
        if k % 300 == 7 {
            let pos = t.position().expect("exact");
            hits.push((pos, look(&mut t)));
        }
    }
    let threads: std::collections::BTreeSet<u64> = hits.iter().map(|h| h.1[0]).collect();
    assert!(threads.len() > 1, "hits of several threads: {hits:?}");
    let info = t.recording().expect("info");
    assert_eq!(info.ended, None, "still recording");
    // Snapshots are made while the four workers run too (their threads re-created in
    // each replay of them): the later hits replay from one of those.
    assert!(
        info.snapshots.iter().any(|e| *e > hits[0].0.event),
        "a snapshot among the threads: {:?}",
        info.snapshots
    );
    for k in [3, 0, 5, 1] {
        t.goto(&hits[k].0).expect("goto");
        assert!(t.is_replaying());
        assert_eq!(look(&mut t), hits[k].1, "hit {k} replayed");
    }
    let present = t.recording().expect("info").present.expect("present");
    t.goto(&present).expect("to the present");
    assert!(!t.is_replaying());
    t.remove_breakpoint(tally).expect("remove");
    t.resume().expect("resume");
    let code = loop {
        match t.wait().expect("event") {
            Event::Exited { code } => break code,
            Event::Stopped { reason, .. } => panic!("unexpected stop {reason:?}"),
            _ => {}
        }
    };
    assert_eq!(code, 0, "every turn counted");
}

/// Detaching from a recorded multi-threaded program while its main thread is parked in
/// an emulated futex wait (joining the workers) and the workers wait their turn: every
/// thread runs on, the parked wait is made again by the kernel, and the program ends
/// as it would have (samples/c/rev_threads.c checks its own total).
#[test]
fn a_detach_lets_every_recorded_thread_run_on() {
    let sample = common::compile("rev_threads", &["-g", "-O0", "-pthread"]);
    let config = LaunchConfig {
        program: sample.path.clone(),
        stop_at: StopAt::Entry,
        stdio: tracer::StdioMode::Null,
        record: true,
        ..LaunchConfig::default()
    };
    let (mut t, _io) = Tracer::launch(&config).expect("launch");
    let pid = t.pid();
    t.wait().expect("entry");
    let bias = t.info().load_bias.expect("bias");
    let work = RuntimeAddr(common::symbol(&sample.path, "work") + bias);
    t.insert_breakpoint(work).expect("insert");
    next_hit(&mut t, work);
    assert!(
        t.threads().len() > 2,
        "the workers exist: {:?}",
        t.threads()
    );
    t.detach().expect("detach");
    let mut status = 0;
    // SAFETY: waits for our own child (the launched program), with a local.
    let r = unsafe { libc::waitpid(pid.0, &mut status, 0) };
    assert_eq!(r, pid.0);
    assert!(libc::WIFEXITED(status), "status {status:#x}");
    assert_eq!(libc::WEXITSTATUS(status), 0, "every round was counted");
}

/// The main thread calling pthread_exit while a worker runs on: its exit is reported
/// only when the last thread ends, so the schedule could never move on. The recording
/// ends at that call and the worker finishes live (the process exits 0).
#[test]
fn the_main_thread_ending_first_ends_the_recording() {
    let sample = common::compile("proc_leader_exit", &["-g", "-O0", "-pthread"]);
    let config = LaunchConfig {
        program: sample.path.clone(),
        stop_at: StopAt::Entry,
        stdio: tracer::StdioMode::Null,
        record: true,
        ..LaunchConfig::default()
    };
    let (mut t, _io) = Tracer::launch(&config).expect("launch");
    t.wait().expect("entry");
    t.resume().expect("resume");
    let started = std::time::Instant::now();
    let code = loop {
        match t.wait().expect("event") {
            Event::Exited { code } => break code,
            Event::Stopped { reason, .. } => panic!("unexpected stop {reason:?}"),
            _ => {}
        }
    };
    assert_eq!(code, 0);
    let ended = t.recording().expect("was recorded").ended.expect("ended");
    assert!(
        ended.contains("the main thread ends before the others"),
        "{ended}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(1),
        "at once"
    );
}

/// A signal sent to the program ends the recording (a replay could not deliver it at
/// the same point); the program goes on live, and going back says why it cannot.
#[test]
fn a_signal_from_outside_ends_the_recording() {
    let sample = common::compile("proc_spin", &["-g", "-O0"]);
    let config = LaunchConfig {
        program: sample.path.clone(),
        stop_at: StopAt::Entry,
        stdio: tracer::StdioMode::Null,
        record: true,
        ..LaunchConfig::default()
    };
    let (mut t, _io) = Tracer::launch(&config).expect("launch");
    t.wait().expect("entry");
    t.resume().expect("resume");
    std::thread::sleep(std::time::Duration::from_millis(50));
    // SIGWINCH passes silently (its default action is to ignore it).
    // SAFETY: kill has no memory preconditions.
    unsafe { libc::kill(t.pid().0, libc::SIGWINCH) };
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert!(t.interrupt().expect("pause"));
    loop {
        if let Event::Stopped { .. } = t.wait().expect("pause") {
            break;
        }
    }
    let ended = t.recording().and_then(|r| r.ended).expect("ended");
    assert!(ended.contains("signal 28"), "{ended}");
    assert!(!t.is_recording());
    let err = t.goto(&Position::default()).expect_err("no recording");
    assert!(err.to_string().contains("signal 28"), "{err}");
    let pid = t.pid();
    drop(t);
    assert!(common::gone(pid.0));
}

/// `rdtsc` and `rdtscp` are recorded (PR_SET_TSC): going back shows the values read then.
#[test]
fn rdtsc_is_replayed_with_the_recorded_values() {
    let sample = common::compile("rev_tsc", &["-g", "-O0"]);
    let config = LaunchConfig {
        program: sample.path.clone(),
        stop_at: StopAt::Entry,
        record: true,
        ..LaunchConfig::default()
    };
    let (mut t, io) = Tracer::launch(&config).expect("launch");
    t.wait().expect("entry");
    let bias = t.info().load_bias.expect("bias");
    let note = RuntimeAddr(common::symbol(&sample.path, "tsc_note") + bias);
    t.insert_breakpoint(note).expect("insert");
    let mut hits = Vec::new();
    for _ in 0..4 {
        next_hit(&mut t, note);
        let regs = t.regs(t.threads()[0]).expect("regs").0;
        hits.push((t.position().expect("position"), regs.rsi));
    }
    assert!(hits.windows(2).all(|w| w[0].1 < w[1].1), "{hits:?}");
    for (pos, v) in hits.iter().rev() {
        t.goto(pos).expect("goto");
        assert_eq!(t.regs(t.threads()[0]).expect("regs").0.rsi, *v);
    }
    t.goto(&hits[3].0).expect("present");
    assert!(!t.is_replaying());
    t.remove_breakpoint(note).expect("remove");
    t.resume().expect("resume");
    let code = loop {
        match t.wait().expect("event") {
            Event::Exited { code } => break code,
            Event::Stopped { reason, .. } => panic!("unexpected stop {reason:?}"),
            _ => {}
        }
    };
    assert_eq!(code, 0);
    let mut out = String::new();
    io.stdio
        .stdout
        .expect("stdout")
        .read_to_string(&mut out)
        .expect("stdout");
    let printed: Vec<u64> = out
        .split_whitespace()
        .map(|w| w.parse().expect("n"))
        .collect();
    assert_eq!(printed, hits.iter().map(|h| h.1).collect::<Vec<_>>());
}

/// A replay that meets a different world says so and shows nothing: the file the
/// program opened (opened again on replay, so its mappings work) is gone, the replay
/// stops with "the recording diverged here", and the live process is shown again.
#[test]
fn a_divergence_is_said_and_the_present_shown() {
    let sample = common::compile("rev_io", &["-g", "-O0"]);
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("in.txt");
    std::fs::write(&input, "x\n").expect("input");
    let config = LaunchConfig {
        program: sample.path.clone(),
        args: vec![input.clone().into(), dir.path().join("out.txt").into()],
        stop_at: StopAt::Entry,
        stdio: tracer::StdioMode::Null,
        record: true,
        ..LaunchConfig::default()
    };
    let (mut t, _io) = Tracer::launch(&config).expect("launch");
    let live = t.pid();
    t.wait().expect("entry");
    let bias = t.info().load_bias.expect("bias");
    let note = RuntimeAddr(common::symbol(&sample.path, "note") + bias);
    t.insert_breakpoint(note).expect("insert");
    next_hit(&mut t, note);
    let first = t.position().expect("position");
    next_hit(&mut t, note);
    let live_regs = t.regs(t.threads()[0]).expect("regs").0;
    std::fs::remove_file(&input).expect("remove the input");
    let err = t.goto(&first).expect_err("diverges");
    assert!(
        err.to_string().contains("the recording diverged here"),
        "{err}"
    );
    assert!(!t.is_replaying());
    assert_eq!(t.pid(), live);
    let now = t.regs(t.threads()[0]).expect("regs").0;
    assert_eq!((now.rip, now.rsp), (live_regs.rip, live_regs.rsp));
    // The live program goes on unharmed.
    t.remove_breakpoint(note).expect("remove");
    t.resume().expect("resume");
    loop {
        match t.wait().expect("event") {
            Event::Exited { code } => {
                assert!((10..17).contains(&code), "exit code {code}");
                break;
            }
            Event::Stopped { reason, .. } => panic!("unexpected stop {reason:?}"),
            _ => {}
        }
    }
}

/// Pauses while a recorded program makes system calls as fast as it can: each pause is
/// reported (a system-call stop must not swallow the pause's interrupt), the program is
/// never harmed (its result is the plain run's) and the recording goes on.
#[test]
fn pauses_during_system_calls_harm_nothing() {
    pauses_harm_nothing(true, "30000");
}

/// The same with the calls buffered inside the program (docs/reverse.md): pauses land
/// in the handler and its thunks too, and are shown outside them.
#[test]
fn pauses_during_buffered_system_calls_harm_nothing() {
    pauses_harm_nothing(false, "1000000");
}

fn pauses_harm_nothing(trace_every_syscall: bool, rounds: &str) {
    let sample = common::compile("rev_bench", &["-g", "-O1"]);
    let plain = std::process::Command::new(&sample.path)
        .args(["syscalls", rounds])
        .status()
        .expect("plain run")
        .code();
    let config = LaunchConfig {
        program: sample.path.clone(),
        args: vec!["syscalls".into(), rounds.into()],
        stop_at: StopAt::Entry,
        stdio: tracer::StdioMode::Null,
        record: true,
        trace_every_syscall,
        ..LaunchConfig::default()
    };
    let (tx, rx) = crossbeam_channel::unbounded();
    let (h, _io) = tracer::spawn_launch(
        config,
        Box::new(move |_t: &mut Tracer, ev| {
            let _ = tx.send(ev);
        }),
    )
    .expect("launch");
    let next = || {
        rx.recv_timeout(std::time::Duration::from_secs(20))
            .expect("an event: a pause was not swallowed")
    };
    assert!(matches!(next(), Event::Stopped { .. }));
    h.resume().expect("resume");
    let mut pauses = 0;
    let code = loop {
        std::thread::sleep(std::time::Duration::from_millis(5));
        if !h.pause().unwrap_or(false) {
            // Not running any more: its end is on the way.
            match next() {
                Event::Exited { code } => break Some(code),
                other => panic!("unexpected {other:?}"),
            }
        }
        match next() {
            Event::Stopped {
                reason: StopReason::Paused,
                ..
            } => {
                pauses += 1;
                let (info, pc, code) = h
                    .call(|t: &mut Tracer| {
                        let pc = t.regs(t.threads()[0]).map(|r| r.0.rip).unwrap_or(0);
                        (t.recording(), pc, t.placed_code_regions())
                    })
                    .expect("call");
                let maps = std::fs::read_to_string(format!("/proc/{}/maps", h.pid().0))
                    .unwrap_or_default();
                assert!(
                    pc_in_named_mapping(&maps, pc),
                    "a pause is shown in the program's code, not tandem's: {pc:#x} ({code:?})"
                );
                assert!(info.expect("recording").ended.is_none(), "still recording");
                h.resume().expect("resume");
            }
            Event::Exited { code } => break Some(code),
            other => panic!("unexpected {other:?}"),
        }
    };
    let ended = h
        .call(|t: &mut Tracer| t.recording_ended().map(str::to_string))
        .ok()
        .flatten();
    assert!(
        pauses > 0,
        "the program was paused (recording ended: {ended:?})"
    );
    assert_eq!(
        code, plain,
        "the recorded program computed what the plain one did"
    );
}

/// A pause that reaches a recorded thread sitting in a system-call stop nobody reaped yet
/// is reported at that call's exit, never swallowed (the stop consumes the interrupt).
#[test]
fn a_pause_at_a_system_call_stop_is_not_lost() {
    let sample = common::compile("rev_bench", &["-g", "-O1"]);
    let config = LaunchConfig {
        program: sample.path.clone(),
        args: vec!["syscalls".into(), "3000".into()],
        stop_at: StopAt::Entry,
        stdio: tracer::StdioMode::Null,
        record: true,
        ..LaunchConfig::default()
    };
    let (mut t, _io) = Tracer::launch(&config).expect("launch");
    t.wait().expect("entry");
    t.resume().expect("resume");
    // Nobody waits meanwhile: the thread stops at its next system call and stays there.
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert!(t.interrupt().expect("pause"));
    match t.wait().expect("event") {
        Event::Stopped {
            reason: StopReason::Paused,
            ..
        } => {}
        other => panic!("the pause was lost: {other:?}"),
    }
    assert!(t.recording().expect("recording").ended.is_none());
}

/// Whether `pc` is in a mapping of a file or of the vDSO (not anonymous memory).
fn pc_in_named_mapping(maps: &str, pc: u64) -> bool {
    maps.lines().any(|l| {
        let mut f = l.split_whitespace();
        let range = f.next().unwrap_or("");
        let named = f
            .nth(4)
            .is_some_and(|p| p.starts_with('/') || p == "[vdso]");
        let (lo, hi) = range.split_once('-').unwrap_or(("0", "0"));
        let (lo, hi) = (
            u64::from_str_radix(lo, 16).unwrap_or(0),
            u64::from_str_radix(hi, 16).unwrap_or(0),
        );
        named && lo <= pc && pc < hi
    })
}

/// A long recording has many snapshots; going back starts from the last one before the
/// point, and every point shows what it showed live.
#[test]
fn replays_start_from_later_snapshots() {
    replays_show_what_was_live(true, "6000", 1);
}

/// The same with the calls buffered inside the program: a replay gives each call its
/// recorded result (the pids the program adds up are the live process's, not the
/// replay's), and snapshots are made at the calls that are still traced.
#[test]
fn replays_of_buffered_calls_show_what_was_live() {
    // Hits 10,000 rounds apart: the 20,000 calls between two fill the buffer, so the
    // intervals end at its flushes too.
    replays_show_what_was_live(false, "600000", 10);
}

fn replays_show_what_was_live(trace_every_syscall: bool, rounds: &str, stride: usize) {
    let sample = common::compile("rev_bench", &["-g", "-O1"]);
    let config = LaunchConfig {
        program: sample.path.clone(),
        args: vec!["syscalls".into(), rounds.into()],
        stop_at: StopAt::Entry,
        stdio: tracer::StdioMode::Null,
        record: true,
        trace_every_syscall,
        ..LaunchConfig::default()
    };
    let (mut t, _io) = Tracer::launch(&config).expect("launch");
    t.wait().expect("entry");
    let bias = t.info().load_bias.expect("bias");
    let tick = RuntimeAddr(common::symbol(&sample.path, "tick") + bias);
    t.insert_breakpoint(tick).expect("insert");
    let mut hits = Vec::new();
    for _ in 0..6 {
        for _ in 0..stride {
            next_hit(&mut t, tick);
        }
        let regs = t.regs(t.threads()[0]).expect("regs").0;
        hits.push((t.position().expect("position"), regs.rdi, regs.rsi));
    }
    let info = t.recording().expect("recording");
    if trace_every_syscall {
        assert!(
            info.snapshots.len() >= 4,
            "snapshots at {:?}",
            info.snapshots
        );
        assert!(info.snapshots.iter().any(|s| *s > hits[2].0.event));
    } else {
        assert!(
            info.buffered > 20 * info.events,
            "most calls were buffered: {} buffered, {} events",
            info.buffered,
            info.events
        );
    }
    for (pos, i, acc) in hits.iter().take(5).rev() {
        t.goto(pos).expect("goto");
        let regs = t.regs(t.threads()[0]).expect("regs").0;
        assert_eq!((regs.rdi, regs.rsi), (*i, *acc), "at {pos:?}");
    }
    // Forward from the first hit through the later snapshots' intervals to the present.
    for (_, i, acc) in &hits[1..] {
        for _ in 0..stride {
            next_hit(&mut t, tick);
        }
        let regs = t.regs(t.threads()[0]).expect("regs").0;
        assert_eq!((regs.rdi, regs.rsi), (*i, *acc));
    }
    assert!(!t.is_replaying());
}

/// The CPUs a task may run on, as /proc shows them.
fn cpus_allowed(status: &str) -> String {
    std::fs::read_to_string(status)
        .expect("status")
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .expect("Cpus_allowed_list")
        .trim()
        .to_string()
}

/// Recording a syscall-heavy program pins the tracer's thread to the CPU the program
/// runs on (its round trips stay on one CPU) and never the program: its affinity is
/// what it would be without tandem. A replay (a fork, told its recorded affinity) runs
/// on the tracer's CPU. When the recording ends the thread gets its own
/// affinity back.
#[test]
fn recording_pins_the_tracer_never_the_program_and_unpins_at_the_end() {
    let mine = cpus_allowed("/proc/thread-self/status");
    let sample = common::compile("rev_bench", &["-g", "-O1"]);
    let config = LaunchConfig {
        program: sample.path.clone(),
        args: vec!["syscalls".into(), "200000".into()],
        stop_at: StopAt::Entry,
        stdio: tracer::StdioMode::Null,
        record: true,
        ..LaunchConfig::default()
    };
    let (mut t, _io) = Tracer::launch(&config).expect("launch");
    t.wait().expect("entry");
    let bias = t.info().load_bias.expect("bias");
    let tick = RuntimeAddr(common::symbol(&sample.path, "tick") + bias);
    t.insert_breakpoint(tick).expect("insert");
    next_hit(&mut t, tick);
    let early = t.position().expect("position");
    for _ in 0..49 {
        next_hit(&mut t, tick);
    }
    let present = t.position().expect("position");
    let live = t.pid();
    // A replay shares the tracer's CPU; the program never.
    t.goto(&early).expect("back");
    assert!(t.is_replaying());
    let replay = cpus_allowed(&format!("/proc/{}/status", t.pid().0));
    assert!(
        !replay.contains([',', '-']),
        "a replay runs on one CPU: {replay}"
    );
    t.goto(&present).expect("forward");
    assert!(!t.is_replaying());
    let program = cpus_allowed(&format!("/proc/{}/status", live.0));
    assert_eq!(program, mine, "the program's affinity is untouched");
    let pinned = cpus_allowed("/proc/thread-self/status");
    assert!(
        !pinned.contains([',', '-']),
        "the tracer's thread is pinned to one CPU: {pinned} (allowed: {mine})"
    );
    t.remove_breakpoint(tick).expect("remove");
    t.resume().expect("resume");
    loop {
        if t.wait().expect("event").is_exit() {
            break;
        }
    }
    assert_eq!(
        cpus_allowed("/proc/thread-self/status"),
        mine,
        "the thread's own affinity is back"
    );
}
