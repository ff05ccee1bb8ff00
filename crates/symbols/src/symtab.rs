//! The symbol table of an index cache file: every symbol of the index (`workspace/symbol`
//! lists those with a declaration file and line; rustc records neither for its types), laid out so that `workspace/symbol` searches the mapped
//! file itself — a haystack of lowercased distinct names, the symbols of each name in
//! ranking order — without materialising a name it does not answer with.
//!
//! Regions (offsets from the cache payload's start, see `cache.rs`):
//!
//! ```text
//! files:      F × (path offset u32, path length u32) into the strings, sorted by path bytes
//! names:      N × (name offset u32, name length u32), distinct names sorted by (length, name)
//! hay starts: (N + 1) × u32, where each name starts in the haystack, and its end
//! members:    (N + 1) × u32, where each name's symbols start in the symbols, and their end
//! masks:      N × u64, the bytes of each lowercased name (`names::byte_mask`)
//! symbols:    E × (name u32, file u32, line u32, kind u32, unit u32, DIE offset u32),
//!             sorted by (name, file, line, position in the index): the language server's
//!             ranking order (unit `u32::MAX`: no DIE, an ELF symbol; file `u32::MAX`
//!             and line 0: none recorded)
//! haystack:   the lowercased names (`names::push_search_lowercase`), each ending in '\n'
//! strings:    names and paths, one blob
//! ```
//!
//! A symbol's kind is its [`SymbolKind`] in the low byte, its [`TypeForm`] (types) above.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;

use crate::addr::Line;
use crate::binary::Binary;
use crate::index::{SymbolKind, TypeForm};

/// Number of u32 fields the table of the cache file gives this table.
pub(crate) const FIELDS: usize = 12;
const SYMBOL: usize = 24;

/// One listable symbol of a [`SymbolTable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableSymbol {
    /// Its distinct name (an index below [`SymbolTable::name_count`]).
    pub name: usize,
    /// Its declaration file (an index below [`SymbolTable::file_count`]; `usize::MAX` when
    /// the compiler recorded none, as rustc for types).
    pub file: usize,
    /// Its declaration line (`None`: the compiler recorded none, as rustc for types).
    pub line: Option<Line>,
    /// What it is.
    pub kind: SymbolKind,
    /// How a type is declared (types only).
    pub form: Option<TypeForm>,
    /// The DIE that declares it (`None` for an ELF symbol's).
    pub(crate) die: Option<crate::units::DieId>,
}

/// The symbol table of an opened, verified index cache file (shares its mapping).
#[derive(Clone)]
pub struct SymbolTable {
    map: Arc<crate::cache::Blob>,
    payload: usize,
    files: (usize, usize),
    names: (usize, usize),
    hay_starts: usize,
    members: usize,
    masks: usize,
    symbols: (usize, usize),
    hay: (usize, usize),
    strings: usize,
}

impl std::fmt::Debug for SymbolTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SymbolTable")
            .field("files", &self.files.1)
            .field("names", &self.names.1)
            .field("symbols", &self.symbols.1)
            .finish()
    }
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

/// A symbol's kind code: its [`SymbolKind`] in the low byte, its [`TypeForm`] above.
pub(crate) fn kind_code(kind: SymbolKind, form: Option<TypeForm>) -> u32 {
    let kind = match kind {
        SymbolKind::Function => 0,
        SymbolKind::Variable => 1,
        SymbolKind::Type => 2,
    };
    kind | form_code(form) << 8
}

fn form_code(form: Option<TypeForm>) -> u32 {
    match form {
        None => 0,
        Some(TypeForm::Class) => 1,
        Some(TypeForm::Struct) => 2,
        Some(TypeForm::Union) => 3,
        Some(TypeForm::Enum) => 4,
        Some(TypeForm::Typedef) => 5,
        Some(TypeForm::Other) => 6,
    }
}

