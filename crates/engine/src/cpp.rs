//! C++ library values (libstdc++ layouts) rendered natively from DWARF, the way
//! gdb's libstdc++ printers show them: `std::string` as `"text"`, `std::vector` as
//! `{1, 2, 3}` with elements `[i]`, `std::map` and `std::unordered_map` as
//! `{["key"] = value}`, `unique_ptr` and `shared_ptr` as their pointer with the
//! pointee (and the counts) as children, `std::optional`, `std::variant`,
//! `std::deque`, `std::list` and `std::forward_list` as gdb prints them; and the
//! lookups expressions need on them (`[]`, `*`, `front()`, `value()`). The rest
//! (array, pair, tuple, bitset, string_view, atomic, iterators) is in `cpp/more.rs`.

mod dynamic;
mod erased;
mod more;
mod summary;
mod tree;

use more::gdb_sized;
use summary::gdb_vector;

use symbols::{TypeKind, TypeRef};

use crate::rust::{Field, FieldContent, Seq, Shown, Synth};
use crate::values::{escape_char, le_u64, resolve, Place, Renderer};

/// Items an inline summary shows.
const ITEMS: u64 = 10;
/// Most nodes walked in a tree or a hash chain.
const MAX_NODES: u64 = 1 << 16;
/// Bytes of a string read for display.
const MAX_TEXT: u64 = 4096;

type R<T> = Result<T, String>;

fn field(name: &str, ty: TypeRef, place: Place) -> Field {
    Field {
        name: name.to_string(),
        content: FieldContent::Typed(ty, place),
    }
}

fn text(name: &str, type_name: &str, text: String) -> Field {
    Field {
        name: name.to_string(),
        content: FieldContent::Text {
            type_name: type_name.to_string(),
            text,
        },
    }
}

