//! Stack unwinding: CFI rows from the module covering each pc (frame-pointer fallback),
//! physical frames expanded into inlined frames from the inline chain.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use symbols::{
    Column, EvalContext, Line, MemoryReader, PieceLocation, RegisterReader, RuntimeAddr, UnwindRow,
};

use crate::ids::FrameId;
use crate::mem::{read_u64, FrameRegisters, FrameRegs, LiveRegs};
use crate::modules::{is_system, Module, Modules};

/// Frames deeper than this are not unwound (a corrupt stack must not loop for long).
pub const MAX_FRAMES: usize = 512;

/// One frame of a thread's stack as a user sees it (inlined calls are frames too).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Valid until the debuggee runs again.
    pub id: FrameId,
    /// The function's name, when known (DWARF or the ELF symbol table).
    pub function: Option<String>,
    /// Source file of the current position.
    pub file: Option<PathBuf>,
    /// Source line of the current position.
    pub line: Option<Line>,
    /// Source column of the current position.
    pub column: Column,
    /// The frame's pc: where it executes (frame 0) or returns to (callers).
    pub pc: RuntimeAddr,
    /// The canonical frame address (the caller's sp before the call).
    pub cfa: Option<u64>,
    /// The module's file name.
    pub module: Option<String>,
    /// Whether this frame is an inlined call (it shares registers with its caller).
    pub inlined: bool,
    /// Whether this frame was rebuilt from a tail call (`DW_AT_call_tail_call`): its
    /// function jumped to the frame below and left the stack, so it has no registers of
    /// its own and its pc is the address after the jump.
    pub tail_call: bool,
}

/// A frame with what the engine needs to read its variables.
#[derive(Clone, Debug)]
pub(crate) struct FrameData {
    pub frame: Frame,
    /// Registers of the physical frame.
    pub regs: FrameRegs,
    /// The pc used for lookups: pc for frame 0 (and after signal frames), pc - 1 in
    /// callers so the call instruction's line and scope are found.
    pub lookup_pc: u64,
    pub module: Option<Arc<Module>>,
    /// 0 for the out-of-line function, k for the k-th inlined call (outermost = 1).
    pub inline_index: u32,
    /// Index of the physical frame (0 = innermost).
    pub physical: usize,
    /// The thread, so a frame can read its SSE and x87 registers.
    pub tid: Option<tracer::Tid>,
    /// The calling physical frame, for `DW_OP_entry_value` through its call site.
    pub caller: Option<Arc<CallerFrame>>,
}

impl FrameData {
    /// The registers expressions in this frame read (see [`FrameRegisters`]). A caller's
    /// SSE and x87 registers are the thread's own: x86-64 CFI never describes them, and
    /// an undescribed register keeps its value across the call (the rule gdb applies, and
    /// the one this unwinder applies to the general registers).
    pub(crate) fn registers<'a>(&'a self, tracer: &'a tracer::Tracer) -> FrameRegisters<'a> {
        match self.tid {
            Some(tid) if !self.frame.tail_call => FrameRegisters::Live(LiveRegs {
                general: &self.regs,
                tracer,
                tid,
            }),
            _ => FrameRegisters::Unwound(&self.regs),
        }
    }
}

/// What a callee needs of its caller's frame to evaluate the caller's call-site
/// parameter values (`DW_AT_call_value`).
#[derive(Clone, Debug)]
pub(crate) struct CallerFrame {
    regs: FrameRegs,
    /// The return address of the callee.
    pc: u64,
    lookup_pc: u64,
    cfa: Option<u64>,
    module: Option<Arc<Module>>,
    /// The caller's own caller (entry values chain through call sites).
    caller: Option<Arc<CallerFrame>>,
}

/// How many callers a chain of entry values may go through.
const MAX_ENTRY_CHAIN: u32 = 8;

/// What the call site returning to a caller says of the callee's entry: its parameter
/// registers (`DW_AT_call_value` by `DW_AT_location`) and its parameters by DIE (for
/// `DW_OP_GNU_parameter_ref`), each evaluated in the caller's frame.
#[derive(Debug, Default)]
pub(crate) struct EntryValues {
    registers: HashMap<u16, u64>,
    parameters: HashMap<u64, u64>,
}

impl RegisterReader for EntryValues {
    fn reg(&self, n: u16) -> Option<u64> {
        self.registers.get(&n).copied()
    }

