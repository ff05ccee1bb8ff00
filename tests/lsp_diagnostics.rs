//! `tandem lsp` diagnostics end to end: stale binaries, the compiler's errors on save,
//! cargo check for Rust packages, a newer save or change superseding a running check, and
//! the compiler's check of unsaved C text on didChange.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};
use support::lsp_workspace::*;
use support::Peer;

/// Reads messages until a `publishDiagnostics` for `uri` satisfies `done`; returns it and
/// every diagnostic message seen for `uri` on the way.
fn wait_diagnostics(
    peer: &mut Peer,
    uri: &str,
    done: impl Fn(&Value) -> bool,
) -> (Value, Vec<String>) {
    let mut seen = Vec::new();
    loop {
        let msg = peer.recv();
        if msg["method"] != "textDocument/publishDiagnostics" || msg["params"]["uri"] != uri {
            continue;
        }
        let diags = msg["params"]["diagnostics"].clone();
        seen.extend(
            diags
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d["message"].as_str().unwrap().to_owned()),
        );
        if done(&diags) {
            return (diags, seen);
        }
    }
}

fn messages(diags: &Value) -> Vec<String> {
    diags
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["message"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn diagnostics_for_stale_binaries_and_compiler_errors_on_save() {
    let (ws, c, _) = tokens_workspace("diag");
    let (mut peer, init) = ws.serve(&["utf-16"], Value::Null);
    assert_eq!(
        init["result"]["capabilities"]["textDocumentSync"]["save"],
        json!({"includeText": false})
    );
    let path = ws.root.join("lsp_tokens.c");
    let good = std::fs::read_to_string(&path).unwrap();
    peer.lsp_notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": c, "languageId": "c", "version": 1, "text": good}}),
    );
    // An edit saved: the binary is now older than its source, and the compiler complains.
    let bad = good.replace("return value + (note", "return valu + (note");
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&path, &bad).unwrap();
    peer.lsp_notify("textDocument/didSave", json!({"textDocument": {"uri": c}}));
    let (diags, _) = wait_diagnostics(&mut peer, &c, |d| d.as_array().unwrap().len() == 2);
    let stale = format!(
        "this file is newer than {}, which was built from it: rebuild for accurate debugging",
        ws.root.join("build/tokens").display()
    );
    assert_eq!(
        diags,
        json!([
            {"range": range(0, 0, 0, 0), "severity": 2, "source": "tandem", "message": stale},
            {"range": range(18, 11, 18, 15), "severity": 1, "source": "cc",
             "message": "‘valu’ undeclared (first use in this function); did you mean ‘value’?",
             "relatedInformation": [{"location": {"uri": c, "range": range(18, 11, 18, 11)},
                                     "message": "each undeclared identifier is reported only once for each function it appears in"}]},
        ])
    );
    // Fixed: the compiler's part is cleared; rebuilt: the warning goes too.
    std::fs::write(&path, &good).unwrap();
    peer.lsp_notify("textDocument/didSave", json!({"textDocument": {"uri": c}}));
    let (diags, _) = wait_diagnostics(&mut peer, &c, |d| d.as_array().unwrap().len() == 1);
    assert_eq!(messages(&diags), std::slice::from_ref(&stale));
    std::thread::sleep(std::time::Duration::from_millis(20));
    let status = Command::new("gcc")
        .args(["-g", "-O0", "-o", "build/tokens", "lsp_tokens.c"])
        .current_dir(&ws.root)
        .status()
        .unwrap();
    assert!(status.success());
    peer.lsp_notify("textDocument/didSave", json!({"textDocument": {"uri": c}}));
    let (diags, _) = wait_diagnostics(&mut peer, &c, |d| d.as_array().unwrap().is_empty());
    assert_eq!(diags, json!([]));
}

