//! Line table tests against binutils addr2line and gdb's `info line` / `break`.

// Helpers outside #[test] functions panic on purpose: a broken oracle fails the test.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;

use symbols::{Binary, FileAddr, Line, LineResolution, SourceMap};

/// A fresh binary answers address → line questions from single sequences
/// (`seqs.rs`) exactly as from the whole tables, without building any whole table.
fn check_single_sequences(bin: &Path, fixture: &str) {
    let whole = Binary::open(bin).unwrap();
    let rows = whole.all_line_rows().unwrap();
    let mut addrs: Vec<u64> = rows.iter().map(|r| r.row_addr.0).collect();
    addrs.sort_unstable();
    addrs.dedup();
    let lazy = Binary::open(bin).unwrap();
    for &addr in &addrs {
        let at = FileAddr(addr);
        assert_eq!(
            lazy.location_for_addr(at).unwrap(),
            whole.location_for_addr(at).unwrap(),
            "{fixture}: location at {addr:#x}"
        );
        assert_eq!(
            lazy.frame_location_for_addr(at).unwrap(),
            whole.frame_location_for_addr(at).unwrap(),
            "{fixture}: frame location at {addr:#x}"
        );
    }
    let stats = lazy.cache_stats();
    assert_eq!(
        stats.line_tables, 0,
        "{fixture}: whole line tables were built: {stats:?}"
    );
    assert!(stats.single_sequences > 0, "{fixture}: {stats:?}");
}

/// Every row of every line table maps to the same file:line as addr2line says.
fn check_addr2line(bin: &Path, fixture: &str) {
    let binary = Binary::open(bin).unwrap();
    let rows = binary.all_line_rows().unwrap();
    assert!(rows.len() > 20, "{fixture}: too few rows");
    let mut addrs: Vec<u64> = rows.iter().map(|r| r.row_addr.0).collect();
    addrs.sort_unstable();
    addrs.dedup();
    let oracle = common::addr2line(bin, &addrs);
    let mut checked = 0;
    for (addr, (file, line)) in addrs.iter().zip(oracle) {
        let ours = binary.location_for_addr(FileAddr(*addr)).unwrap().unwrap();
        assert_eq!(
            ours.line.map_or(0, Line::get),
            line,
            "{fixture}: line at {addr:#x} (ours {ours:?}, addr2line {file}:{line})"
        );
        if line != 0 {
            assert_eq!(
                ours.file,
                symbols::lines::normalize_path(Path::new(&file)),
                "{fixture}: file at {addr:#x}"
            );
        }
        checked += 1;
    }
    assert!(checked > 5);
}

#[test]
fn addresses_agree_with_addr2line_for_gcc_matrix() {
    let dir = tempfile::tempdir().unwrap();
    for (fixture, flags) in common::c_matrix() {
        let mut all = vec!["-g"];
        all.extend(flags);
        let bin = common::build_c(dir.path(), "c/sym_lines.c", &all, fixture);
        check_addr2line(&bin, fixture);
        check_single_sequences(&bin, fixture);
    }
}

#[test]
fn addresses_agree_with_addr2line_for_rustc_and_gxx() {
    let dir = tempfile::tempdir().unwrap();
    let bin = common::build_rust(dir.path(), "rust/sym_rust.rs", &[], "rustc-g");
    check_addr2line(&bin, "rustc-g");
    check_single_sequences(&bin, "rustc-g");
    let bin = common::build_c(dir.path(), "c/sym_cpp.cpp", &["-g", "-O1"], "gxx-O1");
    check_addr2line(&bin, "gxx-O1");
    check_single_sequences(&bin, "gxx-O1");
}

