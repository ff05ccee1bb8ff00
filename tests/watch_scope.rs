//! A data breakpoint on a local ends with its frame (samples/c/watch_scope.c), as gdb 13
//! deletes such a watchpoint and stops with "Watchpoint N deleted because the program
//! has left the block in which its expression is valid.". Each case runs the same moves
//! in gdb and over DAP and compares every stop (function, line, pc as `function+offset`,
//! and whether it was a watched write or the watch's end):
//!
//! - a later call reusing the local's stack slot never stops the program (the spurious
//!   stop this guards against), the watch ends at the return into the caller;
//! - a recursion: a deeper invocation returning to the same address does not end the
//!   watch of the outer one;
//! - a `longjmp` out of the frame: the next write to the slot ends the watch instead of
//!   being reported; with a stop in between, that stop ends it;
//! - `stepOut` (gdb's `finish`) and `next` out of the frame; `next` over a callee that
//!   writes the local stops at the write;
//! - under `record full`: `reverseContinue` stops at the writes in the frame, then where
//!   the frame began (the call in the caller), never at the earlier call's write to the
//!   same slot; `stepBack` out of the frame stops there too, and a `stepBack` over a
//!   watched write stops at it (gdb's `reverse-next`);
//! - `restartFrame` of the caller ends the watch, of the frame itself keeps it; the
//!   agent face's `debug_last_write` on a local finds only its frame's writes.
//!
//! gdb's reverse watchpoints are software ones under `record full` (as in
//! tests/reverse_watch.rs). The sample multiplies rather than shifts: gdb 13's `record
//! full` does not record the memory a `shll` on memory writes (checked: going back over
//! `acc = acc * 2` compiled to `shll -0x4(%rbp)` it reported the value before it as the
//! value before the previous write), which would make gdb a wrong oracle there.
//!
//! gdb runs through `support::gdb_record` (tests/support/gdb_record.rs): on a CPU with
//! AMX gdb 13 cannot write an SSE register back (the kernel refuses its fixed-size
//! `NT_X86_XSTATE` write with EFAULT: "Couldn't write extended state status: Bad
//! address."), so it is run with that register set hidden and writes the FXSAVE area
//! instead, on every CPU.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use support::dap::{build, line_of, sample_path, DapClient};
use support::gdb_record::gdb_record_batch;
use support::mcp::Mcp;
use support::PATIENCE;

const SAMPLE: &str = "c/watch_scope.c";

fn sample() -> PathBuf {
    build(SAMPLE, "gcc", &["-g", "-O0"])
}

fn line(marker: &str) -> i64 {
    line_of(&sample_path(SAMPLE), marker)
}

/// What a stop was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A watched write.
    Write,
    /// A watch ended with its frame (and was deleted) here.
    Ended,
    /// A breakpoint, a step.
    Other,
}

/// Where a move ended: the stop's function, line, pc as `function+offset`, and kind;
/// or the program's exit.
#[derive(Debug, Clone, PartialEq, Eq)]
enum At {
    Stop {
        function: String,
        line: i64,
        pc: String,
        /// The innermost frame in the sample's source, `function:line` (frame 0 but
        /// in a library).
        source: String,
        kind: Kind,
    },
    Exited,
}

/// The end of recording setup: gdb records from `main`, with glibc's AVX routines off
/// (it cannot record them).
fn gdb_record_prologue() -> Vec<String> {
    vec![
        "set environment GLIBC_TUNABLES glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX2_Usable,-AVX2,-EVEX,-BMI2".into(),
        "break main".into(),
        "run".into(),
        "record full".into(),
        "delete".into(),
    ]
}

