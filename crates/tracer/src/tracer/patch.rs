//! Jump patches: a breakpoint site rewritten as a jump to code placed in the debuggee
//! (a compiled condition) that traps only when the condition holds.
//!
//! A patch accelerates an int3 breakpoint and never replaces it: the site stays in the
//! tracer's breakpoint table, and whenever the patch cannot be in place (another user of
//! the site, an int3 inside the bytes it covers, a write over them, watchpoints armed) the
//! site holds its int3 again and every hit comes to the tracer as before. Threads never
//! stay in the placed code while the process is stopped: they are moved out (stepped
//! out, or mapped from a displaced instruction's copy back to the original) by
//! [`Tracer::evacuate_patches`], so stack traces, stepping and detach see original pcs.

use super::*;

/// Bytes of a `jmp rel32`.
pub const JUMP_LEN: usize = 5;
/// Size of one region of placed code (more are mapped when one is full).
const REGION_LEN: u64 = 64 * 1024;
/// Placed code must be reachable from the site by a rel32 jump, with a margin.
const MAX_DISTANCE: u64 = 1 << 30;
/// Steps allowed to leave placed code (the longest condition is far shorter).
const MAX_EVACUATION_STEPS: usize = 4096;
const SYS_MMAP: u64 = 9;
const SYS_MUNMAP: u64 = 11;
const MAP_FIXED_NOREPLACE: u64 = 0x10_0000;
const PUSHFQ: u8 = 0x9c;
/// EFLAGS.TF.
pub(super) const TRAP_FLAG: u64 = 1 << 8;

/// Single-steps one thread (the others stay stopped), delivering `sig` (0: none), and
/// waits for its next stop. The tracer's own steps deliver nothing: a signal that
/// arrives meanwhile waits for the thread's resume.
pub(super) fn step_and_wait(tid: Tid, sig: i32) -> Result<sys::WaitResult> {
    sys::singlestep(tid, sig).map_err(|e| Error::ptrace("PTRACE_SINGLESTEP", tid, e))?;
    loop {
        match sys::wait(tid.0, false, false) {
            Ok(Some(w)) => return Ok(w),
            Ok(None) => continue,
            Err(e) => return Err(Error::ptrace("waitpid", tid, e)),
        }
    }
}

/// What [`Tracer::install_patch`] is given: the site, the code placed for it, and where
/// in that code the displaced instructions run.
#[derive(Clone, Debug)]
pub struct PatchSpec {
    /// The breakpoint address (an inserted breakpoint).
    pub site: RuntimeAddr,
    /// How many bytes of whole instructions the jump replaces (at least [`JUMP_LEN`]).
    pub len: usize,
    /// Where `code` goes (from [`Tracer::alloc_code`]).
    pub code_addr: RuntimeAddr,
    /// The placed code.
    pub code: Vec<u8>,
    /// Each displaced instruction's copy in `code` and its original address, in order,
    /// then the jump back and `site + len`.
    pub copies: Vec<(RuntimeAddr, RuntimeAddr)>,
    /// First byte after the copies and the jump back.
    pub copies_end: RuntimeAddr,
    /// The int3 the code reaches when the condition holds. `None` for a copy alone: the
    /// site never jumps to it and keeps its int3, and a thread resuming from a hit runs
    /// the copy instead of stepping over the int3.
    pub trap: Option<RuntimeAddr>,
}

#[derive(Debug)]
pub(super) struct Patch {
    spec: PatchSpec,
    pub(super) saved: Vec<u8>,
    pub(super) active: bool,
    /// Memory under it was written: its copies are out of date, it stays an int3.
    stale: bool,
}

impl Patch {
    fn site(&self) -> u64 {
        self.spec.site.0
    }

    fn end(&self) -> u64 {
        self.site() + self.spec.len as u64
    }

    fn overlaps(&self, start: u64, end: u64) -> bool {
        self.site() < end && start < self.end()
    }

    pub(super) fn jump_bytes(&self) -> Vec<u8> {
        let rel = self
            .spec
            .code_addr
            .0
            .wrapping_sub(self.site() + JUMP_LEN as u64) as i64;
        let mut b = vec![0xe9];
        b.extend_from_slice(&(rel as i32).to_le_bytes());
        b.resize(self.spec.len, INT3);
        b
    }

