//! Debug information kept apart from the binary: a sample built with a build-id is split
//! (`objcopy --only-keep-debug`, `strip --strip-all`) and debugged through DAP with its
//! debug file found (a) in the `.build-id` layout under a `debugFileDirectories` root,
//! (b) through `.gnu_debuglink` next to the binary, (c) from a local `debuginfod` server
//! (Debian's package) into a fresh cache, then from the cache with the server gone. In
//! each, a function and a line breakpoint hit, and the frames (function, line) and the
//! locals and arguments equal those of the unstripped binary; at the line breakpoint they
//! also equal gdb's on the unstripped binary. The cache is elfutils': gdb reads what
//! tandem downloaded, and `tandem debug` downloads and reads it too. A served file of
//! another build is rejected with a clear message, a download is cancelled through its
//! progress id, and the stripped binary alone (the control) has no line breakpoint. An
//! `attach` to a stripped process downloads with progress as a `launch` does. Over https
//! (curl, a python3 server with a certificate made by `openssl req -x509`, trusted through
//! `CURL_CA_BUNDLE`) the download lands in the cache with progress, a 404 server is passed
//! over, an untrusted certificate fails clearly, and a slow download is cancelled.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::dap::{line_of, sample_path, scratch_dir, value, DapClient};
use support::{Peer, Protocol};

const SOURCE: &str = "c/demo.c";
const FUNCTION: &str = "total_sides";
const LINE_MARKER: &str = "return here + total_sides";
/// The title of a download's progress.
const DOWNLOADING: &str = "Downloading debug information";

/// The sample and its split parts, in a directory of one test's own.
/// The binaries' names have one length: the program's path is on its stack (argv[0],
/// AT_EXECFN), so the stack addresses the sessions compare are the same.
struct Split {
    dir: PathBuf,
    /// Built with `-g`: the reference.
    full: PathBuf,
    /// `objcopy --only-keep-debug` of `full`.
    debug: PathBuf,
    /// `strip --strip-all` of `full`, no link to its debug file.
    stripped: PathBuf,
    build_id: String,
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn build_id_of(file: &Path) -> String {
    let out = Command::new("readelf")
        .arg("-n")
        .arg(file)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: "))
        .unwrap_or_else(|| panic!("no build-id in {}", file.display()))
        .trim()
        .to_string()
}

fn split(tag: &str, flags: &[&str]) -> Split {
    split_source(tag, SOURCE, flags)
}

fn split_source(tag: &str, source: &str, flags: &[&str]) -> Split {
    let dir = scratch_dir(tag);
    let full = dir.join("prog-full");
    let mut args: Vec<&str> = vec!["-g", "-O0", "-Wl,--build-id"];
    args.extend_from_slice(flags);
    testsupport::compile_into("gcc", &[sample_path(source)], &args, &full);
    let debug = dir.join("demo.debug");
    run(Command::new("objcopy")
        .arg("--only-keep-debug")
        .arg(&full)
        .arg(&debug));
    let stripped = dir.join("prog-strp");
    run(Command::new("strip")
        .arg("--strip-all")
        .arg("-o")
        .arg(&stripped)
        .arg(&full));
    let build_id = build_id_of(&full);
    assert_eq!(build_id_of(&stripped), build_id);
    assert_eq!(build_id_of(&debug), build_id);
    Split {
        dir,
        full,
        debug,
        stripped,
        build_id,
    }
}

/// What one stop shows: each frame's function and line, and the top frame's variables.
#[derive(Debug, PartialEq, Eq)]
struct Shown {
    frames: Vec<(String, i64)>,
    args: Vec<(String, String)>,
    locals: Vec<(String, String)>,
}

/// A session's view of the program: whether the line breakpoint was verified and, when it
/// was, the stops at the function breakpoint and at the line.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    line_verified: bool,
    stops: Vec<Shown>,
}

fn shown(c: &mut DapClient, stopped: &Value) -> Shown {
    let tid = stopped["body"]["threadId"].as_i64().unwrap();
    let frames = c.frames(tid);
    let top = frames[0]["id"].as_i64().unwrap();
    let pairs = |vars: Vec<Value>| -> Vec<(String, String)> {
        vars.iter()
            .map(|v| (v["name"].as_str().unwrap().to_string(), value(v)))
            .collect()
    };
    let args = pairs(c.scope_vars(top, "Arguments"));
    let locals = pairs(c.scope_vars(top, "Locals"));
    Shown {
        frames: frames
            .iter()
            .filter(|f| f["line"].as_i64().unwrap_or(0) > 0)
            .map(|f| {
                (
                    f["name"].as_str().unwrap().to_string(),
                    f["line"].as_i64().unwrap(),
                )
            })
            .collect(),
        args,
        locals,
    }
}