impl Renderer<'_> {
    /// A type seen through typedefs and qualifiers, as a [`TypeRef`]; a class this
    /// unit only declares, as its definition in another unit.
    fn strip(&self, ty: TypeRef) -> TypeRef {
        let mut t = ty;
        for _ in 0..16 {
            let Ok(info) = self.binary.type_info_shared(t) else {
                return t;
            };
            match info.kind {
                TypeKind::Typedef(Some(x))
                | TypeKind::Const(Some(x))
                | TypeKind::Volatile(Some(x)) => t = x,
                TypeKind::Composite {
                    declaration: true, ..
                } => return self.binary.definition_of(t).unwrap_or(t),
                _ => return t,
            }
        }
        t
    }

    /// The template name of a class without its arguments (`vector`, `basic_string`).
    fn class_name(&self, ty: TypeRef) -> Option<String> {
        let info = self.binary.type_info_shared(self.strip(ty)).ok()?;
        if !matches!(info.kind, TypeKind::Composite { .. }) {
            return None;
        }
        let name = info.name.clone()?;
        Some(name.split('<').next().unwrap_or(&name).to_string())
    }

    /// A member by name, searching base classes too.
    fn cpp_find(&self, ty: TypeRef, place: &Place, name: &str) -> Option<(TypeRef, Place)> {
        self.cpp_find_depth(self.strip(ty), place, name, 0)
    }

    fn cpp_find_depth(
        &self,
        ty: TypeRef,
        place: &Place,
        name: &str,
        depth: u32,
    ) -> Option<(TypeRef, Place)> {
        if depth > 8 {
            return None;
        }
        let r = resolve(self.binary, ty).ok()?;
        let TypeKind::Composite { members, .. } = r.kind else {
            return None;
        };
        for m in &members {
            if m.name.as_deref() == Some(name) {
                return Some((m.ty?, place.offset(m.byte_offset)));
            }
        }
        for m in members.iter().filter(|m| m.is_base) {
            let Some(bt) = m.ty else { continue };
            if let Some(found) = self.cpp_find_depth(
                self.strip(bt),
                &place.offset(m.byte_offset),
                name,
                depth + 1,
            ) {
                return Some(found);
            }
        }
        None
    }

    /// The first pointer member anywhere inside a value (`unique_ptr`'s tuple).
    fn deep_pointer(
        &self,
        ty: TypeRef,
        place: &Place,
        depth: u32,
    ) -> Option<(u64, Option<TypeRef>)> {
        if depth > 10 {
            return None;
        }
        let r = resolve(self.binary, ty).ok()?;
        match r.kind {
            TypeKind::Pointer(target) => Some((le_u64(&place.read(self.mem, 8).ok()?), target)),
            TypeKind::Composite { members, .. } => members
                .iter()
                .find_map(|m| self.deep_pointer(m.ty?, &place.offset(m.byte_offset), depth + 1)),
            _ => None,
        }
    }

    fn ptr_at(&self, ty: TypeRef, place: &Place, name: &str) -> Option<(u64, Option<TypeRef>)> {
        let (t, p) = self.cpp_find(ty, place, name)?;
        let r = resolve(self.binary, t).ok()?;
        match r.kind {
            TypeKind::Pointer(target) => Some((le_u64(&p.read(self.mem, 8).ok()?), target)),
            _ => None,
        }
    }

    fn cpp_template_param(&self, ty: TypeRef, name: &str) -> Option<TypeRef> {
        self.binary
            .template_params(self.strip(ty))
            .ok()?
            .into_iter()
            .find(|p| p.name == name)?
            .ty
    }

    /// A short text for an element of a container.
    fn cpp_summary(&self, ty: TypeRef, place: &Place) -> String {
        self.render("", ty, place.clone(), 0).0.rendered
    }

    /// Renders a C++ value natively when its type is a known library type; `None`
    /// leaves it to the C renderer.
    pub(crate) fn cpp_show(&self, ty: TypeRef, place: &Place, _depth: u32) -> Option<R<Shown>> {
        let class = self.class_name(ty)?;
        let ty = self.strip(ty);
        match class.as_str() {
            "basic_string" => {
                let (ptr, len) = self.cpp_string(ty, place)?;
                Some(self.cpp_string_text(ptr, len).map(|t| Shown {
                    text: t,
                    synth: None,
                    address: None,
                }))
            }
            "vector" => {
                let seq = self.cpp_sequence(ty, place)?;
                let capacity = self.cpp_capacity(ty, place, &seq);
                Some(self.cpp_elements(seq).map(|s| gdb_vector(s, capacity)))
            }
            "map" | "multimap" | "set" | "multiset" => Some(self.cpp_tree(ty, place, &class)),
            "unordered_map" | "unordered_set" | "unordered_multimap" | "unordered_multiset" => {
                Some(
                    self.cpp_hash(ty, place, class.ends_with("map"))
                        .map(|s| gdb_sized(&class, s)),
                )
            }
            "optional" => Some(self.cpp_optional(ty, place)),
            "any" => Some(self.cpp_any(ty, place)),
            "function" => Some(self.cpp_function(ty, place)),
            "variant" => Some(self.cpp_variant(ty, place)),
            "deque" => Some(self.cpp_deque_shown(ty, place)),
            "list" | "forward_list" => Some(self.cpp_list_shown(ty, place, &class)),
            "unique_ptr" => {
                let (tt, tp) = self.cpp_find(ty, place, "_M_t")?;
                let (addr, target) = self.deep_pointer(tt, &tp, 0)?;
                let head = format!("std::unique_ptr<{}>", self.cpp_param_name(ty, "_Tp"));
                Some(Ok(self.cpp_pointer(addr, target, Vec::new(), head)))
            }
            "shared_ptr" | "weak_ptr" => {
                let (addr, target) = self.ptr_at(ty, place, "_M_ptr")?;
                let (rt, rp) = self.cpp_find(ty, place, "_M_refcount")?;
                let (pi, base) = self.ptr_at(rt, &rp, "_M_pi")?;
                let mut extra = Vec::new();
                let mut note = "empty".to_string();
                if let (true, Some(base)) = (pi != 0, base) {
                    let at = Place::Memory(pi);
                    let count = |n: &str| {
                        self.cpp_find(base, &at, n)
                            .and_then(|(t, p)| self.int(t, &p).ok())
                            .unwrap_or(0)
                    };
                    let uses = count("_M_use_count");
                    // The owners together hold one weak reference, as gdb reports it.
                    let weak = count("_M_weak_count") - i128::from(uses > 0);
                    note = if uses == 0 {
                        format!("expired, weak count {weak}")
                    } else {
                        format!("use count {uses}, weak count {weak}")
                    };
                    extra.push(text("use_count", "long", uses.to_string()));
                    extra.push(text("weak_count", "long", weak.to_string()));
                }
                let head = format!("std::{class}<{}> ({note})", self.cpp_param_name(ty, "_Tp"));
                Some(Ok(self.cpp_pointer(addr, target, extra, head)))
            }
            _ => self.cpp_show_more(&class, ty, place),
        }
    }

    /// A smart pointer as gdb shows it: `std::unique_ptr<int> = {get() = 0x…}`, with
    /// the pointee as a child (and the counts after it).
    fn cpp_pointer(
        &self,
        addr: u64,
        target: Option<TypeRef>,
        extra: Vec<Field>,
        head: String,
    ) -> Shown {
        let mut fields = Vec::new();
        if let (true, Some(t)) = (addr != 0, target) {
            fields.push(field("*", t, Place::Memory(addr)));
        }
        fields.extend(extra);
        Shown {
            text: format!("{head} = {{get() = {addr:#x}}}"),
            synth: Some(Synth::Fields(fields)),
            address: None,
        }
    }

    fn cpp_string_text(&self, ptr: u64, len: u64) -> R<String> {
        let n = len.min(MAX_TEXT);
        let bytes = if n == 0 {
            Vec::new()
        } else {
            Place::Memory(ptr).read(self.mem, n)?
        };
        let body: String = bytes.iter().map(|b| escape_char(*b, '"')).collect();
        Ok(format!("\"{body}\"{}", if len > n { "..." } else { "" }))
    }

    fn cpp_elements(&self, seq: Seq) -> R<Shown> {
        let stride = self.binary.type_size(seq.elem).ok().flatten().unwrap_or(0);
        // A size beyond readable memory (a corrupt vector): an error node with the
        // elements that could be read.
        let last = seq
            .ptr
            .wrapping_add(seq.len.saturating_sub(1).wrapping_mul(stride));
        if seq.len > 0 && Place::Memory(last).read(self.mem, stride.max(1)).is_err() {
            let readable: Vec<u64> = (0..seq.len.min(MAX_NODES))
                .map(|i| seq.ptr + i * stride)
                .take_while(|a| Place::Memory(*a).read(self.mem, stride.max(1)).is_ok())
                .collect();
            let broken = format!(
                "<error: size {} beyond readable memory after {} elements>",
                seq.len,
                readable.len()
            );
            return Ok(self.cpp_linear("std::vector", seq.elem, seq.len, &readable, Some(broken)));
        }
        let mut parts = Vec::new();
        for i in 0..seq.len.min(ITEMS) {
            parts.push(self.cpp_summary(seq.elem, &Place::Memory(seq.ptr + i * stride)));
        }
        if seq.len > ITEMS {
            parts.push("...".into());
        }
        Ok(Shown {
            text: format!("{{{}}}", parts.join(", ")),
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

    /// Entries of a container as `[key] = value` children (maps) or `[i]` (sets).
    fn cpp_entries(&self, value_ty: TypeRef, addrs: &[u64], total: u64, map: bool) -> Shown {
        let mut fields = Vec::new();
        let mut parts = Vec::new();
        let pair = if map {
            self.cpp_find(value_ty, &Place::Memory(0), "first")
                .zip(self.cpp_find(value_ty, &Place::Memory(0), "second"))
        } else {
            None
        };
        for (i, a) in addrs.iter().enumerate() {
            match pair {
                Some(((kt, Place::Memory(ko)), (vt, Place::Memory(vo)))) => {
                    let key = self.cpp_summary(kt, &Place::Memory(a + ko));
                    let name = format!("[{key}]");
                    if (i as u64) < ITEMS {
                        let v = self.cpp_summary(vt, &Place::Memory(a + vo));
                        parts.push(format!("{name} = {v}"));
                    }
                    fields.push(field(&name, vt, Place::Memory(a + vo)));
                }
                _ => {
                    if (i as u64) < ITEMS {
                        let v = self.cpp_summary(value_ty, &Place::Memory(*a));
                        parts.push(format!("[{i}] = {v}"));
                    }
                    fields.push(field(&format!("[{i}]"), value_ty, Place::Memory(*a)));
                }
            }
        }
        if total > ITEMS {
            parts.push("...".into());
        }
        Shown {
            text: format!("{{{}}}", parts.join(", ")),
            synth: Some(Synth::Fields(fields)),
            address: None,
        }
    }

    fn cpp_hash(&self, ty: TypeRef, place: &Place, map: bool) -> R<Shown> {
        let (value_ty, addrs, count) = self.cpp_hash_nodes(ty, place)?;
        Ok(self.cpp_entries(value_ty, &addrs, count, map))
    }

    /// The value type, value addresses (chain order) and element count of a hash table.
    fn cpp_hash_nodes(&self, ty: TypeRef, place: &Place) -> R<(TypeRef, Vec<u64>, u64)> {
        let bad = || "<error: unexpected std::unordered_map layout>".to_string();
        let (ht, hp) = self.cpp_find(ty, place, "_M_h").ok_or_else(bad)?;
        let value_ty = self.cpp_template_param(ht, "_Value").ok_or_else(bad)?;
        let (ct, cp) = self.cpp_find(ht, &hp, "_M_element_count").ok_or_else(bad)?;
        let count = self.uint(ct, &cp)?.min(MAX_NODES);
        let (bt, bp) = self.cpp_find(ht, &hp, "_M_before_begin").ok_or_else(bad)?;
        let (first, _) = self.first_pointer(bt, &bp).ok_or_else(bad)?;
        let align = self
            .binary
            .type_info_shared(value_ty)
            .ok()
            .and_then(|i| i.align)
            .unwrap_or(8)
            .max(1);
        let value_offset = 8u64.div_ceil(align) * align;
        let mut addrs = Vec::new();
        let mut node = first;
        while node != 0 && (addrs.len() as u64) < count {
            addrs.push(node + value_offset);
            node = le_u64(&Place::Memory(node).read(self.mem, 8)?);
        }
        Ok((value_ty, addrs, count))
    }

    /// A `std::vector`'s elements.
    pub(crate) fn cpp_sequence(&self, ty: TypeRef, place: &Place) -> Option<Seq> {
        if self.class_name(ty)?.as_str() != "vector" {
            return None;
        }
        let (it, ip) = self.cpp_find(ty, place, "_M_impl")?;
        let (start, elem) = self.ptr_at(it, &ip, "_M_start")?;
        let (finish, _) = self.ptr_at(it, &ip, "_M_finish")?;
        let elem = elem?;
        let size = self
            .binary
            .type_size(elem)
            .ok()
            .flatten()
            .unwrap_or(0)
            .max(1);
        if finish < start {
            return None;
        }
        Some(Seq {
            elem,
            ptr: start,
            len: (finish - start) / size,
            ring: None,
        })
    }

    /// A `std::string`'s data pointer and length.
    pub(crate) fn cpp_string(&self, ty: TypeRef, place: &Place) -> Option<(u64, u64)> {
        if self.class_name(ty)?.as_str() != "basic_string" {
            return None;
        }
        let (dt, dp) = self.cpp_find(ty, place, "_M_dataplus")?;
        let (ptr, _) = self.ptr_at(dt, &dp, "_M_p")?;
        let (lt, lp) = self.cpp_find(ty, place, "_M_string_length")?;
        Some((ptr, self.uint(lt, &lp).ok()?))
    }

    /// The size of a `std::map`, `std::unordered_map` or `std::set`.
    pub(crate) fn cpp_collection_len(&self, ty: TypeRef, place: &Place) -> Option<u64> {
        let class = self.class_name(ty)?;
        let (path, count): (&str, &str) = match class.as_str() {
            "map" | "multimap" | "set" | "multiset" => ("_M_t", "_M_node_count"),
            "unordered_map" | "unordered_set" | "unordered_multimap" | "unordered_multiset" => {
                ("_M_h", "_M_element_count")
            }
            _ => return self.cpp_sequence_len(ty, place),
        };
        let (mut t, mut p) = self.cpp_find(ty, place, path)?;
        if path == "_M_t" {
            // The tree's count is in its `_M_impl`'s header base.
            (t, p) = self.cpp_find(t, &p, "_M_impl")?;
        }
        let (ct, cp) = self.cpp_find(t, &p, count)?;
        self.uint(ct, &cp).ok()
    }
}
/// gdb's spelling of a libstdc++ type's DWARF name (`optional<int>`): in `std::`,
/// `std::string` for the whole `std::__cxx11::basic_string<char, …>`, no
/// `__cxx11` inline namespace, no space between closing brackets.
fn gdb_type_name(name: &str) -> String {
    format!("std::{name}")
        .replace(
            "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >",
            "std::string",
        )
        .replace("std::__cxx11::", "std::")
        .replace(" >", ">")
}

/// A key for `operator[]` on a library container, from an expression.
pub(crate) enum CppKey<'a> {
    /// An integer (an index or an integral key).
    Int(i128),
    /// A string's bytes (a `std::string` key from a literal or a string value).
    Bytes(&'a [u8]),
}

/// The chunks of a `std::deque`: element `i` lives in chunk `(first + i) / per_chunk`
/// of the node map at `nodes`, slot `(first + i) % per_chunk`.
struct Deque {
    elem: TypeRef,
    size: u64,
    len: u64,
    first: u64,
    nodes: u64,
    per_chunk: u64,
}

/// The elements of a linked list as read, and what stopped the walk early.
pub(crate) struct Linked {
    elem: TypeRef,
    addrs: Vec<u64>,
    broken: Option<String>,
}

impl Renderer<'_> {
    pub(crate) fn gdb_name(&self, ty: TypeRef) -> String {
        let info = self.binary.type_info_shared(self.strip(ty)).ok();
        gdb_type_name(info.and_then(|i| i.name.clone()).as_deref().unwrap_or("?"))
    }

    /// An optional's `_M_engaged` flag (a `bool`): what `has_value()` returns.
    pub(crate) fn cpp_optional_engaged(
        &self,
        ty: TypeRef,
        place: &Place,
    ) -> Option<(TypeRef, Place)> {
        if self.class_name(ty)?.as_str() != "optional" {
            return None;
        }
        let (pt, pp) = self.cpp_find(ty, place, "_M_payload")?;
        self.cpp_find(pt, &pp, "_M_engaged")
    }

    /// An optional's contained value, `Ok(None)` when it holds none.
    pub(crate) fn cpp_optional_value(
        &self,
        ty: TypeRef,
        place: &Place,
    ) -> Option<R<Option<(TypeRef, Place)>>> {
        if self.class_name(ty)?.as_str() != "optional" {
            return None;
        }
        let ty = self.strip(ty);
        let elem = self.cpp_template_param(ty, "_Tp")?;
        let (pt, pp) = self.cpp_find(ty, place, "_M_payload")?;
        let (et, ep) = self.cpp_find(pt, &pp, "_M_engaged")?;
        let (ut, up) = self.cpp_find(pt, &pp, "_M_payload")?;
        let (_, vp) = self.cpp_find(ut, &up, "_M_value")?;
        Some(self.int(et, &ep).map(|e| (e != 0).then_some((elem, vp))))
    }

    fn cpp_optional(&self, ty: TypeRef, place: &Place) -> R<Shown> {
        let name = self.gdb_name(ty);
        match self.cpp_optional_value(ty, place) {
            None => Err("<error: unexpected std::optional layout>".into()),
            Some(Err(e)) => Err(e),
            Some(Ok(None)) => Ok(Shown {
                text: format!("{name} [no contained value]"),
                synth: None,
                address: None,
            }),
            Some(Ok(Some((t, p)))) => Ok(Shown {
                text: format!(
                    "{name} = {{[contained value] = {}}}",
                    self.cpp_summary(t, &p)
                ),
                synth: Some(Synth::Fields(vec![field("[contained value]", t, p)])),
                address: None,
            }),
        }
    }

    /// A variant's active index and alternative; `Ok(None)` when it is valueless.
    pub(crate) fn cpp_variant_value(
        &self,
        ty: TypeRef,
        place: &Place,
    ) -> Option<R<Option<(u64, TypeRef, Place)>>> {
        if self.class_name(ty)?.as_str() != "variant" {
            return None;
        }
        let (it, ip) = self.cpp_find(ty, place, "_M_index")?;
        let (mut ut, mut up) = self.cpp_find(ty, place, "_M_u")?;
        let bits = 8 * self.binary.type_size(it).ok().flatten().unwrap_or(1).min(8);
        let index = match self.uint(it, &ip) {
            Ok(i) => i,
            Err(e) => return Some(Err(e)),
        };
        // `variant_npos` in the index's width: valueless by exception.
        if bits < 64 && index == (1u64 << bits) - 1 || index == u64::MAX {
            return Some(Ok(None));
        }
        if index > 256 {
            return Some(Err(format!("<error: variant index {index} out of range>")));
        }
        for _ in 0..index {
            (ut, up) = self.cpp_find(ut, &up, "_M_rest")?;
        }
        let (ft, fp) = self.cpp_find(ut, &up, "_M_first")?;
        let alt = self.cpp_template_param(ft, "_Type")?;
        Some(Ok(Some((index, alt, fp))))
    }

    fn cpp_variant(&self, ty: TypeRef, place: &Place) -> R<Shown> {
        let name = self.gdb_name(ty);
        match self.cpp_variant_value(ty, place) {
            None => Err("<error: unexpected std::variant layout>".into()),
            Some(Err(e)) => Err(e),
            Some(Ok(None)) => Ok(Shown {
                text: format!("{name} [no contained value]"),
                synth: None,
                address: None,
            }),
            Some(Ok(Some((i, t, p)))) => Ok(Shown {
                text: format!("{name} [index {i}] = {{{}}}", self.cpp_summary(t, &p)),
                synth: Some(Synth::Fields(vec![
                    text("index", "unsigned long", i.to_string()),
                    field("[contained value]", t, p),
                ])),
                address: None,
            }),
        }
    }

    fn cpp_deque(&self, ty: TypeRef, place: &Place) -> Option<R<Deque>> {
        if self.class_name(ty)?.as_str() != "deque" {
            return None;
        }
        let ty = self.strip(ty);
        let elem = self.cpp_template_param(ty, "_Tp")?;
        let (it, ip) = self.cpp_find(ty, place, "_M_impl")?;
        let (st, sp) = self.cpp_find(it, &ip, "_M_start")?;
        let (ft, fp) = self.cpp_find(it, &ip, "_M_finish")?;
        let ptr = |t: TypeRef, p: &Place, n: &str| self.ptr_at(t, p, n).map(|x| x.0);
        let (s_cur, s_first, s_last, s_node) = (
            ptr(st, &sp, "_M_cur")?,
            ptr(st, &sp, "_M_first")?,
            ptr(st, &sp, "_M_last")?,
            ptr(st, &sp, "_M_node")?,
        );
        let (f_cur, f_first, f_node) = (
            ptr(ft, &fp, "_M_cur")?,
            ptr(ft, &fp, "_M_first")?,
            ptr(ft, &fp, "_M_node")?,
        );
        let size = self
            .binary
            .type_size(elem)
            .ok()
            .flatten()
            .unwrap_or(0)
            .max(1);
        let corrupt = || Some(Err("<error: corrupt std::deque>".to_string()));
        // A chunk holds what lies between a node's first and last element.
        let per_chunk = s_last.wrapping_sub(s_first) / size;
        if per_chunk == 0
            || s_cur < s_first
            || s_last < s_cur
            || f_cur < f_first
            || f_node < s_node
            || (f_node - s_node) % 8 != 0
        {
            return corrupt();
        }
        let chunks = (f_node - s_node) / 8;
        let len = chunks
            .checked_mul(per_chunk)
            .and_then(|n| n.checked_add((f_cur - f_first) / size))
            .and_then(|n| n.checked_sub((s_cur - s_first) / size));
        let Some(len) = len else { return corrupt() };
        Some(Ok(Deque {
            elem,
            size,
            len,
            first: (s_cur - s_first) / size,
            nodes: s_node,
            per_chunk,
        }))
    }

    fn deque_element(&self, d: &Deque, i: u64) -> R<u64> {
        let at = d.first + i;
        let node = d.nodes + (at / d.per_chunk) * 8;
        let chunk = le_u64(&Place::Memory(node).read(self.mem, 8)?);
        Ok(chunk + (at % d.per_chunk) * d.size)
    }

    fn cpp_deque_shown(&self, ty: TypeRef, place: &Place) -> R<Shown> {
        let d = self
            .cpp_deque(ty, place)
            .unwrap_or_else(|| Err("<error: unexpected std::deque layout>".into()))?;
        let mut addrs = Vec::new();
        let mut broken = None;
        for i in 0..d.len.min(MAX_NODES) {
            match self.deque_element(&d, i) {
                Ok(a) => addrs.push(a),
                Err(e) => {
                    broken = Some(e);
                    break;
                }
            }
        }
        if d.len > MAX_NODES && broken.is_none() {
            broken = Some(format!(
                "<error: std::deque of {} elements, showing {MAX_NODES}>",
                d.len
            ));
        }
        Ok(self.cpp_linear("std::deque", d.elem, d.len, &addrs, broken))
    }

    /// A sequence shown as `std::deque with 2 elements = {1, 2}`, elements `[i]`;
    /// when its memory is broken, the error first and what was read as children.
    fn cpp_linear(
        &self,
        what: &str,
        elem: TypeRef,
        len: u64,
        addrs: &[u64],
        broken: Option<String>,
    ) -> Shown {
        let mut parts = Vec::new();
        let mut fields = Vec::new();
        for (i, a) in addrs.iter().enumerate() {
            if (i as u64) < ITEMS {
                parts.push(self.cpp_summary(elem, &Place::Memory(*a)));
            }
            fields.push(field(&format!("[{i}]"), elem, Place::Memory(*a)));
        }
        if addrs.len() as u64 > ITEMS {
            parts.push("...".into());
        }
        let body = if addrs.is_empty() {
            String::new()
        } else {
            format!(" = {{{}}}", parts.join(", "))
        };
        let text = match broken {
            Some(e) => format!("{e} {what} read {} elements{body}", addrs.len()),
            None => format!("{what} with {len} elements{body}"),
        };
        Shown {
            text,
            synth: Some(Synth::Fields(fields)),
            address: None,
        }
    }

    /// Walks a `std::list` (circular, through its header) or a `std::forward_list`
    /// (null-terminated), at most [`MAX_NODES`] nodes, stopping at a cycle.
    pub(crate) fn cpp_linked(&self, ty: TypeRef, place: &Place) -> Option<R<Linked>> {
        let class = self.class_name(ty)?;
        let circular = match class.as_str() {
            "list" => true,
            "forward_list" => false,
            _ => return None,
        };
        let ty = self.strip(ty);
        let elem = self.cpp_template_param(ty, "_Tp")?;
        let (it, ip) = self.cpp_find(ty, place, "_M_impl")?;
        let (ht, hp) = self.cpp_find(it, &ip, if circular { "_M_node" } else { "_M_head" })?;
        let header = hp.address()?;
        let claimed = if circular {
            let (zt, zp) = self.cpp_find(ht, &hp, "_M_size")?;
            self.uint(zt, &zp).ok()
        } else {
            None
        };
        let align = self
            .binary
            .type_info_shared(elem)
            .ok()
            .and_then(|i| i.align)
            .unwrap_or(8)
            .max(1);
        // The node's links (next, and prev for `list`) come before the value.
        let links: u64 = if circular { 16 } else { 8 };
        let value_offset = links.div_ceil(align) * align;
        let mut addrs = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut broken = None;
        let read = |a: u64| -> R<u64> { Ok(le_u64(&Place::Memory(a).read(self.mem, 8)?)) };
        let mut node = match read(header) {
            Ok(n) => n,
            Err(e) => return Some(Err(e)),
        };
        loop {
            if (circular && node == header) || (!circular && node == 0) {
                break;
            }
            if node == 0 {
                broken = Some("<error: null link in std::list>".to_string());
                break;
            }
            if !seen.insert(node) {
                broken = Some(format!("<error: cycle after {} elements>", addrs.len()));
                break;
            }
            if addrs.len() as u64 >= MAX_NODES {
                broken = Some(format!("<error: more than {MAX_NODES} elements>"));
                break;
            }
            addrs.push(node + value_offset);
            node = match read(node) {
                Ok(n) => n,
                Err(e) => {
                    broken = Some(e);
                    break;
                }
            };
        }
        if let (None, Some(n)) = (&broken, claimed) {
            if n != addrs.len() as u64 {
                broken = Some(format!(
                    "<error: size {n} but {} linked elements>",
                    addrs.len()
                ));
            }
        }
        Some(Ok(Linked {
            elem,
            addrs,
            broken,
        }))
    }

    fn cpp_list_shown(&self, ty: TypeRef, place: &Place, class: &str) -> R<Shown> {
        let l = self
            .cpp_linked(ty, place)
            .unwrap_or_else(|| Err(format!("<error: unexpected std::{class} layout>")))?;
        let len = l.addrs.len() as u64;
        if l.broken.is_some() {
            return Ok(self.cpp_linear(&format!("std::{class}"), l.elem, len, &l.addrs, l.broken));
        }
        Ok(self.gdb_list(ty, class, l.elem, &l.addrs))
    }

    /// The number of elements of a deque or list (a broken list has none).
    fn cpp_sequence_len(&self, ty: TypeRef, place: &Place) -> Option<u64> {
        if let Some(a) = self.cpp_array(ty, place) {
            return Some(a.len);
        }
        if let Some(d) = self.cpp_deque(ty, place) {
            return d.ok().map(|d| d.len);
        }
        let l = self.cpp_linked(ty, place)?.ok()?;
        l.broken.is_none().then_some(l.addrs.len() as u64)
    }

    /// The elements `front()` and `back()` name: a vector's, deque's or list's.
    pub(crate) fn cpp_end(
        &self,
        ty: TypeRef,
        place: &Place,
        back: bool,
    ) -> Option<R<(TypeRef, Place)>> {
        let pick = |len: u64| -> R<u64> {
            if len == 0 {
                Err("the container is empty".into())
            } else {
                Ok(if back { len - 1 } else { 0 })
            }
        };
        if let Some(seq) = self
            .cpp_sequence(ty, place)
            .or_else(|| self.cpp_array(ty, place))
            .or_else(|| self.cpp_span_seq(ty, place))
        {
            let stride = self.binary.type_size(seq.elem).ok().flatten().unwrap_or(0);
            return Some(pick(seq.len).map(|i| (seq.elem, Place::Memory(seq.ptr + i * stride))));
        }
        if let Some(d) = self.cpp_deque(ty, place) {
            return Some(d.and_then(|d| {
                let i = pick(d.len)?;
                Ok((d.elem, Place::Memory(self.deque_element(&d, i)?)))
            }));
        }
        let l = self.cpp_linked(ty, place)?;
        Some(l.and_then(|l| {
            if let Some(e) = l.broken {
                return Err(e);
            }
            let i = pick(l.addrs.len() as u64)?;
            Ok((l.elem, Place::Memory(l.addrs[i as usize])))
        }))
    }

    /// `container[key]` on a deque, map or unordered_map, read from memory (no code
    /// runs in the debuggee, so a missing key is an error rather than an insertion).
    pub(crate) fn cpp_index(
        &self,
        ty: TypeRef,
        place: &Place,
        key: &CppKey<'_>,
    ) -> Option<R<(TypeRef, Place)>> {
        let class = self.class_name(ty)?;
        let found = match class.as_str() {
            "deque" => {
                let d = match self.cpp_deque(ty, place)? {
                    Ok(d) => d,
                    Err(e) => return Some(Err(e)),
                };
                let CppKey::Int(i) = *key else {
                    return Some(Err("a deque's index must be an integer".into()));
                };
                if i < 0 || i as u64 >= d.len {
                    return Some(Err(format!(
                        "index out of bounds: the len is {} but the index is {i}",
                        d.len
                    )));
                }
                return Some(
                    self.deque_element(&d, i as u64)
                        .map(|a| (d.elem, Place::Memory(a))),
                );
            }
            "array" => {
                let seq = self.cpp_array(ty, place)?;
                let CppKey::Int(i) = *key else {
                    return Some(Err("an array's index must be an integer".into()));
                };
                if i < 0 || i as u64 >= seq.len {
                    return Some(Err(format!(
                        "index out of bounds: the len is {} but the index is {i}",
                        seq.len
                    )));
                }
                let stride = self.binary.type_size(seq.elem).ok().flatten().unwrap_or(0);
                return Some(Ok((seq.elem, Place::Memory(seq.ptr + i as u64 * stride))));
            }
            "map" => self.cpp_tree_nodes(ty, place).and_then(|t| match t.broken {
                // A key may lie beyond the break: no answer rather than a wrong one.
                Some(e) => Err(e),
                None => Ok((t.value_ty, t.addrs)),
            }),
            "unordered_map" => self.cpp_hash_nodes(ty, place).map(|(v, a, _)| (v, a)),
            _ => return None,
        };
        let (value_ty, addrs) = match found {
            Ok((v, a)) => (v, a.into_iter().map(Ok).collect::<Vec<R<u64>>>()),
            // A container that cannot be read answers with why, not "no rule".
            Err(e) => return Some(Err(e)),
        };
        let first = self.cpp_find(value_ty, &Place::Memory(0), "first");
        let second = self.cpp_find(value_ty, &Place::Memory(0), "second");
        let (Some((kt, Place::Memory(ko))), Some((vt, Place::Memory(vo)))) = (first, second) else {
            return Some(Err(format!("<error: unexpected std::{class} layout>")));
        };
        for a in addrs {
            let a = match a {
                Ok(a) => a,
                Err(e) => return Some(Err(e)),
            };
            let kp = Place::Memory(a + ko);
            let hit = match (key, self.cpp_string(kt, &kp)) {
                (CppKey::Bytes(want), Some((ptr, len))) => {
                    len == want.len() as u64
                        && (len == 0
                            || Place::Memory(ptr)
                                .read(self.mem, len)
                                .is_ok_and(|b| b == *want))
                }
                (CppKey::Int(want), None) => self.int(kt, &kp).is_ok_and(|k| k == *want),
                (CppKey::Bytes(_), None) => {
                    return Some(Err("the map's key is not a string".into()))
                }
                (CppKey::Int(_), Some(_)) => return Some(Err("the map's key is a string".into())),
            };
            if hit {
                return Some(Ok((vt, Place::Memory(a + vo))));
            }
        }
        Some(Err("no entry with this key".into()))
    }

    /// The pointer a smart pointer holds (`get()`): its type and where it is.
    pub(crate) fn cpp_smart_pointer(&self, ty: TypeRef, place: &Place) -> Option<(TypeRef, Place)> {
        match self.class_name(ty)?.as_str() {
            "unique_ptr" => {
                let (tt, tp) = self.cpp_find(ty, place, "_M_t")?;
                self.deep_pointer_place(tt, &tp, 0)
            }
            "shared_ptr" | "weak_ptr" => self.cpp_find(ty, place, "_M_ptr"),
            _ => None,
        }
    }

    fn deep_pointer_place(
        &self,
        ty: TypeRef,
        place: &Place,
        depth: u32,
    ) -> Option<(TypeRef, Place)> {
        if depth > 10 {
            return None;
        }
        let r = resolve(self.binary, ty).ok()?;
        match r.kind {
            TypeKind::Pointer(_) => Some((ty, place.clone())),
            TypeKind::Composite { members, .. } => members.iter().find_map(|m| {
                self.deep_pointer_place(m.ty?, &place.offset(m.byte_offset), depth + 1)
            }),
            _ => None,
        }
    }

    /// A shared_ptr's `use_count()`.
    pub(crate) fn cpp_use_count(&self, ty: TypeRef, place: &Place) -> Option<i128> {
        if !matches!(self.class_name(ty)?.as_str(), "shared_ptr" | "weak_ptr") {
            return None;
        }
        let (rt, rp) = self.cpp_find(ty, place, "_M_refcount")?;
        let (pi, base) = self.ptr_at(rt, &rp, "_M_pi")?;
        if pi == 0 {
            return Some(0);
        }
        let (t, p) = self.cpp_find(base?, &Place::Memory(pi), "_M_use_count")?;
        self.int(t, &p).ok()
    }
}
