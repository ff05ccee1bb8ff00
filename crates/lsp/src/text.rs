//! Positions in the negotiated encoding and the store of open documents.
//!
//! LSP positions are (0-based line, column in code units of the negotiated encoding). The store
//! keeps UTF-8 text; positions are converted at this edge. Lines end at `\n`, `\r\n` or `\r`, as
//! the specification says. A column past the end of its line is clamped to the line's end (the
//! specification's rule); a line past the end of the document, a column inside a multi-unit
//! character, or a range whose end precedes its start is refused, and a refused change leaves
//! the document exactly as it was.

use std::collections::HashMap;

/// How columns count: the encoding negotiated in `initialize`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PositionEncoding {
    Utf8,
    Utf16,
    Utf32,
}

impl PositionEncoding {
    /// The wire name (`"utf-8"`, `"utf-16"`, `"utf-32"`).
    pub fn as_str(self) -> &'static str {
        match self {
            PositionEncoding::Utf8 => "utf-8",
            PositionEncoding::Utf16 => "utf-16",
            PositionEncoding::Utf32 => "utf-32",
        }
    }

    /// Picks from the client's offer: utf-8 first, then utf-16, then utf-32; utf-16 when the
    /// client offers nothing we know, as the specification makes utf-16 mandatory.
    pub fn negotiate<'a>(offered: impl IntoIterator<Item = &'a str>) -> PositionEncoding {
        let offered: Vec<&str> = offered.into_iter().collect();
        [
            PositionEncoding::Utf8,
            PositionEncoding::Utf16,
            PositionEncoding::Utf32,
        ]
        .into_iter()
        .find(|e| offered.contains(&e.as_str()))
        .unwrap_or(PositionEncoding::Utf16)
    }

    fn units(self, c: char) -> u32 {
        match self {
            PositionEncoding::Utf8 => c.len_utf8() as u32,
            PositionEncoding::Utf16 => c.len_utf16() as u32,
            PositionEncoding::Utf32 => 1,
        }
    }
}

/// A position as the client sends it: 0-based line, column in the negotiated code units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WirePosition {
    pub line: u32,
    pub column: u32,
}

/// Why an edit was refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EditError {
    #[error("line {line} is past the end of the document ({lines} lines)")]
    LineOutOfRange { line: u32, lines: usize },
    #[error("column {column} on line {line} falls inside a character")]
    InsideCharacter { line: u32, column: u32 },
    #[error("range end precedes its start")]
    ReversedRange,
    #[error("document {0} is not open")]
    NotOpen(String),
}

/// Byte offsets where each line starts, and where each line's content ends (before its EOL).
pub(crate) fn line_bounds(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut bounds = Vec::with_capacity(memchr::memchr_iter(b'\n', bytes).count() + 1);
    let mut start = 0;
    for i in memchr::memchr2_iter(b'\n', b'\r', bytes) {
        if i < start {
            continue; // The `\n` of a `\r\n`.
        }
        bounds.push((start, i));
        start = if bytes[i] == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
            i + 2
        } else {
            i + 1
        };
    }
    bounds.push((start, bytes.len()));
    bounds
}

/// Converts a wire position to a byte offset into `text`.
pub fn offset_of(
    text: &str,
    pos: WirePosition,
    encoding: PositionEncoding,
) -> Result<usize, EditError> {
    let bounds = line_bounds(text);
    let &(start, end) = bounds
        .get(pos.line as usize)
        .ok_or(EditError::LineOutOfRange {
            line: pos.line,
            lines: bounds.len(),
        })?;
    let mut units = 0u32;
    for (i, c) in text[start..end].char_indices() {
        if units == pos.column {
            return Ok(start + i);
        }
        units += encoding.units(c);
        if units > pos.column {
            return Err(EditError::InsideCharacter {
                line: pos.line,
                column: pos.column,
            });
        }
    }
    Ok(end)
}

/// Converts a byte offset to a wire position (used for responses).
pub fn position_of(text: &str, offset: usize, encoding: PositionEncoding) -> WirePosition {
    position_in(text, &line_bounds(text), offset, encoding)
}

/// [`position_of`] with the text's [`line_bounds`] computed once by the caller.
pub(crate) fn position_in(
    text: &str,
    bounds: &[(usize, usize)],
    offset: usize,
    encoding: PositionEncoding,
) -> WirePosition {
    let offset = offset.min(text.len());
    let line = bounds
        .partition_point(|&(start, _)| start <= offset)
        .saturating_sub(1);
    let Some(&(start, end)) = bounds.get(line) else {
        return WirePosition { line: 0, column: 0 };
    };
    let column = text
        .get(start..offset.min(end))
        .unwrap_or("")
        .chars()
        .map(|c| encoding.units(c))
        .sum();
    WirePosition {
        line: line as u32,
        column,
    }
}

/// One change of a `didChange` notification: a range edit, or the whole text when `range` is
/// `None`.
#[derive(Clone, Debug)]
pub struct Change {
    pub range: Option<(WirePosition, WirePosition)>,
    pub text: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Document {
    pub text: String,
    pub version: i32,
    pub language_id: String,
}

/// The open documents, by URI.
#[derive(Debug, Default)]
pub struct Documents {
    docs: HashMap<String, Document>,
}

impl Documents {
    pub fn open(&mut self, uri: String, doc: Document) {
        self.docs.insert(uri, doc);
    }

