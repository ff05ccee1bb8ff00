//! Functions: per-unit function tables, lookup by name and by address with the chain
//! of inlined calls, and the ELF symbol table fallback for code without DWARF.

use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::addr::{Column, FileAddr, Line};
use crate::binary::Binary;
use crate::blocks::BlockKind;
use crate::error::{Error, Result};
use crate::index::{SymbolEntry, SymbolKind};
use crate::names;
use crate::scopes::ScopeStack;
use crate::types::TypeRef;
use crate::units::{attr_u64, Die, DieId, Unit};

/// Enclosing DIEs during a walk: depth, name (as stored, converted only when a
/// qualified name must be built from it) and tag.
pub(crate) type Scopes = [(isize, Option<crate::reader::R>, gimli::DwTag)];

/// At most this many units are walked to find a function through its siblings' symbols
/// ([`Binary::functions_by_sibling_symbols`]).
const SIBLING_UNITS: usize = 32;

/// A symbol from the ELF symbol table.
#[derive(Clone, Debug)]
pub(crate) struct ElfSymbol {
    /// Every symbol's name, one after the other in address order: one allocation
    /// instead of one per symbol (726k on the generated 1.1 GB program), so a scan of
    /// the names by a function breakpoint reads contiguous memory.
    pub(crate) names: Arc<str>,
    /// This symbol's name in `names` (start, length).
    pub(crate) name_at: (u32, u32),
    /// Demangled on first use: most symbols of a large binary are never looked at by
    /// name, and demangling them all costs tens of milliseconds.
    pub(crate) demangled: std::sync::OnceLock<String>,
    pub(crate) addr: u64,
    pub(crate) size: u64,
    pub(crate) kind: SymbolKind,
}

impl ElfSymbol {
    /// The raw (mangled) name.
    pub(crate) fn name(&self) -> &str {
        let (start, len) = (self.name_at.0 as usize, self.name_at.1 as usize);
        // The range was taken from `names` when it was built; `get` keeps a bad one
        // from panicking all the same.
        self.names.get(start..start + len).unwrap_or_default()
    }

    /// The demangled name (the raw one for C).
    pub(crate) fn demangled(&self) -> &str {
        self.demangled.get_or_init(|| names::demangle(self.name()))
    }
}

/// A function DIE found while walking a unit (concrete, abstract-inline or declaration
/// skipped).
#[derive(Clone, Debug)]
pub(crate) struct FuncEntry {
    pub(crate) die: DieId,
    /// The DIE this one is an instance of (abstract origin / specification), or itself.
    pub(crate) key: DieId,
    /// Address ranges; the entry range first. Empty for abstract (inline-only) functions.
    pub(crate) ranges: Vec<(u64, u64)>,
    pub(crate) qualified: Arc<str>,
    pub(crate) decl_file: Option<Arc<Path>>,
    pub(crate) decl_line: Option<Line>,
}

/// Everything one pass over a unit's DIEs collects.
#[derive(Debug, Default)]
pub(crate) struct UnitSymbols {
    pub(crate) funcs: Vec<FuncEntry>,
    /// Inlined calls: (key of the inlined function, entry address).
    pub(crate) inlined: Vec<(DieId, u64)>,
    /// Global variables and named types.
    pub(crate) others: Vec<SymbolEntry>,
    /// Enumerators of the enums outside functions: the name they are looked up by
    /// (`Red` in C, `geo::Red` for C++'s `enum Color` in `geo`, `geo::Color::Red` for an
    /// `enum class`), and the offset of their enum's DIE.
    pub(crate) enumerators: Vec<(Arc<str>, gimli::UnitOffset<usize>)>,
    /// Namespace paths (`ns::Class::`, empty at the top) of the functions without a
    /// linkage name, by DIE offset: what naming an inlined call of one needs.
    pub(crate) paths: HashMap<gimli::UnitOffset<usize>, Arc<str>>,
}

/// A function, as found by name or by address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Function {
    /// Qualified display name: `krate::module::Type::method`, `ns::Class::method`, `main`.
    pub name: String,
    /// The linkage (mangled) name, when there is one.
    pub linkage_name: Option<String>,
    /// Address ranges of the out-of-line code, entry range first; empty when the
    /// function only exists inlined.
    pub ranges: Vec<Range<FileAddr>>,
    /// Where to break on entry: past the prologue when the line table allows.
    pub breakpoint_addr: Option<FileAddr>,
    /// Entry addresses of the inlined copies of this function.
    pub inlined_at: Vec<FileAddr>,
    /// Declaration file.
    pub decl_file: Option<PathBuf>,
    /// Declaration line.
    pub decl_line: Option<Line>,
    /// `false` when the function comes from the ELF symbol table only.
    pub from_dwarf: bool,
}

impl Function {
    /// The entry address of the out-of-line code.
    pub fn entry(&self) -> Option<FileAddr> {
        self.ranges.first().map(|r| r.start)
    }

    /// Every address a function breakpoint should be planted at.
    pub fn breakpoint_addrs(&self) -> Vec<FileAddr> {
        let mut v: Vec<FileAddr> = self
            .breakpoint_addr
            .into_iter()
            .chain(self.inlined_at.iter().copied())
            .collect();
        v.sort();
        v.dedup();
        v
    }
}

/// One inlined call active at a pc.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InlinedCall {
    /// Qualified name of the inlined function.
    pub name: String,
    /// Ranges of this inlined copy.
    pub ranges: Vec<Range<FileAddr>>,
    /// Source position of the call in the caller.
    pub call_file: Option<PathBuf>,
    /// Line of the call in the caller.
    pub call_line: Option<Line>,
    /// Column of the call in the caller.
    pub call_column: Column,
}

