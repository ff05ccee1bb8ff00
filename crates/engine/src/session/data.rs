//! Data breakpoints on the tracer thread: lvalues turned into watchable ranges, ranges
//! assigned to the four debug-register slots (set on every thread by `tracer`), and
//! hits decided — condition, hit count, old and new value — where they trap.

use std::collections::HashMap;
use std::sync::Arc;

use tracer::debugregs::DR6_SINGLE_STEP;
use tracer::{DebugRegisters, HwAccess, HwSlot, RuntimeAddr, Tid, Tracer};

use super::env::{with_env, EvalIn};
use super::{eval_condition, lock, Core, Session, SessionEvent, Sites, StopCause};
use crate::breakpoints::{BreakpointStatus, HitCondition, HitSite};
use crate::error::{Error, Result};
use crate::expr::{self, ETy, Expr, Loc};
use crate::ids::{BreakpointId, FrameId};
use crate::mem::TracerMemory;
use crate::values::{format_g, Renderer};
use crate::watch::{
    range_problem, split_aligned, DataAccess, DataBreakpoint, DataBreakpointInfo, ValueKind,
    WatchLabel, WatchScope,
};

/// Watches tied to a frame: their end with it.
mod scope;
pub(super) use scope::scope_alive;

/// One data breakpoint as the tracer thread sees it.
pub(super) struct DataBp {
    pub(super) id: BreakpointId,
    /// Address, size and access as asked (a `Read` stays `Read` here, so asking
    /// again keeps the id).
    key: (u64, u64, DataAccess),
    /// Disabled: its slots stay programmed, its hits neither count nor stop.
    pub(super) enabled: bool,
    /// The debug-register slots it uses; empty when it could not be set.
    slots: Vec<usize>,
    condition: Option<Expr>,
    hit_condition: Option<HitCondition>,
    hits: u64,
    /// Condition scopes by pc, as for line breakpoints.
    scopes: HashMap<u64, Arc<HitSite>>,
    /// The value at the last hit (or when it was set), for "old → new".
    old: Option<Vec<u8>>,
    /// The frame it is tied to (a local, a parameter or a register was watched): it is
    /// deleted when the frame is gone (`scope.rs`).
    pub(super) scope: Option<WatchScope>,
    /// The hidden breakpoint at its frame's return address, when one was planted.
    pub(super) planted: Option<u64>,
}

/// Every data breakpoint, and the names and types of ranges that
/// `data_breakpoint_info` described (to render their values at hits).
#[derive(Default)]
pub(super) struct DataTable {
    bps: Vec<DataBp>,
    labels: HashMap<(u64, u64), WatchLabel>,
}

impl DataTable {
    pub(super) fn get_mut(&mut self, id: BreakpointId) -> Option<&mut DataBp> {
        self.bps.iter_mut().find(|b| b.id == id)
    }
}

/// A data breakpoint prepared off the tracer thread.
struct Wanted {
    key: (u64, u64, DataAccess),
    access: HwAccess,
    pieces: Vec<(u64, u8)>,
    condition: Option<Expr>,
    hit_condition: Option<HitCondition>,
    /// Why it cannot be set at all.
    problem: Option<String>,
    /// A note for a breakpoint that is set (or a bad condition).
    note: Option<String>,
}

fn read_value(t: &Tracer, addr: u64, size: u64) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; usize::try_from(size).ok()?];
    match t.read_memory(RuntimeAddr(addr), &mut buf) {
        Ok(n) if n == buf.len() => Some(buf),
        _ => None,
    }
}

fn le(bytes: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = bytes.len().min(8);
    b[..n].copy_from_slice(&bytes[..n]);
    u64::from_le_bytes(b)
}

