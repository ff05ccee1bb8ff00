//! The write side of a session and its workers: whole frames under one lock, the requests
//! still pending (so `$/cancelRequest` can answer one at once, and an edit can mark one stale),
//! the server's own requests awaiting the client's answer, and a small pool of threads for
//! requests that must not block the main loop.

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::Mutex;

use crossbeam_channel::Sender;
use serde_json::Value;
use wire::jsonrpc::{self, codes, Id, Message, Notification, Request, Response, ResponseError};
use wire::FrameWriter;

use crate::cancel::CancelToken;

/// A request being computed: its token and the document it is about.
struct Pending {
    token: CancelToken,
    document: Option<String>,
}

/// What to do with the client's answer to a request of the server.
pub(crate) type OnReply = Box<dyn FnOnce(Result<Value, ResponseError>) + Send>;

/// The write side of a session: whole frames under one lock, the requests still pending, and
/// the server's own requests awaiting the client's answer.
pub(crate) struct Outbox {
    writer: FrameWriter<Box<dyn Write + Send>>,
    pending: Mutex<HashMap<Id, Pending>>,
    awaiting: Mutex<HashMap<Id, OnReply>>,
    next_request: std::sync::atomic::AtomicU64,
}

impl Outbox {
    pub(crate) fn new(output: Box<dyn Write + Send>) -> Self {
        Outbox {
            writer: FrameWriter::new(output),
            pending: Mutex::new(HashMap::new()),
            awaiting: Mutex::new(HashMap::new()),
            next_request: std::sync::atomic::AtomicU64::new(1),
        }
    }

    /// Sends a request to the client; `on_reply` runs on the main loop with its answer.
    pub(crate) fn request(&self, method: &str, params: Option<Value>, on_reply: OnReply) {
        let n = self.next_request.fetch_add(1, Ordering::Relaxed);
        let id = Id::from(format!("tandem-{n}").as_str());
        self.awaiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.clone(), on_reply);
        self.send(&Message::Request(Request {
            id,
            method: method.to_owned(),
            params,
        }));
    }

    /// The client answered one of our requests.
    pub(crate) fn answered(&self, resp: Response) {
        let on_reply = resp.id.as_ref().and_then(|id| {
            self.awaiting
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(id)
        });
        match on_reply {
            Some(f) => f(resp.outcome),
            None => tracing::debug!(id = ?resp.id, "response to no request of ours"),
        }
    }

    pub(crate) fn send(&self, message: &Message) {
        if let Err(err) = self.writer.write_frame(&jsonrpc::encode(message)) {
            tracing::warn!("cannot write to the client: {err}");
        }
    }

    /// Sends a notification to the client.
    pub(crate) fn notify(&self, method: &str, params: Value) {
        self.send(&Message::Notification(Notification {
            method: method.to_owned(),
            params: Some(params),
        }));
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<Id, Pending>> {
        self.pending
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records a request as pending; `None` when the same id is pending already.
    pub(crate) fn register(&self, id: &Id, document: Option<String>) -> Option<CancelToken> {
        let mut pending = self.pending();
        if pending.contains_key(id) {
            return None;
        }
        let token = CancelToken::default();
        pending.insert(
            id.clone(),
            Pending {
                token: token.clone(),
                document,
            },
        );
        Some(token)
    }

    /// Answers a pending request, unless it was answered (cancelled) already; with
    /// ContentModified when its document changed meanwhile.
    pub(crate) fn finish(&self, id: &Id, outcome: Result<Value, ResponseError>) {
        let Some(pending) = self.pending().remove(id) else {
            return;
        };
        let outcome = if pending.token.is_modified() {
            Err(ResponseError::new(
                codes::CONTENT_MODIFIED,
                "the document changed while the request was computed",
            ))
        } else {
            outcome
        };
        self.send(&Message::Response(Response {
            id: Some(id.clone()),
            outcome,
        }));
    }

    /// Marks the pending requests about `uri` as stale.
    pub(crate) fn modified(&self, uri: &str) {
        for p in self.pending().values() {
            if p.document.as_deref() == Some(uri) {
                p.token.mark_modified();
            }
        }
    }

    /// Answers a pending request with `RequestCancelled` and tells its worker to stop.
    pub(crate) fn cancel(&self, id: &Id) {
        let Some(pending) = self.pending().remove(id) else {
            tracing::debug!(%id, "cancel for a request that is not pending");
            return;
        };
        pending.token.cancel();
        self.send(&Message::Response(Response::err(
            Some(id.clone()),
            codes::REQUEST_CANCELLED,
            "request cancelled",
        )));
    }
}

type Task = Box<dyn FnOnce() + Send>;

/// A small pool of threads for requests that must not block the main loop.
pub(crate) struct Workers {
    tx: Sender<Task>,
}

impl Workers {
    pub(crate) fn new(threads: usize) -> std::io::Result<Self> {
        let (tx, rx) = crossbeam_channel::unbounded::<Task>();
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

    pub(crate) fn run(&self, job: impl FnOnce() + Send + 'static) {
        if self.tx.send(Box::new(job)).is_err() {
            tracing::error!("worker pool is gone");
        }
    }
}
