//! Data breakpoints (hardware watchpoints) on real processes: what an lvalue watches,
//! debug-register slots and alignment, hits with old and new values where gdb reports
//! them, threads created later, stepping over watched writes, and detach.

mod common;

use std::path::Path;
use std::process::Command;

use engine::{
    DataAccess, DataBreakpoint, Session, SessionEvent, SourceBreakpoint, StepKind, StopCause,
};

/// The line of the sample whose text contains `marker`.
fn line_of(source: &Path, marker: &str) -> u32 {
    let text = std::fs::read_to_string(source).expect("source");
    text.lines()
        .position(|l| l.contains(marker))
        .map(|i| i as u32 + 1)
        .unwrap_or_else(|| panic!("no line with {marker}"))
}

/// Runs gdb in batch mode with `pos` defined (prints `POS function line`).
fn gdb(program: &Path, dir: &Path, body: &str) -> String {
    let cmds = dir.join("watch.gdb");
    let mut text = String::from(
        "set pagination off\nset confirm off\nset debuginfod enabled off\nset startup-with-shell off\n",
    );
    text.push_str("define pos\npython f = gdb.selected_frame(); print('POS %s %d' % (f.name(), f.find_sal().line))\nend\n");
    text.push_str(body);
    std::fs::write(&cmds, text).expect("write cmds");
    let out = Command::new("timeout")
        .arg("120")
        .arg("gdb")
        .args(["-nx", "-batch", "-x"])
        .arg(&cmds)
        .arg(program)
        .output()
        .expect("running gdb");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `(int *) 0x555555558030 <counter>` → 0x555555558030.
fn gdb_address(out: &str, print_index: usize) -> u64 {
    let line = out
        .lines()
        .find(|l| l.starts_with(&format!("${print_index} = ")))
        .unwrap_or_else(|| panic!("no ${print_index} in {out}"));
    let hex = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("0x"))
        .expect("an address");
    u64::from_str_radix(hex, 16).expect("hex")
}

fn write(address: u64, size: u64) -> DataBreakpoint {
    DataBreakpoint {
        address,
        size,
        access: DataAccess::Write,
        condition: None,
        hit_condition: None,
    }
}

fn sample() -> common::Sample {
    common::compile("eng_watch", &["-g", "-O0", "-pthread"])
}

fn run_to_line(session: &Session, source: &Path, line: u32) -> engine::Stop {
    session
        .set_line_breakpoints(
            source,
            &[SourceBreakpoint {
                line,
                ..Default::default()
            }],
        )
        .expect("line breakpoint");
    session.resume().expect("resume");
    let stop = common::expect_stop(session);
    assert!(
        matches!(stop.cause, StopCause::Breakpoint(_)),
        "{:?}",
        stop.cause
    );
    session
        .set_line_breakpoints(source, &[])
        .expect("clear line breakpoints");
    stop
}

#[test]
fn a_write_watchpoint_stops_at_every_change_where_gdb_does() {
    let sample = sample();
    let mut body = String::from("break main\nrun\nprint &counter\nwatch counter\n");
    for _ in 0..6 {
        body.push_str("continue\npos\n");
    }
    let out = gdb(&sample.path, sample.dir.path(), &body);
    let expected_addr = gdb_address(&out, 1);
    let old: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("Old value = "))
        .collect();
    let new: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("New value = "))
        .collect();
    let positions: Vec<&str> = out.lines().filter_map(|l| l.strip_prefix("POS ")).collect();
    assert_eq!(positions.len(), 6, "gdb: {out}");
    assert_eq!(old.len(), 6, "gdb: {out}");

    let session = common::launch(&sample);
    // No frame: the main executable's globals.
    let info = session.data_breakpoint_info(None, "counter").unwrap();
    assert_eq!(info.address, expected_addr);
    assert_eq!(info.size, 4);
    assert_eq!(
        info.description,
        format!("counter (int, 4 bytes at {expected_addr:#x})")
    );
    assert_eq!(
        info.access_types,
        [DataAccess::Write, DataAccess::ReadWrite]
    );
    let st = session
        .set_data_breakpoints(&[write(info.address, info.size)])
        .unwrap();
    assert!(st[0].verified, "{st:?}");
    session.resume().unwrap();
    for k in 0..6 {
        let stop = common::expect_stop(&session);
        assert_eq!(
            stop.cause,
            StopCause::DataBreakpoint(vec![st[0].id]),
            "hit {k}"
        );
        assert_eq!(
            stop.description.as_deref(),
            Some(format!("counter: {} → {}", old[k], new[k]).as_str()),
            "hit {k}"
        );
        assert_eq!(
            common::position(&session, stop.tid),
            positions[k],
            "hit {k}"
        );
        if k == 5 {
            // Written by a thread created after the watchpoint was set.
            assert_ne!(stop.tid.0, session.pid().0, "the worker thread hit it");
        }
        session.resume().unwrap();
    }
    match session.wait_stop(common::STOP).unwrap() {
        SessionEvent::Exited { code } => assert_eq!(code, 0),
        other => panic!("{other:?}"),
    }
}