/// launch → a function and a line breakpoint → configurationDone → both stops.
fn observe_launched(c: &mut DapClient) -> Seen {
    let src = sample_path(SOURCE);
    let line = line_of(&src, LINE_MARKER);
    let body = c.ok(
        "setFunctionBreakpoints",
        json!({"breakpoints": [{"name": FUNCTION}]}),
    );
    let function_verified = body["breakpoints"][0]["verified"] == true;
    let body = c.ok(
        "setBreakpoints",
        json!({"source": {"path": src}, "breakpoints": [{"line": line}]}),
    );
    let line_verified = body["breakpoints"][0]["verified"] == true;
    c.ok("configurationDone", json!({}));
    let mut stops = Vec::new();
    if function_verified && line_verified {
        for _ in 0..2 {
            let stopped = c.event("stopped");
            stops.push(shown(c, &stopped));
            let tid = stopped["body"]["threadId"].as_i64().unwrap();
            c.ok("continue", json!({"threadId": tid}));
        }
    }
    Seen {
        line_verified,
        stops,
    }
}

/// The debuggee's environment is the same in every session (the variables given to
/// tandem removed), so its stack addresses are too.
fn debuggee_env() -> Value {
    json!({
        "DEBUGINFOD_URLS": null,
        "DEBUGINFOD_CACHE_PATH": null,
        "CURL_CA_BUNDLE": null,
        "NO_PROXY": null
    })
}

fn tandem(envs: &[(&str, &str)]) -> DapClient {
    DapClient::with_peer(Peer::spawn(Protocol::Dap, &[], envs))
}

/// One session of `program` in a tandem without debuginfod servers.
fn observe(program: &Path, extra: Value) -> (Seen, Vec<(String, String)>) {
    let empty = scratch_dir("empty-cache");
    let mut c = tandem(&[
        ("DEBUGINFOD_URLS", ""),
        ("DEBUGINFOD_CACHE_PATH", empty.to_str().unwrap()),
    ]);
    c.initialize();
    let mut launch = json!({"program": program, "stdio": "pipes", "env": debuggee_env()});
    for (k, v) in extra.as_object().unwrap() {
        launch[k] = v.clone();
    }
    c.ok("launch", launch);
    let seen = observe_launched(&mut c);
    let output = c.output.clone();
    c.finish();
    (seen, output)
}

/// gdb on the unstripped binary at the line breakpoint: frames (function, line), the
/// arguments and the locals.
/// With `cache`, gdb reads its debuginfod cache (the server given is a closed port).
fn gdb_at_line(full: &Path, cache: Option<&Path>) -> Shown {
    let line = line_of(&sample_path(SOURCE), LINE_MARKER);
    let mut gdb = Command::new("gdb");
    gdb.args(["-batch", "-nx", "-iex"]);
    match cache {
        None => gdb.arg("set debuginfod enabled off"),
        Some(cache) => gdb
            .arg("set debuginfod enabled on")
            .env(
                "DEBUGINFOD_URLS",
                format!("http://127.0.0.1:{}", free_port()),
            )
            .env("DEBUGINFOD_CACHE_PATH", cache),
    };
    let out = gdb
        .arg("-ex")
        .arg(format!("break demo.c:{line}"))
        .args([
            "-ex",
            "run",
            "-ex",
            "bt",
            "-ex",
            "echo ARGS\\n",
            "-ex",
            "info args",
        ])
        .args(["-ex", "echo LOCALS\\n", "-ex", "info locals"])
        .arg(full)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut frames = Vec::new();
    let mut args = Vec::new();
    let mut locals = Vec::new();
    let mut section = 0;
    for l in text.lines() {
        if l == "ARGS" {
            section = 1;
        } else if l == "LOCALS" {
            section = 2;
        } else if l.starts_with('#') {
            // `#0  f (a=1) at f.c:3` or `#1  0x… in main () at f.c:9`.
            let mut words = l.split_whitespace().skip(1);
            let mut name = words.next().unwrap();
            if name.starts_with("0x") {
                name = words.nth(1).unwrap();
            }
            let name = name.to_string();
            let line = l.rsplit_once(':').unwrap().1.trim().parse::<i64>().unwrap();
            frames.push((name, line));
        } else if let Some((k, v)) = l.split_once(" = ") {
            let pair = (k.trim().to_string(), v.trim().to_string());
            match section {
                1 => args.push(pair),
                2 => locals.push(pair),
                _ => {}
            }
        }
    }
    assert!(!frames.is_empty(), "gdb did not stop:\n{text}");
    Shown {
        frames,
        args,
        locals,
    }
}

