//! Opening a binary: mmap, ELF headers, separate debug files, DWARF section set.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use gimli::{RunTimeEndian, SectionId};
use memmap2::Mmap;
use object::{Object, ObjectSection, ObjectSymbol};

use crate::addr::FileAddr;
use crate::error::{Error, Result};
use crate::functions::ElfSymbol;
use crate::index::SymbolIndex;
use crate::reader::{Bytes, R};
use crate::units::UnitSlot;

/// How to open a binary.
#[derive(Clone, Debug)]
pub struct OpenOptions {
    /// Roots searched for separate debug files (`.build-id/xx/yyyy.debug` and
    /// `.gnu_debuglink` names). Defaults to `/usr/lib/debug`.
    pub debug_roots: Vec<PathBuf>,
    /// Whether to look for a separate debug file when the binary has no `.debug_info`.
    pub find_debug_file: bool,
    /// Asked last, when neither a root nor `.gnu_debuglink` has the debug file (a
    /// debuginfod cache or server, supplied by the caller: `symbols` does no network I/O).
    pub lookup: Option<Arc<dyn DebugFileLookup>>,
    /// Where compressed DWARF sections of 1 MiB or more are kept decompressed
    /// (`sections.rs`): the index cache, as the front-ends pass it
    /// ([`crate::IndexCache::from_env`]). `None` (the default) inflates them into memory.
    pub section_cache: Option<crate::IndexCache>,
}

/// A source of separate debug files by build-id beyond the local roots. The file it
/// names is used only when its build-id is the binary's.
pub trait DebugFileLookup: Send + Sync + std::fmt::Debug {
    /// The debug file of the build `build_id`, when one can be had.
    fn debug_file(&self, build_id: &[u8]) -> Option<PathBuf>;
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            debug_roots: vec![PathBuf::from("/usr/lib/debug")],
            find_debug_file: true,
            lookup: None,
            section_cache: None,
        }
    }
}

/// Facts about the binary read from its headers.
#[derive(Clone, Debug)]
pub struct BinaryInfo {
    /// `true` for position-independent executables and shared objects (`ET_DYN`):
    /// the caller must apply a load bias.
    pub position_independent: bool,
    /// The entry point (`e_entry`).
    pub entry: FileAddr,
    /// The GNU build-id note, if any.
    pub build_id: Option<Vec<u8>>,
    /// The separate debug file the DWARF was read from, if not the binary itself.
    pub debug_file: Option<PathBuf>,
    /// Whether any DWARF (`.debug_info`) was found.
    pub has_dwarf: bool,
}

