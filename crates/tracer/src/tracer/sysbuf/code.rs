//! The machine code of the system-call buffer: the handler every patched site calls,
//! and the thunk a site's `jmp` leads to (docs/reverse.md, "Buffered system calls").
//!
//! The handler runs in three modes, read from the buffer's header on every call:
//! recording (the call runs at the one `syscall` instruction syscall user dispatch lets
//! through without a stop, and its number, first argument, result and the bytes it
//! wrote are appended to the buffer), replay (the next record is checked against the
//! call and its result and bytes are given, nothing runs), and off (the call runs at
//! another `syscall`, which the tracer sees as any other call).

use iced_x86::code_asm::*;
use iced_x86::{BlockEncoderOptions, Decoder, DecoderOptions, FlowControl, Instruction, Mnemonic};

/// Offsets in the buffer mapping.
pub(super) const MODE: u64 = 0;
pub(super) const POS: u64 = 8;
pub(super) const END: u64 = 16;
/// Recording: at most `LIMIT` calls are buffered between two events of the log (the
/// handler then traps for the tracer to drain the buffer), counted in `COUNT`. A
/// position is the moves since the last event, so an interval must stay short for
/// going back to stay cheap.
pub(super) const LIMIT: u64 = 24;
pub(super) const COUNT: u64 = 32;
/// Recording: non-zero when the handler must trap at its next call (the tracer lost the
/// exact position, after a pause, and finds it again at that event).
pub(super) const FORCE: u64 = 40;
/// The calls buffered between two events at most.
pub(super) const CALLS_PER_INTERVAL: u64 = 64;
/// Where the records start, and how many bytes they may take.
pub(super) const DATA: u64 = 0x1000;
pub(super) const BUF_LEN: u64 = 1 << 20;
pub(super) const CAPACITY: u64 = BUF_LEN - DATA;
/// A record: nr (u32), len (u32), result, first argument, destination, then `len`
/// bytes, padded to 8.
pub(super) const RECORD_HEADER: u64 = 32;

pub(super) const MODE_OFF: u32 = 0;
pub(super) const MODE_RECORD: u32 = 1;
pub(super) const MODE_REPLAY: u32 = 2;

/// The code mapping: the kind table, the handler, then thunks.
pub(super) const CODE_LEN: u64 = 64 * 1024;
pub(super) const TABLE: u64 = 0;
const TABLE_LEN: u64 = 512;
pub(super) const HANDLER: u64 = 0x400;
pub(super) const THUNKS: u64 = 0x1000;

/// How a buffered call's written bytes are found (low 4 bits of a table entry; the
/// rest is a fixed size).
const K_PLAIN: u16 = 1;
const K_RES_RSI: u16 = 4;
const K_RES_RDI: u16 = 5;
const K_FIX_RSI: u16 = 6;
const K_FIX_RDI: u16 = 7;
const K_FIX_RDX: u16 = 8;
const K_FIX_R8: u16 = 9;
/// gettimeofday: 16 bytes at its first argument, buffered only without a timezone.
const K_GTOD: u16 = 10;

