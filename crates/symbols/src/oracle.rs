//! Name lookups answered from the full in-memory index ([`Binary::symbol_index`]) and
//! from walking every unit, the way they were answered before the name table
//! (`table.rs`) answered them: what the library's tests compare the table's answers with.
//! The debugger itself never calls these (they build the whole index).

use gimli::AttributeValue;

use crate::binary::Binary;
use crate::error::Result;
use crate::functions::Function;
use crate::index::SymbolKind;
use crate::types::{TypeKind, TypeRef};
use crate::vars::Variable;

/// Whether `candidate` is `query` or ends with `::query`, that `::` outside template
/// arguments and parentheses.
fn ends_with_component(candidate: &str, query: &str) -> bool {
    if query.is_empty() {
        return false;
    }
    if candidate == query {
        return true;
    }
    let Some(head) = candidate.strip_suffix(query) else {
        return false;
    };
    let Some(head) = head.strip_suffix("::") else {
        return false;
    };
    let mut depth = 0usize;
    for b in head.bytes() {
        match b {
            b'<' | b'(' => depth += 1,
            b'>' | b')' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    depth == 0
}

impl Binary {
    /// [`Binary::functions_by_name`] from the full in-memory index.
    #[doc(hidden)]
    pub fn functions_by_name_in_full_index(&self, query: &str) -> Result<Vec<Function>> {
        let index = self.symbol_index();
        self.functions_in(&index, query)
    }

    /// [`Binary::types_by_name`] from the full in-memory index: the types whose qualified
    /// name is `name` (or its normalized form) or ends with it as whole components.
    #[doc(hidden)]
    pub fn types_by_name_in_full_index(&self, name: &str) -> Vec<TypeRef> {
        let name = name
            .trim_start_matches("struct ")
            .trim_start_matches("union ")
            .trim_start_matches("enum ")
            .trim_start_matches("class ")
            .trim();
        let query = crate::names::normalize(name);
        let index = self.symbol_index();
        let mut out: Vec<TypeRef> = index
            .entries()
            .filter(|e| {
                e.kind == SymbolKind::Type
                    && (ends_with_component(&e.name, name) || ends_with_component(&e.name, &query))
            })
            .filter_map(|e| self.type_ref_of(e.die?))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// [`Binary::globals_named`] by walking every unit's globals.
    #[doc(hidden)]
    pub fn globals_named_by_walk(&self, name: &str) -> Vec<Variable> {
        let mut external = Vec::new();
        let mut statics = Vec::new();
        for unit_index in 0..self.units().len() {
            let Ok(syms) = self.unit_functions(unit_index) else {
                continue;
            };
            for entry in syms
                .others
                .iter()
                .filter(|e| e.kind == SymbolKind::Variable && &*e.name == name)
            {
                let Some(id) = entry.die else { continue };
                let Ok(unit) = self.unit(unit_index) else {
                    break;
                };
                let Ok(die) = unit.entry(id.offset) else {
                    continue;
                };
                let Some(v) = self.entry_variable(&unit, entry, id, &die, 0, true) else {
                    continue;
                };
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
        }
        external.extend(statics);
        external
    }

    /// [`Binary::enumerator_named`] from the full index's enum types, each enumerator
    /// qualified as [`Binary::enumerator_scope`] says gdb qualifies it: the first enum in
    /// the index's order with an enumerator whose qualified name is `name` or ends with it
    /// as whole components.
    #[doc(hidden)]
    pub fn enumerator_named_in_full_index(&self, name: &str) -> Option<(i128, TypeRef)> {
        self.enumerators_in_full_index()
            .into_iter()
            .find(|(qualified, _, _)| ends_with_component(qualified, name))
            .map(|(_, v, t)| (v, t))
    }

    /// Every enumerator of the full index's enum types, qualified, with its value and
    /// type, in the index's order.
    #[doc(hidden)]
    pub fn enumerators_in_full_index(&self) -> Vec<(String, i128, TypeRef)> {
        let index = self.symbol_index();
        let mut out = Vec::new();
        for e in index.entries().filter(|e| e.kind == SymbolKind::Type) {
            let Some(t) = e.die.and_then(|d| self.type_ref_of(d)) else {
                continue;
            };
            let Ok(info) = self.type_info(t) else {
                continue;
            };
            if let TypeKind::Enum { enumerators, .. } = info.kind {
                let scope = self.enumerator_scope(t).ok().flatten();
                for (n, v) in enumerators {
                    out.push((format!("{}{n}", scope.as_deref().unwrap_or_default()), v, t));
                }
            }
        }
        out
    }
}
