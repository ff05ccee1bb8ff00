//! Location evaluation: DWARF expressions run through gimli's `Evaluation` state
//! machine, with memory and registers supplied by the caller through small traits.

use std::collections::HashMap;

use crate::addr::{FileAddr, LoadBias, RuntimeAddr};
use crate::binary::Binary;
use crate::error::{Error, Result};
use crate::reader::{Bytes, R};

/// Reads the debuggee's memory (a live process, a core dump, or a test buffer).
pub trait MemoryReader {
    /// Fills `buf` with the bytes at runtime address `addr`, or fails.
    fn read(&self, addr: RuntimeAddr, buf: &mut [u8]) -> std::io::Result<()>;
}

/// Reads the registers of the frame being inspected, by DWARF register number
/// (x86-64: 0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi, 5 rdi, 6 rbp, 7 rsp, 8–15 r8–r15, 16 rip).
pub trait RegisterReader {
    /// The register's value, or `None` when it is not known in this frame.
    fn reg(&self, dwarf_regno: u16) -> Option<u64>;

    /// The first `len` bytes of the register's contents, little-endian, or fewer when the
    /// register is narrower: the vector registers (17–32, xmm0–15, and their ymm
    /// extensions) are 16 or 32 bytes wide, the x87 registers (33–40, st0–st7) 10 bytes.
    /// By default the 8 bytes of [`RegisterReader::reg`].
    fn reg_bytes(&self, dwarf_regno: u16, len: usize) -> Option<Vec<u8>> {
        let mut bytes = self.reg(dwarf_regno)?.to_le_bytes().to_vec();
        bytes.truncate(len);
        Some(bytes)
    }

    /// For entry registers: the value the caller's call site gives the parameter whose
    /// DIE is at `.debug_info` offset `die` (`DW_OP_GNU_parameter_ref`).
    fn parameter(&self, die: u64) -> Option<u64> {
        let _ = die;
        None
    }
}

impl RegisterReader for HashMap<u16, u64> {
    fn reg(&self, dwarf_regno: u16) -> Option<u64> {
        self.get(&dwarf_regno).copied()
    }
}

impl<F: Fn(u16) -> Option<u64>> RegisterReader for F {
    fn reg(&self, dwarf_regno: u16) -> Option<u64> {
        self(dwarf_regno)
    }
}

/// Finds where the thread-local storage block of the module being inspected lives in the
/// thread being inspected (`DW_OP_form_tls_address` adds a variable's offset to it). The
/// caller knows the C library's layout; asked only when an expression needs it.
pub trait ThreadLocalStorage {
    /// The runtime address of the module's TLS block, or why it cannot be known.
    fn block(&self) -> std::result::Result<u64, String>;
}

/// Memory made of byte buffers at given runtime addresses (tests, core dumps).
#[derive(Clone, Debug, Default)]
pub struct MemoryImage {
    regions: Vec<(u64, Vec<u8>)>,
}

impl MemoryImage {
    /// An empty image: every read fails.
    pub fn new() -> MemoryImage {
        MemoryImage::default()
    }

    /// Adds `bytes` at runtime address `addr`.
    pub fn add(&mut self, addr: RuntimeAddr, bytes: Vec<u8>) {
        self.regions.push((addr.0, bytes));
    }
}

impl MemoryReader for MemoryImage {
    fn read(&self, addr: RuntimeAddr, buf: &mut [u8]) -> std::io::Result<()> {
        for (base, bytes) in &self.regions {
            let Some(off) = addr.0.checked_sub(*base) else {
                continue;
            };
            let Ok(off) = usize::try_from(off) else {
                continue;
            };
            if let Some(src) = off
                .checked_add(buf.len())
                .and_then(|end| bytes.get(off..end))
            {
                buf.copy_from_slice(src);
                return Ok(());
            }
        }
        Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "address not in image",
        ))
    }
}

/// A DWARF expression as stored in the binary, with what is needed to run it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocationExpr {
    pub(crate) bytes: Vec<u8>,
    pub(crate) encoding: gimli::Encoding,
    pub(crate) unit: usize,
}

