//! Expressions for conditions, watches and hovers: a C subset parsed once into an
//! [`Expr`] tree and evaluated against one frame's registers, memory and scope.
//!
//! Supported: integer, floating, character literals; identifiers (locals, arguments,
//! the unit's globals), `$reg` registers; `.` `->` `[]`; unary `* & - + ! ~`; binary
//! arithmetic, shifts, bitwise, logical and comparison operators with C's usual
//! arithmetic conversions; casts to base, named and pointer types; `sizeof`.
//!
//! C++ library types: `[]` on deque, map and unordered_map (string keys from
//! literals), `*`/`->` on smart pointers and optionals, and the methods in
//! `Env::cpp_method`, all read from memory.
//!
//! Rust (and C++) additions: `.` follows references, `Box` and pointers; `.0` names
//! tuple fields; indexing works on `Vec`, `VecDeque`, slices and `&str`-free arrays
//! with a bounds check; `len()` and `is_empty()` on strings and collections; string
//! literals compare with `==`/`!=` against `&str`, `String` and `std::string`;
//! integers of Rust types keep their type (a literal takes the other operand's type)
//! and overflow is an error, as in a debug build; integer literals take Rust
//! suffixes (`5u8`, `1_000i64`); `true` and `false`.

use std::sync::Arc;

use symbols::{
    read_pieces, ArrayBound, BaseEncoding, Binary, EvalContext, LoadBias, LocationExpr,
    MemoryReader, RuntimeAddr, Scope, TypeKind, TypeRef, Variable, VariableKind, VariableLocation,
};

use crate::error::{Error, Result};

mod lower;
use crate::mem::dwarf_register;
use crate::values::{int_value, le_u64, resolve};
pub(crate) use lower::{is_comparison, lower_condition, Checked, Node, Slot};

/// Deepest nesting accepted (a hostile expression must not overflow the stack).
const MAX_DEPTH: u32 = 64;

/// A parsed expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// An integer literal with its C type.
    Int(i128, IntTy),
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

const INT: IntTy = IntTy {
    size: 4,
    signed: true,
};
const LONG: IntTy = IntTy {
    size: 8,
    signed: true,
};
const ULONG: IntTy = IntTy {
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

// ------------------------------------------------------------------ lexer

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Int(i128, IntTy),
    Float(f64),
    Ident(String),
    Reg(String),
    Str(String),
    /// A tuple field after `.` (`t.0`).
    Field(String),
    Punct(&'static str),
}

const PUNCTS: [&str; 30] = [
    "->", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "(", ")", "[", "]", ".", "*", "&", "-",
    "+", "!", "~", "/", "%", "<", ">", "^", "|", "?", ":", ",", "=",
];

fn lex(src: &str) -> Result<Vec<Tok>> {
    let b = src.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        // `t.0`, `x.1.0`: a tuple field, not a floating literal.
        let after_operand = matches!(
            out.last(),
            Some(Tok::Ident(_) | Tok::Field(_) | Tok::Punct(")") | Tok::Punct("]"))
        );
        if c == b'.' && after_operand && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            out.push(Tok::Punct("."));
            i += 1;
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            out.push(Tok::Field(src[start..i].to_string()));
            continue;
        }
        if c == b'"' {
            let mut text = Vec::new();
            i += 1;
            loop {
                match b.get(i) {
                    None => return Err(Error::Syntax("unterminated string literal".into())),
                    Some(b'"') => {
                        i += 1;
                        break;
                    }
                    Some(b'\\') => {
                        let (v, len) = char_literal(&b[i..])
                            .ok_or_else(|| Error::Syntax("invalid escape in string".into()))?;
                        text.push(v);
                        i += len;
                    }
                    Some(&ch) => {
                        text.push(ch);
                        i += 1;
                    }
                }
            }
            out.push(Tok::Str(String::from_utf8_lossy(&text).into_owned()));
            continue;
        }
        if c.is_ascii_digit() && rust_int_literal(&src[i..]).is_some() {
            if let Some((v, ty, len)) = rust_int_literal(&src[i..]) {
                out.push(Tok::Int(v, ty));
                i += len;
                continue;
            }
        }
        if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            let start = i;
            let hex = c == b'0' && matches!(b.get(i + 1), Some(b'x' | b'X'));
            if hex {
                i += 2;
                while i < b.len() && b[i].is_ascii_hexdigit() {
                    i += 1;
                }
            } else {
                while i < b.len()
                    && (b[i].is_ascii_digit()
                        || b[i] == b'.'
                        || b[i] == b'e'
                        || b[i] == b'E'
                        || ((b[i] == b'-' || b[i] == b'+') && matches!(b[i - 1], b'e' | b'E')))
                {
                    i += 1;
                }
            }
            let text = &src[start..i];
            let suffix_start = i;
            while i < b.len() && matches!(b[i], b'u' | b'U' | b'l' | b'L' | b'f' | b'F') {
                i += 1;
            }
            let suffix = src[suffix_start..i].to_ascii_lowercase();
            if !hex
                && (text.contains('.') || text.contains('e') || text.contains('E') || suffix == "f")
            {
                let v: f64 = text
                    .parse()
                    .map_err(|_| Error::Syntax(format!("invalid number '{text}'")))?;
                out.push(Tok::Float(v));
                continue;
            }
            let v = if hex {
                i128::from_str_radix(&text[2..], 16)
            } else if text.len() > 1 && text.starts_with('0') {
                i128::from_str_radix(&text[1..], 8)
            } else {
                text.parse::<i128>()
            }
            .map_err(|_| Error::Syntax(format!("invalid number '{text}'")))?;
            let unsigned = suffix.contains('u');
            let long = suffix.contains('l');
            let ty = if long
                || v > i128::from(u32::MAX)
                || (v > i128::from(i32::MAX) && !unsigned && !hex)
            {
                IntTy {
                    size: 8,
                    signed: !unsigned && v <= i128::from(i64::MAX),
                }
            } else if unsigned || v > i128::from(i32::MAX) {
                IntTy {
                    size: 4,
                    signed: false,
                }
            } else {
                INT
            };
            out.push(Tok::Int(v, ty));
            continue;
        }
        if c == b'\'' {
            let (v, len) = char_literal(&b[i + 1..])
                .ok_or_else(|| Error::Syntax("invalid character literal".into()))?;
            i += 1 + len;
            if b.get(i) != Some(&b'\'') {
                return Err(Error::Syntax("unterminated character literal".into()));
            }
            i += 1;
            out.push(Tok::Int(i128::from(v as i8), INT));
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' || c == b'$' {
            let start = i;
            i += 1;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let word = &src[start..i];
            if let Some(reg) = word.strip_prefix('$') {
                out.push(Tok::Reg(reg.to_string()));
            } else {
                out.push(Tok::Ident(word.to_string()));
            }
            continue;
        }
        let rest = &src[i..];
        match PUNCTS.iter().find(|p| rest.starts_with(**p)) {
            Some(p) => {
                out.push(Tok::Punct(p));
                i += p.len();
            }
            None => {
                let ch = rest.chars().next().unwrap_or('?');
                return Err(Error::Syntax(format!("unexpected character '{ch}'")));
            }
        }
    }
    Ok(out)
}