/// The reference: the unstripped binary, checked against gdb at the line.
fn reference(s: &Split) -> Seen {
    let (seen, _) = observe(&s.full, json!({}));
    assert!(seen.line_verified && seen.stops.len() == 2, "{seen:?}");
    let gdb = gdb_at_line(&s.full, None);
    let at_line = &seen.stops[1];
    assert_eq!(
        at_line.frames, gdb.frames,
        "frames at the line, tandem vs gdb"
    );
    for (name, v) in gdb.args.iter().chain(&gdb.locals) {
        let ours = at_line
            .args
            .iter()
            .chain(&at_line.locals)
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("tandem shows no {name}: {at_line:?}"));
        // Stack addresses depend on the environment, which gdb changes (LINES, COLUMNS):
        // an address is compared as being one; tandem's sessions compare them exactly.
        if v.starts_with("0x") {
            assert!(
                ours.1.contains("0x"),
                "{name}: tandem {} vs gdb {v}",
                ours.1
            );
            continue;
        }
        assert!(
            ours.1 == *v || ours.1.ends_with(v.as_str()),
            "{name}: tandem {} vs gdb {v}",
            ours.1
        );
    }
    seen
}

#[test]
fn build_id_layout_under_a_debug_file_directory() {
    let s = split("dbg-buildid", &[]);
    let want = reference(&s);
    let (control, _) = observe(&s.stripped, json!({}));
    assert!(
        !control.line_verified,
        "the stripped binary alone has no line table: {control:?}"
    );
    let root = s.dir.join("debug-root");
    let nested = root
        .join(".build-id")
        .join(&s.build_id[..2])
        .join(format!("{}.debug", &s.build_id[2..]));
    std::fs::create_dir_all(nested.parent().unwrap()).unwrap();
    std::fs::copy(&s.debug, &nested).unwrap();
    let (seen, _) = observe(
        &s.stripped,
        json!({"debugFileDirectories": [root], "cwd": s.dir}),
    );
    assert_eq!(seen, want);
    // Relative to cwd, as the program is.
    let (seen, _) = observe(
        &s.stripped,
        json!({"debugFileDirectories": ["debug-root"], "cwd": s.dir}),
    );
    assert_eq!(seen, want);
}

#[test]
fn gnu_debuglink_next_to_the_binary() {
    let s = split("dbg-link", &[]);
    let want = reference(&s);
    let linked = s.dir.join("prog-link");
    run(Command::new("objcopy")
        .arg(format!("--add-gnu-debuglink={}", s.debug.display()))
        .arg(&s.stripped)
        .arg(&linked));
    let (seen, _) = observe(&linked, json!({}));
    assert_eq!(seen, want);
    // A debug file of another build under the linked name is not used.
    let other = split("dbg-link-other", &["-DOTHER_BUILD=1", "-O1"]);
    assert_ne!(other.build_id, s.build_id);
    std::fs::copy(&other.debug, &s.debug).unwrap();
    let (seen, _) = observe(&linked, json!({}));
    assert!(
        !seen.line_verified,
        "another build's debug file was used: {seen:?}"
    );
}

/// A `debuginfod` server on 127.0.0.1, killed when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The status of `GET path` on 127.0.0.1:port, if it answers.
fn http_status(port: u16, path: &str) -> Option<u16> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut head = [0u8; 64];
    let n = s.read(&mut head).ok()?;
    let text = String::from_utf8_lossy(&head[..n]);
    text.split_whitespace().nth(1)?.parse().ok()
}

