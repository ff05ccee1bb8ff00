//! The lexer: expression text to tokens (C and Rust literals, punctuation, `$reg`).

use super::qualified::{path_separator, qualified_ident, KEYWORDS};
use super::*;

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Tok {
    Int(i128, IntTy),
    /// A character literal's byte.
    Char(u8),
    Float(f64),
    Ident(String),
    Reg(String),
    Str(String),
    /// A tuple field after `.` (`t.0`).
    Field(String),
    Punct(&'static str),
}

const PUNCTS: [&str; 31] = [
    "->", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "::", "(", ")", "[", "]", ".", "*", "&",
    "-", "+", "!", "~", "/", "%", "<", ">", "^", "|", "?", ":", ",", "=",
];

pub(super) fn lex(src: &str) -> Result<Vec<Tok>> {
    let b = src.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        // `t.0`, `x.1.0`: a tuple field, not a floating literal.
        let after_operand = matches!(
            out.last(),
            Some(Tok::Ident(_) | Tok::Field(_) | Tok::Punct(")") | Tok::Punct("]"))
        );
        if c == b'.' && after_operand && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            out.push(Tok::Punct("."));
            i += 1;
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            out.push(Tok::Field(src[start..i].to_string()));
            continue;
        }
        if c == b'"' {
            let mut text = Vec::new();
            i += 1;
            loop {
                match b.get(i) {
                    None => return Err(Error::Syntax("unterminated string literal".into())),
                    Some(b'"') => {
                        i += 1;
                        break;
                    }
                    Some(b'\\') => {
                        let (v, len) = char_literal(&b[i..])
                            .ok_or_else(|| Error::Syntax("invalid escape in string".into()))?;
                        text.push(v);
                        i += len;
                    }
                    Some(&ch) => {
                        text.push(ch);
                        i += 1;
                    }
                }
            }
            out.push(Tok::Str(String::from_utf8_lossy(&text).into_owned()));
            continue;
        }
        if c.is_ascii_digit() && rust_int_literal(&src[i..]).is_some() {
            if let Some((v, ty, len)) = rust_int_literal(&src[i..]) {
                out.push(Tok::Int(v, ty));
                i += len;
                continue;
            }
        }
        if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            let start = i;
            let hex = c == b'0' && matches!(b.get(i + 1), Some(b'x' | b'X'));
            if hex {
                i += 2;
                while i < b.len() && b[i].is_ascii_hexdigit() {
                    i += 1;
                }
            } else {
                while i < b.len()
                    && (b[i].is_ascii_digit()
                        || b[i] == b'.'
                        || b[i] == b'e'
                        || b[i] == b'E'
                        || ((b[i] == b'-' || b[i] == b'+') && matches!(b[i - 1], b'e' | b'E')))
                {
                    i += 1;
                }
            }
            let text = &src[start..i];
            let suffix_start = i;
            while i < b.len() && matches!(b[i], b'u' | b'U' | b'l' | b'L' | b'f' | b'F') {
                i += 1;
            }
            let suffix = src[suffix_start..i].to_ascii_lowercase();
            if !hex
                && (text.contains('.') || text.contains('e') || text.contains('E') || suffix == "f")
            {
                let v: f64 = text
                    .parse()
                    .map_err(|_| Error::Syntax(format!("invalid number '{text}'")))?;
                out.push(Tok::Float(v));
                continue;
            }
            let v = if hex {
                i128::from_str_radix(&text[2..], 16)
            } else if text.len() > 1 && text.starts_with('0') {
                i128::from_str_radix(&text[1..], 8)
            } else {
                text.parse::<i128>()
            }
            .map_err(|_| Error::Syntax(format!("invalid number '{text}'")))?;
            let unsigned = suffix.contains('u');
            let long = suffix.contains('l');
            let ty = if long
                || v > i128::from(u32::MAX)
                || (v > i128::from(i32::MAX) && !unsigned && !hex)
            {
                IntTy {
                    size: 8,
                    signed: !unsigned && v <= i128::from(i64::MAX),
                }
            } else if unsigned || v > i128::from(i32::MAX) {
                IntTy {
                    size: 4,
                    signed: false,
                }
            } else {
                INT
            };
            out.push(Tok::Int(v, ty));
            continue;
        }
        if c == b'\'' {
            let (v, len) = char_literal(&b[i + 1..])
                .ok_or_else(|| Error::Syntax("invalid character literal".into()))?;
            i += 1 + len;
            if b.get(i) != Some(&b'\'') {
                return Err(Error::Syntax("unterminated character literal".into()));
            }
            i += 1;
            out.push(Tok::Char(v));
            continue;
        }
        if c == b'$' {
            let start = i;
            i += 1;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Reg(src[start + 1..i].to_string()));
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            // `geo::inner::counter`, `Box<int>::count`: one name (qualified.rs).
            let (name, end) = qualified_ident(src, i, String::new());
            out.push(Tok::Ident(name));
            i = end;
            continue;
        }
        // A leading `::` (the global namespace; a Rust crate's root) where an operand
        // starts: `::counter`, `x ? a : ::b`.
        let operand_before = match out.last() {
            Some(Tok::Ident(w)) => !KEYWORDS.contains(&w.as_str()),
            last => matches!(
                last,
                Some(Tok::Field(_) | Tok::Punct(")") | Tok::Punct("]"))
                    | Some(Tok::Int(..) | Tok::Char(_) | Tok::Float(_) | Tok::Str(_) | Tok::Reg(_))
            ),
        };
        if !operand_before {
            if let Some(next) = path_separator(b, i) {
                let (name, end) = qualified_ident(src, next, "::".to_string());
                out.push(Tok::Ident(name));
                i = end;
                continue;
            }
        }
        let rest = &src[i..];
        match PUNCTS.iter().find(|p| rest.starts_with(**p)) {
            Some(p) => {
                out.push(Tok::Punct(p));
                i += p.len();
            }
            None => {
                let ch = rest.chars().next().unwrap_or('?');
                return Err(Error::Syntax(format!("unexpected character '{ch}'")));
            }
        }
    }
    Ok(out)
}

