//! The parser: tokens to an [`Expr`] tree by precedence climbing, with casts decided by
//! whether a name is a type.

use super::lex::{lex, Tok};
use super::qualified;
use super::*;

const BASE_WORDS: [&str; 11] = [
    "int", "char", "short", "long", "unsigned", "signed", "float", "double", "void", "_Bool",
    "bool",
];

struct Parser<'a> {
    toks: Vec<Tok>,
    pos: usize,
    is_type: &'a dyn Fn(&str) -> bool,
    depth: u32,
}

/// Parses an expression. `is_type` says whether an identifier names a type (a typedef),
/// which decides whether `(name)` starts a cast.
pub fn parse(src: &str, is_type: &dyn Fn(&str) -> bool) -> Result<Expr> {
    let toks = lex(src)?;
    if toks.is_empty() {
        return Err(Error::Syntax("empty expression".into()));
    }
    let mut p = Parser {
        toks,
        pos: 0,
        is_type,
        depth: 0,
    };
    let e = p.conditional()?;
    if p.pos < p.toks.len() {
        return Err(Error::Syntax(format!(
            "unexpected {}",
            describe(&p.toks[p.pos])
        )));
    }
    Ok(e)
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Int(v, _) => format!("'{v}'"),
        Tok::Char(c) => format!("'{}'", char::from(*c).escape_default()),
        Tok::Float(v) => format!("'{v}'"),
        Tok::Ident(s) => format!("'{s}'"),
        Tok::Reg(s) => format!("'${s}'"),
        Tok::Str(s) => format!("{s:?}"),
        Tok::Field(s) => format!("'{s}'"),
        Tok::Punct(p) => format!("'{p}'"),
    }
}

