//! Call frame information: `.eh_frame` (via `.eh_frame_hdr` when present) and
//! `.debug_frame` rows, exposed as plain CFA and register rules for the engine.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use gimli::{RunTimeEndian, UnwindSection};
use memmap2::Mmap;
use object::{Object, ObjectSection};

use crate::addr::FileAddr;
use crate::binary::{section_bytes, Binary};
use crate::error::{Error, Result};
use crate::eval::RegisterReader;
use crate::reader::R;
use crate::units::reader_bytes;

pub(crate) struct Cfi {
    eh_frame: Option<gimli::EhFrame<R>>,
    eh_frame_hdr: Option<gimli::ParsedEhFrameHdr<R>>,
    bases: gimli::BaseAddresses,
    debug_frame: Option<gimli::DebugFrame<R>>,
    /// Rows already looked up, by pc: a stack trace after each step unwinds the same
    /// handful of return addresses again, and the engine asks for each frame's row twice
    /// (once itself, once through `unwind_caller`). Bounded by `ROW_CACHE_MAX`.
    rows: Mutex<HashMap<u64, Option<UnwindRow>>>,
}

/// Past this many cached rows the cache starts over (a few hundred KiB at most).
const ROW_CACHE_MAX: usize = 4096;

impl Cfi {
    pub(crate) fn load(
        map: &Arc<Mmap>,
        file: &object::File<'_>,
        debug_map: Option<&Arc<Mmap>>,
        debug_file: Option<&object::File<'_>>,
        endian: RunTimeEndian,
    ) -> Result<Cfi> {
        let addr_of = |name: &str| file.section_by_name(name).map(|s| s.address());
        let mut bases = gimli::BaseAddresses::default();
        if let Some(a) = addr_of(".eh_frame_hdr") {
            bases = bases.set_eh_frame_hdr(a);
        }
        if let Some(a) = addr_of(".eh_frame") {
            bases = bases.set_eh_frame(a);
        }
        if let Some(a) = addr_of(".text") {
            bases = bases.set_text(a);
        }
        if let Some(a) = addr_of(".got") {
            bases = bases.set_got(a);
        }
        let reader = |b| gimli::EndianReader::new(b, endian);
        let eh_frame = section_bytes(map, file, ".eh_frame")?.map(|b| {
            let mut s = gimli::EhFrame::from(reader(b));
            s.set_address_size(8);
            s
        });
        let eh_frame_hdr = match section_bytes(map, file, ".eh_frame_hdr")? {
            Some(b) => gimli::EhFrameHdr::from(reader(b)).parse(&bases, 8).ok(),
            None => None,
        };
        let mut debug_frame = section_bytes(map, file, ".debug_frame")?;
        if debug_frame.is_none() {
            if let (Some(m), Some(f)) = (debug_map, debug_file) {
                debug_frame = section_bytes(m, f, ".debug_frame")?;
            }
        }
        let debug_frame = debug_frame.map(|b| {
            let mut s = gimli::DebugFrame::from(reader(b));
            s.set_address_size(8);
            s
        });
        Ok(Cfi {
            eh_frame,
            eh_frame_hdr,
            bases,
            debug_frame,
            rows: Mutex::new(HashMap::new()),
        })
    }
}

/// How to compute the canonical frame address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CfaRule {
    /// CFA = value of DWARF register `register` + `offset`.
    RegisterOffset {
        /// DWARF register number.
        register: u16,
        /// Offset added to the register.
        offset: i64,
    },
    /// CFA = result of this DWARF expression (evaluate with [`crate::eval`]).
    Expression(Vec<u8>),
}

/// How to recover a caller's register.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegisterRule {
    /// The register's value is lost.
    Undefined,
    /// The register keeps its value.
    SameValue,
    /// Saved in memory at CFA + offset.
    Offset(i64),
    /// The value is CFA + offset.
    ValOffset(i64),
    /// Saved in another register.
    Register(u16),
    /// Saved in memory at the address computed by the expression.
    Expression(Vec<u8>),
    /// The value is computed by the expression.
    ValExpression(Vec<u8>),
    /// The value is a constant.
    Constant(u64),
    /// Architecture-specific rule.
    Architectural,
}

/// The unwind rules in force at one pc.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnwindRow {
    /// First address the row applies to.
    pub start: FileAddr,
    /// First address past the row.
    pub end: FileAddr,
    /// The CFA rule.
    pub cfa: CfaRule,
    /// Rules for registers that are not "same value" by default.
    pub registers: Vec<(u16, RegisterRule)>,
    /// The DWARF register holding the return address (16, RIP, on x86-64).
    pub return_address_register: u16,
}

impl UnwindRow {
    /// Computes the CFA for the `RegisterOffset` rule from the current registers.
    pub fn cfa(&self, regs: &dyn RegisterReader) -> Result<u64> {
        match &self.cfa {
            CfaRule::RegisterOffset { register, offset } => {
                let v = regs.reg(*register).ok_or(Error::Register(*register))?;
                Ok(v.wrapping_add_signed(*offset))
            }
            CfaRule::Expression(_) => Err(Error::Evaluation("cfa given by an expression".into())),
        }
    }
}

