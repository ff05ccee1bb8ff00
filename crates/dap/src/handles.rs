//! The ids the adapter hands out: frame ids, variables references and breakpoint ids.
//! Frame ids and variables references are never reused, so a reference kept from before
//! the last continue is recognised as stale instead of naming some other value.

use std::collections::HashMap;
use std::path::PathBuf;

use engine::{BreakpointId, FrameId, ScopeKind, ValueRef};
use procman::tracer::Tid;

/// A DAP `frameId`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DapFrameId(pub i64);

/// A DAP `variablesReference` (0 means "no children" on the wire and is never handed out).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VarRef(pub i64);

/// A DAP breakpoint `id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DapBreakpointId(pub i64);

/// What a frame id stands for.
#[derive(Clone, Copy, Debug)]
pub struct FrameHandle {
    pub frame: FrameId,
    pub tid: Tid,
    /// Position in the thread's stack (0 = innermost).
    pub index: usize,
}

/// What a variables reference stands for.
#[derive(Clone, Debug)]
pub enum VarHandle {
    /// One scope of a frame.
    Scope {
        frame: FrameId,
        kind: ScopeKind,
        /// The innermost frame of the thread that stopped (a return value shows there).
        top: bool,
    },
    /// The children of a structured value.
    Value {
        value: ValueRef,
        /// The frame the value was read in (assignments to its children use it).
        frame: Option<FrameId>,
        /// An expression for the value itself, when one is known.
        evaluate_name: Option<String>,
        /// Whether the children are array elements (indexed) rather than members.
        indexed: bool,
    },
}

/// Frame ids and variables references valid until the program runs again.
#[derive(Debug)]
pub struct Handles {
    frames: HashMap<i64, FrameHandle>,
    vars: HashMap<i64, VarHandle>,
    next: i64,
    /// The ids handed out: `lo..=hi`.
    lo: i64,
    hi: i64,
}

/// Where the ids of a session's own adapter end: from here up, the adapters of child
/// processes in the same session have blocks of their own (`debugger/same.rs`).
pub const OWN_IDS_END: i64 = 1 << 30;

impl Default for Handles {
    fn default() -> Self {
        Handles::in_block(1, OWN_IDS_END - 1)
    }
}

impl Handles {
    /// Handles whose ids stay within `lo..=hi` (`lo` ≥ 1).
    pub fn in_block(lo: i64, hi: i64) -> Handles {
        let lo = lo.max(1);
        Handles {
            frames: HashMap::new(),
            vars: HashMap::new(),
            next: lo,
            lo,
            hi: hi.max(lo),
        }
    }

    fn next_id(&mut self) -> i64 {
        let id = self.next;
        // Stay within the 31 bits some clients keep ids in (and within the block): wrapping
        // after a billion handles is far beyond any session.
        self.next = if self.next >= self.hi {
            self.lo
        } else {
            self.next + 1
        };
        id
    }

    /// Forgets every frame and value: the program is about to run.
    pub fn invalidate(&mut self) {
        self.frames.clear();
        self.vars.clear();
    }

    pub fn add_frame(&mut self, handle: FrameHandle) -> DapFrameId {
        let id = self.next_id();
        self.frames.insert(id, handle);
        DapFrameId(id)
    }

    pub fn frame(&self, id: DapFrameId) -> Option<FrameHandle> {
        self.frames.get(&id.0).copied()
    }

    pub fn add_var(&mut self, handle: VarHandle) -> VarRef {
        let id = self.next_id();
        self.vars.insert(id, handle);
        VarRef(id)
    }

    pub fn var(&self, id: VarRef) -> Option<&VarHandle> {
        self.vars.get(&id.0)
    }
}

/// What a breakpoint was set as: it keeps its DAP id while set again the same way.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum BreakpointKey {
    Line(PathBuf, i64),
    Function(String),
    Instruction(u64),
    Data(String),
}

impl BreakpointKey {
    /// The `reason` of a stopped event for a hit of this kind.
    pub fn stop_reason(&self) -> &'static str {
        match self {
            BreakpointKey::Line(..) => "breakpoint",
            BreakpointKey::Function(_) => "function breakpoint",
            BreakpointKey::Instruction(_) => "instruction breakpoint",
            BreakpointKey::Data(_) => "data breakpoint",
        }
    }
}

/// DAP breakpoint ids: stable per key, mapped from the engine's ids.
#[derive(Debug)]
pub struct BreakpointIds {
    by_key: HashMap<BreakpointKey, DapBreakpointId>,
    by_engine: HashMap<BreakpointId, (DapBreakpointId, BreakpointKey)>,
    next: i64,
}

impl Default for BreakpointIds {
    fn default() -> Self {
        BreakpointIds {
            by_key: HashMap::new(),
            by_engine: HashMap::new(),
            next: 1,
        }
    }
}

impl BreakpointIds {
    /// The id of a key, given out on first sight.
    pub fn id_for(&mut self, key: &BreakpointKey) -> DapBreakpointId {
        if let Some(id) = self.by_key.get(key) {
            return *id;
        }
        let id = DapBreakpointId(self.next);
        self.next += 1;
        self.by_key.insert(key.clone(), id);
        id
    }

    /// Records which engine breakpoint a key became.
    pub fn bind(&mut self, engine: BreakpointId, key: &BreakpointKey) -> DapBreakpointId {
        let id = self.id_for(key);
        self.by_engine.insert(engine, (id, key.clone()));
        id
    }

    pub fn of_engine(&self, engine: BreakpointId) -> Option<&(DapBreakpointId, BreakpointKey)> {
        self.by_engine.get(&engine)
    }

    /// Forgets the id of a key whose breakpoint was deleted (a watch whose frame is
    /// gone): set again later, it is a new breakpoint with a new id, as in gdb.
    pub fn forget(&mut self, key: &BreakpointKey) {
        self.by_key.remove(key);
    }

    /// Forgets the engine's ids (a new process was started).
    pub fn unbind_all(&mut self) {
        self.by_engine.clear();
    }
}