/// A watched value as text, typed when `data_breakpoint_info` knew its type.
fn render(t: &Tracer, label: Option<&WatchLabel>, bytes: &[u8]) -> String {
    let raw = le(bytes);
    let signed = |raw: u64| match bytes.len() {
        1 => i64::from(raw as u8 as i8),
        2 => i64::from(raw as u16 as i16),
        4 => i64::from(raw as u32 as i32),
        _ => raw as i64,
    };
    match label.map(|l| &l.kind) {
        Some(ValueKind::Dwarf { binary, bias, ty }) => {
            let mem = TracerMemory(t);
            let r = Renderer {
                binary,
                bias: *bias,
                mem: &mem,
                bounds: None,
                languages: &crate::rust::LANGUAGES,
            };
            let place = crate::values::Place::Bytes(Arc::from(bytes), 0);
            r.render("", *ty, place, 0).0.rendered
        }
        Some(ValueKind::Int { signed: true }) => signed(raw).to_string(),
        Some(ValueKind::Float) if bytes.len() == 4 => {
            format_g(f64::from(f32::from_bits(raw as u32)), 9)
        }
        Some(ValueKind::Float) => format_g(f64::from_bits(raw), 17),
        Some(ValueKind::Pointer) => format!("{raw:#x}"),
        Some(ValueKind::Int { signed: false }) | None => raw.to_string(),
    }
}

impl Core {
    /// A debug register trapped: after the access, with the pc past the instruction.
    /// Hits whose condition holds stop with the old and new value; otherwise the
    /// process goes on — or, when the trap also ended a single-step, the step does.
    pub(super) fn on_watchpoint(&mut self, t: &mut Tracer, tid: Tid, dr6: u64) {
        let stepped = dr6 & DR6_SINGLE_STEP != 0;
        let hit: Vec<usize> = DebugRegisters::hit_slots(dr6).collect();
        let pc = t.regs(tid).map(|r| r.pc()).unwrap_or(0);
        // A write to the slot of a watched local whose frame is gone (a longjmp or an
        // exception left it) is another frame's: the watch ends there instead, as gdb's
        // check at a trigger ends it.
        let gone: Vec<BreakpointId> = self
            .data
            .bps
            .iter()
            .filter(|b| b.slots.iter().any(|s| hit.contains(s)))
            .filter_map(|b| Some((b.id, b.scope?)))
            .filter(|(_, s)| scope_alive(t, &self.modules, s) == Some(false))
            .map(|(id, _)| id)
            .collect();
        let mut ids = Vec::new();
        let mut words = Vec::new();
        let Core {
            data,
            modules,
            enums,
            events,
            ..
        } = self;
        for bp in data
            .bps
            .iter_mut()
            .filter(|b| b.slots.iter().any(|s| hit.contains(s)) && !gone.contains(&b.id))
        {
            let (addr, size, _) = bp.key;
            let new = read_value(t, addr, size);
            let before = std::mem::replace(&mut bp.old, new.clone());
            if !bp.enabled {
                continue;
            }
            if let Some(cond) = &bp.condition {
                let sites = Sites {
                    function: None,
                    cache: &mut bp.scopes,
                };
                match eval_condition(t, tid, pc, modules, enums, sites, cond) {
                    Ok(false) => continue,
                    Ok(true) => {}
                    Err(e) => {
                        // As for line breakpoints: a condition that cannot be evaluated
                        // stops, and says why.
                        let _ = events.send(SessionEvent::Output(format!(
                            "error in condition of data breakpoint {}: {e}\n",
                            bp.id
                        )));
                    }
                }
            }
            bp.hits += 1;
            if bp.hit_condition.is_some_and(|hc| !hc.allows(bp.hits)) {
                continue;
            }
            let label = data.labels.get(&(addr, size));
            let name = label.map_or_else(|| format!("*{addr:#x}"), |l| l.name.clone());
            let text = match (&before, &new) {
                (Some(b), Some(n)) if b != n => {
                    format!("{name}: {} → {}", render(t, label, b), render(t, label, n))
                }
                (_, Some(n)) => format!("{name}: {}", render(t, label, n)),
                (_, None) => format!("{name}: <unreadable>"),
            };
            ids.push(bp.id);
            words.push(text);
        }
        let ended = self.end_watches(t, &gone);
        if !ids.is_empty() {
            self.clear_step(t);
            self.continue_after_step = false;
            let description = Some(words.join("; "));
            self.stopped_with(
                tid,
                StopCause::DataBreakpoint(ids),
                false,
                None,
                description,
            );
            return;
        }
        if !ended.is_empty() {
            self.clear_step(t);
            self.continue_after_step = false;
            self.stop_scope_ended(tid, ended, false);
            return;
        }
        if stepped {
            self.on_step(t, tid);
        } else {
            self.resume(t);
        }
    }

