//! Conditions evaluated inside the debuggee: a breakpoint site becomes a jump to code
//! placed in the debuggee's memory that computes the lowered condition and traps only
//! when it holds, so a false hit costs nanoseconds instead of a ptrace round trip.
//!
//! The placed code, at an address within jump range of the site:
//!
//! ```text
//!   lea rsp, [rsp-128]          ; step over the red zone
//!   push rax, rcx, rdx, r11     ; the registers it uses
//!   pushfq
//!   lea r11, [rsp+168]          ; the site's rsp: frame slots and saved registers
//!   <condition into rax>        ; anything undecidable here (a division by zero, a
//!   test rax, rax               ;  shift past the width) counts as true
//!   jnz true
//!   <restore>                   ; condition false:
//!   <displaced instructions>    ; the instructions the jump covers, relocated
//!   jmp site+len                ; back to the program
//! true:
//!   <restore>
//!   int3                        ; the tracer maps this trap to the site
//! ```
//!
//! On a trap the engine evaluates the condition again the ordinary way, so the placed
//! code only ever filters out false hits: the stops are the int3 path's stops. Sites
//! are refused (and keep their int3) when the jump would cover an indirect branch or
//! call, a direct one with more instructions after it (a direct call as the last one is
//! emulated: see `copy_instruction`), more than the function's range, or any address the module's code may jump to (the
//! whole-module analysis of [`targets`], plus every DWARF range of the site's function
//! decoded again); when the function has an indirect jump whose targets cannot be
//! found, or exception landing pads in any of its ranges; when the condition needs
//! anything [`crate::expr::lower_condition`] refuses.
//!
//! Placed code is never freed while the process lives (a signal frame may hold a pc in
//! it), so each module keeps a [`PlacementCache`]: placing the same thing at the same
//! site again (a `setBreakpoints` re-sent while the program runs) reinstalls the code
//! placed before instead of allocating more.

pub(crate) mod targets;

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use iced_x86::code_asm::{al, ax, cl, eax, ecx, edx};
use iced_x86::code_asm::{
    byte_ptr, dword_ptr, ptr, qword_ptr, r10, r11, r12, r13, r14, r15, r8, r9, rax, rbp, rbx, rcx,
    rdi, rdx, rsi, rsp, word_ptr, AsmMemoryOperand, AsmRegister64, CodeAssembler, CodeLabel,
};
use iced_x86::{BlockEncoderOptions, Decoder, DecoderOptions, FlowControl, Instruction};
use std::sync::Arc;

use symbols::{Binary, CfaRule, FileAddr, LoadBias};

use targets::BranchTargets;

use crate::breakpoints::HitSite;
use crate::expr::{
    is_comparison, lower_condition, BinOp, Checked, Enumerators, Expr, IntTy, Node, Slot,
};
use tracer::{PatchSpec, RuntimeAddr, Tracer};

/// Bytes below rsp a leaf function may use without moving rsp (System V red zone).
const RED_ZONE: i32 = 128;
/// What the placed code pushes: rax, rcx, rdx, r11 and the flags.
const SAVED: i32 = 5 * 8;
/// Longest function decoded to look for branch targets.
const MAX_FUNCTION: u64 = 1 << 20;

/// The module a site is in, as placing code needs it: passed in by the caller (the
/// module map implements it), so this module does not depend on the module map, which
/// keeps this module's caches ([`BranchTargets`], [`PlacementCache`]) per module.
pub(crate) trait SiteModule {
    /// The module's symbols, when its file could be read.
    fn binary(&self) -> Option<&Arc<Binary>>;
    /// Where the module is loaded relative to where it was linked.
    fn bias(&self) -> LoadBias;
    /// Whether it is the main executable.
    fn is_main(&self) -> bool;
    /// Every address the module's code may jump to (scanned on first use).
    fn branch_targets(&self) -> Arc<BranchTargets>;
    /// The code placed for the module's sites.
    fn placements(&self) -> &PlacementCache;

    /// The file address of a runtime address in this module.
    fn to_file(&self, addr: u64) -> FileAddr {
        self.bias().to_file(RuntimeAddr(addr))
    }

    /// The runtime address of a file address in this module.
    fn to_runtime(&self, addr: FileAddr) -> u64 {
        self.bias().to_runtime(addr).0
    }
}

/// Why a site keeps its int3.
pub(crate) type Refusal = String;

/// Slack allocated beyond the size assembled at the site's own address (the jump back
/// may take a longer form at the placed address).
const SLACK: usize = 64;

