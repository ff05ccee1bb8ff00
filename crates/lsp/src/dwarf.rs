//! Small questions several features ask of a binary's DWARF: a type without its typedefs and
//! qualifiers, a type by name.

use symbols::{Binary, Type, TypeKind, TypeRef};

/// Peels typedefs and qualifiers to the type that has the layout.
pub(crate) fn strip(binary: &Binary, mut t: TypeRef) -> Option<Type> {
    for _ in 0..16 {
        let ty = binary.type_info(t).ok()?;
        match ty.kind {
            TypeKind::Typedef(Some(x))
            | TypeKind::Const(Some(x))
            | TypeKind::Volatile(Some(x))
            | TypeKind::Atomic(Some(x)) => t = x,
            _ => return Some(ty),
        }
    }
    None
}

pub(crate) fn named_type(binary: &Binary, name: &str) -> Option<Type> {
    binary
        .types_by_name(name)
        .into_iter()
        .find_map(|t| binary.type_info(t).ok())
}
