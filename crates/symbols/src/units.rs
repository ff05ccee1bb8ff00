//! Compilation units: lazy parsing and caching, lookup by offset and address, DIE helpers.

use std::sync::{Arc, Mutex, OnceLock};

use gimli::{AttributeValue, DebuggingInformationEntry, Reader, UnitOffset};

use crate::binary::Binary;
use crate::error::{Error, Result};
use crate::functions::UnitSymbols;
use crate::lines::LineTable;
use crate::reader::R;

/// A parsed unit with the DWARF sections its attributes are read from: the
/// executable's, or a split unit's `.dwo` / package contribution (`split.rs`).
pub(crate) struct Unit {
    unit: gimli::Unit<R>,
    dwarf: Arc<gimli::Dwarf<R>>,
    split: bool,
}

/// Which units cover which addresses, read once per binary.
#[derive(Debug, Default)]
pub(crate) struct UnitRanges {
    /// Sorted address ranges → unit index.
    pub(crate) ranges: Vec<(u64, u64, usize)>,
    /// Units with no declared range, in index order.
    pub(crate) rangeless: Vec<usize>,
}

impl Unit {
    pub(crate) fn new(unit: gimli::Unit<R>, dwarf: Arc<gimli::Dwarf<R>>) -> Unit {
        Unit {
            unit,
            dwarf,
            split: false,
        }
    }

    pub(crate) fn split(unit: gimli::Unit<R>, dwarf: Arc<gimli::Dwarf<R>>) -> Unit {
        Unit {
            unit,
            dwarf,
            split: true,
        }
    }

    /// The sections this unit's attributes refer to.
    pub(crate) fn dwarf_arc(&self) -> &Arc<gimli::Dwarf<R>> {
        &self.dwarf
    }

    /// The unit and its sections, for gimli's attribute helpers.
    pub(crate) fn r(&self) -> gimli::UnitRef<'_, R> {
        self.unit.unit_ref(&self.dwarf)
    }

    /// Whether the DIEs come from a split file (`.dwo` or `.dwp`).
    pub(crate) fn is_split(&self) -> bool {
        self.split
    }

    /// The string attribute value `value` names (gimli's `attr_string`). Strings in
    /// `.debug_str` and `.debug_line_str` are ended with memchr: gimli looks for their
    /// NUL a byte at a time, and reading the names of a big C++ program's DIEs (long
    /// linkage names) was 8% of its name table's build.
    pub(crate) fn string(&self, value: AttributeValue<R>) -> gimli::Result<R> {
        use gimli::Section;
        let at = match value {
            AttributeValue::DebugStrRef(o) => Some((self.dwarf.debug_str.reader(), o.0)),
            AttributeValue::DebugStrOffsetsIndex(i) => self
                .dwarf
                .string_offset(self, i)
                .ok()
                .map(|o| (self.dwarf.debug_str.reader(), o.0)),
            AttributeValue::DebugLineStrRef(o) => Some((self.dwarf.debug_line_str.reader(), o.0)),
            _ => None,
        };
        match at.and_then(|(section, offset)| null_terminated(section, offset)) {
            Some(s) => Ok(s),
            // Other forms, and the errors, as gimli gives them.
            None => self.dwarf.attr_string(self, value),
        }
    }
}

/// The bytes of `section` from `offset` to the next NUL, without it.
fn null_terminated(section: &R, offset: usize) -> Option<R> {
    let mut r = section.clone();
    r.skip(offset).ok()?;
    let len = memchr::memchr(0, r.bytes())?;
    r.truncate(len).ok()?;
    Some(r)
}

impl std::ops::Deref for Unit {
    type Target = gimli::Unit<R>;
    fn deref(&self) -> &gimli::Unit<R> {
        &self.unit
    }
}
pub(crate) type Die = DebuggingInformationEntry<R>;
/// A unit's file names indexed by DWARF file index.
pub(crate) type FileTable = Arc<Vec<Option<Arc<std::path::Path>>>>;

/// A unit whose DIEs could not be read (corrupt or truncated DWARF): its functions,
/// variables and types are missing, the rest of the program is not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnreadableUnit {
    /// Where the unit starts in `.debug_info`.
    pub offset: u64,
    /// Its `DW_AT_name`, when its root DIE could be read.
    pub name: Option<String>,
    /// What went wrong.
    pub error: String,
}