    pub fn close(&mut self, uri: &str) -> bool {
        self.docs.remove(uri).is_some()
    }

    pub fn get(&self, uri: &str) -> Option<&Document> {
        self.docs.get(uri)
    }

    /// Every open document with its URI.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Document)> {
        self.docs.iter().map(|(uri, doc)| (uri.as_str(), doc))
    }

    /// Applies the changes in order, all or nothing.
    pub fn change(
        &mut self,
        uri: &str,
        version: i32,
        changes: &[Change],
        encoding: PositionEncoding,
    ) -> Result<(), EditError> {
        let doc = self
            .docs
            .get_mut(uri)
            .ok_or_else(|| EditError::NotOpen(uri.to_owned()))?;
        let mut text = doc.text.clone();
        for change in changes {
            match change.range {
                None => text = change.text.clone(),
                Some((start, end)) => {
                    let start = offset_of(&text, start, encoding)?;
                    let end = offset_of(&text, end, encoding)?;
                    if end < start {
                        return Err(EditError::ReversedRange);
                    }
                    text.replace_range(start..end, &change.text);
                }
            }
        }
        doc.text = text;
        doc.version = version;
        Ok(())
    }
}

/// Above this many cells (changed lines on disk × changed lines in the buffer), the lines
/// between the first and the last change are not matched one by one.
const MAX_DIFF_CELLS: usize = 4_000_000;

/// How the lines of one text moved in another: a line diff (the longest common subsequence
/// of lines between the common prefix and suffix).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineMap {
    /// For each line of the old text, its line in the new one (a deleted line maps to where
    /// the next kept line went).
    forward: Vec<u32>,
    /// For each line of the new text, its line in the old one (an inserted line maps to the
    /// next kept line's).
    backward: Vec<u32>,
}

impl LineMap {
    pub fn new(old: &str, new: &str) -> LineMap {
        let lines = |t: &str| -> Vec<u64> {
            line_bounds(t)
                .iter()
                .map(|&(s, e)| {
                    use std::hash::{Hash, Hasher};
                    let mut h = std::collections::hash_map::DefaultHasher::new();
                    t[s..e].hash(&mut h);
                    h.finish()
                })
                .collect()
        };
        let (a, b) = (lines(old), lines(new));
        let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
        let suffix = a[prefix..]
            .iter()
            .rev()
            .zip(b[prefix..].iter().rev())
            .take_while(|(x, y)| x == y)
            .count();
        let (am, bm) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
        let mut pairs: Vec<(usize, usize)> = (0..prefix).map(|i| (i, i)).collect();
        if am.len().saturating_mul(bm.len()) <= MAX_DIFF_CELLS {
            // Longest common subsequence, table of suffix lengths.
            let w = bm.len() + 1;
            let mut t = vec![0u32; (am.len() + 1) * w];
            for i in (0..am.len()).rev() {
                for j in (0..bm.len()).rev() {
                    t[i * w + j] = if am[i] == bm[j] {
                        t[(i + 1) * w + j + 1] + 1
                    } else {
                        t[(i + 1) * w + j].max(t[i * w + j + 1])
                    };
                }
            }
            let (mut i, mut j) = (0, 0);
            while i < am.len() && j < bm.len() {
                if am[i] == bm[j] {
                    pairs.push((prefix + i, prefix + j));
                    i += 1;
                    j += 1;
                } else if t[(i + 1) * w + j] >= t[i * w + j + 1] {
                    i += 1;
                } else {
                    j += 1;
                }
            }
        }
        pairs.extend((0..suffix).map(|k| (a.len() - suffix + k, b.len() - suffix + k)));
        let clamp = |x: usize| u32::try_from(x).unwrap_or(u32::MAX);
        let mut forward = vec![0u32; a.len()];
        let mut backward = vec![0u32; b.len()];
        // Fill from the end so unmatched lines take the next kept line's counterpart.
        let (mut next_a, mut next_b) = (a.len(), b.len());
        let mut k = pairs.len();
        for i in (0..a.len()).rev() {
            while k > 0 && pairs[k - 1].0 > i {
                k -= 1;
            }
            if k > 0 && pairs[k - 1].0 == i {
                next_b = pairs[k - 1].1;
            }
            forward[i] = clamp(next_b);
        }
        let mut k = pairs.len();
        let mut sorted = pairs.clone();
        sorted.sort_by_key(|p| p.1);
        for j in (0..b.len()).rev() {
            while k > 0 && sorted[k - 1].1 > j {
                k -= 1;
            }
            if k > 0 && sorted[k - 1].1 == j {
                next_a = sorted[k - 1].0;
            }
            backward[j] = clamp(next_a);
        }
        LineMap { forward, backward }
    }

    /// The new line of old line `line`.
    pub fn to_current(&self, line: u32) -> u32 {
        match self.forward.get(line as usize) {
            Some(&l) => l,
            None => {
                let past = line as usize - self.forward.len();
                u32::try_from(self.backward.len() + past).unwrap_or(u32::MAX)
            }
        }
    }

