//! Tests of the test-side protocol validators in `support/schema.rs`: hand-written
//! messages that must pass and near misses that must fail, so that a validator which
//! accepts everything cannot go unnoticed.
//!
//! They live here rather than in a `#[cfg(test)]` module of schema.rs because every
//! integration test includes that file and would otherwise run them all again.

#[path = "support/lsp_types_check.rs"]
mod lsp_types_check;
#[path = "support/schema.rs"]
mod schema;

use schema::{DapSchema, LspModel};
use serde_json::{json, Value};
use std::io::Write as _;

fn dap() -> DapSchema {
    DapSchema::load().expect("the DAP schema loads (from ../shared/protocol or debugpy)")
}

/// None when metaModel.json is absent; the LSP cases then say so and check nothing.
fn lsp() -> Option<LspModel> {
    match LspModel::load() {
        Ok(model) => Some(model),
        Err(e) => {
            // Past the harness's capture, so that a skip shows in a passing run.
            let _ = writeln!(std::io::stderr(), "LSP validation skipped: {e:#}");
            None
        }
    }
}

fn dap_ok(schema: &DapSchema, msg: Value) {
    if let Err(e) = schema.validate(&msg) {
        panic!("expected valid, got: {e}");
    }
}

/// The message must fail, and the error must mention every `needles`.
fn dap_err(schema: &DapSchema, msg: Value, needles: &[&str]) {
    match schema.validate(&msg) {
        Ok(()) => panic!("expected invalid: {msg}"),
        Err(e) => {
            for needle in needles {
                assert!(
                    e.contains(needle),
                    "error {e:?} does not mention {needle:?}"
                );
            }
        }
    }
}

fn lsp_ok(model: &LspModel, msg: Value, answered: Option<&str>) {
    if let Err(e) = model.validate_server_message(&msg, answered) {
        panic!("expected valid, got: {e}");
    }
}

fn lsp_err(model: &LspModel, msg: Value, answered: Option<&str>, needles: &[&str]) {
    match model.validate_server_message(&msg, answered) {
        Ok(()) => panic!("expected invalid: {msg}"),
        Err(e) => {
            for needle in needles {
                assert!(
                    e.contains(needle),
                    "error {e:?} does not mention {needle:?}"
                );
            }
        }
    }
}

fn response(command: &str, body: Value) -> Value {
    json!({"seq": 3, "type": "response", "request_seq": 1, "success": true,
           "command": command, "body": body})
}

// ---------------------------------------------------------------------------------------
// DAP

#[test]
fn dap_initialize_response_valid() {
    let schema = dap();
    let msg = response(
        "initialize",
        json!({
            "supportsConfigurationDoneRequest": true,
            "supportsTerminateRequest": false,
            "exceptionBreakpointFilters": [{"filter": "signal", "label": "Signals"}]
        }),
    );
    assert_eq!(schema.definition_for(&msg).unwrap(), "InitializeResponse");
    dap_ok(&schema, msg);
    assert_eq!(schema.checked(), 1);
}

#[test]
fn dap_misspelt_capability_fails() {
    let schema = dap();
    dap_err(
        &schema,
        response(
            "initialize",
            json!({"supportsConfigurationDoneReqest": true}),
        ),
        &[
            "/body/supportsConfigurationDoneReqest",
            "not declared",
            "InitializeResponse",
        ],
    );
    // Inside an array of structures too.
    dap_err(
        &schema,
        response(
            "initialize",
            json!({"exceptionBreakpointFilters": [{"filter": "s", "label": "S", "defualt": true}]}),
        ),
        &["/body/exceptionBreakpointFilters/0/defualt"],
    );
    assert_eq!(schema.checked(), 2);
}

#[test]
fn dap_misspelt_envelope_field_fails() {
    let schema = dap();
    let mut msg = response("disconnect", json!(null));
    msg["requestSeq"] = json!(1);
    dap_err(&schema, msg, &["requestSeq"]);
}

#[test]
fn dap_wrong_types_fail() {
    let schema = dap();
    dap_err(
        &schema,
        response(
            "initialize",
            json!({"supportsConfigurationDoneRequest": "yes"}),
        ),
        &["/body/supportsConfigurationDoneRequest"],
    );
    let mut no_seq = response("initialize", json!({}));
    no_seq.as_object_mut().unwrap().remove("seq");
    dap_err(&schema, no_seq, &["seq"]);
    let mut bad_type = response("initialize", json!({}));
    bad_type["type"] = json!("reply");
    dap_err(&schema, bad_type, &["reply"]);
}