fn decode_kind(code: u32) -> (SymbolKind, Option<TypeForm>) {
    let kind = match code & 0xff {
        0 => SymbolKind::Function,
        1 => SymbolKind::Variable,
        _ => SymbolKind::Type,
    };
    let form = match code >> 8 {
        1 => Some(TypeForm::Class),
        2 => Some(TypeForm::Struct),
        3 => Some(TypeForm::Union),
        4 => Some(TypeForm::Enum),
        5 => Some(TypeForm::Typedef),
        6 => Some(TypeForm::Other),
        _ => None,
    };
    (kind, form)
}

impl SymbolTable {
    /// The table whose [`FIELDS`] fields are `fields`, in the mapped file `map` whose
    /// payload starts at `payload`; `None` when a region lies outside the file.
    /// A table listing nothing, over `map`.
    pub(crate) fn empty(map: Arc<crate::cache::Blob>, payload: usize) -> SymbolTable {
        SymbolTable {
            map,
            payload,
            files: (0, 0),
            names: (0, 0),
            hay_starts: 0,
            members: 0,
            masks: 0,
            symbols: (0, 0),
            hay: (0, 0),
            strings: 0,
        }
    }

    pub(crate) fn open(
        map: Arc<crate::cache::Blob>,
        payload: usize,
        fields: &[usize],
    ) -> Option<SymbolTable> {
        let &[files_at, files_n, names_at, names_n, hay_starts, members, masks, symbols_at, symbols_n, hay_at, hay_len, strings] =
            fields
        else {
            return None;
        };
        let len = map.len().checked_sub(payload)?;
        let fits = |start: usize, n: usize, size: usize| {
            n.checked_mul(size)
                .and_then(|l| l.checked_add(start))
                .is_some_and(|end| end <= len)
        };
        let ok = fits(files_at, files_n, 8)
            && fits(names_at, names_n, 8)
            && fits(hay_starts, names_n.checked_add(1)?, 4)
            && fits(members, names_n.checked_add(1)?, 4)
            && fits(masks, names_n, 8)
            && fits(symbols_at, symbols_n, SYMBOL)
            && fits(hay_at, hay_len, 1)
            && strings <= len;
        ok.then_some(SymbolTable {
            map,
            payload,
            files: (files_at, files_n),
            names: (names_at, names_n),
            hay_starts,
            members,
            masks,
            symbols: (symbols_at, symbols_n),
            hay: (hay_at, hay_len),
            strings,
        })
    }

    fn p(&self) -> &[u8] {
        self.map.get(self.payload..).unwrap_or_default()
    }

    fn string(&self, at: usize) -> Option<&[u8]> {
        let p = self.p();
        let off = self.strings.checked_add(u32_at(p, at)? as usize)?;
        let len = u32_at(p, at + 4)? as usize;
        p.get(off..off.checked_add(len)?)
    }

    /// Whether the table is an index cache file's (mapped), not built in memory.
    pub fn from_cache_file(&self) -> bool {
        matches!(*self.map, crate::cache::Blob::Map(_))
    }

    /// Number of distinct declaration files.
    pub fn file_count(&self) -> usize {
        self.files.1
    }

    /// The path of file `f` (files are in the order of their path's bytes).
    pub fn file(&self, f: usize) -> Option<&Path> {
        if f >= self.files.1 {
            return None;
        }
        let bytes = self.string(self.files.0 + 8 * f)?;
        Some(Path::new(OsStr::from_bytes(bytes)))
    }

    /// Number of distinct names.
    pub fn name_count(&self) -> usize {
        self.names.1
    }

    /// Name `n` as the binary spells it (names are in the order of (length, name)).
    pub fn name(&self, n: usize) -> Option<&str> {
        if n >= self.names.1 {
            return None;
        }
        std::str::from_utf8(self.string(self.names.0 + 8 * n)?).ok()
    }

    /// Every distinct name lowercased, each followed by a newline, in name order.
    pub fn haystack(&self) -> &[u8] {
        self.p()
            .get(self.hay.0..self.hay.0 + self.hay.1)
            .unwrap_or_default()
    }

    fn hay_start(&self, n: usize) -> Option<usize> {
        u32_at(self.p(), self.hay_starts + 4 * n).map(|v| v as usize)
    }

