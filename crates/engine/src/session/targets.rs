//! Step into the call you choose: the calls the rest of a stopped line makes, found in
//! its machine code (and `DW_TAG_call_site` for tail calls), each named by the function
//! it calls — through function pointers and vtables by what the registers and memory at
//! the stop say, through PLT and GOT slots by the imported symbol — and the step into one.

use iced_x86::{
    Decoder, DecoderOptions, FlowControl, Instruction as Insn, InstructionInfoFactory, Mnemonic,
    OpAccess, OpKind, Register,
};
use symbols::{Column, FileAddr, Line, MemoryReader};

use super::*;
use crate::mem::read_u64;

/// The longest stretch of one line that is searched for calls.
const MAX_LINE_BYTES: u64 = 64 * 1024;
/// The most targets one line lists.
const MAX_TARGETS: usize = 256;

/// One call the rest of the current line makes (DAP `StepInTarget`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepInTarget {
    /// Valid until the program runs again; never reused.
    pub id: u64,
    /// What a user picks: the function's name, `#k` added when the line calls it more
    /// than once, or `indirect call` when what is called cannot be known at the stop.
    pub label: String,
    /// The function called, when known.
    pub function: Option<String>,
    /// The source line of the call instruction.
    pub line: Option<Line>,
    /// Its column, when the line table has one.
    pub column: Column,
    /// The call (or tail-call jump) instruction.
    pub call: RuntimeAddr,
}

/// What a step into a listed target needs.
#[derive(Clone, Debug)]
pub(super) struct TargetEntry {
    tid: Tid,
    frame: FrameId,
    /// The call instruction.
    pub(super) call: u64,
    /// A tail-call jump rather than a call.
    pub(super) jump: bool,
    label: String,
}

/// How a step into a chosen call starts (see [`Session::step_into`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Into {
    pub(super) call: u64,
    pub(super) jump: bool,
}

/// A call found on the line, before it is named for the user.
struct Found {
    call: u64,
    jump: bool,
    callee: Option<String>,
}

impl Session {
    /// The calls the rest of the current line of `frame` makes, in the order the
    /// program makes them (address order along the line's code). Only the innermost
    /// frame of a thread has targets (a step starts there); other frames, and code
    /// without line information, list none.
    pub fn step_in_targets(&self, tid: Tid, frame: FrameId) -> Result<Vec<StepInTarget>> {
        self.check_stopped()?;
        let data = self.frame(frame)?;
        let innermost = data.physical == 0
            && !lock(&self.tables).frames.values().any(|f| {
                f.physical == 0 && f.tid == data.tid && f.inline_index > data.inline_index
            });
        if !innermost {
            return Ok(Vec::new());
        }
        let core = self.core.clone();
        let found = self
            .handle
            .call(move |t: &mut Tracer| -> Result<Vec<Found>> {
                let mut c = lock(&core);
                let pid = c.pid;
                c.modules.refresh(pid);
                Ok(line_calls(t, &c.modules, &data))
            })??;
        let mut tables = lock(&self.tables);
        let names: Vec<Option<String>> = found.iter().map(|f| f.callee.clone()).collect();
        let mut out = Vec::with_capacity(found.len());
        for (i, f) in found.into_iter().enumerate() {
            tables.next_target += 1;
            let id = tables.next_target;
            let label = match &f.callee {
                Some(name) => {
                    let same = names.iter().filter(|n| n.as_ref() == Some(name)).count();
                    if same > 1 {
                        let k = names[..=i]
                            .iter()
                            .filter(|n| n.as_ref() == Some(name))
                            .count();
                        format!("{name} #{k}")
                    } else {
                        name.clone()
                    }
                }
                None => "indirect call".to_string(),
            };
            let (line, column) = {
                let c = lock(&self.core);
                c.modules
                    .find(f.call)
                    .and_then(|m| {
                        let loc = m.binary()?.location_for_addr(m.to_file(f.call)).ok()??;
                        Some((loc.line, loc.column))
                    })
                    .unwrap_or((None, None))
            };
            tables.targets.insert(
                id,
                TargetEntry {
                    tid,
                    frame,
                    call: f.call,
                    jump: f.jump,
                    label: label.clone(),
                },
            );
            out.push(StepInTarget {
                id,
                label,
                function: f.callee,
                line,
                column,
                call: RuntimeAddr(f.call),
            });
        }
        Ok(out)
    }

