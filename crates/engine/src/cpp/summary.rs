//! gdb's summary texts for the sequence containers and the names its printers put in
//! them: `std::vector of length 3, capacity 4 = {…}`, `std::__cxx11::list = {[0] = 7}`,
//! the template argument of `std::unique_ptr<int>`.

use symbols::{TypeKind, TypeRef};

use super::{field, ITEMS};
use crate::rust::{Seq, Shown, Synth};
use crate::values::{Place, Renderer};

impl Renderer<'_> {
    /// A vector's capacity (`_M_end_of_storage - _M_start`), in elements.
    pub(super) fn cpp_capacity(&self, ty: TypeRef, place: &Place, seq: &Seq) -> Option<u64> {
        let (it, ip) = self.cpp_find(ty, place, "_M_impl")?;
        let (end, _) = self.ptr_at(it, &ip, "_M_end_of_storage")?;
        let size = self.binary.type_size(seq.elem).ok().flatten()?.max(1);
        end.checked_sub(seq.ptr).map(|n| n / size)
    }

    /// A template argument's name as gdb's printers write it (`int`, `Tagged`,
    /// `std::string`); `?` when the class has no such argument.
    pub(super) fn cpp_param_name(&self, ty: TypeRef, param: &str) -> String {
        match self.cpp_template_param(ty, param) {
            Some(t) => self.cpp_type_text(t),
            None => "?".into(),
        }
    }

    /// A type's name in C++ spelling: a class by its name (library classes as gdb
    /// names them), others as C names them.
    pub(super) fn cpp_type_text(&self, t: TypeRef) -> String {
        let info = self.binary.type_info_shared(t).ok();
        match info.as_deref() {
            Some(i) if matches!(i.kind, TypeKind::Composite { .. }) => {
                let name = i.name.clone().unwrap_or_else(|| "<anonymous>".into());
                if name == "basic_string<char, std::char_traits<char>, std::allocator<char> >" {
                    "std::string".into()
                } else if self
                    .class_name(t)
                    .is_some_and(|c| LIBRARY.contains(&c.as_str()))
                {
                    super::gdb_type_name(&name)
                } else {
                    name
                }
            }
            _ => self
                .binary
                .type_name(t)
                .unwrap_or_else(|_| "?".into())
                .replace(
                    "basic_string<char, std::char_traits<char>, std::allocator<char> >",
                    "std::string",
                ),
        }
    }

    /// A `std::list` or `std::forward_list` as gdb's printer shows it: the class's
    /// qualified name (with libstdc++'s `__cxx11` for `list`) and the elements as
    /// `[i] = v`; `empty std::forward_list` when there are none.
    pub(super) fn gdb_list(&self, ty: TypeRef, class: &str, elem: TypeRef, addrs: &[u64]) -> Shown {
        let name = if class == "list" && self.in_cxx11(ty) {
            "std::__cxx11::list".to_string()
        } else {
            format!("std::{class}")
        };
        let mut parts = Vec::new();
        let mut fields = Vec::new();
        for (i, a) in addrs.iter().enumerate() {
            if (i as u64) < ITEMS {
                let v = self.cpp_summary(elem, &Place::Memory(*a));
                parts.push(format!("[{i}] = {v}"));
            }
            fields.push(field(&format!("[{i}]"), elem, Place::Memory(*a)));
        }
        if addrs.len() as u64 > ITEMS {
            parts.push("...".into());
        }
        let text = if addrs.is_empty() {
            format!("empty {name}")
        } else {
            format!("{name} = {{{}}}", parts.join(", "))
        };
        Shown {
            text,
            synth: Some(Synth::Fields(fields)),
            address: None,
        }
    }

    /// Whether a class is declared in libstdc++'s `std::__cxx11` inline namespace.
    fn in_cxx11(&self, ty: TypeRef) -> bool {
        let ty = self.strip(ty);
        let Some(name) = self
            .binary
            .type_info_shared(ty)
            .ok()
            .and_then(|i| i.name.clone())
        else {
            return false;
        };
        self.binary
            .types_by_name(&format!("std::__cxx11::{name}"))
            .contains(&ty)
    }
}

/// The library classes whose DWARF names gdb writes with `std::` in front.
const LIBRARY: &[&str] = &[
    "basic_string",
    "vector",
    "map",
    "set",
    "list",
    "deque",
    "unordered_map",
    "unordered_set",
    "optional",
    "variant",
    "pair",
    "tuple",
    "array",
    "shared_ptr",
    "unique_ptr",
    "weak_ptr",
    "function",
    "basic_string_view",
];

/// gdb's text of a vector: `std::vector of length 2, capacity 4 = {6, 7}` (an error
/// text of a broken vector stays as it is).
pub(super) fn gdb_vector(mut shown: Shown, capacity: Option<u64>) -> Shown {
    let len = match &shown.synth {
        Some(Synth::Elements { len, .. }) => *len,
        _ => return shown,
    };
    let capacity = capacity.unwrap_or(len);
    shown.text = if len == 0 {
        format!("std::vector of length 0, capacity {capacity}")
    } else {
        format!(
            "std::vector of length {len}, capacity {capacity} = {}",
            shown.text
        )
    };
    shown
}
