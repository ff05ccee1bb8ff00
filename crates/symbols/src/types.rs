//! Types: base, pointer, reference, cv-qualified, typedef, struct/class/union with
//! member offsets and bitfields, arrays, enums, function types and Rust variant parts.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use gimli::AttributeValue;

use crate::binary::Binary;
use crate::error::{Error, Result};
use crate::reader::R;
use crate::units::{attr_i64, attr_u64, reader_bytes, Die, DieId, Unit};

/// A type in the debug information, identified by its `.debug_info` offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TypeRef(pub u64);

/// Encoding of a base type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BaseEncoding {
    /// Signed integer.
    Signed,
    /// Unsigned integer.
    Unsigned,
    /// Signed character.
    SignedChar,
    /// Unsigned character.
    UnsignedChar,
    /// Unicode character (Rust `char`, C++ `char32_t`).
    Utf,
    /// IEEE floating point.
    Float,
    /// Boolean.
    Bool,
    /// Complex float.
    ComplexFloat,
    /// Something else (`DW_ATE_*` value).
    Other(u8),
}

/// Struct, class or union.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompositeKind {
    /// `struct` (also Rust structs, tuples and enums with variant parts).
    Struct,
    /// `class`.
    Class,
    /// `union`.
    Union,
}

/// A data member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// Its name (`None` for anonymous members).
    pub name: Option<String>,
    /// Its type.
    pub ty: Option<TypeRef>,
    /// Byte offset from the start of the containing object (for bitfields, the
    /// offset of the byte holding the first bit).
    pub byte_offset: u64,
    /// For bitfields: offset of the first bit from the start of the object, and width.
    pub bitfield: Option<Bitfield>,
    /// Whether it is a base class subobject (`DW_TAG_inheritance`).
    pub is_base: bool,
    /// Whether the compiler generated it.
    pub artificial: bool,
}

/// Placement of a bitfield, normalized from `DW_AT_data_bit_offset` or the older
/// big-endian-numbered `DW_AT_bit_offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bitfield {
    /// Bits from the start of the containing object to the field's lowest bit
    /// (little-endian numbering).
    pub bit_offset: u64,
    /// Width in bits.
    pub bit_size: u64,
}

/// One variant of a Rust enum (a `DW_TAG_variant`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Variant {
    /// The discriminant value selecting this variant; `None` for the default variant
    /// (and for a variant selected by `ranges`).
    pub discriminant: Option<u64>,
    /// The variant's members (usually one, of the variant's struct type).
    pub members: Vec<Member>,
    /// Inclusive discriminant ranges from `DW_AT_discr_list` (single values appear as
    /// `(v, v)`); empty when the variant has a plain `DW_AT_discr_value` or is the
    /// default.
    pub ranges: Vec<(u64, u64)>,
}

/// A template (generic) parameter of a type: `T` of `Vec<T>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TemplateParam {
    /// Its name (`T`, `K`, `_Tp`).
    pub name: String,
    /// The type it stands for (`None` for a value parameter without a type).
    pub ty: Option<TypeRef>,
}

/// The source language of a compilation unit (`DW_AT_language`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Language {
    /// C (any standard).
    C,
    /// C++ (any standard).
    Cpp,
    /// Rust.
    Rust,
    /// Another language (`DW_LANG_*` value).
    Other(u16),
}

/// A `DW_TAG_variant_part`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VariantPart {
    /// The member holding the discriminant.
    pub discriminant: Option<Member>,
    /// The variants.
    pub variants: Vec<Variant>,
}

/// How many elements an array dimension has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArrayBound {
    /// Known element count.
    Count(u64),
    /// Computed at run time from the variable at this `.debug_info` offset (VLAs);
    /// `upper_bound` says whether its value is the upper bound or the count.
    Variable {
        /// `.debug_info` offset of the variable DIE.
        die_offset: u64,
        /// Upper bound (count = value - lower + 1) or count.
        upper_bound: bool,
    },
    /// Computed at run time by a DWARF expression (VLAs: `DW_OP_fbreg -56; DW_OP_deref`).
    Expr {
        /// The expression; evaluate with [`Binary::evaluate_location`] and the
        /// enclosing function's frame base.
        expr: crate::eval::LocationExpr,
        /// Upper bound (count = value - lower + 1) or count.
        upper_bound: bool,
    },
    /// Unknown (flexible array member, `int a[]`).
    Unknown,
}

/// One dimension of an array.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArrayDim {
    /// The lower bound (0 for C, C++ and Rust).
    pub lower: i64,
    /// The element count.
    pub count: ArrayBound,
}

