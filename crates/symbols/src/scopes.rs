//! The namespace path of a DIE (`ns::Class::`): what qualifies a function without a
//! linkage name, an inlined call's name, a declared-only class looked up by name, an
//! enum's enumerators. A unit walk records its functions' paths; any other DIE's path is
//! found by reading the unit to it, raw, reading only the names of the scopes on the way
//! and jumping over every subtree that ends before it (`DW_AT_sibling`).
//!
//! Why: looking up a declared-only class's definition asked for its path on the tracer
//! thread, and reading a C++ unit of ceph-osd to one of its DIEs with every attribute of
//! every DIE parsed took tens of milliseconds each.

use std::collections::HashMap;
use std::sync::Arc;

use gimli::{AttributeValue, UnitOffset};

use crate::binary::Binary;
use crate::reader::R;
use crate::units::{DieId, Unit};

/// A scope DIE's name and where its next sibling starts.
type NameAndSibling = (Option<AttributeValue<R>>, Option<UnitOffset<usize>>);

/// The name and sibling of a scope DIE, its other attributes skipped.
fn name_and_sibling(
    raw: &mut gimli::EntriesRaw<'_, R>,
    specs: &[gimli::AttributeSpecification],
) -> gimli::Result<NameAndSibling> {
    let (mut name, mut sibling) = (None, None);
    for (i, spec) in specs.iter().enumerate() {
        match spec.name() {
            gimli::DW_AT_name => name = Some(raw.read_attribute(*spec)?.value()),
            gimli::DW_AT_sibling => {
                if let AttributeValue::UnitRef(at) = raw.read_attribute(*spec)?.value() {
                    sibling = Some(at);
                }
            }
            _ => raw.skip_attributes(&specs[i..=i])?,
        }
    }
    Ok((name, sibling))
}

impl Binary {
    /// Namespace path of a DIE found by offset: recorded by the unit's walk for
    /// functions without a linkage name, else found by reading the unit to it.
    pub(crate) fn scope_path_of(&self, id: DieId) -> String {
        // Only when the unit's walk is done (`get`, never `unit_functions`: the walk
        // itself calls this, and initializing the cell again would deadlock).
        let Some(slot) = self.units().get(id.unit) else {
            return self.scope_path_by_walk(id);
        };
        if let Some(syms) = slot.funcs.get().and_then(|syms| syms.as_ref().ok()) {
            if let Some(path) = syms.paths.get(&id.offset) {
                return path.to_string();
            }
            return self.scope_path_by_walk(id);
        }
        // The paths of the unit's functions without a linkage name, kept apart from its
        // symbols: a pass over every unit (GCC's LTO units name their functions through
        // another unit's DIEs) asks for them once per function.
        let paths = slot
            .paths
            .get_or_init(|| Arc::new(self.function_paths(id.unit)));
        match paths.get(&id.offset) {
            Some(path) => path.to_string(),
            None => self.scope_path_by_walk(id),
        }
    }

    /// The scope path of every function without a linkage name of unit `index`, by
    /// offset, as its walk records them (`paths` of [`crate::functions::UnitSymbols`]).
    pub(crate) fn function_paths(&self, index: usize) -> HashMap<UnitOffset<usize>, Arc<str>> {
        let mut out = HashMap::new();
        let Ok(unit) = self.unit(index) else {
            return out;
        };
        let _ = self.read_scopes(&unit, |offset, tag, attrs, scopes| {
            let linkage = attrs.iter().any(|a| {
                matches!(
                    a.name(),
                    gimli::DW_AT_linkage_name | gimli::DW_AT_MIPS_linkage_name
                )
            });
            if tag == gimli::DW_TAG_subprogram && !linkage {
                out.insert(offset, self.names.intern(&Self::scope_path(scopes)));
            }
            true
        });
        out
    }

    /// The scope path of a DIE, by reading its unit to it (subtrees that end before it
    /// jumped over).
    fn scope_path_by_walk(&self, id: DieId) -> String {
        let Ok(unit) = self.unit(id.unit) else {
            return String::new();
        };
        let mut scopes: Vec<(isize, Option<R>, gimli::DwTag)> = Vec::new();
        let Ok(mut raw) = unit.entries_raw(None) else {
            return String::new();
        };
        // The depth of the DIE `raw` started at (it counts from 0 there).
        let mut base = 0isize;
        while !raw.is_empty() {
            let depth = base + raw.next_depth();
            let offset = raw.next_offset();
            let Ok(abbrev) = raw.read_abbreviation() else {
                break;
            };
            let Some(abbrev) = abbrev else {
                continue;
            };
            while scopes.last().is_some_and(|s| s.0 >= depth) {
                scopes.pop();
            }
            if offset == id.offset {
                return Self::scope_path(&scopes);
            }
            if offset > id.offset {
                break;
            }
            if !abbrev.has_children() {
                if raw.skip_attributes(abbrev.attributes()).is_err() {
                    break;
                }
                continue;
            }
            let Ok((name, sibling)) = name_and_sibling(&mut raw, abbrev.attributes()) else {
                break;
            };
            match sibling.filter(|s| *s > offset && *s <= id.offset) {
                // The DIE is past this subtree: on to the next sibling, at this depth.
                Some(next) => {
                    let Ok(r) = unit.entries_raw(Some(next)) else {
                        break;
                    };
                    raw = r;
                    base = depth;
                }
                None => {
                    let name = name.and_then(|v| unit.string(v).ok());
                    scopes.push((depth, name, abbrev.tag()));
                }
            }
        }
        String::new()
    }