fn debuginfod_server(files: &Path, build_id: &str, db: &Path) -> Server {
    let found = Command::new("sh")
        .args(["-c", "command -v debuginfod"])
        .output()
        .unwrap();
    assert!(
        found.status.success(),
        "the debuginfod server is missing: run scripts/install-test-deps (Debian package debuginfod)"
    );
    let port = free_port();
    let child = Command::new("debuginfod")
        .arg("-F")
        .arg(files)
        .arg("-p")
        .arg(port.to_string())
        .arg("-d")
        .arg(db)
        .args(["-t", "1"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = Server { child, port };
    let path = format!("/buildid/{build_id}/debuginfo");
    let deadline = Instant::now() + Duration::from_secs(60);
    while http_status(port, &path) != Some(200) {
        assert!(
            Instant::now() < deadline,
            "debuginfod on port {port} did not serve {path} within 60 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    server
}

fn consoles(output: &[(String, String)]) -> String {
    output
        .iter()
        .filter(|(cat, _)| cat == "console")
        .map(|(_, t)| t.as_str())
        .collect()
}

/// A session through debuginfod with progress reporting: what it saw, every event, and
/// the console text. `extra`: more of tandem's environment.
fn observe_debuginfod(
    program: &Path,
    url: &str,
    cache: &Path,
    extra: &[(&str, &str)],
) -> (Seen, Vec<Value>, String) {
    let mut envs = vec![
        ("DEBUGINFOD_URLS", url),
        ("DEBUGINFOD_CACHE_PATH", cache.to_str().unwrap()),
    ];
    envs.extend_from_slice(extra);
    let mut c = tandem(&envs);
    c.initialize_with(json!({"supportsProgressReporting": true}));
    let launch = json!({"program": program, "stdio": "pipes", "env": debuggee_env()});
    let seq = c.send_request("launch", launch);
    let response = c.response_to(seq);
    assert_eq!(response["success"], true, "{response}");
    let events = c.drain_events(Duration::from_millis(50));
    let seen = observe_launched(&mut c);
    let console = consoles(&c.output);
    c.finish();
    (seen, events, console)
}

#[test]
fn debuginfod_server_then_its_cache() {
    let s = split("dbg-server", &[]);
    let want = reference(&s);
    let served = s.dir.join("served");
    std::fs::create_dir_all(&served).unwrap();
    std::fs::copy(&s.debug, served.join("demo.debug")).unwrap();
    let server = debuginfod_server(&served, &s.build_id, &s.dir.join("debuginfod.sqlite"));
    let url = format!("http://127.0.0.1:{}", server.port);
    let cache = s.dir.join("cache");

    let started = Instant::now();
    let (seen, events, console) = observe_debuginfod(&s.stripped, &url, &cache, &[]);
    eprintln!(
        "first session (download, load, two stops): {:?}",
        started.elapsed()
    );
    eprintln!("{console}");
    assert_eq!(seen, want);
    let names: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
    for needed in ["progressStart", "progressUpdate", "progressEnd"] {
        assert!(names.contains(&needed), "no {needed} in {names:?}");
    }
    assert_downloaded(&events);
    let cached = cache.join(&s.build_id).join("debuginfo");
    assert_eq!(
        std::fs::read(&cached).unwrap(),
        std::fs::read(&s.debug).unwrap(),
        "the cache holds the served debug file"
    );
    assert!(
        console.contains("downloaded the debug information"),
        "{console}"
    );

    // `tandem debug` downloads without a front-end's progress, into its own fresh cache.
    let cli_cache = s.dir.join("cli-cache");
    cli_stops_at_the_line(&s.stripped, &url, &cli_cache);
    assert!(cli_cache.join(&s.build_id).join("debuginfo").is_file());

    // The server gone, the cache serves.
    drop(server);
    let (seen, events, console) = observe_debuginfod(&s.stripped, &url, &cache, &[]);
    assert_eq!(seen, want);
    assert!(
        events.iter().all(|e| e["body"]["title"] != DOWNLOADING),
        "a cached file needs no download: {events:?}"
    );
    assert!(!console.contains("downloading"), "{console}");

    // The cache is elfutils' too: gdb finds the stripped binary's debug file there (its
    // server a closed port), and stops at the line as on the unstripped binary.
    let gdb_full = gdb_at_line(&s.full, None);
    let gdb_cached = gdb_at_line(&s.stripped, Some(&cache));
    assert_eq!(gdb_cached.frames, gdb_full.frames);
    assert_eq!(gdb_cached.locals, gdb_full.locals);

    // `tandem debug` reads the same cache.
    cli_stops_at_the_line(&s.stripped, &url, &cache);
}

/// `tandem debug` of the stripped binary stops at the line with its variables.
fn cli_stops_at_the_line(program: &Path, url: &str, cache: &Path) {
    let line = line_of(&sample_path(SOURCE), LINE_MARKER);
    let out = Command::new(support::tandem_bin())
        .arg("debug")
        .arg(program)
        .args(["--break", &format!("demo.c:{line}"), "--print", "here"])
        .env("DEBUGINFOD_URLS", url)
        .env("DEBUGINFOD_CACHE_PATH", cache)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("in total_sides (") && text.contains("here = 6"),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A one-connection-at-a-time HTTP server answering every GET with `200` and `body`,
/// sent in pieces of `piece` bytes every `pause` (a `length` larger than the body keeps
/// sending filler until the client goes away).
fn fake_server(body: Vec<u8>, length: usize, piece: usize, pause: Duration) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n"
            );
            let mut sent = 0;
            while sent < length {
                let n = piece.min(length - sent);
                let chunk: Vec<u8> = (sent..sent + n)
                    .map(|i| body.get(i).copied().unwrap_or(0))
                    .collect();
                if stream.write_all(&chunk).is_err() {
                    break;
                }
                sent += n;
                std::thread::sleep(pause);
            }
        }
    });
    port
}