/// The calls the handler buffers, each with how its written bytes are found. Every one
/// is emulated on replay (`syscalls::class` says `Emulate`) and writes exactly what
/// `syscalls::written` reads after it. Only a single-threaded program buffers, so a call
/// that waits (a read of a pipe) waits for another process, never for a thread of the
/// program that the recorder would have to run meanwhile.
const BUFFERED: &[(u16, u16, u16)] = &[
    // getpid, getppid, gettid, getuid, getgid, geteuid, getegid, lseek, access,
    // faccessat, faccessat2, fsync, fdatasync
    (39, K_PLAIN, 0),
    (110, K_PLAIN, 0),
    (186, K_PLAIN, 0),
    (102, K_PLAIN, 0),
    (104, K_PLAIN, 0),
    (107, K_PLAIN, 0),
    (108, K_PLAIN, 0),
    (8, K_PLAIN, 0),
    (21, K_PLAIN, 0),
    (269, K_PLAIN, 0),
    (439, K_PLAIN, 0),
    (74, K_PLAIN, 0),
    (75, K_PLAIN, 0),
    // write, pwrite64
    (1, K_PLAIN, 0),
    (18, K_PLAIN, 0),
    // read, pread64, readlink, getdents64: the result's length at the second argument
    (0, K_RES_RSI, 0),
    (17, K_RES_RSI, 0),
    (89, K_RES_RSI, 0),
    (217, K_RES_RSI, 0),
    // getrandom, getcwd: at the first
    (318, K_RES_RDI, 0),
    (79, K_RES_RDI, 0),
    // stat, fstat, lstat, getrusage, clock_gettime, clock_getres, getrlimit
    (4, K_FIX_RSI, 144),
    (5, K_FIX_RSI, 144),
    (6, K_FIX_RSI, 144),
    (98, K_FIX_RSI, 144),
    (228, K_FIX_RSI, 16),
    (229, K_FIX_RSI, 16),
    (97, K_FIX_RSI, 16),
    // time, sysinfo, uname
    (201, K_FIX_RDI, 8),
    (99, K_FIX_RDI, 112),
    (63, K_FIX_RDI, 390),
    // newfstatat, statx
    (262, K_FIX_RDX, 144),
    (332, K_FIX_R8, 256),
    (96, K_GTOD, 16),
];

/// Whether call `nr` is one the handler may buffer.
pub(super) fn bufferable(nr: u64) -> bool {
    BUFFERED.iter().any(|(n, _, _)| u64::from(*n) == nr)
}

/// The kind table's bytes: a little-endian u16 per call number below 512.
pub(super) fn table() -> Vec<u8> {
    let mut t = vec![0u8; TABLE_LEN as usize * 2];
    for (nr, kind, size) in BUFFERED {
        let v = kind | (size << 4);
        t[*nr as usize * 2..*nr as usize * 2 + 2].copy_from_slice(&v.to_le_bytes());
    }
    t
}

/// The handler's code and the addresses the tracer needs.
pub(super) struct Handler {
    pub code: Vec<u8>,
    /// The `syscall` dispatch lets through.
    pub trusted: u64,
    /// The `syscall` of calls that are not buffered (the tracer sees them).
    pub untrusted: u64,
    /// The `ud2` a replay reaches when a call differs from its record.
    pub diverge: u64,
    /// The `int3` where the buffer is full (recording: the tracer drains it, an event
    /// of the log) or its records are all given (replay: the next interval's come, or
    /// the call is made as a traced one); the handler starts over after it.
    pub flush: u64,
    /// Where the handler makes a call as a traced one (its saved registers popped first).
    pub traced_path: u64,
}

fn asm_err(e: IcedError) -> String {
    format!("assembling the system-call buffer: {e}")
}

/// Assembles the handler for a code mapping at `code` and a buffer at `buf`.
pub(super) fn handler(code: u64, buf: u64) -> Result<Handler, String> {
    build_handler(code, buf).map_err(asm_err)
}

