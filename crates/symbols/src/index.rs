//! The symbol index: every named function, global and type, built in parallel across
//! units, plus ELF symbols for code without DWARF.

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use crate::addr::{FileAddr, Line};
use crate::binary::Binary;
use crate::functions::{FuncEntry, UnitSymbols};
use crate::names;
use crate::units::DieId;

/// What an index entry names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SymbolKind {
    /// A function or method.
    Function,
    /// A global or static variable.
    Variable,
    /// A struct, class, union, enum or typedef.
    Type,
}

/// How a [`SymbolKind::Type`] entry is declared (its DIE's tag), for front-ends that
/// show classes, enums and typedefs apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TypeForm {
    /// `class`.
    Class,
    /// `struct`.
    Struct,
    /// `union`.
    Union,
    /// `enum`.
    Enum,
    /// A typedef (or C++ `using`).
    Typedef,
    /// Any other type (a base type, a Rust type the compiler names otherwise).
    Other,
}

/// One named thing in the binary.
#[derive(Clone, Debug)]
pub struct SymbolEntry {
    /// Qualified name (`krate::module::func`, `ns::Class::method`, `main`).
    pub name: Arc<str>,
    /// What it is.
    pub kind: SymbolKind,
    /// Declaration file, as recorded in the binary.
    pub decl_file: Option<Arc<Path>>,
    /// Declaration line.
    pub decl_line: Option<Line>,
    /// Code range for functions (entry range), address for variables.
    pub range: Option<Range<FileAddr>>,
    pub(crate) die: Option<DieId>,
    /// How a type is declared (types only): its DIE's tag.
    pub(crate) form: Option<TypeForm>,
}

impl SymbolEntry {
    /// The last path component of the name (`func` for `krate::module::func`).
    pub fn short_name(&self) -> &str {
        self.name.rsplit("::").next().unwrap_or(&self.name)
    }
}

/// All named functions, globals and types of a binary.
///
/// Entries are views over the per-unit tables that lookups by address use too, so
/// the index costs little memory beyond those tables.
#[derive(Debug, Default)]
pub struct SymbolIndex {
    units: Vec<Arc<UnitSymbols>>,
    /// ELF symbols not covered by DWARF.
    elf_only: Vec<SymbolEntry>,
    inlined: HashMap<DieId, Vec<u64>>,
}

fn func_symbol(f: &FuncEntry) -> SymbolEntry {
    SymbolEntry {
        name: f.qualified.clone(),
        kind: SymbolKind::Function,
        decl_file: f.decl_file.clone(),
        decl_line: f.decl_line,
        range: f.ranges.first().map(|&(a, b)| FileAddr(a)..FileAddr(b)),
        die: Some(f.die),
        form: None,
    }
}

impl SymbolIndex {
    /// An index of some units only (those `.gdb_index` names for a query), without ELF
    /// symbols.
    pub(crate) fn of_units(units: Vec<Arc<UnitSymbols>>) -> SymbolIndex {
        let mut inlined: HashMap<DieId, Vec<u64>> = HashMap::new();
        for u in &units {
            for &(key, addr) in &u.inlined {
                inlined.entry(key).or_default().push(addr);
            }
        }
        for v in inlined.values_mut() {
            v.sort_unstable();
            v.dedup();
        }
        SymbolIndex {
            units,
            elf_only: Vec::new(),
            inlined,
        }
    }

    /// Every entry: DWARF functions, globals and types, then ELF-only symbols.
    pub fn entries(&self) -> impl Iterator<Item = SymbolEntry> + '_ {
        self.units
            .iter()
            .flat_map(|u| {
                u.funcs
                    .iter()
                    .map(func_symbol)
                    .chain(u.others.iter().cloned())
            })
            .chain(self.elf_only.iter().cloned())
    }

    /// The DWARF entries: [`SymbolIndex::entries`] without the ELF symbols no DWARF covers.
    #[doc(hidden)]
    pub fn dwarf_entries(&self) -> impl Iterator<Item = SymbolEntry> + '_ {
        self.units.iter().flat_map(|u| {
            u.funcs
                .iter()
                .map(func_symbol)
                .chain(u.others.iter().cloned())
        })
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.units
            .iter()
            .map(|u| u.funcs.len() + u.others.len())
            .sum::<usize>()
            + self.elf_only.len()
    }

    /// Whether the index is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entries whose name contains `query` case-insensitively (workspace/symbol).
    pub fn search<'a>(&'a self, query: &str) -> impl Iterator<Item = SymbolEntry> + 'a {
        let q = query.to_lowercase();
        self.entries()
            .filter(move |e| e.name.to_lowercase().contains(&q))
    }

    /// Entries whose qualified name ends with the components of `query`.
    pub fn lookup<'a>(&'a self, query: &'a str) -> impl Iterator<Item = SymbolEntry> + 'a {
        // The query is normalized once (not once per entry, ~300k on a large Rust
        // binary), and an entry is only built for names that can match.
        let query: Arc<str> = Arc::from(names::normalize(query));
        let q = query.clone();
        let in_units = self.units.iter().flat_map(move |u| {
            let (qa, qb) = (q.clone(), q.clone());
            u.funcs
                .iter()
                .filter(move |f| names::normalized_matches(&qa, &f.qualified))
                .map(func_symbol)
                .chain(
                    u.others
                        .iter()
                        .filter(move |e| names::normalized_matches(&qb, &e.name))
                        .cloned(),
                )
        });
        in_units.chain(
            self.elf_only
                .iter()
                .filter(move |e| names::normalized_matches(&query, &e.name))
                .cloned(),
        )
    }

    /// Function entries matching `query`, grouped by function identity.
    pub(crate) fn functions_matching(&self, query: &str) -> Vec<(DieId, Vec<&FuncEntry>)> {
        let mut groups: Vec<(DieId, Vec<&FuncEntry>)> = Vec::new();
        let query = names::normalize(query);
        for f in self.units.iter().flat_map(|u| u.funcs.iter()) {
            if !names::normalized_matches(&query, &f.qualified) {
                continue;
            }
            match groups.iter_mut().find(|g| g.0 == f.key) {
                Some(g) => g.1.push(f),
                None => groups.push((f.key, vec![f])),
            }
        }
        groups
    }

    pub(crate) fn inlined_of(&self, key: DieId) -> &[u64] {
        self.inlined.get(&key).map_or(&[], Vec::as_slice)
    }
}