    fn parameter(&self, die: u64) -> Option<u64> {
        self.parameters.get(&die).copied()
    }
}

/// The entry values the call site returning to `caller.pc` describes. A value that
/// cannot be evaluated is left out (the callee's variable then reads as optimized
/// out); `None` when the caller has no such call site.
pub(crate) fn entry_registers(caller: &CallerFrame, mem: &dyn MemoryReader) -> Option<EntryValues> {
    entry_registers_at(caller, mem, 0, &|c| c.caller.clone())
}

/// A caller's own caller, for entry values that chain through call sites.
type Up<'a> = &'a dyn Fn(&CallerFrame) -> Option<Arc<CallerFrame>>;

fn entry_registers_at(
    caller: &CallerFrame,
    mem: &dyn MemoryReader,
    depth: u32,
    up: Up<'_>,
) -> Option<EntryValues> {
    if depth >= MAX_ENTRY_CHAIN {
        return None;
    }
    let module = caller.module.as_ref()?;
    let binary = module.binary()?;
    let site = binary.call_site(module.to_file(caller.pc)).ok()??;
    if site.values.is_empty() && site.parameters.is_empty() {
        return None;
    }
    // The caller's own entry values, only when one of its values needs them.
    let needs_entry = site
        .values
        .iter()
        .map(|(_, e)| e)
        .chain(site.parameters.iter().map(|(_, e)| e))
        .any(|e| e.bytes().iter().any(|&b| b == 0xa3 || b == 0xf3));
    let outer = if needs_entry {
        up(caller).and_then(|c| entry_registers_at(&c, mem, depth + 1, up))
    } else {
        None
    };
    let ctx = EvalContext {
        memory: mem,
        registers: &caller.regs,
        bias: module.bias,
        pc: RuntimeAddr(caller.lookup_pc),
        frame_base: None,
        cfa: caller.cfa,
        tls: None,
        entry_registers: outer.as_ref().map(|m| m as &dyn RegisterReader),
    };
    let value_of = |expr: &symbols::LocationExpr| -> Option<u64> {
        // A call-site value is an expression for the value itself (a typed constant
        // such as a float's `DW_OP_const_type` included), not for where it is.
        let pieces = binary
            .evaluate_location(&expr.to_value_expr(), site.frame_base.as_ref(), &ctx)
            .ok()?;
        match pieces.first().map(|p| &p.location) {
            Some(PieceLocation::Memory(a)) => Some(a.0),
            Some(PieceLocation::Register(r)) => caller.regs.get(*r),
            Some(PieceLocation::Value(b)) => {
                let mut x = [0u8; 8];
                for (d, s) in x.iter_mut().zip(b) {
                    *d = *s;
                }
                Some(u64::from_le_bytes(x))
            }
            _ => None,
        }
    };
    let mut out = EntryValues::default();
    for (reg, expr) in &site.values {
        if let Some(v) = value_of(expr) {
            out.registers.insert(*reg, v);
        }
    }
    for (die, expr) in &site.parameters {
        if let Some(v) = value_of(expr) {
            out.parameters.insert(*die, v);
        }
    }
    Some(out)
}

/// The entry registers of frame 0 at a breakpoint hit (the hot path), recovered only
/// when an expression asks for one: the caller is unwound from frame 0's registers with
/// the site's unwind row and its call site's parameter values are evaluated; callers
/// further up are unwound only when a call-site value itself needs an entry value. As
/// on the stop path ([`frames`]), nothing is recovered past `main` or a signal frame.
pub(crate) struct LazyEntryRegisters<'a> {
    /// Frame 0's registers.
    pub regs: &'a FrameRegs,
    /// Frame 0's pc.
    pub pc: u64,
    /// The unwind row at the pc, when the site has one.
    pub row: Option<&'a UnwindRow>,
    pub module: &'a Module,
    pub modules: &'a Modules,
    pub mem: &'a dyn MemoryReader,
    pub cell: std::cell::OnceCell<Option<EntryValues>>,
}

impl RegisterReader for LazyEntryRegisters<'_> {
    fn reg(&self, n: u16) -> Option<u64> {
        self.cell.get_or_init(|| self.recover()).as_ref()?.reg(n)
    }

    fn parameter(&self, die: u64) -> Option<u64> {
        self.cell
            .get_or_init(|| self.recover())
            .as_ref()?
            .parameter(die)
    }
}

