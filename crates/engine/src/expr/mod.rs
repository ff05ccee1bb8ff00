//! Expressions for conditions, watches and hovers: a C subset parsed once into an
//! [`Expr`] tree and evaluated against one frame's registers, memory and scope.
//!
//! Supported: integer, floating, character literals; identifiers (locals, arguments,
//! globals) and qualified names (`geo::counter`, `::counter`, `S::total`,
//! `Box<int>::count`, `krate::module::STATIC`, resolved as gdb resolves them:
//! `eval/names.rs`), `$reg` registers; `.` `->` `[]`; unary `* & - + ! ~`; binary
//! arithmetic, shifts, bitwise, logical and comparison operators with C's usual
//! arithmetic conversions; `c ? a : b` (as gdb: the chosen operand, unconverted); casts
//! to base, named and pointer types; `sizeof`.
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
use crate::mem::dwarf_register;
use crate::values::{int_value, le_u64, resolve};

mod ast;
mod eval;
mod lex;
mod lower;
mod parse;
mod qualified;

pub use ast::{BinOp, Expr, IntTy, TypeName, UnOp};
use ast::{INT, LONG, ULONG};
use eval::*;
pub(crate) use eval::{
    is_parameter, ETy, EVal, Enumerators, Env, GlobalFinder, Loc, ModuleGlobals,
};
pub(crate) use lower::{is_comparison, lower_condition, Checked, Node, Slot};
pub use parse::parse;

/// Deepest nesting accepted (a hostile expression must not overflow the stack).
const MAX_DEPTH: u32 = 64;