    pub(super) fn in_code(&self, pc: u64) -> bool {
        let start = self.spec.code_addr.0;
        start <= pc && pc < start + self.spec.code.len() as u64
    }

    /// Whether `pc` is just past the trap (where an executed trap leaves it).
    fn past_trap(&self, pc: u64) -> bool {
        self.spec.trap.is_some_and(|t| t.0 + 1 == pc)
    }

    fn in_copies(&self, pc: u64) -> bool {
        self.spec.copies.first().is_some_and(|c| c.0 .0 <= pc) && pc < self.spec.copies_end.0
    }

    fn original_of(&self, copy: u64) -> Option<u64> {
        self.spec
            .copies
            .iter()
            .find(|(c, _)| c.0 == copy)
            .map(|(_, o)| o.0)
    }

    fn copy_of(&self, original: u64) -> Option<u64> {
        self.spec
            .copies
            .iter()
            .find(|(_, o)| o.0 == original)
            .map(|(c, _)| c.0)
    }
}

/// The placed code of a removed patch: it stays mapped and unchanged, and a thread that
/// was in it (or whose signal frame or stack returns into it) runs on from there — back
/// to the original code at `site` (its trap, as a moribund one) or at `site + len` (the
/// jump back after the copies).
#[derive(Clone, Copy, Debug)]
pub(super) struct Retired {
    pub(super) code: (u64, u64),
    lands: [u64; 2],
}

/// Mapped memory for placed code.
#[derive(Clone, Copy, Debug)]
pub(super) struct Region {
    start: u64,
    len: u64,
    used: u64,
}

impl Region {
    /// The addresses it spans, end exclusive.
    pub(super) fn span(&self) -> (u64, u64) {
        (self.start, self.start + self.len)
    }
}

impl Tracer {
    /// Reserves `len` bytes of executable memory within jump range of `near`, mapping a
    /// region into the debuggee (an injected mmap) when none has room. The process must
    /// be stopped.
    pub fn alloc_code(&mut self, near: RuntimeAddr, len: usize) -> Result<RuntimeAddr> {
        self.require_stopped()?;
        if self.rec.is_some() {
            // Snapshots and replays have no placed code: while recording every
            // breakpoint stays an int3.
            return Err(Error::Placement("no placed code while recording".into()));
        }
        let len = (len as u64 + 15) & !15;
        let reachable = |r: &Region| {
            near.0.abs_diff(r.start) < MAX_DISTANCE
                && near.0.abs_diff(r.start + r.len) < MAX_DISTANCE
        };
        if let Some(r) = self
            .regions
            .iter_mut()
            .find(|r| reachable(r) && r.used + len <= r.len)
        {
            let at = r.start + r.used;
            r.used += len;
            return Ok(RuntimeAddr(at));
        }
        let size = REGION_LEN.max(len.next_multiple_of(4096));
        let start = self.map_region(near.0, size)?;
        self.regions.push(Region {
            start,
            len: size,
            used: len,
        });
        Ok(RuntimeAddr(start))
    }

    /// Whether a placed patch covers any of the `len` bytes from `site`. Placed patches
    /// never overlap one another (this check keeps it so), so only the last one that
    /// starts before `site` and the first one from it can: two lookups instead of a
    /// walk over every patch (a `setBreakpoints` of ten thousand conditional lines
    /// placed them in quadratic time).
    fn patch_overlaps(&self, site: u64, len: usize) -> bool {
        let end = site + len as u64;
        let before = self.patches.range(..site).next_back();
        let from = self.patches.range(site..end).next();
        before
            .into_iter()
            .chain(from)
            .any(|(_, p)| p.overlaps(site, end))
    }

