//! Values rendered for C (Rust in `rust.rs`, C++ library types in `cpp.rs`): a plain tree of [`Value`]s whose structured nodes have a
//! [`ValueRef`] the front-end pages through. One unreadable node renders as an error
//! value beside its readable siblings.

use std::sync::Arc;

use symbols::{ArrayBound, BaseEncoding, Binary, MemoryReader, RuntimeAddr, TypeKind, TypeRef};

use crate::ids::ValueRef;

/// Floating-point text as gdb prints it.
mod float;
mod wide;
use float::float_text;
pub(crate) use float::format_g;
use wide::{wide_array_text, wide_char_text, wide_pointer_text, wide_prefix};

/// Longest string read behind a `char *`.
const MAX_STRING: usize = 200;
/// Largest object read at once (bigger arrays are paged by address).
const MAX_READ: u64 = 1 << 20;
/// How many elements or members an inline summary shows.
/// gdb's `print elements` default: at most this many elements of an array in its text.
const PRINT_MAX: usize = 200;
/// gdb's `repeat_count_threshold`: a run of more equal elements is `V <repeats N times>`.
const REPEATS: usize = 10;
/// Structs in structs (or arrays) deeper than this are `{...}` in a value's text.
const MAX_NEST: usize = 8;
/// How deep typedef/qualifier chains are followed.
const MAX_CHAIN: usize = 32;

/// One node of a variables tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Value {
    /// The variable's or member's name (`[3]` for elements, `*p` for a pointee).
    pub name: String,
    /// The C type as written (`int`, `struct point *`, `char [16]`).
    pub type_name: String,
    /// The rendered value, or the error (`<optimized out>`, `<error: ...>`).
    pub rendered: String,
    /// Children (members, elements, pointee) when the value is structured.
    pub children: Option<ValueRef>,
    /// How many children there are, when known (arrays are paged).
    pub child_count: Option<u64>,
    /// Whether the children are elements `[0]`, `[1]`… (arrays, `Vec`, slices,
    /// `std::vector`, sets) that a front-end pages, rather than named members.
    pub indexed: bool,
    /// Whether `rendered` is an error rather than a value.
    pub error: bool,
    /// The address of the value in memory, when it has one.
    pub address: Option<u64>,
}

impl Value {
    pub(crate) fn error(name: &str, type_name: String, message: String) -> Value {
        Value {
            name: name.to_string(),
            type_name,
            rendered: message,
            children: None,
            child_count: None,
            indexed: false,
            error: true,
            address: None,
        }
    }
}

/// Where the bytes of a value are.
#[derive(Clone, Debug)]
pub(crate) enum Place {
    /// In the debuggee's memory.
    Memory(u64),
    /// Already read (registers, constants, computed values).
    Bytes(Arc<[u8]>, usize),
    /// Already read, with some bytes optimized out (`false` in the mask): a read that
    /// touches one is `<optimized out>`, so only the members they hold show that.
    Partial(Arc<[u8]>, Arc<[bool]>, usize),
}

impl Place {
    /// `len` bytes that are nowhere (every read is `<optimized out>`).
    pub(crate) fn nowhere(len: usize) -> Place {
        Place::Partial(Arc::from(vec![0u8; len]), Arc::from(vec![false; len]), 0)
    }

    pub(crate) fn offset(&self, by: u64) -> Place {
        match self {
            Place::Memory(a) => Place::Memory(a.wrapping_add(by)),
            Place::Bytes(b, off) => Place::Bytes(b.clone(), off.saturating_add(by as usize)),
            Place::Partial(b, k, off) => {
                Place::Partial(b.clone(), k.clone(), off.saturating_add(by as usize))
            }
        }
    }

    pub(crate) fn address(&self) -> Option<u64> {
        match self {
            Place::Memory(a) => Some(*a),
            Place::Bytes(..) | Place::Partial(..) => None,
        }
    }

    pub(crate) fn read(&self, mem: &dyn MemoryReader, len: u64) -> Result<Vec<u8>, String> {
        if len > MAX_READ {
            return Err(format!("<error: object of {len} bytes is too large>"));
        }
        let len = len as usize;
        match self {
            Place::Memory(a) => {
                let mut buf = vec![0u8; len];
                mem.read(RuntimeAddr(*a), &mut buf)
                    .map_err(|_| format!("<error: cannot access memory at address {a:#x}>"))?;
                Ok(buf)
            }
            Place::Bytes(b, off) => b
                .get(*off..off.saturating_add(len))
                .map(<[u8]>::to_vec)
                .ok_or_else(|| "<error: value is incomplete>".to_string()),
            Place::Partial(b, known, off) => {
                let range = *off..off.saturating_add(len);
                match known.get(range.clone()) {
                    Some(k) if k.iter().all(|k| *k) => {
                        Ok(b.get(range).map(<[u8]>::to_vec).unwrap_or_default())
                    }
                    Some(_) => Err("<optimized out>".to_string()),
                    None => Err("<error: value is incomplete>".to_string()),
                }
            }
        }
    }
}

