//! Language features answered from debug information: `workspace/symbol`,
//! `textDocument/documentSymbol`, `textDocument/definition` and `textDocument/hover`.
//!
//! Each runs on a worker over a [`Context`]: the binaries ready when the request arrived and a
//! copy of the open documents, so positions are computed against what the editor shows (files
//! that are not open are read from disk). DWARF gives lines; columns come from finding the
//! name on its declaration line.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use symbols::lines::normalize_path;
use symbols::{
    Binary, CompositeKind, Line, Member, SymbolEntry, SymbolKind, Type, TypeKind, TypeRef,
    Variable, VariableKind,
};
use wire::jsonrpc::{codes, ResponseError};

use crate::names::{last_component, EntryId, FileId, NameId, NameIndex, NameMap};
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

/// What a file on disk was when it was read: a file whose length, modification time or
/// inode changed since is read again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    inode: u64,
}

impl Stamp {
    fn of(path: &Path) -> Option<Stamp> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path).ok()?;
        Some(Stamp {
            len: meta.len(),
            modified: meta.modified().ok(),
            inode: meta.ino(),
        })
    }
}

/// Above this many bytes of text, the files read from disk are all dropped.
const MAX_DISK_TEXT_BYTES: usize = 64 << 20;

/// Source files read from disk and line maps of open documents, shared by the requests of a
/// workspace. A request checks a file's metadata the first time it uses the file and reads
/// it again when it changed, so a file saved since is never answered from an old copy.
#[derive(Default)]
pub struct DiskTexts {
    files: Mutex<DiskFiles>,
    /// Per open document: the file on disk and the buffer its line map was computed for.
    maps: Mutex<HashMap<PathBuf, CachedLineMap>>,
}

#[derive(Default)]
struct DiskFiles {
    /// By the path's bytes (hashing a `Path` walks its components).
    texts: HashMap<OsString, (Option<Stamp>, Option<Arc<SourceText>>)>,
    bytes: usize,
}

/// A line map and the two texts it maps between.
struct CachedLineMap {
    disk: Arc<SourceText>,
    current: Arc<str>,
    map: Option<Arc<LineMap>>,
}

impl DiskTexts {
    /// The text of `path` on disk, `None` when it cannot be read.
    pub fn get(&self, path: &Path) -> Option<Arc<SourceText>> {
        // Metadata first, then the contents: a change in between is seen by the next check.
        let stamp = Stamp::of(path);
        if let Some((known, text)) = self.files().texts.get(path.as_os_str()) {
            if *known == stamp {
                return text.clone();
            }
        }
        let text = stamp
            .and_then(|_| std::fs::read_to_string(path).ok())
            .map(|t| Arc::new(SourceText::new(Arc::from(t))));
        let mut files = self.files();
        if files.bytes > MAX_DISK_TEXT_BYTES {
            files.texts.clear();
            files.bytes = 0;
        }
        files.bytes += text.as_ref().map_or(0, |t| t.len());
        files
            .texts
            .insert(path.as_os_str().to_owned(), (stamp, text.clone()));
        text
    }

    fn files(&self) -> std::sync::MutexGuard<'_, DiskFiles> {
        self.files.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How the lines of `disk` moved in `current` (`None`: the same text), computed once per
    /// pair of texts.
    fn line_map(
        &self,
        path: &Path,
        disk: &Arc<SourceText>,
        current: &Arc<str>,
    ) -> Option<Arc<LineMap>> {
        let mut maps = self.maps.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = maps.get(path) {
            if Arc::ptr_eq(&c.disk, disk) && *c.current == **current {
                return c.map.clone();
            }
        }
        let map = (***disk != **current).then(|| Arc::new(LineMap::new(disk, current)));
        if maps.len() >= 64 {
            maps.clear();
        }
        maps.insert(
            path.to_path_buf(),
            CachedLineMap {
                disk: disk.clone(),
                current: current.clone(),
                map: map.clone(),
            },
        );
        map
    }
}

/// Source texts: open documents first, then files on disk (checked once per request).
pub struct Sources {
    open: HashMap<PathBuf, Arc<str>>,
    disk: Arc<DiskTexts>,
    /// By the path's bytes (hashing a `Path` walks its components).
    loaded: HashMap<OsString, Option<Arc<SourceText>>>,
    /// Line maps between the file on disk and the open document; `None`: the same lines.
    maps: RefCell<HashMap<PathBuf, Option<Arc<LineMap>>>>,
}

