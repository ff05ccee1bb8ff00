//! Loading tests: compressed sections (zlib, zstd, legacy .zdebug), separate debug
//! files (.gnu_debuglink, build-id), laziness, and corrupt input that must not panic.

// Helpers outside #[test] functions panic on purpose: a broken oracle fails the test.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use symbols::{Binary, FileAddr, Line, OpenOptions, SectionStorage, SourceMap};

fn run(cmd: &str, args: &[&str]) {
    let status = Command::new(cmd).args(args).status().unwrap();
    assert!(status.success(), "{cmd} {args:?}");
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A summary of what a binary answers, to compare two builds of the same code.
fn answers(binary: &Binary) -> (Vec<symbols::SourceLocation>, Vec<FileAddr>, Vec<String>) {
    let rows = binary.all_line_rows().unwrap();
    let res = binary
        .resolve_line(
            Path::new("sym_lines.c"),
            Line::new(66).unwrap(),
            &SourceMap::new(),
        )
        .unwrap()
        .unwrap();
    let funcs = binary.functions_by_name("compute").unwrap();
    let mut names: Vec<String> = binary
        .symbol_index()
        .entries()
        .map(|e| e.name.to_string())
        .collect();
    names.sort();
    names.dedup();
    let mut addrs: Vec<FileAddr> = res.locations.iter().map(|l| l.addr).collect();
    addrs.extend(funcs.iter().filter_map(|f| f.breakpoint_addr));
    (rows, addrs, names)
}

#[test]
fn compressed_sections_give_the_same_answers() {
    let dir = tempfile::tempdir().unwrap();
    let plain = common::build_c(dir.path(), "c/sym_lines.c", &["-g", "-O2"], "plain");
    let reference = Binary::open(&plain).unwrap();
    assert_eq!(reference.debug_info_storage(), Some(SectionStorage::Mapped));
    let expected = answers(&reference);
    for (name, flag) in [("zlib", "zlib"), ("zstd", "zstd"), ("zlib-gnu", "zlib-gnu")] {
        let out = dir.path().join(name);
        run(
            "objcopy",
            &[
                &format!("--compress-debug-sections={flag}"),
                s(&plain),
                s(&out),
            ],
        );
        let binary = Binary::open(&out).unwrap();
        assert_eq!(
            binary.debug_info_storage(),
            Some(SectionStorage::Decompressed),
            "{name}"
        );
        assert_eq!(answers(&binary), expected, "{name}");
    }
}

#[test]
fn separate_debug_file_by_debuglink_and_build_id() {
    let dir = tempfile::tempdir().unwrap();
    let full = common::build_c(
        dir.path(),
        "c/sym_lines.c",
        &["-g", "-O0", "-Wl,--build-id"],
        "full",
    );
    let expected = answers(&Binary::open(&full).unwrap());

    // .gnu_debuglink next to the binary.
    let linked = dir.path().join("linked");
    let debug = dir.path().join("linked.debug");
    run("objcopy", &["--only-keep-debug", s(&full), s(&debug)]);
    run(
        "objcopy",
        &[
            "--strip-debug",
            &format!("--add-gnu-debuglink={}", s(&debug)),
            s(&full),
            s(&linked),
        ],
    );
    let binary = Binary::open(&linked).unwrap();
    assert_eq!(binary.info().debug_file.as_deref(), Some(debug.as_path()));
    assert_eq!(answers(&binary), expected);

    // A debuglink target from another build (different build-id) is not used.
    let relinked = dir.path().join("relinked");
    let mismatch_dir = dir.path().join("mismatch");
    std::fs::create_dir_all(&mismatch_dir).unwrap();
    run(
        "objcopy",
        &[
            "--strip-debug",
            &format!("--add-gnu-debuglink={}", s(&debug)),
            s(&full),
            s(&relinked),
        ],
    );
    let moved = mismatch_dir.join("relinked");
    std::fs::rename(&relinked, &moved).unwrap();
    let full2 = common::build_c(
        dir.path(),
        "c/sym_lines.c",
        &["-g", "-O1", "-Wl,--build-id"],
        "full2",
    );
    run(
        "objcopy",
        &[
            "--only-keep-debug",
            s(&full2),
            s(&mismatch_dir.join("linked.debug")),
        ],
    );
    let binary = Binary::open_with(
        &moved,
        &OpenOptions {
            debug_roots: vec![],
            find_debug_file: true,
            lookup: None,
            section_cache: None,
        },
    )
    .unwrap();
    assert!(
        binary.info().debug_file.is_none(),
        "{:?}",
        binary.info().debug_file
    );
    assert!(!binary.info().has_dwarf);

    // build-id under a debug root.
    let stripped = dir.path().join("stripped");
    run("objcopy", &["--strip-debug", s(&full), s(&stripped)]);
    let nodebug = Binary::open_with(
        &stripped,
        &OpenOptions {
            debug_roots: vec![],
            find_debug_file: true,
            lookup: None,
            section_cache: None,
        },
    )
    .unwrap();
    assert!(!nodebug.info().has_dwarf);
    let id = nodebug.info().build_id.clone().unwrap();
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    let root = dir.path().join("debugroot");
    let target: PathBuf = root
        .join(".build-id")
        .join(&hex[..2])
        .join(format!("{}.debug", &hex[2..]));
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    std::fs::copy(&debug, &target).unwrap();
    let binary = Binary::open_with(
        &stripped,
        &OpenOptions {
            debug_roots: vec![root],
            find_debug_file: true,
            lookup: None,
            section_cache: None,
        },
    )
    .unwrap();
    assert_eq!(binary.info().debug_file.as_deref(), Some(target.as_path()));
    assert_eq!(answers(&binary), expected);

    // A file of another build under the build-id path is not used.
    std::fs::copy(mismatch_dir.join("linked.debug"), &target).unwrap();
    let root = target.ancestors().nth(3).unwrap().to_path_buf();
    let binary = Binary::open_with(
        &stripped,
        &OpenOptions {
            debug_roots: vec![root],
            find_debug_file: true,
            lookup: None,
            section_cache: None,
        },
    )
    .unwrap();
    assert!(!binary.info().has_dwarf, "{:?}", binary.info().debug_file);

    // The caller's lookup (debuginfod) is asked last, and its answer is checked too.
    for (file, used) in [(&debug, true), (&mismatch_dir.join("linked.debug"), false)] {
        let lookup = Arc::new(Fixed(file.clone(), Default::default()));
        let binary = Binary::open_with(
            &stripped,
            &OpenOptions {
                debug_roots: vec![],
                find_debug_file: true,
                lookup: Some(lookup.clone()),
                section_cache: None,
            },
        )
        .unwrap();
        assert_eq!(*lookup.1.lock().unwrap(), vec![id.clone()]);
        assert_eq!(binary.info().has_dwarf, used, "{}", file.display());
        if used {
            assert_eq!(answers(&binary), expected);
        }
    }
}

/// A lookup that answers one file and records what it was asked.
#[derive(Debug)]
struct Fixed(PathBuf, std::sync::Mutex<Vec<Vec<u8>>>);

impl symbols::DebugFileLookup for Fixed {
    fn debug_file(&self, build_id: &[u8]) -> Option<PathBuf> {
        self.1.lock().unwrap().push(build_id.to_vec());
        Some(self.0.clone())
    }
}

#[test]
fn pie_and_non_pie_are_told_apart() {
    let dir = tempfile::tempdir().unwrap();
    let pie = common::build_c(dir.path(), "c/sym_lines.c", &["-g", "-fPIE", "-pie"], "pie");
    let nopie = common::build_c(dir.path(), "c/sym_lines.c", &["-g", "-no-pie"], "nopie");
    assert!(Binary::open(&pie).unwrap().info().position_independent);
    let nopie = Binary::open(&nopie).unwrap();
    assert!(!nopie.info().position_independent);
    assert!(nopie.info().entry.0 >= 0x400000);
}

/// sym_lines.c and sym_other.c built into one program of two units.
fn two_units(dir: &Path) -> PathBuf {
    let src = common::samples().join("c/sym_other.c");
    common::build_c(dir, "c/sym_lines.c", &["-g", "-O0", s(&src)], "two-units")
}

/// Resolves a body line of sym_other.c (one location, no DIEs needed).
fn resolve_body_line(binary: &Binary) {
    let res = binary
        .resolve_line(
            Path::new("sym_other.c"),
            Line::new(5).unwrap(),
            &SourceMap::new(),
        )
        .unwrap()
        .unwrap();
    assert_eq!(res.locations.len(), 1);
}

#[test]
fn queries_stay_lazy() {
    let dir = tempfile::tempdir().unwrap();
    let bin = two_units(dir.path());
    let binary = Binary::open(&bin).unwrap();
    let stats = binary.cache_stats();
    assert_eq!(stats.units, 2);
    assert_eq!(
        (stats.parsed_units, stats.line_tables, stats.die_walks),
        (0, 0, 0),
        "open parses no unit"
    );
    resolve_body_line(&binary);
    let stats = binary.cache_stats();
    assert_eq!(
        stats.file_tables, 2,
        "file matching reads line program headers"
    );
    assert_eq!(
        stats.line_tables, 1,
        "only the matching unit's rows are decoded"
    );
    assert_eq!(stats.die_walks, 0, "a body line needs no DIEs");
    assert!(!stats.index_built);
    // A function's first line needs the DIEs of its own unit only.
    let res = binary
        .resolve_line(
            Path::new("sym_other.c"),
            Line::new(4).unwrap(),
            &SourceMap::new(),
        )
        .unwrap()
        .unwrap();
    assert!(res.locations[0].after_prologue);
    assert_eq!(binary.cache_stats().die_walks, 1);
    let reports = std::sync::Mutex::new(Vec::new());
    binary.symbol_index_with_progress(&|done, total| reports.lock().unwrap().push((done, total)));
    let mut reports = reports.into_inner().unwrap();
    reports.sort_unstable();
    assert_eq!(reports, [(1, 2), (2, 2)]);
    assert_eq!(binary.cache_stats().die_walks, 2);
    assert!(binary.cache_stats().index_built);
}

/// A pass over every unit (every file table, the ELF functions' lines, the name table)
/// leaves no unit parsed that it parsed for itself, and keeps the ones a request parsed:
/// a big program's hundreds of units' abbreviations are not kept for the session.
#[test]
fn passes_over_every_unit_keep_only_what_requests_parsed() {
    let dir = tempfile::tempdir().unwrap();
    let bin = two_units(dir.path());
    let binary = Binary::open(&bin).unwrap();
    let files = binary.source_files().unwrap();
    assert!(
        files.iter().any(|f| f.ends_with("sym_other.c")),
        "{files:?}"
    );
    let stats = binary.cache_stats();
    assert_eq!(
        (stats.units, stats.file_tables, stats.parsed_units),
        (2, 2, 0),
        "every file table read, no unit kept: {stats:?}"
    );
    // A request's unit stays: the body line's unit, whose line table is kept.
    resolve_body_line(&binary);
    let stats = binary.cache_stats();
    assert_eq!((stats.parsed_units, stats.line_tables), (1, 1), "{stats:?}");
    let elf = binary.elf_symbol_table().unwrap();
    assert!(elf.symbol_count() > 0);
    binary.build_index_cache(None, &|_, _| {}).unwrap();
    let table = binary.symbol_table().unwrap();
    assert!(
        (0..table.symbol_count()).any(|i| table
            .symbol(i)
            .and_then(|s| table.name(s.name))
            .is_some_and(|n| n.contains("compute"))),
        "the name table lists the program's functions"
    );
    let stats = binary.cache_stats();
    assert_eq!(
        (stats.parsed_units, stats.line_tables, stats.die_walks),
        (1, 1, 0),
        "the passes kept nothing of their own: {stats:?}"
    );
    // And what was dropped is parsed again when asked for.
    assert_eq!(binary.functions_by_name("compute").unwrap().len(), 1);
}

/// A tiny deterministic PRNG (xorshift) so corruption is reproducible.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Runs every query on a (possibly corrupt) file; errors are fine, panics are not.
fn exercise(path: &Path) {
    let Ok(binary) = Binary::open(path) else {
        return;
    };
    let _ = binary.all_line_rows();
    let _ = binary.source_files();
    let _ = binary.resolve_line(
        Path::new("sym_lines.c"),
        Line::new(66).unwrap(),
        &SourceMap::new(),
    );
    let _ = binary.resolve_line(
        Path::new("sym_lines.c"),
        Line::new(61).unwrap(),
        &SourceMap::new(),
    );
    let index = binary.symbol_index();
    let _ = binary.functions_by_name("compute");
    for e in index.entries().take(200) {
        if let Some(r) = &e.range {
            let _ = binary.function_at(r.start);
            let _ = binary.location_for_addr(r.start);
            let _ = binary.scope_at(r.start);
            let _ = binary.unwind_row(r.start);
        }
        if e.kind == symbols::SymbolKind::Type {
            for t in binary.types_by_name(&e.name) {
                let _ = binary.type_info(t);
                let _ = binary.type_name(t);
            }
        }
    }
}

#[test]
fn corrupt_and_truncated_files_do_not_panic() {
    let dir = tempfile::tempdir().unwrap();
    let bin = common::build_c(dir.path(), "c/sym_lines.c", &["-g", "-O2"], "victim");
    let bytes = std::fs::read(&bin).unwrap();
    let victim = dir.path().join("corrupt");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    // Truncations at many points, including inside the headers.
    for i in 0..40u64 {
        let len = (bytes.len() as u64 * i / 40) as usize;
        std::fs::write(&victim, &bytes[..len]).unwrap();
        exercise(&victim);
    }
    // Random byte flips inside each DWARF and CFI section (offsets from readelf).
    let out = Command::new("readelf")
        .args(["-S", "-W"])
        .arg(&bin)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut sections = 0;
    for line in table.lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        let Some(pos) = cols
            .iter()
            .position(|c| c.starts_with(".debug_") || c.starts_with(".eh_frame"))
        else {
            continue;
        };
        // [Nr] Name Type Address Off Size ...
        let off = usize::from_str_radix(cols[pos + 3], 16).unwrap();
        let size = usize::from_str_radix(cols[pos + 4], 16).unwrap();
        if size == 0 {
            continue;
        }
        sections += 1;
        for _ in 0..40 {
            let mut copy = bytes.clone();
            for _ in 0..4 {
                let at = off + (rng.next() as usize % size);
                copy[at] = rng.next() as u8;
            }
            std::fs::write(&victim, &copy).unwrap();
            exercise(&victim);
        }
    }
    assert!(sections >= 6, "{table}");
    // Not an ELF file at all.
    std::fs::write(&victim, b"#!/bin/sh\necho hi\n").unwrap();
    assert!(Binary::open(&victim).is_err());
    assert!(Binary::open(dir.path().join("missing")).is_err());
}