impl std::fmt::Display for UnreadableUnit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the debug information of unit ")?;
        if let Some(name) = &self.name {
            write!(f, "{name} ")?;
        }
        write!(
            f,
            "(.debug_info offset {:#x}) cannot be read ({}): its functions, variables and types are not available",
            self.offset, self.error
        )
    }
}

/// A value made on first use and kept until evicted: what a pass over every unit
/// parses is dropped again after it (`Binary::evict_unit`), so hundreds of units'
/// abbreviations are not kept for the rest of the session (ceph-osd: 66 MiB).
pub(crate) struct Kept<T>(Mutex<Option<T>>);

impl<T: Clone> Kept<T> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<T>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The value, if it is kept.
    pub(crate) fn get(&self) -> Option<T> {
        self.lock().clone()
    }

    /// The value, made by `make` if it is not kept (others wait for it meanwhile, as
    /// with `OnceLock`: `make` must not ask for this value again).
    pub(crate) fn get_or_init(&self, make: impl FnOnce() -> T) -> T {
        let mut kept = self.lock();
        if let Some(v) = &*kept {
            return v.clone();
        }
        let v = make();
        *kept = Some(v.clone());
        v
    }

    /// Drops the value (those holding it keep theirs; the next use makes it again).
    pub(crate) fn evict(&self) {
        let old = self.lock().take();
        drop(old);
    }
}

impl<T> Default for Kept<T> {
    fn default() -> Self {
        Kept(Mutex::new(None))
    }
}

/// One compilation unit: its header is read at open time, the rest on first use.
pub(crate) struct UnitSlot {
    pub(crate) header: gimli::UnitHeader<R>,
    pub(crate) offset: u64,
    /// The unit as the executable has it (for a split unit, its skeleton).
    unit: Kept<Result<Arc<Unit>, gimli::Error>>,
    /// The unit DIEs are read from: the split unit when there is one, else `unit`.
    dies: Kept<Arc<Unit>>,
    pub(crate) files: OnceLock<Result<FileTable, gimli::Error>>,
    pub(crate) lines: OnceLock<Result<Arc<LineTable>, gimli::Error>>,
    /// Single sequences of the line table, decoded before (or instead of) `lines`.
    pub(crate) seqs: crate::seqs::SeqCache,
    pub(crate) funcs: OnceLock<Result<Arc<UnitSymbols>, gimli::Error>>,
    /// The scope paths of the unit's functions without a linkage name (as in `funcs`),
    /// made when `funcs` is not kept and another unit's function is named through this
    /// one's DIEs (`Binary::scope_path_of`); the name table's pass drops them at its end.
    pub(crate) paths: Kept<Arc<std::collections::HashMap<UnitOffset<usize>, Arc<str>>>>,
    /// The address → scope index (`blocks.rs`), built from `funcs` on first use.
    pub(crate) blocks: OnceLock<Result<Arc<crate::blocks::BlockIndex>, gimli::Error>>,
    pub(crate) call_sites: OnceLock<Result<Arc<crate::callsites::UnitCallSites>, gimli::Error>>,
}

impl UnitSlot {
    pub(crate) fn new(header: gimli::UnitHeader<R>) -> UnitSlot {
        let offset = match (header.debug_info_offset(), header.debug_types_offset()) {
            (Some(o), _) => o.0 as u64,
            (None, Some(o)) => TYPES_BASE.saturating_add(o.0 as u64),
            (None, None) => u64::MAX,
        };
        UnitSlot {
            header,
            offset,
            unit: Kept::default(),
            dies: Kept::default(),
            files: OnceLock::new(),
            lines: OnceLock::new(),
            seqs: Default::default(),
            funcs: OnceLock::new(),
            paths: Kept::default(),
            blocks: OnceLock::new(),
            call_sites: OnceLock::new(),
        }
    }
}

/// Ids of DIEs in `.debug_types` (DWARF 4 type units) start here, above any
/// `.debug_info` offset.
pub(crate) const TYPES_BASE: u64 = 1 << 62;

/// Ids of DIEs in split units (`.dwo`, `.dwp`) start here: `SPLIT_BASE + (unit << 32) +
/// offset`, below [`TYPES_BASE`] and above any `.debug_info` offset.
pub(crate) const SPLIT_BASE: u64 = 1 << 61;