/// An ELF binary and its debug information.
///
/// Opening maps the file (and its separate debug file) and reads the ELF headers and
/// the call frame information; the DWARF sections are decompressed and the compilation
/// unit headers listed on the first question that needs DWARF, and everything else
/// (DIEs, line tables, the symbol index) is parsed on first use and cached. So a
/// library whose DWARF nobody asks about (libc, most of the time) costs no
/// decompression. A `Binary` is
/// `Send + Sync`; caches are filled at most once even when queried from many threads.
pub struct Binary {
    pub(crate) path: PathBuf,
    pub(crate) info: BinaryInfo,
    pub(crate) map: Arc<Mmap>,
    pub(crate) debug_map: Option<Arc<Mmap>>,
    endian: RunTimeEndian,
    /// The DWARF sections and unit headers, loaded on first use.
    lazy: OnceLock<DwarfData>,
    pub(crate) unit_ranges: OnceLock<crate::units::UnitRanges>,
    pub(crate) symtab: OnceLock<Vec<ElfSymbol>>,
    pub(crate) function_starts: OnceLock<Vec<u64>>,
    pub(crate) type_signatures: OnceLock<std::collections::HashMap<u64, crate::units::DieId>>,
    /// Types already read, so a condition evaluated on every breakpoint hit does not
    /// parse the same DIEs again (bounded by `types::TYPE_CACHE_MAX`).
    pub(crate) type_cache: crate::types::TypeCache,
    /// `function_at` answers by address, so stack traces after each step do not walk the
    /// same DIE trees again (bounded by `functions::FUNCTION_CACHE_MAX`).
    pub(crate) function_cache: crate::functions::FunctionCache,
    /// `globals_named` answers by name: a condition naming another unit's global looks
    /// it up on every hit (bounded by `vars::GLOBALS_CACHE_MAX`).
    pub(crate) globals_cache: crate::vars::GlobalsCache,
    pub(crate) index: OnceLock<Arc<SymbolIndex>>,
    /// Names shared by the per-unit tables while the index is built.
    pub(crate) names: crate::intern::Names,
    pub(crate) cfi: crate::unwind::Cfi,
    /// Parsing done for requests, apart from the background index's.
    pub(crate) counters: crate::stats::RequestCounters,
    /// `.gdb_index`, when the DWARF file has a valid one (read on first use).
    pub(crate) gdb_index: OnceLock<Option<crate::gdbindex::GdbIndex>>,
    /// The split DWARF package beside the executable (`split.rs`), read on first use.
    pub(crate) dwp: OnceLock<Option<crate::split::Package>>,
    /// Type units of split files met so far (`split.rs`): unit indexes past the
    /// executable's own units.
    pub(crate) split_types: crate::split::SplitTypes,
    /// The on-disk index cache file, once [`Binary::load_index_cache`] opened one.
    pub(crate) cached: OnceLock<crate::cache::CachedIndex>,
    /// Units whose DIEs could not be read, and how many of them were taken already
    /// ([`Binary::take_unreadable_units`]).
    pub(crate) unreadable: std::sync::Mutex<(Vec<crate::units::UnreadableUnit>, usize)>,
    /// Where compressed sections are kept decompressed ([`OpenOptions::section_cache`]).
    section_cache: Option<crate::IndexCache>,
}

impl std::fmt::Debug for Binary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Binary")
            .field("path", &self.path)
            .field("info", &self.info)
            .field("units_loaded", &self.lazy.get().map(|d| d.units.len()))
            .finish_non_exhaustive()
    }
}

pub(crate) fn map_file(path: &Path) -> Result<Arc<Mmap>> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(io)?;
    // SAFETY: the mapping is private and read-only. If another process truncates the
    // file while it is mapped, reads may fault; debuggers accept this (binaries are
    // replaced by rename when rebuilt, which leaves the mapped inode intact).
    let map = unsafe { Mmap::map(&file) }.map_err(io)?;
    Ok(Arc::new(map))
}

/// Loads one section's bytes: a window of the mapping when stored plainly, an owned
/// buffer when compressed (SHF_COMPRESSED zlib/zstd or legacy `.zdebug_*`).
pub(crate) fn section_bytes(
    map: &Arc<Mmap>,
    file: &object::File<'_>,
    name: &str,
) -> Result<Option<Bytes>> {
    let Some(section) = file.section_by_name(name) else {
        return Ok(None);
    };
    let range = section.compressed_file_range()?;
    if range.format == object::CompressionFormat::None {
        if section.kind() == object::SectionKind::UninitializedData {
            return Ok(None);
        }
        let Some((offset, size)) = section.file_range() else {
            return Ok(None);
        };
        let start = usize::try_from(offset).map_err(|_| bad_section(name))?;
        let len = usize::try_from(size).map_err(|_| bad_section(name))?;
        if start.checked_add(len).is_none_or(|end| end > map.len()) {
            return Err(bad_section(name));
        }
        return Ok(Some(Bytes::Mapped {
            map: map.clone(),
            start,
            len,
        }));
    }
    let data = section.uncompressed_data()?;
    Ok(Some(Bytes::Owned(Arc::from(data.into_owned()))))
}

fn bad_section(name: &str) -> Error {
    Error::Unsupported(format!("section {name} lies outside the file"))
}

impl Binary {
    /// Opens a binary with the default options.
    pub fn open(path: impl AsRef<Path>) -> Result<Binary> {
        Binary::open_with(path, &OpenOptions::default())
    }