    /// Reads unit `unit`'s DIEs raw in order, calling `f` with each subprogram's offset,
    /// tag, attributes and enclosing scopes (the attributes of other DIEs without
    /// children are skipped, those of scopes read for their names) until it returns
    /// `false`.
    fn read_scopes(
        &self,
        unit: &Unit,
        mut f: impl FnMut(
            UnitOffset<usize>,
            gimli::DwTag,
            &[gimli::Attribute<R>],
            &crate::functions::Scopes,
        ) -> bool,
    ) -> gimli::Result<()> {
        let mut scopes: Vec<(isize, Option<R>, gimli::DwTag)> = Vec::new();
        let mut raw = unit.entries_raw(None)?;
        let mut attrs = Vec::new();
        while !raw.is_empty() {
            let depth = raw.next_depth();
            let offset = raw.next_offset();
            let Some(abbrev) = raw.read_abbreviation()? else {
                continue;
            };
            while scopes.last().is_some_and(|s| s.0 >= depth) {
                scopes.pop();
            }
            let tag = abbrev.tag();
            if !abbrev.has_children() && tag != gimli::DW_TAG_subprogram {
                raw.skip_attributes(abbrev.attributes())?;
                continue;
            }
            raw.read_attributes(abbrev.attributes(), &mut attrs)?;
            if tag == gimli::DW_TAG_subprogram && !f(offset, tag, &attrs, &scopes) {
                return Ok(());
            }
            if abbrev.has_children() {
                let name = attrs
                    .iter()
                    .find(|a| a.name() == gimli::DW_AT_name)
                    .and_then(|a| unit.string(a.value()).ok());
                scopes.push((depth, name, tag));
            }
        }
        Ok(())
    }
}

/// The scopes around the DIE a unit walk is at, and their path (`ns::Class::`) made as
/// far as it was asked for: each scope's name is read when a path first needs it (most
/// scopes are functions and blocks nothing is qualified by), and the path of a scope
/// is joined once, not once per type, variable or enum declared in it.
#[derive(Default)]
pub(crate) struct ScopeStack {
    scopes: Vec<Scope>,
    /// The path of the first `made` scopes.
    path: String,
    made: usize,
    /// How many of the scopes are functions or blocks.
    in_function: usize,
}

struct Scope {
    depth: isize,
    /// `DW_AT_name` as stored, unread.
    name: Option<AttributeValue<R>>,
    tag: gimli::DwTag,
    /// The length of the path up to and with this scope, once made.
    end: usize,
}

impl ScopeStack {
    /// Leaves the scopes a DIE at `depth` is not in.
    pub(crate) fn leave_to(&mut self, depth: isize) {
        while self.scopes.last().is_some_and(|s| s.depth >= depth) {
            if let Some(scope) = self.scopes.pop() {
                self.in_function -= usize::from(is_function(scope.tag));
            }
        }
        if self.made > self.scopes.len() {
            self.made = self.scopes.len();
            let end = self.made.checked_sub(1).map_or(0, |i| self.scopes[i].end);
            self.path.truncate(end);
        }
    }

    /// Enters the DIE at `depth`, which has children.
    pub(crate) fn enter(
        &mut self,
        depth: isize,
        name: Option<AttributeValue<R>>,
        tag: gimli::DwTag,
    ) {
        self.in_function += usize::from(is_function(tag));
        self.scopes.push(Scope {
            depth,
            name,
            tag,
            end: 0,
        });
    }

    pub(crate) fn len(&self) -> usize {
        self.scopes.len()
    }

    /// Whether the DIEs entered are in a function or a block.
    pub(crate) fn in_function(&self) -> bool {
        self.in_function > 0
    }

    /// The path of the scopes, as [`Binary::scope_path`] makes it: each named scope
    /// but the unit, followed by `::`.
    pub(crate) fn path(&mut self, unit: &Unit) -> &str {
        while self.made < self.scopes.len() {
            let scope = &mut self.scopes[self.made];
            if scope.tag != gimli::DW_TAG_compile_unit {
                let name = scope.name.clone().and_then(|v| unit.string(v).ok());
                if let Some(n) = crate::units::text(&name) {
                    self.path.push_str(&n);
                    self.path.push_str("::");
                }
            }
            scope.end = self.path.len();
            self.made += 1;
        }
        &self.path
    }
}

fn is_function(tag: gimli::DwTag) -> bool {
    matches!(tag, gimli::DW_TAG_subprogram | gimli::DW_TAG_lexical_block)
}