fn binop(p: &str) -> Option<(BinOp, u8)> {
    Some(match p {
        "||" => (BinOp::Or, 1),
        "&&" => (BinOp::And, 2),
        "|" => (BinOp::BitOr, 3),
        "^" => (BinOp::BitXor, 4),
        "&" => (BinOp::BitAnd, 5),
        "==" => (BinOp::Eq, 6),
        "!=" => (BinOp::Ne, 6),
        "<" => (BinOp::Lt, 7),
        "<=" => (BinOp::Le, 7),
        ">" => (BinOp::Gt, 7),
        ">=" => (BinOp::Ge, 7),
        "<<" => (BinOp::Shl, 8),
        ">>" => (BinOp::Shr, 8),
        "+" => (BinOp::Add, 9),
        "-" => (BinOp::Sub, 9),
        "*" => (BinOp::Mul, 10),
        "/" => (BinOp::Div, 10),
        "%" => (BinOp::Rem, 10),
        _ => return None,
    })
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn peek_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Some(Tok::Punct(q)) if *q == p)
    }

    fn expect(&mut self, p: &str) -> Result<()> {
        if self.peek_punct(p) {
            self.pos += 1;
            Ok(())
        } else {
            match self.peek() {
                Some(t) => Err(Error::Syntax(format!(
                    "expected '{p}', found {}",
                    describe(t)
                ))),
                None => Err(Error::Syntax(format!("expected '{p}' at the end"))),
            }
        }
    }

    /// `c ? a : b`, below `||` and right-associative as in C: `a ? b : c ? d : e` is
    /// `a ? b : (c ? d : e)`, and the middle operand is a whole expression.
    fn conditional(&mut self) -> Result<Expr> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Error::Syntax("expression nested too deeply".into()));
        }
        let c = self.binary(0)?;
        let e = if self.peek_punct("?") {
            self.pos += 1;
            let a = self.conditional()?;
            self.expect(":")?;
            let b = self.conditional()?;
            Expr::Cond(Box::new(c), Box::new(a), Box::new(b))
        } else {
            c
        };
        self.depth -= 1;
        Ok(e)
    }

    fn binary(&mut self, min_prec: u8) -> Result<Expr> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Error::Syntax("expression nested too deeply".into()));
        }
        let mut lhs = self.unary()?;
        while let Some(Tok::Punct(p)) = self.peek() {
            let Some((op, prec)) = binop(p) else { break };
            if prec <= min_prec {
                break;
            }
            self.pos += 1;
            let rhs = self.binary(prec)?;
            lhs = Expr::Binary(op, Box::new(lhs), Box::new(rhs));
        }
        self.depth -= 1;
        Ok(lhs)
    }

    fn starts_type(&self, at: usize) -> bool {
        match self.toks.get(at) {
            Some(Tok::Ident(w)) => {
                BASE_WORDS.contains(&w.as_str())
                    || matches!(
                        w.as_str(),
                        "struct" | "union" | "enum" | "const" | "volatile"
                    )
                    || (self.is_type)(w.trim_start_matches("::"))
                    || self.template_type_at(at).is_some()
            }
            _ => false,
        }
    }

    /// A type named with template arguments at `at` (`Box<int>`, `Box<Box<int>>`) when
    /// `is_type` knows it: its name as gcc writes it and the position after its `>`.
    /// `a<b>c` is left a comparison when no type `a<b>` exists.
    fn template_type_at(&self, at: usize) -> Option<(String, usize)> {
        let Some(Tok::Ident(w)) = self.toks.get(at) else {
            return None;
        };
        if self.toks.get(at + 1) != Some(&Tok::Punct("<")) {
            return None;
        }
        // `>>` is two closing brackets here; `origin` maps each token back to its own.
        let mut split = Vec::new();
        let mut origin = Vec::new();
        for (j, t) in self.toks.iter().enumerate().skip(at + 1) {
            let n = if *t == Tok::Punct(">>") { 2 } else { 1 };
            split.extend(qualified::split_shifts(vec![t.clone()]));
            origin.extend(std::iter::repeat_n(j, n));
        }
        let (args, used) = qualified::template_args(&split, 0)?;
        let last = *origin.get(used.checked_sub(1)?)?;
        if origin.get(used) == Some(&last) {
            // Only half of a `>>` closes the arguments.
            return None;
        }
        let name = format!("{w}{args}");
        (self.is_type)(name.trim_start_matches("::")).then_some((name, last + 1))
    }

    fn type_name(&mut self) -> Result<TypeName> {
        let mut words: Vec<String> = Vec::new();
        while let Some(Tok::Ident(w)) = self.peek() {
            let w = w.clone();
            if w == "const" || w == "volatile" {
                self.pos += 1;
                continue;
            }
            let tagged = matches!(w.as_str(), "struct" | "union" | "enum");
            let is_base = BASE_WORDS.contains(&w.as_str());
            if !words.is_empty()
                && !is_base
                && !tagged
                && !words
                    .last()
                    .is_some_and(|l| matches!(l.as_str(), "struct" | "union" | "enum"))
            {
                break;
            }
            if !words.is_empty()
                && !is_base
                && words.iter().any(|x| BASE_WORDS.contains(&x.as_str()))
            {
                break;
            }
            if !is_base && !tagged {
                if let Some((name, next)) = self.template_type_at(self.pos) {
                    words.push(name);
                    self.pos = next;
                    break;
                }
            }
            words.push(w);
            self.pos += 1;
            if !is_base && !tagged {
                break;
            }
        }
        if words.is_empty() {
            return Err(Error::Syntax("expected a type".into()));
        }
        let mut pointers = 0;
        while self.peek_punct("*") {
            self.pos += 1;
            pointers += 1;
        }
        Ok(TypeName {
            base: words.join(" "),
            pointers,
        })
    }

    fn unary(&mut self) -> Result<Expr> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Error::Syntax("expression nested too deeply".into()));
        }
        let e = match self.peek().cloned() {
            Some(Tok::Punct(p)) if matches!(p, "*" | "&" | "-" | "+" | "!" | "~") => {
                self.pos += 1;
                let op = match p {
                    "*" => UnOp::Deref,
                    "&" => UnOp::AddrOf,
                    "-" => UnOp::Neg,
                    "+" => UnOp::Plus,
                    "!" => UnOp::Not,
                    _ => UnOp::BitNot,
                };
                Expr::Unary(op, Box::new(self.unary()?))
            }
            Some(Tok::Ident(w)) if w == "sizeof" => {
                self.pos += 1;
                if self.peek_punct("(") && self.starts_type(self.pos + 1) {
                    self.pos += 1;
                    let t = self.type_name()?;
                    self.expect(")")?;
                    Expr::SizeofType(t)
                } else {
                    Expr::SizeofExpr(Box::new(self.unary()?))
                }
            }
            Some(Tok::Punct("(")) if self.starts_type(self.pos + 1) => {
                self.pos += 1;
                let t = self.type_name()?;
                self.expect(")")?;
                Expr::Cast(t, Box::new(self.unary()?))
            }
            _ => self.postfix()?,
        };
        self.depth -= 1;
        Ok(e)
    }

    fn postfix(&mut self) -> Result<Expr> {
        let mut e = self.primary()?;
        loop {
            if self.peek_punct(".") || self.peek_punct("->") {
                let arrow = self.peek_punct("->");
                self.pos += 1;
                let name = match self.peek().cloned() {
                    Some(Tok::Ident(name)) => name,
                    Some(Tok::Field(n)) if !arrow => n,
                    _ => return Err(Error::Syntax("expected a member name".into())),
                };
                self.pos += 1;
                if !arrow && self.peek_punct("(") {
                    self.pos += 1;
                    // `c.at(i)`: `c[i]` with its bounds (or key) checked, as gdb's
                    // xmethods read it; `[]` here never inserts, so they agree.
                    if name == "at" && !self.peek_punct(")") {
                        let i = self.conditional()?;
                        self.expect(")")?;
                        e = Expr::Index(Box::new(e), Box::new(i));
                        continue;
                    }
                    self.expect(")")?;
                    e = Expr::MethodCall(Box::new(e), name);
                    continue;
                }
                e = if arrow {
                    Expr::Arrow(Box::new(e), name)
                } else {
                    Expr::Member(Box::new(e), name)
                };
            } else if self.peek_punct("[") {
                self.pos += 1;
                let i = self.conditional()?;
                self.expect("]")?;
                e = Expr::Index(Box::new(e), Box::new(i));
            } else {
                return Ok(e);
            }
        }
    }

    fn primary(&mut self) -> Result<Expr> {
        let Some(t) = self.peek().cloned() else {
            return Err(Error::Syntax("unexpected end of expression".into()));
        };
        self.pos += 1;
        match t {
            Tok::Int(v, ty) => Ok(Expr::Int(v, ty)),
            Tok::Char(c) => Ok(Expr::Char(c)),
            Tok::Float(v) => Ok(Expr::Float(v)),
            Tok::Ident(name) => Ok(Expr::Ident(name)),
            Tok::Reg(name) => Ok(Expr::Register(name)),
            Tok::Str(text) => Ok(Expr::Str(text)),
            Tok::Punct("(") => {
                let e = self.conditional()?;
                self.expect(")")?;
                Ok(e)
            }
            other => Err(Error::Syntax(format!("unexpected {}", describe(&other)))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_types(_: &str) -> bool {
        false
    }

    #[test]
    fn parses_precedence_and_casts() {
        let e = parse("a + b * 2 == 7 && !c", &no_types).unwrap();
        assert!(matches!(e, Expr::Binary(BinOp::And, _, _)));
        let e = parse("(unsigned char) x", &no_types).unwrap();
        assert!(
            matches!(e, Expr::Cast(TypeName { ref base, pointers: 0 }, _) if base == "unsigned char")
        );
        let e = parse("(struct point *) p", &no_types).unwrap();
        assert!(
            matches!(e, Expr::Cast(TypeName { ref base, pointers: 1 }, _) if base == "struct point")
        );
        let e = parse("sizeof(int)", &no_types).unwrap();
        assert!(matches!(e, Expr::SizeofType(_)));
        let e = parse("p->next->v[3].x", &no_types).unwrap();
        assert!(matches!(e, Expr::Member(_, ref m) if m == "x"));
        assert!(matches!(parse("$rax", &no_types).unwrap(), Expr::Register(ref r) if r == "rax"));
        assert!(matches!(parse("'a'", &no_types).unwrap(), Expr::Char(97)));
        assert!(matches!(
            parse("0x10u", &no_types).unwrap(),
            Expr::Int(
                16,
                IntTy {
                    size: 4,
                    signed: false
                }
            )
        ));
    }

    #[test]
    fn the_conditional_operator_binds_as_in_c() {
        let e = parse("a || b ? c : d ? e : f", &no_types).unwrap();
        let Expr::Cond(c, _, other) = e else {
            panic!("not a conditional: {e:?}")
        };
        assert!(matches!(*c, Expr::Binary(BinOp::Or, _, _)));
        assert!(matches!(*other, Expr::Cond(..)));
        let e = parse("a ? b ? 1 : 2 : 3", &no_types).unwrap();
        assert!(matches!(e, Expr::Cond(_, ref m, _) if matches!(**m, Expr::Cond(..))));
        let e = parse("x[i ? 1 : 2] + 1", &no_types).unwrap();
        assert!(matches!(e, Expr::Binary(BinOp::Add, _, _)));
        let e = parse("a ? b", &no_types).unwrap_err().to_string();
        assert!(e.contains("expected ':'"), "{e}");
    }

    #[test]
    fn syntax_errors_say_what_is_wrong() {
        let e = parse("a +", &no_types).unwrap_err().to_string();
        assert!(e.contains("unexpected end"), "{e}");
        let e = parse("(a", &no_types).unwrap_err().to_string();
        assert!(e.contains("expected ')'"), "{e}");
        let e = parse("a # b", &no_types).unwrap_err().to_string();
        assert!(e.contains("unexpected character '#'"), "{e}");
        let deep = "(".repeat(200) + "1" + &")".repeat(200);
        assert!(parse(&deep, &no_types).is_err());
    }
}
