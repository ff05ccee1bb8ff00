//! Language features answered from debug information: `workspace/symbol`,
//! `textDocument/documentSymbol`, `textDocument/definition` and `textDocument/hover`.
//!
//! Each runs on a worker over a [`Context`]: the binaries ready when the request arrived and a
//! copy of the open documents, so positions are computed against what the editor shows (files
//! that are not open are read from disk). DWARF gives lines; columns come from finding the
//! name on its declaration line.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};
use symbols::lines::normalize_path;
use symbols::{
    Binary, CompositeKind, Line, Member, SourceMap, SymbolEntry, SymbolKind, Type, TypeKind,
    TypeRef, Variable, VariableKind,
};
use wire::jsonrpc::{codes, ResponseError};

use crate::server::CancelToken;
use crate::text::{line_bounds, position_in, LineMap, PositionEncoding, WirePosition};
use crate::uri;
use crate::workspace::Served;

/// At most this many `workspace/symbol` results.
pub const MAX_WORKSPACE_SYMBOLS: usize = 256;

// LSP `SymbolKind` values.
const SK_MODULE: u32 = 2;
const SK_METHOD: u32 = 6;
const SK_FIELD: u32 = 8;
const SK_ENUM: u32 = 10;
const SK_FUNCTION: u32 = 12;
const SK_VARIABLE: u32 = 13;
const SK_CLASS: u32 = 5;
const SK_ENUM_MEMBER: u32 = 22;
const SK_STRUCT: u32 = 23;
const SK_TYPE_PARAMETER: u32 = 26;

/// A source text with its line bounds, computed once per request and file.
pub struct SourceText {
    text: Arc<str>,
    bounds: Vec<(usize, usize)>,
}

impl SourceText {
    pub fn new(text: Arc<str>) -> SourceText {
        let bounds = line_bounds(&text);
        SourceText { text, bounds }
    }
}

impl std::ops::Deref for SourceText {
    type Target = str;

    fn deref(&self) -> &str {
        &self.text
    }
}

/// Source texts: open documents first, then files on disk (read once per request).
pub struct Sources {
    open: HashMap<PathBuf, Arc<str>>,
    loaded: HashMap<PathBuf, Option<Arc<SourceText>>>,
    /// Line maps between the file on disk and the open document; `None`: the same lines.
    maps: RefCell<HashMap<PathBuf, Option<Arc<LineMap>>>>,
}

impl Sources {
    pub fn new(open: HashMap<PathBuf, Arc<str>>) -> Sources {
        Sources {
            open,
            loaded: HashMap::new(),
            maps: RefCell::new(HashMap::new()),
        }
    }

    /// How the lines of the file on disk (what the binary was built from, when it is not
    /// newer than the binary) moved in the open document.
    fn line_map(&self, path: &Path) -> Option<Arc<LineMap>> {
        let current = self.open.get(path)?;
        self.maps
            .borrow_mut()
            .entry(path.to_path_buf())
            .or_insert_with(|| {
                let disk = std::fs::read_to_string(path).ok()?;
                (disk.as_str() != &**current).then(|| Arc::new(LineMap::new(&disk, current)))
            })
            .clone()
    }

    /// The 0-based line of the current text that was line `line0` when the binary serving
    /// `path` was built.
    pub fn to_current(&self, path: &Path, line0: u32) -> u32 {
        self.line_map(path).map_or(line0, |m| m.to_current(line0))
    }

    /// The 0-based line, in the binary's numbering, of line `line0` of the current text.
    pub fn to_built(&self, path: &Path, line0: u32) -> u32 {
        self.line_map(path).map_or(line0, |m| m.to_built(line0))
    }

    pub fn text(&mut self, path: &Path) -> Option<Arc<SourceText>> {
        let open = &self.open;
        self.loaded
            .entry(path.to_path_buf())
            .or_insert_with(|| {
                let text = match open.get(path) {
                    Some(t) => t.clone(),
                    None => Arc::from(std::fs::read_to_string(path).ok()?),
                };
                Some(Arc::new(SourceText::new(text)))
            })
            .clone()
    }
}

/// The wire position of byte `offset` of `text`.
pub(crate) fn pos(text: &SourceText, offset: usize, encoding: PositionEncoding) -> WirePosition {
    position_in(text, &text.bounds, offset, encoding)
}

/// What one request works on.
pub struct Context {
    pub served: Vec<Arc<Served>>,
    pub sources: Sources,
    pub encoding: PositionEncoding,
    pub roots: Vec<PathBuf>,
    /// The debuggees of this process's debug adapter, for live values.
    pub live: Option<crate::live::Live>,
}

pub(crate) fn cancelled() -> ResponseError {
    ResponseError::new(codes::REQUEST_CANCELLED, "request cancelled")
}

pub(crate) fn pos_json(p: WirePosition) -> Value {
    json!({ "line": p.line, "character": p.column })
}

pub(crate) fn range_json(start: WirePosition, end: WirePosition) -> Value {
    json!({ "start": pos_json(start), "end": pos_json(end) })
}

pub(crate) fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Byte range of the 0-based line `line` (without its end of line).
pub(crate) fn line_span(text: &SourceText, line: u32) -> Option<(usize, usize)> {
    text.bounds.get(line as usize).copied()
}

/// Byte range of `name` as a whole word on line `line`.
pub(crate) fn find_word(text: &SourceText, line: u32, name: &str) -> Option<(usize, usize)> {
    let (start, end) = line_span(text, line)?;
    let hay = &text[start..end];
    let bytes = hay.as_bytes();
    let mut from = 0;
    while let Some(i) = hay.get(from..)?.find(name) {
        let at = from + i;
        let after = at + name.len();
        let left_ok = at == 0 || !is_ident_byte(bytes[at - 1]);
        let right_ok = after >= bytes.len() || !is_ident_byte(bytes[after]);
        if left_ok && right_ok && !name.is_empty() {
            return Some((start + at, start + after));
        }
        from = at + name.len().max(1);
    }
    None
}

