//! Evaluation of an [`Expr`] in one frame: values, names, locations and loading; the
//! operator families live in the submodules.

use super::*;
use crate::system::is_system;

mod access;
mod arith;
mod cast;
mod names;

pub(in crate::expr) use arith::{common_int, int_val, promote, wrap};

/// The type of an evaluated value: a DWARF type, or one the expression made up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ETy {
    Dwarf(TypeRef),
    /// An array type with its first `usize` dimensions already indexed.
    SubArray(TypeRef, usize),
    Int(IntTy),
    /// A C++ `bool` made by the evaluator (`empty()`), shown as `true`/`false`.
    Bool,
    Double,
    Ptr(Box<ETy>),
    Void,
    /// A string literal's bytes.
    Str,
}

/// Where a value is.
#[derive(Clone, Debug)]
pub(crate) enum Loc {
    Mem(u64),
    Val(Vec<u8>),
    /// A pointer the compiler optimized away (`DW_OP_implicit_pointer`): it points
    /// `offset` bytes into the variable (or literal) whose DIE is at `target`, which may
    /// live in registers or nowhere in memory. gdb shows it as `<synthetic pointer>`.
    Implicit {
        target: u64,
        offset: i64,
    },
}

/// An evaluated value.
#[derive(Clone, Debug)]
pub(crate) struct EVal {
    pub ty: ETy,
    pub loc: Loc,
}

/// A type seen through typedefs: what operations can do with it.
pub(in crate::expr) enum Shape {
    Int(IntTy),
    Float(u8),
    Ptr(ETy),
    Array { elem: ETy },
    Composite { members: Vec<symbols::Member> },
    Void,
    Other,
}

/// A number after loading.
#[derive(Clone, Copy, Debug)]
pub(in crate::expr) enum Num {
    I(i128, IntTy),
    F(f64),
    P(u64),
}

/// What an expression can see: one frame.
pub(crate) struct Env<'a> {
    pub binary: &'a Arc<Binary>,
    pub bias: LoadBias,
    pub mem: &'a dyn MemoryReader,
    pub regs: &'a dyn symbols::RegisterReader,
    pub pc: u64,
    pub cfa: Option<u64>,
    pub scope: &'a Scope,
    /// Which (inlined) frame's locals are visible.
    pub inline_index: u32,
    /// Enumerator constants of the main executable (`RED` in `color == RED`).
    pub enums: Option<&'a Enumerators>,
    /// Registers on entry to the frame's function, from the caller's call site (for
    /// `DW_OP_entry_value`).
    pub entry_regs: Option<&'a dyn symbols::RegisterReader>,
    /// Every module of the process, for the globals of the other modules (`None`: this
    /// binary's only).
    pub modules: Option<&'a dyn ModuleGlobals>,
    /// Where this module's `__thread` variables live in the frame's thread (`None`: no
    /// thread, as for globals read without a stop).
    pub tls: Option<&'a crate::tls::ThreadTls<'a>>,
}

/// The process's modules as names see them, main executable first: passed in (the
/// module map implements it) so that expressions do not depend on the module map, which
/// depends on them through the code it places for conditions.
pub(crate) trait ModuleGlobals {
    /// Calls `f` with each module's path, load bias and symbols (modules without symbols
    /// are left out) until it returns `Some`, and returns that.
    fn find_map(&self, f: &mut GlobalFinder<'_>) -> Option<Result<EVal>>;
}

/// What [`ModuleGlobals::find_map`] calls for each module: its path, load bias and symbols.
pub(crate) type GlobalFinder<'f> =
    dyn FnMut(&std::path::Path, LoadBias, &Arc<Binary>) -> Option<Result<EVal>> + 'f;

/// The enumerators of a binary's enum types, looked up by name in its name table.
#[derive(Debug)]
pub struct Enumerators {
    binary: Arc<Binary>,
}

impl Enumerators {
    /// Enumerators of `binary`'s enum types (read lazily).
    pub fn new(binary: Arc<Binary>) -> Enumerators {
        Enumerators { binary }
    }

