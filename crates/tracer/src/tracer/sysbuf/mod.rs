//! Recording: system calls buffered inside the program, without a ptrace stop.
//!
//! A recorder that stops the program at every system call costs two ptrace stops per
//! call, 80 times a `getppid` on this kind of machine. So, as rr does with its
//! preloaded buffer, most calls are recorded in the program itself:
//!
//! - Syscall user dispatch (`PTRACE_SET_SYSCALL_USER_DISPATCH_CONFIG`) is turned on for
//!   the recorded thread: a `syscall` anywhere but at one instruction of tandem's
//!   handler raises SIGSYS instead of running. The tracer absorbs that SIGSYS, turns
//!   dispatch off for the call, and lets it run as a traced call (entry and exit stops,
//!   recorded as always), then turns dispatch on again.
//! - The first time a call that can be buffered SIGSYSes at a site, the site is patched
//!   (`jmp` to a thunk, the displaced instructions moved into it) and the call goes
//!   through the handler instead: it runs at the handler's one `syscall` dispatch lets
//!   through, and its number, first argument, result and the bytes it wrote are
//!   appended to a buffer in the program's memory. No stop.
//! - At every event of the log the tracer drains the buffer: the calls made since the
//!   last event are kept with the event, as are the patches made meanwhile.
//! - A replay gives the handler those calls back: entering each interval between two
//!   events it writes the interval's patches and records into its process, the handler
//!   runs in replay mode (the next record checked against the call, its result and
//!   bytes given, nothing run), and a call with no record left is made as a traced call
//!   (the recording made it so).
//!
//! Dispatch is neither inherited by forks (snapshots, replays) nor by new threads, and
//! the tracer turns it off whenever it lets go: a program is never left with it. Only
//! a single-threaded program buffers; when a second thread appears the handler is
//! switched off and every call is traced as before.

mod code;

use super::*;
use code::END;
use code::{
    BUF_LEN, CALLS_PER_INTERVAL, CODE_LEN, DATA, FORCE, HANDLER, LIMIT, MODE, MODE_OFF,
    MODE_RECORD, MODE_REPLAY, POS, RECORD_HEADER, THUNKS,
};

/// The event of a flush of the buffer (no system call: the handler's trap).
pub(super) const FLUSH_EVENT: u64 = 1 << 34;
/// The most bytes of records a replay gives the handler at once.
pub(super) const BATCH_MAX: usize = (code::CAPACITY as usize) / 2;
const SYS_MMAP: u64 = 9;
const SYS_MUNMAP: u64 = 11;
/// `si_code` of a SIGSYS raised by syscall user dispatch.
const SYS_USER_DISPATCH: i32 = 2;
/// Whole thunks end at least this far before the end of the code mapping.
const THUNK_MAX: u64 = 256;

/// The buffer's mappings and patches in one debuggee (live, and the same addresses in
/// every snapshot and replay).
#[derive(Debug)]
pub(super) struct SysBuf {
    code: u64,
    buf: u64,
    handler: u64,
    trusted: u64,
    untrusted: u64,
    diverge: u64,
    flush: u64,
    traced_path: u64,
    next_thunk: u64,
    /// Each site tried: its original bytes and its jump when patched, `None` when
    /// refused.
    sites: BTreeMap<u64, Option<Patched>>,
    /// Each thunk's return address from the handler, and the site it stands for.
    returns: BTreeMap<u64, u64>,
    /// Code written since the last event (thunks, then their sites).
    pending: Vec<(u64, Vec<u8>)>,
    /// The handler runs in record mode in the live process.
    pub(super) recording: bool,
    /// The next call is to be traced ([`Tracer::sysbuf_force`]).
    forced: bool,
}

/// A patched site: its original bytes and the jump written over them.
type Patched = (Vec<u8>, Vec<u8>);

/// What one interval between two events holds: the calls buffered in it (the buffer's
/// bytes) and the code written in it.
#[derive(Clone, Debug, Default)]
pub(super) struct Interval {
    pub calls: Vec<u8>,
    pub code: Vec<(u64, Vec<u8>)>,
}

