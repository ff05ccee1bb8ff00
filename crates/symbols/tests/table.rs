//! The name table (issue 27): built one unit at a time, dropping each unit's tables, it is
//! byte for byte the index cache file the full in-memory index writes, and it answers every
//! function, type, global and enumerator lookup as the full index (or a walk of every
//! unit) does — on C at -O0 and -O2, C++ with the standard library at -O2, and Lua built
//! with GCC's link-time optimisation, whose units name inlined functions through other
//! units' DIEs.

// Helpers outside #[test] functions panic on purpose: a broken oracle fails the test.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use symbols::{Binary, Function, IndexCache, SymbolKind};

/// The programs: (name, path), built under `dir`.
fn programs(dir: &Path) -> Vec<(&'static str, PathBuf)> {
    let c = |flags: &[&str], out: &str| {
        let sources = [
            testsupport::sample_path("c/sym_lines.c"),
            testsupport::sample_path("c/sym_other.c"),
        ];
        let bin = dir.join(out);
        testsupport::compile_into("gcc", &sources, flags, &bin);
        bin
    };
    vec![
        ("gcc-O0", c(&["-g", "-O0"], "gcc-O0")),
        ("gcc-O2", c(&["-g", "-O2"], "gcc-O2")),
        (
            "stl-O2",
            common::build_c(
                dir,
                "cpp/stl_more.cpp",
                &["-g", "-O2", "-std=c++20"],
                "stl-O2",
            ),
        ),
        ("lua-lto-O2", lua_lto()),
    ]
}

/// Lua 5.4 built by scripts/real-libs with `-O2 -flto=auto` (shared with the other
/// real-library tests' directory).
fn lua_lto() -> PathBuf {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("../reallibs");
    let status = Command::new(testsupport::repo().join("scripts/real-libs"))
        .arg("lua-lto-O2")
        .env("TANDEM_REALLIBS", &out)
        .status()
        .expect("cannot run scripts/real-libs");
    assert!(status.success(), "scripts/real-libs failed");
    out.join("lua-lto-O2")
}

fn the_file(cache: &IndexCache) -> Vec<u8> {
    let files: Vec<PathBuf> = std::fs::read_dir(cache.dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tidx"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    std::fs::read(&files[0]).unwrap()
}

#[test]
fn the_table_built_unit_by_unit_is_the_file_the_full_index_writes() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bin) in programs(dir.path()) {
        let cache =
            |what: &str| IndexCache::new(dir.path().join(format!("{name}-{what}")), u64::MAX);
        // The full in-memory index, then its file.
        let full = Binary::open(&bin).unwrap();
        full.symbol_index();
        full.store_index_cache(&cache("full")).unwrap();
        // One unit at a time, nothing kept but the table (mapped from the file written).
        let by_unit = Binary::open(&bin).unwrap();
        by_unit
            .build_index_cache(Some(&cache("units")), &|_, _| {})
            .unwrap();
        let stats = by_unit.cache_stats();
        assert!(!stats.index_built, "{name}: no full index was built");
        assert_eq!(stats.die_walks, 0, "{name}: no unit's tables were kept");
        // Without a cache directory the table is built in memory; written afterwards,
        // it is the same file.
        let in_memory = Binary::open(&bin).unwrap();
        in_memory.build_index_cache(None, &|_, _| {}).unwrap();
        in_memory.store_index_cache(&cache("memory")).unwrap();

        let expected = the_file(&cache("full"));
        assert!(expected.len() > 1000, "{name}: {} bytes", expected.len());
        assert!(
            the_file(&cache("units")) == expected,
            "{name}: the table built unit by unit differs from the full index's file"
        );
        assert!(
            the_file(&cache("memory")) == expected,
            "{name}: the table built in memory differs from the full index's file"
        );
    }
}

fn key(f: &[Function]) -> Vec<(String, Vec<u64>)> {
    let mut out: Vec<(String, Vec<u64>)> = f
        .iter()
        .map(|f| {
            let mut addrs: Vec<u64> = f.breakpoint_addrs().iter().map(|a| a.0).collect();
            addrs.sort_unstable();
            (f.name.clone(), addrs)
        })
        .collect();
    out.sort();
    out
}

/// `name` and each of its `::`-suffixes (at every `::`: queries a user may type, some of
/// which split template arguments and must find what the full index finds, nothing).
fn queries_of(name: &str, out: &mut Vec<String>) {
    out.push(name.to_string());
    for (i, _) in name.match_indices("::") {
        out.push(name[i + 2..].to_string());
    }
}

