//! Completions for the debug console and watch expressions (names visible in a frame,
//! members after `.` and `->`), and the program's source files (loaded sources).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use symbols::{SymbolKind, TypeKind};
use tracer::Tracer;

use super::env::{with_env, EvalIn};
use super::{is_system, lock, Session};
use crate::error::{Error, Result};
use crate::expr::{self, ETy};
use crate::ids::FrameId;
use crate::modules::Module;
use crate::values::resolve;

/// At most this many completions are returned.
const MAX_COMPLETIONS: usize = 200;

/// What a completion names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CompletionKind {
    /// A local, parameter or global variable.
    Variable,
    /// A function of the main executable.
    Function,
    /// A named type (struct, union, enum, typedef).
    Type,
    /// A member of a struct or union, after `.` or `->`.
    Field,
}

/// One completion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The name to insert (it completes the last identifier of the prefix).
    pub label: String,
    /// What it names.
    pub kind: CompletionKind,
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Splits `s.inner.fi` into the base `s.inner`, the operator and the partial `fi`;
/// `None` when the prefix does not end in a member access.
fn member_access(prefix: &str) -> Option<(&str, &str, &str)> {
    let partial_start = prefix
        .char_indices()
        .rev()
        .take_while(|(_, c)| is_ident(*c))
        .last()
        .map_or(prefix.len(), |(i, _)| i);
    let (head, partial) = prefix.split_at(partial_start);
    let (head, op) = if let Some(h) = head.strip_suffix("->") {
        (h, "->")
    } else if let Some(h) = head.strip_suffix('.') {
        (h, ".")
    } else {
        return None;
    };
    // The base is the trailing chain of names, members, subscripts and arrows.
    let bytes = head.as_bytes();
    let mut i = bytes.len();
    let mut depth = 0i32;
    while i > 0 {
        let c = bytes[i - 1] as char;
        if c == ']' {
            depth += 1;
        } else if c == '[' {
            depth -= 1;
        } else if depth == 0 && !(is_ident(c) || c == '.') {
            if c == '>' && i >= 2 && bytes[i - 2] == b'-' {
                i -= 2;
                continue;
            }
            break;
        }
        i -= 1;
    }
    let base = head[i..].trim();
    (!base.is_empty()).then_some((base, op, partial))
}

impl Session {
    /// Completions of the last identifier of `prefix` in a frame (or, without one,
    /// among the main executable's globals, functions and types): locals and
    /// parameters visible there, the globals of its unit and of the program,
    /// functions and types of the main executable; after `a.` or `p->`, the members of
    /// the struct or union. Sorted by label, at most 200; empty when nothing fits or
    /// the process is running.
    pub fn completions(&self, frame: Option<FrameId>, prefix: &str) -> Vec<Completion> {
        match self.completions_inner(frame, prefix) {
            Ok(v) => v,
            Err(e) => {
                tracing::debug!("no completions for '{prefix}': {e}");
                Vec::new()
            }
        }
    }

