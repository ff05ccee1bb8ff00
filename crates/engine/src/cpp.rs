//! C++ library values (libstdc++ layouts) rendered natively from DWARF, the way
//! gdb's libstdc++ printers show them: `std::string` as `"text"`, `std::vector` as
//! `{1, 2, 3}` with elements `[i]`, `std::map` and `std::unordered_map` as
//! `{["key"] = value}`, `unique_ptr` and `shared_ptr` as their pointer with the
//! pointee (and the counts) as children.

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
    /// A type seen through typedefs and qualifiers, as a [`TypeRef`].
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
                Some(self.cpp_elements(seq))
            }
            "map" | "multimap" | "set" | "multiset" => {
                Some(self.cpp_tree(ty, place, class.ends_with("map")))
            }
            "unordered_map" | "unordered_set" | "unordered_multimap" | "unordered_multiset" => {
                Some(self.cpp_hash(ty, place, class.ends_with("map")))
            }
            "unique_ptr" => {
                let (tt, tp) = self.cpp_find(ty, place, "_M_t")?;
                let (addr, target) = self.deep_pointer(tt, &tp, 0)?;
                Some(Ok(self.cpp_pointer(
                    addr,
                    target,
                    Vec::new(),
                    String::new(),
                )))
            }
            "shared_ptr" | "weak_ptr" => {
                let (addr, target) = self.ptr_at(ty, place, "_M_ptr")?;
                let (rt, rp) = self.cpp_find(ty, place, "_M_refcount")?;
                let (pi, base) = self.ptr_at(rt, &rp, "_M_pi")?;
                let mut extra = Vec::new();
                let mut note = String::new();
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
                    note = format!(" (use count {uses}, weak count {weak})");
                    extra.push(text("use_count", "long", uses.to_string()));
                    extra.push(text("weak_count", "long", weak.to_string()));
                }
                Some(Ok(self.cpp_pointer(addr, target, extra, note)))
            }
            _ => None,
        }
    }

    fn cpp_pointer(
        &self,
        addr: u64,
        target: Option<TypeRef>,
        extra: Vec<Field>,
        note: String,
    ) -> Shown {
        let mut fields = Vec::new();
        if let (true, Some(t)) = (addr != 0, target) {
            fields.push(field("*", t, Place::Memory(addr)));
        }
        fields.extend(extra);
        Shown {
            text: format!("{addr:#x}{note}"),
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
                        parts.push(self.cpp_summary(value_ty, &Place::Memory(*a)));
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

    fn cpp_tree(&self, ty: TypeRef, place: &Place, map: bool) -> R<Shown> {
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
        let read = |a: u64| -> R<u64> { Ok(le_u64(&Place::Memory(a).read(self.mem, 8)?)) };
        // _Rb_tree_node_base: color (4, padded to 8), parent, left, right.
        let (parent, left, right) = (8u64, 16u64, 24u64);
        let mut addrs = Vec::new();
        let mut node = read(header + left)?;
        while addrs.len() < count as usize && node != header && node != 0 {
            addrs.push(node + value_offset);
            let r = read(node + right)?;
            if r != 0 {
                node = r;
                loop {
                    let l = read(node + left)?;
                    if l == 0 {
                        break;
                    }
                    node = l;
                }
            } else {
                let mut p = read(node + parent)?;
                while node == read(p + right)? {
                    node = p;
                    p = read(p + parent)?;
                }
                if read(node + right)? != p {
                    node = p;
                }
            }
        }
        Ok(self.cpp_entries(value_ty, &addrs, count, map))
    }

    fn cpp_hash(&self, ty: TypeRef, place: &Place, map: bool) -> R<Shown> {
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
        Ok(self.cpp_entries(value_ty, &addrs, count, map))
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
            _ => return None,
        };
        let (t, p) = self.cpp_find(ty, place, path)?;
        let (ct, cp) = self.cpp_find(t, &p, count)?;
        self.uint(ct, &cp).ok()
    }
}
