//! The on-disk index cache (issue #27): a cold session on the generated C++ program
//! (`scripts/gen-big-cpp --size ci`) writes what its background index learned to
//! `$XDG_CACHE_HOME/tandem`; the next session on the same build reads it instead of
//! building the index again. Each test has its own scratch cache directory and reads
//! tandem's debug log (target `tandem::cache`: "index cache hit", "... miss",
//! "... rejected", "... written", "... evicted").
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime};

use serde_json::json;
use support::dap::{scratch_dir, DapClient};
use support::{Peer, Protocol};

fn generated() -> PathBuf {
    let run = Command::new("python3")
        .arg(testsupport::repo().join("scripts/gen-big-cpp"))
        .args(["--size", "ci"])
        .output()
        .expect("running scripts/gen-big-cpp");
    assert!(
        run.status.success(),
        "gen-big-cpp failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let path = String::from_utf8(run.stdout).unwrap();
    PathBuf::from(path.lines().last().unwrap().trim())
}

/// The generated program (built once, cached by the script, shared with big_binary).
fn program() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(generated)
}

/// A copy of it without a build-id (keyed by path, size and mtime), whose cache file is
/// another build's.
fn other_program() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let copy = scratch_dir("cache-other-build").join("big-no-build-id");
        let run = Command::new("objcopy")
            .args(["--remove-section", ".note.gnu.build-id"])
            .arg(program())
            .arg(&copy)
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        copy
    })
}

/// Text without ANSI colour sequences (the log is coloured).
fn plain(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn cache_files(cache: &Path) -> Vec<PathBuf> {
    let dir = cache.join("tandem");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    out.sort();
    out
}

fn index_files(cache: &Path) -> Vec<PathBuf> {
    cache_files(cache)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "tidx"))
        .collect()
}

fn start(binary: &Path, cache: &Path, envs: &[(&str, &str)]) -> DapClient {
    let cache_env = cache.display().to_string();
    let mut all = vec![("XDG_CACHE_HOME", cache_env.as_str())];
    all.extend_from_slice(envs);
    let mut c = DapClient::with_peer(Peer::spawn(Protocol::Dap, &[], &all));
    c.initialize_with(json!({"supportsProgressReporting": true}));
    c.ok("launch", json!({"program": binary}));
    c
}

fn finish(mut c: DapClient) -> String {
    let r = c.request("disconnect", json!({}));
    assert_eq!(r["success"], true, "{r}");
    c.peer.wait_exit(Duration::from_secs(20));
    plain(&c.peer.stderr())
}

