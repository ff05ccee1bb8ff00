//! Symbol names: demangling (Rust legacy and v0, C++), normalization and matching.

/// Demangles a linkage name for display: Rust without the hash, C++ without parameters.
/// Unmangled names (C) are returned unchanged.
pub fn demangle(raw: &str) -> String {
    if raw.starts_with("_R") || is_rust_legacy(raw) {
        if let Ok(d) = rustc_demangle::try_demangle(raw) {
            return format!("{d:#}");
        }
    }
    if raw.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(raw.as_bytes()) {
            let options = cpp_demangle::DemangleOptions::new()
                .no_params()
                .no_return_type();
            if let Ok(s) = sym.demangle_with_options(&options) {
                return s;
            }
        }
    }
    raw.to_string()
}

/// Demangles a linkage name as gdb prints a symbol after a pointer: C++ with its
/// parameters (`add(int, int)`, `Shape::area() const`), Rust without the hash, C as it is.
pub fn demangle_full(raw: &str) -> String {
    if raw.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(raw.as_bytes()) {
            let options = cpp_demangle::DemangleOptions::new().no_return_type();
            if let Ok(s) = sym.demangle_with_options(&options) {
                return s;
            }
        }
    }
    demangle(raw)
}

/// A C++ special name as gdb spells it: the demangler's `{vtable(Circle)}` is `vtable
/// for Circle` (`typeinfo for`, `typeinfo name for`, `VTT for` alike); others unchanged.
pub fn special_as_gdb(name: &str) -> String {
    let Some(inner) = name.strip_prefix('{').and_then(|n| n.strip_suffix(")}")) else {
        return name.to_string();
    };
    let Some((kind, of)) = inner.split_once('(') else {
        return name.to_string();
    };
    let kind = if kind == "vtt" { "VTT" } else { kind };
    format!("{kind} for {of}")
}

/// Demangles a C++ type as a `std::type_info` names it (`St13runtime_error` →
/// `std::runtime_error`, `i` → `int`); unknown input is returned unchanged.
pub fn demangle_type(raw: &str) -> String {
    let symbol = format!("_ZTS{raw}");
    match cpp_demangle::Symbol::new(symbol.as_bytes()) {
        Ok(s) => match s.demangle_with_options(&cpp_demangle::DemangleOptions::new()) {
            Ok(text) => match text.strip_prefix("typeinfo name for ") {
                Some(t) => t.to_string(),
                None => text,
            },
            Err(_) => raw.to_string(),
        },
        Err(_) => raw.to_string(),
    }
}

/// Rust legacy symbols end in `17h` + 16 hex digits + `E` (optionally followed by a
/// `.llvm.` suffix); C++ `_ZN` names do not.
fn is_rust_legacy(raw: &str) -> bool {
    if !raw.starts_with("_ZN") {
        return false;
    }
    // The name itself holds dots (`..` for `::` inside `$LT$a..b$GT$`), so the
    // suffix starts at whichever dot follows the hash.
    let hashed = |base: &str| {
        let Some(body) = base.strip_suffix('E') else {
            return false;
        };
        let body = body.as_bytes();
        body.len() > 20 && {
            let tail = &body[body.len() - 19..];
            tail.starts_with(b"17h") && tail[3..].iter().all(u8::is_ascii_hexdigit)
        }
    };
    hashed(raw) || raw.match_indices('.').any(|(i, _)| hashed(&raw[..i]))
}

/// Normalizes a demangled name into `::`-separated path components for matching:
/// `<a::B as c::T>::m` → `a::B::m`, `<a::B>::m` → `a::B::m`, `f::<T>` and `f<T>` → `f`,
/// C++ parameter lists are dropped.
pub fn normalize(name: &str) -> String {
    let mut s = name.trim();
    // A qualified path `<X as T>::rest` or `<X>::rest` keeps X and rest.
    let mut prefix = String::new();
    if s.starts_with('<') {
        if let Some(close) = matching_angle(s, 0) {
            let inner = &s[1..close];
            let self_ty = match find_top_level(inner, " as ") {
                Some(i) => &inner[..i],
                None => inner,
            };
            prefix = normalize(self_ty);
            s = s[close + 1..].trim_start_matches("::");
        }
    }
    let mut out = String::new();
    let mut depth = 0i32;
    let mut paren = 0i32;
    for c in s.chars() {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            '(' if depth == 0 => paren += 1,
            ')' if depth == 0 => paren -= 1,
            _ if depth == 0 && paren == 0 => out.push(c),
            _ => {}
        }
    }
    let out = out.replace("::::", "::");
    let out = out.trim_end_matches("::").trim().to_string();
    match (prefix.is_empty(), out.is_empty()) {
        (true, _) => out,
        (false, true) => prefix,
        (false, false) => format!("{prefix}::{out}"),
    }
}

