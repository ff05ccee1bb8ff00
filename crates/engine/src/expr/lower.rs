//! Lowering a condition to integer operations on frame slots and static addresses, for
//! code that evaluates it inside the debuggee (see `crate::jit`).
//!
//! The lowered form keeps [`Env`]'s semantics exactly: the same name lookup, integer
//! promotions and usual arithmetic conversions, the same wrapping. What it cannot
//! express the same way (floating point, pointers, memory reached through a pointer,
//! Rust's checked integers, strings, registers) is refused, and the condition stays on
//! the int3 path. Leaves are evaluated by [`Env`] itself against a frame that has no
//! memory and a symbolic CFA: a variable, member or element in the frame comes out as
//! an address at a known offset from that CFA, a static one at its address, and
//! anything that needs to read memory fails.

use super::*;

/// Where the symbolic CFA lies: far from any real address, so an address near it can
/// only be a frame slot.
const SYMBOLIC_CFA: u64 = 0xdead_0000_0000_0000;
/// Frame slots lie within this distance of the CFA or a register.
const FRAME_SPAN: u64 = 1 << 24;

/// The symbolic value of DWARF register `n` in one of the two evaluations of a leaf: a
/// value that depends on a register comes out different in the two, an address relative
/// to one comes out at the same offset from both.
fn register_tag(second: bool, n: u16) -> u64 {
    let base: u64 = if second {
        0xc000_0000_789a_bc22
    } else {
        0xa000_0000_1234_5611
    };
    base + (u64::from(n) << 40)
}

/// Where a loaded integer is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    /// At this offset from the frame's CFA.
    Frame(i64),
    /// At this offset from the site's value of a DWARF register.
    Reg(u16, i64),
    /// At this runtime address.
    Static(u64),
}

/// Rust's checked integer arithmetic (`rust_int_op`): the result has type `ty`, and an
/// overflow, a zero divisor or a shift past the width is an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Checked {
    /// The result's type.
    pub ty: IntTy,
    /// Both operands are unsigned and one is 64 bits: unsigned 64-bit arithmetic.
    /// Otherwise every operand fits in an i64 and signed 64-bit arithmetic is exact.
    pub unsigned: bool,
    /// Whether the left operand is signed (an arithmetic right shift).
    pub lhs_signed: bool,
}

/// An integer computation. Every node's value is held sign- or zero-extended to 64
/// bits from the width of its type.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Node {
    /// A constant (already in its type's range).
    Const(i64),
    /// Memory at a slot, of an integer type.
    Load(Slot, IntTy),
    /// Converted to another integer type (truncated, re-extended).
    Wrap(Box<Node>, IntTy),
    /// `-x` in a type.
    Neg(Box<Node>, IntTy),
    /// `~x` in a type.
    BitNot(Box<Node>, IntTy),
    /// `!x`: 1 when zero.
    Not(Box<Node>),
    /// `a && b`, short-circuit, 0 or 1.
    And(Box<Node>, Box<Node>),
    /// `a || b`, short-circuit, 0 or 1.
    Or(Box<Node>, Box<Node>),
    /// A comparison of the two 64-bit values, signed or unsigned.
    Cmp(BinOp, Box<Node>, Box<Node>, bool),
    /// C arithmetic on operands converted to a common type, wrapped to it.
    Arith(BinOp, Box<Node>, Box<Node>, IntTy),
    /// Rust arithmetic: anything out of range goes to the debugger (an error there).
    Checked(BinOp, Box<Node>, Box<Node>, Checked),
}

/// A lowered value's type: its integer type and whether it is a Rust type (whose
/// operations follow `rust_int_op`).
#[derive(Clone, Copy, Debug)]
struct Ty {
    int: IntTy,
    rust: bool,
}

impl Ty {
    fn c(int: IntTy) -> Ty {
        Ty { int, rust: false }
    }

    /// Every value of the type is exact in an i64.
    fn fits_i64(self) -> bool {
        self.int.signed || self.int.size < 8
    }