/// A Rust integer literal with a type suffix or `_` separators (`5u8`, `1_000`,
/// `0xffu32`): its value, type and length. Plain C literals return `None`.
fn rust_int_literal(src: &str) -> Option<(i128, IntTy, usize)> {
    let b = src.as_bytes();
    let hex = src.starts_with("0x") || src.starts_with("0X");
    let mut i = if hex { 2 } else { 0 };
    let digits_start = i;
    while i < b.len()
        && (b[i] == b'_'
            || if hex {
                b[i].is_ascii_hexdigit()
            } else {
                b[i].is_ascii_digit()
            })
    {
        i += 1;
    }
    let digits: String = src[digits_start..i].chars().filter(|c| *c != '_').collect();
    let mut end = i;
    while end < b.len() && (b[end].is_ascii_alphanumeric()) {
        end += 1;
    }
    let suffix = &src[i..end];
    let ty = match suffix {
        "i8" => IntTy {
            size: 1,
            signed: true,
        },
        "u8" => IntTy {
            size: 1,
            signed: false,
        },
        "i16" => IntTy {
            size: 2,
            signed: true,
        },
        "u16" => IntTy {
            size: 2,
            signed: false,
        },
        "i32" => INT,
        "u32" => IntTy {
            size: 4,
            signed: false,
        },
        "i64" | "isize" => LONG,
        "u64" | "usize" => ULONG,
        "i128" => IntTy {
            size: 16,
            signed: true,
        },
        "u128" => IntTy {
            size: 16,
            signed: false,
        },
        "" if src[..i].contains('_') => {
            if b.get(i) == Some(&b'.') {
                return None;
            }
            INT
        }
        _ => return None,
    };
    if digits.is_empty() {
        return None;
    }
    let v = if hex {
        i128::from_str_radix(&digits, 16)
    } else {
        digits.parse::<i128>()
    }
    .ok()?;
    let ty = if suffix.is_empty() && v > i128::from(i32::MAX) {
        LONG
    } else {
        ty
    };
    Some((v, ty, end))
}

fn char_literal(b: &[u8]) -> Option<(u8, usize)> {
    match *b.first()? {
        b'\\' => {
            let c = *b.get(1)?;
            let v = match c {
                b'n' => b'\n',
                b't' => b'\t',
                b'r' => b'\r',
                b'0'..=b'7' => {
                    let mut v: u32 = 0;
                    let mut n = 1;
                    while n < 4 && b.get(n).is_some_and(|d| (b'0'..=b'7').contains(d)) {
                        v = v * 8 + u32::from(b[n] - b'0');
                        n += 1;
                    }
                    return Some((v as u8, n));
                }
                b'a' => 7,
                b'b' => 8,
                b'f' => 12,
                b'v' => 11,
                other => other,
            };
            Some((v, 2))
        }
        c => Some((c, 1)),
    }
}

// ------------------------------------------------------------------ parser

const BASE_WORDS: [&str; 11] = [
    "int", "char", "short", "long", "unsigned", "signed", "float", "double", "void", "_Bool",
    "bool",
];

struct Parser<'a> {
    toks: Vec<Tok>,
    pos: usize,
    is_type: &'a dyn Fn(&str) -> bool,
    depth: u32,
}

/// Parses an expression. `is_type` says whether an identifier names a type (a typedef),
/// which decides whether `(name)` starts a cast.
pub fn parse(src: &str, is_type: &dyn Fn(&str) -> bool) -> Result<Expr> {
    let toks = lex(src)?;
    if toks.is_empty() {
        return Err(Error::Syntax("empty expression".into()));
    }
    let mut p = Parser {
        toks,
        pos: 0,
        is_type,
        depth: 0,
    };
    let e = p.binary(0)?;
    if p.pos < p.toks.len() {
        return Err(Error::Syntax(format!(
            "unexpected {}",
            describe(&p.toks[p.pos])
        )));
    }
    Ok(e)
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Int(v, _) => format!("'{v}'"),
        Tok::Float(v) => format!("'{v}'"),
        Tok::Ident(s) => format!("'{s}'"),
        Tok::Reg(s) => format!("'${s}'"),
        Tok::Str(s) => format!("{s:?}"),
        Tok::Field(s) => format!("'{s}'"),
        Tok::Punct(p) => format!("'{p}'"),
    }
}