impl LazyEntryRegisters<'_> {
    fn recover(&self) -> Option<EntryValues> {
        let binary = self.module.binary()?;
        if is_main(self.module, self.pc) {
            return None;
        }
        let caller = match self.row {
            Some(row) => {
                let ctx = EvalContext::of_frame(
                    self.mem,
                    self.regs,
                    self.module.bias,
                    RuntimeAddr(self.pc),
                );
                if !has_return_address(row) {
                    return None;
                }
                FrameRegs::from_array(binary.unwind_caller_with(row, &ctx).ok()?)
            }
            None => unwind_one(self.regs, self.pc, Some(self.module), self.mem).1?,
        };
        let caller = caller_frame(self.regs, caller, self.modules, self.mem)?;
        let entry = self.module.to_runtime(
            binary
                .function_at(self.module.to_file(self.pc))
                .ok()??
                .function
                .entry()?,
        );
        let cfa = self.row.and_then(|row| {
            let ctx =
                EvalContext::of_frame(self.mem, self.regs, self.module.bias, RuntimeAddr(self.pc));
            binary.compute_cfa(row, &ctx).ok()
        });
        let caller = match link_of(&caller, entry) {
            Link::Calls => caller,
            Link::Other => return None,
            Link::Rebuilt(chain) => {
                let module = caller.module.clone()?;
                rebuilt_callers(&Arc::new(caller), &module, &chain, cfa)
                    .pop()
                    .map(|c| (*c).clone())?
            }
        };
        let up = |c: &CallerFrame| -> Option<Arc<CallerFrame>> {
            if let Some(known) = &c.caller {
                return Some(known.clone());
            }
            let module = c.module.as_deref()?;
            if is_main(module, c.lookup_pc) {
                return None;
            }
            let outer = unwind_one(&c.regs, c.lookup_pc, Some(module), self.mem).1?;
            caller_frame(&c.regs, outer, self.modules, self.mem).map(Arc::new)
        };
        entry_registers_at(&caller, self.mem, 0, &up)
    }
}

/// What a caller's call site says of the function below it.
enum Link {
    /// It calls that function (or DWARF does not say what it calls).
    Calls,
    /// It calls another function, which reached this one through this unique chain of
    /// tail calls (outermost first).
    Rebuilt(Vec<symbols::TailLink>),
    /// It calls another function and no unique chain of tail calls leads here: the
    /// caller's call site says nothing of this function's entry.
    Other,
}

/// How the call site returning to `caller.pc` relates to the function entered at
/// `callee_entry` (a runtime address).
fn link_of(caller: &CallerFrame, callee_entry: u64) -> Link {
    let Some((module, binary)) = caller
        .module
        .as_ref()
        .and_then(|m| m.binary().map(|b| (m, b)))
    else {
        return Link::Calls;
    };
    let Ok(Some(target)) = binary.call_target(module.to_file(caller.pc)) else {
        return Link::Calls;
    };
    if module.to_runtime(target) == callee_entry {
        return Link::Calls;
    }
    if !module.contains(callee_entry) {
        return Link::Other;
    }
    match binary.tail_chain(target, module.to_file(callee_entry)) {
        Ok(Some(chain)) if !chain.is_empty() => Link::Rebuilt(chain),
        _ => Link::Other,
    }
}

/// The callers a chain of tail calls rebuilds, outermost first, each the caller of
/// the next (the first called by `physical`). A rebuilt frame has no registers of its
/// own: at its jump the callee-saved registers still hold the physical caller's values
/// and the stack pointer is the callee's CFA less the return address; nothing else is
/// known.
fn rebuilt_callers(
    physical: &Arc<CallerFrame>,
    module: &Arc<Module>,
    chain: &[symbols::TailLink],
    callee_cfa: Option<u64>,
) -> Vec<Arc<CallerFrame>> {
    let mut regs = FrameRegs::from_array(Default::default());
    for n in [3u16, 6, 12, 13, 14, 15] {
        if let Some(v) = physical.regs.get(n) {
            regs.set(n, v);
        }
    }
    if let Some(cfa) = callee_cfa {
        regs.set(7, cfa - 8);
    }
    let mut out: Vec<Arc<CallerFrame>> = Vec::new();
    for link in chain {
        let pc = module.to_runtime(link.site.return_pc);
        let mut r = regs.clone();
        r.set(16, pc);
        out.push(Arc::new(CallerFrame {
            regs: r,
            pc,
            lookup_pc: pc - 1,
            cfa: None,
            module: Some(module.clone()),
            caller: Some(out.last().cloned().unwrap_or_else(|| physical.clone())),
        }));
    }
    out
}

