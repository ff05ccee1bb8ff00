//! Call sites (`DW_TAG_call_site`, DWARF 4's `DW_TAG_GNU_call_site`): the values a
//! caller passed in registers, for `DW_OP_entry_value` in the callee, and whether a
//! jump is a tail call; and the imported functions a PLT or GOT slot leads to.

use std::collections::HashMap;
use std::sync::Arc;

use gimli::AttributeValue;

use crate::addr::FileAddr;
use crate::binary::Binary;
use crate::error::{Error, Result};
use crate::eval::LocationExpr;
use crate::units::{reader_bytes, Die, DieId, Unit};

/// One call instruction of a caller, as its `DW_TAG_call_site` describes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallSite {
    /// The return address of the call (`DW_AT_call_return_pc` / GNU `DW_AT_low_pc`).
    pub return_pc: FileAddr,
    /// For each described parameter register (DWARF number): the expression, evaluated
    /// in the caller's frame, whose value the register had on entry to the callee
    /// (`DW_AT_call_value` / `DW_AT_GNU_call_site_value`).
    pub values: Vec<(u16, LocationExpr)>,
    /// For each parameter the call site names (`DW_AT_call_parameter` / GNU
    /// `DW_AT_abstract_origin`, as a `.debug_info` offset): its value's expression, for
    /// `DW_OP_GNU_parameter_ref` in a clone that lost the parameter.
    pub parameters: Vec<(u64, LocationExpr)>,
    /// The frame base of the function containing the call (for `DW_OP_fbreg` in the
    /// values), when it is a single expression.
    pub frame_base: Option<LocationExpr>,
    /// The call is a jump that leaves the caller's frame to the callee
    /// (`DW_AT_call_tail_call` / `DW_AT_GNU_tail_call`).
    pub tail_call: bool,
    /// The function the call calls, when DWARF names it (`DW_AT_call_origin` / GNU
    /// `DW_AT_abstract_origin`, or a constant `DW_AT_call_target`).
    pub target: Option<CallTarget>,
}

/// The callee of a call site as DWARF names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallTarget {
    /// The callee's entry address (its DIE's `DW_AT_low_pc`, or a constant target).
    Entry(FileAddr),
    /// A declaration without code in this unit: the callee's linkage name (else its
    /// name), found in the ELF symbol table.
    Symbol(String),
}

/// How many functions a rebuilt chain of tail calls may hold.
pub const MAX_TAIL_CHAIN: usize = 8;

/// One function of a rebuilt tail-call chain: its entry and the tail call it makes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TailLink {
    /// The function's entry address.
    pub entry: FileAddr,
    /// Its tail-call site to the next function of the chain.
    pub site: CallSite,
}

/// The call sites of one unit, by return address.
pub(crate) type UnitCallSites = HashMap<u64, CallSite>;

const DW_OP_REG0: u8 = 0x50;
const DW_OP_REG31: u8 = 0x6f;
const DW_OP_REGX: u8 = 0x90;

/// The register a `DW_OP_regN` / `DW_OP_regx` expression names.
fn register_of(bytes: &[u8]) -> Option<u16> {
    match bytes {
        [op] if (DW_OP_REG0..=DW_OP_REG31).contains(op) => Some(u16::from(op - DW_OP_REG0)),
        [DW_OP_REGX, rest @ ..] => {
            let mut value: u64 = 0;
            for (i, b) in rest.iter().enumerate() {
                if i >= 3 {
                    return None;
                }
                value |= u64::from(b & 0x7f) << (7 * i);
                if b & 0x80 == 0 {
                    return (i + 1 == rest.len())
                        .then(|| u16::try_from(value).ok())
                        .flatten();
                }
            }
            None
        }
        _ => None,
    }
}

