//! Launch, stop at entry, breakpoint hit, registers and stack, step over, exit code.

mod common;

use std::io::Read;
use tracer::{Event, LaunchConfig, RuntimeAddr, StopAt, StopReason, Tid, Tracer};

fn launch(sample: &common::Sample, args: &[&str], stop_at: StopAt) -> (Tracer, tracer::LaunchInfo) {
    let config = LaunchConfig {
        program: sample.path.clone(),
        args: args.iter().map(Into::into).collect(),
        stop_at,
        ..LaunchConfig::default()
    };
    Tracer::launch(&config).expect("launch")
}

#[test]
fn launch_break_step_and_exit() {
    let sample = common::compile("proc_target", &["-g", "-O0"]);
    let (mut t, mut launch_info) = launch(&sample, &["3", "7"], StopAt::Entry);
    let pid = t.pid();
    let ev = t.wait().expect("first event");
    assert_eq!(
        ev,
        Event::Stopped {
            tid: Tid(pid.0),
            reason: StopReason::Entry
        }
    );
    // The pc is at AT_ENTRY, and AT_ENTRY is the ELF entry plus the load bias.
    let info = t.info().clone();
    let bias = info.load_bias.expect("load bias");
    let entry = info.auxv.entry.expect("AT_ENTRY");
    let regs = t.regs(Tid(pid.0)).expect("regs");
    assert_eq!(regs.pc(), entry.0);
    let elf = std::fs::read(&sample.path).expect("read");
    let e_entry = u64::from_le_bytes(elf[24..32].try_into().expect("8 bytes"));
    assert_eq!(entry.0, e_entry + bias);

    // A breakpoint at a function from the symbol table.
    let func = RuntimeAddr(common::symbol(&sample.path, "proc_bp_target") + bias);
    let mut before = [0u8; 4];
    t.read_memory(func, &mut before).expect("read");
    t.insert_breakpoint(func).expect("insert");
    let mut during = [0u8; 4];
    t.read_memory(func, &mut during).expect("read");
    assert_eq!(before, during, "reads show the original bytes");
    assert_ne!(during[0], 0xcc);

    for i in 0..3u64 {
        t.resume().expect("resume");
        let ev = t.wait().expect("hit");
        assert_eq!(
            ev,
            Event::Stopped {
                tid: Tid(pid.0),
                reason: StopReason::Breakpoint { addr: func }
            }
        );
        let regs = t.regs(Tid(pid.0)).expect("regs");
        assert_eq!(regs.pc(), func.0);
        assert_eq!(regs.0.rdi, i, "first argument");
        // The return address on the stack points into main.
        let mut ret = [0u8; 8];
        t.read_memory(RuntimeAddr(regs.sp()), &mut ret)
            .expect("stack");
        let ret = u64::from_le_bytes(ret);
        let main = common::symbol(&sample.path, "main") + bias;
        assert!(
            ret > main && ret < main + 0x200,
            "return address {ret:#x} in main"
        );
        if i == 0 {
            // Step over the breakpoint: one instruction further, breakpoint kept.
            t.step(Tid(pid.0)).expect("step");
            let ev = t.wait().expect("step event");
            assert_eq!(
                ev,
                Event::Stopped {
                    tid: Tid(pid.0),
                    reason: StopReason::Step
                }
            );
            let pc = t.regs(Tid(pid.0)).expect("regs").pc();
            assert!(
                pc > func.0 && pc <= func.0 + 15,
                "pc {pc:#x} after one step"
            );
            assert_eq!(t.breakpoints(), vec![(func, 1)]);
        }
    }
    t.remove_breakpoint(func).expect("remove");
    t.resume().expect("resume");
    assert_eq!(t.wait().expect("exit"), Event::Exited { code: 7 });
    let mut out = String::new();
    launch_info
        .stdio
        .stdout
        .take()
        .expect("stdout pipe")
        .read_to_string(&mut out)
        .expect("read stdout");
    assert_eq!(out, "done 3\n", "output captured through the pipe");
    assert!(t.has_exited());
    drop(t);
    assert_eq!(common::state(pid.0), None, "reaped");
}

#[test]
fn stop_at_exec_reports_exec_and_aslr_off() {
    let sample = common::compile("proc_target", &["-g", "-O0"]);
    let config = LaunchConfig {
        program: sample.path.clone(),
        args: vec!["0".into(), "0".into()],
        stop_at: StopAt::Exec,
        disable_aslr: true,
        env: tracer::Env::Replace(vec![("A".into(), "1".into())]),
        cwd: Some(sample.dir.path().to_path_buf()),
        ..LaunchConfig::default()
    };
    let (mut t, _io) = Tracer::launch(&config).expect("launch");
    let pid = t.pid();
    assert!(matches!(
        t.wait().expect("event"),
        Event::Stopped {
            reason: StopReason::Exec { .. },
            ..
        }
    ));
    if t.info().aslr_disabled {
        assert_eq!(t.info().load_bias, Some(0x5555_5555_4000));
    } else {
        assert!(!t.info().warnings.is_empty());
    }
    let environ = std::fs::read(format!("/proc/{}/environ", pid.0)).expect("environ");
    assert_eq!(environ, b"A=1\0");
    let cwd = std::fs::read_link(format!("/proc/{}/cwd", pid.0)).expect("cwd");
    assert_eq!(cwd, sample.dir.path().canonicalize().expect("canon"));
    t.resume().expect("resume");
    assert_eq!(t.wait().expect("exit"), Event::Exited { code: 0 });
}

