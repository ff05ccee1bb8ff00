//! The LSP main loop: lifecycle, dispatch, cancellation and document synchronisation.
//!
//! One reader thread turns the input into frames; this loop owns all session state and handles
//! every message in arrival order. Requests that may take long run on worker threads and answer
//! through the [`Outbox`], which remembers every pending request so `$/cancelRequest` can answer
//! it with `RequestCancelled` at once; whichever of the two answers first wins, the other is
//! dropped, so a request is never answered twice.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_channel::Receiver;
use procman::{ManagerEvent, ProcessManager};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use wire::jsonrpc::{self, codes, Id, Message, Notification, Request, Response, ResponseError};
use wire::{Inbound, Limits};

use crate::cancel::CancelToken;
use crate::diagnostics::Diagnostics;
use crate::handlers::{self, DocumentParams, Job, Outcome, Snapshot, INDEX_PATIENCE};
use crate::lens;
use crate::live::{self, Live};
use crate::mode::Features;
use crate::outbox::{Outbox, Workers};
use crate::proto::{
    BreakpointLocationsParams, CancelParams, DidChangeTextDocumentParams,
    DidCloseTextDocumentParams, DidOpenTextDocumentParams, DocumentSymbolParams, InitializeParams,
    InlineValueParams, SemanticTokensParams, TextDocumentPositionParams, WorkspaceParams,
    WorkspaceSymbolParams,
};
use crate::text::{Change, Document, Documents, PositionEncoding};
use crate::uri;
use crate::workspace::{IndexEvent, Workspace, WorkspaceConfig};

/// Settings of one server session.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// Serve the `tandem/test/*` requests that the integration tests use to exercise
    /// cancellation with a request of known duration.
    pub test_hooks: bool,
    /// Framing limits for the input.
    pub limits: Limits,
    /// The process manager of the debug adapter serving this workspace in the same
    /// process: its paused debuggees give live values (inline values, hovers) and its
    /// breakpoint adjustments give hints. `None`: no live values.
    pub manager: Option<Arc<ProcessManager>>,
    /// Called once `initialize` names the workspace's roots (the binary opens the
    /// workspace's debug adapter socket there).
    pub on_roots: Option<RootsHook>,
}

/// What a [`RootsHook`] calls with the workspace's root folders.
pub type OnRoots = dyn Fn(&[std::path::PathBuf]) + Send + Sync;

/// A callback receiving the workspace's root folders after `initialize`.
#[derive(Clone)]
pub struct RootsHook(pub Arc<OnRoots>);

impl std::fmt::Debug for RootsHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RootsHook")
    }
}

/// How a session ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// `exit` after `shutdown`, or the input closed after `shutdown`.
    Orderly,
    /// `exit` without `shutdown`, the input closed without `shutdown`, or a framing error.
    Abrupt,
}

impl Ending {
    /// The process exit code the specification asks for.
    pub fn exit_code(self) -> i32 {
        match self {
            Ending::Orderly => 0,
            Ending::Abrupt => 1,
        }
    }
}

/// Serves one LSP session over a byte stream pair until `exit`, end of input or a framing error.
pub fn serve<R, W>(input: R, output: W, config: Config) -> std::io::Result<Ending>
where
    R: Read + Send + 'static,
    W: Write + Send + 'static,
{
    let inbound = wire::spawn_reader(input, config.limits)?;
    let outbox = Arc::new(Outbox::new(Box::new(output)));
    let workers = Workers::new(4)?;
    // Subscribed before anything can happen, so no stop is missed.
    let events = config.manager.as_ref().map(|m| m.subscribe());
    let live = config.manager.clone().map(Live::new);
    let mut server = Server {
        live,
        initialized: false,
        config,
        phase: Phase::Uninitialized,
        encoding: PositionEncoding::Utf16,
        documents: Documents::default(),
        outbox,
        workers,
        workspace: None,
        diagnostics: None,
        request_document: None,
        client: ClientSupport::default(),
        said_rust_on_save: false,
        features: Features::Full,
    };
    Ok(server.run(&inbound, events))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Uninitialized,
    Running,
    ShutDown,
}