impl Interval {
    pub(super) fn is_empty(&self) -> bool {
        self.calls.is_empty() && self.code.is_empty()
    }

    /// How many calls it buffered.
    pub(super) fn count(&self) -> u64 {
        let (mut n, mut at) = (0, 0usize);
        let h = RECORD_HEADER as usize;
        while let Some(len) = self.calls.get(at + 4..at + 8) {
            let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
            at += (h + len + 7) & !7;
            n += 1;
        }
        n
    }
}

/// The buffer's header: mode, position, end of the records given (replay), the most
/// calls an interval buffers, how many it has, and whether the next is traced.
fn header(mode: u32, pos: u64, end: u64) -> [u8; 48] {
    let mut h = [0u8; 48];
    h[..4].copy_from_slice(&mode.to_le_bytes());
    h[POS as usize..POS as usize + 8].copy_from_slice(&pos.to_le_bytes());
    h[END as usize..END as usize + 8].copy_from_slice(&end.to_le_bytes());
    h[LIMIT as usize..LIMIT as usize + 8].copy_from_slice(&CALLS_PER_INTERVAL.to_le_bytes());
    h
}

impl Tracer {
    /// Starts the buffer in the recorded process, stopped at its first system-call
    /// boundary (before the first snapshot, so every snapshot has the handler): maps
    /// the code and the buffer, writes the handler, makes the vDSO's time functions
    /// calls to it and turns syscall user dispatch on. Without kernel support (before
    /// Linux 6.4) nothing is done and every call is traced.
    pub(super) fn sysbuf_start(&mut self) -> Result<()> {
        if self.threads.len() != 1
            || self.sysbuf_refused
            || std::env::var_os("TANDEM_SYSCALL_BUFFER").is_some_and(|v| v == "0")
        {
            return Ok(());
        }
        let tid = Tid(self.pid.0);
        if let Err(e) = sys::set_syscall_dispatch(tid, None) {
            tracing::info!("no syscall user dispatch ({e}): every system call is traced");
            return Ok(());
        }
        let at = self
            .threads
            .get(&tid)
            .and_then(|t| t.regs)
            .map(|r| r.rip)
            .or_else(|| sys::get_regs(tid).ok().map(|r| r.rip))
            .ok_or(Error::Exited)?;
        let prot_rw = (libc::PROT_READ | libc::PROT_WRITE) as u64;
        let prot_rx = (libc::PROT_READ | libc::PROT_EXEC) as u64;
        let flags = (libc::MAP_PRIVATE | libc::MAP_ANONYMOUS) as u64;
        let buf = self.inject_syscall(at, SYS_MMAP, [0, BUF_LEN, prot_rw, flags, u64::MAX, 0])?;
        if (buf as i64) < 0 {
            return Err(Error::Placement(format!(
                "mapping the system-call buffer failed ({})",
                buf as i64
            )));
        }
        let code = self.inject_syscall(at, SYS_MMAP, [0, CODE_LEN, prot_rx, flags, u64::MAX, 0])?;
        if (code as i64) < 0 {
            let _ = self.inject_syscall(at, SYS_MUNMAP, [buf, BUF_LEN, 0, 0, 0, 0]);
            return Err(Error::Placement(format!(
                "mapping the system-call handler failed ({})",
                code as i64
            )));
        }
        let h = code::handler(code, buf).map_err(Error::Placement)?;
        self.write_raw(code, &code::table())?;
        self.write_raw(code + HANDLER, &h.code)?;
        self.write_raw(buf, &header(MODE_RECORD, 0, 0))?;
        let mut sb = SysBuf {
            code,
            buf,
            handler: code + HANDLER,
            trusted: h.trusted,
            untrusted: h.untrusted,
            diverge: h.diverge,
            flush: h.flush,
            traced_path: h.traced_path,
            next_thunk: code + THUNKS,
            sites: BTreeMap::new(),
            returns: BTreeMap::new(),
            pending: Vec::new(),
            recording: true,
            forced: false,
        };
        let vdso = self.sysbuf_vdso(&mut sb);
        sb.pending.clear();
        sys::set_syscall_dispatch(tid, Some((sb.trusted, 3)))
            .map_err(|e| Error::ptrace("PTRACE_SET_SYSCALL_USER_DISPATCH_CONFIG", tid, e))?;
        if let Some(t) = self.threads.get_mut(&tid) {
            t.sud = true;
            t.sud_trusted = sb.trusted;
        }
        tracing::debug!(code, buf, vdso, "system calls are buffered");
        self.sysbuf = Some(sb);
        Ok(())
    }