impl LocationExpr {
    /// An expression that does not come from a unit: CFI expressions of an
    /// [`crate::UnwindRow`], or hand-written ones. It is decoded as x86-64 DWARF 4;
    /// operations that need a unit (`DW_OP_addrx`, typed stack values) fail.
    pub fn standalone(bytes: Vec<u8>) -> LocationExpr {
        LocationExpr {
            bytes,
            encoding: gimli::Encoding {
                address_size: 8,
                format: gimli::Format::Dwarf32,
                version: 4,
            },
            unit: usize::MAX,
        }
    }

    /// The raw expression bytes (for display and debugging).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The expression as one that computes a value (`DW_AT_call_value`): a
    /// `DW_OP_stack_value` is appended unless it already ends with one (or describes its
    /// value some other way), so a typed result (`DW_OP_const_type` of a float) is the
    /// value rather than an address, which must be integral.
    pub fn to_value_expr(&self) -> LocationExpr {
        let mut out = self.clone();
        const DW_OP_STACK_VALUE: u8 = 0x9f;
        let endian = gimli::RunTimeEndian::Little;
        let mut reader = gimli::EndianSlice::new(&out.bytes, endian);
        let mut last = None;
        while !gimli::Reader::is_empty(&reader) {
            match gimli::Operation::parse(&mut reader, out.encoding) {
                Ok(op) => last = Some(op),
                Err(_) => return out,
            }
        }
        let computes_value = matches!(
            last,
            Some(
                gimli::Operation::StackValue
                    | gimli::Operation::ImplicitValue { .. }
                    | gimli::Operation::Piece { .. }
                    | gimli::Operation::Register { .. }
                    | gimli::Operation::ImplicitPointer { .. }
            )
        );
        if last.is_some() && !computes_value {
            out.bytes.push(DW_OP_STACK_VALUE);
        }
        out
    }
}

/// What the evaluator needs to know about the frame being inspected.
pub struct EvalContext<'a> {
    /// The debuggee's memory.
    pub memory: &'a dyn MemoryReader,
    /// The frame's registers.
    pub registers: &'a dyn RegisterReader,
    /// The load bias of the module (zero for non-PIE executables).
    pub bias: LoadBias,
    /// The frame's pc (for the CFA and location lists).
    pub pc: RuntimeAddr,
    /// The frame base (`DW_AT_frame_base` value), when the caller already knows it;
    /// otherwise the function's frame base expression is evaluated.
    pub frame_base: Option<u64>,
    /// The canonical frame address, when the caller already knows it; otherwise it is
    /// computed from the unwind tables and `registers`.
    pub cfa: Option<u64>,
    /// The module's thread-local storage block in this thread, for `__thread` variables.
    pub tls: Option<&'a dyn ThreadLocalStorage>,
    /// Registers as they were on entry to the function (the caller's frame after
    /// unwinding), for `DW_OP_entry_value`.
    pub entry_registers: Option<&'a dyn RegisterReader>,
}

impl<'a> EvalContext<'a> {
    /// The context of a frame known only by its registers: no frame base, CFA, thread
    /// pointer or entry registers yet (each is computed or refused when needed).
    pub fn of_frame(
        memory: &'a dyn MemoryReader,
        registers: &'a dyn RegisterReader,
        bias: LoadBias,
        pc: RuntimeAddr,
    ) -> EvalContext<'a> {
        EvalContext {
            memory,
            registers,
            bias,
            pc,
            frame_base: None,
            cfa: None,
            tls: None,
            entry_registers: None,
        }
    }
}

/// Where one piece of a value lives.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PieceLocation {
    /// In memory at this runtime address.
    Memory(RuntimeAddr),
    /// In a DWARF register.
    Register(u16),
    /// Not stored anywhere: the value itself (little-endian bytes).
    Value(Vec<u8>),
    /// A pointer to a value that was optimized away (`DW_OP_implicit_pointer`).
    ImplicitPointer {
        /// `.debug_info` offset of the pointed-to variable.
        target: u64,
        /// Offset into it.
        byte_offset: i64,
    },
    /// Optimized out.
    OptimizedOut,
}

/// One piece of an evaluated location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    /// Where it lives.
    pub location: PieceLocation,
    /// Size in bits; `None` means the whole value.
    pub size_bits: Option<u64>,
    /// Bit offset within the location.
    pub bit_offset: Option<u64>,
}