    /// Opens a binary, looking for separate debug files as `options` says.
    pub fn open_with(path: impl AsRef<Path>, options: &OpenOptions) -> Result<Binary> {
        let path = path.as_ref().to_path_buf();
        let map = map_file(&path)?;
        let file = object::File::parse(&**map)?;
        if file.format() != object::BinaryFormat::Elf {
            return Err(Error::Unsupported(format!(
                "{:?} is not ELF",
                file.format()
            )));
        }
        let endian = if file.is_little_endian() {
            RunTimeEndian::Little
        } else {
            RunTimeEndian::Big
        };
        let build_id = file.build_id().ok().flatten().map(<[u8]>::to_vec);
        let has_own_dwarf = file
            .section_by_name(".debug_info")
            .is_some_and(|s| s.kind() != object::SectionKind::UninitializedData && s.size() > 0);
        let mut debug_map = None;
        let mut debug_path = None;
        if !has_own_dwarf && options.find_debug_file {
            if let Some(found) = find_debug_file(&path, &file, build_id.as_deref(), options) {
                match map_file(&found) {
                    Ok(m) => {
                        debug_map = Some(m);
                        debug_path = Some(found);
                    }
                    Err(e) => tracing::warn!("ignoring debug file: {e}"),
                }
            }
        }
        let debug_file = match &debug_map {
            Some(m) => Some(object::File::parse(&***m)?),
            None => None,
        };
        let dwarf_file = debug_file.as_ref().unwrap_or(&file);
        let has_dwarf = dwarf_file
            .section_by_name(".debug_info")
            .is_some_and(|s| s.kind() != object::SectionKind::UninitializedData && s.size() > 0);
        let cfi =
            crate::unwind::Cfi::load(&map, &file, debug_map.as_ref(), debug_file.as_ref(), endian)?;
        let info = BinaryInfo {
            position_independent: file.kind() == object::ObjectKind::Dynamic,
            entry: FileAddr(file.entry()),
            build_id,
            debug_file: debug_path,
            has_dwarf,
        };
        drop(debug_file);
        drop(file);
        tracing::debug!(path = %path.display(), has_dwarf, "opened binary");
        Ok(Binary {
            path,
            info,
            map,
            debug_map,
            endian,
            lazy: OnceLock::new(),
            unit_ranges: OnceLock::new(),
            symtab: OnceLock::new(),
            function_starts: OnceLock::new(),
            type_signatures: OnceLock::new(),
            type_cache: Default::default(),
            function_cache: Default::default(),
            globals_cache: Default::default(),
            index: OnceLock::new(),
            names: Default::default(),
            cfi,
            counters: Default::default(),
            gdb_index: OnceLock::new(),
            dwp: OnceLock::new(),
            split_types: Default::default(),
            cached: OnceLock::new(),
            unreadable: Default::default(),
            section_cache: options.section_cache.clone(),
        })
    }

    /// The path the binary was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Facts from the ELF headers.
    pub fn info(&self) -> &BinaryInfo {
        &self.info
    }

    /// Number of compilation units (for progress reporting while indexing).
    pub fn unit_count(&self) -> usize {
        self.units().len()
    }

    /// Bytes of unit headers and DIEs (`.debug_info` and `.debug_types`, as the unit
    /// headers count them): how long walking every unit takes, roughly.
    pub fn debug_info_bytes(&self) -> u64 {
        self.units()
            .iter()
            .map(|u| u.header.length_including_self() as u64)
            .sum()
    }

    /// The DWARF sections (decompressed on first use).
    pub(crate) fn dwarf(&self) -> &gimli::Dwarf<R> {
        &self.dwarf_data().dwarf
    }

    /// The DWARF sections, shared with the units that read them.
    pub(crate) fn dwarf_arc(&self) -> &Arc<gimli::Dwarf<R>> {
        &self.dwarf_data().dwarf
    }

    pub(crate) fn endian(&self) -> RunTimeEndian {
        self.endian
    }

    /// The compilation and type unit headers, in offset order.
    pub(crate) fn units(&self) -> &[UnitSlot] {
        &self.dwarf_data().units
    }