    /// The vDSO's time functions (already `mov eax, NR; syscall; ret`, vdso.rs) jump to
    /// thunks that call the handler. Returns how many.
    fn sysbuf_vdso(&mut self, sb: &mut SysBuf) -> usize {
        let Ok(maps) = procfs::read_maps(self.pid) else {
            return 0;
        };
        let Some(m) = maps.iter().find(|m| m.path == "[vdso]") else {
            return 0;
        };
        let mut done = 0;
        for (entry, nr, size) in self.vdso_stubs(m.start.0, m.end.0) {
            if !code::bufferable(u64::from(nr)) || sb.next_thunk + THUNK_MAX > sb.code + CODE_LEN {
                continue;
            }
            let at = sb.next_thunk;
            let Ok((thunk, ret)) = code::vdso_thunk(at, nr, entry + 7, sb.handler) else {
                continue;
            };
            let jump = match code::jump(entry, at, 8) {
                Some(j) => j,
                None if size >= 14 => code::far_jump(at),
                None => continue,
            };
            if self.write_raw(at, &thunk).is_err() || self.write_raw(entry, &jump).is_err() {
                continue;
            }
            sb.next_thunk = (at + thunk.len() as u64 + 15) & !15;
            sb.returns.insert(ret, entry);
            done += 1;
        }
        done
    }

    /// Whether `pc` is in the buffer's code (the handler or a thunk).
    pub(super) fn sysbuf_in_code(&self, pc: u64) -> bool {
        self.sysbuf
            .as_ref()
            .is_some_and(|s| s.code <= pc && pc < s.code + CODE_LEN)
    }

    /// A single-step that ended in the buffer's code goes on: a step over a patched
    /// site is one step, as the `syscall` it replaced was (the handler is never shown,
    /// and a replay, whose handler runs other instructions, makes the same step).
    /// Returns whether the thread was stepped on.
    pub(super) fn sysbuf_step_on(&mut self, tid: Tid) -> bool {
        if self.sysbuf.is_none() {
            return false;
        }
        let Ok(regs) = sys::get_regs(tid) else {
            return false;
        };
        if !self.sysbuf_in_code(regs.rip) {
            if self
                .threads
                .get_mut(&tid)
                .is_some_and(|t| std::mem::take(&mut t.stub_stepped))
            {
                self.clear_trap_flag(tid);
            }
            return false;
        }
        if let Some(t) = self.threads.get_mut(&tid) {
            t.stepping = true;
            t.stub_stepped = true;
            t.regs = Some(regs);
        }
        self.resume_thread(tid);
        true
    }

    /// A SIGSYS stop. Returns `None` when it is not dispatch's (the program's own).
    pub(super) fn sysbuf_sigsys(&mut self, tid: Tid, collecting: bool) -> Result<Option<Outcome>> {
        if !self.threads.get(&tid).is_some_and(|t| t.sud) {
            return Ok(None);
        }
        match sys::siginfo(tid) {
            Ok(info) if info.si_code == SYS_USER_DISPATCH => {}
            _ => return Ok(None),
        }
        let mut regs = sys::get_regs(tid).map_err(|e| Error::ptrace("PTRACE_GETREGS", tid, e))?;
        let nr = regs.orig_rax;
        let site = regs.rip.wrapping_sub(2);
        regs.rax = nr;
        let patched = code::bufferable(nr) && self.sysbuf_patch(site);
        if patched {
            // The call goes through the thunk now.
            regs.rip = site;
        } else {
            // Traced: dispatch off for this call, on again at its exit stop.
            regs.rip = site;
            sys::set_syscall_dispatch(tid, None)
                .map_err(|e| Error::ptrace("PTRACE_SET_SYSCALL_USER_DISPATCH_CONFIG", tid, e))?;
            if let Some(t) = self.threads.get_mut(&tid) {
                t.sud = false;
                t.sud_resume = true;
            }
        }
        sys::set_regs(tid, &regs).map_err(|e| Error::ptrace("PTRACE_SETREGS", tid, e))?;
        if let Some(t) = self.threads.get_mut(&tid) {
            t.regs = Some(regs);
            if patched {
                // A step over the call goes through the thunk, not PTRACE_SYSCALL.
                t.syscall_step = false;
            }
        }
        if !collecting {
            self.resume_thread(tid);
        }
        Ok(Some(Outcome::Absorbed))
    }