/// A DIE anywhere in `.debug_info`: unit index plus offset within the unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct DieId {
    pub(crate) unit: usize,
    pub(crate) offset: UnitOffset<usize>,
}

/// How much of the debug information has been parsed so far (for progress reports
/// and for checking that queries stay lazy).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Compilation units in the binary.
    pub units: usize,
    /// Units whose header, abbreviations and root DIE were parsed.
    pub parsed_units: usize,
    /// Units whose line program header (file table) was read.
    pub file_tables: usize,
    /// Units whose line table rows were decoded.
    pub line_tables: usize,
    /// Line-table sequences decoded alone, without their unit's whole table
    /// (`seqs.rs`), and kept.
    pub single_sequences: usize,
    /// Units whose DIE tree was walked for functions, globals and types.
    pub die_walks: usize,
    /// Whether the full symbol index was built.
    pub index_built: bool,
    /// Of `parsed_units`, those parsed for a request rather than by the background
    /// index.
    pub request_parsed_units: usize,
    /// DIE tree walks (functions, call sites) done for a request rather than by the
    /// background index.
    pub request_die_walks: usize,
}

impl Binary {
    /// Runs `work` on every unit on up to 8 threads, each taking the next unit, and
    /// `done(finished, total)` after each. The workers' parsing counts as the caller's
    /// (a request's, or the background's: see `stats`).
    pub(crate) fn each_unit(
        &self,
        work: impl Fn(usize) + Sync,
        done: &(dyn Fn(usize, usize) + Sync),
    ) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let n = self.units().len();
        let threads = std::thread::available_parallelism()
            .map_or(2, |p| p.get())
            .clamp(1, 8);
        let next = AtomicUsize::new(0);
        let finished = AtomicUsize::new(0);
        let background = crate::stats::in_background();
        std::thread::scope(|s| {
            for _ in 0..threads.min(n.max(1)) {
                s.spawn(|| loop {
                    crate::stats::set_background(background);
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        break;
                    }
                    work(i);
                    done(finished.fetch_add(1, Ordering::Relaxed) + 1, n);
                });
            }
        });
    }

    /// What has been parsed so far.
    pub fn cache_stats(&self) -> CacheStats {
        CacheStats {
            units: self.units().len(),
            parsed_units: self
                .units()
                .iter()
                .filter(|u| u.unit.get().is_some())
                .count(),
            file_tables: self
                .units()
                .iter()
                .filter(|u| u.files.get().is_some())
                .count(),
            line_tables: self
                .units()
                .iter()
                .filter(|u| u.lines.get().is_some())
                .count(),
            single_sequences: self.units().iter().map(|u| u.seqs.decoded_count()).sum(),
            die_walks: self
                .units()
                .iter()
                .filter(|u| u.funcs.get().is_some())
                .count(),
            index_built: self.index.get().is_some(),
            request_parsed_units: self.counters.units(),
            request_die_walks: self.counters.walks(),
        }
    }

    /// The unit whose DIEs requests read (abbreviations, root DIE, line program
    /// header), cached: for a split DWARF skeleton, its split unit (loaded from the
    /// `.dwo` or `.dwp` on first use), else the unit itself.
    pub(crate) fn unit(&self, index: usize) -> Result<Arc<Unit>> {
        if index >= self.units().len() {
            return self.split_type_unit(index);
        }
        let skeleton = self.skeleton(index)?;
        let slot = &self.units()[index];
        Ok(slot
            .dies
            .get_or_init(|| match self.load_split(index, &skeleton) {
                Some(split) => Arc::new(split),
                None => skeleton.clone(),
            }))
    }

    /// Runs `work` on unit `index` for a pass over every unit: if the unit was not
    /// parsed before, its parsed form is dropped again afterwards (see [`Kept`]); one a
    /// request parsed stays.
    pub(crate) fn for_pass<T>(&self, index: usize, work: impl FnOnce() -> T) -> T {
        let kept = self
            .units()
            .get(index)
            .is_some_and(|slot| slot.unit.get().is_some());
        let out = work();
        if !kept {
            self.evict_unit(index);
        }
        out
    }

    /// Drops unit `index`'s parsed form (abbreviations, root DIE, line program header,
    /// split unit). A split unit stays: whether it is loaded says how its DIE ids read
    /// ([`Binary::global_offset`]).
    fn evict_unit(&self, index: usize) {
        if let Some(slot) = self.units().get(index) {
            if slot.dies.get().is_some_and(|u| u.is_split()) {
                return;
            }
            slot.dies.evict();
            slot.unit.evict();
        }
    }

    /// Records that unit `index`'s DIEs could not be read (once per unit: the caller's
    /// result is cached).
    pub(crate) fn note_unreadable(&self, index: usize, error: &gimli::Error) {
        let name = self.skeleton(index).ok().and_then(|u| {
            u.name
                .as_ref()
                .and_then(|n| n.to_string_lossy().ok().map(|n| n.into_owned()))
        });
        let unit = UnreadableUnit {
            offset: self.units().get(index).map_or(0, |u| u.offset),
            name,
            error: error.to_string(),
        };
        tracing::warn!(path = %self.path.display(), "{unit}");
        let mut list = self.unreadable.lock().unwrap_or_else(|p| p.into_inner());
        list.0.push(unit);
    }

    /// The units found unreadable since the last call (each is returned once), for a
    /// front-end to tell its user.
    pub fn take_unreadable_units(&self) -> Vec<UnreadableUnit> {
        let mut list = self.unreadable.lock().unwrap_or_else(|p| p.into_inner());
        let (all, taken) = &mut *list;
        let new = all.get(*taken..).unwrap_or_default().to_vec();
        *taken = all.len();
        new
    }

    /// The unit as the executable holds it, whose line program and address ranges
    /// are the unit's (for a split unit, its skeleton; nothing else is loaded).
    pub(crate) fn skeleton(&self, index: usize) -> Result<Arc<Unit>> {
        if index >= self.units().len() {
            return self.split_type_unit(index);
        }
        let slot = self
            .units()
            .get(index)
            .ok_or(Error::BadReference(index as u64))?;
        let result = slot.unit.get_or_init(|| {
            self.counters.unit_parsed();
            self.dwarf()
                .unit(slot.header.clone())
                .map(|u| Arc::new(Unit::new(u, self.dwarf_arc().clone())))
        });
        result.map_err(Error::from)
    }

    /// The unit that contains `.debug_info` offset `offset`.
    pub(crate) fn unit_index_for_offset(&self, offset: u64) -> Option<usize> {
        let pos = self.units().partition_point(|u| u.offset <= offset);
        let index = pos.checked_sub(1)?;
        let slot = &self.units()[index];
        let end = slot
            .offset
            .saturating_add(slot.header.length_including_self() as u64);
        (offset < end).then_some(index)
    }

    /// Type signature → the type's DIE in its type unit (DWARF 4 and 5 type units).
    pub(crate) fn type_signatures(&self) -> &std::collections::HashMap<u64, DieId> {
        self.type_signatures.get_or_init(|| {
            let mut map = std::collections::HashMap::new();
            for (unit, slot) in self.units().iter().enumerate() {
                if let gimli::UnitType::Type {
                    type_signature,
                    type_offset,
                } = slot.header.type_()
                {
                    map.insert(
                        type_signature.0,
                        DieId {
                            unit,
                            offset: type_offset,
                        },
                    );
                }
            }
            map
        })
    }

    /// Converts a global `.debug_info` offset to a DIE id.
    pub(crate) fn die_id(&self, global: u64) -> Option<DieId> {
        if (SPLIT_BASE..TYPES_BASE).contains(&global) {
            let unit = usize::try_from((global - SPLIT_BASE) >> 32).ok()?;
            let local = usize::try_from(global & 0xffff_ffff).ok()?;
            return (unit < self.units().len() + self.split_types.len()).then_some(DieId {
                unit,
                offset: UnitOffset(local),
            });
        }
        let unit = self.unit_index_for_offset(global)?;
        let local = usize::try_from(global - self.units()[unit].offset).ok()?;
        Some(DieId {
            unit,
            offset: UnitOffset(local),
        })
    }

    /// The global `.debug_info` offset of a DIE.
    pub(crate) fn global_offset(&self, id: DieId) -> u64 {
        let split = match self.units().get(id.unit) {
            Some(slot) => slot.dies.get().is_some_and(|u| u.is_split()),
            // A split file's type unit (`split.rs`).
            None => true,
        };
        if split {
            // A split unit's DIE offsets are its own file's, unrelated to the skeleton's
            // place in `.debug_info`: the id says unit and offset outright.
            return SPLIT_BASE + ((id.unit as u64) << 32) + (id.offset.0 as u64 & 0xffff_ffff);
        }
        self.units()[id.unit].offset + id.offset.0 as u64
    }

    /// Resolves a reference attribute to the DIE it names.
    pub(crate) fn resolve_ref(&self, unit: usize, value: &AttributeValue<R>) -> Option<DieId> {
        match value {
            AttributeValue::UnitRef(offset) => Some(DieId {
                unit,
                offset: *offset,
            }),
            AttributeValue::DebugInfoRef(offset) => match self.unit(unit) {
                // In a split file, a section offset is the unit's own file's.
                Ok(u) if u.is_split() => Some(DieId {
                    unit,
                    offset: offset.to_unit_offset(&u.header)?,
                }),
                _ => self.die_id(offset.0 as u64),
            },
            AttributeValue::DebugTypesRef(signature) => match self.unit(unit) {
                // A split unit's types are in its own file's (or package's) type units.
                Ok(u) if u.is_split() => self.split_type(&u, *signature),
                _ => self.type_signatures().get(&signature.0).copied(),
            },
            _ => None,
        }
    }

    /// Sorted, non-overlapping address ranges → unit index, from `.debug_aranges`
    /// when it is present and otherwise from each unit's root DIE ranges.
    pub(crate) fn unit_address_ranges(&self) -> &[(u64, u64, usize)] {
        &self.unit_ranges_and_gaps().ranges
    }

    /// The units that declare no address range at all (neither in `.debug_aranges` nor
    /// on their root DIE): the only ones whose line tables may hold an address no
    /// unit's ranges cover. gdb looks no further either: an address outside every
    /// declared range (`_start`, the PLT) has no line.
    pub(crate) fn units_without_ranges(&self) -> &[usize] {
        &self.unit_ranges_and_gaps().rangeless
    }

    fn unit_ranges_and_gaps(&self) -> &UnitRanges {
        self.unit_ranges.get_or_init(|| {
            let mut out = Vec::new();
            let mut covered = vec![false; self.units().len()];
            let mut headers = self.dwarf().debug_aranges.headers();
            while let Ok(Some(header)) = headers.next() {
                let Some(index) = self.unit_index_for_offset(header.debug_info_offset().0 as u64)
                else {
                    continue;
                };
                let mut entries = header.entries();
                while let Ok(Some(entry)) = entries.next() {
                    let r = entry.range();
                    if r.begin < r.end {
                        out.push((r.begin, r.end, index));
                        covered[index] = true;
                    }
                }
            }
            let mut rangeless = Vec::new();
            for (index, done) in covered.iter().enumerate() {
                if *done {
                    continue;
                }
                let before = out.len();
                if let Ok(unit) = self.skeleton(index) {
                    if let Ok(mut ranges) = unit.r().unit_ranges() {
                        while let Ok(Some(r)) = ranges.next() {
                            if r.begin < r.end {
                                out.push((r.begin, r.end, index));
                            }
                        }
                    }
                }
                if out.len() == before {
                    rangeless.push(index);
                }
            }
            out.sort_unstable();
            UnitRanges {
                ranges: out,
                rangeless,
            }
        })
    }

    /// Indices of the units whose ranges contain `addr` (usually one).
    pub(crate) fn units_for_addr(&self, addr: u64) -> Vec<usize> {
        let ranges = self.unit_address_ranges();
        let end = ranges.partition_point(|r| r.0 <= addr);
        let mut out: Vec<usize> = ranges[..end]
            .iter()
            .rev()
            .take(64)
            .filter(|r| addr < r.1)
            .map(|r| r.2)
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// A string attribute of a DIE, or `None` when absent or unreadable.
    pub(crate) fn attr_str(&self, unit: &Unit, die: &Die, at: gimli::DwAt) -> Option<String> {
        let value = die.attr_value(at)?;
        let s = unit.string(value).ok()?;
        s.to_string_lossy().ok().map(|c| c.into_owned())
    }

    /// Follows `DW_AT_abstract_origin` / `DW_AT_specification` chains (bounded) and
    /// returns the first value of `at` found along the way, with the unit it lives in.
    pub(crate) fn attr_via_origin(
        &self,
        id: DieId,
        at: gimli::DwAt,
    ) -> Option<(DieId, AttributeValue<R>)> {
        let mut current = id;
        for _ in 0..8 {
            let unit = self.unit(current.unit).ok()?;
            let die = unit.entry(current.offset).ok()?;
            if let Some(v) = die.attr_value(at) {
                return Some((current, v));
            }
            let next = die
                .attr_value(gimli::DW_AT_abstract_origin)
                .or_else(|| die.attr_value(gimli::DW_AT_specification))?;
            current = self.resolve_ref(current.unit, &next)?;
        }
        None
    }

    /// Address ranges of a DIE (low/high pc or DW_AT_ranges), empty ones dropped.
    pub(crate) fn die_ranges(&self, unit: &Unit, die: &Die) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let Ok(mut iter) = unit.r().die_ranges(die) else {
            return out;
        };
        while let Ok(Some(r)) = iter.next() {
            if r.begin < r.end && !unit.header.is_tombstone_address(r.begin) && r.begin != 0 {
                out.push((r.begin, r.end));
            }
        }
        out
    }

    /// The file name for a `DW_AT_decl_file` / `DW_AT_call_file` index in a unit.
    pub(crate) fn unit_file(&self, unit_index: usize, file: u64) -> Option<Arc<std::path::Path>> {
        let files = self.unit_files(unit_index).ok()?;
        files.get(usize::try_from(file).ok()?)?.clone()
    }
}

