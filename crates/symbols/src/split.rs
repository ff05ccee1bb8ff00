//! Split DWARF (`-gsplit-dwarf`): a skeleton unit in the executable names the `.dwo`
//! file (or the `.dwp` package next to the executable) that holds its DIEs. DWARF 5
//! skeleton units (`DW_UT_skeleton`, `DW_AT_dwo_name`) and the DWARF 4 GNU extension
//! (`DW_AT_GNU_dwo_name`, `DW_AT_GNU_dwo_id`) are both read, through gimli's
//! `Dwarf::make_dwo` and `DwarfPackage`.
//!
//! The split unit replaces its skeleton for everything read from DIEs (functions,
//! scopes, variables, types); line tables stay the skeleton's (the split file has none
//! with rows), and so do file tables: GCC writes the same file list in both, so
//! `DW_AT_decl_file` indices mean the same thing in either. A `.dwo` that cannot be
//! found leaves the skeleton in place: the unit keeps its lines (line breakpoints,
//! stepping) and loses its DIEs, and [`Binary::missing_split_units`] names the file.
//!
//! Type units (`-fdebug-types-section`) of a split file live beside its compilation
//! unit (in a `.dwo`; in GCC's, each in a section group of its own, so the file has many
//! sections of one name, read here as their concatenation) or in the package's TU
//! index. A split unit's `DW_FORM_ref_sig8` is resolved there on first use, and each
//! type unit found gets a unit index past the executable's own units ([`SplitTypes`]),
//! so its DIEs have ids like any other.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use gimli::{Reader, SectionId};

use crate::binary::{map_file, section_bytes, Binary};
use crate::reader::{Bytes, R};
use crate::units::{DieId, Unit};

/// The package `prog.dwp` beside the executable, its mapping kept alive by its
/// sections' [`Bytes`].
pub(crate) type Package = gimli::DwarfPackage<R>;

/// A skeleton's split unit that could not be found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MissingSplitUnit {
    /// The `.dwo` path the skeleton names (joined to its compilation directory).
    pub dwo: PathBuf,
    /// The unit's `DW_AT_name`, when the skeleton has one.
    pub unit_name: Option<String>,
}

/// The type units of split files found so far: the `i`-th has unit index
/// `units().len() + i`. Type signatures are program-wide (a signature names one type
/// whatever unit refers to it), so one table serves every split unit.
#[derive(Default)]
pub(crate) struct SplitTypes {
    inner: Mutex<SplitTypesInner>,
}

#[derive(Default)]
struct SplitTypesInner {
    units: Vec<Arc<Unit>>,
    /// Type signature → (index in `units`, the type's DIE in it).
    by_signature: HashMap<u64, (usize, gimli::UnitOffset<usize>)>,
    /// The `.dwo` files whose type units were listed (by their sections' address).
    scanned: Vec<usize>,
    /// Type units listed but not parsed yet: signature → their file and header.
    listed: HashMap<u64, (Arc<gimli::Dwarf<R>>, gimli::UnitHeader<R>)>,
}