    fn is_u64(self) -> bool {
        !self.int.signed && self.int.size == 8
    }
}

struct NoMemory;

impl MemoryReader for NoMemory {
    fn read(&self, _: RuntimeAddr, _: &mut [u8]) -> std::io::Result<()> {
        Err(std::io::Error::other("no memory while lowering"))
    }
}

struct SymbolicRegisters(bool);

impl symbols::RegisterReader for SymbolicRegisters {
    fn reg(&self, n: u16) -> Option<u64> {
        (n <= 16).then(|| register_tag(self.0, n))
    }
}

/// Lowers `cond` as a condition of the frame at `pc` with `scope`. `None` when some
/// part of it cannot be evaluated in the debuggee with the same result.
pub(crate) fn lower_condition(
    binary: &Arc<Binary>,
    bias: LoadBias,
    pc: u64,
    scope: &Scope,
    inline_index: u32,
    enums: Option<&Enumerators>,
    cond: &Expr,
) -> Option<Node> {
    let env = |regs: &'static SymbolicRegisters| Env {
        binary,
        bias,
        mem: &NoMemory,
        regs,
        pc,
        cfa: Some(SYMBOLIC_CFA),
        scope,
        inline_index,
        enums,
        entry_regs: None,
        modules: None,
        tls: None,
    };
    static FIRST: SymbolicRegisters = SymbolicRegisters(false);
    static SECOND: SymbolicRegisters = SymbolicRegisters(true);
    let lowerer = Lowerer {
        a: env(&FIRST),
        b: env(&SECOND),
    };
    lowerer.lower(cond, 0).map(|(node, _)| node)
}

/// The same frame seen with two sets of symbolic registers.
struct Lowerer<'a> {
    a: Env<'a>,
    b: Env<'a>,
}