/// Name, linkage name, declaration and identity of a DIE, gathered in one pass along
/// its `DW_AT_abstract_origin` / `DW_AT_specification` chain.
#[derive(Clone, Debug)]
pub(crate) struct DieInfo {
    /// The name and linkage name as stored (see [`DieInfo::name`]): most callers only
    /// look at them, and a unit walk gathers millions.
    pub(crate) name_at: Option<R>,
    pub(crate) linkage_at: Option<R>,
    /// Where the linkage name is in the binary's own `.debug_str`, unread, instead of
    /// `linkage_at` (and then no name read either): what [`Binary::die_info_for_walk`]
    /// gives.
    pub(crate) linkage_str: Option<usize>,
    pub(crate) decl_file: Option<Arc<std::path::Path>>,
    pub(crate) decl_line: Option<crate::addr::Line>,
    pub(crate) ty: Option<DieId>,
    /// The end of the origin chain: the same for every instance of one entity.
    pub(crate) key: DieId,
}

/// The text of a string attribute as stored (borrowed when it is valid UTF-8, checked
/// the fast way first: a unit walk reads millions of names).
pub(crate) fn text(r: &Option<R>) -> Option<std::borrow::Cow<'_, str>> {
    let r = r.as_ref()?;
    if let Ok(s) = std::str::from_utf8(r.bytes()) {
        return Some(std::borrow::Cow::Borrowed(s));
    }
    r.to_string_lossy().ok()
}

