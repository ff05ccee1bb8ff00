//! Wide characters as gdb prints them: `wchar_t` (`L`), `char16_t` (`u`), `char32_t`
//! (`U`) and `char8_t` (`u8`) values, arrays and pointers — `119 L'w'`, `L"wide\000"`,
//! `0x… L"pointer"` — told by the type's name, since C's `wchar_t` is a typedef of
//! `int` and only its name says it is a character.

use symbols::{Binary, MemoryReader, RuntimeAddr, TypeKind, TypeRef};

use super::{escape_char, int_value, MAX_STRING, PRINT_MAX, REPEATS};

/// The literal prefix of a wide character type (through typedefs and qualifiers), with
/// the size of one unit; `None` for every other type.
pub(crate) fn wide_prefix(binary: &Binary, ty: TypeRef) -> Option<(&'static str, usize)> {
    let mut t = ty;
    for _ in 0..16 {
        let info = binary.type_info_shared(t).ok()?;
        let size = |n: usize| info.size.map_or(n, |s| s as usize);
        match info.name.as_deref() {
            Some("wchar_t") => return Some(("L", size(4))),
            Some("char16_t") => return Some(("u", size(2))),
            Some("char32_t") => return Some(("U", size(4))),
            Some("char8_t") => return Some(("u8", size(1))),
            _ => {}
        }
        match info.kind {
            TypeKind::Typedef(Some(n)) | TypeKind::Const(Some(n)) | TypeKind::Volatile(Some(n)) => {
                t = n
            }
            _ => return None,
        }
    }
    None
}

/// One unit as it appears between quotes.
fn escape_unit(v: u32, quote: char) -> String {
    if v < 0x80 {
        return escape_char(v as u8, quote);
    }
    match char::from_u32(v) {
        Some(c) if !c.is_control() => c.to_string(),
        _ if v < 0x100 => format!("\\{v:03o}"),
        _ => format!("\\x{v:x}"),
    }
}

/// The units of `bytes`, `size` bytes each, little-endian.
fn units(bytes: &[u8], size: usize) -> Vec<u32> {
    bytes
        .chunks_exact(size.clamp(1, 4))
        .map(|c| int_value(c, false) as u32)
        .collect()
}

/// A wide character value: its number, then the character (`119 L'w'`).
pub(crate) fn wide_char_text(prefix: &str, bytes: &[u8], signed: bool) -> String {
    let v = int_value(bytes, signed);
    let unit = int_value(bytes, false) as u32;
    format!("{v} {prefix}'{}'", escape_unit(unit, '\''))
}

/// A wide character array as gdb prints it: a string with its final NUL dropped, runs
/// of more than 10 equal units as `L'c' <repeats N times>`, at most 200 units, then `...`.
pub(crate) fn wide_array_text(prefix: &str, bytes: &[u8], size: usize) -> String {
    let mut u = units(bytes, size);
    if u.last() == Some(&0) {
        u.pop();
    }
    if u.is_empty() {
        return format!("{prefix}\"\"");
    }
    let mut parts = Vec::new();
    let mut open = String::new();
    let mut i = 0;
    while i < u.len() && i < PRINT_MAX {
        let c = u[i];
        let run = u[i..].iter().take_while(|x| **x == c).count();
        if run > REPEATS {
            if !open.is_empty() {
                parts.push(format!("{prefix}\"{}\"", std::mem::take(&mut open)));
            }
            parts.push(format!(
                "{prefix}'{}' <repeats {run} times>",
                escape_unit(c, '\'')
            ));
            i += run;
        } else {
            open.push_str(&escape_unit(c, '"'));
            i += 1;
        }
    }
    if !open.is_empty() {
        parts.push(format!("{prefix}\"{open}\""));
    }
    let more = if i < u.len() { "..." } else { "" };
    format!("{}{more}", parts.join(", "))
}

/// The wide string a pointer points to (`0x… L"text"`), at most 200 units.
/// `head` is the pointer's own text (its address and symbol).
pub(crate) fn wide_pointer_text(
    mem: &dyn MemoryReader,
    addr: u64,
    head: &str,
    prefix: &str,
    size: usize,
) -> String {
    let size = size.clamp(1, 4);
    let mut out = String::new();
    let mut unit = vec![0u8; size];
    for k in 0..MAX_STRING {
        let at = addr + (k * size) as u64;
        if mem.read(RuntimeAddr(at), &mut unit).is_err() {
            if k == 0 {
                return format!("{head} <error: cannot access memory at address {addr:#x}>");
            }
            return format!("{head} {prefix}\"{out}\"...");
        }
        let v = int_value(&unit, false) as u32;
        if v == 0 {
            return format!("{head} {prefix}\"{out}\"");
        }
        out.push_str(&escape_unit(v, '"'));
    }
    format!("{head} {prefix}\"{out}\"...")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_text_is_gdbs() {
        let bytes: Vec<u8> = [119u32, 105, 100, 101, 0, 0]
            .iter()
            .flat_map(|u| u.to_le_bytes())
            .collect();
        assert_eq!(wide_array_text("L", &bytes, 4), "L\"wide\\000\"");
        assert_eq!(wide_char_text("L", &119i32.to_le_bytes(), true), "119 L'w'");
        assert_eq!(wide_array_text("u", &[0, 0], 2), "u\"\"");
        let zeros = vec![0u8; 4 * 30];
        assert_eq!(
            wide_array_text("L", &zeros, 4),
            "L'\\000' <repeats 29 times>"
        );
    }
}
