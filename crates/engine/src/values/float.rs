//! Floating-point values printed as gdb prints them: `%g` with 9 or 17 significant digits
//! for float and double, and x87 long doubles converted exactly (a small bignum) before
//! rounding to 18 digits.

pub(super) fn float_text(bytes: &[u8]) -> String {
    match bytes.len() {
        4 => {
            let v = f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            if v.is_nan() {
                return nan_text(v.is_sign_negative(), u64::from(v.to_bits() & 0x7f_ffff));
            }
            format_g(f64::from(v), 9)
        }
        8 => {
            let v = f64::from_le_bytes(le8(bytes));
            if v.is_nan() {
                return nan_text(v.is_sign_negative(), v.to_bits() & ((1 << 52) - 1));
            }
            format_g(v, 17)
        }
        10 | 12 | 16 => x87_text(bytes),
        _ => "<unsupported float>".into(),
    }
}

/// A NaN as gdb prints it: its sign and its own mantissa bits (`nan(0x400000)` for a
/// float's quiet NaN, `-nan(0x8000000000000)` for a double's negative one).
fn nan_text(negative: bool, mantissa: u64) -> String {
    let sign = if negative { "-" } else { "" };
    format!("{sign}nan(0x{mantissa:x})")
}

fn le8(bytes: &[u8]) -> [u8; 8] {
    let mut b = [0u8; 8];
    for (d, s) in b.iter_mut().zip(bytes) {
        *d = *s;
    }
    b
}

/// An x87 80-bit extended value as gdb prints it (`%.21Lg`: 64 mantissa bits give
/// 19.3 decimal digits, plus 2, as for float's 9 and double's 17), converted
/// exactly with big integers: rounding through f64 would print wrong digits.
fn x87_text(bytes: &[u8]) -> String {
    if bytes.len() < 10 {
        return "<invalid long double>".into();
    }
    let mantissa = u64::from_le_bytes(le8(&bytes[..8]));
    let se = u16::from_le_bytes([bytes[8], bytes[9]]);
    let negative = se & 0x8000 != 0;
    let sign = if negative { "-" } else { "" };
    let exp = i64::from(se & 0x7fff);
    if exp == 0x7fff {
        return if mantissa << 1 == 0 {
            format!("{sign}inf")
        } else {
            format!("{sign}nan(0x{:x})", mantissa & ((1 << 62) - 1))
        };
    }
    if mantissa == 0 {
        return format!("{sign}0");
    }
    // value = mantissa * 2^e (denormals have exponent 1 - bias).
    let e = exp.max(1) - 16383 - 63;
    let (digits, point) = exact_decimal(mantissa, e);
    format!("{sign}{}", format_digits(&digits, point, 21))
}

/// Decimal digits of `m * 2^e` (at least 23 significant digits, the last ones
/// possibly truncated), the position of the decimal point counted from the first
/// digit, and whether any nonzero part was truncated (folded into a final 1 digit).
fn exact_decimal(m: u64, e: i64) -> (Vec<u8>, i64) {
    let mut big = vec![m as u32, (m >> 32) as u32];
    let mut k = 0i64;
    let mut sticky = false;
    if e >= 0 {
        big_shl(&mut big, e as u64);
    } else {
        let s = (-e) as u64;
        let est10 = ((m as f64).log10() + e as f64 * std::f64::consts::LOG10_2).floor() as i64;
        k = (24 - est10).max(0);
        for _ in 0..k {
            big_mul_small(&mut big, 10);
        }
        sticky = big_shr(&mut big, s);
    }
    let mut digits = big_to_decimal(&big);
    let point = digits.len() as i64 - k;
    if sticky {
        digits.push(1);
    }
    (digits, point)
}

fn big_mul_small(big: &mut Vec<u32>, f: u32) {
    let mut carry = 0u64;
    for w in big.iter_mut() {
        let v = u64::from(*w) * u64::from(f) + carry;
        *w = v as u32;
        carry = v >> 32;
    }
    if carry > 0 {
        big.push(carry as u32);
    }
}

fn big_shl(big: &mut Vec<u32>, bits: u64) {
    let words = (bits / 32) as usize;
    let rest = (bits % 32) as u32;
    let mut out = vec![0u32; words];
    let mut carry = 0u32;
    for w in big.iter() {
        if rest == 0 {
            out.push(*w);
        } else {
            out.push((w << rest) | carry);
            carry = w >> (32 - rest);
        }
    }
    if carry > 0 {
        out.push(carry);
    }
    *big = out;
}

/// Shifts right; returns whether a nonzero bit was shifted out.
fn big_shr(big: &mut Vec<u32>, bits: u64) -> bool {
    let words = (bits / 32) as usize;
    let rest = (bits % 32) as u32;
    let mut lost = big.iter().take(words).any(|w| *w != 0);
    if words >= big.len() {
        let any = big.iter().any(|w| *w != 0);
        big.clear();
        big.push(0);
        return any;
    }
    let mut out: Vec<u32> = big[words..].to_vec();
    if rest > 0 {
        lost |= out[0] & ((1 << rest) - 1) != 0;
        for i in 0..out.len() {
            let hi = out.get(i + 1).copied().unwrap_or(0);
            out[i] = (out[i] >> rest) | (hi << (32 - rest));
        }
    }
    *big = out;
    lost
}

