//! Registers: general, floating-point and debug registers of a stopped thread; hardware watchpoints for every thread.

use super::*;

impl Tracer {
    pub(super) fn thread(&self, tid: Tid) -> Result<&Thread> {
        self.threads.get(&tid).ok_or(Error::UnknownThread(tid))
    }

    /// The general registers of a stopped thread (cached until it runs again).
    pub fn regs(&mut self, tid: Tid) -> Result<Registers> {
        let t = self.thread(tid)?;
        if t.running {
            return Err(Error::Running);
        }
        if let Some(r) = t.regs {
            return Ok(Registers(r));
        }
        let r = sys::get_regs(tid).map_err(|e| Error::ptrace("PTRACE_GETREGS", tid, e))?;
        if let Some(t) = self.threads.get_mut(&tid) {
            t.regs = Some(r);
        }
        Ok(Registers(r))
    }

    /// The thread pointer (`fs_base`) of a stopped thread: where its thread-local storage
    /// is found.
    pub fn thread_pointer(&self, tid: Tid) -> Result<u64> {
        let t = self.thread(tid)?;
        if t.running {
            return Err(Error::Running);
        }
        if let Some(r) = t.regs {
            return Ok(r.fs_base);
        }
        sys::get_regs(tid)
            .map(|r| r.fs_base)
            .map_err(|e| Error::ptrace("PTRACE_GETREGS", tid, e))
    }

    /// Writes the general registers of a stopped thread.
    pub fn set_regs(&mut self, tid: Tid, regs: &Registers) -> Result<()> {
        if self.thread(tid)?.running {
            return Err(Error::Running);
        }
        sys::set_regs(tid, &regs.0).map_err(|e| Error::ptrace("PTRACE_SETREGS", tid, e))?;
        if let Some(t) = self.threads.get_mut(&tid) {
            t.regs = Some(regs.0);
        }
        Ok(())
    }

    /// The x87/SSE registers of a stopped thread.
    pub fn fp_regs(&self, tid: Tid) -> Result<FpRegisters> {
        if self.thread(tid)?.running {
            return Err(Error::Running);
        }
        sys::get_fpregs(tid)
            .map(FpRegisters)
            .map_err(|e| Error::ptrace("PTRACE_GETFPREGS", tid, e))
    }

    /// The XSAVE area of a stopped thread (PTRACE_GETREGSET NT_X86_XSTATE: x87, SSE, AVX
    /// and whatever else the CPU saves, with XCR0 in the software-reserved bytes), as a
    /// core file's NT_X86_XSTATE note holds it.
    pub fn xstate(&self, tid: Tid) -> Result<Vec<u8>> {
        const NT_X86_XSTATE: u32 = 0x202;
        if self.thread(tid)?.running {
            return Err(Error::Running);
        }
        // Large enough for AVX-512 and AMX state.
        let mut buf = vec![0u8; 16 * 1024];
        let n = sys::get_regset(tid, NT_X86_XSTATE, &mut buf)
            .map_err(|e| Error::ptrace("PTRACE_GETREGSET", tid, e))?;
        buf.truncate(n);
        Ok(buf)
    }

    /// Writes the x87/SSE registers of a stopped thread.
    pub fn set_fp_regs(&self, tid: Tid, regs: &FpRegisters) -> Result<()> {
        if self.thread(tid)?.running {
            return Err(Error::Running);
        }
        sys::set_fpregs(tid, &regs.0).map_err(|e| Error::ptrace("PTRACE_SETFPREGS", tid, e))
    }

    /// Debug register `n` (DR0–DR3 addresses, DR6 status, DR7 control).
    pub fn debug_reg(&self, tid: Tid, n: usize) -> Result<u64> {
        if n > 7 || n == 4 || n == 5 {
            return Err(Error::InvalidDebugRegister(n));
        }
        self.thread(tid)?;
        sys::peek_debugreg(tid, n).map_err(|e| Error::ptrace("PTRACE_PEEKUSER", tid, e))
    }

    /// Programs the hardware slots (DR0–DR3, DR7) on every thread, and remembers them
    /// for threads created later, which get them at their first stop. Every thread
    /// must be stopped. When a thread refuses the set, the previous set is restored
    /// everywhere and the error returned.
    pub fn set_watchpoints(&mut self, regs: &DebugRegisters) -> Result<()> {
        self.require_stopped()?;
        if let Some(problem) = regs.slots.iter().flatten().find_map(|s| s.problem()) {
            return Err(Error::InvalidWatchpoint(problem));
        }
        self.debugregs_used = true;
        let tids = self.threads();
        for (i, &tid) in tids.iter().enumerate() {
            match write_debug_regs(tid, regs) {
                Ok(()) => {}
                // The thread exited meanwhile; wait reports it.
                Err(Errno::ESRCH) => {}
                Err(e) => {
                    let previous = self.watch;
                    for &done in &tids[..=i] {
                        let _ = write_debug_regs(done, &previous);
                    }
                    return Err(Error::ptrace("PTRACE_POKEUSER", tid, e));
                }
            }
        }
        self.watch = *regs;
        // Placed code reads variables: with watchpoints armed those reads would
        // trigger them, which the int3 path's reads through ptrace never do.
        let sites: Vec<u64> = self.patches.keys().copied().collect();
        for site in sites {
            if self.watch.is_empty() {
                self.activate_patch(site);
            } else {
                self.deactivate_patch(site);
            }
        }
        Ok(())
    }

    /// The hardware slots set with [`Tracer::set_watchpoints`].
    pub fn watchpoints(&self) -> &DebugRegisters {
        &self.watch
    }

    /// Writes debug register `n`; every DR7 change is undone on detach.
    pub fn set_debug_reg(&mut self, tid: Tid, n: usize, value: u64) -> Result<()> {
        if n > 7 || n == 4 || n == 5 {
            return Err(Error::InvalidDebugRegister(n));
        }
        self.thread(tid)?;
        self.debugregs_used = true;
        sys::poke_debugreg(tid, n, value).map_err(|e| Error::ptrace("PTRACE_POKEUSER", tid, e))
    }
}