/// Parses gdb's `info line` answers: Some((line_has_code, address)) per query.
fn gdb_info_lines(bin: &Path, file: &str, lines: &[u32]) -> Vec<Vec<(bool, u64)>> {
    let cmds: Vec<String> = lines
        .iter()
        .flat_map(|l| [format!("echo @@{l}\\n"), format!("info line {file}:{l}")])
        .collect();
    let out = common::gdb(bin, &cmds);
    let mut result = vec![Vec::new(); lines.len()];
    let mut current = None;
    for text in out.lines() {
        if let Some(n) = text.strip_prefix("@@") {
            current = lines.iter().position(|l| l.to_string() == n);
            continue;
        }
        let Some(i) = current else { continue };
        if let Some(pos) = text.find("starts at address ") {
            result[i].push((true, common::hex(&text[pos + 18..])));
        } else if let Some(pos) = text.find("is at address ") {
            result[i].push((false, common::hex(&text[pos + 14..])));
        }
    }
    result
}

fn check_gdb_info_line(bin: &Path, fixture: &str) {
    let binary = Binary::open(bin).unwrap();
    let source = common::samples().join("c/sym_lines.c");
    let count = std::fs::read_to_string(&source).unwrap().lines().count() as u32;
    let lines: Vec<u32> = (1..=count).collect();
    let oracle = gdb_info_lines(bin, "sym_lines.c", &lines);
    let mut with_code = 0;
    for (line, gdb) in lines.iter().zip(oracle) {
        let ours = binary
            .resolve_line(
                Path::new("sym_lines.c"),
                Line::new(*line).unwrap(),
                &SourceMap::new(),
            )
            .unwrap();
        if gdb.is_empty() {
            // gdb: out of range.
            assert!(
                ours.is_none(),
                "{fixture}:{line}: gdb has nothing, we have {ours:?}"
            );
            continue;
        }
        let ours =
            ours.unwrap_or_else(|| panic!("{fixture}:{line}: gdb has {gdb:x?}, we have nothing"));
        let our_addrs: Vec<u64> = ours.locations.iter().map(|l| l.line_addr.0).collect();
        if ours.moved() {
            assert!(
                gdb.iter().all(|g| !g.0),
                "{fixture}:{line}: we moved to {} but gdb has code {gdb:x?}",
                ours.line
            );
        }
        if gdb.iter().all(|g| g.0) {
            with_code += 1;
            assert!(
                !ours.moved(),
                "{fixture}:{line}: gdb says the line has code, we moved to {}",
                ours.line
            );
            // `info line` prints the first location only; `break` shows all of them
            // (checked by `breakpoints_agree_with_gdb_break`).
            for (_, addr) in &gdb {
                assert!(
                    our_addrs.contains(addr),
                    "{fixture}:{line}: gdb {addr:#x} not in ours {our_addrs:x?}"
                );
            }
        } else {
            // gdb reports the first address bound for the line (its own, or the next
            // line's), and whether that address starts the line's own code.
            let (_, addr) = gdb[0];
            assert!(
                our_addrs.contains(&addr),
                "{fixture}:{line}: gdb next-line {addr:#x} not in ours {our_addrs:x?}"
            );
        }
    }
    assert!(
        with_code > if fixture.contains("O0") { 15 } else { 3 },
        "{fixture}: only {with_code} lines with code"
    );
}

#[test]
fn line_addresses_agree_with_gdb_info_line() {
    let dir = tempfile::tempdir().unwrap();
    for (fixture, flags) in common::c_matrix() {
        let mut all = vec!["-g"];
        all.extend(flags);
        let bin = common::build_c(dir.path(), "c/sym_lines.c", &all, fixture);
        check_gdb_info_line(&bin, fixture);
    }
}