    /// Steps thread `tid` into the call `target` (an id [`Session::step_in_targets`]
    /// gave at this stop): the line is single-stepped to that call instruction (calls
    /// before it are stepped over: they run normally), the call is entered and the step
    /// stops after the callee's prologue — or, for a callee without line information,
    /// where a step in would (the next line). When the line ends or the frame returns
    /// before the call is reached (a branch skipped it), the step stops there, as a step
    /// would. A stale id, or one listed for another thread, is refused.
    pub fn step_into(&self, tid: Tid, target: u64) -> Result<()> {
        self.step_into_then(tid, target, || {})
    }

    /// [`Session::step_into`], calling `then` once the step has started (as
    /// [`Session::step_then`]).
    pub fn step_into_then(
        &self,
        tid: Tid,
        target: u64,
        then: impl FnOnce() + Send + 'static,
    ) -> Result<()> {
        self.check_stopped()?;
        let entry = lock(&self.tables)
            .targets
            .get(&target)
            .cloned()
            .ok_or(Error::UnknownStepTarget(target))?;
        if entry.tid != tid {
            return Err(Error::StepTargetElsewhere {
                id: target,
                label: entry.label,
                frame: entry.frame.0,
                tid: tid.0,
            });
        }
        self.clear_tables();
        let core = self.core.clone();
        let into = Into {
            call: entry.call,
            jump: entry.jump,
        };
        self.handle.call(move |t: &mut Tracer| -> Result<()> {
            let res = step_on_tracer(&core, t, tid, StepKind::In, Some(into));
            if res.is_ok() {
                then();
            }
            res
        })?
    }
}

/// The calls from frame 0's pc to the end of its line, named.
fn line_calls(t: &Tracer, modules: &Modules, data: &FrameData) -> Vec<Found> {
    let pc = data.frame.pc.0;
    let Some(module) = modules.find(pc) else {
        return Vec::new();
    };
    let Some(binary) = module.binary() else {
        return Vec::new();
    };
    // Code without line information has no line to step through (a step in there
    // finishes the function): no targets.
    let has_line = binary
        .frame_location_for_addr(module.to_file(pc))
        .ok()
        .flatten()
        .is_some_and(|l| l.line.is_some());
    if !has_line {
        return Vec::new();
    }
    let end = line_end(binary, &module, pc);
    let mut bytes = vec![0u8; (end - pc) as usize];
    let got = t.read_memory(RuntimeAddr(pc), &mut bytes).unwrap_or(0);
    bytes.truncate(got);
    let mem = TracerMemory(t);
    let function = binary.function_at(module.to_file(pc)).ok().flatten();
    let inside = |a: u64| {
        function.as_ref().is_some_and(|f| {
            f.function
                .ranges
                .iter()
                .any(|r| r.start.0 <= module.to_file(a).0 && module.to_file(a).0 < r.end.0)
        })
    };
    let mut state = Machine::new(&data.regs);
    let mut info = InstructionInfoFactory::new();
    let mut out = Vec::new();
    let mut decoder = Decoder::with_ip(64, &bytes, pc, DecoderOptions::NONE);
    let mut insn = Insn::default();
    while decoder.can_decode() && out.len() < MAX_TARGETS {
        decoder.decode_out(&mut insn);
        if insn.is_invalid() {
            break;
        }
        let call = insn.flow_control() == FlowControl::Call
            || insn.flow_control() == FlowControl::IndirectCall;
        // A jump out of the function is a tail call (gcc -O2 ends functions so); the
        // call site says so when the compiler wrote one.
        let jump = match insn.flow_control() {
            FlowControl::UnconditionalBranch => {
                let target = insn.near_branch_target();
                !inside(target)
                    || binary
                        .call_site(module.to_file(insn.next_ip()))
                        .ok()
                        .flatten()
                        .is_some_and(|s| s.tail_call)
            }
            FlowControl::IndirectBranch => binary
                .call_site(module.to_file(insn.next_ip()))
                .ok()
                .flatten()
                .is_some_and(|s| s.tail_call),
            _ => false,
        };
        if call || jump {
            let target = state.branch_target(&insn, &mem);
            out.push(Found {
                call: insn.ip(),
                jump,
                callee: target.and_then(|a| callee_name(t, modules, a, &insn, &state)),
            });
        }
        state.apply(&insn, &mem, &mut info);
    }
    out
}