/// Whether the function executing at `pc` (inlined calls included) is `main`: entry
/// values are not recovered past it, as gdb does not unwind past `main`.
fn is_main(module: &Module, pc: u64) -> bool {
    module
        .binary()
        .and_then(|b| b.function_at(module.to_file(pc)).ok().flatten())
        .is_some_and(|f| f.function.name == "main")
}

/// Whether an unwind row has a rule for the return address (`_start`'s has none).
fn has_return_address(row: &UnwindRow) -> bool {
    row.registers.iter().any(|(r, rule)| {
        *r == row.return_address_register && !matches!(rule, symbols::RegisterRule::Undefined)
    })
}

/// The caller whose registers `caller` were unwound from a frame with registers
/// `callee`, with its CFA; `None` when they look like garbage or the caller is a
/// signal frame.
fn caller_frame(
    callee: &FrameRegs,
    caller: FrameRegs,
    modules: &Modules,
    mem: &dyn MemoryReader,
) -> Option<CallerFrame> {
    let (csp, sp, pc) = (caller.get(7)?, callee.get(7)?, caller.get(16)?);
    if csp <= sp || pc == 0 || is_sigreturn_trampoline(mem, pc) {
        return None;
    }
    let lookup_pc = pc - 1;
    let module = modules.find(lookup_pc);
    let cfa = frame_cfa(&caller, lookup_pc, module.as_deref());
    Some(CallerFrame {
        regs: caller,
        pc,
        lookup_pc,
        cfa,
        module,
        caller: None,
    })
}

/// A frame's CFA from its unwind row (else from the frame pointer), reading no memory.
fn frame_cfa(regs: &FrameRegs, lookup_pc: u64, module: Option<&Module>) -> Option<u64> {
    if let Some((module, binary)) = module.and_then(|m| m.binary().map(|b| (m, b))) {
        if let Ok(Some(row)) = binary.unwind_row(module.to_file(lookup_pc)) {
            let ctx = EvalContext::of_frame(&NoMemory, regs, module.bias, RuntimeAddr(lookup_pc));
            return binary.compute_cfa(&row, &ctx).ok();
        }
    }
    regs.get(6)
        .filter(|fp| *fp != 0 && fp % 8 == 0)
        .map(|fp| fp + 16)
}

/// Memory that cannot be read (a CFA expression that needs memory gives no CFA).
struct NoMemory;

impl MemoryReader for NoMemory {
    fn read(&self, _: RuntimeAddr, _: &mut [u8]) -> std::io::Result<()> {
        Err(std::io::Error::other("no memory"))
    }
}

struct Physical {
    regs: FrameRegs,
    pc: u64,
    lookup_pc: u64,
    cfa: Option<u64>,
    module: Option<Arc<Module>>,
    sigtramp: bool,
}

/// The name gdb shows for the frame of the signal trampoline.
pub const SIGNAL_FRAME: &str = "<signal handler called>";

/// Whether `pc` is at glibc's x86-64 `__restore_rt` (`mov $15, %rax; syscall`), the
/// return address of a signal handler, as gdb recognises it.
fn is_sigreturn_trampoline(mem: &dyn MemoryReader, pc: u64) -> bool {
    let mut code = [0u8; 9];
    mem.read(RuntimeAddr(pc), &mut code).is_ok()
        && code == [0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05]
}

/// Unwinds the physical frames of a thread whose registers are `regs`.
fn physical_frames(
    regs: FrameRegs,
    modules: &Modules,
    mem: &dyn MemoryReader,
    max: usize,
) -> Vec<Physical> {
    let mut out: Vec<Physical> = Vec::new();
    let mut regs = regs;
    // Frame 0, and a frame interrupted by a signal, executes at its pc; a caller's pc
    // is a return address, so its call is found at pc - 1.
    let mut exact_pc = true;
    while out.len() < max.min(MAX_FRAMES) {
        let Some(pc) = regs.get(16) else { break };
        if pc == 0 {
            break;
        }
        let lookup_pc = if exact_pc { pc } else { pc - 1 };
        let sigtramp = is_sigreturn_trampoline(mem, pc);
        exact_pc = sigtramp;
        let module = modules.find(lookup_pc);
        let (cfa, caller) = unwind_one(&regs, lookup_pc, module.as_deref(), mem);
        out.push(Physical {
            regs: regs.clone(),
            pc,
            lookup_pc,
            cfa,
            module,
            sigtramp,
        });
        let Some(caller) = caller else { break };
        // The stack grows down: a caller whose sp is not above ours is garbage.
        match (caller.get(7), regs.get(7), caller.get(16)) {
            (Some(csp), Some(sp), Some(cpc)) if csp > sp && cpc != 0 => {}
            _ => break,
        }
        regs = caller;
    }
    out
}

