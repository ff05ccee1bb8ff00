//! Security boundaries: listeners bind loopback only; the workspace's DAP socket refuses
//! other users (file modes, and SO_PEERCRED when the modes are loosened); launch arguments
//! and environment reach the program exactly, with no shell in between.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod reliability_util;
mod support;

use std::ffi::CString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};
use support::dap::{build, wait_until, DapClient};
use support::{Peer, Protocol, PATIENCE};

#[test]
fn listeners_refuse_non_loopback_addresses() {
    for (sub, addr) in [
        ("dap", "0.0.0.0:0"),
        ("lsp", "0.0.0.0:0"),
        ("dap", "[::]:0"),
        ("lsp", "ws://0.0.0.0:0"),
    ] {
        let out = Command::new(support::tandem_bin())
            .args([sub, "--listen", addr])
            .env("XDG_RUNTIME_DIR", support::private_runtime_dir())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{sub} --listen {addr} was accepted");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("loopback"),
            "{sub} --listen {addr}: {stderr}"
        );
    }
}

/// A private workspace with a language server serving its DAP socket.
struct Served {
    base: PathBuf,
    lsp: Peer,
    socket: PathBuf,
}

impl Served {
    fn start(tag: &str) -> Served {
        let base = std::env::temp_dir().join(format!("tandem-relsec-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let root = base.join("ws");
        let runtime = base.join("run");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&runtime).unwrap();
        let root = root.canonicalize().unwrap();
        let runtime_s = runtime.display().to_string();
        let mut lsp = Peer::spawn_in(
            Protocol::Lsp,
            &[],
            &[("XDG_RUNTIME_DIR", &runtime_s)],
            Some(&root),
        );
        let root_uri = format!("file://{}", root.display());
        let init = lsp.lsp_request(
            "initialize",
            json!({"processId": null, "rootUri": root_uri,
                   "workspaceFolders": [{"uri": root_uri, "name": "ws"}], "capabilities": {}}),
        );
        assert!(init.get("result").is_some(), "{init}");
        lsp.lsp_notify("initialized", json!({}));
        let dir = runtime.join("tandem");
        let find = || {
            std::fs::read_dir(&dir)
                .ok()?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .find(|p| p.extension().is_some_and(|x| x == "sock"))
        };
        assert!(wait_until(PATIENCE, || find().is_some()), "no socket");
        Served {
            base,
            lsp,
            socket: find().unwrap(),
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

/// How a connection attempt as another user ended.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// connect(2) failed (the file modes kept the user out).
    CannotConnect,
    /// Connected, and the server closed the connection without answering.
    Closed,
    /// Connected and got bytes back: the session was served.
    Served,
    /// Connected and nothing happened within the time allowed.
    Silent,
}

/// Connects to `socket` from a forked child that runs as `nobody` (uid and gid 65534), sends
/// a DAP `initialize` and reports what happened. The child only makes system calls between
/// fork and exit: everything it needs is prepared before the fork.
fn connect_as_nobody(socket: &Path) -> Outcome {
    let path = CString::new(socket.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: sockaddr_un is plain old data; all zeroes is a valid value.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = path.as_bytes_with_nul();
    assert!(bytes.len() <= addr.sun_path.len());
    for (dst, src) in addr.sun_path.iter_mut().zip(bytes) {
        *dst = *src as libc::c_char;
    }
    let frame = wire::encode_frame(
        br#"{"seq":1,"type":"request","command":"initialize","arguments":{"adapterID":"x"}}"#,
    );
    // SAFETY: the child calls only async-signal-safe functions (setgroups, setgid, setuid,
    // socket, connect, write, poll, read, _exit) on data prepared before the fork.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        // SAFETY: see above; every pointer refers to memory owned by this (copied) process.
        unsafe {
            let code = (|| {
                if libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setgid(65534) != 0
                    || libc::setuid(65534) != 0
                {
                    return 90;
                }
                let fd = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
                if fd < 0 {
                    return 91;
                }
                let len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
                if libc::connect(fd, (&raw const addr).cast(), len) != 0 {
                    return 10;
                }
                libc::write(fd, frame.as_ptr().cast(), frame.len());
                let mut pfd = libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                };
                if libc::poll(&mut pfd, 1, 5000) <= 0 {
                    return 30;
                }
                let mut buf = [0u8; 64];
                match libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) {
                    n if n > 0 => 20,
                    _ => 0,
                }
            })();
            libc::_exit(code);
        }
    }
    let mut status = 0;
    // SAFETY: waiting for the child forked above.
    let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
    assert_eq!(waited, pid);
    assert!(libc::WIFEXITED(status), "child status {status:#x}");
    match libc::WEXITSTATUS(status) {
        10 => Outcome::CannotConnect,
        0 => Outcome::Closed,
        20 => Outcome::Served,
        30 => Outcome::Silent,
        code => panic!("the unprivileged child failed to set up ({code})"),
    }
}

#[test]
fn the_workspace_socket_refuses_other_users() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        // Without root there is no other user to become; the modes are still checked.
        eprintln!("not root: only the socket's modes are checked");
    }
    let served = Served::start("peer");
    let socket = served.socket.clone();
    let dir = socket.parent().unwrap().to_path_buf();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&socket), 0o600);
    assert_eq!(mode(&dir), 0o700);
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        // The modes keep another user out.
        assert_eq!(connect_as_nobody(&socket), Outcome::CannotConnect);
        // With the modes loosened (a careless umask, a copied directory), the peer
        // credential check still refuses: the connection closes unanswered.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(base_of(&dir), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o777)).unwrap();
        let outcome = connect_as_nobody(&socket);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(outcome, Outcome::Closed, "another user's connection");
    }
    // The owner is still served.
    let mut dap = DapClient::with_peer(Peer::spawn(
        Protocol::Dap,
        &["--connect", socket.to_str().unwrap()],
        &[],
    ));
    dap.initialize();
    dap.finish();
    let mut lsp = served;
    let r = lsp.lsp.lsp_request("shutdown", Value::Null);
    assert!(r.get("error").is_none(), "{r}");
    lsp.lsp.lsp_notify("exit", Value::Null);
    assert_eq!(lsp.lsp.wait_exit(PATIENCE).code(), Some(0));
}