#[test]
fn a_newer_save_supersedes_a_running_check() {
    let (ws, c, _) = tokens_workspace("supersede");
    // compile_commands.json names a compiler that dawdles while `slow` exists, recording the
    // pid of its sleep so the test can see it killed.
    let script = ws.root.join("slowcc");
    std::fs::write(
        &script,
        "#!/bin/sh\nif [ -e slow ]; then sleep 30 & echo $! > sleep.pid; wait; fi\nexec cc \"$@\"\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        ws.root.join("compile_commands.json"),
        json!([{"directory": ws.root.display().to_string(), "file": "lsp_tokens.c",
                "arguments": [script.display().to_string(), "-DLIMIT_FROM_DB", "-c", "lsp_tokens.c", "-o", "lsp_tokens.o"]}])
        .to_string(),
    )
    .unwrap();
    let (mut peer, _) = ws.serve(&["utf-16"], Value::Null);
    let path = ws.root.join("lsp_tokens.c");
    let good = std::fs::read_to_string(&path).unwrap();
    std::fs::write(ws.root.join("slow"), "").unwrap();
    std::fs::write(
        &path,
        good.replace("int total;", "int total = first_error;"),
    )
    .unwrap();
    peer.lsp_notify("textDocument/didSave", json!({"textDocument": {"uri": c}}));
    let sleep_pid = first_check_pid(&ws.root.join("sleep.pid"));
    std::fs::remove_file(ws.root.join("slow")).unwrap();
    // The flags come from compile_commands.json: the macro is defined.
    let second = good.replace(
        "int total;",
        "#ifdef LIMIT_FROM_DB\nint total = second_error;\n#endif",
    );
    std::fs::write(&path, second).unwrap();
    peer.lsp_notify("textDocument/didSave", json!({"textDocument": {"uri": c}}));
    let (diags, seen) = wait_diagnostics(&mut peer, &c, |d| {
        messages(d).iter().any(|m| m.contains("second_error"))
    });
    assert!(
        seen.iter().all(|m| !m.contains("first_error")),
        "the superseded check published: {seen:?}"
    );
    assert_eq!(
        diags[diags.as_array().unwrap().len() - 1]["range"],
        range(12, 12, 12, 24)
    );
    // The superseded check's process group was killed: its sleep is gone.
    let proc_dir = format!("/proc/{sleep_pid}");
    let started = std::time::Instant::now();
    while Path::new(&proc_dir).exists()
        && !std::fs::read_to_string(format!("{proc_dir}/stat"))
            .unwrap_or_default()
            .contains(") Z")
    {
        assert!(
            started.elapsed() < support::PATIENCE,
            "the superseded check still runs"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn cargo_check_diagnostics_for_rust_packages() {
    let ws = Workspace::empty("cargo");
    std::fs::create_dir_all(ws.root.join("src")).unwrap();
    std::fs::write(
        ws.root.join("Cargo.toml"),
        "[package]\nname = \"checked\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    let main = ws.root.join("src/main.rs");
    std::fs::write(
        &main,
        "fn main() {\n    let é = 1;\n    let s: String = é;\n}\n",
    )
    .unwrap();
    let uri = format!("{}/src/main.rs", ws.root_uri());
    let (mut peer, _) = ws.serve(&["utf-16"], Value::Null);
    peer.lsp_notify(
        "textDocument/didSave",
        json!({"textDocument": {"uri": uri}}),
    );
    let (diags, _) = wait_diagnostics(&mut peer, &uri, |d| !d.as_array().unwrap().is_empty());
    let error = diags
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["severity"] == 1)
        .unwrap_or_else(|| panic!("no error in {diags}"));
    assert_eq!(error["source"], "rustc");
    assert_eq!(error["code"], "E0308");
    assert_eq!(error["message"], "mismatched types");
    // `é` is one UTF-16 unit (two bytes): columns are converted.
    assert_eq!(error["range"], range(2, 20, 2, 21));
    std::fs::write(
        &main,
        "fn main() {\n    let é = 1;\n    let _s: i32 = é;\n}\n",
    )
    .unwrap();
    peer.lsp_notify(
        "textDocument/didSave",
        json!({"textDocument": {"uri": uri}}),
    );
    let (diags, _) = wait_diagnostics(&mut peer, &uri, |d| d.as_array().unwrap().is_empty());
    assert_eq!(diags, json!([]));
}

/// Full-text `didChange` of `uri` to version `version`.
fn change_to(peer: &mut Peer, uri: &str, version: i64, text: &str) {
    peer.lsp_notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": version},
               "contentChanges": [{"text": text}]}),
    );
}