/// Where gdb plants `break sym_lines.c:N` for every line N: requested line → addresses.
fn gdb_breaks(bin: &Path, lines: &[u32]) -> Vec<Vec<u64>> {
    let mut cmds: Vec<String> = lines
        .iter()
        .flat_map(|l| [format!("echo @@{l}\\n"), format!("break sym_lines.c:{l}")])
        .collect();
    cmds.push("echo @@table\\n".into());
    cmds.push("info breakpoints".into());
    let out = common::gdb(bin, &cmds);
    let mut number_to_line = std::collections::HashMap::new();
    let mut current = None;
    let mut in_table = false;
    let mut result = vec![Vec::new(); lines.len()];
    for text in out.lines() {
        if let Some(n) = text.strip_prefix("@@") {
            in_table = n == "table";
            current = lines.iter().position(|l| l.to_string() == n);
            continue;
        }
        if !in_table {
            if let (Some(i), Some(rest)) = (current, text.strip_prefix("Breakpoint ")) {
                let k: String = rest.chars().take_while(char::is_ascii_digit).collect();
                number_to_line.insert(k, i);
            }
            continue;
        }
        let cols: Vec<&str> = text.split_whitespace().collect();
        let Some(addr) = cols.iter().find(|c| c.starts_with("0x")) else {
            continue;
        };
        let k = cols[0].split('.').next().unwrap_or("");
        if let Some(&i) = number_to_line.get(k) {
            result[i].push(common::hex(addr));
        }
    }
    for r in &mut result {
        r.sort_unstable();
        r.dedup();
    }
    result
}

/// Breakpoint addresses for every line of the sample (after the prologue on a
/// function's first line, every inlined copy, one per block) agree with where gdb
/// plants `break FILE:LINE`.
#[test]
fn breakpoints_agree_with_gdb_break() {
    let dir = tempfile::tempdir().unwrap();
    let source = common::samples().join("c/sym_lines.c");
    let count = std::fs::read_to_string(&source).unwrap().lines().count() as u32;
    let lines: Vec<u32> = (1..=count).collect();
    for (fixture, flags) in common::c_matrix() {
        let mut all = vec!["-g"];
        all.extend(flags);
        let bin = common::build_c(dir.path(), "c/sym_lines.c", &all, fixture);
        let binary = Binary::open(&bin).unwrap();
        let oracle = gdb_breaks(&bin, &lines);
        let mut skipped = 0;
        let mut compared = 0;
        for (line, gdb) in lines.iter().zip(oracle) {
            let res = binary
                .resolve_line(
                    Path::new("sym_lines.c"),
                    Line::new(*line).unwrap(),
                    &SourceMap::new(),
                )
                .unwrap();
            let ours: Vec<u64> = res
                .iter()
                .flat_map(|r| r.locations.iter().map(|l| l.addr.0))
                .collect();
            assert_eq!(ours, gdb, "{fixture}:{line}: ours {res:?}");
            compared += usize::from(!gdb.is_empty());
            skipped += res
                .iter()
                .flat_map(|r| &r.locations)
                .filter(|l| l.after_prologue)
                .count();
        }
        assert!(compared > 20, "{fixture}: only {compared} lines compared");
        if fixture.contains("O0") {
            assert!(skipped >= 3, "{fixture}: prologue skipping never happened");
        } else {
            // gcc -O2 functions are frameless: gdb does not skip anything there.
            assert_eq!(skipped, 0, "{fixture}");
        }
    }
}

/// Resolving a whole file at once answers what `resolve_line` answers for each line, C at
/// every optimisation level (inlined copies, several blocks per line) and Rust.
#[test]
fn whole_file_resolution_agrees_with_resolve_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut builds: Vec<(std::path::PathBuf, &str)> = common::c_matrix()
        .into_iter()
        .map(|(fixture, flags)| {
            let mut all = vec!["-g"];
            all.extend(flags);
            (
                common::build_c(dir.path(), "c/sym_lines.c", &all, fixture),
                "c/sym_lines.c",
            )
        })
        .collect();
    builds.push((
        common::build_rust(dir.path(), "rust/sym_rust.rs", &[], "rustc-g"),
        "rust/sym_rust.rs",
    ));
    let none = SourceMap::new();
    for (bin, sample) in builds {
        let binary = Binary::open(&bin).unwrap();
        let file = Path::new(sample);
        let all = binary.resolve_file_lines(file, &none).unwrap();
        assert!(all.len() > 10, "{sample}: only {} lines", all.len());
        assert!(all.windows(2).all(|w| w[0].line < w[1].line));
        let count = std::fs::read_to_string(common::samples().join(sample))
            .unwrap()
            .lines()
            .count() as u32;
        for n in 1..=count + 1 {
            let line = Line::new(n).unwrap();
            let one = binary.resolve_line(file, line, &none).unwrap();
            let from_all = all.iter().find(|r| r.line >= line).map(|r| LineResolution {
                requested: line,
                ..r.clone()
            });
            assert_eq!(one, from_all, "{}:{n}", bin.display());
        }
    }
}