/// A structured value whose children can be listed later.
#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub binary: Arc<Binary>,
    pub ty: TypeRef,
    /// How many outer array dimensions were already indexed.
    pub dim: usize,
    pub place: Place,
    /// The expression that names this node (for children's names: `p->x`).
    pub path: String,
    /// The element count of an array, as computed when it was rendered (VLAs).
    pub count: Option<u64>,
    /// Children made up by a language's renderer (a `Vec`'s heap elements, a map's
    /// entries, an enum's active variant) instead of the type's own members.
    pub synth: Option<Arc<dyn Synthetic>>,
}

/// A type seen through typedefs and qualifiers.
pub(crate) struct Resolved {
    pub kind: TypeKind,
    pub size: Option<u64>,
    /// The type reached (for what its kind does not say: a C++ enum's scope).
    pub id: Option<TypeRef>,
}

pub(crate) fn resolve(binary: &Binary, ty: TypeRef) -> Result<Resolved, String> {
    let mut t = ty;
    for _ in 0..MAX_CHAIN {
        let info = binary
            .type_info_shared(t)
            .map_err(|e| format!("<error: {e}>"))?;
        match &info.kind {
            TypeKind::Typedef(Some(x))
            | TypeKind::Const(Some(x))
            | TypeKind::Volatile(Some(x))
            | TypeKind::Restrict(Some(x))
            | TypeKind::Atomic(Some(x)) => t = *x,
            TypeKind::Typedef(None)
            | TypeKind::Const(None)
            | TypeKind::Volatile(None)
            | TypeKind::Restrict(None)
            | TypeKind::Atomic(None) => {
                return Ok(Resolved {
                    kind: TypeKind::Unspecified,
                    size: None,
                    id: None,
                })
            }
            TypeKind::Composite {
                declaration: true, ..
            } if binary.definition_of(t).is_some() => {
                // Declared only here, defined in another unit: its members are there.
                t = binary.definition_of(t).unwrap_or(t);
            }
            kind => {
                return Ok(Resolved {
                    kind: kind.clone(),
                    size: info.size,
                    id: Some(t),
                })
            }
        }
    }
    Err("<error: type chain too long>".into())
}

/// Evaluates a DWARF expression giving an array bound, in the frame of the value.
pub(crate) type BoundFn<'a> = dyn Fn(&ArrayBound) -> Option<u64> + 'a;

/// Renders one value and, when structured, the node for its children.
pub(crate) struct Renderer<'a> {
    pub binary: &'a Arc<Binary>,
    pub bias: symbols::LoadBias,
    pub mem: &'a dyn MemoryReader,
    /// Evaluates a variable-length array's bound in the frame (top-level values only).
    pub bounds: Option<&'a BoundFn<'a>>,
    /// The renderers of the languages that are not C (`crate::rust::LANGUAGES`).
    pub languages: &'a dyn Languages,
}

/// The renderers of languages whose values do not look like C's (Rust, C++ library
/// types). They are passed in through [`Renderer::languages`] rather than called by name,
/// because they are built on this module: a C struct's member may be a `std::string`, and a
/// Rust struct's field may be a plain integer, so each side renders through the other.
pub(crate) trait Languages: Sync {
    /// Renders `name: ty` at `place` in its own language; `None` leaves it to C.
    fn render(
        &self,
        r: &Renderer<'_>,
        name: &str,
        ty: TypeRef,
        place: &Place,
    ) -> Option<(Value, Option<Node>)>;
}

/// Children a language renderer made up for a node (a `Vec`'s heap elements, a map's
/// entries, an enum's active variant) instead of the type's own members.
pub(crate) trait Synthetic: std::fmt::Debug + Send + Sync {
    /// Renders the children `start..start+count`.
    fn children(
        &self,
        r: &Renderer<'_>,
        node: &Node,
        start: u64,
        count: Option<u64>,
    ) -> Vec<(Value, Option<Node>)>;
}

