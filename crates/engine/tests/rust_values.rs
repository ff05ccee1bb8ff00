//! Rust values end to end: a sample compiled with rustc -g, stopped in `inspect`; the
//! variables tree is compared with a snapshot (`UPDATE_SNAPSHOTS=1` rewrites it) and
//! every leaf gdb can show is compared with gdb (native Rust support plus the Rust
//! pretty printers shipped with the toolchain).

mod common;
mod lang;

use lang::{compile_rust, dump_tree, snapshot, stop_at_line};

#[test]
fn rust_variables_tree_matches_snapshot() {
    let sample = compile_rust("val_rust");
    let (session, stop) = stop_at_line(&sample, "break here");
    let tree = dump_tree(&session, stop.tid, 3);
    snapshot("rust_values", &tree);
    session.terminate().ok();
}

/// Variables gdb cannot show (no printer for `Weak`, the printer of `Ref` fails; `&Path`
/// and `&OsStr` print as their address, `&std::path::Path 0x…`, even with rustc's gdb
/// printers — its lldb formatters show the text, as tandem does, checked below against
/// gdb's text of the `PathBuf` and `OsString` they borrow) and leaves shown differently
/// on purpose (a `RefCell`'s borrow state is words here).
const NOT_COMPARED: &[&str] = &["weak", "borrowed", "refcell.borrow", "path_ref", "os_ref"];

#[test]
fn rust_values_agree_with_gdb() {
    let sample = compile_rust("val_rust");
    let line = lang::line_of(&sample, "break here");
    let mut expected = lang::gdb_rust_leaves(
        &sample.path,
        &format!("val_rust.rs:{line}"),
        sample.dir.path(),
    );
    assert!(expected.len() > 40, "gdb gave {expected:#?}");
    let (session, stop) = stop_at_line(&sample, "break here");
    let mut actual = lang::engine_leaves(&session, stop.tid);
    session.terminate().ok();
    let keep = |l: &String| {
        let key = l.split(" = ").next().unwrap_or("");
        !NOT_COMPARED.iter().any(|n| {
            key == *n || key.starts_with(&format!("{n}.")) || key.starts_with(&format!("{n}["))
        })
    };
    // A set's order is the table's: compare its elements as a multiset.
    let unindex = |l: &String| {
        if let Some(rest) = l.strip_prefix("set[") {
            format!("set[] {}", rest.split_once("] ").map_or("", |x| x.1))
        } else {
            l.clone()
        }
    };
    // `&Path` and `&OsStr` read as the text gdb shows for the owned values they borrow
    // (before: a sequence of `Path`s each reading the first byte).
    for (owned, borrowed) in [("path", "path_ref"), ("os", "os_ref")] {
        let text = |list: &[String], name: &str| {
            list.iter()
                .find_map(|l| l.strip_prefix(&format!("{name} = ")).map(str::to_owned))
        };
        let gdb_text = text(&expected, owned);
        assert!(gdb_text.is_some(), "gdb shows no {owned}: {expected:#?}");
        assert_eq!(text(&actual, borrowed), gdb_text, "{borrowed}: {actual:#?}");
    }
    expected = expected.iter().filter(|l| keep(l)).map(unindex).collect();
    actual = actual.iter().filter(|l| keep(l)).map(unindex).collect();
    expected.sort();
    actual.sort();
    let missing: Vec<_> = expected.iter().filter(|l| !actual.contains(l)).collect();
    let extra: Vec<_> = actual.iter().filter(|l| !expected.contains(l)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "gdb only: {missing:#?}\nengine only: {extra:#?}"
    );
    for needle in [
        "ok@ = Ok",
        "err@ = Err",
        "some_ref@ = Some",
        "none_box = None",
        "map[\"b\"] = 2",
        "deque[3] = 4",
        "rc.strong = 2",
        "emoji = U+1f600",
        "ubig = 340282366920938463463374607431768211455",
    ] {
        assert!(
            actual.iter().any(|l| l == needle),
            "no {needle}: {actual:#?}"
        );
    }
}