/// The function containing a pc and the inlined calls active there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionAt {
    /// The out-of-line function.
    pub function: Function,
    /// Inlined calls from outermost to innermost; the innermost is executing.
    pub inlined: Vec<InlinedCall>,
}

/// Past this many cached `function_at` answers the cache starts over.
pub(crate) const FUNCTION_CACHE_MAX: usize = 4096;

/// `function_at` answers by address (errors are not cached).
#[derive(Default)]
pub(crate) struct FunctionCache(
    std::sync::Mutex<std::collections::HashMap<u64, Option<FunctionAt>>>,
);

impl FunctionCache {
    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<u64, Option<FunctionAt>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn get(&self, addr: FileAddr) -> Option<Option<FunctionAt>> {
        self.lock().get(&addr.0).cloned()
    }

    fn insert(&self, addr: FileAddr, found: Option<FunctionAt>) {
        let mut map = self.lock();
        if map.len() >= FUNCTION_CACHE_MAX {
            map.clear();
        }
        map.insert(addr.0, found);
    }
}

/// Bound on DIE nesting followed by recursive walks, so corrupt DWARF cannot exhaust
/// the stack.
pub(crate) const MAX_NESTING: usize = 256;

/// Whether the unit walk reads a DIE's attributes: those of functions, inlined calls,
/// globals, types and enumerators outside functions, and the names of the scopes that
/// can hold them; the rest (members, parameters, template parameters, modified types, a
/// function's locals and blocks, call sites, member functions declared with a linkage
/// name) are skipped unread.
fn wanted(abbrev: &gimli::Abbreviation, in_function: bool, enum_child: bool) -> bool {
    let has_children = abbrev.has_children();
    match abbrev.tag() {
        gimli::DW_TAG_subprogram => !declared_with_linkage(abbrev),
        gimli::DW_TAG_inlined_subroutine => true,
        // A static data member is a `DW_TAG_member` declaration in DWARF 4.
        gimli::DW_TAG_member => {
            !in_function
                && abbrev
                    .attributes()
                    .iter()
                    .any(|a| a.name() == gimli::DW_AT_declaration)
        }
        gimli::DW_TAG_variable
        | gimli::DW_TAG_structure_type
        | gimli::DW_TAG_class_type
        | gimli::DW_TAG_union_type
        | gimli::DW_TAG_enumeration_type
        | gimli::DW_TAG_typedef => !in_function || has_children,
        gimli::DW_TAG_enumerator => enum_child,
        // Scopes without a name anything recorded is qualified by.
        gimli::DW_TAG_lexical_block
        | gimli::DW_TAG_subroutine_type
        | gimli::DW_TAG_array_type
        | gimli::DW_TAG_call_site
        | gimli::DW_TAG_GNU_call_site
        | gimli::DW_TAG_formal_parameter
        | gimli::DW_TAG_GNU_template_parameter_pack
        | gimli::DW_TAG_GNU_formal_parameter_pack => false,
        _ => has_children,
    }
}

/// Whether a subprogram DIE of this form is a declaration with a linkage name and no
/// code: a member function in its class, repeated by every unit that includes the
/// class (most of a C++ unit's subprograms). The walk records nothing of one (its
/// definitions are named by the linkage name), so its attributes are not read.
fn declared_with_linkage(abbrev: &gimli::Abbreviation) -> bool {
    let (mut declaration, mut linkage) = (false, false);
    for a in abbrev.attributes() {
        match a.name() {
            gimli::DW_AT_declaration => declaration = true,
            gimli::DW_AT_linkage_name | gimli::DW_AT_MIPS_linkage_name => linkage = true,
            gimli::DW_AT_low_pc | gimli::DW_AT_ranges | gimli::DW_AT_inline => return false,
            _ => {}
        }
    }
    declaration && linkage
}

/// Total size of a function's ranges (to pick the innermost of nested functions).
pub(crate) fn span(ranges: &[(u64, u64)]) -> u64 {
    ranges
        .iter()
        .fold(0u64, |acc, r| acc.saturating_add(r.1.saturating_sub(r.0)))
}

fn to_ranges(r: &[(u64, u64)]) -> Vec<Range<FileAddr>> {
    r.iter().map(|&(a, b)| FileAddr(a)..FileAddr(b)).collect()
}

impl Binary {
    /// Functions, inlined calls, globals and types of one unit; walked once and cached.
    pub(crate) fn unit_functions(&self, index: usize) -> Result<Arc<UnitSymbols>> {
        let slot = self
            .units()
            .get(index)
            .ok_or(Error::BadReference(index as u64))?;
        let result = slot.funcs.get_or_init(|| {
            let unit = self.unit(index).map_err(|e| {
                let e = match e {
                    Error::Dwarf(e) => e,
                    _ => gimli::Error::MissingUnitDie,
                };
                self.note_unreadable(index, &e);
                e
            })?;
            self.counters
                .die_walk(&self.path, index, self.units().len());
            self.walk_unit(index, &unit).map(Arc::new).inspect_err(|e| {
                self.note_unreadable(index, e);
            })
        });
        result.clone().map_err(Error::from)
    }