impl Renderer<'_> {
    /// Renders `name: ty` at `place`; the second result is the node for its children.
    pub(crate) fn render(
        &self,
        name: &str,
        ty: TypeRef,
        place: Place,
        dim: usize,
    ) -> (Value, Option<Node>) {
        if dim == 0 {
            if let Some(out) = self.languages.render(self, name, ty, &place) {
                return out;
            }
        }
        let type_name = self.type_name(ty, dim);
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
        match self.render_inner(ty, &place, dim) {
            Ok((text, count)) => {
                value.rendered = text;
                if let Some(count) = count {
                    value.child_count = Some(count);
                    value.indexed = matches!(
                        resolve(self.binary, ty).map(|r| r.kind),
                        Ok(TypeKind::Array { .. })
                    );
                    let node = Node {
                        binary: self.binary.clone(),
                        ty,
                        dim,
                        place,
                        path: name.to_string(),
                        count: Some(count),
                        synth: None,
                    };
                    return (value, Some(node));
                }
            }
            Err(e) => {
                value.rendered = e;
                value.error = true;
            }
        }
        (value, None)
    }

    fn type_name(&self, ty: TypeRef, dim: usize) -> String {
        let name = self
            .binary
            .type_name(ty)
            .unwrap_or_else(|_| "<unknown type>".into());
        if dim == 0 {
            return name;
        }
        // Drop the dimensions already indexed: `int [2][3]` → `int [3]`.
        let mut rest = name.as_str();
        let Some(open) = rest.find(" [") else {
            return name;
        };
        let base = &rest[..open];
        rest = &rest[open + 1..];
        for _ in 0..dim {
            if let Some(close) = rest.find(']') {
                rest = &rest[close + 1..];
            }
        }
        if rest.is_empty() {
            base.to_string()
        } else {
            format!("{base} {rest}")
        }
    }

    /// The rendered text and, for structured values, the number of children.
    fn render_inner(
        &self,
        ty: TypeRef,
        place: &Place,
        dim: usize,
    ) -> Result<(String, Option<u64>), String> {
        let r = resolve(self.binary, ty)?;
        if matches!(r.kind, TypeKind::Array { .. } | TypeKind::Composite { .. }) {
            // An aggregate at an unreadable address is one error, not one per member.
            let probe = r.size.unwrap_or(0).clamp(1, 4096);
            if let Place::Memory(_) = place {
                place.read(self.mem, probe)?;
            }
        }
        match &r.kind {
            TypeKind::Array { element, dims } => {
                // An array without a bound (a flexible array member, `int d[]`) is
                // shown by its address, as gdb shows it: its length is the program's
                // business.
                let unbounded = dims
                    .iter()
                    .skip(dim)
                    .any(|d| matches!(d.count, ArrayBound::Unknown));
                if let (true, Place::Memory(a)) = (unbounded, place) {
                    return Ok((format!("{a:#x}"), None));
                }
                // Inner dimensions of a VLA (`int a[n][m]`) are read from the frame;
                // one that cannot be read leaves the strides unknown.
                let dynamic = dims
                    .iter()
                    .enumerate()
                    .skip(dim + 1)
                    .any(|(i, _)| self.dim_len(dims, i).is_none());
                if dynamic {
                    return Err(
                        "<error: variable-length arrays of several dimensions are not supported>"
                            .into(),
                    );
                }
                let count = self.dim_count(dims, dim);
                let preview = self.array_summary(ty, *element, dims.len(), place, dim, count);
                Ok((preview, Some(count)))
            }
            TypeKind::Composite {
                kind,
                members,
                declaration,
                ..
            } => {
                if *declaration {
                    return Ok(("<incomplete type>".into(), None));
                }
                let count = members.len() as u64;
                let _ = kind;
                Ok((self.composite_summary(members, place), Some(count)))
            }
            TypeKind::Pointer(target) => {
                let bytes = place.read(self.mem, 8)?;
                let addr = le_u64(&bytes);
                let text = self.pointer_text(addr, *target);
                let derefable = addr != 0
                    && target.is_some_and(|t| {
                        resolve(self.binary, t).is_ok_and(|r| {
                            !matches!(r.kind, TypeKind::Unspecified | TypeKind::Function { .. })
                        })
                    });
                Ok((text, derefable.then_some(1)))
            }
            _ => {
                let size = r.size.unwrap_or(0);
                let bytes = place.read(self.mem, size)?;
                Ok((self.scalar_of(ty, &r, &bytes)?, None))
            }
        }
    }

    /// The element count of dimension `dim`, evaluating a VLA bound in the frame.
    fn dim_count(&self, dims: &[symbols::ArrayDim], dim: usize) -> u64 {
        self.dim_len(dims, dim).unwrap_or(0)
    }

    /// The element count of dimension `dim`; `None` when a VLA bound cannot be read.
    fn dim_len(&self, dims: &[symbols::ArrayDim], dim: usize) -> Option<u64> {
        let d = dims.get(dim)?;
        match &d.count {
            ArrayBound::Count(n) => Some(*n),
            ArrayBound::Unknown => None,
            bound @ (ArrayBound::Expr { upper_bound, .. }
            | ArrayBound::Variable { upper_bound, .. }) => {
                let v = self.bounds.and_then(|b| b(bound))?;
                Some(if *upper_bound {
                    (v as i64).saturating_sub(d.lower).saturating_add(1).max(0) as u64
                } else {
                    v
                })
            }
        }
    }

    /// Text of a scalar of type `ty` (resolved: `r`) from its bytes: a wide character
    /// type, which only its name tells apart, as one; else [`Renderer::scalar_text`].
    pub(crate) fn scalar_of(
        &self,
        ty: TypeRef,
        r: &Resolved,
        bytes: &[u8],
    ) -> Result<String, String> {
        if let (TypeKind::Base(enc), Some((prefix, _))) = (&r.kind, wide_prefix(self.binary, ty)) {
            if !bytes.is_empty() {
                let signed = matches!(enc, BaseEncoding::Signed | BaseEncoding::SignedChar);
                return Ok(wide_char_text(prefix, bytes, signed));
            }
        }
        self.scalar_text(r, bytes)
    }

    /// Text of a scalar (base, enum, pointer) from its bytes.
    pub(crate) fn scalar_text(&self, r: &Resolved, bytes: &[u8]) -> Result<String, String> {
        Ok(match &r.kind {
            TypeKind::Base(enc) => base_text(*enc, bytes),
            TypeKind::Enum {
                enumerators,
                flag_like,
                underlying,
            } => {
                let signed = underlying
                    .and_then(|u| resolve(self.binary, u).ok())
                    .is_some_and(|u| {
                        matches!(
                            u.kind,
                            TypeKind::Base(BaseEncoding::Signed | BaseEncoding::SignedChar)
                        )
                    });
                let v = int_value(bytes, signed);
                // gdb names a C++ enumerator by its scope (`ns::E::x`, `ns::x`).
                let scope =
                    r.id.and_then(|t| self.binary.enumerator_scope(t).ok().flatten());
                enum_text(enumerators, *flag_like, v, scope.as_deref().unwrap_or(""))
            }
            TypeKind::Pointer(target) => self.pointer_text(le_u64(bytes), *target),
            TypeKind::Unspecified => "void".into(),
            TypeKind::Function { .. } => "<function>".into(),
            _ => return Err("<error: not a scalar>".into()),
        })
    }

    /// A pointer as gdb prints it: its address, the symbol it points into (`<g_buf>`,
    /// `<g_arr+12>`, `<add(int, int)>`: gdb's `print symbol`), then for a `char` pointer
    /// the string there.
    fn pointer_text(&self, addr: u64, target: Option<TypeRef>) -> String {
        if addr == 0 {
            return "0x0".into();
        }
        let head = match self.symbol_for(addr) {
            Some(sym) => format!("{addr:#x} <{sym}>"),
            None => format!("{addr:#x}"),
        };
        let Some(target) = target else {
            return head;
        };
        if let Some((prefix, size)) = wide_prefix(self.binary, target) {
            return wide_pointer_text(self.mem, addr, &head, prefix, size);
        }
        let Ok(r) = resolve(self.binary, target) else {
            return head;
        };
        match r.kind {
            TypeKind::Base(BaseEncoding::SignedChar | BaseEncoding::UnsignedChar)
                if r.size == Some(1) =>
            {
                match read_c_string(self.mem, addr) {
                    Ok((s, complete)) => format!(
                        "{head} \"{}\"{}",
                        escape_str(&s),
                        if complete { "" } else { "..." }
                    ),
                    Err(()) => {
                        format!("{head} <error: cannot access memory at address {addr:#x}>")
                    }
                }
            }
            _ => head,
        }
    }

    /// The ELF symbol of this value's binary that `addr` (a runtime address) points into.
    fn symbol_for(&self, addr: u64) -> Option<String> {
        let file = self.bias.to_file(RuntimeAddr(addr));
        self.binary.symbolic(file)
    }

    /// An array's one-line text, as gdb prints it: at most [`PRINT_MAX`] elements (then
    /// `...`), a run of more than [`REPEATS`] equal elements as `V <repeats N times>`
    /// (counting as [`REPEATS`] towards the limit), inner dimensions and elements that are
    /// structs in full, `char` arrays as strings.
    fn array_summary(
        &self,
        ty: TypeRef,
        element: Option<TypeRef>,
        ndims: usize,
        place: &Place,
        dim: usize,
        count: u64,
    ) -> String {
        self.array_text(ty, element, ndims, place, dim, count, 0)
    }

    #[allow(clippy::too_many_arguments)]
    fn array_text(
        &self,
        ty: TypeRef,
        element: Option<TypeRef>,
        ndims: usize,
        place: &Place,
        dim: usize,
        count: u64,
        depth: usize,
    ) -> String {
        let Some(element) = element else {
            return "{...}".into();
        };
        if depth > MAX_NEST {
            return "{...}".into();
        }
        if let (true, Some((prefix, size))) = (
            dim + 1 == ndims && count > 0,
            wide_prefix(self.binary, element),
        ) {
            let len = count.saturating_mul(size as u64).min(MAX_READ);
            // Partly optimized out: element by element below, as gdb falls back to.
            match place.read(self.mem, len) {
                Ok(bytes) => return wide_array_text(prefix, &bytes, size),
                Err(e) if matches!(place, Place::Memory(_)) => return e,
                Err(_) => {}
            }
        }
        if dim + 1 == ndims && count > 0 {
            let is_char = resolve(self.binary, element).is_ok_and(|r| {
                r.size == Some(1)
                    && matches!(
                        r.kind,
                        TypeKind::Base(BaseEncoding::SignedChar | BaseEncoding::UnsignedChar)
                    )
            });
            if is_char {
                match place.read(self.mem, count.min(MAX_READ)) {
                    Ok(bytes) => return char_array_text(&bytes),
                    Err(e) if matches!(place, Place::Memory(_)) => return e,
                    Err(_) => {}
                }
            }
        }
        let stride = self.stride(ty, element, dim);
        let inner = if dim + 1 < ndims {
            resolve(self.binary, ty)
                .ok()
                .and_then(|r| match r.kind {
                    TypeKind::Array { dims, .. } => self.dim_len(&dims, dim + 1),
                    _ => None,
                })
                .unwrap_or(0)
        } else {
            0
        };
        // The elements' bytes, read once (runs are found by comparing them, as gdb does).
        // (At most MAX_READ bytes: a run going on past them is cut there.)
        let bytes = (stride > 0)
            .then(|| {
                place
                    .read(self.mem, count.min(MAX_READ / stride) * stride)
                    .ok()
            })
            .flatten();
        let chunk = |i: u64| -> Option<&[u8]> {
            let b = bytes.as_deref()?;
            let at = usize::try_from(i.checked_mul(stride)?).ok()?;
            b.get(at..at + usize::try_from(stride).ok()?)
        };
        let text_of = |i: u64| -> String {
            let p = place.offset(i.saturating_mul(stride));
            if dim + 1 < ndims {
                // gdb prints the inner dimensions in full: `{{1, 2}, {3, 4}}`.
                return self.array_text(ty, Some(element), ndims, &p, dim + 1, inner, depth);
            }
            match resolve(self.binary, element) {
                Ok(r) if is_scalar(&r.kind) => match p.read(self.mem, r.size.unwrap_or(0)) {
                    Ok(b) => self.scalar_of(element, &r, &b).unwrap_or_else(|e| e),
                    Err(e) => e,
                },
                // Elements that are structs, unions or arrays are printed in full, as
                // gdb prints them: `{{x = 1, y = 2}, {x = 3, y = 4}}`.
                Ok(_) => self
                    .nested_text(element, &p, depth + 1)
                    .unwrap_or_else(|| "{...}".into()),
                Err(e) => e,
            }
        };
        let mut parts = Vec::new();
        let (mut i, mut things) = (0u64, 0usize);
        while i < count && things < PRINT_MAX {
            let text = text_of(i);
            let mut j = i + 1;
            match chunk(i) {
                Some(first) => {
                    while j < count && chunk(j) == Some(first) {
                        j += 1;
                    }
                }
                // Not in memory (pieces, some optimized out): equal texts are equal
                // values, as gdb finds two optimized-out elements equal.
                None => {
                    while j < count && j - i <= PRINT_MAX as u64 && text_of(j) == text {
                        j += 1;
                    }
                }
            }
            let run = j - i;
            if run > REPEATS as u64 {
                parts.push(format!("{text} <repeats {run} times>"));
                i += run;
                things += REPEATS;
            } else {
                parts.push(text);
                i += 1;
                things += 1;
            }
        }
        let more = if i < count { "..." } else { "" };
        format!("{{{}{more}}}", parts.join(", "))
    }

    /// The full text of a member or element that is a struct, union or array (`None`
    /// for other kinds and unreadable types).
    fn nested_text(&self, ty: TypeRef, place: &Place, depth: usize) -> Option<String> {
        if depth > MAX_NEST {
            return Some("{...}".into());
        }
        // A library type (`std::string`, a Rust `Vec`) as its language shows it, as
        // gdb's pretty printers show it inside a struct.
        if let Some((v, _)) = self.languages.render(self, "", ty, place) {
            return Some(v.rendered);
        }
        let r = resolve(self.binary, ty).ok()?;
        match &r.kind {
            TypeKind::Composite {
                members,
                declaration: false,
                ..
            } => Some(self.composite_text(members, place, depth)),
            TypeKind::Array { .. } => Some(
                self.render_inner(ty, place, 0)
                    .map_or_else(|e| e, |(text, _)| text),
            ),
            _ => None,
        }
    }

    /// Bytes between consecutive elements at dimension `dim`.
    pub(crate) fn stride(&self, ty: TypeRef, element: TypeRef, dim: usize) -> u64 {
        let elem_size = self.binary.type_size(element).ok().flatten().unwrap_or(0);
        let Ok(r) = resolve(self.binary, ty) else {
            return elem_size;
        };
        let TypeKind::Array { dims, .. } = &r.kind else {
            return elem_size;
        };
        (dim + 1..dims.len()).fold(elem_size, |acc, i| {
            acc.saturating_mul(self.dim_len(dims, i).unwrap_or(1))
        })
    }

    /// A base class subobject's name, after its class as gdb names it: `<Base>`.
    fn base_name(&self, ty: TypeRef) -> String {
        self.binary
            .type_info_shared(ty)
            .ok()
            .and_then(|i| i.name.clone())
            .map_or_else(String::new, |n| format!("<{n}>"))
    }

    fn composite_summary(&self, members: &[symbols::Member], place: &Place) -> String {
        self.composite_text(members, place, 0)
    }

    /// A struct's or union's one-line text, every member in full as gdb prints it:
    /// nested structs and unions, arrays (`tag = "aaa\000"`, `d = 0x…` for a flexible
    /// array member), scalars; past [`MAX_NEST`] levels a member is `{...}`.
    fn composite_text(&self, members: &[symbols::Member], place: &Place, depth: usize) -> String {
        let mut parts = Vec::new();
        for m in members {
            // A base class is named as gdb names it: `<Shape> = {...}`.
            let name = match (&m.name, m.is_base, m.ty) {
                (None, true, Some(t)) => self.base_name(t),
                _ => m.name.clone().unwrap_or_default(),
            };
            let text = match m.ty.map(|t| (t, resolve(self.binary, t))) {
                Some((t, Ok(r))) if is_scalar(&r.kind) => match self.member_bytes(m, &r, place) {
                    Ok(b) => self.scalar_of(t, &r, &b).unwrap_or_else(|e| e),
                    Err(e) => e,
                },
                Some((t, Ok(_))) if m.bitfield.is_none() => self
                    .nested_text(t, &place.offset(m.byte_offset), depth + 1)
                    .unwrap_or_else(|| "{...}".into()),
                _ => "{...}".into(),
            };
            if name.is_empty() {
                parts.push(text);
            } else {
                parts.push(format!("{name} = {text}"));
            }
        }
        format!("{{{}}}", parts.join(", "))
    }

    pub(crate) fn member_bytes(
        &self,
        m: &symbols::Member,
        r: &Resolved,
        place: &Place,
    ) -> Result<Vec<u8>, String> {
        let size = r.size.unwrap_or(0);
        match m.bitfield {
            None => place.offset(m.byte_offset).read(self.mem, size),
            Some(bf) => {
                let first = bf.bit_offset / 8;
                let last = (bf.bit_offset + bf.bit_size).div_ceil(8);
                let raw = place.offset(first).read(self.mem, last - first)?;
                let mut v: u128 = 0;
                for (i, b) in raw.iter().enumerate().take(16) {
                    v |= u128::from(*b) << (8 * i);
                }
                v >>= bf.bit_offset % 8;
                let width = bf.bit_size.min(64) as u32;
                let mask = if width >= 128 {
                    u128::MAX
                } else {
                    (1u128 << width) - 1
                };
                v &= mask;
                // An enum's bitfield is signed when the enum is: its underlying type
                // says so (`enum mode m : 3` holding MODE_HALT, -3, reads 0b101), or,
                // without one, a negative enumerator does, as gdb decides.
                let signed = match &r.kind {
                    TypeKind::Base(BaseEncoding::Signed | BaseEncoding::SignedChar) => true,
                    TypeKind::Enum {
                        underlying,
                        enumerators,
                        ..
                    } => match underlying.and_then(|u| resolve(self.binary, u).ok()) {
                        Some(u) => matches!(
                            u.kind,
                            TypeKind::Base(BaseEncoding::Signed | BaseEncoding::SignedChar)
                        ),
                        None => enumerators.iter().any(|(_, v)| *v < 0),
                    },
                    _ => false,
                };
                if signed && width > 0 && (v >> (width - 1)) & 1 == 1 {
                    v |= !mask;
                }
                Ok(v.to_le_bytes()[..(size as usize).min(16)].to_vec())
            }
        }
    }

    /// The children of a node, `start..start+count` (arrays are paged; members and
    /// pointees come whole).
    pub(crate) fn children(
        &self,
        node: &Node,
        start: u64,
        count: Option<u64>,
    ) -> Vec<(Value, Option<Node>)> {
        if let Some(synth) = &node.synth {
            return synth.children(self, node, start, count);
        }
        let r = match resolve(self.binary, node.ty) {
            Ok(r) => r,
            Err(e) => return vec![(Value::error("", String::new(), e), None)],
        };
        let mut out = Vec::new();
        match &r.kind {
            TypeKind::Array { element, dims } => {
                let Some(element) = element else { return out };
                let total = node.count.unwrap_or_else(|| self.dim_count(dims, node.dim));
                let lower = dims.get(node.dim).map_or(0, |d| d.lower);
                let stride = self.stride(node.ty, *element, node.dim);
                let end = count.map_or(total, |c| start.saturating_add(c).min(total));
                for i in start..end {
                    let name = format!("[{}]", i as i64 + lower);
                    let place = node.place.offset(i.saturating_mul(stride));
                    let (mut v, n) = if node.dim + 1 < dims.len() {
                        self.render(&name, node.ty, place, node.dim + 1)
                    } else {
                        self.render(&name, *element, place, 0)
                    };
                    v.name = name;
                    out.push((
                        v,
                        n.map(|mut n| {
                            n.path = format!("{}[{}]", node.path, i as i64 + lower);
                            n
                        }),
                    ));
                }
            }
            TypeKind::Composite { members, .. } => {
                for m in members
                    .iter()
                    .skip(start as usize)
                    .take(count.unwrap_or(u64::MAX) as usize)
                {
                    // A base class subobject is named after its class, as gdb's
                    // `<Base> = {...}`.
                    let name = match (&m.name, m.is_base, m.ty) {
                        (None, true, Some(t)) => self.base_name(t),
                        _ => m.name.clone().unwrap_or_default(),
                    };
                    let Some(mty) = m.ty else {
                        out.push((
                            Value::error(
                                &name,
                                String::new(),
                                "<error: member without type>".into(),
                            ),
                            None,
                        ));
                        continue;
                    };
                    if m.bitfield.is_some() {
                        let type_name = self.type_name(mty, 0);
                        let v = match resolve(self.binary, mty).and_then(|mr| {
                            self.member_bytes(m, &mr, &node.place)
                                .and_then(|b| self.scalar_text(&mr, &b))
                        }) {
                            Ok(text) => Value {
                                name: name.clone(),
                                type_name,
                                rendered: text,
                                children: None,
                                child_count: None,
                                indexed: false,
                                error: false,
                                address: None,
                            },
                            Err(e) => Value::error(&name, type_name, e),
                        };
                        out.push((v, None));
                        continue;
                    }
                    let (v, n) = self.render(&name, mty, node.place.offset(m.byte_offset), 0);
                    let path = if name.is_empty() {
                        node.path.clone()
                    } else {
                        format!("{}.{}", node.path, name)
                    };
                    out.push((
                        v,
                        n.map(|mut n| {
                            n.path = path;
                            n
                        }),
                    ));
                }
            }
            TypeKind::Pointer(Some(target)) => {
                if start > 0 {
                    return out;
                }
                let addr = match node.place.read(self.mem, 8) {
                    Ok(b) => le_u64(&b),
                    Err(e) => return vec![(Value::error("", String::new(), e), None)],
                };
                let name = format!("*{}", node.path);
                // A polymorphic object shows its most-derived class (gdb's `set print
                // object on`).
                let (target, addr) = self.cpp_dynamic(*target, addr).unwrap_or((*target, addr));
                let (mut v, n) = self.render(&name, target, Place::Memory(addr), 0);
                v.name = name.clone();
                out.push((
                    v,
                    n.map(|mut n| {
                        n.path = format!("(*{})", node.path);
                        n
                    }),
                ));
            }
            _ => {}
        }
        out
    }
}