#[test]
fn dap_error_response() {
    let schema = dap();
    let failed = json!({"seq": 2, "type": "response", "request_seq": 7, "success": false,
        "command": "launch", "message": "program not found",
        "body": {"error": {"id": 1001, "format": "program {path} not found",
                           "variables": {"path": "/x"}, "showUser": true}}});
    assert_eq!(schema.definition_for(&failed).unwrap(), "ErrorResponse");
    dap_ok(&schema, failed.clone());
    // The schema requires `body` on an error response.
    let mut no_body = failed.clone();
    no_body.as_object_mut().unwrap().remove("body");
    dap_err(&schema, no_body, &["ErrorResponse", "body"]);
    // Message.variables values must be strings.
    let mut number_variable = failed.clone();
    number_variable["body"]["error"]["variables"]["path"] = json!(1);
    dap_err(&schema, number_variable, &["/body/error/variables/path"]);
    let mut misspelt = failed;
    misspelt["body"]["error"]["showuser"] = json!(true);
    dap_err(&schema, misspelt, &["/body/error/showuser"]);
}

#[test]
fn dap_events() {
    let schema = dap();
    let stopped = json!({"seq": 5, "type": "event", "event": "stopped",
        "body": {"reason": "breakpoint", "threadId": 1, "allThreadsStopped": true,
                 "hitBreakpointIds": [1]}});
    assert_eq!(schema.definition_for(&stopped).unwrap(), "StoppedEvent");
    dap_ok(&schema, stopped.clone());
    let mut misspelt = stopped.clone();
    misspelt["body"]["threadID"] = json!(1);
    dap_err(&schema, misspelt, &["/body/threadID"]);
    let mut no_reason = stopped;
    no_reason["body"].as_object_mut().unwrap().remove("reason");
    dap_err(&schema, no_reason, &["reason"]);

    dap_ok(
        &schema,
        json!({"seq": 2, "type": "event", "event": "initialized"}),
    );
    dap_ok(
        &schema,
        json!({"seq": 6, "type": "event", "event": "output",
               "body": {"category": "stdout", "output": "hi\n"}}),
    );
    dap_err(
        &schema,
        json!({"seq": 6, "type": "event", "event": "exited", "body": {}}),
        &["exitCode"],
    );
    // A custom event falls back to `Event`, whose body is free-form.
    let custom = json!({"seq": 7, "type": "event", "event": "tandemIndexed",
                        "body": {"anything": [1, 2]}});
    assert_eq!(schema.definition_for(&custom).unwrap(), "Event");
    dap_ok(&schema, custom);
}

#[test]
fn dap_responses_with_nested_structures() {
    let schema = dap();
    dap_ok(
        &schema,
        response("threads", json!({"threads": [{"id": 1, "name": "main"}]})),
    );
    dap_err(
        &schema,
        response(
            "threads",
            json!({"threads": [{"id": 1, "name": "main", "nmae": "x"}]}),
        ),
        &["/body/threads/0/nmae"],
    );
    dap_err(
        &schema,
        response("threads", json!({"threads": [{"id": "1", "name": "main"}]})),
        &["/body/threads/0/id"],
    );
    // Module.id is `integer | string`.
    dap_ok(
        &schema,
        response(
            "modules",
            json!({"modules": [{"id": "a", "name": "libc.so.6"}]}),
        ),
    );
    // A command the schema does not know falls back to `Response`.
    let custom = response("tandemStatus", json!({"free": "form"}));
    assert_eq!(schema.definition_for(&custom).unwrap(), "Response");
    dap_ok(&schema, custom);
}

#[test]
fn dap_reverse_requests() {
    let schema = dap();
    let run = json!({"seq": 9, "type": "request", "command": "runInTerminal",
        "arguments": {"kind": "integrated", "cwd": "/tmp", "args": ["/bin/true"],
                      "env": {"A": "1", "B": null}}});
    assert_eq!(schema.definition_for(&run).unwrap(), "RunInTerminalRequest");
    dap_ok(&schema, run.clone());
    let mut bad_env = run.clone();
    bad_env["arguments"]["env"]["A"] = json!(1);
    dap_err(&schema, bad_env, &["/arguments/env/A"]);
    let mut misspelt = run;
    misspelt["arguments"]["workingDir"] = json!("/");
    dap_err(&schema, misspelt, &["/arguments/workingDir"]);
    // An adapter never sends a client's request.
    dap_err(
        &schema,
        json!({"seq": 9, "type": "request", "command": "launch", "arguments": {}}),
        &["not a reverse request"],
    );
}