/// Rust expressions in evaluate: field access through references and `Box`, tuple
/// fields, indexing with bounds checks, `len()`, string equality, Rust integer
/// semantics (overflow is an error; a literal takes the other operand's type).
#[test]
fn rust_expressions_evaluate() {
    let sample = compile_rust("val_rust");
    let (session, stop) = stop_at_line(&sample, "break here");
    let frame = session.stack_trace(stop.tid).expect("stack")[0].id;
    let eval = |e: &str| match session.evaluate(frame, e) {
        Ok(v) => v.rendered,
        Err(err) => format!("error: {err}"),
    };
    let cases: &[(&str, &str)] = &[
        ("p.x", "3"),
        ("p.x + 1", "4"),
        ("(*p).y", "-4"),
        ("boxed.y", "20"),
        ("*boxed", "Point { x: 10, y: 20 }"),
        ("tuple.2", "'z'"),
        ("pair.0", "9"),
        ("tuple.0 + 1", "2"),
        ("v[1]", "20"),
        ("v.len()", "3"),
        ("slice[2]", "7"),
        ("slice.len()", "3"),
        ("nums[3]", "4"),
        ("nums.len()", "4"),
        ("deque[0]", "1"),
        ("deque[3]", "4"),
        ("words[1]", "\"two\""),
        ("words[1].len()", "3"),
        ("s.len()", "5"),
        ("owned.len()", "12"),
        ("text.len()", "20"),
        ("map.len()", "3"),
        ("s == \"hello\"", "1"),
        ("s != \"hello\"", "0"),
        ("owned == \"owned string\"", "1"),
        ("words[0] == \"one\"", "1"),
        ("s == \"hell\"", "0"),
        ("n == 1", "1"),
        ("n > 0 && v.len() == 3", "1"),
        ("offset * 2", "20"),
        ("&nums[1] == &nums[1]", "1"),
        ("r.w * r.h", "6"),
        ("1_000u64 + n", "1001"),
    ];
    let mut wrong = Vec::new();
    for (e, want) in cases {
        let got = eval(e);
        if got != *want {
            wrong.push(format!("{e}: got {got:?}, want {want:?}"));
        }
    }
    for (e, want) in [
        (
            "v[3]",
            "index out of bounds: the len is 3 but the index is 3",
        ),
        ("tuple.0 + 255", "attempt to add with overflow"),
        ("bytes[2] * 2", "attempt to multiply with overflow"),
        ("s < \"x\"", "strings can only be compared"),
    ] {
        let got = eval(e);
        if !got.contains(want) {
            wrong.push(format!("{e}: got {got:?}, want an error with {want:?}"));
        }
    }
    session.terminate().ok();
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// A Rust condition (`s == "hello" && v.len() == 3`) holds and stops; a false one
/// (`owned == "nope"`) does not.
#[test]
fn rust_conditions_decide_stops() {
    let sample = compile_rust("val_rust");
    let line = lang::line_of(&sample, "break here");
    for (cond, stops) in [
        ("s == \"hello\" && v.len() == 3 && p.x == 3", true),
        ("owned == \"nope\"", false),
    ] {
        let session = common::launch(&sample);
        let st = session
            .set_line_breakpoints(
                &sample.source,
                &[engine::SourceBreakpoint {
                    line,
                    condition: Some(cond.into()),
                    ..Default::default()
                }],
            )
            .expect("set");
        assert!(st[0].verified, "{st:?}");
        session.resume().expect("resume");
        let ev = session.wait_stop(common::STOP).expect("event");
        match (stops, ev) {
            (true, engine::SessionEvent::Stopped(_))
            | (false, engine::SessionEvent::Exited { .. }) => {}
            (_, other) => panic!("{cond}: unexpected {other:?}"),
        }
        session.terminate().ok();
    }
}

/// Rust names: function breakpoints by `func`, `module::func`, `crate::module::func`
/// and `Type::method`; frames show demangled paths without the hash.
#[test]
fn rust_function_breakpoints_and_frame_names() {
    let sample = compile_rust("val_rust");
    for (query, frame0) in [
        ("inspect", "val_rust::inspect"),
        ("val_rust::inspect", "val_rust::inspect"),
        ("geometry::area", "val_rust::geometry::area"),
        ("Rect::area", "val_rust::geometry::Rect::area"),
        (
            "val_rust::geometry::Rect::area",
            "val_rust::geometry::Rect::area",
        ),
    ] {
        let session = common::launch(&sample);
        let st = session
            .set_function_breakpoints(&[engine::FunctionBreakpoint {
                name: query.into(),
                ..Default::default()
            }])
            .expect("set");
        assert!(st[0].verified, "{query}: {st:?}");
        session.resume().expect("resume");
        let stop = common::expect_stop(&session);
        let frames = session.stack_trace(stop.tid).expect("stack");
        let names: Vec<String> = frames.iter().filter_map(|f| f.function.clone()).collect();
        assert_eq!(names[0], frame0, "{query}: {names:?}");
        assert!(names.iter().any(|n| n == "val_rust::main"), "{names:?}");
        assert!(
            names
                .iter()
                .all(|n| !n.contains("::h") && !n.starts_with("_ZN")),
            "{names:?}"
        );
        session.terminate().ok();
    }
}