    /// Drops from this process's memory the pages of its file mappings read so far (the
    /// binary, its debug file, the decompressed sections' files): they stay in the page
    /// cache, and reading them again faults them back in. For a long-lived server once a
    /// burst of reading is over (the language server after loading a binary): what it
    /// read is otherwise counted in its resident memory for as long as it runs. What is
    /// built from them (tables, indexes) is the process's own memory and stays.
    pub fn release_file_pages(&self) {
        let mut maps: Vec<&Mmap> = vec![&self.map];
        maps.extend(self.debug_map.as_deref());
        if let Some(data) = self.lazy.get() {
            maps.extend(data.section_maps.iter().map(|m| &**m));
        }
        for map in maps {
            crate::sections::release_pages(map, 0, map.len() as u64);
        }
    }

    /// Drops from this process's memory the file pages of unit `index`'s DIEs in
    /// `.debug_info` (see [`Binary::release_file_pages`]): a pass over every unit reads
    /// each once, and keeping them all resident made its peak hundreds of megabytes.
    /// Nothing for a unit whose section is not mapped (inflated into memory) or split.
    pub(crate) fn release_unit_pages(&self, index: usize) {
        let Some(slot) = self.units().get(index) else {
            return;
        };
        if slot.offset >= crate::units::SPLIT_BASE {
            return;
        }
        let section = gimli::Section::reader(&self.dwarf().debug_info).bytes();
        let Ok(start) = usize::try_from(slot.offset) else {
            return;
        };
        let len = slot.header.length_including_self();
        let Some(unit) = section.get(start..start.saturating_add(len)) else {
            return;
        };
        let at = unit.as_ptr() as usize;
        let mut maps: Vec<&Mmap> = vec![&self.map];
        maps.extend(self.debug_map.as_deref());
        if let Some(data) = self.lazy.get() {
            maps.extend(data.section_maps.iter().map(|m| &**m));
        }
        for map in maps {
            let base = map.as_ptr() as usize;
            if at >= base && at + unit.len() <= base + map.len() {
                crate::sections::release_pages(map, (at - base) as u64, unit.len() as u64);
                return;
            }
        }
    }

    fn dwarf_data(&self) -> &DwarfData {
        self.lazy.get_or_init(|| {
            let started = std::time::Instant::now();
            let sections = self.section_cache.clone().and_then(|cache| {
                Some(crate::sections::SectionCache {
                    key: crate::cache::key_of(self)?,
                    cache,
                })
            });
            let data = load_dwarf(
                &self.map,
                self.debug_map.as_ref(),
                self.endian,
                sections.as_ref(),
            )
            .unwrap_or_else(|e| {
                tracing::warn!(path = %self.path.display(), "cannot read DWARF: {e}");
                DwarfData::empty(self.endian)
            });
            tracing::debug!(
                path = %self.path.display(),
                units = data.units.len(),
                elapsed = ?started.elapsed(),
                "loaded DWARF"
            );
            self.unreadable
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .0
                .extend(data.damaged.iter().cloned());
            data
        })
    }

    /// Re-parses the ELF container of the binary and, if present, of its debug file.
    pub(crate) fn with_objects<T>(
        &self,
        f: impl FnOnce(&object::File<'_>, Option<&object::File<'_>>) -> T,
    ) -> Result<T> {
        let file = object::File::parse(&**self.map)?;
        let debug = match &self.debug_map {
            Some(m) => Some(object::File::parse(&***m)?),
            None => None,
        };
        Ok(f(&file, debug.as_ref()))
    }

    /// Whether `addr` may be a function's entry. Answered from the ELF symbol tables
    /// (addresses only, no names), so resolving a line in a function body needs no
    /// DIEs; without any function symbol every address may be an entry.
    pub(crate) fn may_be_function_start(&self, addr: u64) -> bool {
        let starts = self.function_starts.get_or_init(|| {
            self.with_objects(|file, debug| {
                let mut out = Vec::new();
                for f in std::iter::once(file).chain(debug) {
                    out.extend(
                        f.symbols()
                            .chain(f.dynamic_symbols())
                            .filter(|s| s.kind() == object::SymbolKind::Text && s.address() != 0)
                            .map(|s| s.address()),
                    );
                }
                out.sort_unstable();
                out.dedup();
                out
            })
            .unwrap_or_default()
        });
        starts.is_empty() || starts.binary_search(&addr).is_ok()
    }