/// Runs breakpoint `addr`'s condition in the debuggee when it can. The breakpoint is
/// inserted; on a refusal it simply stays an int3.
pub(crate) fn accelerate(
    t: &mut Tracer,
    module: &dyn SiteModule,
    enums: &Enumerators,
    site: &HitSite,
    addr: u64,
    cond: &Expr,
) -> Result<bool, Refusal> {
    let binary = module.binary().ok_or("no symbols at the site")?;
    let file_pc = module.to_file(addr);
    let cfa = Cfa::from_rule(
        &site
            .row
            .as_ref()
            .ok_or("no unwind information at the site")?
            .cfa,
    )?;
    let ranges = check_function(module, binary, file_pc)?;
    let node = lower_condition(
        binary,
        module.bias(),
        addr,
        &site.scope,
        // The frame the int3 path evaluates in: the innermost inlined call at the site
        // (its variables' locations are the physical frame's registers and CFA).
        site.inline_index,
        module.is_main().then_some(enums),
        cond,
    )
    .ok_or("the condition needs the debugger")?;
    let displaced = site_code(t, module, &ranges, addr, tracer::JUMP_LEN)?;
    check_targets(t, module, &ranges, addr, displaced.len)?;
    let placed = Placed::Condition {
        node: node.clone(),
        cfa: (cfa.register, cfa.offset),
    };
    let placed = place(t, module, placed, addr, &displaced, |at| {
        assemble(&node, cfa, addr, &displaced, at)
    })?;
    tracing::debug!(
        addr,
        file_addr = file_pc.0,
        len = displaced.len,
        "a jump patch covers the site"
    );
    Ok(placed)
}

/// The site's function's ranges (file addresses), once the function as a whole is fit
/// for jump patches: the module's code could be analysed, no indirect jump of the
/// function has unknown targets, and none of its ranges has exception landing pads
/// (a landing pad is entered by the unwinder, from no branch).
fn check_function(
    module: &dyn SiteModule,
    binary: &symbols::Binary,
    file_pc: symbols::FileAddr,
) -> Result<Vec<(u64, u64)>, Refusal> {
    let targets = module.branch_targets();
    if let Some(why) = targets.why_unusable() {
        return Err(why.to_string());
    }
    let function = binary
        .function_at(file_pc)
        .ok()
        .flatten()
        .ok_or("no function at the site")?;
    let mut ranges: Vec<(u64, u64)> = function
        .function
        .ranges
        .iter()
        .map(|r| (r.start.0, r.end.0))
        .collect();
    // The ELF symbol's extent too, when it says more than DWARF.
    if let Some(f) = binary.function_at_by_symbol(file_pc) {
        ranges.extend(f.function.ranges.iter().map(|r| (r.start.0, r.end.0)));
    }
    for &(lo, hi) in &ranges {
        if binary.has_landing_pads(symbols::FileAddr(lo)) {
            return Err("the function has exception landing pads".into());
        }
        if let Some(jump) = targets.unexplained_in(lo, hi) {
            return Err(format!(
                "the function has an indirect jump with unknown targets at {:#x}",
                module.to_runtime(symbols::FileAddr(jump))
            ));
        }
    }
    Ok(ranges)
}

/// Refuses a jump over `[addr, addr+len)` when something may jump strictly inside it:
/// a target of the module's code, or a direct branch of any range of the function
/// (decoded again from its own start, in case no symbol starts the range).
fn check_targets(
    t: &Tracer,
    module: &dyn SiteModule,
    ranges: &[(u64, u64)],
    addr: u64,
    len: usize,
) -> Result<(), Refusal> {
    let (lo, hi) = (module.to_file(addr).0, module.to_file(addr).0 + len as u64);
    let targets = module.branch_targets();
    if let Some(target) = targets.inside(lo, hi) {
        return Err(format!(
            "the jump would cover a branch target ({:#x})",
            module.to_runtime(symbols::FileAddr(target))
        ));
    }
    for &(start, end) in ranges {
        if targets.is_function_start(start) {
            // Decoded with the module.
            continue;
        }
        let start = module.to_runtime(symbols::FileAddr(start));
        let end = module.to_runtime(symbols::FileAddr(end));
        let mut code = vec![0u8; end.saturating_sub(start).min(MAX_FUNCTION) as usize];
        let n = t
            .read_memory(RuntimeAddr(start), &mut code)
            .map_err(|e| format!("reading the function: {e}"))?;
        code.truncate(n);
        let mut decoder = Decoder::with_ip(64, &code, start, DecoderOptions::NONE);
        for ins in decoder.iter() {
            if ins.flow_control() == FlowControl::Next || ins.is_invalid() {
                continue;
            }
            let target = ins.near_branch_target();
            if addr < target && target < addr + len as u64 {
                return Err("the jump would cover a branch target".into());
            }
        }
    }
    Ok(())
}