/// The identifier at or just before byte `offset`.
pub(crate) fn word_at(text: &str, offset: usize) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut start = offset.min(bytes.len());
    let mut end = start;
    while start > 0 && is_ident_byte(bytes[start - 1]) {
        start -= 1;
    }
    while end < bytes.len() && is_ident_byte(bytes[end]) {
        end += 1;
    }
    (start < end && !bytes[start].is_ascii_digit()).then_some((start, end))
}

/// The end of the declaration starting on line `line`: after the brace closing its first
/// `{`, or after its first `;` when that comes before any brace. Comments and literals are
/// skipped roughly (a light scan, not a parser).
pub(crate) fn decl_end(text: &SourceText, line: u32) -> Option<usize> {
    let (start, _) = line_span(text, line)?;
    let bytes = text.as_bytes();
    let mut depth = 0u32;
    let mut i = start;
    while i < bytes.len() {
        match bytes[i] {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i = text[i + 2..]
                    .find("*/")
                    .map_or(bytes.len(), |e| i + 2 + e + 2);
                continue;
            }
            q @ (b'"' | b'\'') => {
                i += 1;
                while i < bytes.len() && bytes[i] != q && bytes[i] != b'\n' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            b';' if depth == 0 => return Some(i + 1),
            _ => {}
        }
        i += 1;
    }
    None
}