impl SplitTypes {
    /// How many type units have indexes.
    pub(crate) fn len(&self) -> usize {
        self.lock().units.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SplitTypesInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl SplitTypesInner {
    /// Parses a listed type unit and gives it an index.
    fn adopt(
        &mut self,
        first_index: usize,
        signature: u64,
        dwarf: Arc<gimli::Dwarf<R>>,
        header: gimli::UnitHeader<R>,
    ) -> Option<DieId> {
        let (gimli::UnitType::SplitType { type_offset, .. }
        | gimli::UnitType::Type { type_offset, .. }) = header.type_()
        else {
            return None;
        };
        let unit = match dwarf.unit(header) {
            Ok(u) => u,
            Err(e) => {
                tracing::warn!(signature, "unreadable split type unit: {e}");
                return None;
            }
        };
        let i = self.units.len();
        self.units.push(Arc::new(Unit::split(unit, dwarf)));
        self.by_signature.insert(signature, (i, type_offset));
        Some(DieId {
            unit: first_index + i,
            offset: type_offset,
        })
    }
}

/// The type signature of a type unit header.
fn signature_of(header: &gimli::UnitHeader<R>) -> Option<u64> {
    match header.type_() {
        gimli::UnitType::SplitType { type_signature, .. }
        | gimli::UnitType::Type { type_signature, .. } => Some(type_signature.0),
        _ => None,
    }
}

impl Binary {
    /// A split file's type unit by its unit index (past the executable's units).
    pub(crate) fn split_type_unit(&self, index: usize) -> crate::Result<Arc<Unit>> {
        let i = index - self.units().len().min(index);
        self.split_types
            .lock()
            .units
            .get(i)
            .cloned()
            .ok_or(crate::Error::BadReference(index as u64))
    }

    /// The DIE of the type with `signature` that split unit `unit` refers to: in the
    /// package's type units, else among its own file's.
    pub(crate) fn split_type(
        &self,
        unit: &Unit,
        signature: gimli::DebugTypeSignature,
    ) -> Option<DieId> {
        let first_index = self.units().len();
        let sig = signature.0;
        {
            let mut types = self.split_types.lock();
            if let Some(&(i, offset)) = types.by_signature.get(&sig) {
                return Some(DieId {
                    unit: first_index + i,
                    offset,
                });
            }
            if let Some((dwarf, header)) = types.listed.remove(&sig) {
                return types.adopt(first_index, sig, dwarf, header);
            }
        }
        if let Some(package) = self.package() {
            match package.find_tu(signature, self.dwarf_arc()) {
                Ok(Some(dwarf)) => {
                    let dwarf = Arc::new(dwarf);
                    let header = type_unit_headers(&dwarf)
                        .into_iter()
                        .find(|h| signature_of(h) == Some(sig))?;
                    return self
                        .split_types
                        .lock()
                        .adopt(first_index, sig, dwarf, header);
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(sig, "split type unit unreadable in the package: {e}"),
            }
        }
        // A `.dwo`: list its type units once.
        let dwarf = unit.dwarf_arc();
        let key = Arc::as_ptr(dwarf) as usize;
        let mut types = self.split_types.lock();
        if !types.scanned.contains(&key) {
            types.scanned.push(key);
            for header in type_unit_headers(dwarf) {
                if let Some(s) = signature_of(&header) {
                    if !types.by_signature.contains_key(&s) {
                        types.listed.entry(s).or_insert((dwarf.clone(), header));
                    }
                }
            }
        }
        let (dwarf, header) = types.listed.remove(&sig)?;
        types.adopt(first_index, sig, dwarf, header)
    }

    /// The `.dwp` package of this executable (`<path>.dwp`, or beside the separate
    /// debug file), loaded on first use.
    pub(crate) fn package(&self) -> Option<&Package> {
        self.dwp
            .get_or_init(|| {
                let mut candidates = vec![with_suffix(&self.path, ".dwp")];
                if let Some(debug) = &self.info.debug_file {
                    candidates.push(with_suffix(debug, ".dwp"));
                    candidates.push(with_suffix(&debug.with_extension(""), ".dwp"));
                }
                let path = candidates.into_iter().find(|p| p.is_file())?;
                match load_package(&path, self.endian()) {
                    Ok(p) => {
                        tracing::debug!(path = %path.display(), "loaded split DWARF package");
                        Some(p)
                    }
                    Err(e) => {
                        tracing::warn!(path = %path.display(), "ignoring split DWARF package: {e}");
                        None
                    }
                }
            })
            .as_ref()
    }

    /// The split unit of skeleton `skeleton`, when it is one and its `.dwo` (or the
    /// package) has it; `None` for a unit that is not a skeleton. A skeleton whose split
    /// unit cannot be read is logged and stays as it is.
    pub(crate) fn load_split(&self, index: usize, skeleton: &Unit) -> Option<Unit> {
        let dwo_id = skeleton.dwo_id?;
        let dwo_name = self.dwo_name(skeleton);
        if dwo_name.is_none() && !matches!(skeleton.header.type_(), gimli::UnitType::Skeleton(_)) {
            return None;
        }
        let main = self.dwarf_arc();
        let found = self
            .package()
            .and_then(|p| match p.find_cu(dwo_id, main) {
                Ok(found) => found,
                Err(e) => {
                    tracing::warn!(unit = index, "split unit unreadable in the package: {e}");
                    None
                }
            })
            .or_else(|| {
                let path = self
                    .dwo_candidates(skeleton, dwo_name.as_deref()?)
                    .into_iter()
                    .find(|p| p.is_file())?;
                match load_dwo(&path, main, self.endian()) {
                    Ok(d) => Some(d),
                    Err(e) => {
                        tracing::warn!(path = %path.display(), "ignoring split DWARF file: {e}");
                        None
                    }
                }
            });
        let Some(mut dwo) = found else {
            tracing::warn!(
                unit = index,
                dwo = ?dwo_name,
                "split DWARF unit not found: the unit has lines but no DIEs"
            );
            return None;
        };
        // The skeleton's line program is read through the split unit (see the module
        // doc): its `DW_FORM_line_strp` names live in the executable.
        dwo.debug_line_str = main.debug_line_str.clone();
        let dwo = Arc::new(dwo);
        let mut headers = dwo.units();
        loop {
            let header = match headers.next() {
                Ok(Some(h)) => h,
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!(unit = index, "corrupt split unit header: {e}");
                    break;
                }
            };
            let mut split = match dwo.unit(header) {
                Ok(u) => u,
                Err(e) => {
                    tracing::warn!(unit = index, "unreadable split unit: {e}");
                    continue;
                }
            };
            if split.dwo_id != Some(dwo_id) {
                continue;
            }
            split.copy_relocated_attributes(skeleton);
            split.line_program = skeleton.line_program.clone();
            if split.comp_dir.is_none() {
                split.comp_dir = skeleton.comp_dir.clone();
            }
            if split.name.is_none() {
                split.name = skeleton.name.clone();
            }
            tracing::debug!(
                target: "tandem::parse",
                path = %self.path.display(),
                unit = index,
                dwo = ?dwo_name,
                background = crate::stats::in_background(),
                "loaded a split unit"
            );
            return Some(Unit::split(split, dwo.clone()));
        }
        tracing::warn!(unit = index, dwo = ?dwo_name, "the split file has no unit with the skeleton's id");
        None
    }

    /// The `.dwo` name a skeleton unit gives, as written.
    fn dwo_name(&self, skeleton: &Unit) -> Option<String> {
        let value = skeleton.dwo_name().ok().flatten()?;
        let s = skeleton.string(value).ok()?;
        Some(s.to_string_lossy().ok()?.into_owned())
    }

    /// Where a skeleton's `.dwo` may be: `DW_AT_comp_dir` joined with the name (or the
    /// name itself when absolute), then the name and its file name relative to the
    /// executable's directory (a build tree moved or unpacked elsewhere).
    fn dwo_candidates(&self, skeleton: &Unit, name: &str) -> Vec<PathBuf> {
        let name = Path::new(name);
        let mut out = Vec::new();
        if name.is_absolute() {
            out.push(name.to_path_buf());
        } else if let Some(dir) = skeleton
            .comp_dir
            .as_ref()
            .and_then(|d| d.to_string_lossy().ok().map(|d| PathBuf::from(d.as_ref())))
        {
            out.push(dir.join(name));
        }
        let exe_dir = self.path.parent().unwrap_or(Path::new("."));
        if !name.is_absolute() {
            out.push(exe_dir.join(name));
        }
        if let Some(file) = name.file_name() {
            out.push(exe_dir.join(file));
        }
        out
    }

    /// Whether the program's units are skeletons of split units (decided from the
    /// first unit: a DWARF 5 skeleton header, or a DWARF 4 root DIE with a dwo id).
    pub fn has_split_units(&self) -> bool {
        let Some(first) = self.units().first() else {
            return false;
        };
        match first.header.type_() {
            gimli::UnitType::Skeleton(_) => true,
            gimli::UnitType::Compilation if first.header.version() < 5 => {
                !gimli::Section::reader(&self.dwarf().debug_addr).is_empty()
                    && self.skeleton(0).is_ok_and(|u| u.dwo_id.is_some())
            }
            _ => false,
        }
    }

    /// The skeleton units whose split unit is nowhere to be found (neither in the
    /// package nor as a `.dwo`), to be told to the user. Reads only the skeletons'
    /// root DIEs; nothing is loaded.
    pub fn missing_split_units(&self) -> Vec<MissingSplitUnit> {
        let mut out = Vec::new();
        // A DWARF 4 unit can be a GNU skeleton only if the file has a .debug_addr.
        let gnu_possible = !gimli::Section::reader(&self.dwarf().debug_addr).is_empty();
        for index in 0..self.units().len() {
            let header = &self.units()[index].header;
            let v5_skeleton = matches!(header.type_(), gimli::UnitType::Skeleton(_));
            let gnu_skeleton = gnu_possible && header.version() < 5;
            if !(v5_skeleton || gnu_skeleton) {
                continue;
            }
            let Ok(skeleton) = self.skeleton(index) else {
                continue;
            };
            let Some(dwo_id) = skeleton.dwo_id else {
                continue;
            };
            let Some(name) = self.dwo_name(&skeleton) else {
                continue;
            };
            if self
                .package()
                .is_some_and(|p| p.cu_index.find(dwo_id.0).is_some())
            {
                continue;
            }
            let candidates = self.dwo_candidates(&skeleton, &name);
            if candidates.iter().any(|p| p.is_file()) {
                continue;
            }
            out.push(MissingSplitUnit {
                dwo: candidates
                    .into_iter()
                    .next()
                    .unwrap_or_else(|| PathBuf::from(&name)),
                unit_name: skeleton
                    .name
                    .as_ref()
                    .and_then(|n| n.to_string_lossy().ok().map(|n| n.into_owned())),
            });
        }
        out
    }
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

/// The `.dwo` name of a DWARF section (`.debug_info.dwo`), for those a split file has.
fn dwo_section_name(id: SectionId) -> Option<&'static str> {
    id.dwo_name()
}

/// Every type unit header of a split file: DWARF 5's in `.debug_info.dwo`, DWARF 4's
/// in `.debug_types.dwo`.
fn type_unit_headers(dwarf: &gimli::Dwarf<R>) -> Vec<gimli::UnitHeader<R>> {
    let mut out = Vec::new();
    let mut info = dwarf.units();
    while let Ok(Some(h)) = info.next() {
        if signature_of(&h).is_some() {
            out.push(h);
        }
    }
    let mut types = dwarf.type_units();
    while let Ok(Some(h)) = types.next() {
        if signature_of(&h).is_some() {
            out.push(h);
        }
    }
    out
}

/// A `.dwo` section's bytes: an object file may hold several sections of one name (GCC
/// puts each type unit in a section group of its own), which a linker would have
/// concatenated in order.
fn dwo_section_bytes(
    map: &Arc<memmap2::Mmap>,
    file: &object::File<'_>,
    name: &str,
) -> crate::Result<Option<Bytes>> {
    use object::{Object, ObjectSection};
    let count = file
        .sections()
        .filter(|s| s.name().is_ok_and(|n| n == name))
        .count();
    if count <= 1 {
        return section_bytes(map, file, name);
    }
    let mut joined = Vec::new();
    for section in file
        .sections()
        .filter(|s| s.name().is_ok_and(|n| n == name))
    {
        joined.extend_from_slice(&section.uncompressed_data()?);
    }
    Ok(Some(Bytes::Owned(Arc::from(joined))))
}

fn load_dwo(
    path: &Path,
    parent: &gimli::Dwarf<R>,
    endian: gimli::RunTimeEndian,
) -> crate::Result<gimli::Dwarf<R>> {
    let map = map_file(path)?;
    let file = object::File::parse(&**map)?;
    let sections = gimli::DwarfSections::load(|id: SectionId| -> crate::Result<Bytes> {
        Ok(match dwo_section_name(id) {
            Some(name) => dwo_section_bytes(&map, &file, name)?.unwrap_or_else(Bytes::empty),
            None => Bytes::empty(),
        })
    })?;
    drop(file);
    let mut dwarf = sections.borrow(|b| gimli::EndianReader::new(b.clone(), endian));
    dwarf.make_dwo(parent);
    Ok(dwarf)
}

fn load_package(path: &Path, endian: gimli::RunTimeEndian) -> crate::Result<Package> {
    let map = map_file(path)?;
    let file = object::File::parse(&**map)?;
    let empty = gimli::EndianReader::new(Bytes::empty(), endian);
    let package = gimli::DwarfPackage::load(
        |id: SectionId| -> crate::Result<R> {
            let bytes = match dwo_section_name(id) {
                Some(name) => section_bytes(&map, &file, name)?.unwrap_or_else(Bytes::empty),
                None => Bytes::empty(),
            };
            Ok(gimli::EndianReader::new(bytes, endian))
        },
        empty,
    )?;
    Ok(package)
}
