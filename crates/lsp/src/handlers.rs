//! The worker side of the feature requests: what each one does once its parameters are parsed
//! and the main loop's state is copied into a [`Snapshot`]. The main loop's dispatch table
//! (`server.rs`) pairs each method with its parameter type and one of these handlers; parsing,
//! the document's path, the snapshot and the spawn on a worker are done once there.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use wire::jsonrpc::{codes, ResponseError};

use crate::cancel::CancelToken;
use crate::features::{self, Context, LiveHover, Sources};
use crate::lens;
use crate::live::{self, Live};
use crate::mode::Features;
use crate::proto::{
    BreakpointLocationsParams, DocumentSymbolParams, InlineValueParams, SemanticTokensParams,
    TextDocumentPositionParams, WorkspaceSymbolParams,
};
use crate::text::{offset_of, PositionEncoding};
use crate::tokens;
use crate::workspace::Workspace;

/// How long a request waits for the first indexing before answering from what is ready.
pub(crate) const INDEX_PATIENCE: Duration = Duration::from_secs(30);

/// What a feature request takes from the main loop to its worker.
pub(crate) struct Snapshot {
    pub workspace: Option<Arc<Workspace>>,
    pub live: Option<Live>,
    pub open: HashMap<PathBuf, Arc<str>>,
    pub encoding: PositionEncoding,
    pub features: Features,
}

/// What a handler works with on its worker.
pub(crate) struct Job {
    pub cx: Context,
    /// The live side itself, for inline values (hovers reach it through `cx.live`).
    pub live: Option<Live>,
    pub encoding: PositionEncoding,
    pub features: Features,
    pub cancel: CancelToken,
}

impl Snapshot {
    /// Waits (on the worker) for the index, then gathers what the feature needs.
    pub(crate) fn job(self, cancel: CancelToken) -> Result<Job, ResponseError> {
        let served = match &self.workspace {
            Some(ws) => ws.snapshot(INDEX_PATIENCE, &|| cancel.is_cancelled()),
            None => Vec::new(),
        };
        self.job_over(served, cancel)
    }

    /// The job over the binaries `served`, without waiting for the index.
    pub(crate) fn job_over(
        self,
        served: Vec<Arc<crate::workspace::Served>>,
        cancel: CancelToken,
    ) -> Result<Job, ResponseError> {
        if cancel.is_cancelled() {
            return Err(ResponseError::new(
                codes::REQUEST_CANCELLED,
                "request cancelled",
            ));
        }
        let cx = Context {
            served,
            sources: Sources::new(
                self.open,
                self.workspace
                    .as_ref()
                    .map_or_else(Default::default, |w| w.texts()),
            ),
            encoding: self.encoding,
            roots: self
                .workspace
                .as_ref()
                .map(|w| w.roots().to_vec())
                .unwrap_or_default(),
            live: self.live.clone().map(|l| Arc::new(l) as Arc<dyn LiveHover>),
        };
        Ok(Job {
            cx,
            live: self.live,
            encoding: self.encoding,
            features: self.features,
            cancel,
        })
    }
}

/// Parameters of a request about one document.
pub(crate) trait DocumentParams {
    /// The document's URI.
    fn uri(&self) -> &str;
}

macro_rules! document_params {
    ($($ty:ty),*) => {$(
        impl DocumentParams for $ty {
            fn uri(&self) -> &str {
                &self.text_document.uri
            }
        }
    )*};
}
document_params!(
    DocumentSymbolParams,
    TextDocumentPositionParams,
    SemanticTokensParams,
    InlineValueParams,
    BreakpointLocationsParams
);

/// What a request's work returns.
pub(crate) type Outcome = Result<Value, ResponseError>;

/// `workspace/symbol`: from the binaries' symbol tables (their index cache files', or built
/// in memory), and, while a binary is still being indexed, its partial table of ELF
/// functions.
pub(crate) fn workspace_symbol(
    snap: Snapshot,
    cancel: CancelToken,
    p: WorkspaceSymbolParams,
) -> Outcome {
    let started = std::time::Instant::now();
    let quick = snap
        .workspace
        .as_ref()
        .and_then(|w| w.quick_tables(INDEX_PATIENCE, &|| cancel.is_cancelled()));
    let (mut job, tables) = match quick {
        Some(tables) => (snap.job_over(Vec::new(), cancel)?, Some(tables)),
        None => {
            let job = snap.job(cancel)?;
            let tables: Option<Vec<_>> = job.cx.served.iter().map(|s| s.cached_names()).collect();
            (job, tables.filter(|t| !t.is_empty()))
        }
    };
    let Some(tables) = tables else {
        return Ok(Value::Array(Vec::new()));
    };
    let answer = features::workspace_symbol_cached(&mut job.cx, &tables, &p.query, &job.cancel);
    if tables.iter().any(|t| t.is_partial()) {
        tracing::debug!(
            target: "tandem::cache",
            query = %p.query,
            elapsed = ?started.elapsed(),
            "workspace/symbol answered in part, from the ELF functions (the index is being built)"
        );
    } else if tables.iter().all(|t| t.table().from_cache_file()) {
        tracing::debug!(
            target: "tandem::cache",
            query = %p.query,
            elapsed = ?started.elapsed(),
            "workspace/symbol answered from the index cache"
        );
    } else {
        tracing::debug!(
            target: "tandem::cache",
            query = %p.query,
            elapsed = ?started.elapsed(),
            "workspace/symbol answered from the symbol tables built in memory"
        );
    }
    answer
}