impl Lowerer<'_> {
    fn lower(&self, e: &Expr, depth: u32) -> Option<(Node, Ty)> {
        if depth > MAX_DEPTH {
            return None;
        }
        let d = depth + 1;
        match e {
            Expr::Unary(UnOp::Plus, x) => {
                let (n, t) = self.lower(x, d)?;
                Some((n, Ty::c(promote_ty(t.int))))
            }
            Expr::Unary(UnOp::Neg, x) => {
                let (n, t) = self.lower(x, d)?;
                let t = promote_ty(t.int);
                Some((Node::Neg(Box::new(n), t), Ty::c(t)))
            }
            Expr::Unary(UnOp::BitNot, x) => {
                let (n, t) = self.lower(x, d)?;
                let t = promote_ty(t.int);
                Some((Node::BitNot(Box::new(n), t), Ty::c(t)))
            }
            Expr::Unary(UnOp::Not, x) => {
                let (n, _) = self.lower(x, d)?;
                Some((Node::Not(Box::new(n)), Ty::c(INT)))
            }
            Expr::Binary(op @ (BinOp::And | BinOp::Or), a, b) => {
                let (a, _) = self.lower(a, d)?;
                let (b, _) = self.lower(b, d)?;
                let (a, b) = (Box::new(a), Box::new(b));
                Some((
                    if *op == BinOp::And {
                        Node::And(a, b)
                    } else {
                        Node::Or(a, b)
                    },
                    Ty::c(INT),
                ))
            }
            Expr::Binary(op, a, b) => {
                let (x, s) = self.lower(a, d)?;
                let (y, t) = self.lower(b, d)?;
                if s.rust || t.rust {
                    return rust_binary(*op, x, s, y, t);
                }
                let common = common_int(promote_ty(s.int), promote_ty(t.int));
                let x = Box::new(Node::Wrap(Box::new(x), common));
                let y = Box::new(Node::Wrap(Box::new(y), common));
                if is_comparison(*op) {
                    Some((Node::Cmp(*op, x, y, common.signed), Ty::c(INT)))
                } else {
                    Some((Node::Arith(*op, x, y, common), Ty::c(common)))
                }
            }
            Expr::Cast(name, x) => {
                let to = self.a.named_type(name).ok()?;
                let Ok(Shape::Int(int)) = self.a.shape(&to) else {
                    return None;
                };
                if !matches!(int.size, 1 | 2 | 4 | 8) {
                    return None;
                }
                let (n, _) = self.lower(x, d)?;
                let rust = self.a.is_rust(&to);
                Some((Node::Wrap(Box::new(n), int), Ty { int, rust }))
            }
            // Evaluated at the stop instead: as a leaf, the symbolic registers would
            // pick one operand for every hit.
            Expr::Cond(..) => None,
            _ => self.leaf(e),
        }
    }

    /// A variable, member, element or constant: what [`Env`] makes of it without memory,
    /// seen with both sets of symbolic registers.
    fn leaf(&self, e: &Expr) -> Option<(Node, Ty)> {
        let va = self.a.eval(e).ok()?;
        let vb = self.b.eval(e).ok()?;
        let Ok(Shape::Int(int)) = self.a.shape(&va.ty) else {
            return None;
        };
        if !matches!(int.size, 1 | 2 | 4 | 8) {
            return None;
        }
        let ty = Ty {
            int,
            rust: self.a.is_rust(&va.ty),
        };
        let slot = match (va.loc, vb.loc) {
            // The same bytes either way: a constant (a value read from a register
            // differs between the two).
            (Loc::Val(x), Loc::Val(y)) if x == y => {
                let value = wrap(int_value(&x, int.signed), int);
                return Some((Node::Const(value as i64), ty));
            }
            (Loc::Mem(x), Loc::Mem(y)) if x == y => {
                let offset = x.wrapping_sub(SYMBOLIC_CFA) as i64;
                if offset.unsigned_abs() < FRAME_SPAN {
                    Slot::Frame(offset)
                } else if x >= 1 << 56 {
                    // Derived from something symbolic, far from it: not a slot.
                    return None;
                } else {
                    Slot::Static(x)
                }
            }
            (Loc::Mem(x), Loc::Mem(y)) => (0..=15u16).find_map(|n| {
                let offset = x.wrapping_sub(register_tag(false, n)) as i64;
                let same = y.wrapping_sub(register_tag(true, n)) as i64 == offset;
                (same && offset.unsigned_abs() < FRAME_SPAN).then_some(Slot::Reg(n, offset))
            })?,
            _ => return None,
        };
        Some((Node::Load(slot, int), ty))
    }
}

pub(crate) fn is_comparison(op: BinOp) -> bool {
    matches!(
        op,
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne
    )
}

/// An operation with a Rust integer operand, as `rust_int_op` defines it: comparisons
/// are mathematical; arithmetic keeps the Rust operand's type and fails out of range.
fn rust_binary(op: BinOp, x: Node, s: Ty, y: Node, t: Ty) -> Option<(Node, Ty)> {
    let ty = if s.rust { s.int } else { t.int };
    let nonnegative_const = |n: &Node| matches!(n, Node::Const(c) if *c >= 0);
    // Both unsigned with one 64 bits wide (a non-negative constant counts as unsigned):
    // unsigned 64-bit operations; both exact in an i64: signed ones; else refuse.
    let unsigned = if s.fits_i64() && t.fits_i64() && !(s.is_u64() || t.is_u64()) {
        false
    } else if (s.is_u64() || !s.int.signed || nonnegative_const(&x))
        && (t.is_u64() || !t.int.signed || nonnegative_const(&y))
    {
        true
    } else {
        return None;
    };
    let (x, y) = (Box::new(x), Box::new(y));
    if is_comparison(op) {
        return Some((Node::Cmp(op, x, y, !unsigned), Ty::c(INT)));
    }
    let checked = Checked {
        ty,
        unsigned,
        lhs_signed: s.int.signed,
    };
    Some((
        Node::Checked(op, x, y, checked),
        Ty {
            int: ty,
            rust: true,
        },
    ))
}

fn promote_ty(t: IntTy) -> IntTy {
    if t.size < 4 {
        INT
    } else {
        t
    }
}