#[test]
fn conditions_and_hit_conditions_decide_at_the_hit() {
    let sample = sample();
    let session = common::launch(&sample);
    let counter = session.data_breakpoint_info(None, "counter").unwrap();
    let y = session.data_breakpoint_info(None, "origin.y").unwrap();
    assert_eq!(y.size, 8);
    assert!(
        y.description.starts_with("origin.y (long int, 8 bytes at "),
        "{y:?}"
    );
    let st = session
        .set_data_breakpoints(&[
            DataBreakpoint {
                condition: Some("counter == 4".into()),
                ..write(counter.address, 4)
            },
            DataBreakpoint {
                hit_condition: Some("== 3".into()),
                ..write(y.address, 8)
            },
        ])
        .unwrap();
    assert!(st.iter().all(|s| s.verified), "{st:?}");
    session.resume().unwrap();
    // The third write of origin.y (i == 2) comes before counter reaches 4 (i == 3).
    let stop = common::expect_stop(&session);
    assert_eq!(stop.cause, StopCause::DataBreakpoint(vec![st[1].id]));
    assert_eq!(stop.description.as_deref(), Some("origin.y: 10 → 20"));
    let frame = session.stack_trace(stop.tid).unwrap()[0].id;
    assert_eq!(session.evaluate(frame, "i").unwrap().rendered, "2");
    session.resume().unwrap();
    let stop = common::expect_stop(&session);
    assert_eq!(stop.cause, StopCause::DataBreakpoint(vec![st[0].id]));
    assert_eq!(stop.description.as_deref(), Some("counter: 3 → 4"));
    session.resume().unwrap();
    // counter == 100 in the worker is not 4: no more stops.
    match session.wait_stop(common::STOP).unwrap() {
        SessionEvent::Exited { code } => assert_eq!(code, 0),
        other => panic!("{other:?}"),
    }
}