pub(crate) fn document_symbol(mut job: Job, path: PathBuf, _: DocumentSymbolParams) -> Outcome {
    features::document_symbols(&mut job.cx, &path, &job.cancel)
}

/// A feature at a position: the position becomes a byte offset of the current text first.
fn at_position(
    mut job: Job,
    path: &Path,
    p: TextDocumentPositionParams,
    feature: fn(&mut Context, &Path, usize) -> Value,
) -> Outcome {
    let Some(text) = job.cx.sources.text(path) else {
        return Ok(Value::Null);
    };
    let Ok(offset) = offset_of(&text, p.position.into(), job.encoding) else {
        return Ok(Value::Null);
    };
    Ok(feature(&mut job.cx, path, offset))
}

pub(crate) fn hover(job: Job, path: PathBuf, p: TextDocumentPositionParams) -> Outcome {
    if job.features.declaration_hovers() {
        at_position(job, &path, p, features::hover)
    } else {
        at_position(job, &path, p, features::live_hover)
    }
}

pub(crate) fn definition(job: Job, path: PathBuf, p: TextDocumentPositionParams) -> Outcome {
    at_position(job, &path, p, features::definition)
}

pub(crate) fn declaration(job: Job, path: PathBuf, p: TextDocumentPositionParams) -> Outcome {
    at_position(job, &path, p, features::declaration)
}

/// `semanticTokens/full` and `semanticTokens/range` (with a range).
pub(crate) fn semantic_tokens(mut job: Job, path: PathBuf, p: SemanticTokensParams) -> Outcome {
    let bytes = match (p.range, job.cx.sources.text(&path)) {
        (Some(r), Some(text)) => {
            let start = offset_of(&text, r.start.into(), job.encoding);
            let end = offset_of(&text, r.end.into(), job.encoding);
            match (start, end) {
                (Ok(s), Ok(e)) if s <= e => Some((s, e)),
                _ => {
                    return Err(ResponseError::new(
                        codes::INVALID_PARAMS,
                        "range is not within the document",
                    ))
                }
            }
        }
        _ => None,
    };
    tokens::semantic_tokens(&mut job.cx, &path, bytes, &job.cancel)
}

pub(crate) fn inline_value(mut job: Job, path: PathBuf, p: InlineValueParams) -> Outcome {
    let Some(live) = job.live.clone() else {
        return Ok(json!([]));
    };
    let stopped = p
        .context
        .and_then(|c| c.stopped_location)
        .map(|r| r.start.line);
    let lines = (p.range.start.line, p.range.end.line);
    let mut values = live::inline_values(&mut job.cx, &live, &path, lines, stopped);
    if let (Some(list), Some(returned)) = (
        values.as_array_mut(),
        crate::debug_lens::returned_inline(&mut job.cx, &live, &path, lines),
    ) {
        list.push(returned);
    }
    Ok(values)
}

pub(crate) fn breakpoint_locations(
    mut job: Job,
    path: PathBuf,
    p: BreakpointLocationsParams,
) -> Outcome {
    let lines = p.range.map(|r| (r.start.line, r.end.line));
    Ok(live::breakpoint_lines(&mut job.cx, &path, lines))
}

/// Run/Debug lenses (not for Rust in companion mode: rust-analyzer has them) and the
/// paused session's lenses (hit counts, the returned value), ordered by line.
pub(crate) fn code_lens(mut job: Job, path: PathBuf, _: DocumentSymbolParams) -> Outcome {
    let mut lenses: Vec<(u32, Value)> = Vec::new();
    if job.features.run_lenses(crate::sources::Lang::of(&path)) {
        lenses = lens::code_lenses(&mut job.cx, &path);
    }
    if let Some(live) = job.live.clone() {
        lenses.extend(crate::debug_lens::session_lenses(&mut job.cx, &live, &path));
    }
    lenses.sort_by_key(|l| l.0);
    Ok(Value::Array(lenses.into_iter().map(|l| l.1).collect()))
}