fn convert<S: gimli::UnwindSection<R>>(
    section: &S,
    row: &gimli::UnwindTableRow<usize>,
    ra: u16,
) -> Result<UnwindRow> {
    let expr = |e: &gimli::UnwindExpression<usize>| -> Result<Vec<u8>> {
        Ok(reader_bytes(&e.get(section)?.0))
    };
    let cfa = match row.cfa() {
        gimli::CfaRule::RegisterAndOffset { register, offset } => CfaRule::RegisterOffset {
            register: register.0,
            offset: *offset,
        },
        gimli::CfaRule::Expression(e) => CfaRule::Expression(expr(e)?),
    };
    let mut registers = Vec::new();
    for (reg, rule) in row.registers() {
        let r = match rule {
            gimli::RegisterRule::Undefined => RegisterRule::Undefined,
            gimli::RegisterRule::SameValue => RegisterRule::SameValue,
            gimli::RegisterRule::Offset(o) => RegisterRule::Offset(*o),
            gimli::RegisterRule::ValOffset(o) => RegisterRule::ValOffset(*o),
            gimli::RegisterRule::Register(r) => RegisterRule::Register(r.0),
            gimli::RegisterRule::Expression(e) => RegisterRule::Expression(expr(e)?),
            gimli::RegisterRule::ValExpression(e) => RegisterRule::ValExpression(expr(e)?),
            gimli::RegisterRule::Constant(c) => RegisterRule::Constant(*c),
            _ => RegisterRule::Architectural,
        };
        registers.push((reg.0, r));
    }
    Ok(UnwindRow {
        start: FileAddr(row.start_address()),
        end: FileAddr(row.end_address()),
        cfa,
        registers,
        return_address_register: ra,
    })
}

impl Binary {
    /// The unwind row covering `pc`, from `.eh_frame` first, then `.debug_frame`.
    /// `None` when neither section describes `pc`.
    pub fn unwind_row(&self, pc: FileAddr) -> Result<Option<UnwindRow>> {
        let rows = || self.cfi.rows.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(row) = rows().get(&pc.0) {
            return Ok(row.clone());
        }
        let row = self.unwind_row_uncached(pc)?;
        let mut rows = rows();
        if rows.len() >= ROW_CACHE_MAX {
            rows.clear();
        }
        rows.insert(pc.0, row.clone());
        Ok(row)
    }

    /// Whether the function at `pc` has exception landing pads (its FDE names a
    /// language-specific data area): code there is also entered by the unwinder.
    pub fn has_landing_pads(&self, pc: FileAddr) -> bool {
        let Some(eh) = &self.cfi.eh_frame else {
            return false;
        };
        self.eh_fde(eh, pc.0).is_ok_and(|fde| fde.lsda().is_some())
    }

