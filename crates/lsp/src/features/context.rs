//! What every feature request works on ([`Context`]) and the pieces of answers they share:
//! JSON helpers, symbol kinds, locations of declarations moved with the edits.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use symbols::{
    Binary, CompositeKind, Line, Member, SymbolEntry, SymbolKind, Type, TypeForm, TypeKind,
    Variable,
};
use wire::jsonrpc::{codes, ResponseError};

use crate::sources::{decl_end, find_word, line_span, pos, SourceText, Sources};
use crate::text::{PositionEncoding, WirePosition};
use crate::uri;
use crate::workspace::Served;

// LSP `SymbolKind` values.
pub(crate) const SK_MODULE: u32 = 2;
pub(crate) const SK_METHOD: u32 = 6;
pub(crate) const SK_FIELD: u32 = 8;
pub(crate) const SK_ENUM: u32 = 10;
pub(crate) const SK_FUNCTION: u32 = 12;
pub(crate) const SK_VARIABLE: u32 = 13;
pub(crate) const SK_CLASS: u32 = 5;
pub(crate) const SK_ENUM_MEMBER: u32 = 22;
pub(crate) const SK_STRUCT: u32 = 23;
pub(crate) const SK_TYPE_PARAMETER: u32 = 26;

/// What one request works on.
pub struct Context {
    pub served: Vec<Arc<Served>>,
    pub sources: Sources,
    pub encoding: PositionEncoding,
    pub roots: Vec<PathBuf>,
    /// The debuggees of this process's debug adapter, for live values.
    pub live: Option<Arc<dyn LiveHover>>,
}

/// The live line of a hover: what a paused debuggee says of the identifier. Implemented by
/// the live side (`live::Live`), so features need not know about debuggees.
pub trait LiveHover: Send + Sync {
    /// The markdown to add to the hover of `target` at the byte `span` of `text`, if a
    /// debuggee is paused where it is the one in scope.
    fn hover_value(
        &self,
        cx: &mut Context,
        path: &Path,
        text: &SourceText,
        span: (usize, usize),
        target: &Target,
        served: &Served,
    ) -> Option<String>;
}

pub(crate) fn cancelled() -> ResponseError {
    ResponseError::new(codes::REQUEST_CANCELLED, "request cancelled")
}

/// A JSON object of `fields`, moved in. (`json!` would serialize each `Value` field anew:
/// a deep copy per level, which answers of hundreds of symbols notice.)
pub(crate) fn object<const N: usize>(fields: [(&str, Value); N]) -> Value {
    // Inserted one by one: collecting would sort the fields first, slower for a few.
    let mut map = serde_json::Map::new();
    for (k, v) in fields {
        map.insert(k.to_owned(), v);
    }
    Value::Object(map)
}

pub(crate) fn pos_json(p: WirePosition) -> Value {
    object([("line", p.line.into()), ("character", p.column.into())])
}

pub(crate) fn range_json(start: WirePosition, end: WirePosition) -> Value {
    object([("start", pos_json(start)), ("end", pos_json(end))])
}

/// Where `name` is on the 0-based line `line0` of `text`: its byte range, and its range
/// on the wire (the start of the line when it is not found there, or the text is unknown).
pub(crate) fn selection_range(
    text: Option<&SourceText>,
    line0: u32,
    name: &str,
    enc: PositionEncoding,
) -> (Option<(usize, usize)>, Value) {
    let at_line = WirePosition {
        line: line0,
        column: 0,
    };
    let found = text.and_then(|text| Some((text, find_word(text, line0, name)?)));
    match found {
        Some((text, (s, e))) => (
            Some((s, e)),
            range_json(pos(text, s, enc), pos(text, e, enc)),
        ),
        None => (None, range_json(at_line, at_line)),
    }
}

/// Where a declaration of `name` on 1-based line `line` of `file` is: (range, selection range).
pub(crate) fn decl_ranges(
    cx: &mut Context,
    file: &Path,
    line: Line,
    name: &str,
    whole: bool,
) -> (Value, Value) {
    let line0 = line.zero_based();
    let enc = cx.encoding;
    let text = cx.sources.text(file);
    let (sel, selection) = selection_range(text.as_deref(), line0, name, enc);
    let Some(text) = text else {
        return (selection.clone(), selection);
    };
    if !whole {
        return (selection.clone(), selection);
    }
    let Some((ls, le)) = line_span(&text, line0) else {
        return (selection.clone(), selection);
    };
    let first = text[ls..le]
        .find(|c: char| !c.is_whitespace())
        .map_or(ls, |i| ls + i)
        .min(sel.map_or(usize::MAX, |s| s.0));
    let end = decl_end(&text, line0)
        .unwrap_or(le)
        .max(sel.map_or(0, |s| s.1));
    let range = range_json(pos(&text, first, enc), pos(&text, end, enc));
    (range, selection)
}

/// The location of `name` declared on DWARF line `line` of `file`, moved with the edits made
/// since the build.
pub(crate) fn location(cx: &mut Context, file: &Path, line: Line, name: &str) -> Value {
    let line = Line::from_zero_based(cx.sources.to_current(file, line.zero_based()));
    location_current(cx, file, line, name)
}

/// The location of `name` on line `line` of the current text of `file`.
pub(crate) fn location_current(cx: &mut Context, file: &Path, line: Line, name: &str) -> Value {
    let (_, selection) = decl_ranges(cx, file, line, name, false);
    object([("uri", uri::from_path(file).into()), ("range", selection)])
}

/// The LSP symbol kind of a named type, from its DWARF description.
pub(crate) fn type_symbol_kind(binary: &Binary, name: &str) -> u32 {
    let ty = binary
        .types_by_name(name)
        .into_iter()
        .find_map(|t| binary.type_info(t).ok());
    match ty.map(|t| t.kind) {
        Some(TypeKind::Composite {
            kind: CompositeKind::Class,
            ..
        }) => SK_CLASS,
        Some(TypeKind::Enum { .. }) => SK_ENUM,
        Some(TypeKind::Typedef(_)) => SK_TYPE_PARAMETER,
        _ => SK_STRUCT,
    }
}

/// The LSP symbol kind of a type declared as `form` (a struct for what is none of the
/// others).
pub(crate) fn type_form_kind(form: TypeForm) -> u32 {
    match form {
        TypeForm::Class => SK_CLASS,
        TypeForm::Enum => SK_ENUM,
        TypeForm::Typedef => SK_TYPE_PARAMETER,
        _ => SK_STRUCT,
    }
}

/// The LSP symbol kind of an index entry. A type's is that of its own declaration (its
/// DIE's tag), which the index cache records too (`workspace/symbol` answers from either
/// alike); by name only when the entry has no readable DIE.
pub(crate) fn entry_kind(served: &Served, e: &SymbolEntry) -> u32 {
    match e.kind {
        SymbolKind::Function => SK_FUNCTION,
        SymbolKind::Variable => SK_VARIABLE,
        SymbolKind::Type => match served.binary.type_form(e) {
            Some(form) => type_form_kind(form),
            None => served
                .facts
                .type_kind(&e.name, || type_symbol_kind(&served.binary, &e.name)),
        },
        _ => SK_VARIABLE,
    }
}

/// What an identifier refers to.
pub enum Target {
    /// A parameter, local or global with its DWARF description.
    Variable(Variable),
    /// A function, global or type from the symbol index.
    Symbol(SymbolEntry),
    /// A member reached through `a.b` or `p->b`, with the struct or union holding it.
    Member { owner: Type, member: Member },
    /// An enumerator, with the enum's index entry.
    Enumerator { owner: SymbolEntry, value: i128 },
}
