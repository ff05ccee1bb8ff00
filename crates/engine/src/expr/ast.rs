//! The expression tree: what the parser builds and the evaluator and the lowering walk.

/// A parsed expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// An integer literal with its C type.
    Int(i128, IntTy),
    /// A character literal (`'a'`): a C `char`, shown as gdb shows one (`97 'a'`).
    Char(u8),
    /// A floating literal (double).
    Float(f64),
    /// A variable name.
    Ident(String),
    /// A register (`$rax`).
    Register(String),
    /// `e.name`.
    Member(Box<Expr>, String),
    /// `e->name`.
    Arrow(Box<Expr>, String),
    /// `e[i]`.
    Index(Box<Expr>, Box<Expr>),
    /// A unary operator.
    Unary(UnOp, Box<Expr>),
    /// A binary operator.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `c ? a : b`.
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `(type) e`.
    Cast(TypeName, Box<Expr>),
    /// `sizeof e`.
    SizeofExpr(Box<Expr>),
    /// `sizeof(type)`.
    SizeofType(TypeName),
    /// A string literal (`"text"`), compared with strings by `==` and `!=`.
    Str(String),
    /// `e.method()`: `len()` and `is_empty()` of strings and collections.
    MethodCall(Box<Expr>, String),
}

/// An integer type: size in bytes and signedness.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntTy {
    /// Size in bytes (1, 2, 4, 8).
    pub size: u8,
    /// Signed or not.
    pub signed: bool,
}

pub(super) const INT: IntTy = IntTy {
    size: 4,
    signed: true,
};
pub(super) const LONG: IntTy = IntTy {
    size: 8,
    signed: true,
};
pub(super) const ULONG: IntTy = IntTy {
    size: 8,
    signed: false,
};

/// Unary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    /// `*`
    Deref,
    /// `&`
    AddrOf,
    /// `-`
    Neg,
    /// `+`
    Plus,
    /// `!`
    Not,
    /// `~`
    BitNot,
}

/// Binary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum BinOp {
    Mul,
    Div,
    Rem,
    Add,
    Sub,
    Shl,
    Shr,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    BitAnd,
    BitXor,
    BitOr,
    And,
    Or,
}

/// A type as written in a cast or `sizeof`: a base or named type and pointer levels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeName {
    /// `int`, `unsigned long`, `struct point`, `my_typedef`.
    pub base: String,
    /// How many `*`.
    pub pointers: u32,
}