struct Server {
    config: Config,
    /// Live values from the shared process manager.
    live: Option<Live>,
    /// `initialized` arrived: the server may send requests.
    initialized: bool,
    phase: Phase,
    encoding: PositionEncoding,
    documents: Documents,
    outbox: Arc<Outbox>,
    workers: Workers,
    workspace: Option<Arc<Workspace>>,
    diagnostics: Option<Arc<Diagnostics>>,
    /// The document of the request being dispatched, for [`Outbox::register`].
    request_document: Option<String>,
    client: ClientSupport,
    /// The client was told that Rust files are checked on save only.
    said_rust_on_save: bool,
    /// Full or companion mode, from `initialize`.
    features: Features,
}

/// What the client said it supports, among what the server may ask of it.
#[derive(Clone, Debug, Default)]
struct ClientSupport {
    /// `window.workDoneProgress`: server-initiated progress.
    progress: Option<Arc<Progress>>,
    /// `workspace.didChangeWatchedFiles.dynamicRegistration`.
    watch: bool,
    /// `workspace.configuration`: the server may pull settings.
    configuration: bool,
    /// `workspace.inlineValue.refreshSupport`: the server may ask for inline values again.
    inline_value_refresh: bool,
    /// `workspace.codeLens.refreshSupport`: the server may ask for code lenses again.
    code_lens_refresh: bool,
}

/// Progress of the first indexing, reported as `$/progress` once the client has accepted the
/// token created with `window/workDoneProgress/create`; reports made before are held back.
#[derive(Debug)]
struct Progress {
    token: String,
    state: Mutex<ProgressState>,
}

#[derive(Debug, Default)]
struct ProgressState {
    accepted: bool,
    refused: bool,
    held: Vec<Value>,
}

impl Progress {
    fn state(&self) -> std::sync::MutexGuard<'_, ProgressState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn emit(&self, outbox: &Outbox, value: Value) {
        let mut state = self.state();
        if state.refused {
            return;
        }
        if state.accepted {
            outbox.notify("$/progress", json!({ "token": self.token, "value": value }));
        } else {
            state.held.push(value);
        }
    }

    fn answered(&self, outbox: &Outbox, accepted: bool) {
        let mut state = self.state();
        if !accepted {
            tracing::debug!("the client refused the progress token");
            state.refused = true;
            state.held.clear();
            return;
        }
        state.accepted = true;
        for value in state.held.drain(..) {
            outbox.notify("$/progress", json!({ "token": self.token, "value": value }));
        }
    }
}

/// `$/progress` values for the indexer's events.
fn progress_value(event: &IndexEvent) -> Value {
    match event {
        IndexEvent::Begin => json!({
            "kind": "begin", "title": "tandem: indexing debug information",
            "cancellable": false, "percentage": 0,
        }),
        IndexEvent::Binary { done, total, path } => json!({
            "kind": "report",
            "message": format!("{} ({}/{total})", path.display(), done + 1),
            "percentage": done * 100 / (*total).max(1),
        }),
        IndexEvent::End { served } => json!({
            "kind": "end",
            "message": format!("{} binar{} serving the workspace", served.len(),
                if served.len() == 1 { "y" } else { "ies" }),
        }),
    }
}

/// Whether `caps` has `true` at the dotted `path`.
fn capability(caps: &serde_json::Map<String, Value>, path: &[&str]) -> bool {
    let Some((first, rest)) = path.split_first() else {
        return false;
    };
    let mut v = caps.get(*first);
    for key in rest {
        v = v.and_then(|x| x.get(*key));
    }
    v.and_then(Value::as_bool).unwrap_or(false)
}

fn document_path(uri_str: &str) -> Result<std::path::PathBuf, ResponseError> {
    uri::to_path(uri_str).ok_or_else(|| {
        ResponseError::new(codes::INVALID_PARAMS, format!("not a file URI: {uri_str}"))
    })
}

impl Server {
    fn run(
        &mut self,
        inbound: &Receiver<Inbound>,
        events: Option<Receiver<ManagerEvent>>,
    ) -> Ending {
        let mut events = events.unwrap_or_else(crossbeam_channel::never);
        loop {
            let event = crossbeam_channel::select! {
                recv(inbound) -> event => match event {
                    Ok(event) => event,
                    Err(_) => return self.end_of_input(),
                },
                recv(events) -> event => {
                    match event {
                        Ok(event) => self.on_manager_event(event),
                        Err(_) => events = crossbeam_channel::never(),
                    }
                    continue;
                }
            };
            match event {
                Inbound::Frame(body) => match jsonrpc::decode(&body) {
                    Ok(Message::Request(req)) => self.on_request(req),
                    Ok(Message::Notification(not)) => {
                        if not.method == "exit" {
                            return self.on_exit();
                        }
                        self.on_notification(not);
                    }
                    Ok(Message::Response(resp)) => self.outbox.answered(resp),
                    Err(err) => {
                        tracing::warn!("malformed message: {err}");
                        self.outbox.send(&Message::Response(err.to_response()));
                    }
                },
                Inbound::Closed => return self.end_of_input(),
                Inbound::Failed(err) => {
                    tracing::error!("closing the connection: {err}");
                    return Ending::Abrupt;
                }
            }
        }
    }