/// The runtime directory above the socket's directory (`…/run`), which must be passable.
fn base_of(dir: &Path) -> &Path {
    dir.parent().unwrap()
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn launch_args_and_env_are_passed_exactly_without_a_shell() {
    let program = build("c/rel_args.c", "gcc", &["-g", "-O0"]);
    let args = [
        "two words",
        "",
        "it's \"quoted\"",
        "line one\nline two",
        "$HOME",
        "*",
        "`id`; echo $(id) | cat > /dev/null &",
        "tab\there",
        "\\backslash\\",
        // Unusual code points, carried by JSON `\u` escapes.
        "\u{1}\u{1f}\u{7f}",
        "é € 😀 \u{10ffff} \u{feff}",
    ];
    let mut c = DapClient::new();
    c.initialize();
    c.ok(
        "launch",
        json!({"program": program, "args": args,
               "env": {"REL_A": "x y", "REL_B": "$HOME *", "REL_C": "multi\nline", "REL_D": "",
                       "REL_E": "😀=\u{1}"}}),
    );
    c.ok("configurationDone", json!({}));
    assert_eq!(c.event("exited")["body"]["exitCode"], 0);
    c.event("terminated");
    let stdout: String = c
        .output
        .iter()
        .filter(|(cat, _)| cat == "stdout")
        .map(|(_, t)| t.as_str())
        .collect();
    let lines: Vec<&str> = stdout.lines().collect();
    let got_args: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("ARG "))
        .collect();
    let want_args: Vec<String> = args.iter().map(|a| hex(a)).collect();
    assert_eq!(got_args, want_args, "argv as the program saw it:\n{stdout}");
    let mut got_env: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("ENV "))
        .collect();
    got_env.sort();
    let mut want_env: Vec<String> = [
        "REL_A=x y",
        "REL_B=$HOME *",
        "REL_C=multi\nline",
        "REL_D=",
        "REL_E=😀=\u{1}",
    ]
    .iter()
    .map(|e| hex(e))
    .collect();
    want_env.sort();
    assert_eq!(got_env, want_env, "environment:\n{stdout}");
    assert!(
        lines.contains(&format!("END {}", args.len()).as_str()),
        "{stdout}"
    );

    c.finish();

    // What an argument cannot carry is refused, not mangled: a NUL byte cannot be in an
    // argv string, and JSON (so DAP) cannot carry non-UTF-8 bytes — a lone surrogate
    // escape is invalid JSON and gets an error response.
    let mut c = DapClient::new();
    c.initialize();
    let m = c.err("launch", json!({"program": program, "args": ["a\u{0}b"]}));
    assert!(m.contains("nul"), "{m}");
    let m = c.err(
        "launch",
        json!({"program": program, "env": {"REL_NUL": "a\u{0}b"}}),
    );
    assert!(m.contains("nul"), "{m}");
    c.peer.send_body(
        br#"{"seq": 90, "type": "request", "command": "launch", "arguments": {"program": "x", "args": ["\ud800"]}}"#,
    );
    let r = loop {
        let m = c.peer.recv();
        if m["type"] == "response" {
            break m;
        }
    };
    assert_eq!(r["success"], false, "{r}");
    c.finish();
}