#[test]
fn a_served_file_of_another_build_is_rejected() {
    let s = split("dbg-wrong", &[]);
    let other = split("dbg-wrong-other", &["-DOTHER_BUILD=1", "-O1"]);
    assert_ne!(other.build_id, s.build_id);
    let body = std::fs::read(&other.debug).unwrap();
    let len = body.len();
    let port = fake_server(body, len, 64 * 1024, Duration::ZERO);
    let cache = s.dir.join("cache");
    let (seen, events, console) = observe_debuginfod(
        &s.stripped,
        &format!("http://127.0.0.1:{port}"),
        &cache,
        &[],
    );
    assert!(!seen.line_verified, "{seen:?}");
    let end = events
        .iter()
        .find(|e| e["event"] == "progressEnd" && e["body"]["message"] == "failed");
    assert!(end.is_some(), "{events:?}");
    assert!(
        console.contains(&format!(
            "has build-id {}, not {}: rejected",
            other.build_id, s.build_id
        )),
        "{console}"
    );
    assert!(console.contains("without debug information"), "{console}");
    assert!(
        !cache.join(&s.build_id).exists(),
        "nothing of the wrong file is left in the cache"
    );
}

#[test]
fn a_download_is_cancelled_through_its_progress() {
    cancel_a_download(
        "dbg-cancel",
        |_, progress_id| json!({"progressId": progress_id}),
    );
}

#[test]
fn a_download_is_cancelled_through_its_launch_request() {
    cancel_a_download(
        "dbg-cancel-req",
        |launch_seq, _| json!({"requestId": launch_seq}),
    );
}

fn cancel_a_download(tag: &str, how: fn(i64, &Value) -> Value) {
    let s = split(tag, &[]);
    let body = std::fs::read(&s.debug).unwrap();
    // 200 MB announced, 16 KiB every 20 ms: minutes, unless cancelled.
    let port = fake_server(body, 200 << 20, 16 * 1024, Duration::from_millis(20));
    cancel_a_slow_download(&s, &format!("http://127.0.0.1:{port}"), &[], how);
}

/// A launch held by a slow download from `url`, while other requests are answered; a
/// `cancel` with the arguments `how` makes stops the download, and the program is launched
/// without debug information. The time from `cancel` to `progressEnd`.
fn cancel_a_slow_download(
    s: &Split,
    url: &str,
    extra: &[(&str, &str)],
    how: fn(i64, &Value) -> Value,
) -> Duration {
    let cache = s.dir.join("cache");
    let mut envs = vec![
        ("DEBUGINFOD_URLS", url),
        ("DEBUGINFOD_CACHE_PATH", cache.to_str().unwrap()),
    ];
    envs.extend_from_slice(extra);
    let mut c = tandem(&envs);
    let caps = c.initialize_with(json!({"supportsProgressReporting": true}));
    assert_eq!(caps["supportsCancelRequest"], true);
    let seq = c.send_request("launch", json!({"program": s.stripped, "stdio": "pipes"}));
    let start = c.event("progressStart");
    assert_eq!(start["body"]["cancellable"], true, "{start}");
    assert_eq!(start["body"]["title"], DOWNLOADING, "{start}");
    let id = start["body"]["progressId"].clone();
    let update = c.event("progressUpdate");
    assert_eq!(update["body"]["progressId"], id);
    // The adapter still serves requests while the launch waits.
    let threads = c.ok("threads", json!({}));
    assert!(threads["threads"].is_array(), "{threads}");
    let asked = Instant::now();
    c.ok("cancel", how(seq, &id));
    let end = c.event("progressEnd");
    let cancelled_in = asked.elapsed();
    assert_eq!(end["body"]["message"], "cancelled", "{end}");
    let response = c.response_to(seq);
    assert_eq!(response["success"], true, "{response}");
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "cancelling took {:?}",
        asked.elapsed()
    );
    let seen = observe_launched(&mut c);
    assert!(!seen.line_verified, "{seen:?}");
    let console = consoles(&c.output);
    assert!(
        console.contains("cancelled") && console.contains("without debug information"),
        "{console}"
    );
    c.finish();
    assert!(!cache.join(&s.build_id).join("debuginfo").exists());
    cancelled_in
}