    /// The value and enum type of an enumerator, by its name as C++ qualifies it
    /// (`geo::Color::Blue`, `geo::Blue`, `geo::Mode::Slow` of an `enum class`), or by
    /// its own name (`Blue`, wherever its enum is).
    pub(crate) fn get(&self, name: &str) -> Option<(i128, TypeRef)> {
        if let Some(found) = self.binary.enumerator_named(name) {
            return Some(found);
        }
        // `geo::Color::Blue` of an unscoped enum: the table has it as `geo::Blue` (its
        // scope's), with the enum's own name left out.
        let parts = crate::expr::qualified::split_path(name);
        if parts.len() < 2 {
            return None;
        }
        let enum_name = parts[parts.len() - 2];
        let mut shorter = parts.clone();
        shorter.remove(parts.len() - 2);
        let (v, t) = self.binary.enumerator_named(&shorter.join("::"))?;
        let type_name = self.binary.type_name(t).ok()?;
        let own = crate::expr::qualified::split_path(&type_name);
        (own.last() == Some(&enum_name)).then_some((v, t))
    }
}

impl Env<'_> {
    /// A truth value: a `bool` (`true`/`false`) in a C++ frame, as gdb answers there;
    /// C's `int` 0/1 elsewhere.
    pub(in crate::expr) fn truth(&self, b: bool) -> EVal {
        if self.cpp_frame() {
            EVal {
                ty: ETy::Bool,
                loc: Loc::Val(vec![u8::from(b)]),
            }
        } else {
            int_val(i128::from(b), INT)
        }
    }

    /// Whether the frame's code is C++ (its unit's `DW_AT_language`).
    pub(in crate::expr) fn cpp_frame(&self) -> bool {
        self.pc != 0
            && matches!(
                self.binary
                    .language_at(self.bias.to_file(RuntimeAddr(self.pc))),
                Some(symbols::Language::Cpp)
            )
    }

    pub(in crate::expr) fn err<T>(msg: impl Into<String>) -> Result<T> {
        Err(Error::Eval(msg.into()))
    }

    pub(crate) fn eval(&self, e: &Expr) -> Result<EVal> {
        self.eval_depth(e, 0)
    }

