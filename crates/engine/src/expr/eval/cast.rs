//! Casts, named types, assignment and the text of values and types.

use super::*;

impl Env<'_> {
    pub(in crate::expr) fn named_type(&self, t: &TypeName) -> Result<ETy> {
        let base = match t.base.as_str() {
            // The binary's own character types, so that a cast to one shows as gdb
            // shows a `char` (`65 'A'`).
            name @ ("char" | "signed char" | "unsigned char")
                if self.c_char_type(name).is_some() =>
            {
                self.c_char_type(name).map_or(ETy::Void, ETy::Dwarf)
            }
            "char" | "signed char" => ETy::Int(IntTy {
                size: 1,
                signed: true,
            }),
            "unsigned char" => ETy::Int(IntTy {
                size: 1,
                signed: false,
            }),
            "short" | "short int" | "signed short" => ETy::Int(IntTy {
                size: 2,
                signed: true,
            }),
            "unsigned short" | "unsigned short int" => ETy::Int(IntTy {
                size: 2,
                signed: false,
            }),
            "int" | "signed" | "signed int" => ETy::Int(INT),
            "unsigned" | "unsigned int" => ETy::Int(IntTy {
                size: 4,
                signed: false,
            }),
            "long" | "long int" | "long long" | "long long int" | "signed long" => ETy::Int(LONG),
            "unsigned long"
            | "unsigned long int"
            | "unsigned long long"
            | "unsigned long long int" => ETy::Int(ULONG),
            // C++'s `bool` prints `true`/`false` (as gdb does in a C++ frame).
            "bool" if self.cpp_frame() => ETy::Bool,
            "_Bool" | "bool" => ETy::Int(IntTy {
                size: 1,
                signed: false,
            }),
            "double" | "float" => ETy::Double,
            "void" => ETy::Void,
            name => match self.type_by_name(name) {
                Some(t) => ETy::Dwarf(t),
                None => return Self::err(format!("no type named '{name}'")),
            },
        };
        let mut ty = base;
        for _ in 0..t.pointers {
            ty = ETy::Ptr(Box::new(ty));
        }
        Ok(ty)
    }

    pub(in crate::expr) fn cast(&self, v: &EVal, to: ETy) -> Result<EVal> {
        if to == ETy::Bool {
            // Any nonzero value converts to true, not to its low byte.
            return Ok(EVal {
                ty: ETy::Bool,
                loc: Loc::Val(vec![u8::from(self.truthy(v)?)]),
            });
        }
        let n = self.load_num(v)?;
        match self.shape(&to)? {
            Shape::Int(t) => {
                let v = wrap(
                    match n {
                        Num::I(i, _) => i,
                        Num::F(f) => f as i128,
                        Num::P(p) => i128::from(p),
                    },
                    t,
                );
                // Keep the named type (an enum, a typedef) so the result renders as one.
                let size = usize::from(t.size.min(16));
                Ok(EVal {
                    ty: to,
                    loc: Loc::Val(v.to_le_bytes()[..size].to_vec()),
                })
            }
            Shape::Float(_) => Ok(self.num_val(Num::F(match n {
                Num::I(i, _) => i as f64,
                Num::F(f) => f,
                Num::P(p) => p as f64,
            }))),
            Shape::Ptr(_) => {
                let p = match n {
                    Num::I(i, _) => i as u64,
                    Num::P(p) => p,
                    Num::F(_) => {
                        return Self::err("cannot cast a floating-point value to a pointer")
                    }
                };
                Ok(EVal {
                    ty: to,
                    loc: Loc::Val(p.to_le_bytes().to_vec()),
                })
            }
            _ => Self::err("can only cast to arithmetic and pointer types"),
        }
    }

    /// Where and what to write to store `value` into `target` (C assignment
    /// conversions: arithmetic and pointer values are converted to the target's type;
    /// structs and unions are copied whole when they have the same size).
    pub(crate) fn assignment(&self, target: &EVal, value: &EVal) -> Result<(u64, Vec<u8>)> {
        let Loc::Mem(addr) = target.loc else {
            return Self::err("cannot assign to a value that is not in memory");
        };
        let size = self.size_of(&target.ty)?;
        let bytes = match self.shape(&target.ty)? {
            Shape::Int(_) | Shape::Ptr(_) => {
                let converted = self.cast(value, target.ty.clone())?;
                self.bytes(&converted)?
            }
            Shape::Float(4) => {
                let f = match self.load_num(value)? {
                    Num::I(i, _) => i as f64,
                    Num::F(f) => f,
                    Num::P(_) => return Self::err("cannot assign a pointer to a float"),
                };
                (f as f32).to_le_bytes().to_vec()
            }
            Shape::Float(8) => {
                let f = match self.load_num(value)? {
                    Num::I(i, _) => i as f64,
                    Num::F(f) => f,
                    Num::P(_) => return Self::err("cannot assign a pointer to a double"),
                };
                f.to_le_bytes().to_vec()
            }
            Shape::Composite { .. } | Shape::Array { .. } => {
                if self.size_of(&value.ty)? != size {
                    return Self::err("cannot assign values of different types");
                }
                self.bytes(value)?
            }
            _ => return Self::err("cannot assign to a value of this type"),
        };
        if bytes.len() as u64 != size {
            return Self::err("cannot assign values of different sizes");
        }
        Ok((addr, bytes))
    }

    /// Renders a value as text (for logpoints and synthetic results).
    pub(crate) fn text(&self, v: &EVal) -> String {
        if let (ETy::Str, Loc::Val(b)) = (&v.ty, &v.loc) {
            return format!("{:?}", String::from_utf8_lossy(b));
        }
        if let ETy::Dwarf(t) | ETy::SubArray(t, _) = v.ty {
            let dim = match v.ty {
                ETy::SubArray(_, d) => d,
                _ => 0,
            };
            let place = Self::place_of(v);
            let renderer = crate::values::Renderer {
                binary: self.binary,
                bias: self.bias,
                mem: self.mem,
                bounds: Some(&|b| self.array_bound(b)),
                languages: &crate::rust::LANGUAGES,
            };
            return renderer.render("", t, place, dim).0.rendered;
        }
        match self.load_num(v) {
            Ok(Num::I(i, _)) if v.ty == ETy::Bool => (i != 0).to_string(),
            Ok(Num::I(i, _)) => i.to_string(),
            Ok(Num::F(f)) => crate::values::format_g(f, 17),
            Ok(Num::P(p)) => format!("{p:#x}"),
            Err(e) => format!("<error: {e}>"),
        }
    }

    /// A C name for a value's type.
    pub(crate) fn type_name(&self, ty: &ETy) -> String {
        match ty {
            ETy::Dwarf(t) | ETy::SubArray(t, _) => {
                self.binary.type_name(*t).unwrap_or_else(|_| "?".into())
            }
            ETy::Int(t) => match (t.size, t.signed) {
                (1, true) => "char".into(),
                (1, false) => "unsigned char".into(),
                (2, true) => "short".into(),
                (2, false) => "unsigned short".into(),
                (4, true) => "int".into(),
                (4, false) => "unsigned int".into(),
                (_, true) => "long".into(),
                (_, false) => "unsigned long".into(),
            },
            ETy::Bool => "bool".into(),
            ETy::Double => "double".into(),
            ETy::Void => "void".into(),
            ETy::Str => "&str".into(),
            ETy::Ptr(t) => format!("{} *", self.type_name(t)),
        }
    }
}
