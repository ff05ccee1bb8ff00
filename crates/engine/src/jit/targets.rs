//! Every address a module's code may jump to, found once per module from the file: the
//! set a jump patch must not cover (see `docs/architecture.md`, "Jump patches").
//!
//! Targets are, in file addresses:
//! - every direct jcc/jmp/call/loop target of every instruction of the executable
//!   sections, decoded from each function symbol's start (so `foo.cold` parts and the
//!   code between symbols are decoded too, and decoding resynchronises at each symbol);
//! - every code address the code takes: `lea reg, [rip+X]`, any rip-relative or
//!   absolute memory operand and any immediate that lands in code (an address taken
//!   may be jumped to);
//! - every function symbol's start;
//! - every pointer-sized word of the loaded data sections and every value a dynamic
//!   relocation stores that lands in code: absolute jump tables (non-PIC switches),
//!   computed-goto tables (`&&label` arrays such as Lua's `disptab`), function pointers;
//! - the entries of every table of 32-bit offsets relative to its own start (gcc's and
//!   clang's position-independent switch tables) whose start the code takes with
//!   `lea reg, [rip+T]`: entries are read while they land in code, at most
//!   [`MAX_TABLE`] of them.
//!
//! A superset is safe (a spurious target only refuses a placement). What could still
//! reach an address outside the set is an indirect jump to a computed address; each
//! indirect jump is therefore classified, and a function with one whose target is not
//! a loaded pointer, a taken address or a table entry keeps its int3s.

use iced_x86::{Decoder, DecoderOptions, FlowControl, Instruction, Mnemonic, OpKind, Register};
use symbols::text::CodeImage;
use symbols::Binary;

/// Longest jump table read (entries).
pub(crate) const MAX_TABLE: usize = 4096;
/// Instructions looked at backwards from an indirect jump for what it jumps to.
const SLICE: usize = 24;

/// The branch targets of one module (file addresses).
#[derive(Debug, Default)]
pub(crate) struct BranchTargets {
    /// Sorted and deduplicated.
    targets: Vec<u64>,
    /// Indirect jumps whose targets cannot be found, sorted.
    unexplained: Vec<u64>,
    /// Where instructions start, one bit per byte of each executable section (by
    /// section address), as decoded from the function symbols.
    boundaries: Vec<(u64, Vec<u64>)>,
    /// Function symbol starts, sorted.
    function_starts: Vec<u64>,
    /// Why the module's code could not be analysed at all.
    unusable: Option<String>,
}

impl BranchTargets {
    /// Decodes the binary's code and data (see the module documentation).
    pub(crate) fn scan(binary: &Binary) -> BranchTargets {
        let started = std::time::Instant::now();
        let image = match binary.code_image() {
            Ok(image) => image,
            Err(e) => {
                return BranchTargets {
                    unusable: Some(format!("the module's code cannot be read: {e}")),
                    ..BranchTargets::default()
                }
            }
        };
        let mut scan = Scan {
            image: &image,
            targets: image.function_starts.clone(),
            unexplained: Vec::new(),
            table_bases: Vec::new(),
            boundaries: Vec::new(),
        };
        for section in &image.code {
            scan.section(section.addr, &section.bytes);
        }
        scan.data();
        let Scan {
            mut targets,
            mut unexplained,
            boundaries,
            ..
        } = scan;
        targets.sort_unstable();
        targets.dedup();
        unexplained.sort_unstable();
        tracing::debug!(
            path = %binary.path().display(),
            targets = targets.len(),
            unexplained = unexplained.len(),
            elapsed = ?started.elapsed(),
            "scanned the module's branch targets"
        );
        BranchTargets {
            targets,
            unexplained,
            boundaries,
            function_starts: image.function_starts,
            unusable: None,
        }
    }

    /// Whether an instruction starts at `addr` (decoding from its function symbol).
    pub(crate) fn is_instruction(&self, addr: u64) -> bool {
        self.boundaries.iter().any(|(start, bits)| {
            addr >= *start && {
                let i = (addr - start) as usize;
                bits.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
            }
        })
    }

    /// Whether a function symbol starts at `addr` (its code was decoded from there).
    pub(crate) fn is_function_start(&self, addr: u64) -> bool {
        self.function_starts.binary_search(&addr).is_ok()
    }

    /// A set that refuses every site, for `why`.
    pub(crate) fn unusable(why: &str) -> BranchTargets {
        BranchTargets {
            unusable: Some(why.to_string()),
            ..BranchTargets::default()
        }
    }

    /// Why no site of the module can be proven safe, if so.
    pub(crate) fn why_unusable(&self) -> Option<&str> {
        self.unusable.as_deref()
    }

    /// A target strictly between `lo` and `hi`.
    pub(crate) fn inside(&self, lo: u64, hi: u64) -> Option<u64> {
        let i = self.targets.partition_point(|&t| t <= lo);
        self.targets.get(i).copied().filter(|&t| t < hi)
    }