    /// `len` bytes of the binary's loaded contents at file address `addr` (code or
    /// initialized data), read from the file's sections.
    pub fn code_bytes(&self, addr: FileAddr, len: u64) -> Option<Vec<u8>> {
        let addr = addr.0;
        self.with_objects(|file, _| {
            file.sections()
                .filter(|s| s.address() <= addr && addr < s.address().saturating_add(s.size()))
                .find_map(|s| {
                    // Clamp to the section so a function at its very end is readable.
                    let available = s.address().saturating_add(s.size()) - addr;
                    s.data_range(addr, len.min(available))
                        .ok()
                        .flatten()
                        .map(<[u8]>::to_vec)
                })
        })
        .ok()
        .flatten()
    }

    /// The `.gdb_index` of the file holding the DWARF, if it has a valid one.
    pub(crate) fn gdb_index(&self) -> Option<&crate::gdbindex::GdbIndex> {
        self.gdb_index
            .get_or_init(|| {
                self.with_objects(|file, debug| {
                    let (f, map) = match (debug, &self.debug_map) {
                        (Some(d), Some(m)) => (d, m),
                        _ => (file, &self.map),
                    };
                    section_bytes(map, f, ".gdb_index").ok().flatten()
                })
                .ok()
                .flatten()
                .and_then(crate::gdbindex::GdbIndex::parse)
            })
            .as_ref()
    }

    /// All ELF symbols (`.symtab` of the binary and its debug file, then `.dynsym`),
    /// read on first use.
    pub(crate) fn elf_symbols(&self) -> &[ElfSymbol] {
        self.symtab.get_or_init(|| {
            self.with_objects(|file, debug| {
                let mut found = Vec::new();
                for f in std::iter::once(file).chain(debug) {
                    collect_symbols(f.symbols(), &mut found);
                }
                collect_symbols(file.dynamic_symbols(), &mut found);
                found.sort_by_key(|s| (s.addr, std::cmp::Reverse(s.size)));
                found.dedup_by(|a, b| a.addr == b.addr && a.name == b.name);
                into_elf_symbols(found)
            })
            .unwrap_or_else(|e| {
                tracing::warn!("cannot read symbols: {e}");
                Vec::new()
            })
        })
    }
}

/// A symbol as read, its name still in the mapped file.
struct FoundSymbol<'a> {
    name: &'a str,
    addr: u64,
    size: u64,
    kind: crate::index::SymbolKind,
}

/// The symbols with their names copied into one shared string, in address order.
fn into_elf_symbols(found: Vec<FoundSymbol<'_>>) -> Vec<ElfSymbol> {
    let mut blob = String::with_capacity(found.iter().map(|s| s.name.len()).sum());
    let mut at = Vec::with_capacity(found.len());
    for s in &found {
        let (Ok(start), Ok(len)) = (u32::try_from(blob.len()), u32::try_from(s.name.len())) else {
            // Names past 4 GiB cannot be addressed by the u32 offsets; no real
            // symbol table comes near, so the rest are left out rather than widened.
            tracing::warn!("symbol names past 4 GiB left out");
            break;
        };
        blob.push_str(s.name);
        at.push((start, len));
    }
    let names: Arc<str> = Arc::from(blob);
    found
        .iter()
        .zip(at)
        .map(|(s, name_at)| ElfSymbol {
            names: names.clone(),
            name_at,
            demangled: OnceLock::new(),
            addr: s.addr,
            size: s.size,
            kind: s.kind,
        })
        .collect()
}

fn collect_symbols<'a, I: Iterator<Item = S>, S: ObjectSymbol<'a>>(
    syms: I,
    out: &mut Vec<FoundSymbol<'a>>,
) {
    for sym in syms {
        let kind = match sym.kind() {
            object::SymbolKind::Text => crate::index::SymbolKind::Function,
            object::SymbolKind::Data | object::SymbolKind::Tls => {
                crate::index::SymbolKind::Variable
            }
            _ => continue,
        };
        if sym.is_undefined() || sym.address() == 0 {
            continue;
        }
        let Ok(name) = sym.name() else { continue };
        if name.is_empty() {
            continue;
        }
        out.push(FoundSymbol {
            name,
            addr: sym.address(),
            size: sym.size(),
            kind,
        });
    }
}