    /// Patches the `syscall` at `site` to go through the handler, once per site.
    /// Returns whether it is patched.
    fn sysbuf_patch(&mut self, site: u64) -> bool {
        let Some(sb) = self.sysbuf.as_ref() else {
            return false;
        };
        if !sb.recording {
            return false;
        }
        if let Some(tried) = sb.sites.get(&site) {
            return tried.is_some();
        }
        let (handler, at) = (sb.handler, sb.next_thunk);
        let room = at + THUNK_MAX <= sb.code + CODE_LEN;
        let in_stub = self.sysbuf_in_code(site);
        let mut bytes = [0u8; 32];
        let planned = (|| {
            if !room || in_stub {
                return None;
            }
            let n = self.read_raw(site, &mut bytes).ok()?;
            if n < bytes.len() || bytes[..2] != [0x0f, 0x05] {
                return None;
            }
            let plan = code::plan_site(site, &bytes[2..])?;
            let end = site + plan.len as u64;
            // Never under an int3 or a jump patch of the debugger's.
            if self.breakpoints.range(site..end).next().is_some()
                || self.patch_covering(site).is_some()
                || self.patch_covering(end - 1).is_some()
            {
                return None;
            }
            let (thunk, ret) = code::thunk(at, site, &plan, handler).ok()?;
            let jump = code::jump(site, at, plan.len)?;
            Some((thunk, ret, jump, plan.len))
        })();
        let Some((thunk, ret, jump, len)) = planned else {
            if let Some(sb) = self.sysbuf.as_mut() {
                sb.sites.insert(site, None);
            }
            return false;
        };
        if self.write_raw(at, &thunk).is_err() || self.write_raw(site, &jump).is_err() {
            let _ = self.write_raw(site, &bytes[..len]);
            if let Some(sb) = self.sysbuf.as_mut() {
                sb.sites.insert(site, None);
            }
            return false;
        }
        let Some(sb) = self.sysbuf.as_mut() else {
            return false;
        };
        sb.sites
            .insert(site, Some((bytes[..len].to_vec(), jump.clone())));
        sb.returns.insert(ret, site);
        sb.pending.push((at, thunk.clone()));
        sb.pending.push((site, jump));
        sb.next_thunk = (at + thunk.len() as u64 + 15) & !15;
        tracing::debug!(site, thunk = at, "system call site buffered");
        true
    }

    /// The byte an int3 at `addr` covers when `addr` is inside a patched site: the
    /// jump's in a process the patch is in, the original one in a replay from before
    /// the patch (the site's other bytes tell which). `None` outside every site.
    pub(super) fn sysbuf_byte_under(&self, addr: u64) -> Option<u8> {
        let sb = self.sysbuf.as_ref()?;
        let (site, patched) = sb.sites.range(..=addr).next_back()?;
        let (orig, jump) = patched.as_ref()?;
        let i = usize::try_from(addr - site)
            .ok()
            .filter(|i| *i < orig.len())?;
        let mut now = vec![0u8; orig.len()];
        self.read_raw(*site, &mut now).ok()?;
        let same = |b: &[u8]| (0..b.len()).all(|k| k == i || now[k] == b[k]);
        if same(jump) {
            Some(jump[i])
        } else if same(orig) {
            Some(orig[i])
        } else {
            None
        }
    }