/// What was placed at a site: the key of the [`PlacementCache`] with the displaced
/// bytes.
#[derive(Clone, Debug, PartialEq)]
enum Placed {
    /// A copy of the site's instructions alone ([`place_step_over`]).
    Copy,
    /// A lowered condition and the CFA rule it reads frame slots through.
    Condition { node: Node, cfa: (u16, i64) },
}

/// Code placed for sites of one module, reused when the same thing is placed at the
/// same site over the same bytes again (placed code is never freed, so without reuse
/// each re-sent `setBreakpoints` would take new memory). A module's cache lives and
/// dies with the module: an exec or a module mapped anew starts empty.
#[derive(Debug, Default)]
pub struct PlacementCache {
    by_site: Mutex<HashMap<u64, Vec<CachedPlacement>>>,
}

#[derive(Debug)]
struct CachedPlacement {
    placed: Placed,
    /// The displaced instructions' bytes the code was assembled from.
    original: Vec<u8>,
    spec: PatchSpec,
}

impl PlacementCache {
    fn get(&self, site: u64, placed: &Placed, original: &[u8]) -> Option<PatchSpec> {
        let map = self.by_site.lock().ok()?;
        map.get(&site)?
            .iter()
            .find(|c| &c.placed == placed && c.original == original)
            .map(|c| c.spec.clone())
    }

    fn insert(&self, site: u64, placed: Placed, original: Vec<u8>, spec: PatchSpec) {
        if let Ok(mut map) = self.by_site.lock() {
            map.entry(site).or_default().push(CachedPlacement {
                placed,
                original,
                spec,
            });
        }
    }
}

/// Assembles placed code for the site (first at the site's own address, for its size),
/// reserves room near the site, assembles it there and installs the patch; or
/// reinstalls the code placed before for the same thing over the same bytes.
fn place(
    t: &mut Tracer,
    module: &dyn SiteModule,
    placed: Placed,
    addr: u64,
    displaced: &Displaced,
    assemble_at: impl Fn(u64) -> Result<Assembled, Refusal>,
) -> Result<bool, Refusal> {
    let cache = module.placements();
    if let Some(spec) = cache.get(addr, &placed, &displaced.bytes) {
        tracing::trace!(addr, "reusing the code placed before");
        return t.install_patch(spec).map_err(|e| e.to_string());
    }
    let size = assemble_at(addr)?.code.len() + SLACK;
    let at = t
        .alloc_code(RuntimeAddr(addr), size)
        .map_err(|e| e.to_string())?;
    let placed_code = assemble_at(at.0)?;
    if placed_code.code.len() > size {
        return Err("the placed code grew past its room".into());
    }
    let spec = PatchSpec {
        site: RuntimeAddr(addr),
        len: displaced.len,
        code_addr: at,
        code: placed_code.code,
        copies: placed_code
            .copies
            .iter()
            .map(|(c, o)| (RuntimeAddr(*c), RuntimeAddr(*o)))
            .collect(),
        copies_end: RuntimeAddr(placed_code.copies_end),
        trap: placed_code.trap.map(RuntimeAddr),
    };
    let installed = t.install_patch(spec.clone()).map_err(|e| e.to_string())?;
    cache.insert(addr, placed, displaced.bytes.clone(), spec);
    Ok(installed)
}

/// Places a copy of breakpoint `addr`'s instruction followed by a jump back, so that a
/// thread resuming from a hit there runs the copy instead of taking the int3 out,
/// single-stepping and putting it back: one ptrace round trip less per hit, and no
/// window where other threads could pass the site unseen.
pub(crate) fn place_step_over(
    t: &mut Tracer,
    module: &dyn SiteModule,
    addr: u64,
) -> Result<bool, Refusal> {
    let binary = module.binary().ok_or("no symbols at the site")?;
    if binary.has_landing_pads(module.to_file(addr)) {
        return Err("the function has exception landing pads".into());
    }
    let function = binary
        .function_at(module.to_file(addr))
        .ok()
        .flatten()
        .ok_or("no function at the site")?;
    let ranges: Vec<(u64, u64)> = function
        .function
        .ranges
        .iter()
        .map(|r| (r.start.0, r.end.0))
        .collect();
    let displaced = site_code(t, module, &ranges, addr, 1)?;
    place(t, module, Placed::Copy, addr, &displaced, |at| {
        assemble_copy(addr, &displaced, at)
    })
}

