//! `workspace/symbol` answered from the binaries' symbol tables (`symbols::SymbolTable`:
//! the on-disk index cache file's, mapped, never copied, or one built in memory without a
//! cache): every query searches the haystack of names at memory speed.
//!
//! The answer ranks by tier (exact, prefix, substring, fuzzy), then within a tier symbols
//! under a root first, then by name length, name, file, line (the order the table stores
//! symbols in), duplicates dropped, capped. crates/lsp/tests/workspace_symbol.rs compares
//! it with a plain ranking of the full index's entries; tests/lsp_index_cache.rs the
//! answers of servers with and without a cache file.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use symbols::{Line, SymbolKind, SymbolTable};
use wire::jsonrpc::ResponseError;

use super::context::{cancelled, type_form_kind, Context, SK_FUNCTION, SK_STRUCT, SK_VARIABLE};
use super::workspace_symbols::{
    is_byte_subsequence, is_subsequence, rank, symbol_item, ResultFiles, MAX_WORKSPACE_SYMBOLS,
};
use crate::cancel::CancelToken;
use crate::names::{byte_mask, NameMap};

/// One binary's cached symbol table, with what the workspace's roots make of its files.
pub struct CachedNames {
    /// The binary.
    pub path: PathBuf,
    table: SymbolTable,
    /// Per file of the table: declared outside every workspace root.
    outside: Vec<bool>,
    /// For a table listing only the ELF symbol table's functions (a partial answer while
    /// the full index is built), not an index cache file's symbols: from when it may
    /// answer.
    partial: Option<std::time::Instant>,
}

impl CachedNames {
    /// The table of the binary at `path`, for a workspace with root folders `roots`.
    pub fn new(path: &Path, table: SymbolTable, roots: &[PathBuf]) -> CachedNames {
        let outside = (0..table.file_count())
            .map(|f| {
                table
                    .file(f)
                    .is_none_or(|p| !roots.iter().any(|r| p.starts_with(r)))
            })
            .collect();
        CachedNames {
            path: path.to_path_buf(),
            table,
            outside,
            partial: None,
        }
    }

    /// The table of the binary's ELF functions (`symbols::Binary::elf_symbol_table`),
    /// which answers from `answers_from` on.
    pub fn partial(
        path: &Path,
        table: SymbolTable,
        roots: &[PathBuf],
        answers_from: std::time::Instant,
    ) -> CachedNames {
        CachedNames {
            partial: Some(answers_from),
            ..CachedNames::new(path, table, roots)
        }
    }

    /// Whether this is a partial table of ELF functions.
    pub fn is_partial(&self) -> bool {
        self.partial.is_some()
    }

    /// When a partial table may answer.
    pub fn answers_from(&self) -> Option<std::time::Instant> {
        self.partial
    }

    /// The mapped table.
    pub fn table(&self) -> &SymbolTable {
        &self.table
    }

    fn outside(&self, sym: usize) -> bool {
        self.table
            .symbol(sym)
            .is_none_or(|s| self.outside.get(s.file).copied().unwrap_or(true))
    }

    /// What `workspace/symbol` orders one tier's symbols of different binaries by.
    fn rank_key(&self, sym: usize) -> (bool, usize, &str, Option<&[u8]>, Option<Line>) {
        use std::os::unix::ffi::OsStrExt;
        let s = self.table.symbol(sym);
        let name = s.and_then(|s| self.table.name(s.name)).unwrap_or_default();
        (
            self.outside(sym),
            name.len(),
            name,
            s.and_then(|s| self.table.file(s.file))
                .map(|p| p.as_os_str().as_bytes()),
            s.and_then(|s| s.line),
        )
    }
}

/// The order of two symbols within a tier: by position in one table (its order is the
/// ranking's, after the root split), by rank key across tables.
fn order(tables: &[Arc<CachedNames>], a: (usize, usize), b: (usize, usize)) -> std::cmp::Ordering {
    if a.0 == b.0 {
        let t = &tables[a.0];
        return (t.outside(a.1), a.1).cmp(&(t.outside(b.1), b.1));
    }
    (tables[a.0].rank_key(a.1), a).cmp(&(tables[b.0].rank_key(b.1), b))
}

const UNKNOWN: u8 = 0;
const SKIPPED: u8 = 1;
const MATCHES: u8 = 2;

