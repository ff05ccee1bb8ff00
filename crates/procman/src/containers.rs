//! Containers seen from the host: the container a process belongs to (from its cgroup),
//! its pid and mount namespaces, its pids inside nested pid namespaces, and finding the
//! processes of one container by id, name or namespace.
//!
//! A "container" here is whatever the kernel shows: a cgroup path named the way a
//! runtime names it (docker, containerd/Kubernetes, CRI-O, podman, systemd-nspawn), or —
//! for processes put in their own namespaces without a runtime (`unshare`) — the pid
//! namespace alone. Nothing is asked of the runtimes themselves: no socket, no CLI.

use std::path::PathBuf;
use std::sync::OnceLock;

use tracer::Pid;

use crate::error::{Error, Result};
use crate::listing::ProcessRow;

/// The container runtime a cgroup path points to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Runtime {
    /// Docker (`/docker/ID`, `docker-ID.scope`).
    Docker,
    /// containerd, as Kubernetes uses it (`cri-containerd-ID.scope`, `/kubepods/.../ID`).
    Containerd,
    /// CRI-O (`crio-ID.scope`).
    CriO,
    /// Podman (`libpod-ID.scope`, `/libpod_parent/libpod-ID`).
    Podman,
    /// systemd-nspawn (`machine-NAME.scope`, `systemd-nspawn@NAME.service`).
    Nspawn,
}

impl Runtime {
    /// The runtime's usual name: `docker`, `containerd`, `cri-o`, `podman`,
    /// `systemd-nspawn`.
    pub fn as_str(self) -> &'static str {
        match self {
            Runtime::Docker => "docker",
            Runtime::Containerd => "containerd",
            Runtime::CriO => "cri-o",
            Runtime::Podman => "podman",
            Runtime::Nspawn => "systemd-nspawn",
        }
    }
}

impl std::fmt::Display for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The container a process runs in, as its cgroup names it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Container {
    /// Which runtime.
    pub runtime: Runtime,
    /// The container id (64 hex digits) or, for systemd-nspawn, the machine name.
    pub id: String,
}

impl Container {
    /// The id as `docker ps` shows it: 12 characters of a hex id, a name whole.
    pub fn short_id(&self) -> &str {
        if self.id.len() == 64 && is_hex(&self.id) {
            self.id.get(..12).unwrap_or(&self.id)
        } else {
            &self.id
        }
    }
}

