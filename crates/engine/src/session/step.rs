//! Line stepping on the tracer thread: the plan of a step in progress and the
//! decision taken after each single-step or temporary breakpoint (step over with the
//! CFA compared, step in through PLT stubs, step out with the return registers).

use symbols::{FileAddr, Line};
use tracer::{Tid, Tracer};

use super::{Core, ReturnValue, RuntimeAddr, StepKind, StopCause, MAX_STEPS};
use crate::mem::{read_u64, TracerMemory};
use crate::modules::Module;
use crate::retval::{self, ReturnRegs};

#[derive(Debug)]
pub(super) struct StepPlan {
    pub(super) tid: Tid,
    pub(super) kind: StepKind,
    /// Stop at the start of an is_stmt row of another line.
    pub(super) start_line: Option<u32>,
    /// The CFA of the stepping frame: an sp at or above it means the frame returned.
    pub(super) frame_cfa: Option<u64>,
    pub(super) prev_pc: u64,
    pub(super) prev_sp: u64,
    /// A temporary breakpoint (return address or callee body) and the sp expected there.
    pub(super) temp: Option<(u64, Option<u64>)>,
    /// Stepping in through a PLT stub: the sp at the call's entry.
    pub(super) tramp_sp: Option<u64>,
    pub(super) steps: u32,
    /// Stepping out: a pc in the function being left, to type its return value.
    pub(super) out_of: Option<u64>,
    /// Stepping into a chosen call: its instruction, until the line reaches it (calls
    /// before it are stepped over).
    pub(super) into_call: Option<(u64, bool)>,
    /// The instruction just stepped enters a callee by a jump (a chosen tail call).
    pub(super) enter_jump: bool,
}

impl Core {
    pub(super) fn temp_reached(&mut self, t: &mut Tracer, tid: Tid) {
        let Some(plan) = self.step.as_mut() else {
            return;
        };
        if let Some((addr, _)) = plan.temp.take() {
            let _ = t.remove_breakpoint(RuntimeAddr(addr));
        }
        match plan.kind {
            StepKind::Out => {
                let function_pc = plan.out_of;
                let rv = self.return_value(t, tid, function_pc);
                self.step = None;
                self.stopped(tid, StopCause::Step, true, rv);
            }
            StepKind::In if plan.frame_cfa.is_none() && plan.start_line.is_none() => {
                // Reached the body of the callee.
                self.step = None;
                self.stopped(tid, StopCause::Step, true, None);
            }
            _ => self.continue_step(t, tid),
        }
    }

    pub(super) fn on_step(&mut self, t: &mut Tracer, tid: Tid) {
        if self.continue_after_step {
            self.continue_after_step = false;
            self.resume(t);
            return;
        }
        match self.step.as_ref().map(|p| (p.tid, p.kind)) {
            // Back from a frame whose local is watched: the watch ends (and a line step
            // with it, as gdb's does).
            Some((ptid, _)) if ptid == tid && self.step_met_scope_end(t, tid) => {}
            Some((ptid, StepKind::Instruction)) if ptid == tid => {
                self.step = None;
                let at_bp = self.report_breakpoint_at_pc(t, tid);
                if !at_bp {
                    self.stopped(tid, StopCause::Step, false, None);
                }
            }
            Some((ptid, _)) if ptid == tid => self.continue_step(t, tid),
            // A single-step trap nobody asked for (no step of any thread in progress) is
            // no stop of the program's: showing it would be a stop the debugger caused.
            None => {
                let pc = t.regs(tid).map(|r| r.pc()).unwrap_or(0);
                tracing::warn!(
                    tid = tid.0,
                    pc,
                    "a single-step trap nobody asked for: passed"
                );
                self.resume(t);
            }
            Some(_) => self.stopped(tid, StopCause::Step, false, None),
        }
    }