    /// One unit's symbols as [`Binary::unit_functions`] gives them, but walked for this
    /// caller alone when no request walked the unit before: a pass over every unit (the
    /// name table's) must not keep them all.
    pub(crate) fn unit_symbols_once(&self, index: usize) -> Result<Arc<UnitSymbols>> {
        let slot = self
            .units()
            .get(index)
            .ok_or(Error::BadReference(index as u64))?;
        if let Some(done) = slot.funcs.get() {
            return done.clone().map_err(Error::from);
        }
        let unit = self.unit(index).inspect_err(|e| {
            if let Error::Dwarf(e) = e {
                self.note_unreadable(index, e);
            }
        })?;
        self.counters
            .die_walk(&self.path, index, self.units().len());
        let syms = self.walk_unit(index, &unit).inspect_err(|e| {
            self.note_unreadable(index, e);
        })?;
        Ok(Arc::new(syms))
    }

    fn walk_unit(
        &self,
        index: usize,
        unit: &Unit,
    ) -> std::result::Result<UnitSymbols, gimli::Error> {
        let mut out = UnitSymbols::default();
        let mut scopes = ScopeStack::default();
        // Where an entry's qualified name is joined before it is interned.
        let mut joined = String::new();
        // Scope paths of the functions seen so far, for concrete instances whose
        // abstract origin came earlier in the unit (the usual order).
        let mut paths: HashMap<gimli::UnitOffset<usize>, Arc<str>> = HashMap::new();
        // The enum whose enumerators come next: its depth, offset and the prefix of
        // their names.
        let mut current_enum: Option<(isize, gimli::UnitOffset<usize>, String)> = None;
        let language = self.unit_language(index).ok().flatten();
        // The key of each inlined function met (inlined calls repeat them).
        let mut keys: HashMap<DieId, DieId> = HashMap::new();
        // Scope paths of the variables declared in a namespace or a class (`geo::`,
        // `S::`): gcc defines each such variable at the top of the unit with a
        // `DW_AT_specification` pointing back here (`int S::total = 42;`, and every
        // namespace-scope variable), and its qualified name is the declaration's.
        let mut declared: HashMap<gimli::UnitOffset<usize>, Arc<str>> = HashMap::new();
        // Read raw: a DIE whose attributes name nothing the walk records (members,
        // parameters, template parameters, modified types, a function's locals) has them
        // skipped, not parsed. Most of a C++ unit's DIEs are such.
        let mut raw = unit.entries_raw(None)?;
        let mut entry = Die::null();
        while !raw.is_empty() {
            let depth = raw.next_depth();
            let offset = raw.next_offset();
            let Some(abbrev) = raw.read_abbreviation()? else {
                continue;
            };
            scopes.leave_to(depth);
            let tag = abbrev.tag();
            let in_function = scopes.in_function();
            let enum_child = current_enum.as_ref().is_some_and(|e| e.0 + 1 == depth);
            if !wanted(abbrev, in_function, enum_child) {
                raw.skip_attributes(abbrev.attributes())?;
                if abbrev.has_children() {
                    scopes.enter(depth, None, tag);
                }
                continue;
            }
            entry.tag = tag;
            entry.has_children = abbrev.has_children();
            entry.offset = offset;
            entry.depth = depth;
            raw.read_attributes(abbrev.attributes(), &mut entry.attrs)?;
            let die = &entry;
            let id = DieId {
                unit: index,
                offset: die.offset(),
            };
            match tag {
                gimli::DW_TAG_enumerator => {
                    if let Some((_, enum_offset, prefix)) =
                        current_enum.as_ref().filter(|e| e.0 + 1 == depth)
                    {
                        if let Some(name) = self.attr_str(unit, die, gimli::DW_AT_name) {
                            out.enumerators.push((
                                self.names.intern(&format!("{prefix}{name}")),
                                *enum_offset,
                            ));
                        }
                    }
                }
                gimli::DW_TAG_enumeration_type if !in_function && die.has_children() => {
                    // As gdb qualifies them (`Binary::enumerator_scope`): C++'s by the
                    // scopes around the enum, and by the enum too for an `enum class`
                    // (Rust's alike); C's enumerators are at file scope wherever declared.
                    let enum_class = matches!(
                        die.attr_value(gimli::DW_AT_enum_class),
                        Some(gimli::AttributeValue::Flag(true))
                    );
                    let prefix = match language {
                        Some(crate::types::Language::Cpp) if !enum_class => {
                            scopes.path(unit).to_string()
                        }
                        Some(crate::types::Language::Cpp | crate::types::Language::Rust) => {
                            let own = self.attr_str(unit, die, gimli::DW_AT_name);
                            let mut p = scopes.path(unit).to_string();
                            if let Some(own) = own {
                                p.push_str(&own);
                                p.push_str("::");
                            }
                            p
                        }
                        _ => String::new(),
                    };
                    current_enum = Some((depth, die.offset(), prefix));
                    if die.attr_value(gimli::DW_AT_declaration).is_none() {
                        if let Some(e) = self.simple_entry(
                            unit,
                            die,
                            id,
                            &mut scopes,
                            SymbolKind::Type,
                            &mut joined,
                        ) {
                            out.others.push(e);
                        }
                    }
                }
                gimli::DW_TAG_subprogram => {
                    if let Some(f) = self.func_entry(unit, die, id, &mut scopes, &mut paths) {
                        out.funcs.push(f);
                    }
                }
                gimli::DW_TAG_inlined_subroutine => {
                    let origin = die
                        .attr_value(gimli::DW_AT_abstract_origin)
                        .and_then(|v| self.resolve_ref(index, &v));
                    if let Some(origin) = origin {
                        let key = *keys.entry(origin).or_insert_with(|| self.func_key(origin));
                        let entry = self
                            .attr_address(unit, die, gimli::DW_AT_entry_pc)
                            .or_else(|| self.die_ranges(unit, die).first().map(|r| r.0));
                        if let Some(entry) = entry {
                            out.inlined.push((key, entry));
                        }
                    }
                }
                // A static data member is a `DW_TAG_member` declaration in DWARF 4
                // (`DW_TAG_variable` in 5); one with an initializer in its class
                // (`static const int sides = 4;`) is defined by its constant there.
                gimli::DW_TAG_variable | gimli::DW_TAG_member
                    if !in_function
                        && (tag == gimli::DW_TAG_variable
                            || die.attr_value(gimli::DW_AT_declaration).is_some()) =>
                {
                    let declaration = die.attr_value(gimli::DW_AT_declaration).is_some();
                    if declaration && scopes.len() > 1 {
                        let path = self.names.intern(scopes.path(unit));
                        declared.insert(die.offset(), path);
                    }
                    // Optimized-out globals (no location) are listed too: the user
                    // should see `<optimized out>`, not nothing.
                    let defined = die.attr_value(gimli::DW_AT_location).is_some()
                        || die.attr_value(gimli::DW_AT_const_value).is_some()
                        || !declaration;
                    if defined {
                        let specified = self.specified_path(index, die, &declared);
                        let path = match &specified {
                            Some(p) => p,
                            None => scopes.path(unit),
                        };
                        if let Some(e) = self.simple_entry_in(
                            unit,
                            die,
                            id,
                            path,
                            SymbolKind::Variable,
                            &mut joined,
                        ) {
                            out.others.push(e);
                        }
                    }
                }
                gimli::DW_TAG_structure_type
                | gimli::DW_TAG_class_type
                | gimli::DW_TAG_union_type
                | gimli::DW_TAG_enumeration_type
                | gimli::DW_TAG_typedef
                    if !in_function && die.attr_value(gimli::DW_AT_declaration).is_none() =>
                {
                    if let Some(e) =
                        self.simple_entry(unit, die, id, &mut scopes, SymbolKind::Type, &mut joined)
                    {
                        out.others.push(e);
                    }
                }
                _ => {}
            }
            if die.has_children() {
                scopes.enter(depth, die.attr_value(gimli::DW_AT_name), tag);
            }
        }
        out.paths = paths;
        Ok(out)
    }

