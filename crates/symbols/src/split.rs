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

use std::path::{Path, PathBuf};
use std::sync::Arc;

use gimli::{Reader, SectionId};

use crate::binary::{map_file, section_bytes, Binary};
use crate::reader::{Bytes, R};
use crate::units::Unit;

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

impl Binary {
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
        let s = self.dwarf().attr_string(skeleton, value).ok()?;
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

fn load_dwo(
    path: &Path,
    parent: &gimli::Dwarf<R>,
    endian: gimli::RunTimeEndian,
) -> crate::Result<gimli::Dwarf<R>> {
    let map = map_file(path)?;
    let file = object::File::parse(&**map)?;
    let sections = gimli::DwarfSections::load(|id: SectionId| -> crate::Result<Bytes> {
        Ok(match dwo_section_name(id) {
            Some(name) => section_bytes(&map, &file, name)?.unwrap_or_else(Bytes::empty),
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
