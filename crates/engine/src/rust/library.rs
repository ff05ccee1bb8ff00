//! Rust standard library types, recognised by name and read from their DWARF layout:
//! their rendering (`show_library`: `Vec`, `String`, `Box`/`Rc`/`Arc`, cells, hashbrown
//! maps and sets) and the accessors the renderer and expressions share (members, fat
//! pointers, sequences, strings, collection lengths, `VecDeque` parts).

use super::*;

impl Renderer<'_> {
    pub(super) fn member(&self, ty: TypeRef, name: &str) -> Option<(TypeRef, u64)> {
        let r = resolve(self.binary, ty).ok()?;
        let TypeKind::Composite { members, .. } = r.kind else {
            return None;
        };
        let m = members.iter().find(|m| m.name.as_deref() == Some(name))?;
        Some((m.ty?, m.byte_offset))
    }

    /// Follows a path of member names.
    pub(crate) fn at(&self, ty: TypeRef, place: &Place, path: &[&str]) -> Option<(TypeRef, Place)> {
        let mut cur = (ty, place.clone());
        for name in path {
            let (t, off) = self.member(cur.0, name)?;
            cur = (t, cur.1.offset(off));
        }
        Some(cur)
    }

    /// An unsigned integer, looking through single-field wrappers (`Cell<usize>`,
    /// `UsizeNoHighBit(usize)`, `AtomicUsize`).
    pub(crate) fn uint(&self, ty: TypeRef, place: &Place) -> R<u64> {
        let v = self.int(ty, place)?;
        Ok(v as u64)
    }

    /// A (signed when the type is) integer, looking through single-field wrappers.
    pub(crate) fn int(&self, ty: TypeRef, place: &Place) -> R<i128> {
        let mut cur = (ty, place.clone());
        for _ in 0..8 {
            let r = resolve(self.binary, cur.0)?;
            match &r.kind {
                TypeKind::Base(enc) => {
                    let b = cur.1.read(self.mem, r.size.unwrap_or(0).min(16))?;
                    let signed = matches!(enc, BaseEncoding::Signed | BaseEncoding::SignedChar);
                    return Ok(int_value(&b, signed));
                }
                TypeKind::Pointer(_) => {
                    return Ok(i128::from(le_u64(&cur.1.read(self.mem, 8)?)));
                }
                TypeKind::Composite { members, .. } => {
                    let m = members
                        .iter()
                        .find(|m| m.ty.is_some())
                        .ok_or("<error: no integer inside>")?;
                    cur = (m.ty.unwrap_or(cur.0), cur.1.offset(m.byte_offset));
                }
                _ => return Err("<error: not an integer>".into()),
            }
        }
        Err("<error: not an integer>".into())
    }

    /// The first pointer inside a value (`NonNull<T>`, `Unique<T>`, `RawVec<T>`):
    /// its value and pointee type.
    pub(crate) fn first_pointer(
        &self,
        ty: TypeRef,
        place: &Place,
    ) -> Option<(u64, Option<TypeRef>)> {
        let mut cur = (ty, place.clone());
        for _ in 0..12 {
            let r = resolve(self.binary, cur.0).ok()?;
            match &r.kind {
                TypeKind::Pointer(t) | TypeKind::Reference { target: t, .. } => {
                    let b = cur.1.read(self.mem, 8).ok()?;
                    return Some((le_u64(&b), *t));
                }
                TypeKind::Composite { members, .. } => {
                    let m = members.iter().find(|m| m.ty.is_some())?;
                    cur = (m.ty?, cur.1.offset(m.byte_offset));
                }
                _ => return None,
            }
        }
        None
    }

    pub(super) fn template_param(&self, ty: TypeRef, name: &str) -> Option<TypeRef> {
        self.binary
            .template_params(ty)
            .ok()?
            .into_iter()
            .find(|p| p.name == name)?
            .ty
    }

    /// A `Vec<T>`'s element type, buffer and length.
    pub(crate) fn vec_parts(&self, ty: TypeRef, place: &Place) -> Option<(TypeRef, u64, u64)> {
        let (bt, bp) = self.at(ty, place, &["buf"])?;
        let (lt, lp) = self.at(ty, place, &["len"])?;
        let elem = self.template_param(ty, "T")?;
        let (ptr, _) = self.first_pointer(bt, &bp)?;
        let len = self.uint(lt, &lp).ok()?;
        Some((elem, ptr, len))
    }

    /// A fat pointer's data pointer, pointee type and length (`&[T]`, `&str`).
    pub(crate) fn fat_parts(
        &self,
        ty: TypeRef,
        place: &Place,
    ) -> Option<(Option<TypeRef>, u64, u64)> {
        let (pt, pp) = self.at(ty, place, &["data_ptr"])?;
        let (lt, lp) = self.at(ty, place, &["length"])?;
        let (ptr, elem) = self.first_pointer(pt, &pp)?;
        let len = self.uint(lt, &lp).ok()?;
        Some((elem, ptr, len))
    }

    /// Whether `ty` is `u8` or an unsized wrapper of bytes: `&Path` and `&OsStr` point
    /// at `Path { inner: OsStr { inner: Slice { inner: [u8] } } }`, read as `&str` is
    /// (as rustc's lldb formatters show them), not as a sequence of `Path`s.
    fn bytes_inside(&self, ty: TypeRef) -> bool {
        let mut cur = ty;
        for _ in 0..6 {
            if self
                .binary
                .type_info_shared(cur)
                .is_ok_and(|i| i.name.as_deref() == Some("u8"))
            {
                return true;
            }
            let Ok(r) = resolve(self.binary, cur) else {
                return false;
            };
            cur = match r.kind {
                TypeKind::Composite { members, .. } if members.len() == 1 => match members[0].ty {
                    Some(t) => t,
                    None => return false,
                },
                TypeKind::Array {
                    element: Some(e), ..
                } => e,
                _ => return false,
            };
        }
        false
    }

    /// The bytes of a `String`, `PathBuf` or `OsString` (their `Vec<u8>`).
    pub(crate) fn string_vec(&self, ty: TypeRef, place: &Place, name: &str) -> Option<(u64, u64)> {
        let path: &[&str] = match short_name(name) {
            "String" => &["vec"],
            "PathBuf" => &["inner", "inner", "inner"],
            "OsString" => &["inner", "inner"],
            _ => return None,
        };
        let (vt, vp) = self.at(ty, place, path)?;
        let (_, ptr, len) = self.vec_parts(vt, &vp)?;
        Some((ptr, len))
    }

    pub(super) fn string_text(&self, ptr: u64, len: u64) -> R<String> {
        let n = len.min(MAX_TEXT);
        let bytes = if n == 0 {
            Vec::new()
        } else {
            Place::Memory(ptr).read(self.mem, n)?
        };
        let mut text = format!("{:?}", String::from_utf8_lossy(&bytes));
        if len > n {
            text.push_str("...");
        }
        Ok(text)
    }

    pub(super) fn show_library(
        &self,
        ty: TypeRef,
        name: &str,
        place: &Place,
        depth: u32,
        budget: u32,
    ) -> R<Option<Shown>> {
        let short = short_name(name);
        // Fat pointers: `&str`, `&[T]`, `&Path`, `&OsStr`, `*const [T]`.
        if let Some((elem, ptr, len)) = self.fat_parts(ty, place) {
            let inner = name
                .trim_start_matches("&mut ")
                .trim_start_matches('&')
                .trim_start_matches("*const ")
                .trim_start_matches("*mut ");
            let byte_elem = elem.is_some_and(|e| self.bytes_inside(e));
            if !inner.starts_with('[') && byte_elem {
                let mut s = Shown::leaf(self.string_text(ptr, len)?);
                s.synth = Some(Synth::Fields(vec![text_field(
                    "len",
                    "usize",
                    len.to_string(),
                )]));
                return Ok(Some(s));
            }
            if let Some(elem) = elem {
                let stride = self.binary.type_size(elem).ok().flatten().unwrap_or(0);
                let mut s =
                    self.sequence(elem, Place::Memory(ptr), stride, len, None, depth, budget)?;
                s.address = Some(ptr);
                return Ok(Some(s));
            }
        }
        if let Some((ptr, len)) = self.string_vec(ty, place, name) {
            let mut s = Shown::leaf(self.string_text(ptr, len)?);
            s.synth = Some(Synth::Fields(vec![text_field(
                "len",
                "usize",
                len.to_string(),
            )]));
            return Ok(Some(s));
        }
        match short {
            "Vec" => {
                let Some((elem, ptr, len)) = self.vec_parts(ty, place) else {
                    return Ok(None);
                };
                let stride = self.binary.type_size(elem).ok().flatten().unwrap_or(0);
                return self
                    .sequence(elem, Place::Memory(ptr), stride, len, None, depth, budget)
                    .map(Some);
            }
            "VecDeque" => {
                let Some((elem, ptr, head, len, cap)) = self.deque_parts(ty, place) else {
                    return Ok(None);
                };
                let stride = self.binary.type_size(elem).ok().flatten().unwrap_or(0);
                // A zero-sized element type has a capacity of usize::MAX: no ring.
                let ring = (stride > 0 && cap > 0).then_some((head, cap));
                if len > cap && stride > 0 {
                    return Err(format!(
                        "<error: VecDeque length {len} exceeds its capacity {cap}>"
                    ));
                }
                return self
                    .sequence(elem, Place::Memory(ptr), stride, len, ring, depth, budget)
                    .map(Some);
            }
            "Rc" | "Arc" | "Weak" => return self.show_rc(ty, short, place, depth, budget),
            "Cell" | "RefCell" => {
                let Some((vt, vp)) = self.at(ty, place, &["value", "value"]) else {
                    return Ok(None);
                };
                let inner = self.summary(vt, &vp, depth + 1, budget / 2);
                let mut fields = vec![typed("value", vt, vp)];
                if short == "RefCell" {
                    if let Some((bt, bp)) = self.at(ty, place, &["borrow"]) {
                        let flag = self.int(bt, &bp)?;
                        let state = match flag {
                            0 => "not borrowed".to_string(),
                            n if n > 0 => format!("{n} shared"),
                            _ => "mutably borrowed".to_string(),
                        };
                        fields.push(text_field("borrow", "isize", state));
                    }
                }
                return Ok(Some(Shown {
                    text: format!("{short} {{ value: {inner} }}"),
                    synth: Some(Synth::Fields(fields)),
                    address: None,
                }));
            }
            "UnsafeCell" | "ManuallyDrop" => {
                let Some((vt, vp)) = self.at(ty, place, &["value"]) else {
                    return Ok(None);
                };
                return self.show(vt, &vp, depth, budget).map(Some);
            }
            "Ref" | "RefMut" => {
                let Some((vt, vp)) = self.at(ty, place, &["value"]) else {
                    return Ok(None);
                };
                let Some((addr, Some(target))) = self.first_pointer(vt, &vp) else {
                    return Ok(None);
                };
                let mut s = self.show(target, &Place::Memory(addr), depth, budget)?;
                s.address = Some(addr);
                return Ok(Some(s));
            }
            "NonNull" | "Unique" => {
                let Some((addr, target)) = self.first_pointer(ty, place) else {
                    return Ok(None);
                };
                let child = target
                    .filter(|_| addr != 0)
                    .map(|t| Synth::Fields(vec![typed("*", t, Place::Memory(addr))]));
                return Ok(Some(Shown {
                    text: format!("{addr:#x}"),
                    synth: child,
                    address: None,
                }));
            }
            "HashMap" | "HashSet" => {
                return self.show_hash(ty, short == "HashMap", place, depth, budget)
            }
            _ => {}
        }
        Ok(None)
    }

    pub(super) fn show_rc(
        &self,
        ty: TypeRef,
        short: &str,
        place: &Place,
        depth: u32,
        budget: u32,
    ) -> R<Option<Shown>> {
        let Some((pt, pp)) = self.at(ty, place, &["ptr"]) else {
            return Ok(None);
        };
        let Some((addr, Some(inner))) = self.first_pointer(pt, &pp) else {
            return Ok(None);
        };
        if short == "Weak" && addr == u64::MAX {
            return Ok(Some(Shown::leaf("(Weak)".into())));
        }
        let at = Place::Memory(addr);
        let Some((st, sp)) = self.at(inner, &at, &["strong"]) else {
            return Ok(None);
        };
        let Some((wt, wp)) = self.at(inner, &at, &["weak"]) else {
            return Ok(None);
        };
        let value = self
            .at(inner, &at, &["value"])
            .or_else(|| self.at(inner, &at, &["data"]));
        let strong = self.uint(st, &sp)?;
        let weak = self.uint(wt, &wp)?;
        // The strong references together hold one weak reference (as
        // `Rc::weak_count` reports it).
        let weak = if strong > 0 {
            weak.saturating_sub(1)
        } else {
            weak
        };
        let mut fields = Vec::new();
        let mut text = String::new();
        if let Some((vt, vp)) = value {
            if strong > 0 || short != "Weak" {
                text = self.summary(vt, &vp, depth, budget / 2);
                fields.push(typed("value", vt, vp));
            }
        }
        if short == "Weak" {
            text = "(Weak)".into();
        }
        fields.push(text_field("strong", "usize", strong.to_string()));
        fields.push(text_field("weak", "usize", weak.to_string()));
        Ok(Some(Shown {
            text,
            synth: Some(Synth::Fields(fields)),
            address: Some(addr),
        }))
    }

    /// A hashbrown table: the element type, control bytes, bucket count and items.
    pub(super) fn hash_table(
        &self,
        ty: TypeRef,
        place: &Place,
    ) -> Option<(TypeRef, u64, u64, u64)> {
        let (t, p) = self.at(ty, place, &["base"])?;
        let (t, p) = self.at(t, &p, &["map"]).unwrap_or((t, p));
        let (raw, rp) = self.at(t, &p, &["table"])?;
        let elem = self.template_param(raw, "T")?;
        let (inner, ip) = self.at(raw, &rp, &["table"])?;
        let (mt, mp) = self.at(inner, &ip, &["bucket_mask"])?;
        let (ct, cp) = self.at(inner, &ip, &["ctrl"])?;
        let (it, itp) = self.at(inner, &ip, &["items"])?;
        let mask = self.uint(mt, &mp).ok()?;
        let (ctrl, _) = self.first_pointer(ct, &cp)?;
        let items = self.uint(it, &itp).ok()?;
        let buckets = if items == 0 {
            0
        } else {
            mask.saturating_add(1)
        };
        Some((elem, ctrl, buckets, items))
    }

    /// The element addresses of the full buckets `skip..skip+take`.
    pub(super) fn hash_buckets(
        &self,
        elem: TypeRef,
        ctrl: u64,
        buckets: u64,
        skip: u64,
        take: u64,
    ) -> R<Vec<u64>> {
        if buckets > MAX_BUCKETS {
            return Err(format!(
                "<error: hash table of {buckets} buckets is too large>"
            ));
        }
        let size = self.binary.type_size(elem).ok().flatten().unwrap_or(0);
        let bytes = if buckets == 0 {
            Vec::new()
        } else {
            Place::Memory(ctrl).read(self.mem, buckets)?
        };
        Ok(bytes
            .iter()
            .enumerate()
            .filter(|(_, b)| **b & 0x80 == 0)
            .skip(skip as usize)
            .take(take as usize)
            .map(|(i, _)| ctrl.wrapping_sub((i as u64 + 1).wrapping_mul(size)))
            .collect())
    }

    pub(super) fn show_hash(
        &self,
        ty: TypeRef,
        map: bool,
        place: &Place,
        depth: u32,
        budget: u32,
    ) -> R<Option<Shown>> {
        let Some((elem, ctrl, buckets, items)) = self.hash_table(ty, place) else {
            return Ok(None);
        };
        let (Some((kt, ko)), vo) = (self.member(elem, "__0"), self.member(elem, "__1")) else {
            return Ok(None);
        };
        let mut parts = Vec::new();
        if depth <= SUMMARY_DEPTH {
            for a in self.hash_buckets(elem, ctrl, buckets, 0, ITEMS as u64)? {
                let k = self.summary(kt, &Place::Memory(a + ko), depth + 1, budget / 2);
                match (map, vo) {
                    (true, Some((vt, vo))) => {
                        let v = self.summary(vt, &Place::Memory(a + vo), depth + 1, budget / 2);
                        parts.push(format!("{k}: {v}"));
                    }
                    _ => parts.push(k),
                }
            }
            if items > ITEMS as u64 {
                parts.push("...".into());
            }
        } else {
            parts.push("...".into());
        }
        Ok(Some(Shown {
            text: format!("{{{}}}", parts.join(", ")),
            synth: Some(Synth::Hash {
                elem,
                ctrl,
                buckets,
                items,
                map,
            }),
            address: None,
        }))
    }

    /// The elements of a sequence value (`Vec`, `VecDeque`, `&[T]`, C++
    /// `std::vector`), for indexing and `len()` in expressions.
    pub(crate) fn sequence_parts(&self, ty: TypeRef, place: &Place) -> Option<Seq> {
        if let Some((Some(elem), ptr, len)) = self.fat_parts(ty, place) {
            return Some(Seq {
                elem,
                ptr,
                len,
                ring: None,
            });
        }
        let name = self.binary.type_info_shared(ty).ok()?.name.clone()?;
        match short_name(&name) {
            "Vec" => {
                let (elem, ptr, len) = self.vec_parts(ty, place)?;
                Some(Seq {
                    elem,
                    ptr,
                    len,
                    ring: None,
                })
            }
            "VecDeque" => {
                let (elem, ptr, head, len, cap) = self.deque_parts(ty, place)?;
                Some(Seq {
                    elem,
                    ptr,
                    len,
                    ring: Some((head, cap)),
                })
            }
            _ => self
                .cpp_sequence(ty, place)
                .or_else(|| self.cpp_span_seq(ty, place)),
        }
    }

    /// The data pointer and length of a string value (`&str`, `String`, `PathBuf`,
    /// `OsString`, C++ `std::string`).
    pub(crate) fn string_parts(&self, ty: TypeRef, place: &Place) -> Option<(u64, u64)> {
        let name = self.binary.type_info_shared(ty).ok()?.name.clone()?;
        if let Some((Some(elem), ptr, len)) = self.fat_parts(ty, place) {
            let is_u8 = self
                .binary
                .type_info_shared(elem)
                .is_ok_and(|i| i.name.as_deref() == Some("u8"));
            return (is_u8
                && !name
                    .trim_start_matches("&mut ")
                    .trim_start_matches('&')
                    .starts_with('['))
            .then_some((ptr, len));
        }
        self.string_vec(ty, place, &name)
            .or_else(|| self.cpp_string(ty, place))
    }

    /// The number of entries of a map or set.
    pub(crate) fn collection_len(&self, ty: TypeRef, place: &Place) -> Option<u64> {
        let name = self.binary.type_info_shared(ty).ok()?.name.clone()?;
        match short_name(&name) {
            "HashMap" | "HashSet" => self.hash_table(ty, place).map(|(_, _, _, items)| items),
            _ => self.cpp_collection_len(ty, place),
        }
    }

    pub(super) fn deque_parts(
        &self,
        ty: TypeRef,
        place: &Place,
    ) -> Option<(TypeRef, u64, u64, u64, u64)> {
        let (ht, hp) = self.at(ty, place, &["head"])?;
        let (lt, lp) = self.at(ty, place, &["len"])?;
        let (bt, bp) = self.at(ty, place, &["buf"])?;
        let (ct, cp) = self.at(bt, &bp, &["inner", "cap"])?;
        let (ptr, _) = self.first_pointer(bt, &bp)?;
        let elem = self.template_param(ty, "T")?;
        Some((
            elem,
            ptr,
            self.uint(ht, &hp).ok()?,
            self.uint(lt, &lp).ok()?,
            self.uint(ct, &cp).ok()?,
        ))
    }
}