/// The runtime entry of the function at `lookup_pc`: with a frame's CFA it names the
/// frame, as gdb's frame ids do (a stack slot reused by another function's frame at the
/// same depth is another frame).
pub(crate) fn function_entry(module: &Module, lookup_pc: u64) -> Option<u64> {
    let binary = module.binary()?;
    let file_pc = module.to_file(lookup_pc);
    let f = match binary.function_at(file_pc) {
        Ok(Some(f)) => f,
        _ => binary.function_at_by_symbol(file_pc)?,
    };
    Some(module.to_runtime(f.function.entry()?))
}

/// Where the physical frame whose registers are `regs` (executing at `lookup_pc`)
/// returns to in its caller, when it can be unwound.
pub(crate) fn return_address(
    regs: &FrameRegs,
    lookup_pc: u64,
    modules: &Modules,
    mem: &dyn MemoryReader,
) -> Option<u64> {
    let module = modules.find(lookup_pc);
    let (_, caller) = unwind_one(regs, lookup_pc, module.as_deref(), mem);
    caller?.get(16).filter(|&pc| pc != 0)
}

/// Whether the frame of the function entered at `entry` whose CFA is `cfa` is still on
/// the stack of the thread whose registers are `regs` (gdb's `frame_find_by_id`):
/// `Some(true)` when a physical frame has that CFA and function, `Some(false)` when the
/// unwinding went past it — through a frame whose CFA is above it — without finding it
/// (the frame returned, or a `longjmp` or an exception left it), `None` when it cannot
/// tell (the unwinding stopped below it). Frames inside a signal handler do not count as
/// past it: the handler may run on an alternate stack that lies above.
pub(crate) fn frame_on_stack(
    regs: FrameRegs,
    modules: &Modules,
    mem: &dyn MemoryReader,
    cfa: u64,
    entry: u64,
) -> Option<bool> {
    let mut regs = regs;
    let mut exact_pc = true;
    let mut passed = false;
    for _ in 0..MAX_FRAMES {
        let Some(pc) = regs.get(16).filter(|&pc| pc != 0) else {
            break;
        };
        let lookup_pc = if exact_pc { pc } else { pc - 1 };
        let sigtramp = is_sigreturn_trampoline(mem, pc);
        exact_pc = sigtramp;
        if sigtramp {
            // What was walked so far ran in a handler, maybe on another stack.
            passed = false;
        }
        let module = modules.find(lookup_pc);
        let (this_cfa, caller) = unwind_one(&regs, lookup_pc, module.as_deref(), mem);
        match this_cfa {
            Some(c) if c == cfa && !sigtramp => {
                if module.as_deref().and_then(|m| function_entry(m, lookup_pc)) == Some(entry) {
                    return Some(true);
                }
                passed = true;
            }
            Some(c) if c > cfa => passed = true,
            _ => {}
        }
        let Some(caller) = caller else { break };
        match (caller.get(7), regs.get(7), caller.get(16)) {
            (Some(csp), Some(sp), Some(cpc)) if csp > sp && cpc != 0 => {}
            _ => break,
        }
        regs = caller;
    }
    passed.then_some(false)
}