    /// What the debug adapter of this process did: stops, resumes and ends make inline
    /// values stale (the client is asked to pull them again); breakpoint lines become hints.
    fn on_manager_event(&mut self, event: ManagerEvent) {
        if self.phase != Phase::Running {
            return;
        }
        match event {
            ManagerEvent::DebugStopped { .. }
            | ManagerEvent::DebugResumed { .. }
            | ManagerEvent::DebugEnded { .. } => {
                match (&event, &self.live) {
                    (ManagerEvent::DebugStopped { session, .. }, Some(live)) => {
                        live.stopped(*session)
                    }
                    (ManagerEvent::DebugEnded { session, .. }, Some(live)) => live.ended(*session),
                    _ => {}
                }
                if matches!(event, ManagerEvent::DebugEnded { .. }) {
                    if let Some(diags) = &self.diagnostics {
                        diags.clear_breakpoint_hints();
                    }
                }
                self.ask_refresh();
            }
            ManagerEvent::BreakpointLines { file, lines } => {
                if let Some(diags) = &self.diagnostics {
                    let file = if file.is_absolute() {
                        file
                    } else {
                        std::env::current_dir().unwrap_or_default().join(file)
                    };
                    let file = symbols::lines::normalize_path(&file);
                    diags.set_breakpoint_hints(&file, &live::breakpoint_hints(&lines));
                }
            }
            _ => {}
        }
    }

    /// Asks the client to pull inline values and code lenses again (what a stop, a resume
    /// or an end changes), as far as it said it can.
    fn ask_refresh(&self) {
        if !self.initialized {
            return;
        }
        let wanted = [
            (
                self.client.inline_value_refresh,
                "workspace/inlineValue/refresh",
            ),
            (self.client.code_lens_refresh, "workspace/codeLens/refresh"),
        ];
        for (_, method) in wanted.into_iter().filter(|w| w.0) {
            self.outbox.request(
                method,
                None,
                Box::new(move |outcome| {
                    if let Err(e) = outcome {
                        tracing::debug!("{method} refused: {}", e.message);
                    }
                }),
            );
        }
    }

    fn end_of_input(&self) -> Ending {
        if self.phase == Phase::ShutDown {
            tracing::info!("input closed after shutdown");
            Ending::Orderly
        } else {
            tracing::warn!("input closed without shutdown");
            Ending::Abrupt
        }
    }

    fn on_exit(&self) -> Ending {
        if self.phase == Phase::ShutDown {
            Ending::Orderly
        } else {
            tracing::warn!("exit without shutdown");
            Ending::Abrupt
        }
    }