    /// A thread the recorded program created, at its first stop: dispatch on for it
    /// too (a new thread does not inherit it).
    pub(super) fn sysbuf_thread(&mut self, tid: Tid) {
        let Some(trusted) = self
            .sysbuf
            .as_ref()
            .filter(|s| s.recording)
            .map(|s| s.trusted)
        else {
            return;
        };
        match sys::set_syscall_dispatch(tid, Some((trusted, 3))) {
            Ok(()) => {
                if let Some(t) = self.threads.get_mut(&tid) {
                    t.sud = true;
                    t.sud_trusted = trusted;
                }
            }
            Err(e) => {
                // Its calls would escape the log: every call is traced from here on.
                tracing::warn!(tid = tid.0, "syscall user dispatch for a new thread: {e}");
                self.sysbuf_stop();
            }
        }
    }

    /// Recording, a thread about to be preempted (the scheduler gives the processor to
    /// another at an event with its registers): out of the buffer's code first, so
    /// the point is in the program — a replay's handler runs other instructions — and
    /// a call waiting in the handler (a read of a pipe another thread writes) goes
    /// back before its site, to be made again when the thread runs next.
    ///
    /// Returns whether the thread is then at a patched site: its rcx and r11 are the
    /// handler's there, not the program's (dead before a `syscall`), so the point is
    /// told by the other registers.
    pub(super) fn sysbuf_before_preempt(&mut self, tid: Tid) -> bool {
        if self.sysbuf.is_none() {
            return false;
        }
        self.sysbuf_leave(tid);
        let Ok(pc) = sys::get_regs(tid).map(|r| r.rip) else {
            return false;
        };
        self.sysbuf.as_ref().is_some_and(|s| {
            matches!(s.sites.get(&pc), Some(Some(_))) || s.returns.values().any(|v| *v == pc)
        })
    }

    /// A replay at a preemption's candidate point: whether every call the interval
    /// buffered was made (the recording preempted the thread after them all), which
    /// tells a pass of a loop from the recorded one when registers alone cannot.
    pub(super) fn sysbuf_consumed(&self) -> bool {
        self.sysbuf_unconsumed().is_none()
    }

    /// After a traced call's exit stop: dispatch goes back on for the thread.
    pub(super) fn sysbuf_after_exit(&mut self, tid: Tid) {
        let on = self.sysbuf.as_ref().is_some_and(|s| s.recording) && self.rec.is_some();
        let Some(t) = self.threads.get_mut(&tid) else {
            return;
        };
        if !std::mem::take(&mut t.sud_resume) || !on {
            return;
        }
        let trusted = self.sysbuf.as_ref().map_or(0, |s| s.trusted);
        match sys::set_syscall_dispatch(tid, Some((trusted, 3))) {
            Ok(()) => t.sud = true,
            Err(e) => tracing::warn!(tid = tid.0, "syscall user dispatch: {e}"),
        }
    }

    /// The live process's interval since the last event: the buffered calls (the
    /// buffer is emptied) and the code written. Called as each event is logged.
    pub(super) fn sysbuf_take(&mut self) -> Interval {
        let Some(sb) = self.sysbuf.as_mut() else {
            return Interval::default();
        };
        let code = std::mem::take(&mut sb.pending);
        let forced = std::mem::take(&mut sb.forced);
        let buf = sb.buf;
        let calls = self.sysbuf_read_calls(buf).unwrap_or_default();
        if !calls.is_empty() || forced {
            // POS, END, LIMIT, COUNT and FORCE: 8 bytes each from POS.
            let mut h = [0u8; 40];
            h[LIMIT as usize - POS as usize..][..8]
                .copy_from_slice(&CALLS_PER_INTERVAL.to_le_bytes());
            let _ = self.write_raw(buf + POS, &h);
        }
        Interval { calls, code }
    }

    /// The live process's exact position is lost (a pause): the handler traps at its
    /// next call, an event where the position is exact again.
    pub(super) fn sysbuf_force(&mut self) {
        let Some(sb) = self.sysbuf.as_mut().filter(|s| s.recording) else {
            return;
        };
        sb.forced = true;
        let at = sb.buf + FORCE;
        let _ = self.write_raw(at, &1u64.to_le_bytes());
    }