    /// After exec the kernel has cleared the debug registers and the old addresses
    /// mean nothing: every data breakpoint is unverified until set again.
    pub(super) fn data_after_exec(&mut self) {
        self.data.labels.clear();
        let Core { data, events, .. } = self;
        for bp in &mut data.bps {
            let was_set = !bp.slots.is_empty();
            bp.slots.clear();
            bp.old = None;
            bp.scopes.clear();
            // Its frame went with the old image, and the int3 at its return too.
            bp.scope = None;
            bp.planted = None;
            if was_set {
                let _ = events.send(SessionEvent::BreakpointResolved(BreakpointStatus {
                    id: bp.id,
                    verified: false,
                    message: Some("the program executed a new image".into()),
                    file: None,
                    line: None,
                    moved: false,
                    addresses: vec![bp.key.0],
                }));
            }
        }
    }
}

impl Session {
    /// What a data breakpoint on an lvalue would watch (DAP `dataBreakpointInfo`):
    /// its address, size, a description and the possible accesses. `expression` is a
    /// variable, `s.field`, `a[3]`, `*p`, `*(int *)0x4010`, ... evaluated in `frame`,
    /// or among the main executable's globals when there is no frame. A value that is
    /// not in memory, or whose size is not 1, 2, 4 or 8 bytes, is an error saying why.
    pub fn data_breakpoint_info(
        &self,
        frame: Option<FrameId>,
        expression: &str,
    ) -> Result<DataBreakpointInfo> {
        self.check_stopped()?;
        let parsed = expr::parse(expression, &self.is_type_fn())?;
        let name = expression.trim().to_string();
        let place = match frame {
            Some(f) => EvalIn::Frame(Box::new(self.frame(f)?)),
            None => EvalIn::Globals(
                lock(&self.core)
                    .modules
                    .main()
                    .cloned()
                    .ok_or_else(|| Error::Eval("no symbols for the program".into()))?,
            ),
        };
        let enums = lock(&self.core).enums.clone();
        let quoted = name.clone();
        let frame_data = match &place {
            EvalIn::Frame(data) => Some(data.clone()),
            EvalIn::Globals(_) => None,
        };
        let found = self.handle.call(move |t: &mut Tracer| {
            with_env(t, &place, Some(&parsed), &enums, |env| {
                let v = env.eval(&parsed)?;
                let Loc::Mem(address) = v.loc else {
                    return Err(Error::Eval(format!(
                        "'{quoted}' is not in memory (a register or a computed value): \
                         it cannot be watched"
                    )));
                };
                let size = env.size_of(&v.ty)?;
                let kind = match &v.ty {
                    ETy::Dwarf(ty) => ValueKind::Dwarf {
                        binary: env.binary.clone(),
                        bias: env.bias,
                        ty: *ty,
                    },
                    ETy::Int(i) => ValueKind::Int { signed: i.signed },
                    ETy::Double => ValueKind::Float,
                    ETy::Ptr(_) => ValueKind::Pointer,
                    ETy::SubArray(..) | ETy::Void | ETy::Str | ETy::Bool => {
                        ValueKind::Int { signed: false }
                    }
                };
                let tied = names_frame(env, &parsed);
                Ok((address, size, env.type_name(&v.ty), kind, tied))
            })
        })??;
        let (address, size, type_name, kind, tied) = found;
        // A local's watch is tied to its frame (docs/dap.md, "Data breakpoints").
        let scope = match frame_data.filter(|_| tied) {
            Some(data) => {
                let core = self.core.clone();
                self.handle
                    .call(move |t: &mut Tracer| frame_scope(t, &lock(&core).modules, &data))?
            }
            None => None,
        };
        let what = format!("{type_name}, {size} bytes at {address:#x}");
        if let Some(problem) = range_problem(address, size) {
            return Err(Error::Eval(format!("'{name}' ({what}): {problem}")));
        }
        lock(&self.core).data.labels.insert(
            (address, size),
            WatchLabel {
                name: name.clone(),
                kind,
                scope,
            },
        );
        Ok(DataBreakpointInfo {
            address,
            size,
            description: format!("{name} ({what})"),
            access_types: vec![DataAccess::Write, DataAccess::ReadWrite],
        })
    }

