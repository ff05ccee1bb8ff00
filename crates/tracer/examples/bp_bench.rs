//! Breakpoint round-trip benchmark: hits per second through `tracer`, beside the
//! minimal C ptrace loop (samples/c/proc_ptrace_loop.c) doing the same work.
//!
//! Usage: `cargo run --release -p tracer --example bp_bench [HITS]`
#![allow(clippy::print_stdout, clippy::unwrap_used)] // the figures are the output

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;
use tracer::{Event, LaunchConfig, RuntimeAddr, StdioMode, StopAt, StopReason, Tracer};

fn gcc(dir: &Path, name: &str, flags: &[&str]) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../samples/c/{name}.c"));
    let out = dir.join(name);
    let st = Command::new("gcc")
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg(src)
        .status()
        .unwrap();
    assert!(st.success());
    out
}

fn symbol(path: &Path, name: &str) -> u64 {
    use object::{Object, ObjectSymbol};
    let data = std::fs::read(path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    file.symbols()
        .find(|s| s.name() == Ok(name))
        .map(|s| s.address())
        .unwrap()
}

fn through_target(program: &Path, func: u64, hits: u64) -> f64 {
    let config = LaunchConfig {
        program: program.to_path_buf(),
        args: vec![hits.to_string().into(), "0".into()],
        stdio: StdioMode::Null,
        stop_at: StopAt::Entry,
        ..LaunchConfig::default()
    };
    let (mut t, _io) = Tracer::launch(&config).unwrap();
    t.wait().unwrap();
    let addr = RuntimeAddr(func + t.info().load_bias.unwrap_or(0));
    t.insert_breakpoint(addr).unwrap();
    let start = Instant::now();
    let mut n = 0u64;
    t.resume().unwrap();
    loop {
        match t.wait().unwrap() {
            Event::Stopped {
                reason: StopReason::Breakpoint { .. },
                tid,
            } => {
                // What an engine does on every hit: look at the registers.
                let _pc = t.regs(tid).unwrap().pc();
                n += 1;
                t.resume().unwrap();
            }
            Event::Exited { .. } => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(n, hits);
    n as f64 / start.elapsed().as_secs_f64()
}

/// The same loop driven from another thread through the `Send` handle: every hit
/// crosses threads twice (event out, resume in).
fn through_handle(program: &Path, func: u64, hits: u64) -> f64 {
    let config = LaunchConfig {
        program: program.to_path_buf(),
        args: vec![hits.to_string().into(), "0".into()],
        stdio: StdioMode::Null,
        stop_at: StopAt::Entry,
        ..LaunchConfig::default()
    };
    let (tx, rx) = crossbeam_channel::unbounded();
    let (h, _io) = tracer::spawn_launch(
        config,
        Box::new(move |_tracer: &mut tracer::Tracer, ev| {
            let _ = tx.send(ev);
        }),
    )
    .unwrap();
    rx.recv().unwrap();
    let addr = RuntimeAddr(func + h.info().load_bias.unwrap_or(0));
    h.insert_breakpoint(addr).unwrap();
    let start = Instant::now();
    let mut n = 0u64;
    h.resume().unwrap();
    loop {
        match rx.recv().unwrap() {
            Event::Stopped { .. } => {
                n += 1;
                h.resume().unwrap();
            }
            Event::Exited { .. } => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(n, hits);
    n as f64 / start.elapsed().as_secs_f64()
}

/// The engine's way: a sink on the tracer thread decides on each hit (here: always
/// resume) without crossing threads; only the exit goes out.
fn through_sink(program: &Path, func: u64, hits: u64) -> f64 {
    let config = LaunchConfig {
        program: program.to_path_buf(),
        args: vec![hits.to_string().into(), "0".into()],
        stdio: StdioMode::Null,
        stop_at: StopAt::Entry,
        ..LaunchConfig::default()
    };
    let (tx, rx) = crossbeam_channel::unbounded();
    let mut n = 0u64;
    let (h, _io) = tracer::spawn_launch(
        config,
        Box::new(move |t: &mut tracer::Tracer, ev| match ev {
            Event::Stopped {
                reason: StopReason::Breakpoint { .. },
                tid,
            } => {
                let _pc = t.regs(tid).map(|r| r.pc());
                n += 1;
                let _ = t.resume();
            }
            other => {
                let _ = tx.send((other, n));
            }
        }),
    )
    .unwrap();
    rx.recv().unwrap();
    let addr = RuntimeAddr(func + h.info().load_bias.unwrap_or(0));
    h.insert_breakpoint(addr).unwrap();
    let start = Instant::now();
    h.resume().unwrap();
    let (ev, n) = rx.recv().unwrap();
    assert!(matches!(ev, Event::Exited { .. }), "{ev:?}");
    assert_eq!(n, hits);
    n as f64 / start.elapsed().as_secs_f64()
}

fn c_loop(c_loop: &Path, program: &Path, func: u64, hits: u64) -> f64 {
    let out = Command::new(c_loop)
        .arg(program)
        .arg(format!("{func:x}"))
        .arg(hits.to_string())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.starts_with("c_loop")).unwrap();
    line.rsplit('=').next().unwrap().trim().parse().unwrap()
}

fn main() {
    let hits: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200_000);
    let dir = tempfile::tempdir().unwrap();
    let program = gcc(dir.path(), "proc_target", &["-g", "-O0", "-no-pie"]);
    let lp = gcc(dir.path(), "proc_ptrace_loop", &["-O2"]);
    let func = symbol(&program, "proc_bp_target");
    let mut c = Vec::new();
    let mut r = Vec::new();
    let mut hd = Vec::new();
    let mut sk = Vec::new();
    for _ in 0..3 {
        c.push(c_loop(&lp, &program, func, hits));
        r.push(through_target(&program, func, hits));
        sk.push(through_sink(&program, func, hits));
        hd.push(through_handle(&program, func, hits / 4));
    }
    let best = |v: &[f64]| v.iter().cloned().fold(0.0, f64::max);
    let (cb, rb) = (best(&c), best(&r));
    println!("hits per run: {hits}");
    println!(
        "c loop      : {:?} hits/s (best {cb:.0})",
        c.iter().map(|x| *x as u64).collect::<Vec<_>>()
    );
    println!(
        "target      : {:?} hits/s (best {rb:.0})",
        r.iter().map(|x| *x as u64).collect::<Vec<_>>()
    );
    println!("target / c  : {:.1}%", rb / cb * 100.0);
    println!(
        "via sink    : {:?} hits/s (best {:.0}; tracer thread + handle, engine-style)",
        sk.iter().map(|x| *x as u64).collect::<Vec<_>>(),
        best(&sk)
    );
    println!(
        "via handle  : {:?} hits/s (best {:.0}; events and resumes cross threads)",
        hd.iter().map(|x| *x as u64).collect::<Vec<_>>(),
        best(&hd)
    );
}
