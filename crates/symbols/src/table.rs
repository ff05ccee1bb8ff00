//! The name table: every named function, global, type and enumerator of a binary, with
//! the DIE each name stands for, laid out as the index cache file (`cache.rs`) holds it.
//! It is built one unit at a time — each unit's DIEs walked, what the table needs taken,
//! the unit's tables dropped — so a big program never holds its whole symbol index in
//! memory: the table, mapped from the cache file (or kept in one buffer when there is no
//! cache), is every name lookup's index.
//!
//! Regions (offsets from the payload's start, see `cache.rs` for the header):
//!
//! ```text
//! address map: (start u64, end u64, unit u32, 0 u32), sorted by start
//! key slots:   (hash u32, key offset u32, key length u32, first link u32, links u32),
//!              open addressing (FNV-1a of the key's bytes from last to first, so one
//!              pass over a name hashes all its suffixes; linear probing, a power of two
//!              of slots); a key is a name or one of its `::`-suffixes, its bytes those
//!              of a name in the strings (a suffix points into its name)
//! links:       u32 name indices, each key's ascending
//! names:       (string offset u32, length u32, first entry u32, entries u32), the distinct
//!              names sorted by their bytes
//! entries:     (kind u32, unit u32, DIE offset in the unit u32), each name's sorted by
//!              (unit, kind, offset)
//! strings:     the names in order, one blob
//! then the symbol table `workspace/symbol` searches (`symtab.rs`)
//! ```
//!
//! A key is the whole name when its length is the name's, else a suffix. Suffixes start
//! after each `::` outside template arguments and parentheses, so `std::map<std::string,
//! int>::find` has the keys `map<std::string, int>::find` and `find`, never `string, …`.
//!
//! The bytes depend only on the binary: names, entries and keys are ordered by content,
//! whatever order units were walked in, so a table built unit by unit is byte for byte
//! the one written from a full in-memory index.

use std::collections::HashMap;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::binary::Binary;
use crate::functions::UnitSymbols;
use crate::index::{SymbolKind, TypeForm};
use crate::units::DieId;

/// What a name table entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub(crate) enum EntryKind {
    /// A function DIE of the unit (code, or the abstract instance of inlined copies).
    Function = 0,
    /// The unit inlines the function (the DIE offset is 0: the calls are many).
    Inlined = 1,
    /// A global or static variable.
    Variable = 2,
    /// A named type.
    Type = 3,
    /// An enumerator; the DIE is its enum's.
    Enumerator = 4,
}

impl EntryKind {
    pub(crate) fn from_code(code: u32) -> Option<EntryKind> {
        Some(match code {
            0 => EntryKind::Function,
            1 => EntryKind::Inlined,
            2 => EntryKind::Variable,
            3 => EntryKind::Type,
            4 => EntryKind::Enumerator,
            _ => return None,
        })
    }
}

/// Where the `::`-suffixes of `name` start: after each `::` outside `<…>` and `(…)`
/// (an unmatched `>`, as in `operator->`, closes nothing). Empty suffixes are left out.
pub(crate) fn suffix_starts(name: &str) -> Vec<usize> {
    let b = name.as_bytes();
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'<' | b'(' => depth += 1,
            b'>' | b')' => depth = depth.saturating_sub(1),
            b':' if depth == 0 && b.get(i + 1) == Some(&b':') => {
                if i + 2 < b.len() {
                    out.push(i + 2);
                }
                i += 2;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// One entry while the table is gathered: name id (then rank), unit and kind, DIE
/// offset, in 12 bytes (ceph-osd: 2.5 million of them). Ordered as (name, unit, kind,
/// DIE offset).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Row {
    name: u32,
    /// The unit above [`KIND_BITS`] bits, the kind below.
    unit_kind: u32,
    die: u32,
}

/// Bits of [`Row::unit_kind`] that hold the kind.
const KIND_BITS: u32 = 3;

impl Row {
    /// `unit` is below `1 << (32 - KIND_BITS)` (`Gathered::add_unit` checks).
    fn new(name: u32, unit: u32, kind: EntryKind, die: u32) -> Row {
        Row {
            name,
            unit_kind: unit << KIND_BITS | kind as u32,
            die,
        }
    }

    fn unit(self) -> u32 {
        self.unit_kind >> KIND_BITS
    }

    fn kind(self) -> u32 {
        self.unit_kind & ((1 << KIND_BITS) - 1)
    }
}

/// Makes room for `more` elements: by an eighth of the length at least, rather than
/// doubling, so the gathered rows hold little unused capacity (the reallocation of a big
/// vector moves its pages, not its bytes).
fn room<T>(v: &mut Vec<T>, more: usize) {
    if v.capacity() - v.len() < more {
        v.reserve_exact(more.max(v.len() / 8));
    }
}

/// A symbol `workspace/symbol` lists: its unit and place in the unit's listing (functions,
/// then globals and types, as the full index's `entries()` yields them), name and file
/// ids, line and kind code (`symtab.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct ListedRow {
    unit: u32,
    pos: u32,
    name: u32,
    file: u32,
    line: u32,
    kind: u32,
    die: u32,
}

