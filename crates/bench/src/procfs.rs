//! Memory of a debugger read from /proc: resident and peak resident set of a process and of
//! its helper processes (lldb-dap debugs through an `lldb-server` child), never counting the
//! debuggee itself.

use std::fs;

/// Resident set now and at its peak, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Memory {
    pub rss: u64,
    pub peak: u64,
}

impl std::ops::Add for Memory {
    type Output = Memory;
    fn add(self, other: Memory) -> Memory {
        Memory {
            rss: self.rss + other.rss,
            peak: self.peak + other.peak,
        }
    }
}

/// `VmRSS` and `VmHWM` of one process; zero when it is gone.
pub fn memory(pid: u32) -> Memory {
    let Ok(status) = fs::read_to_string(format!("/proc/{pid}/status")) else {
        return Memory::default();
    };
    parse_status(&status)
}

fn parse_status(status: &str) -> Memory {
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.trim().strip_suffix("kB"))
            .and_then(|kb| kb.trim().parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    Memory {
        rss: field("VmRSS:"),
        peak: field("VmHWM:"),
    }
}

/// The memory of `pid` and its descendants, leaving out `debuggee` and its descendants. Peaks
/// of different processes are summed, which overstates a tree whose members peaked at
/// different times; for a single adapter process it is exact.
pub fn tree_memory(pid: u32, debuggee: Option<u32>) -> Memory {
    let parents = parent_table();
    let mut total = Memory::default();
    let mut stack = vec![pid];
    while let Some(p) = stack.pop() {
        if Some(p) == debuggee {
            continue;
        }
        total = total + memory(p);
        stack.extend(
            parents
                .iter()
                .filter(|&&(_, parent)| parent == p)
                .map(|&(child, _)| child),
        );
    }
    total
}

/// (pid, parent pid) of every process.
fn parent_table() -> Vec<(u32, u32)> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|entry| {
        let pid: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The command name is in parentheses and may hold spaces; the fields after the last
        // `)` are state, then the parent pid.
        let after = stat.rsplit_once(')')?.1;
        let ppid = after.split_whitespace().nth(1)?.parse().ok()?;
        Some((pid, ppid))
    })
    .collect()
}

pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_status_fields() {
        let m = parse_status("Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n");
        assert_eq!(
            m,
            Memory {
                rss: 1024 * 1024,
                peak: 2048 * 1024
            }
        );
    }

    #[test]
    fn own_tree_has_memory() {
        let m = tree_memory(std::process::id(), None);
        assert!(m.rss > 0 && m.peak >= m.rss);
    }
}