    /// Places a patch's code and, when nothing stands in the way, its jump. Returns
    /// whether the jump is in place (otherwise the site keeps its int3).
    pub fn install_patch(&mut self, spec: PatchSpec) -> Result<bool> {
        self.require_stopped()?;
        if self.rec.is_some() {
            return Ok(false);
        }
        let site = spec.site.0;
        if !self.breakpoints.contains_key(&site) {
            return Err(Error::NoBreakpoint(spec.site));
        }
        if (spec.trap.is_some() && spec.len < JUMP_LEN) || self.patch_overlaps(site, spec.len) {
            return Ok(false);
        }
        let mut saved = vec![0u8; spec.len];
        self.read_memory(spec.site, &mut saved)?;
        self.write_raw(spec.code_addr.0, &spec.code)?;
        self.patches.insert(
            site,
            Patch {
                spec,
                saved,
                active: false,
                stale: false,
            },
        );
        Ok(self.activate_patch(site))
    }

    /// Puts the jump in place if nothing stands in the way: the site has one user, no
    /// other breakpoint and no thread's pc lies inside the bytes it covers, and no
    /// watchpoint is armed (the placed code's reads would trigger read watchpoints).
    pub(super) fn activate_patch(&mut self, site: u64) -> bool {
        let Some(p) = self.patches.get(&site) else {
            return false;
        };
        if p.active {
            return true;
        }
        let (start, end) = (p.site(), p.end());
        let single_user = self.breakpoints.get(&site).is_some_and(|b| b.refs == 1);
        let others = self.breakpoints.range(start + 1..end).next().is_some();
        if p.spec.trap.is_none() || p.stale || !single_user || others || !self.watch.is_empty() {
            return false;
        }
        let bytes = p.jump_bytes();
        // No thread may come back into the covered bytes: not its pc, not a pc saved in a
        // signal frame or a return address on its stack, and not through the placed code
        // of a removed patch it may still be in, which leads back into them.
        if self.may_return_into(start, end) || self.retired_code_lands_in(start, end) {
            tracing::debug!(
                site,
                "a thread may return into the bytes a jump would cover"
            );
            return false;
        }
        if let Err(e) = self.write_raw(site, &bytes) {
            tracing::warn!(site, "placing a jump patch failed: {e}");
            return false;
        }
        if let Some(p) = self.patches.get_mut(&site) {
            p.active = true;
        }
        tracing::debug!(site, end, "jump patch in place");
        true
    }

    /// Whether the placed code of a removed patch that some thread may still run (its pc
    /// or a word of its stack lies in it) leads back strictly inside `start..end`: a
    /// jump covering those bytes would make that thread land in the middle of it
    /// (SIGILL, or SIGSEGV at a wild address). Removed patches no thread can reach any
    /// more are forgotten: nothing jumps into their code.
    fn retired_code_lands_in(&mut self, start: u64, end: u64) -> bool {
        let mut i = 0;
        while i < self.retired.len() {
            let r = self.retired[i];
            if !r.lands.iter().any(|a| start < *a && *a < end) {
                i += 1;
                continue;
            }
            if self.may_return_into(r.code.0.saturating_sub(1), r.code.1) {
                tracing::debug!(
                    start,
                    "a removed patch's placed code a thread may still run leads into a jump's bytes"
                );
                return true;
            }
            self.retired.swap_remove(i);
        }
        false
    }

    /// Takes a patch's jump out: the original bytes, and the int3s of every breakpoint
    /// inside them.
    pub(super) fn deactivate_patch(&mut self, site: u64) {
        let Some(p) = self.patches.get_mut(&site) else {
            return;
        };
        if !p.active {
            return;
        }
        p.active = false;
        let (start, end, saved) = (p.site(), p.end(), p.saved.clone());
        tracing::debug!(site, end, "jump patch out");
        if let Err(e) = self.write_raw(start, &saved) {
            tracing::warn!(site, "restoring under a jump patch failed: {e}");
        }
        let inside: Vec<u64> = self
            .breakpoints
            .range(start..end)
            .map(|(a, _)| *a)
            .collect();
        for a in inside {
            let _ = self.write_raw(a, &[INT3]);
        }
    }

    /// The patch whose bytes contain `addr`.
    pub(super) fn patch_covering(&self, addr: u64) -> Option<u64> {
        self.patches
            .range(..=addr)
            .next_back()
            .filter(|(_, p)| addr < p.end())
            .map(|(s, _)| *s)
    }