fn build_handler(code: u64, buf: u64) -> Result<Handler, IcedError> {
    let table = code + TABLE;
    let mut a = CodeAssembler::new(64)?;
    let mut untrusted = a.create_label();
    let mut record = a.create_label();
    let mut replay = a.create_label();
    let mut trusted = a.create_label();
    let mut untrusted_call = a.create_label();
    let mut l2 = a.create_label();
    let mut l3 = a.create_label();
    let mut space = a.create_label();
    let mut res_rsi = a.create_label();
    let mut res_rdi = a.create_label();
    let mut fix_rsi = a.create_label();
    let mut fix_rdi = a.create_label();
    let mut fix_rdx = a.create_label();
    let mut fix_r8 = a.create_label();
    let mut copy_fixed = a.create_label();
    let mut copy = a.create_label();
    let mut commit = a.create_label();
    let mut done = a.create_label();
    let mut no_bytes = a.create_label();
    let mut diverge = a.create_label();
    let mut dispatch = a.create_label();
    let mut flush = a.create_label();

    // Entered by `call` from a thunk, 128 bytes below the program's stack pointer (its
    // red zone is left alone). rax is the call's number, the arguments are in place.
    a.pushfq()?;
    a.cld()?;
    a.push(rdi)?;
    a.push(rsi)?;
    a.push(rdx)?;
    a.push(rbx)?;
    a.push(r12)?;
    a.set_label(&mut dispatch)?;
    a.mov(r11, buf)?;
    a.mov(ecx, dword_ptr(r11 + MODE))?;
    a.cmp(ecx, MODE_RECORD as i32)?;
    a.je(record)?;
    a.cmp(ecx, MODE_REPLAY as i32)?;
    a.je(replay)?;

    a.set_label(&mut untrusted)?;
    restore(&mut a)?;
    a.set_label(&mut untrusted_call)?;
    a.syscall()?;
    a.ret()?;

    // The buffer is full, or a replay's records are all given: the tracer takes over
    // at the trap, then the handler starts over.
    a.set_label(&mut flush)?;
    a.int3()?;
    a.jmp(dispatch)?;

    // Recording.
    a.set_label(&mut record)?;
    a.cmp(rax, TABLE_LEN as i32)?;
    a.jae(untrusted)?;
    a.mov(rbx, table)?;
    a.movzx(ebx, word_ptr(rbx + rax * 2))?;
    a.test(ebx, ebx)?;
    a.jz(untrusted)?;
    a.mov(r12d, ebx)?;
    a.and(r12d, 0xf)?;
    a.shr(ebx, 4)?;
    // rcx: the most bytes the call may write.
    a.mov(ecx, ebx)?;
    a.cmp(r12d, K_RES_RSI as i32)?;
    a.jne(l2)?;
    a.mov(rcx, rdx)?;
    a.set_label(&mut l2)?;
    a.cmp(r12d, K_RES_RDI as i32)?;
    a.jne(l3)?;
    a.mov(rcx, rsi)?;
    a.set_label(&mut l3)?;
    a.cmp(r12d, K_GTOD as i32)?;
    a.jne(space)?;
    a.test(rsi, rsi)?;
    a.jnz(untrusted)?;
    a.set_label(&mut space)?;
    a.cmp(rcx, CAPACITY as i32)?;
    a.ja(untrusted)?;
    a.cmp(qword_ptr(r11 + FORCE), 0)?;
    a.jne(flush)?;
    a.mov(rbx, qword_ptr(r11 + COUNT))?;
    a.cmp(rbx, qword_ptr(r11 + LIMIT))?;
    a.jae(flush)?;
    a.mov(rbx, qword_ptr(r11 + POS))?;
    a.add(rcx, rbx)?;
    a.add(rcx, (RECORD_HEADER + 7) as i32)?;
    a.cmp(rcx, CAPACITY as i32)?;
    a.ja(flush)?;
    a.lea(rbx, qword_ptr(r11 + rbx + DATA))?;
    a.mov(dword_ptr(rbx), eax)?;
    a.mov(qword_ptr(rbx + 16), rdi)?;
    a.set_label(&mut trusted)?;
    a.syscall()?;
    a.mov(qword_ptr(rbx + 8), rax)?;
    a.xor(ecx, ecx)?;
    a.cmp(rax, -4095)?;
    a.jae(commit)?;
    a.cmp(r12d, K_RES_RSI as i32)?;
    a.je(res_rsi)?;
    a.cmp(r12d, K_RES_RDI as i32)?;
    a.je(res_rdi)?;
    // A fixed size: from the table again.
    a.mov(ecx, dword_ptr(rbx))?;
    a.mov(r11, table)?;
    a.movzx(ecx, word_ptr(r11 + rcx * 2))?;
    a.shr(ecx, 4)?;
    a.cmp(r12d, K_FIX_RSI as i32)?;
    a.je(fix_rsi)?;
    a.cmp(r12d, K_FIX_RDI as i32)?;
    a.je(fix_rdi)?;
    a.cmp(r12d, K_GTOD as i32)?;
    a.je(fix_rdi)?;
    a.cmp(r12d, K_FIX_RDX as i32)?;
    a.je(fix_rdx)?;
    a.cmp(r12d, K_FIX_R8 as i32)?;
    a.je(fix_r8)?;
    a.jmp(commit)?;
    a.set_label(&mut res_rsi)?;
    a.mov(rcx, rax)?;
    a.mov(r11, rsi)?;
    a.jmp(copy)?;
    a.set_label(&mut res_rdi)?;
    a.mov(rcx, rax)?;
    a.mov(r11, rdi)?;
    a.jmp(copy)?;
    a.set_label(&mut fix_rsi)?;
    a.mov(r11, rsi)?;
    a.jmp(copy_fixed)?;
    a.set_label(&mut fix_rdi)?;
    a.mov(r11, rdi)?;
    a.jmp(copy_fixed)?;
    a.set_label(&mut fix_rdx)?;
    a.mov(r11, rdx)?;
    a.jmp(copy_fixed)?;
    a.set_label(&mut fix_r8)?;
    a.mov(r11, r8)?;
    a.set_label(&mut copy_fixed)?;
    a.test(r11, r11)?;
    a.jz(commit)?;
    a.set_label(&mut copy)?;
    a.mov(qword_ptr(rbx + 24), r11)?;
    a.mov(dword_ptr(rbx + 4), ecx)?;
    a.mov(rsi, r11)?;
    a.lea(rdi, qword_ptr(rbx + RECORD_HEADER))?;
    a.rep().movsb()?;
    a.jmp(done)?;
    a.set_label(&mut commit)?;
    a.mov(dword_ptr(rbx + 4), 0)?;
    a.mov(qword_ptr(rbx + 24), 0)?;
    a.set_label(&mut done)?;
    a.mov(ecx, dword_ptr(rbx + 4))?;
    a.add(rcx, (RECORD_HEADER + 7) as i32)?;
    a.and(rcx, -8)?;
    a.mov(r11, buf)?;
    a.add(qword_ptr(r11 + POS), rcx)?;
    a.add(qword_ptr(r11 + COUNT), 1)?;
    restore(&mut a)?;
    a.ret()?;

    // Replay: the next record, checked, gives the result and the bytes.
    a.set_label(&mut replay)?;
    a.mov(rbx, qword_ptr(r11 + POS))?;
    a.cmp(rbx, qword_ptr(r11 + END))?;
    a.jae(flush)?;
    a.lea(rbx, qword_ptr(r11 + rbx + DATA))?;
    a.cmp(eax, dword_ptr(rbx))?;
    a.jne(diverge)?;
    a.cmp(rdi, qword_ptr(rbx + 16))?;
    a.jne(diverge)?;
    a.mov(ecx, dword_ptr(rbx + 4))?;
    a.test(ecx, ecx)?;
    a.jz(no_bytes)?;
    a.mov(rdi, qword_ptr(rbx + 24))?;
    a.lea(rsi, qword_ptr(rbx + RECORD_HEADER))?;
    a.rep().movsb()?;
    a.set_label(&mut no_bytes)?;
    a.mov(rax, qword_ptr(rbx + 8))?;
    a.mov(ecx, dword_ptr(rbx + 4))?;
    a.add(rcx, (RECORD_HEADER + 7) as i32)?;
    a.and(rcx, -8)?;
    a.add(qword_ptr(r11 + POS), rcx)?;
    restore(&mut a)?;
    a.ret()?;
    a.set_label(&mut diverge)?;
    a.ud2()?;

    let at = code + HANDLER;
    let res = a.assemble_options(at, BlockEncoderOptions::RETURN_NEW_INSTRUCTION_OFFSETS)?;
    Ok(Handler {
        code: res.inner.code_buffer.clone(),
        trusted: res.label_ip(&trusted)?,
        untrusted: res.label_ip(&untrusted_call)?,
        diverge: res.label_ip(&diverge)?,
        flush: res.label_ip(&flush)?,
        traced_path: res.label_ip(&untrusted)?,
    })
}