/// One step of unwinding: this frame's CFA and the caller's registers.
fn unwind_one(
    regs: &FrameRegs,
    lookup_pc: u64,
    module: Option<&Module>,
    mem: &dyn MemoryReader,
) -> (Option<u64>, Option<FrameRegs>) {
    if let Some((module, binary)) = module.and_then(|m| m.binary().map(|b| (m, b))) {
        let ctx = EvalContext::of_frame(mem, regs, module.bias, RuntimeAddr(lookup_pc));
        if let Ok(Some(row)) = binary.unwind_row(module.to_file(lookup_pc)) {
            let cfa = binary.compute_cfa(&row, &ctx).ok();
            // A row without a rule for the return address (`_start`) ends the stack.
            if !has_return_address(&row) {
                return (cfa, None);
            }
            return match binary.unwind_caller_with(&row, &ctx) {
                Ok(regs) => (cfa, Some(FrameRegs::from_array(regs))),
                Err(_) => (cfa, None),
            };
        }
    }
    if let Some(found) = module.and_then(|m| frameless_caller(regs, lookup_pc, m, mem)) {
        return found;
    }
    // Frame-pointer fallback: [rbp] is the caller's rbp, [rbp+8] the return address.
    let Some(fp) = regs.get(6) else {
        return (None, None);
    };
    if fp == 0 || fp % 8 != 0 {
        return (None, None);
    }
    let (Some(saved_fp), Some(ra)) = (read_u64(mem, fp), read_u64(mem, fp + 8)) else {
        return (None, None);
    };
    let cfa = fp + 16;
    let mut caller = regs.clone();
    caller.set(6, saved_fp);
    caller.set(7, cfa);
    caller.set(16, ra);
    (Some(cfa), Some(caller))
}

/// The caller of a frame without CFI whose function sets up no frame pointer: hand-written
/// assembly such as glibc's `__clone3`, whose FDE ends before its `syscall` (the child's
/// unwind information would be wrong), so a parent thread caught between the syscall and
/// its `ret` has no row. Such a leaf keeps its return address at [rsp], as gdb's amd64
/// prologue analysis assumes. Taken only when the function (by ELF symbol) does not start
/// with `push %rbp` (after an `endbr64`), and the word at [rsp] follows a call instruction.
fn frameless_caller(
    regs: &FrameRegs,
    lookup_pc: u64,
    module: &Module,
    mem: &dyn MemoryReader,
) -> Option<(Option<u64>, Option<FrameRegs>)> {
    let binary = module.binary()?;
    let function = binary.function_at_by_symbol(module.to_file(lookup_pc))?;
    let start = module.to_runtime(function.function.entry()?);
    let mut head = [0u8; 5];
    mem.read(RuntimeAddr(start), &mut head).ok()?;
    let first = if head[..4] == [0xf3, 0x0f, 0x1e, 0xfa] {
        head[4]
    } else {
        head[0]
    };
    if first == 0x55 {
        return None;
    }
    let sp = regs.get(7)?;
    let ra = read_u64(mem, sp)?;
    if !follows_call(mem, ra) {
        return None;
    }
    let cfa = sp + 8;
    let mut caller = regs.clone();
    caller.set(7, cfa);
    caller.set(16, ra);
    Some((Some(cfa), Some(caller)))
}

/// Whether the instruction before `ra` is a call: `e8 rel32`, or `ff /2` through a
/// register or memory (2 to 7 bytes, with an optional REX prefix).
fn follows_call(mem: &dyn MemoryReader, ra: u64) -> bool {
    let mut before = [0u8; 7];
    if ra < 7 || mem.read(RuntimeAddr(ra - 7), &mut before).is_err() {
        return false;
    }
    if before[2] == 0xe8 {
        return true;
    }
    // `ff /2`: the opcode byte `len` bytes before `ra`, its ModRM's reg field 2.
    (2..=7).any(|len| {
        let at = 7 - len;
        before[at] == 0xff && (before[at + 1] >> 3) & 7 == 2
    })
}

