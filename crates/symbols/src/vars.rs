//! Scopes and variables at a pc: parameters and locals of the lexical blocks and
//! inlined calls covering the pc, and the globals and statics of the unit.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use gimli::AttributeValue;

use crate::addr::{FileAddr, Line};
use crate::binary::Binary;
use crate::error::Result;
use crate::eval::LocationExpr;
use crate::index::{SymbolEntry, SymbolKind};
use crate::reader::R;
use crate::types::TypeRef;
use crate::units::{reader_bytes, Die, DieId, Unit};

/// How many names [`GlobalsCache`] keeps before it starts over.
pub(crate) const GLOBALS_CACHE_MAX: usize = 1024;

/// [`Binary::globals_named`] answers by name.
#[derive(Default)]
pub(crate) struct GlobalsCache(Mutex<HashMap<String, Arc<[Variable]>>>);

impl GlobalsCache {
    fn get(&self, name: &str) -> Option<Arc<[Variable]>> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned()
    }

    fn put(&self, name: &str, found: Arc<[Variable]>) {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= GLOBALS_CACHE_MAX {
            map.clear();
        }
        map.insert(name.to_string(), found);
    }
}

/// What kind of variable this is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VariableKind {
    /// A function parameter.
    Parameter,
    /// A local variable of a function or block.
    Local,
    /// A global or static variable of the unit (or a function-level `static`).
    Global,
}

/// Where a variable's value is, before evaluation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VariableLocation {
    /// Evaluate this expression with [`Binary::evaluate_location`].
    Expr(LocationExpr),
    /// The value is a constant (`DW_AT_const_value`), little-endian bytes.
    Const(Vec<u8>),
    /// No location covers the pc: the variable is optimized out here.
    OptimizedOut,
}

/// A variable visible at a pc.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Variable {
    /// Its name; `None` for artificial unnamed entries.
    pub name: Option<String>,
    /// Parameter, local or global.
    pub kind: VariableKind,
    /// Which frame at the pc it belongs to: 0 for the out-of-line function, k for the
    /// k-th inlined call of [`crate::FunctionAt::inlined`] (outermost = 1).
    pub frame: u32,
    /// Lexical depth within its frame: 0 for parameters and top-level locals, +1 per
    /// nested block. With `shadowed`, this tells same-named variables apart.
    pub depth: u32,
    /// Whether a variable of the same name at a greater depth in the same frame hides it.
    pub shadowed: bool,
    /// Its type.
    pub ty: Option<TypeRef>,
    /// Declaration file.
    pub decl_file: Option<PathBuf>,
    /// Declaration line.
    pub decl_line: Option<Line>,
    /// Where the value is.
    pub location: VariableLocation,
    /// Whether the compiler generated it (`this`, closures' environments, ...).
    pub artificial: bool,
    /// A global's name with its namespaces and classes (`geo::counter`,
    /// `S::total`, `krate::module::STATIC`; `counter` at file scope), which expressions
    /// look it up by; `None` for parameters and locals.
    pub qualified_name: Option<Arc<str>>,
}

/// The variables visible at a pc.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    /// Parameters and locals of every frame at the pc (see [`Variable::frame`]).
    pub locals: Vec<Variable>,
    /// Globals and statics of the unit containing the pc.
    pub globals: Vec<Variable>,
    /// The frame base expression of the out-of-line function at the pc, to pass to
    /// [`Binary::evaluate_location`].
    pub frame_base: Option<LocationExpr>,
}

