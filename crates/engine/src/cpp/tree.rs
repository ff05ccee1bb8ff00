//! The red-black tree under `std::map`, `multimap`, `set` and `multiset`, walked in
//! order from memory with a budget of reads and a cycle check, so that a corrupt tree
//! renders as an error with the entries read before the break and never hangs.

use std::collections::HashSet;

use symbols::TypeRef;

use super::{gdb_sized, MAX_NODES, R};
use crate::rust::Shown;
use crate::values::{le_u64, Place, Renderer};

/// The entries of a tree as read, and what stopped the walk early.
pub(super) struct Tree {
    pub value_ty: TypeRef,
    /// The addresses of the values, in key order.
    pub addrs: Vec<u64>,
    /// The node count the container claims (at most [`MAX_NODES`]).
    pub count: u64,
    pub broken: Option<String>,
}

impl Renderer<'_> {
    /// A map or set as gdb shows it (`std::map with 2 elements = {["ann"] = 31, …}`);
    /// a broken tree as `<error: …> std::map read 2 elements = {…}` with the entries
    /// read as children.
    pub(super) fn cpp_tree(&self, ty: TypeRef, place: &Place, class: &str) -> R<Shown> {
        let t = self.cpp_tree_nodes(ty, place)?;
        let mut shown = self.cpp_entries(t.value_ty, &t.addrs, t.count, class.ends_with("map"));
        match t.broken {
            None => Ok(gdb_sized(class, shown)),
            Some(e) => {
                shown.text = format!(
                    "{e} std::{class} read {} elements = {}",
                    t.addrs.len(),
                    shown.text
                );
                Ok(shown)
            }
        }
    }

    /// The value type, value addresses (in order) and node count of a red-black tree.
    pub(super) fn cpp_tree_nodes(&self, ty: TypeRef, place: &Place) -> R<Tree> {
        let bad = || "<error: unexpected std::map layout>".to_string();
        let (tt, tp) = self.cpp_find(ty, place, "_M_t").ok_or_else(bad)?;
        let value_ty = self.cpp_template_param(tt, "_Val").ok_or_else(bad)?;
        let (it, ip) = self.cpp_find(tt, &tp, "_M_impl").ok_or_else(bad)?;
        let (ht, hp) = self.cpp_find(it, &ip, "_M_header").ok_or_else(bad)?;
        let (ct, cp) = self.cpp_find(it, &ip, "_M_node_count").ok_or_else(bad)?;
        let count = self.uint(ct, &cp)?.min(MAX_NODES);
        let header = hp.address().ok_or_else(bad)?;
        let node_base = self.binary.type_size(ht).ok().flatten().unwrap_or(32);
        let align = self
            .binary
            .type_info_shared(value_ty)
            .ok()
            .and_then(|i| i.align)
            .unwrap_or(8)
            .max(1);
        let value_offset = node_base.div_ceil(align) * align;
        let mut walk = Walk {
            r: self,
            reads: 0,
            // An in-order walk of a sound tree follows each link at most twice.
            budget: 8 * count + 64,
        };
        let mut addrs = Vec::new();
        let mut seen = HashSet::new();
        let broken = match walk.in_order(header, count, |node| {
            if !seen.insert(node) {
                return Err(format!("<error: cycle after {} elements>", addrs.len()));
            }
            addrs.push(node + value_offset);
            Ok(())
        }) {
            Ok(()) if (addrs.len() as u64) < count => Some(format!(
                "<error: size {count} but {} linked elements>",
                addrs.len()
            )),
            Ok(()) => None,
            Err(e) => Some(e),
        };
        Ok(Tree {
            value_ty,
            addrs,
            count,
            broken,
        })
    }
}

/// Reads of a tree walk, counted against a budget.
struct Walk<'r, 'a> {
    r: &'r Renderer<'a>,
    reads: u64,
    budget: u64,
}

impl Walk<'_, '_> {
    fn read(&mut self, a: u64) -> R<u64> {
        self.reads += 1;
        if self.reads > self.budget {
            return Err("<error: the tree's links do not end>".into());
        }
        Ok(le_u64(&Place::Memory(a).read(self.r.mem, 8)?))
    }

    /// Calls `visit` with each node in key order: from the leftmost (the header's
    /// left link) through successors, until `count` nodes or the header.
    fn in_order(&mut self, header: u64, count: u64, mut visit: impl FnMut(u64) -> R<()>) -> R<()> {
        // _Rb_tree_node_base: color (4, padded to 8), parent, left, right.
        let (parent, left, right) = (8u64, 16u64, 24u64);
        let mut node = self.read(header + left)?;
        let mut n = 0;
        while n < count && node != header && node != 0 {
            visit(node)?;
            n += 1;
            let r = self.read(node + right)?;
            if r != 0 {
                node = r;
                loop {
                    let l = self.read(node + left)?;
                    if l == 0 {
                        break;
                    }
                    node = l;
                }
            } else {
                let mut p = self.read(node + parent)?;
                while node == self.read(p + right)? {
                    node = p;
                    p = self.read(p + parent)?;
                }
                if self.read(node + right)? != p {
                    node = p;
                }
            }
        }
        Ok(())
    }
}