impl Sources {
    pub fn new(open: HashMap<PathBuf, Arc<str>>, disk: Arc<DiskTexts>) -> Sources {
        Sources {
            open,
            disk,
            loaded: HashMap::new(),
            maps: RefCell::new(HashMap::new()),
        }
    }

    /// How the lines of the file on disk (what the binary was built from, when it is not
    /// newer than the binary) moved in the open document.
    pub(crate) fn line_map(&self, path: &Path) -> Option<Arc<LineMap>> {
        let current = self.open.get(path)?;
        self.maps
            .borrow_mut()
            .entry(path.to_path_buf())
            .or_insert_with(|| {
                let disk = self.disk.get(path)?;
                self.disk.line_map(path, &disk, current)
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
        if let Some(known) = self.loaded.get(path.as_os_str()) {
            return known.clone();
        }
        let text = match self.open.get(path) {
            Some(t) => Some(Arc::new(SourceText::new(t.clone()))),
            None => self.disk.get(path),
        };
        self.loaded
            .insert(path.as_os_str().to_owned(), text.clone());
        text
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

/// Where `name` is on the 0-based line `line0` of `text`: its byte range, and its range
/// on the wire (the start of the line when it is not found there, or the text is unknown).
fn selection_range(
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
fn decl_ranges(
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
fn location(cx: &mut Context, file: &Path, line: Line, name: &str) -> Value {
    let line = Line::from_zero_based(cx.sources.to_current(file, line.zero_based()));
    location_current(cx, file, line, name)
}

/// The location of `name` on line `line` of the current text of `file`.
fn location_current(cx: &mut Context, file: &Path, line: Line, name: &str) -> Value {
    let (_, selection) = decl_ranges(cx, file, line, name, false);
    object([("uri", uri::from_path(file).into()), ("range", selection)])
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
        SymbolKind::Type => served
            .facts
            .type_kind(&e.name, || type_symbol_kind(&served.binary, &e.name)),
        _ => SK_VARIABLE,
    }
}

/// How well `entry` matches a lowercase query: 0 exact, 1 prefix, 2 substring, 3 fuzzy.
/// `name` is the lowercased qualified name (precomputed per binary: this runs per entry).
fn rank(query: &str, name: &str) -> Option<u8> {
    if query.is_empty() {
        return Some(0);
    }
    let short = last_component(name);
    if short == query || name == query {
        Some(0)
    } else if short.starts_with(query) || name.starts_with(query) {
        Some(1)
    } else if name.contains(query) {
        Some(2)
    } else {
        is_subsequence(query, name).then_some(3)
    }
}

/// Whether the characters of `query` appear in `name` in order.
fn is_subsequence(query: &str, name: &str) -> bool {
    if query.is_ascii() {
        is_byte_subsequence(query.as_bytes(), name.as_bytes())
    } else {
        let mut chars = name.chars();
        query.chars().all(|q| chars.any(|c| c == q))
    }
}

/// Whether the bytes of `query` appear in `name` in order: for an ASCII query, the same as
/// [`is_subsequence`] (an ASCII byte only ever stands for itself in UTF-8).
fn is_byte_subsequence(query: &[u8], name: &[u8]) -> bool {
    let mut rest = name;
    query.iter().all(|&q| match memchr::memchr(q, rest) {
        Some(i) => {
            rest = &rest[i + 1..];
            true
        }
        None => false,
    })
}

/// An entry that matched a `workspace/symbol` query.
struct Hit {
    tier: u8,
    /// Which binary (index into `Context::served`).
    served: usize,
    entry: EntryId,
    /// Where the entry is in its binary's ranking, when that is built.
    position: Option<u32>,
}

/// The order of results within a tier: symbols under a root first, then shorter names, then
/// by name, then where they are declared, then by binary and position in its index.
fn rank_order(
    served: &[Arc<Served>],
    a: (usize, EntryId),
    b: (usize, EntryId),
) -> std::cmp::Ordering {
    let ka = (served[a.0].names.rank_key(a.1), a);
    let kb = (served[b.0].names.rank_key(b.1), b);
    ka.cmp(&kb)
}

/// Which names of a request's binaries can be passed over: every declaration of theirs is
/// under a directory that was missing when the binary was indexed and is still missing now
/// (looked at once per request), so the editor could open none of them.
struct Unopenable {
    /// Per binary, per missing directory: still missing (`None`: not looked at yet).
    roots: Vec<Vec<Option<bool>>>,
}

impl Unopenable {
    fn new(served: &[Arc<Served>]) -> Self {
        Unopenable {
            roots: vec![Vec::new(); served.len()],
        }
    }

    /// Whether no declaration of name `n` of binary `si` can be opened.
    fn name(&mut self, names: &NameIndex, si: usize, n: NameId) -> bool {
        let Some((r, dir)) = names.absent_root(n) else {
            return false;
        };
        let roots = &mut self.roots[si];
        if roots.len() <= r as usize {
            roots.resize(names.absent_root_count().max(r as usize + 1), None);
        }
        *roots[r as usize].get_or_insert_with(|| {
            std::fs::metadata(dir).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        })
    }
}

/// The fuzzy matches of a query (tier 3: its characters in order, not as a substring), or
/// every entry for an empty query, in ranking order: each binary's entries are walked in
/// its precomputed order, a run of one name at a time, and the binaries merged, so a query
/// stops looking once the answer is full.
struct FuzzyMatches<'a> {
    served: &'a [Arc<Served>],
    query: &'a str,
    mask: u64,
    walks: Vec<Walk>,
    unopenable: Unopenable,
    steps: usize,
}

/// Where the walk through one binary's ranking is.
struct Walk {
    /// The current run, and the next entry in it.
    run: usize,
    offset: u32,
    /// What is known of each name (`NAME_*`).
    names: Vec<u8>,
}

const NAME_UNKNOWN: u8 = 0;
const NAME_SKIPPED: u8 = 1;
const NAME_MATCHES: u8 = 2;

impl<'a> FuzzyMatches<'a> {
    /// `substring[i]` lists the names of binary `i` already ranked as substring matches.
    fn new(
        served: &'a [Arc<Served>],
        query: &'a str,
        substring: Vec<Vec<NameId>>,
        unopenable: Unopenable,
    ) -> Self {
        let walks = served
            .iter()
            .zip(substring)
            .map(|(s, found)| {
                let mut names = vec![NAME_UNKNOWN; s.names.name_count()];
                for n in found {
                    names[n.index()] = NAME_SKIPPED;
                }
                Walk {
                    run: 0,
                    offset: 0,
                    names,
                }
            })
            .collect();
        FuzzyMatches {
            served,
            query,
            mask: crate::names::byte_mask(query.as_bytes()),
            walks,
            unopenable,
            steps: 0,
        }
    }

    /// Whether name `n` of `names` is a fuzzy match.
    fn matches(&self, names: &NameIndex, n: NameId) -> bool {
        if self.query.is_empty() {
            return true;
        }
        if names.mask(n) & self.mask != self.mask {
            return false;
        }
        if self.query.is_ascii() {
            is_byte_subsequence(self.query.as_bytes(), names.name_bytes(n))
        } else {
            is_subsequence(self.query, names.name(n))
        }
    }

    /// The next entry of binary `si` that matches, without consuming it.
    fn peek(&mut self, si: usize, cancel: &CancelToken) -> Result<Option<EntryId>, ResponseError> {
        let names = &self.served[si].names;
        let (order, runs) = (names.ranked_order(), names.ranked_runs());
        loop {
            let Some(run) = runs.get(self.walks[si].run) else {
                return Ok(None);
            };
            self.steps += 1;
            if self.steps.is_multiple_of(4096) && cancel.is_cancelled() {
                return Err(cancelled());
            }
            let n = run.name;
            if self.walks[si].names[n.index()] == NAME_UNKNOWN {
                // Names the editor could open no declaration of would be dropped from the
                // answer: not worth matching.
                let state = if !self.unopenable.name(names, si, n) && self.matches(names, n) {
                    NAME_MATCHES
                } else {
                    NAME_SKIPPED
                };
                self.walks[si].names[n.index()] = state;
            }
            let walk = &mut self.walks[si];
            if walk.names[n.index()] == NAME_MATCHES && walk.offset < run.len {
                return Ok(order.get((run.start + walk.offset) as usize).copied());
            }
            walk.run += 1;
            walk.offset = 0;
        }
    }

    /// The next match over all binaries, in ranking order.
    fn next(&mut self, cancel: &CancelToken) -> Result<Option<(usize, EntryId)>, ResponseError> {
        let mut best: Option<(usize, EntryId)> = None;
        for si in 0..self.served.len() {
            let Some(e) = self.peek(si, cancel)? else {
                continue;
            };
            if best.is_none_or(|b| rank_order(self.served, (si, e), b).is_lt()) {
                best = Some((si, e));
            }
        }
        if let Some((si, _)) = best {
            self.walks[si].offset += 1;
        }
        Ok(best)
    }
}

/// The declaration files of one answer's symbols, each looked at once (equal paths of
/// different binaries are one file).
struct ResultFiles {
    /// Per binary, per file of its names: the index in `files`.
    of: Vec<Vec<Option<usize>>>,
    by_path: HashMap<PathBuf, usize>,
    files: Vec<ResultFile>,
}

/// What a result needs of its file.
struct ResultFile {
    /// `None`: the editor could not open it.
    text: Option<Arc<SourceText>>,
    /// How its lines moved in the open document.
    map: Option<Arc<LineMap>>,
    /// Its URI, made for the first result there.
    uri: Option<String>,
}

impl ResultFiles {
    fn new(served: &[Arc<Served>]) -> Self {
        ResultFiles {
            of: served
                .iter()
                .map(|s| vec![None; s.names.file_count()])
                .collect(),
            by_path: HashMap::new(),
            files: Vec::new(),
        }
    }

    /// The index in `files` of file `file` of binary `si`.
    fn get(&mut self, cx: &mut Context, si: usize, file: FileId) -> usize {
        if let Some(f) = self.of[si][file.index()] {
            return f;
        }
        let path = cx.served[si].names.file(file);
        let known = if self.of.len() > 1 {
            self.by_path.get(&**path).copied()
        } else {
            None // One binary's files are distinct already.
        };
        let f = known.unwrap_or_else(|| {
            self.files.push(ResultFile {
                text: cx.sources.text(path),
                map: cx.sources.line_map(path),
                uri: None,
            });
            if self.of.len() > 1 {
                self.by_path
                    .insert(path.to_path_buf(), self.files.len() - 1);
            }
            self.files.len() - 1
        });
        self.of[si][file.index()] = Some(f);
        f
    }
}

/// `workspace/symbol`: ranked exact > prefix > substring > fuzzy, then symbols declared under
/// a workspace root, then shorter names, then by name and declaration; capped at
/// [`MAX_WORKSPACE_SYMBOLS`]. Fuzzy matches are looked for only when the others are too few
/// to fill the answer.
pub fn workspace_symbol(
    cx: &mut Context,
    query: &str,
    cancel: &CancelToken,
) -> Result<Value, ResponseError> {
    let q = query.trim().to_lowercase();
    if q.contains('\n') {
        return Ok(Value::Array(Vec::new())); // No name holds a newline.
    }
    // Exact, prefix and substring matches all contain the query: find its occurrences in
    // the haystack of every distinct name at memory speed, and rank only those names.
    let mut hits: Vec<Hit> = Vec::new();
    let mut substring: Vec<Vec<NameId>> = vec![Vec::new(); cx.served.len()];
    if !q.is_empty() {
        let finder = memchr::memmem::Finder::new(q.as_bytes());
        for (si, served) in cx.served.iter().enumerate() {
            let names = &served.names;
            let mut last = None;
            for pos in finder.find_iter(names.haystack().as_bytes()) {
                let n = names.name_at(pos);
                if last == Some(n) {
                    continue;
                }
                last = Some(n);
                substring[si].push(n);
                if substring[si].len().is_multiple_of(4096) && cancel.is_cancelled() {
                    return Err(cancelled());
                }
                let Some(tier) = rank(&q, names.name(n)) else {
                    continue;
                };
                hits.extend(names.members(n).iter().map(|&entry| Hit {
                    tier,
                    served: si,
                    entry,
                    position: names.ranked_position(entry),
                }));
            }
        }
    }
    let served = cx.served.clone();
    // Whether fuzzy matches are needed counts every substring match, also those that are
    // dropped below for the editor could not open them.
    let want_fuzzy = q.is_empty() || hits.len() < MAX_WORKSPACE_SYMBOLS;
    let mut unopenable = Unopenable::new(&served);
    hits.retain(|h| {
        let names = &served[h.served].names;
        names
            .name_of(h.entry)
            .is_none_or(|n| !unopenable.name(names, h.served, n))
    });
    hits.sort_unstable_by(|a, b| {
        a.tier
            .cmp(&b.tier)
            .then_with(|| match (a.position, b.position) {
                (Some(pa), Some(pb)) if a.served == b.served => pa.cmp(&pb),
                _ => rank_order(&served, (a.served, a.entry), (b.served, b.entry)),
            })
    });
    let mut fuzzy = want_fuzzy.then(|| FuzzyMatches::new(&served, &q, substring, unopenable));
    let mut ranked = hits.into_iter().map(|h| (h.served, h.entry));
    let mut files = ResultFiles::new(&served);
    // Duplicates (one entry per unit that declares it) are dropped here, among the few
    // results kept, not among every match.
    let mut seen: NameMap<_, ()> = NameMap::default();
    let mut out = Vec::new();
    while out.len() < MAX_WORKSPACE_SYMBOLS {
        let next = match ranked.next() {
            Some(hit) => Some(hit),
            None => match fuzzy.as_mut() {
                Some(f) => f.next(cancel)?,
                None => None,
            },
        };
        let Some((si, entry)) = next else { break };
        if cancel.is_cancelled() {
            return Err(cancelled());
        }
        let names = &served[si].names;
        let e = names.entry(entry);
        let (Some(file), Some(line)) = (names.file_of(entry), e.decl_line) else {
            continue;
        };
        let f = files.get(cx, si, file);
        // A location the editor cannot open is no use.
        let Some(text) = &files.files[f].text else {
            continue;
        };
        if seen.insert((&*e.name, f, line, e.kind), ()).is_some() {
            continue;
        }
        let moved = files.files[f]
            .map
            .as_ref()
            .map_or(line.zero_based(), |m| m.to_current(line.zero_based()));
        let line0 = Line::from_zero_based(moved).zero_based();
        let short = e.short_name();
        let (_, range) = selection_range(Some(text), line0, short, cx.encoding);
        let uri = files.files[f]
            .uri
            .get_or_insert_with(|| uri::from_path(names.file(file)))
            .clone();
        let location = object([("uri", uri.into()), ("range", range)]);
        let mut item = object([
            ("name", short.into()),
            ("kind", entry_kind(&served[si], e).into()),
            ("location", location),
        ]);
        if let (Some(container), Value::Object(fields)) = (
            e.name
                .strip_suffix(short)
                .and_then(|p| p.strip_suffix("::")),
            &mut item,
        ) {
            fields.insert("containerName".into(), container.into());
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
        if let Some(v) = variable_at(served, path, line1, name) {
            return Some((v.ty?, served.clone()));
        }
    }
    for served in &cx.served {
        for e in served.names.lookup(name) {
            if e.kind == SymbolKind::Variable {
                if let Some(t) = global_variable(served, e).and_then(|v| v.ty) {
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
    let path = normalize_path(path);
    for same in [true, false] {
        for served in &cx.served {
            let enums = served
                .names
                .types()
                .iter()
                .filter(|(_, file)| (**file == *path) == same);
            // Each check reads a type; bound the work for binaries with many types.
            for (e, _) in enums.take(if same { 4096 } else { 256 }) {
                let e = served.names.entry(*e);
                let Some(enumerators) = served.facts.enumerators(&served.binary, &e.name) else {
                    continue;
                };
                if let Some((_, v)) = enumerators.iter().find(|(n, _)| n == ident) {
                    return Some((e.clone(), *v, served.clone()));
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
        .names
        .lookup(name)
        .find(|e| e.kind == SymbolKind::Type && e.decl_line.is_some() && e.short_name() == name)
        .cloned()
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
    let mut best: Option<((bool, u8), SymbolEntry, Arc<Served>)> = None;
    for served in &cx.served {
        for e in served.names.lookup(&ident) {
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
                best = Some((key, e.clone(), served.clone()));
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
        .names
        .entries()
        .iter()
        .filter(|f| f.kind == SymbolKind::Function && f.decl_file.as_ref() == Some(file))
        .filter_map(|f| f.range.as_ref().map(|r| r.start))
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