/// Unwinds a thread's stack into user-visible frames, ids starting at `first_id`.
pub(crate) fn frames(
    regs: FrameRegs,
    modules: &Modules,
    mem: &dyn MemoryReader,
    max: usize,
    first_id: u64,
) -> Vec<FrameData> {
    let mut out = Vec::new();
    let mut next_id = first_id;
    let physical = physical_frames(regs, modules, mem, max);
    // The start-up frames past `main` in system libraries (libc's
    // `__libc_start_call_main`, `_start`) are named by ELF symbol: their DWARF — libc's
    // separate debug file, hundreds of milliseconds to load — would only add lines of
    // sources that are not on disk, and gdb does not even show these frames.
    let mut past_main = false;
    let mut light = vec![false; physical.len()];
    let funcs: Vec<Option<symbols::FunctionAt>> = physical
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let m = p.module.as_ref()?;
            let binary = m.binary()?;
            let file_pc = m.to_file(p.lookup_pc);
            let f = if past_main && !m.main && is_system(&m.path) {
                light[i] = true;
                binary.function_at_by_symbol(file_pc)
            } else {
                binary.function_at(file_pc).ok()?
            };
            past_main |= m.main && f.as_ref().is_some_and(|f| f.function.name == "main");
            f
        })
        .collect();
    // callers[i]: the caller of physical frame i, built outermost first so each
    // caller knows its own caller. As gdb does not unwind past `main` (its default
    // `backtrace past-main off`), `main`'s entry values are not recovered from libc.
    // When the caller's call site calls another function, which reached frame i by
    // tail calls, the frames of that chain are rebuilt (rebuilt[i], outermost first)
    // and frame i's caller is the innermost of them.
    let mut callers: Vec<Option<Arc<CallerFrame>>> = vec![None; physical.len()];
    let mut rebuilt: Vec<Vec<(symbols::TailLink, Arc<CallerFrame>)>> =
        vec![Vec::new(); physical.len()];
    for i in (0..physical.len().saturating_sub(1)).rev() {
        let (p, c) = (&physical[i], &physical[i + 1]);
        let is_main = funcs
            .get(i)
            .and_then(|f| f.as_ref())
            .is_some_and(|f| f.function.name == "main");
        if p.sigtramp || c.sigtramp || is_main {
            continue;
        }
        let caller = Arc::new(CallerFrame {
            regs: c.regs.clone(),
            pc: c.pc,
            lookup_pc: c.lookup_pc,
            cfa: c.cfa,
            module: c.module.clone(),
            caller: callers.get(i + 1).cloned().flatten(),
        });
        let entry = match (
            &p.module,
            funcs[i].as_ref().and_then(|f| f.function.entry()),
        ) {
            (Some(m), Some(e)) if !light[i] => Some(m.to_runtime(e)),
            _ => None,
        };
        callers[i] = match entry.map(|e| link_of(&caller, e)) {
            None | Some(Link::Calls) => Some(caller),
            Some(Link::Other) => None,
            Some(Link::Rebuilt(chain)) => match &c.module {
                Some(m) => {
                    let frames = rebuilt_callers(&caller, m, &chain, p.cfa);
                    let last = frames.last().cloned();
                    rebuilt[i] = chain.into_iter().zip(frames).collect();
                    last
                }
                None => None,
            },
        };
    }
    for (((index, p), caller), func) in physical.into_iter().enumerate().zip(callers).zip(funcs) {
        let module_name = p.module.as_ref().map(|m| m.name());
        let binary = p.module.as_ref().and_then(|m| m.binary().cloned());
        let file_pc = p.module.as_ref().map(|m| m.to_file(p.lookup_pc));
        let loc = match (&binary, file_pc) {
            (Some(b), Some(fpc)) if !light[index] => b.frame_location_for_addr(fpc).ok().flatten(),
            _ => None,
        };
        let mut push = |function: Option<String>,
                        file: Option<PathBuf>,
                        line: Option<Line>,
                        column: Column,
                        inline_index: u32| {
            out.push(FrameData {
                frame: Frame {
                    id: FrameId(next_id),
                    function,
                    file,
                    line,
                    column,
                    pc: RuntimeAddr(p.pc),
                    cfa: p.cfa,
                    module: module_name.clone(),
                    inlined: inline_index > 0,
                    tail_call: false,
                },
                regs: p.regs.clone(),
                lookup_pc: p.lookup_pc,
                module: p.module.clone(),
                inline_index,
                physical: index,
                tid: None,
                caller: caller.clone(),
            });
            next_id += 1;
        };
        let (mut file, mut line, mut column) = match &loc {
            Some(l) => (
                (!l.file.as_os_str().is_empty()).then(|| l.file.clone()),
                l.line,
                l.column,
            ),
            None => (None, None, None),
        };
        if p.sigtramp {
            push(Some(SIGNAL_FRAME.to_string()), None, None, None, 0);
            continue;
        }
        match func {
            Some(f) => {
                // Innermost inlined call first; each call site is its caller's position.
                for (k, call) in f.inlined.iter().enumerate().rev() {
                    push(
                        Some(call.name.clone()),
                        file.clone(),
                        line,
                        column,
                        k as u32 + 1,
                    );
                    file = call.call_file.clone();
                    line = call.call_line;
                    column = call.call_column;
                }
                push(Some(f.function.name.clone()), file, line, column, 0);
            }
            None => push(None, file, line, column, 0),
        }
        for (link, frame) in std::mem::take(&mut rebuilt[index]).into_iter().rev() {
            out.push(rebuilt_frame(&link, &frame, index + 1, FrameId(next_id)));
            next_id += 1;
        }
        if out.len() >= MAX_FRAMES {
            break;
        }
    }
    out
}

