//! The on-disk index cache at the library level: a cache file answers function lookups
//! exactly as the full index does, and no damaged file is ever used (or panics).

// Helpers outside #[test] functions panic on purpose: a broken oracle fails the test.
#![allow(clippy::unwrap_used)]

mod common;

use symbols::{Binary, Function, IndexCache};

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

/// Every function of a C++ program, looked up by its qualified name and by each
/// `::`-suffix of it, is found through the cache file exactly as through the full index.
#[test]
fn a_cache_file_answers_every_suffix_of_cpp_names_as_the_full_index() {
    let dir = tempfile::tempdir().unwrap();
    let bin = common::build_c(
        dir.path(),
        "cpp/stl_more.cpp",
        &["-g", "-O2", "-std=c++20"],
        "stl-O2",
    );
    let (_cache, built, warm) = cached(dir.path(), &bin);
    let index = built.symbol_index();
    let mut queries: Vec<String> = Vec::new();
    for e in index.entries() {
        if e.kind != symbols::SymbolKind::Function || e.range.is_none() {
            continue;
        }
        let name = e.name.to_string();
        queries.push(name.clone());
        for (i, _) in name.match_indices("::") {
            queries.push(name[i + 2..].to_string());
        }
    }
    queries.sort();
    queries.dedup();
    let checked = same_answers(&built, &warm, &queries);
    assert!(checked > 50, "only {checked} names checked");
}

/// A cache under `dir` holding the file of `bin`'s full index; the binary that built
/// it; a fresh one that loaded the file.
fn cached(dir: &std::path::Path, bin: &std::path::Path) -> (IndexCache, Binary, Binary) {
    let cache = IndexCache::new(dir.join("cache"), u64::MAX);
    let built = Binary::open(bin).unwrap();
    built.symbol_index();
    built.store_index_cache(&cache).unwrap();
    let warm = Binary::open(bin).unwrap();
    assert!(warm.load_index_cache(&cache));
    (cache, built, warm)
}

/// Looks every name up through the full index of `built` and the cache file `warm`
/// loaded, asserts the answers are equal, and counts the names with DWARF functions
/// (ELF-only code, `_init`, is not in the cache: it is found through .symtab). The
/// cache answered alone: `warm` built no index.
fn same_answers(built: &Binary, warm: &Binary, names: &[String]) -> usize {
    let mut checked = 0;
    for name in names {
        let full = built.functions_by_name_in_full_index(name).unwrap();
        if full.is_empty() || !full.iter().all(|f| f.from_dwarf) {
            continue;
        }
        let cached = warm.functions_by_index_section(name).unwrap_or_default();
        assert_eq!(key(&cached), key(&full), "{name}");
        checked += 1;
    }
    assert!(
        warm.built_index().is_none(),
        "the answers needed no full index"
    );
    checked
}

#[test]
fn a_cache_file_answers_as_the_full_index_and_damage_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    // -O2: inlined copies, whose units the cache must name too.
    let bin = common::build_c(dir.path(), "c/sym_lines.c", &["-g", "-O2"], "gcc-O2");
    let (cache, built, warm) = cached(dir.path(), &bin);
    let index = built.symbol_index();
    let names: Vec<String> = index
        .entries()
        .filter(|e| e.kind == symbols::SymbolKind::Function && e.range.is_some())
        .map(|e| e.name.to_string())
        .collect();
    assert!(names.len() > 3, "{names:?}");
    let mut queries = names.clone();
    queries.push("square".to_string());
    let checked = same_answers(&built, &warm, &queries);
    assert!(checked > 3, "{checked} DWARF functions checked");

    let file = std::fs::read_dir(cache.dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "tidx"))
        .unwrap();
    let good = std::fs::read(&file).unwrap();
    // Every truncation and a flipped byte at many offsets: rejected, never a panic.
    let step = (good.len() / 97).max(1);
    for at in (0..good.len()).step_by(step) {
        for bytes in [good[..at].to_vec(), {
            let mut b = good.clone();
            b[at] ^= 0x41;
            b
        }] {
            std::fs::write(&file, &bytes).unwrap();
            let fresh = Binary::open(&bin).unwrap();
            assert!(!fresh.load_index_cache(&cache), "damage at {at} accepted");
            assert!(!file.exists(), "a rejected file is removed");
        }
    }
}