/// What kind of type, with its parts.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TypeKind {
    /// A base type.
    Base(BaseEncoding),
    /// `T *`.
    Pointer(Option<TypeRef>),
    /// `T &` (rvalue: `T &&`).
    Reference {
        /// The referenced type.
        target: Option<TypeRef>,
        /// Whether it is an rvalue reference.
        rvalue: bool,
    },
    /// `const T`.
    Const(Option<TypeRef>),
    /// `volatile T`.
    Volatile(Option<TypeRef>),
    /// `restrict T`.
    Restrict(Option<TypeRef>),
    /// `_Atomic T`.
    Atomic(Option<TypeRef>),
    /// A typedef.
    Typedef(Option<TypeRef>),
    /// Struct, class or union.
    Composite {
        /// Which one.
        kind: CompositeKind,
        /// Data members and base classes, in declaration order.
        members: Vec<Member>,
        /// Rust enum variants.
        variant_part: Option<VariantPart>,
        /// Whether this is only a declaration (incomplete type).
        declaration: bool,
    },
    /// An array.
    Array {
        /// Element type.
        element: Option<TypeRef>,
        /// Dimensions, outermost first.
        dims: Vec<ArrayDim>,
    },
    /// An enumeration.
    Enum {
        /// The underlying integer type.
        underlying: Option<TypeRef>,
        /// Enumerators in declaration order.
        enumerators: Vec<(String, i128)>,
        /// Whether every enumerator is a distinct power of two (or zero): display as flags.
        flag_like: bool,
    },
    /// A function type (the target of a function pointer).
    Function {
        /// The return type (`None` for void).
        ret: Option<TypeRef>,
        /// Parameter types.
        params: Vec<Option<TypeRef>>,
        /// Whether it takes `...`.
        variadic: bool,
    },
    /// A pointer to member (C++).
    PtrToMember(Option<TypeRef>),
    /// `void`, `decltype(nullptr)` and other unspecified types.
    Unspecified,
}

/// A type with its size and alignment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Type {
    /// Its identity.
    pub id: TypeRef,
    /// Its name, when it has one (`int`, `S`, `Vec<u8>`).
    pub name: Option<String>,
    /// Size in bytes (`None` when unknown, e.g. incomplete types).
    pub size: Option<u64>,
    /// Alignment in bytes (from `DW_AT_alignment` or computed).
    pub align: Option<u64>,
    /// What it is.
    pub kind: TypeKind,
}

/// Most types kept by [`TypeCache`] per binary.
pub(crate) const TYPE_CACHE_MAX: usize = 1 << 16;

/// The most bytes of DIEs for which [`Binary::definition_of`] builds the name table
/// itself (a second or so on this kind of machine).
pub const DEFINITION_INDEX_MAX: u64 = 64 << 20;