#[test]
fn dap_load_says_where_from() {
    let schema = dap();
    assert!(schema.source().is_file());
}

// ---------------------------------------------------------------------------------------
// LSP

fn rpc_result(result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "result": result})
}

fn range() -> Value {
    json!({"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 4}})
}

#[test]
fn lsp_initialize_result_valid() {
    let Some(model) = lsp() else { return };
    let result = json!({
        "capabilities": {
            "positionEncoding": "utf-8",
            "textDocumentSync": {"openClose": true, "change": 2},
            "hoverProvider": true,
            "documentSymbolProvider": {"label": "tandem"},
            "semanticTokensProvider": {
                "legend": {"tokenTypes": ["function"], "tokenModifiers": []},
                "range": {}, "full": {"delta": false}
            },
            "workspace": {"workspaceFolders": {"supported": true}},
            "experimental": {"tandem": {"dap": true}}
        },
        "serverInfo": {"name": "tandem", "version": "0.1.0"}
    });
    lsp_ok(&model, rpc_result(result), Some("initialize"));
    // Minimal.
    lsp_ok(
        &model,
        rpc_result(json!({"capabilities": {}})),
        Some("initialize"),
    );
    assert_eq!(model.checked(), 2);
}

#[test]
fn lsp_initialize_result_invalid() {
    let Some(model) = lsp() else { return };
    let bad = |capabilities: Value, needles: &[&str]| {
        lsp_err(
            &model,
            rpc_result(json!({"capabilities": capabilities, "serverInfo": {"name": "tandem"}})),
            Some("initialize"),
            needles,
        );
    };
    bad(
        json!({"hoverProvider": "yes"}),
        &["result.capabilities.hoverProvider"],
    );
    bad(
        json!({"hoverProvidr": true}),
        &["hoverProvidr", "not declared by ServerCapabilities"],
    );
    bad(
        json!({"textDocumentSync": 7}),
        &["result.capabilities.textDocumentSync"],
    );
    bad(
        json!({"textDocumentSync": {"change": 7}}),
        &["textDocumentSync"],
    );
    bad(json!({"positionEncoding": 8}), &["positionEncoding"]);
    // Optional is not nullable.
    bad(json!({"hoverProvider": null}), &["hoverProvider"]);
    bad(
        json!({"semanticTokensProvider": {"legend": {"tokenTypes": []}}}),
        &["tokenModifiers"],
    );
    lsp_err(
        &model,
        rpc_result(json!({})),
        Some("initialize"),
        &["capabilities", "missing"],
    );
    lsp_err(
        &model,
        rpc_result(json!({"capabilities": {}, "serverInfo": {"version": "1"}})),
        Some("initialize"),
        &["result.serverInfo.name"],
    );
    lsp_err(
        &model,
        rpc_result(json!({"capabilities": {}, "serverinfo": {"name": "tandem"}})),
        Some("initialize"),
        &["serverinfo"],
    );
}

#[test]
fn lsp_envelope() {
    let Some(model) = lsp() else { return };
    lsp_ok(&model, rpc_result(json!(null)), Some("shutdown"));
    lsp_ok(
        &model,
        json!({"jsonrpc": "2.0", "id": "x-1", "result": null}),
        Some("shutdown"),
    );
    lsp_err(
        &model,
        rpc_result(json!({})),
        Some("shutdown"),
        &["result", "null"],
    );
    let not_found = json!({"jsonrpc": "2.0", "id": 4,
                           "error": {"code": -32601, "message": "unknown method"}});
    lsp_ok(&model, not_found.clone(), Some("foo/bar"));
    lsp_ok(&model, not_found.clone(), None);
    // Parse errors answer with a null id.
    lsp_ok(
        &model,
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "parse error"}}),
        None,
    );
    lsp_err(
        &model,
        json!({"jsonrpc": "2.0", "id": null, "result": null}),
        None,
        &["null `id`"],
    );
    lsp_err(
        &model,
        json!({"jsonrpc": "1.0", "id": 1, "result": null}),
        None,
        &["jsonrpc"],
    );
    lsp_err(&model, json!({"id": 1, "result": null}), None, &["jsonrpc"]);
    lsp_err(
        &model,
        json!({"jsonrpc": "2.0", "id": 1.5, "result": null}),
        None,
        &["id"],
    );
    lsp_err(
        &model,
        json!({"jsonrpc": "2.0", "id": [1], "result": null}),
        None,
        &["id"],
    );
    lsp_err(
        &model,
        json!({"jsonrpc": "2.0", "result": null}),
        None,
        &["no `id`"],
    );
    lsp_err(
        &model,
        json!({"jsonrpc": "2.0", "id": 1, "result": null, "error": {"code": 1, "message": ""}}),
        None,
        &["both"],
    );
    lsp_err(
        &model,
        json!({"jsonrpc": "2.0", "id": 1}),
        None,
        &["neither"],
    );
    lsp_err(
        &model,
        json!({"jsonrpc": "2.0", "id": 1, "result": null, "extra": 1}),
        None,
        &["extra"],
    );
    lsp_err(
        &model,
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": "x", "message": "m"}}),
        None,
        &["code"],
    );
    lsp_err(
        &model,
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": 1}}),
        None,
        &["message"],
    );
    lsp_err(
        &model,
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": "m", "details": 1}}),
        None,
        &["details"],
    );
    // InitializeError is the error data of `initialize`.
    lsp_ok(
        &model,
        json!({"jsonrpc": "2.0", "id": 1,
               "error": {"code": 1, "message": "m", "data": {"retry": false}}}),
        Some("initialize"),
    );
    lsp_err(
        &model,
        json!({"jsonrpc": "2.0", "id": 1,
               "error": {"code": 1, "message": "m", "data": {"retry": "no"}}}),
        Some("initialize"),
        &["error.data.retry"],
    );
    // Custom methods: envelope only.
    lsp_ok(
        &model,
        rpc_result(json!({"any": "thing"})),
        Some("tandem/status"),
    );
    lsp_ok(
        &model,
        json!({"jsonrpc": "2.0", "method": "tandem/indexed", "params": {"x": 1}}),
        None,
    );
    lsp_err(
        &model,
        json!({"jsonrpc": "2.0", "method": "tandem/indexed", "params": 1}),
        None,
        &["params"],
    );
}