    fn unwind_row_uncached(&self, pc: FileAddr) -> Result<Option<UnwindRow>> {
        let cfi = &self.cfi;
        let mut ctx = Box::new(gimli::UnwindContext::<usize>::new());
        if let Some(eh) = &cfi.eh_frame {
            // One FDE lookup gives both the row and the CIE's return-address register.
            // (Looking the FDE up a second time with `fde_for_address` scanned the whole
            // `.eh_frame` linearly on every unwound frame: a third of a stack trace's time.)
            let found = self.eh_fde(eh, pc.0).and_then(|fde| {
                let ra = fde.cie().return_address_register().0;
                let row = fde.unwind_info_for_address(eh, &cfi.bases, &mut ctx, pc.0)?;
                Ok((row.clone(), ra))
            });
            match found {
                Ok((row, ra)) => return convert(eh, &row, ra).map(Some),
                Err(gimli::Error::NoUnwindInfoForAddress) => {}
                Err(e) => tracing::debug!("eh_frame lookup failed: {e}"),
            }
        }
        if let Some(df) = &cfi.debug_frame {
            let bases = gimli::BaseAddresses::default();
            match df.unwind_info_for_address(
                &bases,
                &mut ctx,
                pc.0,
                gimli::DebugFrame::cie_from_offset,
            ) {
                Ok(row) => {
                    let row = row.clone();
                    return convert(df, &row, 16).map(Some);
                }
                Err(gimli::Error::NoUnwindInfoForAddress) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(None)
    }

    /// The `.eh_frame` FDE covering `pc`: a binary search through `.eh_frame_hdr` when
    /// it has a table, else a scan of `.eh_frame`. gimli's own `EhHdrTable` lookup
    /// subtracts pointers unchecked, so a corrupt table is validated here first.
    fn eh_fde(
        &self,
        eh: &gimli::EhFrame<R>,
        pc: u64,
    ) -> std::result::Result<gimli::FrameDescriptionEntry<R>, gimli::Error> {
        let bases = &self.cfi.bases;
        let indexed = (self.cfi.eh_frame_hdr.as_ref()).and_then(|hdr| Some((hdr, hdr.table()?)));
        let Some((hdr, table)) = indexed else {
            return eh.fde_for_address(bases, pc, gimli::EhFrame::cie_from_offset);
        };
        let ptr = table.lookup(pc, bases)?.direct()?;
        let base = hdr.eh_frame_ptr().direct()?;
        let offset = ptr
            .checked_sub(base)
            .and_then(|o| usize::try_from(o).ok())
            .ok_or(gimli::Error::NoUnwindInfoForAddress)?;
        let fde = eh.fde_from_offset(
            bases,
            gimli::EhFrameOffset(offset),
            gimli::EhFrame::cie_from_offset,
        )?;
        if !fde.contains(pc) {
            return Err(gimli::Error::NoUnwindInfoForAddress);
        }
        Ok(fde)
    }
}

impl Binary {
    /// The caller's registers, unwound one frame from the frame described by `ctx`
    /// (its pc, registers and memory). `rsp` (7) becomes the CFA, `rip` (16) the return
    /// address; registers without a rule keep their value, as gdb assumes for
    /// callee-saved registers. `None` when no unwind row covers the pc.
    pub fn unwind_caller(
        &self,
        ctx: &crate::EvalContext<'_>,
    ) -> Result<Option<std::collections::HashMap<u16, u64>>> {
        let Some(row) = self.unwind_row(ctx.bias.to_file(ctx.pc))? else {
            return Ok(None);
        };
        let regs = self.unwind_caller_with(&row, ctx)?;
        Ok(Some(
            (0u16..)
                .zip(regs)
                .filter_map(|(n, v)| Some((n, v?)))
                .collect(),
        ))
    }

    /// [`Binary::unwind_caller`] with the unwind row covering `ctx.pc` already at hand
    /// (a breakpoint site keeps its row), for the general registers 0–16 only, indexed
    /// by DWARF number: no map is built, as a condition may unwind on every hit.
    pub fn unwind_caller_with(
        &self,
        row: &UnwindRow,
        ctx: &crate::EvalContext<'_>,
    ) -> Result<[Option<u64>; 17]> {
        let cfa = self.compute_cfa(row, ctx)?;
        let read = |addr: u64| -> Result<u64> {
            let mut buf = [0u8; 8];
            ctx.memory
                .read(crate::RuntimeAddr(addr), &mut buf)
                .map_err(|_| Error::Memory { addr, len: 8 })?;
            Ok(u64::from_le_bytes(buf))
        };
        let mut out = [None; 17];
        for (reg, slot) in (0u16..).zip(out.iter_mut()) {
            *slot = ctx.registers.reg(reg);
        }
        out[7] = Some(cfa);
        if let Some(slot) = out.get_mut(usize::from(row.return_address_register)) {
            *slot = None;
        }
        for (reg, rule) in &row.registers {
            // Only the general registers are unwound (the callers' expressions and the
            // next unwinding step read no others).
            if usize::from(*reg) >= out.len() {
                continue;
            }
            let value = match rule {
                RegisterRule::Undefined => {
                    if let Some(slot) = out.get_mut(usize::from(*reg)) {
                        *slot = None;
                    }
                    continue;
                }
                RegisterRule::SameValue | RegisterRule::Architectural => continue,
                RegisterRule::Offset(o) => read(cfa.wrapping_add_signed(*o))?,
                RegisterRule::ValOffset(o) => cfa.wrapping_add_signed(*o),
                RegisterRule::Register(r) => ctx.registers.reg(*r).ok_or(Error::Register(*r))?,
                RegisterRule::Constant(c) => *c,
                RegisterRule::Expression(bytes) | RegisterRule::ValExpression(bytes) => {
                    let addr = self.cfi_expression(bytes, cfa, ctx)?;
                    if matches!(rule, RegisterRule::Expression(_)) {
                        read(addr)?
                    } else {
                        addr
                    }
                }
            };
            if let Some(slot) = out.get_mut(usize::from(*reg)) {
                *slot = Some(value);
            }
        }
        Ok(out)
    }

    /// Evaluates a CFI register-rule expression, which starts with the CFA pushed.
    fn cfi_expression(&self, bytes: &[u8], cfa: u64, ctx: &crate::EvalContext<'_>) -> Result<u64> {
        let mut with_cfa = Vec::with_capacity(bytes.len() + 10);
        // DW_OP_constu CFA, then the rule's own operations.
        with_cfa.push(0x10);
        let mut v = cfa;
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                with_cfa.push(byte);
                break;
            }
            with_cfa.push(byte | 0x80);
        }
        with_cfa.extend_from_slice(bytes);
        let expr = crate::LocationExpr::standalone(with_cfa);
        let pieces = self.evaluate_location(&expr, None, ctx)?;
        match pieces.first().map(|p| &p.location) {
            Some(crate::PieceLocation::Memory(a)) => Ok(a.0),
            Some(crate::PieceLocation::Value(b)) => {
                let mut x = [0u8; 8];
                for (d, s) in x.iter_mut().zip(b) {
                    *d = *s;
                }
                Ok(u64::from_le_bytes(x))
            }
            _ => Err(Error::Evaluation(
                "unusable register rule expression".into(),
            )),
        }
    }
}
