//! Signal stops on real processes: which signals stop by default, what the kernel
//! said about them (exceptionInfo), delivery on resume, and changing the set.

mod common;

use std::path::Path;

use engine::{FunctionBreakpoint, Session, SessionEvent, StopCause};

fn line_of(source: &Path, marker: &str) -> u32 {
    let text = std::fs::read_to_string(source).expect("source");
    text.lines()
        .position(|l| l.contains(marker))
        .map(|i| i as u32 + 1)
        .unwrap_or_else(|| panic!("no line with {marker}"))
}

fn launch(sample: &common::Sample, mode: &str) -> Session {
    Session::launch(engine::LaunchOptions {
        program: sample.path.clone(),
        args: vec![mode.into()],
        stdio: tracer::StdioMode::Null,
        disable_aslr: true,
        ..Default::default()
    })
    .expect("launch")
}

fn fault() -> common::Sample {
    common::compile("eng_fault", &["-g", "-O0"])
}

#[test]
fn a_null_dereference_stops_and_continuing_delivers_sigsegv() {
    let sample = fault();
    let session = launch(&sample, "segv");
    session.resume().unwrap();
    let stop = common::expect_stop(&session);
    assert_eq!(stop.cause, StopCause::Signal(libc::SIGSEGV));
    assert_eq!(
        stop.description.as_deref(),
        Some("SIGSEGV: address not mapped to object at 0x0")
    );
    let info = session.exception_info(stop.tid).expect("exception info");
    assert_eq!(info.signo, libc::SIGSEGV);
    assert_eq!(info.name, "SIGSEGV");
    assert_eq!(info.code, 1, "SEGV_MAPERR");
    assert_eq!(info.fault_address, Some(0));
    assert_eq!(
        info.description,
        "SIGSEGV: address not mapped to object at 0x0"
    );
    assert_eq!(session.exception_info(tracer::Tid(1)), None);
    assert_eq!(
        common::position(&session, stop.tid),
        format!("deref {}", line_of(&sample.source, "/* segv */"))
    );
    // Like gdb: continuing delivers the signal, which kills the program.
    session.resume().unwrap();
    match session.wait_stop(common::STOP).unwrap() {
        SessionEvent::Signaled { signo } => assert_eq!(signo, libc::SIGSEGV),
        other => panic!("{other:?}"),
    }
}

#[test]
fn abort_stops_with_sigabrt_sent_by_tkill() {
    let sample = fault();
    let session = launch(&sample, "abort");
    session.resume().unwrap();
    let stop = common::expect_stop(&session);
    assert_eq!(stop.cause, StopCause::Signal(libc::SIGABRT));
    let info = session.exception_info(stop.tid).unwrap();
    assert_eq!(info.code, libc::SI_TKILL);
    assert_eq!(info.fault_address, None);
    assert_eq!(
        info.description,
        format!("SIGABRT: sent by tkill from process {}", session.pid().0)
    );
    let frames = session.stack_trace(stop.tid).unwrap();
    let main = frames
        .iter()
        .find(|f| f.function.as_deref() == Some("main"))
        .expect("main on the stack");
    assert_eq!(
        main.line.map(|l| l.get()),
        Some(line_of(&sample.source, "/* abort */"))
    );
    session.resume().unwrap();
    match session.wait_stop(common::STOP).unwrap() {
        SessionEvent::Signaled { signo } => assert_eq!(signo, libc::SIGABRT),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_division_by_zero_reports_the_faulting_instruction() {
    let sample = fault();
    let session = launch(&sample, "fpe");
    session.resume().unwrap();
    let stop = common::expect_stop(&session);
    assert_eq!(stop.cause, StopCause::Signal(libc::SIGFPE));
    let info = session.exception_info(stop.tid).unwrap();
    let pc = session.stack_trace(stop.tid).unwrap()[0].pc.0;
    assert_eq!(info.fault_address, Some(pc), "si_addr is the idiv");
    assert_eq!(
        info.description,
        format!("SIGFPE: integer divide by zero at {pc:#x}")
    );
    session.terminate().unwrap();
}

#[test]
fn sigusr1_passes_silently_unless_asked_to_stop() {
    let sample = common::compile("eng_signal", &["-g", "-O0"]);
    // By default the handler runs without a stop and the program exits 0.
    let session = common::launch(&sample);
    session.resume().unwrap();
    match session.wait_stop(common::STOP).unwrap() {
        SessionEvent::Exited { code } => assert_eq!(code, 0),
        other => panic!("{other:?}"),
    }

    let session = common::launch(&sample);
    session.set_signal_stops(&[libc::SIGUSR1]).unwrap();
    let st = session
        .set_function_breakpoints(&[FunctionBreakpoint {
            name: "on_usr1".into(),
            ..Default::default()
        }])
        .unwrap();
    session.resume().unwrap();
    let stop = common::expect_stop(&session);
    assert_eq!(stop.cause, StopCause::Signal(libc::SIGUSR1));
    let info = session.exception_info(stop.tid).unwrap();
    assert_eq!(info.name, "SIGUSR1");
    assert_eq!(info.fault_address, None);
    // Resuming delivers it: the handler's breakpoint is next.
    session.resume().unwrap();
    let stop = common::expect_stop(&session);
    assert_eq!(stop.cause, StopCause::Breakpoint(vec![st[0].id]));
    assert_eq!(session.exception_info(stop.tid), None, "not a signal stop");
    session.resume().unwrap();
    match session.wait_stop(common::STOP).unwrap() {
        SessionEvent::Exited { code } => assert_eq!(code, 0, "the handler ran"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn without_sigsegv_in_the_set_the_fault_kills_without_a_stop_but_sigtrap_stops() {
    let sample = fault();
    let session = launch(&sample, "segv");
    session.set_signal_stops(&[]).unwrap();
    session.resume().unwrap();
    match session.wait_stop(common::STOP).unwrap() {
        SessionEvent::Signaled { signo } => assert_eq!(signo, libc::SIGSEGV),
        other => panic!("{other:?}"),
    }

    // A SIGTRAP tandem did not cause always stops, and is not delivered.
    let session = launch(&sample, "trap");
    session.set_signal_stops(&[]).unwrap();
    session.resume().unwrap();
    let stop = common::expect_stop(&session);
    assert_eq!(stop.cause, StopCause::Signal(libc::SIGTRAP));
    // The trap has executed: the pc is at the next line's code.
    assert_eq!(
        common::position(&session, stop.tid),
        format!("main {}", line_of(&sample.source, "/* trap */") + 1)
    );
    session.resume().unwrap();
    match session.wait_stop(common::STOP).unwrap() {
        SessionEvent::Exited { code } => assert_eq!(code, 3),
        other => panic!("{other:?}"),
    }
}