/// Reads `size` bytes of a value described by `pieces`; any part optimized out fails.
pub fn read_pieces(
    pieces: &[Piece],
    size: usize,
    memory: &dyn MemoryReader,
    registers: &dyn RegisterReader,
) -> Result<Vec<u8>> {
    let (bytes, known) = read_pieces_partial(pieces, size, memory, registers)?;
    if known.iter().any(|k| !k) {
        return Err(Error::Evaluation("optimized out".into()));
    }
    Ok(bytes)
}

/// Reads `size` bytes of a value described by `pieces`, and which of them are known: a
/// piece with no location (an empty `DW_OP_piece`) is optimized out while the others
/// are read, as gdb shows a struct with only its missing members `<optimized out>`.
pub fn read_pieces_partial(
    pieces: &[Piece],
    size: usize,
    memory: &dyn MemoryReader,
    registers: &dyn RegisterReader,
) -> Result<(Vec<u8>, Vec<bool>)> {
    let mut out = Vec::with_capacity(size);
    let mut known: Vec<bool> = Vec::with_capacity(size);
    for piece in pieces {
        let want = match piece.size_bits {
            Some(bits) => usize::try_from(bits.div_ceil(8)).unwrap_or(usize::MAX),
            None => size.saturating_sub(out.len()),
        };
        if piece.bit_offset.is_some_and(|b| b % 8 != 0) {
            return Err(Error::Evaluation(
                "bit-shifted pieces are not supported".into(),
            ));
        }
        let skip = piece
            .bit_offset
            .map_or(0, |b| usize::try_from(b / 8).unwrap_or(usize::MAX));
        match &piece.location {
            PieceLocation::Memory(addr) => {
                if want > (1 << 24) {
                    return Err(Error::Evaluation(format!(
                        "piece of {want} bytes is too large"
                    )));
                }
                let mut buf = vec![0; want];
                let at = *addr + skip as u64;
                memory.read(at, &mut buf).map_err(|_| Error::Memory {
                    addr: at.0,
                    len: want,
                })?;
                out.extend_from_slice(&buf);
            }
            PieceLocation::Register(r) => {
                let bytes = registers
                    .reg_bytes(*r, want.saturating_add(skip))
                    .ok_or(Error::Register(*r))?;
                out.extend((0..want).map(|i| {
                    i.checked_add(skip)
                        .and_then(|j| bytes.get(j))
                        .copied()
                        .unwrap_or(0)
                }));
            }
            PieceLocation::Value(bytes) => {
                out.extend((0..want).map(|i| {
                    i.checked_add(skip)
                        .and_then(|j| bytes.get(j))
                        .copied()
                        .unwrap_or(0)
                }));
            }
            PieceLocation::ImplicitPointer { .. } => {
                return Err(Error::Evaluation("implicit pointer".into()));
            }
            PieceLocation::OptimizedOut => {
                if want > (1 << 24) {
                    return Err(Error::Evaluation("optimized out".into()));
                }
                out.resize(out.len() + want, 0);
            }
        }
        let available = !matches!(piece.location, PieceLocation::OptimizedOut);
        known.resize(out.len(), available);
    }
    out.truncate(size);
    known.truncate(size);
    if out.len() < size {
        return Err(Error::Evaluation(format!(
            "location describes {} of {size} bytes",
            out.len()
        )));
    }
    Ok((out, known))
}

fn value_bytes(v: gimli::Value) -> Vec<u8> {
    match v {
        gimli::Value::Generic(x) | gimli::Value::U64(x) => x.to_le_bytes().to_vec(),
        gimli::Value::I8(x) => x.to_le_bytes().to_vec(),
        gimli::Value::U8(x) => x.to_le_bytes().to_vec(),
        gimli::Value::I16(x) => x.to_le_bytes().to_vec(),
        gimli::Value::U16(x) => x.to_le_bytes().to_vec(),
        gimli::Value::I32(x) => x.to_le_bytes().to_vec(),
        gimli::Value::U32(x) => x.to_le_bytes().to_vec(),
        gimli::Value::I64(x) => x.to_le_bytes().to_vec(),
        gimli::Value::F32(x) => x.to_le_bytes().to_vec(),
        gimli::Value::F64(x) => x.to_le_bytes().to_vec(),
    }
}

