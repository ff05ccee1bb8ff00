//! Int3s in a shared library and replays (docs/reverse.md, "Replay"): the recording's
//! first snapshot is taken at execve's return, before libc is mapped. A scan of the
//! whole recording with an extra breakpoint in libc (`getppid`, called once per round
//! of samples/c/rev_libcall.c) inserts it in a replay that has no libc yet: it is
//! planted when the replay maps libc, and traps at every call the recording made.
//! Going back with a libc breakpoint in the table replays from that snapshot too. A
//! breakpoint in a library loaded where another one was earlier in the recording
//! traps only in its own code (samples/c/rev_plugins.c).

mod common;

use tracer::{Event, LaunchConfig, RuntimeAddr, StopAt, StopReason, Tracer};

/// The runtime address of libc's `name` in `pid` (libc's dynamic symbol plus the
/// start of its first mapping).
fn in_libc(pid: i32, name: &str) -> RuntimeAddr {
    use object::{Object, ObjectSymbol};
    let maps = tracer::procfs::read_maps(tracer::Pid(pid)).expect("maps");
    let libc = maps
        .iter()
        .find(|m| m.path.contains("/libc.so") && m.offset == 0)
        .expect("libc is mapped");
    let data = std::fs::read(&libc.path).expect("reading libc");
    let file = object::File::parse(&*data).expect("parsing libc");
    let sym = file
        .dynamic_symbols()
        .find(|s| s.name() == Ok(name))
        .unwrap_or_else(|| panic!("no {name} in libc's dynamic symbols"));
    RuntimeAddr(libc.start.0 + sym.address())
}

fn next_hit(t: &mut Tracer, at: RuntimeAddr) {
    t.resume().expect("resume");
    loop {
        match t.wait().expect("event") {
            Event::Stopped {
                reason: StopReason::Breakpoint { addr },
                ..
            } if addr == at => return,
            Event::Stopped { reason, .. } => panic!("unexpected stop {reason:?}"),
            ev if ev.is_exit() => panic!("exited early: {ev:?}"),
            _ => {}
        }
    }
}

fn run_to_exit(t: &mut Tracer) {
    t.resume().expect("resume");
    loop {
        match t.wait().expect("event") {
            Event::Exited { code, .. } => {
                assert_eq!(code, 0, "the program ran to its end unharmed");
                return;
            }
            Event::Stopped { reason, .. } => panic!("unexpected stop {reason:?}"),
            ev if ev.is_exit() => panic!("ended: {ev:?}"),
            _ => {}
        }
    }
}

#[test]
fn a_scan_with_a_libc_breakpoint_from_before_libc_was_mapped_finds_every_call() {
    let sample = common::compile("rev_libcall", &["-g", "-O0"]);
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
    let ask = RuntimeAddr(common::symbol(&sample.path, "ask") + bias);
    t.insert_breakpoint(ask).expect("insert");
    // The present: the last round's call of ask, before its getppid.
    for _ in 0..5 {
        next_hit(&mut t, ask);
    }
    let present = t.position().expect("a hit has an exact position");
    let getppid = in_libc(t.pid().0, "getppid");

    // The whole recording, from the first snapshot (no libc there yet).
    let mut traps = Vec::new();
    t.scan(&present, &[getppid], &mut |_, _, addr| traps.push(addr))
        .expect("scan");
    let calls = traps.iter().filter(|a| **a == getppid).count();
    let asks = traps.iter().filter(|a| **a == ask).count();
    assert_eq!(
        (asks, calls),
        (4, 4),
        "the four earlier rounds' calls of ask and getppid"
    );
    assert!(t.is_replaying());
    assert_eq!(t.position().as_ref(), Some(&present));

    // With the libc breakpoint in the table, back to the first round's call of ask (a
    // replay from the first snapshot), forward by hits to the present, the live
    // process, which runs to its end.
    t.insert_breakpoint(getppid).expect("insert in libc");
    let start = t.recording_start().expect("start");
    t.goto(&start).expect("back to the recording's start");
    let mut seen = Vec::new();
    while t.is_replaying() {
        t.resume().expect("resume");
        match t.wait().expect("event") {
            Event::Stopped {
                reason: StopReason::Breakpoint { addr },
                ..
            } => seen.push(addr),
            ev => panic!("unexpected {ev:?}"),
        }
    }
    let mut expected = Vec::new();
    for _ in 0..4 {
        expected.extend([ask, getppid]);
    }
    expected.push(ask);
    assert_eq!(seen, expected, "the hits replayed, then the present");
    assert_eq!(t.position().as_ref(), Some(&present));
    t.remove_breakpoint(getppid).expect("remove");
    t.remove_breakpoint(ask).expect("remove");
    run_to_exit(&mut t);
}

