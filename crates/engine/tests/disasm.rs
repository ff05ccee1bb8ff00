//! Disassembly on a real process, compared with objdump (addresses, mnemonics and
//! operands) and gdb (symbols): forward, backward across functions, over breakpoints
//! and into unreadable memory.

mod common;

use std::path::Path;
use std::process::Command;

use engine::{Session, SourceBreakpoint, StopCause};

/// One objdump line: file address and text (`mov    %rsp,%rbp`, comments dropped).
#[derive(Clone, Debug, PartialEq)]
struct Line {
    addr: u64,
    text: String,
}

/// `.text` of `program` as objdump disassembles it, in address order.
fn objdump_text(program: &Path) -> Vec<Line> {
    let out = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn", "-j", ".text"])
        .arg(program)
        .output()
        .expect("objdump");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (addr, text) = l.split_once(":\t")?;
            let addr = u64::from_str_radix(addr.trim(), 16).ok()?;
            let text = text.split("        #").next().unwrap_or(text).trim_end();
            Some(Line {
                addr,
                text: text.to_string(),
            })
        })
        .collect()
}

/// The mnemonic, with objdump's segment-prefix spelling (`cs nopw`) folded into the
/// operand form iced uses (`nopw %cs:`).
fn mnemonic(text: &str) -> &str {
    let mut words = text.split_whitespace();
    match words.next() {
        Some("cs" | "ds" | "es" | "ss" | "fs" | "gs" | "data16" | "rep" | "repz" | "bnd") => {
            words.next().unwrap_or("")
        }
        Some(w) => w,
        None => "",
    }
}

/// The operands of an instruction whose text names no address (no branch target, no
/// rip-relative operand), where objdump and the engine must agree exactly.
fn plain_operands(text: &str) -> Option<&str> {
    if text.contains("%rip") || text.contains('<') || text.starts_with('j') {
        return None;
    }
    if text.starts_with("call") {
        return None;
    }
    Some(text.split_once(' ').map_or("", |(_, ops)| ops.trim()))
}

fn launch_at_main(sample: &common::Sample) -> (Session, engine::Stop) {
    let session = common::launch(sample);
    let st = session
        .set_function_breakpoints(&[engine::FunctionBreakpoint {
            name: "main".into(),
            ..Default::default()
        }])
        .expect("function breakpoint");
    session.resume().expect("resume");
    let stop = common::expect_stop(&session);
    assert_eq!(stop.cause, StopCause::Breakpoint(vec![st[0].id]));
    (session, stop)
}

fn bias(session: &Session) -> u64 {
    session
        .modules()
        .into_iter()
        .find(|m| m.main)
        .expect("main module")
        .bias
}

#[test]
fn the_whole_text_section_agrees_with_objdump() {
    let sample = common::compile("eng_watch", &["-g", "-O0", "-pthread"]);
    let expected = objdump_text(&sample.path);
    assert!(expected.len() > 50, "{expected:?}");
    let (session, _) = launch_at_main(&sample);
    let bias = bias(&session);
    let start = expected[0].addr + bias;
    let got = session.disassemble(start, 0, expected.len()).unwrap();
    assert_eq!(got.len(), expected.len());
    let mut operands_checked = 0;
    for (g, e) in got.iter().zip(&expected) {
        assert_eq!(g.address, e.addr + bias, "{g:?} vs {e:?}");
        assert!(!g.invalid, "{g:?}");
        assert_eq!(mnemonic(&g.text), mnemonic(&e.text), "{g:?} vs {e:?}");
        if let (Some(a), Some(b)) = (plain_operands(&g.text), plain_operands(&e.text)) {
            if mnemonic(&e.text) == e.text.split_whitespace().next().unwrap_or("") {
                assert_eq!(a, b, "{g:?} vs {e:?}");
                operands_checked += 1;
            }
        }
    }
    assert!(operands_checked > 40, "{operands_checked}");
}