#[test]
fn attach_downloads_with_progress_too() {
    let s = split_source("dbg-attach", "c/dap_attach.c", &[]);
    let body = std::fs::read(&s.debug).unwrap();
    let len = body.len();
    let port = fake_server(body, len, 4096, Duration::from_millis(1));
    let child = support::dap::KillOnDrop::spawn(&s.stripped);
    let cache = s.dir.join("cache");
    let mut c = tandem(&[
        ("DEBUGINFOD_URLS", &format!("http://127.0.0.1:{port}")),
        ("DEBUGINFOD_CACHE_PATH", cache.to_str().unwrap()),
    ]);
    c.initialize_with(json!({"supportsProgressReporting": true}));
    c.ok("attach", json!({"pid": child.pid()}));
    let events = c.drain_events(Duration::from_millis(50));
    let end = events
        .iter()
        .find(|e| e["event"] == "progressEnd" && e["body"]["message"] == "downloaded");
    assert!(end.is_some(), "{events:?}");
    assert!(cache.join(&s.build_id).join("debuginfo").is_file());
    let src = sample_path("c/dap_attach.c");
    let line = line_of(&src, "LINE_TICK");
    let body = c.ok(
        "setBreakpoints",
        json!({"source": {"path": src}, "breakpoints": [{"line": line}]}),
    );
    assert_eq!(body["breakpoints"][0]["verified"], true, "{body}");
    c.ok("configurationDone", json!({}));
    let stopped = c.event("stopped");
    let shown = shown(&mut c, &stopped);
    assert_eq!(shown.frames[0], ("tick".to_string(), line), "{shown:?}");
    assert_eq!(shown.frames[1].0, "main", "{shown:?}");
    assert_eq!(shown.args, [("step".to_string(), "1".to_string())]);
    c.finish();
}

/// The frames and top locals a core shows when opened with `program` over DAP.
fn core_view(program: &Path, core: &Path) -> Shown {
    let mut c = tandem(&[]);
    c.initialize();
    c.ok("attach", json!({"program": program, "coreFile": core}));
    let stopped = c.event("stopped");
    let seen = shown(&mut c, &stopped);
    c.finish();
    seen
}

