//! `workspace/symbol`: every indexed name ranked (exact, prefix, substring, fuzzy), the fuzzy
//! tier walked lazily in a precomputed order, results placed in their files.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use symbols::Line;
use wire::jsonrpc::ResponseError;

use super::context::{cancelled, entry_kind, object, selection_range, Context};
use crate::cancel::CancelToken;
use crate::names::{last_component, EntryId, NameId, NameIndex, NameMap};
use crate::sources::SourceText;
use crate::text::LineMap;
use crate::uri;
use crate::workspace::Served;

/// At most this many `workspace/symbol` results.
pub const MAX_WORKSPACE_SYMBOLS: usize = 256;

/// How well `entry` matches a lowercase query: 0 exact, 1 prefix, 2 substring, 3 fuzzy.
/// `name` is the lowercased qualified name (precomputed per binary: this runs per entry).
pub(super) fn rank(query: &str, name: &str) -> Option<u8> {
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
pub(super) fn is_subsequence(query: &str, name: &str) -> bool {
    if query.is_ascii() {
        is_byte_subsequence(query.as_bytes(), name.as_bytes())
    } else {
        let mut chars = name.chars();
        query.chars().all(|q| chars.any(|c| c == q))
    }
}

/// Whether the bytes of `query` appear in `name` in order: for an ASCII query, the same as
/// [`is_subsequence`] (an ASCII byte only ever stands for itself in UTF-8).
pub(super) fn is_byte_subsequence(query: &[u8], name: &[u8]) -> bool {
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
pub(super) struct ResultFiles {
    /// Per binary, per file of its names: the index in `files`.
    of: Vec<Vec<Option<usize>>>,
    by_path: HashMap<PathBuf, usize>,
    pub(super) files: Vec<ResultFile>,
}

/// What a result needs of its file.
pub(super) struct ResultFile {
    /// `None`: the editor could not open it.
    pub(super) text: Option<Arc<SourceText>>,
    /// How its lines moved in the open document.
    map: Option<Arc<LineMap>>,
    /// Its URI, made for the first result there.
    uri: Option<String>,
}

impl ResultFiles {
    /// For binaries with `counts[i]` declaration files each.
    pub(super) fn new(counts: impl Iterator<Item = usize>) -> Self {
        ResultFiles {
            of: counts.map(|n| vec![None; n]).collect(),
            by_path: HashMap::new(),
            files: Vec::new(),
        }
    }

    /// The index in `files` of file `file` of binary `si`, whose path is `path`.
    pub(super) fn get(&mut self, cx: &mut Context, si: usize, file: usize, path: &Path) -> usize {
        if let Some(f) = self.of[si][file] {
            return f;
        }
        let known = if self.of.len() > 1 {
            self.by_path.get(path).copied()
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
        self.of[si][file] = Some(f);
        f
    }
}

/// The `workspace/symbol` item of the symbol `name` (qualified) of LSP kind `kind`
/// declared on DWARF line `line` of `file` (at `path`), moved with the edits made since
/// the build; `None` when the editor could not open the file.
pub(super) fn symbol_item(
    file: &mut ResultFile,
    path: &Path,
    name: &str,
    kind: u32,
    line: Line,
    encoding: crate::text::PositionEncoding,
) -> Option<Value> {
    let text = file.text.as_ref()?;
    let moved = file
        .map
        .as_ref()
        .map_or(line.zero_based(), |m| m.to_current(line.zero_based()));
    let line0 = Line::from_zero_based(moved).zero_based();
    let short = last_component(name);
    let (_, range) = selection_range(Some(text), line0, short, encoding);
    let uri = file.uri.get_or_insert_with(|| uri::from_path(path)).clone();
    let location = object([("uri", uri.into()), ("range", range)]);
    let mut item = object([
        ("name", short.into()),
        ("kind", kind.into()),
        ("location", location),
    ]);
    if let (Some(container), Value::Object(fields)) = (
        name.strip_suffix(short).and_then(|p| p.strip_suffix("::")),
        &mut item,
    ) {
        fields.insert("containerName".into(), container.into());
    }
    Some(item)
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
    let mut files = ResultFiles::new(served.iter().map(|s| s.names.file_count()));
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
        let path = names.file(file);
        let f = files.get(cx, si, file.index(), path);
        // A location the editor cannot open is no use.
        if files.files[f].text.is_none() {
            continue;
        }
        if seen.insert((&*e.name, f, line, e.kind), ()).is_some() {
            continue;
        }
        let kind = entry_kind(&served[si], e);
        out.extend(symbol_item(
            &mut files.files[f],
            path,
            &e.name,
            kind,
            line,
            cx.encoding,
        ));
    }
    Ok(Value::Array(out))
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
}
