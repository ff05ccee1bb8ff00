//! One interface over what a stopped program answers, live ([`Session`]) or post-mortem
//! ([`CoreSession`]), for views that only look (the language server's live values).

use tracer::Tid;

use crate::error::Result;
use crate::ids::{FrameId, ValueRef};
use crate::postmortem::CoreSession;
use crate::session::{ModuleInfo, ScopeKind, Session};
use crate::unwind::Frame;
use crate::values::Value;

/// Reading a stopped program: its threads, stacks, values and memory. Running it is
/// not part of this: a core never runs.
pub trait Inspect: Send + Sync {
    /// The threads.
    fn threads(&self) -> Result<Vec<Tid>>;
    /// A thread's stack, innermost frame first (inlined calls included).
    fn stack_trace(&self, tid: Tid) -> Result<Vec<Frame>>;
    /// The variables of one scope of a frame.
    fn variables(&self, frame: FrameId, kind: ScopeKind) -> Result<Vec<Value>>;
    /// Children of a structured value.
    fn children(&self, value: ValueRef, start: u64, count: Option<u64>) -> Result<Vec<Value>>;
    /// An expression's value in a frame, without running code in the program.
    fn evaluate(&self, frame: FrameId, expression: &str) -> Result<Value>;
    /// `len` bytes of memory at `addr`.
    fn read_memory(&self, addr: u64, len: usize) -> Result<Vec<u8>>;
    /// The loaded modules.
    fn modules(&self) -> Vec<ModuleInfo>;
}

impl Inspect for Session {
    fn threads(&self) -> Result<Vec<Tid>> {
        Session::threads(self)
    }
    fn stack_trace(&self, tid: Tid) -> Result<Vec<Frame>> {
        Session::stack_trace(self, tid)
    }
    fn variables(&self, frame: FrameId, kind: ScopeKind) -> Result<Vec<Value>> {
        Session::variables(self, frame, kind)
    }
    fn children(&self, value: ValueRef, start: u64, count: Option<u64>) -> Result<Vec<Value>> {
        Session::children(self, value, start, count)
    }
    fn evaluate(&self, frame: FrameId, expression: &str) -> Result<Value> {
        Session::evaluate(self, frame, expression)
    }
    fn read_memory(&self, addr: u64, len: usize) -> Result<Vec<u8>> {
        Session::read_memory(self, addr, len)
    }
    fn modules(&self) -> Vec<ModuleInfo> {
        Session::modules(self)
    }
}

impl Inspect for CoreSession {
    fn threads(&self) -> Result<Vec<Tid>> {
        Ok(CoreSession::threads(self))
    }
    fn stack_trace(&self, tid: Tid) -> Result<Vec<Frame>> {
        CoreSession::stack_trace(self, tid)
    }
    fn variables(&self, frame: FrameId, kind: ScopeKind) -> Result<Vec<Value>> {
        CoreSession::variables(self, frame, kind)
    }
    fn children(&self, value: ValueRef, start: u64, count: Option<u64>) -> Result<Vec<Value>> {
        CoreSession::children(self, value, start, count)
    }
    fn evaluate(&self, frame: FrameId, expression: &str) -> Result<Value> {
        CoreSession::evaluate(self, frame, expression)
    }
    fn read_memory(&self, addr: u64, len: usize) -> Result<Vec<u8>> {
        CoreSession::read_memory(self, addr, len)
    }
    fn modules(&self) -> Vec<ModuleInfo> {
        CoreSession::modules(self)
    }
}
