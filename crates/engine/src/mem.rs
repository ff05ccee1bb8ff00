//! Adapters from the tracer to the `symbols` traits: memory of the stopped process and
//! the registers of one frame.

use symbols::{MemoryReader, RegisterReader, RuntimeAddr};
use tracer::Tracer;

/// The memory of the debuggee, read on the tracer thread.
pub(crate) struct TracerMemory<'a>(pub &'a Tracer);

impl MemoryReader for TracerMemory<'_> {
    fn read(&self, addr: RuntimeAddr, buf: &mut [u8]) -> std::io::Result<()> {
        let mut done = 0;
        while done < buf.len() {
            let at = addr + done as u64;
            match self.0.read_memory(at, &mut buf[done..]) {
                Ok(0) | Err(_) => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("cannot read memory at {:#x}", at.0),
                    ))
                }
                Ok(n) => done += n,
            }
        }
        Ok(())
    }
}

/// Reads one little-endian u64.
pub(crate) fn read_u64(mem: &dyn MemoryReader, addr: u64) -> Option<u64> {
    let mut b = [0u8; 8];
    mem.read(RuntimeAddr(addr), &mut b).ok()?;
    Some(u64::from_le_bytes(b))
}

/// How many registers a frame has: DWARF 0–15 (general) and 16 (the return address,
/// i.e. the pc).
const FRAME_REGS: usize = 17;

/// The registers of one frame, by DWARF number (0–16). A fixed array: frame 0's
/// registers are built on every breakpoint hit whose condition is evaluated, so this
/// must not allocate.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FrameRegs([Option<u64>; FRAME_REGS]);

impl FrameRegs {
    /// All general registers of a stopped thread.
    pub fn from_registers(r: &tracer::Registers) -> FrameRegs {
        let mut regs = [None; FRAME_REGS];
        for (n, slot) in regs.iter_mut().enumerate() {
            *slot = r.by_dwarf(n as u16);
        }
        FrameRegs(regs)
    }

    /// The general registers an unwinder recovered, by DWARF number.
    pub fn from_array(regs: [Option<u64>; FRAME_REGS]) -> FrameRegs {
        FrameRegs(regs)
    }

    /// One register.
    pub fn get(&self, n: u16) -> Option<u64> {
        self.0.get(usize::from(n)).copied().flatten()
    }

    /// Sets one register (numbers past 16 are ignored).
    pub fn set(&mut self, n: u16, value: u64) {
        if let Some(slot) = self.0.get_mut(usize::from(n)) {
            *slot = Some(value);
        }
    }
}

impl RegisterReader for FrameRegs {
    fn reg(&self, dwarf_regno: u16) -> Option<u64> {
        self.get(dwarf_regno)
    }
}

/// A DWARF register number from an x86-64 register name (`rax`, `eax`, `rip`, `pc`, `sp`).
pub(crate) fn dwarf_register(name: &str) -> Option<(u16, u8)> {
    const NAMES: [(&str, &str, u16); 16] = [
        ("rax", "eax", 0),
        ("rdx", "edx", 1),
        ("rcx", "ecx", 2),
        ("rbx", "ebx", 3),
        ("rsi", "esi", 4),
        ("rdi", "edi", 5),
        ("rbp", "ebp", 6),
        ("rsp", "esp", 7),
        ("r8", "r8d", 8),
        ("r9", "r9d", 9),
        ("r10", "r10d", 10),
        ("r11", "r11d", 11),
        ("r12", "r12d", 12),
        ("r13", "r13d", 13),
        ("r14", "r14d", 14),
        ("r15", "r15d", 15),
    ];
    match name {
        "rip" | "pc" => return Some((16, 8)),
        "sp" => return Some((7, 8)),
        "fp" => return Some((6, 8)),
        _ => {}
    }
    NAMES.iter().find_map(|(q, d, n)| {
        if *q == name {
            Some((*n, 8))
        } else if *d == name {
            Some((*n, 4))
        } else {
            None
        }
    })
}

/// Frame 0's registers: the general ones, and the vector and x87 registers (DWARF
/// 17–32 and 33–40) read from the thread only when an expression needs one.
pub(crate) struct LiveRegs<'a> {
    pub general: &'a FrameRegs,
    pub tracer: &'a Tracer,
    pub tid: tracer::Tid,
}

impl RegisterReader for LiveRegs<'_> {
    fn reg(&self, n: u16) -> Option<u64> {
        if (17..=40).contains(&n) {
            return self.reg_bytes(n, 8).map(|b| le_u64(&b));
        }
        self.general.get(n)
    }

    fn reg_bytes(&self, n: u16, len: usize) -> Option<Vec<u8>> {
        let mut out = match n {
            17..=32 => {
                let i = usize::from(n - 17);
                let mut v = self.tracer.fp_regs(self.tid).ok()?.xmm(i)?.to_vec();
                if len > 16 {
                    // A 32-byte vector lives in ymm: its upper half is in the XSAVE area.
                    v.extend_from_slice(&ymm_high(&self.tracer.xstate(self.tid).ok()?, i)?);
                }
                v
            }
            33..=40 => self
                .tracer
                .fp_regs(self.tid)
                .ok()?
                .st(usize::from(n - 33))?
                .to_vec(),
            _ => self.general.get(n)?.to_le_bytes().to_vec(),
        };
        out.truncate(len);
        Some(out)
    }
}

/// The upper 16 bytes of ymm register `i` from an XSAVE area in the standard format
/// (ptrace's NT_X86_XSTATE, a core's note): the YMM_Hi128 component at offset 576, or
/// zeros when XSTATE_BV says the AVX state is in its initial configuration.
pub(crate) fn ymm_high(xsave: &[u8], i: usize) -> Option<[u8; 16]> {
    const XSTATE_BV: usize = 512;
    const YMM_HI128: usize = 576;
    const AVX: u64 = 1 << 2;
    let bv = le_u64(xsave.get(XSTATE_BV..XSTATE_BV + 8)?);
    let mut out = [0u8; 16];
    if bv & AVX != 0 {
        out.copy_from_slice(xsave.get(YMM_HI128 + 16 * i..YMM_HI128 + 16 * i + 16)?);
    }
    Some(out)
}

fn le_u64(b: &[u8]) -> u64 {
    let mut x = [0u8; 8];
    for (d, s) in x.iter_mut().zip(b) {
        *d = *s;
    }
    u64::from_le_bytes(x)
}

/// The registers an expression in a frame reads: live for frame 0 of a thread (so the SSE
/// registers can be fetched on demand), the unwound set for its callers.
pub(crate) enum FrameRegisters<'a> {
    Live(LiveRegs<'a>),
    Unwound(&'a FrameRegs),
}

impl RegisterReader for FrameRegisters<'_> {
    fn reg(&self, n: u16) -> Option<u64> {
        match self {
            FrameRegisters::Live(live) => live.reg(n),
            FrameRegisters::Unwound(regs) => regs.reg(n),
        }
    }

    fn reg_bytes(&self, n: u16, len: usize) -> Option<Vec<u8>> {
        match self {
            FrameRegisters::Live(live) => live.reg_bytes(n, len),
            FrameRegisters::Unwound(regs) => regs.reg_bytes(n, len),
        }
    }
}
