//! Breakpoints: int3s reference-counted per address.

use super::*;

impl Tracer {
    /// Inserts an int3 at `addr`, or counts one more user of an existing one.
    pub fn insert_breakpoint(&mut self, addr: RuntimeAddr) -> Result<()> {
        if self.shares_parent_memory {
            return Err(Error::SharedMemory);
        }
        if self.is_running() {
            return self.edit_text(|t| t.insert_breakpoint(addr))?;
        }
        self.insert_breakpoint_here(addr)
    }

    /// [`Tracer::insert_breakpoint`] with every thread known to be stopped (a replay's
    /// one thread at a system-call stop, while the phase still says running).
    pub(super) fn insert_breakpoint_here(&mut self, addr: RuntimeAddr) -> Result<()> {
        // Another user of a patched site, or an int3 inside its bytes: every hit must
        // trap again.
        if let Some(site) = self.patch_covering(addr.0) {
            self.deactivate_patch(site);
        }
        if let Some(bp) = self.breakpoints.get_mut(&addr.0) {
            bp.refs += 1;
            return Ok(());
        }
        if self.is_replaying() {
            return self.insert_in_replay(addr.0);
        }
        let mut b = [0u8; 1];
        self.read_raw(addr.0, &mut b)?;
        self.write_raw(addr.0, &[INT3])?;
        self.breakpoints.insert(
            addr.0,
            Breakpoint {
                saved: b[0],
                refs: 1,
            },
        );
        Ok(())
    }

    /// A new breakpoint while a replay is shown. Its original byte is the live
    /// process's (which gets the int3 when it shows again), else the replay's; the
    /// replay gets the int3 where it has the code mapped, else when it maps it
    /// (`absent.rs`: a library before the replay of its mapping).
    fn insert_in_replay(&mut self, addr: u64) -> Result<()> {
        let mut b = [0u8; 1];
        let saved = match self.live_byte(addr) {
            Some(byte) => byte,
            None => {
                self.read_raw(addr, &mut b)?;
                b[0]
            }
        };
        self.breakpoints.insert(addr, Breakpoint { saved, refs: 1 });
        self.absent.insert(addr);
        self.plant_absent(true);
        Ok(())
    }

    /// Drops one user of the breakpoint at `addr`; the last one restores the byte.
    pub fn remove_breakpoint(&mut self, addr: RuntimeAddr) -> Result<()> {
        if self.is_running() {
            return self.edit_text(|t| t.remove_breakpoint(addr))?;
        }
        self.remove_breakpoint_here(addr)
    }

    /// [`Tracer::remove_breakpoint`] with every thread known to be stopped.
    pub(super) fn remove_breakpoint_here(&mut self, addr: RuntimeAddr) -> Result<()> {
        let bp = self
            .breakpoints
            .get_mut(&addr.0)
            .ok_or(Error::NoBreakpoint(addr))?;
        bp.refs -= 1;
        if bp.refs > 0 {
            if bp.refs == 1 {
                self.activate_patch(addr.0);
            }
            return Ok(());
        }
        let saved = bp.saved;
        // Inside a site the system-call buffer patched, what is under the int3 depends
        // on the process shown (a replay from before the patch).
        let saved = self.sysbuf_byte_under(addr.0).unwrap_or(saved);
        // No trap comes back there: the marks of hits a signal interrupted go too (until
        // the end of the edit, which may set it again).
        for (tid, t) in self.threads.iter_mut() {
            for sp in t.returns.forget_pc(addr.0) {
                if self.editing {
                    self.removed_marks.push((*tid, addr.0, sp));
                }
            }
        }
        self.retire_trap(addr.0, addr.0);
        if let Some(p) = self.patches.get(&addr.0) {
            let active = p.active;
            self.deactivate_patch(addr.0);
            self.retire_patch(addr.0);
            if active {
                self.breakpoints.remove(&addr.0);
                return self.write_raw(addr.0, &[saved]);
            }
        }
        self.breakpoints.remove(&addr.0);
        // An int3 the shown process never got (`absent.rs`) leaves nothing to restore.
        if !self.absent.remove(&addr.0) {
            self.write_raw(addr.0, &[saved])?;
        }
        if let Some(site) = self.patch_covering(addr.0) {
            self.activate_patch(site);
        }
        Ok(())
    }

    /// Addresses with an inserted breakpoint, and how many users each has.
    pub fn breakpoints(&self) -> Vec<(RuntimeAddr, u32)> {
        self.breakpoints
            .iter()
            .map(|(a, b)| (RuntimeAddr(*a), b.refs))
            .collect()
    }
}