    pub(in crate::expr) fn eval_depth(&self, e: &Expr, depth: u32) -> Result<EVal> {
        if depth > MAX_DEPTH {
            return Self::err("expression nested too deeply");
        }
        let d = depth + 1;
        match e {
            Expr::Int(v, ty) => Ok(int_val(*v, *ty)),
            Expr::Char(c) => Ok(self.char_literal(*c)),
            Expr::Cond(c, a, b) => {
                // As gdb evaluates it: only the chosen operand, whose value is the
                // result as it is (gdb applies no usual arithmetic conversions between
                // the two operands: `0 ? g_uint : -9` is -9, not 4294967287).
                let pick = if self.truthy(&self.eval_depth(c, d)?)? {
                    a
                } else {
                    b
                };
                self.eval_depth(pick, d)
            }
            Expr::Float(v) => Ok(EVal {
                ty: ETy::Double,
                loc: Loc::Val(v.to_le_bytes().to_vec()),
            }),
            Expr::Ident(name) => self.variable(name),
            Expr::Register(name) => {
                let (n, size) = dwarf_register(name)
                    .ok_or_else(|| Error::Eval(format!("no register '${name}'")))?;
                let v = self.regs.reg(n).ok_or_else(|| {
                    Error::Eval(format!("register '${name}' is not available in this frame"))
                })?;
                let ty = if n == 16 {
                    ETy::Ptr(Box::new(ETy::Void))
                } else {
                    ETy::Int(IntTy { size, signed: true })
                };
                Ok(EVal {
                    ty,
                    loc: Loc::Val(v.to_le_bytes()[..size as usize].to_vec()),
                })
            }
            Expr::Member(base, name) => {
                // `.` follows references, `Box` and pointers, as Rust's (and gdb's) does.
                let b = self.auto_deref(self.eval_depth(base, d)?)?;
                self.member(&b, name)
            }
            Expr::Arrow(base, name) => {
                let b = self.eval_depth(base, d)?;
                let target = self.deref(&b)?;
                self.member(&target, name)
            }
            Expr::Index(base, index) => {
                let mut b = self.eval_depth(base, d)?;
                let i = self.eval_depth(index, d)?;
                // In C++, `[]` on a pointer or an array (also through a reference) is
                // the built-in one: only a class value (or a reference to one) is a
                // library container whose rules apply. Rust references and `Box` are
                // followed to what they point at.
                let cpp = self.is_foreign(&b.ty) && !self.is_rust(&b.ty);
                if cpp {
                    b = self.peel_references(b)?;
                }
                let builtin =
                    cpp && matches!(self.shape(&b.ty)?, Shape::Ptr(_) | Shape::Array { .. });
                if !builtin {
                    if let Some(found) = self.cpp_index(&b, &i)? {
                        return Ok(found);
                    }
                    if let Some(missing) = self.cpp_missing_rule(&b, "[]")? {
                        return Self::err(missing);
                    }
                }
                let Num::I(i, _) = self.load_num(&i)? else {
                    return Self::err("array index is not an integer");
                };
                if !builtin && self.is_foreign(&b.ty) {
                    b = self.auto_deref(b)?;
                    if let Some(seq) = self.sequence(&b)? {
                        return self.element(&seq, i);
                    }
                }
                let (elem, addr) = match self.shape(&b.ty)? {
                    Shape::Ptr(elem) if matches!(b.loc, Loc::Implicit { .. }) => {
                        let Loc::Implicit { target, offset } = b.loc else {
                            unreachable!("matched above")
                        };
                        let size = self.size_of(&elem)? as i64;
                        let at = offset.wrapping_add((i as i64).wrapping_mul(size));
                        return self.implicit_target(target, at, elem);
                    }
                    Shape::Array { elem, .. } => match b.loc {
                        Loc::Mem(a) => (elem, a),
                        Loc::Implicit { .. } => return Self::err("array is not in memory"),
                        Loc::Val(ref bytes) => {
                            let size = self.size_of(&elem)?;
                            let off = (i as u64).saturating_mul(size) as usize;
                            let v = bytes
                                .get(off..off.saturating_add(size as usize))
                                .ok_or_else(|| Error::Eval("index out of range".into()))?;
                            return Ok(EVal {
                                ty: elem,
                                loc: Loc::Val(v.to_vec()),
                            });
                        }
                    },
                    Shape::Ptr(elem) => (elem, le_u64(&self.bytes(&b)?)),
                    _ => {
                        return Self::err(
                            "cannot subscript something that is not an array or pointer",
                        )
                    }
                };
                let size = self.size_of(&elem)?;
                Ok(EVal {
                    ty: elem,
                    loc: Loc::Mem(addr.wrapping_add((i as u64).wrapping_mul(size))),
                })
            }
            Expr::Unary(op, x) => {
                let v = self.eval_depth(x, d)?;
                match op {
                    UnOp::Deref => self.deref(&v),
                    UnOp::AddrOf => match v.loc {
                        Loc::Mem(a) => Ok(EVal {
                            ty: ETy::Ptr(Box::new(v.ty)),
                            loc: Loc::Val(a.to_le_bytes().to_vec()),
                        }),
                        Loc::Val(_) | Loc::Implicit { .. } => {
                            Self::err("cannot take the address of a value that is not in memory")
                        }
                    },
                    UnOp::Plus => Ok(self.num_val(promote(self.load_num(&v)?))),
                    UnOp::Neg => Ok(self.num_val(match promote(self.load_num(&v)?) {
                        Num::I(i, t) => Num::I(wrap(i.wrapping_neg(), t), t),
                        Num::F(f) => Num::F(-f),
                        Num::P(_) => return Self::err("cannot negate a pointer"),
                    })),
                    UnOp::Not => Ok(self.truth(!self.truthy(&v)?)),
                    UnOp::BitNot => match promote(self.load_num(&v)?) {
                        Num::I(i, t) => Ok(self.num_val(Num::I(wrap(!i, t), t))),
                        _ => Self::err("'~' needs an integer"),
                    },
                }
            }
            Expr::Binary(BinOp::And, a, b) => {
                let r = self.truthy(&self.eval_depth(a, d)?)?
                    && self.truthy(&self.eval_depth(b, d)?)?;
                Ok(self.truth(r))
            }
            Expr::Binary(BinOp::Or, a, b) => {
                let r = self.truthy(&self.eval_depth(a, d)?)?
                    || self.truthy(&self.eval_depth(b, d)?)?;
                Ok(self.truth(r))
            }
            Expr::Binary(op, a, b) => {
                let a = self.eval_depth(a, d)?;
                let b = self.eval_depth(b, d)?;
                self.binary(*op, &a, &b)
            }
            Expr::Cast(t, x) => {
                let v = self.eval_depth(x, d)?;
                let ty = self.named_type(t)?;
                self.cast(&v, ty)
            }
            Expr::SizeofExpr(x) => {
                let v = self.eval_depth(x, d)?;
                Ok(int_val(i128::from(self.size_of(&v.ty)?), ULONG))
            }
            Expr::SizeofType(t) => {
                let ty = self.named_type(t)?;
                Ok(int_val(i128::from(self.size_of(&ty)?), ULONG))
            }
            Expr::Str(text) => Ok(EVal {
                ty: ETy::Str,
                loc: Loc::Val(text.as_bytes().to_vec()),
            }),
            Expr::MethodCall(base, method) => {
                let b = self.eval_depth(base, d)?;
                self.method(&b, method)
            }
        }
    }