    /// The live process's interval so far, left in place (the present's, for a
    /// replay that comes back to it).
    pub(super) fn sysbuf_peek(&self) -> Interval {
        let Some(sb) = self.sysbuf.as_ref() else {
            return Interval::default();
        };
        Interval {
            calls: self.sysbuf_read_calls(sb.buf).unwrap_or_default(),
            code: sb.pending.clone(),
        }
    }

    fn sysbuf_read_calls(&self, buf: u64) -> Result<Vec<u8>> {
        let mut pos = [0u8; 8];
        self.read_raw(buf + POS, &mut pos)?;
        let pos = u64::from_le_bytes(pos).min(BUF_LEN - DATA);
        let mut calls = vec![0u8; pos as usize];
        if pos > 0 {
            let n = self.read_raw(buf + DATA, &mut calls)?;
            calls.truncate(n);
        }
        Ok(calls)
    }

    /// A replay enters an interval: its code is written and its calls are given to
    /// the handler.
    pub(super) fn sysbuf_install(&mut self, interval: &Interval) -> Result<()> {
        let Some(sb) = self.sysbuf.as_ref() else {
            return Ok(());
        };
        let buf = sb.buf;
        for (a, b) in &interval.code {
            self.write_raw(*a, b)?;
        }
        if !interval.calls.is_empty() {
            self.write_raw(buf + DATA, &interval.calls)?;
        }
        self.write_raw(buf, &header(MODE_REPLAY, 0, interval.calls.len() as u64))
    }

    /// A stop of a replay given several intervals at once: the flush events the
    /// handler has gone past (it took a record of the interval after one) are passed,
    /// so the position counts its moves from the last of them, as the recording did.
    pub(super) fn sysbuf_sync(&mut self) {
        let Some(buf) = self.sysbuf.as_ref().map(|s| s.buf) else {
            return;
        };
        if self
            .rec
            .as_ref()
            .and_then(|r| r.replay.as_ref())
            .is_none_or(|r| r.batch.is_empty())
        {
            return;
        }
        let mut pos = [0u8; 8];
        if self.read_raw(buf + POS, &mut pos).is_err() {
            return;
        }
        let pos = u64::from_le_bytes(pos);
        let Some(rec) = self.rec.as_mut() else {
            return;
        };
        let Some(r) = rec.replay.as_mut() else {
            return;
        };
        let crossed = r.batch.iter().take_while(|end| pos > **end).count();
        if crossed == 0 {
            return;
        }
        r.batch.drain(..crossed);
        let cursor = r.cursor() + crossed as u64;
        r.set_cursor(cursor);
        rec.pos = Some(Position {
            event: cursor,
            path: Vec::new(),
        });
    }

    /// In a replay, at a traced call: every buffered call of the interval before it
    /// must have been made. Returns why not.
    pub(super) fn sysbuf_unconsumed(&self) -> Option<String> {
        let sb = self.sysbuf.as_ref()?;
        let mut h = [0u8; 24];
        self.read_raw(sb.buf, &mut h).ok()?;
        let pos = u64::from_le_bytes(h[8..16].try_into().ok()?);
        let end = u64::from_le_bytes(h[16..24].try_into().ok()?);
        (pos < end).then(|| {
            "the recording diverged here: a system call the recording has inside the program was not made".to_string()
        })
    }