/// A cold session: it builds the index in the background and writes the cache file
/// before it ends. Returns its log.
fn cold_session(binary: &Path, cache: &Path, envs: &[(&str, &str)]) -> String {
    let c = start(binary, cache, envs);
    let deadline = Instant::now() + Duration::from_secs(120);
    while !plain(&c.peer.stderr()).contains("index cache written") {
        assert!(
            Instant::now() < deadline,
            "no cache written; log:\n{}",
            c.peer.stderr()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    finish(c)
}

/// The units of `binary` whose DIEs requests walked so far, from the log.
fn walks(log: &str, binary: &Path) -> usize {
    let name = format!("path={} ", binary.display());
    log.lines()
        .filter(|l| l.contains("a request walked a unit's DIEs") && l.contains(&name))
        .count()
}

/// A warm-or-cold session that sets a breakpoint on a function no ELF symbol has, runs
/// to it and returns (its log, the units setting it walked, the stop's top frame name).
fn break_session(binary: &Path, cache: &Path) -> (String, usize, String) {
    let mut c = start(binary, cache, &[]);
    let body = c.ok(
        "setFunctionBreakpoints",
        json!({"breakpoints": [{"name": "big::u93::local_step93"}]}),
    );
    assert_eq!(body["breakpoints"][0]["verified"], true, "{body}");
    let walked = walks(&plain(&c.peer.stderr()), binary);
    c.ok("configurationDone", json!({}));
    let stop = c.event("stopped");
    let tid = stop["body"]["threadId"].as_i64().unwrap();
    let frames = c.frames(tid);
    let top = frames[0]["name"].as_str().unwrap().to_string();
    (finish(c), walked, top)
}

#[test]
fn a_second_session_hits_the_cache_instead_of_building_the_index() {
    let cache = scratch_dir("cache-hit");
    let cold = cold_session(program(), &cache, &[]);
    assert!(cold.contains("index cache miss"), "{cold}");
    assert!(cold.contains("background index built"));
    assert_eq!(index_files(&cache).len(), 1, "{:?}", cache_files(&cache));

    let started = Instant::now();
    let (warm, walked, top) = break_session(program(), &cache);
    let elapsed = started.elapsed();
    assert!(warm.contains("index cache hit"), "{warm}");
    assert!(
        !warm.contains("background index built"),
        "a warm session builds no index"
    );
    assert!(!warm.contains("index cache written"));
    // The cache names the one unit that inlines it: only that unit is walked.
    assert!(walked <= 1, "setting the breakpoint walked {walked} units");
    assert_eq!(top, "big::u93::local_step93");
    eprintln!("warm session to the stop and disconnect: {elapsed:?}");

    // The same stop without the cache (found in the units of its siblings' code).
    let empty = scratch_dir("cache-hit-cold");
    let (log, _, cold_top) = break_session(program(), &empty);
    assert!(log.contains("index cache miss"));
    assert_eq!(cold_top, top, "the stop equals the cold session's");
}

#[test]
fn a_corrupt_truncated_or_foreign_cache_file_is_rebuilt_not_trusted() {
    let cache = scratch_dir("cache-damage");
    cold_session(program(), &cache, &[]);
    let file = index_files(&cache).pop().unwrap();
    let good = std::fs::read(&file).unwrap();

    // A file of another build (a copy without build-id), under this build's name.
    let other_cache = scratch_dir("cache-damage-other");
    cold_session(other_program(), &other_cache, &[]);
    let foreign = std::fs::read(index_files(&other_cache).pop().unwrap()).unwrap();

    let mut corrupt = good.clone();
    let mid = corrupt.len() / 2;
    corrupt[mid] ^= 0x5a;
    let truncated = good[..good.len() / 2].to_vec();
    for (what, bytes, reason) in [
        ("corrupt", corrupt, "checksum mismatch"),
        ("truncated", truncated, "truncated"),
        ("foreign", foreign, "another build"),
    ] {
        std::fs::write(&file, &bytes).unwrap();
        let log = cold_session(program(), &cache, &[]);
        let rejected = log
            .lines()
            .find(|l| l.contains("index cache rejected"))
            .unwrap_or_else(|| panic!("the {what} file was not rejected:\n{log}"));
        assert!(rejected.contains(reason), "{what}: {rejected}");
        assert!(!log.contains("index cache hit"), "{what}");
        assert!(log.contains("background index built"), "{what}");
        assert_eq!(
            std::fs::read(&file).unwrap(),
            good,
            "after the {what} file, the rebuilt file is the good one"
        );
    }
}

#[test]
fn two_sessions_writing_at_once_leave_one_valid_file() {
    let cache = scratch_dir("cache-race");
    let a = {
        let cache = cache.clone();
        std::thread::spawn(move || cold_session(program(), &cache, &[]))
    };
    let b = cold_session(program(), &cache, &[]);
    let a = a.join().unwrap();
    assert!(a.contains("index cache written") && b.contains("index cache written"));
    let stray: Vec<PathBuf> = cache_files(&cache)
        .into_iter()
        .filter(|p| !p.extension().is_some_and(|e| e == "tidx" || e == "ok"))
        .collect();
    assert!(stray.is_empty(), "no temporary file is left: {stray:?}");
    assert_eq!(index_files(&cache).len(), 1);
    let (log, walked, _) = break_session(program(), &cache);
    assert!(log.contains("index cache hit"), "{log}");
    assert!(!log.contains("index cache rejected"));
    assert!(walked <= 1);
}

fn set_age(path: &Path, days: u64) {
    let f = std::fs::File::options().append(true).open(path).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(days * 86_400))
        .unwrap();
}

#[test]
fn the_size_cap_evicts_the_least_recently_used_files() {
    let cache = scratch_dir("cache-cap");
    cold_session(program(), &cache, &[]);
    let file = index_files(&cache).pop().unwrap();
    let size = std::fs::metadata(&file).unwrap().len();
    std::fs::remove_file(&file).unwrap();
    // Two other builds' files: one used three days ago, one yesterday.
    let dir = cache.join("tandem");
    let oldest = dir.join("b-0000000000000001.tidx");
    let recent = dir.join("b-0000000000000002.tidx");
    // (1 MB each, so the new file may differ from the first one's size by up to half of
    // that — what the index holds when it is written varies a little with timing —
    // and the cap still has room for it and exactly one other.)
    std::fs::write(&oldest, vec![0u8; 1_000_000]).unwrap();
    std::fs::write(&recent, vec![0u8; 1_000_000]).unwrap();
    set_age(&oldest, 3);
    set_age(&recent, 1);
    // Room for the new file and one other.
    let cap = (size + 1_500_000).to_string();
    let log = cold_session(
        program(),
        &cache,
        &[("TANDEM_INDEX_CACHE_MAX_BYTES", cap.as_str())],
    );
    assert!(log.contains("index cache evicted"), "{log}");
    assert!(!oldest.exists(), "the least recently used file is evicted");
    assert!(recent.exists(), "the more recent one fits under the cap");
    assert!(file.exists(), "the file just written is kept");
}

/// A copy of the generated program with zlib-compressed DWARF sections.
fn compressed_program() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let copy = scratch_dir("cache-zlib").join("big-zlib");
        let run = Command::new("objcopy")
            .arg("--compress-debug-sections=zlib")
            .arg(program())
            .arg(&copy)
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        copy
    })
}

