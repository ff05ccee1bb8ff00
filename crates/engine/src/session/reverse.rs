//! Going back in time (docs/reverse.md): reverse-continue and step back over the
//! tracer's recording. The past is searched by replaying it (`Tracer::scan`) with the
//! breakpoints that matter in place, and shown by going to the point found
//! (`Tracer::goto`); the replay is then inspected like any stop.

use std::ops::ControlFlow;

use super::data::WriteSeen;
use super::*;
use tracer::{Move, Position, ScanStop};

/// Single-steps allowed to find the instruction before a point.
const MAX_BACK_STEPS: u64 = 2_000_000;

pub(super) fn reverse_error(e: tracer::Error) -> Error {
    match e {
        tracer::Error::Replay(msg) => Error::Reverse(msg),
        other => Error::Target(other),
    }
}

/// System calls in the first stretches of the past searched: the recent past a step
/// back needs, each reached by a replay from the snapshot before it.
const FIRST_STRETCHES: [u64; 4] = [1, 4, 32, 256];

/// The stretches of the past to search, latest first: the last 4 system calls before
/// `now`, the 32 before those, the 256 before those, then from snapshot to snapshot back
/// to the recording's start (a stretch that starts at a snapshot costs no replay to reach
/// it). A search that finds what it looks for in a stretch does not replay the ones
/// before it with its breakpoints in (docs/reverse.md, "Searching the past").
pub(super) fn windows(t: &Tracer, now: &Position) -> Vec<(u64, Position)> {
    let snapshots = t.recording().map(|r| r.snapshots).unwrap_or_default();
    let Some(&start) = snapshots.first() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut to = now.clone();
    let mut push = |from: u64, to: &mut Position| -> bool {
        let from = from.max(start);
        if from > to.event || (from == to.event && to.path.is_empty()) {
            return from > start;
        }
        out.push((from, to.clone()));
        *to = Position {
            event: from,
            path: Vec::new(),
        };
        from > start
    };
    for span in FIRST_STRETCHES {
        let from = to.event.saturating_sub(span);
        if !push(from, &mut to) {
            return out;
        }
    }
    for s in snapshots.into_iter().rev() {
        if !push(s, &mut to) {
            break;
        }
    }
    out
}

/// Why the session cannot go back, when it does not record (any more).
fn not_recording(t: &Tracer) -> Option<Error> {
    (!t.is_recording()).then(|| {
        Error::Reverse(match t.recording().and_then(|r| r.ended) {
            Some(why) => format!("there is no recording to go back in: {why}"),
            None => "this session does not record: launch with \"reverseDebugging\": true".into(),
        })
    })
}

pub(super) fn now_position(core: &Mutex<Core>, t: &mut Tracer) -> Result<Position> {
    if let Some(e) = not_recording(t) {
        return Err(e);
    }
    if t.position().is_none() && !t.is_replaying() {
        // A fault the program's own instruction raised is a point a replay finds again.
        let fault = lock(core).last_signal.as_ref().and_then(|(_, s)| {
            (matches!(
                s.signo,
                libc::SIGSEGV | libc::SIGBUS | libc::SIGFPE | libc::SIGILL
            ) && s.code > 0)
                .then_some(tracer::StopReason::Signal {
                    signo: s.signo,
                    code: s.code,
                })
        });
        if let Some(stop) = fault {
            return t.locate_fault(stop).map_err(reverse_error);
        }
    }
    t.position().ok_or_else(|| {
        Error::Reverse(
            "this point (after a pause, a watchpoint or a signal) is not one the recording can step back from; run to a breakpoint or step first"
                .into(),
        )
    })
}