/// gdb on the sample: `setup`, then each of `moves`, and where each move ended. Each
/// move's own output (the watchpoint's words) decides its kind. Also the whole text.
fn gdb_moves(program: &Path, setup: &[String], moves: &[&str]) -> (Vec<At>, String) {
    let mut cmds: Vec<String> = vec![
        "set pagination off".into(),
        concat!(
            "python exec(\"def tandem_where():\\n",
            " if gdb.selected_inferior().pid == 0:\\n  print('WHERE|exited')\\n  return\\n",
            " f = gdb.selected_frame()\\n",
            " pc = str(gdb.parse_and_eval('$pc'))\\n",
            " sym = pc[pc.find('<') + 1:pc.rfind('>')] if '<' in pc else '?'\\n",
            " src = f\\n",
            " while src is not None and 'watch_scope' not in str(src.find_sal().symtab):\\n",
            "  src = src.older()\\n",
            " at = '%s:%d' % (src.name(), src.find_sal().line) if src is not None else '?'\\n",
            " print('WHERE|%s|%d|%s|%s' % (f.name(), f.find_sal().line, sym, at))\\n\")"
        )
        .into(),
    ];
    cmds.extend(setup.iter().cloned());
    for m in moves {
        cmds.push("echo <<MOVE>>\\n".into());
        cmds.push((*m).to_string());
        cmds.push("python tandem_where()".into());
    }
    let (stdout, stderr) = gdb_record_batch(program, &cmds);
    let chunks: Vec<&str> = stdout.split("<<MOVE>>\n").skip(1).collect();
    assert_eq!(chunks.len(), moves.len(), "gdb:\n{stdout}\n{stderr}");
    let ats = chunks
        .iter()
        .map(|chunk| {
            let (said, where_) = chunk
                .split_once("WHERE|")
                .unwrap_or_else(|| panic!("gdb did not say where:\n{stdout}\n{stderr}"));
            let fields: Vec<&str> = where_.lines().next().unwrap().split('|').collect();
            if fields[0] == "exited" {
                return At::Exited;
            }
            // The words of a stop at the watch's end (a deletion at a resume has its
            // line break elsewhere: "left the block\nin which").
            let kind = if said.contains("has left the block in\nwhich") {
                Kind::Ended
            } else if said.contains("atchpoint ") && said.contains("New value") {
                Kind::Write
            } else {
                Kind::Other
            };
            At::Stop {
                function: fields[0].to_string(),
                line: fields[1].parse().unwrap(),
                pc: fields[2].replace("+0", ""),
                source: fields[3].to_string(),
                kind,
            }
        })
        .collect();
    (ats, stdout)
}

/// A DAP session of the sample, stopped at its first breakpoint.
struct Tandem {
    c: DapClient,
    tid: i64,
    /// The `breakpoint` events with reason `removed` seen, by DAP id.
    removed: Vec<i64>,
    /// The data id of the last watch set.
    data_id: String,
}

impl Tandem {
    /// Launches the sample (recording with `record`), with line breakpoints at the
    /// lines of `markers` and function breakpoints `(name, condition)`, to the first stop.
    fn launch(record: bool, markers: &[&str], functions: &[(&str, &str)]) -> Tandem {
        Tandem::launch_of(&sample(), SAMPLE, record, markers, functions)
    }

    /// [`Tandem::launch`] of another sample, `program` built from `rel`.
    fn launch_of(
        program: &Path,
        rel: &str,
        record: bool,
        markers: &[&str],
        functions: &[(&str, &str)],
    ) -> Tandem {
        let src = sample_path(rel);
        let mut c = DapClient::new();
        c.initialize();
        c.ok(
            "launch",
            json!({"program": program, "stdio": "pipes", "reverseDebugging": record}),
        );
        if record {
            c.event("capabilities");
        }
        if !markers.is_empty() {
            let bps: Vec<Value> = markers
                .iter()
                .map(|m| json!({"line": line_of(&src, m)}))
                .collect();
            c.ok(
                "setBreakpoints",
                json!({"source": {"path": src}, "breakpoints": bps}),
            );
        }
        if !functions.is_empty() {
            let bps: Vec<Value> = functions
                .iter()
                .map(|(name, cond)| {
                    if cond.is_empty() {
                        json!({"name": name})
                    } else {
                        json!({"name": name, "condition": cond})
                    }
                })
                .collect();
            c.ok("setFunctionBreakpoints", json!({"breakpoints": bps}));
        }
        c.ok("configurationDone", json!({}));
        let st = c.event("stopped");
        let tid = st["body"]["threadId"].as_i64().unwrap();
        Tandem {
            c,
            tid,
            removed: Vec::new(),
            data_id: String::new(),
        }
    }

    fn top(&mut self) -> Value {
        self.c.frames(self.tid)[0].clone()
    }