fn matching_angle(s: &str, open: usize) -> Option<usize> {
    let mut depth = 0;
    for (i, c) in s.char_indices().skip(open) {
        match c {
            '<' => depth += 1,
            '>' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

fn find_top_level(s: &str, needle: &str) -> Option<usize> {
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            _ if depth == 0 && s[i..].starts_with(needle) => return Some(i),
            _ => {}
        }
    }
    None
}

/// Whether a user's query (`func`, `Type::method`, `crate::module::func`) names the
/// normalized qualified name `candidate`: the query's components must be a suffix of
/// the candidate's components.
pub fn name_matches(query: &str, candidate: &str) -> bool {
    normalized_matches(&normalize(query), candidate)
}

/// [`name_matches`] for a query already passed through [`normalize`], for callers that
/// match one query against many names.
pub fn suffix_matches(normalized_query: &str, candidate: &str) -> bool {
    normalized_matches(normalized_query, candidate)
}

/// [`name_matches`] for a query that is already normalized (hot loops).
pub(crate) fn normalized_matches(query: &str, candidate: &str) -> bool {
    if query.is_empty() {
        return false;
    }
    if query == candidate {
        return true;
    }
    candidate.ends_with(query) && candidate[..candidate.len() - query.len()].ends_with("::")
}

/// Appends `name` lowercased as `workspace/symbol` searches it (newlines, which DWARF
/// names never hold, become spaces so that each name is one line of a haystack). The
/// language server's in-memory name table and the index cache's name table both use it,
/// so the two answer the same.
pub fn push_search_lowercase(out: &mut String, name: &str) {
    if name.is_ascii() {
        // Copied, then lowercased in place: a char at a time was a tenth of laying out
        // ceph-osd's symbol table.
        let start = out.len();
        out.push_str(name);
        out[start..].make_ascii_lowercase();
        if name.as_bytes().contains(&b'\n') {
            let lowered = out.split_off(start);
            out.push_str(&lowered.replace('\n', " "));
        }
    } else {
        out.extend(
            name.to_lowercase()
                .chars()
                .map(|c| if c == '\n' { ' ' } else { c }),
        );
    }
}

/// The bytes of `bytes` as a bit set, one bit per `byte % 64`: a name whose mask lacks a
/// bit of a query's cannot hold the query's characters, so fuzzy matching skips it unread.
pub fn byte_mask(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0u64, |m, &b| m | 1u64 << (b % 64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_text_is_lowercased_on_one_line() {
        let mut out = String::from("kept\n");
        push_search_lowercase(&mut out, "Ns::Foo\nBar");
        push_search_lowercase(&mut out, "|ÄÖ::Größe");
        assert_eq!(out, "kept\nns::foo bar|äö::größe");
    }

    #[test]
    fn normalizes_rust_and_cpp_names() {
        assert_eq!(normalize("<a::B as c::T>::m"), "a::B::m");
        assert_eq!(normalize("<a::B<u8>>::m"), "a::B::m");
        assert_eq!(normalize("a::f::<u32>"), "a::f");
        assert_eq!(normalize("ns::C<int>::f(int, char)"), "ns::C::f");
        assert_eq!(normalize("main"), "main");
    }

    #[test]
    fn matches_by_path_suffix() {
        assert!(name_matches("func", "krate::module::func"));
        assert!(name_matches("module::func", "krate::module::func"));
        assert!(name_matches("krate::module::func", "krate::module::func"));
        assert!(!name_matches("unc", "krate::module::func"));
        assert!(!name_matches("", "main"));
    }

    #[test]
    fn special_names_read_as_gdb_spells_them() {
        assert_eq!(special_as_gdb("{vtable(Circle)}"), "vtable for Circle");
        assert_eq!(special_as_gdb("{vtt(ns::D)}"), "VTT for ns::D");
        assert_eq!(special_as_gdb("g_buf"), "g_buf");
        assert_eq!(demangle_full("_Z3addii"), "add(int, int)");
    }

    #[test]
    fn demangles_rust_and_cpp() {
        assert_eq!(demangle("_ZN3foo3bar17h0123456789abcdefE"), "foo::bar");
        assert_eq!(demangle("_ZN2ns5Shape4areaEv"), "ns::Shape::area");
        assert_eq!(demangle("main"), "main");
        assert_eq!(demangle("_RNvCs1234_5hello4main"), "hello::main");
        // Legacy names hold dots of their own (`..` is `::` inside `<…>`).
        assert_eq!(
            demangle("_ZN60_$LT$alloc..string..String$u20$as$u20$core..fmt..Display$GT$3fmt17hf2af23b17ba917d7E"),
            "<alloc::string::String as core::fmt::Display>::fmt"
        );
        assert_eq!(
            demangle("_ZN3foo3bar17h0123456789abcdefE.llvm.12345"),
            "foo::bar"
        );
        assert_eq!(demangle_type("St13runtime_error"), "std::runtime_error");
        assert_eq!(demangle_type("i"), "int");
    }
}