/// The instructions at `addr` a patch would displace (original bytes): from an
/// instruction start (as the module's decoding from its function symbols says), within
/// the function range `addr` is in, at least `min_len` bytes of them.
fn site_code(
    t: &Tracer,
    module: &dyn SiteModule,
    ranges: &[(u64, u64)],
    addr: u64,
    min_len: usize,
) -> Result<Displaced, Refusal> {
    let file_pc = module.to_file(addr).0;
    if !module.branch_targets().is_instruction(file_pc) {
        return Err("the site is not an instruction boundary".into());
    }
    let end = ranges
        .iter()
        .find(|r| r.0 <= file_pc && file_pc < r.1)
        .map(|r| r.1)
        .ok_or("no function range at the site")?;
    // Longer than any run of instructions a jump displaces.
    let mut code = vec![0u8; (end - file_pc).min(64) as usize];
    let n = t
        .read_memory(RuntimeAddr(addr), &mut code)
        .map_err(|e| format!("reading the function: {e}"))?;
    code.truncate(n);
    displaced(&code, addr, addr, min_len)
}

/// The copies of displaced instructions and the jump back, alone.
fn assemble_copy(site: u64, displaced: &Displaced, at: u64) -> Result<Assembled, Refusal> {
    let mut a = CodeAssembler::new(64).map_err(asm_error)?;
    let mut labels = Vec::new();
    let mut end = a.create_label();
    (|| {
        for ins in &displaced.instructions {
            let mut l = a.create_label();
            a.set_label(&mut l)?;
            copy_instruction(&mut a, ins)?;
            labels.push((l, ins.ip()));
        }
        let back = site + displaced.len as u64;
        let mut l = a.create_label();
        a.set_label(&mut l)?;
        a.jmp(back)?;
        labels.push((l, back));
        // Never reached: it marks the end of the copies.
        a.set_label(&mut end)?;
        a.int3()
    })()
    .map_err(asm_error)?;
    let result = a
        .assemble_options(at, BlockEncoderOptions::RETURN_NEW_INSTRUCTION_OFFSETS)
        .map_err(asm_error)?;
    let mut copies = Vec::new();
    for (label, original) in &labels {
        copies.push((result.label_ip(label).map_err(asm_error)?, *original));
    }
    let copies_end = result.label_ip(&end).map_err(asm_error)?;
    Ok(Assembled {
        copies,
        copies_end,
        // No condition, no trap: the site keeps its int3.
        trap: None,
        code: result.inner.code_buffer,
    })
}

/// The site's instructions the jump displaces, checked against the function's code.
pub(crate) struct Displaced {
    /// The displaced instructions (decoded at their runtime addresses).
    pub instructions: Vec<Instruction>,
    /// How many bytes they span.
    pub len: usize,
    /// Their original bytes.
    pub bytes: Vec<u8>,
}

/// Decodes `code` (at runtime address `start`, the site or before) and picks the
/// instructions from `site` on that cover at least `min_len` bytes (a jump's, or one instruction):
/// whole instructions that neither branch nor call, none of them (but the first) a
/// branch target of this code. The module-wide targets are checked by the caller.
pub(crate) fn displaced(
    code: &[u8],
    start: u64,
    site: u64,
    min_len: usize,
) -> Result<Displaced, Refusal> {
    if code.len() as u64 > MAX_FUNCTION {
        return Err("the function is too long to check".into());
    }
    let mut decoder = Decoder::with_ip(64, code, start, DecoderOptions::NONE);
    let mut all = Vec::new();
    let mut targets = HashSet::new();
    for ins in decoder.iter() {
        if ins.is_invalid() {
            break;
        }
        if matches!(
            ins.flow_control(),
            FlowControl::ConditionalBranch | FlowControl::UnconditionalBranch | FlowControl::Call
        ) {
            targets.insert(ins.near_branch_target());
        }
        all.push(ins);
    }
    let first = all
        .iter()
        .position(|i| i.ip() == site)
        .ok_or("the site is not an instruction boundary")?;
    let mut instructions = Vec::new();
    let mut len = 0usize;
    for ins in &all[first..] {
        if len >= min_len {
            break;
        }
        if len > 0 && targets.contains(&ins.ip()) {
            return Err("the jump would cover a branch target".into());
        }
        if ins.flow_control() != FlowControl::Next {
            // A direct jcc or jmp may be the last instruction displaced: its copy is
            // relocated to the same target and falls through to the jump back, which is
            // where the original falls through. A direct call may be the last one too:
            // its copy pushes the original return address — the end of the covered
            // bytes, outside them — and jumps to the callee (`copy_instruction`), so no
            // return address ever points into covered bytes or placed code. Never an
            // indirect branch or call, or a branch with more after it.
            let last = len + ins.len() >= min_len;
            let direct =
                ins.is_jcc_short_or_near() || ins.is_jmp_short_or_near() || ins.is_call_near();
            if !(last && direct) {
                return Err("the jump would cover a branch or call".into());
            }
        }
        len += ins.len();
        instructions.push(*ins);
    }
    if len < min_len {
        return Err("the function ends too close to the site".into());
    }
    let from = (site - start) as usize;
    let bytes = code
        .get(from..from + len)
        .ok_or("the function ends too close to the site")?
        .to_vec();
    Ok(Displaced {
        instructions,
        len,
        bytes,
    })
}