    /// A character literal: a C `char` (the binary's own `char` type, so that it shows
    /// as `97 'a'`, as gdb shows it), an `int` in a Rust frame or without one.
    pub(in crate::expr) fn char_literal(&self, c: u8) -> EVal {
        let rust = self.pc != 0
            && matches!(
                self.binary
                    .language_at(self.bias.to_file(RuntimeAddr(self.pc))),
                Some(symbols::Language::Rust)
            );
        match self.c_char_type("char").filter(|_| !rust) {
            Some(t) => EVal {
                ty: ETy::Dwarf(t),
                loc: Loc::Val(vec![c]),
            },
            None => int_val(i128::from(c as i8), INT),
        }
    }

    /// The binary's one-byte character type named `name` (`char`, `signed char`,
    /// `unsigned char`), if its DWARF has one.
    pub(in crate::expr) fn c_char_type(&self, name: &str) -> Option<TypeRef> {
        if self.pc == 0 {
            return None;
        }
        let t = self
            .binary
            .base_type_at(self.bias.to_file(RuntimeAddr(self.pc)), name)?;
        resolve(self.binary, t)
            .is_ok_and(|r| {
                r.size == Some(1)
                    && matches!(
                        r.kind,
                        TypeKind::Base(BaseEncoding::SignedChar | BaseEncoding::UnsignedChar)
                    )
            })
            .then_some(t)
    }