impl Binary {
    /// How a type entry is declared: its DIE's tag (a declaration standing for a type
    /// unit's definition answers for the definition). `None` for entries that are not
    /// DWARF types or whose DIE cannot be read.
    pub fn type_form(&self, e: &SymbolEntry) -> Option<TypeForm> {
        if e.kind != SymbolKind::Type {
            return None;
        }
        // An entry from a symbol table carries it (its tag's form, which a type's own DIE
        // gives: the definitions a table lists are never signature declarations).
        e.form.or_else(|| self.type_form_of(e.die?))
    }

    /// The type a [`SymbolKind::Type`] entry names (`None` for other entries): what
    /// looking a type up by its exact qualified name needs.
    pub fn entry_type(&self, e: &SymbolEntry) -> Option<crate::types::TypeRef> {
        if e.kind != SymbolKind::Type {
            return None;
        }
        Some(crate::types::TypeRef(self.global_offset(e.die?)))
    }

    pub(crate) fn type_form_of(&self, die: DieId) -> Option<TypeForm> {
        let (id, unit) = self
            .type_die(crate::types::TypeRef(self.global_offset(die)))
            .ok()?;
        let entry = unit.entry(id.offset).ok()?;
        Some(form_of_tag(entry.tag()))
    }
}

/// The [`TypeForm`] of a type DIE's tag.
pub(crate) fn form_of_tag(tag: gimli::DwTag) -> TypeForm {
    match tag {
        gimli::DW_TAG_class_type => TypeForm::Class,
        gimli::DW_TAG_structure_type => TypeForm::Struct,
        gimli::DW_TAG_union_type => TypeForm::Union,
        gimli::DW_TAG_enumeration_type => TypeForm::Enum,
        gimli::DW_TAG_typedef => TypeForm::Typedef,
        _ => TypeForm::Other,
    }
}

impl Binary {
    /// The symbol index, built on first call in parallel across units and cached.
    pub fn symbol_index(&self) -> Arc<SymbolIndex> {
        self.symbol_index_with_progress(&|_, _| {})
    }

    /// Like [`Binary::symbol_index`], reporting `(units done, units total)` while
    /// building (from worker threads), for LSP/DAP progress notifications. Meant to
    /// run on a background thread; other callers wait for the same build.
    pub fn symbol_index_with_progress(
        &self,
        progress: &(dyn Fn(usize, usize) + Sync),
    ) -> Arc<SymbolIndex> {
        self.index
            .get_or_init(|| Arc::new(self.build_index(progress)))
            .clone()
    }

    /// The index, if it has been built (by anyone): never builds it.
    pub fn built_index(&self) -> Option<Arc<SymbolIndex>> {
        self.index.get().cloned()
    }

    fn build_index(&self, progress: &(dyn Fn(usize, usize) + Sync)) -> SymbolIndex {
        let n = self.units().len();
        self.each_unit(
            |i| {
                if let Err(e) = self.unit_functions(i) {
                    tracing::warn!("skipping unit {i} in the index: {e}");
                }
            },
            progress,
        );
        let mut index = SymbolIndex::default();
        for i in 0..n {
            let Ok(syms) = self.unit_functions(i) else {
                continue;
            };
            for &(key, addr) in &syms.inlined {
                index.inlined.entry(key).or_default().push(addr);
            }
            index.units.push(syms);
        }
        // ELF symbols not covered by any DWARF function (assembly, stripped objects).
        let mut covered: Vec<(u64, u64)> = index
            .units
            .iter()
            .flat_map(|u| u.funcs.iter())
            .flat_map(|f| f.ranges.iter().copied())
            .collect();
        covered.sort_unstable();
        for s in self.elf_symbols() {
            let inside = {
                let pos = covered.partition_point(|r| r.0 <= s.addr);
                covered[..pos].iter().rev().take(4).any(|r| s.addr < r.1)
            };
            if inside {
                continue;
            }
            let name = names::normalize(s.demangled());
            index.elf_only.push(SymbolEntry {
                name: Arc::from(name),
                kind: s.kind,
                decl_file: None,
                decl_line: None,
                range: Some(FileAddr(s.addr)..FileAddr(s.addr.saturating_add(s.size))),
                die: None,
                form: None,
            });
        }
        for v in index.inlined.values_mut() {
            v.sort_unstable();
            v.dedup();
        }
        self.names.clear();
        index
    }
}