fn is_hex(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A container id: 64 lowercase hex digits.
fn is_container_id(s: &str) -> bool {
    s.len() == 64 && is_hex(s)
}

/// The container named by the contents of /proc/PID/cgroup (cgroup v1 lines
/// `ID:controllers:PATH` and the v2 line `0::PATH` alike); `None` outside containers.
/// The first line that names a container wins.
pub fn parse_cgroup(text: &str) -> Option<Container> {
    text.lines()
        .filter_map(|line| line.splitn(3, ':').nth(2))
        .find_map(container_of_path)
}

/// The container a cgroup path names.
fn container_of_path(path: &str) -> Option<Container> {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    // The innermost component that names a container wins: podman and nspawn put the
    // payload in a child cgroup (`libpod-ID.scope/container`, `machine-X.scope/payload`).
    for (i, part) in parts.iter().enumerate().rev() {
        let scoped = |prefix: &str| {
            part.strip_prefix(prefix)
                .map(|rest| rest.strip_suffix(".scope").unwrap_or(rest))
                .filter(|id| is_container_id(id))
                .map(str::to_string)
        };
        if let Some(id) = scoped("docker-") {
            return Some(Container {
                runtime: Runtime::Docker,
                id,
            });
        }
        if let Some(id) = scoped("cri-containerd-") {
            return Some(Container {
                runtime: Runtime::Containerd,
                id,
            });
        }
        if let Some(id) = scoped("crio-") {
            return Some(Container {
                runtime: Runtime::CriO,
                id,
            });
        }
        // `libpod-conmon-ID.scope` is podman's monitor process on the host: not inside.
        if let Some(id) = scoped("libpod-") {
            return Some(Container {
                runtime: Runtime::Podman,
                id,
            });
        }
        if let Some(name) = part
            .strip_prefix("machine-")
            .and_then(|r| r.strip_suffix(".scope"))
            .or_else(|| {
                part.strip_prefix("systemd-nspawn@")
                    .and_then(|r| r.strip_suffix(".service"))
            })
            .filter(|n| !n.is_empty())
        {
            return Some(Container {
                runtime: Runtime::Nspawn,
                id: unescape_unit(name),
            });
        }
        if is_container_id(part) && i > 0 {
            // cgroupfs drivers: `/docker/ID`, `/kubepods/besteffort/podUID/ID`.
            let runtime = if parts[..i].contains(&"docker") {
                Runtime::Docker
            } else if parts[..i].iter().any(|p| p.starts_with("kubepods")) {
                Runtime::Containerd
            } else if parts[..i].contains(&"libpod_parent") {
                Runtime::Podman
            } else {
                continue;
            };
            return Some(Container {
                runtime,
                id: (*part).to_string(),
            });
        }
    }
    None
}

/// Undoes systemd's unit-name escaping (`my\x2dbox` → `my-box`).
fn unescape_unit(name: &str) -> String {
    let mut out = Vec::with_capacity(name.len());
    let bytes = name.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && bytes.get(i + 1) == Some(&b'x') {
            if let Some(v) = name
                .get(i + 2..i + 4)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The pids of a process from the outermost visible pid namespace to its own, from the
/// `NSpid:` line of /proc/PID/status (one entry when it shares ours).
pub fn parse_ns_pids(status: &str) -> Vec<i32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("NSpid:"))
        .map(|v| {
            v.split_whitespace()
                .filter_map(|n| n.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The namespace inode from a /proc/PID/ns link's text (`pid:[4026531836]`).
fn parse_ns_link(text: &str) -> Option<u64> {
    text.split_once(":[")?.1.strip_suffix(']')?.parse().ok()
}

/// The id (inode) of namespace `kind` (`pid`, `mnt`, …) of `/proc/<who>` (`self` or a
/// pid); `None` when it cannot be read (gone, or not permitted).
pub fn namespace_id(who: &str, kind: &str) -> Option<u64> {
    let link = std::fs::read_link(format!("/proc/{who}/ns/{kind}")).ok()?;
    parse_ns_link(&link.to_string_lossy())
}

/// tandem's own pid and mount namespaces, read once.
pub fn own_namespaces() -> (Option<u64>, Option<u64>) {
    static OWN: OnceLock<(Option<u64>, Option<u64>)> = OnceLock::new();
    *OWN.get_or_init(|| (namespace_id("self", "pid"), namespace_id("self", "mnt")))
}

/// The host name a process's file system gives (its /etc/hostname, read through
/// /proc/PID/root), trimmed; `None` when absent or empty.
pub fn hostname_of(pid: Pid) -> Option<String> {
    let path = PathBuf::from(format!("/proc/{}/root/etc/hostname", pid.0));
    let text = std::fs::read_to_string(path).ok()?;
    let name = text.lines().next()?.trim();
    (!name.is_empty()).then(|| name.to_string())
}

/// The id of a thread inside its own pid namespace (the last NSpid of
/// /proc/PID/task/TID/status); `None` when it cannot be read.
pub fn ns_tid(pid: Pid, tid: i32) -> Option<i32> {
    let status = std::fs::read_to_string(format!("/proc/{}/task/{tid}/status", pid.0)).ok()?;
    parse_ns_pids(&status).last().copied()
}

/// What groups processes into one container: the runtime's container, else (processes
/// in their own pid namespace without a runtime) that pid namespace.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ContainerKey {
    /// A runtime's container.
    Runtime(Container),
    /// A pid namespace other than tandem's, by inode.
    PidNamespace(u64),
}

impl std::fmt::Display for ContainerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ContainerKey::Runtime(c) => write!(f, "{} {}", c.runtime, c.short_id()),
            ContainerKey::PidNamespace(ns) => write!(f, "pidns:{ns}"),
        }
    }
}

/// The container a listed process belongs to, if any.
pub fn container_key(row: &ProcessRow) -> Option<ContainerKey> {
    if let Some(c) = &row.container {
        return Some(ContainerKey::Runtime(c.clone()));
    }
    let (own_pid_ns, _) = own_namespaces();
    match (row.pid_ns, own_pid_ns) {
        (Some(ns), Some(own)) if ns != own => Some(ContainerKey::PidNamespace(ns)),
        _ => None,
    }
}

/// Whether `selector` names the container of `row`: a prefix of its container id (the
/// whole machine name for systemd-nspawn), the host name in its file system when it runs
/// in another mount namespace, or `pidns:INODE` / the inode of its pid namespace.
fn selects(selector: &str, row: &ProcessRow, key: &ContainerKey) -> bool {
    if let ContainerKey::Runtime(c) = key {
        let by_id = if c.runtime == Runtime::Nspawn {
            c.id == selector
        } else {
            c.id.starts_with(&selector.to_ascii_lowercase())
        };
        if by_id {
            return true;
        }
    }
    let ns = selector.strip_prefix("pidns:").unwrap_or(selector);
    if let (Ok(ns), Some(own)) = (ns.parse::<u64>(), row.pid_ns) {
        if ns == own {
            return true;
        }
    }
    let (_, own_mnt) = own_namespaces();
    row.mnt_ns.is_some()
        && row.mnt_ns != own_mnt
        && hostname_of(row.pid).as_deref() == Some(selector)
}

/// The processes (of `rows`) of the one container `selector` names; an error when it names
/// none or several.
pub fn container_processes(rows: &[ProcessRow], selector: &str) -> Result<Vec<ProcessRow>> {
    let selector = selector.trim();
    if selector.is_empty() {
        return Err(Error::Container("the container name is empty".into()));
    }
    let mut keys: Vec<ContainerKey> = Vec::new();
    for row in rows {
        if let Some(key) = container_key(row) {
            if !keys.contains(&key) && selects(selector, row, &key) {
                keys.push(key);
            }
        }
    }
    match keys.as_slice() {
        [] => Err(Error::Container(format!(
            "no container matches '{selector}'"
        ))),
        [key] => Ok(rows
            .iter()
            .filter(|r| container_key(r).as_ref() == Some(key))
            .cloned()
            .collect()),
        many => Err(Error::Container(format!(
            "'{selector}' matches {} containers: {}",
            many.len(),
            many.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "4f1b3c2d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f809";

    fn parsed(text: &str) -> Option<(Runtime, String)> {
        parse_cgroup(text).map(|c| (c.runtime, c.id))
    }

    #[test]
    fn docker_cgroup_v1_cgroupfs_driver() {
        let text =
            format!("12:pids:/docker/{ID}\n11:memory:/docker/{ID}\n1:name=systemd:/docker/{ID}\n");
        assert_eq!(parsed(&text), Some((Runtime::Docker, ID.to_string())));
    }

    #[test]
    fn docker_cgroup_v2_systemd_driver() {
        let text = format!("0::/system.slice/docker-{ID}.scope\n");
        assert_eq!(parsed(&text), Some((Runtime::Docker, ID.to_string())));
        let c = parse_cgroup(&text).unwrap();
        assert_eq!(c.short_id(), &ID[..12]);
    }

    #[test]
    fn docker_cgroup_v1_systemd_driver_beside_other_hierarchies() {
        // A hybrid host: a memory cgroup that is not a container comes first.
        let text = format!(
            "4:memory:/process_api/655643597a522c04d29da28eeec531fa\n\
             1:name=systemd:/system.slice/docker-{ID}.scope\n0::/\n"
        );
        assert_eq!(parsed(&text), Some((Runtime::Docker, ID.to_string())));
    }

    #[test]
    fn kubernetes_containerd_v2_and_v1() {
        let v2 = format!(
            "0::/kubepods.slice/kubepods-burstable.slice/\
             kubepods-burstable-pod8f3c0a1e_2b4d_4c6e_9f00_1a2b3c4d5e6f.slice/\
             cri-containerd-{ID}.scope\n"
        );
        assert_eq!(parsed(&v2), Some((Runtime::Containerd, ID.to_string())));
        let v1 = format!(
            "11:cpu,cpuacct:/kubepods/burstable/pod8f3c0a1e-2b4d-4c6e-9f00-1a2b3c4d5e6f/{ID}\n"
        );
        assert_eq!(parsed(&v1), Some((Runtime::Containerd, ID.to_string())));
        let besteffort = format!("0::/kubepods/besteffort/podabc/{ID}\n");
        assert_eq!(
            parsed(&besteffort),
            Some((Runtime::Containerd, ID.to_string()))
        );
    }

    #[test]
    fn cri_o() {
        let text = format!(
            "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podx.slice/crio-{ID}.scope\n"
        );
        assert_eq!(parsed(&text), Some((Runtime::CriO, ID.to_string())));
    }

    #[test]
    fn podman_v2_rootful_rootless_and_v1() {
        let rootful = format!("0::/machine.slice/libpod-{ID}.scope/container\n");
        assert_eq!(parsed(&rootful), Some((Runtime::Podman, ID.to_string())));
        let rootless = format!(
            "0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-{ID}.scope\n"
        );
        assert_eq!(parsed(&rootless), Some((Runtime::Podman, ID.to_string())));
        let v1 = format!("10:memory:/libpod_parent/libpod-{ID}\n");
        assert_eq!(parsed(&v1), Some((Runtime::Podman, ID.to_string())));
        // conmon, podman's monitor, runs on the host.
        let conmon = format!("0::/machine.slice/libpod-conmon-{ID}.scope\n");
        assert_eq!(parsed(&conmon), None);
    }

    #[test]
    fn systemd_nspawn_scope_and_service() {
        let scope = "0::/machine.slice/machine-my\\x2dbox.scope/payload\n";
        assert_eq!(parsed(scope), Some((Runtime::Nspawn, "my-box".to_string())));
        let service = "1:name=systemd:/machine.slice/systemd-nspawn@debian.service/payload\n";
        assert_eq!(
            parsed(service),
            Some((Runtime::Nspawn, "debian".to_string()))
        );
    }

    #[test]
    fn no_container() {
        for text in [
            "0::/\n",
            "0::/user.slice/user-1000.slice/session-2.scope\n",
            "0::/system.slice/sshd.service\n",
            "12:pids:/\n1:name=systemd:/init.scope\n0::/init.scope\n",
            "4:memory:/process_api/655643597a522c04d29da28eeec531fa\n",
            // Not 64 hex digits: not a container id.
            "0::/system.slice/docker-abc.scope\n",
            "0::/docker/not-hex\n",
            "",
            "garbage without colons\n",
        ] {
            assert_eq!(parsed(text), None, "{text:?}");
        }
    }

    #[test]
    fn ns_pids_and_links() {
        assert_eq!(
            parse_ns_pids("Name:\tx\nNSpid:\t4242\t7\nPPid:\t1\n"),
            vec![4242, 7]
        );
        assert_eq!(parse_ns_pids("NSpid:\t12\n"), vec![12]);
        assert!(parse_ns_pids("Name:\tx\n").is_empty());
        assert_eq!(parse_ns_link("pid:[4026531836]"), Some(4026531836));
        assert_eq!(parse_ns_link("pid:4026531836"), None);
    }

    #[test]
    fn own_process_is_in_no_container_by_namespace() {
        let me = crate::read_process(Pid(std::process::id() as i32)).unwrap();
        assert_eq!(me.pid_ns, own_namespaces().0);
        assert!(!me.in_other_namespace());
        assert_eq!(me.inner_pid(), me.pid);
    }
}