/// Where the fuzzy walk through one table is: symbols under a root first (pass 0), then
/// the others (pass 1), each pass in the table's order, which is by name first: a name
/// that does not match passes over all its symbols at once.
struct Walk {
    pass: u8,
    /// The current name, and the next of its symbols to look at.
    name: usize,
    next: usize,
    /// What is known of each name.
    names: Vec<u8>,
}

/// The fuzzy matches of a query over the tables, in ranking order.
struct Fuzzy<'a> {
    tables: &'a [Arc<CachedNames>],
    query: &'a str,
    mask: u64,
    walks: Vec<Walk>,
    steps: usize,
}

impl<'a> Fuzzy<'a> {
    fn new(tables: &'a [Arc<CachedNames>], query: &'a str, substring: &[Vec<usize>]) -> Self {
        let walks = tables
            .iter()
            .zip(substring)
            .map(|(t, found)| {
                let mut names = vec![UNKNOWN; t.table.name_count()];
                for &n in found {
                    names[n] = SKIPPED;
                }
                Walk {
                    // With no file under a root, the first pass would find nothing.
                    pass: if t.outside.contains(&false) { 0 } else { 1 },
                    name: 0,
                    next: t.table.members(0).start,
                    names,
                }
            })
            .collect();
        Fuzzy {
            tables,
            query,
            mask: byte_mask(query.as_bytes()),
            walks,
            steps: 0,
        }
    }

    fn matches(&self, table: &SymbolTable, n: usize) -> bool {
        if self.query.is_empty() {
            return true;
        }
        if table.mask(n) & self.mask != self.mask {
            return false;
        }
        let lower = table.lower_name(n);
        if self.query.is_ascii() {
            is_byte_subsequence(self.query.as_bytes(), lower)
        } else {
            std::str::from_utf8(lower).is_ok_and(|l| is_subsequence(self.query, l))
        }
    }

    /// The next symbol of table `ti` that matches, without consuming it.
    fn peek(&mut self, ti: usize, cancel: &CancelToken) -> Result<Option<usize>, ResponseError> {
        let t = &self.tables[ti];
        let names = t.table.name_count();
        loop {
            let (pass, n) = (self.walks[ti].pass, self.walks[ti].name);
            if pass > 1 {
                return Ok(None);
            }
            if n >= names {
                let walk = &mut self.walks[ti];
                walk.pass += 1;
                walk.name = 0;
                walk.next = t.table.members(0).start;
                continue;
            }
            self.steps += 1;
            if self.steps.is_multiple_of(4096) && cancel.is_cancelled() {
                return Err(cancelled());
            }
            if self.walks[ti].names[n] == UNKNOWN {
                let state = if self.matches(&t.table, n) {
                    MATCHES
                } else {
                    SKIPPED
                };
                self.walks[ti].names[n] = state;
            }
            if self.walks[ti].names[n] == MATCHES {
                let members = t.table.members(n);
                let from = self.walks[ti].next.max(members.start);
                if let Some(sym) = (from..members.end).find(|&sym| t.outside(sym) == (pass == 1)) {
                    self.walks[ti].next = sym;
                    return Ok(Some(sym));
                }
            }
            let walk = &mut self.walks[ti];
            walk.name += 1;
            walk.next = t.table.members(walk.name).start;
        }
    }

    fn next(&mut self, cancel: &CancelToken) -> Result<Option<(usize, usize)>, ResponseError> {
        let mut best: Option<(usize, usize)> = None;
        for ti in 0..self.tables.len() {
            let Some(sym) = self.peek(ti, cancel)? else {
                continue;
            };
            if best.is_none_or(|b| order(self.tables, (ti, sym), b).is_lt()) {
                best = Some((ti, sym));
            }
        }
        if let Some((ti, _)) = best {
            self.walks[ti].next += 1;
        }
        Ok(best)
    }
}

/// Haystacks larger than this are searched in two halves at once.
const SPLIT_HAYSTACK: usize = 8 << 20;

