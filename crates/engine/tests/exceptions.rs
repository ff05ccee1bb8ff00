//! Exceptions and panics as stop causes: a Rust panic stops at `rust_begin_unwind`
//! with its message; a C++ throw stops at `__cxa_throw` with the thrown type (in
//! libstdc++, planted when the library loads), a catch at `__cxa_begin_catch`.

mod common;
mod lang;

use engine::{ExceptionStop, SessionEvent, StopCause};

fn next_exception(
    session: &engine::Session,
) -> Option<(ExceptionStop, Option<String>, tracer::Tid)> {
    match session.wait_stop(common::STOP).expect("event") {
        SessionEvent::Stopped(stop) => match stop.cause {
            StopCause::Exception { kind, message } => Some((kind, message, stop.tid)),
            other => panic!("unexpected stop {other:?}"),
        },
        SessionEvent::Exited { .. } | SessionEvent::Signaled { .. } => None,
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn rust_panics_stop_with_their_message() {
    let sample = lang::compile_rust("val_panic");
    let session = common::launch(&sample);
    let planted = session
        .set_exception_stops(&[ExceptionStop::RustPanic])
        .expect("set");
    assert_eq!(planted, vec![true]);
    session.resume().expect("resume");
    let (kind, message, tid) = next_exception(&session).expect("first panic");
    assert_eq!(kind, ExceptionStop::RustPanic);
    let message = message.expect("message");
    assert!(message.starts_with("boom at "), "{message}");
    assert!(message.contains("val_panic.rs:14:"), "{message}");
    let info = session.last_exception(tid).expect("info");
    assert_eq!(info.kind, ExceptionStop::RustPanic);
    let frames = session.stack_trace(tid).expect("stack");
    assert!(
        frames.iter().any(|f| f
            .function
            .as_deref()
            .is_some_and(|n| n.contains("val_panic::main"))),
        "{frames:?}"
    );
    session.resume().expect("resume");
    let (_, message, _) = next_exception(&session).expect("second panic");
    let message = message.expect("message");
    // The argument is formatted as the program prints it.
    assert!(message.starts_with("too big: 5 at "), "{message}");
    session.resume().expect("resume");
    assert!(next_exception(&session).is_none());
}

#[test]
fn cpp_throw_and_catch_stop_with_the_type() {
    let sample = lang::compile_cpp("val_cpp");
    let session = common::launch(&sample);
    // libstdc++ is not loaded at the entry stop: the stops are pending until it is.
    session
        .set_exception_stops(&[ExceptionStop::CppThrow, ExceptionStop::CppCatch])
        .expect("set");
    session.resume().expect("resume");
    let (kind, message, tid) = next_exception(&session).expect("throw");
    assert_eq!(kind, ExceptionStop::CppThrow);
    assert_eq!(message.as_deref(), Some("std::runtime_error: too big"));
    let info = session.last_exception(tid).expect("info");
    assert_eq!(info.type_name.as_deref(), Some("std::runtime_error"));
    // what(), read from the object without calling it.
    assert_eq!(info.message.as_deref(), Some("too big"));
    let frames = session.stack_trace(tid).expect("stack");
    assert!(
        frames
            .iter()
            .any(|f| f.function.as_deref() == Some("thrower")),
        "{frames:?}"
    );
    session.resume().expect("resume");
    let (kind, _, _) = next_exception(&session).expect("catch");
    assert_eq!(kind, ExceptionStop::CppCatch);
    session.set_exception_stops(&[]).expect("clear");
    session.resume().expect("resume");
    assert!(next_exception(&session).is_none());
}
