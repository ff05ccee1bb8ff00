//! Scope and variable tests: values evaluated through our memory/register traits from
//! a gdb snapshot (registers + memory dumps) must equal what gdb prints; plus a pure
//! byte-buffer test of DW_OP_fbreg with the frame base from the CFA.

// Helpers outside #[test] functions panic on purpose: a broken oracle fails the test.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashMap;
use std::path::Path;

use symbols::{
    read_pieces, Binary, EvalContext, FileAddr, LoadBias, MemoryImage, PieceLocation, RuntimeAddr,
    Variable, VariableKind, VariableLocation,
};

const REGS: [(&str, u16); 17] = [
    ("rax", 0),
    ("rdx", 1),
    ("rcx", 2),
    ("rbx", 3),
    ("rsi", 4),
    ("rdi", 5),
    ("rbp", 6),
    ("rsp", 7),
    ("r8", 8),
    ("r9", 9),
    ("r10", 10),
    ("r11", 11),
    ("r12", 12),
    ("r13", 13),
    ("r14", 14),
    ("r15", 15),
    ("rip", 16),
];

/// What gdb saw when stopped at a breakpoint.
struct Snapshot {
    regs: HashMap<u16, u64>,
    memory: MemoryImage,
    /// name → values, innermost block first (`info locals`, then `info args`).
    values: HashMap<String, Vec<String>>,
    /// Start of the binary's first mapping (the load bias of a PIE).
    first_mapping: u64,
    /// rip, rsp and rbp of the caller's frame (gdb's `up`).
    caller: HashMap<u16, u64>,
    global_counter: Option<String>,
    scale: Option<String>,
}

fn snapshot(bin: &Path, dir: &Path, location: &str, c_globals: bool) -> Option<Snapshot> {
    let stack = dir.join("stack.bin");
    let data = dir.join("data.bin");
    let mut cmds = vec![
        format!("break {location}"),
        "run".into(),
        "echo @@regs\\n".into(),
        "info registers".into(),
        "echo @@locals\\n".into(),
        "info locals".into(),
        "info args".into(),
        "echo @@maps\\n".into(),
        "info proc mappings".into(),
        "echo @@misc\\n".into(),
        format!("dump binary memory {} $rsp-2048 $rsp+512", stack.display()),
        "print/x $rsp-2048".into(),
    ];
    if c_globals {
        cmds.extend([
            format!(
                "dump binary memory {} (char*)&global_counter-256 (char*)&global_counter+256",
                data.display()
            ),
            "print/x (char*)&global_counter-256".into(),
            "print global_counter".into(),
            "print scale".into(),
        ]);
    }
    cmds.extend([
        "up".into(),
        "echo @@caller\\n".into(),
        "info registers rip rsp rbp".into(),
    ]);
    cmds.push("kill".into());
    let out = common::gdb(bin, &cmds);
    let mut section = "";
    let mut regs = HashMap::new();
    let mut values: HashMap<String, Vec<String>> = HashMap::new();
    let mut prints = Vec::new();
    let mut first_mapping = None;
    let mut caller = HashMap::new();
    for line in out.lines() {
        if let Some(s) = line.strip_prefix("@@") {
            section = match s {
                "regs" => "regs",
                "locals" => "locals",
                "maps" => "maps",
                "caller" => "caller",
                _ => "misc",
            };
            continue;
        }
        match section {
            "regs" => {
                let mut cols = line.split_whitespace();
                if let (Some(name), Some(v)) = (cols.next(), cols.next()) {
                    if let Some((_, no)) = REGS.iter().find(|r| r.0 == name) {
                        regs.insert(*no, common::hex(v));
                    }
                }
            }
            "locals" => {
                if let Some((name, value)) = line.split_once(" = ") {
                    values
                        .entry(name.trim().to_string())
                        .or_default()
                        .push(value.trim().to_string());
                }
            }
            "caller" => {
                let mut cols = line.split_whitespace();
                if let (Some(name), Some(v)) = (cols.next(), cols.next()) {
                    if let Some((_, no)) = REGS.iter().find(|r| r.0 == name) {
                        caller.insert(*no, common::hex(v));
                    }
                }
            }
            "maps"
                if first_mapping.is_none() && line.trim_end().ends_with(bin.to_str().unwrap()) =>
            {
                first_mapping = Some(common::hex(line.trim_start()));
            }
            "misc" => {
                if let Some((_, v)) = line.split_once(" = ") {
                    prints.push(v.to_string());
                }
            }
            _ => {}
        }
    }
    if regs.len() != 17 {
        // The breakpoint was never hit (code optimized away or never called).
        assert!(out.contains("exited normally"), "{out}");
        return None;
    }
    let at_hex = |s: &str| common::hex(&s[s.find("0x").unwrap()..]);
    let mut memory = MemoryImage::new();
    memory.add(
        RuntimeAddr(at_hex(&prints[0])),
        std::fs::read(&stack).unwrap(),
    );
    if c_globals {
        memory.add(
            RuntimeAddr(at_hex(&prints[1])),
            std::fs::read(&data).unwrap(),
        );
    }
    Some(Snapshot {
        regs,
        memory,
        values,
        first_mapping: first_mapping.unwrap(),
        caller,
        global_counter: prints.get(2).cloned(),
        scale: prints.get(3).cloned(),
    })
}