fn binop(p: &str) -> Option<(BinOp, u8)> {
    Some(match p {
        "||" => (BinOp::Or, 1),
        "&&" => (BinOp::And, 2),
        "|" => (BinOp::BitOr, 3),
        "^" => (BinOp::BitXor, 4),
        "&" => (BinOp::BitAnd, 5),
        "==" => (BinOp::Eq, 6),
        "!=" => (BinOp::Ne, 6),
        "<" => (BinOp::Lt, 7),
        "<=" => (BinOp::Le, 7),
        ">" => (BinOp::Gt, 7),
        ">=" => (BinOp::Ge, 7),
        "<<" => (BinOp::Shl, 8),
        ">>" => (BinOp::Shr, 8),
        "+" => (BinOp::Add, 9),
        "-" => (BinOp::Sub, 9),
        "*" => (BinOp::Mul, 10),
        "/" => (BinOp::Div, 10),
        "%" => (BinOp::Rem, 10),
        _ => return None,
    })
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn peek_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Some(Tok::Punct(q)) if *q == p)
    }

    fn expect(&mut self, p: &str) -> Result<()> {
        if self.peek_punct(p) {
            self.pos += 1;
            Ok(())
        } else {
            match self.peek() {
                Some(t) => Err(Error::Syntax(format!(
                    "expected '{p}', found {}",
                    describe(t)
                ))),
                None => Err(Error::Syntax(format!("expected '{p}' at the end"))),
            }
        }
    }

    fn binary(&mut self, min_prec: u8) -> Result<Expr> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Error::Syntax("expression nested too deeply".into()));
        }
        let mut lhs = self.unary()?;
        while let Some(Tok::Punct(p)) = self.peek() {
            let Some((op, prec)) = binop(p) else { break };
            if prec <= min_prec {
                break;
            }
            self.pos += 1;
            let rhs = self.binary(prec)?;
            lhs = Expr::Binary(op, Box::new(lhs), Box::new(rhs));
        }
        self.depth -= 1;
        Ok(lhs)
    }

    fn starts_type(&self, at: usize) -> bool {
        match self.toks.get(at) {
            Some(Tok::Ident(w)) => {
                BASE_WORDS.contains(&w.as_str())
                    || matches!(
                        w.as_str(),
                        "struct" | "union" | "enum" | "const" | "volatile"
                    )
                    || (self.is_type)(w)
            }
            _ => false,
        }
    }

    fn type_name(&mut self) -> Result<TypeName> {
        let mut words: Vec<String> = Vec::new();
        while let Some(Tok::Ident(w)) = self.peek() {
            let w = w.clone();
            if w == "const" || w == "volatile" {
                self.pos += 1;
                continue;
            }
            let tagged = matches!(w.as_str(), "struct" | "union" | "enum");
            let is_base = BASE_WORDS.contains(&w.as_str());
            if !words.is_empty()
                && !is_base
                && !tagged
                && !words
                    .last()
                    .is_some_and(|l| matches!(l.as_str(), "struct" | "union" | "enum"))
            {
                break;
            }
            if !words.is_empty()
                && !is_base
                && words.iter().any(|x| BASE_WORDS.contains(&x.as_str()))
            {
                break;
            }
            words.push(w);
            self.pos += 1;
            if !is_base && !tagged {
                break;
            }
        }
        if words.is_empty() {
            return Err(Error::Syntax("expected a type".into()));
        }
        let mut pointers = 0;
        while self.peek_punct("*") {
            self.pos += 1;
            pointers += 1;
        }
        Ok(TypeName {
            base: words.join(" "),
            pointers,
        })
    }

    fn unary(&mut self) -> Result<Expr> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Error::Syntax("expression nested too deeply".into()));
        }
        let e = match self.peek().cloned() {
            Some(Tok::Punct(p)) if matches!(p, "*" | "&" | "-" | "+" | "!" | "~") => {
                self.pos += 1;
                let op = match p {
                    "*" => UnOp::Deref,
                    "&" => UnOp::AddrOf,
                    "-" => UnOp::Neg,
                    "+" => UnOp::Plus,
                    "!" => UnOp::Not,
                    _ => UnOp::BitNot,
                };
                Expr::Unary(op, Box::new(self.unary()?))
            }
            Some(Tok::Ident(w)) if w == "sizeof" => {
                self.pos += 1;
                if self.peek_punct("(") && self.starts_type(self.pos + 1) {
                    self.pos += 1;
                    let t = self.type_name()?;
                    self.expect(")")?;
                    Expr::SizeofType(t)
                } else {
                    Expr::SizeofExpr(Box::new(self.unary()?))
                }
            }
            Some(Tok::Punct("(")) if self.starts_type(self.pos + 1) => {
                self.pos += 1;
                let t = self.type_name()?;
                self.expect(")")?;
                Expr::Cast(t, Box::new(self.unary()?))
            }
            _ => self.postfix()?,
        };
        self.depth -= 1;
        Ok(e)
    }

    fn postfix(&mut self) -> Result<Expr> {
        let mut e = self.primary()?;
        loop {
            if self.peek_punct(".") || self.peek_punct("->") {
                let arrow = self.peek_punct("->");
                self.pos += 1;
                let name = match self.peek().cloned() {
                    Some(Tok::Ident(name)) => name,
                    Some(Tok::Field(n)) if !arrow => n,
                    _ => return Err(Error::Syntax("expected a member name".into())),
                };
                self.pos += 1;
                if !arrow && self.peek_punct("(") {
                    self.pos += 1;
                    self.expect(")")?;
                    e = Expr::MethodCall(Box::new(e), name);
                    continue;
                }
                e = if arrow {
                    Expr::Arrow(Box::new(e), name)
                } else {
                    Expr::Member(Box::new(e), name)
                };
            } else if self.peek_punct("[") {
                self.pos += 1;
                let i = self.binary(0)?;
                self.expect("]")?;
                e = Expr::Index(Box::new(e), Box::new(i));
            } else {
                return Ok(e);
            }
        }
    }

    fn primary(&mut self) -> Result<Expr> {
        let Some(t) = self.peek().cloned() else {
            return Err(Error::Syntax("unexpected end of expression".into()));
        };
        self.pos += 1;
        match t {
            Tok::Int(v, ty) => Ok(Expr::Int(v, ty)),
            Tok::Float(v) => Ok(Expr::Float(v)),
            Tok::Ident(name) => Ok(Expr::Ident(name)),
            Tok::Reg(name) => Ok(Expr::Register(name)),
            Tok::Str(text) => Ok(Expr::Str(text)),
            Tok::Punct("(") => {
                let e = self.binary(0)?;
                self.expect(")")?;
                Ok(e)
            }
            other => Err(Error::Syntax(format!("unexpected {}", describe(&other)))),
        }
    }
}

// ------------------------------------------------------------------ evaluation

/// The type of an evaluated value: a DWARF type, or one the expression made up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ETy {
    Dwarf(TypeRef),
    /// An array type with its first `usize` dimensions already indexed.
    SubArray(TypeRef, usize),
    Int(IntTy),
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
}

/// An evaluated value.
#[derive(Clone, Debug)]
pub(crate) struct EVal {
    pub ty: ETy,
    pub loc: Loc,
}

/// A type seen through typedefs: what operations can do with it.
enum Shape {
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
enum Num {
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
    pub modules: Option<&'a [Arc<crate::modules::Module>]>,
}

/// The enumerators of every enum type of a binary, collected on first use.
#[derive(Debug)]
pub struct Enumerators {
    binary: Arc<Binary>,
    map: std::sync::OnceLock<std::collections::HashMap<String, (i128, TypeRef)>>,
}

impl Enumerators {
    /// Enumerators of `binary`'s enum types (read lazily).
    pub fn new(binary: Arc<Binary>) -> Enumerators {
        Enumerators {
            binary,
            map: std::sync::OnceLock::new(),
        }
    }

    /// The value and enum type of an enumerator.
    pub(crate) fn get(&self, name: &str) -> Option<(i128, TypeRef)> {
        self.map
            .get_or_init(|| {
                let mut map = std::collections::HashMap::new();
                let index = self.binary.symbol_index();
                let mut seen = std::collections::HashSet::new();
                for e in index
                    .entries()
                    .filter(|e| e.kind == symbols::SymbolKind::Type)
                {
                    for t in self.binary.types_by_name(&e.name) {
                        if !seen.insert(t) {
                            continue;
                        }
                        let Ok(info) = self.binary.type_info(t) else {
                            continue;
                        };
                        if let TypeKind::Enum { enumerators, .. } = info.kind {
                            for (n, v) in enumerators {
                                map.entry(n).or_insert((v, t));
                            }
                        }
                    }
                }
                map
            })
            .get(name)
            .copied()
    }
}

impl Env<'_> {
    fn err<T>(msg: impl Into<String>) -> Result<T> {
        Err(Error::Eval(msg.into()))
    }

