//! The process listing behind `tandem ps`: pid, ppid, user, command line, executable.

use std::path::PathBuf;
use target::Pid;

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

/// The rows as an aligned text table with a header, one line per process.
pub fn format_table(rows: &[ProcessRow]) -> String {
    let header = ["PID", "PPID", "USER", "EXE", "COMMAND"];
    let cells: Vec<[String; 5]> = rows
        .iter()
        .map(|r| {
            [
                r.pid.0.to_string(),
                r.ppid.0.to_string(),
                r.user.clone(),
                r.exe
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| "-".to_string()),
                r.command(),
            ]
        })
        .collect();
    let mut width = header.map(str::len);
    for c in &cells {
        for (i, cell) in c.iter().enumerate().take(4) {
            width[i] = width[i].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |c: [&str; 5]| {
        let s = format!(
            "{:>w0$}  {:>w1$}  {:<w2$}  {:<w3$}  {}",
            c[0],
            c[1],
            c[2],
            c[3],
            c[4],
            w0 = width[0],
            w1 = width[1],
            w2 = width[2],
            w3 = width[3]
        );
        out.push_str(s.trim_end());
        out.push('\n');
    };
    line(header);
    for c in &cells {
        line([&c[0], &c[1], &c[2], &c[3], &c[4]]);
    }
    out
}