/// Evaluates an integer or `double` variable to the string gdb would print.
fn value_of(
    binary: &Binary,
    v: &Variable,
    frame_base: Option<&symbols::LocationExpr>,
    snap: &Snapshot,
    bias: LoadBias,
) -> Option<String> {
    let ty = binary.type_name(v.ty?).ok()?;
    let size = match ty.as_str() {
        "int" | "i32" | "u32" => 4,
        "double" | "i64" | "u64" => 8,
        _ => return None,
    };
    let ctx = EvalContext {
        memory: &snap.memory,
        registers: &snap.regs,
        bias,
        pc: RuntimeAddr(snap.regs[&16]),
        frame_base: None,
        cfa: None,
        tls: None,
        entry_registers: None,
    };
    let bytes = match &v.location {
        VariableLocation::Expr(e) => {
            let pieces = binary.evaluate_location(e, frame_base, &ctx).ok()?;
            read_pieces(&pieces, size, &snap.memory, &snap.regs).ok()?
        }
        VariableLocation::Const(b) => b.get(..size)?.to_vec(),
        VariableLocation::OptimizedOut => return Some("<optimized out>".into()),
    };
    Some(match ty.as_str() {
        "int" | "i32" => i32::from_le_bytes(bytes.try_into().ok()?).to_string(),
        "u32" => u32::from_le_bytes(bytes.try_into().ok()?).to_string(),
        "i64" => i64::from_le_bytes(bytes.try_into().ok()?).to_string(),
        "u64" => u64::from_le_bytes(bytes.try_into().ok()?).to_string(),
        _ => f64::from_le_bytes(bytes.try_into().ok()?).to_string(),
    })
}

