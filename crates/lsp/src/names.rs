//! The names of one binary, arranged for the language features over its symbol table
//! (`symbols::SymbolTable`: the index cache file's, mapped, or one built in memory when
//! there is no cache): entries by name (through the binary's name table), by
//! declaration file, and the types with their files. An entry is a symbol of the table;
//! its `SymbolEntry` (name, declaration, DIE, code range) is made when a feature needs it.
//!
//! Why: the language server held the binary's whole symbol index and a copy of every
//! entry in memory (3.4 GiB on ceph-osd); the table is file pages read on demand.
//!
//! Only symbols with a declaration file and line are listed: the features answer nothing
//! for the others.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use symbols::{Binary, Line, SymbolEntry, SymbolKind, SymbolTable};

/// A `HashMap` for the tables of names: symbol names come from the binary, not from an
/// adversary, and SipHash (std's default) costs more than the rest of building these
/// tables. foldhash is the fast hasher hashbrown itself uses.
pub type NameMap<K, V> = HashMap<K, V, foldhash::fast::FixedState>;

/// The last `::` component of a qualified name (what `rsplit("::").next()` gives).
pub fn last_component(name: &str) -> &str {
    let bytes = name.as_bytes();
    let mut end = bytes.len();
    while let Some(i) = memchr::memrchr(b':', &bytes[..end]) {
        if i > 0 && bytes[i - 1] == b':' {
            return &name[i + 1..];
        }
        end = i;
    }
    name
}

/// A symbol of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EntryId(u32);

impl EntryId {
    pub(crate) fn index(self) -> usize {
        self.0 as usize
    }
}

/// A distinct declaration file of one binary's symbols (the table's, in path order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FileId(u32);

impl FileId {
    /// The `i`-th file (`i` below [`NameIndex::file_count`]).
    pub fn new(i: usize) -> FileId {
        FileId(id(i))
    }

    pub(crate) fn index(self) -> usize {
        self.0 as usize
    }
}

/// Converts a collection position to an id type (the table holds fewer than 2³² symbols).
fn id(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

/// What a feature reads of a symbol without making its entry.
#[derive(Clone, Copy, Debug)]
pub struct Brief<'a> {
    /// The qualified name.
    pub name: &'a str,
    /// What it is.
    pub kind: SymbolKind,
    /// Its declaration file (`None` for a Rust type: rustc records none).
    pub file: Option<FileId>,
    /// Its declaration line (`None` for a Rust type: rustc records none).
    pub line: Option<Line>,
}

/// Type symbols with their files, and each file's path normalized.
type Types = (Vec<(EntryId, FileId)>, Vec<std::path::PathBuf>);

/// The names of one binary's symbol table.
pub struct NameIndex {
    table: SymbolTable,
    /// One copy of each declaration file's path, shared by the entries made.
    files: Vec<Arc<Path>>,
    /// The symbols of each file: `by_file.1[by_file.0[f]..by_file.0[f + 1]]`, built on
    /// first use.
    by_file: OnceLock<(Vec<u32>, Vec<EntryId>)>,
    /// Type symbols with their files, and each file normalized, built on first use.
    types: OnceLock<Types>,
}

impl NameIndex {
    /// The names of `table`.
    pub fn new(table: SymbolTable) -> NameIndex {
        let files = (0..table.file_count())
            .map(|f| Arc::from(table.file(f).unwrap_or(Path::new(""))))
            .collect();
        NameIndex {
            table,
            files,
            by_file: OnceLock::new(),
            types: OnceLock::new(),
        }
    }

    /// The symbol table.
    pub fn table(&self) -> &SymbolTable {
        &self.table
    }

    /// Builds what is otherwise built on first use.
    pub fn warm(&self) {
        self.by_file();
        self.types();
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.table.symbol_count()
    }

    /// Whether there is no symbol.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every symbol, in the table's order.
    pub fn all(&self) -> impl Iterator<Item = EntryId> {
        (0..self.len()).map(|i| EntryId(id(i)))
    }

