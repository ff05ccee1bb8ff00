//! `textDocument/hover`: the declaration, type, size, alignment and layout of what is under
//! the cursor, and the live value when a debuggee is paused there.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;
use symbols::{
    Binary, CompositeKind, Member, SymbolEntry, SymbolKind, Type, TypeKind, TypeRef, Variable,
    VariableKind,
};

use super::context::Target;
use super::context::{object, range_json, Context};
use super::navigation::{global_variable, resolve, Resolved};
use crate::dwarf::{named_type, strip};
use crate::sources::{line_span, pos, Lang};
use crate::workspace::Served;

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
            live.hover_value(cx, path, &text, (start, end), &target, &served)
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
            SymbolKind::Function => function_markdown(cx, &served, lang, &e),
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
    object([
        (
            "contents",
            object([("kind", "markdown".into()), ("value", markdown.into())]),
        ),
        (
            "range",
            range_json(pos(&text, start, cx.encoding), pos(&text, end, cx.encoding)),
        ),
    ])
}

/// `textDocument/hover` in companion mode: only the paused program's value of what is under
/// the cursor (the declaration is the compiler's server's to show), `null` otherwise.
pub fn live_hover(cx: &mut Context, path: &Path, offset: usize) -> Value {
    let Some(Resolved {
        span: (start, end),
        target,
        served,
        ..
    }) = resolve(cx, path, offset)
    else {
        return Value::Null;
    };
    let (Some(live), Some(text)) = (cx.live.clone(), cx.sources.text(path)) else {
        return Value::Null;
    };
    let Some(value) = live.hover_value(cx, path, &text, (start, end), &target, &served) else {
        return Value::Null;
    };
    // The live part starts with a separator meant to follow a declaration.
    let markdown = value.trim_start_matches("\n\n---\n").to_owned();
    object([
        (
            "contents",
            object([("kind", "markdown".into()), ("value", markdown.into())]),
        ),
        (
            "range",
            range_json(pos(&text, start, cx.encoding), pos(&text, end, cx.encoding)),
        ),
    ])
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

fn function_markdown(cx: &mut Context, served: &Served, lang: Lang, e: &SymbolEntry) -> String {
    let binary = &served.binary;
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
        .and_then(|r| served.facts.scope_at(binary, r.start))
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