fn pack(id: DieId) -> Option<u64> {
    Some(
        u64::from(u32::try_from(id.unit).ok()?) << 32 | u64::from(u32::try_from(id.offset.0).ok()?),
    )
}

/// Maps keyed by the binary's names and paths: foldhash, not SipHash (see `intern.rs`).
type Map<K, V> = HashMap<K, V, foldhash::fast::FixedState>;

/// What the table needs of every unit, gathered in any order.
///
/// Names and files are told apart by address: the walk shares one copy of each name
/// (`intern.rs`) and of each file of a unit, so hashing an address finds them; copies of
/// equal text that are not shared get ids of their own, merged when laid out.
#[derive(Default)]
pub(crate) struct Gathered {
    names: Map<usize, u32>,
    name_list: Vec<Arc<str>>,
    files: Map<usize, u32>,
    file_list: Vec<Arc<Path>>,
    rows: Vec<Row>,
    /// (function key, unit, place in the unit, name id): how the inlined calls of a
    /// function are named, whichever unit its out-of-line copy or abstract DIE is in.
    keys: Vec<(u64, u32, u32, u32)>,
    /// (function key, unit) of every function a unit inlines.
    inlined: Vec<(u64, u32)>,
    listed: Vec<ListedRow>,
}

impl Gathered {
    fn name(&mut self, s: &Arc<str>) -> u32 {
        let at = s.as_ptr() as usize;
        if let Some(&id) = self.names.get(&at) {
            return id;
        }
        let id = self.name_list.len() as u32;
        self.names.insert(at, id);
        self.name_list.push(s.clone());
        id
    }

    fn file(&mut self, f: &Arc<Path>) -> u32 {
        let at = f.as_os_str().as_bytes().as_ptr() as usize;
        if let Some(&id) = self.files.get(&at) {
            return id;
        }
        let id = self.file_list.len() as u32;
        self.files.insert(at, id);
        self.file_list.push(f.clone());
        id
    }