pub(crate) fn is_scalar(kind: &TypeKind) -> bool {
    matches!(
        kind,
        TypeKind::Base(_) | TypeKind::Enum { .. } | TypeKind::Pointer(_)
    )
}

pub(crate) fn le_u64(bytes: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    for (d, s) in b.iter_mut().zip(bytes) {
        *d = *s;
    }
    u64::from_le_bytes(b)
}

/// The integer in `bytes` (little-endian), sign-extended when `signed`.
pub(crate) fn int_value(bytes: &[u8], signed: bool) -> i128 {
    let n = bytes.len().min(16);
    let mut v: u128 = 0;
    for (i, b) in bytes.iter().take(n).enumerate() {
        v |= u128::from(*b) << (8 * i);
    }
    if signed && n > 0 && n < 16 && (v >> (8 * n - 1)) & 1 == 1 {
        v |= u128::MAX << (8 * n);
    }
    v as i128
}

/// An unsigned integer of up to 16 bytes in decimal (`unsigned __int128`, `u128`).
pub(crate) fn uint_text(bytes: &[u8]) -> String {
    (int_value(bytes, false) as u128).to_string()
}

/// Renders a base type as gdb does: `-3`, `65 'A'`, `true`, `3.1400000000000001`.
pub(crate) fn base_text(enc: BaseEncoding, bytes: &[u8]) -> String {
    match enc {
        BaseEncoding::Signed => int_value(bytes, true).to_string(),
        BaseEncoding::Unsigned | BaseEncoding::Other(_) => uint_text(bytes),
        _ if bytes.is_empty() => "<unknown>".into(),
        BaseEncoding::SignedChar | BaseEncoding::UnsignedChar if bytes.len() == 1 => {
            let signed = enc == BaseEncoding::SignedChar;
            let v = int_value(bytes, signed);
            format!("{v} '{}'", escape_char(bytes[0], '\''))
        }
        BaseEncoding::SignedChar => int_value(bytes, true).to_string(),
        BaseEncoding::UnsignedChar => int_value(bytes, false).to_string(),
        BaseEncoding::Utf => {
            let v = int_value(bytes, false) as u32;
            match char::from_u32(v) {
                Some(c) => format!("{v} '{c}'"),
                None => v.to_string(),
            }
        }
        // As gdb: a byte other than 0 or 1 (an uninitialized bool, a union's other
        // member) is printed as the number it holds.
        BaseEncoding::Bool => match int_value(bytes, false) {
            0 => "false".into(),
            1 => "true".into(),
            v => v.to_string(),
        },
        BaseEncoding::Float => float_text(bytes),
        BaseEncoding::ComplexFloat => {
            let half = bytes.len() / 2;
            format!(
                "{} + {}i",
                float_text(&bytes[..half]),
                float_text(&bytes[half..])
            )
        }
        _ => int_value(bytes, false).to_string(),
    }
}