/// Emits the copy of one displaced instruction. A direct call becomes a push of its
/// original return address (`push imm32` then the high half written over the sign
/// extension: no register or flag changes) and a jump to its target, so the callee sees
/// the return address the original call pushes and returns to the original text right
/// after the call. A thread stopped inside these three instructions is stepped out of
/// them (only their first maps back to the original call).
fn copy_instruction(a: &mut CodeAssembler, ins: &Instruction) -> Result<(), iced_x86::IcedError> {
    if ins.is_call_near() {
        let ret = ins.next_ip();
        a.push(ret as u32 as i32)?;
        a.mov(dword_ptr(rsp + 4), (ret >> 32) as u32)?;
        a.jmp(ins.near_branch_target())
    } else {
        a.add_instruction(*ins)
    }
}

/// How the site's CFA is found from the registers the placed code sees.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cfa {
    register: u16,
    offset: i64,
}

impl Cfa {
    pub(crate) fn from_rule(rule: &CfaRule) -> Result<Cfa, Refusal> {
        match rule {
            CfaRule::RegisterOffset { register, offset } if *register <= 15 => Ok(Cfa {
                register: *register,
                offset: *offset,
            }),
            _ => Err("the frame's CFA is not a register plus an offset".into()),
        }
    }
}

/// The placed code for one site, assembled at `at`.
pub(crate) struct Assembled {
    pub code: Vec<u8>,
    pub copies: Vec<(u64, u64)>,
    pub copies_end: u64,
    pub trap: Option<u64>,
}

/// Assembles the placed code for `cond` at `at`.
pub(crate) fn assemble(
    cond: &Node,
    cfa: Cfa,
    site: u64,
    displaced: &Displaced,
    at: u64,
) -> Result<Assembled, Refusal> {
    let mut a = CodeAssembler::new(64).map_err(asm_error)?;
    let bail = a.create_label();
    let mut e = Emitter {
        a: &mut a,
        cfa,
        bail,
    };
    e.prologue().map_err(asm_error)?;
    e.node(cond, 0)?;
    let (copy_labels, trap) = e.tail(site, displaced).map_err(asm_error)?;
    let bail = e.bail;
    let result = a
        .assemble_options(at, BlockEncoderOptions::RETURN_NEW_INSTRUCTION_OFFSETS)
        .map_err(asm_error)?;
    let mut copies = Vec::new();
    for (label, original) in &copy_labels {
        copies.push((result.label_ip(label).map_err(asm_error)?, *original));
    }
    Ok(Assembled {
        copies,
        // The true path's epilogue starts right after the jump back.
        copies_end: result.label_ip(&bail).map_err(asm_error)?,
        trap: Some(result.label_ip(&trap).map_err(asm_error)?),
        code: result.inner.code_buffer,
    })
}

/// Arithmetic nodes carry arithmetic operators only (the lowering guarantees it).
fn arithmetic(op: BinOp) -> Result<(), Refusal> {
    if is_comparison(op) || matches!(op, BinOp::And | BinOp::Or) {
        return Err("not an arithmetic operator".into());
    }
    Ok(())
}

fn asm_error(e: iced_x86::IcedError) -> Refusal {
    format!("assembling the condition: {e}")
}

struct Emitter<'a> {
    a: &'a mut CodeAssembler,
    cfa: Cfa,
    /// Where the condition counts as true (also for what cannot be decided here).
    bail: CodeLabel,
}

type Asm = Result<(), iced_x86::IcedError>;

