//! Rust values rendered natively from DWARF, the way Rust's `Debug` prints them:
//! strings, `Vec`/`VecDeque`/slices/arrays, enums with their active variant (niche
//! layouts included), `Box`/`Rc`/`Arc`, cells, hashbrown maps and sets, paths.
//!
//! Library types are recognised by their DWARF name *and* the members they must have;
//! a type that does not have the expected shape renders as a plain struct. Children
//! that are not the type's own members (a `Vec`'s heap elements, a map's entries, an
//! enum's active variant) are described by a [`Synth`] kept in the value's node.

use std::sync::Arc;

use symbols::{BaseEncoding, Language, TypeKind, TypeRef};

/// Library types' layouts: `Vec`, strings, fat pointers, smart pointers, hash tables.
mod library;

use crate::values::{
    base_text, int_value, le_u64, resolve, Languages, Node, Place, Renderer, Synthetic, Value,
};

/// Items an inline summary shows.
const ITEMS: usize = 10;
/// Below this depth, structured values in a summary are abbreviated.
const SUMMARY_DEPTH: u32 = 2;
/// Bytes of a string read for display.
const MAX_TEXT: u64 = 4096;
/// How many renderings one value may cause (summaries of summaries, reference hops).
const BUDGET: u32 = 64;
/// Largest hash table scanned (buckets).
const MAX_BUCKETS: u64 = 1 << 20;

/// Children made up by a language renderer.
#[derive(Debug)]
pub(crate) enum Synth {
    /// Elements `[i]` of a sequence: element `i` is at `base + index(i) * stride`,
    /// where `index(i)` is `(head + i) % cap` for a ring buffer and `i` otherwise.
    Elements {
        elem: TypeRef,
        base: Place,
        stride: u64,
        len: u64,
        ring: Option<(u64, u64)>,
    },
    /// Named children.
    Fields(Vec<Field>),
    /// The full buckets of a hashbrown table: bucket `i`'s element (`(K, V)` for a
    /// map, `(K, ())` for a set) is at `ctrl - (i + 1) * size_of(elem)`.
    Hash {
        elem: TypeRef,
        ctrl: u64,
        buckets: u64,
        items: u64,
        map: bool,
    },
}

impl Synthetic for Synth {
    fn children(
        &self,
        r: &Renderer<'_>,
        node: &Node,
        start: u64,
        count: Option<u64>,
    ) -> Vec<(Value, Option<Node>)> {
        r.synth_children(node, self, start, count)
    }
}

/// The Rust renderer, which also hands C++ types to `cpp.rs`: what every [`Renderer`]
/// renders other languages with.
pub(crate) static LANGUAGES: Native = Native;

/// The renderers of Rust and C++ values (see [`crate::values::Languages`]).
#[derive(Debug)]
pub(crate) struct Native;

impl Languages for Native {
    fn render(
        &self,
        r: &Renderer<'_>,
        name: &str,
        ty: TypeRef,
        place: &Place,
    ) -> Option<(Value, Option<Node>)> {
        r.render_language(name, ty, place)
    }
}

impl Synth {
    fn len(&self) -> u64 {
        match self {
            Synth::Elements { len, .. } => *len,
            Synth::Fields(f) => f.len() as u64,
            Synth::Hash { items, .. } => *items,
        }
    }

    fn indexed(&self) -> bool {
        matches!(
            self,
            Synth::Elements { .. } | Synth::Hash { map: false, .. }
        )
    }
}

/// A sequence's elements, for expressions.
pub(crate) struct Seq {
    pub elem: TypeRef,
    pub ptr: u64,
    pub len: u64,
    /// `(head, capacity)` of a ring buffer.
    pub ring: Option<(u64, u64)>,
}

/// A named child.
#[derive(Debug)]
pub(crate) struct Field {
    /// Its name; `*` stands for the dereferenced parent (`*p`).
    pub name: String,
    pub content: FieldContent,
}