    /// Takes what the table needs of unit `unit`'s symbols.
    pub(crate) fn add_unit(&mut self, unit: usize, syms: &UnitSymbols) {
        let Some(unit32) = u32::try_from(unit)
            .ok()
            .filter(|&u| u < 1 << (32 - KIND_BITS))
        else {
            return;
        };
        let entries = syms.funcs.len() + syms.others.len();
        room(&mut self.rows, entries + syms.enumerators.len());
        room(&mut self.listed, entries);
        let mut pos = 0u32;
        for f in &syms.funcs {
            let at = pos;
            pos += 1;
            let (Ok(die), false) = (u32::try_from(f.die.offset.0), f.qualified.is_empty()) else {
                continue;
            };
            let name = self.name(&f.qualified);
            self.rows
                .push(Row::new(name, unit32, EntryKind::Function, die));
            if let Some(key) = pack(f.key) {
                self.keys.push((key, unit32, at, name));
            }
            let file = f
                .decl_file
                .as_ref()
                .map_or(u32::MAX, |file| self.file(file));
            self.listed.push(ListedRow {
                unit: unit32,
                pos: at,
                name,
                file,
                line: f.decl_line.map_or(0, |l| l.get()),
                kind: crate::symtab::kind_code(SymbolKind::Function, None),
                die,
            });
        }
        for e in &syms.others {
            let at = pos;
            pos += 1;
            let Some(die) = e.die.and_then(|d| u32::try_from(d.offset.0).ok()) else {
                continue;
            };
            if e.name.is_empty() {
                continue;
            }
            let name = self.name(&e.name);
            let kind = match e.kind {
                SymbolKind::Function => EntryKind::Function,
                SymbolKind::Variable => EntryKind::Variable,
                SymbolKind::Type => EntryKind::Type,
            };
            self.rows.push(Row::new(name, unit32, kind, die));
            let file = e
                .decl_file
                .as_ref()
                .map_or(u32::MAX, |file| self.file(file));
            let form: Option<TypeForm> = e.form;
            self.listed.push(ListedRow {
                unit: unit32,
                pos: at,
                name,
                file,
                line: e.decl_line.map_or(0, |l| l.get()),
                kind: crate::symtab::kind_code(e.kind, form),
                die,
            });
        }
        for (n, offset) in &syms.enumerators {
            let Ok(die) = u32::try_from(offset.0) else {
                continue;
            };
            if n.is_empty() {
                continue;
            }
            let name = self.name(n);
            self.rows
                .push(Row::new(name, unit32, EntryKind::Enumerator, die));
        }
        let mut inlined: Vec<u64> = syms.inlined.iter().filter_map(|&(k, _)| pack(k)).collect();
        inlined.sort_unstable();
        inlined.dedup();
        self.inlined
            .extend(inlined.into_iter().map(|k| (k, unit32)));
    }