/// The runtime address of `name` in the library at `path` mapped in `pid`.
fn in_library(pid: i32, path: &std::path::Path, name: &str) -> RuntimeAddr {
    let maps = tracer::procfs::read_maps(tracer::Pid(pid)).expect("maps");
    let path = path.canonicalize().expect("library path");
    let lib = maps
        .iter()
        .find(|m| std::path::Path::new(&m.path) == path && m.offset == 0)
        .unwrap_or_else(|| panic!("{} is not mapped: {maps:?}", path.display()));
    RuntimeAddr(lib.start.0 + common::symbol(&path, name))
}

#[test]
fn a_breakpoint_in_a_library_does_not_trap_in_the_one_that_was_there_before() {
    let sample = common::compile("rev_plugins", &["-g", "-O0"]);
    let plugin = testsupport::sample_path("c/rev_plugin.c");
    let libs: Vec<std::path::PathBuf> = [("a", "3"), ("b", "5")]
        .iter()
        .map(|(name, k)| {
            let out = sample.dir.path().join(format!("librev_plugin_{name}.so"));
            let define = format!("-DPLUGIN_K={k}");
            testsupport::compile_into(
                "gcc",
                std::slice::from_ref(&plugin),
                &["-g", "-O0", "-shared", "-fPIC", &define],
                &out,
            );
            out
        })
        .collect();
    let config = LaunchConfig {
        program: sample.path.clone(),
        args: libs.iter().map(|l| l.clone().into()).collect(),
        stop_at: StopAt::Entry,
        stdio: tracer::StdioMode::Null,
        record: true,
        ..LaunchConfig::default()
    };
    let (mut t, _io) = Tracer::launch(&config).expect("launch");
    t.wait().expect("entry");
    let bias = t.info().load_bias.expect("bias");
    let done = RuntimeAddr(common::symbol(&sample.path, "done") + bias);
    t.insert_breakpoint(done).expect("insert");
    // Where the first library's function was, seen while it is loaded (its dlsym).
    let run = RuntimeAddr(common::symbol(&sample.path, "run") + bias);
    t.insert_breakpoint(run).expect("insert");
    next_hit(&mut t, run);
    t.remove_breakpoint(run).expect("remove");
    let dlsym = in_libc(t.pid().0, "dlsym");
    t.insert_breakpoint(dlsym).expect("insert in libc");
    next_hit(&mut t, dlsym);
    let run_a = in_library(t.pid().0, &libs[0], "plugin_run");
    t.remove_breakpoint(dlsym).expect("remove");
    next_hit(&mut t, done);
    assert!(t.is_recording(), "{:?}", t.recording());
    let present = t.position().expect("a hit has an exact position");
    // The second library's function is where the first one's was (the test is void
    // unless they share the address), and so is its first byte.
    let run_b = in_library(t.pid().0, &libs[1], "plugin_run");
    assert_eq!(
        run_a, run_b,
        "the second library is loaded where the first was"
    );
    t.insert_breakpoint(run_b)
        .expect("insert in the second library");
    let mut traps = Vec::new();
    t.scan(&present, &[], &mut |_, _, addr| traps.push(addr))
        .expect("scan");
    assert_eq!(
        traps.iter().filter(|a| **a == run_b).count(),
        2,
        "the second library's two calls, not the first one's at {run_a:?}: {traps:?}"
    );
    t.goto(&present).expect("back to the present");
    t.remove_breakpoint(run_b).expect("remove");
    t.remove_breakpoint(done).expect("remove");
    run_to_exit(&mut t);
}