impl Session {
    /// An error saying why when the session cannot go back (checked before the
    /// frames and values handed out are dropped: a refused request keeps them).
    pub(super) fn check_records(&self) -> Result<()> {
        match self.handle.call(|t: &mut Tracer| not_recording(t))? {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Whether the session records, so it can go back ([`LaunchOptions::record`]).
    pub fn records(&self) -> bool {
        self.handle
            .call(|t: &mut Tracer| t.is_recording())
            .unwrap_or(false)
    }

    /// Goes back to the last hit of a user breakpoint before now whose condition holds
    /// there (logpoints are not logged again; a hit condition counts the hits from the
    /// recording's start), else to the recording's start. The stop arrives as an event;
    /// `then` runs first, as in [`Session::resume_then`].
    pub fn reverse_continue_then(&self, then: impl FnOnce() + Send + 'static) -> Result<()> {
        self.check_stopped()?;
        self.check_records()?;
        self.clear_tables();
        let core = self.core.clone();
        self.handle.call(move |t: &mut Tracer| -> Result<()> {
            let now = now_position(&core, t)?;
            then();
            let res = reverse_continue_on_tracer(&core, t, &now);
            finish(&core, t, &now, res)
        })?
    }

    /// Steps back: by line (the start of the line executed before this one in this
    /// frame, calls stepped over; at a function's first line, the caller's line of the
    /// call) or by instruction. The stop arrives as an event.
    pub fn step_back_then(
        &self,
        tid: Tid,
        kind: StepKind,
        then: impl FnOnce() + Send + 'static,
    ) -> Result<()> {
        self.check_stopped()?;
        self.check_records()?;
        self.clear_tables();
        let core = self.core.clone();
        self.handle.call(move |t: &mut Tracer| -> Result<()> {
            let now = now_position(&core, t)?;
            if t.recording_start().as_ref() == Some(&now) {
                return Err(Error::Reverse(
                    "this is the start of the recording: there is nothing before it".into(),
                ));
            }
            if kind == StepKind::Out {
                return Err(Error::Reverse(
                    "stepping back out of a function is not supported yet".into(),
                ));
            }
            then();
            let res = match kind {
                StepKind::Instruction => previous_instruction(t, &now)
                    .and_then(|target| t.goto(&target).map_err(reverse_error))
                    .map(|()| (StopCause::Step, None)),
                _ => previous_line(&core, t, tid, &now).and_then(|back| match back {
                    Back::Line(target) => {
                        t.goto(&target).map_err(reverse_error)?;
                        Ok((StopCause::Step, None))
                    }
                    Back::Write { found, seen } => go_to_write(&core, t, &now, found, seen),
                    Back::Entry(target, ids) => {
                        t.goto(&target).map_err(reverse_error)?;
                        Ok(scope_stop(ids))
                    }
                }),
            };
            finish(&core, t, &now, res)
        })?
    }
}

/// Reports the stop a reverse request ended at: its cause, or the error's words with
/// the process shown back at `now`, where the request started (a search that failed
/// left its replay wherever its last stretch ended, a point nobody asked for; the
/// views must still hear of a stop, the process was moved). Should going back to
/// `now` fail too (a divergence), the live process is what is shown.
pub(super) fn finish(
    core: &Mutex<Core>,
    t: &mut Tracer,
    now: &Position,
    res: Result<(StopCause, Option<String>)>,
) -> Result<()> {
    if res.is_err() && t.position().as_ref() != Some(now) {
        if let Err(e) = t.goto(now) {
            tracing::debug!("back to the point the request started from: {e}");
        }
    }
    let mut c = lock(core);
    c.clear_step(t);
    c.at_stop = None;
    let tid = t.shown_thread();
    match res {
        Ok((cause, description)) => {
            if let StopCause::WatchScope(ids) = &cause {
                // Back where the watched frame began: the watch ends before the stop.
                c.end_watches(t, ids);
            }
            let at_bp = matches!(cause, StopCause::Breakpoint(_));
            c.stopped_with(tid, cause, at_bp, None, description);
        }
        Err(e) => {
            c.send(SessionEvent::Output(format!("{e}\n")));
            c.stopped_with(tid, StopCause::Pause, false, None, Some(e.to_string()));
        }
    }
    // A point before a watched frame began (a step back or a restart out of it, a hit
    // in an earlier call): its watch ends.
    c.end_gone_watches(t);
    c.prepare_stop(t);
    Ok(())
}

/// Where a watched frame began, for going back (docs/reverse.md): the call in its
/// caller, where the sp is the frame's CFA — gdb's reverse watchpoint ends there — or,
/// when no call precedes its return address (a frame entered by a jump), its function's
/// first instruction, where the sp is the CFA less the return address.
#[derive(Clone, Copy, Debug)]
pub(super) struct ScopeEntry {
    pub(super) addr: u64,
    pub(super) sp: u64,
    pub(super) id: BreakpointId,
}

/// The entries of the frames the enabled data breakpoints are tied to.
pub(super) fn scope_entries(c: &Core, t: &Tracer) -> Vec<ScopeEntry> {
    c.data_scopes()
        .into_iter()
        .map(|(id, s)| scope_entry(t, id, &s))
        .collect()
}

pub(super) fn scope_entry(
    t: &Tracer,
    id: BreakpointId,
    s: &crate::watch::WatchScope,
) -> ScopeEntry {
    match s.ret.and_then(|ret| call_before(t, ret)) {
        Some(addr) => ScopeEntry {
            addr,
            sp: s.cfa,
            id,
        },
        None => ScopeEntry {
            addr: s.function,
            sp: s.cfa.wrapping_sub(8),
            id,
        },
    }
}

/// The stop where the frames of the data breakpoints `ids` began, in gdb's words.
pub(super) fn scope_stop(ids: Vec<BreakpointId>) -> (StopCause, Option<String>) {
    let words: Vec<String> = ids.iter().map(crate::watch::scope_ended_message).collect();
    (StopCause::WatchScope(ids), Some(words.join(" ")))
}

/// The data breakpoints whose frame begins at this arrival of `tid` at `addr`.
fn entered(entries: &[ScopeEntry], t: &mut Tracer, tid: Tid, addr: u64) -> Vec<BreakpointId> {
    if !entries.iter().any(|e| e.addr == addr) {
        return Vec::new();
    }
    let sp = t.regs(tid).map(|r| r.sp()).unwrap_or(0);
    entries
        .iter()
        .filter(|e| e.addr == addr && e.sp == sp)
        .map(|e| e.id)
        .collect()
}

/// Goes to the write found going back (the `nth` watchpoint trigger after system call
/// `event`, the pc after it `pc`): just before the instruction that made it, else just
/// after it; the stop's cause and the values before and after.
fn go_to_write(
    core: &Mutex<Core>,
    t: &mut Tracer,
    now: &Position,
    found: (u64, u64, u64),
    seen: Vec<WriteSeen>,
) -> Result<(StopCause, Option<String>)> {
    let (event, nth, pc) = found;
    let writer = disasm::instruction_ending_at(&*t, lock(core).modules.all(), pc);
    let (pos, before) = locate_write(t, now, event, nth, pc, writer)?;
    t.goto(&pos).map_err(reverse_error)?;
    let ids = seen.iter().map(|(id, _)| *id).collect();
    let description = lock(core).describe_past_write(t, &seen, before);
    Ok((StopCause::DataBreakpoint(ids), Some(description)))
}

/// The last stop found in the past by reverse-continue.
enum Last {
    /// Breakpoints that would have stopped there.
    Hit(Position, Vec<BreakpointId>),
    /// A write that data breakpoints would have stopped at: the `nth` watchpoint
    /// trigger since system call `event`, with the pc after the instruction.
    Write {
        event: u64,
        nth: u64,
        pc: u64,
        seen: Vec<WriteSeen>,
    },
    /// The frames of these data breakpoints began here: writes before are another
    /// frame's, and the watches end here (gdb's reverse watchpoint on a local).
    Entry(Position, Vec<BreakpointId>),
}

fn reverse_continue_on_tracer(
    core: &Mutex<Core>,
    t: &mut Tracer,
    now: &Position,
) -> Result<(StopCause, Option<String>)> {
    let mut c = lock(core);
    c.clear_step(t);
    let watching = c.has_data_breakpoints();
    let entries = scope_entries(&c, t);
    let plant: Vec<RuntimeAddr> = entries.iter().map(|e| RuntimeAddr(e.addr)).collect();
    // Hit conditions count from the recording's start: then it is searched whole.
    let whole = c.hit_conditions() || c.data_hit_conditions();
    let stretches = if whole {
        t.recording_start()
            .map(|s| vec![(s.event, now.clone())])
            .unwrap_or_default()
    } else {
        windows(t, now)
    };
    let mut last: Option<Last> = None;
    for (from, to) in stretches {
        let mut counts: HashMap<BreakpointId, u64> = HashMap::new();
        // Watchpoint triggers are counted per interval between system calls: the n-th
        // trigger after a call is a point a second replay can find again.
        let mut interval = (u64::MAX, 0u64);
        t.scan_stops(Some(from), &to, &plant, &mut |t, tid, stop| {
            match stop {
                ScanStop::Breakpoint(addr) => {
                    let ids = c.past_hit(t, tid, addr.0, &mut counts);
                    let began = entered(&entries, t, tid, addr.0);
                    if let Some(pos) = t.position() {
                        // A hit where a watched frame began stops as the hit; the
                        // watch ends there all the same (see `finish`).
                        if !ids.is_empty() {
                            last = Some(Last::Hit(pos, ids));
                        } else if !began.is_empty() {
                            last = Some(Last::Entry(pos, began));
                        }
                    }
                }
                ScanStop::Watchpoint { dr6 } => {
                    let Some(pos) = t.position() else {
                        return ControlFlow::Continue(());
                    };
                    if interval.0 != pos.event {
                        interval = (pos.event, 0);
                    }
                    interval.1 += 1;
                    if watching {
                        let seen = c.past_write(t, tid, dr6, Some(&mut counts));
                        if !seen.is_empty() {
                            let pc = t.regs(tid).map(|r| r.pc()).unwrap_or(0);
                            last = Some(Last::Write {
                                event: pos.event,
                                nth: interval.1,
                                pc,
                                seen,
                            });
                        }
                    }
                }
                ScanStop::Fault { .. } => {}
            }
            ControlFlow::Continue(())
        })
        .map_err(reverse_error)?;
        if last.is_some() {
            break;
        }
    }
    match last {
        Some(Last::Hit(pos, ids)) => {
            drop(c);
            t.goto(&pos).map_err(reverse_error)?;
            Ok((StopCause::Breakpoint(ids), None))
        }
        Some(Last::Write {
            event,
            nth,
            pc,
            seen,
        }) => {
            drop(c);
            go_to_write(core, t, now, (event, nth, pc), seen)
        }
        Some(Last::Entry(pos, ids)) => {
            drop(c);
            t.goto(&pos).map_err(reverse_error)?;
            Ok(scope_stop(ids))
        }
        None => {
            drop(c);
            let start = t
                .recording_start()
                .ok_or_else(|| Error::Reverse("the recording has no start".into()))?;
            t.goto(&start).map_err(reverse_error)?;
            Ok((
                StopCause::Entry,
                Some("no breakpoint was hit before: this is the start of the recording".into()),
            ))
        }
    }
}

/// The position of the `nth` watchpoint trigger after system call `event`, found by a
/// second replay from that call: with `writer` (the instruction that made the write)
/// the point just before it executed, as gdb's reverse watchpoints stop (`true`);
/// without it the point right after the write, where the next instruction (`after`)
/// is about to run (`false`).
fn locate_write(
    t: &mut Tracer,
    now: &Position,
    event: u64,
    nth: u64,
    after: u64,
    writer: Option<u64>,
) -> Result<(Position, bool)> {
    let mut k = 0u64;
    let mut armed = false;
    let mut at_writer: Option<Position> = None;
    let mut found: Option<Position> = None;
    let plant = RuntimeAddr(writer.unwrap_or(after));
    t.scan_stops(Some(event), now, &[plant], &mut |t, _, stop| {
        match stop {
            ScanStop::Breakpoint(a) if a == plant => {
                if writer.is_some() {
                    at_writer = t.position();
                } else if armed {
                    found = t.position();
                    return ControlFlow::Break(());
                }
            }
            ScanStop::Breakpoint(_) | ScanStop::Fault { .. } => {}
            ScanStop::Watchpoint { .. } => {
                k += 1;
                if k == nth {
                    if writer.is_some() {
                        found = at_writer.take();
                        return ControlFlow::Break(());
                    }
                    armed = true;
                } else {
                    at_writer = None;
                }
            }
        }
        ControlFlow::Continue(())
    })
    .map_err(reverse_error)?;
    found.map(|p| (p, writer.is_some())).ok_or_else(|| {
        Error::Reverse(format!(
            "the recording diverged here: the write before {after:#x} was not met again"
        ))
    })
}

impl Core {
    /// Whether a user breakpoint has a hit condition (its hits count from the
    /// recording's start, so the past is searched from there).
    fn hit_conditions(&self) -> bool {
        self.bps
            .values()
            .any(|b| b.enabled && b.hit_condition.is_some())
    }

    /// The user breakpoints at `addr` that would have stopped there, decided without
    /// side effects: conditions evaluated, hit conditions against `counts` (hits since
    /// the recording's start), logpoints never (they logged when it happened).
    fn past_hit(
        &mut self,
        t: &mut Tracer,
        tid: Tid,
        addr: u64,
        counts: &mut HashMap<BreakpointId, u64>,
    ) -> Vec<BreakpointId> {
        let mut out = Vec::new();
        let Some(ids) = self.by_addr.get(&RuntimeAddr(addr)) else {
            return out;
        };
        let Core {
            bps,
            modules,
            enums,
            ..
        } = self;
        for id in ids {
            let Some(bp) = bps.get_mut(id) else { continue };
            if !bp.enabled || bp.log.is_some() {
                continue;
            }
            if let Some(cond) = &bp.condition {
                let sites = Sites {
                    function: bp.key.function(),
                    cache: &mut bp.scopes,
                };
                if let Ok(false) = eval_condition(t, tid, addr, modules, enums, sites, cond) {
                    continue;
                }
            }
            let n = counts.entry(bp.id).or_default();
            *n += 1;
            if bp.hit_condition.is_some_and(|hc| !hc.allows(*n)) {
                continue;
            }
            out.push(bp.id);
        }
        out
    }
}

/// The point one instruction before `now`.
fn previous_instruction(t: &mut Tracer, now: &Position) -> Result<Position> {
    let mut base = now.clone();
    let arrive_at = match base.path.pop() {
        Some(Move::Step { count }) => {
            if count > 1 {
                base.path.push(Move::Step { count: count - 1 });
            }
            return Ok(base);
        }
        Some(Move::Trap { addr, count }) => {
            if count > 1 {
                base.path.push(Move::Trap {
                    addr,
                    count: count - 1,
                });
            }
            Some(addr.0)
        }
        None => {
            // Right after a system call: the instruction before is that `syscall`.
            base.event = base
                .event
                .checked_sub(1)
                .ok_or_else(|| Error::Reverse("this is the start of the recording".into()))?;
            None
        }
    };
    if t.recording_start().is_some_and(|s| base.event < s.event) {
        return Err(Error::Reverse("this is the start of the recording".into()));
    }
    t.goto(&base).map_err(reverse_error)?;
    let mut k = 0u64;
    loop {
        let tid = t.shown_thread();
        t.step(tid)?;
        loop {
            match t.wait()? {
                Event::Stopped { .. } => break,
                ev if ev.is_exit() => {
                    return Err(Error::Reverse(
                        "the recording diverged here: the replay ended".into(),
                    ))
                }
                _ => {}
            }
        }
        k += 1;
        let tid = t.shown_thread();
        let here = match arrive_at {
            Some(a) => t.regs(tid)?.pc() == a,
            None => t
                .position()
                .is_some_and(|p| p.event == now.event && p.path.is_empty()),
        };
        if here {
            break;
        }
        if k >= MAX_BACK_STEPS {
            return Err(Error::Reverse(
                "the instruction before this point is too far from the last breakpoint hit or system call".into(),
            ));
        }
    }
    if k > 1 {
        base.path.push(Move::Step { count: k - 1 });
    }
    Ok(base)
}

/// The is_stmt rows of the function at `pc`: (runtime address, line).
fn function_rows(modules: &Modules, pc: u64) -> Vec<(u64, u32)> {
    let Some(module) = modules.find(pc) else {
        return Vec::new();
    };
    let Some(binary) = module.binary() else {
        return Vec::new();
    };
    let Ok(Some(f)) = binary.function_at(module.to_file(pc)) else {
        return Vec::new();
    };
    // The prologue is no line to stop at (as gdb steps past it).
    let entry = f.function.entry();
    let body = f.function.breakpoint_addr;
    let in_prologue = |a: symbols::FileAddr| match (entry, body) {
        (Some(e), Some(b)) => a >= e && a < b,
        _ => false,
    };
    let mut rows = Vec::new();
    for r in &f.function.ranges {
        let Ok(found) = binary.line_rows(r.clone()) else {
            continue;
        };
        for row in found {
            if in_prologue(row.addr) {
                continue;
            }
            if let (true, Some(line)) = (row.is_stmt, row.line) {
                rows.push((module.to_runtime(row.addr), line.get()));
            }
        }
    }
    rows.sort();
    rows.dedup_by_key(|r| r.0);
    rows
}

/// The call instruction that returns to `ret`.
fn call_before(t: &Tracer, ret: u64) -> Option<u64> {
    use iced_x86::{Decoder, DecoderOptions, FlowControl};
    for len in [5u64, 6, 2, 3, 7, 4] {
        let at = ret.checked_sub(len)?;
        let mut buf = vec![0u8; len as usize];
        if t.read_memory(RuntimeAddr(at), &mut buf).ok()? < buf.len() {
            continue;
        }
        let mut d = Decoder::with_ip(64, &buf, at, DecoderOptions::NONE);
        let insn = d.decode();
        if insn.len() as u64 == len
            && matches!(
                insn.flow_control(),
                FlowControl::Call | FlowControl::IndirectCall
            )
        {
            return Some(at);
        }
    }
    None
}

/// One arrival at a row start or at the call into the frame, found by the scan.
struct Arrival {
    pos: Position,
    addr: u64,
    cfa: Option<u64>,
}

/// Where a step back by line goes.
enum Back {
    /// The start of the line before.
    Line(Position),
    /// A watched write on the way (the `nth` watchpoint trigger after a system call,
    /// the pc after it), where gdb's `reverse-next` stops.
    Write {
        found: (u64, u64, u64),
        seen: Vec<WriteSeen>,
    },
    /// The point where the frame of watched locals began (the call in its caller): the
    /// watches end there, and gdb's `reverse-next` stops.
    Entry(Position, Vec<BreakpointId>),
}

/// What a step back met on the way that data breakpoints stop at, after the arrival
/// it follows (`after` arrivals were met before it).
struct WatchSeen {
    after: usize,
    what: WatchWhat,
}

enum WatchWhat {
    Write {
        found: (u64, u64, u64),
        seen: Vec<WriteSeen>,
    },
    Entry(Position, Vec<BreakpointId>),
}

/// The start of the line executed before `now`'s in its frame (calls stepped over), or
/// at the function's first line the start of the caller's line of the call — as gdb's
/// `reverse-next`; and, as it, the last watched write or the beginning of a watched
/// frame met on the way there, when one is.
fn previous_line(core: &Mutex<Core>, t: &mut Tracer, tid: Tid, now: &Position) -> Result<Back> {
    let mut c = lock(core);
    let regs = t.regs(tid)?;
    let pc = regs.pc();
    let mem = TracerMemory(t);
    let frames = unwind::frames(FrameRegs::from_registers(&regs), &c.modules, &mem, 3, 0);
    let cfa = frames.first().and_then(|f| f.frame.cfa);
    let mut caller = frames
        .iter()
        .find(|f| f.physical == 1 && !f.frame.tail_call);
    // A signal handler was entered from the instruction its signal interrupted (for
    // the program's own fault, the faulting one), not by a call: back from its first
    // line is that instruction's line in the interrupted frame, as gdb goes.
    let interrupted =
        caller.is_some_and(|f| f.frame.function.as_deref() == Some(unwind::SIGNAL_FRAME));
    if interrupted {
        caller = frames
            .iter()
            .find(|f| f.physical == 2 && !f.frame.tail_call);
    }
    let caller_cfa = caller.and_then(|f| f.frame.cfa);
    let call = caller.and_then(|f| {
        if interrupted {
            Some(f.frame.pc.0)
        } else {
            call_before(t, f.frame.pc.0)
        }
    });
    let rows = function_rows(&c.modules, pc);
    let caller_rows = call
        .map(|a| function_rows(&c.modules, a))
        .unwrap_or_default();
    let here_line = c.modules.find(pc).and_then(|m| current_line(&m, pc));
    let mut extra: Vec<RuntimeAddr> = rows.iter().map(|r| RuntimeAddr(r.0)).collect();
    extra.extend(caller_rows.iter().map(|r| RuntimeAddr(r.0)));
    extra.extend(call.map(RuntimeAddr));
    let watching = c.has_data_breakpoints();
    let entries = scope_entries(&c, t);
    extra.extend(entries.iter().map(|e| RuntimeAddr(e.addr)));
    extra.sort();
    extra.dedup();
    let frame = LineFrame {
        cfa,
        caller_cfa,
        call,
        rows: &rows,
        caller_rows: &caller_rows,
        here_line,
        at_row_start: c_line(&rows, pc).is_some(),
    };
    // The frame's recent past is searched first: the stretch since the last snapshot,
    // then earlier ones as long as what was found does not decide.
    let stretches = windows(t, now);
    let n = stretches.len();
    let mut arrivals: Vec<Arrival> = Vec::new();
    let mut watched: Vec<WatchSeen> = Vec::new();
    let mut decided = None;
    for (k, (from, to)) in stretches.into_iter().enumerate() {
        let mut found: Vec<Arrival> = Vec::new();
        let mut met: Vec<WatchSeen> = Vec::new();
        let mut interval = (u64::MAX, 0u64);
        let scan_started = std::time::Instant::now();
        let mut stops = 0u32;
        t.scan_stops(Some(from), &to, &extra, &mut |t, tid, stop| {
            stops += 1;
            let addr = match stop {
                ScanStop::Breakpoint(addr) => addr,
                ScanStop::Watchpoint { dr6 } => {
                    // Counted per interval between system calls, every trigger, as
                    // `locate_write` finds the n-th again.
                    let Some(pos) = t.position() else {
                        return ControlFlow::Continue(());
                    };
                    if interval.0 != pos.event {
                        interval = (pos.event, 0);
                    }
                    interval.1 += 1;
                    let seen = if watching {
                        c.past_write(t, tid, dr6, None)
                    } else {
                        Vec::new()
                    };
                    if !seen.is_empty() {
                        let pc = t.regs(tid).map(|r| r.pc()).unwrap_or(0);
                        met.push(WatchSeen {
                            after: found.len(),
                            what: WatchWhat::Write {
                                found: (pos.event, interval.1, pc),
                                seen,
                            },
                        });
                    }
                    return ControlFlow::Continue(());
                }
                ScanStop::Fault { .. } => return ControlFlow::Continue(()),
            };
            if extra.binary_search(&addr).is_err() {
                return ControlFlow::Continue(());
            }
            let began = entered(&entries, t, tid, addr.0);
            let Ok(regs) = t.regs(tid) else {
                return ControlFlow::Continue(());
            };
            let mem = TracerMemory(t);
            let f = unwind::frames(FrameRegs::from_registers(&regs), &c.modules, &mem, 1, 0);
            if let Some(pos) = t.position() {
                found.push(Arrival {
                    pos: pos.clone(),
                    addr: addr.0,
                    cfa: f.first().and_then(|f| f.frame.cfa),
                });
                if !began.is_empty() {
                    // After the arrival at the same point: a step back to it stops
                    // for the watch's end.
                    met.push(WatchSeen {
                        after: found.len(),
                        what: WatchWhat::Entry(pos, began),
                    });
                }
            }
            ControlFlow::Continue(())
        })
        .map_err(reverse_error)?;
        tracing::debug!(
            from,
            to = to.event,
            stops,
            arrivals = found.len(),
            elapsed_us = scan_started.elapsed().as_micros() as u64,
            "a step back searched a stretch"
        );
        // This stretch comes before what was found so far.
        for w in &mut watched {
            w.after += found.len();
        }
        met.append(&mut watched);
        watched = met;
        found.append(&mut arrivals);
        arrivals = found;
        if let Some(d) = frame.decide(&arrivals, k + 1 == n) {
            decided = Some(d);
            break;
        }
    }
    c.clear_step(t);
    drop(c);
    let target = decided.unwrap_or_else(|| {
        Err(Error::Reverse(
            "the line before this one is before the start of the recording".into(),
        ))
    })?;
    // gdb's `reverse-next` stops at the last watched write, or the beginning of a
    // watched frame, between the line it goes to and where it started.
    Ok(match watched.pop().filter(|w| w.after > target) {
        Some(WatchSeen {
            what: WatchWhat::Write { found, seen },
            ..
        }) => Back::Write { found, seen },
        Some(WatchSeen {
            what: WatchWhat::Entry(pos, ids),
            ..
        }) => Back::Entry(pos, ids),
        None => Back::Line(arrivals[target].pos.clone()),
    })
}

/// What stepping back by line knows of the frame it starts in.
struct LineFrame<'a> {
    cfa: Option<u64>,
    caller_cfa: Option<u64>,
    /// The call instruction in the caller that made this frame.
    call: Option<u64>,
    rows: &'a [(u64, u32)],
    caller_rows: &'a [(u64, u32)],
    here_line: Option<u32>,
    at_row_start: bool,
}

impl LineFrame<'_> {
    /// The point to step back to among `arrivals` (from some snapshot to now), or
    /// `None` when they do not decide it and an earlier stretch must be searched too
    /// (`whole`: they start at the recording's start, so they decide).
    fn decide(&self, arrivals: &[Arrival], whole: bool) -> Option<Result<usize>> {
        let line_of = |rows: &[(u64, u32)], a: u64| rows.iter().find(|r| r.0 == a).map(|r| r.1);
        // This invocation of the frame began after the last arrival at the call into it.
        let entry = arrivals.iter().rposition(|a| {
            Some(a.addr) == self.call && a.cfa == self.caller_cfa && self.caller_cfa.is_some()
        });
        let in_frame: Vec<(usize, u32)> = arrivals
            .iter()
            .enumerate()
            .skip(entry.map_or(0, |e| e + 1))
            .filter(|(_, a)| a.cfa == self.cfa && self.cfa.is_some())
            .filter_map(|(i, a)| line_of(self.rows, a.addr).map(|l| (i, l)))
            .collect();
        // Arrivals before the first found may belong to the answer while the entry
        // into the frame is not among them.
        let open = !whole && entry.is_none();
        let mut k = in_frame.len();
        if self.at_row_start {
            // Past this line's own rows (a line can start more than once, as a loop's).
            while k > 0 && Some(in_frame[k - 1].1) == self.here_line {
                k -= 1;
            }
        }
        if k > 0 {
            let line = in_frame[k - 1].1;
            while k > 1 && in_frame[k - 2].1 == line {
                k -= 1;
            }
            if k == 1 && open {
                return None;
            }
            return Some(Ok(in_frame[k - 1].0));
        }
        // Out of the function into its caller, at the start of the line of the call.
        let Some(entry) = entry else {
            return whole.then(|| {
                Err(Error::Reverse(
                    "the line before this one is before the start of the recording".into(),
                ))
            });
        };
        let call_line = self.call.and_then(|a| {
            c_line(self.caller_rows, a).or_else(|| {
                self.caller_rows
                    .iter()
                    .rev()
                    .find(|r| r.0 <= a)
                    .map(|r| r.1)
            })
        });
        let mut start = entry;
        let mut i = entry;
        let mut ended = false;
        while i > 0 {
            i -= 1;
            let a = &arrivals[i];
            if a.cfa != self.caller_cfa {
                continue;
            }
            match line_of(self.caller_rows, a.addr) {
                Some(l) if Some(l) == call_line => start = i,
                Some(_) => {
                    ended = true;
                    break;
                }
                None => {}
            }
        }
        if !ended && !whole {
            return None;
        }
        Some(Ok(start))
    }
}

