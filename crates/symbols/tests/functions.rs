//! Function lookup tests: by name (C, Rust, C++) against gdb's `break`, and address →
//! function + inlined chain against `addr2line -f -i`.

// Helpers outside #[test] functions panic on purpose: a broken oracle fails the test.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::Command;

use symbols::{Binary, FileAddr};

/// Where gdb plants `break NAME` (all locations).
fn gdb_break_addrs(bin: &Path, name: &str) -> Vec<u64> {
    let out = common::gdb(bin, &[format!("break {name}"), "info breakpoints".into()]);
    let mut addrs: Vec<u64> = out
        .lines()
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            // "1  breakpoint keep y 0x... in f at file:line" or "1.1 y 0x... in f at ..."
            cols.iter()
                .find(|c| c.starts_with("0x"))
                .map(|c| common::hex(c))
        })
        .collect();
    addrs.sort_unstable();
    addrs.dedup();
    addrs
}

fn check_break(binary: &Binary, bin: &Path, query: &str, gdb_name: &str) {
    let funcs = binary.functions_by_name(query).unwrap();
    assert!(!funcs.is_empty(), "{query}: not found");
    let mut ours: Vec<u64> = funcs
        .iter()
        .flat_map(|f| f.breakpoint_addrs())
        .map(|a| a.0)
        .collect();
    ours.sort_unstable();
    ours.dedup();
    let gdb = gdb_break_addrs(bin, gdb_name);
    assert_eq!(ours, gdb, "{query}: {funcs:#?}");
}

#[test]
fn c_functions_by_name_agree_with_gdb_break() {
    let dir = tempfile::tempdir().unwrap();
    for (fixture, flags) in [
        (
            "gcc-O0-dwarf5-nopie",
            vec!["-g", "-O0", "-gdwarf-5", "-no-pie"],
        ),
        (
            "gcc-O0-dwarf4-pie",
            vec!["-g", "-O0", "-gdwarf-4", "-fPIE", "-pie"],
        ),
    ] {
        let bin = common::build_c(dir.path(), "c/sym_lines.c", &flags, fixture);
        let binary = Binary::open(&bin).unwrap();
        for name in ["add", "compute", "main", "square"] {
            check_break(&binary, &bin, name, name);
        }
        let add = &binary.functions_by_name("add").unwrap()[0];
        assert_eq!(add.name, "add");
        assert_eq!(add.decl_line.map(|l| l.get()), Some(54));
        assert!(add.decl_file.as_ref().unwrap().ends_with("c/sym_lines.c"));
    }
}

#[test]
fn inlined_function_breakpoints_cover_every_copy() {
    let dir = tempfile::tempdir().unwrap();
    let bin = common::build_c(
        dir.path(),
        "c/sym_lines.c",
        &["-g", "-O2", "-no-pie"],
        "gcc-O2",
    );
    let binary = Binary::open(&bin).unwrap();
    let square = binary.functions_by_name("square").unwrap();
    assert_eq!(square.len(), 1, "{square:?}");
    assert!(!square[0].inlined_at.is_empty(), "{square:?}");
    let gdb = gdb_break_addrs(&bin, "square");
    for a in &gdb {
        assert!(
            square[0].breakpoint_addrs().contains(&FileAddr(*a)),
            "gdb {a:#x} vs {square:?}"
        );
    }
}