impl Binary {
    /// Evaluates a location expression to pieces. `frame_base` is the frame base
    /// expression of the enclosing function (from [`crate::Scope`]), used when the
    /// context does not give the frame base directly.
    pub fn evaluate_location(
        &self,
        expr: &LocationExpr,
        frame_base: Option<&LocationExpr>,
        ctx: &EvalContext<'_>,
    ) -> Result<Vec<Piece>> {
        self.evaluate_inner(expr, frame_base, ctx, 0)
    }

    fn evaluate_inner(
        &self,
        expr: &LocationExpr,
        frame_base: Option<&LocationExpr>,
        ctx: &EvalContext<'_>,
        nesting: u32,
    ) -> Result<Vec<Piece>> {
        if nesting > 4 {
            return Err(Error::Evaluation("expression nesting too deep".into()));
        }
        if expr.bytes.is_empty() {
            // An empty location description: the value is optimized out.
            return Ok(vec![Piece {
                location: PieceLocation::OptimizedOut,
                size_bits: None,
                bit_offset: None,
            }]);
        }
        let endian = gimli::Reader::endian(gimli::Section::reader(&self.dwarf().debug_info));
        let reader = R::new(
            Bytes::Owned(std::sync::Arc::from(expr.bytes.as_slice())),
            endian,
        );
        let mut eval = gimli::Expression(reader).evaluation(expr.encoding);
        eval.set_max_iterations(10_000);
        let mut result = eval.evaluate()?;
        loop {
            use gimli::EvaluationResult as E;
            result = match result {
                E::Complete => break,
                E::RequiresMemory { address, size, .. } => {
                    let mut buf = [0u8; 8];
                    let n = usize::from(size).min(8);
                    ctx.memory
                        .read(RuntimeAddr(address), &mut buf[..n])
                        .map_err(|_| Error::Memory {
                            addr: address,
                            len: n,
                        })?;
                    eval.resume_with_memory(gimli::Value::Generic(u64::from_le_bytes(buf)))?
                }
                E::RequiresRegister {
                    register,
                    base_type,
                } => {
                    let v = ctx
                        .registers
                        .reg(register.0)
                        .ok_or(Error::Register(register.0))?;
                    // `DW_OP_regval_type`: the register's bits as that type (a float in
                    // xmm0 is its bits, not a number to convert).
                    let value = self.typed_bits(expr.unit, base_type, v)?;
                    eval.resume_with_register(value)?
                }
                E::RequiresFrameBase => {
                    let fb = match ctx.frame_base {
                        Some(fb) => fb,
                        None => {
                            let fb_expr = frame_base
                                .ok_or_else(|| Error::Evaluation("no frame base".into()))?;
                            self.frame_base_value(fb_expr, ctx, nesting)?
                        }
                    };
                    eval.resume_with_frame_base(fb)?
                }
                E::RequiresCallFrameCfa => {
                    let cfa = match ctx.cfa {
                        Some(c) => c,
                        None => {
                            let row = self
                                .unwind_row(ctx.bias.to_file(ctx.pc))?
                                .ok_or_else(|| Error::Evaluation("no unwind info at pc".into()))?;
                            self.compute_cfa(&row, ctx)?
                        }
                    };
                    eval.resume_with_call_frame_cfa(cfa)?
                }
                E::RequiresRelocatedAddress(a) => {
                    eval.resume_with_relocated_address(ctx.bias.to_runtime(FileAddr(a)).0)?
                }
                E::RequiresIndexedAddress { index, .. } => {
                    let unit = self.unit(expr.unit)?;
                    let a = unit.r().address(index)?;
                    eval.resume_with_indexed_address(ctx.bias.to_runtime(FileAddr(a)).0)?
                }
                E::RequiresTls(offset) => {
                    let base = ctx
                        .tls
                        .ok_or_else(|| {
                            Error::Evaluation("no thread to read thread-local storage of".into())
                        })?
                        .block()
                        .map_err(Error::Evaluation)?;
                    eval.resume_with_tls(base.wrapping_add(offset))?
                }
                E::RequiresBaseType(offset) => {
                    let unit = self.unit(expr.unit)?;
                    let die = unit.entry(offset)?;
                    let enc = match die.attr_value(gimli::DW_AT_encoding) {
                        Some(gimli::AttributeValue::Encoding(e)) => e,
                        _ => gimli::DW_ATE_unsigned,
                    };
                    let size = crate::units::attr_u64(&die, gimli::DW_AT_byte_size).unwrap_or(8);
                    let vt = gimli::ValueType::from_encoding(enc, size)
                        .unwrap_or(gimli::ValueType::Generic);
                    eval.resume_with_base_type(vt)?
                }
                E::RequiresEntryValue(inner) => {
                    // As in gdb, an entry value that cannot be recovered from the
                    // caller's call site makes the value optimized out.
                    let regs = ctx.entry_registers.ok_or_else(|| {
                        Error::OptimizedOut("entry value needs the caller's call site".into())
                    })?;
                    let inner = LocationExpr {
                        bytes: crate::units::reader_bytes(&inner.0),
                        encoding: expr.encoding,
                        unit: expr.unit,
                    };
                    // `DW_OP_entry_value(DW_OP_regval_type R T)` (gcc's xmm arguments): the
                    // entry register's bits as T.
                    if let Some((reg, base_type)) = regval_type_only(&inner) {
                        let v = regs.reg(reg).ok_or_else(|| {
                            Error::OptimizedOut(format!(
                                "entry value of register {reg} not described by the call site"
                            ))
                        })?;
                        let value = self.typed_bits(expr.unit, gimli::UnitOffset(base_type), v)?;
                        result = eval.resume_with_entry_value(value)?;
                        continue;
                    }
                    let sub = EvalContext {
                        registers: regs,
                        entry_registers: None,
                        frame_base: None,
                        cfa: None,
                        ..*ctx
                    };
                    // A register the caller's call site does not describe (an xmm
                    // argument, a clobbered one): the entry value is unknown, which gdb
                    // shows as optimized out.
                    let pieces = self
                        .evaluate_inner(&inner, None, &sub, nesting + 1)
                        .map_err(|e| match e {
                            Error::Register(r) => Error::OptimizedOut(format!(
                                "entry value of register {r} not described by the call site"
                            )),
                            e => e,
                        })?;
                    let v = match pieces.first().map(|p| &p.location) {
                        Some(PieceLocation::Register(r)) => regs.reg(*r).ok_or_else(|| {
                            Error::OptimizedOut(format!(
                                "entry value of register {r} not described by the call site"
                            ))
                        })?,
                        Some(PieceLocation::Memory(a)) => a.0,
                        Some(PieceLocation::Value(b)) => {
                            let mut x = [0u8; 8];
                            for (d, s) in x.iter_mut().zip(b) {
                                *d = *s;
                            }
                            u64::from_le_bytes(x)
                        }
                        _ => return Err(Error::Evaluation("unusable entry value".into())),
                    };
                    eval.resume_with_entry_value(gimli::Value::Generic(v))?
                }
                E::RequiresParameterRef(offset) => {
                    // A clone's parameter the caller passed but the clone does not
                    // keep: its value comes from the call site, as gdb finds it.
                    let die = self
                        .units()
                        .get(expr.unit)
                        .map(|u| u.offset + offset.0 as u64)
                        .ok_or(Error::BadReference(offset.0 as u64))?;
                    let v = ctx
                        .entry_registers
                        .and_then(|regs| regs.parameter(die))
                        .ok_or_else(|| {
                            Error::OptimizedOut("parameter not described by the call site".into())
                        })?;
                    eval.resume_with_parameter_ref(v)?
                }
                E::RequiresAtLocation(_) => {
                    return Err(Error::Evaluation("DW_OP_call is not supported".into()));
                }
                _ => return Err(Error::Evaluation("unsupported operation".into())),
            };
        }
        Ok(eval
            .result()
            .into_iter()
            .map(|p| Piece {
                size_bits: p.size_in_bits,
                bit_offset: p.bit_offset,
                location: match p.location {
                    gimli::Location::Empty => PieceLocation::OptimizedOut,
                    gimli::Location::Register { register } => PieceLocation::Register(register.0),
                    gimli::Location::Address { address } => {
                        PieceLocation::Memory(RuntimeAddr(address))
                    }
                    gimli::Location::Value { value } => PieceLocation::Value(value_bytes(value)),
                    gimli::Location::Bytes { value } => {
                        PieceLocation::Value(crate::units::reader_bytes(&value))
                    }
                    gimli::Location::ImplicitPointer { value, byte_offset } => {
                        PieceLocation::ImplicitPointer {
                            target: value.0 as u64,
                            byte_offset,
                        }
                    }
                },
            })
            .collect())
    }