    fn on_request(&mut self, req: Request) {
        tracing::debug!(id = %req.id, method = %req.method, "request");
        // A request about a document is answered with ContentModified when the document
        // changes before the answer is ready.
        self.request_document = req
            .params
            .as_ref()
            .and_then(|p| p.get("textDocument"))
            .and_then(|t| t.get("uri"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let refuse = |code, message: &str| Err(ResponseError::new(code, message));
        match (self.phase, req.method.as_str()) {
            (Phase::Uninitialized, "initialize") => {
                let workspace = params::<WorkspaceParams>(&req).unwrap_or_default();
                // An unknown mode is refused before anything starts; the client may retry.
                let outcome = Features::from_options(workspace.initialization_options.as_ref())
                    .map_err(|e| ResponseError::new(codes::INVALID_PARAMS, e))
                    .and_then(|features| {
                        self.features = features;
                        params::<InitializeParams>(&req)
                    })
                    .map(|p| self.initialize(&p, &workspace));
                self.reply(&req, outcome);
            }
            (Phase::Uninitialized, _) => self.reply(
                &req,
                refuse(codes::SERVER_NOT_INITIALIZED, "server not initialized"),
            ),
            (Phase::ShutDown, _) => {
                self.reply(&req, refuse(codes::INVALID_REQUEST, "server is shut down"))
            }
            (Phase::Running, "initialize") => self.reply(
                &req,
                refuse(codes::INVALID_REQUEST, "server is already initialized"),
            ),
            (Phase::Running, "shutdown") => {
                self.phase = Phase::ShutDown;
                self.reply(&req, Ok(Value::Null));
            }
            (Phase::Running, "tandem/document") => {
                let outcome = params::<DocumentQuery>(&req).and_then(|q| self.document(&q.uri));
                self.reply(&req, outcome);
            }
            (Phase::Running, "workspace/executeCommand") => {
                let outcome = params::<ExecuteCommandParams>(&req).and_then(|p| self.execute(p));
                self.reply(&req, outcome);
            }
            (Phase::Running, "tandem/test/sleep") if self.config.test_hooks => {
                match params::<SleepParams>(&req) {
                    Ok(p) => self.spawn(req.id.clone(), move |cancel| test_sleep(p.ms, &cancel)),
                    Err(e) => self.reply(&req, Err(e)),
                }
            }
            (Phase::Running, method) if !self.features.serves(method) => {
                let message = format!("{method} is not served in companion mode");
                self.reply(&req, refuse(codes::METHOD_NOT_FOUND, &message));
            }
            // The feature requests: (method, parameters, handler on a worker).
            (Phase::Running, "workspace/symbol") => {
                self.on_snapshot::<WorkspaceSymbolParams>(&req, handlers::workspace_symbol)
            }
            (Phase::Running, "textDocument/documentSymbol") => {
                self.on_document::<DocumentSymbolParams>(&req, handlers::document_symbol)
            }
            (Phase::Running, "textDocument/definition") => {
                self.on_document::<TextDocumentPositionParams>(&req, handlers::definition)
            }
            (Phase::Running, "textDocument/declaration") => {
                self.on_document::<TextDocumentPositionParams>(&req, handlers::declaration)
            }
            (Phase::Running, "textDocument/hover") => {
                self.on_document::<TextDocumentPositionParams>(&req, handlers::hover)
            }
            (
                Phase::Running,
                "textDocument/semanticTokens/full" | "textDocument/semanticTokens/range",
            ) => self.on_document::<SemanticTokensParams>(&req, handlers::semantic_tokens),
            (Phase::Running, "textDocument/inlineValue") => {
                self.on_document::<InlineValueParams>(&req, handlers::inline_value)
            }
            (Phase::Running, "tandem/breakpointLocations") => {
                self.on_document::<BreakpointLocationsParams>(&req, handlers::breakpoint_locations)
            }
            (Phase::Running, "textDocument/codeLens") => {
                self.on_document::<DocumentSymbolParams>(&req, handlers::code_lens)
            }
            (Phase::Running, method) => {
                let message = format!("unknown method {method}");
                self.reply(&req, refuse(codes::METHOD_NOT_FOUND, &message));
            }
        }
    }

    fn reply(&self, req: &Request, outcome: Outcome) {
        self.outbox.send(&Message::Response(Response {
            id: Some(req.id.clone()),
            outcome,
        }));
    }

    /// A feature request whose handler decides itself whether to wait for the index.
    fn on_snapshot<P: DeserializeOwned + Send + 'static>(
        &mut self,
        req: &Request,
        handler: fn(Snapshot, CancelToken, P) -> Outcome,
    ) {
        match params::<P>(req) {
            Ok(p) => {
                let snap = self.snapshot();
                self.spawn(req.id.clone(), move |cancel| handler(snap, cancel, p));
            }
            Err(e) => self.reply(req, Err(e)),
        }
    }

    /// A feature request about one document: its parameters and the document's path are
    /// checked here, the answer computed on a worker.
    fn on_document<P: DocumentParams + DeserializeOwned + Send + 'static>(
        &mut self,
        req: &Request,
        handler: fn(Job, PathBuf, P) -> Outcome,
    ) {
        match params::<P>(req).and_then(|p| Ok((document_path(p.uri())?, p))) {
            Ok((path, p)) => {
                let snap = self.snapshot();
                self.spawn(req.id.clone(), move |cancel| {
                    handler(snap.job(cancel)?, path, p)
                });
            }
            Err(e) => self.reply(req, Err(e)),
        }
    }

