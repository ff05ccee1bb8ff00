//! Access operators: `*`, `.`, `->`, `[]` and methods, through C, Rust and C++ library
//! types.

use super::*;

impl Env<'_> {
    pub(in crate::expr) fn deref(&self, v: &EVal) -> Result<EVal> {
        let (target, addr) = match self.shape(&v.ty)? {
            Shape::Ptr(t) => {
                if let Loc::Implicit { target, offset } = v.loc {
                    return self.implicit_target(target, offset, t);
                }
                (t, le_u64(&self.bytes(v)?))
            }
            Shape::Array { elem, .. } => match v.loc {
                Loc::Mem(a) => (elem, a),
                Loc::Val(_) | Loc::Implicit { .. } => return Self::err("array is not in memory"),
            },
            _ => {
                // `*` and `->` on a smart pointer or an optional, as their operators do.
                if let Some(found) = self.cpp_deref(v)? {
                    return Ok(found);
                }
                if let Some(missing) = self.cpp_missing_rule(v, "*")? {
                    return Self::err(missing);
                }
                return Self::err("cannot dereference a value that is not a pointer");
            }
        };
        if addr == 0 {
            return Self::err("cannot dereference a null pointer");
        }
        if matches!(target, ETy::Void) {
            return Self::err("cannot dereference a 'void *'");
        }
        Ok(EVal {
            ty: target,
            loc: Loc::Mem(addr),
        })
    }

    /// `*v` for the views (a synthetic pointer's child).
    pub(crate) fn deref_value(&self, v: &EVal) -> Result<EVal> {
        self.deref(v)
    }

    /// What a synthetic pointer points to: `offset` bytes into the variable or literal
    /// whose DIE is at `target`, as a `ty`, wherever that variable is at the pc.
    pub(in crate::expr) fn implicit_target(
        &self,
        target: u64,
        offset: i64,
        ty: ETy,
    ) -> Result<EVal> {
        let off = u64::try_from(offset)
            .map_err(|_| Error::Eval("a synthetic pointer before its object".into()))?;
        let size = self.size_of(&ty)?;
        let slice = |bytes: &[u8]| -> Result<EVal> {
            let from = usize::try_from(off).unwrap_or(usize::MAX);
            let v = bytes
                .get(from..from.saturating_add(size as usize))
                .ok_or_else(|| Error::Eval("a synthetic pointer past its object".into()))?;
            Ok(EVal {
                ty: ty.clone(),
                loc: Loc::Val(v.to_vec()),
            })
        };
        let pc = self.bias.to_file(RuntimeAddr(self.pc));
        match self.binary.variable_location_at(target, pc) {
            symbols::VariableLocation::Const(bytes) => slice(&bytes),
            symbols::VariableLocation::OptimizedOut => {
                Self::err("the object of the synthetic pointer is optimized out")
            }
            symbols::VariableLocation::Expr(expr) => {
                let pieces = self
                    .ctx_pieces(&expr)
                    .map_err(|e| Error::Eval(format!("the synthetic pointer's object: {e}")))?;
                match pieces.as_slice() {
                    [p] if p.size_bits.is_none() && p.bit_offset.is_none() => match &p.location {
                        symbols::PieceLocation::Memory(a) => {
                            return Ok(EVal {
                                ty,
                                loc: Loc::Mem(a.0.wrapping_add(off)),
                            })
                        }
                        symbols::PieceLocation::ImplicitPointer {
                            target,
                            byte_offset,
                        } if off == 0 => {
                            return Ok(EVal {
                                ty,
                                loc: Loc::Implicit {
                                    target: *target,
                                    offset: *byte_offset,
                                },
                            })
                        }
                        _ => {}
                    },
                    _ => {}
                }
                let want = usize::try_from(off.saturating_add(size)).unwrap_or(usize::MAX);
                let bytes = symbols::read_pieces(&pieces, want, self.mem, self.regs)
                    .map_err(|e| Error::Eval(format!("the synthetic pointer's object: {e}")))?;
                slice(&bytes)
            }
        }
    }

    pub(in crate::expr) fn member(&self, v: &EVal, name: &str) -> Result<EVal> {
        let Shape::Composite { members } = self.shape(&v.ty)? else {
            return Self::err(format!(
                "cannot take member '{name}' of a value that is not a struct or union"
            ));
        };
        if let Some(found) = self.find_member(v, &members, name, 0)? {
            return Ok(found);
        }
        // Rust names tuple fields `__0`.
        if name.bytes().all(|b| b.is_ascii_digit()) {
            if let Some(found) = self.find_member(v, &members, &format!("__{name}"), 0)? {
                return Ok(found);
            }
        }
        // A member of the most-derived class of a polymorphic object (as lldb-dap's
        // dynamic values; gdb wants a cast).
        if let (ETy::Dwarf(t), Loc::Mem(addr)) = (&v.ty, &v.loc) {
            if let Some((derived, at)) = self.renderer().cpp_dynamic(*t, *addr) {
                let d = EVal {
                    ty: ETy::Dwarf(derived),
                    loc: Loc::Mem(at),
                };
                if let Shape::Composite { members } = self.shape(&d.ty)? {
                    if let Some(found) = self.find_member(&d, &members, name, 0)? {
                        return Ok(found);
                    }
                }
            }
        }
        if let Some(found) = self.static_member(v, name)? {
            return Ok(found);
        }
        Self::err(format!("there is no member named '{name}'"))
    }

    /// A renderer over this environment's memory (for the language helpers).
    pub(in crate::expr) fn renderer(&self) -> crate::values::Renderer<'_> {
        crate::values::Renderer {
            binary: self.binary,
            bias: self.bias,
            mem: self.mem,
            bounds: None,
            languages: &crate::rust::LANGUAGES,
        }
    }

    pub(in crate::expr) fn place_of(v: &EVal) -> crate::values::Place {
        match &v.loc {
            Loc::Mem(a) => crate::values::Place::Memory(*a),
            Loc::Val(b) => crate::values::Place::Bytes(Arc::from(b.as_slice()), 0),
            // Its bytes are nowhere: read as optimized out, never as a number.
            Loc::Implicit { .. } => crate::values::Place::nowhere(8),
        }
    }

    /// Whether a value's type comes from Rust or C++ (whose references index and
    /// compare through their pointee).
    pub(in crate::expr) fn is_foreign(&self, ty: &ETy) -> bool {
        let ETy::Dwarf(t) = ty else { return false };
        matches!(
            self.binary.type_language(*t),
            Ok(Some(symbols::Language::Rust | symbols::Language::Cpp))
        )
    }

    pub(in crate::expr) fn is_rust(&self, ty: &ETy) -> bool {
        let ETy::Dwarf(t) = ty else { return false };
        matches!(
            self.binary.type_language(*t),
            Ok(Some(symbols::Language::Rust))
        )
    }

    /// Follows C++ references (`T &`, `T &&`, through typedefs and qualifiers) to the
    /// value they refer to; pointers stay pointers.
    pub(in crate::expr) fn peel_references(&self, mut v: EVal) -> Result<EVal> {
        for _ in 0..8 {
            let ETy::Dwarf(t) = v.ty else { break };
            match resolve(self.binary, t).map_err(Error::Eval)?.kind {
                TypeKind::Reference { .. } => v = self.deref(&v)?,
                _ => break,
            }
        }
        Ok(v)
    }

    /// Follows pointers (references, `Box`) to a non-pointer value.
    pub(in crate::expr) fn auto_deref(&self, mut v: EVal) -> Result<EVal> {
        for _ in 0..8 {
            match self.shape(&v.ty)? {
                Shape::Ptr(t) if !matches!(t, ETy::Void) => v = self.deref(&v)?,
                _ => break,
            }
        }
        Ok(v)
    }

    /// The elements of a Rust `Vec`, `VecDeque`, slice or C++ `std::vector`:
    /// element type, buffer, length and ring (head, capacity).
    pub(in crate::expr) fn sequence(&self, v: &EVal) -> Result<Option<crate::rust::Seq>> {
        let ETy::Dwarf(t) = v.ty else { return Ok(None) };
        Ok(self
            .renderer()
            .sequence_parts(self.class_type(t), &Self::place_of(v)))
    }

    /// The class a value's type names, through typedefs and qualifiers (a `const
    /// std::vector<T> &` parameter's vector) and from a declaration to its definition:
    /// what the library rules recognise by name.
    pub(in crate::expr) fn class_type(&self, t: TypeRef) -> TypeRef {
        resolve(self.binary, t).ok().and_then(|r| r.id).unwrap_or(t)
    }

    pub(in crate::expr) fn element(&self, seq: &crate::rust::Seq, i: i128) -> Result<EVal> {
        if i < 0 || i as u64 >= seq.len {
            return Self::err(format!(
                "index out of bounds: the len is {} but the index is {i}",
                seq.len
            ));
        }
        let stride = self.binary.type_size(seq.elem).ok().flatten().unwrap_or(0);
        let idx = match seq.ring {
            Some((head, cap)) if cap > 0 => head.wrapping_add(i as u64) % cap,
            _ => i as u64,
        };
        Ok(EVal {
            ty: ETy::Dwarf(seq.elem),
            loc: Loc::Mem(seq.ptr.wrapping_add(idx.wrapping_mul(stride))),
        })
    }

    /// `len()` (and `size()` for C++) of strings and collections; the C++ library
    /// methods [`Env::cpp_method`] knows.
    pub(in crate::expr) fn method(&self, v: &EVal, method: &str) -> Result<EVal> {
        if let Some(found) = self.cpp_method(v, method)? {
            return Ok(found);
        }
        if !matches!(method, "len" | "size") {
            return Self::err(format!(
                "no method '{method}' (len(), size(), empty(), front(), back(), value(), \
                 has_value(), get() and use_count() are supported)"
            ));
        }
        if let Some(bytes) = self.string_bytes(v)? {
            return Ok(int_val(bytes.len() as i128, ULONG));
        }
        let v = self.auto_deref(v.clone())?;
        if let Shape::Array { .. } = self.shape(&v.ty)? {
            let n = match &v.ty {
                ETy::Dwarf(t) | ETy::SubArray(t, _) => {
                    let dim = match v.ty {
                        ETy::SubArray(_, d) => d,
                        _ => 0,
                    };
                    match resolve(self.binary, *t).map_err(Error::Eval)?.kind {
                        TypeKind::Array { dims, .. } => match dims.get(dim).map(|d| &d.count) {
                            Some(ArrayBound::Count(n)) => *n,
                            _ => return Self::err("the array's length is unknown"),
                        },
                        _ => 0,
                    }
                }
                _ => 0,
            };
            return Ok(int_val(i128::from(n), ULONG));
        }
        if let Some(seq) = self.sequence(&v)? {
            return Ok(int_val(i128::from(seq.len), ULONG));
        }
        if let ETy::Dwarf(t) = v.ty {
            let t = self.class_type(t);
            if let Some(n) = self.renderer().collection_len(t, &Self::place_of(&v)) {
                return Ok(int_val(i128::from(n), ULONG));
            }
        }
        Self::err(format!(
            "cannot take {method}() of a '{}'",
            self.type_name(&v.ty)
        ))
    }

    /// A value the renderer found, as an expression value.
    pub(in crate::expr) fn value_at(
        &self,
        ty: TypeRef,
        place: crate::values::Place,
    ) -> Result<EVal> {
        let loc = match place {
            crate::values::Place::Memory(a) => Loc::Mem(a),
            crate::values::Place::Bytes(b, off) => {
                let size = self.binary.type_size(ty).ok().flatten().unwrap_or(0) as usize;
                Loc::Val(
                    b.get(off..off.saturating_add(size))
                        .ok_or_else(|| Error::Eval("value out of range".into()))?
                        .to_vec(),
                )
            }
            place @ crate::values::Place::Partial(..) => {
                let size = self.binary.type_size(ty).ok().flatten().unwrap_or(0);
                Loc::Val(place.read(self.mem, size).map_err(Error::Eval)?)
            }
        };
        Ok(EVal {
            ty: ETy::Dwarf(ty),
            loc,
        })
    }

    /// The C++ library value (through references) with its DWARF type and place.
    pub(in crate::expr) fn cpp_value(
        &self,
        v: &EVal,
    ) -> Result<Option<(EVal, TypeRef, crate::values::Place)>> {
        if !self.is_foreign(&v.ty) || self.is_rust(&v.ty) {
            return Ok(None);
        }
        let v = self.auto_deref(v.clone())?;
        let ETy::Dwarf(t) = v.ty else { return Ok(None) };
        let place = Self::place_of(&v);
        Ok(Some((v, self.class_type(t), place)))
    }

    /// `container[key]` on a deque, map or unordered_map (gdb's xmethods' meaning,
    /// read from memory); `None` for other values.
    pub(in crate::expr) fn cpp_index(&self, b: &EVal, i: &EVal) -> Result<Option<EVal>> {
        let Some((_, t, place)) = self.cpp_value(b)? else {
            return Ok(None);
        };
        let bytes = self.string_bytes(i)?;
        let key = match &bytes {
            Some(b) => crate::cpp::CppKey::Bytes(b),
            None => match self.load_num(i)? {
                Num::I(n, _) => crate::cpp::CppKey::Int(n),
                _ => return Self::err("a container's key must be an integer or a string"),
            },
        };
        match self.renderer().cpp_index(t, &place, &key) {
            None => Ok(None),
            Some(Err(e)) => Self::err(e),
            Some(Ok((ty, p))) => self.value_at(ty, p).map(Some),
        }
    }

    /// For a C++ class value that no library rule handles for `op` (`[]`, `*`), the
    /// error saying so and which types have the rule; `None` for other values (and for
    /// the containers whose `[]` the sequence path reads).
    pub(in crate::expr) fn cpp_missing_rule(&self, v: &EVal, op: &str) -> Result<Option<String>> {
        let Some((inner, t, _)) = self.cpp_value(v)? else {
            return Ok(None);
        };
        if !matches!(
            resolve(self.binary, t).map(|r| r.kind),
            Ok(TypeKind::Composite { .. })
        ) || (op == "[]" && self.sequence(&inner)?.is_some())
        {
            return Ok(None);
        }
        let name = self.renderer().gdb_name(t);
        let have = if op == "[]" {
            "std::vector, std::deque, std::array, std::map and std::unordered_map"
        } else {
            "std::unique_ptr, std::shared_ptr, std::weak_ptr, std::optional and the \
             iterators of std::vector, std::list, std::map and std::set"
        };
        Ok(Some(format!(
            "no rule for `{op}` on '{name}': tandem reads `{op}` of {have}"
        )))
    }

    /// `*` of a `unique_ptr`, `shared_ptr` or `optional`; `None` for other values.
    pub(in crate::expr) fn cpp_deref(&self, v: &EVal) -> Result<Option<EVal>> {
        let Some((_, t, place)) = self.cpp_value(v)? else {
            return Ok(None);
        };
        let r = self.renderer();
        match r.cpp_iterator_target(t, &place) {
            Some(Err(e)) => return Self::err(e),
            Some(Ok((ty, p))) => return self.value_at(ty, p).map(Some),
            None => {}
        }
        if let Some((pt, pp)) = r.cpp_smart_pointer(t, &place) {
            let p = self.value_at(pt, pp)?;
            return self.deref(&p).map(Some);
        }
        match r.cpp_optional_value(t, &place) {
            None => Ok(None),
            Some(Err(e)) => Self::err(e),
            Some(Ok(None)) => Self::err("the optional holds no value"),
            Some(Ok(Some((ty, p)))) => self.value_at(ty, p).map(Some),
        }
    }

    /// The C++ library methods gdb's xmethods provide, read from memory: `empty()`,
    /// `front()`, `back()`, `has_value()`, `value()`, `get()`, `use_count()`.
    pub(in crate::expr) fn cpp_method(&self, v: &EVal, method: &str) -> Result<Option<EVal>> {
        let Some((inner, t, place)) = self.cpp_value(v)? else {
            return Ok(None);
        };
        let r = self.renderer();
        match method {
            "empty" => {
                let n = self.method(&inner, "size")?;
                let Num::I(n, _) = self.load_num(&n)? else {
                    return Self::err("size() is not a number");
                };
                // A `bool`, as gdb's xmethod answers (`true`/`false`).
                Ok(Some(EVal {
                    ty: ETy::Bool,
                    loc: Loc::Val(vec![u8::from(n == 0)]),
                }))
            }
            "front" | "back" => match r.cpp_end(t, &place, method == "back") {
                None => Ok(None),
                Some(Err(e)) => Self::err(e),
                Some(Ok((ty, p))) => self.value_at(ty, p).map(Some),
            },
            "has_value" => match r.cpp_optional_engaged(t, &place) {
                None => Ok(None),
                Some((ty, p)) => self.value_at(ty, p).map(Some),
            },
            "value" => match r.cpp_optional_value(t, &place) {
                None => Ok(None),
                Some(Err(e)) => Self::err(e),
                Some(Ok(None)) => Self::err("bad optional access: the optional holds no value"),
                Some(Ok(Some((ty, p)))) => self.value_at(ty, p).map(Some),
            },
            "get" => match r.cpp_smart_pointer(t, &place) {
                None => Ok(None),
                Some((ty, p)) => self.value_at(ty, p).map(Some),
            },
            "use_count" => Ok(r.cpp_use_count(t, &place).map(|n| int_val(n, LONG))),
            _ => Ok(None),
        }
    }

    /// The bytes of a string value: a literal, a Rust `&str`/`String`/`PathBuf`, a
    /// C++ `std::string`, or a C `char *`; `None` for other values.
    pub(in crate::expr) fn string_bytes(&self, v: &EVal) -> Result<Option<Vec<u8>>> {
        if let (ETy::Str, Loc::Val(b)) = (&v.ty, &v.loc) {
            return Ok(Some(b.clone()));
        }
        if let ETy::Dwarf(t) = v.ty {
            if let Ok(TypeKind::Pointer(Some(target))) = resolve(self.binary, t).map(|r| r.kind) {
                let is_char = resolve(self.binary, target).is_ok_and(|r| {
                    r.size == Some(1)
                        && matches!(
                            r.kind,
                            TypeKind::Base(BaseEncoding::SignedChar | BaseEncoding::UnsignedChar)
                        )
                });
                if is_char && !self.is_foreign(&v.ty) {
                    let addr = le_u64(&self.bytes(v)?);
                    return crate::values::read_c_string(self.mem, addr)
                        .map(|(s, _)| Some(s))
                        .map_err(|()| {
                            Error::Eval(format!("cannot access memory at address {addr:#x}"))
                        });
                }
            }
        }
        if !self.is_foreign(&v.ty) {
            return Ok(None);
        }
        let v = self.auto_deref(v.clone())?;
        let ETy::Dwarf(t) = v.ty else { return Ok(None) };
        let Some((ptr, len)) = self.renderer().string_parts(t, &Self::place_of(&v)) else {
            return Ok(None);
        };
        if len > 1 << 20 {
            return Self::err("the string is too long to compare");
        }
        let mut buf = vec![0u8; len as usize];
        if len > 0 {
            self.mem
                .read(RuntimeAddr(ptr), &mut buf)
                .map_err(|_| Error::Eval(format!("cannot access memory at address {ptr:#x}")))?;
        }
        Ok(Some(buf))
    }

    pub(in crate::expr) fn find_member(
        &self,
        v: &EVal,
        members: &[symbols::Member],
        name: &str,
        depth: u32,
    ) -> Result<Option<EVal>> {
        if depth > 8 {
            return Ok(None);
        }
        for m in members {
            let Some(ty) = m.ty else { continue };
            if m.name.as_deref() == Some(name) {
                if m.bitfield.is_some() {
                    let r = resolve(self.binary, ty).map_err(Error::Eval)?;
                    let place = Self::place_of(v);
                    let renderer = crate::values::Renderer {
                        binary: self.binary,
                        bias: self.bias,
                        mem: self.mem,
                        bounds: None,
                        languages: &crate::rust::LANGUAGES,
                    };
                    let bytes = renderer.member_bytes(m, &r, &place).map_err(Error::Eval)?;
                    return Ok(Some(EVal {
                        ty: ETy::Dwarf(ty),
                        loc: Loc::Val(bytes),
                    }));
                }
                return Ok(Some(self.at_offset(v, ty, m.byte_offset)?));
            }
            if m.name.is_none() {
                // Anonymous struct or union: its members are ours.
                let inner = self.at_offset(v, ty, m.byte_offset)?;
                if let Shape::Composite { members } = self.shape(&inner.ty)? {
                    if let Some(found) = self.find_member(&inner, &members, name, depth + 1)? {
                        return Ok(Some(found));
                    }
                }
            }
        }
        Ok(None)
    }

    pub(in crate::expr) fn at_offset(&self, v: &EVal, ty: TypeRef, offset: u64) -> Result<EVal> {
        let loc = match &v.loc {
            Loc::Implicit { .. } => return Self::err("a synthetic pointer has no members"),
            Loc::Mem(a) => Loc::Mem(a.wrapping_add(offset)),
            Loc::Val(b) => {
                let size = self.binary.type_size(ty).ok().flatten().unwrap_or(0) as usize;
                let off = offset as usize;
                Loc::Val(
                    b.get(off..off.saturating_add(size))
                        .ok_or_else(|| Error::Eval("member out of range".into()))?
                        .to_vec(),
                )
            }
        };
        Ok(EVal {
            ty: ETy::Dwarf(ty),
            loc,
        })
    }
}