    fn attr_address(&self, unit: &Unit, die: &Die, at: gimli::DwAt) -> Option<u64> {
        let v = die.attr_value(at)?;
        if let gimli::AttributeValue::Udata(off) = v {
            // DWARF 5 allows DW_AT_entry_pc as an offset from the unit base.
            return Some(unit.low_pc.wrapping_add(off));
        }
        unit.r().attr_address(v).ok().flatten()
    }

    /// The identity shared by every instance of a function: follow the origin chain.
    pub(crate) fn func_key(&self, id: DieId) -> DieId {
        let mut current = id;
        for _ in 0..8 {
            let Ok(unit) = self.unit(current.unit) else {
                break;
            };
            let Ok(die) = unit.entry(current.offset) else {
                break;
            };
            let next = die
                .attr_value(gimli::DW_AT_abstract_origin)
                .or_else(|| die.attr_value(gimli::DW_AT_specification));
            match next.and_then(|n| self.resolve_ref(current.unit, &n)) {
                Some(n) => current = n,
                None => break,
            }
        }
        current
    }

    pub(crate) fn scope_path(scopes: &Scopes) -> String {
        let mut path = String::new();
        for (_, name, tag) in scopes {
            if *tag == gimli::DW_TAG_compile_unit || name.is_none() {
                continue;
            }
            if let Some(n) = crate::units::text(name) {
                path.push_str(&n);
                path.push_str("::");
            }
        }
        path
    }

    fn func_entry(
        &self,
        unit: &Unit,
        die: &Die,
        id: DieId,
        scopes: &mut ScopeStack,
        paths: &mut HashMap<gimli::UnitOffset<usize>, Arc<str>>,
    ) -> Option<FuncEntry> {
        let ranges = self.die_ranges(unit, die);
        let is_abstract = die.attr_value(gimli::DW_AT_inline).is_some();
        let declaration = die.attr_value(gimli::DW_AT_declaration).is_some();
        if ranges.is_empty() && !is_abstract && !declaration {
            return None;
        }
        let has_linkage = die.attr_value(gimli::DW_AT_linkage_name).is_some()
            || die.attr_value(gimli::DW_AT_MIPS_linkage_name).is_some();
        // Scope paths are only needed to name functions without a linkage name (C,
        // and instances whose origin is such a function); building them for every
        // Rust or C++ function would be wasted work.
        let own_path: Option<Arc<str>> =
            (!has_linkage).then(|| self.names.intern(scopes.path(unit)));
        if let Some(p) = &own_path {
            paths.insert(id.offset, p.clone());
        }
        if ranges.is_empty() && !is_abstract {
            // A declaration (C++ method in its class): only its scope path is needed.
            return None;
        }
        let mut info = self.die_info_for_walk(id, unit, die);
        if let Some(at) = info.linkage_str {
            let read = || crate::units::text(&self.main_str(at)).map(|t| t.into_owned());
            match self.names.qualified_of_str_at(at, read) {
                Some(qualified) => return self.func_entry_named(id, info, ranges, qualified),
                // Unreadable where it is: named as if there were no walk's shortcut.
                None => info = self.die_info(id, unit, die),
            }
        }
        let qualified = match crate::units::text(&info.linkage_at) {
            Some(l) => self.names.qualified_of_linkage(&l),
            None => {
                let prefix = if info.key == id {
                    own_path.as_deref().unwrap_or_default().to_string()
                } else if info.key.unit == id.unit && paths.contains_key(&info.key.offset) {
                    paths[&info.key.offset].to_string()
                } else {
                    self.scope_path_of(info.key)
                };
                self.names.intern(&format!(
                    "{prefix}{}",
                    crate::units::text(&info.name_at).unwrap_or_default()
                ))
            }
        };
        self.func_entry_named(id, info, ranges, qualified)
    }