/// Compares every int local/parameter we can evaluate with gdb; returns how many matched.
fn compare_with_gdb(bin: &Path, dir: &Path, location: &str, fixture: &str) -> usize {
    let c_globals = !fixture.starts_with("rustc");
    let binary = Binary::open(bin).unwrap();
    let Some(snap) = snapshot(bin, dir, location, c_globals) else {
        return 0;
    };
    let bias = LoadBias(if binary.info().position_independent {
        snap.first_mapping
    } else {
        0
    });
    let pc = bias.to_file(RuntimeAddr(snap.regs[&16]));
    let scope = binary.scope_at(pc).unwrap();
    let frame = scope.locals.iter().map(|v| v.frame).max().unwrap_or(0);
    let mut ours: Vec<&Variable> = scope.locals.iter().filter(|v| v.frame == frame).collect();
    // gdb lists innermost blocks first, then parameters.
    ours.sort_by_key(|v| {
        (
            v.kind == VariableKind::Parameter,
            std::cmp::Reverse(v.depth),
        )
    });
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut matched = 0;
    for v in ours {
        let name = v.name.clone().unwrap();
        let k = seen.entry(name.clone()).or_default();
        let gdb_value = snap
            .values
            .get(&name)
            .and_then(|vals| vals.get(*k))
            .cloned();
        *k += 1;
        let Some(mine) = value_of(&binary, v, scope.frame_base.as_ref(), &snap, bias) else {
            continue;
        };
        let gdb_value =
            gdb_value.unwrap_or_else(|| panic!("{fixture} {location}: gdb has no {name}"));
        if mine == "<optimized out>" {
            assert_eq!(gdb_value, mine, "{fixture} {location}: {name}");
        } else {
            assert_eq!(mine, gdb_value, "{fixture} {location}: {name} {v:?}");
        }
        matched += 1;
    }
    // One frame up: the caller's rip, rsp and rbp as gdb unwinds them.
    let ctx = EvalContext {
        memory: &snap.memory,
        registers: &snap.regs,
        bias,
        pc: RuntimeAddr(snap.regs[&16]),
        frame_base: None,
        cfa: None,
        tls: None,
        entry_registers: None,
    };
    let caller = binary.unwind_caller(&ctx).unwrap().unwrap();
    assert_eq!(snap.caller.len(), 3, "{fixture} {location}");
    // Inside an inlined call gdb's `up` goes to the inline caller (same physical
    // frame); compare only physical frames.
    let inlined = binary
        .function_at(pc)
        .unwrap()
        .is_some_and(|f| !f.inlined.is_empty());
    if !inlined {
        for (reg, value) in &snap.caller {
            assert_eq!(
                caller.get(reg),
                Some(value),
                "{fixture} {location}: caller register {reg}"
            );
        }
    }
    if !c_globals {
        return matched;
    }
    // Globals: global_counter through the unit's globals.
    let g = scope
        .globals
        .iter()
        .find(|v| v.name.as_deref() == Some("global_counter"))
        .unwrap();
    assert_eq!(
        value_of(&binary, g, None, &snap, bias).unwrap(),
        snap.global_counter.clone().unwrap(),
        "{fixture}"
    );
    let scale = scope
        .globals
        .iter()
        .find(|v| v.name.as_deref() == Some("scale"))
        .unwrap();
    assert_eq!(
        value_of(&binary, scale, None, &snap, bias).unwrap(),
        snap.scale.clone().unwrap(),
        "{fixture}"
    );
    matched
}

#[test]
fn locals_and_params_agree_with_gdb_at_o0() {
    let dir = tempfile::tempdir().unwrap();
    for (fixture, flags) in [
        (
            "gcc-O0-dwarf4-nopie",
            vec!["-g", "-O0", "-gdwarf-4", "-no-pie"],
        ),
        (
            "gcc-O0-dwarf5-pie",
            vec!["-g", "-O0", "-gdwarf-5", "-fPIE", "-pie"],
        ),
    ] {
        let bin = common::build_c(dir.path(), "c/sym_lines.c", &flags, fixture);
        // Line 66: inside the loop body, where the inner `total` shadows the outer one.
        assert_eq!(
            compare_with_gdb(&bin, dir.path(), "sym_lines.c:66", fixture),
            4
        );
        assert_eq!(
            compare_with_gdb(&bin, dir.path(), "sym_lines.c:70", fixture),
            3
        );
        assert_eq!(compare_with_gdb(&bin, dir.path(), "add", fixture), 3);
    }
}

#[test]
fn locals_and_params_agree_with_gdb_at_o2() {
    let dir = tempfile::tempdir().unwrap();
    let mut matched = 0;
    for (fixture, flags) in [
        ("gcc-O2-dwarf4", vec!["-g", "-O2", "-gdwarf-4"]),
        ("gcc-O2-dwarf5", vec!["-g", "-O2", "-gdwarf-5"]),
    ] {
        let bin = common::build_c(dir.path(), "c/sym_lines.c", &flags, fixture);
        for loc in ["compute", "sym_lines.c:66", "sym_lines.c:70", "add"] {
            matched += compare_with_gdb(&bin, dir.path(), loc, fixture);
        }
    }
    assert!(matched >= 4, "only {matched} values compared");
}