    /// What symbol `e` is, without reading its DIE.
    pub fn brief(&self, e: EntryId) -> Option<Brief<'_>> {
        let s = self.table.symbol(e.index())?;
        Some(Brief {
            name: self.table.name(s.name)?,
            kind: s.kind,
            file: (s.file < self.files.len()).then(|| FileId(id(s.file))),
            line: s.line,
        })
    }

    /// The entry of symbol `e` of `binary` (the table's binary); with `code`, its code range
    /// too (its DIE read).
    pub fn entry(&self, binary: &Binary, e: EntryId, code: bool) -> Option<SymbolEntry> {
        let s = self.table.symbol(e.index())?;
        let file = self.files.get(s.file).cloned();
        binary.table_entry(&self.table, e.index(), file, code)
    }

    /// The path of file `f`.
    pub fn file(&self, f: FileId) -> &Arc<Path> {
        &self.files[f.index().min(self.files.len().saturating_sub(1))]
    }

    /// Number of distinct declaration files.
    pub fn file_count(&self) -> usize {
        self.files.len()
    }

    /// The file whose path is `path` exactly (files are in the order of their bytes).
    pub fn file_id(&self, path: &Path) -> Option<FileId> {
        use std::os::unix::ffi::OsStrExt;
        self.files
            .binary_search_by(|f| f.as_os_str().as_bytes().cmp(path.as_os_str().as_bytes()))
            .ok()
            .map(|f| FileId(id(f)))
    }

    /// The files `keep` accepts.
    pub fn files_where(&self, keep: impl Fn(&Path) -> bool) -> Vec<FileId> {
        (0..self.files.len())
            .filter(|&f| keep(&self.files[f]))
            .map(|f| FileId(id(f)))
            .collect()
    }

    fn by_file(&self) -> &(Vec<u32>, Vec<EntryId>) {
        self.by_file.get_or_init(|| {
            let mut starts = vec![0u32; self.files.len() + 1];
            let mut of: Vec<u32> = Vec::with_capacity(self.len());
            for i in 0..self.len() {
                let f = self.table.symbol(i).map_or(u32::MAX, |s| id(s.file));
                of.push(f);
                if let Some(n) = starts.get_mut(f as usize + 1) {
                    *n += 1;
                }
            }
            for i in 1..starts.len() {
                starts[i] += starts[i - 1];
            }
            let mut fill = starts.clone();
            let mut list = vec![EntryId(0); starts.last().copied().unwrap_or(0) as usize];
            for (i, f) in of.into_iter().enumerate() {
                if let Some(at) = fill.get_mut(f as usize) {
                    list[*at as usize] = EntryId(id(i));
                    *at += 1;
                }
            }
            (starts, list)
        })
    }

    /// The symbols declared in file `f`, in the table's order.
    pub fn in_file(&self, f: FileId) -> &[EntryId] {
        let (starts, list) = self.by_file();
        let (s, e) = (
            starts.get(f.index()).copied().unwrap_or(0) as usize,
            starts.get(f.index() + 1).copied().unwrap_or(0) as usize,
        );
        list.get(s..e).unwrap_or_default()
    }

    /// The symbols whose qualified name ends with the components of `query`, in the
    /// table's order (through `binary`'s name table).
    pub fn lookup(&self, binary: &Binary, query: &str) -> Vec<EntryId> {
        binary
            .table_symbols_named(&self.table, query)
            .into_iter()
            .map(|i| EntryId(id(i)))
            .collect()
    }

    /// Type symbols with a declaration file, in the table's order, each with that file.
    pub fn types(&self) -> &[(EntryId, FileId)] {
        &self.types_and_files().0
    }

    /// File `f`'s path normalized (`symbols::lines::normalize_path`).
    pub fn normalized_file(&self, f: FileId) -> &Path {
        self.types_and_files()
            .1
            .get(f.index())
            .map_or(Path::new(""), |p| p.as_path())
    }

    fn types_and_files(&self) -> &Types {
        self.types.get_or_init(|| {
            let normalized = self
                .files
                .iter()
                .map(|f| symbols::lines::normalize_path(f))
                .collect();
            let types = (0..self.len())
                .filter_map(|i| {
                    let s = self.table.symbol(i)?;
                    (s.kind == SymbolKind::Type && s.file < self.files.len())
                        .then(|| (EntryId(id(i)), FileId(id(s.file))))
                })
                .collect();
            (types, normalized)
        })
    }
}

/// The bit set of `bytes` that a name's mask holds.
pub use symbols::names::byte_mask;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_components_split_at_the_last_double_colon() {
        for name in [
            "a::b::c",
            "c",
            "a::",
            "::c",
            "a:b",
            "a:::b",
            "<a as b::T>::m",
            "",
        ] {
            assert_eq!(
                last_component(name),
                name.rsplit("::").next().unwrap_or(name)
            );
        }
    }

    #[test]
    fn masks_hold_every_byte() {
        let m = byte_mask(b"main");
        assert_eq!(m & byte_mask(b"nim"), byte_mask(b"nim"));
        assert_ne!(m & byte_mask(b"x"), byte_mask(b"x"));
    }
}
