//! A panic's `core::fmt::Arguments` rendered without running code: the template's
//! literal pieces, and each argument whose formatter function is one tandem recognises
//! by its symbol (integers, floats, `bool`, `char`, `&str`, `String`, `&dyn Display`,
//! nested `Arguments`) read from memory and printed as that formatter prints it.
//! Anything else — an unknown formatter, a placeholder with width or precision — is
//! written `{}`: the text is the program's message or says where it cannot be.

use std::sync::Arc;

use symbols::{Binary, MemoryReader, RuntimeAddr, TypeKind};

use crate::modules::{Module, Modules};
use crate::values::{Place, Renderer};

/// How deep nested `Arguments` and `&dyn Display` may go.
const MAX_DEPTH: u32 = 4;
/// The longest text read for one `&str` or `String` argument.
const MAX_STR: u64 = 4096;

/// Where the fields of `fmt::Arguments` and `fmt::rt::Argument` sit: from the DWARF of
/// the binary when it describes them, else rustc 1.9x's layout (checked on every use:
/// a formatter must be the start of a known function).
#[derive(Clone, Copy, Debug)]
pub(super) struct Layout {
    template: u64,
    args: u64,
    arg_size: u64,
    value: u64,
    formatter: u64,
}

impl Default for Layout {
    fn default() -> Layout {
        Layout {
            template: 0,
            args: 8,
            arg_size: 16,
            value: 0,
            formatter: 8,
        }
    }
}

fn members(binary: &Binary, name: &str) -> Option<(Vec<symbols::Member>, Option<u64>)> {
    for ty in binary.types_by_name(name) {
        let info = binary.type_info_shared(ty).ok()?;
        if let TypeKind::Composite { members, .. } = &info.kind {
            if !members.is_empty() {
                return Some((members.clone(), info.size));
            }
        }
    }
    None
}

fn offset(members: &[symbols::Member], name: &str) -> Option<u64> {
    members
        .iter()
        .find(|m| m.name.as_deref() == Some(name))
        .map(|m| m.byte_offset)
}

impl Layout {
    /// Whether `binary`'s DWARF describes the older `Arguments { pieces, fmt, args }`.
    pub(super) fn has_pieces(binary: &Binary) -> bool {
        members(binary, "core::fmt::Arguments").is_some_and(|(m, _)| offset(&m, "pieces").is_some())
    }

    /// The layout `binary`'s DWARF gives, when it has the types of this version of
    /// `fmt::Arguments` (`template` + `args`, `Argument { ty: ArgumentType }` with a
    /// `Placeholder { value, formatter }` variant).
    pub(super) fn from_dwarf(binary: &Binary) -> Option<Layout> {
        let (arguments, _) = members(binary, "core::fmt::Arguments")?;
        let template = offset(&arguments, "template")?;
        let args = offset(&arguments, "args")?;
        let (_, arg_size) = members(binary, "core::fmt::rt::Argument")?;
        let (placeholder, _) = members(binary, "core::fmt::rt::ArgumentType::Placeholder")?;
        Some(Layout {
            template,
            args,
            arg_size: arg_size?,
            value: offset(&placeholder, "value")?,
            formatter: offset(&placeholder, "formatter")?,
        })
    }
}

/// Renders `Arguments` values of one stopped process.
pub(super) struct ArgsText<'a> {
    pub(super) modules: &'a Modules,
    pub(super) mem: &'a dyn MemoryReader,
    pub(super) layout: Layout,
}

fn read_u64(mem: &dyn MemoryReader, addr: u64) -> Option<u64> {
    let mut b = [0u8; 8];
    mem.read(RuntimeAddr(addr), &mut b).ok()?;
    Some(u64::from_le_bytes(b))
}

fn read_bytes(mem: &dyn MemoryReader, addr: u64, len: u64) -> Option<Vec<u8>> {
    if len > MAX_STR {
        return None;
    }
    let mut b = vec![0u8; len as usize];
    if len > 0 {
        mem.read(RuntimeAddr(addr), &mut b).ok()?;
    }
    Some(b)
}

fn read_text(mem: &dyn MemoryReader, addr: u64, len: u64) -> Option<String> {
    String::from_utf8(read_bytes(mem, addr, len)?).ok()
}

/// Which formatting trait a formatter implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Trait {
    Display,
    Debug,
}

/// `<T as core::fmt::Display>::fmt` → (`T`, Display).
fn parse_formatter(symbol: &str) -> Option<(&str, Trait)> {
    let inner = symbol.strip_prefix('<')?.strip_suffix(">::fmt")?;
    let (ty, tr) = inner.rsplit_once(" as ")?;
    let tr = match tr {
        "core::fmt::Display" => Trait::Display,
        "core::fmt::Debug" => Trait::Debug,
        _ => return None,
    };
    Some((ty, tr))
}

