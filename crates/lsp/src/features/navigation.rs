//! What the identifier under the cursor refers to (member chains, locals in scope, statics,
//! the symbol index, enumerators), and `definition` / `declaration` from it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use symbols::lines::normalize_path;
use symbols::{
    Binary, Line, Member, SymbolEntry, SymbolKind, Type, TypeKind, TypeRef, Variable, VariableKind,
};

use super::context::{location, location_current, Context, Target};
use crate::dwarf::strip;
use crate::names::{last_component, EntryId, FileId};
use crate::sources::{
    decl_end, find_word, is_ident_byte, line_span, pos, same_file, word_at, SourceText,
};
use crate::text::PositionEncoding;
use crate::workspace::Served;

/// The identifier under the cursor and what it refers to.
pub(crate) struct Resolved {
    pub(crate) ident: String,
    /// Byte range of the identifier in the document.
    pub(crate) span: (usize, usize),
    pub(crate) target: Target,
    pub(crate) served: Arc<Served>,
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
pub(crate) fn member_of(binary: &Binary, t: TypeRef, name: &str) -> Option<(Type, Member)> {
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
pub(crate) fn expr_type(
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
        if let Some(v) = variable_at(served, path, line1, name) {
            return Some((v.ty?, served.clone()));
        }
    }
    for served in &cx.served {
        for e in served.names.lookup(&served.binary, name) {
            if served.names.brief(e).map(|b| b.kind) != Some(SymbolKind::Variable) {
                continue;
            }
            let Some(e) = served.entry(e, false) else {
                continue;
            };
            if let Some(t) = global_variable(served, &e).and_then(|v| v.ty) {
                return Some((t, served.clone()));
            }
        }
    }
    None
}

/// The enum declaring the enumerator `ident`, preferring enums declared in `path`.
pub(crate) fn find_enumerator(
    cx: &Context,
    path: &Path,
    ident: &str,
) -> Option<(SymbolEntry, i128, Arc<Served>)> {
    let path = normalize_path(path);
    for same in [true, false] {
        for served in &cx.served {
            let enums = served
                .names
                .types()
                .iter()
                .filter(|(_, file)| (served.names.normalized_file(*file) == path) == same);
            // Each check reads a type; bound the work for binaries with many types.
            for (e, _) in enums.take(if same { 4096 } else { 256 }) {
                let Some(brief) = served.names.brief(*e) else {
                    continue;
                };
                let name: Arc<str> = Arc::from(brief.name);
                let Some(enumerators) = served.facts.enumerators(&served.binary, &name) else {
                    continue;
                };
                if let Some((_, v)) = enumerators.iter().find(|(n, _)| n == ident) {
                    let owner = served.entry(*e, false)?;
                    return Some((owner, *v, served.clone()));
                }
            }
        }
    }
    None
}

/// Where `name` is written within the declaration of the type `owner` (a member or an
/// enumerator): a light scan of the lines of that declaration.
pub(crate) fn inner_decl(
    cx: &mut Context,
    owner: &SymbolEntry,
    name: &str,
) -> Option<(PathBuf, Line)> {
    let file = owner.decl_file.as_deref()?.to_path_buf();
    let line0 = cx.sources.to_current(&file, owner.decl_line?.zero_based());
    let text = cx.sources.text(&file)?;
    let last = decl_end(&text, line0).map_or(line0, |e| pos(&text, e, PositionEncoding::Utf8).line);
    let found = (line0..=last).find(|&l| find_word(&text, l, name).is_some())?;
    Some((file, Line::from_zero_based(found)))
}

/// The index entry declaring the named struct, union or enum `ty`.
pub(crate) fn type_entry(served: &Served, ty: &Type) -> Option<SymbolEntry> {
    let name = ty.name.as_deref()?;
    let found = served
        .names
        .lookup(&served.binary, name)
        .into_iter()
        .find(|&e| {
            served.names.brief(e).is_some_and(|b| {
                b.kind == SymbolKind::Type && b.line.is_some() && last_component(b.name) == name
            })
        })?;
    served.entry(found, false)
}

/// Resolves the identifier at `offset` of `path`: locals and parameters visible at that line
/// first (unless a `struct`/`union`/`enum` keyword says it is a tag), then statics of the
/// unit, then the symbol index (declarations in the same file first).
pub(crate) fn resolve(cx: &mut Context, path: &Path, offset: usize) -> Option<Resolved> {
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
            if let Some(v) = variable_at(served, path, line1, &ident) {
                return Some(Resolved {
                    ident,
                    span: (start, end),
                    target: Target::Variable(v),
                    served: served.clone(),
                });
            }
        }
    }
    let mut best: Option<((bool, u8), EntryId, Arc<Served>)> = None;
    for served in &cx.served {
        let mut same: HashMap<FileId, bool> = HashMap::new();
        for e in served.names.lookup(&served.binary, &ident) {
            let Some(brief) = served.names.brief(e) else {
                continue;
            };
            let (Some(file), Some(_)) = (brief.file, brief.line) else {
                continue;
            };
            let here = *same
                .entry(file)
                .or_insert_with(|| same_file(served.names.file(file), path));
            let kind_rank = match (brief.kind, tag) {
                (SymbolKind::Type, true) => 0,
                (SymbolKind::Type, false) => 1,
                (_, true) => 1,
                _ => 0,
            };
            let key = (!here, kind_rank);
            if best.as_ref().is_none_or(|b| key < b.0) {
                best = Some((key, e, served.clone()));
            }
        }
    }
    if let Some(e) = best.and_then(|(_, e, served)| Some((served.entry(e, true)?, served))) {
        let (e, served) = e;
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
    served: &Served,
    path: &Path,
    line: u32,
    ident: &str,
) -> Option<Variable> {
    let binary = &served.binary;
    // The scope at the first code of `at` or after, if that code is in a function that
    // starts at or before `line` (the next line with code may be in a later function).
    let scope_from = |at: u32| -> Option<Arc<symbols::Scope>> {
        let res = served.facts.resolve_line(binary, path, Line::new(at)?)?;
        let loc = res.locations.first()?;
        let func = binary.function_at(loc.addr).ok()??;
        if func.function.decl_line?.get() > line {
            return None;
        }
        served.facts.scope_at(binary, loc.addr)
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
            .iter()
            .find(|v| named(v) && v.decl_line.map(Line::get) == Some(line))
            .cloned()
    });
    declared_here.or_else(|| {
        scope
            .globals
            .iter()
            .find(|v| v.name.as_deref() == Some(ident))
            .cloned()
    })
}

/// `textDocument/definition`.
pub fn definition(cx: &mut Context, path: &Path, offset: usize) -> Value {
    match resolve(cx, path, offset) {
        Some(resolved) => definition_of(cx, resolved),
        None => Value::Null,
    }
}

pub(crate) fn definition_of(cx: &mut Context, resolved: Resolved) -> Value {
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
pub(crate) fn prototype_line(
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
    let file = served.names.file_id(e.decl_file.as_ref()?)?;
    let name = e.short_name();
    served
        .names
        .in_file(file)
        .iter()
        .filter(|&&f| served.names.brief(f).map(|b| b.kind) == Some(SymbolKind::Function))
        .filter_map(|&f| served.entry(f, true)?.range.map(|r| r.start))
        .take(4)
        .find_map(|pc| {
            served
                .facts
                .scope_at(&served.binary, pc)?
                .globals
                .iter()
                .find(|v| v.name.as_deref() == Some(name))
                .cloned()
        })
}