#[test]
fn lsp_notifications_from_the_server() {
    let Some(model) = lsp() else { return };
    let diagnostics = json!({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
        "params": {"uri": "file:///src/a.c", "version": 3,
                   "diagnostics": [{"range": range(), "severity": 1, "message": "oops",
                                    "source": "tandem", "code": "E1"}]}});
    lsp_ok(&model, diagnostics.clone(), None);
    let mut severity = diagnostics.clone();
    severity["params"]["diagnostics"][0]["severity"] = json!(9);
    lsp_err(
        &model,
        severity,
        None,
        &["params.diagnostics[0].severity", "DiagnosticSeverity"],
    );
    let mut uri = diagnostics.clone();
    uri["params"]["uri"] = json!("src/a.c");
    lsp_err(&model, uri, None, &["params.uri", "DocumentUri"]);
    let mut line = diagnostics.clone();
    line["params"]["diagnostics"][0]["range"]["start"]["line"] = json!(-1);
    lsp_err(&model, line, None, &["range.start.line", "uinteger"]);
    let mut no_params = diagnostics;
    no_params.as_object_mut().unwrap().remove("params");
    lsp_err(&model, no_params, None, &["params", "missing"]);

    lsp_ok(
        &model,
        json!({"jsonrpc": "2.0", "method": "window/logMessage",
               "params": {"type": 3, "message": "indexing"}}),
        None,
    );
    lsp_ok(
        &model,
        json!({"jsonrpc": "2.0", "method": "$/progress",
               "params": {"token": "idx", "value": {"kind": "begin", "title": "Indexing"}}}),
        None,
    );
    // A client's notification, or one that does not exist.
    lsp_err(
        &model,
        json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {}}),
        None,
        &["messageDirection"],
    );
    lsp_err(
        &model,
        json!({"jsonrpc": "2.0", "method": "foo/bar"}),
        None,
        &["no such"],
    );
}