    /// The canonical frame address of the frame described by `row`, evaluating an
    /// expression rule when needed.
    pub fn compute_cfa(&self, row: &crate::UnwindRow, ctx: &EvalContext<'_>) -> Result<u64> {
        match &row.cfa {
            crate::CfaRule::RegisterOffset { .. } => row.cfa(ctx.registers),
            crate::CfaRule::Expression(bytes) => {
                let expr = LocationExpr::standalone(bytes.clone());
                let pieces = self.evaluate_inner(&expr, None, ctx, 1)?;
                match pieces.first().map(|p| &p.location) {
                    Some(PieceLocation::Memory(a)) => Ok(a.0),
                    _ => Err(Error::Evaluation("cfa expression gave no address".into())),
                }
            }
        }
    }

    /// The value of a frame base: the address for a memory location (as produced by
    /// `DW_OP_call_frame_cfa`), the register's contents for a register location
    /// (`DW_OP_reg6`).
    fn frame_base_value(
        &self,
        fb: &LocationExpr,
        ctx: &EvalContext<'_>,
        nesting: u32,
    ) -> Result<u64> {
        let pieces = self.evaluate_inner(fb, None, ctx, nesting + 1)?;
        match pieces.first().map(|p| &p.location) {
            Some(PieceLocation::Memory(a)) => Ok(a.0),
            Some(PieceLocation::Register(r)) => ctx.registers.reg(*r).ok_or(Error::Register(*r)),
            Some(PieceLocation::Value(b)) => {
                let mut x = [0u8; 8];
                for (d, s) in x.iter_mut().zip(b) {
                    *d = *s;
                }
                Ok(u64::from_le_bytes(x))
            }
            _ => Err(Error::Evaluation("unusable frame base".into())),
        }
    }
}