impl DieInfo {
    /// The name, owned.
    pub(crate) fn name(&self) -> Option<String> {
        text(&self.name_at).map(|t| t.into_owned())
    }

    /// The linkage name, owned.
    pub(crate) fn linkage(&self) -> Option<String> {
        text(&self.linkage_at).map(|t| t.into_owned())
    }
}

impl Binary {
    /// Collects [`DieInfo`] starting from a DIE already in hand (no re-parse unless
    /// an attribute lives on an origin).
    pub(crate) fn die_info(&self, id: DieId, unit: &Unit, die: &Die) -> DieInfo {
        self.die_info_with(id, unit, die, false)
    }

    /// [`Binary::die_info`] for a unit walk, which names a function by its linkage name
    /// when it has one: a linkage name in the binary's own `.debug_str` is given by its
    /// place there ([`DieInfo::linkage_str`]) and read only if the walk's memo of them
    /// lacks it, and then the name is not read. Most function DIEs of a C++ program
    /// repeat a header's function in unit after unit: reading both strings of each was
    /// a tenth of ceph-osd's name table.
    pub(crate) fn die_info_for_walk(&self, id: DieId, unit: &Unit, die: &Die) -> DieInfo {
        self.die_info_with(id, unit, die, true)
    }

    fn die_info_with(&self, id: DieId, unit: &Unit, die: &Die, walk: bool) -> DieInfo {
        let mut info = DieInfo {
            name_at: None,
            linkage_at: None,
            linkage_str: None,
            decl_file: None,
            decl_line: None,
            ty: None,
            key: id,
        };
        let mut next = self.absorb(&mut info, id.unit, unit, die, walk);
        for _ in 0..8 {
            let Some(n) = next else { break };
            info.key = n;
            let Ok(u) = self.unit(n.unit) else { break };
            let Ok(d) = u.entry(n.offset) else { break };
            next = self.absorb(&mut info, n.unit, &u, &d, walk);
        }
        info
    }