    /// Runs a request on a worker; its answer goes out unless the request was cancelled first.
    fn spawn(&mut self, id: Id, job: impl FnOnce(CancelToken) -> Outcome + Send + 'static) {
        let document = self.request_document.take();
        let Some(token) = self.outbox.register(&id, document) else {
            let err = ResponseError::new(
                codes::INVALID_REQUEST,
                format!("request id {id} is already pending"),
            );
            self.outbox.send(&Message::Response(Response {
                id: Some(id),
                outcome: Err(err),
            }));
            return;
        };
        let outbox = self.outbox.clone();
        self.workers.run(move || {
            let outcome = job(token);
            outbox.finish(&id, outcome);
        });
    }

    fn on_notification(&mut self, not: Notification) {
        if self.phase == Phase::Uninitialized {
            tracing::debug!(method = %not.method, "notification before initialize dropped");
            return;
        }
        let result = match not.method.as_str() {
            "initialized" => {
                self.on_initialized();
                Ok(())
            }
            "workspace/didChangeWatchedFiles" => {
                notification_params::<Value>(&not).map(|p| self.watched_files_changed(&p))
            }
            "workspace/didChangeConfiguration" => notification_params::<Value>(&not).map(|p| {
                if self.client.configuration {
                    self.pull_configuration();
                } else if let (Some(list), Some(ws)) =
                    (p.pointer("/settings/tandem/binaries").and_then(Value::as_array), &self.workspace)
                {
                    ws.set_binaries(list.iter().filter_map(Value::as_str).map(str::to_owned).collect());
                }
            }),
            "$/cancelRequest" => notification_params::<CancelParams>(&not).map(|p| self.outbox.cancel(&p.id)),
            "textDocument/didOpen" => notification_params::<DidOpenTextDocumentParams>(&not).map(|p| {
                let doc = p.text_document;
                self.check_stale(&doc.uri);
                self.documents.open(
                    doc.uri,
                    Document { text: doc.text, version: doc.version, language_id: doc.language_id },
                );
            }),
            "textDocument/didSave" => notification_params::<DidCloseTextDocumentParams>(&not).map(|p| {
                let uri = p.text_document.uri;
                self.check_stale(&uri);
                if let (Some(path), Some(diags), Some(ws), true) = (
                    uri::to_path(&uri),
                    &self.diagnostics,
                    &self.workspace,
                    self.features.compiler_diagnostics(),
                ) {
                    diags.check_saved(&path, ws.roots());
                }
            }),
            "textDocument/didChange" => {
                notification_params::<DidChangeTextDocumentParams>(&not).and_then(|p| self.did_change(p))
            }
            "textDocument/didClose" => notification_params::<DidCloseTextDocumentParams>(&not).map(|p| {
                if !self.documents.close(&p.text_document.uri) {
                    tracing::warn!(uri = %p.text_document.uri, "didClose for a document that is not open");
                }
            }),
            method => {
                tracing::debug!(%method, "notification ignored");
                Ok(())
            }
        };
        if let Err(err) = result {
            tracing::error!(method = %not.method, "{err}");
        }
    }

    fn did_change(&mut self, p: DidChangeTextDocumentParams) -> Result<(), String> {
        let changes: Vec<Change> = p
            .content_changes
            .into_iter()
            .map(|c| Change {
                range: c.range.map(|r| (r.start.into(), r.end.into())),
                text: c.text,
            })
            .collect();
        let uri = p.text_document.uri;
        self.documents
            .change(&uri, p.text_document.version, &changes, self.encoding)
            .map_err(|e| format!("edit of {uri} refused, document unchanged: {e}"))?;
        self.outbox.modified(&uri);
        self.check_unsaved(&uri);
        Ok(())
    }

    /// The compiler checks the edited text of a C or C++ document; Rust documents are checked
    /// when saved, which the client is told once. Not in companion mode: the compiler's own
    /// server publishes those.
    fn check_unsaved(&mut self, uri_str: &str) {
        if !self.features.compiler_diagnostics() {
            return;
        }
        let (Some(path), Some(diags), Some(ws)) = (
            uri::to_path(uri_str),
            self.diagnostics.clone(),
            self.workspace.clone(),
        ) else {
            return;
        };
        if crate::sources::Lang::of(&path) == crate::sources::Lang::Rust {
            if !self.said_rust_on_save {
                self.said_rust_on_save = true;
                tracing::info!("rust files are checked when saved, not while edited");
                self.outbox.notify(
                    "window/logMessage",
                    json!({ "type": 3, "message": "tandem: Rust files are checked when saved (cargo check), not while they are edited" }),
                );
            }
            return;
        }
        if let Some(doc) = self.documents.get(uri_str) {
            diags.check_unsaved(&path, doc.text.clone(), ws.roots());
        }
    }

