//! Qualified names as one identifier: `geo::counter`, `::counter`, `S::total`,
//! `Box<int>::count`, `krate::module::STATIC`, lexed into one token and written the way
//! the compiler names things in DWARF (gcc's `Box<char const*>`, `Box<Box<int> >`), so
//! that a lookup by the qualified name is a comparison of strings.

use super::lex::{lex, Tok};
use super::*;

/// The longest template argument list read from an expression (`Box<...>`): a bound on
/// the nested lexing it takes.
const MAX_TEMPLATE_TEXT: usize = 200;

/// Words that end a name where a `::` follows them.
pub(super) const KEYWORDS: [&str; 14] = [
    "sizeof", "struct", "union", "enum", "class", "const", "volatile", "unsigned", "signed", "int",
    "char", "short", "long", "bool",
];

fn ident_start(b: Option<&u8>) -> bool {
    b.is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
}

fn skip_spaces(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

fn ident_end(b: &[u8], mut i: usize) -> usize {
    while b
        .get(i)
        .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
    {
        i += 1;
    }
    i
}

/// Where a `::` that continues a qualified name starts its next component: the index of
/// the identifier after `::` at `i` (spaces allowed around it), if one follows.
pub(super) fn path_separator(b: &[u8], i: usize) -> Option<usize> {
    let j = skip_spaces(b, i);
    if b.get(j) != Some(&b':') || b.get(j + 1) != Some(&b':') {
        return None;
    }
    let k = skip_spaces(b, j + 2);
    ident_start(b.get(k)).then_some(k)
}

/// The qualified name whose first component starts at `start` (after a leading `::`,
/// which `name` already holds): every `::component` that follows, with template
/// arguments where a `::` follows them (`Box<int>::count`). Returns the name and the
/// index after it. The last component takes no template arguments here: `a<b>c` is a
/// comparison unless the parser finds a type of that name.
pub(super) fn qualified_ident(src: &str, start: usize, mut name: String) -> (String, usize) {
    let b = src.as_bytes();
    let mut i = ident_end(b, start);
    name.push_str(&src[start..i]);
    // A keyword before a leading `::` (`sizeof ::counter`, `(struct ::S *)p`) is no
    // scope of it.
    if KEYWORDS.contains(&name.as_str()) {
        return (name, i);
    }
    loop {
        if let Some(next) = path_separator(b, i) {
            name.push_str("::");
            let end = ident_end(b, next);
            name.push_str(&src[next..end]);
            i = end;
            continue;
        }
        let open = skip_spaces(b, i);
        if b.get(open) == Some(&b'<') {
            if let Some((args, close)) = template_in_source(src, open) {
                if let Some(next) = path_separator(b, close) {
                    name.push_str(&args);
                    name.push_str("::");
                    let end = ident_end(b, next);
                    name.push_str(&src[next..end]);
                    i = end;
                    continue;
                }
            }
        }
        return (name, i);
    }
}

/// The template argument list starting at the `<` at `open`, written canonically, and
/// the index after its `>`; `None` when the text there is not one (`a < b && c > d`).
fn template_in_source(src: &str, open: usize) -> Option<(String, usize)> {
    let b = src.as_bytes();
    let mut depth = 0i32;
    let mut i = open;
    loop {
        let c = *b.get(i)?;
        match c {
            b'<' => depth += 1,
            b'>' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            b'a'..=b'z'
            | b'A'..=b'Z'
            | b'0'..=b'9'
            | b'_'
            | b' '
            | b','
            | b'*'
            | b'&'
            | b':'
            | b'-' => {}
            _ => return None,
        }
        i += 1;
        if i - open > MAX_TEMPLATE_TEXT {
            return None;
        }
    }
    let toks = split_shifts(lex(&src[open..=i]).ok()?);
    let (text, used) = template_args(&toks, 0)?;
    (used == toks.len()).then_some((text, i + 1))
}

/// `>>` as two `>` (as C++11 reads it between template arguments).
pub(super) fn split_shifts(toks: Vec<Tok>) -> Vec<Tok> {
    let mut out = Vec::with_capacity(toks.len());
    for t in toks {
        if t == Tok::Punct(">>") {
            out.extend([Tok::Punct(">"), Tok::Punct(">")]);
        } else {
            out.push(t);
        }
    }
    out
}

/// The template argument list `toks` starts with (its `<`), written as gcc names
/// template instances (`<char const*, Box<int> >`), and the number of tokens it took.
pub(super) fn template_args(toks: &[Tok], depth: u32) -> Option<(String, usize)> {
    if depth > MAX_DEPTH || toks.first() != Some(&Tok::Punct("<")) {
        return None;
    }
    let mut args: Vec<String> = Vec::new();
    // The current argument: its words and what follows them (`*`, `&`).
    let mut words: Vec<String> = Vec::new();
    let mut suffix = String::new();
    let mut negative = false;
    let mut i = 1;
    loop {
        match toks.get(i)? {
            Tok::Ident(w) => {
                if toks.get(i + 1) == Some(&Tok::Punct("<")) {
                    let (inner, used) = template_args(&toks[i + 1..], depth + 1)?;
                    words.push(format!("{w}{inner}"));
                    i += 1 + used;
                    continue;
                }
                words.push(w.clone());
            }
            Tok::Int(v, _) => {
                words.push(if negative {
                    format!("-{v}")
                } else {
                    v.to_string()
                });
                negative = false;
            }
            Tok::Punct("-") => negative = true,
            Tok::Punct(p @ ("*" | "&" | "&&")) => suffix.push_str(p),
            Tok::Punct(p @ ("," | ">")) => {
                if words.is_empty() {
                    return None;
                }
                args.push(canonical_arg(&words, &suffix));
                words.clear();
                suffix.clear();
                if *p == ">" {
                    let mut text = format!("<{}", args.join(", "));
                    // gcc keeps C++03's space between two closing brackets.
                    if text.ends_with('>') {
                        text.push(' ');
                    }
                    text.push('>');
                    return Some((text, i + 1));
                }
            }
            _ => return None,
        }
        i += 1;
    }
}

/// One template argument as gcc writes it: its base type's words in gcc's order
/// (`unsigned long` is `long unsigned int`), `const` after them (`char const*`).
fn canonical_arg(words: &[String], suffix: &str) -> String {
    let konst = words.iter().any(|w| w == "const");
    let base: Vec<&str> = words
        .iter()
        .map(String::as_str)
        .filter(|w| *w != "const")
        .collect();
    let base = base.join(" ");
    let base = match base.as_str() {
        "unsigned" => "unsigned int",
        "signed" | "signed int" => "int",
        "long" | "signed long" | "long signed int" | "signed long int" => "long int",
        "unsigned long" | "unsigned long int" | "long unsigned" => "long unsigned int",
        "short" | "signed short" | "signed short int" => "short int",
        "unsigned short" | "unsigned short int" | "short unsigned" => "short unsigned int",
        "long long" | "signed long long" | "signed long long int" => "long long int",
        "unsigned long long" | "unsigned long long int" | "long long unsigned" => {
            "long long unsigned int"
        }
        other => other,
    };
    let mut text = base.to_string();
    if konst {
        text.push_str(" const");
    }
    text.push_str(suffix);
    text
}

/// The components of a qualified name, split at the `::` outside template arguments
/// and parentheses: `a::b<c::d>::e` is `a`, `b<c::d>`, `e`. A leading `::` gives an
/// empty first component.
pub(crate) fn split_path(name: &str) -> Vec<&str> {
    let b = name.as_bytes();
    let mut parts = Vec::new();
    let (mut depth, mut start, mut i) = (0i32, 0, 0);
    while i < b.len() {
        match b[i] {
            b'<' | b'(' => depth += 1,
            b'>' | b')' => depth -= 1,
            b':' if depth == 0 && b.get(i + 1) == Some(&b':') => {
                parts.push(&name[start..i]);
                i += 2;
                start = i;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    parts.push(&name[start..]);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_types(_: &str) -> bool {
        false
    }

    fn ident(src: &str) -> String {
        match parse(src, &no_types) {
            Ok(Expr::Ident(name)) => name,
            other => panic!("{src}: not one name: {other:?}"),
        }
    }

    #[test]
    fn a_qualified_name_is_one_identifier() {
        assert_eq!(ident("geo::counter"), "geo::counter");
        assert_eq!(ident("geo :: inner::counter"), "geo::inner::counter");
        assert_eq!(ident("::counter"), "::counter");
        assert_eq!(ident(":: geo::counter"), "::geo::counter");
        assert_eq!(ident("Box<int>::count"), "Box<int>::count");
        assert_eq!(ident("a::b<c::d>::e"), "a::b<c::d>::e");
        assert_eq!(ident("Box< Box<int>>::count"), "Box<Box<int> >::count");
        assert_eq!(
            ident("Pair<const char *,unsigned long>::count"),
            "Pair<char const*, long unsigned int>::count"
        );
        assert_eq!(ident("Arr<-1>::count"), "Arr<-1>::count");
        assert_eq!(ident("krate::module::STATIC"), "krate::module::STATIC");
        let e = parse("sizeof ::counter", &no_types).unwrap();
        assert!(
            matches!(e, Expr::SizeofExpr(ref x) if **x == Expr::Ident("::counter".into())),
            "{e:?}"
        );
    }

    #[test]
    fn qualified_names_stay_operands() {
        let e = parse("geo::counter + ::counter * 2", &no_types).unwrap();
        let Expr::Binary(BinOp::Add, a, b) = e else {
            panic!("not a sum: {e:?}")
        };
        assert_eq!(*a, Expr::Ident("geo::counter".into()));
        assert!(
            matches!(*b, Expr::Binary(BinOp::Mul, ref x, _) if **x == Expr::Ident("::counter".into()))
        );
        // `<` stays a comparison unless a `::` follows the would-be arguments.
        let e = parse("a < b && c > d", &no_types).unwrap();
        assert!(matches!(e, Expr::Binary(BinOp::And, _, _)));
        let e = parse("a<b>c", &no_types).unwrap();
        assert!(matches!(e, Expr::Binary(BinOp::Gt, _, _)));
        let e = parse("x ? a::b : ::c", &no_types).unwrap();
        assert!(matches!(e, Expr::Cond(..)));
        let e = parse("s.geo", &no_types).unwrap();
        assert!(matches!(e, Expr::Member(_, ref m) if m == "geo"));
        let e = parse("geo::p->x", &no_types).unwrap();
        assert!(
            matches!(e, Expr::Arrow(ref b, ref m) if m == "x" && **b == Expr::Ident("geo::p".into()))
        );
        let e = parse("a::", &no_types).unwrap_err().to_string();
        assert!(e.contains("unexpected '::'"), "{e}");
    }

    #[test]
    fn qualified_types_in_casts_and_sizeof() {
        let types = |n: &str| matches!(n, "geo::Pt" | "S" | "Box<int>" | "Box<Box<int> >");
        let e = parse("(geo::Pt *)&p", &types).unwrap();
        assert!(
            matches!(e, Expr::Cast(TypeName { ref base, pointers: 1 }, _) if base == "geo::Pt")
        );
        let e = parse("sizeof(::S)", &types).unwrap();
        assert!(matches!(e, Expr::SizeofType(TypeName { ref base, .. }) if base == "::S"));
        let e = parse("sizeof(Box<int>)", &types).unwrap();
        assert!(matches!(e, Expr::SizeofType(TypeName { ref base, .. }) if base == "Box<int>"));
        let e = parse("(Box<Box<int>>*)p", &types).unwrap();
        assert!(
            matches!(e, Expr::Cast(TypeName { ref base, pointers: 1 }, _) if base == "Box<Box<int> >")
        );
        // Not a type: a comparison inside parentheses.
        let e = parse("(a<b>*p)", &types).unwrap();
        assert!(matches!(e, Expr::Binary(BinOp::Gt, _, _)));
    }

    #[test]
    fn paths_split_outside_template_arguments() {
        assert_eq!(split_path("a::b<c::d>::e"), ["a", "b<c::d>", "e"]);
        assert_eq!(split_path("::counter"), ["", "counter"]);
        assert_eq!(split_path("main"), ["main"]);
        assert_eq!(split_path("f(a::b)::x"), ["f(a::b)", "x"]);
    }
}
