//! The hot path: a breakpoint whose condition is false is decided on the tracer thread
//! and resumed there. This checks that the condition is exact (one stop, at the right
//! iteration) and that the false hits are cheap (a lenient floor; the figures for
//! docs/benchmarks.md come from the release build).

mod common;

use std::time::Instant;

use engine::{SessionEvent, SourceBreakpoint, StopCause};

#[test]
fn false_condition_hits_stay_on_the_tracer_thread() {
    let sample = common::compile("eng_bench", &["-g", "-O0"]);
    let n = 20_000;
    let session = engine::Session::launch(engine::LaunchOptions {
        program: sample.path.clone(),
        args: vec![n.to_string().into()],
        stdio: tracer::StdioMode::Null,
        ..Default::default()
    })
    .unwrap();
    let st = session
        .set_line_breakpoints(
            &sample.source,
            &[SourceBreakpoint {
                line: 8,
                condition: Some(format!("i == {}", n - 1)),
                ..Default::default()
            }],
        )
        .unwrap();
    assert!(st[0].verified);
    let start = Instant::now();
    session.resume().unwrap();
    let stop = common::expect_stop(&session);
    let elapsed = start.elapsed();
    assert_eq!(stop.cause, StopCause::Breakpoint(vec![st[0].id]));
    let f = session.stack_trace(stop.tid).unwrap()[0].id;
    assert_eq!(
        session.evaluate(f, "i").unwrap().rendered,
        (n - 1).to_string()
    );
    let rate = f64::from(n) / elapsed.as_secs_f64();
    eprintln!("{rate:.0} false hits/s ({n} hits in {elapsed:?})");
    // Far below the target (20,000/s in release) so a loaded CI machine passes; a
    // regression that crosses threads or unwinds per hit still fails it.
    assert!(rate > 2_000.0, "{rate:.0} hits/s");
    session.resume().unwrap();
    assert_eq!(
        session.wait_stop(common::STOP).unwrap(),
        SessionEvent::Exited { code: 0 }
    );
}
