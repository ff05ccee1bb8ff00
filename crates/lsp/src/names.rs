//! The names of one binary's symbol index, arranged for the language features: a haystack of
//! distinct names, lowercased, for `workspace/symbol`, the order its results are ranked in, and
//! entries by the last component of their name for identifier lookups.
//!
//! Only entries with a declaration (a file or a line) are kept: the features answer nothing
//! for the others. What the first `workspace/symbol` query needs is built with the index;
//! the rest is built on first use, or ahead of it by [`NameIndex::warm`] on a background
//! thread, so the first query does not wait for it.

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use symbols::{Line, SymbolEntry, SymbolIndex, SymbolKind};

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

/// A position in [`NameIndex::entries`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EntryId(u32);

impl EntryId {
    pub(crate) fn index(self) -> usize {
        self.0 as usize
    }
}

/// A distinct declaration file of one binary's entries.
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

/// A distinct name (searches see its lowercase text): a position in [`NameIndex::starts`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NameId(u32);

impl NameId {
    pub(crate) fn index(self) -> usize {
        self.0 as usize
    }
}

/// Converts a collection position to an id type (the index holds fewer than 2³² entries).
fn id(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

/// The names of one binary's index.
pub struct NameIndex {
    /// Entries with a declaration file or line, in the index's order.
    entries: Vec<SymbolEntry>,
    /// Per entry: which distinct name it has (entries with both a file and a
    /// line only; `None` for the others, which `workspace/symbol` never lists).
    name_of: Vec<Option<NameId>>,
    /// Per entry: declared outside every workspace root.
    outside: Vec<bool>,
    /// Per entry: its declaration file.
    file_of: Vec<Option<FileId>>,
    /// The distinct declaration files (by path).
    files: Vec<Arc<Path>>,
    /// Every distinct name of a listable entry, lowercased, each followed by a newline: one
    /// haystack a query is searched in at memory speed.
    haystack: String,
    /// Where each distinct name starts in `haystack`, and one past the last.
    starts: Vec<usize>,
    /// The listable entries of each distinct name: `members[member_starts[n]..member_starts[n + 1]]`.
    members: Vec<EntryId>,
    member_starts: Vec<usize>,
    /// Listable entries in ranking order, built on first use.
    ranked: OnceLock<Ranked>,
    /// Entries by the last `::` component of their name, built on first use.
    by_last: OnceLock<NameMap<Box<str>, Vec<EntryId>>>,
    /// Type entries with a declaration file and the normalized file of each, built on first use.
    types: OnceLock<Vec<(EntryId, Arc<Path>)>>,
    /// Names whose every declaration is under a directory that did not exist, built by
    /// [`NameIndex::warm`] (it looks at the file system).
    absent: OnceLock<Absent>,
}

/// Declaration files that cannot be opened because a directory above them does not exist
/// (the standard library's `/rustc/<hash>/library/…` without rust-src): one look at that
/// directory tells for all of them.
struct Absent {
    /// The missing directories.
    roots: Vec<PathBuf>,
    /// Per distinct name: the missing directory above all its listable entries' files.
    of_name: Vec<Option<u32>>,
}

/// What `workspace/symbol` orders the entries of one tier by: (declared outside every
/// root, name length, name, declaration file (its bytes), declaration line).
pub type RankKey<'a> = (bool, usize, &'a str, Option<&'a [u8]>, Option<Line>);

/// Listable entries ordered as `workspace/symbol` ranks them within a tier.
struct Ranked {
    /// Entries by [`RankKey`], then position.
    order: Vec<EntryId>,
    /// `order` cut where the name changes: entries of one name are mostly together, so a
    /// walk in ranking order decides each run by its name once.
    runs: Vec<Run>,
    /// Per entry: its position in `order` (`u32::MAX` for entries not listed).
    position: Vec<u32>,
    /// Per distinct name: the bytes it holds, one bit per `byte % 64`, to rule out fuzzy
    /// matches without reading the name.
    masks: Vec<u64>,
}

/// Consecutive entries of [`NameIndex::ranked_order`] with the same name.
#[derive(Clone, Copy, Debug)]
pub struct Run {
    pub name: NameId,
    /// Where the run starts in the ranked order.
    pub start: u32,
    /// How many entries it has.
    pub len: u32,
}

/// The bit set of `bytes` that [`Ranked::masks`] holds.
pub use symbols::names::byte_mask;

impl NameIndex {
    /// Arranges `index`'s names; `roots` are the workspace's root folders (for ranking symbols
    /// declared under them first).
    pub fn new(index: &SymbolIndex, roots: &[PathBuf]) -> NameIndex {
        let entries: Vec<SymbolEntry> = index
            .entries()
            .filter(|e| e.decl_file.is_some() || e.decl_line.is_some())
            .collect();
        // Entries share names and files (one entry per unit that declares a type): lowercase
        // each distinct name once, and decide each distinct file once.
        let mut by_name: NameMap<&str, NameId> =
            NameMap::with_capacity_and_hasher(entries.len(), Default::default());
        let mut haystack = String::new();
        let mut starts = Vec::new();
        let mut name_of = Vec::with_capacity(entries.len());
        let mut outside = Vec::with_capacity(entries.len());
        // Files: by `Arc` first (cheap), then by path (equal paths in different `Arc`s).
        let mut file_of = Vec::with_capacity(entries.len());
        let mut files: Vec<Arc<Path>> = Vec::new();
        let mut files_outside: Vec<bool> = Vec::new();
        let mut by_arc: NameMap<*const u8, FileId> = NameMap::default();
        let mut by_path: HashMap<&Path, FileId> = HashMap::new();
        for e in &entries {
            let file = e.decl_file.as_ref().map(|file| {
                *by_arc
                    .entry(Arc::as_ptr(file) as *const u8)
                    .or_insert_with(|| {
                        *by_path.entry(file).or_insert_with(|| {
                            files.push(file.clone());
                            files_outside.push(!roots.iter().any(|r| file.starts_with(r)));
                            FileId(id(files.len() - 1))
                        })
                    })
            });
            file_of.push(file);
            let (Some(file), Some(_)) = (file, e.decl_line) else {
                name_of.push(None);
                outside.push(true);
                continue;
            };
            outside.push(files_outside[file.index()]);
            let n = *by_name.entry(&e.name).or_insert_with(|| {
                starts.push(haystack.len());
                push_lowercase(&mut haystack, &e.name);
                haystack.push('\n');
                NameId(id(starts.len() - 1))
            });
            name_of.push(Some(n));
        }
        let names = starts.len();
        starts.push(haystack.len());
        // Group entries by name, keeping the index's order within each name.
        let mut member_starts = vec![0usize; names + 1];
        for n in name_of.iter().flatten() {
            member_starts[n.index() + 1] += 1;
        }
        for i in 1..member_starts.len() {
            member_starts[i] += member_starts[i - 1];
        }
        let mut fill = member_starts.clone();
        let mut members = vec![EntryId(0); member_starts.last().copied().unwrap_or(0)];
        for (i, n) in name_of.iter().enumerate() {
            if let Some(n) = n {
                members[fill[n.index()]] = EntryId(id(i));
                fill[n.index()] += 1;
            }
        }
        NameIndex {
            entries,
            name_of,
            outside,
            file_of,
            files,
            haystack,
            starts,
            members,
            member_starts,
            ranked: OnceLock::new(),
            by_last: OnceLock::new(),
            types: OnceLock::new(),
            absent: OnceLock::new(),
        }
    }

    /// Builds what is otherwise built on first use, and notes which declaration files sit
    /// under missing directories.
    pub fn warm(&self) {
        self.ranked();
        self.by_last();
        self.types();
        self.absent.get_or_init(|| self.find_absent());
    }

    fn find_absent(&self) -> Absent {
        fn missing(path: &Path) -> bool {
            std::fs::metadata(path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        }
        let mut roots: Vec<PathBuf> = Vec::new();
        let mut known: HashMap<PathBuf, Option<u32>> = HashMap::new();
        let file_root: Vec<Option<u32>> = self
            .files
            .iter()
            .map(|file| {
                // The shortest missing ancestor (or the file itself); `None` when it exists.
                let mut dir = PathBuf::new();
                for component in file.components() {
                    dir.push(component);
                    let root = known.entry(dir.clone()).or_insert_with(|| {
                        missing(&dir).then(|| {
                            roots.push(dir.clone());
                            id(roots.len() - 1)
                        })
                    });
                    if root.is_some() {
                        return *root;
                    }
                }
                None
            })
            .collect();
        let mut of_name: Vec<Option<Option<u32>>> = vec![None; self.name_count()];
        for (i, n) in self.name_of.iter().enumerate() {
            let Some(n) = n else { continue };
            let root = self.file_of[i].and_then(|f| file_root[f.index()]);
            let slot = &mut of_name[n.index()];
            *slot = match *slot {
                None => Some(root),
                Some(r) if r == root => Some(r),
                Some(_) => Some(None),
            };
        }
        Absent {
            roots,
            of_name: of_name.into_iter().map(Option::flatten).collect(),
        }
    }

    /// When every listable entry named `n` is declared under one directory that was missing
    /// when the index was built: that directory, for the caller to check it is still missing.
    pub fn absent_root(&self, n: NameId) -> Option<(u32, &Path)> {
        let absent = self.absent.get()?;
        let r = (*absent.of_name.get(n.index())?)?;
        Some((r, absent.roots.get(r as usize)?))
    }

    /// Number of missing directories [`NameIndex::absent_root`] may name (0 before `warm`).
    pub fn absent_root_count(&self) -> usize {
        self.absent.get().map_or(0, |a| a.roots.len())
    }

    /// Entries with a declaration file or line, in the index's order.
    pub fn entries(&self) -> &[SymbolEntry] {
        &self.entries
    }

    /// The entry `e`.
    pub fn entry(&self, e: EntryId) -> &SymbolEntry {
        &self.entries[e.index()]
    }

    /// The declaration file of entry `e`.
    pub fn file_of(&self, e: EntryId) -> Option<FileId> {
        self.file_of[e.index()]
    }

    /// The path of file `f`.
    pub fn file(&self, f: FileId) -> &Arc<Path> {
        &self.files[f.index()]
    }

    /// Number of distinct declaration files.
    pub fn file_count(&self) -> usize {
        self.files.len()
    }

    /// Whether entry `e` is declared outside every workspace root.
    pub fn outside(&self, e: EntryId) -> bool {
        self.outside[e.index()]
    }

    /// The haystack of distinct names, lowercased, each followed by a newline.
    pub fn haystack(&self) -> &str {
        &self.haystack
    }

    /// The distinct name whose text (or its newline) holds byte `pos` of the haystack.
    pub fn name_at(&self, pos: usize) -> NameId {
        NameId(id(self
            .starts
            .partition_point(|&s| s <= pos)
            .saturating_sub(1)))
    }

    /// Number of distinct names.
    pub fn name_count(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    /// The lowercase text of name `n`.
    pub fn name(&self, n: NameId) -> &str {
        let (s, e) = (self.starts[n.index()], self.starts[n.index() + 1]);
        &self.haystack[s..e - 1]
    }

    /// The lowercase text of name `n`, as bytes.
    pub fn name_bytes(&self, n: NameId) -> &[u8] {
        let (s, e) = (self.starts[n.index()], self.starts[n.index() + 1]);
        &self.haystack.as_bytes()[s..e - 1]
    }

    /// The listable entries named `n`, in the index's order.
    pub fn members(&self, n: NameId) -> &[EntryId] {
        &self.members[self.member_starts[n.index()]..self.member_starts[n.index() + 1]]
    }

    /// The distinct name of a listable entry.
    pub fn name_of(&self, e: EntryId) -> Option<NameId> {
        self.name_of[e.index()]
    }

    fn ranked(&self) -> &Ranked {
        self.ranked.get_or_init(|| {
            // Sort by integers: rank the distinct names and files first, then the entries by
            // (outside, name rank, file rank, line, position), which is the same order as
            // `rank_key` (names of one rank are equal, as are files).
            let mut names: Vec<(usize, &str, NameId)> = Vec::with_capacity(self.name_count());
            let mut first = vec![None; self.name_count()];
            for (i, n) in self.name_of.iter().enumerate() {
                if let Some(n) = n {
                    first[n.index()].get_or_insert(i);
                }
            }
            for (n, i) in first.iter().enumerate() {
                if let Some(&i) = i.as_ref() {
                    let name: &str = &self.entries[i].name;
                    names.push((name.len(), name, NameId(id(n))));
                }
            }
            names.sort_unstable();
            let mut name_rank = vec![0u32; self.name_count()];
            for (r, (_, _, n)) in names.iter().enumerate() {
                name_rank[n.index()] = id(r);
            }
            let mut files: Vec<(&[u8], usize)> = self
                .files
                .iter()
                .enumerate()
                .map(|(f, path)| (path.as_os_str().as_bytes(), f))
                .collect();
            files.sort_unstable();
            let mut file_rank = vec![0u32; self.files.len()];
            for (r, (_, f)) in files.iter().enumerate() {
                file_rank[*f] = id(r);
            }
            let mut keyed: Vec<((bool, u32, u32, u32), EntryId)> = (0..self.entries.len())
                .filter_map(|i| {
                    let n = self.name_of[i]?;
                    let file = self.file_of[i].map_or(0, |f| file_rank[f.index()]);
                    let line = self.entries[i].decl_line.map_or(0, Line::get);
                    Some((
                        (self.outside[i], name_rank[n.index()], file, line),
                        EntryId(id(i)),
                    ))
                })
                .collect();
            keyed.sort_unstable();
            let order: Vec<EntryId> = keyed.into_iter().map(|(_, e)| e).collect();
            let mut position = vec![u32::MAX; self.entries.len()];
            for (p, e) in order.iter().enumerate() {
                position[e.index()] = id(p);
            }
            let mut runs: Vec<Run> = Vec::new();
            for (p, e) in order.iter().enumerate() {
                let Some(name) = self.name_of[e.index()] else {
                    continue;
                };
                match runs.last_mut() {
                    Some(run) if run.name == name && (run.start + run.len) as usize == p => {
                        run.len += 1;
                    }
                    _ => runs.push(Run {
                        name,
                        start: id(p),
                        len: 1,
                    }),
                }
            }
            let masks = (0..self.name_count())
                .map(|n| byte_mask(self.name_bytes(NameId(id(n)))))
                .collect();
            Ranked {
                order,
                runs,
                position,
                masks,
            }
        })
    }

    /// How `workspace/symbol` orders entries of one tier: symbols under a root first, then
    /// shorter names, then by name, then where they are declared.
    pub fn rank_key(&self, e: EntryId) -> RankKey<'_> {
        let entry = &self.entries[e.index()];
        (
            self.outside[e.index()],
            entry.name.len(),
            &entry.name,
            entry.decl_file.as_deref().map(|f| f.as_os_str().as_bytes()),
            entry.decl_line,
        )
    }

    /// Listable entries in [`NameIndex::rank_key`] order (then by position in the index).
    pub fn ranked_order(&self) -> &[EntryId] {
        &self.ranked().order
    }

    /// [`NameIndex::ranked_order`] in runs of one name.
    pub fn ranked_runs(&self) -> &[Run] {
        &self.ranked().runs
    }

    /// Where entry `e` is in [`NameIndex::ranked_order`], if it is built already (a
    /// comparison by position is the same as one by [`NameIndex::rank_key`]).
    pub fn ranked_position(&self, e: EntryId) -> Option<u32> {
        self.ranked
            .get()
            .map(|r| r.position[e.index()])
            .filter(|&p| p != u32::MAX)
    }

    /// The byte mask of name `n` (see [`byte_mask`]).
    pub fn mask(&self, n: NameId) -> u64 {
        self.ranked().masks[n.index()]
    }

    fn by_last(&self) -> &NameMap<Box<str>, Vec<EntryId>> {
        self.by_last.get_or_init(|| {
            let mut map: NameMap<Box<str>, Vec<EntryId>> = NameMap::default();
            for (i, e) in self.entries.iter().enumerate() {
                let last = last_component(&e.name);
                match map.get_mut(last) {
                    Some(v) => v.push(EntryId(id(i))),
                    None => {
                        map.insert(last.into(), vec![EntryId(id(i))]);
                    }
                }
            }
            map
        })
    }

    /// The entries (with a declaration) whose qualified name ends with the components of
    /// `query`, in the index's order: what `SymbolIndex::lookup` yields, without looking at
    /// every entry.
    pub fn lookup<'a>(&'a self, query: &str) -> impl Iterator<Item = &'a SymbolEntry> + 'a {
        let query = symbols::names::normalize(query);
        let last = last_component(&query);
        // The last component of a match is the query's, unless the query's holds a `:`
        // of its own (then the components may split differently): look at every entry.
        let candidates: Box<dyn Iterator<Item = EntryId> + 'a> =
            if last.is_empty() || last.contains(':') {
                Box::new((0..self.entries.len()).map(|i| EntryId(id(i))))
            } else {
                Box::new(
                    self.by_last()
                        .get(last)
                        .map_or(&[][..], Vec::as_slice)
                        .iter()
                        .copied(),
                )
            };
        candidates
            .map(|e| &self.entries[e.index()])
            .filter(move |e| symbols::names::suffix_matches(&query, &e.name))
    }

    /// Type entries with a declaration file, in the index's order, each with its file
    /// normalized.
    pub fn types(&self) -> &[(EntryId, Arc<Path>)] {
        self.types.get_or_init(|| {
            let normalized: Vec<Arc<Path>> = self
                .files
                .iter()
                .map(|f| Arc::from(symbols::lines::normalize_path(f)))
                .collect();
            self.entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.kind == SymbolKind::Type)
                .filter_map(|(i, _)| {
                    let file = self.file_of[i]?;
                    Some((EntryId(id(i)), normalized[file.index()].clone()))
                })
                .collect()
        })
    }
}

/// Appends `name` lowercased as `workspace/symbol` compares it.
fn push_lowercase(out: &mut String, name: &str) {
    symbols::names::push_search_lowercase(out, name);
}

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

    #[test]
    fn names_are_lowercased_on_one_line() {
        let mut out = String::new();
        push_lowercase(&mut out, "Foo::Bar\n");
        push_lowercase(&mut out, "É\nx");
        assert_eq!(out, "foo::bar é x");
    }
}
