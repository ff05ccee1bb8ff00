//! The `tandem.listProcesses` command: the process listing (with namespaces and
//! containers) as the DAP request `tandem/processes` returns it.

use serde_json::{json, Value};

/// The command's name, as advertised in `executeCommandProvider`.
pub const LIST_PROCESSES: &str = "tandem.listProcesses";

/// `{"processes": [...]}`, one object per process with the fields of docs/dap.md
/// (`tandem/processes`).
pub fn list_processes() -> Value {
    let rows = procman::list_processes();
    let list: Vec<Value> = rows
        .iter()
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
        .collect();
    json!({ "processes": list })
}
