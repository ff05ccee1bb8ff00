//! `textDocument/documentSymbol`: the functions, variables and types a binary declares in
//! the document, nested by type and Rust module.

use std::collections::HashSet;
use std::path::Path;

use serde_json::{json, Value};
use symbols::{Binary, Line, SymbolKind, Type, TypeKind};
use wire::jsonrpc::ResponseError;

use super::context::{
    cancelled, decl_ranges, entry_kind, object, Context, SK_ENUM_MEMBER, SK_FIELD, SK_FUNCTION,
    SK_METHOD, SK_MODULE, SK_STRUCT,
};
use crate::cancel::CancelToken;
use crate::dwarf::named_type;
use crate::sources::{decl_end, find_word, line_span, pos, same_file, Lang};

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
    for (si, served) in cx.served.iter().enumerate() {
        // The symbols declared in the document's file(s), each compared once.
        let files = served.names.files_where(|f| same_file(f, path));
        let symbols = files.iter().flat_map(|&f| served.names.in_file(f));
        for (n, &sym) in symbols.enumerate() {
            if n % 4096 == 0 && cancel.is_cancelled() {
                return Err(cancelled());
            }
            let Some(e) = served.entry(sym, false) else {
                continue;
            };
            let Some(line) = e.decl_line else {
                continue;
            };
            if !seen.insert((e.name.clone(), line)) {
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
        let mut item = object([
            ("name", name.into()),
            ("kind", kind.into()),
            ("range", range),
            ("selectionRange", selection),
        ]);
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
    object([
        ("name", name.into()),
        ("kind", if is_type { SK_STRUCT } else { SK_MODULE }.into()),
        ("range", range),
        ("selectionRange", selection),
        ("children", children.into()),
    ])
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
        let mut item = object([
            ("name", name.into()),
            ("kind", kind.into()),
            ("range", range),
            ("selectionRange", selection),
        ]);
        if let Some(d) = detail {
            item["detail"] = json!(d);
        }
        out.push(item);
    }
    out
}