#[test]
fn lvalues_slots_alignment_and_ids() {
    let sample = sample();
    let session = common::launch(&sample);
    let stop = run_to_line(
        &session,
        &sample.source,
        line_of(&sample.source, "/* loop */"),
    );
    let frame = session.stack_trace(stop.tid).unwrap()[0].id;

    // What lvalues watch, in a frame.
    let local = session.data_breakpoint_info(Some(frame), "local").unwrap();
    assert_eq!(local.size, 4);
    let addr_of_local = session.evaluate(frame, "&local").unwrap().rendered;
    assert!(
        addr_of_local.starts_with(&format!("{:#x}", local.address)),
        "{addr_of_local} vs {local:?}"
    );
    let samples = session.data_breakpoint_info(None, "samples").unwrap_err();
    assert!(
        samples.to_string().contains("16 bytes") && samples.to_string().contains("1, 2, 4 or 8"),
        "{samples}"
    );
    let s3 = session
        .data_breakpoint_info(Some(frame), "samples[3]")
        .unwrap();
    let s0 = session
        .data_breakpoint_info(Some(frame), "*samples")
        .unwrap();
    assert_eq!((s3.size, s3.address), (2, s0.address + 6));
    let twelve = session.data_breakpoint_info(Some(frame), "twelve");
    assert!(twelve.unwrap_err().to_string().contains("12 bytes"));
    let computed = session.data_breakpoint_info(Some(frame), "local + 1");
    assert!(computed
        .unwrap_err()
        .to_string()
        .contains("is not in memory"));
    let bytes = session.data_breakpoint_info(None, "bytes[2]").unwrap();
    let by_address = session
        .data_breakpoint_info_for_address(bytes.address, 4)
        .unwrap();
    assert_eq!(
        by_address.description,
        format!("4 bytes at {:#x}", bytes.address)
    );
    assert!(session.data_breakpoint_info_for_address(0, 4).is_err());

    let counter = session.data_breakpoint_info(None, "counter").unwrap();
    let y = session.data_breakpoint_info(None, "origin.y").unwrap();
    let x = session.data_breakpoint_info(None, "origin.x").unwrap();
    let total = session.data_breakpoint_info(None, "total").unwrap();
    // Four registers, four aligned ranges: the fifth has none left.
    let first = session
        .set_data_breakpoints(&[
            write(counter.address, 4),
            write(y.address, 8),
            DataBreakpoint {
                access: DataAccess::ReadWrite,
                ..write(s3.address, 2)
            },
            DataBreakpoint {
                access: DataAccess::Read,
                ..write(total.address, 8)
            },
            write(x.address, 4),
        ])
        .unwrap();
    assert!(first[..4].iter().all(|s| s.verified), "{first:?}");
    assert!(first[3]
        .message
        .as_deref()
        .is_some_and(|m| m.contains("reads and writes")));
    assert!(!first[4].verified);
    assert_eq!(
        first[4].message.as_deref(),
        Some("no free hardware debug register")
    );
    let ids: std::collections::HashSet<_> = first.iter().map(|s| s.id).collect();
    assert_eq!(ids.len(), 5, "distinct ids");

    // An unaligned int takes two registers; the same range asked again keeps its id.
    let second = session
        .set_data_breakpoints(&[
            write(bytes.address, 4),
            write(counter.address, 4),
            write(y.address, 8),
            write(s3.address, 2),
            write(bytes.address, 3),
        ])
        .unwrap();
    assert!(second[0].verified, "{second:?}");
    assert_eq!(second[1].id, first[0].id);
    assert_eq!(second[2].id, first[1].id);
    assert!(second[1].verified && second[2].verified);
    // samples[3] was ReadWrite before: a new id, and no register left for it.
    assert_ne!(second[3].id, first[2].id);
    assert_eq!(
        second[3].message.as_deref(),
        Some("no free hardware debug register")
    );
    assert!(!second[4].verified);
    assert!(second[4]
        .message
        .as_deref()
        .unwrap()
        .contains("1, 2, 4 or 8"));

    // Only the unaligned one: it stops at the write through the int pointer.
    let only = session
        .set_data_breakpoints(&[write(bytes.address, 4)])
        .unwrap();
    assert_eq!(only[0].id, second[0].id);
    session.resume().unwrap();
    let stop = common::expect_stop(&session);
    assert_eq!(stop.cause, StopCause::DataBreakpoint(vec![only[0].id]));
    assert_eq!(
        stop.description.as_deref(),
        Some(format!("*{:#x}: 0 → 7", bytes.address).as_str())
    );
    assert_eq!(
        session.read_memory(bytes.address, 4).unwrap(),
        7i32.to_le_bytes()
    );
    let f = session.stack_trace(stop.tid).unwrap();
    assert_eq!(f[0].function.as_deref(), Some("main"));
    session.resume().unwrap();
    match session.wait_stop(common::STOP).unwrap() {
        SessionEvent::Exited { code } => assert_eq!(code, 0),
        other => panic!("{other:?}"),
    }
}