impl ArgsText<'_> {
    /// The text of the `Arguments` at `addr`.
    pub(super) fn arguments(&self, addr: u64, depth: u32) -> Option<String> {
        if depth > MAX_DEPTH {
            return None;
        }
        let template = read_u64(self.mem, addr + self.layout.template)?;
        let args = read_u64(self.mem, addr + self.layout.args)?;
        // A message without arguments is the string itself: `args` holds `len << 1 | 1`.
        if args & 1 == 1 {
            return read_text(self.mem, template, args >> 1);
        }
        self.template(template, args, depth)
    }

    /// Walks a template (see `core::fmt::Arguments`: literal pieces prefixed by their
    /// length, `0x80` + a 16-bit length for long ones, placeholders `0b11xxxxxx` with
    /// optional flags, width, precision and argument index, and a final 0).
    fn template(&self, template: u64, args: u64, depth: u32) -> Option<String> {
        let bytes = readable_prefix(self.mem, template, 4096)?;
        let mut out = String::new();
        let mut i = 0usize;
        let mut next_arg = 0u64;
        let field = |i: usize, n: usize| -> Option<u64> {
            let b = bytes.get(i..i + n)?;
            Some(b.iter().rev().fold(0u64, |acc, x| acc << 8 | u64::from(*x)))
        };
        loop {
            let n = *bytes.get(i)?;
            i += 1;
            match n {
                0 => break,
                1..=0x7f => {
                    let piece = bytes.get(i..i + usize::from(n))?;
                    out.push_str(std::str::from_utf8(piece).ok()?);
                    i += usize::from(n);
                }
                0x80 => {
                    let len = field(i, 2)? as usize;
                    i += 2;
                    let piece = bytes.get(i..i + len)?;
                    out.push_str(std::str::from_utf8(piece).ok()?);
                    i += len;
                }
                0xc0..=0xff => {
                    let mut plain = true;
                    if n & 1 != 0 {
                        plain = false;
                        i += 4;
                    }
                    if n & 2 != 0 {
                        plain = false;
                        i += 2;
                    }
                    if n & 4 != 0 {
                        plain = false;
                        i += 2;
                    }
                    if n & 8 != 0 {
                        next_arg = field(i, 2)?;
                        i += 2;
                    }
                    if n & 0x30 != 0 {
                        plain = false;
                    }
                    let arg = args + next_arg * self.layout.arg_size;
                    next_arg += 1;
                    // Width, precision and flags change the text: not rendered.
                    let text = plain.then(|| self.argument(arg, depth)).flatten();
                    out.push_str(text.as_deref().unwrap_or("{}"));
                }
                _ => return None,
            }
            if out.len() > 64 * 1024 {
                return None;
            }
        }
        Some(out)
    }

    /// One `fmt::rt::Argument`: its value pointer and formatter.
    fn argument(&self, arg: u64, depth: u32) -> Option<String> {
        let value = read_u64(self.mem, arg + self.layout.value)?;
        let formatter = read_u64(self.mem, arg + self.layout.formatter)?;
        self.formatted(value, formatter, depth)
    }

    /// What the function at `formatter` prints for the value at `value`.
    fn formatted(&self, value: u64, formatter: u64, depth: u32) -> Option<String> {
        let module = self.modules.find(formatter)?;
        let binary = module.binary()?;
        let symbol = binary.symbol_name_at(module.to_file(formatter))?;
        let (ty, tr) = parse_formatter(&symbol)?;
        self.value(&module, ty, tr, value, depth)
    }

    /// Renders a value of the Rust type named `ty` (as a demangled symbol writes it).
    fn value(
        &self,
        module: &Arc<Module>,
        ty: &str,
        tr: Trait,
        at: u64,
        depth: u32,
    ) -> Option<String> {
        let mem = self.mem;
        let bytes = |n: u64| read_bytes(mem, at, n);
        let int = |n: u64, signed: bool| -> Option<String> {
            let b = bytes(n)?;
            let mut raw = [0u8; 16];
            raw[..b.len()].copy_from_slice(&b);
            let u = u128::from_le_bytes(raw);
            Some(if signed {
                let shift = 128 - 8 * n as u32;
                (((u << shift) as i128) >> shift).to_string()
            } else {
                u.to_string()
            })
        };
        let text = match ty {
            "u8" => int(1, false)?,
            "u16" => int(2, false)?,
            "u32" => int(4, false)?,
            "u64" | "usize" => int(8, false)?,
            "u128" => int(16, false)?,
            "i8" => int(1, true)?,
            "i16" => int(2, true)?,
            "i32" => int(4, true)?,
            "i64" | "isize" => int(8, true)?,
            "i128" => int(16, true)?,
            "bool" => match bytes(1)?[0] {
                0 => "false".into(),
                1 => "true".into(),
                _ => return None,
            },
            "char" => {
                let b = bytes(4)?;
                let c = char::from_u32(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))?;
                match tr {
                    Trait::Display => c.to_string(),
                    Trait::Debug => format!("{c:?}"),
                }
            }
            "f32" => {
                let b = bytes(4)?;
                let f = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                match tr {
                    Trait::Display => format!("{f}"),
                    Trait::Debug => format!("{f:?}"),
                }
            }
            "f64" => {
                let b = bytes(8)?;
                let mut raw = [0u8; 8];
                raw.copy_from_slice(&b);
                let f = f64::from_le_bytes(raw);
                match tr {
                    Trait::Display => format!("{f}"),
                    Trait::Debug => format!("{f:?}"),
                }
            }
            "&str" | "&mut str" => {
                let ptr = read_u64(mem, at)?;
                let len = read_u64(mem, at + 8)?;
                let s = read_text(mem, ptr, len)?;
                match tr {
                    Trait::Display => s,
                    Trait::Debug => format!("{s:?}"),
                }
            }
            "alloc::string::String" => {
                let s = self.string(module, at)?;
                match tr {
                    Trait::Display => s,
                    Trait::Debug => format!("{s:?}"),
                }
            }
            "core::fmt::Arguments" if tr == Trait::Display || tr == Trait::Debug => {
                self.arguments(at, depth + 1)?
            }
            _ => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                // `&dyn Display`: the vtable's first method (after drop, size and
                // align) is the concrete type's `fmt`.
                if let Some(rest) = ty
                    .strip_prefix("&dyn ")
                    .or_else(|| ty.strip_prefix("&mut dyn "))
                {
                    let wanted = match tr {
                        Trait::Display => "core::fmt::Display",
                        Trait::Debug => "core::fmt::Debug",
                    };
                    if rest != wanted {
                        return None;
                    }
                    let data = read_u64(mem, at)?;
                    let vtable = read_u64(mem, at + 8)?;
                    let method = read_u64(mem, vtable + 24)?;
                    return self.formatted(data, method, depth + 1);
                }
                // `&T` prints as `T` does (for both traits).
                let inner = ty.strip_prefix("&mut ").or_else(|| ty.strip_prefix('&'))?;
                if inner == "T" || inner.is_empty() {
                    return None;
                }
                let target = read_u64(mem, at)?;
                return self.value(module, inner, tr, target, depth + 1);
            }
        };
        Some(text)
    }

    /// A `String`'s text, through the binary's DWARF for `alloc::string::String`.
    fn string(&self, module: &Arc<Module>, at: u64) -> Option<String> {
        let candidates = std::iter::once(module.clone())
            .chain(self.modules.main().cloned())
            .collect::<Vec<_>>();
        for m in candidates {
            let Some(binary) = m.binary() else { continue };
            for ty in binary.types_by_name("alloc::string::String") {
                let r = Renderer {
                    binary,
                    bias: m.bias,
                    mem: self.mem,
                    bounds: None,
                    languages: &crate::rust::LANGUAGES,
                };
                if let Some((ptr, len)) = r.string_parts(ty, &Place::Memory(at)) {
                    if len > MAX_STR {
                        return None;
                    }
                    return read_text(self.mem, ptr, len);
                }
            }
        }
        None
    }
}

/// The bytes at `addr` up to `max`, as many as are readable (a template may sit near
/// the end of a mapping).
fn readable_prefix(mem: &dyn MemoryReader, addr: u64, max: usize) -> Option<Vec<u8>> {
    let mut n = max;
    let mut bytes = vec![0u8; n];
    while n > 0 {
        if mem.read(RuntimeAddr(addr), &mut bytes[..n]).is_ok() {
            bytes.truncate(n);
            return Some(bytes);
        }
        n /= 2;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatter_symbols_name_their_type_and_trait() {
        assert_eq!(
            parse_formatter("<usize as core::fmt::Display>::fmt"),
            Some(("usize", Trait::Display))
        );
        assert_eq!(
            parse_formatter("<&dyn core::fmt::Debug as core::fmt::Debug>::fmt"),
            Some(("&dyn core::fmt::Debug", Trait::Debug))
        );
        assert_eq!(parse_formatter("<u8 as core::fmt::LowerHex>::fmt"), None);
        assert_eq!(parse_formatter("core::fmt::write"), None);
    }
}