    /// The registers holding a return value and, when the function at `function_pc` has
    /// a known return type, the value they hold.
    pub(super) fn return_value(
        &self,
        t: &mut Tracer,
        tid: Tid,
        function_pc: Option<u64>,
    ) -> Option<ReturnValue> {
        let regs = t.regs(tid).ok()?;
        let fp = t.fp_regs(tid).ok();
        let low = |n: usize| {
            fp.and_then(|f| f.xmm(n)).map_or(0, |x| {
                u64::from_le_bytes([x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]])
            })
        };
        let mut st0 = [0u8; 16];
        if let Some(f) = fp {
            for (k, w) in f.0.st_space.iter().take(4).enumerate() {
                st0[k * 4..k * 4 + 4].copy_from_slice(&w.to_le_bytes());
            }
            // Only the 80 bits of the register are the value.
            st0[10..].fill(0);
        }
        let ret = ReturnRegs {
            rax: regs.0.rax,
            rdx: regs.0.rdx,
            xmm: [low(0), low(1)],
            st0,
        };
        let value = function_pc.and_then(|pc| {
            let module = self.modules.find(pc)?;
            let binary = module.binary()?;
            let file_pc = module.to_file(pc);
            let name = binary
                .function_at(file_pc)
                .ok()
                .flatten()
                .map(|f| f.function.name)
                .unwrap_or_default();
            let ty = binary.function_return_type(file_pc).ok().flatten();
            let mem = TracerMemory(t);
            retval::render(binary, module.bias, &mem, &name, ty, &ret)
        });
        Some(ReturnValue {
            rax: ret.rax,
            rdx: ret.rdx,
            xmm0: ret.xmm[0],
            value,
        })
    }

    /// If the thread now sits on a user breakpoint whose condition holds, report that.
    pub(super) fn report_breakpoint_at_pc(&mut self, t: &mut Tracer, tid: Tid) -> bool {
        let Ok(pc) = t.regs(tid).map(|r| r.pc()) else {
            return false;
        };
        if !self.by_addr.contains_key(&RuntimeAddr(pc)) {
            return false;
        }
        let ids = self.user_hits(t, tid, pc);
        if ids.is_empty() {
            return false;
        }
        self.clear_step(t);
        // The int3 at pc has not run: the next resume must step over it, not report it.
        self.stopped(tid, StopCause::Breakpoint(ids), false, None);
        true
    }

    /// Ends a line step where it is, as a step stop.
    fn end_step(&mut self, tid: Tid) {
        self.step = None;
        self.stopped(tid, StopCause::Step, false, None);
    }

    /// Single-steps the stepping thread from `pc`/`sp` (remembered for the next
    /// decision); a step that cannot be made ends the line step there.
    fn step_from(&mut self, t: &mut Tracer, tid: Tid, pc: u64, sp: u64) {
        if let Some(plan) = self.step.as_mut() {
            plan.prev_pc = pc;
            plan.prev_sp = sp;
        }
        if let Err(e) = t.step(tid) {
            tracing::warn!("stepping: {e}");
            self.end_step(tid);
        }
    }

    /// One decision of a line step, after a single-step or a temporary breakpoint.
    pub(super) fn continue_step(&mut self, t: &mut Tracer, tid: Tid) {
        let Ok(regs) = t.regs(tid) else {
            self.end_step(tid);
            return;
        };
        let (pc, sp) = (regs.pc(), regs.sp());
        let module = self.modules.find(pc);
        let Some(plan) = self.step.as_mut() else {
            return;
        };
        plan.steps += 1;
        let mem = TracerMemory(t);
        if let Some(back) = entered_signal_handler(&mem, sp, plan.prev_pc, plan.prev_sp) {
            // The step delivered a signal: the kernel set up the handler's frame and the
            // step ended at its first instruction. Run the handler as without the
            // debugger (every thread resumed, its own breakpoints live) to the
            // interrupted pc at the interrupted sp — gdb's step-resume breakpoint — and
            // go on stepping from there.
            plan.temp = Some((back, Some(plan.prev_sp)));
            let _ = t.insert_breakpoint(RuntimeAddr(back));
            self.resume(t);
            return;
        }
        if let Some((_, jump)) = plan.into_call.filter(|(call, _)| *call == pc) {
            // At the chosen call: enter it (a step in from here on).
            plan.into_call = None;
            plan.enter_jump = jump;
            self.step_from(t, tid, pc, sp);
            return;
        }
        // Entered a call: sp went down by the return address, which points just after
        // the previous instruction (or the chosen call was a tail-call jump).
        let entered_call = std::mem::take(&mut plan.enter_jump)
            || (sp == plan.prev_sp.wrapping_sub(8)
                && read_u64(&mem, sp)
                    .is_some_and(|ra| ra > plan.prev_pc && ra <= plan.prev_pc + 16));
        // Calls before a chosen one are stepped over.
        let stepping_in = plan.kind == StepKind::In && plan.into_call.is_none();
        if entered_call && stepping_in && plan.tramp_sp.is_none() {
            let has_body = module.as_ref().and_then(|m| body_start(m, pc)).is_some();
            if !has_body && !is_plain_function(module.as_deref(), pc) {
                // A PLT stub (or the dynamic linker's resolver behind it): follow its
                // jumps at this stack depth to the function it leads to.
                plan.tramp_sp = Some(sp);
                self.step_from(t, tid, pc, sp);
                return;
            }
        }
        if let Some(tsp) = plan.tramp_sp.filter(|_| !entered_call) {
            if sp > tsp {
                // The call returned without reaching code with line information.
                plan.tramp_sp = None;
            } else {
                if sp == tsp {
                    let entry = module.as_ref().and_then(|m| entry_body(m, pc));
                    if let Some(target) = entry {
                        plan.tramp_sp = None;
                        plan.frame_cfa = None;
                        plan.start_line = None;
                        if target == pc {
                            self.end_step(tid);
                            return;
                        }
                        plan.temp = Some((target, None));
                        let _ = t.insert_breakpoint(RuntimeAddr(target));
                        self.resume(t);
                        return;
                    }
                    if is_plain_function(module.as_deref(), pc) {
                        // Reached a function without debug information: finish it.
                        let ra = read_u64(&mem, sp).unwrap_or(0);
                        plan.temp = Some((ra, Some(sp + 8)));
                        let _ = t.insert_breakpoint(RuntimeAddr(ra));
                        self.resume(t);
                        return;
                    }
                }
                if plan.steps > MAX_STEPS {
                    self.end_step(tid);
                    return;
                }
                self.step_from(t, tid, pc, sp);
                return;
            }
        }
        if entered_call {
            if stepping_in && plan.tramp_sp.is_none() {
                if let Some(target) = module.as_ref().and_then(|m| body_start(m, pc)) {
                    plan.frame_cfa = None;
                    plan.start_line = None;
                    if target == pc {
                        self.end_step(tid);
                        return;
                    }
                    plan.temp = Some((target, None));
                    let _ = t.insert_breakpoint(RuntimeAddr(target));
                    self.resume(t);
                    return;
                }
            }
            // Step over the call: run to the return address in this frame.
            let ra = read_u64(&mem, sp).unwrap_or(0);
            plan.temp = Some((ra, Some(sp + 8)));
            let _ = t.insert_breakpoint(RuntimeAddr(ra));
            self.resume(t);
            return;
        }
        let returned = plan.frame_cfa.is_some_and(|cfa| sp >= cfa);
        let row = module.as_ref().and_then(|m| line_start_at(m, pc));
        let here = module.as_ref().and_then(|m| current_line(m, pc));
        if returned && row.is_some() {
            // Returned to the start of a line (the call ended the previous one): a new
            // line, where gdb stops too.
            self.step = None;
            if !self.report_breakpoint_at_pc(t, tid) {
                self.stopped(tid, StopCause::Step, false, None);
            }
            return;
        }
        if returned {
            // Back in the caller, in the middle of its line: finish that line.
            plan.frame_cfa = None;
            match here {
                Some(line) => plan.start_line = Some(line),
                None => {
                    self.end_step(tid);
                    return;
                }
            }
        }
        let new_line = match row {
            Some(line) => Some(line) != plan.start_line,
            None => false,
        };
        let no_line_info = here.is_none() && !returned;
        if new_line || plan.steps > MAX_STEPS || (no_line_info && plan.start_line.is_none()) {
            self.step = None;
            if !self.report_breakpoint_at_pc(t, tid) {
                self.stopped(tid, StopCause::Step, false, None);
            }
            return;
        }
        self.step_from(t, tid, pc, sp);
    }
}