    /// The lowercased text of name `n` (its haystack line without the newline).
    pub fn lower_name(&self, n: usize) -> &[u8] {
        let (Some(s), Some(e)) = (self.hay_start(n), self.hay_start(n + 1)) else {
            return &[];
        };
        self.haystack()
            .get(s..e.saturating_sub(1).max(s))
            .unwrap_or_default()
    }

    /// The name whose haystack line holds byte `pos` of the haystack.
    pub fn name_at(&self, pos: usize) -> usize {
        // The last name starting at or before `pos`.
        let (mut lo, mut hi) = (0usize, self.names.1);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.hay_start(mid).is_some_and(|s| s <= pos) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo.saturating_sub(1)
    }

    /// The byte mask of name `n`'s lowercased text ([`crate::names::byte_mask`]).
    pub fn mask(&self, n: usize) -> u64 {
        let at = self.masks + 8 * n;
        self.p()
            .get(at..at + 8)
            .and_then(|b| b.try_into().ok())
            .map_or(u64::MAX, u64::from_le_bytes)
    }

    /// The symbols named `n`: a range of symbol indices.
    pub fn members(&self, n: usize) -> std::ops::Range<usize> {
        let p = self.p();
        let at = |i: usize| u32_at(p, self.members + 4 * i).map_or(0, |v| v as usize);
        let (s, e) = (at(n), at(n + 1).min(self.symbols.1));
        s.min(e)..e
    }

    /// The name spelled `name`, if the table has it (names are sorted by (length, name)).
    pub fn find_name(&self, name: &str) -> Option<usize> {
        let key = (name.len(), name.as_bytes());
        let (mut lo, mut hi) = (0usize, self.names.1);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let at = self.name(mid).unwrap_or_default();
            match (at.len(), at.as_bytes()).cmp(&key) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// Number of symbols.
    pub fn symbol_count(&self) -> usize {
        self.symbols.1
    }

    /// Symbol `i` (symbols are in ranking order: by name, file, line, then the index's
    /// order).
    pub fn symbol(&self, i: usize) -> Option<TableSymbol> {
        if i >= self.symbols.1 {
            return None;
        }
        let p = self.p();
        let at = self.symbols.0 + SYMBOL * i;
        let name = u32_at(p, at)? as usize;
        let file = u32_at(p, at + 4)? as usize;
        let line = Line::new(u32_at(p, at + 8)?);
        let (kind, form) = decode_kind(u32_at(p, at + 12)?);
        let unit = u32_at(p, at + 16)?;
        let die = (unit != u32::MAX).then(|| crate::units::DieId {
            unit: unit as usize,
            offset: gimli::UnitOffset(u32_at(p, at + 20).unwrap_or(0) as usize),
        });
        let file = if file < self.files.1 {
            file
        } else {
            usize::MAX
        };
        (name < self.names.1).then_some(TableSymbol {
            name,
            file,
            line,
            kind,
            form,
            die,
        })
    }
}

/// One symbol a table lists, before it is laid out: its name and file as indices into the
/// names and files a [`Plan`] is given.
#[derive(Clone, Copy)]
pub(crate) struct Listed {
    pub(crate) name: u32,
    pub(crate) file: u32,
    /// Its line, 0 for none.
    pub(crate) line: u32,
    /// [`kind_code`].
    pub(crate) kind: u32,
    /// Its DIE: unit (`u32::MAX` for none) and offset in the unit.
    pub(crate) unit: u32,
    pub(crate) die: u32,
}

/// How a table listing some symbols is laid out (see [`Plan::new`]): what is decided
/// before a byte of it is written, so that it can be written in one pass (a big
/// program's is hundreds of megabytes: streamed to its file, never whole in memory).
pub(crate) struct Plan<'a> {
    names: &'a [&'a str],
    listed: &'a [Listed],
    /// (string offset, length) of each listed file, in path order, and of each listed
    /// name, in (length, name) order.
    file_recs: Vec<(u32, u32)>,
    name_recs: Vec<(u32, u32)>,
    /// The listed names, in (length, name) order.
    name_ids: Vec<u32>,
    name_rank: Vec<u32>,
    file_rank: Vec<u32>,
    /// Positions in `listed`, in ranking order.
    order: Vec<u32>,
    /// Where each ranked name's symbols start in `order`, and their end.
    members: Vec<u32>,
    hay_starts: Vec<u32>,
    masks: Vec<u64>,
    hay_len: usize,
    /// The strings the regions point to that were not given (paths, and names without
    /// `name_at`), to be placed `strings_from` bytes into the table's strings.
    pub(crate) strings: Vec<u8>,
}

