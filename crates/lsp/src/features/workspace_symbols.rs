//! `workspace/symbol`'s ranking (exact, prefix, substring, fuzzy) and its results placed in
//! their files; the search itself is `cached_symbols.rs`, over the binaries' symbol tables.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use symbols::Line;

use super::context::{object, selection_range, Context};
use crate::names::last_component;
use crate::sources::SourceText;
use crate::text::LineMap;
use crate::uri;

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
