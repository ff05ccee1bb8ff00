//! Register sets: general purpose, FP/SSE and the debug registers.

use std::fmt;

/// The general-purpose registers of one thread (`struct user_regs_struct`).
#[derive(Clone, Copy)]
pub struct Registers(pub libc::user_regs_struct);

impl Registers {
    /// The instruction pointer.
    pub fn pc(&self) -> u64 {
        self.0.rip
    }
    /// Sets the instruction pointer.
    pub fn set_pc(&mut self, pc: u64) {
        self.0.rip = pc;
    }
    /// The stack pointer.
    pub fn sp(&self) -> u64 {
        self.0.rsp
    }
    /// The frame pointer (rbp).
    pub fn fp(&self) -> u64 {
        self.0.rbp
    }
    /// The registers by their DWARF number (0–16: rax, rdx, rcx, rbx, rsi, rdi, rbp,
    /// rsp, r8–r15, rip), as the x86-64 psABI numbers them.
    pub fn by_dwarf(&self, n: u16) -> Option<u64> {
        let r = &self.0;
        Some(match n {
            0 => r.rax,
            1 => r.rdx,
            2 => r.rcx,
            3 => r.rbx,
            4 => r.rsi,
            5 => r.rdi,
            6 => r.rbp,
            7 => r.rsp,
            8 => r.r8,
            9 => r.r9,
            10 => r.r10,
            11 => r.r11,
            12 => r.r12,
            13 => r.r13,
            14 => r.r14,
            15 => r.r15,
            16 => r.rip,
            49 => r.eflags,
            _ => return None,
        })
    }
}

impl fmt::Debug for Registers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = &self.0;
        f.debug_struct("Registers")
            .field("rip", &format_args!("{:#x}", r.rip))
            .field("rsp", &format_args!("{:#x}", r.rsp))
            .field("rbp", &format_args!("{:#x}", r.rbp))
            .field("rax", &format_args!("{:#x}", r.rax))
            .field("rdi", &format_args!("{:#x}", r.rdi))
            .field("rsi", &format_args!("{:#x}", r.rsi))
            .field("eflags", &format_args!("{:#x}", r.eflags))
            .finish_non_exhaustive()
    }
}

/// The x87/SSE state of one thread (`struct user_fpregs_struct`, the FXSAVE layout).
#[derive(Clone, Copy)]
pub struct FpRegisters(pub libc::user_fpregs_struct);

impl FpRegisters {
    /// XMM register `n` (0–15) as 16 little-endian bytes.
    pub fn xmm(&self, n: usize) -> Option<[u8; 16]> {
        let words = self.0.xmm_space.get(n * 4..n * 4 + 4)?;
        let mut out = [0u8; 16];
        for (i, w) in words.iter().enumerate() {
            out[i * 4..i * 4 + 4].copy_from_slice(&w.to_le_bytes());
        }
        Some(out)
    }
    /// x87 register `st(i)` (0–7) as its 10 little-endian bytes. FXSAVE stores the
    /// registers in stack order (ST0 first, whatever the top-of-stack field says), so no
    /// rotation by TOP is needed.
    pub fn st(&self, i: usize) -> Option<[u8; 10]> {
        let words = self.0.st_space.get(i * 4..i * 4 + 3)?;
        let mut b = [0u8; 12];
        for (k, w) in words.iter().enumerate() {
            b[k * 4..k * 4 + 4].copy_from_slice(&w.to_le_bytes());
        }
        let mut out = [0u8; 10];
        out.copy_from_slice(&b[..10]);
        Some(out)
    }
    /// The MXCSR control/status register.
    pub fn mxcsr(&self) -> u32 {
        self.0.mxcsr
    }
}

impl fmt::Debug for FpRegisters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FpRegisters")
            .field("mxcsr", &format_args!("{:#x}", self.0.mxcsr))
            .finish_non_exhaustive()
    }
}