    /// An active patch whose bytes strictly contain `pc` (past the site).
    pub(super) fn active_patch_inside(&self, pc: u64) -> Option<u64> {
        self.patch_covering(pc)
            .filter(|s| *s != pc && self.patches.get(s).is_some_and(|p| p.active))
    }

    /// The site whose placed code's trap is at `addr`.
    pub(super) fn patch_of_trap(&self, addr: u64) -> Option<u64> {
        self.patches
            .values()
            .find(|p| p.spec.trap == Some(RuntimeAddr(addr)))
            .map(|p| p.site())
    }

    /// Patches bytes a write covers go back to int3s for good.
    pub(super) fn patches_before_write(&mut self, start: u64, end: u64) {
        let hit: Vec<u64> = self
            .patches
            .values()
            .filter(|p| p.overlaps(start, end))
            .map(|p| p.site())
            .collect();
        for site in hit {
            self.deactivate_patch(site);
            if let Some(p) = self.patches.get_mut(&site) {
                p.stale = true;
            }
        }
    }

    /// The memory tandem mapped into the debuggee for placed code, as (start, end)
    /// address ranges: not the program's, so a core file of it leaves them out.
    pub fn placed_code_regions(&self) -> Vec<(RuntimeAddr, RuntimeAddr)> {
        self.regions
            .iter()
            .map(|r| {
                let (start, end) = r.span();
                (RuntimeAddr(start), RuntimeAddr(end))
            })
            .collect()
    }

    /// Shows original bytes under active patches.
    pub(super) fn overlay_patches(&self, addr: u64, buf: &mut [u8]) {
        let end = addr + buf.len() as u64;
        // Patches never overlap: the last one starting before `addr`, then those
        // starting inside the range (a read must not walk every patch).
        let before = self.patches.range(..addr).next_back();
        for (_, p) in before
            .into_iter()
            .chain(self.patches.range(addr..end))
            .filter(|(_, p)| p.active && p.overlaps(addr, end))
        {
            for (i, b) in p.saved.iter().enumerate() {
                let a = p.site() + i as u64;
                if (addr..end).contains(&a) {
                    buf[(a - addr) as usize] = *b;
                }
            }
        }
    }

    /// Before a stopped thread runs on: one that sits on a patched site after reporting
    /// its hit runs the displaced instructions' copy (the condition held once already;
    /// with the int3 in place, this replaces stepping over it); one inside an active
    /// patch's covered bytes (stepped there) runs the rest of the copy.
    pub(super) fn leave_patch_sites(&mut self) {
        if self.patches.is_empty() {
            return;
        }
        let tids: Vec<Tid> = self.threads.keys().copied().collect();
        for tid in tids {
            self.leave_patch_site(tid, true);
        }
    }

    /// [`Tracer::leave_patch_sites`] for one thread; without `at_hits`, only a thread
    /// strictly inside the bytes of an active jump moves (before a thread is resumed
    /// alone: none may run from there).
    pub(super) fn leave_patch_site(&mut self, tid: Tid, at_hits: bool) {
        let Some(t) = self.threads.get(&tid) else {
            return;
        };
        if t.running || t.new {
            return;
        }
        let Some(mut regs) = t.regs.or_else(|| sys::get_regs(tid).ok()) else {
            return;
        };
        let pc = regs.rip;
        // At a site after its hit, jump in place or int3, the copy runs the site's
        // instructions (unless a write made it stale).
        let target = match self.patches.get(&pc) {
            Some(p) if at_hits && !p.stale && t.at_bp == Some(pc) => p.copy_of(pc),
            _ => self
                .active_patch_inside(pc)
                .and_then(|s| self.patches.get(&s))
                .and_then(|p| p.copy_of(pc)),
        };
        let Some(target) = target else { return };
        tracing::debug!(
            tid = tid.0,
            pc,
            target,
            "leaving a patch site through its copy"
        );
        regs.rip = target;
        if sys::set_regs(tid, &regs).is_ok() {
            if let Some(t) = self.threads.get_mut(&tid) {
                t.regs = Some(regs);
                t.at_bp = None;
            }
        }
    }

