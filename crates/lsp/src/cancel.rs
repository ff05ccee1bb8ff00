//! The token a request's worker watches: set when the client cancels the request, or when the
//! document it is about changes (its answer would be stale).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Set when the client cancels the request a worker is computing, or when the document it
/// is about changes (its answer would be stale).
#[derive(Clone, Debug, Default)]
pub struct CancelToken {
    cancelled: Arc<AtomicBool>,
    modified: Arc<AtomicBool>,
}

impl CancelToken {
    /// Whether the work should stop: cancelled, or made stale by an edit.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed) || self.modified.load(Ordering::Relaxed)
    }

    /// The client cancelled the request.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }

    /// The request's document changed.
    pub fn mark_modified(&self) {
        self.modified.store(true, Ordering::Relaxed);
    }

    /// Whether the request's document changed while it was computed.
    pub fn is_modified(&self) -> bool {
        self.modified.load(Ordering::Relaxed)
    }
}
