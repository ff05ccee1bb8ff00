//! `textDocument/semanticTokens/full` and `/range`: identifiers of the document classified
//! from debug information.
//!
//! A light lexer finds the identifiers of the current text (comments, string and character
//! literals, preprocessor lines, Rust attributes and keywords are skipped). Each identifier is
//! then classified from DWARF facts: the parameters and locals visible at its line (line →
//! address → scope), the members and enumerators of the types declared in the document, and
//! the symbol index (functions, globals, types). Identifiers DWARF knows nothing about get no
//! token, so the editor's own highlighting shows through.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Value};
use symbols::{Binary, Line, Scope, SourceMap, SymbolEntry, SymbolKind, TypeKind, Variable};
use symbols::{TypeRef, VariableKind};
use wire::jsonrpc::ResponseError;

use crate::cancel::CancelToken;
use crate::features::{
    cancelled, decl_end, find_word, global_variable, named_type, pos, same_file, Context, Lang,
    SourceText,
};
use crate::names::{last_component, FileId};

/// Token types, in legend order.
pub const TOKEN_TYPES: &[&str] = &[
    "namespace",
    "type",
    "parameter",
    "variable",
    "property",
    "enumMember",
    "function",
];
/// Token modifiers, in legend order (bit `1 << index`).
pub const TOKEN_MODIFIERS: &[&str] = &["declaration", "static", "readonly"];

/// The legend advertised in `initialize`.
pub fn legend() -> Value {
    json!({ "tokenTypes": TOKEN_TYPES, "tokenModifiers": TOKEN_MODIFIERS })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
enum TokenType {
    Namespace = 0,
    Type = 1,
    Parameter = 2,
    Variable = 3,
    Property = 4,
    EnumMember = 5,
    Function = 6,
}

const DECLARATION: u32 = 1;
const STATIC: u32 = 2;
const READONLY: u32 = 4;

/// What precedes an identifier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Prev {
    /// Start of the text or punctuation that says nothing.
    Other,
    /// `.` or `->`: a member access.
    Member,
    /// A keyword naming what follows: `struct`, `union`, `enum`, `class`.
    Tag,
    /// Rust's `mod`.
    Module,
}

/// What follows an identifier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    Other,
    /// `(`: a call or a function declarator.
    Call,
    /// `::`: a path component.
    Path,
    /// `!`: a Rust macro.
    Bang,
    /// A single `:`: a Rust field in a struct expression or pattern (or a declaration).
    Colon,
}

/// One identifier of the document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Ident {
    start: usize,
    end: usize,
    prev: Prev,
    next: Next,
}

const C_KEYWORDS: &[&str] = &[
    "auto",
    "break",
    "case",
    "char",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "register",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "typedef",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
    "_Bool",
    "_Complex",
    "_Atomic",
    "_Alignas",
    "_Alignof",
    "_Noreturn",
    "_Static_assert",
    "_Thread_local",
    "bool",
    "true",
    "false",
];

const CPP_KEYWORDS: &[&str] = &[
    "class",
    "namespace",
    "template",
    "typename",
    "public",
    "private",
    "protected",
    "virtual",
    "this",
    "new",
    "delete",
    "operator",
    "using",
    "friend",
    "nullptr",
    "constexpr",
    "consteval",
    "noexcept",
    "override",
    "final",
    "explicit",
    "mutable",
    "try",
    "catch",
    "throw",
    "static_cast",
    "dynamic_cast",
    "reinterpret_cast",
    "const_cast",
    "decltype",
    "auto",
    "wchar_t",
    "char8_t",
    "char16_t",
    "char32_t",
];

const RUST_KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
    "ref", "return", "self", "Self", "static", "struct", "super", "trait", "true", "type",
    "unsafe", "use", "where", "while", "union", "i8", "i16", "i32", "i64", "i128", "isize", "u8",
    "u16", "u32", "u64", "u128", "usize", "f32", "f64", "bool", "char", "str",
];

fn is_keyword(lang: Lang, word: &str) -> bool {
    match lang {
        Lang::Rust => RUST_KEYWORDS.contains(&word),
        Lang::C => C_KEYWORDS.contains(&word),
        Lang::Cpp => C_KEYWORDS.contains(&word) || CPP_KEYWORDS.contains(&word),
    }
}

