//! One interface over what a stopped program answers, live ([`Session`]) or post-mortem
//! ([`CoreSession`]): the DAP handlers for threads, stacks, scopes, variables, evaluate,
//! memory and disassembly, and the language server's live values, are written once over it.

use tracer::Tid;

use crate::error::Result;
use crate::ids::{FrameId, ValueRef};
use crate::postmortem::CoreSession;
use crate::session::{ModuleInfo, ScopeKind, Session};
use crate::unwind::Frame;
use crate::values::Value;
use crate::Instruction;

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
    /// A thread's name, where the state records one.
    fn thread_name(&self, tid: Tid) -> Option<String>;
    /// `count` instructions starting `instruction_offset` instructions from the one at
    /// `address`.
    fn disassemble(
        &self,
        address: u64,
        instruction_offset: i64,
        count: usize,
    ) -> Result<Vec<Instruction>>;
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
    fn thread_name(&self, tid: Tid) -> Option<String> {
        Session::thread_name(self, tid)
    }
    fn disassemble(&self, address: u64, offset: i64, count: usize) -> Result<Vec<Instruction>> {
        Session::disassemble(self, address, offset, count)
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
    fn thread_name(&self, _: Tid) -> Option<String> {
        // A core's notes name the process (NT_PRPSINFO), not its threads.
        None
    }
    fn disassemble(&self, address: u64, offset: i64, count: usize) -> Result<Vec<Instruction>> {
        CoreSession::disassemble(self, address, offset, count)
    }
}