    fn func_entry_named(
        &self,
        id: DieId,
        info: crate::units::DieInfo,
        ranges: Vec<(u64, u64)>,
        qualified: Arc<str>,
    ) -> Option<FuncEntry> {
        if qualified.is_empty() {
            return None;
        }
        Some(FuncEntry {
            die: id,
            key: info.key,
            ranges,
            qualified,
            decl_file: info.decl_file,
            decl_line: info.decl_line,
        })
    }

    /// The scope path of the declaration a variable's definition refers to with
    /// `DW_AT_specification`: from the walk's `declared` paths when it is in the same
    /// unit, else found by walking that unit.
    fn specified_path(
        &self,
        unit_index: usize,
        die: &Die,
        declared: &HashMap<gimli::UnitOffset<usize>, Arc<str>>,
    ) -> Option<Arc<str>> {
        let spec = die.attr_value(gimli::DW_AT_specification)?;
        let target = self.resolve_ref(unit_index, &spec)?;
        if target.unit == unit_index {
            return Some(declared.get(&target.offset).cloned().unwrap_or_default());
        }
        Some(self.names.intern(&self.scope_path_of(target)))
    }

    fn simple_entry(
        &self,
        unit: &Unit,
        die: &Die,
        id: DieId,
        scopes: &mut ScopeStack,
        kind: SymbolKind,
        joined: &mut String,
    ) -> Option<SymbolEntry> {
        self.simple_entry_in(unit, die, id, scopes.path(unit), kind, joined)
    }

    /// An entry named `path` + its DIE's name (`path` is `ns::Class::` or empty).
    fn simple_entry_in(
        &self,
        unit: &Unit,
        die: &Die,
        id: DieId,
        path: &str,
        kind: SymbolKind,
        joined: &mut String,
    ) -> Option<SymbolEntry> {
        let info = self.die_info(id, unit, die);
        joined.clear();
        joined.push_str(path);
        joined.push_str(&crate::units::text(&info.name_at)?);
        let name = self.names.intern(joined);
        let range = if kind == SymbolKind::Variable {
            self.static_address(unit, die)
                .map(|a| FileAddr(a)..FileAddr(a))
        } else {
            None
        };
        let form = (kind == SymbolKind::Type).then(|| crate::index::form_of_tag(die.tag()));
        Some(SymbolEntry {
            name,
            kind,
            decl_file: info.decl_file,
            decl_line: info.decl_line,
            range,
            die: Some(id),
            form,
        })
    }

    /// The file address of a static variable whose location is `DW_OP_addr X`.
    pub(crate) fn static_address(&self, unit: &Unit, die: &Die) -> Option<u64> {
        let expr = die.attr(gimli::DW_AT_location)?.exprloc_value()?;
        let mut ops = expr.operations(unit.encoding());
        match ops.next().ok()?? {
            gimli::Operation::Address { address } => Some(address),
            gimli::Operation::AddressIndex { index } => unit.r().address(index).ok(),
            _ => None,
        }
    }

    pub(crate) fn function_from_entry(&self, f: &FuncEntry, inlined_at: Vec<FileAddr>) -> Function {
        let breakpoint_addr = f.ranges.first().map(|&(start, _)| {
            let after = self
                .post_prologue(f.die.unit, start)
                .ok()
                .flatten()
                .unwrap_or(start);
            FileAddr(after)
        });
        Function {
            name: f.qualified.to_string(),
            linkage_name: self.linkage_of(f.die),
            ranges: to_ranges(&f.ranges),
            breakpoint_addr,
            inlined_at,
            decl_file: f.decl_file.as_deref().map(Path::to_path_buf),
            decl_line: f.decl_line,
            from_dwarf: true,
        }
    }

    fn linkage_of(&self, id: DieId) -> Option<String> {
        let unit = self.unit(id.unit).ok()?;
        let die = unit.entry(id.offset).ok()?;
        self.die_info(id, &unit, &die).linkage()
    }

    fn function_from_symbol(s: &ElfSymbol) -> Function {
        Function {
            name: names::normalize(s.demangled()),
            linkage_name: (s.name() != s.demangled()).then(|| s.name().to_string()),
            ranges: vec![FileAddr(s.addr)..FileAddr(s.addr.saturating_add(s.size.max(1)))],
            breakpoint_addr: Some(FileAddr(s.addr)),
            inlined_at: Vec::new(),
            decl_file: None,
            decl_line: None,
            from_dwarf: false,
        }
    }

    /// Finds functions by name: `func`, `Type::method`, `krate::module::func`,
    /// `ns::Class::method`, C names. Out-of-line copies and inlined copies of the same
    /// function are merged into one [`Function`]. Falls back to the ELF symbol table
    /// for code without DWARF.
    ///
    /// The name table ([`Binary::build_index_cache`], built first if need be) names the
    /// units that define or inline a match; only those are walked.
    pub fn functions_by_name(&self, query: &str) -> Result<Vec<Function>> {
        let query = names::normalize(query);
        let units = self.name_table().units_for_name(&query).unwrap_or_default();
        self.functions_in_units(&units, &query)
    }

