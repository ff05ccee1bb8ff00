//! Completions in a frame and among globals, members after `.` and `->`, and the
//! program's loaded sources, on a real process.

mod common;

use engine::{Completion, CompletionKind, SourceBreakpoint, StopCause};

fn labels(list: &[Completion]) -> Vec<&str> {
    list.iter().map(|c| c.label.as_str()).collect()
}

fn has(list: &[Completion], label: &str, kind: CompletionKind) -> bool {
    list.iter().any(|c| c.label == label && c.kind == kind)
}

#[test]
fn completions_in_a_frame_and_after_members() {
    let sample = common::compile("eng_watch", &["-g", "-O0", "-pthread"]);
    let session = common::launch(&sample);
    let text = std::fs::read_to_string(&sample.source).unwrap();
    let line = text
        .lines()
        .position(|l| l.contains("/* write y */"))
        .unwrap() as u32
        + 1;
    session
        .set_line_breakpoints(
            &sample.source,
            &[SourceBreakpoint {
                line,
                ..Default::default()
            }],
        )
        .unwrap();
    session.resume().unwrap();
    let stop = common::expect_stop(&session);
    assert!(matches!(stop.cause, StopCause::Breakpoint(_)));
    let frame = Some(session.stack_trace(stop.tid).unwrap()[0].id);

    // Locals of the frame, globals, functions and types.
    let lo = session.completions(frame, "lo");
    assert!(has(&lo, "local", CompletionKind::Variable), "{lo:?}");
    let i = session.completions(frame, "1 + i");
    assert!(has(&i, "i", CompletionKind::Variable), "{i:?}");
    let co = session.completions(frame, "co");
    assert_eq!(labels(&co), ["counter"]);
    let b = session.completions(frame, "bu");
    assert!(has(&b, "bump", CompletionKind::Function), "{b:?}");
    let p = session.completions(None, "poi");
    assert!(has(&p, "point", CompletionKind::Type), "{p:?}");
    // Without a frame, no locals.
    assert!(!has(
        &session.completions(None, "lo"),
        "local",
        CompletionKind::Variable
    ));

    // Members after `.` and `->`, sorted.
    let dot = session.completions(frame, "origin.");
    assert_eq!(labels(&dot), ["x", "y"]);
    assert!(dot.iter().all(|c| c.kind == CompletionKind::Field));
    assert_eq!(
        labels(&session.completions(frame, "total + origin.y")),
        ["y"]
    );
    assert_eq!(labels(&session.completions(None, "where->")), ["x", "y"]);
    assert!(session.completions(frame, "counter.").is_empty());
    assert!(session.completions(frame, "nosuch->").is_empty());

    // Everything: sorted and capped.
    let all = session.completions(frame, "");
    assert!(!all.is_empty() && all.len() <= 200);
    assert!(all.windows(2).all(|w| w[0].label < w[1].label));

    // Loaded sources: the sample first, no system headers.
    let sources = session.sources();
    assert_eq!(sources.first(), Some(&sample.source), "{sources:?}");
    assert!(sources.iter().all(|s| !s.starts_with("/usr/include")));

    session.resume().unwrap();
    assert!(session.completions(frame, "lo").is_empty(), "running");
    session.terminate().unwrap();
}
