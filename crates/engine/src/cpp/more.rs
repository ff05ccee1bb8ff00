//! The rest of libstdc++'s types as gdb's printers show them: `std::array`, `pair`,
//! `tuple`, `bitset`, `string_view`, `atomic`, and the iterators of vector, list and
//! the tree containers (shown as the element they point at); gdb's sized summary of
//! sets and multimaps; the lookups expressions
//! need on them (`arr[i]`, `*it`, `it->m`).

use symbols::{ArrayBound, TypeKind, TypeRef};

use super::{field, text, R};
use crate::rust::{Seq, Shown, Synth};
use crate::values::{resolve, Place, Renderer};

/// Elements of a tuple walked at most.
const MAX_TUPLE: usize = 64;

impl Renderer<'_> {
    /// Renders the types of this module; `None` for others.
    pub(super) fn cpp_show_more(
        &self,
        class: &str,
        ty: TypeRef,
        place: &Place,
    ) -> Option<R<Shown>> {
        match class {
            "array" => {
                let seq = self.cpp_array(ty, place)?;
                let stride = self.binary.type_size(seq.elem).ok().flatten().unwrap_or(0);
                let parts: Vec<String> = (0..seq.len.min(200))
                    .map(|i| self.cpp_summary(seq.elem, &Place::Memory(seq.ptr + i * stride)))
                    .collect();
                let more = if seq.len > 200 { "..." } else { "" };
                Some(Ok(Shown {
                    text: format!("{{_M_elems = {{{}{more}}}}}", parts.join(", ")),
                    synth: Some(Synth::Elements {
                        elem: seq.elem,
                        base: Place::Memory(seq.ptr),
                        stride,
                        len: seq.len,
                        ring: None,
                    }),
                    address: None,
                }))
            }
            "pair" => {
                let (ft, fp) = self.cpp_find(ty, place, "first")?;
                let (st, sp) = self.cpp_find(ty, place, "second")?;
                Some(Ok(Shown {
                    text: format!(
                        "{{first = {}, second = {}}}",
                        self.cpp_summary(ft, &fp),
                        self.cpp_summary(st, &sp)
                    ),
                    synth: Some(Synth::Fields(vec![
                        field("first", ft, fp),
                        field("second", st, sp),
                    ])),
                    address: None,
                }))
            }
            "tuple" => {
                let elems = self.cpp_tuple(ty, place);
                let mut parts = Vec::new();
                let mut fields = Vec::new();
                for (i, (t, p)) in elems.into_iter().enumerate() {
                    let name = format!("[{}]", i + 1);
                    parts.push(format!("{name} = {}", self.cpp_summary(t, &p)));
                    fields.push(field(&name, t, p));
                }
                let text = if parts.is_empty() {
                    "std::tuple containing = {}".to_string()
                } else {
                    format!("std::tuple containing = {{{}}}", parts.join(", "))
                };
                Some(Ok(Shown {
                    text,
                    synth: Some(Synth::Fields(fields)),
                    address: None,
                }))
            }
            "bitset" => Some(self.cpp_bitset(ty, place)),
            "basic_string_view" => {
                let (ptr, _) = self.ptr_at(ty, place, "_M_str")?;
                let (lt, lp) = self.cpp_find(ty, place, "_M_len")?;
                let len = self.uint(lt, &lp).ok()?;
                Some(self.cpp_string_text(ptr, len).map(|t| Shown {
                    text: t,
                    synth: None,
                    address: None,
                }))
            }
            "atomic" => {
                let (it, ip) = self.cpp_find(ty, place, "_M_i")?;
                Some(Ok(Shown {
                    text: format!(
                        "{} = {{ {} }}",
                        self.gdb_name(ty),
                        self.cpp_summary(it, &ip)
                    ),
                    synth: Some(Synth::Fields(vec![field("value", it, ip)])),
                    address: None,
                }))
            }
            "span" => Some(self.cpp_span(ty, place)),
            "__normal_iterator"
            | "_Deque_iterator"
            | "_Node_iterator"
            | "_Node_const_iterator"
            | "_List_iterator"
            | "_List_const_iterator"
            | "_Rb_tree_iterator"
            | "_Rb_tree_const_iterator"
            | "_Fwd_list_iterator"
            | "_Fwd_list_const_iterator" => {
                let (t, p) = match self.cpp_iterator_target(ty, place)? {
                    Ok(found) => found,
                    Err(e) => return Some(Err(e)),
                };
                Some(Ok(Shown {
                    text: self.cpp_summary(t, &p),
                    synth: Some(Synth::Fields(vec![field("*", t, p)])),
                    address: None,
                }))
            }
            _ => None,
        }
    }

    /// A template parameter of a class, looked up in the other DIEs of the same name
    /// when this one has none (g++ may emit a member typedef's class as a bare
    /// declaration).
    fn cpp_template_param_anywhere(&self, ty: TypeRef, name: &str) -> Option<TypeRef> {
        if let Some(t) = self.cpp_template_param(ty, name) {
            return Some(t);
        }
        let full = self.binary.type_info_shared(ty).ok()?.name.clone()?;
        // A list's iterator may exist only as a declaration; the node class of the same
        // element type is defined wherever the list makes nodes.
        let node = ["_List_const_iterator", "_List_iterator"]
            .iter()
            .find_map(|p| full.strip_prefix(p))
            .map(|rest| format!("std::_List_node{rest}"));
        [
            Some(full.clone()),
            Some(format!("std::{full}")),
            Some(format!("std::__cxx11::{full}")),
            node,
        ]
        .iter()
        .flatten()
        .flat_map(|n| self.binary.types_by_name(n).into_iter().take(16))
        .find_map(|t| self.cpp_template_param(t, name))
    }

    /// A `std::span` as gdb shows it: `std::span of length 3 = {1, 2, 3}`, elements `[i]`.
    fn cpp_span(&self, ty: TypeRef, place: &Place) -> R<Shown> {
        let seq = self
            .cpp_span_seq(ty, place)
            .ok_or_else(|| "<error: unexpected std::span layout>".to_string())?;
        let stride = self.binary.type_size(seq.elem).ok().flatten().unwrap_or(0);
        if seq.len > 0 && seq.ptr == 0 {
            return Err(format!("<error: span of length {} at 0x0>", seq.len));
        }
        let parts: Vec<String> = (0..seq.len.min(super::ITEMS))
            .map(|i| self.cpp_summary(seq.elem, &Place::Memory(seq.ptr + i * stride)))
            .collect();
        let more = if seq.len > super::ITEMS { ", ..." } else { "" };
        let text = if seq.len == 0 {
            "std::span of length 0".to_string()
        } else {
            format!(
                "std::span of length {} = {{{}{more}}}",
                seq.len,
                parts.join(", ")
            )
        };
        Ok(Shown {
            text,
            synth: Some(Synth::Elements {
                elem: seq.elem,
                base: Place::Memory(seq.ptr),
                stride,
                len: seq.len,
                ring: None,
            }),
            address: None,
        })
    }

    /// A `std::span`'s elements: the length is the static extent in the class's name
    /// (`span<int, 3>`) or, for a dynamic extent, `_M_extent._M_extent_value`.
    pub(crate) fn cpp_span_seq(&self, ty: TypeRef, place: &Place) -> Option<Seq> {
        if self.class_name(ty)?.as_str() != "span" {
            return None;
        }
        let ty = self.strip(ty);
        let name = self.binary.type_info_shared(ty).ok()?.name.clone()?;
        let extent: u64 = name
            .trim_end_matches('>')
            .rsplit(',')
            .next()?
            .trim()
            .trim_end_matches(|c: char| c.is_ascii_alphabetic())
            .parse()
            .ok()?;
        let (ptr, elem) = self.ptr_at(ty, place, "_M_ptr")?;
        let len = if extent == u64::MAX {
            let (et, ep) = self.cpp_find(ty, place, "_M_extent")?;
            let (vt, vp) = self.cpp_find(et, &ep, "_M_extent_value")?;
            self.uint(vt, &vp).ok()?
        } else {
            extent
        };
        Some(Seq {
            elem: elem?,
            ptr,
            len,
            ring: None,
        })
    }

    /// A `std::array`'s elements.
    pub(crate) fn cpp_array(&self, ty: TypeRef, place: &Place) -> Option<Seq> {
        if self.class_name(ty)?.as_str() != "array" {
            return None;
        }
        let (et, ep) = self.cpp_find(ty, place, "_M_elems")?;
        let r = resolve(self.binary, et).ok()?;
        let TypeKind::Array { element, dims } = r.kind else {
            // `std::array<T, 0>` holds an empty struct.
            return Some(Seq {
                elem: self.cpp_template_param(ty, "_Tp")?,
                ptr: ep.address()?,
                len: 0,
                ring: None,
            });
        };
        let len = match dims.first().map(|d| &d.count) {
            Some(ArrayBound::Count(n)) => *n,
            _ => 0,
        };
        Some(Seq {
            elem: element?,
            ptr: ep.address()?,
            len,
            ring: None,
        })
    }

    /// A tuple's elements in order: each `_Tuple_impl<i, …>` holds element `i` in its
    /// `_Head_base` and the rest in its `_Tuple_impl<i + 1, …>` base.
    fn cpp_tuple(&self, ty: TypeRef, place: &Place) -> Vec<(TypeRef, Place)> {
        let mut out = Vec::new();
        let mut at = Some((self.strip(ty), place.clone()));
        while let Some((t, p)) = at.take() {
            if out.len() >= MAX_TUPLE {
                break;
            }
            let Ok(r) = resolve(self.binary, t) else {
                break;
            };
            let TypeKind::Composite { members, .. } = r.kind else {
                break;
            };
            for m in members.iter().filter(|m| m.is_base) {
                let Some(bt) = m.ty else { continue };
                let bp = p.offset(m.byte_offset);
                match self.class_name(bt).as_deref() {
                    Some("_Tuple_impl") => at = Some((self.strip(bt), bp)),
                    Some("_Head_base") => {
                        if let Some(found) = self.cpp_find(bt, &bp, "_M_head_impl") {
                            out.push(found);
                        }
                    }
                    _ => {}
                }
            }
        }
        out
    }

    /// `std::bitset = {[0] = 1, [2] = 1}`: the bits that are set.
    fn cpp_bitset(&self, ty: TypeRef, place: &Place) -> R<Shown> {
        let bad = || "<error: unexpected std::bitset layout>".to_string();
        let name = self
            .binary
            .type_info_shared(self.strip(ty))
            .ok()
            .and_then(|i| i.name.clone())
            .ok_or_else(bad)?;
        let bits: u64 = name
            .split_once('<')
            .and_then(|(_, n)| n.trim_end_matches('>').trim().parse().ok())
            .ok_or_else(bad)?;
        let (wt, wp) = self.cpp_find(ty, place, "_M_w").ok_or_else(bad)?;
        let bytes = self.binary.type_size(wt).ok().flatten().unwrap_or(8);
        let data = wp.read(
            self.mem,
            bytes.min(bits.div_ceil(8).max(1).next_multiple_of(8)),
        )?;
        let mut parts = Vec::new();
        let mut fields = Vec::new();
        for i in 0..bits.min(data.len() as u64 * 8) {
            if data[(i / 8) as usize] >> (i % 8) & 1 == 1 {
                parts.push(format!("[{i}] = 1"));
                fields.push(text(&format!("[{i}]"), "bool", "1".into()));
            }
        }
        let text = if parts.is_empty() {
            "std::bitset".to_string()
        } else {
            format!("std::bitset = {{{}}}", parts.join(", "))
        };
        Ok(Shown {
            text,
            synth: Some(Synth::Fields(fields)),
            address: None,
        })
    }

    /// The element an iterator of a vector, list, forward_list or tree container
    /// points at (its type and place); `None` for other values.
    pub(crate) fn cpp_iterator_target(
        &self,
        ty: TypeRef,
        place: &Place,
    ) -> Option<R<(TypeRef, Place)>> {
        let class = self.class_name(ty)?;
        let ty = self.strip(ty);
        let (links, node_name) = match class.as_str() {
            "__normal_iterator" => {
                let (ptr, target) = self.ptr_at(ty, place, "_M_current")?;
                if ptr == 0 {
                    return Some(Err("the iterator is null".into()));
                }
                return Some(Ok((target?, Place::Memory(ptr))));
            }
            "_Deque_iterator" => {
                let (ptr, target) = self.ptr_at(ty, place, "_M_cur")?;
                if ptr == 0 {
                    return Some(Err("the iterator is null".into()));
                }
                return Some(Ok((target?, Place::Memory(ptr))));
            }
            "_Node_iterator" | "_Node_const_iterator" => {
                // A hash node: the next link, then the value (then a cached hash).
                let elem = self.cpp_template_param_anywhere(ty, "_Value")?;
                let (node, _) = self.ptr_at(ty, place, "_M_cur")?;
                if node == 0 {
                    return Some(Err("the iterator is null".into()));
                }
                let align = self
                    .binary
                    .type_info_shared(elem)
                    .ok()
                    .and_then(|i| i.align)
                    .unwrap_or(8)
                    .max(1);
                return Some(Ok((
                    elem,
                    Place::Memory(node + 8u64.div_ceil(align) * align),
                )));
            }
            "_List_iterator" | "_List_const_iterator" => (16u64, "_M_node"),
            "_Fwd_list_iterator" | "_Fwd_list_const_iterator" => (8, "_M_node"),
            "_Rb_tree_iterator" | "_Rb_tree_const_iterator" => (32, "_M_node"),
            _ => return None,
        };
        let elem = self.cpp_template_param_anywhere(ty, "_Tp")?;
        let (node, _) = self.ptr_at(ty, place, node_name)?;
        if node == 0 {
            return Some(Err("the iterator is null".into()));
        }
        let align = self
            .binary
            .type_info_shared(elem)
            .ok()
            .and_then(|i| i.align)
            .unwrap_or(8)
            .max(1);
        // A past-the-end iterator points at the header, whose "value" is not an
        // element: what the memory there holds is shown, as gdb does.
        Some(Ok((
            elem,
            Place::Memory(node + links.div_ceil(align) * align),
        )))
    }
}

/// gdb's summary of a map or set (`std::set with 2 elements = {[0] = 1, [1] = 2}`,
/// `std::map with 1 element = {[1] = 2}`).
pub(super) fn gdb_sized(class: &str, mut shown: Shown) -> Shown {
    let n = match &shown.synth {
        Some(Synth::Fields(f)) => f.len(),
        _ => 0,
    };
    let noun = if n == 1 { "element" } else { "elements" };
    shown.text = if n == 0 {
        format!("std::{class} with 0 elements")
    } else {
        format!("std::{class} with {n} {noun} = {}", shown.text)
    };
    shown
}