/// A core of a stripped program is read with its separate debug file, as a live session
/// is: the same frames and values as with the unstripped binary of the same build.
#[test]
fn a_core_of_a_stripped_program_finds_its_debug_file() {
    let s = split("dbg-core", &[]);
    let linked = s.dir.join("prog-link");
    run(Command::new("objcopy")
        .arg(format!("--add-gnu-debuglink={}", s.debug.display()))
        .arg(&s.stripped)
        .arg(&linked));
    let core = s.dir.join("prog.core");
    let out = Command::new("gdb")
        .args(["-batch", "-nx", "-ex"])
        .arg(format!("break {FUNCTION}"))
        .args(["-ex", "run", "-ex"])
        .arg(format!("gcore {}", core.display()))
        .args(["-ex", "kill"])
        .arg(&linked)
        .output()
        .unwrap();
    assert!(
        core.is_file(),
        "gdb wrote no core: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let want = core_view(&s.full, &core);
    assert_eq!(want.frames[0].0, FUNCTION, "{want:?}");
    assert!(want.frames[0].1 > 0, "{want:?}");
    let seen = core_view(&linked, &core);
    assert_eq!(seen, want);
}

/// python3's http.server behind TLS: `GET /buildid/HEX/debuginfo` answers `ROOT/HEX`
/// (`whole`: as it is; `slow`: 200 MB announced, 16 KiB every 20 ms; `stall`: its first
/// 4 KiB, then nothing for a minute), anything else 404.
/// Prints its port.
const HTTPS_SERVER: &str = r#"
import http.server, os, ssl, sys, time
cert, key, root, mode = sys.argv[1:5]
class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass
    def do_GET(self):
        parts = self.path.split("/")
        ok = len(parts) == 4 and parts[1] == "buildid" and parts[3] == "debuginfo"
        path = os.path.join(root, parts[2]) if ok else ""
        if not os.path.isfile(path):
            self.send_error(404)
            return
        body = open(path, "rb").read()
        length = len(body) if mode == "whole" else 200 << 20
        self.send_response(200)
        self.send_header("Content-Length", str(length))
        self.send_header("X-Debuginfod-Size", str(length))
        self.end_headers()
        if mode == "whole":
            self.wfile.write(body)
            return
        if mode == "stall":
            self.wfile.write(body[:4096])
            self.wfile.flush()
            time.sleep(60)
            return
        sent = 0
        while sent < length:
            piece = body[sent:sent + 16384].ljust(16384, b"\0")
            self.wfile.write(piece)
            sent += len(piece)
            time.sleep(0.02)
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)
server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;

/// An https server on 127.0.0.1 with a self-signed certificate made for it
/// (`openssl req -x509`), serving the debug file of `s`: the server and the certificate.
fn https_server(s: &Split, mode: &str) -> (Server, PathBuf) {
    for tool in ["curl", "openssl", "python3"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .unwrap();
        assert!(
            found.status.success(),
            "{tool} is missing: run scripts/install-test-deps"
        );
    }
    let dir = s.dir.join(format!("https-{mode}"));
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::copy(&s.debug, root.join(&s.build_id)).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    run(Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
        .args(["ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"])
        .args([
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert));
    let script = dir.join("server.py");
    std::fs::write(&script, HTTPS_SERVER).unwrap();
    let mut child = Command::new("python3")
        .arg(&script)
        .args([&cert, &key, &root])
        .arg(mode)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let stdout = child.stdout.take().unwrap();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).unwrap();
    let port = line
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("the https server said {line:?}"));
    (Server { child, port }, cert)
}

/// What a cache holds for `build_id`: its directory's file names.
fn cache_entry(cache: &Path, build_id: &str) -> Vec<String> {
    std::fs::read_dir(cache.join(build_id))
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// An https server with a private CA, trusted through `CURL_CA_BUNDLE`: the download
/// (through curl) lands in the cache with progress, after a server that answers 404,
/// and the stripped program shows what the unstripped one does. Without the certificate
/// the download fails with curl's reason and a hint, and nothing is cached.
#[test]
fn debuginfod_over_https_with_a_private_ca() {
    let s = split("dbg-https", &[]);
    let want = reference(&s);
    let (server, cert) = https_server(&s, "whole");
    let base = format!("https://127.0.0.1:{}", server.port);
    let trusted = [
        ("CURL_CA_BUNDLE", cert.to_str().unwrap()),
        ("NO_PROXY", "127.0.0.1"),
    ];

    // The first server has no such file (404), the second has it.
    let cache = s.dir.join("cache");
    let urls = format!("{base}/elsewhere {base}");
    let started = Instant::now();
    let (seen, events, console) = observe_debuginfod(&s.stripped, &urls, &cache, &trusted);
    eprintln!(
        "https session (download, load, two stops): {:?}",
        started.elapsed()
    );
    eprintln!("{console}");
    assert_eq!(seen, want);
    assert_downloaded(&events);
    assert_eq!(
        std::fs::read(cache.join(&s.build_id).join("debuginfo")).unwrap(),
        std::fs::read(&s.debug).unwrap(),
        "the cache holds the served debug file"
    );
    assert_eq!(cache_entry(&cache, &s.build_id), ["debuginfo"]);

    // Only the server without the file: its 404, as over http.
    let cache = s.dir.join("cache-404");
    let (seen, _, console) =
        observe_debuginfod(&s.stripped, &format!("{base}/elsewhere"), &cache, &trusted);
    assert!(!seen.line_verified, "{seen:?}");
    assert!(
        console.contains("the server answered HTTP 404")
            && console.contains("without debug information"),
        "{console}"
    );
    assert!(!cache.join(&s.build_id).exists(), "a 404 caches nothing");

    // The certificate not trusted: curl's reason, a hint, nothing cached.
    let cache = s.dir.join("cache-untrusted");
    let (seen, events, console) =
        observe_debuginfod(&s.stripped, &base, &cache, &[("NO_PROXY", "127.0.0.1")]);
    assert!(!seen.line_verified, "{seen:?}");
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "progressEnd" && e["body"]["message"] == "failed"),
        "{events:?}"
    );
    assert!(
        console.contains("SSL certificate problem")
            && console.contains("CURL_CA_BUNDLE")
            && console.contains("without debug information"),
        "{console}"
    );
    assert!(
        !cache.join(&s.build_id).exists(),
        "nothing cached: {console}"
    );
}