fn is_tag_keyword(lang: Lang, word: &str) -> bool {
    match lang {
        Lang::Rust => matches!(word, "struct" | "enum" | "union" | "impl" | "trait"),
        Lang::C => matches!(word, "struct" | "enum" | "union"),
        Lang::Cpp => matches!(word, "struct" | "enum" | "union" | "class"),
    }
}

fn ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn ident_continue(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// The byte after a quoted literal starting at `i` (the opening quote), honouring escapes.
/// Stops at a newline when `single_line` (an unterminated C literal ends with its line).
fn skip_quoted(bytes: &[u8], i: usize, single_line: bool) -> usize {
    let quote = bytes[i];
    let mut j = i + 1;
    while j < bytes.len() {
        match bytes[j] {
            b'\\' => j += 2,
            b'\n' if single_line => return j,
            c if c == quote => return j + 1,
            _ => j += 1,
        }
    }
    bytes.len()
}

/// The identifiers of `text`, with what precedes and follows each.
fn lex(text: &str, lang: Lang) -> Vec<Ident> {
    let bytes = text.as_bytes();
    let mut out: Vec<Ident> = Vec::new();
    let mut prev = Prev::Other;
    let mut line_start = true;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'\n' => {
                line_start = true;
                i += 1;
                continue;
            }
            b' ' | b'\t' | b'\r' | 0x0c => {
                i += 1;
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                // Rust block comments nest; C ones do not.
                let mut depth = 1u32;
                i += 2;
                while i < bytes.len() && depth > 0 {
                    if bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                    } else if lang == Lang::Rust
                        && bytes[i] == b'/'
                        && bytes.get(i + 1) == Some(&b'*')
                    {
                        depth += 1;
                        i += 2;
                    } else {
                        i += 1;
                    }
                }
                continue;
            }
            b'#' if lang == Lang::Rust => {
                // An attribute `#[..]` or `#![..]`: skipped to its closing bracket.
                let mut j = i + 1;
                if bytes.get(j) == Some(&b'!') {
                    j += 1;
                }
                if bytes.get(j) == Some(&b'[') {
                    let mut depth = 0u32;
                    while j < bytes.len() {
                        match bytes[j] {
                            b'[' => depth += 1,
                            b']' => {
                                depth -= 1;
                                if depth == 0 {
                                    j += 1;
                                    break;
                                }
                            }
                            b'"' => {
                                j = skip_quoted(bytes, j, false);
                                continue;
                            }
                            _ => {}
                        }
                        j += 1;
                    }
                    i = j;
                } else {
                    i += 1;
                }
                prev = Prev::Other;
                continue;
            }
            b'#' if line_start => {
                // A preprocessor directive, with its backslash continuations.
                while i < bytes.len() && bytes[i] != b'\n' {
                    if bytes[i] == b'\\' && bytes.get(i + 1) == Some(&b'\n') {
                        i += 1;
                    }
                    i += 1;
                }
                prev = Prev::Other;
                continue;
            }
            b'"' => {
                i = skip_quoted(bytes, i, lang != Lang::Rust);
                prev = Prev::Other;
                line_start = false;
                continue;
            }
            b'\'' => {
                i = skip_char_or_lifetime(text, i, lang);
                prev = Prev::Other;
                line_start = false;
                continue;
            }
            _ => {}
        }
        line_start = false;
        if b.is_ascii_digit() {
            // A number: `.` belongs to it only before a digit (`1.5`, not `1..n`).
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric()
                    || bytes[i] == b'_'
                    || (bytes[i] == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)))
            {
                i += 1;
            }
            prev = Prev::Other;
            continue;
        }
        let Some(c) = text[i..].chars().next() else {
            break;
        };
        if ident_start(c) {
            let start = i;
            let mut end = i;
            for (k, c) in text[i..].char_indices() {
                if !ident_continue(c) {
                    break;
                }
                end = i + k + c.len_utf8();
            }
            let word = &text[start..end];
            i = end;
            let follows = bytes.get(end).copied();
            // Literal prefixes: C's L"", u8"", Rust's b"", r"", r#""#, br"", b''.
            let prefix = match lang {
                Lang::Rust => {
                    matches!(word, "b" | "r" | "br" | "c" | "cr")
                        && matches!(follows, Some(b'"' | b'#' | b'\''))
                }
                _ => {
                    matches!(word, "L" | "u" | "U" | "u8" | "R")
                        && matches!(follows, Some(b'"' | b'\''))
                }
            };
            if prefix {
                if lang == Lang::Rust && word.contains('r') {
                    i = skip_raw_string(bytes, end);
                }
                prev = Prev::Other;
                continue;
            }
            if is_keyword(lang, word) {
                prev = if is_tag_keyword(lang, word) {
                    Prev::Tag
                } else if lang == Lang::Rust && word == "mod" {
                    Prev::Module
                } else {
                    Prev::Other
                };
                continue;
            }
            let mut j = end;
            while j < bytes.len() && matches!(bytes[j], b' ' | b'\t' | b'\r' | b'\n') {
                j += 1;
            }
            let next = match (bytes.get(j), bytes.get(j + 1)) {
                (Some(b'('), _) => Next::Call,
                (Some(b':'), Some(b':')) => Next::Path,
                (Some(b'!'), n) if lang == Lang::Rust && n != Some(&b'=') => Next::Bang,
                (Some(b':'), _) if lang == Lang::Rust => Next::Colon,
                _ => Next::Other,
            };
            out.push(Ident {
                start,
                end,
                prev,
                next,
            });
            prev = Prev::Other;
            continue;
        }
        prev = match (b, bytes.get(i + 1)) {
            (b'.', Some(b'.')) => {
                i += 1;
                Prev::Other
            }
            (b'.', _) => Prev::Member,
            (b'-', Some(b'>')) if lang != Lang::Rust => {
                i += 1;
                Prev::Member
            }
            // `struct a::b` keeps saying that a type follows.
            (b':', Some(b':')) if prev == Prev::Tag => {
                i += 1;
                Prev::Tag
            }
            _ => Prev::Other,
        };
        i += c.len_utf8();
    }
    out
}