/// Pops what the handler saved, flags last.
fn restore(a: &mut CodeAssembler) -> Result<(), IcedError> {
    a.pop(r12)?;
    a.pop(rbx)?;
    a.pop(rdx)?;
    a.pop(rsi)?;
    a.pop(rdi)?;
    a.popfq()
}

/// A site the buffer can take: the `syscall` at `site` and the whole instructions after
/// it that make up the bytes a `jmp rel32` needs.
pub(super) struct SitePlan {
    /// How many bytes from `site` the jump replaces.
    pub len: usize,
    /// The instructions after the `syscall` that the thunk runs instead.
    displaced: Vec<Instruction>,
}

/// Decides whether the `syscall` at `site`, whose following bytes are `after` (read from
/// `site + 2`), can be patched: the whole instructions after it that cover at least 3
/// bytes are moved into the thunk. Control flow may end the run only if what follows it
/// up to the covered length is padding (NOPs), which nothing jumps into.
pub(super) fn plan_site(site: u64, after: &[u8]) -> Option<SitePlan> {
    let mut dec = Decoder::with_ip(64, after, site + 2, DecoderOptions::NONE);
    let mut displaced = Vec::new();
    let mut len = 2usize;
    let mut ended = false;
    while len < 5 {
        if !dec.can_decode() {
            return None;
        }
        let insn = dec.decode();
        if insn.is_invalid() {
            return None;
        }
        if ended {
            // After a ret or jmp, only padding may be covered (it is never run).
            if insn.mnemonic() != Mnemonic::Nop && insn.mnemonic() != Mnemonic::Int3 {
                return None;
            }
            len += insn.len();
            continue;
        }
        match insn.mnemonic() {
            Mnemonic::Syscall | Mnemonic::Int3 | Mnemonic::Int | Mnemonic::Ud2 => return None,
            _ => {}
        }
        match insn.flow_control() {
            FlowControl::Next | FlowControl::ConditionalBranch => {}
            FlowControl::Return | FlowControl::UnconditionalBranch => ended = true,
            _ => return None,
        }
        len += insn.len();
        displaced.push(insn);
    }
    Some(SitePlan { len, displaced })
}