#[test]
fn rust_locals_agree_with_gdb() {
    let dir = tempfile::tempdir().unwrap();
    let bin = common::build_rust(dir.path(), "rust/sym_rust.rs", &[], "rustc-g");
    // Each `let` opens a nested block in rustc's DWARF: dy is deeper than dx.
    assert_eq!(
        compare_with_gdb(&bin, dir.path(), "sym_rust.rs:22", "rustc-g"),
        2
    );
}

#[test]
fn shadowed_locals_are_both_visible_and_distinguishable() {
    let dir = tempfile::tempdir().unwrap();
    let bin = common::build_c(dir.path(), "c/sym_lines.c", &["-g", "-O0"], "gcc-O0");
    let binary = Binary::open(&bin).unwrap();
    let res = binary
        .resolve_line(
            Path::new("sym_lines.c"),
            symbols::Line::new(66).unwrap(),
            &Default::default(),
        )
        .unwrap()
        .unwrap();
    let scope = binary.scope_at(res.locations[0].addr).unwrap();
    let totals: Vec<_> = scope
        .locals
        .iter()
        .filter(|v| v.name.as_deref() == Some("total"))
        .collect();
    assert_eq!(totals.len(), 2);
    assert!(totals[0].shadowed && !totals[1].shadowed);
    assert!(totals[0].depth < totals[1].depth);
    let n = scope
        .locals
        .iter()
        .find(|v| v.name.as_deref() == Some("n"))
        .unwrap();
    assert_eq!(n.kind, VariableKind::Parameter);
    // `inner` lives in a sibling block that does not cover this pc.
    assert!(scope
        .locals
        .iter()
        .all(|v| v.name.as_deref() != Some("inner")));
}

/// DW_OP_fbreg against a frame base of DW_OP_call_frame_cfa, with the CFA computed from
/// .eh_frame: everything fed from hand-made registers and a byte buffer.
#[test]
fn fbreg_through_cfa_from_byte_buffers() {
    let dir = tempfile::tempdir().unwrap();
    let bin = common::build_c(
        dir.path(),
        "c/sym_lines.c",
        &["-g", "-O0", "-no-pie"],
        "gcc-O0",
    );
    let binary = Binary::open(&bin).unwrap();
    let add = &binary.functions_by_name("add").unwrap()[0];
    let pc = add.breakpoint_addr.unwrap();
    let scope = binary.scope_at(pc).unwrap();
    let fb = scope.frame_base.as_ref().unwrap();
    assert_eq!(
        fb.bytes(),
        &[0x9c],
        "gcc's frame base is DW_OP_call_frame_cfa"
    );
    let row = binary.unwind_row(pc).unwrap().unwrap();
    assert_eq!(
        row.cfa,
        symbols::CfaRule::RegisterOffset {
            register: 6,
            offset: 16
        }
    );
    let entry_row = binary.unwind_row(add.entry().unwrap()).unwrap().unwrap();
    assert_eq!(
        entry_row.cfa,
        symbols::CfaRule::RegisterOffset {
            register: 7,
            offset: 8
        }
    );
    assert!(entry_row
        .registers
        .contains(&(16, symbols::RegisterRule::Offset(-8))));

    let rbp = 0x7ff0_0000u64;
    let regs: HashMap<u16, u64> = [(6, rbp), (7, rbp - 32), (16, pc.0)].into();
    let a = scope
        .locals
        .iter()
        .find(|v| v.name.as_deref() == Some("a"))
        .unwrap();
    let VariableLocation::Expr(expr) = &a.location else {
        panic!()
    };
    let mut memory = MemoryImage::new();
    memory.add(RuntimeAddr(rbp - 64), vec![0; 128]);
    let ctx = EvalContext {
        memory: &memory,
        registers: &regs,
        bias: LoadBias(0),
        pc: RuntimeAddr(pc.0),
        frame_base: None,
        cfa: None,
        tls: None,
        entry_registers: None,
    };
    let pieces = binary.evaluate_location(expr, Some(fb), &ctx).unwrap();
    let PieceLocation::Memory(addr) = pieces[0].location else {
        panic!("{pieces:?}")
    };
    // gcc stores `a` at -20(%rbp); the CFA is rbp + 16, so fbreg offset is -36.
    assert_eq!(addr.0, rbp - 20);
    let mut memory = MemoryImage::new();
    let mut bytes = vec![0u8; 128];
    bytes[44..48].copy_from_slice(&41i32.to_le_bytes());
    memory.add(RuntimeAddr(rbp - 64), bytes);
    let value = read_pieces(&pieces, 4, &memory, &regs).unwrap();
    assert_eq!(i32::from_le_bytes(value.try_into().unwrap()), 41);
    // A missing register is an error, not a panic.
    let empty: HashMap<u16, u64> = HashMap::new();
    let ctx = EvalContext {
        registers: &empty,
        ..ctx
    };
    assert!(binary.evaluate_location(expr, Some(fb), &ctx).is_err());
    // Register and stack-value pieces.
    let reg_piece = [symbols::Piece {
        location: PieceLocation::Register(6),
        size_bits: None,
        bit_offset: None,
    }];
    assert_eq!(
        read_pieces(&reg_piece, 8, &memory, &regs).unwrap(),
        rbp.to_le_bytes()
    );
    let _ = FileAddr(0);
}