fn c_line(rows: &[(u64, u32)], a: u64) -> Option<u32> {
    rows.iter().find(|r| r.0 == a).map(|r| r.1)
}

impl Session {
    /// Goes back to the last write before now to the lvalue `expression` names in
    /// `frame` (or among the globals): reverse-continue with a write watchpoint on it
    /// alone, breakpoints and the session's data breakpoints not considered (they are
    /// as before afterwards). The stop arrives as an event (cause
    /// [`StopCause::DataBreakpoint`] with no id, the values in its description); with
    /// no write since the recording's start, the process stays where it is and the
    /// error says so.
    pub fn last_write_then(
        &self,
        frame: Option<FrameId>,
        expression: &str,
        then: impl FnOnce() + Send + 'static,
    ) -> Result<()> {
        self.check_stopped()?;
        self.check_records()?;
        let info = self.data_breakpoint_info(frame, expression)?;
        let (addr, size) = (info.address, info.size);
        // A local's writes are its frame's only: those before it began were another
        // variable's, in the same stack slot.
        let scope = self.watch_scope_of(addr, size);
        let regs = data::write_watch(addr, size)?;
        self.clear_tables();
        let core = self.core.clone();
        let what = info.description;
        self.handle.call(move |t: &mut Tracer| -> Result<()> {
            let now = now_position(&core, t)?;
            let saved = *t.watchpoints();
            t.set_watchpoints(&regs)?;
            then();
            let res = last_write_on_tracer(&core, t, &now, (addr, size, scope), &what);
            if let Err(e) = t.set_watchpoints(&saved) {
                tracing::warn!("restoring the debug registers: {e}");
            }
            match res {
                Ok(done) => finish(&core, t, &now, Ok(done)),
                Err(e) => {
                    // Nothing found: back where it was, and the error is the answer.
                    let _ = t.goto(&now);
                    let _ = finish(&core, t, &now, Ok((StopCause::Pause, Some(e.to_string()))));
                    Err(e)
                }
            }
        })?
    }
}

