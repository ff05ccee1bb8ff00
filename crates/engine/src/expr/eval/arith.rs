//! Binary operators: C's usual arithmetic conversions, Rust's checked integer
//! arithmetic, comparisons and string equality.

use super::*;

impl Env<'_> {
    pub(in crate::expr) fn binary(&self, op: BinOp, a: &EVal, b: &EVal) -> Result<EVal> {
        if matches!(a.ty, ETy::Str) || matches!(b.ty, ETy::Str) {
            if !matches!(op, BinOp::Eq | BinOp::Ne) {
                return Self::err("strings can only be compared with == and !=");
            }
            let (Some(x), Some(y)) = (self.string_bytes(a)?, self.string_bytes(b)?) else {
                return Self::err("a string literal can only be compared with a string");
            };
            return Ok(self.truth((x == y) == (op == BinOp::Eq)));
        }
        let x = self.load_num(a)?;
        let y = self.load_num(b)?;
        if let (Num::I(i, _), Num::I(j, _)) = (x, y) {
            if let Some(result) = self.rust_int_op(op, a, b, i, j) {
                return result;
            }
        }
        // Pointer arithmetic.
        match (x, y, op) {
            (Num::P(p), Num::I(i, _), BinOp::Add | BinOp::Sub)
            | (Num::I(i, _), Num::P(p), BinOp::Add) => {
                let ptr_ty = if matches!(x, Num::P(_)) { &a.ty } else { &b.ty };
                let elem = match self.shape(ptr_ty)? {
                    Shape::Ptr(t) | Shape::Array { elem: t, .. } => t,
                    _ => ETy::Void,
                };
                let size = self.size_of(&elem)? as i128;
                let delta = i.wrapping_mul(size);
                let r = if op == BinOp::Sub {
                    (p as i128).wrapping_sub(delta)
                } else {
                    (p as i128).wrapping_add(delta)
                };
                return Ok(EVal {
                    ty: ETy::Ptr(Box::new(elem)),
                    loc: Loc::Val((r as u64).to_le_bytes().to_vec()),
                });
            }
            (Num::P(p), Num::P(q), BinOp::Sub) => {
                let elem = match self.shape(&a.ty)? {
                    Shape::Ptr(t) | Shape::Array { elem: t, .. } => t,
                    _ => ETy::Void,
                };
                let size = self.size_of(&elem)?.max(1) as i128;
                return Ok(int_val((p as i128 - q as i128) / size, LONG));
            }
            _ => {}
        }
        let (x, y) = (as_arith(x), as_arith(y));
        let cmp = |o: std::cmp::Ordering| -> bool {
            match op {
                BinOp::Lt => o.is_lt(),
                BinOp::Le => o.is_le(),
                BinOp::Gt => o.is_gt(),
                BinOp::Ge => o.is_ge(),
                BinOp::Eq => o.is_eq(),
                _ => o.is_ne(),
            }
        };
        let is_cmp = matches!(
            op,
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne
        );
        match usual(x, y) {
            (Num::F(f), Num::F(g)) => {
                if is_cmp {
                    let o = f.partial_cmp(&g);
                    let r = match o {
                        Some(o) => cmp(o),
                        None => op == BinOp::Ne,
                    };
                    return Ok(self.truth(r));
                }
                let r = match op {
                    BinOp::Add => f + g,
                    BinOp::Sub => f - g,
                    BinOp::Mul => f * g,
                    BinOp::Div => f / g,
                    _ => return Self::err("invalid operands to a floating-point operation"),
                };
                Ok(self.num_val(Num::F(r)))
            }
            (Num::I(i, t), Num::I(j, _)) => {
                if is_cmp {
                    return Ok(self.truth(cmp(i.cmp(&j))));
                }
                let r = match op {
                    BinOp::Add => i.wrapping_add(j),
                    BinOp::Sub => i.wrapping_sub(j),
                    BinOp::Mul => i.wrapping_mul(j),
                    BinOp::Div | BinOp::Rem => {
                        if j == 0 {
                            return Self::err("division by zero");
                        }
                        if op == BinOp::Div {
                            i.wrapping_div(j)
                        } else {
                            i.wrapping_rem(j)
                        }
                    }
                    BinOp::Shl => i.wrapping_shl((j & 127) as u32),
                    BinOp::Shr => i.wrapping_shr((j & 127) as u32),
                    BinOp::BitAnd => i & j,
                    BinOp::BitOr => i | j,
                    BinOp::BitXor => i ^ j,
                    _ => return Self::err("invalid operator"),
                };
                Ok(self.num_val(Num::I(wrap(r, t), t)))
            }
            _ => Self::err("invalid operands"),
        }
    }

    /// Integer operations with Rust's semantics when an operand has a Rust integer
    /// type: the result keeps that type (a literal adopts it), comparisons are
    /// mathematical, and overflow is an error as in a debug build.
    pub(in crate::expr) fn rust_int_op(
        &self,
        op: BinOp,
        a: &EVal,
        b: &EVal,
        i: i128,
        j: i128,
    ) -> Option<Result<EVal>> {
        let rust_ty = |v: &EVal| -> Option<IntTy> {
            if !self.is_rust(&v.ty) {
                return None;
            }
            match self.shape(&v.ty).ok()? {
                Shape::Int(t) => Some(t),
                _ => None,
            }
        };
        let ty = rust_ty(a).or_else(|| rust_ty(b))?;
        let out = |v: i128| EVal {
            ty: if rust_ty(a).is_some() {
                a.ty.clone()
            } else {
                b.ty.clone()
            },
            loc: Loc::Val(v.to_le_bytes()[..usize::from(ty.size.min(16))].to_vec()),
        };
        let cmp = |r: bool| Some(Ok(int_val(i128::from(r), INT)));
        let overflow = |what: &str| Some(Self::err(format!("attempt to {what} with overflow")));
        let (lo, hi) = int_range(ty);
        let checked = |v: Option<i128>, what: &str| match v {
            Some(v) if v >= lo && v <= hi => Some(Ok(out(v))),
            _ => overflow(what),
        };
        match op {
            BinOp::Lt => cmp(i < j),
            BinOp::Le => cmp(i <= j),
            BinOp::Gt => cmp(i > j),
            BinOp::Ge => cmp(i >= j),
            BinOp::Eq => cmp(i == j),
            BinOp::Ne => cmp(i != j),
            BinOp::Add => checked(i.checked_add(j), "add"),
            BinOp::Sub => checked(i.checked_sub(j), "subtract"),
            BinOp::Mul => checked(i.checked_mul(j), "multiply"),
            BinOp::Div if j == 0 => Some(Self::err("attempt to divide by zero")),
            BinOp::Rem if j == 0 => Some(Self::err(
                "attempt to calculate the remainder with a divisor of zero",
            )),
            BinOp::Div => checked(i.checked_div(j), "divide"),
            BinOp::Rem => checked(i.checked_rem(j), "calculate the remainder"),
            BinOp::BitAnd => Some(Ok(out(wrap(i & j, ty)))),
            BinOp::BitOr => Some(Ok(out(wrap(i | j, ty)))),
            BinOp::BitXor => Some(Ok(out(wrap(i ^ j, ty)))),
            BinOp::Shl | BinOp::Shr => {
                if j < 0 || j >= i128::from(ty.size) * 8 {
                    return Some(Self::err(format!(
                        "attempt to shift {} with overflow",
                        if op == BinOp::Shl { "left" } else { "right" }
                    )));
                }
                let v = if op == BinOp::Shl { i << j } else { i >> j };
                Some(Ok(out(wrap(v, ty))))
            }
            BinOp::And | BinOp::Or => None,
        }
    }
}