/// Where the line at `pc` ends: the first is_stmt row of another line after `pc` (where
/// a step would stop), the end of the function, or [`MAX_LINE_BYTES`] on.
fn line_end(binary: &Binary, module: &Module, pc: u64) -> u64 {
    let file_pc = module.to_file(pc);
    let function_end = binary
        .function_at(file_pc)
        .ok()
        .flatten()
        .and_then(|f| {
            f.function
                .ranges
                .iter()
                .find(|r| r.start <= file_pc && file_pc < r.end)
                .map(|r| r.end.0)
        })
        .unwrap_or(file_pc.0 + 1);
    let limit = function_end.min(file_pc.0 + MAX_LINE_BYTES);
    let line = binary
        .frame_location_for_addr(file_pc)
        .ok()
        .flatten()
        .and_then(|l| l.line);
    let rows = binary
        .line_rows(file_pc..FileAddr(limit))
        .unwrap_or_default();
    let end = rows
        .iter()
        .find(|r| r.addr > file_pc && r.is_stmt && r.line.is_some() && r.line != line)
        .map_or(limit, |r| r.addr.0);
    module.to_runtime(FileAddr(end))
}

/// The name of the function at `target`, the address a call at the stop will reach: a
/// function starting exactly there (DWARF's name, else the symbol's), or the import a
/// PLT stub or GOT slot leads to. `None` rather than a guess.
fn callee_name(
    t: &Tracer,
    modules: &Modules,
    target: u64,
    insn: &Insn,
    state: &Machine,
) -> Option<String> {
    // `call *slot(%rip)` through a GOT slot (`-fno-plt`): the slot's import.
    if insn.op0_kind() == OpKind::Memory {
        if let Some(slot) = state.address(insn) {
            if let Some(name) = import_at(modules, slot) {
                return Some(name);
            }
        }
    }
    let module = modules.find(target)?;
    let binary = module.binary()?;
    let file = module.to_file(target);
    if let Some(f) = binary.function_at(file).ok().flatten() {
        if f.function.entry() == Some(file) {
            return Some(f.function.name);
        }
    }
    if let Some(name) = binary.symbol_name_at(file) {
        return Some(name);
    }
    plt_import(t, modules, target)
}

/// The import a PLT stub at `stub` jumps through: its `jmp *slot(%rip)` (after an
/// `endbr64`, with or without `bnd`) names the GOT slot.
fn plt_import(t: &Tracer, modules: &Modules, stub: u64) -> Option<String> {
    let mut bytes = [0u8; 32];
    let got = t.read_memory(RuntimeAddr(stub), &mut bytes).ok()?;
    let mut decoder = Decoder::with_ip(64, &bytes[..got], stub, DecoderOptions::NONE);
    for _ in 0..2 {
        let insn = decoder.decode();
        if insn.is_invalid() {
            return None;
        }
        if insn.mnemonic() == Mnemonic::Endbr64 {
            continue;
        }
        if insn.flow_control() == FlowControl::IndirectBranch
            && insn.op0_kind() == OpKind::Memory
            && insn.memory_base() == Register::RIP
        {
            return import_at(modules, insn.memory_displacement64());
        }
        return None;
    }
    None
}

fn import_at(modules: &Modules, slot: u64) -> Option<String> {
    let module = modules.find(slot)?;
    module.binary()?.import_at(module.to_file(slot))
}

/// A small forward evaluation of the line's instructions from the stop: the general
/// registers whose values are still those computed from the stop's registers, and
/// whether memory is still as at the stop (no store or call has run). What it cannot
/// follow becomes unknown, so a target computed from it is the one the program reaches.
struct Machine {
    regs: [Option<u64>; 16],
    /// Memory written since the stop: (start, end) ranges at known addresses.
    written: Vec<(u64, u64)>,
    /// A write to an unknown address (or a call) happened: no memory is as at the stop.
    memory_dirty: bool,
}

