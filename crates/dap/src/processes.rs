//! The process listing as JSON, shared by `tandem ps --json` and the DAP custom request
//! `tandem/processes`. The fields are procman's `ProcessEntry`, which the LSP command
//! `tandem.listProcesses` serializes too.

use serde_json::{json, Value};

use crate::server::Adapter;

/// One JSON object per process, with the fields of [`procman::ProcessEntry`].
pub fn process_list_json(rows: &[procman::ProcessRow]) -> Value {
    let entries: Vec<procman::ProcessEntry> = rows.iter().map(procman::ProcessRow::entry).collect();
    serde_json::to_value(entries).unwrap_or(Value::Array(Vec::new()))
}

/// The custom request `tandem/processes`: `{"processes": [...]}` as
/// [`process_list_json`] describes; arguments are ignored.
pub(crate) fn processes_request(a: &mut Adapter, req: &wire::dap::Request) {
    let rows = procman::list_processes();
    let body = json!({ "processes": process_list_json(&rows) });
    a.out().success(req.seq, &req.command, body);
}