impl<'a> Plan<'a> {
    /// The layout of a table listing `listed` (ties broken by position in it). Names and
    /// files are given once each (`listed` refers to them by index); `name_at`, when
    /// given, is where each name already is in the strings the table will point to, else
    /// names are added to [`Plan::strings`], which start `strings_from` bytes into them.
    pub(crate) fn new(
        names: &'a [&'a str],
        name_at: Option<&[u32]>,
        files: &[&Path],
        listed: &'a [Listed],
        strings_from: usize,
    ) -> Plan<'a> {
        // The files and names listed, each once: by path bytes, and by (length, name).
        let used = |n: usize, of: &mut dyn Iterator<Item = u32>| {
            let mut seen = vec![false; n];
            for i in of {
                if let Some(s) = seen.get_mut(i as usize) {
                    *s = true;
                }
            }
            (0..n as u32)
                .filter(|&i| seen[i as usize])
                .collect::<Vec<u32>>()
        };
        let mut file_ids = used(files.len(), &mut listed.iter().map(|l| l.file));
        file_ids.sort_unstable_by(|&a, &b| {
            files[a as usize]
                .as_os_str()
                .as_bytes()
                .cmp(files[b as usize].as_os_str().as_bytes())
        });
        let name_ids =
            by_length_then_bytes(used(names.len(), &mut listed.iter().map(|l| l.name)), names);
        let rank_of = |ids: &[u32], n: usize| {
            let mut rank = vec![0u32; n];
            for (r, &id) in ids.iter().enumerate() {
                rank[id as usize] = r as u32;
            }
            rank
        };
        let name_rank = rank_of(&name_ids, names.len());
        let file_rank = rank_of(&file_ids, files.len());
        let mut plan = Plan {
            names,
            listed,
            file_recs: Vec::with_capacity(file_ids.len()),
            name_recs: Vec::with_capacity(name_ids.len()),
            name_ids,
            name_rank,
            file_rank,
            order: Vec::new(),
            members: Vec::new(),
            hay_starts: Vec::new(),
            masks: Vec::new(),
            hay_len: 0,
            strings: Vec::new(),
        };
        (plan.order, plan.members) = plan.ranking_order();
        for &f in &file_ids {
            let f = files[f as usize].as_os_str().as_bytes();
            plan.file_recs
                .push(((strings_from + plan.strings.len()) as u32, f.len() as u32));
            plan.strings.extend_from_slice(f);
        }
        for &n in &plan.name_ids {
            let name = names[n as usize];
            let at = match name_at.and_then(|at| at.get(n as usize)) {
                Some(&at) => at,
                None => {
                    let at = (strings_from + plan.strings.len()) as u32;
                    plan.strings.extend_from_slice(name.as_bytes());
                    at
                }
            };
            plan.name_recs.push((at, name.len() as u32));
        }
        // Where each name's line starts in the haystack, and its mask, from its lowercase
        // text made one name at a time (the haystack is made again as it is written).
        let mut lower = String::new();
        plan.hay_starts.reserve(plan.name_ids.len() + 1);
        plan.masks.reserve(plan.name_ids.len());
        for &n in &plan.name_ids {
            lower.clear();
            crate::names::push_search_lowercase(&mut lower, names[n as usize]);
            plan.hay_starts.push(plan.hay_len as u32);
            plan.masks.push(crate::names::byte_mask(lower.as_bytes()));
            plan.hay_len += lower.len() + 1;
        }
        plan.hay_starts.push(plan.hay_len as u32);
        plan
    }

    /// A listed symbol's file rank (`u32::MAX` for none).
    fn file_rank(&self, l: &Listed) -> u32 {
        self.file_rank
            .get(l.file as usize)
            .copied()
            .unwrap_or(u32::MAX)
    }

    /// The listed symbols' positions in ranking order — by (name rank, file rank, line,
    /// position) — and where each name's run starts. The runs are placed by counting
    /// (a big program lists millions of symbols under a few hundred thousand names), and
    /// each run is sorted by the rest of the key only when it is not already: symbols
    /// are listed unit by unit, so a name's run is most often in file and line order.
    fn ranking_order(&self) -> (Vec<u32>, Vec<u32>) {
        let names = self.name_ids.len();
        let mut members = vec![0u32; names + 1];
        for l in self.listed {
            members[self.name_rank[l.name as usize] as usize + 1] += 1;
        }
        for n in 0..names {
            members[n + 1] += members[n];
        }
        let mut next = members.clone();
        let mut order = vec![0u32; self.listed.len()];
        for (i, l) in self.listed.iter().enumerate() {
            let slot = &mut next[self.name_rank[l.name as usize] as usize];
            order[*slot as usize] = i as u32;
            *slot += 1;
        }
        drop(next);
        let rest = |&i: &u32| {
            let l = &self.listed[i as usize];
            (self.file_rank(l), l.line, i)
        };
        for run in members.windows(2) {
            let run = &mut order[run[0] as usize..run[1] as usize];
            if !run.is_sorted_by_key(rest) {
                run.sort_unstable_by_key(rest);
            }
        }
        (order, members)
    }

    /// Bytes of the regions (files, names, haystack starts, members, masks, symbols,
    /// haystack), in that order.
    fn region_sizes(&self) -> [usize; 7] {
        let n = self.name_ids.len();
        [
            self.file_recs.len() * 8,
            n * 8,
            (n + 1) * 4,
            (n + 1) * 4,
            n * 8,
            self.order.len() * SYMBOL,
            self.hay_len,
        ]
    }

    /// Bytes of the regions [`Plan::write`] writes.
    pub(crate) fn size(&self) -> usize {
        self.region_sizes().iter().sum()
    }

    /// The table's fields when its regions start at `base` in the payload and its
    /// strings at `strings_at`.
    pub(crate) fn fields(&self, base: usize, strings_at: usize) -> [usize; FIELDS] {
        let sizes = self.region_sizes();
        let mut at = [0usize; 7];
        let mut next = base;
        for (a, size) in at.iter_mut().zip(sizes) {
            *a = next;
            next += size;
        }
        [
            at[0],
            self.file_recs.len(),
            at[1],
            self.name_ids.len(),
            at[2],
            at[3],
            at[4],
            at[5],
            self.order.len(),
            at[6],
            self.hay_len,
            strings_at,
        ]
    }

    /// Writes the regions, [`Plan::size`] bytes.
    pub(crate) fn write<W: std::io::Write + ?Sized>(
        &self,
        r: &mut crate::cache::Regions<'_, W>,
    ) -> std::io::Result<()> {
        for &(at, len) in self.file_recs.iter().chain(&self.name_recs) {
            r.u32s(&[at, len])?;
        }
        r.u32s(&self.hay_starts)?;
        r.u32s(&self.members)?;
        r.u64s(&self.masks)?;
        for (name, run) in self.members.windows(2).enumerate() {
            for &i in &self.order[run[0] as usize..run[1] as usize] {
                let l = &self.listed[i as usize];
                r.u32s(&[
                    name as u32,
                    self.file_rank(l),
                    l.line,
                    l.kind,
                    l.unit,
                    l.die,
                ])?;
            }
        }
        let mut lower = String::new();
        for &n in &self.name_ids {
            lower.clear();
            crate::names::push_search_lowercase(&mut lower, self.names[n as usize]);
            lower.push('\n');
            r.bytes(lower.as_bytes())?;
        }
        Ok(())
    }
}