/// The frame of a function a tail call removed, as gdb shows it: the name of the
/// innermost function at its jump and the line of the jump; `physical` is the index of the physical caller it sits
/// below. Its registers are those of [`rebuilt_callers`]; it has no CFA.
fn rebuilt_frame(
    link: &symbols::TailLink,
    frame: &Arc<CallerFrame>,
    physical: usize,
    id: FrameId,
) -> FrameData {
    let module = frame.module.clone();
    let binary = module.as_ref().and_then(|m| m.binary());
    let jump = link.site.return_pc.0.wrapping_sub(1);
    // gdb names the frame by the innermost function at its jump: an inlined call's
    // name when the jump is in inlined code (glibc's `__pthread_kill_internal`).
    let function = binary
        .and_then(|b| b.function_at(symbols::FileAddr(jump)).ok().flatten())
        .map(|f| match f.inlined.last() {
            Some(call) => call.name.clone(),
            None => f.function.name,
        });
    let loc = binary.and_then(|b| {
        b.frame_location_for_addr(symbols::FileAddr(jump))
            .ok()
            .flatten()
    });
    let (file, line, column) = match loc {
        Some(l) => (
            (!l.file.as_os_str().is_empty()).then_some(l.file),
            l.line,
            l.column,
        ),
        None => (None, None, None),
    };
    FrameData {
        frame: Frame {
            id,
            function,
            file,
            line,
            column,
            pc: RuntimeAddr(frame.pc),
            cfa: None,
            module: module.as_ref().map(|m| m.name()),
            inlined: false,
            tail_call: true,
        },
        regs: frame.regs.clone(),
        lookup_pc: frame.lookup_pc,
        module,
        inline_index: 0,
        physical,
        tid: None,
        caller: frame.caller.clone(),
    }
}

/// gdb's view of a stop at function breakpoints on the first instruction of inlined
/// calls (`skip_inline_frames`): the program is shown in their caller, before the calls,
/// so a breakpoint on `total` whose address is also where `std::vector::begin` was
/// inlined stops in `total`. Frame 0's inlined frames whose call starts at the pc are
/// dropped, innermost first, up to one a function breakpoint there names (`keep`):
/// breaking on an inlined function by name stops inside it. The frame left on top
/// shows the call site of the dropped call (gdb shows the inlined function's own
/// declaration line there).
pub(crate) fn hide_inlined_at_entry(frames: &mut Vec<FrameData>, keep: &[String]) {
    let Some(top) = frames.first() else { return };
    if top.physical != 0 || top.inline_index == 0 {
        return;
    }
    let Some(module) = top.module.clone() else {
        return;
    };
    let file_pc = module.to_file(top.lookup_pc);
    let Some(f) = module
        .binary()
        .and_then(|b| b.function_at(file_pc).ok().flatten())
    else {
        return;
    };
    let mut drop = 0;
    for frame in frames.iter() {
        if frame.physical != 0 || frame.inline_index == 0 {
            break;
        }
        let Some(call) = usize::try_from(frame.inline_index - 1)
            .ok()
            .and_then(|k| f.inlined.get(k))
        else {
            break;
        };
        let at_entry = call.ranges.first().is_some_and(|r| r.start == file_pc);
        if !at_entry || keep.iter().any(|k| names_function(k, &call.name)) {
            break;
        }
        drop += 1;
    }
    frames.drain(..drop);
}

/// How many of the inlined calls at `file_pc` (innermost first) a stop at the function
/// breakpoint `name` hides: those whose call starts there, up to one `name` names (see
/// [`hide_inlined_at_entry`]).
pub(crate) fn inlined_hidden_at(
    f: &symbols::FunctionAt,
    file_pc: symbols::FileAddr,
    name: &str,
) -> usize {
    f.inlined
        .iter()
        .rev()
        .take_while(|call| {
            call.ranges.first().is_some_and(|r| r.start == file_pc)
                && !names_function(name, &call.name)
        })
        .count()
}

/// Whether a function breakpoint's name (`begin`, `std::vector<double>::begin`,
/// `f(int)`) names the function `qualified`.
fn names_function(name: &str, qualified: &str) -> bool {
    let name = name.split('(').next().unwrap_or(name).trim();
    !name.is_empty()
        && (qualified == name
            || qualified
                .strip_suffix(name)
                .is_some_and(|head| head.ends_with("::")))
}
