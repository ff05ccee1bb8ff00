//! Exceptions and panics as stop causes: internal breakpoints on the runtime's
//! throw/catch/panic functions (pending until the library that has them loads),
//! decided on the tracer thread, and what the last one was.

use std::sync::Arc;

use tracer::{RuntimeAddr, Tid, Tracer};

use super::{lock, Core, Session, StopCause};
use crate::error::Result;
use crate::mem::{FrameRegs, TracerMemory};
use crate::modules::{Module, Modules};

mod fmt_args;

/// Which exception events stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ExceptionStop {
    /// A Rust panic: at `rust_begin_unwind` (the panic handler, before unwinding and
    /// before the panic hook prints) for formatted panics, and at
    /// `std::panicking::begin_panic` for the panics that never reach it (`panic!` with
    /// one argument before the 2021 edition, `std::panic::panic_any`). Every panic
    /// passes exactly one of the two.
    RustPanic,
    /// A C++ `throw`, at `__cxa_throw`.
    CppThrow,
    /// A C++ `catch`, at `__cxa_begin_catch`.
    CppCatch,
}

impl ExceptionStop {
    /// The functions whose entry is the event.
    fn functions(self) -> &'static [&'static str] {
        match self {
            ExceptionStop::RustPanic => &["rust_begin_unwind", "std::panicking::begin_panic"],
            ExceptionStop::CppThrow => &["__cxa_throw"],
            ExceptionStop::CppCatch => &["__cxa_begin_catch"],
        }
    }
}

/// What the last exception stop was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExceptionInfo {
    /// Which event.
    pub kind: ExceptionStop,
    /// The thrown C++ type (`std::runtime_error`), from the `type_info` passed to
    /// `__cxa_throw`.
    pub type_name: Option<String>,
    /// The panic message as the program prints it, or a C++ exception's `what()`
    /// (for the standard exceptions that keep it in `_M_msg`). A panic's message has
    /// `{}` for an argument tandem cannot render without running code, and its
    /// location (`src/main.rs:3:5`). `None` when it could not be read.
    pub message: Option<String>,
}

/// The planted internal breakpoints of one kind.
#[derive(Debug, Default)]
pub(super) struct ExceptionTable {
    pub(super) wanted: Vec<ExceptionStop>,
    pub(super) addrs: Vec<(u64, ExceptionStop)>,
    pub(super) last: Option<(Tid, ExceptionInfo)>,
}

impl ExceptionTable {
    pub(super) fn at(&self, addr: u64) -> Option<ExceptionStop> {
        self.addrs.iter().find(|(a, _)| *a == addr).map(|(_, k)| *k)
    }
}