/// `ids` (of `names`, ascending) in the order of (length, bytes) of their names: placed
/// by length, then each run of one length sorted by bytes unless it already is (ids of
/// names sorted by their bytes, as the name table's are, come out in order).
fn by_length_then_bytes(ids: Vec<u32>, names: &[&str]) -> Vec<u32> {
    let len = |id: u32| names[id as usize].len();
    let longest = ids.iter().map(|&id| len(id)).max().unwrap_or(0);
    let mut starts = vec![0usize; longest + 2];
    for &id in &ids {
        starts[len(id) + 1] += 1;
    }
    for l in 0..=longest {
        starts[l + 1] += starts[l];
    }
    let mut out = vec![0u32; ids.len()];
    let mut next = starts.clone();
    for &id in &ids {
        let slot = &mut next[len(id)];
        out[*slot] = id;
        *slot += 1;
    }
    let bytes = |&id: &u32| names[id as usize].as_bytes();
    for run in starts.windows(2) {
        let run = &mut out[run[0]..run[1]];
        if !run.is_sorted_by_key(bytes) {
            run.sort_unstable_by_key(bytes);
        }
    }
    out
}

/// Whether an ELF function symbol names something a user declared: not a compiler's
/// clone (`[clone .cold]`), static-initialisation code, or a name left mangled.
fn is_user_function(name: &str) -> bool {
    !(name.is_empty()
        || name.contains('[')
        || name.starts_with("_Z")
        || name.starts_with("_GLOBAL__")
        || name.starts_with("__static_initialization")
        || name.contains('.'))
}

