//! The process listing as JSON, shared by `tandem ps --json` and the DAP process picker.

use serde_json::{json, Value};

/// One JSON object per process: pid, ppid, uid, user, name, state, command, cmdline, exe.
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
                })
            })
            .collect(),
    )
}