/// After a `'` at `i`: a character literal, or (Rust) a lifetime or loop label.
fn skip_char_or_lifetime(text: &str, i: usize, lang: Lang) -> usize {
    let bytes = text.as_bytes();
    if lang != Lang::Rust {
        return skip_quoted(bytes, i, true);
    }
    if bytes.get(i + 1) == Some(&b'\\') {
        return skip_quoted(bytes, i, true);
    }
    let mut chars = text[i + 1..].chars();
    match (chars.next(), chars.next()) {
        (Some(c), Some('\'')) => i + 1 + c.len_utf8() + 1,
        (Some(c), _) if ident_start(c) => {
            // A lifetime: skip the `'` and its name.
            let mut j = i + 1;
            for (k, c) in text[i + 1..].char_indices() {
                if !ident_continue(c) {
                    break;
                }
                j = i + 1 + k + c.len_utf8();
            }
            j
        }
        _ => i + 1,
    }
}

/// A Rust raw string whose `#`s or opening quote start at `i`.
fn skip_raw_string(bytes: &[u8], mut i: usize) -> usize {
    let mut hashes = 0;
    while bytes.get(i) == Some(&b'#') {
        hashes += 1;
        i += 1;
    }
    if bytes.get(i) != Some(&b'"') {
        return i;
    }
    i += 1;
    while i < bytes.len() {
        if bytes[i] == b'"' && (1..=hashes).all(|k| bytes.get(i + k) == Some(&b'#')) {
            return i + 1 + hashes;
        }
        i += 1;
    }
    bytes.len()
}

/// One classified identifier: byte range, type and modifiers.
type Token = (usize, usize, TokenType, u32);

/// The scope at the code of a line, per binary, computed once per request.
struct Scopes<'a> {
    binary: &'a Binary,
    path: &'a Path,
    code_lines: Vec<u32>,
    /// By line with code: the declaration line of the function there and the scope.
    cache: HashMap<u32, Option<(u32, Arc<Scope>)>>,
}