/// Hand-written expressions through the caller's traits: pieces, stack and implicit
/// values, entry values, DW_OP_addr with a load bias, and a CFA expression.
#[test]
fn pieces_stack_implicit_and_entry_values() {
    let dir = tempfile::tempdir().unwrap();
    let bin = common::build_c(dir.path(), "c/sym_lines.c", &["-g", "-O0"], "gcc-O0");
    let binary = Binary::open(&bin).unwrap();
    let regs: HashMap<u16, u64> = [(0, 0x1122_3344_5566_7788), (7, 0x8000), (5, 99)].into();
    let entry_regs: HashMap<u16, u64> = [(5, 4)].into();
    let mut memory = MemoryImage::new();
    memory.add(RuntimeAddr(0x8000), (0u8..32).collect());
    let ctx = EvalContext {
        memory: &memory,
        registers: &regs,
        bias: LoadBias(0x5555_0000_0000),
        pc: RuntimeAddr(0x5555_0000_1000),
        frame_base: None,
        cfa: None,
        tls: None,
        entry_registers: Some(&entry_regs),
    };
    let eval = |bytes: Vec<u8>| {
        binary.evaluate_location(&symbols::LocationExpr::standalone(bytes), None, &ctx)
    };
    // DW_OP_reg0 DW_OP_piece 4, DW_OP_breg7 8 DW_OP_piece 4
    let pieces = eval(vec![0x50, 0x93, 4, 0x77, 8, 0x93, 4]).unwrap();
    assert_eq!(pieces[0].location, PieceLocation::Register(0));
    assert_eq!(
        pieces[1].location,
        PieceLocation::Memory(RuntimeAddr(0x8008))
    );
    assert_eq!(pieces[1].size_bits, Some(32));
    let bytes = read_pieces(&pieces, 8, &memory, &regs).unwrap();
    assert_eq!(bytes, [0x88, 0x77, 0x66, 0x55, 8, 9, 10, 11]);
    // DW_OP_lit5 DW_OP_stack_value
    let pieces = eval(vec![0x35, 0x9f]).unwrap();
    assert_eq!(
        read_pieces(&pieces, 4, &memory, &regs).unwrap(),
        5i32.to_le_bytes()
    );
    // DW_OP_implicit_value 2 0xab 0xcd
    let pieces = eval(vec![0x9e, 2, 0xab, 0xcd]).unwrap();
    assert_eq!(pieces[0].location, PieceLocation::Value(vec![0xab, 0xcd]));
    // DW_OP_entry_value(DW_OP_reg5) DW_OP_stack_value: rdi as it was on entry.
    let pieces = eval(vec![0xa3, 1, 0x55, 0x9f]).unwrap();
    assert_eq!(
        read_pieces(&pieces, 8, &memory, &regs).unwrap(),
        4u64.to_le_bytes()
    );
    // DW_OP_addr 0x1000: a file address, relocated by the load bias.
    let mut addr = vec![0x03];
    addr.extend(0x1000u64.to_le_bytes());
    let pieces = eval(addr).unwrap();
    assert_eq!(
        pieces[0].location,
        PieceLocation::Memory(RuntimeAddr(0x5555_0000_1000))
    );
    // An empty expression is "optimized out"; DW_OP_deref of unreadable memory errors.
    let pieces = eval(vec![]).unwrap();
    assert_eq!(pieces[0].location, PieceLocation::OptimizedOut);
    assert!(read_pieces(&pieces, 4, &memory, &regs).is_err());
    assert!(eval(vec![0x77, 0x80, 0x01, 0x06]).is_err());
    // A CFA given by an expression: DW_OP_breg7 16.
    let row = symbols::UnwindRow {
        start: FileAddr(0),
        end: FileAddr(1),
        cfa: symbols::CfaRule::Expression(vec![0x77, 16]),
        registers: vec![],
        return_address_register: 16,
    };
    assert_eq!(binary.compute_cfa(&row, &ctx).unwrap(), 0x8010);
}