pub(in crate::expr) fn int_val(v: i128, t: IntTy) -> EVal {
    let bytes = v.to_le_bytes()[..usize::from(t.size.min(16))].to_vec();
    EVal {
        ty: ETy::Int(t),
        loc: Loc::Val(bytes),
    }
}

/// Truncates to the type's width and re-extends by its signedness.
pub(in crate::expr) fn wrap(v: i128, t: IntTy) -> i128 {
    let bytes = v.to_le_bytes();
    int_value(&bytes[..usize::from(t.size.min(16))], t.signed)
}

/// The smallest and largest value of an integer type.
pub(in crate::expr) fn int_range(t: IntTy) -> (i128, i128) {
    let bits = u32::from(t.size.min(16)) * 8;
    match (t.signed, bits) {
        (true, 128) => (i128::MIN, i128::MAX),
        (false, 128) => (0, i128::MAX),
        (true, b) => (-(1i128 << (b - 1)), (1i128 << (b - 1)) - 1),
        (false, b) => (0, (1i128 << b) - 1),
    }
}

pub(in crate::expr) fn promote(n: Num) -> Num {
    match n {
        Num::I(i, t) if t.size < 4 => Num::I(i, INT),
        other => other,
    }
}

pub(in crate::expr) fn as_arith(n: Num) -> Num {
    match n {
        Num::P(p) => Num::I(i128::from(p), ULONG),
        other => promote(other),
    }
}

/// C's usual arithmetic conversions on promoted operands.
pub(in crate::expr) fn usual(a: Num, b: Num) -> (Num, Num) {
    match (a, b) {
        (Num::F(_), _) | (_, Num::F(_)) => (to_f(a), to_f(b)),
        (Num::I(i, s), Num::I(j, t)) => {
            let common = common_int(s, t);
            (
                Num::I(wrap(i, common), common),
                Num::I(wrap(j, common), common),
            )
        }
        other => other,
    }
}

/// The common type of two promoted integer types under the usual arithmetic
/// conversions: the wider, and the unsigned one when it is at least as wide.
pub(in crate::expr) fn common_int(s: IntTy, t: IntTy) -> IntTy {
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

pub(in crate::expr) fn to_f(n: Num) -> Num {
    match n {
        Num::I(i, _) => Num::F(i as f64),
        Num::P(p) => Num::F(p as f64),
        f => f,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usual_arithmetic_conversions() {
        let u = IntTy {
            size: 4,
            signed: false,
        };
        let (a, _) = usual(Num::I(-1, INT), Num::I(1, u));
        assert!(matches!(
            a,
            Num::I(
                4294967295,
                IntTy {
                    size: 4,
                    signed: false
                }
            )
        ));
        let (a, _) = usual(Num::I(-1, INT), Num::I(1, ULONG));
        assert!(matches!(a, Num::I(v, _) if v == i128::from(u64::MAX)));
        let (a, _) = usual(Num::I(-1, LONG), Num::I(1, u));
        assert!(matches!(a, Num::I(-1, _)));
    }
}