/// The registers a call may change (the System V ABI's caller-saved ones).
const CALL_CLOBBERED: [usize; 9] = [0, 1, 2, 4, 5, 8, 9, 10, 11];

fn dwarf_number(reg: Register) -> Option<usize> {
    Some(match reg.full_register() {
        Register::RAX => 0,
        Register::RDX => 1,
        Register::RCX => 2,
        Register::RBX => 3,
        Register::RSI => 4,
        Register::RDI => 5,
        Register::RBP => 6,
        Register::RSP => 7,
        Register::R8 => 8,
        Register::R9 => 9,
        Register::R10 => 10,
        Register::R11 => 11,
        Register::R12 => 12,
        Register::R13 => 13,
        Register::R14 => 14,
        Register::R15 => 15,
        _ => return None,
    })
}

impl Machine {
    fn new(regs: &FrameRegs) -> Machine {
        let mut out = [None; 16];
        for (n, slot) in out.iter_mut().enumerate() {
            *slot = regs.get(n as u16);
        }
        Machine {
            regs: out,
            written: Vec::new(),
            memory_dirty: false,
        }
    }

    fn reg(&self, n: usize) -> Option<u64> {
        self.regs.get(n).copied().flatten()
    }

    /// A register operand's value (64- or 32-bit registers only).
    fn value(&self, reg: Register) -> Option<u64> {
        let full = self.reg(dwarf_number(reg)?)?;
        match reg.size() {
            8 => Some(full),
            4 => Some(full & 0xffff_ffff),
            _ => None,
        }
    }

    fn set(&mut self, reg: Register, value: Option<u64>) {
        let Some(n) = dwarf_number(reg) else { return };
        self.regs[n] = match reg.size() {
            8 => value,
            // A 32-bit write zero-extends; narrower writes merge, which is not followed.
            4 => value.map(|v| v & 0xffff_ffff),
            _ => None,
        };
    }

    /// The address of the instruction's memory operand, when its registers are known.
    fn address(&self, insn: &Insn) -> Option<u64> {
        if matches!(insn.memory_segment(), Register::FS | Register::GS) {
            return None;
        }
        let base = insn.memory_base();
        if base == Register::RIP {
            return Some(insn.memory_displacement64());
        }
        let mut a = insn.memory_displacement64();
        if base != Register::None {
            a = a.wrapping_add(self.value(base)?);
        }
        let index = insn.memory_index();
        if index != Register::None {
            a = a.wrapping_add(
                self.value(index)?
                    .wrapping_mul(u64::from(insn.memory_index_scale())),
            );
        }
        Some(a)
    }

    /// Notes a write of `size` bytes at `addr` (unknown: every byte may have changed).
    fn wrote(&mut self, addr: Option<u64>, size: usize) {
        match addr {
            Some(a) if size > 0 && self.written.len() < 64 => {
                self.written.push((a, a.wrapping_add(size as u64)));
            }
            _ => self.memory_dirty = true,
        }
    }

    fn load(&self, insn: &Insn, mem: &dyn MemoryReader, size: usize) -> Option<u64> {
        let addr = self.address(insn)?;
        let end = addr.checked_add(size as u64)?;
        if self.memory_dirty || self.written.iter().any(|&(s, e)| s < end && addr < e) {
            return None;
        }
        match size {
            8 => read_u64(mem, addr),
            4 => {
                let mut b = [0u8; 4];
                mem.read(RuntimeAddr(addr), &mut b).ok()?;
                Some(u64::from(u32::from_le_bytes(b)))
            }
            _ => None,
        }
    }

    /// Where a call or jump at the current state goes.
    fn branch_target(&self, insn: &Insn, mem: &dyn MemoryReader) -> Option<u64> {
        match insn.op0_kind() {
            OpKind::NearBranch64 | OpKind::NearBranch32 => Some(insn.near_branch_target()),
            OpKind::Register => self.value(insn.op0_register()),
            OpKind::Memory => self.load(insn, mem, 8),
            _ => None,
        }
    }