/// `(register, base type offset)` when an expression is exactly one
/// `DW_OP_regval_type` (what gcc puts in `DW_OP_entry_value` for an xmm argument).
fn regval_type_only(expr: &LocationExpr) -> Option<(u16, usize)> {
    const DW_OP_REGVAL_TYPE: u8 = 0xa5;
    if expr.bytes.first() != Some(&DW_OP_REGVAL_TYPE) {
        return None;
    }
    let mut reader = gimli::EndianSlice::new(&expr.bytes, gimli::RunTimeEndian::Little);
    let op = gimli::Operation::parse(&mut reader, expr.encoding).ok()?;
    match op {
        gimli::Operation::RegisterOffset {
            register,
            offset: 0,
            base_type,
        } if gimli::Reader::is_empty(&reader) => Some((register.0, base_type.0)),
        _ => None,
    }
}

impl Binary {
    /// A register's bits as the base type at `base_type` in `unit` (0: untyped).
    fn typed_bits(
        &self,
        unit: usize,
        base_type: gimli::UnitOffset<usize>,
        bits: u64,
    ) -> Result<gimli::Value> {
        if base_type.0 == 0 {
            return Ok(gimli::Value::Generic(bits));
        }
        let u = self.unit(unit)?;
        let die = u.entry(base_type)?;
        let enc = match die.attr_value(gimli::DW_AT_encoding) {
            Some(gimli::AttributeValue::Encoding(e)) => e,
            _ => gimli::DW_ATE_unsigned,
        };
        let size = crate::units::attr_u64(&die, gimli::DW_AT_byte_size).unwrap_or(8);
        let vt = gimli::ValueType::from_encoding(enc, size).unwrap_or(gimli::ValueType::Generic);
        Ok(match vt {
            gimli::ValueType::F32 => gimli::Value::F32(f32::from_bits(bits as u32)),
            gimli::ValueType::F64 => gimli::Value::F64(f64::from_bits(bits)),
            vt => gimli::Value::from_u64(vt, bits)?,
        })
    }
}