#[test]
fn unsaved_text_is_checked_by_the_compiler_and_newer_changes_supersede() {
    let (ws, c, _) = tokens_workspace("unsaved");
    // The compile command runs in build/ (so the quoted include resolves only through
    // -iquote), defines a macro, and dawdles while `slow` exists, recording its sleep's pid.
    let script = ws.root.join("slowcc");
    std::fs::write(
        &script,
        "#!/bin/sh\nif [ -e ../slow ]; then sleep 30 & echo $! > ../sleep.pid; wait; fi\nexec cc \"$@\"\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let build = ws.root.join("build");
    std::fs::write(
        ws.root.join("compile_commands.json"),
        json!([{"directory": build.display().to_string(), "file": "../lsp_tokens.c",
                "arguments": [script.display().to_string(), "-DLIMIT_FROM_DB", "-c", "../lsp_tokens.c", "-o", "lsp_tokens.o"]}])
        .to_string(),
    )
    .unwrap();
    let (mut peer, _) = ws.serve(&["utf-16"], Value::Null);
    let path = ws.root.join("lsp_tokens.c");
    let good = std::fs::read_to_string(&path).unwrap();
    peer.lsp_notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": c, "languageId": "c", "version": 1, "text": good}}),
    );
    // An unsaved error: published with its range in the buffer, the file on disk untouched.
    let bad = good.replace("return value + (note", "return valu + (note");
    change_to(&mut peer, &c, 2, &bad);
    let (diags, _) = wait_diagnostics(&mut peer, &c, |d| !d.as_array().unwrap().is_empty());
    assert_eq!(diags.as_array().unwrap().len(), 1, "{diags}");
    assert_eq!(diags[0]["range"], range(18, 11, 18, 15));
    assert_eq!(diags[0]["severity"], 1);
    assert!(
        diags[0]["message"]
            .as_str()
            .unwrap()
            .contains("‘valu’ undeclared"),
        "{diags}"
    );
    assert_eq!(
        diags[0]["relatedInformation"][0]["location"]["uri"], c,
        "<stdin> is the document"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), good);
    // Fixed text clears it.
    change_to(&mut peer, &c, 3, &good);
    wait_diagnostics(&mut peer, &c, |d| d.as_array().unwrap().is_empty());

    // A slow check is superseded by a newer change: it is killed and never published.
    std::fs::write(ws.root.join("slow"), "").unwrap();
    let first = good.replace("int total;", "int total = first_error;");
    change_to(&mut peer, &c, 4, &first);
    let sleep_pid = first_check_pid(&ws.root.join("sleep.pid"));
    std::fs::remove_file(ws.root.join("slow")).unwrap();
    // Rapid changes: only the last is published. The flags come from compile_commands.json.
    for (i, name) in ["second_error", "third_error", "fourth_error"]
        .iter()
        .enumerate()
    {
        let text = good.replace(
            "int total;",
            &format!("#ifdef LIMIT_FROM_DB\nint total = {name};\n#endif"),
        );
        change_to(&mut peer, &c, 5 + i as i64, &text);
    }
    let (diags, seen) = wait_diagnostics(&mut peer, &c, |d| {
        messages(d).iter().any(|m| m.contains("fourth_error"))
    });
    assert!(
        seen.iter()
            .all(|m| ["first_error", "second_error", "third_error"]
                .iter()
                .all(|old| !m.contains(old))),
        "a superseded check published: {seen:?}"
    );
    assert_eq!(diags[0]["range"], range(12, 12, 12, 24));
    let proc_dir = format!("/proc/{sleep_pid}");
    let started = std::time::Instant::now();
    while Path::new(&proc_dir).exists()
        && !std::fs::read_to_string(format!("{proc_dir}/stat"))
            .unwrap_or_default()
            .contains(") Z")
    {
        assert!(
            started.elapsed() < support::PATIENCE,
            "the superseded check still runs"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }

    // Rust files keep save-time checks, and the server says so.
    let rs = format!("{}/lib.rs", ws.root_uri());
    peer.lsp_notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": rs, "languageId": "rust", "version": 1, "text": "fn f() {}\n"}}),
    );
    change_to(&mut peer, &rs, 2, "fn f() { nope }\n");
    loop {
        let msg = peer.recv();
        assert!(
            !(msg["method"] == "textDocument/publishDiagnostics" && msg["params"]["uri"] == rs),
            "a Rust buffer was checked: {msg}"
        );
        if msg["method"] == "window/logMessage" {
            assert!(
                msg["params"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("checked when saved"),
                "{msg}"
            );
            break;
        }
    }
}

/// The pid the slow compiler wrapper writes once the first check has started.
fn first_check_pid(pid_file: &std::path::Path) -> u32 {
    let started = std::time::Instant::now();
    loop {
        let text = std::fs::read_to_string(pid_file).unwrap_or_default();
        if !text.trim().is_empty() {
            return text.trim().parse().unwrap();
        }
        assert!(
            started.elapsed() < support::PATIENCE,
            "the first check never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