/// `addr2line -f -i` prints, innermost first, function name then file:line for each
/// inlined level; the line of an outer level is the call site.
fn addr2line_chain(bin: &Path, addrs: &[u64]) -> Vec<Vec<(String, u32)>> {
    let args: Vec<String> = addrs.iter().map(|a| format!("{a:#x}")).collect();
    let out = Command::new("addr2line")
        .args(["-f", "-i", "-a", "-e"])
        .arg(bin)
        .args(&args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut result: Vec<Vec<(String, u32)>> = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(l) = lines.next() {
        if l.starts_with("0x") {
            result.push(Vec::new());
            continue;
        }
        let loc = lines.next().unwrap_or("");
        let loc = loc.split(" (discriminator").next().unwrap();
        let line = loc
            .rsplit_once(':')
            .map_or(0, |(_, n)| n.parse().unwrap_or(0));
        result.last_mut().unwrap().push((l.to_string(), line));
    }
    result
}

#[test]
fn inline_chains_agree_with_addr2line() {
    let dir = tempfile::tempdir().unwrap();
    for (fixture, flags) in [
        ("gcc-O2-dwarf5", vec!["-g", "-O2", "-gdwarf-5"]),
        (
            "gcc-O2-dwarf4-nopie",
            vec!["-g", "-O2", "-gdwarf-4", "-no-pie"],
        ),
    ] {
        let bin = common::build_c(dir.path(), "c/sym_lines.c", &flags, fixture);
        let binary = Binary::open(&bin).unwrap();
        let mut addrs: Vec<u64> = binary
            .all_line_rows()
            .unwrap()
            .iter()
            .map(|r| r.row_addr.0)
            .collect();
        addrs.sort_unstable();
        addrs.dedup();
        let oracle = addr2line_chain(&bin, &addrs);
        let mut inlined_seen = 0;
        for (addr, chain) in addrs.iter().zip(oracle) {
            let Some(at) = binary.function_at(FileAddr(*addr)).unwrap() else {
                assert_eq!(chain[0].0, "??", "{fixture} {addr:#x}");
                continue;
            };
            let mut names: Vec<String> = at.inlined.iter().rev().map(|c| c.name.clone()).collect();
            names.push(at.function.name.clone());
            let theirs: Vec<String> = chain.iter().map(|c| c.0.clone()).collect();
            assert_eq!(names, theirs, "{fixture} {addr:#x}");
            // Outer levels report the call site of the level inside them.
            for (k, call) in at.inlined.iter().rev().enumerate() {
                assert_eq!(
                    call.call_line.map_or(0, |l| l.get()),
                    chain[k + 1].1,
                    "{fixture} {addr:#x} level {k}"
                );
            }
            inlined_seen += at.inlined.len();
        }
        assert!(inlined_seen > 0, "{fixture}: no inlined frames seen");
    }
}

/// Every byte of every function of several -O2 programs (inlined calls inside lexical
/// blocks, `.cold` parts, nested inlining): the function and the inlined chain at each
/// address — answered by the unit's address → scope index — equal `addr2line -f -i`'s.
#[test]
fn inline_chains_at_every_address_agree_with_addr2line() {
    let dir = tempfile::tempdir().unwrap();
    let mut inlined_seen = 0;
    let mut checked = 0;
    for (source, flags) in [
        ("c/sym_lines.c", vec!["-g", "-O2", "-gdwarf-5"]),
        ("c/eng_steps.c", vec!["-g", "-O2", "-gdwarf-5"]),
        ("c/live_values.c", vec!["-g", "-O2", "-gdwarf-5"]),
        ("c/jit_cold.c", vec!["-g", "-O2", "-gdwarf-4"]),
        ("c/eng_values.c", vec!["-g", "-O3", "-gdwarf-5"]),
        ("c/sym_callsite.c", vec!["-g", "-O2", "-gdwarf-5"]),
    ] {
        let out = source.trim_start_matches("c/").replace(".c", ".bin");
        let bin = common::build_c(dir.path(), source, &flags, &out);
        let binary = Binary::open(&bin).unwrap();
        let nm = Command::new("nm").arg("-S").arg(&bin).output().unwrap();
        let mut addrs: Vec<u64> = Vec::new();
        for line in String::from_utf8_lossy(&nm.stdout).lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() == 4 && (f[2] == "T" || f[2] == "t") {
                let start = u64::from_str_radix(f[0], 16).unwrap();
                let size = u64::from_str_radix(f[1], 16).unwrap();
                addrs.extend(start..start + size);
            }
        }
        addrs.sort_unstable();
        addrs.dedup();
        assert!(addrs.len() > 50, "{source}: {} addresses", addrs.len());
        let oracle = addr2line_chain(&bin, &addrs);
        assert_eq!(oracle.len(), addrs.len());
        for (addr, chain) in addrs.iter().zip(oracle) {
            let at = binary.function_at(FileAddr(*addr)).unwrap();
            let Some(at) = at.filter(|a| a.function.from_dwarf) else {
                // Code without DWARF (`_start`): addr2line names it from the symbol
                // table, with no line.
                assert_eq!(chain.len(), 1, "{source} {addr:#x}");
                assert_eq!(chain[0].1, 0, "{source} {addr:#x}: {chain:?}");
                continue;
            };
            let mut names: Vec<String> = at.inlined.iter().rev().map(|c| c.name.clone()).collect();
            names.push(at.function.name.clone());
            let theirs: Vec<String> = chain.iter().map(|c| c.0.clone()).collect();
            assert_eq!(names, theirs, "{source} {addr:#x}");
            for (k, call) in at.inlined.iter().rev().enumerate() {
                assert_eq!(
                    call.call_line.map_or(0, |l| l.get()),
                    chain[k + 1].1,
                    "{source} {addr:#x} level {k}"
                );
            }
            inlined_seen += at.inlined.len();
            checked += 1;
        }
    }
    assert!(checked > 1000, "{checked} addresses checked");
    assert!(inlined_seen > 100, "{inlined_seen} inlined levels seen");
}