fn section_files(cache: &Path) -> Vec<PathBuf> {
    cache_files(cache)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "dsec"))
        .collect()
}

#[test]
fn compressed_sections_are_kept_decompressed_and_a_damaged_copy_is_rebuilt() {
    let cache = scratch_dir("cache-sections");
    let cold = cold_session(compressed_program(), &cache, &[]);
    assert!(cold.contains("decompressed section written"), "{cold}");
    // The program's files are named by its key, as its index file is (libraries with
    // compressed sections of their own have theirs too).
    let tidx = index_files(&cache).pop().unwrap();
    let key = tidx.file_stem().unwrap().to_str().unwrap().to_string();
    let info = cache.join("tandem").join(format!("{key}.debug_info.dsec"));
    assert!(info.is_file(), "{:?}", section_files(&cache));
    // The uncompressed program's .debug_info, byte for byte.
    let dumped = scratch_dir("cache-sections-dump").join("info");
    let run = Command::new("objcopy")
        .arg("--dump-section")
        .arg(format!(".debug_info={}", dumped.display()))
        .arg(program())
        .arg(scratch_dir("cache-sections-dump").join("out"))
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let good = std::fs::read(&info).unwrap();
    assert_eq!(&good[32..], &std::fs::read(&dumped).unwrap()[..]);

    let (warm, _, top) = break_session(compressed_program(), &cache);
    assert!(warm.contains("decompressed section cache hit"), "{warm}");
    assert!(!warm.contains("decompressed section written"), "{warm}");
    assert_eq!(top, "big::u93::local_step93");

    // One byte of the copy changed: found by its checksum, rewritten, never used.
    let mut bad = good.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 0x5a;
    std::fs::write(&info, &bad).unwrap();
    let (log, _, top) = break_session(compressed_program(), &cache);
    let rejected = log
        .lines()
        .find(|l| l.contains("decompressed section cache rejected"))
        .unwrap_or_else(|| panic!("the damaged copy was not rejected:\n{log}"));
    assert!(rejected.contains("checksum mismatch"), "{rejected}");
    assert_eq!(top, "big::u93::local_step93");
    assert_eq!(std::fs::read(&info).unwrap(), good, "the copy is rebuilt");
}

#[test]
fn a_checked_file_is_trusted_until_it_changes() {
    // A session that checks a file's checksum stamps it (`NAME.ok`) when the file had last
    // changed well before (2 s: change times are coarse), and later sessions trust it
    // without reading it through; a file rewritten in place (the same bytes, its
    // modification time set back) is read through again.
    const READ: &str = "index cache file read through for its checksum";
    let cache = scratch_dir("cache-stamp");
    cold_session(program(), &cache, &[]);
    let file = index_files(&cache).pop().unwrap();
    let stamp = cache.join("tandem").join(format!(
        "{}.ok",
        file.file_name().unwrap().to_str().unwrap()
    ));
    std::thread::sleep(Duration::from_millis(2300));
    let (log, _, _) = break_session(program(), &cache);
    assert!(
        log.contains(READ),
        "the first check reads it through:\n{log}"
    );
    assert!(stamp.is_file(), "{:?}", cache_files(&cache));
    let (log, _, _) = break_session(program(), &cache);
    assert!(log.contains("index cache hit"), "{log}");
    assert!(
        !log.contains(READ),
        "a stamped file was read through:\n{log}"
    );

    let bytes = std::fs::read(&file).unwrap();
    let mtime = std::fs::metadata(&file).unwrap().modified().unwrap();
    std::fs::write(&file, &bytes).unwrap();
    std::fs::File::options()
        .append(true)
        .open(&file)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let (log, _, _) = break_session(program(), &cache);
    assert!(log.contains(READ), "a rewritten file was trusted:\n{log}");
    assert!(log.contains("index cache hit"), "{log}");
}