    /// An int3 trap: the handler's flush (see `code::Handler::flush`), handled here.
    /// Returns `None` when the trap is not the handler's.
    pub(super) fn sysbuf_flush_trap(
        &mut self,
        tid: Tid,
        collecting: bool,
    ) -> Result<Option<Outcome>> {
        let Some(flush) = self.sysbuf.as_ref().map(|s| s.flush) else {
            return Ok(None);
        };
        let mut regs = sys::get_regs(tid).map_err(|e| Error::ptrace("PTRACE_GETREGS", tid, e))?;
        if regs.rip != flush + 1 || self.rec.is_none() {
            return Ok(None);
        }
        if self.is_replaying() {
            let cursor = self.replay_cursor();
            let flushed = self
                .rec
                .as_ref()
                .and_then(|r| r.events.get(cursor as usize))
                .is_some_and(|e| e.nr == FLUSH_EVENT);
            if flushed {
                // The next interval's records come, and the handler starts over.
                self.maybe_waypoint(tid, cursor + 1, false);
                if let Some(o) = self.replay_advance(tid)? {
                    return Ok(Some(o));
                }
            } else {
                // The recording made this call as a traced one.
                regs.rip = self.sysbuf.as_ref().map_or(regs.rip, |s| s.traced_path);
                sys::set_regs(tid, &regs).map_err(|e| Error::ptrace("PTRACE_SETREGS", tid, e))?;
            }
        } else {
            self.record_flush()?;
        }
        if let Some(t) = self.threads.get_mut(&tid) {
            t.regs = Some(regs);
        }
        if !collecting {
            self.resume_thread(tid);
        }
        Ok(Some(Outcome::Absorbed))
    }

    /// Whether `pc` is the handler's divergence trap (a replay's call differs from its
    /// record).
    pub(super) fn sysbuf_diverged_at(&self, pc: u64) -> bool {
        self.sysbuf
            .as_ref()
            .is_some_and(|s| pc == s.diverge || pc == s.diverge + 2)
    }

    /// The live process stops buffering (its recording ended, or it has more than one
    /// thread): dispatch off, the handler off (patched sites then make their calls
    /// plainly).
    pub(super) fn sysbuf_stop(&mut self) {
        let Some(sb) = self.sysbuf.as_mut() else {
            return;
        };
        if !sb.recording {
            return;
        }
        sb.recording = false;
        let buf = sb.buf;
        let _ = self.write_raw(buf + MODE, &MODE_OFF.to_le_bytes());
        let tids: Vec<Tid> = self.threads.keys().copied().collect();
        for tid in tids {
            let on = self.threads.get_mut(&tid).is_some_and(|t| {
                let on = t.sud;
                t.sud = false;
                t.sud_resume = false;
                on
            });
            if on {
                if let Err(e) = sys::set_syscall_dispatch(tid, None) {
                    tracing::debug!(tid = tid.0, "turning syscall user dispatch off: {e}");
                }
            }
        }
    }

    /// Before a detach: the sites get their bytes back and the mappings go (a thread
    /// inside the handler is run out of it first).
    pub(super) fn sysbuf_release(&mut self) {
        self.sysbuf_stop();
        let tids = self.threads();
        for tid in tids {
            self.sysbuf_leave(tid);
        }
        let Some(sb) = self.sysbuf.take() else {
            return;
        };
        for (site, patched) in &sb.sites {
            if let Some((orig, _)) = patched {
                if let Err(e) = self.write_raw(*site, orig) {
                    tracing::warn!(site, "restoring a buffered system call site: {e}");
                }
            }
        }
        let in_use = self
            .threads
            .values()
            .filter_map(|t| t.regs.map(|r| r.rip))
            .any(|pc| sb.code <= pc && pc < sb.code + CODE_LEN);
        let Some(at) = self
            .injection_thread()
            .and_then(|t| self.threads.get(&t)?.regs.map(|r| r.rip))
        else {
            return;
        };
        if !in_use {
            let _ = self.inject_syscall(at, SYS_MUNMAP, [sb.code, CODE_LEN, 0, 0, 0, 0]);
        }
        let _ = self.inject_syscall(at, SYS_MUNMAP, [sb.buf, BUF_LEN, 0, 0, 0, 0]);
    }