    pub(crate) fn variable_value(&self, var: &Variable) -> Result<EVal> {
        let name = var.name.as_deref().unwrap_or("?");
        let Some(ty) = var.ty else {
            return Self::err(format!("'{name}' has no type"));
        };
        match &var.location {
            VariableLocation::OptimizedOut => Self::err(format!("'{name}' is optimized out")),
            VariableLocation::Const(bytes) => {
                // Small constants come in the smallest form (DW_FORM_data1 for an int):
                // widen them to the type's size, sign-extending signed types.
                let mut bytes = bytes.clone();
                let size = self.binary.type_size(ty).ok().flatten().unwrap_or(0) as usize;
                if bytes.len() < size && size <= 16 {
                    let signed = matches!(
                        self.shape(&ETy::Dwarf(ty)),
                        Ok(Shape::Int(IntTy { signed: true, .. }))
                    );
                    let fill = if signed && bytes.last().is_some_and(|b| b & 0x80 != 0) {
                        0xff
                    } else {
                        0
                    };
                    bytes.resize(size, fill);
                }
                Ok(EVal {
                    ty: ETy::Dwarf(ty),
                    loc: Loc::Val(bytes),
                })
            }
            VariableLocation::Expr(expr) => {
                if let Some(a) = self.frame_slot(expr) {
                    return Ok(EVal {
                        ty: ETy::Dwarf(ty),
                        loc: Loc::Mem(a),
                    });
                }
                let pieces = self.ctx_pieces(expr).map_err(|e| match e {
                    symbols::Error::OptimizedOut(_) => {
                        Error::Eval(format!("'{name}' is optimized out"))
                    }
                    e => Error::Eval(format!("cannot locate the variable: {e}")),
                })?;
                if let [p] = pieces.as_slice() {
                    if let symbols::PieceLocation::Memory(a) = p.location {
                        if p.size_bits.is_none() && p.bit_offset.is_none() {
                            return Ok(EVal {
                                ty: ETy::Dwarf(ty),
                                loc: Loc::Mem(a.0),
                            });
                        }
                    }
                }
                if let Some(symbols::PieceLocation::ImplicitPointer {
                    target,
                    byte_offset,
                }) = pieces.first().map(|p| &p.location)
                {
                    return Ok(EVal {
                        ty: ETy::Dwarf(ty),
                        loc: Loc::Implicit {
                            target: *target,
                            offset: *byte_offset,
                        },
                    });
                }
                if pieces
                    .iter()
                    .all(|p| matches!(p.location, symbols::PieceLocation::OptimizedOut))
                {
                    return Self::err(format!("'{name}' is optimized out"));
                }
                let size = self.binary.type_size(ty).ok().flatten().unwrap_or(8) as usize;
                let bytes = read_pieces(&pieces, size, self.mem, self.regs)
                    .map_err(|e| Error::Eval(format!("cannot read '{name}': {e}")))?;
                Ok(EVal {
                    ty: ETy::Dwarf(ty),
                    loc: Loc::Val(bytes),
                })
            }
        }
    }

    /// The element count of an array's dimension `i`, a VLA's read in the frame.
    pub(crate) fn dim_len(&self, dims: &[symbols::ArrayDim], i: usize) -> Option<u64> {
        let d = dims.get(i)?;
        match &d.count {
            ArrayBound::Count(n) => Some(*n),
            ArrayBound::Unknown => None,
            bound @ (ArrayBound::Expr { upper_bound, .. }
            | ArrayBound::Variable { upper_bound, .. }) => {
                let v = self.array_bound(bound)?;
                Some(if *upper_bound {
                    (v as i64).saturating_sub(d.lower).saturating_add(1).max(0) as u64
                } else {
                    v
                })
            }
        }
    }

    /// The value of a VLA's bound in this frame: its expression's value, or the value
    /// of the variable it names (read where that variable is at the pc).
    pub(crate) fn array_bound(&self, bound: &ArrayBound) -> Option<u64> {
        match bound {
            ArrayBound::Count(n) => Some(*n),
            ArrayBound::Expr { expr, .. } => self.eval_bound(expr),
            ArrayBound::Variable { die_offset, .. } => {
                let pc = self.bias.to_file(RuntimeAddr(self.pc));
                match self.binary.variable_location_at(*die_offset, pc) {
                    VariableLocation::Const(b) => Some(le_u64(&b)),
                    VariableLocation::Expr(e) => {
                        let pieces = self.pieces(&e).ok()?;
                        match &pieces.first()?.location {
                            symbols::PieceLocation::Memory(a) => {
                                let mut buf = [0u8; 8];
                                self.mem.read(*a, &mut buf).ok()?;
                                Some(u64::from_le_bytes(buf))
                            }
                            symbols::PieceLocation::Value(b) => Some(le_u64(b)),
                            symbols::PieceLocation::Register(r) => self.regs.reg(*r),
                            _ => None,
                        }
                    }
                    VariableLocation::OptimizedOut => None,
                }
            }
            ArrayBound::Unknown => None,
        }
    }