    /// [`Session::data_breakpoint_info`] for a raw address and size (DAP's
    /// `asAddress`): values at hits are shown as unsigned integers.
    pub fn data_breakpoint_info_for_address(
        &self,
        address: u64,
        size: u64,
    ) -> Result<DataBreakpointInfo> {
        let what = format!("{size} bytes at {address:#x}");
        if let Some(problem) = range_problem(address, size) {
            return Err(Error::Eval(format!("{what}: {problem}")));
        }
        Ok(DataBreakpointInfo {
            address,
            size,
            description: what,
            access_types: vec![DataAccess::Write, DataAccess::ReadWrite],
        })
    }

    /// Sets the data breakpoints, replacing every data breakpoint set before. Each
    /// range takes one debug register when it is aligned to its size, more when it
    /// is not (split into aligned pieces); there are four, and a breakpoint that does
    /// not fit any more is unverified with "no free hardware debug register". A
    /// [`DataAccess::Read`] request watches reads and writes (x86 cannot watch reads
    /// alone) and says so in its message. Ids come from the breakpoint counter and
    /// stay the same for the same address, size and access (with their hit count and
    /// enabled state). The registers are set on every thread, also on threads created
    /// later. The process must be stopped.
    pub fn set_data_breakpoints(&self, specs: &[DataBreakpoint]) -> Result<Vec<BreakpointStatus>> {
        self.check_stopped()?;
        let mut wanted = Vec::new();
        for spec in specs {
            let (access, mut note) = match spec.access {
                DataAccess::Read => (
                    HwAccess::ReadWrite,
                    Some(
                        "x86 cannot watch reads alone: this breakpoint stops at reads and writes"
                            .to_string(),
                    ),
                ),
                DataAccess::Write => (HwAccess::Write, None),
                DataAccess::ReadWrite => (HwAccess::ReadWrite, None),
            };
            let (condition, hit_condition) = match self.compile(
                spec.condition.as_deref(),
                spec.hit_condition.as_deref(),
                None,
            ) {
                Ok((c, h, _)) => (c, h),
                Err(e) => {
                    note = Some(e.to_string());
                    (None, None)
                }
            };
            wanted.push(Wanted {
                key: (spec.address, spec.size, spec.access),
                access,
                pieces: split_aligned(spec.address, spec.size),
                condition,
                hit_condition,
                problem: range_problem(spec.address, spec.size),
                note,
            });
        }
        let core = self.core.clone();
        let statuses = self.handle.call(move |t: &mut Tracer| {
            let mut c = lock(&core);
            let mut old: HashMap<(u64, u64, DataAccess), DataBp> =
                c.data.bps.drain(..).map(|b| (b.key, b)).collect();
            // The hidden breakpoints at the return of the old watches' frames go once the
            // new ones are in (a watch kept keeps its int3 without a gap).
            let old_returns: Vec<u64> = old.values().filter_map(|b| b.planted).collect();
            let mut regs = DebugRegisters::default();
            let mut next = 0usize;
            let mut out = Vec::new();
            for w in wanted {
                let (id, hits, enabled) = match old.remove(&w.key) {
                    Some(b) => (b.id, b.hits, b.enabled),
                    None => {
                        let id = BreakpointId(c.next_bp);
                        c.next_bp += 1;
                        (id, 0, true)
                    }
                };
                let mut slots = Vec::new();
                let label = c.data.labels.get(&(w.key.0, w.key.1));
                let scope = label.and_then(|l| l.scope);
                let gone = scope.is_some_and(|s| scope_alive(t, &c.modules, &s) == Some(false));
                let message = if let Some(p) = w.problem {
                    Some(p)
                } else if gone {
                    // Its address is no longer that variable's: a watch there would stop
                    // at writes of whatever frame uses the slot now.
                    Some(format!(
                        "the frame of '{}' has returned: its variable no longer exists",
                        label.map_or("the variable", |l| l.name.as_str())
                    ))
                } else if next + w.pieces.len() > regs.slots.len() {
                    Some("no free hardware debug register".to_string())
                } else {
                    let mut trial = regs;
                    for (k, &(addr, len)) in w.pieces.iter().enumerate() {
                        trial.slots[next + k] = Some(HwSlot {
                            addr,
                            len,
                            access: w.access,
                        });
                    }
                    match t.set_watchpoints(&trial) {
                        Ok(()) => {
                            regs = trial;
                            slots = (next..next + w.pieces.len()).collect();
                            next += w.pieces.len();
                            w.note
                        }
                        Err(e) => Some(format!("cannot set the watchpoint: {e}")),
                    }
                };
                let (address, size, _) = w.key;
                let value = (!slots.is_empty())
                    .then(|| read_value(t, address, size))
                    .flatten();
                let mut planted = None;
                if let Some(ret) = scope.and_then(|s| s.ret).filter(|_| !slots.is_empty()) {
                    // Also in a library (main's return into libc) while recording: a
                    // replay plants it when it maps the library.
                    match t.insert_breakpoint(RuntimeAddr(ret)) {
                        Ok(()) => planted = Some(ret),
                        Err(e) => {
                            tracing::warn!("the return of a watched frame at {ret:#x}: {e}")
                        }
                    }
                }
                out.push(BreakpointStatus {
                    id,
                    verified: !slots.is_empty(),
                    message,
                    file: None,
                    line: None,
                    moved: false,
                    addresses: vec![address],
                });
                c.data.bps.push(DataBp {
                    id,
                    key: w.key,
                    enabled,
                    slots,
                    condition: w.condition,
                    hit_condition: w.hit_condition,
                    hits,
                    scopes: HashMap::new(),
                    old: value,
                    scope,
                    planted,
                });
            }
            for ret in old_returns {
                let _ = t.remove_breakpoint(RuntimeAddr(ret));
            }
            // The final set, which also clears the slots of removed breakpoints.
            if let Err(e) = t.set_watchpoints(&regs) {
                tracing::warn!("setting the debug registers: {e}");
            }
            out
        })?;
        Ok(statuses)
    }
}

