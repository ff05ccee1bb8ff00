//! The `tandem.listProcesses` command: the process listing (with namespaces and
//! containers) as the DAP request `tandem/processes` returns it.

use serde_json::{json, Value};

/// The command's name, as advertised in `executeCommandProvider`.
pub const LIST_PROCESSES: &str = "tandem.listProcesses";

/// `{"processes": [...]}`, one object per process with the fields of docs/dap.md
/// (`tandem/processes`).
pub fn list_processes() -> Value {
    let entries: Vec<procman::ProcessEntry> = procman::list_processes()
        .iter()
        .map(procman::ProcessRow::entry)
        .collect();
    json!({ "processes": entries })
}