    /// A variable some of whose pieces are optimized out (an empty `DW_OP_piece`): its
    /// bytes and which of them are known, when any are.
    pub(crate) fn partial_variable(&self, var: &Variable) -> Option<(Vec<u8>, Vec<bool>)> {
        let ty = var.ty?;
        let VariableLocation::Expr(expr) = &var.location else {
            return None;
        };
        let pieces = self.ctx_pieces(expr).ok()?;
        let size = usize::try_from(self.binary.type_size(ty).ok().flatten()?).ok()?;
        let (bytes, known) =
            symbols::read_pieces_partial(&pieces, size, self.mem, self.regs).ok()?;
        known.iter().any(|k| *k).then_some((bytes, known))
    }

    /// The value of a computed array bound (`DW_OP_fbreg -48; DW_OP_deref`).
    pub(crate) fn eval_bound(&self, expr: &LocationExpr) -> Option<u64> {
        let pieces = self.pieces(expr).ok()?;
        match &pieces.first()?.location {
            symbols::PieceLocation::Memory(a) => Some(a.0),
            symbols::PieceLocation::Value(b) => Some(le_u64(b)),
            symbols::PieceLocation::Register(r) => self.regs.reg(*r),
            _ => None,
        }
    }

    /// The address of a variable at `DW_OP_fbreg N` in a function whose frame base is
    /// `DW_OP_call_frame_cfa` (what gcc emits at -O0), computed from the CFA without
    /// running the expression evaluator: conditions read such variables on every hit.
    pub(in crate::expr) fn frame_slot(&self, expr: &LocationExpr) -> Option<u64> {
        const DW_OP_FBREG: u8 = 0x91;
        const DW_OP_CALL_FRAME_CFA: u8 = 0x9c;
        let (&op, operand) = expr.bytes().split_first()?;
        if op != DW_OP_FBREG || self.scope.frame_base.as_ref()?.bytes() != [DW_OP_CALL_FRAME_CFA] {
            return None;
        }
        let (offset, used) = read_sleb128(operand)?;
        if used != operand.len() {
            return None;
        }
        Some(self.cfa?.wrapping_add_signed(offset))
    }

    pub(in crate::expr) fn pieces(&self, expr: &LocationExpr) -> Result<Vec<symbols::Piece>> {
        self.ctx_pieces(expr)
            .map_err(|e| Error::Eval(format!("cannot locate the variable: {e}")))
    }

    pub(in crate::expr) fn ctx_pieces(
        &self,
        expr: &LocationExpr,
    ) -> symbols::Result<Vec<symbols::Piece>> {
        let tls = self.tls.map(|t| t.of(self.bias, self.binary));
        let ctx = EvalContext {
            memory: self.mem,
            registers: self.regs,
            bias: self.bias,
            pc: RuntimeAddr(self.pc),
            frame_base: None,
            cfa: self.cfa,
            tls: tls.as_ref().map(|t| t as &dyn symbols::ThreadLocalStorage),
            entry_registers: self.entry_regs,
        };
        self.binary
            .evaluate_location(expr, self.scope.frame_base.as_ref(), &ctx)
    }