#[test]
fn steps_over_watched_writes_end_where_gdb_ends_them() {
    let sample = sample();
    let call = line_of(&sample.source, "/* call bump */");
    let mut body = format!("break {call}\nrun\npos\n");
    for _ in 0..5 {
        body.push_str("next\npos\n");
    }
    body.push_str("step\npos\nstep\npos\n");
    // Then with a watchpoint that triggers during a `next`.
    body.push_str("continue\npos\nwatch samples[3]\nnext\npos\nnext\npos\nnext\npos\nnext\npos\n");
    let out = gdb(&sample.path, sample.dir.path(), &body);
    let expected: Vec<&str> = out.lines().filter_map(|l| l.strip_prefix("POS ")).collect();
    assert_eq!(expected.len(), 13, "gdb: {out}");

    let session = common::launch(&sample);
    let counter = session.data_breakpoint_info(None, "counter").unwrap();
    let y = session.data_breakpoint_info(None, "origin.y").unwrap();
    // Watchpoints whose conditions never hold must not disturb stepping.
    let st = session
        .set_data_breakpoints(&[
            DataBreakpoint {
                condition: Some("counter == 12345".into()),
                ..write(counter.address, 4)
            },
            DataBreakpoint {
                condition: Some("origin.y == 12345".into()),
                ..write(y.address, 8)
            },
        ])
        .unwrap();
    assert!(st.iter().all(|s| s.verified), "{st:?}");
    session
        .set_line_breakpoints(
            &sample.source,
            &[SourceBreakpoint {
                line: call,
                ..Default::default()
            }],
        )
        .unwrap();
    session.resume().unwrap();
    let stop = common::expect_stop(&session);
    let tid = stop.tid;
    let mut actual = vec![common::position(&session, tid)];
    for kind in [
        StepKind::Over,
        StepKind::Over,
        StepKind::Over,
        StepKind::Over,
        StepKind::Over,
        StepKind::In,
        StepKind::In,
    ] {
        session.step(tid, kind).unwrap();
        let s = common::expect_stop(&session);
        // A step onto the line breakpoint reports it, as gdb does.
        assert!(
            matches!(s.cause, StopCause::Step | StopCause::Breakpoint(_)),
            "{:?} after {actual:?}",
            s.cause
        );
        actual.push(common::position(&session, tid));
    }
    session.resume().unwrap();
    let s = common::expect_stop(&session);
    assert!(matches!(s.cause, StopCause::Breakpoint(_)), "{s:?}");
    actual.push(common::position(&session, tid));
    let s3 = session.data_breakpoint_info(None, "samples[3]").unwrap();
    let watch = session
        .set_data_breakpoints(&[write(s3.address, 2)])
        .unwrap();
    let mut causes = Vec::new();
    for _ in 0..4 {
        session.step(tid, StepKind::Over).unwrap();
        let s = common::expect_stop(&session);
        causes.push((s.cause.clone(), s.description.clone()));
        actual.push(common::position(&session, tid));
    }
    assert_eq!(actual, expected);
    // The third `next` ran into the write: it ends as a data breakpoint, like gdb's.
    assert_eq!(causes[0].0, StopCause::Step);
    assert_eq!(causes[1].0, StopCause::Step);
    assert_eq!(
        causes[2],
        (
            StopCause::DataBreakpoint(vec![watch[0].id]),
            Some("samples[3]: 1 → 2".to_string())
        )
    );
    assert!(
        matches!(causes[3].0, StopCause::Step),
        "stepping goes on: {causes:?}"
    );
    session.terminate().unwrap();
}

#[test]
fn stepping_off_a_breakpoint_whose_instruction_writes_watched_data() {
    let sample = sample();
    let line = line_of(&sample.source, "/* worker write */");
    for stops in [true, false] {
        let session = common::launch(&sample);
        let counter = session.data_breakpoint_info(None, "counter").unwrap();
        let condition = if stops {
            "counter == 100"
        } else {
            "counter == 12345"
        };
        let st = session
            .set_data_breakpoints(&[DataBreakpoint {
                condition: Some(condition.into()),
                ..write(counter.address, 4)
            }])
            .unwrap();
        let bp = session
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
        assert_eq!(stop.cause, StopCause::Breakpoint(vec![bp[0].id]));
        // `counter = 100` is one instruction at the breakpoint: the tracer steps
        // over the int3 and the write traps on that very step.
        session.resume().unwrap();
        if stops {
            let stop = common::expect_stop(&session);
            assert_eq!(stop.cause, StopCause::DataBreakpoint(vec![st[0].id]));
            assert_eq!(stop.description.as_deref(), Some("counter: 5 → 100"));
            assert_eq!(
                common::position(&session, stop.tid),
                format!("worker {}", line + 1)
            );
            session.resume().unwrap();
        }
        match session.wait_stop(common::STOP).unwrap() {
            SessionEvent::Exited { code } => assert_eq!(code, 0),
            other => panic!("{other:?}"),
        }
    }
}

/// Kills and reaps a spawned sample if the test fails early.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn detach_clears_the_debug_registers_of_every_thread() {
    let sample = sample();
    // Two threads wait for `go`; both write counter afterwards.
    let mut child = Child(
        Command::new(&sample.path)
            .arg("wait")
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    std::thread::sleep(std::time::Duration::from_millis(50));
    let pid = tracer::Pid(child.0.id() as i32);
    let session = Session::attach(pid, Default::default()).unwrap();
    assert_eq!(session.threads().unwrap().len(), 2);
    let counter = session.data_breakpoint_info(None, "counter").unwrap();
    let go = session.data_breakpoint_info(None, "go").unwrap();
    let st = session
        .set_data_breakpoints(&[write(counter.address, 4)])
        .unwrap();
    assert!(st[0].verified);
    session
        .write_memory(go.address, 1i32.to_le_bytes().to_vec())
        .unwrap();
    session.detach().unwrap();
    // Had DR7 stayed set in either thread, its write of counter would kill the
    // process with SIGTRAP.
    let status = child.0.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{status:?}");
}
