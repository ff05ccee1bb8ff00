//! The value a function returned, read from the registers the SysV x86-64 ABI puts it
//! in: integers, pointers and enums in rax (rdx:rax for 16 bytes), `float`/`double` in
//! xmm0, `long double` in st(0), structs and unions of up to 16 bytes split into
//! eightbytes classified INTEGER (rax, then rdx) or SSE (xmm0, then xmm1), and larger
//! ones in memory at the address the callee returns in rax.

use std::sync::Arc;

use symbols::{BaseEncoding, Binary, MemoryReader, TypeKind, TypeRef};

use crate::values::{resolve, Place, Renderer, Value};

/// The registers a return value can live in, as captured at the return address.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ReturnRegs {
    pub rax: u64,
    pub rdx: u64,
    /// The low 8 bytes of xmm0 and xmm1.
    pub xmm: [u64; 2],
    /// st(0) in the 80-bit x87 format, padded to 16 bytes.
    pub st0: [u8; 16],
}

/// How deep a struct's members are followed when classifying it.
const MAX_DEPTH: usize = 16;
/// Most array elements visited when classifying (a 16-byte object has at most 16).
const MAX_ELEMENTS: u64 = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    None,
    Integer,
    Sse,
}

/// The class of each eightbyte of a value of type `ty`, or `None` when the value is
/// returned in memory (or cannot be classified).
fn classify(binary: &Binary, ty: TypeRef, size: u64) -> Option<[Class; 2]> {
    if size == 0 || size > 16 {
        return None;
    }
    let mut classes = [Class::None; 2];
    walk(binary, ty, 0, &mut classes, 0).then_some(classes)
}

fn merge(classes: &mut [Class; 2], offset: u64, class: Class) -> bool {
    let Some(slot) = classes.get_mut((offset / 8) as usize) else {
        return false;
    };
    *slot = match (*slot, class) {
        (Class::Integer, _) | (_, Class::Integer) => Class::Integer,
        _ => Class::Sse,
    };
    true
}

/// Classifies the scalars of `ty` placed at `offset`; `false` means MEMORY.
fn walk(binary: &Binary, ty: TypeRef, offset: u64, classes: &mut [Class; 2], depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    let Ok(r) = resolve(binary, ty) else {
        return false;
    };
    let size = r.size.unwrap_or(0);
    match &r.kind {
        TypeKind::Base(BaseEncoding::Float) => {
            // long double is X87 class: inside an aggregate that means MEMORY.
            size <= 8 && offset % size.max(1) == 0 && merge(classes, offset, Class::Sse)
        }
        TypeKind::Base(BaseEncoding::ComplexFloat) => {
            let half = size / 2;
            half > 0
                && half <= 8
                && merge(classes, offset, Class::Sse)
                && merge(classes, offset + half, Class::Sse)
        }
        TypeKind::Base(_)
        | TypeKind::Pointer(_)
        | TypeKind::Reference { .. }
        | TypeKind::Enum { .. }
        | TypeKind::PtrToMember(_) => {
            if size == 0 || offset % size.min(8) != 0 {
                return false;
            }
            (0..size.div_ceil(8)).all(|k| merge(classes, offset + 8 * k, Class::Integer))
        }
        TypeKind::Array { element, .. } => {
            let Some(element) = *element else {
                return false;
            };
            let Some(esize) = resolve(binary, element).ok().and_then(|e| e.size) else {
                return false;
            };
            if esize == 0 {
                return size == 0;
            }
            let count = size / esize;
            count <= MAX_ELEMENTS
                && (0..count).all(|i| walk(binary, element, offset + i * esize, classes, depth + 1))
        }
        TypeKind::Composite {
            members,
            declaration,
            variant_part,
            ..
        } => {
            if *declaration || variant_part.is_some() {
                return false;
            }
            members.iter().all(|m| match (m.bitfield, m.ty) {
                (Some(bf), _) => merge(
                    classes,
                    offset + m.byte_offset + bf.bit_offset / 8,
                    Class::Integer,
                ),
                (None, Some(t)) => walk(binary, t, offset + m.byte_offset, classes, depth + 1),
                (None, None) => false,
            })
        }
        _ => false,
    }
}

/// Renders the value a function of return type `ty` returned, named `name`. `None`
/// for `void`.
pub(crate) fn render(
    binary: &Arc<Binary>,
    bias: symbols::LoadBias,
    mem: &dyn MemoryReader,
    name: &str,
    ty: Option<TypeRef>,
    regs: &ReturnRegs,
) -> Option<Value> {
    let ty = ty?;
    let r = match resolve(binary, ty) {
        Ok(r) => r,
        Err(e) => {
            let type_name = binary.type_name(ty).unwrap_or_default();
            return Some(Value::error(name, type_name, e));
        }
    };
    if matches!(r.kind, TypeKind::Unspecified) {
        return None;
    }
    let size = r.size.unwrap_or(0);
    let place = if matches!(r.kind, TypeKind::Base(BaseEncoding::Float)) && size > 8 {
        Place::Bytes(Arc::from(&regs.st0[..]), 0)
    } else {
        match classify(binary, ty, size) {
            Some(classes) => {
                let mut bytes = [0u8; 16];
                let (mut ints, mut sses) = ([regs.rax, regs.rdx].into_iter(), regs.xmm.into_iter());
                for (k, class) in classes.iter().enumerate() {
                    let word = match class {
                        Class::Integer => ints.next(),
                        Class::Sse => sses.next(),
                        Class::None => None,
                    };
                    if let Some(w) = word {
                        bytes[k * 8..k * 8 + 8].copy_from_slice(&w.to_le_bytes());
                    }
                }
                Place::Bytes(Arc::from(&bytes[..size as usize]), 0)
            }
            // Returned in memory: the callee hands back the buffer's address in rax.
            None => Place::Memory(regs.rax),
        }
    };
    let renderer = Renderer {
        binary,
        bias,
        mem,
        bounds: None,
        languages: &crate::rust::LANGUAGES,
    };
    let (mut value, _) = renderer.render(name, ty, place, 0);
    // The value is a snapshot of registers: it has no children to page through.
    value.child_count = None;
    value.children = None;
    Some(value)
}