#[test]
fn rust_functions_by_qualified_and_short_names() {
    let dir = tempfile::tempdir().unwrap();
    let bin = common::build_rust(dir.path(), "rust/sym_rust.rs", &[], "rustc-g");
    let binary = Binary::open(&bin).unwrap();
    for (query, expected) in [
        (
            "sym_rust::geometry::distance",
            "sym_rust::geometry::distance",
        ),
        ("geometry::distance", "sym_rust::geometry::distance"),
        ("Point::new", "sym_rust::geometry::Point::new"),
        (
            "geometry::Point::manhattan",
            "sym_rust::geometry::Point::manhattan",
        ),
        ("sym_rust::describe", "sym_rust::describe"),
        ("sym_rust::main", "sym_rust::main"),
    ] {
        let found = binary.functions_by_name(query).unwrap();
        assert_eq!(found.len(), 1, "{query}: {found:#?}");
        assert_eq!(found[0].name, expected);
        check_break(&binary, &bin, query, expected);
    }
    // A plain name finds every function of that name, here also one in std's memchr.
    let found = binary.functions_by_name("distance").unwrap();
    assert!(
        found
            .iter()
            .any(|f| f.name == "sym_rust::geometry::distance"),
        "{found:#?}"
    );
    assert!(found.len() >= 2);
    // v0 mangling demangles to `<path::Type>::method`; queries still resolve.
    let bin = common::build_rust(
        dir.path(),
        "rust/sym_rust.rs",
        &["-C", "symbol-mangling-version=v0"],
        "rustc-g-v0",
    );
    let binary = Binary::open(&bin).unwrap();
    let found = binary.functions_by_name("Point::manhattan").unwrap();
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].name, "sym_rust::geometry::Point::manhattan");
    check_break(
        &binary,
        &bin,
        "geometry::distance",
        "sym_rust::geometry::distance",
    );
}

#[test]
fn cpp_functions_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let bin = common::build_c(dir.path(), "c/sym_cpp.cpp", &["-g", "-O0"], "gxx-O0");
    let binary = Binary::open(&bin).unwrap();
    for (query, expected, gdb_name) in [
        ("geo::Shape::area", "geo::Shape::area", "geo::Shape::area"),
        ("Shape::count", "geo::Shape::count", "geo::Shape::count"),
        ("geo::helper", "geo::helper", "geo::helper"),
        ("helper", "geo::helper", "geo::helper"),
        ("main", "main", "main"),
    ] {
        let found = binary.functions_by_name(query).unwrap();
        assert_eq!(found.len(), 1, "{query}: {found:#?}");
        assert_eq!(found[0].name, expected);
        check_break(&binary, &bin, query, gdb_name);
    }
}