impl Binary {
    /// A symbol table of the ELF symbol table's functions, each at the line its code starts
    /// on (the line table's row at its address): what a language server lists before the
    /// full index is built, when no index cache file answers. It reads the symbol table and
    /// the line programs of the units with functions (each dropped once read, unless the
    /// unit's table was cached already), never a unit's DIEs. Types, variables and the
    /// declaration lines only the DIEs have come with the full index. `None` when there is
    /// no function with a line.
    pub fn elf_symbol_table(&self) -> Option<SymbolTable> {
        let started = std::time::Instant::now();
        let mut by_unit: std::collections::BTreeMap<usize, Vec<(u64, Arc<str>)>> =
            std::collections::BTreeMap::new();
        let mut names: std::collections::HashMap<String, Arc<str>> =
            std::collections::HashMap::new();
        for sym in self.elf_symbols() {
            if sym.kind != SymbolKind::Function || sym.size == 0 {
                continue;
            }
            let name = crate::names::normalize(sym.demangled());
            if !is_user_function(&name) {
                continue;
            }
            let Some(&unit) = self.units_for_addr(sym.addr).first() else {
                continue;
            };
            let name = names
                .entry(name)
                .or_insert_with_key(|n| Arc::from(n.as_str()));
            by_unit
                .entry(unit)
                .or_default()
                .push((sym.addr, name.clone()));
        }
        drop(names);
        // The units' line programs, read on every core (each worker takes the next unit).
        type UnitFunctions = (usize, Vec<(u64, Arc<str>)>);
        let by_unit: Vec<UnitFunctions> = by_unit.into_iter().collect();
        let next = std::sync::atomic::AtomicUsize::new(0);
        let workers = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
        // (unit position, its functions located), put back in unit order so the table does
        // not depend on the workers' timing.
        type Located = (usize, Vec<(Arc<str>, std::path::PathBuf, Line)>);
        let mut located: Vec<Located> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..workers)
                .map(|_| {
                    s.spawn(|| {
                        let mut out: Vec<Located> = Vec::new();
                        loop {
                            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some((unit, syms)) = by_unit.get(i) else {
                                return out;
                            };
                            let Ok(table) = self.line_table_once(*unit) else {
                                continue;
                            };
                            out.push((i, Vec::new()));
                            let Some((_, out)) = out.last_mut() else {
                                continue;
                            };
                            for (addr, name) in syms {
                                let Some(seq) = table.sequence_covering(*addr) else {
                                    continue;
                                };
                                let Some(row) = seq.row_for(*addr) else {
                                    continue;
                                };
                                let Some(path) = table.file_path(u64::from(row.file)) else {
                                    continue;
                                };
                                let Some(line) = Line::new(row.line) else {
                                    continue;
                                };
                                out.push((name.clone(), path.to_path_buf(), line));
                            }
                        }
                    })
                })
                .collect();
            handles
                .into_iter()
                .filter_map(|h| h.join().ok())
                .flatten()
                .collect()
        });
        located.sort_unstable_by_key(|l| l.0);
        let mut names: Vec<&str> = Vec::new();
        let mut name_ids: std::collections::HashMap<&str, u32> = std::collections::HashMap::new();
        let mut files: Vec<&Path> = Vec::new();
        let mut file_ids: std::collections::HashMap<&Path, u32> = std::collections::HashMap::new();
        let mut listed: Vec<Listed> = Vec::new();
        for (name, path, line) in located.iter().flat_map(|l| &l.1) {
            let name = *name_ids.entry(name).or_insert_with(|| {
                names.push(name);
                names.len() as u32 - 1
            });
            let file = *file_ids.entry(path).or_insert_with(|| {
                files.push(path);
                files.len() as u32 - 1
            });
            listed.push(Listed {
                name,
                file,
                line: line.get(),
                kind: kind_code(SymbolKind::Function, None),
                unit: u32::MAX,
                die: 0,
            });
        }
        if listed.is_empty() {
            return None;
        }
        let plan = Plan::new(&names, None, &files, &listed, 0);
        let mut bytes = Vec::with_capacity(plan.size() + plan.strings.len());
        let mut regions = crate::cache::Regions::new(&mut bytes);
        plan.write(&mut regions).ok()?;
        regions.finish().ok()?;
        let fields = plan.fields(0, bytes.len());
        bytes.extend_from_slice(&plan.strings);
        let table = SymbolTable::open(Arc::new(crate::cache::Blob::Heap(bytes)), 0, &fields);
        tracing::debug!(
            target: "tandem::cache",
            binary = %self.path().display(),
            symbols = listed.len(),
            elapsed = ?started.elapsed(),
            "symbol table of the ELF symbols built"
        );
        table
    }
}

