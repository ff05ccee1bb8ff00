//! C++ values end to end: a sample compiled with g++ -g, stopped in a function with
//! libstdc++ containers and smart pointers and in a method (`this`, base classes);
//! variables trees against snapshots and every leaf against gdb with libstdc++'s
//! pretty printers.

mod common;
mod lang;

use lang::{compile_cpp, dump_tree, snapshot, stop_at_line};

fn compare(mut expected: Vec<String>, actual: Vec<String>) {
    // gdb's flat view shows a null smart pointer by its `get()` child; the engine's
    // leaf is the whole text, `std::unique_ptr<int> = {get() = 0x0}`.
    let mut actual: Vec<String> = actual
        .into_iter()
        .map(|l| match l.split_once(" = ") {
            Some((path, v)) if v.ends_with(" = {get() = 0x0}") => format!("{path} = 0x0"),
            _ => l,
        })
        .collect();
    expected.sort();
    actual.sort();
    let missing: Vec<_> = expected.iter().filter(|l| !actual.contains(l)).collect();
    let extra: Vec<_> = actual.iter().filter(|l| !expected.contains(l)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "gdb only: {missing:#?}\nengine only: {extra:#?}"
    );
}

#[test]
fn cpp_containers_match_snapshot_and_gdb() {
    let sample = compile_cpp("val_cpp");
    let line = lang::line_of(&sample, "break in inspect");
    let expected = lang::gdb_rust_leaves(
        &sample.path,
        &format!("val_cpp.cpp:{line}"),
        sample.dir.path(),
    );
    assert!(expected.len() > 10, "gdb gave {expected:#?}");
    let (session, stop) = stop_at_line(&sample, "break in inspect");
    snapshot("cpp_values", &dump_tree(&session, stop.tid, 3));
    let actual = lang::engine_leaves(&session, stop.tid);
    session.terminate().ok();
    for needle in [
        "greeting = \"hello, world\"",
        "words[2] = \"three\"",
        "ages[\"bob\"] = 42",
        "names[1] = \"one\"",
        "shared = 7",
        "shared.use_count = 2",
        "owned.radius = 2",
        "nums[2] = 3",
    ] {
        assert!(
            actual.iter().any(|l| l == needle),
            "no {needle}: {actual:#?}"
        );
    }
    compare(expected, actual);
}

#[test]
fn cpp_method_shows_this_and_base_members() {
    let sample = compile_cpp("val_cpp");
    let line = lang::line_of(&sample, "break in method");
    let expected = lang::gdb_rust_leaves(
        &sample.path,
        &format!("val_cpp.cpp:{line}"),
        sample.dir.path(),
    );
    let (session, stop) = stop_at_line(&sample, "break in method");
    snapshot("cpp_method", &dump_tree(&session, stop.tid, 3));
    let actual = lang::engine_leaves(&session, stop.tid);
    let frame = session.stack_trace(stop.tid).expect("stack")[0].id;
    let eval = |e: &str| {
        session
            .evaluate(frame, e)
            .map(|v| v.rendered)
            .unwrap_or_else(|e| e.to_string())
    };
    assert_eq!(eval("this->radius"), "2");
    assert_eq!(eval("this->sides"), "0");
    // A C++ comparison is a bool, as gdb prints it in a C++ frame.
    assert_eq!(eval("this->name == \"circle\""), "true");
    assert_eq!(eval("this->name.size()"), "6");
    session.terminate().ok();
    for needle in [
        "this.<Shape>.name = \"circle\"",
        "this.radius = 2",
        "scale = 1",
    ] {
        assert!(
            actual.iter().any(|l| l == needle),
            "no {needle}: {actual:#?}"
        );
    }
    compare(expected, actual);
}