    /// The file's bytes: header and payload, the payload's regions in the order the
    /// module documentation gives. `Err` when a region would not fit u32 offsets.
    pub(crate) fn finish(self, binary: &Binary, key: &str) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        let sum = self.write(binary, key, &mut out)?;
        if let Some(field) = out.get_mut(24..28) {
            field.copy_from_slice(&sum.to_le_bytes());
        }
        Ok(out)
    }

    /// Writes the file to `out` as [`Gathered::finish`] makes it, but for its checksum,
    /// which is returned (the caller puts it at bytes 24..28): a big program's table is
    /// streamed to its file, never whole in memory.
    pub(crate) fn write(
        self,
        binary: &Binary,
        key: &str,
        out: &mut dyn Write,
    ) -> Result<u32, String> {
        let Gathered {
            names,
            name_list,
            files,
            file_list,
            mut rows,
            mut keys,
            mut inlined,
            mut listed,
        } = self;
        drop(names);
        drop(files);
        // Names by their bytes; each id's rank in that order.
        // Distinct names by their bytes; each id's rank among them (ids of equal text,
        // one rank).
        let mut order: Vec<u32> = (0..name_list.len() as u32).collect();
        order.sort_unstable_by(|&a, &b| name_list[a as usize].cmp(&name_list[b as usize]));
        let mut rank = vec![0u32; name_list.len()];
        let mut sorted: Vec<&str> = Vec::new();
        for &id in &order {
            let name = &*name_list[id as usize];
            if sorted.last() != Some(&name) {
                sorted.push(name);
            }
            rank[id as usize] = sorted.len() as u32 - 1;
        }
        drop(order);
        // An inlined function is named by the first function entry (in unit order) with
        // its key, whichever unit that is in (with GCC's LTO, the abstract DIE of an
        // inlined call may have no entry of its own: the out-of-line copy names it).
        keys.sort_unstable();
        keys.dedup_by_key(|k| k.0);
        inlined.sort_unstable();
        inlined.dedup();
        // Made room for exactly: growing the rows by doubling would hold twice them.
        let name_of = |key: u64| {
            keys.binary_search_by_key(&key, |k| k.0)
                .ok()
                .map(|i| keys[i].3)
        };
        rows.reserve_exact(
            inlined
                .iter()
                .filter(|&&(key, _)| name_of(key).is_some())
                .count(),
        );
        for (key, unit) in inlined.drain(..) {
            if let Some(name) = name_of(key) {
                rows.push(Row::new(name, unit, EntryKind::Inlined, 0));
            }
        }
        drop(inlined);
        drop(keys);
        for r in &mut rows {
            r.name = rank[r.name as usize];
        }
        // By (name, unit and kind, DIE) as one number: a fifth faster than comparing
        // the fields one by one.
        rows.sort_unstable_by_key(|r| {
            u128::from(r.name) << 64 | u128::from(r.unit_kind) << 32 | u128::from(r.die)
        });
        rows.dedup();

        let fits =
            |n: usize| u32::try_from(n).map_err(|_| "the name table is over 4 GiB".to_string());
        let mut string_at = Vec::with_capacity(sorted.len());
        let mut strings_len = 0usize;
        for s in &sorted {
            string_at.push(fits(strings_len)?);
            strings_len += s.len();
        }
        fits(strings_len)?;
        // Keys: every name and its suffixes, equal keys merged (by hash, then bytes).
        let mut key_rows: Vec<(u32, u32, u32)> = Vec::new();
        for (r, s) in sorted.iter().enumerate() {
            let starts = suffix_starts(s);
            for (start, hash) in crate::cache::suffix_key_hashes(s.as_bytes(), &starts) {
                key_rows.push((hash, r as u32, start as u32));
            }
        }
        let key_of = |k: &(u32, u32, u32)| &sorted[k.1 as usize].as_bytes()[k.2 as usize..];
        key_rows.sort_unstable_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| key_of(a).cmp(key_of(b)))
                .then(a.1.cmp(&b.1))
        });
        // Each run of equal keys in `key_rows` is one slot: counted first, so the slots
        // are placed as the runs are met (a list of them would cost 20 bytes a key more).
        let run_end = |i: usize| {
            let bytes = key_of(&key_rows[i]);
            let hash = key_rows[i].0;
            let mut j = i;
            while j < key_rows.len() && key_rows[j].0 == hash && key_of(&key_rows[j]) == bytes {
                j += 1;
            }
            j
        };
        let mut distinct = 0usize;
        let mut i = 0;
        while i < key_rows.len() {
            i = run_end(i);
            distinct += 1;
        }
        let slot_count = (distinct * 2).next_power_of_two().max(8);
        let ranges = binary.unit_address_ranges();
        // The key slots, placed by open addressing: in memory (tens of megabytes), the
        // rest is written as it is made. A slot: (hash, key offset, key length, first
        // link, links).
        let mut slots = vec![0u8; slot_count * crate::cache::SLOT];
        let mut links: Vec<u32> = Vec::with_capacity(key_rows.len());
        let mut i = 0;
        while i < key_rows.len() {
            let j = run_end(i);
            let (hash, name, start) = key_rows[i];
            let first = fits(links.len())?;
            links.extend(key_rows[i..j].iter().map(|k| k.1));
            let fields = [
                hash,
                string_at[name as usize] + start,
                key_of(&key_rows[i]).len() as u32,
                first,
                (j - i) as u32,
            ];
            let mut slot = hash as usize & (slot_count - 1);
            while crate::cache::u32_at(&slots, slot * crate::cache::SLOT + 16) != Some(0) {
                slot = (slot + 1) & (slot_count - 1);
            }
            let at = slot * crate::cache::SLOT;
            for (k, v) in fields.into_iter().enumerate() {
                slots[at + 4 * k..at + 4 * k + 4].copy_from_slice(&v.to_le_bytes());
            }
            i = j;
        }
        drop(key_rows);

        // The symbol table, in the full index's order of entries. Distinct files by their
        // bytes, as names are.
        let mut file_order: Vec<u32> = (0..file_list.len() as u32).collect();
        let bytes = |id: u32| file_list[id as usize].as_os_str().as_bytes();
        file_order.sort_unstable_by(|&a, &b| bytes(a).cmp(bytes(b)));
        let mut file_rank = vec![0u32; file_list.len()];
        let mut files: Vec<&Path> = Vec::new();
        for &id in &file_order {
            let file = &*file_list[id as usize];
            if files.last().map(|f| f.as_os_str().as_bytes()) != Some(bytes(id)) {
                files.push(file);
            }
            file_rank[id as usize] = files.len() as u32 - 1;
        }
        // By (unit, place in the unit), which no two rows share: comparing the rest of
        // the row would decide nothing.
        listed.sort_unstable_by_key(|l| (l.unit, l.pos));
        // In place (the rows are as big as what they become).
        let listing: Vec<crate::symtab::Listed> = listed
            .into_iter()
            .map(|l| crate::symtab::Listed {
                name: rank[l.name as usize],
                file: file_rank.get(l.file as usize).copied().unwrap_or(u32::MAX),
                line: l.line,
                kind: l.kind,
                unit: l.unit,
                die: l.die,
            })
            .collect();
        let plan =
            crate::symtab::Plan::new(&sorted, Some(&string_at), &files, &listing, strings_len);

        // Where everything goes: the name table's regions, the symbol table's, then the
        // strings both point to (the names, then the symbol table's paths).
        let key_pad = key.len().div_ceil(8) * 8;
        let table = key_pad;
        let ranges_at = table + 4 * crate::cache::TABLE_FIELDS;
        let slots_at = ranges_at + ranges.len() * crate::cache::RANGE;
        let links_at = slots_at + slots.len();
        let names_at = links_at + links.len() * 4;
        let entries_at = names_at + sorted.len() * crate::cache::NAME;
        let symtab_at = entries_at + rows.len() * crate::cache::ENTRY;
        let strings_at = symtab_at + plan.size();
        let payload_len = strings_at + strings_len + plan.strings.len();
        fits(payload_len)?;
        let mut fields: Vec<u32> = [
            ranges_at,
            ranges.len(),
            slots_at,
            slot_count,
            links_at,
            links.len(),
            names_at,
            sorted.len(),
            entries_at,
            rows.len(),
            strings_at,
            strings_len,
        ]
        .into_iter()
        .map(|v| v as u32)
        .collect();
        fields.extend(plan.fields(symtab_at, strings_at).map(|v| v as u32));

        let io = |e: std::io::Error| format!("cannot write the name table: {e}");
        let mut w = crate::cache::Checksummed::new(out, binary, key, payload_len).map_err(io)?;
        (|| -> std::io::Result<()> {
            let mut r = crate::cache::Regions::new(&mut w);
            r.bytes(key.as_bytes())?;
            r.bytes(&[0u8; 8][..key_pad - key.len()])?;
            r.u32s(&fields)?;
            for &(start, end, unit) in ranges {
                r.u64s(&[start, end])?;
                r.u32s(&[unit as u32, 0])?;
            }
            r.bytes(&slots)?;
            r.u32s(&links)?;
            let mut next_row = 0usize;
            for (n, s) in sorted.iter().enumerate() {
                let first = next_row;
                while next_row < rows.len() && rows[next_row].name as usize == n {
                    next_row += 1;
                }
                r.u32s(&[
                    string_at[n],
                    s.len() as u32,
                    first as u32,
                    (next_row - first) as u32,
                ])?;
            }
            for row in &rows {
                r.u32s(&[row.kind(), row.unit(), row.die])?;
            }
            plan.write(&mut r)?;
            for s in &sorted {
                r.bytes(s.as_bytes())?;
            }
            r.bytes(&plan.strings)?;
            r.finish()
        })()
        .map_err(io)?;
        w.finish().map_err(io)
    }
}