/// A Rust integer literal with a type suffix or `_` separators (`5u8`, `1_000`,
/// `0xffu32`): its value, type and length. Plain C literals return `None`.
pub(super) fn rust_int_literal(src: &str) -> Option<(i128, IntTy, usize)> {
    let b = src.as_bytes();
    let hex = src.starts_with("0x") || src.starts_with("0X");
    let mut i = if hex { 2 } else { 0 };
    let digits_start = i;
    while i < b.len()
        && (b[i] == b'_'
            || if hex {
                b[i].is_ascii_hexdigit()
            } else {
                b[i].is_ascii_digit()
            })
    {
        i += 1;
    }
    let digits: String = src[digits_start..i].chars().filter(|c| *c != '_').collect();
    let mut end = i;
    while end < b.len() && (b[end].is_ascii_alphanumeric()) {
        end += 1;
    }
    let suffix = &src[i..end];
    let ty = match suffix {
        "i8" => IntTy {
            size: 1,
            signed: true,
        },
        "u8" => IntTy {
            size: 1,
            signed: false,
        },
        "i16" => IntTy {
            size: 2,
            signed: true,
        },
        "u16" => IntTy {
            size: 2,
            signed: false,
        },
        "i32" => INT,
        "u32" => IntTy {
            size: 4,
            signed: false,
        },
        "i64" | "isize" => LONG,
        "u64" | "usize" => ULONG,
        "i128" => IntTy {
            size: 16,
            signed: true,
        },
        "u128" => IntTy {
            size: 16,
            signed: false,
        },
        "" if src[..i].contains('_') => {
            if b.get(i) == Some(&b'.') {
                return None;
            }
            INT
        }
        _ => return None,
    };
    if digits.is_empty() {
        return None;
    }
    let v = if hex {
        i128::from_str_radix(&digits, 16)
    } else {
        digits.parse::<i128>()
    }
    .ok()?;
    let ty = if suffix.is_empty() && v > i128::from(i32::MAX) {
        LONG
    } else {
        ty
    };
    Some((v, ty, end))
}

pub(super) fn char_literal(b: &[u8]) -> Option<(u8, usize)> {
    match *b.first()? {
        b'\\' => {
            let c = *b.get(1)?;
            let v = match c {
                b'n' => b'\n',
                b't' => b'\t',
                b'r' => b'\r',
                b'0'..=b'7' => {
                    let mut v: u32 = 0;
                    let mut n = 1;
                    while n < 4 && b.get(n).is_some_and(|d| (b'0'..=b'7').contains(d)) {
                        v = v * 8 + u32::from(b[n] - b'0');
                        n += 1;
                    }
                    return Some((v as u8, n));
                }
                b'a' => 7,
                b'b' => 8,
                b'f' => 12,
                b'v' => 11,
                other => other,
            };
            Some((v, 2))
        }
        c => Some((c, 1)),
    }
}