fn enum_text(enumerators: &[(String, i128)], flag_like: bool, v: i128, scope: &str) -> String {
    if let Some((name, _)) = enumerators.iter().find(|(_, e)| *e == v) {
        return format!("{scope}{name}");
    }
    if flag_like && v > 0 {
        let mut parts = Vec::new();
        let mut rest = v;
        for (name, e) in enumerators {
            if *e != 0 && rest & e == *e {
                parts.push(format!("{scope}{name}"));
                rest &= !e;
            }
        }
        if !parts.is_empty() {
            if rest != 0 {
                parts.push(format!("unknown: {rest:#x}"));
            }
            return format!("({})", parts.join(" | "));
        }
    }
    v.to_string()
}

/// Escapes one byte as gdb does inside quotes.
pub(crate) fn escape_char(b: u8, quote: char) -> String {
    match b {
        7 => "\\a".into(),
        8 => "\\b".into(),
        b'\t' => "\\t".into(),
        b'\n' => "\\n".into(),
        11 => "\\v".into(),
        12 => "\\f".into(),
        b'\r' => "\\r".into(),
        27 => "\\033".into(),
        b'\\' => "\\\\".into(),
        b if b as char == quote => format!("\\{quote}"),
        0x20..=0x7e => (b as char).to_string(),
        _ => format!("\\{b:03o}"),
    }
}