    fn eval(&mut self, e: &str) -> String {
        let fid = self.top()["id"].as_i64().unwrap();
        self.c.evaluate(fid, e)["result"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Sets a write data breakpoint on `name` in the top frame; its DAP id.
    fn watch(&mut self, name: &str) -> i64 {
        let fid = self.top()["id"].as_i64().unwrap();
        let info = self
            .c
            .ok("dataBreakpointInfo", json!({"name": name, "frameId": fid}));
        let data_id = info["dataId"].as_str().unwrap().to_string();
        self.data_id = data_id.clone();
        let body = self.c.ok(
            "setDataBreakpoints",
            json!({"breakpoints": [{"dataId": data_id, "accessType": "write"}]}),
        );
        assert_eq!(body["breakpoints"][0]["verified"], true, "{body}");
        body["breakpoints"][0]["id"].as_i64().unwrap()
    }

    /// Sends `command` and waits for the stop (or the exit) it leads to, noting the
    /// breakpoints removed before it; the stop's `stopped` body.
    fn move_(&mut self, command: &str) -> (At, Value) {
        self.c.ok(command, json!({"threadId": self.tid}));
        self.wait_stop()
    }

    fn wait_stop(&mut self) -> (At, Value) {
        let mut ended = false;
        loop {
            let e = self
                .c
                .first_event_of(&["breakpoint", "stopped", "exited"], PATIENCE)
                .unwrap_or_else(|| panic!("no stop; stderr:\n{}", self.c.peer.stderr()));
            match e["event"].as_str().unwrap() {
                "breakpoint" if e["body"]["reason"] == "removed" => {
                    ended = true;
                    self.removed
                        .push(e["body"]["breakpoint"]["id"].as_i64().unwrap());
                }
                "breakpoint" => {}
                "exited" => return (At::Exited, e),
                _ => {
                    self.tid = e["body"]["threadId"].as_i64().unwrap();
                    let kind = if ended {
                        Kind::Ended
                    } else if e["body"]["reason"] == "data breakpoint" {
                        Kind::Write
                    } else {
                        Kind::Other
                    };
                    let at = self.at(kind);
                    return (at, e);
                }
            }
        }
    }

    /// Where the thread is shown, as gdb says it.
    fn at(&mut self, kind: Kind) -> At {
        let frames = self.c.frames(self.tid);
        let f = frames[0].clone();
        let source = frames
            .iter()
            .find(|f| {
                f["source"]["path"]
                    .as_str()
                    .is_some_and(|p| p.contains("watch_scope"))
            })
            .map_or("?".to_string(), |f| {
                format!("{}:{}", f["name"].as_str().unwrap(), f["line"])
            });
        let pc = f["instructionPointerReference"]
            .as_str()
            .unwrap()
            .to_string();
        let dis = self.c.ok(
            "disassemble",
            json!({"memoryReference": pc, "instructionCount": 1, "resolveSymbols": true}),
        );
        At::Stop {
            function: f["name"].as_str().unwrap().to_string(),
            line: f["line"].as_i64().unwrap(),
            pc: dis["instructions"][0]["symbol"]
                .as_str()
                .unwrap_or("?")
                .to_string(),
            source,
            kind,
        }
    }

    /// Each of `moves` in turn, where each ended.
    fn moves(&mut self, moves: &[&str]) -> Vec<At> {
        moves.iter().map(|m| self.move_(m).0).collect()
    }

    /// Whether a `breakpoint` event removing `id` arrives within a short while (one
    /// sent right after a stop, for a frame found gone there).
    fn removed_soon(&mut self, id: i64) -> bool {
        if self.removed.contains(&id) {
            return true;
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while let Some(e) = self
            .c
            .event_within("breakpoint", deadline - std::time::Instant::now())
        {
            if e["body"]["reason"] == "removed" {
                self.removed
                    .push(e["body"]["breakpoint"]["id"].as_i64().unwrap());
            }
            if self.removed.contains(&id) {
                return true;
            }
        }
        false
    }

    /// The console text the adapter sent so far.
    fn console(&self) -> String {
        self.c
            .output
            .iter()
            .filter(|(cat, _)| cat == "console")
            .map(|(_, t)| t.as_str())
            .collect()
    }
}

/// gdb's words at a watch's end, with the DAP id, on one line.
fn ended_words(id: i64) -> String {
    format!(
        "Watchpoint {id} deleted because the program has left the block in which its expression is valid."
    )
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

#[test]
fn after_an_exception_left_the_frame_the_next_write_to_the_slot_ends_the_watch() {
    let rel = "cpp/watch_scope_throw.cpp";
    let program = build(rel, "g++", &["-g", "-O0"]);
    let (gdb, text) = gdb_moves(
        &program,
        &s(&["break thrower", "run", "watch depth"]),
        &["continue"; 4],
    );
    // Two writes, then the end where the catch's call into the C++ runtime reuses the
    // thrower's slot, then the exit. Frame 0 is then in a library: a return address
    // pushed by libstdc++'s `__tls_get_addr@plt`, or the dynamic linker's lazy binding
    // of it saving registers (`_dl_runtime_resolve_xsavec`, under cargo's
    // LD_LIBRARY_PATH); the stops compare by kind and by the innermost frame in the
    // sample, main's catch.
    let catch = format!("main:{}", line_of(&sample_path(rel), "catch line"));
    let summary = |ats: &[At]| -> Vec<(Kind, String)> {
        ats.iter()
            .map(|a| match a {
                At::Stop { kind, source, .. } => (*kind, source.clone()),
                At::Exited => (Kind::Other, "exited".to_string()),
            })
            .collect()
    };
    let gdb = summary(&gdb);
    assert_eq!(gdb[2], (Kind::Ended, catch), "{text}");
    let mut t = Tandem::launch_of(&program, rel, false, &[], &[("thrower", "")]);
    let id = t.watch("depth");
    let ours = summary(&t.moves(&["continue"; 4]));
    assert_eq!(ours, gdb, "stops vs gdb's");
    assert_eq!(t.removed, [id]);
    t.c.finish();
}

#[test]
fn a_reused_stack_slot_never_stops_the_program_after_the_watched_frame_returned() {
    let program = sample();
    let (gdb, text) = gdb_moves(
        &program,
        &s(&["break fill", "run", "watch acc"]),
        &["continue"; 5],
    );
    // The oracle is what this test is about: three writes, the end at the return into
    // main (mid-line, right after the call), then nothing until the exit — reuse()'s
    // write to the same slot is not a stop.
    let kinds: Vec<Kind> = gdb
        .iter()
        .filter_map(|a| match a {
            At::Stop { kind, .. } => Some(*kind),
            At::Exited => None,
        })
        .collect();
    assert_eq!(
        kinds,
        [Kind::Write, Kind::Write, Kind::Write, Kind::Ended],
        "{text}"
    );
    assert_eq!(gdb.last(), Some(&At::Exited), "{text}");

    let mut t = Tandem::launch(false, &[], &[("fill", "")]);
    let id = t.watch("acc");
    let ours = t.moves(&["continue"; 5]);
    assert_eq!(ours, gdb, "stops vs gdb's");
    assert_eq!(t.removed, [id], "the data breakpoint was removed");
    assert!(
        t.console().contains(&ended_words(id)),
        "gdb's words on the console: {}",
        t.console()
    );
    t.c.finish();
}

#[test]
fn a_deeper_invocation_returning_to_the_same_address_keeps_the_outer_watch() {
    let program = sample();
    let (gdb, text) = gdb_moves(
        &program,
        &s(&["break rec if n == 1", "run", "watch local"]),
        &["continue"; 5],
    );
    assert!(
        matches!(&gdb[3], At::Stop { kind: Kind::Ended, function, .. } if function == "rec"),
        "the end is in rec(2), where rec(1) returns: {text}"
    );
    let mut t = Tandem::launch(false, &[], &[("rec", "n == 1")]);
    let id = t.watch("local");
    let ours = t.moves(&["continue"; 5]);
    assert_eq!(ours, gdb, "stops vs gdb's");
    assert_eq!(t.removed, [id]);
    t.c.finish();
}

#[test]
fn after_a_longjmp_out_of_the_frame_the_next_write_to_the_slot_ends_the_watch() {
    let program = sample();
    let (gdb, text) = gdb_moves(
        &program,
        &s(&["break jumper", "run", "watch hop"]),
        &["continue"; 4],
    );
    assert!(
        matches!(&gdb[2], At::Stop { kind: Kind::Ended, function, .. } if function == "reuse"),
        "gdb ends the watch at reuse()'s write to the slot: {text}"
    );
    let mut t = Tandem::launch(false, &[], &[("jumper", "")]);
    let id = t.watch("hop");
    let ours = t.moves(&["continue"; 4]);
    assert_eq!(ours, gdb, "stops vs gdb's");
    assert_eq!(t.removed, [id]);
    t.c.finish();
}

#[test]
fn after_a_longjmp_out_of_the_frame_the_next_stop_ends_the_watch() {
    let program = sample();
    let after = line("reuse after jump line");
    let (gdb, text) = gdb_moves(
        &program,
        &s(&[
            "break jumper",
            "run",
            "watch hop",
            &format!("break watch_scope.c:{after}"),
        ]),
        &["continue"; 4],
    );
    // gdb deletes it when it resumes from the breakpoint (its other words for it), and
    // reuse()'s write does not stop.
    assert!(
        matches!(&gdb[2], At::Stop { kind: Kind::Other, line, .. } if *line == after),
        "{text}"
    );
    assert!(
        text.contains("has left the block\nin which"),
        "deleted at the resume: {text}"
    );
    let mut t = Tandem::launch(false, &[], &[("jumper", "")]);
    let id = t.watch("hop");
    let src = sample_path(SAMPLE);
    t.c.ok(
        "setBreakpoints",
        json!({"source": {"path": src}, "breakpoints": [{"line": after}]}),
    );
    let mut ours = t.moves(&["continue"; 3]);
    // At that stop the frame is found gone: the watch ends there (its event follows
    // the stop), before anything runs.
    assert!(t.removed_soon(id), "removed at the breakpoint stop");
    ours.extend(t.moves(&["continue"]));
    assert_eq!(ours, gdb, "stops vs gdb's");
    t.c.finish();
}

#[test]
fn step_out_and_next_out_of_the_frame_end_the_watch_where_gdb_does() {
    let program = sample();
    let ret = format!("break watch_scope.c:{}", line("fill return line"));
    // finish: the end at the return, with the returned value.
    let (gdb, text) = gdb_moves(
        &program,
        &s(&[&ret, "run", "watch acc"]),
        &["finish", "continue"],
    );
    assert!(text.contains("Value returned is"), "{text}");
    let mut t = Tandem::launch(false, &["fill return line"], &[]);
    let id = t.watch("acc");
    let (at, st) = t.move_("stepOut");
    assert_eq!(
        st["body"]["reason"], "step",
        "the step out ended as a step: {st}"
    );
    // A client that sets it again anyway: its frame is gone, it is not set.
    let body = t.c.ok(
        "setDataBreakpoints",
        json!({"breakpoints": [{"dataId": t.data_id, "accessType": "write"}]}),
    );
    assert_eq!(body["breakpoints"][0]["verified"], false, "{body}");
    let message = body["breakpoints"][0]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        message.contains("the frame of 'acc' has returned"),
        "{body}"
    );
    assert_ne!(body["breakpoints"][0]["id"], id, "a new breakpoint: {body}");
    let mut ours = vec![at];
    ours.extend(t.moves(&["continue"]));
    assert_eq!(ours, gdb, "stepOut vs gdb's finish");
    assert_eq!(t.removed, [id]);
    t.c.finish();

    // next from the return line: to the closing brace, then the return stops mid-line
    // in the caller (the watch's end), and the next `next` finishes that line.
    let (gdb, _) = gdb_moves(
        &program,
        &s(&[&ret, "run", "watch acc"]),
        &["next", "next", "next", "continue"],
    );
    let mut t = Tandem::launch(false, &["fill return line"], &[]);
    t.watch("acc");
    let ours = t.moves(&["next", "next", "next", "continue"]);
    assert_eq!(ours, gdb, "next vs gdb's");
    t.c.finish();
}

#[test]
fn next_over_a_callee_writing_the_local_stops_at_the_write() {
    let program = sample();
    let at = format!("break watch_scope.c:{}", line("stepped bump line"));
    let moves = ["next", "next", "next", "next", "next", "continue"];
    let (gdb, text) = gdb_moves(&program, &s(&[&at, "run", "watch mine"]), &moves);
    assert!(
        matches!(&gdb[0], At::Stop { kind: Kind::Write, function, .. } if function == "bump"),
        "{text}"
    );
    let mut t = Tandem::launch(false, &["stepped bump line"], &[]);
    t.watch("mine");
    let ours = t.moves(&moves);
    assert_eq!(ours, gdb, "next vs gdb's");
    t.c.finish();
}

#[test]
fn reverse_continue_stops_at_the_frames_writes_then_where_it_began() {
    let program = sample();
    let ret = line("fill return line");
    let mut setup = gdb_record_prologue();
    setup.extend(s(&[
        &format!("break watch_scope.c:{ret}"),
        "continue",
        // Reverse watchpoints under record full are software ones.
        "set can-use-hw-watchpoints 0",
        "watch acc",
    ]));
    let moves = [
        "reverse-continue",
        "reverse-continue",
        "reverse-continue",
        "reverse-continue",
        "continue",
    ];
    let (gdb, text) = gdb_moves(&program, &setup, &moves);
    // Three writes in fill, then the call in main where its frame began — prime()'s
    // earlier write to the same slot is not a stop — and forward again, nothing until
    // the breakpoint (the end of gdb's history).
    assert!(
        matches!(&gdb[3], At::Stop { kind: Kind::Ended, function, line, .. }
            if function == "main" && *line == line_of(&sample_path(SAMPLE), "fill call line")),
        "{text}"
    );
    let mut t = Tandem::launch(true, &["fill return line"], &[]);
    let id = t.watch("acc");
    let tandem_moves = [
        "reverseContinue",
        "reverseContinue",
        "reverseContinue",
        "reverseContinue",
        "continue",
    ];
    let ours = t.moves(&tandem_moves);
    assert_eq!(ours, gdb, "reverseContinue vs gdb's reverse-continue");
    assert_eq!(t.removed, [id]);
    assert_eq!(t.move_("continue").0, At::Exited);
    t.c.finish();
}

#[test]
fn step_back_out_of_the_frame_ends_the_watch_at_the_call() {
    let program = sample();
    let mut setup = gdb_record_prologue();
    setup.extend(s(&[
        "break fill",
        "continue",
        "set can-use-hw-watchpoints 0",
        "watch acc",
    ]));
    let (gdb, text) = gdb_moves(&program, &setup, &["reverse-next", "reverse-next"]);
    assert!(
        matches!(&gdb[0], At::Stop { kind: Kind::Ended, function, .. } if function == "main"),
        "{text}"
    );
    let mut t = Tandem::launch(true, &[], &[("fill", "")]);
    let id = t.watch("acc");
    let ours = t.moves(&["stepBack", "stepBack"]);
    assert_eq!(ours, gdb, "stepBack vs gdb's reverse-next");
    assert_eq!(t.removed, [id]);
    t.c.finish();
}

#[test]
fn step_back_stops_at_a_watched_write_on_the_way() {
    let program = sample();
    // Over the write of the local's first value, in its own frame.
    let mut setup = gdb_record_prologue();
    setup.extend(s(&[
        "break fill",
        "continue",
        "next",
        "set can-use-hw-watchpoints 0",
        "watch acc",
    ]));
    let (gdb, text) = gdb_moves(&program, &setup, &["reverse-next", "reverse-next"]);
    assert!(
        matches!(&gdb[0], At::Stop { kind: Kind::Write, function, .. } if function == "fill"),
        "{text}"
    );
    let mut t = Tandem::launch(true, &[], &[("fill", "")]);
    t.move_("next");
    t.watch("acc");
    let ours = t.moves(&["stepBack", "stepBack"]);
    assert_eq!(ours, gdb, "stepBack vs gdb's reverse-next");
    t.c.finish();

    // Over a call that writes it through a pointer: the write in the callee.
    let mut setup = gdb_record_prologue();
    setup.extend(s(&[
        &format!("break watch_scope.c:{}", line("stepped sink line")),
        "continue",
        "set can-use-hw-watchpoints 0",
        "watch mine",
    ]));
    let (gdb, text) = gdb_moves(&program, &setup, &["reverse-next"]);
    assert!(
        matches!(&gdb[0], At::Stop { kind: Kind::Write, function, .. } if function == "bump"),
        "{text}"
    );
    let mut t = Tandem::launch(true, &["stepped sink line"], &[]);
    t.watch("mine");
    let (at, st) = t.move_("stepBack");
    assert_eq!(vec![at], gdb, "stepBack vs gdb's reverse-next");
    let description = st["body"]["description"].as_str().unwrap_or_default();
    assert!(description.contains("mine: 4 → 9"), "{st}");
    assert_eq!(t.eval("*p"), "4", "before the write");
    t.c.finish();
}

/// The instruction at the top frame's pc (its text) and the address of the next one.
fn instruction_at(t: &mut Tandem) -> (String, u64) {
    let pc = t.top()["instructionPointerReference"]
        .as_str()
        .unwrap()
        .to_string();
    let dis = t.c.ok(
        "disassemble",
        json!({"memoryReference": pc, "instructionCount": 2, "resolveSymbols": true}),
    );
    let next = dis["instructions"][1]["address"].as_str().unwrap();
    (
        dis["instructions"][0]["instruction"]
            .as_str()
            .unwrap()
            .to_string(),
        u64::from_str_radix(next.trim_start_matches("0x"), 16).unwrap(),
    )
}

#[test]
fn a_watch_on_a_local_of_main_ends_at_the_return_into_libc_while_recording_too() {
    let program = sample();
    let done = line("done line");
    // gdb under `record full` from main: back to the write of `s`, forward over it to
    // the end of its history (the done line), on to main's return into libc, where the
    // watch ends.
    let mut setup = gdb_record_prologue();
    setup.extend(s(&[
        &format!("break watch_scope.c:{done}"),
        "continue",
        "set can-use-hw-watchpoints 0",
        "watch s",
    ]));
    let (gdb, text) = gdb_moves(
        &program,
        &setup,
        &["reverse-continue", "continue", "continue", "continue"],
    );
    assert!(
        matches!(&gdb[3], At::Stop { kind: Kind::Ended, function, .. }
            if function == "__libc_start_call_main"),
        "{text}"
    );
    // tandem, recording: the int3 at that return is in libc, in the breakpoint table
    // when going back replays from the recording's first snapshot (made before libc
    // was mapped).
    let mut t = Tandem::launch(true, &["done line"], &[]);
    let id = t.watch("s");
    let ours = t.moves(&["reverseContinue", "continue", "continue", "continue"]);
    assert_eq!(ours, gdb, "vs gdb's record full");
    assert_eq!(t.removed, [id]);
    assert_eq!(t.move_("continue").0, At::Exited);
    t.c.finish();

    // A watch on a local of main written at its start: going back, its write (as gdb
    // finds it), then where main's frame began — the call in libc (gdb's history starts
    // in main: it has no answer there), the instruction before the return point where
    // gdb ended the watch above.
    let At::Stop { pc: returned, .. } = &gdb[3] else {
        unreachable!()
    };
    let mut setup = gdb_record_prologue();
    setup.extend(s(&[
        &format!("break watch_scope.c:{done}"),
        "continue",
        "set can-use-hw-watchpoints 0",
        "watch p",
    ]));
    let (gdb, text) = gdb_moves(&program, &setup, &["reverse-continue"]);
    assert!(
        matches!(&gdb[0], At::Stop { kind: Kind::Write, function, .. } if function == "main"),
        "{text}"
    );
    let mut t = Tandem::launch(true, &["done line"], &[]);
    let id = t.watch("p");
    assert_eq!(t.moves(&["reverseContinue"]), gdb, "vs gdb's record full");
    let (at, st) = t.move_("reverseContinue");
    let At::Stop {
        kind: Kind::Ended,
        function,
        pc,
        ..
    } = &at
    else {
        panic!("not the watch's end: {at:?} {st}");
    };
    assert_eq!(function, "__libc_start_call_main", "{st}");
    let (instruction, next) = instruction_at(&mut t);
    assert!(instruction.starts_with("call"), "{instruction} at {pc}");
    let offset = |s: &str| -> u64 { s.rsplit('+').next().unwrap().parse().unwrap() };
    let at_pc = {
        let f = t.top();
        let text = f["instructionPointerReference"].as_str().unwrap();
        u64::from_str_radix(text.trim_start_matches("0x"), 16).unwrap()
    };
    assert_eq!(
        offset(pc) + (next - at_pc),
        offset(returned),
        "the call {pc} returns to gdb's {returned}"
    );
    assert_eq!(t.removed, [id]);
    t.c.finish();
}

#[test]
fn restart_frame_of_the_caller_ends_the_watch_of_the_frame_itself_keeps_it() {
    let restart = |t: &mut Tandem, index: usize| {
        let frames = t.c.frames(t.tid);
        t.c.ok("restartFrame", json!({"frameId": frames[index]["id"]}));
        let (at, st) = t.wait_stop();
        assert_eq!(st["body"]["reason"], "restart", "{st}");
        at
    };
    // fill's own start: the frame is the same (its CFA and function), the watch stays.
    // The program is stopped before fill's last write (at its line's breakpoint).
    let mut t = Tandem::launch(true, &["fill add line"], &[]);
    let id = t.watch("acc");
    let at = restart(&mut t, 0);
    assert!(matches!(&at, At::Stop { function, .. } if function == "fill"));
    assert!(!t.removed_soon(id), "the watch is kept in its own frame");
    // Forward in the replay: its writes, the breakpoint where the program was (the
    // present: live again), the last write, and the return ends the watch, as live.
    let ours = t.moves(&["continue"; 6]);
    let kinds: Vec<(Kind, i64)> = ours
        .iter()
        .map(|a| match a {
            At::Stop { kind, line, .. } => (*kind, *line),
            At::Exited => (Kind::Other, 0),
        })
        .collect();
    let add = line("fill add line");
    assert_eq!(
        kinds,
        [
            (Kind::Write, line("fill first line") + 1),
            (Kind::Write, line("fill triple line") + 1),
            (Kind::Other, add),
            (Kind::Write, line("fill return line")),
            (Kind::Ended, line("fill call line")),
            (Kind::Other, 0),
        ],
        "{ours:?}"
    );
    assert_eq!(ours[5], At::Exited);
    assert_eq!(t.removed, [id]);
    t.c.finish();

    // main's start: before fill was called, the watch ends.
    let mut t = Tandem::launch(true, &["fill return line"], &[]);
    let id = t.watch("acc");
    restart(&mut t, 0);
    assert_eq!(t.c.frames(t.tid)[1]["name"], "main");
    restart(&mut t, 1);
    assert!(t.removed_soon(id), "the watch ends with its frame");
    // Forward: prime()'s write to the slot and fill's writes are no stops.
    let (at, st) = t.move_("continue");
    assert!(
        matches!(&at, At::Stop { kind: Kind::Other, function, .. } if function == "fill"),
        "{st}"
    );
    assert_eq!(st["body"]["reason"], "breakpoint");
    assert_eq!(t.move_("continue").0, At::Exited);
    t.c.finish();
}

#[test]
fn last_write_of_a_local_finds_only_its_own_frames_writes() {
    let program = sample();
    let root = program.parent().unwrap().to_path_buf();
    let first = line("fill first line");
    let ret = line("fill return line");
    let mut m = Mcp::start(&root, &[("TANDEM_INDEX_CACHE", "0")]);
    let (st, err, text) = m.tool(
        "debug_launch",
        json!({"program": program, "record": true,
               "breakpoints": [{"location": format!("watch_scope.c:{first}")},
                               {"location": format!("watch_scope.c:{ret}")}]}),
    );
    assert!(!err, "{text}");
    let sid = st["session"].clone();
    assert_eq!(st["line"], first, "{st}");
    // Before fill wrote acc, the slot was last written by prime() (slot = v + 100):
    // another variable, not acc's write.
    let (_, err, text) = m.tool(
        "debug_last_write",
        json!({"session": sid, "expression": "acc"}),
    );
    assert!(err, "no write of acc in its frame yet: {text}");
    assert!(text.contains("since its frame began"), "{text}");
    let (st, err, text) = m.tool("debug_continue", json!({"session": sid}));
    assert!(!err && st["line"] == ret, "{text}");
    let (st, err, text) = m.tool(
        "debug_last_write",
        json!({"session": sid, "expression": "acc"}),
    );
    assert!(!err, "{text}");
    assert_eq!(st["reason"], "data breakpoint", "{st}");
    assert_eq!(st["line"], line("fill add line"), "{st}");
    assert!(
        st["description"]
            .as_str()
            .unwrap_or_default()
            .contains("acc: 15 → 18"),
        "{st}"
    );
    m.tool("debug_end", json!({"session": sid}));
}
