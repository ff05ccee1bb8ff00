//! What a tool call can do while it runs: tell the client how far a long wait has got
//! (`notifications/progress`, when the request carried `_meta.progressToken`) and learn
//! that the client cancelled it (`notifications/cancelled` naming its id).
//!
//! Why: a function breakpoint on a big program may need the name table the session is
//! still building in the background (seconds on a C++ program of hundreds of units).
//! The DAP face holds such a request with a cancellable progress; an agent deserves the
//! same rather than a call that is silent until it is done.

use std::cell::Cell;

use serde_json::{json, Value};

/// The context of one `tools/call`.
pub struct Call<'a> {
    /// The request's progress token, and where notifications go.
    progress: Option<(Value, &'a dyn Fn(Value))>,
    /// Whether the client cancelled the request (reads what arrived meanwhile).
    cancelled: &'a dyn Fn() -> bool,
    /// The last progress value sent: each must be greater than the one before.
    sent: Cell<Option<u64>>,
    /// Whether [`Call::is_cancelled`] said so: the request gets no response then.
    was_cancelled: Cell<bool>,
}

impl<'a> Call<'a> {
    /// A call that reports progress to `notify` when `token` is given, and is cancelled
    /// when `cancelled` says so.
    pub fn new(
        token: Option<Value>,
        notify: &'a dyn Fn(Value),
        cancelled: &'a dyn Fn() -> bool,
    ) -> Call<'a> {
        Call {
            progress: token.map(|t| (t, notify)),
            cancelled,
            sent: Cell::new(None),
            was_cancelled: Cell::new(false),
        }
    }

    /// A call nobody watches: no progress, never cancelled (the HTTP transport's, and
    /// the host's own clean-ups).
    pub fn unwatched() -> Call<'static> {
        Call::new(None, &|_| {}, &|| false)
    }

    /// Reports `done` of `total` with `message`, unless it is not past what was sent.
    pub fn progress(&self, done: u64, total: u64, message: &str) {
        let Some((token, notify)) = &self.progress else {
            return;
        };
        if self.sent.get().is_some_and(|last| done <= last) {
            return;
        }
        self.sent.set(Some(done));
        notify(json!({
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": token, "progress": done, "total": total, "message": message},
        }));
    }

    /// Whether the client cancelled the call.
    pub fn is_cancelled(&self) -> bool {
        if !self.was_cancelled.get() && (self.cancelled)() {
            self.was_cancelled.set(true);
        }
        self.was_cancelled.get()
    }

    /// Whether the call ended because it was cancelled.
    pub fn was_cancelled(&self) -> bool {
        self.was_cancelled.get()
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;

    #[test]
    fn progress_goes_to_its_token_and_only_forward() {
        let sent = RefCell::new(Vec::new());
        let notify = |v: Value| sent.borrow_mut().push(v);
        let call = Call::new(Some(json!("t")), &notify, &|| false);
        call.progress(0, 10, "waiting");
        call.progress(0, 10, "waiting");
        call.progress(4, 10, "waiting");
        call.progress(3, 10, "waiting");
        let sent = sent.borrow();
        let values: Vec<&Value> = sent.iter().map(|v| &v["params"]["progress"]).collect();
        assert_eq!(values, [&json!(0), &json!(4)]);
        assert_eq!(sent[0]["method"], "notifications/progress");
        assert_eq!(sent[0]["params"]["progressToken"], "t");
        assert_eq!(sent[0]["params"]["total"], 10);
    }

    #[test]
    fn without_a_token_nothing_is_sent_and_a_cancellation_is_kept() {
        let sent = RefCell::new(0);
        let notify = |_: Value| *sent.borrow_mut() += 1;
        let asked = Cell::new(0);
        let cancelled = || {
            asked.set(asked.get() + 1);
            asked.get() == 2
        };
        let call = Call::new(None, &notify, &cancelled);
        call.progress(1, 2, "waiting");
        assert_eq!(*sent.borrow(), 0);
        assert!(!call.is_cancelled());
        assert!(call.is_cancelled());
        assert!(call.is_cancelled(), "once cancelled, always");
        assert!(call.was_cancelled());
        assert!(!Call::unwatched().is_cancelled());
    }
}