/// Finds a separate debug file by build-id under the roots, then by `.gnu_debuglink`,
/// then through the caller's lookup (debuginfod).
fn find_debug_file(
    path: &Path,
    file: &object::File<'_>,
    build_id: Option<&[u8]>,
    options: &OpenOptions,
) -> Option<PathBuf> {
    if let Some(id) = build_id.filter(|id| id.len() > 1) {
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        for root in &options.debug_roots {
            let candidate = root
                .join(".build-id")
                .join(&hex[..2])
                .join(format!("{}.debug", &hex[2..]));
            if candidate.is_file() && build_id_matches(&candidate, Some(id)) {
                return Some(candidate);
            }
        }
    }
    if let Some(found) = find_by_debuglink(path, file, build_id, options) {
        return Some(found);
    }
    let id = build_id.filter(|id| id.len() > 1)?;
    let found = options.lookup.as_ref()?.debug_file(id)?;
    if build_id_matches(&found, Some(id)) {
        Some(found)
    } else {
        tracing::warn!(path = %found.display(), "debug file of another build ignored");
        None
    }
}

/// The `.gnu_debuglink` file next to the binary, in its `.debug` directory, or under a
/// root at the binary's directory.
fn find_by_debuglink(
    path: &Path,
    file: &object::File<'_>,
    build_id: Option<&[u8]>,
    options: &OpenOptions,
) -> Option<PathBuf> {
    let (name, _crc) = file.gnu_debuglink().ok().flatten()?;
    let name = std::str::from_utf8(name).ok()?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let abs_dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mut candidates = vec![dir.join(name), dir.join(".debug").join(name)];
    for root in &options.debug_roots {
        candidates.push(
            root.join(abs_dir.strip_prefix("/").unwrap_or(&abs_dir))
                .join(name),
        );
    }
    // The CRC in the link is not checked (it means hashing the whole file); instead a
    // candidate whose build-id differs from the binary's is rejected.
    candidates
        .into_iter()
        .find(|c| c.is_file() && c.as_path() != path && build_id_matches(c, build_id))
}

fn build_id_matches(candidate: &Path, expected: Option<&[u8]>) -> bool {
    let Some(expected) = expected else {
        return true;
    };
    let Ok(map) = map_file(candidate) else {
        return false;
    };
    match object::File::parse(&**map).map(|f| f.build_id().ok().flatten().map(<[u8]>::to_vec)) {
        Ok(Some(id)) => id == expected,
        Ok(None) => true,
        Err(_) => false,
    }
}

/// Where DWARF section data came from (for diagnostics and tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SectionStorage {
    /// Mapped directly from the file.
    Mapped,
    /// Decompressed into memory.
    Decompressed,
}

impl Binary {
    /// How `.debug_info` is stored (mapped or decompressed), if present.
    pub fn debug_info_storage(&self) -> Option<SectionStorage> {
        let bytes = gimli::Section::reader(&self.dwarf().debug_info).bytes();
        if bytes.is_empty() {
            return None;
        }
        Some(self.storage_of(bytes))
    }

    fn storage_of(&self, bytes: &[u8]) -> SectionStorage {
        let p = bytes.as_ptr() as usize;
        let within = |m: &Mmap| {
            let s = m.as_ptr() as usize;
            p >= s && p < s + m.len()
        };
        if within(&self.map) || self.debug_map.as_deref().is_some_and(within) {
            SectionStorage::Mapped
        } else {
            SectionStorage::Decompressed
        }
    }
}

/// The DWARF of a binary: its sections and the list of unit headers.
pub(crate) struct DwarfData {
    dwarf: Arc<gimli::Dwarf<R>>,
    /// The decompressed sections' files, mapped (`sections.rs`).
    section_maps: Vec<Arc<Mmap>>,
    units: Vec<UnitSlot>,
    /// Where the unit headers stopped being readable (the units from there on are lost).
    damaged: Vec<crate::units::UnreadableUnit>,
}