/// `nm -C`'s address of each data symbol, by its demangled name.
fn nm_addresses(bin: &Path) -> HashMap<String, u64> {
    let out = std::process::Command::new("nm")
        .arg("-C")
        .arg(bin)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut it = l.splitn(3, ' ');
            let addr = u64::from_str_radix(it.next()?, 16).ok()?;
            let _kind = it.next()?;
            Some((it.next()?.to_string(), addr))
        })
        .collect()
}

#[test]
fn cpp_globals_are_found_by_their_qualified_names() {
    let dir = tempfile::tempdir().unwrap();
    // gcc defines a namespace's variables and static members at the top of the unit
    // with DW_AT_specification; DWARF 4 declares static members as DW_TAG_member.
    for (fixture, dwarf) in [
        ("gpp-O0-dwarf5", "-gdwarf-5"),
        ("gpp-O0-dwarf4", "-gdwarf-4"),
    ] {
        let bin = common::build_c(dir.path(), "cpp/expr_scopes.cpp", &["-O0", dwarf], fixture);
        let binary = Binary::open(&bin).unwrap();
        let nm = nm_addresses(&bin);
        for name in [
            "counter",
            "geo::counter",
            "geo::inner::counter",
            "geo::defined_outside",
            "geo::Shape::made",
            "S::total",
            "Box<int>::count",
        ] {
            let found = binary.globals_named(name);
            assert_eq!(found.len(), 1, "{fixture}: {name}: {found:?}");
            let v = &found[0];
            assert_eq!(v.qualified_name.as_deref(), Some(name), "{fixture}");
            let VariableLocation::Expr(e) = &v.location else {
                panic!("{fixture}: {name} has no location: {v:?}");
            };
            let mut addr = vec![0x03];
            addr.extend(nm[name].to_le_bytes());
            assert_eq!(
                e.bytes(),
                addr,
                "{fixture}: {name} is not nm's {:#x}",
                nm[name]
            );
        }
        // A constant member initialized in its class has no address, only its value.
        let sides = binary.globals_named("geo::Shape::sides");
        assert!(
            matches!(sides.first().map(|v| &v.location), Some(VariableLocation::Const(b)) if b.first() == Some(&4)),
            "{fixture}: {sides:?}"
        );
        // No bare name stands for a namespace's variable.
        assert!(
            binary.globals_named("defined_outside").is_empty(),
            "{fixture}"
        );
        assert!(binary.globals_named("total").is_empty(), "{fixture}");
    }
}
