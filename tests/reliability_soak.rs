//! Soak: many launch → breakpoint hit → disconnect cycles against one long-lived
//! `tandem dap --listen 127.0.0.1:0` (one session per connection, all in one process), with
//! tandem's resident memory, open descriptors and threads measured after a warm-up and at
//! the end. `TANDEM_SOAK_CYCLES` sets the number of cycles (default 200); the figures of
//! longer runs are in docs/reliability.md.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod reliability_util;
mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use reliability_util::{assert_clean, faults_sample, fd_count, rss_kib, thread_count};
use serde_json::{json, Value};
use support::dap::{alive, line_of, sample_path, wait_until, KillOnDrop};

const DEFAULT_CYCLES: usize = 200;
const WARMUP: usize = 20;

struct Conn {
    stream: TcpStream,
    reader: wire::FrameReader<TcpStream>,
    seq: i64,
}

impl Conn {
    fn open(addr: &str) -> Conn {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let reader = wire::FrameReader::new(stream.try_clone().unwrap());
        Conn {
            stream,
            reader,
            seq: 0,
        }
    }

    fn next(&mut self) -> Option<Value> {
        let body = self.reader.read_frame().ok()??;
        let value: Value = serde_json::from_slice(&body).unwrap();
        if let Some(schema) = support::dap_schema() {
            schema.validate(&value).unwrap();
        }
        Some(value)
    }

    fn send(&mut self, command: &str, arguments: Value) -> i64 {
        self.seq += 1;
        let msg =
            json!({"seq": self.seq, "type": "request", "command": command, "arguments": arguments});
        self.stream
            .write_all(&wire::encode_frame(&serde_json::to_vec(&msg).unwrap()))
            .unwrap();
        self.seq
    }

    /// Sends a request and waits for its successful response; events seen meanwhile are
    /// handed to `on_event`.
    fn ok(&mut self, command: &str, arguments: Value, on_event: &mut impl FnMut(&Value)) {
        let seq = self.send(command, arguments);
        loop {
            let m = self.next().expect("connection closed");
            if m["type"] == "response" && m["request_seq"] == seq {
                assert_eq!(m["success"], true, "{m}");
                return;
            }
            on_event(&m);
        }
    }
}

/// One cycle; returns the debuggee's pid.
fn cycle(addr: &str, program: &Value, source: &Value, line: i64) -> i64 {
    let mut c = Conn::open(addr);
    let pid = std::cell::Cell::new(None);
    let stopped = std::cell::Cell::new(false);
    let mut note = |m: &Value| {
        if m["event"] == "process" {
            pid.set(m["body"]["systemProcessId"].as_i64());
        }
        if m["event"] == "stopped" {
            stopped.set(true);
        }
    };
    c.ok(
        "initialize",
        json!({"adapterID": "tandem", "linesStartAt1": true}),
        &mut note,
    );
    c.ok(
        "launch",
        json!({"program": program, "args": ["spin"]}),
        &mut note,
    );
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": source}, "breakpoints": [{"line": line}]}),
        &mut note,
    );
    c.ok("configurationDone", json!({}), &mut note);
    while !stopped.get() {
        let m = c.next().expect("connection closed before the stop");
        note(&m);
    }
    c.ok("disconnect", json!({}), &mut note);
    // The client closes its end, as editors do. (tandem does not close the connection
    // itself after `disconnect`: its reader thread waits for the client's end of input —
    // see docs/reliability.md.)
    let _ = c.stream.shutdown(std::net::Shutdown::Both);
    pid.get().expect("a process event")
}

#[test]
fn launch_hit_disconnect_cycles_keep_memory_and_descriptors_flat() {
    let cycles: usize = std::env::var("TANDEM_SOAK_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_CYCLES)
        .max(WARMUP + 1);
    let program = json!(faults_sample());
    let src = sample_path("c/rel_faults.c");
    let line = line_of(&src, "LINE_TICK");
    let source = json!(src);
    let mut child = Command::new(support::tandem_bin())
        .args(["dap", "--listen", "127.0.0.1:0"])
        .env("XDG_RUNTIME_DIR", support::private_runtime_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let tandem = i64::from(child.id());
    let stderr = child.stderr.take().unwrap();
    // Killed and reaped when the test ends, passing or not.
    let _child = KillOnDrop(child);
    let mut lines = BufReader::new(stderr).lines();
    let first = lines.next().unwrap().unwrap();
    let addr = first
        .strip_prefix("tandem: listening on ")
        .unwrap_or_else(|| panic!("{first}"))
        .to_owned();
    // Keep reading stderr so that tandem never blocks on it.
    std::thread::spawn(move || for _ in lines {});

    let started = Instant::now();
    let mut baseline = None;
    let mut peak_rss = 0;
    let mut launched = Vec::new();
    for i in 0..cycles {
        let pid = cycle(&addr, &program, &source, line);
        launched.push(pid);
        assert!(
            wait_until(Duration::from_secs(10), || !alive(pid)),
            "cycle {i}: debuggee {pid} outlived its session"
        );
        if i + 1 == WARMUP {
            // Sessions end on their own threads: let the last one finish.
            std::thread::sleep(Duration::from_millis(200));
            baseline = Some((rss_kib(tandem), fd_count(tandem), thread_count(tandem)));
        }
        peak_rss = peak_rss.max(rss_kib(tandem));
    }
    let elapsed = started.elapsed();
    let (rss0, fds0, threads0) = baseline.unwrap();
    // Descriptors and threads come back to what they were after the warm-up.
    assert!(
        wait_until(Duration::from_secs(5), || fd_count(tandem) <= fds0),
        "descriptors grew from {fds0} to {}",
        fd_count(tandem)
    );
    assert!(
        wait_until(Duration::from_secs(5), || thread_count(tandem) <= threads0),
        "threads grew from {threads0} to {}",
        thread_count(tandem)
    );
    let rss = rss_kib(tandem);
    // Flat memory: what is retained by the allocator or caches may move a little, a leak
    // per cycle would not stay under this bound.
    let allowed = rss0 + (rss0 / 5).max(8 * 1024);
    eprintln!(
        "soak: {cycles} cycles in {elapsed:?} ({:?} each); rss {rss0} KiB after {WARMUP}, \
         {rss} KiB at the end (peak {peak_rss}); fds {fds0} → {}; threads {threads0} → {}",
        elapsed / cycles as u32,
        fd_count(tandem),
        thread_count(tandem)
    );
    assert!(
        rss <= allowed,
        "rss grew from {rss0} KiB to {rss} KiB over {cycles} cycles"
    );
    // Each cycle checked its own debuggee; over thousands of cycles pids are reused by
    // other processes, so only the last one is checked again here.
    assert_clean(tandem, &launched[launched.len() - 1..], &[]);
}
