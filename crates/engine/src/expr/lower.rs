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
/// Frame slots lie within this distance of the CFA.
const FRAME_SPAN: u64 = 1 << 24;

/// Where a loaded integer is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    /// At this offset from the frame's CFA.
    Frame(i64),
    /// At this runtime address.
    Static(u64),
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
    /// A comparison of operands converted to a common type of this signedness.
    Cmp(BinOp, Box<Node>, Box<Node>, bool),
    /// Arithmetic on operands converted to a common type, wrapped to it.
    Arith(BinOp, Box<Node>, Box<Node>, IntTy),
}

struct NoMemory;

impl MemoryReader for NoMemory {
    fn read(&self, _: RuntimeAddr, _: &mut [u8]) -> std::io::Result<()> {
        Err(std::io::Error::other("no memory while lowering"))
    }
}

struct NoRegisters;

impl symbols::RegisterReader for NoRegisters {
    fn reg(&self, _: u16) -> Option<u64> {
        None
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
    let env = Env {
        binary,
        bias,
        mem: &NoMemory,
        regs: &NoRegisters,
        pc,
        cfa: Some(SYMBOLIC_CFA),
        scope,
        inline_index,
        enums,
        entry_regs: None,
    };
    env.lower(cond, 0).map(|(node, _)| node)
}

impl Env<'_> {
    fn lower(&self, e: &Expr, depth: u32) -> Option<(Node, IntTy)> {
        if depth > MAX_DEPTH {
            return None;
        }
        let d = depth + 1;
        match e {
            Expr::Unary(UnOp::Plus, x) => {
                let (n, t) = self.lower(x, d)?;
                Some((n, promote_ty(t)))
            }
            Expr::Unary(UnOp::Neg, x) => {
                let (n, t) = self.lower(x, d)?;
                let t = promote_ty(t);
                Some((Node::Neg(Box::new(n), t), t))
            }
            Expr::Unary(UnOp::BitNot, x) => {
                let (n, t) = self.lower(x, d)?;
                let t = promote_ty(t);
                Some((Node::BitNot(Box::new(n), t), t))
            }
            Expr::Unary(UnOp::Not, x) => {
                let (n, _) = self.lower(x, d)?;
                Some((Node::Not(Box::new(n)), INT))
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
                    INT,
                ))
            }
            Expr::Binary(op, a, b) => {
                let (x, s) = self.lower(a, d)?;
                let (y, t) = self.lower(b, d)?;
                let common = usual_ty(promote_ty(s), promote_ty(t));
                let x = Box::new(Node::Wrap(Box::new(x), common));
                let y = Box::new(Node::Wrap(Box::new(y), common));
                match op {
                    BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne => {
                        Some((Node::Cmp(*op, x, y, common.signed), INT))
                    }
                    _ => Some((Node::Arith(*op, x, y, common), common)),
                }
            }
            Expr::Cast(name, x) => {
                let Ok(Shape::Int(to)) = self.named_type(name).and_then(|t| self.shape(&t)) else {
                    return None;
                };
                if !matches!(to.size, 1 | 2 | 4 | 8) {
                    return None;
                }
                let (n, _) = self.lower(x, d)?;
                Some((Node::Wrap(Box::new(n), to), to))
            }
            _ => self.leaf(e),
        }
    }

    /// A variable, member, element or constant: what [`Env`] makes of it without memory.
    fn leaf(&self, e: &Expr) -> Option<(Node, IntTy)> {
        let v = self.eval(e).ok()?;
        if self.is_rust(&v.ty) {
            return None;
        }
        let Ok(Shape::Int(t)) = self.shape(&v.ty) else {
            return None;
        };
        if !matches!(t.size, 1 | 2 | 4 | 8) {
            return None;
        }
        match v.loc {
            Loc::Val(bytes) => {
                let value = wrap(int_value(&bytes, t.signed), t);
                Some((Node::Const(value as i64), t))
            }
            Loc::Mem(addr) => {
                let offset = addr.wrapping_sub(SYMBOLIC_CFA) as i64;
                let slot = if offset.unsigned_abs() < FRAME_SPAN {
                    Slot::Frame(offset)
                } else if addr.abs_diff(SYMBOLIC_CFA) < 1 << 48 {
                    // Derived from the CFA but far from it: not a frame slot.
                    return None;
                } else {
                    Slot::Static(addr)
                };
                Some((Node::Load(slot, t), t))
            }
        }
    }
}

fn promote_ty(t: IntTy) -> IntTy {
    if t.size < 4 {
        INT
    } else {
        t
    }
}

/// The common type of [`usual`], for promoted integer operands.
fn usual_ty(s: IntTy, t: IntTy) -> IntTy {
    if s.signed == t.signed {
        if s.size >= t.size {
            s
        } else {
            t
        }
    } else {
        let (u, sg) = if s.signed { (t, s) } else { (s, t) };
        if u.size >= sg.size {
            u
        } else {
            sg
        }
    }
}