/// Where a declaration of `name` on 1-based line `line` of `file` is: (range, selection range).
fn decl_ranges(
    cx: &mut Context,
    file: &Path,
    line: Line,
    name: &str,
    whole: bool,
) -> (Value, Value) {
    let line0 = line.zero_based();
    let enc = cx.encoding;
    let at_line = WirePosition {
        line: line0,
        column: 0,
    };
    let Some(text) = cx.sources.text(file) else {
        let r = range_json(at_line, at_line);
        return (r.clone(), r);
    };
    let sel = find_word(&text, line0, name);
    let selection = match sel {
        Some((s, e)) => range_json(pos(&text, s, enc), pos(&text, e, enc)),
        None => range_json(at_line, at_line),
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
fn location(cx: &mut Context, file: &Path, line: Line, name: &str) -> Value {
    let line = Line::from_zero_based(cx.sources.to_current(file, line.zero_based()));
    location_current(cx, file, line, name)
}

/// The location of `name` on line `line` of the current text of `file`.
fn location_current(cx: &mut Context, file: &Path, line: Line, name: &str) -> Value {
    let (_, selection) = decl_ranges(cx, file, line, name, false);
    json!({ "uri": uri::from_path(file), "range": selection })
}

pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    normalize_path(a) == normalize_path(b)
}

/// The LSP symbol kind of a named type, from its DWARF description.
fn type_symbol_kind(binary: &Binary, name: &str) -> u32 {
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

fn entry_kind(served: &Served, e: &SymbolEntry) -> u32 {
    match e.kind {
        SymbolKind::Function => SK_FUNCTION,
        SymbolKind::Variable => SK_VARIABLE,
        SymbolKind::Type => {
            let mut cache = served.type_kinds.lock().unwrap_or_else(|p| p.into_inner());
            *cache
                .entry(e.name.clone())
                .or_insert_with(|| type_symbol_kind(&served.binary, &e.name))
        }
        _ => SK_VARIABLE,
    }
}

/// How well `entry` matches a lowercase query: 0 exact, 1 prefix, 2 substring, 3 fuzzy.
/// `name` is the lowercased qualified name (precomputed per binary: this runs per entry).
fn rank(query: &str, name: &str) -> Option<u8> {
    if query.is_empty() {
        return Some(0);
    }
    let short = name.rsplit("::").next().unwrap_or(name);
    if short == query || name == query {
        Some(0)
    } else if short.starts_with(query) || name.starts_with(query) {
        Some(1)
    } else if name.contains(query) {
        Some(2)
    } else {
        let mut chars = name.chars();
        query.chars().all(|q| chars.any(|c| c == q)).then_some(3)
    }
}

/// `workspace/symbol`: ranked exact > prefix > substring > fuzzy, then symbols declared under
/// a workspace root, then shorter names; capped at [`MAX_WORKSPACE_SYMBOLS`].
pub fn workspace_symbol(
    cx: &mut Context,
    query: &str,
    cancel: &CancelToken,
) -> Result<Value, ResponseError> {
    let q = query.trim().to_lowercase();
    let mut hits: Vec<(u8, bool, SymbolEntry, usize)> = Vec::new();
    let mut seen = HashSet::new();
    let push = |tier: u8, e: &SymbolEntry, si: usize, hits: &mut Vec<_>| {
        let Some(file) = &e.decl_file else {
            return;
        };
        if e.decl_line.is_none() {
            return;
        }
        let outside = !cx.roots.iter().any(|r| file.starts_with(r));
        hits.push((tier, outside, e.clone(), si));
    };
    // Exact, prefix and substring matches all contain the query: find its occurrences in
    // the haystack of every name at memory speed, and rank only those entries.
    let mut substring_hits = 0usize;
    if !q.is_empty() && !q.contains('\n') {
        let finder = memchr::memmem::Finder::new(q.as_bytes());
        for (si, served) in cx.served.iter().enumerate() {
            let mut last = usize::MAX;
            for pos in finder.find_iter(served.haystack.as_bytes()) {
                let n = served.starts.partition_point(|&s| s <= pos) - 1;
                if n == last {
                    continue;
                }
                last = n;
                if substring_hits.is_multiple_of(4096) && cancel.is_cancelled() {
                    return Err(cancelled());
                }
                let Some(tier) = rank(&q, &served.lowercase_names[n]) else {
                    continue;
                };
                substring_hits += 1;
                push(tier, &served.entries[n], si, &mut hits);
            }
        }
    }
    // Fuzzy matches (the query's characters in order) only when the others are too few to
    // fill the answer: that needs a look at every name.
    if q.is_empty() || hits.len() < MAX_WORKSPACE_SYMBOLS {
        for (si, served) in cx.served.iter().enumerate() {
            for (n, lower) in served.lowercase_names.iter().enumerate() {
                if n % 4096 == 0 && cancel.is_cancelled() {
                    return Err(cancelled());
                }
                let Some(tier) = rank(&q, lower) else {
                    continue;
                };
                if tier < 3 && !q.is_empty() {
                    continue; // Found above.
                }
                push(tier, &served.entries[n], si, &mut hits);
            }
        }
    }
    // Duplicates (one entry per unit that declares it) are dropped after sorting, among the
    // few results kept, not among every match.
    hits.sort_unstable_by(|a, b| {
        (a.0, a.1, a.2.name.len(), &a.2.name).cmp(&(b.0, b.1, b.2.name.len(), &b.2.name))
    });
    let mut out = Vec::new();
    for (_, _, e, si) in hits {
        if out.len() >= MAX_WORKSPACE_SYMBOLS {
            break;
        }
        if cancel.is_cancelled() {
            return Err(cancelled());
        }
        let (Some(file), Some(line)) = (e.decl_file.clone(), e.decl_line) else {
            continue;
        };
        if !seen.insert((e.name.clone(), file.clone(), line, e.kind)) {
            continue;
        }
        if cx.sources.text(&file).is_none() {
            continue; // A location the editor cannot open is no use.
        }
        let served = cx.served[si].clone();
        let short = e.short_name().to_owned();
        let mut item = json!({
            "name": short,
            "kind": entry_kind(&served, &e),
            "location": location(cx, &file, line, &short),
        });
        if let Some(container) = e
            .name
            .strip_suffix(&short)
            .and_then(|p| p.strip_suffix("::"))
        {
            item["containerName"] = json!(container);
        }
        out.push(item);
    }
    Ok(Value::Array(out))
}

/// Peels typedefs and qualifiers to the type that has the layout.
pub(crate) fn strip(binary: &Binary, mut t: TypeRef) -> Option<Type> {
    for _ in 0..16 {
        let ty = binary.type_info(t).ok()?;
        match ty.kind {
            TypeKind::Typedef(Some(x))
            | TypeKind::Const(Some(x))
            | TypeKind::Volatile(Some(x))
            | TypeKind::Atomic(Some(x)) => t = x,
            _ => return Some(ty),
        }
    }
    None
}

pub(crate) fn named_type(binary: &Binary, name: &str) -> Option<Type> {
    binary
        .types_by_name(name)
        .into_iter()
        .find_map(|t| binary.type_info(t).ok())
}

/// A symbol declared in the document: (line, name, LSP kind, its type for types, index of
/// the binary, Rust path of its container).
type Found = (Line, String, u32, Option<Type>, usize, Vec<String>);

/// Document symbols with the path of their container (empty at top level).
type Nested = Vec<(Vec<String>, Value)>;

/// `textDocument/documentSymbol`: functions, globals and types declared in `path`, with
/// struct members and enumerators as children, in source order.
pub fn document_symbols(
    cx: &mut Context,
    path: &Path,
    cancel: &CancelToken,
) -> Result<Value, ResponseError> {
    let lang = Lang::of(path);
    let mut found: Vec<Found> = Vec::new();
    let mut seen = HashSet::new();
    let mut same: HashMap<usize, bool> = HashMap::new();
    for (si, served) in cx.served.iter().enumerate() {
        for (n, e) in served.index.entries().enumerate() {
            if n % 4096 == 0 && cancel.is_cancelled() {
                return Err(cancelled());
            }
            let (Some(file), Some(line)) = (&e.decl_file, e.decl_line) else {
                continue;
            };
            // Entries share their file's `Arc`: compare each distinct file once.
            let in_doc = *same
                .entry(Arc::as_ptr(file) as *const u8 as usize)
                .or_insert_with(|| same_file(file, path));
            if !in_doc || !seen.insert((e.name.clone(), line)) {
                continue;
            }
            let ty = (e.kind == SymbolKind::Type)
                .then(|| named_type(&served.binary, &e.name))
                .flatten();
            // Rust paths nest items in modules and impls: `krate::module::Type::method`.
            let container: Vec<String> = if lang == Lang::Rust {
                let parts: Vec<&str> = e.name.split("::").collect();
                parts
                    .get(1..parts.len().saturating_sub(1))
                    .unwrap_or_default()
                    .iter()
                    .map(|p| (*p).to_owned())
                    .collect()
            } else {
                Vec::new()
            };
            let mut kind = entry_kind(served, &e);
            if kind == SK_FUNCTION && container.last().is_some_and(|c| is_type_name(c)) {
                kind = SK_METHOD;
            }
            found.push((line, e.short_name().to_owned(), kind, ty, si, container));
        }
    }
    found.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    let mut out = Vec::new();
    for (line, name, kind, ty, si, container) in found {
        let line = Line::from_zero_based(cx.sources.to_current(path, line.zero_based()));
        let (range, selection) = decl_ranges(cx, path, line, &name, true);
        let mut item =
            json!({ "name": name, "kind": kind, "range": range, "selectionRange": selection });
        let served = cx.served[si].clone();
        let binary = &served.binary;
        if let Some(ty) = &ty {
            let children = type_children(cx, binary, path, line, ty);
            if !children.is_empty() {
                item["children"] = Value::Array(children);
            }
            if let Ok(name) = binary.type_name(ty.id) {
                item["detail"] = json!(name);
            }
        }
        out.push((container, item));
    }
    Ok(Value::Array(nest(cx, path, out)))
}

/// Whether a path component names a type (Rust's convention: `Point`, `Vec<T>`), not a module.
fn is_type_name(component: &str) -> bool {
    component.starts_with(|c: char| c.is_ascii_uppercase() || c == '<')
}

/// A document position as an ordered key.
fn pos_key(p: &Value) -> (u64, u64) {
    (
        p["line"].as_u64().unwrap_or(0),
        p["character"].as_u64().unwrap_or(0),
    )
}

/// Puts symbols under containers named by their paths (modules, types of `impl` blocks),
/// each container found in the text (`mod m`, `impl … T`) and spanning its children.
fn nest(cx: &mut Context, path: &Path, items: Nested) -> Vec<Value> {
    let mut out = Vec::new();
    let mut groups: Vec<(String, Nested)> = Vec::new();
    for (mut container, item) in items {
        if container.is_empty() {
            out.push(item);
            continue;
        }
        let head = container.remove(0);
        match groups.iter_mut().find(|g| g.0 == head) {
            Some(g) => g.1.push((container, item)),
            None => groups.push((head, vec![(container, item)])),
        }
    }
    for (name, members) in groups {
        let children = nest(cx, path, members);
        out.push(container_symbol(cx, path, &name, children));
    }
    out.sort_by_key(|v| pos_key(&v["range"]["start"]));
    out
}

fn container_symbol(cx: &mut Context, path: &Path, name: &str, children: Vec<Value>) -> Value {
    let is_type = is_type_name(name);
    let first_line = children
        .iter()
        .map(|c| pos_key(&c["range"]["start"]).0)
        .min()
        .unwrap_or(0);
    // The nearest `mod name` (or `impl … name`) at or above the first child.
    let declared = cx.sources.text(path).and_then(|text| {
        (0..=u32::try_from(first_line).unwrap_or(0))
            .rev()
            .find(|&l| {
                let Some((s, e)) = line_span(&text, l) else {
                    return false;
                };
                let line = text[s..e].trim_start();
                let line = line.strip_prefix("pub ").unwrap_or(line);
                let opens = if is_type {
                    line.starts_with("impl")
                } else {
                    line.starts_with("mod ")
                };
                opens && find_word(&text, l, name).is_some()
            })
    });
    let (mut range, selection) = match declared {
        Some(l) => decl_ranges(cx, path, Line::from_zero_based(l), name, true),
        None => children.first().map_or((Value::Null, Value::Null), |c| {
            (c["range"].clone(), c["selectionRange"].clone())
        }),
    };
    for c in &children {
        if pos_key(&c["range"]["start"]) < pos_key(&range["start"]) {
            range["start"] = c["range"]["start"].clone();
        }
        if pos_key(&c["range"]["end"]) > pos_key(&range["end"]) {
            range["end"] = c["range"]["end"].clone();
        }
    }
    json!({
        "name": name,
        "kind": if is_type { SK_STRUCT } else { SK_MODULE },
        "range": range,
        "selectionRange": selection,
        "children": children,
    })
}

/// Members of a struct (or enumerators of an enum) found on the lines of its declaration.
fn type_children(
    cx: &mut Context,
    binary: &Binary,
    path: &Path,
    line: Line,
    ty: &Type,
) -> Vec<Value> {
    let names: Vec<(String, u32, Option<String>)> = match &ty.kind {
        TypeKind::Composite { members, .. } => members
            .iter()
            .filter_map(|m| {
                let detail = m.ty.and_then(|t| binary.type_name(t).ok());
                Some((m.name.clone()?, SK_FIELD, detail))
            })
            .collect(),
        TypeKind::Enum { enumerators, .. } => enumerators
            .iter()
            .map(|(n, v)| (n.clone(), SK_ENUM_MEMBER, Some(v.to_string())))
            .collect(),
        _ => return Vec::new(),
    };
    let Some(text) = cx.sources.text(path) else {
        return Vec::new();
    };
    let line0 = line.zero_based();
    let last = decl_end(&text, line0).map_or(line0, |end| pos(&text, end, cx.encoding).line);
    let mut from = line0;
    let mut out = Vec::new();
    for (name, kind, detail) in names {
        let Some(at) = (from..=last).find(|&l| find_word(&text, l, &name).is_some()) else {
            continue;
        };
        from = at;
        let Some(l) = Line::new(at + 1) else { continue };
        let (range, selection) = decl_ranges(cx, path, l, &name, false);
        let mut item =
            json!({ "name": name, "kind": kind, "range": range, "selectionRange": selection });
        if let Some(d) = detail {
            item["detail"] = json!(d);
        }
        out.push(item);
    }
    out
}

/// The identifier under the cursor and what it refers to.
struct Resolved {
    ident: String,
    /// Byte range of the identifier in the document.
    span: (usize, usize),
    target: Target,
    served: Arc<Served>,
}

/// What an identifier refers to.
pub(crate) enum Target {
    /// A parameter, local or global with its DWARF description.
    Variable(Variable),
    /// A function, global or type from the symbol index.
    Symbol(SymbolEntry),
    /// A member reached through `a.b` or `p->b`, with the struct or union holding it.
    Member { owner: Type, member: Member },
    /// An enumerator, with the enum's index entry.
    Enumerator { owner: SymbolEntry, value: i128 },
}

/// If the identifier starting at `start` follows `.` or `->`, where the base expression's
/// last identifier ends.
pub(crate) fn member_access(text: &str, start: usize) -> Option<usize> {
    let before = text[..start].trim_end();
    let base = before
        .strip_suffix("->")
        .or_else(|| before.strip_suffix('.'))?
        .trim_end();
    let end = base.len();
    (end > 0 && is_ident_byte(base.as_bytes()[end - 1])).then_some(end)
}

/// The member `name` of the struct or union `t` points to or is (through typedefs).
fn member_of(binary: &Binary, t: TypeRef, name: &str) -> Option<(Type, Member)> {
    let mut ty = strip(binary, t)?;
    if let TypeKind::Pointer(Some(x))
    | TypeKind::Reference {
        target: Some(x), ..
    } = ty.kind
    {
        ty = strip(binary, x)?;
    }
    let TypeKind::Composite { members, .. } = &ty.kind else {
        return None;
    };
    let member = members
        .iter()
        .find(|m| m.name.as_deref() == Some(name))?
        .clone();
    Some((ty, member))
}

/// The type of the simple expression (`a`, `a.b`, `p->b->c`) whose last identifier ends at
/// byte `end`.
fn expr_type(
    cx: &Context,
    path: &Path,
    text: &SourceText,
    end: usize,
    depth: u32,
) -> Option<(TypeRef, Arc<Served>)> {
    let (start, end) = word_at(text, end)?;
    let name = &text[start..end];
    if let Some(base_end) = member_access(text, start).filter(|_| depth < 8) {
        let (t, served) = expr_type(cx, path, text, base_end, depth + 1)?;
        let (_, m) = member_of(&served.binary, t, name)?;
        return Some((m.ty?, served));
    }
    let line1 = cx
        .sources
        .to_built(path, pos(text, start, PositionEncoding::Utf8).line)
        + 1;
    for served in &cx.served {
        if let Some(v) = variable_at(&served.binary, path, line1, name) {
            return Some((v.ty?, served.clone()));
        }
    }
    for served in &cx.served {
        for e in served.index.lookup(name) {
            if e.kind == SymbolKind::Variable {
                if let Some(t) = global_variable(served, &e).and_then(|v| v.ty) {
                    return Some((t, served.clone()));
                }
            }
        }
    }
    None
}

/// The enum declaring the enumerator `ident`, preferring enums declared in `path`.
fn find_enumerator(
    cx: &Context,
    path: &Path,
    ident: &str,
) -> Option<(SymbolEntry, i128, Arc<Served>)> {
    for same in [true, false] {
        for served in &cx.served {
            let enums = served.index.entries().filter(|e| {
                e.kind == SymbolKind::Type
                    && e.decl_file
                        .as_deref()
                        .is_some_and(|f| same_file(f, path) == same)
            });
            // Each check reads a type; bound the work for binaries with many types.
            for e in enums.take(if same { 4096 } else { 256 }) {
                let Some(ty) = named_type(&served.binary, &e.name) else {
                    continue;
                };
                if let TypeKind::Enum { enumerators, .. } = &ty.kind {
                    if let Some((_, v)) = enumerators.iter().find(|(n, _)| n == ident) {
                        return Some((e, *v, served.clone()));
                    }
                }
            }
        }
    }
    None
}

/// Where `name` is written within the declaration of the type `owner` (a member or an
/// enumerator): a light scan of the lines of that declaration.
fn inner_decl(cx: &mut Context, owner: &SymbolEntry, name: &str) -> Option<(PathBuf, Line)> {
    let file = owner.decl_file.as_deref()?.to_path_buf();
    let line0 = cx.sources.to_current(&file, owner.decl_line?.zero_based());
    let text = cx.sources.text(&file)?;
    let last = decl_end(&text, line0).map_or(line0, |e| pos(&text, e, PositionEncoding::Utf8).line);
    let found = (line0..=last).find(|&l| find_word(&text, l, name).is_some())?;
    Some((file, Line::from_zero_based(found)))
}

/// The index entry declaring the named struct, union or enum `ty`.
fn type_entry(served: &Served, ty: &Type) -> Option<SymbolEntry> {
    let name = ty.name.as_deref()?;
    served
        .index
        .lookup(name)
        .find(|e| e.kind == SymbolKind::Type && e.decl_line.is_some() && e.short_name() == name)
}

/// Resolves the identifier at `offset` of `path`: locals and parameters visible at that line
/// first (unless a `struct`/`union`/`enum` keyword says it is a tag), then statics of the
/// unit, then the symbol index (declarations in the same file first).
fn resolve(cx: &mut Context, path: &Path, offset: usize) -> Option<Resolved> {
    let text = cx.sources.text(path)?;
    let (start, end) = word_at(&text, offset)?;
    let ident = text[start..end].to_owned();
    if let Some(base_end) = member_access(&text, start) {
        let (t, served) = expr_type(cx, path, &text, base_end, 0)?;
        let (owner, member) = member_of(&served.binary, t, &ident)?;
        return Some(Resolved {
            ident,
            span: (start, end),
            target: Target::Member { owner, member },
            served,
        });
    }
    let line1 = cx
        .sources
        .to_built(path, pos(&text, start, PositionEncoding::Utf8).line)
        + 1;
    let before = text[..start].trim_end();
    let tag = ["struct", "union", "enum"].iter().any(|k| {
        before.ends_with(k)
            && word_at(before, before.len()) == Some((before.len() - k.len(), before.len()))
    });
    if !tag {
        for served in &cx.served {
            if let Some(v) = variable_at(&served.binary, path, line1, &ident) {
                return Some(Resolved {
                    ident,
                    span: (start, end),
                    target: Target::Variable(v),
                    served: served.clone(),
                });
            }
        }
    }
    let mut best: Option<((bool, u8), SymbolEntry, Arc<Served>)> = None;
    for served in &cx.served {
        for e in served.index.lookup(&ident) {
            let Some(file) = &e.decl_file else { continue };
            if e.decl_line.is_none() {
                continue;
            }
            let kind_rank = match (e.kind, tag) {
                (SymbolKind::Type, true) => 0,
                (SymbolKind::Type, false) => 1,
                (_, true) => 1,
                _ => 0,
            };
            let key = (!same_file(file, path), kind_rank);
            if best.as_ref().is_none_or(|b| key < b.0) {
                best = Some((key, e, served.clone()));
            }
        }
    }
    if let Some((_, e, served)) = best {
        return Some(Resolved {
            ident,
            span: (start, end),
            target: Target::Symbol(e),
            served,
        });
    }
    let (owner, value, served) = find_enumerator(cx, path, &ident)?;
    Some(Resolved {
        ident,
        span: (start, end),
        target: Target::Enumerator { owner, value },
        served,
    })
}

/// The parameter, local or unit static named `ident` visible on 1-based `line` of `path`.
pub(crate) fn variable_at(
    binary: &Binary,
    path: &Path,
    line: u32,
    ident: &str,
) -> Option<Variable> {
    // The scope at the first code of `at` or after, if that code is in a function that
    // starts at or before `line` (the next line with code may be in a later function).
    let scope_from = |at: u32| -> Option<symbols::Scope> {
        let res = binary
            .resolve_line(path, Line::new(at)?, &SourceMap::new())
            .ok()??;
        let loc = res.locations.first()?;
        let func = binary.function_at(loc.addr).ok()??;
        if func.function.decl_line?.get() > line {
            return None;
        }
        binary.scope_at(loc.addr).ok()
    };
    let named = |v: &Variable| v.name.as_deref() == Some(ident) && v.frame == 0;
    let scope = scope_from(line)?;
    let local = scope
        .locals
        .iter()
        .filter(|v| named(v))
        .filter(|v| {
            v.kind == VariableKind::Parameter || v.decl_line.is_none_or(|d| d.get() <= line)
        })
        .max_by_key(|v| v.depth)
        .cloned();
    if local.is_some() {
        return local;
    }
    // A binding's scope may begin after its own statement (Rust `let`): on the line that
    // declares it, look at the scope of the next line.
    let declared_here = scope_from(line + 1).and_then(|next| {
        next.locals
            .into_iter()
            .find(|v| named(v) && v.decl_line.map(Line::get) == Some(line))
    });
    declared_here.or_else(|| {
        scope
            .globals
            .into_iter()
            .find(|v| v.name.as_deref() == Some(ident))
    })
}

/// `textDocument/definition`.
pub fn definition(cx: &mut Context, path: &Path, offset: usize) -> Value {
    match resolve(cx, path, offset) {
        Some(resolved) => definition_of(cx, resolved),
        None => Value::Null,
    }
}

fn definition_of(cx: &mut Context, resolved: Resolved) -> Value {
    let Resolved {
        ident,
        target,
        served,
        ..
    } = resolved;
    let (file, line, name) = match target {
        Target::Variable(v) => match (v.decl_file, v.decl_line) {
            (Some(f), Some(l)) => return location(cx, &f, l, &ident),
            _ => return Value::Null,
        },
        Target::Symbol(e) => match (&e.decl_file, e.decl_line) {
            (Some(f), Some(l)) => return location(cx, f, l, e.short_name()),
            _ => return Value::Null,
        },
        Target::Member { owner, .. } => {
            let Some(found) = type_entry(&served, &owner).and_then(|e| inner_decl(cx, &e, &ident))
            else {
                return Value::Null;
            };
            (found.0, found.1, ident)
        }
        Target::Enumerator { owner, .. } => {
            let Some(found) = inner_decl(cx, &owner, &ident) else {
                return Value::Null;
            };
            (found.0, found.1, ident)
        }
    };
    // Members and enumerators were found in the current text.
    location_current(cx, &file, line, &name)
}

/// `textDocument/declaration`: for functions and globals, the prototype or `extern`
/// declaration in a header the binary was built with (or earlier in the same file);
/// otherwise the same answer as `definition`.
pub fn declaration(cx: &mut Context, path: &Path, offset: usize) -> Value {
    let Some(resolved) = resolve(cx, path, offset) else {
        return Value::Null;
    };
    let global = match &resolved.target {
        Target::Symbol(e) if matches!(e.kind, SymbolKind::Function | SymbolKind::Variable) => {
            Some((
                e.kind,
                e.short_name().to_owned(),
                e.decl_file.as_deref().map(Path::to_path_buf),
                e.decl_line,
            ))
        }
        Target::Variable(v) if v.kind == VariableKind::Global => Some((
            SymbolKind::Variable,
            resolved.ident.clone(),
            v.decl_file.clone(),
            v.decl_line,
        )),
        _ => None,
    };
    if let Some((kind, name, decl_file, decl_line)) = global {
        {
            let mut candidates: Vec<PathBuf> = resolved
                .served
                .sources()
                .filter(|f| {
                    f.extension()
                        .and_then(|x| x.to_str())
                        .is_some_and(|x| matches!(x, "h" | "hh" | "hpp" | "hxx" | "H"))
                })
                .map(Path::to_path_buf)
                .collect();
            candidates.sort_by_key(|f| !cx.roots.iter().any(|r| f.starts_with(r)));
            let definition = decl_file.zip(decl_line);
            if let Some((file, _)) = &definition {
                candidates.push(file.clone());
            }
            for file in candidates {
                let before = definition
                    .as_ref()
                    .filter(|(f, _)| same_file(f, &file))
                    .map(|(f, l)| cx.sources.to_current(f, l.zero_based()));
                if let Some(line0) = prototype_line(cx, &file, &name, kind, before) {
                    return location_current(cx, &file, Line::from_zero_based(line0), &name);
                }
            }
        }
    }
    definition_of(cx, resolved)
}

/// The 0-based line of a declaration without a body of `name` in `file`: a prototype (the
/// name followed by `(`, the statement ending with `;`) for functions, an `extern` line for
/// variables; only before line `before` when given.
fn prototype_line(
    cx: &mut Context,
    file: &Path,
    name: &str,
    kind: SymbolKind,
    before: Option<u32>,
) -> Option<u32> {
    let text = cx.sources.text(file)?;
    let last = before.unwrap_or(text.bounds.len() as u32);
    (0..last).find(|&l| {
        let Some((s, e)) = find_word(&text, l, name) else {
            return false;
        };
        let Some((ls, le)) = line_span(&text, l) else {
            return false;
        };
        let line = &text[ls..le];
        let head = line.trim_start();
        if head.starts_with("//")
            || head.starts_with('*')
            || head.starts_with("/*")
            || head.starts_with('#')
        {
            return false;
        }
        match kind {
            SymbolKind::Function => {
                text[e..].trim_start().starts_with('(')
                    && decl_end(&text, l).is_some_and(|end| text.as_bytes()[end - 1] == b';')
                    && !text[ls..s].contains('=')
            }
            _ => find_word(&text, l, "extern").is_some_and(|x| x.0 < s),
        }
    })
}

/// The DWARF description of a global variable from the index, through the scope of a
/// function of the same file.
pub(crate) fn global_variable(served: &Served, e: &SymbolEntry) -> Option<Variable> {
    let file = e.decl_file.as_ref()?;
    let name = e.short_name();
    served
        .index
        .entries()
        .filter(|f| f.kind == SymbolKind::Function && f.decl_file.as_ref() == Some(file))
        .filter_map(|f| f.range.map(|r| r.start))
        .take(4)
        .find_map(|pc| {
            served
                .binary
                .scope_at(pc)
                .ok()?
                .globals
                .into_iter()
                .find(|v| v.name.as_deref() == Some(name))
        })
}

/// `textDocument/hover`: markdown with the declaration, the type, its size and alignment, and
/// for structs the layout of their fields.
pub fn hover(cx: &mut Context, path: &Path, offset: usize) -> Value {
    let Some(Resolved {
        ident,
        span: (start, end),
        target,
        served,
    }) = resolve(cx, path, offset)
    else {
        return Value::Null;
    };
    let live_value = match (cx.live.clone(), cx.sources.text(path)) {
        (Some(live), Some(text)) => {
            crate::live::hover_value(cx, &live, path, &text, (start, end), &target, &served)
        }
        _ => None,
    };
    let binary = &served.binary;
    let lang = Lang::of(path);
    let fence = lang.fence();
    let mut markdown = match target {
        Target::Variable(v) => variable_markdown(binary, lang, &ident, &v),
        Target::Symbol(e) => match e.kind {
            SymbolKind::Variable => match global_variable(&served, &e) {
                Some(v) => variable_markdown(binary, lang, &ident, &v),
                None => format!("```{fence}\n{}\n```", e.name),
            },
            SymbolKind::Function => function_markdown(cx, binary, lang, &e),
            _ => match named_type(binary, &e.name) {
                Some(ty) => type_markdown(binary, lang, &e.name, &ty),
                None => format!("```{fence}\n{}\n```", e.name),
            },
        },
        Target::Member { owner, member } => {
            let size = member.ty.and_then(|t| binary.type_size(t).ok().flatten());
            let mut place = format!("offset {}", member.byte_offset);
            match (&member.bitfield, size) {
                (Some(b), _) => {
                    let _ = write!(place, ", bit {}, {} bits", b.bit_offset, b.bit_size);
                }
                (None, Some(s)) => {
                    let _ = write!(place, ", size {s}");
                }
                (None, None) => {}
            }
            let owner = binary.type_name(owner.id).unwrap_or_default();
            format!(
                "```{fence}\n{}\n```\nfield of `{owner}` · {place}",
                declarator(binary, lang, member.ty, &ident)
            )
        }
        Target::Enumerator { owner, value } => {
            format!(
                "```{fence}\n{ident} = {value}\n```\nenumerator of `enum {}`",
                owner.name
            )
        }
    };
    if let Some(live) = live_value {
        markdown.push_str(&live);
    }
    let Some(text) = cx.sources.text(path) else {
        return Value::Null;
    };
    json!({
        "contents": { "kind": "markdown", "value": markdown },
        "range": range_json(pos(&text, start, cx.encoding), pos(&text, end, cx.encoding)),
    })
}

/// The source language of a file, for declarations in hovers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lang {
    C,
    Cpp,
    Rust,
}

impl Lang {
    pub(crate) fn of(path: &Path) -> Lang {
        match path.extension().and_then(|e| e.to_str()) {
            Some("rs") => Lang::Rust,
            Some("cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" | "C") => Lang::Cpp,
            _ => Lang::C,
        }
    }

    /// The markdown code fence's language.
    pub(crate) fn fence(self) -> &'static str {
        match self {
            Lang::C => "c",
            Lang::Cpp => "cpp",
            Lang::Rust => "rust",
        }
    }
}