    /// An indirect jump with unknown targets in `[lo, hi)`.
    pub(crate) fn unexplained_in(&self, lo: u64, hi: u64) -> Option<u64> {
        let i = self.unexplained.partition_point(|&t| t < lo);
        self.unexplained.get(i).copied().filter(|&t| t < hi)
    }
}

struct Scan<'a> {
    image: &'a CodeImage,
    targets: Vec<u64>,
    unexplained: Vec<u64>,
    /// Data addresses taken by `lea reg, [rip+T]`: candidate tables of offsets.
    table_bases: Vec<u64>,
    boundaries: Vec<(u64, Vec<u64>)>,
}

impl Scan<'_> {
    /// Decodes one executable section, one function symbol to the next.
    fn section(&mut self, addr: u64, bytes: &[u8]) {
        let end = addr + bytes.len() as u64;
        let starts = &self.image.function_starts;
        let mut cuts = vec![addr];
        let first = starts.partition_point(|&s| s <= addr);
        cuts.extend(starts[first..].iter().take_while(|&&s| s < end));
        cuts.push(end);
        let mut bits = vec![0u64; bytes.len().div_ceil(64)];
        for w in cuts.windows(2) {
            let (from, to) = (w[0], w[1]);
            let slice = &bytes[(from - addr) as usize..(to - addr) as usize];
            for ip in self.segment(from, slice) {
                let i = (ip - addr) as usize;
                bits[i / 64] |= 1 << (i % 64);
            }
        }
        self.boundaries.push((addr, bits));
    }

    /// Decodes the code from one function start to the next; returns where its
    /// instructions start.
    fn segment(&mut self, start: u64, bytes: &[u8]) -> Vec<u64> {
        let mut decoder = Decoder::with_ip(64, bytes, start, DecoderOptions::NONE);
        let code: Vec<Instruction> = decoder.iter().filter(|i| !i.is_invalid()).collect();
        let end = start + bytes.len() as u64;
        let mut local = Vec::new();
        for ins in &code {
            self.instruction(ins);
            if let Some(t) = near_target(ins) {
                if (start..end).contains(&t) {
                    local.push(t);
                }
            }
        }
        local.sort_unstable();
        for (i, ins) in code.iter().enumerate() {
            if ins.flow_control() == FlowControl::IndirectBranch
                && !explained(&code[..i], ins, &local)
            {
                self.unexplained.push(ins.ip());
            }
        }
        code.iter().map(Instruction::ip).collect()
    }

    /// Collects what one instruction may jump to or takes the address of.
    fn instruction(&mut self, ins: &Instruction) {
        if let Some(t) = near_target(ins) {
            self.targets.push(t);
        }
        if ins.is_ip_rel_memory_operand() {
            let a = ins.ip_rel_memory_address();
            if self.image.is_code(a) {
                self.targets.push(a);
            } else if ins.mnemonic() == Mnemonic::Lea {
                self.table_bases.push(a);
            }
        }
        for op in 0..ins.op_count() {
            match ins.op_kind(op) {
                OpKind::Memory if ins.memory_base() == Register::None => {
                    let a = ins.memory_displacement64();
                    if self.image.is_code(a) {
                        self.targets.push(a);
                    }
                }
                OpKind::Immediate32 | OpKind::Immediate32to64 | OpKind::Immediate64 => {
                    if let Ok(v) = ins.try_immediate(op) {
                        if self.image.is_code(v) {
                            self.targets.push(v);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// Code pointers in the data: words, relocated values, tables of offsets.
    fn data(&mut self) {
        let image = self.image;
        for s in &image.data {
            let skip = ((8 - s.addr % 8) % 8) as usize;
            for w in s.bytes.get(skip..).unwrap_or_default().chunks_exact(8) {
                let mut b = [0u8; 8];
                b.copy_from_slice(w);
                let v = u64::from_le_bytes(b);
                if image.is_code(v) {
                    self.targets.push(v);
                }
            }
        }
        for &v in &image.relocated {
            if image.is_code(v) {
                self.targets.push(v);
            }
        }
        self.table_bases.sort_unstable();
        self.table_bases.dedup();
        for &base in &self.table_bases {
            let Some(s) = image.data.iter().find(|s| s.contains(base)) else {
                continue;
            };
            let from = (base - s.addr) as usize;
            for w in s.bytes[from..].chunks_exact(4).take(MAX_TABLE) {
                let offset = i32::from_le_bytes([w[0], w[1], w[2], w[3]]);
                let t = base.wrapping_add_signed(i64::from(offset));
                if !image.is_code(t) {
                    break;
                }
                self.targets.push(t);
            }
        }
    }
}

/// The direct target of a jcc/jmp/call/loop/xbegin.
fn near_target(ins: &Instruction) -> Option<u64> {
    (0..ins.op_count())
        .any(|op| {
            matches!(
                ins.op_kind(op),
                OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64
            )
        })
        .then(|| ins.near_branch_target())
}

/// Whether indirect jump `jmp`'s targets are in the set: it jumps through memory (a
/// table of absolute pointers or a stored pointer, both scanned), or to a register that
/// its own basic block loads from memory, takes as a rip-relative address, or forms by
/// adding a table's base to an entry loaded from a table of 32-bit offsets (the
/// position-independent switch). `before` is the code preceding it in its function,
/// `local` that function's branch targets (where basic blocks start).
fn explained(before: &[Instruction], jmp: &Instruction, local: &[u64]) -> bool {
    match jmp.op0_kind() {
        OpKind::Memory => true,
        OpKind::Register => {
            let mut reg = jmp.op0_register().full_register();
            let mut next = jmp.ip();
            for ins in before.iter().rev().take(SLICE) {
                // Another path joins here, or the code before does not fall through.
                if local.binary_search(&next).is_ok()
                    || !matches!(
                        ins.flow_control(),
                        FlowControl::Next | FlowControl::ConditionalBranch
                    )
                {
                    return false;
                }
                next = ins.ip();
                if !(ins.op_count() > 0
                    && ins.op0_kind() == OpKind::Register
                    && ins.op0_register().full_register() == reg)
                {
                    continue;
                }
                return match (ins.mnemonic(), ins.op1_kind()) {
                    (Mnemonic::Mov, OpKind::Register) => {
                        reg = ins.op1_register().full_register();
                        continue;
                    }
                    (Mnemonic::Mov, OpKind::Memory) => true,
                    (Mnemonic::Lea, OpKind::Memory) => ins.is_ip_rel_memory_operand(),
                    (Mnemonic::Add, OpKind::Register) => before.iter().any(offset_table_load),
                    _ => false,
                };
            }
            false
        }
        _ => false,
    }
}

/// An entry of a table of 32-bit offsets: `movsxd reg, dword [base + index*4]` (gcc -O2,
/// clang), or gcc -O0's `mov r32, dword [base + index]` (the index scaled by 4 before,
/// the sign extended by `cltq` after).
fn offset_table_load(ins: &Instruction) -> bool {
    let indexed = ins.op1_kind() == OpKind::Memory && ins.memory_index() != Register::None;
    match ins.mnemonic() {
        Mnemonic::Movsxd => indexed && ins.memory_index_scale() == 4,
        Mnemonic::Mov => {
            indexed
                && ins.op0_kind() == OpKind::Register
                && ins.op0_register().is_gpr32()
                && ins.memory_base() != Register::None
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(bytes: &[u8], ip: u64) -> Vec<Instruction> {
        Decoder::with_ip(64, bytes, ip, DecoderOptions::NONE)
            .iter()
            .collect()
    }

    #[test]
    fn a_position_independent_switch_is_explained() {
        // lea rdx,[rip+0x100]; movsxd rax,dword [rdx+rax*4]; add rax,rdx; jmp rax
        let code = decode(
            &[
                0x48, 0x8d, 0x15, 0x00, 0x01, 0x00, 0x00, 0x48, 0x63, 0x04, 0x82, 0x48, 0x01, 0xd0,
                0xff, 0xe0,
            ],
            0x1000,
        );
        let (jmp, before) = code.split_last().unwrap();
        assert!(explained(before, jmp, &[]));
        // The same with the jump's block entered from elsewhere is not.
        assert!(!explained(before, jmp, &[jmp.ip()]));
    }

    #[test]
    fn a_position_independent_switch_at_o0_is_explained() {
        // gcc -O0: mov eax,[rdx+rax*1]; cltq; lea rdx,[rip+0x100]; add rax,rdx; jmp rax
        let code = decode(
            &[
                0x8b, 0x04, 0x02, 0x48, 0x98, 0x48, 0x8d, 0x15, 0x00, 0x01, 0x00, 0x00, 0x48, 0x01,
                0xd0, 0xff, 0xe0,
            ],
            0x1000,
        );
        let (jmp, before) = code.split_last().unwrap();
        assert!(explained(before, jmp, &[]));
        // Without the table load, `add` of two registers explains nothing.
        assert!(!explained(&before[1..], jmp, &[]));
    }

    #[test]
    fn a_computed_address_is_not_explained() {
        // lea rax,[rcx+rdx*8]; jmp rax
        let code = decode(&[0x48, 0x8d, 0x04, 0xd1, 0xff, 0xe0], 0x1000);
        let (jmp, before) = code.split_last().unwrap();
        assert!(!explained(before, jmp, &[]));
        // mov rax,[rcx+rdx*8]; jmp rax: a loaded pointer is.
        let code = decode(&[0x48, 0x8b, 0x04, 0xd1, 0xff, 0xe0], 0x1000);
        let (jmp, before) = code.split_last().unwrap();
        assert!(explained(before, jmp, &[]));
    }

    #[test]
    fn inside_is_strict() {
        let t = BranchTargets {
            targets: vec![10, 20, 30],
            ..BranchTargets::default()
        };
        assert_eq!(t.inside(10, 15), None);
        assert_eq!(t.inside(15, 20), None);
        assert_eq!(t.inside(15, 21), Some(20));
        assert_eq!(t.inside(9, 11), Some(10));
    }
}