/// What a child is.
#[derive(Debug)]
pub(crate) enum FieldContent {
    /// A typed value somewhere.
    Typed(TypeRef, Place),
    /// A computed leaf (a reference count, a borrow state).
    Text { type_name: String, text: String },
}

fn typed(name: &str, ty: TypeRef, place: Place) -> Field {
    Field {
        name: name.to_string(),
        content: FieldContent::Typed(ty, place),
    }
}

fn text_field(name: &str, type_name: &str, text: String) -> Field {
    Field {
        name: name.to_string(),
        content: FieldContent::Text {
            type_name: type_name.to_string(),
            text,
        },
    }
}

/// What rendering found: the text, the children and where the shown value lives
/// (a reference shows its pointee's address).
pub(crate) struct Shown {
    pub text: String,
    pub synth: Option<Synth>,
    pub address: Option<u64>,
}

impl Shown {
    fn leaf(text: String) -> Shown {
        Shown {
            text,
            synth: None,
            address: None,
        }
    }
}

type R<T> = Result<T, String>;

/// The name of a struct, tuple struct or variant without generics or path, as
/// `Debug` prints it (`Vec<i32, Global>` → `Vec`, `a::b::Point` → `Point`).
fn short_name(name: &str) -> &str {
    let base = match name.find('<') {
        Some(i) => &name[..i],
        None => name,
    };
    base.rsplit("::").next().unwrap_or(base)
}

/// `__0` → `0` (rustc's names for tuple fields).
fn field_name(name: &str) -> &str {
    match name.strip_prefix("__") {
        Some(n) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => n,
        _ => name,
    }
}

fn is_tuple_field(name: &str) -> bool {
    field_name(name) != name
}