/// The pids of running curl processes whose arguments name `port`.
fn curls_of(port: u16) -> Vec<String> {
    let needle = format!("127.0.0.1:{port}");
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| {
            let e = e.ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let text = String::from_utf8_lossy(&cmdline);
            let argv0 = text.split('\0').next()?;
            (argv0.ends_with("curl") && text.contains(&needle))
                .then(|| e.file_name().to_string_lossy().into_owned())
        })
        .collect()
}

/// A slow https download is cancelled like an http one: curl is killed, nothing cached.
#[test]
fn an_https_download_is_cancelled() {
    let s = split("dbg-https-cancel", &[]);
    let (server, cert) = https_server(&s, "slow");
    let url = format!("https://127.0.0.1:{}", server.port);
    let envs = [
        ("CURL_CA_BUNDLE", cert.to_str().unwrap()),
        ("NO_PROXY", "127.0.0.1"),
    ];
    let took = cancel_a_slow_download(
        &s,
        &url,
        &envs,
        |_, progress_id| json!({"progressId": progress_id}),
    );
    eprintln!("cancel -> progressEnd over https: {took:?}");
    assert_eq!(
        curls_of(server.port),
        Vec::<String>::new(),
        "curl outlived the cancel"
    );
}

/// A server that stops sending is given up after `DEBUGINFOD_TIMEOUT`, over https as over
/// http, and nothing is cached.
#[test]
fn a_stalled_https_download_times_out() {
    let s = split("dbg-https-stall", &[]);
    let (server, cert) = https_server(&s, "stall");
    let cache = s.dir.join("cache");
    let started = Instant::now();
    let (seen, events, console) = observe_debuginfod(
        &s.stripped,
        &format!("https://127.0.0.1:{}", server.port),
        &cache,
        &[
            ("CURL_CA_BUNDLE", cert.to_str().unwrap()),
            ("NO_PROXY", "127.0.0.1"),
            ("DEBUGINFOD_TIMEOUT", "1"),
        ],
    );
    let took = started.elapsed();
    eprintln!("stalled https session: {took:?}\n{console}");
    assert!(!seen.line_verified, "{seen:?}");
    assert!(
        events.iter().any(|e| e["event"] == "progressUpdate"),
        "the first 4 KiB were reported: {events:?}"
    );
    assert!(
        console.contains("no data for 1 s (DEBUGINFOD_TIMEOUT)"),
        "{console}"
    );
    // curl's own `--speed-time 1` would take 6–7 s (it averages over a window).
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(!cache.join(&s.build_id).exists(), "nothing cached");
}

/// The download's progress: started under its title, ended "downloaded", last update 100 %.
fn assert_downloaded(events: &[Value]) {
    let start = events
        .iter()
        .find(|e| e["event"] == "progressStart" && e["body"]["title"] == DOWNLOADING)
        .unwrap_or_else(|| panic!("no download progress: {events:?}"));
    let id = &start["body"]["progressId"];
    let end = events
        .iter()
        .find(|e| e["event"] == "progressEnd" && e["body"]["progressId"] == *id)
        .unwrap_or_else(|| panic!("no progressEnd: {events:?}"));
    assert_eq!(end["body"]["message"], "downloaded", "{end}");
    let last = events
        .iter()
        .rfind(|e| e["event"] == "progressUpdate" && e["body"]["progressId"] == *id)
        .unwrap_or_else(|| panic!("no progressUpdate: {events:?}"));
    assert_eq!(last["body"]["percentage"], 100.0, "{last}");
}