/// What `debug_last_write` met last going back.
enum LastSeen {
    /// A write: the `nth` watchpoint trigger after a system call and the pc after it,
    /// and the value written.
    Write {
        found: (u64, u64, u64),
        after: Option<Vec<u8>>,
    },
    /// The beginning of the frame of the local watched: writes before it were another
    /// variable's.
    Began,
}

fn last_write_on_tracer(
    core: &Mutex<Core>,
    t: &mut Tracer,
    now: &Position,
    (addr, size, scope): (u64, u64, Option<crate::watch::WatchScope>),
    what: &str,
) -> Result<(StopCause, Option<String>)> {
    lock(core).clear_step(t);
    let entries: Vec<ScopeEntry> = scope
        .iter()
        .map(|s| scope_entry(t, BreakpointId(0), s))
        .collect();
    let plant: Vec<RuntimeAddr> = entries.iter().map(|e| RuntimeAddr(e.addr)).collect();
    let mut last: Option<LastSeen> = None;
    for (from, to) in windows(t, now) {
        let mut interval = (u64::MAX, 0u64);
        t.scan_stops(Some(from), &to, &plant, &mut |t, tid, stop| {
            match stop {
                ScanStop::Watchpoint { .. } => {
                    if let Some(pos) = t.position() {
                        if interval.0 != pos.event {
                            interval = (pos.event, 0);
                        }
                        interval.1 += 1;
                        let pc = t.regs(tid).map(|r| r.pc()).unwrap_or(0);
                        let after = data::value_at(t, addr, size);
                        last = Some(LastSeen::Write {
                            found: (pos.event, interval.1, pc),
                            after,
                        });
                    }
                }
                ScanStop::Breakpoint(at) if !entered(&entries, t, tid, at.0).is_empty() => {
                    last = Some(LastSeen::Began);
                }
                ScanStop::Breakpoint(_) | ScanStop::Fault { .. } => {}
            }
            ControlFlow::Continue(())
        })
        .map_err(reverse_error)?;
        if last.is_some() {
            break;
        }
    }
    let ((event, nth, pc), after) = match last {
        Some(LastSeen::Write { found, after }) => (found, after),
        Some(LastSeen::Began) => {
            return Err(Error::Reverse(format!(
            "{what} was not written since its frame began (a write before was another variable's)"
        )))
        }
        None => {
            return Err(Error::Reverse(format!(
                "{what} was not written since the start of the recording"
            )))
        }
    };
    let writer = disasm::instruction_ending_at(&*t, lock(core).modules.all(), pc);
    let (pos, before) = locate_write(t, now, event, nth, pc, writer)?;
    t.goto(&pos).map_err(reverse_error)?;
    let description = lock(core).describe_write_at(t, addr, size, &after, before);
    Ok((StopCause::DataBreakpoint(Vec::new()), Some(description)))
}
