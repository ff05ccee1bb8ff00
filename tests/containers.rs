//! Containers, built by the tests themselves as root: a service in new pid and mount
//! namespaces (`unshare --pid --fork --mount-proc`), its executable and shared library
//! copied into a tmpfs mounted only inside, at paths absent on the host, and (where the
//! cgroup v2 hierarchy is writable) in a docker-named cgroup. tandem, outside, lists it,
//! attaches by (container, pid inside), symbolizes frames through the library that exists
//! only inside, maps sources built elsewhere, and leaves it running. Also: `--listen` on a
//! non-loopback address with `--token`, and a launch under a seccomp filter that refuses
//! `personality()`.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};
use support::dap::{alive, children_of, line_of, tracer_of, wait_until, DapClient, KillOnDrop};
use support::{Peer, Protocol, PATIENCE};

fn sample(name: &str) -> PathBuf {
    support::dap::sample_path(&format!("c/container/{name}"))
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = support::dap::scratch_dir(&format!("containers-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// 64 hex digits, different for every container.
fn container_id(name: &str) -> String {
    let seed = format!(
        "{}-{name}-{:?}",
        std::process::id(),
        std::time::SystemTime::now()
    );
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut out = String::new();
    for round in 0..4u8 {
        for b in seed.bytes().chain([round]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        out.push_str(&format!("{h:016x}"));
    }
    out
}

/// The cgroup v2 directory a docker container of this id would have, when this machine
/// lets the test create it.
fn docker_cgroup(id: &str) -> Option<PathBuf> {
    let root = ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]
        .into_iter()
        .map(PathBuf::from)
        .find(|r| r.join("cgroup.procs").exists() && r.join("cgroup.controllers").exists())?;
    let dir = root.join(format!("system.slice/docker-{id}.scope"));
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir)
}

/// The app and its library, built in `build` (sources copied there first, so a test can
/// build with its own prefix map); the app finds the library under `lib_dir` at run time.
fn build_app(build: &Path, lib_dir: &Path, flags: &[&str]) {
    for f in ["app.c", "lib.c"] {
        std::fs::copy(sample(f), build.join(f)).unwrap();
    }
    run(Command::new("gcc").current_dir(build).args(flags).args([
        "-g",
        "-O0",
        "-fPIC",
        "-shared",
        "-o",
        "libcontainer_lib.so",
        "lib.c",
    ]));
    run(Command::new("gcc")
        .current_dir(build)
        .args(flags)
        .args(["-g", "-O0", "-o", "app", "app.c", "-L."])
        .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
        .arg("-lcontainer_lib"));
}

/// A "container": the app running as pid 1 of new pid + mount namespaces, from a tmpfs
/// mounted only inside them; killed (and its cgroup removed) when dropped.
struct Container {
    unshare: KillOnDrop,
    /// The app's pid on the host.
    pid: i64,
    /// How tests name the container in `attach`.
    selector: String,
    /// The docker id, when a cgroup could be made.
    docker_id: Option<String>,
    cgroup: Option<PathBuf>,
    /// The app's path inside (absent on the host).
    inner_exe: PathBuf,
    build: PathBuf,
}

impl Container {
    fn start(name: &str, flags: &[&str], prefix_map_build: bool) -> Container {
        let dir = scratch(name);
        let build = dir.join("build");
        let mnt = dir.join("mnt");
        std::fs::create_dir_all(&build).unwrap();
        std::fs::create_dir_all(&mnt).unwrap();
        let inside = mnt.join("app");
        let mut all_flags: Vec<String> = flags.iter().map(ToString::to_string).collect();
        if prefix_map_build {
            all_flags.push(format!("-fdebug-prefix-map={}=/src", build.display()));
        }
        let refs: Vec<&str> = all_flags.iter().map(String::as_str).collect();
        build_app(&build, &inside, &refs);
        let id = container_id(name);
        let cgroup = docker_cgroup(&id);
        let enter_cgroup = cgroup
            .as_ref()
            .map(|c| format!("echo $$ > {}/cgroup.procs && ", c.display()))
            .unwrap_or_default();
        let inner = format!(
            "mount -t tmpfs tmpfs {mnt} && mkdir {inside} && cp {build}/app {build}/libcontainer_lib.so {inside}/ && exec {inside}/app",
            mnt = mnt.display(),
            inside = inside.display(),
            build = build.display()
        );
        let script = format!(
            "{enter_cgroup}exec unshare --pid --fork --kill-child --mount-proc sh -c '{inner}'"
        );
        let child = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let unshare = KillOnDrop(child);
        let inner_exe = inside.join("app");
        let mut pid = 0;
        assert!(
            wait_until(PATIENCE, || {
                pid = children_of(unshare.pid())
                    .into_iter()
                    .find(|p| {
                        std::fs::read_link(format!("/proc/{p}/exe")).ok().as_deref()
                            == Some(inner_exe.as_path())
                    })
                    .unwrap_or(0);
                pid != 0
            }),
            "the container's app did not start"
        );
        assert!(
            !inner_exe.exists(),
            "the app's path must not exist on the host"
        );
        let selector = match &cgroup {
            Some(_) => id[..12].to_string(),
            None => {
                let link = std::fs::read_link(format!("/proc/{pid}/ns/pid")).unwrap();
                let text = link.to_string_lossy().into_owned();
                format!(
                    "pidns:{}",
                    text.trim_start_matches("pid:[").trim_end_matches(']')
                )
            }
        };
        Container {
            unshare,
            pid,
            selector,
            docker_id: cgroup.as_ref().map(|_| id),
            cgroup,
            inner_exe,
            build,
        }
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        // The app is pid 1 of its namespace: killing it ends the namespace.
        let _ = Command::new("kill")
            .args(["-9", &self.pid.to_string()])
            .status();
        let _ = self.unshare.0.kill();
        let _ = self.unshare.0.wait();
        if let Some(c) = &self.cgroup {
            wait_until(Duration::from_secs(5), || std::fs::remove_dir(c).is_ok());
        }
    }
}

fn ps_json() -> Vec<Value> {
    let out = Command::new(support::tandem_bin())
        .args(["ps", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn row_of(rows: &[Value], pid: i64) -> Value {
    rows.iter()
        .find(|r| r["pid"] == pid)
        .unwrap_or_else(|| panic!("pid {pid} not listed"))
        .clone()
}

fn check_row(row: &Value, c: &Container) {
    assert_eq!(row["nsPid"], 1, "{row}");
    assert_eq!(row["nsPids"], json!([c.pid, 1]), "{row}");
    assert_eq!(row["otherNamespace"], true, "{row}");
    assert_eq!(row["exe"], c.inner_exe.display().to_string(), "{row}");
    let own_pid_ns = std::fs::read_link("/proc/self/ns/pid").unwrap();
    assert_ne!(
        format!("pid:[{}]", row["pidNamespace"]),
        own_pid_ns.to_string_lossy(),
        "{row}"
    );
    assert!(row["mountNamespace"].is_u64(), "{row}");
    match &c.docker_id {
        Some(id) => {
            assert_eq!(row["container"]["runtime"], "docker", "{row}");
            assert_eq!(row["container"]["id"], id.as_str(), "{row}");
        }
        None => assert!(row["container"].is_null(), "{row}"),
    }
}

#[test]
fn a_service_in_a_container_is_listed_attached_by_its_inner_pid_and_left_running() {
    let c = Container::start("attach", &[], false);
    let app_c = c.build.join("app.c");
    let lib_c = c.build.join("lib.c");

    // `tandem ps`: JSON always has the namespace fields; the table grows columns.
    check_row(&row_of(&ps_json(), c.pid), &c);
    let table = Command::new(support::tandem_bin())
        .arg("ps")
        .output()
        .unwrap();
    let table = String::from_utf8(table.stdout).unwrap();
    let header = table.lines().next().unwrap();
    for col in ["NSPID", "PIDNS", "MNTNS", "CONTAINER"] {
        assert!(header.contains(col), "{header}");
    }
    let line = table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&c.pid.to_string()))
        .unwrap();
    assert_eq!(line.split_whitespace().nth(3), Some("1"), "{line}");

    // The LSP command.
    let mut lsp = Peer::lsp();
    lsp.lsp_initialize(json!({}));
    let listed = lsp.lsp_request(
        "workspace/executeCommand",
        json!({"command": "tandem.listProcesses", "arguments": []}),
    );
    check_row(
        &row_of(listed["result"]["processes"].as_array().unwrap(), c.pid),
        &c,
    );
    drop(lsp);

    let mut dap = DapClient::new();
    dap.initialize();
    // The DAP custom request.
    let body = dap.ok("tandem/processes", json!({}));
    check_row(&row_of(body["processes"].as_array().unwrap(), c.pid), &c);

    // A pid that is not in the container, and a container that does not exist.
    let err = dap.err("attach", json!({"container": c.selector, "pid": 4_000_000}));
    assert!(err.contains("no process has pid 4000000"), "{err}");
    let err = dap.err("attach", json!({"container": "ffffffffffff0000", "pid": 1}));
    assert!(err.contains("no container matches"), "{err}");

    dap.ok("attach", json!({"container": c.selector, "pid": 1}));
    assert_eq!(dap.event("process")["body"]["systemProcessId"], c.pid);
    let line = line_of(&app_c, "LINE_ON_TICK");
    let bps = dap.ok(
        "setBreakpoints",
        json!({"source": {"path": app_c}, "breakpoints": [{"line": line}]}),
    );
    assert_eq!(bps["breakpoints"][0]["verified"], true, "{bps}");
    dap.ok("configurationDone", json!({}));
    let stopped = dap.event("stopped");
    assert_eq!(stopped["body"]["reason"], "breakpoint", "{stopped}");
    let thread = stopped["body"]["threadId"].as_i64().unwrap();
    assert_eq!(thread, c.pid);

    let threads = dap.ok("threads", json!({}));
    let name = threads["threads"][0]["name"].as_str().unwrap().to_string();
    assert!(
        name.contains(&format!("{}, 1 in container", c.pid)),
        "{name}"
    );

    let frames = dap.frames(thread);
    assert_eq!(frames[0]["name"], "on_tick", "{frames:#?}");
    assert_eq!(frames[0]["line"], line);
    assert_eq!(frames[0]["source"]["path"], app_c.display().to_string());
    // The library exists only inside the container: symbolized all the same.
    assert_eq!(frames[1]["name"], "lib_apply", "{frames:#?}");
    assert_eq!(frames[1]["source"]["path"], lib_c.display().to_string());
    assert_eq!(frames[1]["line"], line_of(&lib_c, "LINE_LIB_CALL"));
    assert_eq!(frames[2]["name"], "main", "{frames:#?}");

    let frame = frames[0]["id"].as_i64().unwrap();
    let scale = dap.evaluate(frame, "t->scale");
    assert_eq!(scale["result"], "1.5", "{scale}");
    let count: i64 = dap.evaluate(frame, "t->count")["result"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(count > 0);
    let args = dap.scope_vars(frame, "Arguments");
    assert_eq!(support::dap::var(&args, "t")["type"], "struct tick *");

    let modules = dap.ok("modules", json!({}));
    let lib = modules["modules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "libcontainer_lib.so")
        .unwrap_or_else(|| panic!("{modules}"))
        .clone();
    // Shown by the path the process sees.
    assert_eq!(
        lib["path"],
        c.inner_exe
            .with_file_name("libcontainer_lib.so")
            .display()
            .to_string(),
        "{lib}"
    );

    let r = dap.request("disconnect", json!({}));
    assert_eq!(r["success"], true, "{r}");
    assert!(dap.peer.wait_exit(PATIENCE).success());
    assert!(wait_until(PATIENCE, || tracer_of(c.pid) == 0));
    std::thread::sleep(Duration::from_millis(100));
    assert!(alive(c.pid), "the service must keep running after detach");
}

#[test]
fn attach_by_program_name_within_a_container() {
    let c = Container::start("byname", &[], false);
    let mut dap = DapClient::new();
    dap.initialize();
    let err = dap.err(
        "attach",
        json!({"container": c.selector, "program": "no-such-program"}),
    );
    assert!(err.contains("no process named"), "{err}");
    dap.ok("attach", json!({"container": c.selector, "program": "app"}));
    assert_eq!(dap.event("process")["body"]["systemProcessId"], c.pid);
    dap.ok("configurationDone", json!({}));
    dap.finish();
    assert!(wait_until(PATIENCE, || tracer_of(c.pid) == 0));
    assert!(alive(c.pid));
}

#[test]
fn sources_built_under_another_prefix_map_through_source_map_and_local_root() {
    let c = Container::start("prefix", &[], true);
    // The workspace: the sources where the user has them (here, where they were built).
    let ws = c.build.clone();
    let app_c = ws.join("app.c");
    let line = line_of(&app_c, "LINE_ON_TICK");

    for attach in [
        json!({"container": c.selector, "pid": 1, "sourceMap": {"/src": ws}}),
        json!({"container": c.selector, "pid": 1, "localRoot": ws}),
    ] {
        let mut dap = DapClient::new();
        dap.initialize();
        dap.ok("attach", attach.clone());
        let bps = dap.ok(
            "setBreakpoints",
            json!({"source": {"path": app_c}, "breakpoints": [{"line": line}]}),
        );
        assert_eq!(bps["breakpoints"][0]["verified"], true, "{attach}: {bps}");
        dap.ok("configurationDone", json!({}));
        let stopped = dap.event("stopped");
        let frames = dap.frames(stopped["body"]["threadId"].as_i64().unwrap());
        assert_eq!(frames[0]["source"]["path"], app_c.display().to_string());
        assert_eq!(frames[0]["line"], line);
        assert_eq!(
            frames[1]["source"]["path"],
            ws.join("lib.c").display().to_string()
        );
        if attach.get("localRoot").is_some() {
            let said = dap
                .output
                .iter()
                .any(|(_, text)| text.contains(&format!("mapped /src → {}", ws.display())));
            assert!(said, "{:?} {}", dap.output, dap.peer.stderr());
        }
        dap.finish();
        assert!(wait_until(PATIENCE, || tracer_of(c.pid) == 0));
    }
    assert!(alive(c.pid));
}

/// Reads one frame's JSON from a TCP stream.
fn read_message(reader: &mut wire::FrameReader<TcpStream>) -> Option<Value> {
    let body = reader.read_frame().ok()??;
    serde_json::from_slice(&body).ok()
}

fn start_listener(sub: &str, args: &[&str]) -> (KillOnDrop, Option<u16>, String) {
    let mut child = Command::new(support::tandem_bin())
        .arg(sub)
        .args(args)
        .env("XDG_RUNTIME_DIR", support::private_runtime_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stderr));
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    let port = first
        .strip_prefix("tandem: listening on ")
        .and_then(|a| a.rsplit(':').next())
        .and_then(|p| p.trim().parse().ok());
    (KillOnDrop(child), port, first)
}

#[test]
fn a_listener_reachable_from_outside_requires_and_checks_a_token() {
    // No token: refused at once.
    let (mut server, port, said) = start_listener("dap", &["--listen", "0.0.0.0:0"]);
    assert!(port.is_none(), "{said}");
    assert!(said.contains("--token"), "{said}");
    assert!(!server.0.wait().unwrap().success());

    let (_dap_server, port, said) =
        start_listener("dap", &["--listen", "0.0.0.0:0", "--token", "s3cret"]);
    let port = port.unwrap_or_else(|| panic!("{said}"));
    let connect = || {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(PATIENCE)).unwrap();
        let r = wire::FrameReader::new(s.try_clone().unwrap());
        (s, r)
    };
    let initialize = |token: Option<&str>| {
        let mut args = json!({"adapterID": "tandem", "clientID": "tests"});
        if let Some(t) = token {
            args["tandemToken"] = json!(t);
        }
        json!({"seq": 1, "type": "request", "command": "initialize", "arguments": args})
    };
    for (first, why) in [
        (initialize(None), "missing"),
        (initialize(Some("s3creT")), "wrong"),
        (
            json!({"seq": 1, "type": "request", "command": "threads", "arguments": {"tandemToken": "s3cret"}}),
            "initialize",
        ),
    ] {
        let (mut s, mut r) = connect();
        s.write_all(&wire::encode_frame(first.to_string().as_bytes()))
            .unwrap();
        let answer = read_message(&mut r).unwrap();
        assert_eq!(answer["success"], false, "{answer}");
        assert!(
            answer["message"].as_str().unwrap().contains(why),
            "{answer}"
        );
        // Then the connection is closed.
        assert!(read_message(&mut r).is_none());
    }
    let (mut s, mut r) = connect();
    s.write_all(&wire::encode_frame(
        initialize(Some("s3cret")).to_string().as_bytes(),
    ))
    .unwrap();
    let answer = read_message(&mut r).unwrap();
    assert_eq!(answer["success"], true, "{answer}");
    assert_eq!(answer["command"], "initialize");

    // The language server: the token in initializationOptions.tandem.token.
    let (_lsp_server, port, said) =
        start_listener("lsp", &["--listen", "0.0.0.0:0", "--token", "s3cret"]);
    let port = port.unwrap_or_else(|| panic!("{said}"));
    for (token, ok) in [(json!(null), false), (json!("s3cret"), true)] {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(PATIENCE)).unwrap();
        let mut r = wire::FrameReader::new(s.try_clone().unwrap());
        let init = json!({"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {
            "processId": null, "rootUri": null, "capabilities": {},
            "initializationOptions": {"tandem": {"token": token}}}});
        s.write_all(&wire::encode_frame(init.to_string().as_bytes()))
            .unwrap();
        let answer = read_message(&mut r).unwrap();
        assert_eq!(answer["id"], 7, "{answer}");
        if ok {
            assert!(answer["result"]["capabilities"].is_object(), "{answer}");
        } else {
            assert_eq!(answer["error"]["code"], -32600, "{answer}");
            assert!(read_message(&mut r).is_none());
        }
    }
}

#[test]
fn a_launch_whose_aslr_switch_is_refused_by_seccomp_warns_and_goes_on() {
    let dir = scratch("seccomp");
    // A wrapper that refuses personality() with any argument but the query (0xffffffff),
    // as container runtimes' default seccomp profiles do, then runs tandem.
    let wrapper_c = dir.join("no_personality.c");
    std::fs::write(
        &wrapper_c,
        r#"
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **argv) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_personality, 0, 4),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffff, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = { sizeof f / sizeof f[0], f };
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
        perror("seccomp");
        return 111;
    }
    execv(argv[1], argv + 1);
    perror("execv");
    return 112;
}
"#,
    )
    .unwrap();
    let wrapper = dir.join("no_personality");
    run(Command::new("gcc").arg("-o").arg(&wrapper).arg(&wrapper_c));
    let build = dir.join("build");
    std::fs::create_dir_all(&build).unwrap();
    build_app(&build, &build, &[]);
    let app_c = build.join("app.c");

    let mut cmd = Command::new(&wrapper);
    cmd.arg(support::tandem_bin())
        .arg("dap")
        .arg("--standalone")
        .env("XDG_RUNTIME_DIR", support::private_runtime_dir());
    let mut dap = DapClient::with_peer(Peer::from_command(Protocol::Dap, cmd));
    let stopped = dap.launch_to_stop(
        json!({"program": build.join("app"), "cwd": build}),
        &app_c,
        &[line_of(&app_c, "LINE_ON_TICK")],
    );
    assert_eq!(stopped["body"]["reason"], "breakpoint", "{stopped}");
    let warned = dap.output.iter().any(|(category, text)| {
        category == "console" && text.contains("cannot disable address randomization")
    });
    assert!(warned, "{:?}", dap.output);
    dap.finish();
}