/// A char array as gdb prints it: a string with its final NUL dropped, runs of more
/// than 10 equal characters as `'c' <repeats N times>`.
pub(crate) fn char_array_text(bytes: &[u8]) -> String {
    const THRESHOLD: usize = 10;
    let mut bytes = bytes;
    if let [rest @ .., 0] = bytes {
        bytes = rest;
    }
    if bytes.is_empty() {
        return "\"\"".into();
    }
    let mut parts: Vec<String> = Vec::new();
    let mut open = String::new();
    let mut i = 0;
    // gdb's `print elements`: characters are taken, a run whole, until 200 are.
    while i < bytes.len() && i < PRINT_MAX {
        let c = bytes[i];
        let run = bytes[i..].iter().take_while(|b| **b == c).count();
        if run > THRESHOLD {
            if !open.is_empty() {
                parts.push(format!("\"{}\"", std::mem::take(&mut open)));
            }
            parts.push(format!("'{}' <repeats {run} times>", escape_char(c, '\'')));
            i += run;
        } else {
            open.push_str(&escape_char(c, '"'));
            i += 1;
        }
    }
    if !open.is_empty() {
        parts.push(format!("\"{open}\""));
    }
    let more = if i < bytes.len() { "..." } else { "" };
    format!("{}{more}", parts.join(", "))
}

