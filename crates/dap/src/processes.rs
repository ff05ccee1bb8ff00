//! The process listing as JSON, shared by `tandem ps --json` and the DAP custom request
//! `tandem/processes`. The LSP command `tandem.listProcesses` answers the same shape from
//! lsp/processes.rs: the two protocol crates are siblings and neither depends on the other.

use serde_json::{json, Value};

use crate::server::Adapter;

/// One JSON object per process: pid, ppid, uid, user, name, state, command, cmdline, exe,
/// and where it runs: `nsPid` (its pid inside its own pid namespace), `nsPids` (from
/// ours down to its own), `pidNamespace` and `mountNamespace` (inode numbers),
/// `otherNamespace` (whether either differs from tandem's), `container` (`{runtime, id,
/// shortId}` or null) and `hostname` (its /etc/hostname, for processes in another mount
/// namespace).
pub fn process_list_json(rows: &[procman::ProcessRow]) -> Value {
    Value::Array(
        rows.iter()
            .map(|r| {
                json!({
                    "pid": r.pid.0,
                    "ppid": r.ppid.0,
                    "uid": r.uid,
                    "user": r.user,
                    "name": r.name,
                    "state": r.state.to_string(),
                    "command": r.command(),
                    "cmdline": r.cmdline,
                    "exe": r.exe.as_ref().map(|p| p.display().to_string()),
                    "nsPid": r.inner_pid().0,
                    "nsPids": r.ns_pids,
                    "pidNamespace": r.pid_ns,
                    "mountNamespace": r.mnt_ns,
                    "otherNamespace": r.in_other_namespace(),
                    "container": r.container.as_ref().map(|c| json!({
                        "runtime": c.runtime.as_str(),
                        "id": c.id,
                        "shortId": c.short_id(),
                    })),
                    "hostname": r
                        .in_other_namespace()
                        .then(|| procman::containers::hostname_of(r.pid))
                        .flatten(),
                })
            })
            .collect(),
    )
}

/// The custom request `tandem/processes`: `{"processes": [...]}` as
/// [`process_list_json`] describes; arguments are ignored.
pub(crate) fn processes_request(a: &mut Adapter, req: &wire::dap::Request) {
    let rows = procman::list_processes();
    let body = json!({ "processes": process_list_json(&rows) });
    a.out().success(req.seq, &req.command, body);
}