#[test]
fn symtab_fallback_without_dwarf() {
    let dir = tempfile::tempdir().unwrap();
    let bin = common::build_c(
        dir.path(),
        "c/sym_lines.c",
        &["-O0", "-no-pie"],
        "gcc-nodebug",
    );
    let binary = Binary::open(&bin).unwrap();
    assert!(!binary.info().has_dwarf);
    let add = binary.functions_by_name("add").unwrap();
    assert_eq!(add.len(), 1);
    assert!(!add[0].from_dwarf);
    let out = common::gdb(&bin, &["info address add".into()]);
    let pos = out.find(" is at ").unwrap();
    assert_eq!(add[0].entry().unwrap().0, common::hex(&out[pos + 7..]));
    let at = binary
        .function_at(FileAddr(add[0].entry().unwrap().0 + 2))
        .unwrap()
        .unwrap();
    assert_eq!(at.function.name, "add");
    let index = binary.symbol_index();
    assert!(index.lookup("compute").next().is_some());
}

#[test]
fn symbol_index_lists_functions_globals_and_types() {
    let dir = tempfile::tempdir().unwrap();
    let bin = common::build_c(dir.path(), "c/sym_lines.c", &["-g", "-O0"], "gcc-O0");
    let binary = Binary::open(&bin).unwrap();
    let index = binary.symbol_index();
    let find = |name: &str, kind| index.entries().find(|e| &*e.name == name && e.kind == kind);
    let compute = find("compute", symbols::SymbolKind::Function).unwrap();
    assert_eq!(compute.decl_line.unwrap().get(), 61);
    assert!(compute.range.is_some());
    let g = find("global_counter", symbols::SymbolKind::Variable).unwrap();
    assert!(g.range.is_some());
    assert!(find("scale", symbols::SymbolKind::Variable).is_some());
    assert!(find("Shape", symbols::SymbolKind::Type).is_some());
    assert!(find("binop_fn", symbols::SymbolKind::Type).is_some());
    assert!(index.search("COMPUT").any(|e| &*e.name == "compute"));
}

/// Template instantiations: a function name and a line inside the template both bind
/// every instantiation, as gdb's `break` does.
#[test]
fn cpp_template_instantiations() {
    let dir = tempfile::tempdir().unwrap();
    for flags in [vec!["-g", "-O0"], vec!["-g", "-O0", "-gdwarf-4", "-no-pie"]] {
        let bin = common::build_c(dir.path(), "c/sym_cpp.cpp", &flags, "gxx-template");
        let binary = Binary::open(&bin).unwrap();
        let twice = binary.functions_by_name("geo::twice").unwrap();
        assert_eq!(twice.len(), 2, "{twice:#?}");
        assert!(twice.iter().all(|f| f.name == "geo::twice"));
        check_break(&binary, &bin, "geo::twice", "geo::twice");
        let source = std::fs::read_to_string(common::samples().join("c/sym_cpp.cpp")).unwrap();
        let line = source
            .lines()
            .position(|l| l.contains("return v + v;"))
            .unwrap() as u32
            + 1;
        let res = binary
            .resolve_line(
                Path::new("sym_cpp.cpp"),
                symbols::Line::new(line).unwrap(),
                &symbols::SourceMap::new(),
            )
            .unwrap()
            .unwrap();
        let ours: Vec<u64> = res.locations.iter().map(|l| l.addr.0).collect();
        assert_eq!(ours, gdb_break_addrs(&bin, &format!("sym_cpp.cpp:{line}")));
        assert_eq!(ours.len(), 2);
    }
}

/// libc's functions are found by ELF symbol without building libc's whole symbol
/// index; the breakpoint address agrees with gdb's `break puts` on the library.
#[test]
fn functions_by_symbol_name_in_libc_agree_with_gdb() {
    let out = Command::new("gcc")
        .arg("-print-file-name=libc.so.6")
        .output()
        .unwrap();
    let libc = Path::new(String::from_utf8_lossy(&out.stdout).trim())
        .canonicalize()
        .unwrap();
    let binary = Binary::open(&libc).unwrap();
    let found = binary.functions_by_symbol_name("puts").unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    let ours: Vec<u64> = found[0].breakpoint_addrs().iter().map(|a| a.0).collect();
    assert_eq!(ours, gdb_break_addrs(&libc, "puts"));
    assert!(binary
        .functions_by_symbol_name("no_such_function_here")
        .unwrap()
        .is_empty());
}