    pub(crate) fn eval(&self, e: &Expr) -> Result<EVal> {
        self.eval_depth(e, 0)
    }

    fn eval_depth(&self, e: &Expr, depth: u32) -> Result<EVal> {
        if depth > MAX_DEPTH {
            return Self::err("expression nested too deeply");
        }
        let d = depth + 1;
        match e {
            Expr::Int(v, ty) => Ok(int_val(*v, *ty)),
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
                if let Some(found) = self.cpp_index(&b, &i)? {
                    return Ok(found);
                }
                let Num::I(i, _) = self.load_num(&i)? else {
                    return Self::err("array index is not an integer");
                };
                if self.is_foreign(&b.ty) {
                    b = self.auto_deref(b)?;
                    if let Some(seq) = self.sequence(&b)? {
                        return self.element(&seq, i);
                    }
                }
                let (elem, addr) = match self.shape(&b.ty)? {
                    Shape::Array { elem, .. } => match b.loc {
                        Loc::Mem(a) => (elem, a),
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
                        Loc::Val(_) => {
                            Self::err("cannot take the address of a value that is not in memory")
                        }
                    },
                    UnOp::Plus => Ok(self.num_val(promote(self.load_num(&v)?))),
                    UnOp::Neg => Ok(self.num_val(match promote(self.load_num(&v)?) {
                        Num::I(i, t) => Num::I(wrap(i.wrapping_neg(), t), t),
                        Num::F(f) => Num::F(-f),
                        Num::P(_) => return Self::err("cannot negate a pointer"),
                    })),
                    UnOp::Not => Ok(int_val(i128::from(!self.truthy(&v)?), INT)),
                    UnOp::BitNot => match promote(self.load_num(&v)?) {
                        Num::I(i, t) => Ok(self.num_val(Num::I(wrap(!i, t), t))),
                        _ => Self::err("'~' needs an integer"),
                    },
                }
            }
            Expr::Binary(BinOp::And, a, b) => {
                let r = self.truthy(&self.eval_depth(a, d)?)?
                    && self.truthy(&self.eval_depth(b, d)?)?;
                Ok(int_val(i128::from(r), INT))
            }
            Expr::Binary(BinOp::Or, a, b) => {
                let r = self.truthy(&self.eval_depth(a, d)?)?
                    || self.truthy(&self.eval_depth(b, d)?)?;
                Ok(int_val(i128::from(r), INT))
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

    /// Looks a name up: the frame's locals (innermost block first), then the unit's globals.
    pub(crate) fn find_variable(&self, name: &str) -> Option<&Variable> {
        self.scope
            .locals
            .iter()
            .filter(|v| {
                v.frame == self.inline_index && !v.shadowed && v.name.as_deref() == Some(name)
            })
            .max_by_key(|v| v.depth)
            .or_else(|| {
                self.scope
                    .globals
                    .iter()
                    .find(|v| v.name.as_deref() == Some(name))
            })
    }

    fn variable(&self, name: &str) -> Result<EVal> {
        if let Some(var) = self.find_variable(name) {
            return self.variable_value(var);
        }
        // As gdb: past the frame's locals and its unit's globals, the globals of every
        // unit of the binary (external definitions first, then other units' statics),
        // then those of the other modules, the main executable first. A system
        // library's DWARF (libc's separate debug file) is not searched: reading all of
        // it for one name would stall the hit.
        if !crate::modules::is_system(self.binary.path()) {
            if let Some(var) = self.binary.globals_named(name).first() {
                return self.variable_value(var);
            }
        }
        if let Some(v) = self.other_module_global(name)? {
            return Ok(v);
        }
        if let Some((v, ty)) = self.enums.and_then(|e| e.get(name)) {
            let size = self
                .binary
                .type_size(ty)
                .ok()
                .flatten()
                .unwrap_or(4)
                .min(16) as usize;
            return Ok(EVal {
                ty: ETy::Dwarf(ty),
                loc: Loc::Val(v.to_le_bytes()[..size].to_vec()),
            });
        }
        match name {
            "true" | "false" => {
                return Ok(int_val(
                    i128::from(name == "true"),
                    IntTy {
                        size: 1,
                        signed: false,
                    },
                ))
            }
            _ => {}
        }
        Self::err(format!("no symbol '{name}' in this scope"))
    }

    /// A global named `name` of another module, as a plain integer or double: its type
    /// lives in that module's DWARF, which this environment's values cannot refer to.
    fn other_module_global(&self, name: &str) -> Result<Option<EVal>> {
        let Some(modules) = self.modules else {
            return Ok(None);
        };
        for m in modules {
            if crate::modules::is_system(&m.path) {
                continue;
            }
            let Some(binary) = m.binary() else { continue };
            if Arc::ptr_eq(binary, self.binary) {
                continue;
            }
            let found = binary.globals_named(name);
            let Some(var) = found.first() else { continue };
            let scope = Scope::default();
            let there = Env {
                binary,
                bias: m.bias,
                mem: self.mem,
                regs: self.regs,
                pc: 0,
                cfa: None,
                scope: &scope,
                inline_index: 0,
                enums: None,
                entry_regs: None,
                modules: None,
            };
            let v = there.variable_value(var)?;
            let ty = match there.shape(&v.ty)? {
                Shape::Int(t) => ETy::Int(t),
                Shape::Float(8) => ETy::Double,
                _ => {
                    return Self::err(format!(
                        "'{name}' is a global of {}: only its integer and double globals \
                         can be read from here",
                        m.name()
                    ))
                }
            };
            return Ok(Some(EVal { ty, loc: v.loc }));
        }
        Ok(None)
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
    fn frame_slot(&self, expr: &LocationExpr) -> Option<u64> {
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

    fn pieces(&self, expr: &LocationExpr) -> Result<Vec<symbols::Piece>> {
        self.ctx_pieces(expr)
            .map_err(|e| Error::Eval(format!("cannot locate the variable: {e}")))
    }

    fn ctx_pieces(&self, expr: &LocationExpr) -> symbols::Result<Vec<symbols::Piece>> {
        let ctx = EvalContext {
            memory: self.mem,
            registers: self.regs,
            bias: self.bias,
            pc: RuntimeAddr(self.pc),
            frame_base: None,
            cfa: self.cfa,
            tls_base: None,
            entry_registers: self.entry_regs,
        };
        self.binary
            .evaluate_location(expr, self.scope.frame_base.as_ref(), &ctx)
    }

    fn shape(&self, ty: &ETy) -> Result<Shape> {
        Ok(match ty {
            ETy::Int(t) => Shape::Int(*t),
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
    fn array_shape(
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
                Ok(dims.iter().skip(*dim).fold(elem, |acc, d| match d.count {
                    ArrayBound::Count(n) => acc.saturating_mul(n),
                    _ => acc,
                }))
            }
            ETy::Int(t) => Ok(u64::from(t.size)),
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

    fn bytes(&self, v: &EVal) -> Result<Vec<u8>> {
        let size = self.size_of(&v.ty)?;
        match &v.loc {
            Loc::Val(b) => Ok(b.clone()),
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

    fn load_num(&self, v: &EVal) -> Result<Num> {
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
                Loc::Val(_) => Self::err("array is not in memory"),
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

    fn num_val(&self, n: Num) -> EVal {
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

    fn deref(&self, v: &EVal) -> Result<EVal> {
        let (target, addr) = match self.shape(&v.ty)? {
            Shape::Ptr(t) => (t, le_u64(&self.bytes(v)?)),
            Shape::Array { elem, .. } => match v.loc {
                Loc::Mem(a) => (elem, a),
                Loc::Val(_) => return Self::err("array is not in memory"),
            },
            _ => {
                // `*` and `->` on a smart pointer or an optional, as their operators do.
                if let Some(found) = self.cpp_deref(v)? {
                    return Ok(found);
                }
                return Self::err("cannot dereference a value that is not a pointer");
            }
        };
        if addr == 0 {
            return Self::err("cannot dereference a null pointer");
        }
        if matches!(target, ETy::Void) {
            return Self::err("cannot dereference a 'void *'");
        }
        Ok(EVal {
            ty: target,
            loc: Loc::Mem(addr),
        })
    }

    fn member(&self, v: &EVal, name: &str) -> Result<EVal> {
        let Shape::Composite { members } = self.shape(&v.ty)? else {
            return Self::err(format!(
                "cannot take member '{name}' of a value that is not a struct or union"
            ));
        };
        if let Some(found) = self.find_member(v, &members, name, 0)? {
            return Ok(found);
        }
        // Rust names tuple fields `__0`.
        if name.bytes().all(|b| b.is_ascii_digit()) {
            if let Some(found) = self.find_member(v, &members, &format!("__{name}"), 0)? {
                return Ok(found);
            }
        }
        Self::err(format!("there is no member named '{name}'"))
    }

    /// A renderer over this environment's memory (for the language helpers).
    fn renderer(&self) -> crate::values::Renderer<'_> {
        crate::values::Renderer {
            binary: self.binary,
            bias: self.bias,
            mem: self.mem,
            bounds: None,
        }
    }

    fn place_of(v: &EVal) -> crate::values::Place {
        match &v.loc {
            Loc::Mem(a) => crate::values::Place::Memory(*a),
            Loc::Val(b) => crate::values::Place::Bytes(Arc::from(b.as_slice()), 0),
        }
    }

    /// Whether a value's type comes from Rust or C++ (whose references index and
    /// compare through their pointee).
    fn is_foreign(&self, ty: &ETy) -> bool {
        let ETy::Dwarf(t) = ty else { return false };
        matches!(
            self.binary.type_language(*t),
            Ok(Some(symbols::Language::Rust | symbols::Language::Cpp))
        )
    }

    fn is_rust(&self, ty: &ETy) -> bool {
        let ETy::Dwarf(t) = ty else { return false };
        matches!(
            self.binary.type_language(*t),
            Ok(Some(symbols::Language::Rust))
        )
    }

    /// Follows pointers (references, `Box`) to a non-pointer value.
    fn auto_deref(&self, mut v: EVal) -> Result<EVal> {
        for _ in 0..8 {
            match self.shape(&v.ty)? {
                Shape::Ptr(t) if !matches!(t, ETy::Void) => v = self.deref(&v)?,
                _ => break,
            }
        }
        Ok(v)
    }

    /// The elements of a Rust `Vec`, `VecDeque`, slice or C++ `std::vector`:
    /// element type, buffer, length and ring (head, capacity).
    fn sequence(&self, v: &EVal) -> Result<Option<crate::rust::Seq>> {
        let ETy::Dwarf(t) = v.ty else { return Ok(None) };
        Ok(self.renderer().sequence_parts(t, &Self::place_of(v)))
    }

    fn element(&self, seq: &crate::rust::Seq, i: i128) -> Result<EVal> {
        if i < 0 || i as u64 >= seq.len {
            return Self::err(format!(
                "index out of bounds: the len is {} but the index is {i}",
                seq.len
            ));
        }
        let stride = self.binary.type_size(seq.elem).ok().flatten().unwrap_or(0);
        let idx = match seq.ring {
            Some((head, cap)) if cap > 0 => head.wrapping_add(i as u64) % cap,
            _ => i as u64,
        };
        Ok(EVal {
            ty: ETy::Dwarf(seq.elem),
            loc: Loc::Mem(seq.ptr.wrapping_add(idx.wrapping_mul(stride))),
        })
    }

    /// `len()` (and `size()` for C++) of strings and collections; the C++ library
    /// methods [`Env::cpp_method`] knows.
    fn method(&self, v: &EVal, method: &str) -> Result<EVal> {
        if let Some(found) = self.cpp_method(v, method)? {
            return Ok(found);
        }
        if !matches!(method, "len" | "size") {
            return Self::err(format!(
                "no method '{method}' (len(), size(), empty(), front(), back(), value(), \
                 has_value(), get() and use_count() are supported)"
            ));
        }
        if let Some(bytes) = self.string_bytes(v)? {
            return Ok(int_val(bytes.len() as i128, ULONG));
        }
        let v = self.auto_deref(v.clone())?;
        if let Shape::Array { .. } = self.shape(&v.ty)? {
            let n = match &v.ty {
                ETy::Dwarf(t) | ETy::SubArray(t, _) => {
                    let dim = match v.ty {
                        ETy::SubArray(_, d) => d,
                        _ => 0,
                    };
                    match resolve(self.binary, *t).map_err(Error::Eval)?.kind {
                        TypeKind::Array { dims, .. } => match dims.get(dim).map(|d| &d.count) {
                            Some(ArrayBound::Count(n)) => *n,
                            _ => return Self::err("the array's length is unknown"),
                        },
                        _ => 0,
                    }
                }
                _ => 0,
            };
            return Ok(int_val(i128::from(n), ULONG));
        }
        if let Some(seq) = self.sequence(&v)? {
            return Ok(int_val(i128::from(seq.len), ULONG));
        }
        if let ETy::Dwarf(t) = v.ty {
            if let Some(n) = self.renderer().collection_len(t, &Self::place_of(&v)) {
                return Ok(int_val(i128::from(n), ULONG));
            }
        }
        Self::err(format!(
            "cannot take {method}() of a '{}'",
            self.type_name(&v.ty)
        ))
    }

    /// A value the renderer found, as an expression value.
    fn value_at(&self, ty: TypeRef, place: crate::values::Place) -> Result<EVal> {
        let loc = match place {
            crate::values::Place::Memory(a) => Loc::Mem(a),
            crate::values::Place::Bytes(b, off) => {
                let size = self.binary.type_size(ty).ok().flatten().unwrap_or(0) as usize;
                Loc::Val(
                    b.get(off..off.saturating_add(size))
                        .ok_or_else(|| Error::Eval("value out of range".into()))?
                        .to_vec(),
                )
            }
        };
        Ok(EVal {
            ty: ETy::Dwarf(ty),
            loc,
        })
    }

    /// The C++ library value (through references) with its DWARF type and place.
    fn cpp_value(&self, v: &EVal) -> Result<Option<(EVal, TypeRef, crate::values::Place)>> {
        if !self.is_foreign(&v.ty) || self.is_rust(&v.ty) {
            return Ok(None);
        }
        let v = self.auto_deref(v.clone())?;
        let ETy::Dwarf(t) = v.ty else { return Ok(None) };
        let place = Self::place_of(&v);
        Ok(Some((v, t, place)))
    }

    /// `container[key]` on a deque, map or unordered_map (gdb's xmethods' meaning,
    /// read from memory); `None` for other values.
    fn cpp_index(&self, b: &EVal, i: &EVal) -> Result<Option<EVal>> {
        let Some((_, t, place)) = self.cpp_value(b)? else {
            return Ok(None);
        };
        let bytes = self.string_bytes(i)?;
        let key = match &bytes {
            Some(b) => crate::cpp::CppKey::Bytes(b),
            None => match self.load_num(i)? {
                Num::I(n, _) => crate::cpp::CppKey::Int(n),
                _ => return Self::err("a container's key must be an integer or a string"),
            },
        };
        match self.renderer().cpp_index(t, &place, &key) {
            None => Ok(None),
            Some(Err(e)) => Self::err(e),
            Some(Ok((ty, p))) => self.value_at(ty, p).map(Some),
        }
    }

    /// `*` of a `unique_ptr`, `shared_ptr` or `optional`; `None` for other values.
    fn cpp_deref(&self, v: &EVal) -> Result<Option<EVal>> {
        let Some((_, t, place)) = self.cpp_value(v)? else {
            return Ok(None);
        };
        let r = self.renderer();
        if let Some((pt, pp)) = r.cpp_smart_pointer(t, &place) {
            let p = self.value_at(pt, pp)?;
            return self.deref(&p).map(Some);
        }
        match r.cpp_optional_value(t, &place) {
            None => Ok(None),
            Some(Err(e)) => Self::err(e),
            Some(Ok(None)) => Self::err("the optional holds no value"),
            Some(Ok(Some((ty, p)))) => self.value_at(ty, p).map(Some),
        }
    }

    /// The C++ library methods gdb's xmethods provide, read from memory: `empty()`,
    /// `front()`, `back()`, `has_value()`, `value()`, `get()`, `use_count()`.
    fn cpp_method(&self, v: &EVal, method: &str) -> Result<Option<EVal>> {
        let Some((inner, t, place)) = self.cpp_value(v)? else {
            return Ok(None);
        };
        let r = self.renderer();
        match method {
            "empty" => {
                let n = self.method(&inner, "size")?;
                let Num::I(n, _) = self.load_num(&n)? else {
                    return Self::err("size() is not a number");
                };
                // The symbol index has no base types to find `bool` by, so
                // `empty()` is C's truth value, as conditions use it.
                Ok(Some(int_val(i128::from(n == 0), INT)))
            }
            "front" | "back" => match r.cpp_end(t, &place, method == "back") {
                None => Ok(None),
                Some(Err(e)) => Self::err(e),
                Some(Ok((ty, p))) => self.value_at(ty, p).map(Some),
            },
            "has_value" => match r.cpp_optional_engaged(t, &place) {
                None => Ok(None),
                Some((ty, p)) => self.value_at(ty, p).map(Some),
            },
            "value" => match r.cpp_optional_value(t, &place) {
                None => Ok(None),
                Some(Err(e)) => Self::err(e),
                Some(Ok(None)) => Self::err("bad optional access: the optional holds no value"),
                Some(Ok(Some((ty, p)))) => self.value_at(ty, p).map(Some),
            },
            "get" => match r.cpp_smart_pointer(t, &place) {
                None => Ok(None),
                Some((ty, p)) => self.value_at(ty, p).map(Some),
            },
            "use_count" => Ok(r.cpp_use_count(t, &place).map(|n| int_val(n, LONG))),
            _ => Ok(None),
        }
    }

    /// The bytes of a string value: a literal, a Rust `&str`/`String`/`PathBuf`, a
    /// C++ `std::string`, or a C `char *`; `None` for other values.
    fn string_bytes(&self, v: &EVal) -> Result<Option<Vec<u8>>> {
        if let (ETy::Str, Loc::Val(b)) = (&v.ty, &v.loc) {
            return Ok(Some(b.clone()));
        }
        if let ETy::Dwarf(t) = v.ty {
            if let Ok(TypeKind::Pointer(Some(target))) = resolve(self.binary, t).map(|r| r.kind) {
                let is_char = resolve(self.binary, target).is_ok_and(|r| {
                    r.size == Some(1)
                        && matches!(
                            r.kind,
                            TypeKind::Base(BaseEncoding::SignedChar | BaseEncoding::UnsignedChar)
                        )
                });
                if is_char && !self.is_foreign(&v.ty) {
                    let addr = le_u64(&self.bytes(v)?);
                    return crate::values::read_c_string(self.mem, addr)
                        .map(|(s, _)| Some(s))
                        .map_err(|()| {
                            Error::Eval(format!("cannot access memory at address {addr:#x}"))
                        });
                }
            }
        }
        if !self.is_foreign(&v.ty) {
            return Ok(None);
        }
        let v = self.auto_deref(v.clone())?;
        let ETy::Dwarf(t) = v.ty else { return Ok(None) };
        let Some((ptr, len)) = self.renderer().string_parts(t, &Self::place_of(&v)) else {
            return Ok(None);
        };
        if len > 1 << 20 {
            return Self::err("the string is too long to compare");
        }
        let mut buf = vec![0u8; len as usize];
        if len > 0 {
            self.mem
                .read(RuntimeAddr(ptr), &mut buf)
                .map_err(|_| Error::Eval(format!("cannot access memory at address {ptr:#x}")))?;
        }
        Ok(Some(buf))
    }

    fn find_member(
        &self,
        v: &EVal,
        members: &[symbols::Member],
        name: &str,
        depth: u32,
    ) -> Result<Option<EVal>> {
        if depth > 8 {
            return Ok(None);
        }
        for m in members {
            let Some(ty) = m.ty else { continue };
            if m.name.as_deref() == Some(name) {
                if m.bitfield.is_some() {
                    let r = resolve(self.binary, ty).map_err(Error::Eval)?;
                    let place = match &v.loc {
                        Loc::Mem(a) => crate::values::Place::Memory(*a),
                        Loc::Val(b) => crate::values::Place::Bytes(Arc::from(b.as_slice()), 0),
                    };
                    let renderer = crate::values::Renderer {
                        binary: self.binary,
                        bias: self.bias,
                        mem: self.mem,
                        bounds: None,
                    };
                    let bytes = renderer.member_bytes(m, &r, &place).map_err(Error::Eval)?;
                    return Ok(Some(EVal {
                        ty: ETy::Dwarf(ty),
                        loc: Loc::Val(bytes),
                    }));
                }
                return Ok(Some(self.at_offset(v, ty, m.byte_offset)?));
            }
            if m.name.is_none() {
                // Anonymous struct or union: its members are ours.
                let inner = self.at_offset(v, ty, m.byte_offset)?;
                if let Shape::Composite { members } = self.shape(&inner.ty)? {
                    if let Some(found) = self.find_member(&inner, &members, name, depth + 1)? {
                        return Ok(Some(found));
                    }
                }
            }
        }
        Ok(None)
    }

    fn at_offset(&self, v: &EVal, ty: TypeRef, offset: u64) -> Result<EVal> {
        let loc = match &v.loc {
            Loc::Mem(a) => Loc::Mem(a.wrapping_add(offset)),
            Loc::Val(b) => {
                let size = self.binary.type_size(ty).ok().flatten().unwrap_or(0) as usize;
                let off = offset as usize;
                Loc::Val(
                    b.get(off..off.saturating_add(size))
                        .ok_or_else(|| Error::Eval("member out of range".into()))?
                        .to_vec(),
                )
            }
        };
        Ok(EVal {
            ty: ETy::Dwarf(ty),
            loc,
        })
    }

    fn binary(&self, op: BinOp, a: &EVal, b: &EVal) -> Result<EVal> {
        if matches!(a.ty, ETy::Str) || matches!(b.ty, ETy::Str) {
            if !matches!(op, BinOp::Eq | BinOp::Ne) {
                return Self::err("strings can only be compared with == and !=");
            }
            let (Some(x), Some(y)) = (self.string_bytes(a)?, self.string_bytes(b)?) else {
                return Self::err("a string literal can only be compared with a string");
            };
            return Ok(int_val(i128::from((x == y) == (op == BinOp::Eq)), INT));
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
                    return Ok(int_val(i128::from(r), INT));
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
                    return Ok(int_val(i128::from(cmp(i.cmp(&j))), INT));
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
    fn rust_int_op(&self, op: BinOp, a: &EVal, b: &EVal, i: i128, j: i128) -> Option<Result<EVal>> {
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

    fn named_type(&self, t: &TypeName) -> Result<ETy> {
        let base = match t.base.as_str() {
            "char" | "signed char" => ETy::Int(IntTy {
                size: 1,
                signed: true,
            }),
            "unsigned char" => ETy::Int(IntTy {
                size: 1,
                signed: false,
            }),
            "short" | "short int" | "signed short" => ETy::Int(IntTy {
                size: 2,
                signed: true,
            }),
            "unsigned short" | "unsigned short int" => ETy::Int(IntTy {
                size: 2,
                signed: false,
            }),
            "int" | "signed" | "signed int" => ETy::Int(INT),
            "unsigned" | "unsigned int" => ETy::Int(IntTy {
                size: 4,
                signed: false,
            }),
            "long" | "long int" | "long long" | "long long int" | "signed long" => ETy::Int(LONG),
            "unsigned long"
            | "unsigned long int"
            | "unsigned long long"
            | "unsigned long long int" => ETy::Int(ULONG),
            "_Bool" | "bool" => ETy::Int(IntTy {
                size: 1,
                signed: false,
            }),
            "double" | "float" => ETy::Double,
            "void" => ETy::Void,
            name => {
                let found = self.binary.types_by_name(name);
                match found.first() {
                    Some(t) => ETy::Dwarf(*t),
                    None => return Self::err(format!("no type named '{name}'")),
                }
            }
        };
        let mut ty = base;
        for _ in 0..t.pointers {
            ty = ETy::Ptr(Box::new(ty));
        }
        Ok(ty)
    }

    fn cast(&self, v: &EVal, to: ETy) -> Result<EVal> {
        let n = self.load_num(v)?;
        match self.shape(&to)? {
            Shape::Int(t) => {
                let v = wrap(
                    match n {
                        Num::I(i, _) => i,
                        Num::F(f) => f as i128,
                        Num::P(p) => i128::from(p),
                    },
                    t,
                );
                // Keep the named type (an enum, a typedef) so the result renders as one.
                let size = usize::from(t.size.min(16));
                Ok(EVal {
                    ty: to,
                    loc: Loc::Val(v.to_le_bytes()[..size].to_vec()),
                })
            }
            Shape::Float(_) => Ok(self.num_val(Num::F(match n {
                Num::I(i, _) => i as f64,
                Num::F(f) => f,
                Num::P(p) => p as f64,
            }))),
            Shape::Ptr(_) => {
                let p = match n {
                    Num::I(i, _) => i as u64,
                    Num::P(p) => p,
                    Num::F(_) => {
                        return Self::err("cannot cast a floating-point value to a pointer")
                    }
                };
                Ok(EVal {
                    ty: to,
                    loc: Loc::Val(p.to_le_bytes().to_vec()),
                })
            }
            _ => Self::err("can only cast to arithmetic and pointer types"),
        }
    }

    /// Where and what to write to store `value` into `target` (C assignment
    /// conversions: arithmetic and pointer values are converted to the target's type;
    /// structs and unions are copied whole when they have the same size).
    pub(crate) fn assignment(&self, target: &EVal, value: &EVal) -> Result<(u64, Vec<u8>)> {
        let Loc::Mem(addr) = target.loc else {
            return Self::err("cannot assign to a value that is not in memory");
        };
        let size = self.size_of(&target.ty)?;
        let bytes = match self.shape(&target.ty)? {
            Shape::Int(_) | Shape::Ptr(_) => {
                let converted = self.cast(value, target.ty.clone())?;
                self.bytes(&converted)?
            }
            Shape::Float(4) => {
                let f = match self.load_num(value)? {
                    Num::I(i, _) => i as f64,
                    Num::F(f) => f,
                    Num::P(_) => return Self::err("cannot assign a pointer to a float"),
                };
                (f as f32).to_le_bytes().to_vec()
            }
            Shape::Float(8) => {
                let f = match self.load_num(value)? {
                    Num::I(i, _) => i as f64,
                    Num::F(f) => f,
                    Num::P(_) => return Self::err("cannot assign a pointer to a double"),
                };
                f.to_le_bytes().to_vec()
            }
            Shape::Composite { .. } | Shape::Array { .. } => {
                if self.size_of(&value.ty)? != size {
                    return Self::err("cannot assign values of different types");
                }
                self.bytes(value)?
            }
            _ => return Self::err("cannot assign to a value of this type"),
        };
        if bytes.len() as u64 != size {
            return Self::err("cannot assign values of different sizes");
        }
        Ok((addr, bytes))
    }

    /// Renders a value as text (for logpoints and synthetic results).
    pub(crate) fn text(&self, v: &EVal) -> String {
        if let (ETy::Str, Loc::Val(b)) = (&v.ty, &v.loc) {
            return format!("{:?}", String::from_utf8_lossy(b));
        }
        if let ETy::Dwarf(t) | ETy::SubArray(t, _) = v.ty {
            let dim = match v.ty {
                ETy::SubArray(_, d) => d,
                _ => 0,
            };
            let place = match &v.loc {
                Loc::Mem(a) => crate::values::Place::Memory(*a),
                Loc::Val(b) => crate::values::Place::Bytes(Arc::from(b.as_slice()), 0),
            };
            let renderer = crate::values::Renderer {
                binary: self.binary,
                bias: self.bias,
                mem: self.mem,
                bounds: Some(&|e| self.eval_bound(e)),
            };
            return renderer.render("", t, place, dim).0.rendered;
        }
        match self.load_num(v) {
            Ok(Num::I(i, _)) => i.to_string(),
            Ok(Num::F(f)) => crate::values::format_g(f, 17),
            Ok(Num::P(p)) => format!("{p:#x}"),
            Err(e) => format!("<error: {e}>"),
        }
    }

    /// A C name for a value's type.
    pub(crate) fn type_name(&self, ty: &ETy) -> String {
        match ty {
            ETy::Dwarf(t) | ETy::SubArray(t, _) => {
                self.binary.type_name(*t).unwrap_or_else(|_| "?".into())
            }
            ETy::Int(t) => match (t.size, t.signed) {
                (1, true) => "char".into(),
                (1, false) => "unsigned char".into(),
                (2, true) => "short".into(),
                (2, false) => "unsigned short".into(),
                (4, true) => "int".into(),
                (4, false) => "unsigned int".into(),
                (_, true) => "long".into(),
                (_, false) => "unsigned long".into(),
            },
            ETy::Double => "double".into(),
            ETy::Void => "void".into(),
            ETy::Str => "&str".into(),
            ETy::Ptr(t) => format!("{} *", self.type_name(t)),
        }
    }
}

fn int_val(v: i128, t: IntTy) -> EVal {
    let bytes = v.to_le_bytes()[..usize::from(t.size.min(16))].to_vec();
    EVal {
        ty: ETy::Int(t),
        loc: Loc::Val(bytes),
    }
}

/// Truncates to the type's width and re-extends by its signedness.
fn wrap(v: i128, t: IntTy) -> i128 {
    let bytes = v.to_le_bytes();
    int_value(&bytes[..usize::from(t.size.min(16))], t.signed)
}

/// The smallest and largest value of an integer type.
fn int_range(t: IntTy) -> (i128, i128) {
    let bits = u32::from(t.size.min(16)) * 8;
    match (t.signed, bits) {
        (true, 128) => (i128::MIN, i128::MAX),
        (false, 128) => (0, i128::MAX),
        (true, b) => (-(1i128 << (b - 1)), (1i128 << (b - 1)) - 1),
        (false, b) => (0, (1i128 << b) - 1),
    }
}

fn promote(n: Num) -> Num {
    match n {
        Num::I(i, t) if t.size < 4 => Num::I(i, INT),
        other => other,
    }
}

fn as_arith(n: Num) -> Num {
    match n {
        Num::P(p) => Num::I(i128::from(p), ULONG),
        other => promote(other),
    }
}

/// C's usual arithmetic conversions on promoted operands.
fn usual(a: Num, b: Num) -> (Num, Num) {
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
fn common_int(s: IntTy, t: IntTy) -> IntTy {
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

fn to_f(n: Num) -> Num {
    match n {
        Num::I(i, _) => Num::F(i as f64),
        Num::P(p) => Num::F(p as f64),
        f => f,
    }
}

/// Whether a variable is a parameter (for the "arguments" scope).
pub(crate) fn is_parameter(v: &Variable) -> bool {
    v.kind == VariableKind::Parameter
}

/// Decodes a signed LEB128 number: the value and the bytes it took.
fn read_sleb128(bytes: &[u8]) -> Option<(i64, usize)> {
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
    use super::*;

    fn no_types(_: &str) -> bool {
        false
    }

    #[test]
    fn parses_precedence_and_casts() {
        let e = parse("a + b * 2 == 7 && !c", &no_types).unwrap();
        assert!(matches!(e, Expr::Binary(BinOp::And, _, _)));
        let e = parse("(unsigned char) x", &no_types).unwrap();
        assert!(
            matches!(e, Expr::Cast(TypeName { ref base, pointers: 0 }, _) if base == "unsigned char")
        );
        let e = parse("(struct point *) p", &no_types).unwrap();
        assert!(
            matches!(e, Expr::Cast(TypeName { ref base, pointers: 1 }, _) if base == "struct point")
        );
        let e = parse("sizeof(int)", &no_types).unwrap();
        assert!(matches!(e, Expr::SizeofType(_)));
        let e = parse("p->next->v[3].x", &no_types).unwrap();
        assert!(matches!(e, Expr::Member(_, ref m) if m == "x"));
        assert!(matches!(parse("$rax", &no_types).unwrap(), Expr::Register(ref r) if r == "rax"));
        assert!(matches!(parse("'a'", &no_types).unwrap(), Expr::Int(97, _)));
        assert!(matches!(
            parse("0x10u", &no_types).unwrap(),
            Expr::Int(
                16,
                IntTy {
                    size: 4,
                    signed: false
                }
            )
        ));
    }

    #[test]
    fn syntax_errors_say_what_is_wrong() {
        let e = parse("a +", &no_types).unwrap_err().to_string();
        assert!(e.contains("unexpected end"), "{e}");
        let e = parse("(a", &no_types).unwrap_err().to_string();
        assert!(e.contains("expected ')'"), "{e}");
        let e = parse("a # b", &no_types).unwrap_err().to_string();
        assert!(e.contains("unexpected character '#'"), "{e}");
        let deep = "(".repeat(200) + "1" + &")".repeat(200);
        assert!(parse(&deep, &no_types).is_err());
    }

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

    #[test]
    fn sleb128_decodes_frame_offsets() {
        assert_eq!(super::read_sleb128(&[0x6c]), Some((-20, 1)));
        assert_eq!(super::read_sleb128(&[0x08]), Some((8, 1)));
        assert_eq!(super::read_sleb128(&[0xe8, 0x7e]), Some((-152, 2)));
        assert_eq!(super::read_sleb128(&[0x80, 0x01]), Some((128, 2)));
        assert_eq!(super::read_sleb128(&[0x80]), None);
    }
}
