//! Language features answered from debug information: `workspace/symbol`,
//! `textDocument/documentSymbol`, `textDocument/definition`, `textDocument/declaration` and
//! `textDocument/hover` (with declarations, or only live values in companion mode).
//!
//! Each runs on a worker over a [`Context`]: the binaries ready when the request arrived and a
//! copy of the open documents, so positions are computed against what the editor shows (files
//! that are not open are read from disk). DWARF gives lines; columns come from finding the
//! name on its declaration line.

/// `workspace/symbol` from the binaries' symbol tables.
pub mod cached_symbols;
/// What a request works on, and the pieces of answers features share.
pub mod context;
/// `textDocument/documentSymbol`.
pub mod document_symbols;
/// `textDocument/hover`.
pub mod hover;
/// What the identifier under the cursor refers to; `definition` and `declaration`.
pub mod navigation;
/// `workspace/symbol`'s ranking and results.
pub mod workspace_symbols;

pub use cached_symbols::{workspace_symbol, workspace_symbol_cached, CachedNames};
pub use context::{Context, LiveHover, Target};
pub use document_symbols::document_symbols;
pub use hover::{hover, live_hover};
pub use navigation::{declaration, definition};
pub use workspace_symbols::MAX_WORKSPACE_SYMBOLS;

// The helpers the other feature modules of the crate (tokens, lenses, live values) share.
pub(crate) use crate::dwarf::named_type;
pub use crate::sources::Sources;
pub(crate) use crate::sources::{
    decl_end, find_word, is_ident_byte, line_span, pos, same_file, word_at, Lang, SourceText,
};
pub(crate) use context::{cancelled, range_json};
pub(crate) use navigation::{global_variable, member_access, variable_at};