#[test]
fn lsp_requests_from_the_server() {
    let Some(model) = lsp() else { return };
    lsp_ok(
        &model,
        json!({"jsonrpc": "2.0", "id": 1, "method": "window/workDoneProgress/create",
               "params": {"token": "idx"}}),
        None,
    );
    lsp_ok(
        &model,
        json!({"jsonrpc": "2.0", "id": "r1", "method": "client/registerCapability",
               "params": {"registrations": [{"id": "w", "method": "workspace/didChangeWatchedFiles",
                   "registerOptions": {"watchers": [{"globPattern": "**/*.o"}]}}]}}),
        None,
    );
    lsp_ok(
        &model,
        json!({"jsonrpc": "2.0", "id": 2, "method": "workspace/inlineValue/refresh"}),
        None,
    );
    lsp_err(
        &model,
        json!({"jsonrpc": "2.0", "id": 2, "method": "workspace/inlineValue/refresh", "params": {}}),
        None,
        &["no `params`"],
    );
    lsp_err(
        &model,
        json!({"jsonrpc": "2.0", "id": null, "method": "workspace/inlineValue/refresh"}),
        None,
        &["id"],
    );
    // Maps: WorkspaceEdit.changes is map<DocumentUri, TextEdit[]>.
    let edit = |key: &str| {
        json!({"jsonrpc": "2.0", "id": 3, "method": "workspace/applyEdit",
               "params": {"edit": {"changes": {key: [{"range": range(), "newText": "x"}]}}}})
    };
    lsp_ok(&model, edit("file:///a.c"), None);
    lsp_err(&model, edit("a.c"), None, &["changes"]);
}

#[test]
fn lsp_results_of_language_features() {
    let Some(model) = lsp() else { return };
    let answer = |result: Value| rpc_result(result);
    // `or` with null, and a tuple label.
    lsp_ok(
        &model,
        answer(json!(null)),
        Some("textDocument/documentSymbol"),
    );
    lsp_ok(
        &model,
        answer(json!([{"name": "main", "kind": 12, "range": range(), "selectionRange": range()}])),
        Some("textDocument/documentSymbol"),
    );
    lsp_err(
        &model,
        answer(json!([{"name": "main", "kind": 99, "range": range(), "selectionRange": range()}])),
        Some("textDocument/documentSymbol"),
        &["no alternative"],
    );
    let signature = |label: Value| {
        answer(json!({"signatures": [{"label": "f(a, b)", "parameters": [{"label": label}]}]}))
    };
    lsp_ok(
        &model,
        signature(json!([2, 3])),
        Some("textDocument/signatureHelp"),
    );
    lsp_ok(
        &model,
        signature(json!("a")),
        Some("textDocument/signatureHelp"),
    );
    lsp_err(
        &model,
        signature(json!([2])),
        Some("textDocument/signatureHelp"),
        &["label"],
    );
    lsp_ok(
        &model,
        answer(json!({"contents": {"kind": "markdown", "value": "`int x = 3`"}, "range": range()})),
        Some("textDocument/hover"),
    );
    lsp_err(
        &model,
        answer(json!({"contents": {"kind": "html", "value": "x"}})),
        Some("textDocument/hover"),
        &["contents"],
    );
    lsp_ok(
        &model,
        answer(json!([{"range": range(), "text": "x = 3"},
                      {"range": range(), "expression": "x"}])),
        Some("textDocument/inlineValue"),
    );
}

/// The fallback used without a meta model accepts what lsp-types accepts and refuses a
/// result or params of the wrong shape, so it too can fail.
#[test]
fn lsp_types_fallback_checks_shapes() {
    use lsp_types_check::check_server_message as check;
    assert!(lsp_types_check::SOURCE.contains("weaker"));
    let hover = json!({"jsonrpc": "2.0", "id": 3, "result": {"contents": {"kind": "markdown", "value": "x"}}});
    assert_eq!(check(&hover, Some("textDocument/hover")), Some(Ok(())));
    let bad_hover = json!({"jsonrpc": "2.0", "id": 3, "result": {"contents": 7}});
    assert!(matches!(
        check(&bad_hover, Some("textDocument/hover")),
        Some(Err(_))
    ));
    let diags = json!({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
        "params": {"uri": "file:///a.c", "diagnostics": [{"range": {"start": {"line": 0, "character": 0},
        "end": {"line": 0, "character": 1}}, "message": "m"}]}});
    assert_eq!(check(&diags, None), Some(Ok(())));
    let bad_diags = json!({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
        "params": {"uri": "file:///a.c", "diagnostics": [{"message": "no range"}]}});
    assert!(matches!(check(&bad_diags, None), Some(Err(_))));
    assert!(matches!(
        check(&json!({"id": 1, "result": null}), Some("shutdown")),
        Some(Err(_))
    ));
    let error = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "no"}});
    assert_eq!(check(&error, Some("custom/x")), Some(Ok(())));
    // A method lsp-types does not know is not validated, and says so.
    assert_eq!(
        check(
            &json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
            Some("tandem/document")
        ),
        None
    );
}