/// `int x`, `char *p`, `int a[4]` in C; `x: i64` in Rust (whose DWARF type names are
/// already Rust: `&Point`, `[u8; 4]`).
fn declarator(binary: &Binary, lang: Lang, t: Option<TypeRef>, name: &str) -> String {
    if lang == Lang::Rust {
        let tn = t
            .and_then(|t| binary.type_info(t).ok())
            .and_then(|ty| ty.name)
            .or_else(|| t.and_then(|t| binary.type_name(t).ok()))
            .unwrap_or_else(|| "()".into());
        return format!("{name}: {tn}");
    }
    let tn = t
        .and_then(|t| binary.type_name(t).ok())
        .unwrap_or_else(|| "void".into());
    if let Some(i) = tn.find(" [") {
        format!("{} {name}{}", &tn[..i], &tn[i + 1..])
    } else if tn.ends_with('*') {
        format!("{tn}{name}")
    } else {
        format!("{tn} {name}")
    }
}

fn size_align(ty: Option<&Type>) -> String {
    let size = ty
        .and_then(|t| t.size)
        .map_or("?".into(), |s| s.to_string());
    let align = ty
        .and_then(|t| t.align)
        .map_or("?".into(), |a| a.to_string());
    format!("size {size}, align {align}")
}

fn variable_markdown(binary: &Binary, lang: Lang, name: &str, v: &Variable) -> String {
    let what = match v.kind {
        VariableKind::Parameter => "parameter",
        VariableKind::Local => "local variable",
        VariableKind::Global => "global variable",
    };
    let ty = v.ty.and_then(|t| binary.type_info(t).ok());
    let keyword = match (lang, v.kind) {
        (Lang::Rust, VariableKind::Local) => "let ",
        (Lang::Rust, VariableKind::Global) => "static ",
        _ => "",
    };
    let fence = lang.fence();
    let mut md = format!(
        "```{fence}\n{keyword}{}\n```\n{what} · {}",
        declarator(binary, lang, v.ty, name),
        size_align(ty.as_ref())
    );
    if let Some(layout) =
        v.ty.and_then(|t| strip(binary, t))
            .and_then(|t| layout(binary, lang, &t))
    {
        let _ = write!(md, "\n\n```{fence}\n{layout}\n```");
    }
    md
}