    fn completions_inner(&self, frame: Option<FrameId>, prefix: &str) -> Result<Vec<Completion>> {
        self.check_stopped()?;
        let place = match frame {
            Some(f) => EvalIn::Frame(Box::new(self.frame(f)?)),
            None => EvalIn::Globals(
                lock(&self.core)
                    .modules
                    .main()
                    .cloned()
                    .ok_or_else(|| Error::Eval("no symbols for the program".into()))?,
            ),
        };
        let enums = lock(&self.core).enums.clone();
        let mut found: BTreeMap<String, CompletionKind> = BTreeMap::new();
        if let Some((base, op, partial)) = member_access(prefix) {
            let parsed = expr::parse(base, &self.is_type_fn())?;
            let partial = partial.to_string();
            let arrow = op == "->";
            let names = self.handle.call(move |t: &mut Tracer| {
                with_env(t, &place, Some(&parsed), &enums, |env| {
                    let v = env.eval(&parsed)?;
                    let mut ty = match v.ty {
                        ETy::Dwarf(t) => t,
                        _ => return Ok(Vec::new()),
                    };
                    if arrow {
                        match resolve(env.binary, ty).map_err(Error::Eval)?.kind {
                            TypeKind::Pointer(Some(target)) => ty = target,
                            _ => return Ok(Vec::new()),
                        }
                    }
                    let TypeKind::Composite { members, .. } =
                        resolve(env.binary, ty).map_err(Error::Eval)?.kind
                    else {
                        return Ok(Vec::new());
                    };
                    Ok(members
                        .into_iter()
                        .filter(|m| !m.artificial)
                        .filter_map(|m| m.name)
                        .filter(|n| n.starts_with(&partial))
                        .collect::<Vec<String>>())
                })
            })??;
            for n in names {
                found.insert(n, CompletionKind::Field);
            }
        } else {
            let partial: String = {
                let start = prefix
                    .char_indices()
                    .rev()
                    .take_while(|(_, c)| is_ident(*c))
                    .last()
                    .map_or(prefix.len(), |(i, _)| i);
                prefix[start..].to_string()
            };
            let p = partial.clone();
            let visible = self.handle.call(move |t: &mut Tracer| {
                with_env(t, &place, None, &enums, |env| {
                    let mut names = Vec::new();
                    for v in env
                        .scope
                        .locals
                        .iter()
                        .filter(|v| v.frame == env.inline_index && !v.shadowed && !v.artificial)
                    {
                        names.extend(v.name.clone());
                    }
                    for v in &env.scope.globals {
                        names.extend(v.name.clone());
                    }
                    Ok(names
                        .into_iter()
                        .filter(|n| n.starts_with(&p))
                        .collect::<Vec<String>>())
                })
            })??;
            for n in visible {
                found.insert(n, CompletionKind::Variable);
            }
            // Only names an expression can spell (not `completed.0`, `ns::f`): the name
            // table's, then the ELF symbols' (code without DWARF). The first
            // MAX_COMPLETIONS of each in byte order are all that can be listed.
            let binary = self.main_binary();
            let spellable = |name: &str| name.chars().all(is_ident);
            for (name, kind) in binary.names_with_prefix(&partial, MAX_COMPLETIONS, spellable) {
                let kind = match kind {
                    SymbolKind::Variable => CompletionKind::Variable,
                    SymbolKind::Function => CompletionKind::Function,
                    SymbolKind::Type => CompletionKind::Type,
                    _ => continue,
                };
                found.entry(name).or_insert(kind);
            }
            for (name, kind) in binary.elf_symbols_with_prefix(&partial, MAX_COMPLETIONS, spellable)
            {
                let kind = match kind {
                    SymbolKind::Variable => CompletionKind::Variable,
                    SymbolKind::Function => CompletionKind::Function,
                    _ => continue,
                };
                found.entry(name).or_insert(kind);
            }
        }
        Ok(found
            .into_iter()
            .take(MAX_COMPLETIONS)
            .map(|(label, kind)| Completion { label, kind })
            .collect())
    }

    /// The source files of the program (DAP `loadedSources`): the files named by the
    /// line tables of the main executable and of loaded libraries that are not the
    /// system's, source-mapped, without system headers. Files that exist on disk come
    /// first, each group sorted.
    pub fn sources(&self) -> Vec<PathBuf> {
        let modules: Vec<Arc<Module>> = {
            let mut c = lock(&self.core);
            let pid = c.pid;
            c.modules.refresh(pid);
            c.modules.all().to_vec()
        };
        let mut files: Vec<PathBuf> = Vec::new();
        for m in modules.iter().filter(|m| m.main || !is_system(&m.path)) {
            let Some(binary) = m.binary() else { continue };
            match binary.source_files() {
                Ok(list) => files.extend(list.into_iter().map(|f| self.source_map.to_local(&f))),
                Err(e) => tracing::debug!("no sources for {}: {e}", m.path.display()),
            }
        }
        files.retain(|f| {
            f.is_absolute()
                && ![
                    "/usr/include",
                    "/usr/lib",
                    "/usr/local/include",
                    "/usr/src/debug",
                ]
                .iter()
                .any(|p| f.starts_with(p))
        });
        files.sort();
        files.dedup();
        let (mut present, absent): (Vec<PathBuf>, Vec<PathBuf>) =
            files.into_iter().partition(|f| f.is_file());
        present.extend(absent);
        present
    }
}

#[cfg(test)]
mod tests {
    use super::member_access;

    #[test]
    fn member_access_finds_the_base_chain() {
        assert_eq!(member_access("s.fi"), Some(("s", ".", "fi")));
        assert_eq!(member_access("x + p->"), Some(("p", "->", "")));
        assert_eq!(member_access("a[i + 1].in"), Some(("a[i + 1]", ".", "in")));
        assert_eq!(member_access("q->next->va"), Some(("q->next", "->", "va")));
        assert_eq!(member_access("coun"), None);
        assert_eq!(member_access("1 > 2"), None);
    }
}