impl Binary {
    /// The name table's bytes (a whole cache file for key `key`), gathered from every
    /// unit on parallel threads: a unit whose symbols are cached (a request walked it,
    /// or the full index was built) is read from there, any other is walked for this
    /// alone and its tables dropped once taken. `progress` gets (units done, units).
    pub(crate) fn table_bytes(
        &self,
        key: &str,
        progress: &(dyn Fn(usize, usize) + Sync),
    ) -> Vec<u8> {
        let gathered = self.gather(progress);
        let started = std::time::Instant::now();
        let laid_out = gathered.finish(self, key);
        tracing::debug!(
            target: "tandem::cache",
            path = %self.path.display(),
            elapsed = ?started.elapsed(),
            "name table laid out"
        );
        match laid_out {
            Ok(bytes) => bytes,
            Err(e) => {
                tracing::warn!(path = %self.path.display(), "no name table: {e}");
                Gathered::default().finish(self, key).unwrap_or_default()
            }
        }
    }

    /// What the name table needs of every unit (see [`Binary::table_bytes`]).
    pub(crate) fn gather(&self, progress: &(dyn Fn(usize, usize) + Sync)) -> Gathered {
        let started = std::time::Instant::now();
        let n = self.units().len();
        let gathered = Mutex::new(Gathered::default());
        self.each_unit(
            |i| {
                // A unit parsed for this alone is dropped again once taken.
                self.for_pass(i, || match self.unit_symbols_once(i) {
                    Ok(syms) => gathered
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .add_unit(i, &syms),
                    Err(e) => tracing::warn!("skipping unit {i} in the name table: {e}"),
                });
                self.release_unit_pages(i);
            },
            &|finished, total| {
                // The other sections' pages (strings, abbreviations, line programs) are
                // shared by the units: dropped every few units, not kept until the end
                // (ceph-osd: 210 MiB of them by the last unit).
                if finished % RELEASE_EVERY == 0 {
                    self.release_file_pages();
                }
                progress(finished, total);
            },
        );
        self.names.clear();
        // The scope paths made for one another's walks (GCC's LTO units name their
        // functions through other units' DIEs) are made again if a request needs them.
        // Keeping every unit's cost ceph-osd 26 MiB that no other unit read.
        for slot in self.units() {
            slot.paths.evict();
        }
        self.release_file_pages();
        let gathered = gathered.into_inner().unwrap_or_else(|e| e.into_inner());
        tracing::debug!(
            target: "tandem::cache",
            path = %self.path.display(),
            units = n,
            names = gathered.name_list.len(),
            entries = gathered.rows.len(),
            elapsed = ?started.elapsed(),
            "name table gathered"
        );
        gathered
    }
}