fn escape_str(bytes: &[u8]) -> String {
    bytes.iter().map(|b| escape_char(*b, '"')).collect()
}

/// Reads a NUL-terminated string, at most [`MAX_STRING`] bytes; `true` when complete.
pub(crate) fn read_c_string(mem: &dyn MemoryReader, addr: u64) -> Result<(Vec<u8>, bool), ()> {
    let mut out = Vec::new();
    let mut at = addr;
    while out.len() < MAX_STRING {
        // Read up to the end of the page so a string near unmapped memory still reads.
        let page_left = 4096 - (at % 4096);
        let n = page_left.min((MAX_STRING - out.len()) as u64) as usize;
        let mut buf = vec![0u8; n];
        if mem.read(RuntimeAddr(at), &mut buf).is_err() {
            if out.is_empty() {
                return Err(());
            }
            return Ok((out, false));
        }
        if let Some(end) = buf.iter().position(|b| *b == 0) {
            out.extend_from_slice(&buf[..end]);
            return Ok((out, true));
        }
        out.extend_from_slice(&buf);
        at += n as u64;
    }
    Ok((out, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn char_arrays_render_like_gdb() {
        assert_eq!(char_array_text(b"square\0\0"), "\"square\\000\"");
        assert_eq!(
            char_array_text(b"hi\0\0\0\0\0\0\0\0\0\0\0\0"),
            "\"hi\", '\\000' <repeats 11 times>"
        );
        assert_eq!(char_array_text(b"\0"), "\"\"");
        assert_eq!(char_array_text(b"abc"), "\"abc\"");
        // 200 characters at most (a run whole), then `...`, as gdb's `print elements`.
        let mut table = vec![0u8; 256];
        table[1] = 200;
        table[255] = 9;
        assert_eq!(
            char_array_text(&table),
            "\"\\000\\310\", '\\000' <repeats 253 times>..."
        );
        assert_eq!(char_array_text(&[b'a'; 300]), "'a' <repeats 300 times>");
        assert_eq!(
            char_array_text(&[b'x'; 250][..]).len(),
            "'x' <repeats 250 times>".len()
        );
        let text: Vec<u8> = (0..250).map(|i| b'a' + (i % 7) as u8).collect();
        assert!(char_array_text(&text).ends_with("\"..."));
    }

    #[test]
    fn chars_and_enums_render_like_gdb() {
        assert_eq!(base_text(BaseEncoding::SignedChar, &[65]), "65 'A'");
        assert_eq!(base_text(BaseEncoding::SignedChar, &[0]), "0 '\\000'");
        assert_eq!(base_text(BaseEncoding::UnsignedChar, &[200]), "200 '\\310'");
        assert_eq!(base_text(BaseEncoding::Signed, &[0xff, 0xff]), "-1");
        let e = vec![
            ("A".to_string(), 1),
            ("B".to_string(), 2),
            ("C".to_string(), 4),
        ];
        assert_eq!(enum_text(&e, true, 3, ""), "(A | B)");
        assert_eq!(enum_text(&e, true, 9, ""), "(A | unknown: 0x8)");
        assert_eq!(enum_text(&e, false, 9, ""), "9");
        assert_eq!(enum_text(&e, true, 2, ""), "B");
    }
}
