//! The LSP main loop: lifecycle, dispatch, cancellation and document synchronisation.
//!
//! One reader thread turns the input into frames; this loop owns all session state and handles
//! every message in arrival order. Requests that may take long run on worker threads and answer
//! through the [`Outbox`], which remembers every pending request so `$/cancelRequest` can answer
//! it with `RequestCancelled` at once; whichever of the two answers first wins, the other is
//! dropped, so a request is never answered twice.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use wire::jsonrpc::{self, codes, Id, Message, Notification, Request, Response, ResponseError};
use wire::{FrameWriter, Inbound, Limits};

use crate::features::{self, Context, Sources};
use crate::proto::{
    CancelParams, DidChangeTextDocumentParams, DidCloseTextDocumentParams,
    DidOpenTextDocumentParams, DocumentSymbolParams, InitializeParams, TextDocumentPositionParams,
    WorkspaceParams, WorkspaceSymbolParams,
};
use crate::text::{offset_of, Change, Document, Documents, PositionEncoding};
use crate::uri;
use crate::workspace::{Workspace, WorkspaceConfig};

/// How long a request waits for the first indexing before answering from what is ready.
const INDEX_PATIENCE: Duration = Duration::from_secs(30);

/// Settings of one server session.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// Serve the `tandem/test/*` requests that the integration tests use to exercise
    /// cancellation with a request of known duration.
    pub test_hooks: bool,
    /// Framing limits for the input.
    pub limits: Limits,
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
    let mut server = Server {
        config,
        phase: Phase::Uninitialized,
        encoding: PositionEncoding::Utf16,
        documents: Documents::default(),
        outbox,
        workers,
        workspace: None,
    };
    Ok(server.run(&inbound))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Uninitialized,
    Running,
    ShutDown,
}

struct Server {
    config: Config,
    phase: Phase,
    encoding: PositionEncoding,
    documents: Documents,
    outbox: Arc<Outbox>,
    workers: Workers,
    workspace: Option<Arc<Workspace>>,
}

/// What a feature request takes from the main loop to its worker.
struct Snapshot {
    workspace: Option<Arc<Workspace>>,
    open: HashMap<std::path::PathBuf, Arc<str>>,
    encoding: PositionEncoding,
}

impl Snapshot {
    /// Waits (on the worker) for the index, then gathers what the feature needs.
    fn context(self, cancel: &CancelToken) -> Result<Context, ResponseError> {
        let served = match &self.workspace {
            Some(ws) => ws.snapshot(INDEX_PATIENCE, &|| cancel.is_cancelled()),
            None => Vec::new(),
        };
        if cancel.is_cancelled() {
            return Err(ResponseError::new(
                codes::REQUEST_CANCELLED,
                "request cancelled",
            ));
        }
        Ok(Context {
            served,
            sources: Sources::new(self.open),
            encoding: self.encoding,
            roots: self
                .workspace
                .as_ref()
                .map(|w| w.roots().to_vec())
                .unwrap_or_default(),
        })
    }
}

fn document_path(uri_str: &str) -> Result<std::path::PathBuf, ResponseError> {
    uri::to_path(uri_str).ok_or_else(|| {
        ResponseError::new(codes::INVALID_PARAMS, format!("not a file URI: {uri_str}"))
    })
}