#[test]
fn negative_offsets_land_on_real_boundaries_across_functions() {
    let sample = common::compile("eng_watch", &["-g", "-O0", "-pthread"]);
    let expected = objdump_text(&sample.path);
    let (session, stop) = launch_at_main(&sample);
    let bias = bias(&session);
    let pc = session.stack_trace(stop.tid).unwrap()[0].pc.0;
    let at = expected
        .iter()
        .position(|l| l.addr + bias == pc)
        .expect("pc is an objdump instruction");
    // 30 back from main's breakpoint crosses worker, bump and the padding before them.
    assert!(at > 30);
    let got = session.disassemble(pc, -30, 40).unwrap();
    let want = &expected[at - 30..at + 10];
    let addrs: Vec<u64> = got.iter().map(|i| i.address).collect();
    let want_addrs: Vec<u64> = want.iter().map(|l| l.addr + bias).collect();
    assert_eq!(addrs, want_addrs);
    for (g, e) in got.iter().zip(want) {
        assert_eq!(mnemonic(&g.text), mnemonic(&e.text), "{g:?} vs {e:?}");
    }
    // The same window asked with a positive offset from further back.
    let from = expected[at - 30].addr + bias;
    let again = session.disassemble(from, 5, 10).unwrap();
    assert_eq!(again[..], got[5..15]);
    // Symbols as gdb writes them (`<main+4>` is `main+4`; the entry is plain `main`).
    let main = got
        .iter()
        .find(|i| i.symbol.as_deref() == Some("main"))
        .expect("main's entry");
    let later = got
        .iter()
        .find(|i| i.address > main.address)
        .expect("after main's entry");
    assert_eq!(
        later.symbol.as_deref(),
        Some(format!("main+{}", later.address - main.address).as_str())
    );
    let pc_insn = &got[30];
    assert_eq!(pc_insn.address, pc);
    assert_eq!(
        pc_insn.file.as_deref().and_then(|f| f.file_name()),
        Some(std::ffi::OsStr::new("eng_watch.c"))
    );
    let frame = &session.stack_trace(stop.tid).unwrap()[0];
    assert_eq!(pc_insn.line, frame.line);
    // A branch names its target like gdb: `jmp 0x... <waiter+24>`.
    let jump = got
        .iter()
        .find(|i| i.text.starts_with("jmp") && i.text.contains(" <waiter+"))
        .unwrap_or_else(|| panic!("a jump inside waiter in {got:#?}"));
    let target = jump.text.split_whitespace().nth(1).unwrap();
    let target = u64::from_str_radix(target.trim_start_matches("0x"), 16).unwrap();
    let named = jump.text.split('<').nth(1).unwrap().trim_end_matches('>');
    let landing = got
        .iter()
        .find(|i| i.address == target)
        .expect("the target");
    assert_eq!(landing.symbol.as_deref(), Some(named));
    // An address in the middle of an instruction snaps to that instruction's start.
    let mid = session.disassemble(pc + 1, 0, 1).unwrap();
    assert_eq!(mid[0].address, pc);
}

#[test]
fn breakpoints_never_show_and_unreadable_memory_is_marked() {
    let sample = common::compile("eng_watch", &["-g", "-O0", "-pthread"]);
    let (session, _) = launch_at_main(&sample);
    let bias = bias(&session);
    let expected = objdump_text(&sample.path);
    // A breakpoint on every line of bump: each first instruction carries an int3.
    let lines: Vec<SourceBreakpoint> = (19..=21)
        .map(|line| SourceBreakpoint {
            line,
            ..Default::default()
        })
        .collect();
    let st = session
        .set_line_breakpoints(&sample.source, &lines)
        .unwrap();
    let planted: Vec<u64> = st.iter().flat_map(|s| s.addresses.clone()).collect();
    assert!(!planted.is_empty());
    let first = planted[0];
    let got = session.disassemble(first, -2, 8).unwrap();
    let bytes = session.read_memory(got[0].address, 64).unwrap();
    for insn in &got {
        let off = (insn.address - got[0].address) as usize;
        assert_eq!(insn.bytes, bytes[off..off + insn.bytes.len()], "{insn:?}");
        let e = expected
            .iter()
            .find(|l| l.addr + bias == insn.address)
            .expect("an objdump instruction");
        assert_eq!(mnemonic(&insn.text), mnemonic(&e.text));
        assert_ne!(insn.text, "int3");
    }
    assert!(got.iter().any(|i| planted.contains(&i.address)));

    // Page zero is never mapped: every entry is there, marked invalid.
    let nothing = session.disassemble(0x1000, -3, 7).unwrap();
    assert_eq!(nothing.len(), 7);
    assert!(nothing.iter().all(|i| i.invalid && i.bytes.is_empty()));
    assert_eq!(nothing[3].address, 0x1000);
    assert!(nothing.windows(2).all(|w| w[1].address == w[0].address + 1));
    assert!(session.disassemble(0x1000, 0, 0).unwrap().is_empty());
}