/// Starts `tandem <sub> --listen ADDR EXTRA…`; returns the child and the port.
fn listening(sub: &str, addr: &str, extra: &[&str]) -> (support::dap::KillOnDrop, u16) {
    use std::io::BufRead;
    let mut child = Command::new(support::tandem_bin())
        .args([sub, "--listen", addr])
        .args(extra)
        .env("XDG_RUNTIME_DIR", support::private_runtime_dir())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let line = lines.next().unwrap().unwrap();
    std::thread::spawn(move || for _ in lines {});
    let port = line
        .rsplit(':')
        .next()
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    (support::dap::KillOnDrop(child), port)
}

/// Sends one message on a fresh connection; returns the answer and, when `refused`, whether
/// the connection was closed after it.
fn first_exchange(port: u16, message: &Value, refused: bool) -> (Value, bool) {
    use std::io::Write;
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    stream
        .write_all(&wire::encode_frame(message.to_string().as_bytes()))
        .unwrap();
    let mut reader = wire::FrameReader::new(stream.try_clone().unwrap());
    let answer: Value = loop {
        let body = reader.read_frame().unwrap().expect("an answer");
        let v: Value = serde_json::from_slice(&body).unwrap();
        if v["type"] != "event" && v.get("method").is_none() {
            break v;
        }
    };
    let closed = refused && matches!(reader.read_frame(), Ok(None));
    (answer, closed)
}

#[test]
fn a_non_loopback_listener_requires_its_token() {
    // Without a token, a non-loopback address is refused (see above); with one, the first
    // message of every connection must carry it.
    let (_dap, port) = listening("dap", "0.0.0.0:0", &["--token", "s3cret"]);
    let init = |token: Option<&str>| {
        let mut args = json!({"adapterID": "tandem"});
        if let Some(t) = token {
            args["tandemToken"] = json!(t);
        }
        json!({"seq": 1, "type": "request", "command": "initialize", "arguments": args})
    };
    for (message, what) in [
        (init(None), "no token"),
        (init(Some("s3creT")), "a wrong token"),
        (init(Some("")), "an empty token"),
        (
            json!({"seq": 1, "type": "request", "command": "launch", "arguments": {"program": "/bin/true", "tandemToken": "s3cret"}}),
            "a request other than initialize",
        ),
    ] {
        let (answer, closed) = first_exchange(port, &message, true);
        assert_eq!(answer["success"], false, "{what}: {answer}");
        // Not schema-validated yet: the refusal has no `body`, which the DAP schema's
        // ErrorResponse requires (reported; the token work is in progress).
        assert_eq!(answer["type"], "response", "{what}: {answer}");
        assert!(answer["message"].as_str().is_some_and(|m| !m.is_empty()));
        assert!(closed, "{what}: the connection stays open");
    }
    let (answer, _) = first_exchange(port, &init(Some("s3cret")), false);
    assert_eq!(answer["success"], true, "{answer}");

    let (_lsp, port) = listening("lsp", "0.0.0.0:0", &["--token", "s3cret"]);
    let init = |token: &str| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"processId": null, "rootUri": null, "capabilities": {},
                          "initializationOptions": {"tandem": {"token": token}}}})
    };
    let (answer, closed) = first_exchange(port, &init("nope"), true);
    assert!(answer.get("error").is_some(), "{answer}");
    assert!(closed, "the connection stays open");
    let (answer, _) = first_exchange(port, &init("s3cret"), false);
    assert!(answer.get("result").is_some(), "{answer}");
}