/// The names of `table` whose lowercased text contains `finder`'s needle, in name
/// order, each once. The scan is most of a query's time on a big program (ceph-osd:
/// 2.3 million symbols, 15-20 ms a query on one core): a big haystack is searched in
/// two halves at once, split at a line's end so no match spans them.
fn names_containing(
    table: &SymbolTable,
    finder: &memchr::memmem::Finder<'_>,
    cancel: &CancelToken,
) -> Result<Vec<usize>, ResponseError> {
    let hay = table.haystack();
    // Each hit skips the rest of its name's line: one entry per name.
    let scan = |from: usize, to: usize| -> Option<Vec<usize>> {
        let mut found = Vec::new();
        let mut at = from;
        while let Some(i) = finder.find(&hay[at..to]) {
            let n = table.name_at(at + i);
            found.push(n);
            if found.len().is_multiple_of(4096) && cancel.is_cancelled() {
                return None;
            }
            let line = table.lower_name(n);
            let end = (line.as_ptr() as usize)
                .checked_sub(hay.as_ptr() as usize)
                .filter(|_| !line.is_empty())
                .map_or(0, |start| start + line.len() + 1);
            at = end.max(at + i + 1).min(to);
        }
        Some(found)
    };
    let mid = match hay.get(hay.len() / 2..) {
        Some(rest) if hay.len() > SPLIT_HAYSTACK => {
            memchr::memchr(b'\n', rest).map(|i| hay.len() / 2 + i + 1)
        }
        _ => None,
    };
    let found = match mid {
        Some(mid) => std::thread::scope(|s| {
            let second = s.spawn(|| scan(mid, hay.len()));
            let first = scan(0, mid);
            match (first, second.join().ok().flatten()) {
                (Some(mut a), Some(b)) => {
                    a.extend(b);
                    Some(a)
                }
                _ => None,
            }
        }),
        None => scan(0, hay.len()),
    };
    found.ok_or_else(cancelled)
}

/// `workspace/symbol` over the symbol tables of the context's binaries.
pub fn workspace_symbol(
    cx: &mut Context,
    query: &str,
    cancel: &CancelToken,
) -> Result<Value, ResponseError> {
    let tables: Vec<Arc<CachedNames>> = cx.served.iter().filter_map(|s| s.cached_names()).collect();
    workspace_symbol_cached(cx, &tables, query, cancel)
}

/// `workspace/symbol` over symbol tables (the binaries' own, or partial tables of ELF
/// functions while a binary is indexed).
pub fn workspace_symbol_cached(
    cx: &mut Context,
    tables: &[Arc<CachedNames>],
    query: &str,
    cancel: &CancelToken,
) -> Result<Value, ResponseError> {
    // Most answers are made of the first candidates of each tier: a few times the cap
    // are kept per tier, and only when dropped candidates (no readable file, duplicates)
    // leave the answer short is it searched again keeping all.
    let q = query.trim().to_lowercase();
    if q.contains('\n') {
        return Ok(Value::Array(Vec::new()));
    }
    // The names holding the query, per table: found once for both searches.
    let mut substring: Vec<Vec<usize>> = vec![Vec::new(); tables.len()];
    if !q.is_empty() {
        let finder = memchr::memmem::Finder::new(q.as_bytes());
        for (found, t) in substring.iter_mut().zip(tables) {
            *found = names_containing(&t.table, &finder, cancel)?;
        }
    }
    let (answer, whole) = search(
        cx,
        tables,
        &q,
        &substring,
        cancel,
        Some(4 * MAX_WORKSPACE_SYMBOLS),
    )?;
    if whole {
        return Ok(answer);
    }
    Ok(search(cx, tables, &q, &substring, cancel, None)?.0)
}