    pub(in crate::expr) fn shape(&self, ty: &ETy) -> Result<Shape> {
        Ok(match ty {
            ETy::Int(t) => Shape::Int(*t),
            ETy::Bool => Shape::Int(IntTy {
                size: 1,
                signed: false,
            }),
            ETy::Double => Shape::Float(8),
            ETy::Ptr(t) => Shape::Ptr((**t).clone()),
            ETy::Void => Shape::Void,
            ETy::Str => Shape::Other,
            ETy::SubArray(t, dim) => {
                let r = resolve(self.binary, *t).map_err(Error::Eval)?;
                match r.kind {
                    TypeKind::Array { element, dims } => self.array_shape(*t, *dim, element, &dims),
                    _ => Shape::Other,
                }
            }
            ETy::Dwarf(t) => {
                let r = resolve(self.binary, *t).map_err(Error::Eval)?;
                let size = r.size.unwrap_or(0) as u8;
                match r.kind {
                    TypeKind::Base(BaseEncoding::Float) => Shape::Float(size),
                    TypeKind::Base(BaseEncoding::Signed | BaseEncoding::SignedChar) => {
                        Shape::Int(IntTy { size, signed: true })
                    }
                    TypeKind::Base(_) => Shape::Int(IntTy {
                        size,
                        signed: false,
                    }),
                    TypeKind::Enum { underlying, .. } => {
                        let signed = underlying
                            .and_then(|u| resolve(self.binary, u).ok())
                            .is_some_and(|u| {
                                matches!(
                                    u.kind,
                                    TypeKind::Base(BaseEncoding::Signed | BaseEncoding::SignedChar)
                                )
                            });
                        Shape::Int(IntTy { size, signed })
                    }
                    TypeKind::Pointer(target) | TypeKind::Reference { target, .. } => {
                        Shape::Ptr(target.map_or(ETy::Void, ETy::Dwarf))
                    }
                    TypeKind::Array { element, dims } => self.array_shape(*t, 0, element, &dims),
                    TypeKind::Composite { members, .. } => Shape::Composite { members },
                    TypeKind::Unspecified => Shape::Void,
                    _ => Shape::Other,
                }
            }
        })
    }

    /// An array type seen from dimension `dim`: its elements are the next dimension.
    pub(in crate::expr) fn array_shape(
        &self,
        t: TypeRef,
        dim: usize,
        element: Option<TypeRef>,
        dims: &[symbols::ArrayDim],
    ) -> Shape {
        let elem = if dim + 1 < dims.len() {
            ETy::SubArray(t, dim + 1)
        } else {
            element.map_or(ETy::Void, ETy::Dwarf)
        };
        Shape::Array { elem }
    }

    pub(crate) fn size_of(&self, ty: &ETy) -> Result<u64> {
        match ty {
            ETy::SubArray(t, dim) => {
                let r = resolve(self.binary, *t).map_err(Error::Eval)?;
                let TypeKind::Array { element, dims } = r.kind else {
                    return Self::err("not an array");
                };
                let elem = element
                    .and_then(|e| self.binary.type_size(e).ok().flatten())
                    .unwrap_or(0);
                // An inner dimension whose bound cannot be read leaves the stride
                // unknown: refused (as gdb refuses it), never guessed.
                (*dim..dims.len()).try_fold(elem, |acc, i| match self.dim_len(&dims, i) {
                    Some(n) => Ok(acc.saturating_mul(n)),
                    None => Self::err("the array's bounds are unknown here"),
                })
            }
            // A VLA's size is its bounds' product, read in the frame (`sizeof a`).
            ETy::Dwarf(t) if self.binary.type_size(*t).ok().flatten().is_none() => {
                match resolve(self.binary, *t).map_err(Error::Eval)?.kind {
                    // An array with a dimension without any bound has size 0, as gdb's.
                    TypeKind::Array { dims, .. }
                        if dims.iter().any(|d| matches!(d.count, ArrayBound::Unknown)) =>
                    {
                        Ok(0)
                    }
                    TypeKind::Array { dims, .. }
                        if (0..dims.len()).all(|i| self.dim_len(&dims, i).is_some()) =>
                    {
                        self.size_of(&ETy::SubArray(*t, 0))
                    }
                    _ => Self::err("the size of the type is unknown"),
                }
            }
            ETy::Int(t) => Ok(u64::from(t.size)),
            ETy::Bool => Ok(1),
            ETy::Double | ETy::Ptr(_) => Ok(8),
            ETy::Void => Ok(1),
            ETy::Str => Ok(0),
            ETy::Dwarf(t) => self
                .binary
                .type_size(*t)
                .ok()
                .flatten()
                .ok_or_else(|| Error::Eval("the size of the type is unknown".into())),
        }
    }

