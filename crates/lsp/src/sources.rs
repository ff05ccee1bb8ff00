//! Source texts as a request sees them: open documents first, then files on disk (kept across
//! requests while unchanged), with line maps between the two; and the small lexical helpers
//! features use to find names in them.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use symbols::lines::normalize_path;

use crate::text::{line_bounds, position_in, LineMap, PositionEncoding, WirePosition};

/// A source text with its line bounds, computed once per request and file.
pub struct SourceText {
    text: Arc<str>,
    pub(crate) bounds: Vec<(usize, usize)>,
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
pub(crate) struct Stamp {
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
pub(crate) const MAX_DISK_TEXT_BYTES: usize = 64 << 20;

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
pub(crate) struct DiskFiles {
    /// By the path's bytes (hashing a `Path` walks its components).
    texts: HashMap<OsString, (Option<Stamp>, Option<Arc<SourceText>>)>,
    bytes: usize,
}

/// A line map and the two texts it maps between.
pub(crate) struct CachedLineMap {
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

pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    normalize_path(a) == normalize_path(b)
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

#[cfg(test)]
mod tests {
    use super::*;

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