/// The answer keeping at most `keep` candidates per tier (of one table), and whether it
/// is the answer keeping all of them.
fn search(
    cx: &mut Context,
    tables: &[Arc<CachedNames>],
    q: &str,
    substring: &[Vec<usize>],
    cancel: &CancelToken,
    keep: Option<usize>,
) -> Result<(Value, bool), ResponseError> {
    // Per (tier, outside) bucket of a single table: its candidates; whether some were
    // left out.
    let single = tables.len() == 1;
    let mut files = ResultFiles::new(tables.iter().map(|t| t.table.file_count()));
    let mut buckets: [Vec<(u8, usize, usize)>; 8] = Default::default();
    let mut cut = [false; 8];
    // The (name, file, line, kind) of the candidates kept so far (one table).
    let mut kept: std::collections::HashSet<(usize, usize, Option<Line>, SymbolKind)> =
        std::collections::HashSet::new();
    // They still count as candidates: whether fuzzy matches follow is decided as when
    // every candidate is kept (the second search's answer).
    let mut duplicates = 0usize;
    // (tier, table, symbol)
    let mut hits: Vec<(u8, usize, usize)> = Vec::new();
    if !q.is_empty() {
        for (ti, t) in tables.iter().enumerate() {
            let table = &t.table;
            for (k, &n) in substring[ti].iter().enumerate() {
                if k % 4096 == 4095 && cancel.is_cancelled() {
                    return Err(cancelled());
                }
                let Ok(lower) = std::str::from_utf8(table.lower_name(n)) else {
                    continue;
                };
                let Some(tier) = rank(q, lower) else {
                    continue;
                };
                if !single {
                    hits.extend(table.members(n).map(|sym| (tier, ti, sym)));
                    continue;
                }
                // The haystack is in name order and each name's symbols follow one
                // another in the table's order, so the hits come in table order: bucketed
                // by (tier, outside), that order is kept, and nothing is sorted (a query
                // as common as `vector` matches hundreds of thousands of symbols of a big
                // C++ program).
                let b = usize::from(tier.min(3)) * 2;
                let full = |v: &Vec<_>| keep.is_some_and(|k| v.len() >= k);
                if full(&buckets[b]) && full(&buckets[b + 1]) {
                    cut[b] = true;
                    cut[b + 1] = true;
                    continue;
                }
                for sym in table.members(n) {
                    let i = b + usize::from(t.outside(sym));
                    if full(&buckets[i]) {
                        cut[i] = true;
                        continue;
                    }
                    // A symbol whose file cannot be read, or without a line, is never
                    // listed: it does not take a kept candidate's place.
                    if keep.is_some() {
                        let Some(s) = table.symbol(sym).filter(|s| s.line.is_some()) else {
                            continue;
                        };
                        let Some(path) = table.file(s.file) else {
                            continue;
                        };
                        let f = files.get(cx, ti, s.file, path);
                        if files.files[f].text.is_none() {
                            continue;
                        }
                        // Nor does one the answer would drop as a duplicate (a template's
                        // instances declared at one line): both fall in this bucket, and
                        // the first one is the one listed.
                        if !kept.insert((s.name, s.file, s.line, s.kind)) {
                            duplicates += 1;
                            continue;
                        }
                    }
                    buckets[i].push((tier, ti, sym));
                }
            }
        }
    }
    // How many of the ranked candidates stand for all: those up to the end of the first
    // bucket with candidates left out.
    let mut sound = usize::MAX;
    if single {
        let mut end = 0;
        for (bucket, cut) in buckets.iter().zip(cut) {
            end += bucket.len();
            if cut {
                sound = end;
                break;
            }
        }
        hits = buckets.into_iter().flatten().collect();
    }
    let truncated = sound != usize::MAX;
    let want_fuzzy =
        q.is_empty() || (hits.len() + duplicates < MAX_WORKSPACE_SYMBOLS && !truncated);
    if !single {
        hits.sort_unstable_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| order(tables, (a.1, a.2), (b.1, b.2)))
        });
    }
    let mut fuzzy = want_fuzzy.then(|| Fuzzy::new(tables, q, substring));
    let mut ranked = hits.into_iter().map(|(_, ti, sym)| (ti, sym));
    let mut taken = 0usize;
    let mut seen: NameMap<(&str, usize, Line, SymbolKind), ()> = NameMap::default();
    let mut out = Vec::new();
    while out.len() < MAX_WORKSPACE_SYMBOLS {
        let next = match ranked.next() {
            Some(hit) => {
                taken += 1;
                Some(hit)
            }
            None => match fuzzy.as_mut() {
                Some(f) => f.next(cancel)?,
                None => None,
            },
        };
        let Some((ti, sym)) = next else { break };
        if cancel.is_cancelled() {
            return Err(cancelled());
        }
        let table = &tables[ti].table;
        let Some(s) = table.symbol(sym) else { continue };
        // Listed only at a line (a Rust type has none).
        let Some(line) = s.line else { continue };
        let (Some(name), Some(path)) = (table.name(s.name), table.file(s.file)) else {
            continue;
        };
        let f = files.get(cx, ti, s.file, path);
        if files.files[f].text.is_none() {
            continue;
        }
        if seen.insert((name, f, line, s.kind), ()).is_some() {
            continue;
        }
        let kind = match s.kind {
            SymbolKind::Function => SK_FUNCTION,
            SymbolKind::Type => s.form.map_or(SK_STRUCT, type_form_kind),
            _ => SK_VARIABLE,
        };
        out.extend(symbol_item(
            &mut files.files[f],
            path,
            name,
            kind,
            line,
            cx.encoding,
        ));
    }
    let whole = !truncated || (out.len() >= MAX_WORKSPACE_SYMBOLS && taken <= sound);
    Ok((Value::Array(out), whole))
}