/// A data breakpoint's value after a write met in the past.
pub(super) type WriteSeen = (BreakpointId, Option<Vec<u8>>);

impl Core {
    /// Whether any enabled data breakpoint is set (reverse-continue then looks for
    /// writes too).
    pub(super) fn has_data_breakpoints(&self) -> bool {
        self.data
            .bps
            .iter()
            .any(|b| b.enabled && !b.slots.is_empty())
    }

    /// Whether a data breakpoint has a hit condition (its hits count from the
    /// recording's start, so the past is searched from there).
    pub(super) fn data_hit_conditions(&self) -> bool {
        self.data
            .bps
            .iter()
            .any(|b| b.enabled && b.hit_condition.is_some())
    }

    /// The data breakpoints that would have stopped at a watchpoint trigger met in the
    /// past, decided without side effects (conditions evaluated there, after the
    /// access; hit conditions against `counts`, hits since the scan's start), each
    /// with the value it has there. Without `counts` (a step back, which does not
    /// count hits from the recording's start) a breakpoint with a hit condition never
    /// stops: a stop it would not make live is worse than one missed.
    pub(super) fn past_write(
        &mut self,
        t: &mut Tracer,
        tid: Tid,
        dr6: u64,
        mut counts: Option<&mut HashMap<BreakpointId, u64>>,
    ) -> Vec<WriteSeen> {
        let hit: Vec<usize> = DebugRegisters::hit_slots(dr6).collect();
        let pc = t.regs(tid).map(|r| r.pc()).unwrap_or(0);
        let Core {
            data,
            modules,
            enums,
            ..
        } = self;
        let mut out = Vec::new();
        for bp in data
            .bps
            .iter_mut()
            .filter(|b| b.enabled && b.slots.iter().any(|s| hit.contains(s)))
        {
            if let Some(cond) = &bp.condition {
                let sites = Sites {
                    function: None,
                    cache: &mut bp.scopes,
                };
                if let Ok(false) = eval_condition(t, tid, pc, modules, enums, sites, cond) {
                    continue;
                }
            }
            if let Some(hc) = bp.hit_condition {
                let Some(counts) = counts.as_deref_mut() else {
                    continue;
                };
                let n = counts.entry(bp.id).or_default();
                *n += 1;
                if !hc.allows(*n) {
                    continue;
                }
            }
            let (addr, size, _) = bp.key;
            out.push((bp.id, read_value(t, addr, size)));
        }
        out
    }