    /// After `initialized` the server may ask things of the client: a progress token, file
    /// watchers for binaries, the `tandem.binaries` setting.
    fn on_initialized(&mut self) {
        self.initialized = true;
        if let Some(progress) = self.client.progress.clone() {
            let outbox = self.outbox.clone();
            self.outbox.request(
                "window/workDoneProgress/create",
                Some(json!({ "token": progress.token })),
                Box::new(move |outcome| progress.answered(&outbox, outcome.is_ok())),
            );
        }
        if self.client.watch {
            let roots = self
                .workspace
                .as_ref()
                .map(|w| w.roots().to_vec())
                .unwrap_or_default();
            let configured = self
                .workspace
                .as_ref()
                .map(|w| w.configured())
                .unwrap_or_default();
            // Configured binaries are watched by their globs; discovery must see any new
            // file (changes that are not ELF files are ignored when they arrive).
            let patterns: Vec<String> = roots
                .iter()
                .flat_map(|r| {
                    let globs = if configured.is_empty() {
                        vec!["**/*".to_owned()]
                    } else {
                        configured.clone()
                    };
                    globs.into_iter().map(move |g| {
                        if g.starts_with('/') {
                            g
                        } else {
                            format!("{}/{g}", r.display())
                        }
                    })
                })
                .collect();
            let watchers: Vec<Value> = patterns
                .iter()
                // 1 | 2: created and changed.
                .map(|p| json!({ "globPattern": p, "kind": 3 }))
                .collect();
            self.outbox.request(
                "client/registerCapability",
                Some(json!({ "registrations": [{
                    "id": "tandem-binaries",
                    "method": "workspace/didChangeWatchedFiles",
                    "registerOptions": { "watchers": watchers },
                }]})),
                Box::new(|outcome| {
                    if let Err(e) = outcome {
                        tracing::warn!("the client refused to watch binaries: {}", e.message);
                    }
                }),
            );
        }
        if self.client.configuration {
            self.pull_configuration();
        }
    }

    /// Asks the client for `tandem.binaries`; a list replaces the configured binaries.
    fn pull_configuration(&self) {
        let Some(ws) = self.workspace.clone() else {
            return;
        };
        let scope = ws.roots().first().map(|r| uri::from_path(r));
        let mut item = json!({ "section": "tandem.binaries" });
        if let Some(scope) = scope {
            item["scopeUri"] = json!(scope);
        }
        self.outbox.request(
            "workspace/configuration",
            Some(json!({ "items": [item] })),
            Box::new(move |outcome| match outcome {
                Ok(Value::Array(items)) => match items.first() {
                    Some(Value::Array(list)) => ws.set_binaries(
                        list.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect(),
                    ),
                    Some(Value::Null) | None => {}
                    Some(other) => tracing::warn!("tandem.binaries is not a list: {other}"),
                },
                Ok(other) => tracing::warn!("unexpected workspace/configuration answer: {other}"),
                Err(e) => tracing::warn!("workspace/configuration failed: {}", e.message),
            }),
        );
    }