/// Where a thread whose single-step from `prev_pc` at `prev_sp` ended at `sp` will come
/// back to when it just entered a signal handler: the x86-64 `rt_sigframe` at `sp` (the
/// restorer's address, then the `ucontext`) holds the interrupted sp, equal to `prev_sp`,
/// and the interrupted pc, at or just after `prev_pc` (the step's instruction not run,
/// or a syscall restarted). `None` for any other step.
fn entered_signal_handler(
    mem: &TracerMemory<'_>,
    sp: u64,
    prev_pc: u64,
    prev_sp: u64,
) -> Option<u64> {
    /// Offsets in the frame of the saved rsp and rip (`uc_mcontext` after uc_flags,
    /// uc_link and uc_stack; r8–r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, then rsp, rip).
    const SAVED_SP: u64 = 8 + 40 + 15 * 8;
    const SAVED_PC: u64 = SAVED_SP + 8;
    if sp >= prev_sp {
        return None;
    }
    let saved_sp = read_u64(mem, sp.checked_add(SAVED_SP)?)?;
    let saved_pc = read_u64(mem, sp.checked_add(SAVED_PC)?)?;
    (saved_sp == prev_sp && saved_pc >= prev_pc.saturating_sub(2) && saved_pc < prev_pc + 16)
        .then_some(saved_pc)
}

