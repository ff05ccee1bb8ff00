//! tandem's ELF + DWARF layer: lines, functions, inlined calls, scopes, variables,
//! types, unwind tables and the symbol index of one binary.
//!
//! Invariants: this crate never touches a live process (memory and registers come in
//! through [`MemoryReader`] and [`RegisterReader`]); it works in [`FileAddr`]s and the
//! caller converts with a [`LoadBias`]; bad input yields [`Error`]s or degraded answers,
//! never a panic; everything beyond ELF headers and unit headers is parsed lazily and
//! cached, so a [`Binary`] can be shared across threads.

mod binary;
mod blocks;
/// The on-disk index cache.
pub mod cache;
mod callsites;
mod debugnames;
mod gdbindex;
/// Guessing where sources built elsewhere are on this machine.
pub mod guess;
mod intern;
mod oracle;
mod reader;
mod scopes;
mod sections;
mod seqs;
mod split;
mod stamps;
mod stats;
mod symtab;
mod table;
mod units;

pub use cache::IndexCache;
pub use split::MissingSplitUnit;
pub use symtab::{SymbolTable, TableSymbol};
pub use units::{CacheStats, UnreadableUnit};

/// Address and line newtypes.
pub mod addr;
/// The crate's error type.
pub mod error;
/// Location evaluation through caller-supplied memory and registers.
pub mod eval;
/// Functions by name and by address, with inlined call chains.
pub mod functions;
/// The parallel symbol index.
pub mod index;
/// Line tables: address ↔ source line.
pub mod lines;
/// Demangling and name matching.
pub mod names;
/// The loaded image (code, data, relocated pointers) for code analysis.
pub mod text;
/// The type model.
pub mod types;
/// Call frame information.
pub mod unwind;
/// Scopes and variables at a pc.
pub mod vars;

pub use self::addr::{Column, FileAddr, Line, LoadBias, RuntimeAddr};
pub use binary::{Binary, BinaryInfo, DebugFileLookup, OpenOptions, SectionStorage};
pub use callsites::{CallSite, CallTarget, TailLink, MAX_TAIL_CHAIN};
pub use error::{Error, Result};
pub use eval::{
    read_pieces, read_pieces_partial, EvalContext, LocationExpr, MemoryImage, MemoryReader, Piece,
    PieceLocation, RegisterReader, ThreadLocalStorage,
};
pub use functions::{Function, FunctionAt, InlinedCall};
pub use guess::guess_source_rules;
pub use index::{SymbolEntry, SymbolIndex, SymbolKind, TypeForm};
pub use lines::{BreakpointLocation, LineResolution, LineRow, SourceLocation, SourceMap};
pub use types::{
    ArrayBound, ArrayDim, BaseEncoding, Bitfield, CompositeKind, Language, Member, TemplateParam,
    Type, TypeKind, TypeRef, Variant, VariantPart,
};
pub use unwind::{CfaRule, RegisterRule, UnwindRow};
pub use vars::{Scope, Variable, VariableKind, VariableLocation};