fn function_markdown(cx: &mut Context, binary: &Binary, lang: Lang, e: &SymbolEntry) -> String {
    let name = e.short_name();
    // The declaration as written: from its line up to the body or the `;`.
    let written = e
        .decl_file
        .as_ref()
        .zip(e.decl_line)
        .and_then(|(file, line)| {
            let text = cx.sources.text(file)?;
            let (start, _) = line_span(&text, cx.sources.to_current(file, line.zero_based()))?;
            let rest = &text[start..];
            let stop = rest.find(['{', ';']).unwrap_or(rest.len()).min(400);
            let decl = rest
                .get(..stop)?
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            decl.contains(name).then_some(decl)
        });
    let params: Vec<String> = e
        .range
        .as_ref()
        .and_then(|r| binary.scope_at(r.start).ok())
        .map(|s| {
            s.locals
                .iter()
                .filter(|v| v.kind == VariableKind::Parameter && v.frame == 0)
                .map(|v| declarator(binary, lang, v.ty, v.name.as_deref().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    let signature = written.unwrap_or_else(|| format!("{name}({})", params.join(", ")));
    let mut md = format!("```{}\n{signature}\n```\nfunction", lang.fence());
    if let Some(r) = &e.range {
        let _ = write!(md, " · {} bytes of code", r.end.0.saturating_sub(r.start.0));
    }
    md
}

fn type_markdown(binary: &Binary, lang: Lang, name: &str, ty: &Type) -> String {
    let decl = match &ty.kind {
        TypeKind::Typedef(target) => format!("typedef {}", declarator(binary, lang, *target, name)),
        TypeKind::Enum { enumerators, .. } => {
            let list: Vec<String> = enumerators
                .iter()
                .map(|(n, v)| format!("{n} = {v}"))
                .collect();
            format!("enum {name} {{ {} }}", list.join(", "))
        }
        _ => binary.type_name(ty.id).unwrap_or_else(|_| name.to_owned()),
    };
    let sized = strip(binary, ty.id);
    let fence = lang.fence();
    let mut md = format!(
        "```{fence}\n{decl}\n```\ntype · {}",
        size_align(sized.as_ref())
    );
    if let Some(layout) = sized.as_ref().and_then(|t| layout(binary, lang, t)) {
        let _ = write!(md, "\n\n```{fence}\n{layout}\n```");
    }
    md
}

/// A pahole-like layout of a struct or union: each member with offset and size, holes and
/// trailing padding, and a summary.
fn layout(binary: &Binary, lang: Lang, ty: &Type) -> Option<String> {
    let TypeKind::Composite {
        kind,
        members,
        declaration: false,
        ..
    } = &ty.kind
    else {
        return None;
    };
    let union = *kind == CompositeKind::Union;
    let header = binary.type_name(ty.id).ok()?;
    // In memory order: Rust reorders fields, and holes are between neighbours in memory.
    let mut members: Vec<&Member> = members.iter().collect();
    if !union {
        members.sort_by_key(|m| {
            (
                m.byte_offset,
                m.bitfield.as_ref().map_or(0, |b| b.bit_offset),
            )
        });
    }
    let mut rows: Vec<(String, String)> = Vec::new();
    let mut cursor = 0u64;
    let (mut holes, mut hole_bytes) = (0u32, 0u64);
    for &m in &members {
        let name = m.name.as_deref().unwrap_or("");
        let size = m.ty.and_then(|t| binary.type_size(t).ok().flatten());
        let mut decl = declarator(binary, lang, m.ty, name);
        let (end, place) = match &m.bitfield {
            Some(b) => {
                let _ = write!(decl, ":{}", b.bit_size);
                let end = m
                    .byte_offset
                    .saturating_add(b.bit_offset.saturating_add(b.bit_size).div_ceil(8));
                (
                    end,
                    format!(
                        "{:>5}:{:<2} {:>3}b",
                        m.byte_offset, b.bit_offset, b.bit_size
                    ),
                )
            }
            None => {
                let end = m.byte_offset.saturating_add(size.unwrap_or(0));
                let size = size.map_or("?".into(), |s| s.to_string());
                (end, format!("{:>5} {size:>5}", m.byte_offset))
            }
        };
        if !union && m.byte_offset > cursor {
            let hole = m.byte_offset - cursor;
            holes += 1;
            hole_bytes = hole_bytes.saturating_add(hole);
            rows.push((
                String::new(),
                format!("/* XXX {hole} byte{} hole */", plural(hole)),
            ));
        }
        cursor = cursor.max(end);
        let end_mark = if lang == Lang::Rust { ',' } else { ';' };
        rows.push((format!("{decl}{end_mark}"), format!("/* {place} */")));
    }
    let size = ty.size.unwrap_or(cursor);
    let padding = size.saturating_sub(cursor);
    if padding > 0 {
        rows.push((
            String::new(),
            format!("/* XXX {padding} byte{} padding */", plural(padding)),
        ));
    }
    let width = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
    let mut out = format!("{header} {{\n");
    for (decl, note) in rows {
        if decl.is_empty() {
            let _ = writeln!(out, "    {note}");
        } else {
            let _ = writeln!(out, "    {decl:<width$} {note}");
        }
    }
    let align = ty.align.map_or("?".into(), |a| a.to_string());
    let close = if lang == Lang::Rust { "}" } else { "};" };
    let _ = write!(
        out,
        "{close}\n/* size: {size}, align: {align}, members: {}, holes: {holes} ({hole_bytes} bytes), padding: {padding} */",
        members.len()
    );
    Some(out)
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_exact_prefix_substring_fuzzy() {
        assert_eq!(rank("area", "area"), Some(0));
        assert_eq!(rank("ar", "area"), Some(1));
        assert_eq!(rank("re", "area"), Some(2));
        assert_eq!(rank("aa", "area"), Some(3));
        assert_eq!(rank("zz", "area"), None);
        assert_eq!(rank("f", "krate::m::f"), Some(0));
        assert_eq!(rank("fu", "krate::m::func"), Some(1));
    }

    #[test]
    fn finds_words_and_declaration_ends() {
        let text = &SourceText::new(Arc::from("int area(int a) {\n  { x; }\n}\nint areas;\n"));
        assert_eq!(find_word(text, 0, "area"), Some((4, 8)));
        assert_eq!(find_word(text, 3, "area"), None);
        assert_eq!(decl_end(text, 0), Some(28));
        assert_eq!(decl_end(text, 3), Some(text.len() - 1));
        assert_eq!(word_at(text, 6), Some((4, 8)));
        assert_eq!(word_at(text, 8), Some((4, 8)));
    }
}