impl Binary {
    /// Variables visible at `pc`. An unreadable DIE is skipped, never fatal.
    pub fn scope_at(&self, pc: FileAddr) -> Result<Scope> {
        let mut scope = Scope::default();
        let units = self.units_for_addr(pc.0);
        // Usually one unit covers the pc; prefer the one with a function there.
        let mut chosen = None;
        for &unit_index in &units {
            let syms = self.unit_functions(unit_index)?;
            let func = self.function_entry_at(unit_index, pc.0)?;
            if func.is_some() || chosen.is_none() {
                chosen = Some((unit_index, syms, func.clone()));
            }
            if func.is_some() {
                break;
            }
        }
        let Some((unit_index, syms, func)) = chosen else {
            return Ok(scope);
        };
        let unit = self.unit(unit_index)?;
        if let Some(func) = func {
            let die = unit.entry(func.die.offset)?;
            scope.frame_base = match die.attr_value(gimli::DW_AT_frame_base) {
                Some(v) => match self.location_at(&unit, unit_index, v, pc.0) {
                    VariableLocation::Expr(e) => Some(e),
                    _ => None,
                },
                None => None,
            };
            let mut tree = unit.entries_tree(Some(func.die.offset))?;
            let root = tree.root()?;
            let mut frame = 0;
            // At the function's first instruction its own variables are read from the
            // location-list entry for that point (see `location_at`).
            let entry = func.ranges.first().map(|r| r.0).filter(|e| *e == pc.0);
            self.collect_locals(
                &unit,
                unit_index,
                root,
                pc.0,
                entry,
                &mut frame,
                0,
                &mut scope.locals,
            )?;
        }
        for entry in &syms.others {
            if entry.kind != SymbolKind::Variable {
                continue;
            }
            let Some(id) = entry.die else { continue };
            let Ok(die) = unit.entry(id.offset) else {
                continue;
            };
            if let Some(v) = self.entry_variable(&unit, entry, id, &die, pc.0, false) {
                scope.globals.push(v);
            }
        }
        mark_shadowed(&mut scope.locals);
        Ok(scope)
    }

    /// The globals and statics (outside functions) named `name`, from every unit, for
    /// evaluating expressions without a frame. A unit that cannot be read is skipped.
    pub fn global_variables(&self, name: &str) -> Result<Vec<Variable>> {
        let mut out = Vec::new();
        for unit_index in 0..self.units().len() {
            let Ok(syms) = self.unit_functions(unit_index) else {
                continue;
            };
            let wanted = syms
                .others
                .iter()
                .filter(|e| e.kind == SymbolKind::Variable && &*e.name == name);
            let mut unit = None;
            for entry in wanted {
                let Some(id) = entry.die else { continue };
                if unit.is_none() {
                    unit = self.unit(unit_index).ok();
                }
                let Some(unit) = unit.as_ref() else { break };
                let Ok(die) = unit.entry(id.offset) else {
                    continue;
                };
                if let Some(v) = self.entry_variable(unit, entry, id, &die, 0, true) {
                    out.push(v);
                }
            }
        }
        Ok(out)
    }

    /// The globals and statics named `name` of every unit, in the order gdb looks
    /// beyond the current unit: definitions with external linkage first, then the
    /// statics of the units (a `static` of another file is found last, as gdb's
    /// `lookup_static_symbol` does). Found through the name table (built first if need
    /// be), reading only the DIEs it names; answers are cached per name, so a condition
    /// naming another unit's global costs a hash lookup per hit.
    pub fn globals_named(&self, name: &str) -> Arc<[Variable]> {
        if let Some(found) = self.globals_cache.get(name) {
            return found;
        }
        let mut external = Vec::new();
        let mut statics = Vec::new();
        for id in self.global_dies_named(name) {
            let Ok(unit) = self.unit(id.unit) else {
                continue;
            };
            let Ok(die) = unit.entry(id.offset) else {
                continue;
            };
            // A class's constant declared with its value is found by name too
            // (`variable_of`, not `make_variable`, which drops declarations).
            let Some(mut v) =
                self.variable_of(&unit, id, &die, VariableKind::Global, 0, 0, 0, None)
            else {
                continue;
            };
            // The table's key for it is its qualified name.
            v.qualified_name = Some(name.into());
            let is_external = matches!(
                self.attr_via_origin(id, gimli::DW_AT_external),
                Some((_, AttributeValue::Flag(true)))
            );
            if is_external {
                external.push(v);
            } else {
                statics.push(v);
            }
        }
        external.extend(statics);
        let found: Arc<[Variable]> = external.into();
        self.globals_cache.put(name, found.clone());
        found
    }