impl<'a> Scopes<'a> {
    fn new(binary: &'a Binary, path: &'a Path) -> Scopes<'a> {
        let code_lines = binary
            .lines_with_code(path, &SourceMap::new())
            .unwrap_or_default()
            .into_iter()
            .map(Line::get)
            .collect();
        Scopes {
            binary,
            path,
            code_lines,
            cache: HashMap::new(),
        }
    }

    /// The scope at the first code at or after the 1-based `line`, when that code is in a
    /// function declared at or before `line` (as `features::variable_at` decides).
    fn from(&mut self, line: u32) -> Option<Arc<Scope>> {
        let i = self.code_lines.partition_point(|&l| l < line);
        let code = *self.code_lines.get(i)?;
        let (binary, path) = (self.binary, self.path);
        let (decl, scope) = self
            .cache
            .entry(code)
            .or_insert_with(|| {
                let res = binary
                    .resolve_line(path, Line::new(code)?, &SourceMap::new())
                    .ok()??;
                let loc = res.locations.first()?;
                let func = binary.function_at(loc.addr).ok()??;
                let decl = func.function.decl_line?.get();
                Some((decl, Arc::new(binary.scope_at(loc.addr).ok()?)))
            })
            .clone()?;
        (decl <= line).then_some(scope)
    }

    /// The parameter or local `name` visible on 1-based `line` (or declared on it).
    fn variable(&mut self, line: u32, name: &str) -> Option<Variable> {
        let named = |v: &&Variable| v.name.as_deref() == Some(name) && v.frame == 0;
        let scope = self.from(line)?;
        let visible = scope
            .locals
            .iter()
            .filter(named)
            .filter(|v| {
                v.kind == VariableKind::Parameter || v.decl_line.is_none_or(|d| d.get() <= line)
            })
            .max_by_key(|v| v.depth)
            .cloned();
        if visible.is_some() {
            return visible;
        }
        let next = self.from(line + 1)?;
        let found = next
            .locals
            .iter()
            .filter(named)
            .find(|v| v.decl_line.map(Line::get) == Some(line))
            .cloned();
        found
    }
}

/// A struct/union or enum declared in the document: its lines and member names.
struct Block {
    first: u32,
    last: u32,
    members: HashSet<String>,
    enumerators: bool,
}

/// Whether the type is `const`-qualified (through typedefs).
fn is_const(binary: &Binary, t: Option<TypeRef>) -> bool {
    let mut t = t;
    for _ in 0..8 {
        let Some(ty) = t.and_then(|t| binary.type_info(t).ok()) else {
            return false;
        };
        match ty.kind {
            TypeKind::Const(_) => return true,
            TypeKind::Typedef(x) | TypeKind::Volatile(x) => t = x,
            _ => return false,
        }
    }
    false
}

/// Whether the word `keyword` is written before `name` on the declaration line.
fn declared_with(cx: &mut Context, e: &SymbolEntry, keyword: &str) -> bool {
    let (Some(file), Some(line)) = (e.decl_file.as_deref(), e.decl_line) else {
        return false;
    };
    let Some(text) = cx.sources.text(file) else {
        return false;
    };
    let line0 = cx.sources.to_current(file, line.zero_based());
    let (Some(kw), Some(name)) = (
        find_word(&text, line0, keyword),
        find_word(&text, line0, e.short_name()),
    ) else {
        return false;
    };
    kw.0 < name.0
}

/// The 0-based line declaring the type `name` in the text (`struct name`, `enum name`, ...),
/// for types whose DWARF has no declaration line.
fn type_line(text: &SourceText, lang: Lang, name: &str) -> Option<u32> {
    let idents = lex(text, lang);
    let at = idents
        .iter()
        .find(|t| t.prev == Prev::Tag && &text[t.start..t.end] == name)?;
    Some(pos(text, at.start, crate::text::PositionEncoding::Utf8).line)
}