impl Binary {
    /// The call site whose return address is `return_addr` (a caller frame's pc), with
    /// the entry values of the callee's parameter registers it describes; `None` when
    /// no unit covering the address describes such a call. Parsed lazily, once per unit.
    pub fn call_site(&self, return_addr: FileAddr) -> Result<Option<CallSite>> {
        // The return address can be just past the end of the caller (a call to a
        // noreturn function), so the call instruction's address is looked up too.
        let mut units = self.units_for_addr(return_addr.0);
        for u in self.units_for_addr(return_addr.0.wrapping_sub(1)) {
            if !units.contains(&u) {
                units.push(u);
            }
        }
        for index in units {
            let sites = self.unit_call_sites(index)?;
            if let Some(site) = sites.get(&return_addr.0) {
                return Ok(Some(site.clone()));
            }
        }
        Ok(None)
    }

    /// The entry values described by the call site returning to `return_addr`:
    /// (DWARF register, expression to evaluate in the caller's frame).
    pub fn call_site_values(&self, return_addr: FileAddr) -> Result<Vec<(u16, LocationExpr)>> {
        Ok(self
            .call_site(return_addr)?
            .map(|s| s.values)
            .unwrap_or_default())
    }

    /// The entry address of the function the call site returning to `return_addr`
    /// calls, when DWARF names it and the callee has code in this binary.
    pub fn call_target(&self, return_addr: FileAddr) -> Result<Option<FileAddr>> {
        Ok(self
            .call_site(return_addr)?
            .and_then(|s| s.target)
            .and_then(|t| self.target_entry(&t)))
    }

    /// The entry address a [`CallTarget`] names.
    pub fn target_entry(&self, target: &CallTarget) -> Option<FileAddr> {
        match target {
            CallTarget::Entry(a) => Some(*a),
            CallTarget::Symbol(name) => {
                let mut found = self
                    .elf_symbols()
                    .iter()
                    .filter(|s| s.addr != 0 && s.name() == *name)
                    .map(|s| s.addr);
                let first = found.next()?;
                found.all(|a| a == first).then_some(FileAddr(first))
            }
        }
    }

    /// The tail-call sites inside the function whose entry is `entry` (jumps that leave
    /// its frame to another function), in address order.
    pub fn tail_calls_of(&self, entry: FileAddr) -> Result<Vec<CallSite>> {
        let Some(f) = self.function_at(entry)? else {
            return Ok(Vec::new());
        };
        if f.function.entry() != Some(entry) {
            return Ok(Vec::new());
        }
        let ranges = f.function.ranges.clone();
        let inside = |a: u64| ranges.iter().any(|r| (r.start.0..r.end.0).contains(&a));
        let mut out = Vec::new();
        for index in self.units_for_addr(entry.0) {
            for site in self.unit_call_sites(index)?.values() {
                if site.tail_call && inside(site.return_pc.0.wrapping_sub(1)) {
                    out.push(site.clone());
                }
            }
        }
        out.sort_by_key(|s| s.return_pc);
        out.dedup_by_key(|s| s.return_pc);
        Ok(out)
    }

    /// The frames tail calls removed between a caller whose call site calls `from` and
    /// the function `to` that executes: the unique chain of functions, `from` first, each
    /// tail-calling the next, the last tail-calling `to`. As gdb does, it is given only
    /// when unambiguous: `None` when no chain or several lead there (or only through a
    /// cycle, or longer than [`MAX_TAIL_CHAIN`]); empty when `from` is `to`.
    pub fn tail_chain(&self, from: FileAddr, to: FileAddr) -> Result<Option<Vec<TailLink>>> {
        if from == to {
            return Ok(Some(Vec::new()));
        }
        let mut found: Vec<Vec<TailLink>> = Vec::new();
        let mut path: Vec<TailLink> = Vec::new();
        self.chains(from, to, &mut path, &mut found)?;
        Ok((found.len() == 1).then(|| found.remove(0)))
    }

    fn chains(
        &self,
        at: FileAddr,
        to: FileAddr,
        path: &mut Vec<TailLink>,
        found: &mut Vec<Vec<TailLink>>,
    ) -> Result<()> {
        // Two chains already make the answer ambiguous; a cycle or a long chain ends.
        if found.len() > 1 || path.len() >= MAX_TAIL_CHAIN || path.iter().any(|l| l.entry == at) {
            return Ok(());
        }
        for site in self.tail_calls_of(at)? {
            let Some(next) = site.target.as_ref().and_then(|t| self.target_entry(t)) else {
                continue;
            };
            path.push(TailLink { entry: at, site });
            if next == to {
                found.push(path.clone());
            } else {
                self.chains(next, to, path, found)?;
            }
            path.pop();
        }
        Ok(())
    }