impl Emitter<'_> {
    fn prologue(&mut self) -> Asm {
        self.a.lea(rsp, ptr(rsp - RED_ZONE))?;
        self.a.push(rax)?;
        self.a.push(rcx)?;
        self.a.push(rdx)?;
        self.a.push(r11)?;
        self.a.pushfq()?;
        self.a.lea(r11, ptr(rsp + (SAVED + RED_ZONE)))
    }

    /// The decision, the false path (the displaced instructions' copies and the jump
    /// back, each labelled with its original address) and the true path to the trap.
    fn tail(
        &mut self,
        site: u64,
        displaced: &Displaced,
    ) -> Result<(Vec<(CodeLabel, u64)>, CodeLabel), iced_x86::IcedError> {
        self.a.test(rax, rax)?;
        self.a.jnz(self.bail)?;
        self.epilogue()?;
        let mut labels = Vec::new();
        for ins in &displaced.instructions {
            let mut l = self.a.create_label();
            self.a.set_label(&mut l)?;
            copy_instruction(self.a, ins)?;
            labels.push((l, ins.ip()));
        }
        let back = site + displaced.len as u64;
        let mut l = self.a.create_label();
        self.a.set_label(&mut l)?;
        self.a.jmp(back)?;
        labels.push((l, back));
        self.a.set_label(&mut self.bail)?;
        self.epilogue()?;
        let mut trap = self.a.create_label();
        self.a.set_label(&mut trap)?;
        self.a.int3()?;
        Ok((labels, trap))
    }

    fn epilogue(&mut self) -> Asm {
        self.a.lea(rsp, ptr(r11 - (SAVED + RED_ZONE)))?;
        self.a.popfq()?;
        self.a.pop(r11)?;
        self.a.pop(rdx)?;
        self.a.pop(rcx)?;
        self.a.pop(rax)?;
        self.a.lea(rsp, ptr(rsp + RED_ZONE))
    }

    /// The site's value of DWARF register `n` as an address base: the registers the
    /// placed code changed come from where it saved them (into rcx).
    fn base(&mut self, n: u16) -> Result<AsmRegister64, iced_x86::IcedError> {
        let saved_at = |slot: i32| -(RED_ZONE + 8 * slot);
        Ok(match n {
            0 => {
                self.a.mov(rcx, qword_ptr(r11 + saved_at(1)))?;
                rcx
            }
            2 => {
                self.a.mov(rcx, qword_ptr(r11 + saved_at(2)))?;
                rcx
            }
            1 => {
                self.a.mov(rcx, qword_ptr(r11 + saved_at(3)))?;
                rcx
            }
            11 => {
                self.a.mov(rcx, qword_ptr(r11 + saved_at(4)))?;
                rcx
            }
            3 => rbx,
            4 => rsi,
            5 => rdi,
            6 => rbp,
            7 => r11,
            8 => r8,
            9 => r9,
            10 => r10,
            12 => r12,
            13 => r13,
            14 => r14,
            _ => r15,
        })
    }

    /// Loads an integer of type `ty` at `mem` into rax, extended to 64 bits.
    fn load(&mut self, mem: AsmMemoryOperand, ty: IntTy) -> Asm {
        match (ty.size, ty.signed) {
            (1, true) => self.a.movsx(rax, byte_ptr(mem)),
            (1, false) => self.a.movzx(eax, byte_ptr(mem)),
            (2, true) => self.a.movsx(rax, word_ptr(mem)),
            (2, false) => self.a.movzx(eax, word_ptr(mem)),
            (4, true) => self.a.movsxd(rax, dword_ptr(mem)),
            (4, false) => self.a.mov(eax, dword_ptr(mem)),
            _ => self.a.mov(rax, qword_ptr(mem)),
        }
    }

    /// Truncates rax to `ty` and extends it back.
    fn wrap(&mut self, ty: IntTy) -> Asm {
        match (ty.size, ty.signed) {
            (1, true) => self.a.movsx(rax, al),
            (1, false) => self.a.movzx(eax, al),
            (2, true) => self.a.movsx(rax, ax),
            (2, false) => self.a.movzx(eax, ax),
            (4, true) => self.a.movsxd(rax, eax),
            (4, false) => self.a.mov(eax, eax),
            _ => Ok(()),
        }
    }

    /// Emits code leaving the node's value in rax (rcx, rdx and the stack as scratch).
    fn node(&mut self, n: &Node, depth: u32) -> Result<(), Refusal> {
        if depth > 64 {
            return Err("the condition is nested too deeply".into());
        }
        let d = depth + 1;
        let fail = asm_error;
        match n {
            Node::Const(v) => self.a.mov(rax, *v).map_err(fail)?,
            Node::Load(Slot::Frame(offset), ty) => {
                let disp = self
                    .cfa
                    .offset
                    .checked_add(*offset)
                    .and_then(|d| i32::try_from(d).ok())
                    .ok_or("a frame slot is out of reach")?;
                let base = self.base(self.cfa.register).map_err(fail)?;
                self.load(base + disp, *ty).map_err(fail)?;
            }
            Node::Load(Slot::Reg(n, offset), ty) => {
                let disp = i32::try_from(*offset).map_err(|_| "a slot is out of reach")?;
                let base = self.base(*n).map_err(fail)?;
                self.load(base + disp, *ty).map_err(fail)?;
            }
            Node::Load(Slot::Static(addr), ty) => {
                self.a.mov(rcx, *addr).map_err(fail)?;
                self.load(rcx + 0, *ty).map_err(fail)?;
            }
            Node::Wrap(x, ty) => {
                self.node(x, d)?;
                self.wrap(*ty).map_err(fail)?;
            }
            Node::Neg(x, ty) => {
                self.node(x, d)?;
                self.a.neg(rax).map_err(fail)?;
                self.wrap(*ty).map_err(fail)?;
            }
            Node::BitNot(x, ty) => {
                self.node(x, d)?;
                self.a.not(rax).map_err(fail)?;
                self.wrap(*ty).map_err(fail)?;
            }
            Node::Not(x) => {
                self.node(x, d)?;
                (|| {
                    self.a.test(rax, rax)?;
                    self.a.sete(al)?;
                    self.a.movzx(eax, al)
                })()
                .map_err(fail)?;
            }
            Node::And(x, y) | Node::Or(x, y) => {
                let and = matches!(n, Node::And(..));
                let mut decided = self.a.create_label();
                let mut end = self.a.create_label();
                self.node(x, d)?;
                (|| {
                    self.a.test(rax, rax)?;
                    if and {
                        self.a.jz(decided)
                    } else {
                        self.a.jnz(decided)
                    }
                })()
                .map_err(fail)?;
                self.node(y, d)?;
                (|| {
                    self.a.test(rax, rax)?;
                    if and {
                        self.a.jz(decided)?;
                    } else {
                        self.a.jnz(decided)?;
                    }
                    self.a.mov(eax, i32::from(and))?;
                    self.a.jmp(end)?;
                    self.a.set_label(&mut decided)?;
                    self.a.mov(eax, i32::from(!and))?;
                    self.a.set_label(&mut end)?;
                    self.a.nop()
                })()
                .map_err(fail)?;
            }
            Node::Cmp(op, x, y, signed) => {
                self.operands(x, y, d)?;
                let signed = *signed;
                (|| {
                    self.a.cmp(rax, rcx)?;
                    match (op, signed) {
                        (BinOp::Eq, _) => self.a.sete(al)?,
                        (BinOp::Ne, _) => self.a.setne(al)?,
                        (BinOp::Lt, true) => self.a.setl(al)?,
                        (BinOp::Le, true) => self.a.setle(al)?,
                        (BinOp::Gt, true) => self.a.setg(al)?,
                        (BinOp::Ge, true) => self.a.setge(al)?,
                        (BinOp::Lt, false) => self.a.setb(al)?,
                        (BinOp::Le, false) => self.a.setbe(al)?,
                        (BinOp::Gt, false) => self.a.seta(al)?,
                        _ => self.a.setae(al)?,
                    }
                    self.a.movzx(eax, al)
                })()
                .map_err(fail)?;
            }
            Node::Checked(op, x, y, c) => {
                arithmetic(*op)?;
                self.operands(x, y, d)?;
                self.checked(*op, *c).map_err(fail)?;
            }
            Node::Arith(op, x, y, ty) => {
                arithmetic(*op)?;
                self.operands(x, y, d)?;
                let bail = self.bail;
                (|| {
                    match op {
                        BinOp::Add => self.a.add(rax, rcx)?,
                        BinOp::Sub => self.a.sub(rax, rcx)?,
                        BinOp::Mul => self.a.imul_2(rax, rcx)?,
                        BinOp::BitAnd => self.a.and(rax, rcx)?,
                        BinOp::BitOr => self.a.or(rax, rcx)?,
                        BinOp::Div | BinOp::Rem => {
                            // A zero divisor is an error, and -1 may overflow: the
                            // int3 path decides those.
                            self.a.test(rcx, rcx)?;
                            self.a.jz(bail)?;
                            if ty.signed {
                                self.a.cmp(rcx, -1)?;
                                self.a.je(bail)?;
                                self.a.cqo()?;
                                self.a.idiv(rcx)?;
                            } else {
                                self.a.xor(edx, edx)?;
                                self.a.div(rcx)?;
                            }
                            if *op == BinOp::Rem {
                                self.a.mov(rax, rdx)?;
                            }
                        }
                        BinOp::Shl | BinOp::Shr => {
                            // The evaluator shifts a 128-bit value by the count's low
                            // seven bits: past 63 the int3 path decides.
                            self.a.and(ecx, 127)?;
                            self.a.cmp(ecx, 63)?;
                            self.a.ja(bail)?;
                            match (op, ty.signed) {
                                (BinOp::Shl, _) => self.a.shl(rax, cl)?,
                                (_, true) => self.a.sar(rax, cl)?,
                                (_, false) => self.a.shr(rax, cl)?,
                            }
                        }
                        _ => self.a.xor(rax, rcx)?,
                    }
                    self.wrap(*ty)
                })()
                .map_err(fail)?;
            }
        }
        Ok(())
    }

    /// Rust's checked arithmetic on rax and rcx: out of range (an error for the
    /// debugger's evaluator) goes to the trap.
    fn checked(&mut self, op: BinOp, c: Checked) -> Asm {
        let bail = self.bail;
        let ty = c.ty;
        match op {
            BinOp::Add | BinOp::Sub => {
                if op == BinOp::Add {
                    self.a.add(rax, rcx)?;
                } else {
                    self.a.sub(rax, rcx)?;
                }
                if c.unsigned {
                    self.a.jc(bail)?;
                } else {
                    self.a.jo(bail)?;
                }
            }
            BinOp::Mul => {
                if c.unsigned {
                    self.a.mul(rcx)?;
                } else {
                    self.a.imul_2(rax, rcx)?;
                }
                self.a.jo(bail)?;
            }
            BinOp::Div | BinOp::Rem => {
                self.a.test(rcx, rcx)?;
                self.a.jz(bail)?;
                if c.unsigned {
                    self.a.xor(edx, edx)?;
                    self.a.div(rcx)?;
                } else {
                    self.a.cmp(rcx, -1)?;
                    self.a.je(bail)?;
                    self.a.cqo()?;
                    self.a.idiv(rcx)?;
                }
                if op == BinOp::Rem {
                    self.a.mov(rax, rdx)?;
                }
            }
            BinOp::Shl | BinOp::Shr => {
                // A negative count or one past the width is an error.
                self.a.cmp(rcx, i32::from(ty.size) * 8)?;
                self.a.jae(bail)?;
                match op {
                    BinOp::Shl => self.a.shl(rax, cl)?,
                    _ if c.lhs_signed && !c.unsigned => self.a.sar(rax, cl)?,
                    _ => self.a.shr(rax, cl)?,
                }
                return self.wrap(ty);
            }
            BinOp::BitAnd => {
                self.a.and(rax, rcx)?;
                return self.wrap(ty);
            }
            BinOp::BitOr => {
                self.a.or(rax, rcx)?;
                return self.wrap(ty);
            }
            _ => {
                self.a.xor(rax, rcx)?;
                return self.wrap(ty);
            }
        }
        // The exact result must lie in the type's range.
        let bits = u32::from(ty.size) * 8;
        if c.unsigned {
            if ty.signed || bits < 64 {
                let max = if ty.signed {
                    (1u64 << (bits - 1)) - 1
                } else {
                    (1u64 << bits) - 1
                };
                self.a.mov(rdx, max)?;
                self.a.cmp(rax, rdx)?;
                self.a.ja(bail)?;
            }
        } else if !ty.signed {
            self.a.test(rax, rax)?;
            self.a.js(bail)?;
            if bits < 64 {
                self.a.mov(rdx, (1u64 << bits) - 1)?;
                self.a.cmp(rax, rdx)?;
                self.a.ja(bail)?;
            }
        } else if bits < 64 {
            self.a.mov(rdx, rax)?;
            self.wrap(ty)?;
            self.a.cmp(rax, rdx)?;
            self.a.jne(bail)?;
        }
        Ok(())
    }

    /// Evaluates `x` into rax and `y` into rcx.
    fn operands(&mut self, x: &Node, y: &Node, d: u32) -> Result<(), Refusal> {
        let fail = asm_error;
        self.node(x, d)?;
        self.a.push(rax).map_err(fail)?;
        self.node(y, d)?;
        self.a.mov(rcx, rax).map_err(fail)?;
        self.a.pop(rax).map_err(fail)
    }
}