    /// The DIEs of the global variables whose qualified name is `name`, in unit and DIE
    /// order (the name table's entries for it as a whole name).
    fn global_dies_named(&self, name: &str) -> Vec<DieId> {
        let mut out: Vec<DieId> = self
            .name_table()
            .lookup(name, |k| k == crate::table::EntryKind::Variable)
            .into_iter()
            .filter(|&(_, whole)| whole)
            .map(|(e, _)| e.die)
            .filter(|d| d.unit < self.units().len())
            .collect();
        out.sort_unstable();
        out
    }

    #[allow(clippy::too_many_arguments)]
    fn collect_locals(
        &self,
        unit: &Unit,
        unit_index: usize,
        node: gimli::EntriesTreeNode<'_, '_, R>,
        pc: u64,
        entry: Option<u64>,
        frame: &mut u32,
        depth: u32,
        out: &mut Vec<Variable>,
    ) -> Result<()> {
        if (*frame as usize).saturating_add(depth as usize) > crate::functions::MAX_NESTING {
            return Ok(());
        }
        let this_frame = *frame;
        let mut descend = None;
        let mut children = node.children();
        while let Some(child) = children.next()? {
            let die = child.entry();
            let id = DieId {
                unit: unit_index,
                offset: die.offset(),
            };
            match die.tag() {
                gimli::DW_TAG_formal_parameter => {
                    if let Some(v) = self.make_variable(
                        unit,
                        id,
                        die,
                        VariableKind::Parameter,
                        this_frame,
                        depth,
                        pc,
                        entry.filter(|_| this_frame == 0),
                    ) {
                        out.push(v);
                    }
                }
                gimli::DW_TAG_variable => {
                    let is_static = die
                        .attr(gimli::DW_AT_location)
                        .and_then(|a| a.exprloc_value())
                        .is_some_and(|e| {
                            matches!(gimli::Reader::read_u8(&mut e.0.clone()), Ok(0x03))
                        });
                    let kind = if is_static {
                        VariableKind::Global
                    } else {
                        VariableKind::Local
                    };
                    let at_entry = entry.filter(|_| this_frame == 0);
                    if let Some(v) =
                        self.make_variable(unit, id, die, kind, this_frame, depth, pc, at_entry)
                    {
                        out.push(v);
                    }
                }
                gimli::DW_TAG_lexical_block | gimli::DW_TAG_inlined_subroutine
                    if descend.is_none() =>
                {
                    let has_ranges = die.attr_value(gimli::DW_AT_low_pc).is_some()
                        || die.attr_value(gimli::DW_AT_ranges).is_some();
                    let covers = !has_ranges
                        || self
                            .die_ranges(unit, die)
                            .iter()
                            .any(|r| r.0 <= pc && pc < r.1);
                    if covers {
                        // Only one block at each level can contain the pc; walk it after
                        // this level's variables so output is outer to inner.
                        descend =
                            Some((die.offset(), die.tag() == gimli::DW_TAG_inlined_subroutine));
                    }
                }
                _ => {}
            }
        }
        if let Some((offset, inlined)) = descend {
            let mut tree = unit.entries_tree(Some(offset))?;
            let root = tree.root()?;
            if inlined {
                *frame += 1;
                self.collect_locals(unit, unit_index, root, pc, None, frame, 0, out)?;
            } else {
                self.collect_locals(unit, unit_index, root, pc, entry, frame, depth + 1, out)?;
            }
        }
        Ok(())
    }