impl Binary {
    /// The index entry of symbol `sym` of `table` (this binary's): its name, kind,
    /// declaration and DIE, and with `code` for a function the entry range of its code,
    /// for a global its address (its DIE read; without, `range` is `None`). `file` is the
    /// declaration file when the caller keeps one copy per file, else one is made. `None`
    /// for a symbol out of range.
    pub fn table_entry(
        &self,
        table: &SymbolTable,
        sym: usize,
        file: Option<Arc<Path>>,
        code: bool,
    ) -> Option<crate::index::SymbolEntry> {
        let s = table.symbol(sym)?;
        let name: Arc<str> = Arc::from(table.name(s.name)?);
        let file = match file {
            Some(f) => Some(f),
            None => table.file(s.file).map(Arc::from),
        };
        let range = s.die.filter(|_| code).and_then(|id| {
            let unit = self.unit(id.unit).ok()?;
            let die = unit.entry(id.offset).ok()?;
            match s.kind {
                SymbolKind::Function => self
                    .die_ranges(&unit, &die)
                    .first()
                    .map(|&(a, b)| crate::FileAddr(a)..crate::FileAddr(b)),
                SymbolKind::Variable => self
                    .static_address(&unit, &die)
                    .map(|a| crate::FileAddr(a)..crate::FileAddr(a)),
                SymbolKind::Type => None,
            }
        });
        Some(crate::index::SymbolEntry {
            name,
            kind: s.kind,
            decl_file: file,
            decl_line: s.line,
            range,
            die: s.die,
            form: s.form,
        })
    }

    /// The symbols of `table` (this binary's) whose qualified name ends with the
    /// components of `query`, in the table's order: the name table finds the names (as
    /// whole names or `::`-suffixes), `table` lists their symbols.
    pub fn table_symbols_named(&self, table: &SymbolTable, query: &str) -> Vec<usize> {
        let key = crate::names::normalize(query);
        let names = self.name_table();
        let mut out: Vec<usize> = names
            .names_for_key(&key)
            .into_iter()
            .filter_map(|(n, _)| table.find_name(names.name(n)?))
            .flat_map(|n| table.members(n))
            .collect();
        out.sort_unstable();
        out
    }
}