impl Renderer<'_> {
    /// Renders a value of a Rust or C++ type natively; `None` for C (and for types
    /// the language renderers leave to the C renderer).
    pub(crate) fn render_language(
        &self,
        name: &str,
        ty: TypeRef,
        place: &Place,
    ) -> Option<(Value, Option<Node>)> {
        let lang = self.binary.type_language(ty).ok().flatten()?;
        let (type_name, shown) = match lang {
            Language::Rust => (self.rust_type_name(ty), self.show(ty, place, 0, BUDGET)),
            Language::Cpp => {
                // A reference shows what it refers to, under its own type.
                if let Ok(TypeKind::Reference {
                    target: Some(target),
                    ..
                }) = resolve(self.binary, ty).map(|r| r.kind)
                {
                    let type_name = self.binary.type_name(ty).unwrap_or_default();
                    let addr = match place.read(self.mem, 8) {
                        Ok(b) => le_u64(&b),
                        Err(e) => return Some((Value::error(name, type_name, e), None)),
                    };
                    let (mut v, n) = self.render(name, target, Place::Memory(addr), 0);
                    v.type_name = type_name;
                    return Some((v, n));
                }
                let shown = self.cpp_show(ty, place, 0)?;
                (self.binary.type_name(ty).unwrap_or_default(), shown)
            }
            _ => return None,
        };
        Some(self.finish(name, ty, place, type_name, shown))
    }

    fn finish(
        &self,
        name: &str,
        ty: TypeRef,
        place: &Place,
        type_name: String,
        shown: R<Shown>,
    ) -> (Value, Option<Node>) {
        let mut value = Value {
            name: name.to_string(),
            type_name,
            rendered: String::new(),
            children: None,
            child_count: None,
            indexed: false,
            error: false,
            address: place.address(),
        };
        match shown {
            Ok(s) => {
                value.rendered = s.text;
                if s.address.is_some() {
                    value.address = s.address;
                }
                if let Some(synth) = s.synth {
                    let count = synth.len();
                    if count > 0 {
                        value.child_count = Some(count);
                        value.indexed = synth.indexed();
                        let node = Node {
                            binary: self.binary.clone(),
                            ty,
                            dim: 0,
                            place: place.clone(),
                            path: name.to_string(),
                            count: Some(count),
                            synth: Some(Arc::new(synth)),
                        };
                        return (value, Some(node));
                    }
                }
            }
            Err(e) => {
                value.rendered = e;
                value.error = true;
            }
        }
        (value, None)
    }

    /// A Rust type's name as rustc wrote it (`Vec<i32, alloc::alloc::Global>`,
    /// `&str`, `*const u8`), arrays as `[T; N]`.
    pub(crate) fn rust_type_name(&self, ty: TypeRef) -> String {
        let Ok(info) = self.binary.type_info_shared(ty) else {
            return "<unknown type>".into();
        };
        if let TypeKind::Array { element, dims } = &info.kind {
            let elem = element.map_or_else(|| "?".into(), |e| self.rust_type_name(e));
            return match dims.first().map(|d| &d.count) {
                Some(symbols::ArrayBound::Count(n)) => format!("[{elem}; {n}]"),
                _ => format!("[{elem}]"),
            };
        }
        match &info.name {
            Some(n) => n.clone(),
            None => self
                .binary
                .type_name(ty)
                .unwrap_or_else(|_| "<unknown type>".into()),
        }
    }

    /// A short text for a value inside another's summary.
    fn summary(&self, ty: TypeRef, place: &Place, depth: u32, budget: u32) -> String {
        match self.show(ty, place, depth, budget) {
            Ok(s) => s.text,
            Err(e) => e,
        }
    }

    /// Renders a Rust value: its text and its children.
    pub(crate) fn show(&self, ty: TypeRef, place: &Place, depth: u32, budget: u32) -> R<Shown> {
        let budget = budget.checked_sub(1).ok_or("{...}")?;
        let info = self
            .binary
            .type_info_shared(ty)
            .map_err(|e| format!("<error: {e}>"))?;
        let r = resolve(self.binary, ty)?;
        let name = info.name.clone().unwrap_or_default();
        match &r.kind {
            TypeKind::Base(enc) => {
                let bytes = place.read(self.mem, r.size.unwrap_or(0))?;
                Ok(Shown::leaf(rust_base(&name, *enc, &bytes)))
            }
            TypeKind::Enum { .. } => {
                let bytes = place.read(self.mem, r.size.unwrap_or(0))?;
                Ok(Shown::leaf(self.scalar_text(&r, &bytes)?))
            }
            TypeKind::Pointer(target) => self.show_pointer(&name, *target, place, depth, budget),
            TypeKind::Reference { target, .. } => {
                self.show_pointer("&", *target, place, depth, budget)
            }
            TypeKind::Array { element, dims } => {
                let Some(elem) = *element else {
                    return Ok(Shown::leaf("[...]".into()));
                };
                let len = match dims.first().map(|d| &d.count) {
                    Some(symbols::ArrayBound::Count(n)) => *n,
                    _ => 0,
                };
                let stride = self.binary.type_size(elem).ok().flatten().unwrap_or(0);
                if let Place::Memory(_) = place {
                    place.read(self.mem, stride.saturating_mul(len).clamp(1, 4096))?;
                }
                self.sequence(elem, place.clone(), stride, len, None, depth, budget)
            }
            TypeKind::Composite {
                members,
                variant_part,
                declaration,
                ..
            } => {
                if *declaration {
                    return Ok(Shown::leaf("<incomplete type>".into()));
                }
                if let Place::Memory(_) = place {
                    place.read(self.mem, r.size.unwrap_or(0).clamp(1, 4096))?;
                }
                if let Some(vp) = variant_part {
                    return self.show_enum(vp, place, depth, budget);
                }
                if let Some(s) = self.show_library(ty, &name, place, depth, budget)? {
                    return Ok(s);
                }
                self.show_struct(&name, members, place, depth, budget)
            }
            TypeKind::Function { .. } => Ok(Shown::leaf("<function>".into())),
            _ => Ok(Shown::leaf("()".into())),
        }
    }

    fn show_pointer(
        &self,
        name: &str,
        target: Option<TypeRef>,
        place: &Place,
        depth: u32,
        budget: u32,
    ) -> R<Shown> {
        let addr = le_u64(&place.read(self.mem, 8)?);
        let transparent =
            name.starts_with('&') || name.contains("Box<") || name.starts_with("Box<");
        let Some(target) = target else {
            return Ok(Shown::leaf(format!("{addr:#x}")));
        };
        let is_fn =
            resolve(self.binary, target).is_ok_and(|r| matches!(r.kind, TypeKind::Function { .. }));
        if is_fn {
            return Ok(Shown::leaf(self.scalar_text(
                &crate::values::Resolved {
                    kind: TypeKind::Pointer(Some(target)),
                    size: Some(8),
                    id: None,
                },
                &addr.to_le_bytes(),
            )?));
        }
        if addr == 0 {
            return Ok(Shown::leaf("0x0".into()));
        }
        if transparent {
            let mut s = self.show(target, &Place::Memory(addr), depth, budget)?;
            s.address = Some(addr);
            // A pointee without children of its own still shows what it is.
            return Ok(s);
        }
        // A raw pointer: its address, and the pointee as the one child.
        let zero_sized = self.binary.type_size(target).ok().flatten() == Some(0);
        Ok(Shown {
            text: format!("{addr:#x}"),
            synth: (!zero_sized)
                .then(|| Synth::Fields(vec![typed("*", target, Place::Memory(addr))])),
            address: None,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn sequence(
        &self,
        elem: TypeRef,
        base: Place,
        stride: u64,
        len: u64,
        ring: Option<(u64, u64)>,
        depth: u32,
        budget: u32,
    ) -> R<Shown> {
        let text = if depth > SUMMARY_DEPTH {
            "[...]".to_string()
        } else {
            let mut parts = Vec::new();
            for i in 0..len.min(ITEMS as u64) {
                let idx = ring_index(i, ring);
                let p = base.offset(idx.saturating_mul(stride));
                parts.push(self.summary(elem, &p, depth + 1, budget / 2));
            }
            if len > ITEMS as u64 {
                parts.push("...".into());
            }
            format!("[{}]", parts.join(", "))
        };
        Ok(Shown {
            text,
            synth: Some(Synth::Elements {
                elem,
                base,
                stride,
                len,
                ring,
            }),
            address: None,
        })
    }

    fn show_enum(
        &self,
        vp: &symbols::VariantPart,
        place: &Place,
        depth: u32,
        budget: u32,
    ) -> R<Shown> {
        let variant = match &vp.discriminant {
            None => vp.variants.first(),
            Some(d) => {
                let dty = d.ty.ok_or("<error: discriminant without type>")?;
                let size = self
                    .binary
                    .type_size(dty)
                    .ok()
                    .flatten()
                    .unwrap_or(0)
                    .min(8);
                let raw = place.offset(d.byte_offset).read(self.mem, size)?;
                let value = le_u64(&raw);
                let mask = if size >= 8 {
                    u64::MAX
                } else {
                    (1u64 << (8 * size)) - 1
                };
                vp.variants
                    .iter()
                    .find(|v| {
                        v.discriminant.is_some_and(|x| x & mask == value)
                            || v.ranges
                                .iter()
                                .any(|(lo, hi)| (lo & mask..=hi & mask).contains(&value))
                    })
                    .or_else(|| {
                        vp.variants
                            .iter()
                            .find(|v| v.discriminant.is_none() && v.ranges.is_empty())
                    })
            }
        };
        let Some(variant) = variant else {
            return Err("<error: no variant matches the discriminant>".into());
        };
        let Some(m) = variant.members.first() else {
            return Ok(Shown::leaf("<empty variant>".into()));
        };
        let vname = m.name.clone().unwrap_or_default();
        let Some(vty) = m.ty else {
            return Ok(Shown::leaf(vname));
        };
        let vplace = place.offset(m.byte_offset);
        let r = resolve(self.binary, vty)?;
        let members = match &r.kind {
            TypeKind::Composite { members, .. } => members.clone(),
            _ => Vec::new(),
        };
        self.show_struct(&vname, &members, &vplace, depth, budget)
    }

    /// A struct, tuple, tuple struct or variant: `Point { x: 1, y: 2 }`, `(1, 'a')`,
    /// `Pair(1, 2)`, `Unit`.
    fn show_struct(
        &self,
        name: &str,
        members: &[symbols::Member],
        place: &Place,
        depth: u32,
        budget: u32,
    ) -> R<Shown> {
        let members: Vec<&symbols::Member> = members.iter().filter(|m| m.ty.is_some()).collect();
        let is_tuple_type = name.starts_with('(');
        let short = if is_tuple_type { "" } else { short_name(name) };
        if members.is_empty() {
            return Ok(Shown::leaf(if is_tuple_type {
                "()".into()
            } else {
                short.to_string()
            }));
        }
        let tuple_like = members
            .iter()
            .all(|m| m.name.as_deref().is_some_and(is_tuple_field));
        let mut fields = Vec::new();
        let mut parts = Vec::new();
        for m in &members {
            let Some(mty) = m.ty else { continue };
            let fname = field_name(m.name.as_deref().unwrap_or("?")).to_string();
            let p = place.offset(m.byte_offset);
            if parts.len() < ITEMS && depth <= SUMMARY_DEPTH {
                let t = self.summary(mty, &p, depth + 1, budget / 2);
                parts.push(if tuple_like {
                    t
                } else {
                    format!("{fname}: {t}")
                });
            }
            fields.push(typed(&fname, mty, p));
        }
        if depth > SUMMARY_DEPTH {
            parts = vec!["..".into()];
        } else if members.len() > ITEMS {
            parts.push("..".into());
        }
        let text = if tuple_like {
            format!("{short}({})", parts.join(", "))
        } else {
            format!("{short} {{ {} }}", parts.join(", "))
        };
        Ok(Shown {
            text: text.trim_start().to_string(),
            synth: Some(Synth::Fields(fields)),
            address: None,
        })
    }

    // ---------------------------------------------------------------- children

    pub(crate) fn synth_children(
        &self,
        node: &Node,
        synth: &Synth,
        start: u64,
        count: Option<u64>,
    ) -> Vec<(Value, Option<Node>)> {
        let end = |len: u64| count.map_or(len, |c| start.saturating_add(c).min(len));
        let mut out = Vec::new();
        match synth {
            Synth::Elements {
                elem,
                base,
                stride,
                len,
                ring,
            } => {
                for i in start..end(*len) {
                    let name = format!("[{i}]");
                    let p = base.offset(ring_index(i, *ring).saturating_mul(*stride));
                    let (v, n) = self.render(&name, *elem, p, 0);
                    out.push((v, n.map(|n| with_path(n, format!("{}[{i}]", node.path)))));
                }
            }
            Synth::Fields(fields) => {
                let take = count.unwrap_or(u64::MAX) as usize;
                for f in fields.iter().skip(start as usize).take(take) {
                    let name = if f.name == "*" {
                        format!("*{}", node.path)
                    } else {
                        f.name.clone()
                    };
                    match &f.content {
                        FieldContent::Typed(ty, p) => {
                            let (v, n) = self.render(&name, *ty, p.clone(), 0);
                            let path = if f.name == "*" {
                                format!("(*{})", node.path)
                            } else {
                                format!("{}.{}", node.path, name)
                            };
                            out.push((v, n.map(|n| with_path(n, path))));
                        }
                        FieldContent::Text { type_name, text } => out.push((
                            Value {
                                name,
                                type_name: type_name.clone(),
                                rendered: text.clone(),
                                children: None,
                                child_count: None,
                                indexed: false,
                                error: false,
                                address: None,
                            },
                            None,
                        )),
                    }
                }
            }
            Synth::Hash {
                elem,
                ctrl,
                buckets,
                items,
                map,
            } => {
                let take = end(*items).saturating_sub(start);
                let addrs = match self.hash_buckets(*elem, *ctrl, *buckets, start, take) {
                    Ok(a) => a,
                    Err(e) => return vec![(Value::error("", String::new(), e), None)],
                };
                let key = self.member(*elem, "__0");
                let val = self.member(*elem, "__1");
                for (k, a) in addrs.into_iter().enumerate() {
                    let i = start + k as u64;
                    match (map, key, val) {
                        (true, Some((kt, ko)), Some((vt, vo))) => {
                            let ktext = self.summary(kt, &Place::Memory(a + ko), 1, BUDGET);
                            let name = format!("[{ktext}]");
                            let (v, n) = self.render(&name, vt, Place::Memory(a + vo), 0);
                            out.push((v, n.map(|n| with_path(n, format!("{}{name}", node.path)))));
                        }
                        (_, Some((kt, ko)), _) => {
                            let name = format!("[{i}]");
                            let (v, n) = self.render(&name, kt, Place::Memory(a + ko), 0);
                            out.push((v, n.map(|n| with_path(n, format!("{}{name}", node.path)))));
                        }
                        _ => {}
                    }
                }
            }
        }
        out
    }
}

fn with_path(mut n: Node, path: String) -> Node {
    n.path = path;
    n
}

fn ring_index(i: u64, ring: Option<(u64, u64)>) -> u64 {
    match ring {
        Some((head, cap)) if cap > 0 => head.wrapping_add(i) % cap,
        _ => i,
    }
}

/// A Rust scalar as `Debug` prints it: `'a'`, `2.5`, `true`, `-3`, `()`.
fn rust_base(name: &str, enc: BaseEncoding, bytes: &[u8]) -> String {
    if bytes.is_empty() {
        return "()".into();
    }
    match enc {
        BaseEncoding::Utf if name == "char" || bytes.len() == 4 => {
            let v = int_value(bytes, false) as u32;
            match char::from_u32(v) {
                Some(c) => format!("{c:?}"),
                None => format!("<invalid char {v:#x}>"),
            }
        }
        BaseEncoding::Float if bytes.len() == 4 => {
            let mut b = [0u8; 4];
            b.copy_from_slice(&bytes[..4]);
            format!("{:?}", f32::from_le_bytes(b))
        }
        BaseEncoding::Float if bytes.len() == 8 => {
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[..8]);
            format!("{:?}", f64::from_le_bytes(b))
        }
        BaseEncoding::Signed | BaseEncoding::SignedChar => int_value(bytes, true).to_string(),
        BaseEncoding::Unsigned | BaseEncoding::UnsignedChar => crate::values::uint_text(bytes),
        other => base_text(other, bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_scalars_look_like_debug() {
        assert_eq!(short_name("Vec<i32, alloc::alloc::Global>"), "Vec");
        assert_eq!(short_name("a::b::Point"), "Point");
        assert_eq!(field_name("__12"), "12");
        assert_eq!(field_name("__x"), "__x");
        assert_eq!(
            rust_base("char", BaseEncoding::Utf, &0x1f600u32.to_le_bytes()),
            "'😀'"
        );
        assert_eq!(
            rust_base("char", BaseEncoding::Utf, &10u32.to_le_bytes()),
            "'\\n'"
        );
        assert_eq!(
            rust_base("f64", BaseEncoding::Float, &0.1f64.to_le_bytes()),
            "0.1"
        );
        assert_eq!(rust_base("()", BaseEncoding::Unsigned, &[]), "()");
        assert_eq!(
            rust_base("i128", BaseEncoding::Signed, &i128::MIN.to_le_bytes()),
            i128::MIN.to_string()
        );
        assert_eq!(ring_index(3, Some((2, 4))), 1);
    }
}