    /// Where string attribute `value` of a DIE of `unit` is in the binary's own
    /// `.debug_str` (not a split file's, not a supplementary file's).
    fn main_str_offset(&self, unit: &Unit, value: &AttributeValue<R>) -> Option<usize> {
        if unit.is_split() || !std::ptr::eq(Arc::as_ptr(unit.dwarf_arc()), self.dwarf()) {
            return None;
        }
        match *value {
            AttributeValue::DebugStrRef(o) => Some(o.0),
            AttributeValue::DebugStrOffsetsIndex(i) => {
                unit.dwarf.string_offset(unit, i).ok().map(|o| o.0)
            }
            _ => None,
        }
    }

    /// The string at `offset` in the binary's own `.debug_str`.
    pub(crate) fn main_str(&self, offset: usize) -> Option<R> {
        use gimli::Section;
        null_terminated(self.dwarf().debug_str.reader(), offset)
    }

    fn absorb(
        &self,
        info: &mut DieInfo,
        unit_index: usize,
        unit: &Unit,
        die: &Die,
        walk: bool,
    ) -> Option<DieId> {
        if info.linkage_at.is_none() && info.linkage_str.is_none() {
            let value = die
                .attr_value(gimli::DW_AT_linkage_name)
                .or_else(|| die.attr_value(gimli::DW_AT_MIPS_linkage_name));
            if let Some(value) = value {
                match walk.then(|| self.main_str_offset(unit, &value)).flatten() {
                    Some(at) => info.linkage_str = Some(at),
                    None => info.linkage_at = unit.string(value).ok(),
                }
            }
        }
        if info.name_at.is_none() && info.linkage_str.is_none() {
            info.name_at = die
                .attr_value(gimli::DW_AT_name)
                .and_then(|v| unit.string(v).ok());
        }
        if info.decl_file.is_none() {
            info.decl_file = match die.attr_value(gimli::DW_AT_decl_file) {
                Some(AttributeValue::FileIndex(i)) | Some(AttributeValue::Udata(i)) => {
                    self.unit_file(unit_index, i)
                }
                Some(AttributeValue::Data1(i)) => self.unit_file(unit_index, u64::from(i)),
                Some(AttributeValue::Data2(i)) => self.unit_file(unit_index, u64::from(i)),
                Some(AttributeValue::Data4(i)) => self.unit_file(unit_index, u64::from(i)),
                _ => None,
            };
        }
        if info.decl_line.is_none() {
            info.decl_line = attr_u64(die, gimli::DW_AT_decl_line)
                .and_then(|l| crate::addr::Line::new(u32::try_from(l).ok()?));
        }
        if info.ty.is_none() {
            info.ty = die
                .attr_value(gimli::DW_AT_type)
                .and_then(|v| self.resolve_ref(unit_index, &v));
        }
        let next = die
            .attr_value(gimli::DW_AT_abstract_origin)
            .or_else(|| die.attr_value(gimli::DW_AT_specification))?;
        self.resolve_ref(unit_index, &next)
    }
}

/// Reads an unsigned constant attribute.
pub(crate) fn attr_u64(die: &Die, at: gimli::DwAt) -> Option<u64> {
    die.attr(at)?.udata_value()
}

/// Reads a signed constant attribute.
pub(crate) fn attr_i64(die: &Die, at: gimli::DwAt) -> Option<i64> {
    let attr = die.attr(at)?;
    match attr.value() {
        AttributeValue::Sdata(v) => Some(v),
        AttributeValue::Data1(v) => Some(i64::from(v as i8)),
        AttributeValue::Data2(v) => Some(i64::from(v as i16)),
        AttributeValue::Data4(v) => Some(i64::from(v as i32)),
        AttributeValue::Data8(v) => Some(v as i64),
        AttributeValue::Udata(v) => i64::try_from(v).ok(),
        _ => None,
    }
}

/// Raw bytes of a reader (cheap for mapped sections).
pub(crate) fn reader_bytes(r: &R) -> Vec<u8> {
    r.to_slice().map(|c| c.into_owned()).unwrap_or_default()
}