/// The thunk of a site planned by [`plan_site`], placed at `at`: it calls the handler
/// below the red zone, sets rcx and r11 as a `syscall` at the site would have, runs
/// the displaced instructions and jumps back after them. Returns the code and the
/// return address of its call of the handler.
pub(super) fn thunk(
    at: u64,
    site: u64,
    plan: &SitePlan,
    handler: u64,
) -> Result<(Vec<u8>, u64), String> {
    build_thunk(at, site, plan, handler).map_err(asm_err)
}

fn build_thunk(
    at: u64,
    site: u64,
    plan: &SitePlan,
    handler: u64,
) -> Result<(Vec<u8>, u64), IcedError> {
    let mut a = CodeAssembler::new(64)?;
    let mut back = a.create_label();
    a.lea(rsp, qword_ptr(rsp - 128))?;
    a.call(handler)?;
    a.set_label(&mut back)?;
    a.pushfq()?;
    a.pop(r11)?;
    a.lea(rsp, qword_ptr(rsp + 128))?;
    a.mov(rcx, site + 2)?;
    let mut ends = false;
    for insn in &plan.displaced {
        a.add_instruction(*insn)?;
        ends = matches!(
            insn.flow_control(),
            FlowControl::Return | FlowControl::UnconditionalBranch
        );
    }
    if !ends {
        a.jmp(site + plan.len as u64)?;
    }
    let res = a.assemble_options(at, BlockEncoderOptions::RETURN_NEW_INSTRUCTION_OFFSETS)?;
    Ok((res.inner.code_buffer.clone(), res.label_ip(&back)?))
}