    /// A watched file was created or changed: when it is a binary, look again and re-decide
    /// whether open documents are newer than their binaries.
    fn watched_files_changed(&mut self, params: &Value) {
        let Some(ws) = self.workspace.clone() else {
            return;
        };
        let binary_changed = params["changes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["uri"].as_str().and_then(uri::to_path))
            .any(|p| crate::workspace::is_elf(&p));
        if !binary_changed {
            return;
        }
        tracing::info!("a watched binary changed");
        ws.invalidate();
        let uris: Vec<String> = self.documents.iter().map(|(u, _)| u.to_owned()).collect();
        // Re-index now, on a worker, so the next request finds the index ready.
        self.workers.run(move || {
            ws.snapshot(INDEX_PATIENCE, &|| false);
        });
        for u in uris {
            self.check_stale(&u);
        }
    }

    /// Re-decides, on a worker (the index may still be building), whether the binary
    /// serving the document is older than its source.
    fn check_stale(&self, uri_str: &str) {
        let (Some(path), Some(diags), Some(ws)) = (
            uri::to_path(uri_str),
            self.diagnostics.clone(),
            self.workspace.clone(),
        ) else {
            return;
        };
        self.workers.run(move || {
            let served = ws.snapshot(INDEX_PATIENCE, &|| false);
            diags.check_stale(&path, &served);
        });
    }

    /// Copies what a feature request needs from the main loop's state.
    fn snapshot(&self) -> Snapshot {
        let open = self
            .documents
            .iter()
            .filter_map(|(u, d)| Some((uri::to_path(u)?, Arc::from(d.text.as_str()))))
            .collect();
        Snapshot {
            workspace: self.workspace.clone(),
            live: self.live.clone(),
            open,
            encoding: self.encoding,
            features: self.features,
        }
    }

    fn initialize(&mut self, params: &InitializeParams, workspace: &WorkspaceParams) -> Value {
        let offered = params.position_encodings();
        self.encoding = PositionEncoding::negotiate(offered.iter().copied());
        self.phase = Phase::Running;
        let mut roots: Vec<std::path::PathBuf> = workspace
            .workspace_folders
            .iter()
            .flatten()
            .filter_map(|f| uri::to_path(&f.uri))
            .collect();
        if roots.is_empty() {
            roots.extend(
                workspace
                    .root_uri
                    .as_deref()
                    .and_then(uri::to_path)
                    .or_else(|| workspace.root_path.as_ref().map(Into::into)),
            );
        }
        let index_delay = match workspace.test_index_delay_ms() {
            Some(ms) if self.config.test_hooks => Duration::from_millis(ms),
            _ => Duration::ZERO,
        };
        let full_index_delay = match workspace.test_full_index_delay_ms() {
            Some(ms) if self.config.test_hooks => Duration::from_millis(ms),
            _ => Duration::ZERO,
        };
        let config = WorkspaceConfig {
            roots,
            binaries: workspace.binaries(),
            index_delay,
            full_index_delay,
        };
        tracing::info!(roots = ?config.roots, binaries = ?config.binaries, "workspace");
        if let Some(hook) = &self.config.on_roots {
            (hook.0)(&config.roots);
        }
        let caps = &params.capabilities;
        self.client = ClientSupport {
            progress: capability(caps, &["window", "workDoneProgress"]).then(|| {
                Arc::new(Progress {
                    token: "tandem-indexing".to_owned(),
                    state: Mutex::new(ProgressState::default()),
                })
            }),
            watch: capability(
                caps,
                &["workspace", "didChangeWatchedFiles", "dynamicRegistration"],
            ),
            configuration: capability(caps, &["workspace", "configuration"]),
            inline_value_refresh: capability(caps, &["workspace", "inlineValue", "refreshSupport"]),
            code_lens_refresh: capability(caps, &["workspace", "codeLens", "refreshSupport"]),
        };
        let report = self.client.progress.clone().map(|progress| {
            let outbox = self.outbox.clone();
            Box::new(move |event: IndexEvent| progress.emit(&outbox, progress_value(&event)))
                as crate::workspace::IndexReport
        });
        self.workspace = Some(Workspace::start(config, report));
        let outbox = self.outbox.clone();
        self.diagnostics = Some(Diagnostics::new(
            Arc::new(move |uri, diagnostics| {
                outbox.notify(
                    "textDocument/publishDiagnostics",
                    json!({ "uri": uri, "diagnostics": diagnostics }),
                );
            }),
            self.encoding,
        ));
        tracing::info!(
            encoding = self.encoding.as_str(),
            features = self.features.as_str(),
            "initialized"
        );
        json!({
            "capabilities": self.features.capabilities(self.encoding),
            "serverInfo": { "name": "tandem", "version": env!("CARGO_PKG_VERSION") },
        })
    }

    /// `workspace/executeCommand`: `tandem.run` starts the program and answers at once; its
    /// output and end arrive as `window/logMessage` and `window/showMessage`.
    fn execute(&self, p: ExecuteCommandParams) -> Result<Value, ResponseError> {
        if p.command == crate::processes::LIST_PROCESSES {
            return Ok(crate::processes::list_processes());
        }
        if p.command == live::FOCUS_SESSION {
            return self.focus_session(&p.arguments);
        }
        if p.command != lens::RUN {
            return Err(ResponseError::new(
                codes::INVALID_PARAMS,
                format!("unknown command {}", p.command),
            ));
        }
        let launch: lens::Launch = p
            .arguments
            .into_iter()
            .next()
            .ok_or_else(|| {
                ResponseError::new(
                    codes::INVALID_PARAMS,
                    "tandem.run needs a launch configuration",
                )
            })
            .and_then(|a| {
                serde_json::from_value(a).map_err(|e| {
                    ResponseError::new(
                        codes::INVALID_PARAMS,
                        format!("invalid launch configuration: {e}"),
                    )
                })
            })?;
        let outbox = self.outbox.clone();
        let spawned = std::thread::Builder::new()
            .name("lsp-run".into())
            .spawn(move || {
                lens::run(&launch, &|event| match event {
                    lens::RunEvent::Output(line) => {
                        outbox.notify("window/logMessage", json!({ "type": 4, "message": line }));
                    }
                    lens::RunEvent::Ended { message, failed } => {
                        let kind = if failed { 1 } else { 3 };
                        outbox.notify(
                            "window/showMessage",
                            json!({ "type": kind, "message": message }),
                        );
                    }
                });
            });
        match spawned {
            Ok(_) => Ok(Value::Null),
            Err(e) => Err(ResponseError::new(
                codes::INTERNAL_ERROR,
                format!("cannot start the program: {e}"),
            )),
        }
    }

    /// `tandem.focusSession`: `{"pid": N}` makes debuggee N's values the ones shown
    /// (`{"pid": null}`: the newest stop's again); answers `{"pid": …}` as now focused.
    /// With `"threadId": T` (the DAP thread the editor shows, of that session) the process
    /// of that thread is focused instead: in a session holding a forking program's
    /// children (`followChildren: "same"`) that is the child the editor shows.
    fn focus_session(&self, arguments: &[Value]) -> Result<Value, ResponseError> {
        let invalid = || {
            ResponseError::new(
                codes::INVALID_PARAMS,
                "tandem.focusSession needs one argument {\"pid\": <process id or null>, \"threadId\"?: <thread id>}",
            )
        };
        let id = |v: &Value| v.as_i64().and_then(|p| i32::try_from(p).ok());
        let arg = arguments.first();
        let pid = match arg.and_then(|a| a.get("pid")) {
            Some(Value::Null) => None,
            Some(v) => Some(id(v).ok_or_else(invalid)?),
            None => return Err(invalid()),
        };
        let thread = match arg.and_then(|a| a.get("threadId")) {
            None | Some(Value::Null) => None,
            Some(v) => Some(id(v).ok_or_else(invalid)?),
        };
        // A thread gone already (or never one) leaves the session's process focused.
        let pid = thread
            .and_then(|t| procman::tracer::procfs::process_of(procman::tracer::Tid(t)))
            .map(|p| p.0)
            .or(pid);
        if let Some(live) = &self.live {
            live.set_focus(pid);
            tracing::info!(?pid, "focused debug session");
            self.ask_refresh();
        }
        Ok(json!({ "pid": self.live.as_ref().and_then(Live::focused) }))
    }

    fn document(&self, uri: &str) -> Result<Value, ResponseError> {
        let doc = self.documents.get(uri).ok_or_else(|| {
            ResponseError::new(codes::INVALID_PARAMS, format!("document {uri} is not open"))
        })?;
        Ok(
            json!({ "uri": uri, "version": doc.version, "languageId": doc.language_id, "text": doc.text }),
        )
    }
}

#[derive(serde::Deserialize)]
struct ExecuteCommandParams {
    command: String,
    #[serde(default)]
    arguments: Vec<Value>,
}

#[derive(serde::Deserialize)]
struct DocumentQuery {
    uri: String,
}

#[derive(serde::Deserialize)]
struct SleepParams {
    ms: u64,
}

fn test_sleep(ms: u64, cancel: &CancelToken) -> Result<Value, ResponseError> {
    let deadline = std::time::Instant::now() + Duration::from_millis(ms);
    while std::time::Instant::now() < deadline {
        if cancel.is_cancelled() {
            return Err(ResponseError::new(codes::REQUEST_CANCELLED, "cancelled"));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(json!({ "slept": ms }))
}

fn params<T: DeserializeOwned>(req: &Request) -> Result<T, ResponseError> {
    let value = req.params.clone().unwrap_or(Value::Null);
    serde_json::from_value(value).map_err(|e| {
        ResponseError::new(
            codes::INVALID_PARAMS,
            format!("invalid params for {}: {e}", req.method),
        )
    })
}

fn notification_params<T: DeserializeOwned>(not: &Notification) -> Result<T, String> {
    let value = not.params.clone().unwrap_or(Value::Null);
    serde_json::from_value(value).map_err(|e| format!("invalid params: {e}"))
}