    /// "name: before → after" for writes found in the past, the process shown at the
    /// point `before_shown` says (before the write, or after it when the instruction
    /// could not be found). The breakpoints' remembered values become the shown ones.
    pub(super) fn describe_past_write(
        &mut self,
        t: &Tracer,
        seen: &[WriteSeen],
        before_shown: bool,
    ) -> String {
        let mut words = Vec::new();
        for (id, after) in seen {
            let Some(bp) = self.data.bps.iter_mut().find(|b| b.id == *id) else {
                continue;
            };
            let (addr, size, _) = bp.key;
            bp.old = read_value(t, addr, size);
            words.push(self.describe_write_at(t, addr, size, after, before_shown));
        }
        words.join("; ")
    }

    /// "name: before → after" for one write found in the past to `size` bytes at
    /// `addr` (named and typed as `data_breakpoint_info` described them), `after` the
    /// value it wrote.
    pub(super) fn describe_write_at(
        &self,
        t: &Tracer,
        addr: u64,
        size: u64,
        after: &Option<Vec<u8>>,
        before_shown: bool,
    ) -> String {
        let label = self.data.labels.get(&(addr, size));
        let name = label.map_or_else(|| format!("*{addr:#x}"), |l| l.name.clone());
        let show = |v: &Option<Vec<u8>>| {
            v.as_ref()
                .map_or_else(|| "<unreadable>".to_string(), |b| render(t, label, b))
        };
        if before_shown {
            let here = read_value(t, addr, size);
            format!(
                "{name}: {} → {} (the last write before)",
                show(&here),
                show(after)
            )
        } else {
            format!(
                "{name}: → {} (just after the last write before)",
                show(after)
            )
        }
    }
}

/// Whether an expression reads its frame: it names a local or a parameter (gdb's
/// innermost block of the expression) or a register. A global, a function's `static`, or
/// a heap address reached through a global does not.
fn names_frame(env: &expr::Env<'_>, e: &Expr) -> bool {
    match e {
        Expr::Ident(name) => env
            .find_local(name)
            .is_some_and(|v| v.kind != symbols::VariableKind::Global),
        Expr::Register(_) => true,
        Expr::Member(b, _)
        | Expr::Arrow(b, _)
        | Expr::Unary(_, b)
        | Expr::Cast(_, b)
        | Expr::MethodCall(b, _) => names_frame(env, b),
        Expr::Index(a, b) | Expr::Binary(_, a, b) => names_frame(env, a) || names_frame(env, b),
        Expr::Cond(c, a, b) => names_frame(env, c) || names_frame(env, a) || names_frame(env, b),
        // `sizeof e` reads nothing.
        Expr::SizeofExpr(_)
        | Expr::Int(..)
        | Expr::Char(_)
        | Expr::Float(_)
        | Expr::SizeofType(_)
        | Expr::Str(_) => false,
    }
}

/// The frame a watch evaluated in `data` is tied to: its physical frame (an inlined
/// call's locals live in it), known by its CFA and function, and where it returns to.
/// `None` when the frame cannot be told apart (no CFA): the watch is then not tied.
fn frame_scope(
    t: &Tracer,
    modules: &crate::modules::Modules,
    data: &crate::unwind::FrameData,
) -> Option<WatchScope> {
    let tid = data.tid?;
    let cfa = data.frame.cfa?;
    let function = crate::unwind::function_entry(data.module.as_deref()?, data.lookup_pc)?;
    let mem = TracerMemory(t);
    let ret = crate::unwind::return_address(&data.regs, data.lookup_pc, modules, &mem);
    Some(WatchScope {
        tid,
        main_thread: tid.0 == t.pid().0,
        cfa,
        function,
        ret,
    })
}

/// The debug registers that watch writes to `size` bytes at `addr` and nothing else.
pub(super) fn write_watch(addr: u64, size: u64) -> Result<DebugRegisters> {
    if let Some(p) = range_problem(addr, size) {
        return Err(Error::Eval(p));
    }
    let mut regs = DebugRegisters::default();
    let pieces = split_aligned(addr, size);
    if pieces.len() > regs.slots.len() {
        return Err(Error::Eval(
            "the value needs more hardware debug registers than there are".into(),
        ));
    }
    for (k, (a, len)) in pieces.into_iter().enumerate() {
        regs.slots[k] = Some(HwSlot {
            addr: a,
            len,
            access: HwAccess::Write,
        });
    }
    Ok(regs)
}

/// A value's bytes, when readable.
pub(super) fn value_at(t: &Tracer, addr: u64, size: u64) -> Option<Vec<u8>> {
    read_value(t, addr, size)
}