    fn functions_in_units(&self, units: &[usize], query: &str) -> Result<Vec<Function>> {
        let syms = units
            .iter()
            .filter_map(|&u| self.unit_functions(u).ok())
            .collect();
        self.functions_in(&crate::index::SymbolIndex::of_units(syms), query)
    }

    /// Finds functions by name through the on-disk index cache (when loaded), the
    /// binary's `.gdb_index` or DWARF 5 `.debug_names`, walking only the units it names for `query`: the same answer as
    /// [`Binary::functions_by_name`] (inlined copies included) without the full index,
    /// for a fully qualified query the index has (`ns::Class::method`, `main`). `None`
    /// without either section, or when it does not have the name.
    pub fn functions_by_index_section(&self, query: &str) -> Option<Vec<Function>> {
        let query = names::normalize(query);
        let mut units: Vec<usize> = if let Some(cached) = self.cached_index() {
            cached.units_for_name(&query)?
        } else {
            let offsets = match self.gdb_index() {
                Some(index) => index.units_defining(&query)?,
                None => {
                    let simple = query.rsplit("::").next().unwrap_or(&query);
                    self.units_named_in_debug_names(simple)?
                }
            };
            offsets
                .iter()
                .filter_map(|&o| self.unit_index_for_offset(o))
                .collect()
        };
        units.sort_unstable();
        units.dedup();
        let found = self.functions_in_units(&units, &query).ok()?;
        (!found.is_empty()).then_some(found)
    }

    pub(crate) fn functions_in(
        &self,
        index: &crate::index::SymbolIndex,
        query: &str,
    ) -> Result<Vec<Function>> {
        let mut out: Vec<Function> = Vec::new();
        let mut seen_keys: Vec<DieId> = Vec::new();
        for (key, entries) in index.functions_matching(query) {
            if seen_keys.contains(&key) {
                continue;
            }
            seen_keys.push(key);
            let inlined: Vec<FileAddr> =
                index.inlined_of(key).iter().map(|&a| FileAddr(a)).collect();
            let mut concrete = entries.iter().filter(|f| !f.ranges.is_empty());
            match concrete.next() {
                Some(first) => {
                    out.push(self.function_from_entry(first, inlined.clone()));
                    // Further out-of-line copies (e.g. one per unit for `static inline`).
                    for other in concrete {
                        out.push(self.function_from_entry(other, Vec::new()));
                    }
                }
                None => {
                    if let Some(first) = entries.first() {
                        out.push(self.function_from_entry(first, inlined));
                    }
                }
            }
        }
        if out.is_empty() {
            let query = names::normalize(query);
            for s in self.elf_symbols() {
                if s.kind == SymbolKind::Function
                    && names::normalized_matches(&query, &names::normalize(s.demangled()))
                {
                    out.push(Self::function_from_symbol(s));
                }
            }
        }
        out.sort_by(|a, b| (a.entry(), &a.name).cmp(&(b.entry(), &b.name)));
        out.dedup_by(|a, b| a.entry().is_some() && a.entry() == b.entry());
        Ok(out)
    }

    /// Finds functions by name through the ELF symbol table only, then reads the DWARF
    /// of just the unit covering each match (through `.debug_aranges`) for its
    /// breakpoint address past the prologue. Much cheaper than
    /// [`Binary::functions_by_name`] on a large library (libc with separate debug
    /// information): the whole symbol index is never built. Inlined copies are not
    /// found this way.
    pub fn functions_by_symbol_name(&self, query: &str) -> Result<Vec<Function>> {
        let query = names::normalize(query);
        // A match ends with the query's last component, and normalizing only drops
        // `<…>` and `(…)` groups, which sit at the ends of components: so the raw name
        // contains that component. Checking that first spares normalizing (allocating)
        // every symbol's name — 25–40 ms per query on ripgrep's 46 MB debug build.
        let mut out: Vec<Function> = Vec::new();
        for s in self.symbols_matching(&query) {
            let dwarf = self
                .function_at(FileAddr(s.addr))
                .ok()
                .flatten()
                .map(|f| f.function)
                .filter(|f| f.from_dwarf && f.entry() == Some(FileAddr(s.addr)));
            out.push(dwarf.unwrap_or_else(|| Self::function_from_symbol(s)));
        }
        // Aliases (`puts`, `_IO_puts`) name one function.
        out.sort_by(|a, b| (a.entry(), &a.name).cmp(&(b.entry(), &b.name)));
        out.dedup_by(|a, b| a.entry().is_some() && a.entry() == b.entry());
        Ok(out)
    }