/// The line of an is_stmt line-table row starting exactly at `pc`.
fn line_start_at(module: &Module, pc: u64) -> Option<u32> {
    let binary = module.binary()?;
    let f = module.to_file(pc);
    let rows = binary.line_rows(f..FileAddr(f.0 + 1)).ok()?;
    rows.iter()
        .rev()
        .filter(|r| r.is_stmt && r.addr == f)
        .find_map(|r| r.line)
        .map(Line::get)
}

pub(super) fn current_line(module: &Module, pc: u64) -> Option<u32> {
    let binary = module.binary()?;
    binary
        .frame_location_for_addr(module.to_file(pc))
        .ok()
        .flatten()
        .and_then(|l| l.line)
        .map(Line::get)
}

/// Where a step into the function at `pc` (its entry) should stop: after its prologue,
/// when the function has debug information.
fn body_start(module: &Module, pc: u64) -> Option<u64> {
    let binary = module.binary()?;
    let f = binary.function_at(module.to_file(pc)).ok().flatten()?;
    if !f.function.from_dwarf {
        return None;
    }
    binary
        .location_for_addr(module.to_file(pc))
        .ok()
        .flatten()?;
    let at = f.function.breakpoint_addr.or(f.function.entry())?;
    Some(module.to_runtime(at))
}

/// `body_start` when `pc` is the entry of its function.
fn entry_body(module: &Module, pc: u64) -> Option<u64> {
    let binary = module.binary()?;
    let f = binary.function_at(module.to_file(pc)).ok().flatten()?;
    if f.function.entry() != Some(module.to_file(pc)) {
        return None;
    }
    body_start(module, pc)
}

/// Whether `pc` is in a named function without debug information, outside the
/// dynamic linker (whose resolver is followed, not finished).
fn is_plain_function(module: Option<&Module>, pc: u64) -> bool {
    let Some(module) = module else { return false };
    if module.name().starts_with("ld-linux") || module.name().starts_with("ld.so") {
        return false;
    }
    let Some(binary) = module.binary() else {
        return false;
    };
    binary
        .function_at(module.to_file(pc))
        .ok()
        .flatten()
        .is_some_and(|f| !f.function.from_dwarf)
}