impl Server {
    fn run(&mut self, inbound: &Receiver<Inbound>) -> Ending {
        loop {
            let event = match inbound.recv() {
                Ok(event) => event,
                Err(_) => return self.end_of_input(),
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
                    Ok(Message::Response(resp)) => {
                        tracing::debug!(id = ?resp.id, "response from the client ignored");
                    }
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
        let reply = |outbox: &Outbox, outcome: Result<Value, ResponseError>| {
            outbox.send(&Message::Response(Response {
                id: Some(req.id.clone()),
                outcome,
            }));
        };
        match (self.phase, req.method.as_str()) {
            (Phase::Uninitialized, "initialize") => {
                let workspace = params::<WorkspaceParams>(&req).unwrap_or_default();
                let outcome =
                    params::<InitializeParams>(&req).map(|p| self.initialize(&p, &workspace));
                reply(&self.outbox, outcome);
            }
            (Phase::Uninitialized, _) => reply(
                &self.outbox,
                Err(ResponseError::new(
                    codes::SERVER_NOT_INITIALIZED,
                    "server not initialized",
                )),
            ),
            (Phase::ShutDown, _) => reply(
                &self.outbox,
                Err(ResponseError::new(
                    codes::INVALID_REQUEST,
                    "server is shut down",
                )),
            ),
            (Phase::Running, "initialize") => reply(
                &self.outbox,
                Err(ResponseError::new(
                    codes::INVALID_REQUEST,
                    "server is already initialized",
                )),
            ),
            (Phase::Running, "shutdown") => {
                self.phase = Phase::ShutDown;
                reply(&self.outbox, Ok(Value::Null));
            }
            (Phase::Running, "tandem/document") => {
                let outcome = params::<DocumentQuery>(&req).and_then(|q| self.document(&q.uri));
                reply(&self.outbox, outcome);
            }
            (Phase::Running, "workspace/symbol") => match params::<WorkspaceSymbolParams>(&req) {
                Ok(p) => {
                    let snap = self.snapshot();
                    self.spawn(req.id.clone(), move |cancel| {
                        let mut cx = snap.context(&cancel)?;
                        features::workspace_symbol(&mut cx, &p.query, &cancel)
                    });
                }
                Err(e) => reply(&self.outbox, Err(e)),
            },
            (Phase::Running, "textDocument/documentSymbol") => {
                match params::<DocumentSymbolParams>(&req)
                    .and_then(|p| document_path(&p.text_document.uri))
                {
                    Ok(path) => {
                        let snap = self.snapshot();
                        self.spawn(req.id.clone(), move |cancel| {
                            let mut cx = snap.context(&cancel)?;
                            features::document_symbols(&mut cx, &path, &cancel)
                        });
                    }
                    Err(e) => reply(&self.outbox, Err(e)),
                }
            }
            (Phase::Running, method @ ("textDocument/definition" | "textDocument/hover")) => {
                let hover = method == "textDocument/hover";
                match params::<TextDocumentPositionParams>(&req).and_then(|p| {
                    document_path(&p.text_document.uri).map(|path| (path, p.position))
                }) {
                    Ok((path, position)) => {
                        let snap = self.snapshot();
                        self.spawn(req.id.clone(), move |cancel| {
                            let encoding = snap.encoding;
                            let mut cx = snap.context(&cancel)?;
                            let Some(text) = cx.sources.text(&path) else {
                                return Ok(Value::Null);
                            };
                            let Ok(offset) = offset_of(&text, position.into(), encoding) else {
                                return Ok(Value::Null);
                            };
                            Ok(if hover {
                                features::hover(&mut cx, &path, offset)
                            } else {
                                features::definition(&mut cx, &path, offset)
                            })
                        });
                    }
                    Err(e) => reply(&self.outbox, Err(e)),
                }
            }
            (Phase::Running, "tandem/test/sleep") if self.config.test_hooks => {
                match params::<SleepParams>(&req) {
                    Ok(p) => self.spawn(req.id.clone(), move |cancel| test_sleep(p.ms, &cancel)),
                    Err(e) => reply(&self.outbox, Err(e)),
                }
            }
            (Phase::Running, method) => reply(
                &self.outbox,
                Err(ResponseError::new(
                    codes::METHOD_NOT_FOUND,
                    format!("unknown method {method}"),
                )),
            ),
        }
    }

    /// Runs a request on a worker; its answer goes out unless the request was cancelled first.
    fn spawn(
        &self,
        id: Id,
        job: impl FnOnce(CancelToken) -> Result<Value, ResponseError> + Send + 'static,
    ) {
        let Some(token) = self.outbox.register(&id) else {
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
            "initialized" => Ok(()),
            "$/cancelRequest" => notification_params::<CancelParams>(&not).map(|p| self.outbox.cancel(&p.id)),
            "textDocument/didOpen" => notification_params::<DidOpenTextDocumentParams>(&not).map(|p| {
                let doc = p.text_document;
                self.documents.open(
                    doc.uri,
                    Document { text: doc.text, version: doc.version, language_id: doc.language_id },
                );
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
            .map_err(|e| format!("edit of {uri} refused, document unchanged: {e}"))
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
            open,
            encoding: self.encoding,
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
        let config = WorkspaceConfig {
            roots,
            binaries: workspace.binaries(),
            index_delay,
        };
        tracing::info!(roots = ?config.roots, binaries = ?config.binaries, "workspace");
        self.workspace = Some(Workspace::start(config));
        tracing::info!(encoding = self.encoding.as_str(), "initialized");
        json!({
            "capabilities": {
                "positionEncoding": self.encoding.as_str(),
                "textDocumentSync": {
                    "openClose": true,
                    // 2 = incremental: ranges against the previous version.
                    "change": 2,
                },
                "workspaceSymbolProvider": true,
                "documentSymbolProvider": true,
                "definitionProvider": true,
                "hoverProvider": true,
            },
            "serverInfo": { "name": "tandem", "version": env!("CARGO_PKG_VERSION") },
        })
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

/// Set when the client cancels the request a worker is computing.
#[derive(Clone, Debug, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// The write side of a session: whole frames under one lock, and the requests still pending.
struct Outbox {
    writer: FrameWriter<Box<dyn Write + Send>>,
    pending: Mutex<HashMap<Id, CancelToken>>,
}

impl Outbox {
    fn new(output: Box<dyn Write + Send>) -> Self {
        Outbox {
            writer: FrameWriter::new(output),
            pending: Mutex::new(HashMap::new()),
        }
    }

    fn send(&self, message: &Message) {
        if let Err(err) = self.writer.write_frame(&jsonrpc::encode(message)) {
            tracing::warn!("cannot write to the client: {err}");
        }
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<Id, CancelToken>> {
        self.pending
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records a request as pending; `None` when the same id is pending already.
    fn register(&self, id: &Id) -> Option<CancelToken> {
        let mut pending = self.pending();
        if pending.contains_key(id) {
            return None;
        }
        let token = CancelToken::default();
        pending.insert(id.clone(), token.clone());
        Some(token)
    }

    /// Answers a pending request, unless it was answered (cancelled) already.
    fn finish(&self, id: &Id, outcome: Result<Value, ResponseError>) {
        if self.pending().remove(id).is_some() {
            self.send(&Message::Response(Response {
                id: Some(id.clone()),
                outcome,
            }));
        }
    }

    /// Answers a pending request with `RequestCancelled` and tells its worker to stop.
    fn cancel(&self, id: &Id) {
        let Some(token) = self.pending().remove(id) else {
            tracing::debug!(%id, "cancel for a request that is not pending");
            return;
        };
        token.0.store(true, Ordering::Relaxed);
        self.send(&Message::Response(Response::err(
            Some(id.clone()),
            codes::REQUEST_CANCELLED,
            "request cancelled",
        )));
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// A small pool of threads for requests that must not block the main loop.
struct Workers {
    tx: Sender<Job>,
}

impl Workers {
    fn new(threads: usize) -> std::io::Result<Self> {
        let (tx, rx) = crossbeam_channel::unbounded::<Job>();
        for i in 0..threads {
            let rx = rx.clone();
            std::thread::Builder::new()
                .name(format!("lsp-worker-{i}"))
                .spawn(move || {
                    for job in rx {
                        job();
                    }
                })?;
        }
        Ok(Workers { tx })
    }

    fn run(&self, job: impl FnOnce() + Send + 'static) {
        if self.tx.send(Box::new(job)).is_err() {
            tracing::error!("worker pool is gone");
        }
    }
}