#[test]
fn blank_line_moves_to_next_line_with_code() {
    let dir = tempfile::tempdir().unwrap();
    let bin = common::build_c(dir.path(), "c/sym_lines.c", &["-g", "-O0"], "gcc-O0");
    let binary = Binary::open(&bin).unwrap();
    let source = std::fs::read_to_string(common::samples().join("c/sym_lines.c")).unwrap();
    let blank = source
        .lines()
        .position(|l| l.contains("int sum = a + b;"))
        .unwrap() as u32
        + 2;
    let res = binary
        .resolve_line(
            Path::new("c/sym_lines.c"),
            Line::new(blank).unwrap(),
            &SourceMap::new(),
        )
        .unwrap()
        .unwrap();
    assert!(res.moved());
    assert_eq!(res.line.get(), blank + 1);
    let lines = binary
        .lines_with_code(Path::new("sym_lines.c"), &SourceMap::new())
        .unwrap();
    assert!(!lines.contains(&Line::new(blank).unwrap()));
    assert!(lines.contains(&Line::new(blank + 1).unwrap()));
}

#[test]
fn files_match_by_absolute_path_suffix_and_source_map() {
    let dir = tempfile::tempdir().unwrap();
    let bin = common::build_c(dir.path(), "c/sym_lines.c", &["-g", "-O0"], "gcc-O0");
    let binary = Binary::open(&bin).unwrap();
    let abs = common::samples().join("c/sym_lines.c");
    let line = Line::new(58).unwrap();
    let none = SourceMap::new();
    let by_abs = binary.resolve_line(&abs, line, &none).unwrap().unwrap();
    let by_suffix = binary
        .resolve_line(Path::new("samples/c/sym_lines.c"), line, &none)
        .unwrap()
        .unwrap();
    assert_eq!(by_abs, by_suffix);
    assert!(binary
        .resolve_line(Path::new("/elsewhere/c/sym_lines.c"), line, &none)
        .unwrap()
        .is_none());
    assert!(binary
        .resolve_line(Path::new("ym_lines.c"), line, &none)
        .unwrap()
        .is_none());
    let mut map = SourceMap::new();
    map.add(common::samples(), "/workspace/samples");
    let mapped = binary
        .resolve_line(Path::new("/workspace/samples/c/sym_lines.c"), line, &map)
        .unwrap()
        .unwrap();
    assert_eq!(mapped.locations[0].addr, by_abs.locations[0].addr);
    assert_eq!(
        mapped.locations[0].file,
        Path::new("/workspace/samples/c/sym_lines.c")
    );
}

/// The rows of one function, as the engine uses them to step, match the line table
/// that addr2line reads.
#[test]
fn line_rows_of_a_function() {
    let dir = tempfile::tempdir().unwrap();
    let bin = common::build_c(dir.path(), "c/sym_lines.c", &["-g", "-O0"], "gcc-O0");
    let binary = Binary::open(&bin).unwrap();
    let compute = &binary.functions_by_name("compute").unwrap()[0];
    let range = compute.ranges[0].clone();
    let rows = binary.line_rows(range.clone()).unwrap();
    assert!(rows.len() > 5);
    assert_eq!(rows[0].addr, range.start);
    assert!(rows.iter().all(|r| range.contains(&r.addr)));
    let addrs: Vec<u64> = rows.iter().map(|r| r.addr.0).collect();
    let oracle = common::addr2line(&bin, &addrs);
    for (row, (_, line)) in rows.iter().zip(oracle) {
        // addr2line reports the last row at an address; compare those.
        if rows.iter().rfind(|r| r.addr == row.addr) == Some(row) {
            assert_eq!(row.line.map_or(0, Line::get), line, "{row:?}");
        }
    }
}