/// Units read between two releases of the binary's file pages: by the name table's
/// gather, and while the source files are listed (`lines.rs`).
pub(crate) const RELEASE_EVERY: usize = 4;

impl Binary {
    /// The names of the name table (built first if need be) that start with `prefix`
    /// and that `keep` accepts, in the order of their bytes, at most `limit`, each with
    /// the kind of its first entry (in unit order): identifier completion. Enumerators
    /// are not listed.
    pub fn names_with_prefix(
        &self,
        prefix: &str,
        limit: usize,
        keep: impl Fn(&str) -> bool,
    ) -> Vec<(String, SymbolKind)> {
        let table = self.name_table();
        let mut out = Vec::new();
        for n in table.names_with_prefix(prefix) {
            if out.len() >= limit {
                break;
            }
            let Some(name) = table.name(n).filter(|name| keep(name)) else {
                continue;
            };
            let kind = table.entries(n).find_map(|e| match e.kind {
                EntryKind::Function | EntryKind::Inlined => Some(SymbolKind::Function),
                EntryKind::Variable => Some(SymbolKind::Variable),
                EntryKind::Type => Some(SymbolKind::Type),
                EntryKind::Enumerator => None,
            });
            if let Some(kind) = kind {
                out.push((name.to_string(), kind));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::suffix_starts;

    fn suffixes(name: &str) -> Vec<&str> {
        suffix_starts(name)
            .into_iter()
            .map(|i| &name[i..])
            .collect()
    }

    #[test]
    fn suffixes_split_outside_template_arguments_only() {
        assert_eq!(suffixes("ns::Class::method"), ["Class::method", "method"]);
        assert_eq!(
            suffixes("std::map<std::string, int>::find"),
            ["map<std::string, int>::find", "find"]
        );
        assert_eq!(
            suffixes("(anonymous namespace)::f(std::x)::g"),
            ["f(std::x)::g", "g"]
        );
        assert_eq!(suffixes("C::operator->"), ["operator->"]);
        assert_eq!(suffixes("main"), Vec::<&str>::new());
        assert_eq!(suffixes("trailing::"), Vec::<&str>::new());
    }
}