    /// Moves every stopped thread out of placed code: a copy of a displaced instruction
    /// maps back to the original; elsewhere the thread is stepped until it reaches a copy
    /// (condition false) or the trap (condition true: a hit, reported later like any
    /// collected stop).
    pub(super) fn evacuate_patches(&mut self) {
        if self.patches.is_empty() {
            return;
        }
        let tids: Vec<Tid> = self.threads.keys().copied().collect();
        for tid in tids {
            if let Err(e) = self.evacuate_thread(tid) {
                tracing::warn!(tid = tid.0, "moving a thread out of placed code: {e}");
            }
        }
    }

    fn evacuate_thread(&mut self, tid: Tid) -> Result<()> {
        let Some(t) = self.threads.get(&tid) else {
            return Ok(());
        };
        if t.running || t.new {
            return Ok(());
        }
        let mut regs = match t.regs {
            Some(r) => r,
            None => sys::get_regs(tid).map_err(|e| Error::ptrace("PTRACE_GETREGS", tid, e))?,
        };
        // Just past the trap, not stepped there: its SIGTRAP is still pending and
        // reports the hit when the thread runs on.
        let Some(site) = self
            .patches
            .values()
            .find(|p| p.in_code(regs.rip) && !p.past_trap(regs.rip))
            .map(|p| p.site())
        else {
            return Ok(());
        };
        tracing::debug!(
            tid = tid.0,
            pc = regs.rip,
            "moving a thread out of placed code"
        );
        for _ in 0..MAX_EVACUATION_STEPS {
            let Some(p) = self.patches.get(&site) else {
                return Ok(());
            };
            let pc = regs.rip;
            // Stepping may leave the trap flag visible in the registers read back;
            // writing it would make it the program's own.
            regs.eflags &= !TRAP_FLAG;
            if p.past_trap(pc) {
                tracing::debug!(tid = tid.0, pc, site, "evacuated: past the trap, a hit");
                regs.rip = site;
                sys::set_regs(tid, &regs).map_err(|e| Error::ptrace("PTRACE_SETREGS", tid, e))?;
                if let Some(t) = self.threads.get_mut(&tid) {
                    t.regs = Some(regs);
                    t.at_bp = Some(site);
                }
                self.deferred.push_back((
                    tid,
                    StopReason::Breakpoint {
                        addr: RuntimeAddr(site),
                    },
                ));
                return Ok(());
            }
            if p.in_copies(pc) {
                if let Some(original) = p.original_of(pc) {
                    tracing::debug!(
                        tid = tid.0,
                        pc,
                        original,
                        site,
                        "evacuated: copy to original"
                    );
                    regs.rip = original;
                    sys::set_regs(tid, &regs)
                        .map_err(|e| Error::ptrace("PTRACE_SETREGS", tid, e))?;
                    if let Some(t) = self.threads.get_mut(&tid) {
                        t.regs = Some(regs);
                        // At the site the condition was just found false: running on
                        // goes through the copy, not through the condition again.
                        t.at_bp = (original == site).then_some(site);
                    }
                    return Ok(());
                }
            }
            if !p.in_code(pc) {
                tracing::debug!(tid = tid.0, pc, site, "evacuated: stepped out");
                if let Some(t) = self.threads.get_mut(&tid) {
                    t.regs = Some(regs);
                }
                self.clear_trap_flag(tid);
                return Ok(());
            }
            let mut op = [0u8; 1];
            let pushes_flags = self.read_raw(pc, &mut op).is_ok() && op[0] == PUSHFQ;
            let w = step_and_wait(tid, 0)?;
            match sys::decode(w.status) {
                // The step's trap, or a signal that came first: it is delivered when the
                // thread resumes, never overwriting one already waiting.
                Status::Stopped(libc::SIGTRAP, 0) => {}
                Status::Stopped(sig, 0) => self.keep_signal(tid, sig),
                Status::Stopped(..) | Status::Other => {
                    // An event stop (a job-control stop, an interrupt) can be reported
                    // before the step's own trap: the instruction ran and its SIGTRAP is
                    // still pending. Take it now (a step dequeues it before running
                    // anything), or it would surface later as a step nobody asked for.
                    if procfs::thread_has_pending_sigtrap(self.pid, tid) {
                        let w = step_and_wait(tid, 0)?;
                        match sys::decode(w.status) {
                            Status::Stopped(libc::SIGTRAP, 0) => {}
                            Status::Stopped(sig, 0) => self.keep_signal(tid, sig),
                            Status::Exited(_) | Status::Signaled(..) => {
                                stash_push(w);
                                return Ok(());
                            }
                            Status::Stopped(..) | Status::Other => {}
                        }
                    }
                }
                Status::Exited(_) | Status::Signaled(..) => {
                    stash_push(w);
                    return Ok(());
                }
            }
            let after = sys::get_regs(tid).map_err(|e| Error::ptrace("PTRACE_GETREGS", tid, e))?;
            // pushfq under single-step saved the trap flag the step set: the popfq after
            // the condition would leave the thread stepping for good. Clear it in the
            // saved image, whichever stop followed the step.
            if pushes_flags && after.rip == pc + 1 {
                let mut saved = [0u8; 8];
                if self.read_raw(after.rsp, &mut saved).is_ok() {
                    let flags = u64::from_le_bytes(saved) & !TRAP_FLAG;
                    self.write_raw(after.rsp, &flags.to_le_bytes())?;
                }
            }
            regs = after;
        }
        Err(Error::Placement(
            "a thread did not leave placed code".into(),
        ))
    }