    /// Follows one instruction that is not the target's call.
    fn apply(&mut self, insn: &Insn, mem: &dyn MemoryReader, info: &mut InstructionInfoFactory) {
        let dest = (insn.op_count() >= 1 && insn.op0_kind() == OpKind::Register)
            .then(|| insn.op0_register());
        match (insn.mnemonic(), dest) {
            (Mnemonic::Mov, Some(d)) if insn.op_count() == 2 => {
                let v = match insn.op1_kind() {
                    OpKind::Register => self.value(insn.op1_register()),
                    OpKind::Immediate8
                    | OpKind::Immediate16
                    | OpKind::Immediate32
                    | OpKind::Immediate64
                    | OpKind::Immediate8to32
                    | OpKind::Immediate8to64
                    | OpKind::Immediate32to64 => Some(insn.immediate(1)),
                    OpKind::Memory => self.load(insn, mem, d.size()),
                    _ => None,
                };
                self.set(d, v);
            }
            (Mnemonic::Lea, Some(d)) => {
                let v = self.address(insn);
                self.set(d, v);
            }
            (Mnemonic::Add | Mnemonic::Sub, Some(d)) if insn.op_count() == 2 && d.size() == 8 => {
                let rhs = match insn.op1_kind() {
                    OpKind::Register => self.value(insn.op1_register()),
                    OpKind::Immediate8to64 | OpKind::Immediate32to64 => Some(insn.immediate(1)),
                    _ => None,
                };
                let lhs = self.value(d);
                let v = match (lhs, rhs) {
                    (Some(a), Some(b)) if insn.mnemonic() == Mnemonic::Add => {
                        Some(a.wrapping_add(b))
                    }
                    (Some(a), Some(b)) => Some(a.wrapping_sub(b)),
                    _ => None,
                };
                self.set(d, v);
            }
            (Mnemonic::Push, _) => {
                self.regs[7] = self.reg(7).map(|sp| sp.wrapping_sub(8));
                self.wrote(self.reg(7), 8);
            }
            (Mnemonic::Pop, _) => {
                if let Some(d) = dest {
                    self.set(d, None);
                }
                self.regs[7] = self.reg(7).map(|sp| sp.wrapping_add(8));
            }
            (Mnemonic::Call, _) => {
                // The callee may write any memory and the caller-saved registers; it
                // returns with the stack pointer it was called with.
                self.memory_dirty = true;
                for n in CALL_CLOBBERED {
                    self.regs[n] = None;
                }
            }
            _ => {
                let used = info.info(insn);
                for r in used.used_registers() {
                    if matches!(
                        r.access(),
                        OpAccess::Write
                            | OpAccess::CondWrite
                            | OpAccess::ReadWrite
                            | OpAccess::ReadCondWrite
                    ) {
                        if let Some(n) = dwarf_number(r.register()) {
                            self.regs[n] = None;
                        }
                    }
                }
                let writes: Vec<usize> = used
                    .used_memory()
                    .iter()
                    .filter(|m| {
                        matches!(
                            m.access(),
                            OpAccess::Write
                                | OpAccess::CondWrite
                                | OpAccess::ReadWrite
                                | OpAccess::ReadCondWrite
                        )
                    })
                    .map(|m| m.memory_size().size())
                    .collect();
                // Only a write through the instruction's one explicit memory operand has
                // an address computed here; any other (string stores, pushes of
                // others) makes all memory unknown.
                let explicit = (0..insn.op_count()).any(|i| insn.op_kind(i) == OpKind::Memory);
                for size in writes {
                    let at = if explicit { self.address(insn) } else { None };
                    self.wrote(at, size);
                }
            }
        }
        // Past a branch the code that follows may be reached another way: nothing
        // computed before it still holds there.
        if !matches!(
            insn.flow_control(),
            FlowControl::Next | FlowControl::Call | FlowControl::IndirectCall
        ) {
            let sp = self.regs[7];
            self.regs = [None; 16];
            // The stack pointer is the same on every path through a function's body.
            self.regs[7] = sp;
            self.memory_dirty = true;
        }
    }
}