    /// The global of a unit's table `entry`, with the entry's qualified name. A class's
    /// constant declared with its value (`static const int sides = 4;`) is one when
    /// looked up by name (`constants`), not in a unit's list of globals.
    pub(crate) fn entry_variable(
        &self,
        unit: &Unit,
        entry: &SymbolEntry,
        id: DieId,
        die: &Die,
        pc: u64,
        constants: bool,
    ) -> Option<Variable> {
        let global = VariableKind::Global;
        let mut v = if constants {
            self.variable_of(unit, id, die, global, 0, 0, pc, None)
        } else {
            self.make_variable(unit, id, die, global, 0, 0, pc, None)
        }?;
        v.qualified_name = Some(entry.name.clone());
        Some(v)
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn make_variable(
        &self,
        unit: &Unit,
        id: DieId,
        die: &Die,
        kind: VariableKind,
        frame: u32,
        depth: u32,
        pc: u64,
        entry: Option<u64>,
    ) -> Option<Variable> {
        if die.attr_value(gimli::DW_AT_declaration).is_some()
            && die.attr_value(gimli::DW_AT_location).is_none()
        {
            return None;
        }
        self.variable_of(unit, id, die, kind, frame, depth, pc, entry)
    }

    /// [`Binary::make_variable`] of any DIE, a declaration too.
    #[allow(clippy::too_many_arguments)]
    fn variable_of(
        &self,
        unit: &Unit,
        id: DieId,
        die: &Die,
        kind: VariableKind,
        frame: u32,
        depth: u32,
        pc: u64,
        entry: Option<u64>,
    ) -> Option<Variable> {
        let info = self.die_info(id, unit, die);
        let name = info.name();
        let ty = info.ty.map(|d| TypeRef(self.global_offset(d)));
        let (decl_file, decl_line) = (
            info.decl_file.as_deref().map(std::path::Path::to_path_buf),
            info.decl_line,
        );
        let location = if let Some(v) = die.attr_value(gimli::DW_AT_location) {
            self.location_at_entry(unit, id.unit, v, pc, entry)
        } else if let Some((owner, v)) = self.attr_via_origin(id, gimli::DW_AT_const_value) {
            const_bytes(self, owner, v)
        } else {
            VariableLocation::OptimizedOut
        };
        let artificial = matches!(
            die.attr_value(gimli::DW_AT_artificial),
            Some(AttributeValue::Flag(true))
        );
        Some(Variable {
            name,
            kind,
            frame,
            depth,
            shadowed: false,
            ty,
            decl_file,
            decl_line,
            location,
            artificial,
            qualified_name: None,
        })
    }

    /// Where the variable at `.debug_info` offset `die_offset` is at `pc`: the location
    /// of an array bound given as a reference to a variable (gcc's artificial bound
    /// variables of a VLA at -O2, whose locations are location lists).
    pub fn variable_location_at(&self, die_offset: u64, pc: FileAddr) -> VariableLocation {
        let Some(id) = self.die_id(die_offset) else {
            return VariableLocation::OptimizedOut;
        };
        let Ok(unit) = self.unit(id.unit) else {
            return VariableLocation::OptimizedOut;
        };
        let Ok(die) = unit.entry(id.offset) else {
            return VariableLocation::OptimizedOut;
        };
        if let Some(v) = die.attr_value(gimli::DW_AT_const_value) {
            return const_bytes(self, id, v);
        }
        match die.attr_value(gimli::DW_AT_location) {
            Some(v) => self.location_at(&unit, id.unit, v, pc.0),
            None => VariableLocation::OptimizedOut,
        }
    }

    /// Picks the expression in force at `pc` from an exprloc or a location list.
    pub(crate) fn location_at(
        &self,
        unit: &Unit,
        unit_index: usize,
        value: AttributeValue<R>,
        pc: u64,
    ) -> VariableLocation {
        self.location_at_entry(unit, unit_index, value, pc, None)
    }

    /// [`Binary::location_at`], where `entry` is `Some(pc)` when `pc` is the first
    /// instruction of the variable's function: there an empty range at `pc` (gcc's
    /// location views: the state before the first view step, `DW_OP_reg5` before
    /// `a = 10`'s `DW_OP_lit10` at the same address) is the one in force, as gdb takes it
    /// at a function's entry point: a parameter shows the value it was passed.
    pub(crate) fn location_at_entry(
        &self,
        unit: &Unit,
        unit_index: usize,
        value: AttributeValue<R>,
        pc: u64,
        entry: Option<u64>,
    ) -> VariableLocation {
        if let AttributeValue::Exprloc(e) = &value {
            return VariableLocation::Expr(LocationExpr {
                bytes: reader_bytes(&e.0),
                encoding: unit.encoding(),
                unit: unit_index,
            });
        }
        if entry == Some(pc) {
            if let Some(data) = self.entry_point_location(unit, &value, pc) {
                return VariableLocation::Expr(LocationExpr {
                    bytes: reader_bytes(&data.0),
                    encoding: unit.encoding(),
                    unit: unit_index,
                });
            }
        }
        let Ok(Some(mut list)) = unit.r().attr_locations(value) else {
            return VariableLocation::OptimizedOut;
        };
        let mut found = None;
        while let Ok(Some(e)) = list.next() {
            if e.range.begin <= pc && pc < e.range.end {
                found = Some(e.data);
                break;
            }
        }
        match found {
            Some(data) => VariableLocation::Expr(LocationExpr {
                bytes: reader_bytes(&data.0),
                encoding: unit.encoding(),
                unit: unit_index,
            }),
            None => VariableLocation::OptimizedOut,
        }
    }
}

impl Binary {
    /// The expression of an empty range `[pc, pc)` of a location list, if it has one
    /// (gimli's iterator skips empty ranges, so the raw entries are read here, with the
    /// base address they set).
    fn entry_point_location(
        &self,
        unit: &Unit,
        value: &AttributeValue<R>,
        pc: u64,
    ) -> Option<gimli::Expression<R>> {
        use gimli::RawLocListEntry as E;
        // The unit's own sections (a split unit's location lists are in its .dwo).
        let r = unit.r();
        let dwarf = r.dwarf;
        let offset = match value {
            AttributeValue::LocationListsRef(o) => *o,
            AttributeValue::DebugLocListsIndex(i) => dwarf.locations_offset(unit, *i).ok()?,
            _ => return None,
        };
        let mut raw = dwarf
            .locations
            .raw_locations(offset, unit.encoding())
            .ok()?;
        let address = |i| dwarf.address(unit, i).ok();
        let mut base = unit.low_pc;
        while let Ok(Some(e)) = raw.next() {
            let (begin, end, data) = match e {
                E::BaseAddress { addr } => {
                    base = addr;
                    continue;
                }
                E::BaseAddressx { addr } => {
                    base = address(addr)?;
                    continue;
                }
                E::OffsetPair { begin, end, data }
                | E::AddressOrOffsetPair { begin, end, data } => {
                    (base.wrapping_add(begin), base.wrapping_add(end), data)
                }
                E::StartEnd { begin, end, data } => (begin, end, data),
                E::StartLength {
                    begin,
                    length,
                    data,
                } => (begin, begin.wrapping_add(length), data),
                E::StartxEndx { begin, end, data } => (address(begin)?, address(end)?, data),
                E::StartxLength {
                    begin,
                    length,
                    data,
                } => {
                    let b = address(begin)?;
                    (b, b.wrapping_add(length), data)
                }
                E::DefaultLocation { .. } => continue,
            };
            if begin == pc && end == pc {
                return Some(data);
            }
        }
        None
    }
}

fn const_bytes(binary: &Binary, owner: DieId, v: AttributeValue<R>) -> VariableLocation {
    let bytes = match v {
        AttributeValue::Block(b) => reader_bytes(&b),
        AttributeValue::Data1(x) => vec![x],
        AttributeValue::Data2(x) => x.to_le_bytes().to_vec(),
        AttributeValue::Data4(x) => x.to_le_bytes().to_vec(),
        AttributeValue::Data8(x) => x.to_le_bytes().to_vec(),
        // Extended to 16 bytes, so a constant of a 128-bit type (`~(unsigned
        // __int128)0` is `DW_FORM_sdata` -1) reads whole; narrower types read a prefix.
        AttributeValue::Sdata(x) => i128::from(x).to_le_bytes().to_vec(),
        AttributeValue::Udata(x) => u128::from(x).to_le_bytes().to_vec(),
        other => {
            let Ok(unit) = binary.unit(owner.unit) else {
                return VariableLocation::OptimizedOut;
            };
            match unit.string(other) {
                Ok(s) => reader_bytes(&s),
                Err(_) => return VariableLocation::OptimizedOut,
            }
        }
    };
    VariableLocation::Const(bytes)
}

/// Marks variables hidden by a same-named variable deeper in the same frame.
fn mark_shadowed(vars: &mut [Variable]) {
    for i in 0..vars.len() {
        let hidden = vars.iter().any(|o| {
            o.frame == vars[i].frame
                && o.name.is_some()
                && o.name == vars[i].name
                && o.depth > vars[i].depth
        });
        vars[i].shadowed = hidden;
    }
}