    /// What the call site DIE `die` calls.
    fn call_target_of(&self, index: usize, unit: &Unit, die: &Die) -> Option<CallTarget> {
        if let Some(expr) = Self::expr_attr(unit, index, die, gimli::DW_AT_call_target) {
            // Only a constant target (`DW_OP_addr X`) names a function; a register or
            // memory target is an indirect call.
            let mut ops =
                gimli::Expression(gimli::EndianSlice::new(&expr.bytes, gimli::LittleEndian))
                    .operations(unit.encoding());
            return match (ops.next().ok()??, ops.next().ok()?) {
                (gimli::Operation::Address { address }, None) => {
                    Some(CallTarget::Entry(FileAddr(address)))
                }
                _ => None,
            };
        }
        let origin = die
            .attr_value(gimli::DW_AT_call_origin)
            .or_else(|| die.attr_value(gimli::DW_AT_abstract_origin))?;
        let id = self.resolve_ref(index, &origin)?;
        self.function_target(id)
    }

    /// The callee a subprogram DIE names: its code, or its symbol.
    fn function_target(&self, id: DieId) -> Option<CallTarget> {
        let unit = self.unit(id.unit).ok()?;
        let die = unit.entry(id.offset).ok()?;
        if let Some(v) = die.attr_value(gimli::DW_AT_low_pc) {
            if let Ok(Some(a)) = unit.r().attr_address(v) {
                return Some(CallTarget::Entry(FileAddr(a)));
            }
        }
        self.attr_str(&unit, &die, gimli::DW_AT_linkage_name)
            .or_else(|| self.attr_str(&unit, &die, gimli::DW_AT_MIPS_linkage_name))
            .or_else(|| self.attr_str(&unit, &die, gimli::DW_AT_name))
            .map(CallTarget::Symbol)
    }

    /// The function a GOT slot at `slot` is bound to by a dynamic relocation
    /// (`R_X86_64_JUMP_SLOT` behind a PLT stub, `R_X86_64_GLOB_DAT` behind a `-fno-plt`
    /// call): the imported symbol's name, as the program's source calls it (`strlen`,
    /// not the IFUNC variant the dynamic linker bound it to).
    pub fn import_at(&self, slot: FileAddr) -> Option<String> {
        self.with_objects(|file, _| {
            use object::{Object, ObjectSymbol, ObjectSymbolTable};
            let (_, reloc) = file
                .dynamic_relocations()?
                .find(|(offset, _)| *offset == slot.0)?;
            let object::RelocationTarget::Symbol(index) = reloc.target() else {
                return None;
            };
            let symbol = file.dynamic_symbol_table()?.symbol_by_index(index).ok()?;
            let name = symbol.name().ok()?;
            // A versioned name (`puts@GLIBC_2.2.5`) is shown without its version.
            Some(name.split('@').next().unwrap_or(name).to_string())
        })
        .ok()
        .flatten()
        .filter(|n| !n.is_empty())
    }

    pub(crate) fn unit_call_sites(&self, index: usize) -> Result<Arc<UnitCallSites>> {
        let slot = self
            .units()
            .get(index)
            .ok_or(Error::BadReference(index as u64))?;
        let result = slot.call_sites.get_or_init(|| {
            let unit = self.unit(index).map_err(|_| gimli::Error::MissingUnitDie)?;
            self.counters
                .die_walk(&self.path, index, self.units().len());
            self.walk_call_sites(index, &unit).map(Arc::new)
        });
        result.clone().map_err(Error::from)
    }

