//! The process listing behind `tandem ps`: pid, ppid, user, command line, executable,
//! and for processes in containers their pid inside, their namespaces and the container.

use std::path::PathBuf;
use tracer::Pid;

use crate::containers::{self, Container};

/// One process as /proc shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessRow {
    /// Process id.
    pub pid: Pid,
    /// Parent process id.
    pub ppid: Pid,
    /// Real user id.
    pub uid: u32,
    /// User name (the uid in decimal when it has no name).
    pub user: String,
    /// The command name (comm), for processes with an empty command line.
    pub name: String,
    /// Command line arguments (empty for kernel threads and zombies).
    pub cmdline: Vec<String>,
    /// The executable, when readable.
    pub exe: Option<PathBuf>,
    /// The state letter (R, S, t, Z, ...).
    pub state: char,
    /// Its pids from our pid namespace down to its own (NSpid); one entry when it
    /// shares ours, empty when unreadable.
    pub ns_pids: Vec<i32>,
    /// Its pid namespace (the inode of /proc/PID/ns/pid), when readable.
    pub pid_ns: Option<u64>,
    /// Its mount namespace (the inode of /proc/PID/ns/mnt), when readable.
    pub mnt_ns: Option<u64>,
    /// The container its cgroup names, if any.
    pub container: Option<Container>,
}

/// One process as the front-ends list it (DAP `tandem/processes`, the LSP command
/// `tandem.listProcesses`, `tandem ps --json`): the fields of docs/dap.md, named once here
/// and serialized by the protocol crates (`nsPid` is its pid inside its own namespace,
/// `nsPids` its pids from ours down to its own, `otherNamespace` whether its pid or mount
/// namespace differs from tandem's, `hostname` its /etc/hostname when it does).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessEntry {
    pub pid: i32,
    pub ppid: i32,
    pub uid: u32,
    pub user: String,
    pub name: String,
    pub state: String,
    pub command: String,
    pub cmdline: Vec<String>,
    pub exe: Option<String>,
    pub ns_pid: i32,
    pub ns_pids: Vec<i32>,
    pub pid_namespace: Option<u64>,
    pub mount_namespace: Option<u64>,
    pub other_namespace: bool,
    pub container: Option<ContainerEntry>,
    pub hostname: Option<String>,
}

/// The container of a [`ProcessEntry`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerEntry {
    pub runtime: &'static str,
    pub id: String,
    pub short_id: String,
}

impl ProcessRow {
    /// The command line as one string, or `[name]` when it is empty (kernel threads).
    pub fn command(&self) -> String {
        if self.cmdline.is_empty() {
            format!("[{}]", self.name)
        } else {
            self.cmdline.join(" ")
        }
    }

    /// The row as front-ends list it (reads the hostname of a process in another
    /// mount namespace).
    pub fn entry(&self) -> ProcessEntry {
        let other_namespace = self.in_other_namespace();
        ProcessEntry {
            pid: self.pid.0,
            ppid: self.ppid.0,
            uid: self.uid,
            user: self.user.clone(),
            name: self.name.clone(),
            state: self.state.to_string(),
            command: self.command(),
            cmdline: self.cmdline.clone(),
            exe: self.exe.as_ref().map(|p| p.display().to_string()),
            ns_pid: self.inner_pid().0,
            ns_pids: self.ns_pids.clone(),
            pid_namespace: self.pid_ns,
            mount_namespace: self.mnt_ns,
            other_namespace,
            container: self.container.as_ref().map(|c| ContainerEntry {
                runtime: c.runtime.as_str(),
                id: c.id.clone(),
                short_id: c.short_id().to_string(),
            }),
            hostname: other_namespace
                .then(|| containers::hostname_of(self.pid))
                .flatten(),
        }
    }

    /// Its pid inside its own pid namespace (the pid itself when it shares ours).
    pub fn inner_pid(&self) -> Pid {
        self.ns_pids.last().map_or(self.pid, |p| Pid(*p))
    }

    /// Whether it runs in a pid or mount namespace other than tandem's.
    pub fn in_other_namespace(&self) -> bool {
        let (pid_ns, mnt_ns) = containers::own_namespaces();
        (self.pid_ns.is_some() && self.pid_ns != pid_ns)
            || (self.mnt_ns.is_some() && self.mnt_ns != mnt_ns)
    }

    /// The container column: `docker 4f1b3c2d5e6f`, `pidns:4026532301` for a process in
    /// its own pid namespace without a runtime, empty otherwise.
    pub fn container_label(&self) -> String {
        containers::container_key(self)
            .map(|k| k.to_string())
            .unwrap_or_default()
    }