#[test]
fn every_name_is_answered_by_the_table_as_by_the_full_index() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bin) in programs(dir.path()) {
        let cache = IndexCache::new(dir.path().join(format!("{name}-cache")), u64::MAX);
        Binary::open(&bin)
            .unwrap()
            .build_index_cache(Some(&cache), &|_, _| {})
            .unwrap();
        let table = Binary::open(&bin).unwrap();
        assert!(
            table.load_index_cache(&cache),
            "{name}: the file written is read"
        );
        let full = Binary::open(&bin).unwrap();
        let index = full.symbol_index();

        let mut functions = Vec::new();
        let mut types = Vec::new();
        let mut globals = Vec::new();
        for e in index.entries() {
            match e.kind {
                SymbolKind::Function if e.range.is_some() => queries_of(&e.name, &mut functions),
                SymbolKind::Type => {
                    queries_of(&e.name, &mut types);
                    types.push(symbols::names::normalize(&e.name));
                }
                SymbolKind::Variable => globals.push(e.name.to_string()),
                _ => {}
            }
        }
        for list in [&mut functions, &mut types, &mut globals] {
            list.sort();
            list.dedup();
        }
        let mut checked = 0;
        for q in &functions {
            let expected = full.functions_by_name_in_full_index(q).unwrap();
            let found = table.functions_by_name(q).unwrap();
            assert_eq!(key(&found), key(&expected), "{name}: function {q}");
            checked += usize::from(expected.iter().any(|f| f.from_dwarf));
        }
        assert!(checked > 3, "{name}: {checked} function names checked");
        let mut checked = 0;
        for q in &types {
            let expected = full.types_by_name_in_full_index(q);
            assert_eq!(table.types_by_name(q), expected, "{name}: type {q}");
            checked += usize::from(!expected.is_empty());
        }
        assert!(checked > 3, "{name}: {checked} type names checked");
        for q in &globals {
            let expected = full.globals_named_by_walk(q);
            assert_eq!(
                &*table.globals_named(q),
                &expected[..],
                "{name}: global {q}"
            );
        }
        assert!(!globals.is_empty(), "{name}: no global checked");
        let mut enumerators = Vec::new();
        for (qualified, _, _) in full.enumerators_in_full_index() {
            queries_of(&qualified, &mut enumerators);
        }
        enumerators.sort();
        enumerators.dedup();
        for q in &enumerators {
            assert_eq!(
                table.enumerator_named(q),
                full.enumerator_named_in_full_index(q),
                "{name}: enumerator {q}"
            );
        }
        assert!(
            enumerators.len() > 2,
            "{name}: {} enumerators",
            enumerators.len()
        );
        assert!(
            !table.cache_stats().index_built,
            "{name}: the table answered without the full index"
        );
    }
}

/// What the language server reads of an entry (name, kind, declaration, code range and
/// type form), as text: comparable and sortable.
type Listed = String;

fn listed(b: &Binary, e: &symbols::SymbolEntry) -> Listed {
    format!(
        "{} {:?} {:?} {:?} {:?} {:?}",
        e.name,
        e.kind,
        e.decl_file,
        e.decl_line.map(|l| l.get()),
        e.range.as_ref().map(|r| r.start.0..r.end.0),
        b.type_form(e),
    )
}

#[test]
fn the_symbol_table_gives_the_full_index_entries_and_finds_them_by_name() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bin) in programs(dir.path()) {
        let cache = IndexCache::new(dir.path().join(format!("{name}-entries")), u64::MAX);
        let table_binary = Binary::open(&bin).unwrap();
        table_binary
            .build_index_cache(Some(&cache), &|_, _| {})
            .unwrap();
        let table = table_binary.symbol_table().unwrap();
        let full = Binary::open(&bin).unwrap();
        let index = full.symbol_index();

        // The table lists the DWARF entries, not the ELF symbols no DWARF covers.
        let mut expected: Vec<Listed> = index.dwarf_entries().map(|e| listed(&full, &e)).collect();
        let mut found: Vec<Listed> = (0..table.symbol_count())
            .map(|s| {
                listed(
                    &table_binary,
                    &table_binary.table_entry(&table, s, None, true).unwrap(),
                )
            })
            .collect();
        expected.sort();
        found.sort();
        assert_eq!(found.len(), expected.len(), "{name}: symbols");
        assert!(
            found == expected,
            "{name}: the table's entries differ from the full index's"
        );

        let mut queries: Vec<String> = index
            .dwarf_entries()
            .map(|e| e.short_name().to_string())
            .collect();
        queries.sort();
        queries.dedup();
        let dwarf: std::collections::HashSet<Listed> = expected.iter().cloned().collect();
        for q in &queries {
            let mut by_index: Vec<Listed> = index
                .lookup(q)
                .map(|e| listed(&full, &e))
                .filter(|l| dwarf.contains(l))
                .collect();
            let mut by_table: Vec<Listed> = table_binary
                .table_symbols_named(&table, q)
                .into_iter()
                .map(|s| {
                    listed(
                        &table_binary,
                        &table_binary.table_entry(&table, s, None, true).unwrap(),
                    )
                })
                .collect();
            by_index.sort();
            by_table.sort();
            assert!(by_table == by_index, "{name}: entries named {q}");
        }
        assert!(
            queries.len() > 5,
            "{name}: {} names looked up",
            queries.len()
        );
    }
}