    /// (trap, site) of every patch.
    pub(super) fn patch_traps(&self) -> Vec<(u64, u64)> {
        self.patches
            .values()
            .filter_map(|p| Some((p.spec.trap?.0, p.site())))
            .collect()
    }

    /// What every breakpoint the shown process has and every active patch covers, as
    /// the original bytes.
    pub(super) fn original_bytes(&self) -> Vec<(u64, Vec<u8>)> {
        let mut out: Vec<(u64, Vec<u8>)> = self
            .breakpoints
            .iter()
            .filter(|(a, _)| !self.absent.contains(a))
            .map(|(a, b)| (*a, vec![b.saved]))
            .collect();
        out.extend(
            self.patches
                .values()
                .filter(|p| p.active)
                .map(|p| (p.site(), p.saved.clone())),
        );
        out
    }

    /// A single-step the kernel did not finish (a stop came first) over an instruction
    /// that sets the flags leaves the trap flag as the program's own: drop it, or the
    /// thread traps after every instruction (and dies of SIGTRAP once detached).
    pub(super) fn clear_trap_flag(&mut self, tid: Tid) {
        let Ok(mut regs) = sys::get_regs(tid) else {
            return;
        };
        if regs.eflags & TRAP_FLAG != 0 {
            tracing::debug!(tid = tid.0, pc = regs.rip, "clearing a leftover trap flag");
            regs.eflags &= !TRAP_FLAG;
            if sys::set_regs(tid, &regs).is_ok() {
                if let Some(t) = self.threads.get_mut(&tid) {
                    t.regs = Some(regs);
                }
            }
        }
    }

    /// Forgets the patch at `site` (its jump already out): a thread that still reaches its
    /// placed code — which stays where it is — and traps there goes back to the site.
    pub(super) fn retire_patch(&mut self, site: u64) {
        if let Some(p) = self.patches.remove(&site) {
            let start = p.spec.code_addr.0;
            tracing::debug!(site, code = start, "patch retired");
            self.retired.push(Retired {
                code: (start, start + p.spec.code.len() as u64),
                lands: [p.site(), p.end()],
            });
            if let Some(trap) = p.spec.trap {
                self.retire_trap(trap.0, site);
            }
        }
    }

    /// Removes every patch's jump (before a detach, exec or kill).
    pub(super) fn remove_all_patches(&mut self) {
        let sites: Vec<u64> = self.patches.keys().copied().collect();
        for site in sites {
            self.deactivate_patch(site);
            self.retire_patch(site);
        }
    }