    /// Finds a function no ELF symbol names — inlined wherever it is called, as many of
    /// Rust's and C++'s small functions are — in the units that hold the code of its
    /// siblings: the functions of its scope (`tandem::` for `tandem::ps`, `ns::Class::`
    /// for `ns::Class::get`) that have ELF symbols. A compiler emits an inlined function's
    /// abstract DIE in the units that inline it, and a function is most often called from
    /// its own module or class. The answer is what the full index gives for these units
    /// (a subset of its whole answer: the caller adds the other units' inlined copies once
    /// the index is built). `None` for a query without a scope, when no sibling has a
    /// symbol, when the siblings' code spans more than [`SIBLING_UNITS`] units (a walk of
    /// those would cost what the index does), or when none of the units has the function.
    pub fn functions_by_sibling_symbols(&self, query: &str) -> Option<Vec<Function>> {
        let query = names::normalize(query);
        let (scope, _) = query.rsplit_once("::")?;
        let prefix = format!("{scope}::");
        // Mangling keeps identifiers verbatim: a sibling's raw name holds the scope's
        // innermost component, which spares demangling the symbols that cannot match.
        let inner = scope.rsplit("::").next().unwrap_or_default();
        if inner.is_empty() || !inner.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return None;
        }
        let mut units: Vec<usize> = Vec::new();
        for s in self.elf_symbols() {
            if s.kind != SymbolKind::Function || s.addr == 0 || !s.name().contains(inner) {
                continue;
            }
            if names::normalize(s.demangled()).starts_with(&prefix) {
                units.extend(self.units_for_addr(s.addr).first());
                units.sort_unstable();
                units.dedup();
                if units.len() > SIBLING_UNITS {
                    return None;
                }
            }
        }
        let found = self.functions_in_units(&units, &query).ok()?;
        (!found.is_empty()).then_some(found)
    }

    /// The entry addresses of the functions whose ELF symbol matches `query` (as
    /// [`Binary::functions_by_symbol_name`] matches), without reading any DWARF: for
    /// internal breakpoints that need only the entry.
    pub fn symbol_entries(&self, query: &str) -> Vec<FileAddr> {
        let query = names::normalize(query);
        let mut out: Vec<FileAddr> = self
            .symbols_matching(&query)
            .map(|s| FileAddr(s.addr))
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Function symbols whose name matches a normalized query.
    fn symbols_matching<'a>(&'a self, query: &'a str) -> impl Iterator<Item = &'a ElfSymbol> + 'a {
        // A match ends with the query's last component, and normalizing only drops
        // `<…>` and `(…)` groups, which sit at the ends of components: so the demangled
        // name contains that component — and so does the raw one when the component is a
        // plain identifier (mangling keeps identifiers verbatim), which spares demangling
        // the symbols that cannot match.
        let last = query.rsplit("::").next().unwrap_or_default();
        let plain = !last.is_empty() && last.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        self.elf_symbols().iter().filter(move |s| {
            s.kind == SymbolKind::Function
                && s.addr != 0
                && (!plain || s.name().contains(last))
                && s.demangled().contains(last)
                && names::normalized_matches(query, &names::normalize(s.demangled()))
        })
    }

    /// The names (demangled, normalized) of the ELF symbols that start with `prefix` and
    /// that `keep` accepts, in byte order, at most `limit`, each with its kind (the first
    /// symbol's): completion of code without DWARF.
    pub fn elf_symbols_with_prefix(
        &self,
        prefix: &str,
        limit: usize,
        keep: impl Fn(&str) -> bool,
    ) -> Vec<(String, SymbolKind)> {
        let mut out: Vec<(String, SymbolKind)> = Vec::new();
        for s in self.elf_symbols() {
            // A name starting with `prefix` holds it verbatim mangled too.
            if !s.name().contains(prefix) {
                continue;
            }
            let name = names::normalize(s.demangled());
            if name.starts_with(prefix) && keep(&name) {
                out.push((name, s.kind));
            }
        }
        // By name, the first symbol of each name kept (a stable sort).
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out.dedup_by(|a, b| a.0 == b.0);
        out.truncate(limit);
        out
    }

    /// The address of the data symbol (an object in `.symtab` or `.dynsym`) named exactly
    /// `name`: for the C library's descriptions of its own structures
    /// (`_thread_db_link_map_l_tls_modid`), which a debugger reads as libthread_db does.
    pub fn data_symbol(&self, name: &str) -> Option<FileAddr> {
        self.elf_symbols()
            .iter()
            .find(|s| s.kind == SymbolKind::Variable && s.name() == name)
            .map(|s| FileAddr(s.addr))
    }

    /// The demangled ELF symbol of the function starting at `addr` (Rust generic
    /// instances keep their arguments here, `std::panicking::begin_panic::<&str>`, where
    /// DWARF names the function without them).
    pub fn symbol_name_at(&self, addr: FileAddr) -> Option<String> {
        let syms = self.elf_symbols();
        let i = syms.partition_point(|s| s.addr < addr.0);
        syms[i..]
            .iter()
            .take_while(|s| s.addr == addr.0)
            .find(|s| s.kind == SymbolKind::Function)
            .map(|s| s.demangled().to_string())
    }

    /// The ELF symbol of any kind (a vtable, an object) whose extent holds `addr`: its
    /// demangled name and start (for C++ dynamic types: `vtable for Derived`).
    pub fn data_symbol_containing(&self, addr: FileAddr) -> Option<(String, FileAddr)> {
        let syms = self.elf_symbols();
        let i = syms.partition_point(|s| s.addr <= addr.0);
        syms[..i]
            .iter()
            .rev()
            .take(64)
            .find(|s| s.addr != 0 && addr.0 < s.addr.saturating_add(s.size))
            .map(|s| (s.demangled().to_string(), FileAddr(s.addr)))
    }

    /// The ELF symbol (function or object) whose extent holds `addr`, as gdb's `print
    /// symbol` names it after a pointer: `g_buf`, `g_arr+12`, `add(int, int)`, `vtable
    /// for Circle+16`. `None` outside every symbol (the heap, the stack, a string literal).
    pub fn symbolic(&self, addr: FileAddr) -> Option<String> {
        let syms = self.elf_symbols();
        let i = syms.partition_point(|s| s.addr <= addr.0);
        let s = syms[..i]
            .iter()
            .rev()
            .take(64)
            .find(|s| s.addr != 0 && addr.0 < s.addr.saturating_add(s.size.max(1)))?;
        // Functions with their parameters, as gdb's minimal symbols name them; objects
        // (`vtable for Circle`, a static member) by their plain demangled name.
        let name = match s.kind {
            SymbolKind::Function => names::demangle_full(s.name()),
            _ => names::special_as_gdb(s.demangled()),
        };
        Some(match addr.0 - s.addr {
            0 => name,
            off => format!("{name}+{off}"),
        })
    }

    /// The function containing `addr`, with the chain of inlined calls active there.
    pub fn function_at(&self, addr: FileAddr) -> Result<Option<FunctionAt>> {
        if let Some(found) = self.function_cache.get(addr) {
            return Ok(found);
        }
        let found = self.function_at_uncached(addr)?;
        self.function_cache.insert(addr, found.clone());
        Ok(found)
    }

    fn function_at_uncached(&self, addr: FileAddr) -> Result<Option<FunctionAt>> {
        for unit_index in self.units_for_addr(addr.0) {
            let index = self.block_index(unit_index)?;
            let Some(innermost) = index.at(addr.0) else {
                continue;
            };
            let chain = index.chain(innermost);
            let Some(&BlockKind::Function(f)) = chain.first().map(|b| &b.kind) else {
                continue;
            };
            let syms = self.unit_functions(unit_index)?;
            let Some(f) = syms.funcs.get(f) else {
                continue;
            };
            let unit = self.unit(unit_index)?;
            let mut inlined = Vec::new();
            for b in chain.iter().filter(|b| b.kind == BlockKind::Inlined) {
                let die = unit.entry(b.offset)?;
                let id = DieId {
                    unit: unit_index,
                    offset: b.offset,
                };
                inlined.push(self.inlined_call(&unit, unit_index, &die, id, &b.ranges));
            }
            return Ok(Some(FunctionAt {
                function: self.function_from_entry(f, Vec::new()),
                inlined,
            }));
        }
        Ok(self.function_at_by_symbol(addr))
    }

    /// The innermost concrete function of unit `unit_index` covering `pc` (nested
    /// functions are rare but exist), through the unit's address → scope index.
    pub(crate) fn function_entry_at(
        &self,
        unit_index: usize,
        pc: u64,
    ) -> Result<Option<FuncEntry>> {
        let index = self.block_index(unit_index)?;
        let Some(f) = index.function_at(pc) else {
            return Ok(None);
        };
        Ok(self.unit_functions(unit_index)?.funcs.get(f).cloned())
    }

    /// The function containing `addr` by ELF symbol alone (the debug file's symbol table
    /// included), without reading DWARF: a name, no lines or variables.
    pub fn function_at_by_symbol(&self, addr: FileAddr) -> Option<FunctionAt> {
        let syms = self.elf_symbols();
        let pos = syms.partition_point(|s| s.addr <= addr.0);
        let found = syms[..pos].iter().rev().take(8).find(|s| {
            s.kind == SymbolKind::Function && addr.0 < s.addr.saturating_add(s.size.max(1))
        });
        found.map(|s| FunctionAt {
            function: Self::function_from_symbol(s),
            inlined: Vec::new(),
        })
    }

    /// The return type of the out-of-line function containing `addr` (the function
    /// [`Binary::function_at`] finds), following abstract origins and specifications.
    /// `None` for a `void` function and for code without DWARF.
    pub fn function_return_type(&self, addr: FileAddr) -> Result<Option<TypeRef>> {
        for unit_index in self.units_for_addr(addr.0) {
            let Some(f) = self.function_entry_at(unit_index, addr.0)? else {
                continue;
            };
            let mut current = f.die;
            for _ in 0..8 {
                let unit = self.unit(current.unit)?;
                let die = unit.entry(current.offset)?;
                if let Some(v) = die.attr_value(gimli::DW_AT_type) {
                    return Ok(self
                        .resolve_ref(current.unit, &v)
                        .map(|d| TypeRef(self.global_offset(d))));
                }
                let next = die
                    .attr_value(gimli::DW_AT_abstract_origin)
                    .or_else(|| die.attr_value(gimli::DW_AT_specification));
                match next.and_then(|n| self.resolve_ref(current.unit, &n)) {
                    Some(n) => current = n,
                    None => break,
                }
            }
            return Ok(None);
        }
        Ok(None)
    }

    /// The innermost function, lexical block or inlined copy containing `pc`.
    pub(crate) fn innermost_block(&self, unit_index: usize, pc: u64) -> Result<Option<DieId>> {
        let index = self.block_index(unit_index)?;
        Ok(index.at(pc).and_then(|b| index.block(b)).map(|b| DieId {
            unit: unit_index,
            offset: b.offset,
        }))
    }

    fn inlined_call(
        &self,
        _unit: &Unit,
        unit_index: usize,
        die: &Die,
        id: DieId,
        ranges: &[(u64, u64)],
    ) -> InlinedCall {
        let info = self.die_info(id, _unit, die);
        let name = match (info.linkage(), info.name()) {
            (Some(l), _) => names::normalize(&names::demangle(&l)),
            (None, Some(n)) => format!("{}{n}", self.scope_path_of(info.key)),
            (None, None) => String::new(),
        };
        let call_file =
            attr_u64(die, gimli::DW_AT_call_file).and_then(|f| self.unit_file(unit_index, f));
        let call_line =
            attr_u64(die, gimli::DW_AT_call_line).and_then(|l| Line::new(u32::try_from(l).ok()?));
        let call_column = attr_u64(die, gimli::DW_AT_call_column)
            .and_then(|c| std::num::NonZeroU32::new(u32::try_from(c).ok()?));
        InlinedCall {
            name,
            ranges: to_ranges(ranges),
            call_file: call_file.map(|p| p.to_path_buf()),
            call_line,
            call_column,
        }
    }
}
