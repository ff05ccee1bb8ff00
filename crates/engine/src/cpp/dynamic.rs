//! Dynamic types of C++ objects, as gdb's `set print object on` finds them: an object
//! of a polymorphic class starts (in its primary base) with a vtable pointer; the
//! vtable's ELF symbol (`_ZTV7Derived`, `vtable for Derived`) names the most-derived
//! class, and the slot two words before the address point holds the offset from this
//! subobject to the whole object.

use symbols::{RuntimeAddr, TypeKind, TypeRef};

use crate::values::{le_u64, resolve, Place, Renderer};

impl Renderer<'_> {
    /// The most-derived class and address of the object of class `ty` at `addr`;
    /// `None` when the class is not polymorphic, the vtable is not a known class's, or
    /// the object already is of that class.
    pub(crate) fn cpp_dynamic(&self, ty: TypeRef, addr: u64) -> Option<(TypeRef, u64)> {
        if addr == 0 {
            return None;
        }
        let ty = self.strip(ty);
        if !self.has_vptr(ty, 0) {
            return None;
        }
        let read = |a: u64| Place::Memory(a).read(self.mem, 8).ok().map(|b| le_u64(&b));
        let vptr = read(addr)?;
        let file = self.bias.to_file(RuntimeAddr(vptr));
        let (symbol, _) = self.binary.data_symbol_containing(file)?;
        // The demangler spells it `{vtable(Derived)}` (or `vtable for Derived`).
        let class = symbol
            .strip_prefix("vtable for ")
            .or_else(|| symbol.strip_prefix("{vtable(")?.strip_suffix(")}"))?;
        let top = read(vptr.checked_sub(16)?)? as i64;
        let object = addr.checked_add_signed(top)?;
        let same = self
            .binary
            .type_info_shared(ty)
            .ok()
            .and_then(|i| i.name.clone())
            .is_some_and(|n| n == class || class.ends_with(&format!("::{n}")));
        if same && top == 0 {
            return None;
        }
        let derived = self.binary.types_by_name(class).into_iter().find(|&d| {
            resolve(self.binary, d).is_ok_and(|r| {
                matches!(
                    r.kind,
                    TypeKind::Composite {
                        declaration: false,
                        ..
                    }
                )
            })
        })?;
        Some((derived, object))
    }

    /// Whether a class holds a vtable pointer (its own or a base's).
    fn has_vptr(&self, ty: TypeRef, depth: u32) -> bool {
        if depth > 8 {
            return false;
        }
        let Ok(r) = resolve(self.binary, ty) else {
            return false;
        };
        let TypeKind::Composite { members, .. } = r.kind else {
            return false;
        };
        members.iter().any(|m| {
            m.name.as_deref().is_some_and(|n| n.starts_with("_vptr"))
                || (m.is_base
                    && m.ty
                        .is_some_and(|b| self.has_vptr(self.strip(b), depth + 1)))
        })
    }
}
