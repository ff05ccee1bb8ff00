//! The type-erasing holders: `std::any` and `std::function`. Neither records its
//! contents' type in data; both hold a pointer to a manager function instantiated for
//! it, whose ELF symbol names the type (`std::any::_Manager_internal<int>::_S_manage`,
//! `std::_Function_handler<int (int), int (*)(int)>::_M_manager`), as gdb's `std::any`
//! printer finds it.

use symbols::{RuntimeAddr, TypeRef};

use super::{field, text, R};
use crate::rust::{Shown, Synth};
use crate::values::{le_u64, Place, Renderer};

impl Renderer<'_> {
    /// The demangled symbol of the function at a runtime address.
    fn cpp_function_symbol(&self, addr: u64) -> Option<String> {
        let file = self.bias.to_file(RuntimeAddr(addr));
        self.binary.symbol_name_at(file)
    }

    /// The manager a holder points at (`None` when it holds nothing) and its symbol.
    fn cpp_manager(&self, ty: TypeRef, place: &Place) -> Option<R<Option<(u64, String)>>> {
        let (addr, _) = self.ptr_at(ty, place, "_M_manager")?;
        if addr == 0 {
            return Some(Ok(None));
        }
        Some(match self.cpp_function_symbol(addr) {
            Some(s) => Ok(Some((addr, s))),
            None => Err(format!("<error: no symbol for the manager at {addr:#x}>")),
        })
    }

    /// `std::any containing int = {[contained value] = 42}`, `std::any [no contained
    /// value]`: the type from the manager's class (`_Manager_internal<T>` keeps the value
    /// in the object's buffer, `_Manager_external<T>` on the heap).
    pub(super) fn cpp_any(&self, ty: TypeRef, place: &Place) -> R<Shown> {
        let bad = || "<error: unexpected std::any layout>".to_string();
        let (_, symbol) = match self.cpp_manager(ty, place).ok_or_else(bad)?? {
            None => {
                return Ok(Shown {
                    text: "std::any [no contained value]".into(),
                    synth: None,
                    address: None,
                })
            }
            Some(found) => found,
        };
        let manager = symbol
            .split_once("::_S_manage")
            .map(|(m, _)| m)
            .ok_or_else(|| format!("<error: unknown std::any manager {symbol}>"))?;
        // The index knows the nested class by its qualified name or its own
        // (`_Manager_internal<int>`), whichever the arguments' spelling matches.
        let short = manager.find("_Manager_").map_or(manager, |i| &manager[i..]);
        let contained = [manager, short]
            .iter()
            .flat_map(|n| self.binary.types_by_name(n))
            .find_map(|t| self.cpp_template_param(t, "_Tp"))
            .ok_or_else(|| format!("<error: no type for {manager}>"))?;
        let (st, sp) = self.cpp_find(ty, place, "_M_storage").ok_or_else(bad)?;
        let at = if manager.contains("::_Manager_internal<") {
            sp
        } else {
            let (ptr, _) = self.ptr_at(st, &sp, "_M_ptr").ok_or_else(bad)?;
            Place::Memory(ptr)
        };
        Ok(Shown {
            text: format!(
                "std::any containing {} = {{[contained value] = {}}}",
                self.cpp_type_text(contained),
                self.cpp_summary(contained, &at)
            ),
            synth: Some(Synth::Fields(vec![field(
                "[contained value]",
                contained,
                at,
            )])),
            address: None,
        })
    }

    /// `std::function<int(int)> = {[target] = 0x… <twice(int)>}` for a function
    /// pointer, the callable's type for a lambda or functor, `empty
    /// std::function<int(int)>` without one. (gdb has no printer for it and shows the
    /// raw members.)
    pub(super) fn cpp_function(&self, ty: TypeRef, place: &Place) -> R<Shown> {
        let name = self.gdb_name(ty);
        let (_, symbol) = match self
            .cpp_manager(ty, place)
            .ok_or_else(|| "<error: unexpected std::function layout>".to_string())??
        {
            None => {
                return Ok(Shown {
                    text: format!("empty {name}"),
                    synth: None,
                    address: None,
                })
            }
            Some(found) => found,
        };
        let target = handler_callable(&symbol)
            .ok_or_else(|| format!("<error: unknown std::function manager {symbol}>"))?;
        let shown = if target.contains("(*)") {
            // A function pointer, stored in the first word of `_M_functor`.
            let (_, fp) = self
                .cpp_find(ty, place, "_M_functor")
                .ok_or_else(|| "<error: unexpected std::function layout>".to_string())?;
            let f = le_u64(&fp.read(self.mem, 8)?);
            match self.cpp_function_symbol(f) {
                Some(s) => format!("{f:#x} <{s}>"),
                None => format!("{f:#x}"),
            }
        } else {
            target.to_string()
        };
        Ok(Shown {
            text: format!("{name} = {{[target] = {shown}}}"),
            synth: Some(Synth::Fields(vec![text("[target]", target, shown)])),
            address: None,
        })
    }
}

/// The callable type of `std::_Function_handler<Sig, Callable>::…`: the second
/// template argument, brackets balanced.
fn handler_callable(symbol: &str) -> Option<&str> {
    let rest = symbol.split_once("_Function_handler<")?.1;
    let mut depth = 0i32;
    let mut start = None;
    for (i, c) in rest.char_indices() {
        match c {
            '<' | '(' => depth += 1,
            ')' => depth -= 1,
            '>' if depth == 0 => return start.map(|s: usize| rest[s..i].trim()),
            '>' => depth -= 1,
            ',' if depth == 0 && start.is_none() => start = Some(i + 1),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::handler_callable;

    #[test]
    fn the_callable_is_the_handlers_second_argument() {
        assert_eq!(
            handler_callable(
                "std::_Function_handler<int (int), int (*)(int)>::_M_manager(std::_Any_data&)"
            ),
            Some("int (*)(int)")
        );
        assert_eq!(
            handler_callable("std::_Function_handler<int (int), main::{lambda(int)#1}>::_M_invoke"),
            Some("main::{lambda(int)#1}")
        );
        assert_eq!(
            handler_callable("std::_Function_handler<void (), std::pair<int, int> >::x"),
            Some("std::pair<int, int>")
        );
        assert_eq!(handler_callable("twice(int)"), None);
    }
}