    /// Unmaps every region of placed code (before a detach: nothing is left behind).
    pub(super) fn unmap_regions(&mut self) {
        let regions = std::mem::take(&mut self.regions);
        // A region some thread may still return into stays: unmapping it would crash the
        // program later, leaving it costs 64 KiB.
        let in_use = self.regions_in_use(&regions);
        let regions: Vec<Region> = regions
            .into_iter()
            .zip(in_use)
            .filter_map(|(r, used)| {
                if used {
                    tracing::info!(start = r.start, "placed code still in use stays mapped");
                }
                (!used).then_some(r)
            })
            .collect();
        let Some(at) = self.breakpoints.keys().next().copied().or_else(|| {
            let tid = self.injection_thread()?;
            self.threads.get(&tid)?.regs.map(|r| r.rip)
        }) else {
            return;
        };
        for r in regions {
            if let Err(e) = self.inject_syscall(at, SYS_MUNMAP, [r.start, r.len, 0, 0, 0, 0]) {
                tracing::warn!("unmapping placed code: {e}");
            }
        }
    }

    /// Maps `len` bytes read+execute near `near`: the first free gap below a mapping,
    /// nearest to `near`, that leaves a guard page (never right above the heap).
    fn map_region(&mut self, near: u64, len: u64) -> Result<u64> {
        let maps = procfs::read_maps(self.pid)?;
        let mut candidates: Vec<u64> = Vec::new();
        for (i, m) in maps.iter().enumerate() {
            let Some(at) = m.start.0.checked_sub(len + 4096) else {
                continue;
            };
            let below = if i == 0 {
                0x10_0000
            } else {
                maps[i - 1].end.0 + 4096
            };
            if at >= below
                && near.abs_diff(at) < MAX_DISTANCE
                && near.abs_diff(at + len) < MAX_DISTANCE
            {
                candidates.push(at & !0xfff);
            }
        }
        candidates.sort_by_key(|a| a.abs_diff(near));
        const PROT_READ_EXEC: u64 = (libc::PROT_READ | libc::PROT_EXEC) as u64;
        let flags = (libc::MAP_PRIVATE | libc::MAP_ANONYMOUS) as u64 | MAP_FIXED_NOREPLACE;
        for at in candidates.into_iter().take(8) {
            let r = self.inject_syscall(
                near,
                SYS_MMAP,
                [at, len, PROT_READ_EXEC, flags, u64::MAX, 0],
            )?;
            if r == at {
                return Ok(at);
            }
            if (r as i64) >= 0 {
                // An old kernel that took the flag for a hint: give it back.
                let _ = self.inject_syscall(near, SYS_MUNMAP, [r, len, 0, 0, 0, 0]);
            }
        }
        Err(Error::Placement(
            "no free address range near the code".into(),
        ))
    }

    /// A stopped thread that can run an injected system call: the main thread when it
    /// can. Not one stopped at an event inside a system call of its own (the main
    /// thread of a program creating threads is often stopped in `clone`): that call's
    /// return would overwrite the injected call's number as the thread left the kernel,
    /// the injected call would not run, and restoring the registers afterwards would
    /// make the program's own call fail (`pthread_create` returned ENOSYS, or the new
    /// thread ran on a stack the program then freed).
    pub(super) fn injection_thread(&self) -> Option<Tid> {
        self.injection_thread_where(|t| t.call_event == 0)
    }

    fn injection_thread_where(&self, ok: impl Fn(&Thread) -> bool) -> Option<Tid> {
        let leader = Tid(self.pid.0);
        let usable = |t: &Thread| !t.running && !t.new && !t.group_stop && !t.listening && ok(t);
        if self.threads.get(&leader).is_some_and(usable) {
            return Some(leader);
        }
        self.threads
            .iter()
            .find(|(_, t)| usable(t))
            .map(|(tid, _)| *tid)
    }

