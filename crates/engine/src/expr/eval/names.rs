//! Names resolved as gdb resolves them. A plain name is the frame's local, else (C++)
//! a member of `*this`, else the variable or enumerator of that name in the namespaces
//! and classes around the frame's function, innermost first, else at file scope. A
//! qualified name (`geo::counter`, `S::total`, `::counter`, `krate::module::STATIC`)
//! is looked up from the scope it names, relative to those around the function first
//! in C++ (`inner::depth` inside `geo`), absolutely first in Rust (as gdb's Rust mode).
//! A C frame, and a function at file scope, search nothing beyond what C sees: conditions
//! are evaluated by this code on every hit.

use super::*;
use crate::expr::qualified::split_path;

/// How the frame's language scopes names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::expr) enum Rules {
    C,
    Cpp,
    Rust,
}

/// What a qualified name's leading part names, for saying why the name is unknown.
enum ScopeKind {
    Namespace,
    Enum,
    Class(Vec<symbols::Member>),
}

impl Env<'_> {
    /// The rules of the frame's unit's language (`DW_AT_language`); C's without a frame.
    pub(in crate::expr) fn rules(&self) -> Rules {
        if self.pc == 0 {
            return Rules::C;
        }
        match self
            .binary
            .language_at(self.bias.to_file(RuntimeAddr(self.pc)))
        {
            Some(symbols::Language::Cpp) => Rules::Cpp,
            Some(symbols::Language::Rust) => Rules::Rust,
            _ => Rules::C,
        }
    }

    /// The frame's parameter or local `name` (innermost block first).
    pub(crate) fn find_local(&self, name: &str) -> Option<&Variable> {
        self.scope
            .locals
            .iter()
            .filter(|v| {
                v.frame == self.inline_index && !v.shadowed && v.name.as_deref() == Some(name)
            })
            .max_by_key(|v| v.depth)
    }

    /// The namespaces and classes around the frame's function, innermost first:
    /// `geo::inner`, `geo` in `geo::inner::scale`; `geo::Shape`, `geo` in a method of
    /// `geo::Shape`. The demangled linkage name keeps template arguments (`Box<int>`).
    pub(in crate::expr) fn enclosing_scopes(&self) -> Vec<String> {
        let pc = self.bias.to_file(RuntimeAddr(self.pc));
        let Ok(Some(at)) = self.binary.function_at(pc) else {
            return Vec::new();
        };
        let name = match self.inline_index.checked_sub(1) {
            Some(k) => match at.inlined.get(k as usize) {
                Some(call) => call.name.clone(),
                None => return Vec::new(),
            },
            None => match &at.function.linkage_name {
                Some(l) => symbols::names::demangle(l),
                None => at.function.name.clone(),
            },
        };
        let mut parts = split_path(&name);
        // The function itself (and a Rust turbofish after it, `f::<T>`).
        while parts.last().is_some_and(|p| p.starts_with('<')) {
            parts.pop();
        }
        parts.pop();
        (1..=parts.len())
            .rev()
            .map(|n| parts[..n].join("::"))
            .filter(|s| !s.is_empty())
            .collect()
    }

    /// The fully qualified names `name` may stand for, in the order they are tried.
    pub(in crate::expr) fn candidates(&self, name: &str, rules: Rules) -> Vec<String> {
        if rules == Rules::C {
            return vec![name.trim_start_matches("::").to_string()];
        }
        let scopes = self.enclosing_scopes();
        let within = |scope: Option<&String>, rest: &str| -> Vec<String> {
            let path = |s: &String| match rest {
                "" => s.clone(),
                _ => format!("{s}::{rest}"),
            };
            scope.map(path).into_iter().collect()
        };
        if let Some(rest) = name.strip_prefix("::") {
            // C++: the global namespace. Rust: the crate's root, as gdb reads it.
            return match rules {
                Rules::Rust => within(scopes.last(), rest),
                _ => vec![rest.to_string()],
            };
        }
        if rules == Rules::Rust {
            let parts = split_path(name);
            match parts.first().copied() {
                Some("self") => return within(scopes.first(), &parts[1..].join("::")),
                Some("crate") => return within(scopes.last(), &parts[1..].join("::")),
                Some("super") => {
                    let ups = parts.iter().take_while(|p| **p == "super").count();
                    return within(scopes.get(ups), &parts[ups..].join("::"));
                }
                _ => {}
            }
            if parts.len() > 1 {
                // A path is absolute in gdb; relative to the module (Rust 2018) after.
                let relative = scopes.iter().map(|s| format!("{s}::{name}"));
                return std::iter::once(name.to_string()).chain(relative).collect();
            }
        }
        scopes
            .iter()
            .map(|s| format!("{s}::{name}"))
            .chain(std::iter::once(name.to_string()))
            .collect()
    }

    /// The value `name` (plain or qualified) stands for in this frame.
    pub(in crate::expr) fn variable(&self, name: &str) -> Result<EVal> {
        let qualified = name.contains("::");
        if !qualified {
            if let Some(var) = self.find_local(name) {
                return self.variable_value(var);
            }
        }
        let rules = self.rules();
        if rules == Rules::Cpp && !qualified {
            if let Some(v) = self.this_member(name)? {
                return Ok(v);
            }
        }
        let candidates = self.candidates(name, rules);
        // As gdb: this binary's globals (the unit's, then every unit's: external
        // definitions first, then other units' statics), innermost scope first; then
        // those of the other modules, the main executable first.
        for c in &candidates {
            if let Some(v) = self.binary_global(c)? {
                return Ok(v);
            }
        }
        for c in &candidates {
            if let Some(v) = self.other_module_global(c)? {
                return Ok(v);
            }
        }
        if !qualified {
            // A global of the unit by its own name whatever its scope: a static of
            // another Rust module, a namespace's variable seen from outside it.
            if let Some(var) = self
                .scope
                .globals
                .iter()
                .find(|v| v.name.as_deref() == Some(name))
            {
                return self.variable_value(var);
            }
        }
        if let Some(enums) = self.enums {
            for c in &candidates {
                if let Some((v, ty)) = enums.get(c) {
                    return Ok(self.enumerator(v, ty));
                }
            }
        }
        if matches!(name, "true" | "false") {
            return Ok(int_val(
                i128::from(name == "true"),
                IntTy {
                    size: 1,
                    signed: false,
                },
            ));
        }
        if qualified && rules == Rules::Cpp {
            // `Shape::id` in a method of `Shape`: `this->id`.
            if let Some(v) = self.this_qualified_member(name)? {
                return Ok(v);
            }
        }
        Err(self.unknown_name(name, rules))
    }

    /// A global of this binary by its fully qualified name: the unit's, then every
    /// unit's. A system library's DWARF (libc's separate debug file) is not searched:
    /// reading all of it for one name would stall the hit.
    fn binary_global(&self, qualified: &str) -> Result<Option<EVal>> {
        if let Some(var) = self
            .scope
            .globals
            .iter()
            .find(|v| v.qualified_name.as_deref() == Some(qualified))
        {
            return self.variable_value(var).map(Some);
        }
        if !is_system(self.binary.path()) {
            if let Some(var) = self.binary.globals_named(qualified).first() {
                return self.variable_value(var).map(Some);
            }
        }
        Ok(None)
    }

    /// An enumerator's value, of its enum type.
    fn enumerator(&self, v: i128, ty: TypeRef) -> EVal {
        let size = self
            .binary
            .type_size(ty)
            .ok()
            .flatten()
            .unwrap_or(4)
            .min(16) as usize;
        EVal {
            ty: ETy::Dwarf(ty),
            loc: Loc::Val(v.to_le_bytes()[..size].to_vec()),
        }
    }

    /// `*this` in a method (the frame's `this` parameter), if it has one.
    fn this_object(&self) -> Option<EVal> {
        let this = self.find_local("this")?;
        let p = self.variable_value(this).ok()?;
        self.deref(&p).ok()
    }

    /// `name` as a data member of `*this`, as gdb reads a member's name in a method.
    fn this_member(&self, name: &str) -> Result<Option<EVal>> {
        let Some(object) = self.this_object() else {
            return Ok(None);
        };
        let Ok(Shape::Composite { members }) = self.shape(&object.ty) else {
            return Ok(None);
        };
        self.find_member(&object, &members, name, 0)
    }

    /// `Class::member` in a method of `Class` (also `ns::Class::member`): `this->member`.
    fn this_qualified_member(&self, name: &str) -> Result<Option<EVal>> {
        let parts = split_path(name);
        let [.., class, member] = parts.as_slice() else {
            return Ok(None);
        };
        let Some(object) = self.this_object() else {
            return Ok(None);
        };
        let ETy::Dwarf(t) = object.ty else {
            return Ok(None);
        };
        let named = resolve(self.binary, t)
            .ok()
            .and_then(|r| self.binary.type_info_shared(r.id?).ok())
            .and_then(|info| info.name.clone());
        if named.as_deref() != Some(*class) {
            return Ok(None);
        }
        self.this_member(member)
    }

    /// A static data member of `object`'s class (`shape.made`, `this->made`): the
    /// global named by the class's qualified name.
    pub(in crate::expr) fn static_member(&self, object: &EVal, name: &str) -> Result<Option<EVal>> {
        let ETy::Dwarf(t) = object.ty else {
            return Ok(None);
        };
        let Some(class) = resolve(self.binary, t).ok().and_then(|r| r.id) else {
            return Ok(None);
        };
        if !matches!(
            self.binary.type_language(class),
            Ok(Some(symbols::Language::Cpp))
        ) {
            return Ok(None);
        }
        let Some(class_name) = self
            .binary
            .type_info_shared(class)
            .ok()
            .and_then(|info| info.name.clone())
        else {
            return Ok(None);
        };
        // The namespaces and classes around the class (`geo::`), cached per type; none
        // outside C++.
        let Ok(scope) = self.binary.enumerator_scope(class) else {
            return Ok(None);
        };
        let scope = scope.as_deref().unwrap_or_default();
        self.binary_global(&format!("{scope}{class_name}::{name}"))
    }

    /// A type by name, from the scopes around the frame's function inward out as a
    /// variable is (`Pt` in `geo::inner` is `geo::inner::Pt`); `struct S` and `S` alike.
    pub(in crate::expr) fn type_by_name(&self, name: &str) -> Option<TypeRef> {
        let bare = ["struct ", "union ", "enum ", "class "]
            .iter()
            .find_map(|tag| name.strip_prefix(tag))
            .unwrap_or(name)
            .trim();
        // Every type the name can stand for (`Pt` matches `geo::Pt` and
        // `geo::inner::Pt`): the scopes are searched only to choose among several.
        let all = self.binary.types_by_name(bare.trim_start_matches("::"));
        if all.len() < 2 {
            return all.first().copied();
        }
        let rules = self.rules();
        if rules == Rules::C {
            return all.first().copied();
        }
        self.candidates(bare, rules)
            .iter()
            .find_map(|c| self.binary.types_by_name(c).first().copied())
            .or(all.first().copied())
    }

    /// Why `name` names nothing, as gdb says it: the scope a qualified name's leading
    /// part names, and the part missing from it.
    fn unknown_name(&self, name: &str, rules: Rules) -> Error {
        let parts = split_path(name.trim_start_matches("::"));
        if parts.len() < 2 {
            return Error::Eval(format!("no symbol '{}' in this scope", parts[0]));
        }
        let lead = if name.starts_with("::") { "::" } else { "" };
        // Each leading part, longest first, as each scope it may stand for: the first
        // that names a scope is where the next part is missing.
        let mut wanted: Vec<(usize, String)> = Vec::new();
        for k in (1..parts.len()).rev() {
            let scope = format!("{lead}{}", parts[..k].join("::"));
            wanted.extend(self.candidates(&scope, rules).into_iter().map(|c| (k, c)));
        }
        let names: Vec<&str> = wanted.iter().map(|(_, c)| c.as_str()).collect();
        let kinds = self.scope_kinds(&names);
        let Some(((k, candidate), kind)) = wanted
            .iter()
            .zip(kinds)
            .find_map(|(w, kind)| Some((w, kind?)))
        else {
            return Error::Eval(format!("no symbol '{}' in this scope", parts[0]));
        };
        let missing = parts[*k];
        let module = if rules == Rules::Rust {
            "module"
        } else {
            "namespace"
        };
        Error::Eval(match kind {
            ScopeKind::Namespace => format!("no symbol '{missing}' in {module} '{candidate}'"),
            ScopeKind::Enum => format!("no enumerator named '{missing}' in enum '{candidate}'"),
            ScopeKind::Class(members)
                if k + 1 == parts.len()
                    && members.iter().any(|m| m.name.as_deref() == Some(missing)) =>
            {
                format!(
                    "cannot reference the non-static member '{missing}' of '{candidate}' \
                     without an object"
                )
            }
            ScopeKind::Class(_) => format!("there is no member named '{missing}' in '{candidate}'"),
        })
    }

    /// What each of `qualified` names, in one pass over the index: a type (an enum, a
    /// class) by its exact name, else a namespace (a Rust module) when some symbol's
    /// name continues it with `::`.
    fn scope_kinds(&self, qualified: &[&str]) -> Vec<Option<ScopeKind>> {
        let mut kinds: Vec<Option<ScopeKind>> = qualified.iter().map(|_| None).collect();
        let index = self.binary.symbol_index();
        for e in index.entries() {
            for (q, kind) in qualified.iter().zip(kinds.iter_mut()) {
                let Some(rest) = e.name.strip_prefix(q) else {
                    continue;
                };
                if rest.starts_with("::") && kind.is_none() {
                    *kind = Some(ScopeKind::Namespace);
                }
                if !rest.is_empty() || matches!(kind, Some(ScopeKind::Enum | ScopeKind::Class(_))) {
                    continue;
                }
                let found = self
                    .binary
                    .entry_type(&e)
                    .and_then(|t| resolve(self.binary, t).ok())
                    .map(|r| r.kind);
                match found {
                    Some(TypeKind::Enum { .. }) => *kind = Some(ScopeKind::Enum),
                    Some(TypeKind::Composite { members, .. }) => {
                        *kind = Some(ScopeKind::Class(members))
                    }
                    _ => {}
                }
            }
        }
        kinds
    }

    /// A global named `name` of another module, as a plain integer or double: its type
    /// lives in that module's DWARF, which this environment's values cannot refer to.
    pub(in crate::expr) fn other_module_global(&self, name: &str) -> Result<Option<EVal>> {
        let Some(modules) = self.modules else {
            return Ok(None);
        };
        modules
            .find_map(&mut |path, bias, binary| {
                if is_system(path) || Arc::ptr_eq(binary, self.binary) {
                    return None;
                }
                let found = binary.globals_named(name);
                let var = found.first()?;
                Some(self.foreign_global(name, path, bias, binary, var))
            })
            .transpose()
    }

    /// The value of `var`, a global of another module's `binary`, as a plain integer or
    /// double.
    fn foreign_global(
        &self,
        name: &str,
        path: &std::path::Path,
        bias: LoadBias,
        binary: &Arc<Binary>,
        var: &Variable,
    ) -> Result<EVal> {
        let scope = Scope::default();
        let there = Env {
            binary,
            bias,
            mem: self.mem,
            regs: self.regs,
            pc: 0,
            cfa: None,
            scope: &scope,
            inline_index: 0,
            enums: None,
            entry_regs: None,
            modules: None,
            tls: self.tls,
        };
        let v = there.variable_value(var)?;
        let ty = match there.shape(&v.ty)? {
            Shape::Int(t) => ETy::Int(t),
            Shape::Float(8) => ETy::Double,
            _ => {
                let module = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                return Self::err(format!(
                    "'{name}' is a global of {module}: only its integer and double globals \
                     can be read from here"
                ));
            }
        };
        Ok(EVal { ty, loc: v.loc })
    }
}