    pub(in crate::expr) fn bytes(&self, v: &EVal) -> Result<Vec<u8>> {
        let size = self.size_of(&v.ty)?;
        match &v.loc {
            Loc::Val(b) => Ok(b.clone()),
            Loc::Implicit { .. } => {
                Self::err("a synthetic pointer (optimized away) has no value of its own")
            }
            Loc::Mem(a) => {
                if size > 1 << 20 {
                    return Self::err("the value is too large");
                }
                let mut buf = vec![0u8; size as usize];
                self.mem
                    .read(RuntimeAddr(*a), &mut buf)
                    .map_err(|_| Error::Eval(format!("cannot access memory at address {a:#x}")))?;
                Ok(buf)
            }
        }
    }

    pub(in crate::expr) fn load_num(&self, v: &EVal) -> Result<Num> {
        match self.shape(&v.ty)? {
            Shape::Int(t) => Ok(Num::I(int_value(&self.bytes(v)?, t.signed), t)),
            Shape::Float(4) => {
                let b = self.bytes(v)?;
                let arr: [u8; 4] = b.get(..4).and_then(|s| s.try_into().ok()).unwrap_or([0; 4]);
                Ok(Num::F(f64::from(f32::from_le_bytes(arr))))
            }
            Shape::Float(8) => {
                let b = self.bytes(v)?;
                let arr: [u8; 8] = b.get(..8).and_then(|s| s.try_into().ok()).unwrap_or([0; 8]);
                Ok(Num::F(f64::from_le_bytes(arr)))
            }
            Shape::Float(_) => Self::err("long double is not supported in expressions yet"),
            Shape::Ptr(_) => Ok(Num::P(le_u64(&self.bytes(v)?))),
            Shape::Array { .. } => match v.loc {
                Loc::Mem(a) => Ok(Num::P(a)),
                Loc::Val(_) | Loc::Implicit { .. } => Self::err("array is not in memory"),
            },
            Shape::Composite { .. } => Self::err("a struct or union is not a number"),
            Shape::Void | Shape::Other => Self::err("the value has no number"),
        }
    }

    pub(crate) fn truthy(&self, v: &EVal) -> Result<bool> {
        Ok(match self.load_num(v)? {
            Num::I(i, _) => i != 0,
            Num::F(f) => f != 0.0,
            Num::P(p) => p != 0,
        })
    }

    pub(in crate::expr) fn num_val(&self, n: Num) -> EVal {
        match n {
            Num::I(i, t) => int_val(i, t),
            Num::F(f) => EVal {
                ty: ETy::Double,
                loc: Loc::Val(f.to_le_bytes().to_vec()),
            },
            Num::P(p) => EVal {
                ty: ETy::Ptr(Box::new(ETy::Void)),
                loc: Loc::Val(p.to_le_bytes().to_vec()),
            },
        }
    }
}

pub(crate) fn is_parameter(v: &Variable) -> bool {
    v.kind == VariableKind::Parameter
}

/// Decodes a signed LEB128 number: the value and the bytes it took.
pub(in crate::expr) fn read_sleb128(bytes: &[u8]) -> Option<(i64, usize)> {
    let mut value: i64 = 0;
    let mut shift = 0u32;
    for (i, &b) in bytes.iter().enumerate() {
        if shift >= 64 {
            return None;
        }
        value |= i64::from(b & 0x7f) << shift;
        shift += 7;
        if b & 0x80 == 0 {
            if shift < 64 && b & 0x40 != 0 {
                value |= -1i64 << shift;
            }
            return Some((value, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    pub(in crate::expr) fn sleb128_decodes_frame_offsets() {
        assert_eq!(super::read_sleb128(&[0x6c]), Some((-20, 1)));
        assert_eq!(super::read_sleb128(&[0x08]), Some((8, 1)));
        assert_eq!(super::read_sleb128(&[0xe8, 0x7e]), Some((-152, 2)));
        assert_eq!(super::read_sleb128(&[0x80, 0x01]), Some((128, 2)));
        assert_eq!(super::read_sleb128(&[0x80]), None);
    }
}