#[test]
fn launch_errors_are_clear() {
    let config = LaunchConfig {
        program: "/nonexistent/program".into(),
        ..LaunchConfig::default()
    };
    let err = Tracer::launch(&config).expect_err("must fail");
    let msg = err.to_string();
    assert!(msg.contains("exec failed"), "{msg}");
    assert!(msg.contains("No such file"), "{msg}");
}

#[test]
fn kill_while_stopped_is_reported_and_reaped() {
    let sample = common::compile("proc_spin", &["-g", "-O0"]);
    let (mut t, _io) = launch(&sample, &[], StopAt::Entry);
    let pid = t.pid();
    t.wait().expect("entry");
    // SIGKILL from outside while the debuggee sits in a ptrace-stop.
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(pid.0, libc::SIGKILL) };
    let mut ev = None;
    for _ in 0..50 {
        if let Some(e) = t.poll().expect("poll") {
            ev = Some(e);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(
        ev,
        Some(Event::Signaled {
            signo: libc::SIGKILL,
            core_dumped: false
        })
    );
    assert!(t.has_exited());
    assert_eq!(common::state(pid.0), None, "no zombie");
}

#[test]
fn dropping_a_tracer_kills_the_launched_debuggee() {
    let sample = common::compile("proc_spin", &["-g", "-O0"]);
    let (mut t, _io) = launch(&sample, &[], StopAt::Entry);
    let pid = t.pid();
    t.wait().expect("entry");
    t.resume().expect("resume");
    std::thread::sleep(std::time::Duration::from_millis(50));
    drop(t);
    assert_eq!(common::state(pid.0), None, "killed and reaped");
}

#[test]
fn registers_fp_and_debug() {
    let sample = common::compile("proc_target", &["-g", "-O0"]);
    let (mut t, _io) = launch(&sample, &["1", "0"], StopAt::Entry);
    let tid = Tid(t.pid().0);
    t.wait().expect("entry");
    let fp = t.fp_regs(tid).expect("fp regs");
    assert_eq!(fp.mxcsr() & 0x1f80, 0x1f80, "default exception masks");
    t.set_fp_regs(tid, &fp).expect("set fp");
    assert_eq!(t.debug_reg(tid, 7).expect("dr7"), 0);
    let bias = t.info().load_bias.expect("bias");
    let func = common::symbol(&sample.path, "proc_bp_target") + bias;
    // A hardware execution breakpoint through DR0/DR7.
    t.set_debug_reg(tid, 0, func).expect("dr0");
    t.set_debug_reg(tid, 7, 1).expect("dr7");
    t.resume().expect("resume");
    match t.wait().expect("hw break") {
        Event::Stopped {
            reason: StopReason::Watchpoint { dr6 },
            ..
        } => assert_eq!(dr6 & 1, 1),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(t.regs(tid).expect("regs").pc(), func);
    t.set_debug_reg(tid, 7, 0).expect("dr7 off");
    assert!(matches!(
        t.debug_reg(tid, 4),
        Err(tracer::Error::InvalidDebugRegister(4))
    ));
    t.resume().expect("resume");
    assert_eq!(t.wait().expect("exit"), Event::Exited { code: 0 });
}

#[test]
fn write_memory_keeps_breakpoints() {
    let sample = common::compile("proc_target", &["-g", "-O0"]);
    let (mut t, _io) = launch(&sample, &["1", "0"], StopAt::Entry);
    t.wait().expect("entry");
    let bias = t.info().load_bias.expect("bias");
    let func = RuntimeAddr(common::symbol(&sample.path, "proc_bp_target") + bias);
    let mut orig = [0u8; 2];
    t.read_memory(func, &mut orig).expect("read");
    t.insert_breakpoint(func).expect("insert");
    t.insert_breakpoint(func).expect("insert twice");
    // Writing through read-only text: the saved byte changes, the int3 stays.
    t.write_memory(func, &orig).expect("write text");
    let mut now = [0u8; 2];
    t.read_memory(func, &mut now).expect("read");
    assert_eq!(now, orig);
    t.remove_breakpoint(func).expect("remove one");
    assert_eq!(t.breakpoints().len(), 1, "still referenced");
    t.remove_breakpoint(func).expect("remove two");
    assert!(t.breakpoints().is_empty());
    assert!(t.remove_breakpoint(func).is_err());
    t.resume().expect("resume");
    assert_eq!(t.wait().expect("exit"), Event::Exited { code: 0 });
}