    /// Moves a stopped thread out of the buffer's code, for a stop shown to the user:
    /// single-stepped on until it is back in the program (its call completes as it
    /// would have), or, when it is at one of the handler's `syscall`s before the call
    /// ran (or with it to be restarted: a step could block), put back before its site
    /// with the handler's frame popped, to make the call again when resumed. Returns
    /// whether it moved.
    pub(super) fn sysbuf_leave(&mut self, tid: Tid) -> bool {
        let Some(sb) = self.sysbuf.as_ref() else {
            return false;
        };
        let (code, untrusted, trusted, flush) = (sb.code, sb.untrusted, sb.trusted, sb.flush);
        let inside = |pc: u64| code <= pc && pc < code + CODE_LEN;
        let Ok(mut regs) = sys::get_regs(tid) else {
            return false;
        };
        if !inside(regs.rip) {
            return false;
        }
        let restarting = (512..=516).contains(&(regs.rax as i64).wrapping_neg());
        let at = |s: u64| regs.rip == s || (regs.rip == s + 2 && restarting);
        if at(untrusted) {
            return self.sysbuf_unwind(tid, regs);
        }
        if at(trusted) {
            // A buffered call that waits (a read of a pipe): the handler's saved
            // registers come back first (pushed in this order below the flags).
            let mut saved = [0u64; 6];
            for (k, w) in saved.iter_mut().enumerate() {
                match sys::peek_word(tid, regs.rsp + 8 * k as u64) {
                    Ok(v) => *w = v,
                    Err(_) => return false,
                }
            }
            [
                regs.r12,
                regs.rbx,
                regs.rdx,
                regs.rsi,
                regs.rdi,
                regs.eflags,
            ] = saved;
            regs.eflags &= !patch::TRAP_FLAG;
            regs.rsp += 8 * saved.len() as u64;
            return self.sysbuf_unwind(tid, regs);
        }
        let mut moved = false;
        for _ in 0..10_000 {
            let Ok(w) = patch::step_and_wait(tid, 0) else {
                break;
            };
            match sys::decode(w.status) {
                // Only a trap after a step ends one: an interrupt that stops the thread
                // first leaves the step's trap to come.
                Status::Stopped(libc::SIGTRAP, 0) => {}
                // The handler's untrusted call, dispatched: it has not run.
                Status::Stopped(libc::SIGSYS, 0) => {
                    let Ok(mut regs) = sys::get_regs(tid) else {
                        break;
                    };
                    regs.rip = regs.rip.wrapping_sub(2);
                    let back = self.sysbuf_unwind(tid, regs);
                    if back {
                        self.clear_trap_flag(tid);
                    }
                    return back || moved;
                }
                Status::Stopped(sig, 0) => {
                    self.keep_signal(tid, sig);
                    continue;
                }
                Status::Stopped(..) | Status::Other => continue,
                Status::Exited(_) | Status::Signaled(..) => {
                    stash_push(w);
                    break;
                }
            }
            moved = true;
            match sys::get_regs(tid) {
                // The handler's flush on the way: drained as at any other time.
                Ok(r) if r.rip == flush + 1 && !self.is_replaying() => {
                    if let Err(e) = self.record_flush() {
                        tracing::warn!("a flush of the system-call buffer: {e}");
                    }
                }
                Ok(r) if !inside(r.rip) => {
                    if let Some(t) = self.threads.get_mut(&tid) {
                        t.regs = Some(r);
                    }
                    // The handler's popfq restored the flags it saved under a step.
                    self.clear_trap_flag(tid);
                    break;
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        moved
    }

    /// [`Tracer::sysbuf_leave`] at a `syscall` of the handler, `regs` as the handler
    /// found them: the thunk's return address is on the stack, 128 bytes below the
    /// program's; the thread goes back to its site, dispatch on (no call is under way).
    fn sysbuf_unwind(&mut self, tid: Tid, mut regs: libc::user_regs_struct) -> bool {
        let Some(sb) = self.sysbuf.as_ref() else {
            return false;
        };
        let Ok(ret) = sys::peek_word(tid, regs.rsp) else {
            return false;
        };
        let Some(&site) = sb.returns.get(&ret) else {
            return false;
        };
        let trusted = sb.trusted;
        regs.rip = site;
        regs.rsp = regs.rsp.wrapping_add(8 + 128);
        regs.rax = regs.orig_rax;
        if sys::set_regs(tid, &regs).is_err() {
            return false;
        }
        if let Some(t) = self.threads.get_mut(&tid) {
            t.regs = Some(regs);
            if std::mem::take(&mut t.sud_resume)
                && sys::set_syscall_dispatch(tid, Some((trusted, 3))).is_ok()
            {
                t.sud = true;
            }
        }
        true
    }
}