/// The runtime entry addresses of an exception event's functions in `modules`, by
/// ELF symbol: the arguments are read at the entry (before the prologue moves them),
/// and one address per function makes one stop per event.
fn addresses(modules: &[Arc<Module>], kind: ExceptionStop) -> Vec<u64> {
    let mut out = Vec::new();
    for name in kind.functions() {
        for m in modules {
            // Rust's standard library is linked into the program (or a Rust library
            // of its own), never into the system's libraries: libc's symbol table
            // need not be read for it.
            if kind == ExceptionStop::RustPanic && !m.main && super::is_system(&m.path) {
                continue;
            }
            let Some(b) = m.binary() else { continue };
            // The entry is all an internal breakpoint needs: no DWARF is read.
            for e in b.symbol_entries(name) {
                out.push(m.to_runtime(e));
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

impl Core {
    /// Plants the exception breakpoints of `modules` (all of them, or the libraries
    /// just loaded).
    pub(super) fn plant_exceptions(&mut self, t: &mut Tracer, modules: &[Arc<Module>]) {
        for kind in self.exceptions.wanted.clone() {
            for a in addresses(modules, kind) {
                if self
                    .exceptions
                    .addrs
                    .iter()
                    .any(|(x, k)| *x == a && *k == kind)
                {
                    continue;
                }
                match t.insert_breakpoint(RuntimeAddr(a)) {
                    Ok(()) => self.exceptions.addrs.push((a, kind)),
                    Err(e) => tracing::warn!("planting an exception breakpoint at {a:#x}: {e}"),
                }
            }
        }
    }

    /// An exception breakpoint was hit: stop with what can be read of it.
    pub(super) fn on_exception(&mut self, t: &mut Tracer, tid: Tid, kind: ExceptionStop) {
        self.clear_step(t);
        let info = ExceptionInfo {
            kind,
            type_name: None,
            message: None,
        };
        let info = match t.regs(tid) {
            Ok(regs) => {
                let pc = regs.pc();
                let regs = FrameRegs::from_registers(&regs);
                let mem = TracerMemory(t);
                match self.begin_panic_payload(pc) {
                    Some(payload) => {
                        let mut info = info;
                        info.message = begin_panic_message(&payload, &regs, &mem);
                        info
                    }
                    None => describe(kind, &regs, &mem, &self.modules, info),
                }
            }
            Err(_) => info,
        };
        let description = match (&info.type_name, &info.message) {
            (Some(t), Some(m)) => Some(format!("{t}: {m}")),
            (Some(t), None) => Some(t.clone()),
            (None, Some(m)) => Some(m.clone()),
            (None, None) => None,
        };
        let message = description.clone();
        self.exceptions.last = Some((tid, info));
        self.stopped_with(
            tid,
            StopCause::Exception { kind, message },
            true,
            None,
            description,
        );
    }
}

impl Core {
    /// At the entry of an instance of `std::panicking::begin_panic::<M>`: its payload
    /// type `M`, from the instance's ELF symbol (the standard library's DWARF has line
    /// tables only, without the parameter's type).
    fn begin_panic_payload(&self, pc: u64) -> Option<String> {
        let module = self.modules.find(pc)?;
        let name = module.binary()?.symbol_name_at(module.to_file(pc))?;
        let rest = name.split("begin_panic::<").nth(1)?;
        Some(rest.strip_suffix('>').unwrap_or(rest).to_string())
    }
}

/// `begin_panic::<M>(msg: M)` with `#[track_caller]`: for a `&str` payload the
/// message is in the arguments (pointer and length), followed by the caller's
/// `&Location`. Other payloads (`panic_any(42)`, a `String` whose layout rustc may
/// reorder) are named by their type rather than guessed at.
fn begin_panic_message(
    payload: &str,
    regs: &FrameRegs,
    mem: &dyn symbols::MemoryReader,
) -> Option<String> {
    use symbols::RegisterReader;
    if payload != "&str" {
        return Some(format!("a panic with a {payload} payload"));
    }
    let (rdi, rsi, location) = (regs.reg(5)?, regs.reg(4)?, regs.reg(1));
    let mut text = read_str(mem, rdi, rsi)?;
    if let Some(loc) = location {
        if let (Some(fp), Some(fl), Some(lc)) = (
            read_u64(mem, loc),
            read_u64(mem, loc + 8),
            read_u64(mem, loc + 16),
        ) {
            if let Some(file) = read_str(mem, fp, fl) {
                text.push_str(&format!(" at {file}:{}:{}", lc as u32, (lc >> 32) as u32));
            }
        }
    }
    Some(text)
}

fn read_u64(mem: &dyn symbols::MemoryReader, addr: u64) -> Option<u64> {
    let mut b = [0u8; 8];
    mem.read(RuntimeAddr(addr), &mut b).ok()?;
    Some(u64::from_le_bytes(b))
}

fn read_str(mem: &dyn symbols::MemoryReader, ptr: u64, len: u64) -> Option<String> {
    if len > 4096 {
        return None;
    }
    let mut b = vec![0u8; len as usize];
    mem.read(RuntimeAddr(ptr), &mut b).ok()?;
    Some(String::from_utf8_lossy(&b).into_owned())
}

/// Reads the event's arguments at the function's entry (System V: rdi, rsi).
fn describe(
    kind: ExceptionStop,
    regs: &FrameRegs,
    mem: &dyn symbols::MemoryReader,
    modules: &Modules,
    mut info: ExceptionInfo,
) -> ExceptionInfo {
    use symbols::RegisterReader;
    let rdi = regs.reg(5);
    let rsi = regs.reg(4);
    match kind {
        ExceptionStop::CppThrow => {
            // __cxa_throw(void *object, std::type_info *tinfo, void (*dest)(void *)):
            // a type_info is {vtable, const char *name}, the name mangled without `_Z`.
            if let Some(name_ptr) = rsi.and_then(|ti| read_u64(mem, ti.wrapping_add(8))) {
                if let Ok((raw, _)) = crate::values::read_c_string(mem, name_ptr) {
                    let raw = String::from_utf8_lossy(&raw).into_owned();
                    info.type_name = Some(symbols::names::demangle_type(&raw));
                }
            }
            if let Some(object) = rdi {
                info.message = cpp_what(mem, modules, object);
            }
        }
        ExceptionStop::RustPanic => {
            // rust_begin_unwind(info: &PanicInfo): { message: &fmt::Arguments,
            // location: &Location, .. }.
            if let Some(pi) = rdi {
                info.message = panic_message(mem, modules, pi);
            }
        }
        ExceptionStop::CppCatch => {}
    }
    info
}

/// The `what()` text of a thrown C++ object, read without calling it: only when the
/// `what()` its vtable holds is libstdc++'s `std::logic_error::what` or
/// `std::runtime_error::what` (so a class overriding it gives no text rather than a
/// guess), which return the message kept in `_M_msg`, the object's first member after
/// its vtable pointer. `_M_msg` is a `__cow_string`: one pointer to the characters,
/// preceded by the reference-counted representation `{length, capacity, refcount}`,
/// whose length must agree with the text's.
fn cpp_what(mem: &dyn symbols::MemoryReader, modules: &Modules, object: u64) -> Option<String> {
    let vtable = read_u64(mem, object)?;
    // The vtable of std::exception's hierarchy: two destructors, then what().
    let what = read_u64(mem, vtable.checked_add(16)?)?;
    let module = modules.find(what)?;
    let name = module.binary()?.symbol_name_at(module.to_file(what))?;
    let known = ["std::logic_error::what", "std::runtime_error::what"];
    if !known.iter().any(|k| {
        name.strip_prefix(k)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['(', ' ']))
    }) {
        return None;
    }
    let chars = read_u64(mem, object.checked_add(8)?)?;
    let length = read_u64(mem, chars.checked_sub(24)?)?;
    if length > 64 * 1024 {
        return None;
    }
    let text = read_str(mem, chars, length)?;
    // The text ends with the terminating NUL a COW string keeps.
    let mut nul = [0u8; 1];
    mem.read(RuntimeAddr(chars + length), &mut nul).ok()?;
    (nul[0] == 0 && !text.contains('\0')).then_some(text)
}

/// The text of a panic as the program prints it, then ` at file:line:col`.
///
/// `PanicInfo` starts with `message: &fmt::Arguments` and `location: &Location`.
/// Since Rust 1.9x `Arguments` is `{ template: *const u8, args }` — the template a
/// byte string of literal pieces and placeholders, each placeholder formatting one
/// `rt::Argument { value, formatter }` — or, without arguments, the message itself
/// with `len << 1 | 1` in `args`; older versions had `{ pieces: &[&str], .. }`.
/// Arguments are rendered by `fmt_args` where their formatter is recognised, and
/// written `{}` where not; implausible reads give no message rather than a wrong one.
fn panic_message(
    mem: &dyn symbols::MemoryReader,
    modules: &Modules,
    panic_info: u64,
) -> Option<String> {
    let args = read_u64(mem, panic_info)?;
    let location = read_u64(mem, panic_info + 8);
    let first = read_u64(mem, args)?;
    let second = read_u64(mem, args + 8)?;
    let main = modules.main().and_then(|m| m.binary().cloned());
    let old_layout = main.as_deref().is_some_and(fmt_args::Layout::has_pieces);
    let layout = main
        .as_deref()
        .and_then(fmt_args::Layout::from_dwarf)
        .unwrap_or_default();
    let rendered = (!old_layout)
        .then(|| {
            fmt_args::ArgsText {
                modules,
                mem,
                layout,
            }
            .arguments(args, 0)
        })
        .flatten();
    // A message without arguments is the string itself: `args` holds `len << 1 | 1`.
    let literal = || {
        (second & 1 == 1 && second >> 1 <= 4096)
            .then(|| read_str(mem, first, second >> 1))
            .flatten()
    };
    let mut text = if old_layout {
        pieces_text(mem, args)?
    } else {
        rendered
            .or_else(literal)
            .or_else(|| template_text(mem, first))
            .or_else(|| pieces_text(mem, args))?
    };
    if let Some(loc) = location {
        // Location { filename: &str, line: u32, col: u32 }.
        if let (Some(fp), Some(fl), Some(lc)) = (
            read_u64(mem, loc),
            read_u64(mem, loc + 8),
            read_u64(mem, loc + 16),
        ) {
            if let Some(file) = read_str(mem, fp, fl) {
                text.push_str(&format!(" at {file}:{}:{}", lc as u32, (lc >> 32) as u32));
            }
        }
    }
    Some(text)
}

fn template_text(mem: &dyn symbols::MemoryReader, template: u64) -> Option<String> {
    let mut bytes = vec![0u8; 512];
    // Read what is readable (the template may sit near the end of a mapping).
    let mut n = bytes.len();
    while n > 0 && mem.read(RuntimeAddr(template), &mut bytes[..n]).is_err() {
        n /= 2;
    }
    let bytes = &bytes[..n];
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        let b = *bytes.get(i)?;
        i += 1;
        match b {
            0 => break,
            1..=0x7f => {
                let piece = bytes.get(i..i + usize::from(b))?;
                out.extend_from_slice(piece);
                i += usize::from(b);
            }
            0xc0 => out.extend_from_slice(b"{}"),
            _ => {
                out.extend_from_slice("…".as_bytes());
                break;
            }
        }
    }
    String::from_utf8(out).ok()
}

fn pieces_text(mem: &dyn symbols::MemoryReader, args: u64) -> Option<String> {
    let pieces_ptr = read_u64(mem, args)?;
    let pieces_len = read_u64(mem, args + 8)?;
    if pieces_len == 0 || pieces_len > 64 {
        return None;
    }
    let mut text = String::new();
    for i in 0..pieces_len {
        let p = read_u64(mem, pieces_ptr + 16 * i)?;
        let l = read_u64(mem, pieces_ptr + 16 * i + 8)?;
        text.push_str(&read_str(mem, p, l)?);
        if i + 1 < pieces_len {
            text.push_str("{}");
        }
    }
    Some(text)
}

impl Session {
    /// Sets which exception events stop (replacing the previous set): Rust panics,
    /// C++ throws, C++ catches. Functions in libraries not loaded yet are planted when
    /// the library loads. Returns, per requested kind, whether it is planted now.
    pub fn set_exception_stops(&self, stops: &[ExceptionStop]) -> Result<Vec<bool>> {
        let core = self.core.clone();
        let wanted = stops.to_vec();
        self.handle
            .call(move |t: &mut Tracer| {
                let mut c = lock(&core);
                for (a, _) in std::mem::take(&mut c.exceptions.addrs) {
                    let _ = t.remove_breakpoint(RuntimeAddr(a));
                }
                c.exceptions.wanted = wanted.clone();
                let modules: Vec<Arc<Module>> = c.modules.all().to_vec();
                c.plant_exceptions(t, &modules);
                wanted
                    .iter()
                    .map(|k| c.exceptions.addrs.iter().any(|(_, x)| x == k))
                    .collect()
            })
            .map_err(Into::into)
    }

    /// The last exception stop of `tid`, while the process has not run since.
    pub fn last_exception(&self, tid: Tid) -> Option<ExceptionInfo> {
        let c = lock(&self.core);
        match &c.exceptions.last {
            Some((t, info)) if *t == tid && !c.running => Some(info.clone()),
            _ => None,
        }
    }
}