impl DwarfData {
    fn empty(endian: RunTimeEndian) -> DwarfData {
        let sections = match gimli::DwarfSections::load(
            |_| -> std::result::Result<Bytes, std::convert::Infallible> { Ok(Bytes::empty()) },
        ) {
            Ok(s) => s,
            Err(never) => match never {},
        };
        DwarfData {
            dwarf: Arc::new(sections.borrow(|b| gimli::EndianReader::new(b.clone(), endian))),
            section_maps: Vec::new(),
            units: Vec::new(),
            damaged: Vec::new(),
        }
    }
}

/// Finds the DWARF sections (decompressing the compressed ones) in the debug file, or
/// in the binary itself, and lists the unit headers.
fn load_dwarf(
    map: &Arc<Mmap>,
    debug_map: Option<&Arc<Mmap>>,
    endian: RunTimeEndian,
    cache: Option<&crate::sections::SectionCache>,
) -> Result<DwarfData> {
    let file = object::File::parse(&***map)?;
    let debug_file = match debug_map {
        Some(m) => Some(object::File::parse(&***m)?),
        None => None,
    };
    let dwarf_file = debug_file.as_ref().unwrap_or(&file);
    let dwarf_map = debug_map.unwrap_or(map);
    // Compressed sections come from their decompressed files when a cache is configured.
    let mut cached = cache
        .map(|c| crate::sections::load_all(c, dwarf_map, dwarf_file))
        .unwrap_or_default();
    let section_maps: Vec<Arc<Mmap>> = cached
        .values()
        .filter_map(|b| match b {
            Bytes::Mapped { map, .. } => Some(map.clone()),
            Bytes::Owned(_) => None,
        })
        .collect();
    let sections = gimli::DwarfSections::load(|id: SectionId| -> Result<Bytes> {
        if let Some(bytes) = cached.remove(id.name()) {
            return Ok(bytes);
        }
        Ok(section_bytes(dwarf_map, dwarf_file, id.name())?.unwrap_or_else(Bytes::empty))
    })?;
    let mut dwarf = sections.borrow(|b| gimli::EndianReader::new(b.clone(), endian));
    // Units of one binary often share abbreviation tables (rustc emits one per
    // crate): parse each shared table once.
    dwarf.populate_abbreviations_cache(gimli::AbbreviationsCacheStrategy::Duplicates);
    let mut units: Vec<UnitSlot> = Vec::new();
    let mut damaged = Vec::new();
    let mut headers = dwarf.units();
    loop {
        match headers.next() {
            Ok(Some(header)) => units.push(UnitSlot::new(header)),
            Ok(None) => break,
            Err(e) => {
                // Keep the units before the damage: degrade, don't fail.
                tracing::warn!("stopping at corrupt unit header: {e}");
                damaged.push(crate::units::UnreadableUnit {
                    offset: units
                        .last()
                        .map_or(0, |u| u.offset + u.header.length_including_self() as u64),
                    name: None,
                    error: format!("its header: {e}; the units after it are skipped too"),
                });
                break;
            }
        }
    }
    // DWARF 4 type units live in .debug_types; their ids are placed after every
    // .debug_info offset (see `UnitSlot::new`), so the list stays sorted.
    let mut type_headers = dwarf.type_units();
    loop {
        match type_headers.next() {
            Ok(Some(header)) => units.push(UnitSlot::new(header)),
            Ok(None) => break,
            Err(e) => {
                tracing::warn!("stopping at corrupt type unit header: {e}");
                break;
            }
        }
    }
    // Listing the units touched a page of every unit header, and the kernel maps the
    // pages around each fault too: on a program of 8,500 units that is 550 MB of the
    // file in this process's memory, for headers now parsed. Dropped: what the requests
    // read faults back in from the page cache.
    crate::sections::release_pages(dwarf_map, 0, dwarf_map.len() as u64);
    for map in &section_maps {
        crate::sections::release_pages(map, 0, map.len() as u64);
    }
    Ok(DwarfData {
        dwarf: Arc::new(dwarf),
        section_maps,
        units,
        damaged,
    })
}