fn big_to_decimal(big: &[u32]) -> Vec<u8> {
    let mut n: Vec<u32> = big.to_vec();
    let mut chunks = Vec::new();
    while n.iter().any(|w| *w != 0) {
        let mut rem = 0u64;
        for w in n.iter_mut().rev() {
            let v = (rem << 32) | u64::from(*w);
            *w = (v / 1_000_000_000) as u32;
            rem = v % 1_000_000_000;
        }
        chunks.push(rem as u32);
        while n.len() > 1 && n.last() == Some(&0) {
            n.pop();
        }
    }
    let mut digits = Vec::new();
    for (i, c) in chunks.iter().rev().enumerate() {
        let s = if i == 0 {
            c.to_string()
        } else {
            format!("{c:09}")
        };
        digits.extend(s.bytes().map(|b| b - b'0'));
    }
    if digits.is_empty() {
        digits.push(0);
    }
    digits
}

/// `%.{prec}g` of the decimal `0.d1d2d3... * 10^point`, rounded half to even.
fn format_digits(digits: &[u8], point: i64, prec: usize) -> String {
    let mut d: Vec<u8> = digits.iter().copied().skip_while(|x| *x == 0).collect();
    let skipped = (digits.len() - d.len()) as i64;
    let mut point = point - skipped;
    if d.is_empty() {
        return "0".into();
    }
    if d.len() > prec {
        let next = d[prec];
        let sticky = d[prec + 1..].iter().any(|x| *x != 0);
        d.truncate(prec);
        let odd = d[prec - 1] % 2 == 1;
        if next > 5 || (next == 5 && (sticky || odd)) {
            let mut i = prec;
            loop {
                if i == 0 {
                    d.insert(0, 1);
                    d.truncate(prec);
                    point += 1;
                    break;
                }
                i -= 1;
                if d[i] == 9 {
                    d[i] = 0;
                } else {
                    d[i] += 1;
                    break;
                }
            }
        }
    }
    while d.len() > 1 && d.last() == Some(&0) {
        d.pop();
    }
    let x = point - 1;
    let text = |ds: &[u8]| -> String { ds.iter().map(|b| char::from(b'0' + b)).collect() };
    if x < -4 || x >= prec as i64 {
        let mut m = text(&d[..1]);
        if d.len() > 1 {
            m.push('.');
            m.push_str(&text(&d[1..]));
        }
        format!("{m}e{}{:02}", if x < 0 { '-' } else { '+' }, x.abs())
    } else if x < 0 {
        format!("0.{}{}", "0".repeat((-x - 1) as usize), text(&d))
    } else {
        let int_len = (x + 1) as usize;
        if d.len() <= int_len {
            format!("{}{}", text(&d), "0".repeat(int_len - d.len()))
        } else {
            format!("{}.{}", text(&d[..int_len]), text(&d[int_len..]))
        }
    }
}

/// C's `%.{prec}g`, as gdb prints floating-point values.
pub(crate) fn format_g(v: f64, prec: usize) -> String {
    if v.is_nan() {
        return if v.is_sign_negative() {
            "-nan(0x8000000000000)".into()
        } else {
            "nan(0x8000000000000)".into()
        };
    }
    if v.is_infinite() {
        return if v < 0.0 { "-inf".into() } else { "inf".into() };
    }
    if v == 0.0 {
        return if v.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let sci = format!("{:.*e}", prec.saturating_sub(1), v);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < -4 || exp >= prec as i32 {
        let m = trim_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{m}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (prec as i32 - 1 - exp).max(0) as usize;
        trim_zeros(&format!("{:.*}", decimals, v)).to_string()
    }
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_g_matches_printf() {
        assert_eq!(
            format_g(2.71, 17),
            "2.7100000000000000".trim_end_matches('0')
        );
        assert_eq!(format_g(0.5, 9), "0.5");
        assert_eq!(float_text(&f32::NAN.to_le_bytes()), "nan(0x400000)");
        assert_eq!(
            float_text(&(-f64::NAN).to_le_bytes()),
            "-nan(0x8000000000000)"
        );
        assert_eq!(
            float_text(&f64::from_bits(0x7ff0_0000_0000_0001).to_le_bytes()),
            "nan(0x1)"
        );
        assert_eq!(format_g(1e20, 17), "1e+20");
        assert_eq!(format_g(-2.5e-7, 17), "-2.4999999999999999e-07");
        assert_eq!(format_g(100.0, 17), "100");
        assert_eq!(format_g(f64::from(1.1f32), 9), "1.10000002");
    }

    fn x87(v: &str) -> Vec<u8> {
        // Test vectors from gcc: the 10 bytes of `long double` literals.
        let (m, se): (u64, u16) = match v {
            "3.14" => (0xc8f5c28f5c28f5c3, 0x4000),
            "0.1" => (0xcccccccccccccccd, 0x3ffb),
            "1.5" => (0xc000000000000000, 0x3fff),
            "-2/3" => (0xaaaaaaaaaaaaaaab, 0xbffe),
            "2^100" => (0x8000000000000000, 0x4063),
            "2^-100" => (0x8000000000000000, 0x3f9b),
            _ => (0, 0),
        };
        let mut b = m.to_le_bytes().to_vec();
        b.extend_from_slice(&se.to_le_bytes());
        b
    }

    #[test]
    fn long_double_prints_exactly() {
        assert_eq!(x87_text(&x87("3.14")), "3.1400000000000000001");
        assert_eq!(x87_text(&x87("0.1")), "0.100000000000000000001");
        assert_eq!(x87_text(&x87("1.5")), "1.5");
        assert_eq!(x87_text(&x87("-2/3")), "-0.666666666666666666685");
        assert_eq!(x87_text(&x87("2^100")), "1.2676506002282294015e+30");
        assert_eq!(x87_text(&x87("2^-100")), "7.88860905221011805412e-31");
        assert_eq!(format_digits(&[1, 2, 3], 2, 18), "12.3");
        assert_eq!(format_digits(&[9, 9, 9], 1, 2), "10");
        assert_eq!(format_digits(&[1], -5, 18), "1e-06");
    }
}