/// The document's identifiers classified; `range` restricts to tokens within those bytes.
fn classify(
    cx: &mut Context,
    path: &Path,
    text: &SourceText,
    range: Option<(usize, usize)>,
    cancel: &CancelToken,
) -> Result<Vec<Token>, ResponseError> {
    let lang = Lang::of(path);
    let idents: Vec<Ident> = lex(text, lang)
        .into_iter()
        .filter(|t| range.is_none_or(|(s, e)| t.end > s && t.start < e))
        .collect();
    let names: HashSet<&str> = idents.iter().map(|t| &text[t.start..t.end]).collect();

    // Index entries named in the document, and the enumerators and members of the types
    // declared in it (or, bounded, anywhere under a root).
    let mut globals: HashMap<String, Vec<(SymbolEntry, usize)>> = HashMap::new();
    let mut modules: HashSet<String> = HashSet::new();
    let mut enumerators: HashSet<String> = HashSet::new();
    let mut members: HashSet<String> = HashSet::new();
    let mut blocks: Vec<Block> = Vec::new();
    let mut types_read = 0usize;
    let served = cx.served.clone();
    for (si, s) in served.iter().enumerate() {
        // Per declaration file, compared once: the document's, and under a root.
        let here_files: Vec<bool> = (0..s.names.file_count())
            .map(|f| same_file(s.names.file(FileId::new(f)), path))
            .collect();
        let near_files: Vec<bool> = (0..s.names.file_count())
            .map(|f| {
                let file = s.names.file(FileId::new(f));
                cx.roots.iter().any(|r| file.starts_with(r))
            })
            .collect();
        for (n, sym) in s.names.all().enumerate() {
            if n % 4096 == 0 && cancel.is_cancelled() {
                return Err(cancelled());
            }
            let Some(e) = s.names.brief(sym) else {
                continue;
            };
            let short = last_component(e.name);
            if lang == Lang::Rust {
                let parts: Vec<&str> = e.name.split("::").collect();
                for p in parts.iter().take(parts.len().saturating_sub(1)) {
                    if names.contains(p) && !p.starts_with(|c: char| c.is_uppercase()) {
                        modules.insert((*p).to_owned());
                    }
                }
            }
            if e.kind == SymbolKind::Type {
                // rustc records no declaration for types: a type named in the document
                // may be declared in it.
                let here = match e.file {
                    Some(f) => here_files.get(f.index()).copied().unwrap_or(false),
                    None => names.contains(short),
                };
                let near = e
                    .file
                    .is_some_and(|f| near_files.get(f.index()).copied().unwrap_or(false))
                    || names.contains(short);
                if here || (near && types_read < 4096) {
                    types_read += 1;
                    if let Some(ty) = named_type(&s.binary, e.name) {
                        let (list, is_enum): (Vec<String>, bool) = match &ty.kind {
                            TypeKind::Enum {
                                enumerators: list, ..
                            } => (list.iter().map(|(n, _)| n.clone()).collect(), true),
                            TypeKind::Composite { members: list, .. } => {
                                (list.iter().filter_map(|m| m.name.clone()).collect(), false)
                            }
                            _ => (Vec::new(), false),
                        };
                        let set = if is_enum {
                            &mut enumerators
                        } else {
                            &mut members
                        };
                        set.extend(list.iter().filter(|n| names.contains(n.as_str())).cloned());
                        if here && !list.is_empty() {
                            // rustc records no declaration line for types.
                            let first = match e.line {
                                Some(line) => Some(cx.sources.to_current(path, line.zero_based())),
                                None => type_line(text, lang, short),
                            };
                            if let Some(first) = first {
                                let last = decl_end(text, first).map_or(first, |end| {
                                    pos(text, end, crate::text::PositionEncoding::Utf8).line
                                });
                                blocks.push(Block {
                                    first,
                                    last,
                                    members: list.into_iter().collect(),
                                    enumerators: is_enum,
                                });
                            }
                        }
                    }
                }
            }
            if names.contains(short) && (e.line.is_some() || e.kind == SymbolKind::Type) {
                if let Some(entry) = s.entry(sym, false) {
                    globals
                        .entry(short.to_owned())
                        .or_default()
                        .push((entry, si));
                }
            }
        }
    }

    let mut scopes: Vec<Scopes> = served
        .iter()
        .map(|s| Scopes::new(&s.binary, path))
        .collect();
    let mut global_mods: HashMap<String, u32> = HashMap::new();
    let mut out = Vec::new();
    for (n, t) in idents.iter().enumerate() {
        if n % 256 == 0 && cancel.is_cancelled() {
            return Err(cancelled());
        }
        let name = &text[t.start..t.end];
        let line0 = pos(text, t.start, crate::text::PositionEncoding::Utf8).line;
        let declared_here = |decl0: u32| {
            decl0 == line0 && find_word(text, line0, name).map(|w| w.0) == Some(t.start)
        };
        let decl_mod = |decl0: u32| if declared_here(decl0) { DECLARATION } else { 0 };
        if t.next == Next::Bang {
            continue;
        }
        if t.prev == Prev::Member {
            if t.next == Next::Call
                && globals
                    .get(name)
                    .is_some_and(|g| g.iter().any(|(e, _)| e.kind == SymbolKind::Function))
            {
                out.push((t.start, t.end, TokenType::Function, 0));
            } else if members.contains(name) {
                out.push((t.start, t.end, TokenType::Property, 0));
            }
            continue;
        }
        let types = globals
            .get(name)
            .map(|g| {
                g.iter()
                    .filter(|(e, _)| e.kind == SymbolKind::Type)
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        let type_token = |cx: &mut Context, e: &SymbolEntry| {
            let decl = match (e.decl_file.as_deref(), e.decl_line) {
                (Some(f), Some(l)) if same_file(f, path) => {
                    Some(cx.sources.to_current(f, l.zero_based()))
                }
                (None, _) => type_line(text, lang, name),
                _ => None,
            };
            (t.start, t.end, TokenType::Type, decl.map_or(0, decl_mod))
        };
        if t.prev == Prev::Module {
            out.push((t.start, t.end, TokenType::Namespace, DECLARATION));
            continue;
        }
        if t.prev == Prev::Tag {
            if let Some((e, _)) = types.first() {
                out.push(type_token(cx, e));
            }
            continue;
        }
        // Parameters and locals visible at the line (in the binary's line numbering).
        let built1 = cx.sources.to_built(path, line0) + 1;
        let mut local = None;
        for (si, sc) in scopes.iter_mut().enumerate() {
            if let Some(v) = sc.variable(built1, name) {
                local = Some((v, si));
                break;
            }
        }
        if let Some((v, si)) = local {
            let kind = if v.kind == VariableKind::Parameter {
                TokenType::Parameter
            } else {
                TokenType::Variable
            };
            let mut mods = v
                .decl_line
                .map(|l| cx.sources.to_current(path, l.zero_based()))
                .map_or(0, decl_mod);
            if is_const(&served[si].binary, v.ty) {
                mods |= READONLY;
            }
            out.push((t.start, t.end, kind, mods));
            continue;
        }
        // Members and enumerators on the lines of a type declared here.
        if let Some(b) = blocks
            .iter()
            .find(|b| (b.first..=b.last).contains(&line0) && b.members.contains(name))
        {
            let kind = if b.enumerators {
                TokenType::EnumMember
            } else {
                TokenType::Property
            };
            let first = find_word(text, line0, name).map(|w| w.0) == Some(t.start);
            out.push((t.start, t.end, kind, if first { DECLARATION } else { 0 }));
            continue;
        }
        if t.next == Next::Colon && members.contains(name) {
            out.push((t.start, t.end, TokenType::Property, 0));
            continue;
        }
        if let Some(list) = globals.get(name) {
            // The same file first; a call prefers a function, otherwise a variable or type.
            // A function outside the workspace (the standard library's) only when called.
            let roots = &cx.roots;
            let best = list
                .iter()
                .filter(|(e, _)| {
                    e.kind != SymbolKind::Function
                        || t.next == Next::Call
                        || e.decl_file.as_deref().is_some_and(|f| {
                            same_file(f, path) || roots.iter().any(|r| f.starts_with(r))
                        })
                })
                .min_by_key(|(e, _)| {
                    let other_file = !e.decl_file.as_deref().is_some_and(|f| same_file(f, path));
                    let kind_rank = match (e.kind, t.next) {
                        (SymbolKind::Function, Next::Call) => 0,
                        (SymbolKind::Function, _) => 1,
                        (_, Next::Call) => 1,
                        _ => 0,
                    };
                    (other_file, kind_rank)
                });
            if let Some((e, si)) = best {
                let here = e
                    .decl_file
                    .as_deref()
                    .filter(|f| same_file(f, path))
                    .zip(e.decl_line)
                    .map(|(f, l)| cx.sources.to_current(f, l.zero_based()));
                let token = match e.kind {
                    SymbolKind::Function | SymbolKind::Variable => {
                        let mods = match global_mods.get(name) {
                            Some(&m) => m,
                            None => {
                                let mut m = 0;
                                if declared_with(cx, e, "static") {
                                    m |= STATIC;
                                }
                                if e.kind == SymbolKind::Variable
                                    && global_variable(&served[*si], e)
                                        .is_some_and(|v| is_const(&served[*si].binary, v.ty))
                                {
                                    m |= READONLY;
                                }
                                global_mods.insert(name.to_owned(), m);
                                m
                            }
                        };
                        let kind = if e.kind == SymbolKind::Function {
                            TokenType::Function
                        } else {
                            TokenType::Variable
                        };
                        (t.start, t.end, kind, mods | here.map_or(0, decl_mod))
                    }
                    _ => type_token(cx, e),
                };
                out.push(token);
                continue;
            }
        }
        if enumerators.contains(name) {
            out.push((t.start, t.end, TokenType::EnumMember, 0));
            continue;
        }
        if t.next == Next::Path && modules.contains(name) {
            out.push((t.start, t.end, TokenType::Namespace, 0));
        }
    }
    Ok(out)
}

/// `textDocument/semanticTokens/full` (no `range`) and `/range`: the relative 5-integer
/// encoding, columns and lengths in the negotiated encoding.
pub fn semantic_tokens(
    cx: &mut Context,
    path: &Path,
    range: Option<(usize, usize)>,
    cancel: &CancelToken,
) -> Result<Value, ResponseError> {
    let Some(text) = cx.sources.text(path) else {
        return Ok(json!({ "data": [] }));
    };
    let tokens = classify(cx, path, &text, range, cancel)?;
    let enc = cx.encoding;
    let mut data: Vec<u32> = Vec::with_capacity(tokens.len() * 5);
    let (mut last_line, mut last_col) = (0u32, 0u32);
    for (start, end, kind, mods) in tokens {
        let s = pos(&text, start, enc);
        let e = pos(&text, end, enc);
        if e.line != s.line || e.column <= s.column {
            continue;
        }
        let delta_line = s.line - last_line;
        let delta_col = if delta_line == 0 {
            s.column - last_col
        } else {
            s.column
        };
        data.extend([
            delta_line,
            delta_col,
            e.column - s.column,
            kind as u32,
            mods,
        ]);
        (last_line, last_col) = (s.line, s.column);
    }
    Ok(json!({ "data": data }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str, lang: Lang) -> Vec<&str> {
        lex(text, lang)
            .into_iter()
            .map(|t| &text[t.start..t.end])
            .collect()
    }

    #[test]
    fn the_lexer_skips_comments_literals_and_keywords() {
        let c = "#include <stdio.h>\n#define X(a) \\\n  a\nint f(int a) { /* b */ // c\n  return g(\"d\\\"e\", 'f', L\"g\", 0x1fu) + s.m + p->n; }\n";
        assert_eq!(words(c, Lang::C), ["f", "a", "g", "s", "m", "p", "n"]);
        let kinds: Vec<(Prev, Next)> = lex(c, Lang::C).iter().map(|t| (t.prev, t.next)).collect();
        assert_eq!(kinds[0], (Prev::Other, Next::Call));
        assert_eq!(kinds[4], (Prev::Member, Next::Other));
        assert_eq!(kinds[6], (Prev::Member, Next::Other));
        let rust = "#[derive(Debug)]\nfn f<'a>(x: &'a str) -> char { /* /* nested */ x */ let c = 'z'; println!(\"{x}\"); m::g(r#\"q\"#, b'y', 1..n) }";
        assert_eq!(
            words(rust, Lang::Rust),
            ["f", "x", "c", "println", "m", "g", "n"]
        );
        let kinds: Vec<Next> = lex(rust, Lang::Rust).iter().map(|t| t.next).collect();
        assert_eq!(kinds[3], Next::Bang);
        assert_eq!(kinds[4], Next::Path);
        assert_eq!(
            words("struct s *p; enum e v;", Lang::C),
            ["s", "p", "e", "v"]
        );
        assert_eq!(lex("struct s *p;", Lang::C)[0].prev, Prev::Tag);
        assert_eq!(words("é漢 = 1;", Lang::Rust), ["é漢"]);
    }
}