    /// [`Tracer::injection_thread`], or else (every stopped thread is inside a call
    /// of its own, as a program whose only other threads are still being created) a
    /// thread whose call returns at once, stepped out of it first: its call completes
    /// as it would have, and it stops before running any instruction of its own. Not
    /// while recording, whose log must see every call's exit stop.
    fn ready_injection_thread(&mut self) -> Result<Tid> {
        if let Some(tid) = self.injection_thread() {
            return Ok(tid);
        }
        let returns_at_once = |t: &Thread| {
            matches!(
                t.call_event,
                libc::PTRACE_EVENT_CLONE | libc::PTRACE_EVENT_FORK | libc::PTRACE_EVENT_VFORK_DONE
            )
        };
        let tid = self
            .injection_thread_where(returns_at_once)
            .filter(|_| self.rec.is_none())
            .ok_or_else(|| Error::Placement("no stopped thread to run a system call".into()))?;
        tracing::debug!(tid = tid.0, "stepping a thread out of its system call");
        for _ in 0..16 {
            let w = step_and_wait(tid, 0)?;
            match sys::decode(w.status) {
                Status::Stopped(libc::SIGTRAP, 0) => {
                    if let Some(t) = self.threads.get_mut(&tid) {
                        t.call_event = 0;
                        t.regs = None;
                    }
                    return Ok(tid);
                }
                // A signal that came first is delivered when the thread resumes.
                Status::Stopped(sig, 0) => self.keep_signal(tid, sig),
                Status::Stopped(..) | Status::Other => {}
                Status::Exited(_) | Status::Signaled(..) => {
                    stash_push(w);
                    return Err(Error::Exited);
                }
            }
        }
        Err(Error::Placement(
            "a thread did not leave its system call".into(),
        ))
    }

    /// Runs one system call in the debuggee: a stopped thread executes a `syscall`
    /// written over `at` for one step; its registers and the bytes come back after.
    pub(super) fn inject_syscall(&mut self, at: u64, nr: u64, args: [u64; 6]) -> Result<u64> {
        let tid = self.ready_injection_thread()?;
        self.inject_syscall_on(tid, at, nr, args, &mut |_, _| {})
    }

    /// [`Tracer::inject_syscall`] on thread `tid`; `on_event` sees each ptrace event
    /// stop the call makes, with its message (a clone's `PTRACE_EVENT_CLONE` and the
    /// new pid).
    pub(super) fn inject_syscall_on(
        &mut self,
        tid: Tid,
        at: u64,
        nr: u64,
        args: [u64; 6],
        on_event: &mut dyn FnMut(i32, u64),
    ) -> Result<u64> {
        let saved = sys::get_regs(tid).map_err(|e| Error::ptrace("PTRACE_GETREGS", tid, e))?;
        // With syscall user dispatch on (the recorder's buffer), only the handler's own
        // `syscall` runs without a SIGSYS: the call is made there, nothing is written.
        let dispatched = self
            .threads
            .get(&tid)
            .filter(|t| t.sud)
            .map(|t| t.sud_trusted);
        let at = dispatched.unwrap_or(at);
        let mut text = [0u8; 2];
        if self.read_raw(at, &mut text)? < 2 {
            return Err(Error::Placement("no code to run a system call at".into()));
        }
        let mut regs = saved;
        regs.rip = at;
        regs.rax = nr;
        // No syscall restart may apply to the injected call.
        regs.orig_rax = u64::MAX;
        [regs.rdi, regs.rsi, regs.rdx, regs.r10, regs.r8, regs.r9] = args;
        self.write_raw(at, &[0x0f, 0x05])?;
        let result = (|| {
            sys::set_regs(tid, &regs).map_err(|e| Error::ptrace("PTRACE_SETREGS", tid, e))?;
            for _ in 0..16 {
                let w = step_and_wait(tid, 0)?;
                match sys::decode(w.status) {
                    // An event stop comes before the call returns: the step's own trap
                    // follows.
                    Status::Stopped(libc::SIGTRAP, event) if event != 0 => {
                        on_event(event, sys::event_msg(tid).unwrap_or(0));
                    }
                    Status::Stopped(libc::SIGTRAP, 0) => {
                        let after = sys::get_regs(tid)
                            .map_err(|e| Error::ptrace("PTRACE_GETREGS", tid, e))?;
                        if after.rip == at + 2 {
                            return Ok(after.rax);
                        }
                    }
                    Status::Stopped(sig, 0) => self.keep_signal(tid, sig),
                    Status::Stopped(..) | Status::Other => {}
                    Status::Exited(_) | Status::Signaled(..) => {
                        stash_push(w);
                        return Err(Error::Exited);
                    }
                }
            }
            Err(Error::Placement(
                "the injected system call did not complete".into(),
            ))
        })();
        let _ = self.write_raw(at, &text);
        let _ = sys::set_regs(tid, &saved);
        if let Some(t) = self.threads.get_mut(&tid) {
            t.regs = Some(saved);
        }
        result
    }
}