/// gdb's `info line *ADDR` for each address: the line it reports, when it reports one.
fn gdb_lines_at(bin: &Path, addrs: &[u64]) -> Vec<Option<u32>> {
    let cmds: Vec<String> = addrs
        .iter()
        .flat_map(|a| [format!("echo @@{a:#x}\\n"), format!("info line *{a:#x}")])
        .collect();
    let out = common::gdb(bin, &cmds);
    let mut result = vec![None; addrs.len()];
    let mut current = None;
    for text in out.lines() {
        if let Some(a) = text.strip_prefix("@@") {
            current = addrs.iter().position(|x| format!("{x:#x}") == a);
            continue;
        }
        let (Some(i), Some(rest)) = (current, text.strip_prefix("Line ")) else {
            continue;
        };
        if let Some(n) = rest.split_whitespace().next().and_then(|n| n.parse().ok()) {
            result[i] = Some(n);
        }
    }
    result
}

/// Frames follow gdb's rule (the last statement row at an address), checked on every
/// row address of optimised builds, where non-statement rows share addresses.
#[test]
fn frame_locations_agree_with_gdb() {
    let dir = tempfile::tempdir().unwrap();
    for (fixture, flags) in common::c_matrix() {
        if !flags.contains(&"-O2") {
            continue;
        }
        let mut all = vec!["-g"];
        all.extend(flags);
        let bin = common::build_c(dir.path(), "c/sym_lines.c", &all, fixture);
        let binary = Binary::open(&bin).unwrap();
        let mut addrs: Vec<u64> = binary
            .all_line_rows()
            .unwrap()
            .iter()
            .map(|r| r.row_addr.0)
            .collect();
        addrs.sort_unstable();
        addrs.dedup();
        let oracle = gdb_lines_at(&bin, &addrs);
        let mut checked = 0;
        for (addr, gdb_line) in addrs.iter().zip(oracle) {
            let Some(gdb_line) = gdb_line.filter(|l| *l != 0) else {
                continue;
            };
            let ours = binary.frame_location_for_addr(FileAddr(*addr)).unwrap();
            let ours = ours.and_then(|l| l.line).map_or(0, Line::get);
            assert_eq!(ours, gdb_line, "{fixture}: frame line at {addr:#x}");
            checked += 1;
        }
        assert!(checked > 20, "{fixture}: only {checked} addresses checked");
    }
}

/// An address no unit declares (`_start`, from the C runtime's objects without DWARF)
/// has no line, as addr2line and gdb say, and finding that out reads no line program:
/// only a unit that declares no range at all could hold it.
#[test]
fn an_address_outside_every_unit_reads_no_line_program() {
    let dir = tempfile::tempdir().unwrap();
    let bin = common::build_c(dir.path(), "c/sym_lines.c", &["-g", "-O0"], "gcc-O0");
    let nm = std::process::Command::new("nm").arg(&bin).output().unwrap();
    let start = String::from_utf8_lossy(&nm.stdout)
        .lines()
        .find_map(|l| l.strip_suffix(" T _start").map(common::hex))
        .expect("_start in nm");
    let (file, line) = common::addr2line(&bin, &[start]).remove(0);
    assert_eq!(line, 0, "addr2line gives _start a line ({file}:{line})");
    let binary = Binary::open(&bin).unwrap();
    assert_eq!(binary.location_for_addr(FileAddr(start)).unwrap(), None);
    assert_eq!(
        binary.frame_location_for_addr(FileAddr(start)).unwrap(),
        None
    );
    assert!(binary
        .line_rows(FileAddr(start)..FileAddr(start + 16))
        .unwrap()
        .is_empty());
    let stats = binary.cache_stats();
    assert_eq!(
        (stats.file_tables, stats.line_tables, stats.single_sequences),
        (0, 0, 0),
        "{stats:?}"
    );
}