    /// The row as (column, value) pairs, in table order: what a front-end needs to
    /// serialize it (e.g. `tandem ps --json`) without procman knowing JSON.
    pub fn to_pairs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("pid", self.pid.0.to_string()),
            ("ppid", self.ppid.0.to_string()),
            ("uid", self.uid.to_string()),
            ("user", self.user.clone()),
            ("state", self.state.to_string()),
            ("name", self.name.clone()),
            (
                "exe",
                self.exe
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
            ),
            ("command", self.command()),
            ("nspid", self.inner_pid().0.to_string()),
            (
                "pidns",
                self.pid_ns.map(|n| n.to_string()).unwrap_or_default(),
            ),
            (
                "mntns",
                self.mnt_ns.map(|n| n.to_string()).unwrap_or_default(),
            ),
            (
                "runtime",
                self.container
                    .as_ref()
                    .map(|c| c.runtime.to_string())
                    .unwrap_or_default(),
            ),
            (
                "container",
                self.container
                    .as_ref()
                    .map(|c| c.id.clone())
                    .unwrap_or_default(),
            ),
        ]
    }
}

/// Reads one process from /proc; `None` when it vanished meanwhile.
pub fn read_process(pid: Pid) -> Option<ProcessRow> {
    let base = format!("/proc/{}", pid.0);
    let stat = std::fs::read_to_string(format!("{base}/stat")).ok()?;
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let name = stat.get(open + 1..close)?.to_string();
    let mut rest = stat.get(close + 1..)?.split_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    let status = std::fs::read_to_string(format!("{base}/status")).ok()?;
    let uid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let cmdline = std::fs::read(format!("{base}/cmdline"))
        .map(|b| {
            b.split(|c| *c == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect()
        })
        .unwrap_or_default();
    Some(ProcessRow {
        pid,
        ppid: Pid(ppid),
        uid,
        user: user_name(uid),
        name,
        cmdline,
        exe: std::fs::read_link(format!("{base}/exe")).ok(),
        state,
        ns_pids: containers::parse_ns_pids(&status),
        pid_ns: containers::namespace_id(&pid.0.to_string(), "pid"),
        mnt_ns: containers::namespace_id(&pid.0.to_string(), "mnt"),
        container: std::fs::read_to_string(format!("{base}/cgroup"))
            .ok()
            .and_then(|t| containers::parse_cgroup(&t)),
    })
}

fn user_name(uid: u32) -> String {
    nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten()
        .map(|u| u.name)
        .unwrap_or_else(|| uid.to_string())
}

/// Every process in /proc, sorted by pid.
pub fn list_processes() -> Vec<ProcessRow> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut rows: Vec<ProcessRow> = dir
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
        .filter_map(|pid| read_process(Pid(pid)))
        .collect();
    rows.sort_by_key(|r| r.pid);
    rows
}

/// The rows as an aligned text table with a header, one line per process. When any
/// process runs in another pid or mount namespace, the table also shows each process's
/// pid inside its namespace, its namespaces and its container.
pub fn format_table(rows: &[ProcessRow]) -> String {
    let wide = rows.iter().any(ProcessRow::in_other_namespace);
    let mut header = vec!["PID", "PPID", "USER"];
    if wide {
        header.extend(["NSPID", "PIDNS", "MNTNS", "CONTAINER"]);
    }
    header.extend(["EXE", "COMMAND"]);
    let right_aligned = |i: usize| i < 2 || (wide && i == 3);
    let opt = |n: Option<u64>| n.map_or_else(|| "-".to_string(), |n| n.to_string());
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut c = vec![r.pid.0.to_string(), r.ppid.0.to_string(), r.user.clone()];
            if wide {
                let label = r.container_label();
                c.extend([
                    r.inner_pid().0.to_string(),
                    opt(r.pid_ns),
                    opt(r.mnt_ns),
                    if label.is_empty() { "-".into() } else { label },
                ]);
            }
            c.extend([
                r.exe
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| "-".to_string()),
                r.command(),
            ]);
            c
        })
        .collect();
    let mut width: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for c in &cells {
        for (w, cell) in width.iter_mut().zip(c) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let last = header.len() - 1;
    let mut out = String::new();
    let mut line = |c: &[&str]| {
        let mut s = String::new();
        for (i, cell) in c.iter().enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            if i == last {
                s.push_str(cell);
            } else if right_aligned(i) {
                s.push_str(&format!("{cell:>w$}", w = width[i]));
            } else {
                s.push_str(&format!("{cell:<w$}", w = width[i]));
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
    };
    line(&header);
    for c in &cells {
        let refs: Vec<&str> = c.iter().map(String::as_str).collect();
        line(&refs);
    }
    out
}