/// Types and sizes already read from the DWARF.
#[derive(Debug, Default)]
pub(crate) struct TypeCache {
    types: Mutex<HashMap<TypeRef, Arc<Type>>>,
    sizes: Mutex<HashMap<TypeRef, Option<u64>>>,
    /// The qualification of C++ enums' enumerators (see [`Binary::enumerator_scope`]).
    enum_scopes: Mutex<HashMap<TypeRef, Option<Arc<str>>>>,
    /// Declarations and the definitions found for them ([`Binary::definition_of`]).
    definitions: Mutex<HashMap<TypeRef, Option<TypeRef>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Decodes a `DW_AT_discr_list` block: `DW_DSC_label value` or `DW_DSC_range low
/// high`, values as unsigned LEB128 (rustc's discriminants are unsigned).
fn discr_list(bytes: &[u8]) -> Vec<(u64, u64)> {
    fn uleb(b: &[u8], at: &mut usize) -> Option<u64> {
        let mut v = 0u64;
        let mut shift = 0u32;
        loop {
            let byte = *b.get(*at)?;
            *at += 1;
            if shift < 64 {
                v |= u64::from(byte & 0x7f) << shift;
            }
            shift += 7;
            if byte & 0x80 == 0 {
                return Some(v);
            }
        }
    }
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() && out.len() < 1024 {
        let kind = bytes[at];
        at += 1;
        let Some(lo) = uleb(bytes, &mut at) else {
            break;
        };
        if kind == 1 {
            let Some(hi) = uleb(bytes, &mut at) else {
                break;
            };
            out.push((lo, hi));
        } else {
            out.push((lo, lo));
        }
    }
    out
}

/// A constant array bound: `DW_FORM_sdata` is signed and `DW_FORM_udata` unsigned; the
/// sign of a `DW_FORM_dataN` bound is its subrange type's (`signed`).
fn bound_value(die: &Die, at: gimli::DwAt, signed: bool) -> Option<i64> {
    if signed {
        return attr_i64(die, at);
    }
    match die.attr(at)?.value() {
        AttributeValue::Sdata(v) => Some(v),
        AttributeValue::Data1(v) => Some(i64::from(v)),
        AttributeValue::Data2(v) => Some(i64::from(v)),
        AttributeValue::Data4(v) => Some(i64::from(v)),
        AttributeValue::Data8(v) | AttributeValue::Udata(v) => i64::try_from(v).ok(),
        _ => None,
    }
}

fn type_attr(b: &Binary, unit: usize, die: &Die) -> Option<TypeRef> {
    let v = die.attr_value(gimli::DW_AT_type)?;
    b.resolve_ref(unit, &v).map(|d| TypeRef(b.global_offset(d)))
}

impl Binary {
    pub(crate) fn type_die(&self, t: TypeRef) -> Result<(DieId, std::sync::Arc<Unit>)> {
        let id = self.die_id(t.0).ok_or(Error::BadReference(t.0))?;
        let unit = self.unit(id.unit)?;
        // A declaration standing for a type in a type unit (DW_AT_signature): use the
        // full definition.
        let die = unit.entry(id.offset)?;
        if let Some(sig) = die.attr_value(gimli::DW_AT_signature) {
            if let Some(target) = self.resolve_ref(id.unit, &sig) {
                return Ok((target, self.unit(target.unit)?));
            }
        }
        Ok((id, unit))
    }

    /// Reads one type (one level: members and targets are [`TypeRef`]s).
    pub fn type_info(&self, t: TypeRef) -> Result<Type> {
        self.type_info_shared(t).map(|t| (*t).clone())
    }

    /// [`Binary::type_info`] without copying: types are read once and cached, so
    /// evaluating the same expression again (a breakpoint condition on every hit)
    /// parses no DIEs.
    pub fn type_info_shared(&self, t: TypeRef) -> Result<Arc<Type>> {
        if let Some(found) = lock(&self.type_cache.types).get(&t) {
            return Ok(found.clone());
        }
        let info = Arc::new(self.read_type_info(t)?);
        let mut cache = lock(&self.type_cache.types);
        if cache.len() < TYPE_CACHE_MAX {
            cache.insert(t, info.clone());
        }
        Ok(info)
    }

    fn read_type_info(&self, t: TypeRef) -> Result<Type> {
        let (id, unit) = self.type_die(t)?;
        let die = unit.entry(id.offset)?;
        let name = self.attr_str(&unit, &die, gimli::DW_AT_name);
        let mut size = attr_u64(&die, gimli::DW_AT_byte_size)
            .or_else(|| attr_u64(&die, gimli::DW_AT_bit_size).map(|b| b.div_ceil(8)));
        let target = type_attr(self, id.unit, &die);
        let kind = match die.tag() {
            gimli::DW_TAG_base_type => {
                let enc = match die.attr_value(gimli::DW_AT_encoding) {
                    Some(AttributeValue::Encoding(e)) => e,
                    _ => gimli::DwAte(0),
                };
                TypeKind::Base(match enc {
                    gimli::DW_ATE_signed => BaseEncoding::Signed,
                    gimli::DW_ATE_unsigned => BaseEncoding::Unsigned,
                    gimli::DW_ATE_signed_char => BaseEncoding::SignedChar,
                    gimli::DW_ATE_unsigned_char => BaseEncoding::UnsignedChar,
                    gimli::DW_ATE_UTF => BaseEncoding::Utf,
                    gimli::DW_ATE_float => BaseEncoding::Float,
                    gimli::DW_ATE_boolean => BaseEncoding::Bool,
                    gimli::DW_ATE_complex_float => BaseEncoding::ComplexFloat,
                    other => BaseEncoding::Other(other.0),
                })
            }
            gimli::DW_TAG_pointer_type => {
                size = size.or(Some(8));
                TypeKind::Pointer(target)
            }
            gimli::DW_TAG_reference_type | gimli::DW_TAG_rvalue_reference_type => {
                size = size.or(Some(8));
                TypeKind::Reference {
                    target,
                    rvalue: die.tag() == gimli::DW_TAG_rvalue_reference_type,
                }
            }
            gimli::DW_TAG_const_type => TypeKind::Const(target),
            gimli::DW_TAG_volatile_type => TypeKind::Volatile(target),
            gimli::DW_TAG_restrict_type => TypeKind::Restrict(target),
            gimli::DW_TAG_atomic_type => TypeKind::Atomic(target),
            gimli::DW_TAG_typedef => TypeKind::Typedef(target),
            gimli::DW_TAG_structure_type | gimli::DW_TAG_class_type | gimli::DW_TAG_union_type => {
                self.composite(&unit, id, &die)?
            }
            gimli::DW_TAG_array_type => self.array(&unit, id)?,
            gimli::DW_TAG_enumeration_type => self.enumeration(&unit, id, target)?,
            gimli::DW_TAG_subroutine_type => self.subroutine(&unit, id, target)?,
            gimli::DW_TAG_ptr_to_member_type => TypeKind::PtrToMember(target),
            _ => TypeKind::Unspecified,
        };
        let mut ty = Type {
            id: t,
            name,
            size,
            align: attr_u64(&die, gimli::DW_AT_alignment),
            kind,
        };
        if matches!(
            ty.kind,
            TypeKind::Const(_)
                | TypeKind::Volatile(_)
                | TypeKind::Restrict(_)
                | TypeKind::Atomic(_)
                | TypeKind::Typedef(_)
        ) || matches!(ty.kind, TypeKind::Array { .. }) && ty.size.is_none()
        {
            ty.size = self.type_size(t)?;
        }
        if ty.align.is_none() {
            ty.align = self.type_align(t, 0)?;
        }
        Ok(ty)
    }

    /// The size in bytes of a type, looking through typedefs and qualifiers and
    /// multiplying array dimensions.
    pub fn type_size(&self, t: TypeRef) -> Result<Option<u64>> {
        if let Some(found) = lock(&self.type_cache.sizes).get(&t) {
            return Ok(*found);
        }
        let size = self.read_type_size(t)?;
        let mut cache = lock(&self.type_cache.sizes);
        if cache.len() < TYPE_CACHE_MAX {
            cache.insert(t, size);
        }
        Ok(size)
    }

    fn read_type_size(&self, t: TypeRef) -> Result<Option<u64>> {
        let mut current = t;
        for _ in 0..32 {
            let (id, unit) = self.type_die(current)?;
            let die = unit.entry(id.offset)?;
            if let Some(s) = attr_u64(&die, gimli::DW_AT_byte_size) {
                return Ok(Some(s));
            }
            match die.tag() {
                gimli::DW_TAG_pointer_type
                | gimli::DW_TAG_reference_type
                | gimli::DW_TAG_rvalue_reference_type => return Ok(Some(8)),
                gimli::DW_TAG_array_type => {
                    let TypeKind::Array { element, dims } = self.array(&unit, id)? else {
                        return Ok(None);
                    };
                    let Some(el) = element else { return Ok(None) };
                    let Some(mut total) = self.type_size(el)? else {
                        return Ok(None);
                    };
                    for d in dims {
                        match d.count {
                            ArrayBound::Count(n) => total = total.saturating_mul(n),
                            _ => return Ok(None),
                        }
                    }
                    return Ok(Some(total));
                }
                _ => {}
            }
            match type_attr(self, id.unit, &die) {
                Some(next) => current = next,
                None => return Ok(None),
            }
        }
        Ok(None)
    }

    fn type_align(&self, t: TypeRef, depth: u32) -> Result<Option<u64>> {
        if depth > 16 {
            return Ok(None);
        }
        let (id, unit) = self.type_die(t)?;
        let die = unit.entry(id.offset)?;
        if let Some(a) = attr_u64(&die, gimli::DW_AT_alignment) {
            return Ok(Some(a));
        }
        Ok(match die.tag() {
            gimli::DW_TAG_base_type => {
                attr_u64(&die, gimli::DW_AT_byte_size).map(|s| s.clamp(1, 16))
            }
            gimli::DW_TAG_pointer_type
            | gimli::DW_TAG_reference_type
            | gimli::DW_TAG_rvalue_reference_type
            | gimli::DW_TAG_ptr_to_member_type => Some(8),
            gimli::DW_TAG_structure_type | gimli::DW_TAG_class_type | gimli::DW_TAG_union_type => {
                let mut align = 1;
                let mut tree = unit.entries_tree(Some(id.offset))?;
                let root = tree.root()?;
                let mut children = root.children();
                while let Some(child) = children.next()? {
                    let e = child.entry();
                    if matches!(e.tag(), gimli::DW_TAG_member | gimli::DW_TAG_inheritance)
                        && e.attr_value(gimli::DW_AT_external).is_none()
                        && e.attr_value(gimli::DW_AT_declaration).is_none()
                    {
                        if let Some(mt) = type_attr(self, id.unit, e) {
                            align = align.max(self.type_align(mt, depth + 1)?.unwrap_or(1));
                        }
                    }
                }
                Some(align)
            }
            gimli::DW_TAG_enumeration_type if type_attr(self, id.unit, &die).is_none() => {
                attr_u64(&die, gimli::DW_AT_byte_size)
            }
            gimli::DW_TAG_subroutine_type => None,
            _ => match type_attr(self, id.unit, &die) {
                Some(next) => self.type_align(next, depth + 1)?,
                None => None,
            },
        })
    }

    fn member(&self, unit: &Unit, unit_index: usize, die: &Die) -> Member {
        let byte_location = match die.attr_value(gimli::DW_AT_data_member_location) {
            Some(AttributeValue::Exprloc(e)) => {
                // Old producers: DW_OP_plus_uconst N.
                let mut ops = e.operations(unit.encoding());
                match ops.next() {
                    Ok(Some(gimli::Operation::PlusConstant { value })) => Some(value),
                    _ => None,
                }
            }
            Some(v) => v.udata_value(),
            None => None,
        };
        let bit_size = attr_u64(die, gimli::DW_AT_bit_size);
        let bitfield = bit_size.and_then(|bit_size| {
            if let Some(dbo) = attr_u64(die, gimli::DW_AT_data_bit_offset) {
                return Some(Bitfield {
                    bit_offset: dbo,
                    bit_size,
                });
            }
            // DWARF 2/3 DW_AT_bit_offset counts from the most significant bit of the
            // storage unit of DW_AT_byte_size bytes (little-endian target).
            let old = attr_u64(die, gimli::DW_AT_bit_offset)?;
            let storage = attr_u64(die, gimli::DW_AT_byte_size).or_else(|| {
                type_attr(self, unit_index, die).and_then(|t| self.type_size(t).ok().flatten())
            })?;
            let base = byte_location.unwrap_or(0).checked_mul(8)?;
            Some(Bitfield {
                bit_offset: base
                    .checked_add(storage.checked_mul(8)?)?
                    .checked_sub(old.checked_add(bit_size)?)?,
                bit_size,
            })
        });
        let byte_offset = match (&bitfield, byte_location) {
            (Some(b), _) => b.bit_offset / 8,
            (None, Some(o)) => o,
            (None, None) => 0,
        };
        Member {
            name: self.attr_str(unit, die, gimli::DW_AT_name),
            ty: type_attr(self, unit_index, die),
            byte_offset,
            bitfield,
            is_base: die.tag() == gimli::DW_TAG_inheritance,
            artificial: matches!(
                die.attr_value(gimli::DW_AT_artificial),
                Some(AttributeValue::Flag(true))
            ),
        }
    }

    fn composite(&self, unit: &Unit, id: DieId, die: &Die) -> Result<TypeKind> {
        let kind = match die.tag() {
            gimli::DW_TAG_class_type => CompositeKind::Class,
            gimli::DW_TAG_union_type => CompositeKind::Union,
            _ => CompositeKind::Struct,
        };
        let mut members = Vec::new();
        let mut variant_part = None;
        let mut tree = unit.entries_tree(Some(id.offset))?;
        let root = tree.root()?;
        let mut children = root.children();
        while let Some(child) = children.next()? {
            let e = child.entry();
            match e.tag() {
                gimli::DW_TAG_member | gimli::DW_TAG_inheritance => {
                    // Static members are declarations (DWARF 4) or DW_TAG_variable (5).
                    if e.attr_value(gimli::DW_AT_external).is_some()
                        || e.attr_value(gimli::DW_AT_declaration).is_some()
                    {
                        continue;
                    }
                    members.push(self.member(unit, id.unit, e));
                }
                gimli::DW_TAG_variant_part => {
                    let discr_ref = e
                        .attr_value(gimli::DW_AT_discr)
                        .and_then(|v| self.resolve_ref(id.unit, &v));
                    let mut part = VariantPart {
                        discriminant: None,
                        variants: Vec::new(),
                    };
                    let mut vchildren = child.children();
                    while let Some(v) = vchildren.next()? {
                        let ve = v.entry();
                        match ve.tag() {
                            gimli::DW_TAG_member => {
                                let m = self.member(unit, id.unit, ve);
                                if discr_ref.is_none_or(|d| d.offset == ve.offset()) {
                                    part.discriminant = Some(m);
                                }
                            }
                            gimli::DW_TAG_variant => {
                                let discriminant =
                                    attr_u64(ve, gimli::DW_AT_discr_value).or_else(|| {
                                        attr_i64(ve, gimli::DW_AT_discr_value).map(|x| x as u64)
                                    });
                                let ranges = match ve.attr_value(gimli::DW_AT_discr_list) {
                                    Some(AttributeValue::Block(b)) => discr_list(&reader_bytes(&b)),
                                    _ => Vec::new(),
                                };
                                let mut vm = Vec::new();
                                let mut mchildren = v.children();
                                while let Some(m) = mchildren.next()? {
                                    if m.entry().tag() == gimli::DW_TAG_member {
                                        vm.push(self.member(unit, id.unit, m.entry()));
                                    }
                                }
                                part.variants.push(Variant {
                                    discriminant,
                                    members: vm,
                                    ranges,
                                });
                            }
                            _ => {}
                        }
                    }
                    variant_part = Some(part);
                }
                _ => {}
            }
        }
        Ok(TypeKind::Composite {
            kind,
            members,
            variant_part,
            declaration: die.attr_value(gimli::DW_AT_declaration).is_some(),
        })
    }

    fn array(&self, unit: &Unit, id: DieId) -> Result<TypeKind> {
        let die = unit.entry(id.offset)?;
        let element = type_attr(self, id.unit, &die);
        let mut dims = Vec::new();
        let mut tree = unit.entries_tree(Some(id.offset))?;
        let root = tree.root()?;
        let mut children = root.children();
        while let Some(child) = children.next()? {
            let e = child.entry();
            if e.tag() != gimli::DW_TAG_subrange_type {
                continue;
            }
            // A bound in a DW_FORM_dataN form has no sign of its own: gcc writes
            // `unsigned char t[256]`'s upper bound 255 as one byte, 0xff. As gdb
            // (read_subrange_type), such a bound is sign-extended only when the
            // subrange's own type is signed; gcc's is `sizetype`, unsigned.
            let signed = type_attr(self, id.unit, e)
                .and_then(|t| self.type_info(t).ok())
                .is_some_and(|t| {
                    matches!(
                        t.kind,
                        TypeKind::Base(BaseEncoding::Signed | BaseEncoding::SignedChar)
                    )
                });
            let lower = bound_value(e, gimli::DW_AT_lower_bound, signed).unwrap_or(0);
            let count = if let Some(c) = attr_u64(e, gimli::DW_AT_count) {
                ArrayBound::Count(c)
            } else {
                match e.attr_value(gimli::DW_AT_upper_bound) {
                    None => match e.attr_value(gimli::DW_AT_count) {
                        Some(v) => self.dynamic_bound(unit, id.unit, v, false),
                        None => ArrayBound::Unknown,
                    },
                    Some(v) => match bound_value(e, gimli::DW_AT_upper_bound, signed) {
                        Some(upper) => {
                            match upper.checked_sub(lower).and_then(|d| d.checked_add(1)) {
                                Some(n) if n >= 0 => ArrayBound::Count(n as u64),
                                _ => ArrayBound::Unknown,
                            }
                        }
                        None => self.dynamic_bound(unit, id.unit, v, true),
                    },
                }
            };
            dims.push(ArrayDim { lower, count });
        }
        Ok(TypeKind::Array { element, dims })
    }

    fn dynamic_bound(
        &self,
        unit: &Unit,
        unit_index: usize,
        v: AttributeValue<R>,
        upper_bound: bool,
    ) -> ArrayBound {
        match v {
            AttributeValue::Exprloc(e) => ArrayBound::Expr {
                expr: crate::eval::LocationExpr {
                    bytes: reader_bytes(&e.0),
                    encoding: unit.encoding(),
                    unit: unit_index,
                },
                upper_bound,
            },
            other => match self.resolve_ref(unit_index, &other) {
                Some(d) => ArrayBound::Variable {
                    die_offset: self.global_offset(d),
                    upper_bound,
                },
                None => ArrayBound::Unknown,
            },
        }
    }

    fn enumeration(&self, unit: &Unit, id: DieId, underlying: Option<TypeRef>) -> Result<TypeKind> {
        let mut enumerators = Vec::new();
        let mut tree = unit.entries_tree(Some(id.offset))?;
        let root = tree.root()?;
        let mut children = root.children();
        while let Some(child) = children.next()? {
            let e = child.entry();
            if e.tag() != gimli::DW_TAG_enumerator {
                continue;
            }
            let name = self
                .attr_str(unit, e, gimli::DW_AT_name)
                .unwrap_or_default();
            let value = match e.attr_value(gimli::DW_AT_const_value) {
                Some(AttributeValue::Udata(v)) => i128::from(v),
                Some(AttributeValue::Sdata(v)) => i128::from(v),
                _ => attr_i64(e, gimli::DW_AT_const_value).map_or(0, i128::from),
            };
            enumerators.push((name, value));
        }
        let flag_like = enumerators.len() > 1 && {
            let mut seen = 0i128;
            enumerators.iter().all(|(_, v)| {
                let ok = *v >= 0 && (*v == 0 || (v & (v - 1)) == 0) && (seen & v) == 0;
                seen |= v;
                ok
            })
        };
        Ok(TypeKind::Enum {
            underlying,
            enumerators,
            flag_like,
        })
    }

    fn subroutine(&self, unit: &Unit, id: DieId, ret: Option<TypeRef>) -> Result<TypeKind> {
        let mut params = Vec::new();
        let mut variadic = false;
        let mut tree = unit.entries_tree(Some(id.offset))?;
        let root = tree.root()?;
        let mut children = root.children();
        while let Some(child) = children.next()? {
            let e = child.entry();
            match e.tag() {
                gimli::DW_TAG_formal_parameter => params.push(type_attr(self, id.unit, e)),
                gimli::DW_TAG_unspecified_parameters => variadic = true,
                _ => {}
            }
        }
        Ok(TypeKind::Function {
            ret,
            params,
            variadic,
        })
    }

    /// The template (generic) type parameters of a struct, class or union, in
    /// declaration order (`T` and `A` of `Vec<T, A>`).
    pub fn template_params(&self, t: TypeRef) -> Result<Vec<TemplateParam>> {
        let (id, unit) = self.type_die(t)?;
        let mut out = Vec::new();
        let mut tree = unit.entries_tree(Some(id.offset))?;
        let root = tree.root()?;
        let mut children = root.children();
        while let Some(child) = children.next()? {
            let e = child.entry();
            if matches!(
                e.tag(),
                gimli::DW_TAG_template_type_parameter | gimli::DW_TAG_template_value_parameter
            ) {
                out.push(TemplateParam {
                    name: self
                        .attr_str(&unit, e, gimli::DW_AT_name)
                        .unwrap_or_default(),
                    ty: type_attr(self, id.unit, e),
                });
            }
        }
        Ok(out)
    }

    /// How gdb qualifies the enumerators of the C++ enum `t`: by the namespaces and
    /// classes around it, and for an `enum class` by the enum too
    /// (`nlohmann::detail::value_t::`); `None` for a C enum or one at file scope.
    pub fn enumerator_scope(&self, t: TypeRef) -> Result<Option<Arc<str>>> {
        if let Some(found) = lock(&self.type_cache.enum_scopes).get(&t) {
            return Ok(found.clone());
        }
        let (id, unit) = self.type_die(t)?;
        let scope = if self.unit_language(id.unit)? == Some(Language::Cpp) {
            let die = unit.entry(id.offset)?;
            // The unit is walked to find the enum's parents, once per enum type.
            let mut scope = self.scope_path_of(id);
            if matches!(
                die.attr_value(gimli::DW_AT_enum_class),
                Some(AttributeValue::Flag(true))
            ) {
                if let Some(name) = self.attr_str(&unit, &die, gimli::DW_AT_name) {
                    scope.push_str(&name);
                    scope.push_str("::");
                }
            }
            (!scope.is_empty()).then(|| Arc::from(scope))
        } else {
            None
        };
        let mut cache = lock(&self.type_cache.enum_scopes);
        if cache.len() < TYPE_CACHE_MAX {
            cache.insert(t, scope.clone());
        }
        Ok(scope)
    }

    /// The language of the compilation unit that declares a type.
    pub fn type_language(&self, t: TypeRef) -> Result<Option<Language>> {
        let (id, _) = self.type_die(t)?;
        self.unit_language(id.unit)
    }

    /// The language of the compilation unit whose code holds `pc` (the frame's language).
    pub fn language_at(&self, pc: crate::FileAddr) -> Option<Language> {
        self.units_for_addr(pc.0)
            .into_iter()
            .find_map(|u| self.unit_language(u).ok().flatten())
    }

    pub(crate) fn unit_language(&self, unit_index: usize) -> Result<Option<Language>> {
        let unit = self.unit(unit_index)?;
        let mut entries = unit.entries();
        let Some(root) = entries.next_dfs()? else {
            return Ok(None);
        };
        Ok(match root.attr_value(gimli::DW_AT_language) {
            Some(AttributeValue::Language(l)) => Some(match l {
                gimli::DW_LANG_Rust => Language::Rust,
                gimli::DW_LANG_C_plus_plus
                | gimli::DW_LANG_C_plus_plus_03
                | gimli::DW_LANG_C_plus_plus_11
                | gimli::DW_LANG_C_plus_plus_14 => Language::Cpp,
                gimli::DW_LANG_C | gimli::DW_LANG_C89 | gimli::DW_LANG_C99 | gimli::DW_LANG_C11 => {
                    Language::C
                }
                other if other.0 == 0x2a || other.0 == 0x2b => Language::Cpp,
                other if other.0 == 0x2c => Language::C,
                other => Language::Other(other.0),
            }),
            _ => None,
        })
    }

    /// The base type named `name` (`char`, `unsigned char`) of the compilation unit whose
    /// code holds `pc`: the types an expression's literals and casts take in that frame.
    /// Base types are not in the symbol index, so this reads the unit's top-level DIEs.
    pub fn base_type_at(&self, pc: crate::FileAddr, name: &str) -> Option<TypeRef> {
        for unit_index in self.units_for_addr(pc.0) {
            let Ok(unit) = self.unit(unit_index) else {
                continue;
            };
            let mut entries = unit.entries();
            while let Ok(Some(die)) = entries.next_dfs() {
                if die.depth() != 1 || die.tag() != gimli::DW_TAG_base_type {
                    continue;
                }
                if self.attr_str(&unit, die, gimli::DW_AT_name).as_deref() == Some(name) {
                    let id = crate::units::DieId {
                        unit: unit_index,
                        offset: die.offset(),
                    };
                    return Some(TypeRef(self.global_offset(id)));
                }
            }
        }
        None
    }

    /// The definition of the struct, class or union that `t` only declares, found by
    /// its qualified name among the program's types, as gdb does: a unit that uses a type
    /// without defining it has a declaration only (clang's default limited debug info
    /// emits `std::vector<T>` in full in one unit; a C library's opaque `struct` is
    /// defined in its own unit). `None` when `t` is not such a declaration or nothing
    /// defines it. The first question builds the name table, but not a big program's
    /// (over [`DEFINITION_INDEX_MAX`] bytes of DIEs: seconds of work on the thread that
    /// asks, the tracer's): there the answer is `None` until the table is there (a cache
    /// file, or a session's background build).
    pub fn definition_of(&self, t: TypeRef) -> Option<TypeRef> {
        if let Some(found) = lock(&self.type_cache.definitions).get(&t) {
            return *found;
        }
        if !self.has_index_cache() && self.debug_info_bytes() > DEFINITION_INDEX_MAX {
            return None;
        }
        let found = self.find_definition(t);
        lock(&self.type_cache.definitions).insert(t, found);
        found
    }

    fn find_definition(&self, t: TypeRef) -> Option<TypeRef> {
        let info = self.type_info_shared(t).ok()?;
        let TypeKind::Composite {
            kind,
            declaration: true,
            ..
        } = info.kind
        else {
            return None;
        };
        let name = info.name.as_deref()?;
        let (id, _) = self.type_die(t).ok()?;
        let qualified = format!("{}{name}", self.scope_path_of(id));
        let defined = |c: &TypeRef| -> Option<CompositeKind> {
            match self.type_info_shared(*c).ok()?.kind {
                TypeKind::Composite {
                    kind,
                    declaration: false,
                    ..
                } => Some(kind),
                _ => None,
            }
        };
        // Read lazily, in order: a big program has a definition of a common class in
        // hundreds of units, and the first of the right kind is the answer.
        let candidates: Vec<TypeRef> = self
            .types_by_name(&qualified)
            .into_iter()
            .filter(|c| *c != t)
            .collect();
        if let Some(exact) = candidates.iter().find(|c| defined(c) == Some(kind)) {
            return Some(*exact);
        }
        // A union is never a struct's definition; `class` and `struct` may differ
        // between a declaration and its definition.
        let union = matches!(kind, CompositeKind::Union);
        candidates
            .iter()
            .find(|c| defined(c).is_some_and(|k| matches!(k, CompositeKind::Union) == union))
            .copied()
    }

    /// Named types (struct, class, union, enum, typedef) matching `name` (a plain or
    /// qualified name, a template instance by its exact qualified name or a `::`-suffix
    /// of it; `struct S` and `S` both work). Declarations are skipped. Answered from the
    /// name table (built first if need be): no unit is walked.
    pub fn types_by_name(&self, name: &str) -> Vec<TypeRef> {
        let name = name
            .trim_start_matches("struct ")
            .trim_start_matches("union ")
            .trim_start_matches("enum ")
            .trim_start_matches("class ")
            .trim();
        let table = self.name_table();
        let query = crate::names::normalize(name);
        let mut out: Vec<TypeRef> = Vec::new();
        for key in [name, query.as_str()] {
            for (e, _) in table.lookup(key, |k| k == crate::table::EntryKind::Type) {
                if let Some(t) = self.type_ref_of(e.die) {
                    out.push(t);
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// The type reference of a DIE the name table names (its split unit loaded first, so
    /// that the reference is the one every other answer gives).
    pub(crate) fn type_ref_of(&self, die: crate::units::DieId) -> Option<TypeRef> {
        let header = &self.units().get(die.unit)?.header;
        // Only a skeleton's DIE ids depend on its split unit being loaded; parsing every
        // other unit named (hundreds, for a common class) would be wasted.
        let may_be_skeleton = matches!(header.type_(), gimli::UnitType::Skeleton(_))
            || (header.version() < 5
                && !gimli::Section::reader(&self.dwarf().debug_addr).is_empty());
        if may_be_skeleton {
            self.unit(die.unit).ok()?;
        }
        Some(TypeRef(self.global_offset(die)))
    }

    /// The value and enum type of the enumerator `name` (`Red`, or as qualified as gdb
    /// qualifies it: `geo::Red`, `geo::Color::Red` for an `enum class`), from the name
    /// table: the first enum, in unit order, that has one by that name or `::`-suffix.
    pub fn enumerator_named(&self, name: &str) -> Option<(i128, TypeRef)> {
        let table = self.name_table();
        let mut found = table.lookup(name, |k| k == crate::table::EntryKind::Enumerator);
        found.sort_by_key(|(e, _)| e.die);
        let own = name.rsplit("::").next().unwrap_or(name);
        for (e, _) in found {
            let Some(t) = self.type_ref_of(e.die) else {
                continue;
            };
            let Ok(info) = self.type_info_shared(t) else {
                continue;
            };
            if let TypeKind::Enum { enumerators, .. } = &info.kind {
                if let Some((_, v)) = enumerators.iter().find(|(n, _)| n == own) {
                    return Some((*v, t));
                }
            }
        }
        None
    }

    /// A C-like display name for a type: `int`, `char *`, `const struct S *`, `int [4]`.
    pub fn type_name(&self, t: TypeRef) -> Result<String> {
        self.type_name_depth(t, 0)
    }

    fn type_name_depth(&self, t: TypeRef, depth: u32) -> Result<String> {
        if depth > 16 {
            return Ok("...".into());
        }
        let ty = self.type_info(t)?;
        let sub = |x: Option<TypeRef>| -> Result<String> {
            match x {
                Some(x) => self.type_name_depth(x, depth + 1),
                None => Ok("void".into()),
            }
        };
        Ok(match &ty.kind {
            // A pointer to an array or a function is written as C declares it, as
            // gdb writes it: `int (*)[4]`, `int (*)(int, int)`.
            TypeKind::Pointer(x) => {
                let inner = sub(*x)?;
                let kind = x.and_then(|x| self.type_info(x).ok()).map(|t| t.kind);
                match (kind, inner.find(" [").or_else(|| inner.find(" ("))) {
                    (Some(TypeKind::Array { .. } | TypeKind::Function { .. }), Some(at)) => {
                        format!("{} (*){}", &inner[..at], &inner[at + 1..])
                    }
                    // A pointer to such a pointer: `int (**)(void)` (a vtable pointer).
                    (Some(TypeKind::Pointer(_)), _) if inner.contains("(*") => {
                        inner.replacen("(*", "(**", 1)
                    }
                    _ => format!("{inner} *"),
                }
            }
            TypeKind::Reference { target, rvalue } => {
                format!("{} {}", sub(*target)?, if *rvalue { "&&" } else { "&" })
            }
            TypeKind::Const(x) => format!("const {}", sub(*x)?),
            TypeKind::Volatile(x) => format!("volatile {}", sub(*x)?),
            TypeKind::Restrict(x) => format!("{} restrict", sub(*x)?),
            TypeKind::Atomic(x) => format!("_Atomic {}", sub(*x)?),
            TypeKind::Array { element, dims } => {
                let mut s = sub(*element)?;
                s.push(' ');
                for d in dims {
                    match &d.count {
                        ArrayBound::Count(n) => s.push_str(&format!("[{n}]")),
                        _ => s.push_str("[]"),
                    }
                }
                s
            }
            TypeKind::Function {
                ret,
                params,
                variadic,
            } => {
                let mut ps: Vec<String> = params.iter().map(|p| sub(*p)).collect::<Result<_>>()?;
                if *variadic {
                    ps.push("...".into());
                }
                format!("{} ({})", sub(*ret)?, ps.join(", "))
            }
            TypeKind::Composite { kind, .. } => {
                let n = ty.name.clone().unwrap_or_else(|| "<anonymous>".into());
                match kind {
                    CompositeKind::Struct => format!("struct {n}"),
                    CompositeKind::Class => format!("class {n}"),
                    CompositeKind::Union => format!("union {n}"),
                }
            }
            TypeKind::Enum { .. } => format!("enum {}", ty.name.clone().unwrap_or_default()),
            _ => ty.name.clone().unwrap_or_else(|| "void".into()),
        })
    }
}