/// The thunk of a vDSO time function made a call to the buffer: `mov eax, NR`, the
/// handler, and `ret`, rcx and r11 as the vDSO's `syscall` would have left them.
/// Returns the code and the return address of its call of the handler.
pub(super) fn vdso_thunk(
    at: u64,
    nr: u32,
    ret_site: u64,
    handler: u64,
) -> Result<(Vec<u8>, u64), String> {
    (|| -> Result<(Vec<u8>, u64), IcedError> {
        let mut a = CodeAssembler::new(64)?;
        let mut back = a.create_label();
        a.mov(eax, nr)?;
        a.lea(rsp, qword_ptr(rsp - 128))?;
        a.call(handler)?;
        a.set_label(&mut back)?;
        a.pushfq()?;
        a.pop(r11)?;
        a.lea(rsp, qword_ptr(rsp + 128))?;
        a.mov(rcx, ret_site)?;
        a.ret()?;
        let res = a.assemble_options(at, BlockEncoderOptions::RETURN_NEW_INSTRUCTION_OFFSETS)?;
        Ok((res.inner.code_buffer.clone(), res.label_ip(&back)?))
    })()
    .map_err(asm_err)
}

/// The bytes that make `site` jump to `to`: a `jmp rel32`, the rest of `len` int3s;
/// `None` when `to` is out of reach.
pub(super) fn jump(site: u64, to: u64, len: usize) -> Option<Vec<u8>> {
    let rel = to.wrapping_sub(site + 5) as i64;
    let rel = i32::try_from(rel).ok()?;
    let mut b = vec![0xe9];
    b.extend_from_slice(&rel.to_le_bytes());
    b.resize(len.max(5), 0xcc);
    Some(b)
}

/// An absolute jump to `to` (14 bytes: `jmp [rip+0]` and the address).
pub(super) fn far_jump(to: u64) -> Vec<u8> {
    let mut b = vec![0xff, 0x25, 0, 0, 0, 0];
    b.extend_from_slice(&to.to_le_bytes());
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_handler_assembles_with_its_syscalls_apart() {
        let h = handler(0x7f00_0000_0000, 0x7f00_1000_0000).unwrap();
        assert!(h.code.len() < (THUNKS - HANDLER) as usize);
        // Dispatch lets a call through when the address after it is in [trusted,
        // trusted + 3): the other syscall must not be in that range.
        assert!(h.untrusted + 2 < h.trusted || h.untrusted >= h.trusted + 3);
        assert!(h.diverge > h.trusted);
    }

    #[test]
    fn glibc_sites_are_planned_and_padding_after_ret_is_only_covered() {
        // read: syscall; cmp rax, -4096; ja ...
        let p = plan_site(0x1000, &[0x48, 0x3d, 0x00, 0xf0, 0xff, 0xff, 0x77, 0x5b]).unwrap();
        assert_eq!(p.len, 8);
        // getpid: syscall; ret; nopl 0(rax,rax,1)
        let p = plan_site(0x1000, &[0xc3, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0]).unwrap();
        assert_eq!(p.len, 11);
        // syscall; ret; then code (not padding): refused
        assert!(plan_site(0x1000, &[0xc3, 0x48, 0x89, 0xc7]).is_none());
        let (t, back) = thunk(0x2000, 0x1000, &p, 0x3000).unwrap();
        assert!(!t.is_empty());
        // lea rsp, [rsp-128] (5 bytes), call rel32 (5 bytes).
        assert_eq!(back, 0x2000 + 10);
    }

    #[test]
    fn the_table_holds_every_buffered_call() {
        let t = table();
        for (nr, kind, size) in BUFFERED {
            let v = u16::from_le_bytes([t[*nr as usize * 2], t[*nr as usize * 2 + 1]]);
            assert_eq!(v & 0xf, *kind);
            assert_eq!(v >> 4, *size);
        }
    }
}