    fn expr_attr(unit: &Unit, index: usize, die: &Die, at: gimli::DwAt) -> Option<LocationExpr> {
        match die.attr_value(at)? {
            AttributeValue::Exprloc(e) => Some(LocationExpr {
                bytes: reader_bytes(&e.0),
                encoding: unit.encoding(),
                unit: index,
            }),
            AttributeValue::Block(b) => Some(LocationExpr {
                bytes: reader_bytes(&b),
                encoding: unit.encoding(),
                unit: index,
            }),
            _ => None,
        }
    }

    fn walk_call_sites(
        &self,
        index: usize,
        unit: &Unit,
    ) -> std::result::Result<UnitCallSites, gimli::Error> {
        let mut out = UnitCallSites::new();
        // Enclosing subprograms: (depth, frame base).
        let mut funcs: Vec<(isize, Option<LocationExpr>)> = Vec::new();
        // The call site whose parameters are being read: (depth, site).
        let mut current: Option<(isize, CallSite)> = None;
        let mut cursor = unit.entries();
        while let Some(die) = cursor.next_dfs()? {
            let depth = die.depth();
            while funcs.last().is_some_and(|f| f.0 >= depth) {
                funcs.pop();
            }
            if current.as_ref().is_some_and(|c| c.0 >= depth) {
                if let Some((_, site)) = current.take() {
                    out.insert(site.return_pc.0, site);
                }
            }
            match die.tag() {
                gimli::DW_TAG_subprogram => {
                    let fb = Self::expr_attr(unit, index, die, gimli::DW_AT_frame_base);
                    funcs.push((depth, fb));
                }
                gimli::DW_TAG_call_site | gimli::DW_TAG_GNU_call_site => {
                    let ret = die
                        .attr_value(gimli::DW_AT_call_return_pc)
                        .or_else(|| die.attr_value(gimli::DW_AT_low_pc))
                        .and_then(|v| unit.r().attr_address(v).ok().flatten());
                    if let Some(ret) = ret {
                        let site = CallSite {
                            return_pc: FileAddr(ret),
                            values: Vec::new(),
                            parameters: Vec::new(),
                            frame_base: funcs.last().and_then(|f| f.1.clone()),
                            tail_call: die.attr_value(gimli::DW_AT_call_tail_call).is_some()
                                || die.attr_value(gimli::DW_AT_GNU_tail_call).is_some(),
                            target: self.call_target_of(index, unit, die),
                        };
                        if die.has_children() {
                            current = Some((depth, site));
                        } else {
                            out.insert(ret, site);
                        }
                    }
                }
                gimli::DW_TAG_call_site_parameter | gimli::DW_TAG_GNU_call_site_parameter => {
                    if let Some((_, site)) = current.as_mut() {
                        let reg = Self::expr_attr(unit, index, die, gimli::DW_AT_location)
                            .and_then(|l| register_of(&l.bytes));
                        let value = Self::expr_attr(unit, index, die, gimli::DW_AT_call_value)
                            .or_else(|| {
                                Self::expr_attr(unit, index, die, gimli::DW_AT_GNU_call_site_value)
                            });
                        let param = die
                            .attr_value(gimli::DW_AT_call_parameter)
                            .or_else(|| die.attr_value(gimli::DW_AT_abstract_origin))
                            .and_then(|v| self.resolve_ref(index, &v))
                            .map(|d| self.global_offset(d));
                        if let (Some(param), Some(value)) = (param, value.as_ref()) {
                            site.parameters.push((param, value.clone()));
                        }
                        if let (Some(reg), Some(value)) = (reg, value) {
                            site.values.push((reg, value));
                        }
                    }
                }
                _ => {}
            }
        }
        if let Some((_, site)) = current.take() {
            out.insert(site.return_pc.0, site);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::register_of;

    #[test]
    fn registers_of_location_expressions() {
        assert_eq!(register_of(&[0x55]), Some(5));
        assert_eq!(register_of(&[0x90, 0x11]), Some(17));
        assert_eq!(register_of(&[0x90, 0x91, 0x01]), Some(145));
        assert_eq!(register_of(&[0x90]), None);
        assert_eq!(register_of(&[0x91, 0x00]), None);
        assert_eq!(register_of(&[]), None);
    }
}