    /// The old line of new line `line`.
    pub fn to_built(&self, line: u32) -> u32 {
        match self.backward.get(line as usize) {
            Some(&l) => l,
            None => {
                let past = line as usize - self.backward.len();
                u32::try_from(self.forward.len() + past).unwrap_or(u32::MAX)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_end_at_lf_crlf_and_cr() {
        assert_eq!(line_bounds(""), [(0, 0)]);
        assert_eq!(line_bounds("a\nb"), [(0, 1), (2, 3)]);
        assert_eq!(line_bounds("a\r\nb\rc\n"), [(0, 1), (3, 4), (5, 6), (7, 7)]);
        assert_eq!(line_bounds("\r\r\n\n"), [(0, 0), (1, 1), (3, 3), (4, 4)]);
    }

    fn pos(line: u32, column: u32) -> WirePosition {
        WirePosition { line, column }
    }

    #[test]
    fn columns_count_in_the_negotiated_unit() {
        let text = "a🦀b\ncafé";
        // 🦀 is 4 bytes in UTF-8, 2 units in UTF-16, 1 in UTF-32.
        assert_eq!(offset_of(text, pos(0, 5), PositionEncoding::Utf8), Ok(5));
        assert_eq!(offset_of(text, pos(0, 3), PositionEncoding::Utf16), Ok(5));
        assert_eq!(offset_of(text, pos(0, 2), PositionEncoding::Utf32), Ok(5));
        assert!(matches!(
            offset_of(text, pos(0, 2), PositionEncoding::Utf16),
            Err(EditError::InsideCharacter { .. })
        ));
        assert!(matches!(
            offset_of(text, pos(0, 3), PositionEncoding::Utf8),
            Err(EditError::InsideCharacter { .. })
        ));
        assert_eq!(
            offset_of(text, pos(1, 4), PositionEncoding::Utf16),
            Ok(text.len())
        );
        assert_eq!(position_of(text, 5, PositionEncoding::Utf16), pos(0, 3));
    }

    #[test]
    fn all_line_endings_count() {
        let text = "a\r\nb\rc\nd";
        assert_eq!(offset_of(text, pos(1, 0), PositionEncoding::Utf8), Ok(3));
        assert_eq!(offset_of(text, pos(2, 0), PositionEncoding::Utf8), Ok(5));
        assert_eq!(offset_of(text, pos(3, 0), PositionEncoding::Utf8), Ok(7));
        assert_eq!(
            offset_of(text, pos(0, 99), PositionEncoding::Utf8),
            Ok(1),
            "clamped before the EOL"
        );
        assert!(matches!(
            offset_of(text, pos(4, 0), PositionEncoding::Utf8),
            Err(EditError::LineOutOfRange { .. })
        ));
    }

    #[test]
    fn a_refused_change_leaves_the_document_untouched() {
        let mut docs = Documents::default();
        let doc = Document {
            text: "int x;\n".into(),
            version: 1,
            language_id: "c".into(),
        };
        docs.open("file:///a.c".into(), doc.clone());
        let good = Change {
            range: Some((pos(0, 4), pos(0, 5))),
            text: "y".into(),
        };
        let bad = Change {
            range: Some((pos(9, 0), pos(9, 0))),
            text: "z".into(),
        };
        let err = docs.change("file:///a.c", 2, &[good, bad], PositionEncoding::Utf16);
        assert!(err.is_err());
        assert_eq!(docs.get("file:///a.c"), Some(&doc));
    }

    #[test]
    fn negotiation_prefers_utf8() {
        assert_eq!(
            PositionEncoding::negotiate(["utf-16", "utf-8"]),
            PositionEncoding::Utf8
        );
        assert_eq!(
            PositionEncoding::negotiate(["utf-32", "utf-16"]),
            PositionEncoding::Utf16
        );
        assert_eq!(
            PositionEncoding::negotiate(["utf-32"]),
            PositionEncoding::Utf32
        );
        assert_eq!(PositionEncoding::negotiate([]), PositionEncoding::Utf16);
        assert_eq!(
            PositionEncoding::negotiate(["latin-1"]),
            PositionEncoding::Utf16
        );
    }

    #[test]
    fn line_maps_follow_insertions_and_deletions() {
        let old = "a\nb\nc\nd\ne\n";
        let new = "a\nx\ny\nb\nc\ne\nz\n";
        let m = LineMap::new(old, new);
        // a b c d e ∅ → a x y b c e z ∅
        assert_eq!(
            (0..6).map(|l| m.to_current(l)).collect::<Vec<_>>(),
            [0, 3, 4, 5, 5, 7]
        );
        assert_eq!(
            (0..8).map(|l| m.to_built(l)).collect::<Vec<_>>(),
            [0, 1, 1, 1, 2, 4, 5, 5]
        );
        assert_eq!(m.to_current(9), 11);
        let same = LineMap::new(old, old);
        assert_eq!(
            (0..6).map(|l| same.to_current(l)).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4, 5]
        );
    }
}
