//! tandem's debugger core: breakpoints, stepping, unwinding, values and expressions,
//! protocol-agnostic (the DAP, the LSP and the CLI drive the same calls).
//!
//! # Shape
//!
//! A [`Session`] owns one launched process through a `tracer::TracerHandle`. The
//! tracer thread owns ptrace; the engine's state that decides about stops (the
//! breakpoint table, compiled conditions, the current step plan, the module map) sits
//! behind one mutex that the event sink locks **on the tracer thread**. So a
//! breakpoint hit whose condition is false is decided and resumed right there, with no
//! thread switch, no unwinding and no rendering; only stops that reach the user cross
//! to the front-end's thread as [`SessionEvent`]s.
//!
//! Requests from the front-end (stack traces, variables, evaluation) run as closures on
//! the tracer thread through the handle, so each request is one round trip however many
//! memory reads it makes.
//!
//! # Entry points
//!
//! [`Session::launch`] / [`Session::attach`] → set breakpoints
//! ([`Session::set_line_breakpoints`], [`Session::set_function_breakpoints`],
//! [`Session::set_instruction_breakpoints`]) → [`Session::resume`] /
//! [`Session::step`] / [`Session::pause`] → read [`SessionEvent`]s from
//! [`Session::events`] → at a stop: [`Session::stack_trace`], [`Session::variables`],
//! [`Session::children`], [`Session::evaluate`], [`Session::set_variable`].
//! Also: data breakpoints ([`Session::data_breakpoint_info`],
//! [`Session::set_data_breakpoints`]), signal stops ([`Session::set_signal_stops`],
//! [`Session::exception_info`]), exception stops ([`Session::set_exception_stops`],
//! [`Session::last_exception`]), [`Session::disassemble`], [`Session::completions`]
//! and [`Session::sources`]; [`Session::write_core`] writes a core file of the stopped
//! process.
//!
//! # Invariants
//!
//! - Frame ids and value references are valid until the process runs again.
//! - Breakpoint ids are stable while the same line (or function) stays set.
//! - A value that cannot be read renders as an error value; its siblings still render.
//! - Stepping single-steps only the stepping thread (the others stay stopped); stepping
//!   over a call or out of a function resumes every thread until the temporary
//!   breakpoint is hit by the stepping thread in the right frame (sp compared).
//!   Other threads hitting the temporary breakpoint are resumed silently; a user
//!   breakpoint hit by any thread meanwhile ends the step with reason breakpoint.
//! - Libraries loaded later (dlopen) are noticed at the dynamic linker's
//!   `_dl_debug_state`; pending breakpoints are planted then, before the library's
//!   code can run. Function breakpoints also search libraries already loaded, system
//!   ones (libc) last and by ELF symbol, so their full DWARF is never indexed.
//! - After the debuggee execs, the new program's modules are loaded and every
//!   breakpoint is re-resolved in them (reported as `BreakpointResolved`); the exec
//!   itself does not stop, as in gdb.
//! - A false condition costs no allocation for registers, parses no DIE (types are
//!   cached in `symbols`) and runs no DWARF evaluator for `DW_OP_fbreg` variables.
//! - Where a condition lowers to integer operations on frame slots and statics, it
//!   runs in the debuggee (`jit`): the site jumps to placed code that traps only when
//!   the condition holds, and every trap is evaluated again the ordinary way.

pub mod breakpoints;
pub mod corefile;
mod cpp;
pub mod debuginfo;
pub mod disasm;
pub mod error;
pub mod expr;
pub mod gcore;
pub mod ids;
mod inspect;
mod jit;
mod mem;
pub mod modules;
pub mod postmortem;
mod retval;
mod rust;
pub mod session;
pub mod signals;
mod system;
mod tls;
pub mod unwind;
pub mod values;
pub mod watch;

pub use breakpoints::{
    BreakpointStatus, FunctionBreakpoint, HitCondition, InstructionBreakpoint, LineHits,
    SourceBreakpoint,
};
pub use debuginfo::{missing_debug_info, DebugInfoOptions, Debuginfod};
pub use disasm::Instruction;
pub use error::{Error, Result};
pub use gcore::CoreWritten;
pub use ids::{BreakpointId, FrameId, ValueRef};
pub use inspect::Inspect;
pub use postmortem::CoreSession;
pub use session::guess_source_map;
pub use session::{
    AttachOptions, Completion, CompletionKind, ExceptionInfo, ExceptionStop, LaunchOptions,
    ModuleInfo, ReturnValue, ScopeKind, Session, SessionEvent, StepInTarget, StepKind, Stop,
    StopCause,
};
pub use signals::SignalInfo;
pub use symbols::{Column, Line, SourceMap};
pub use unwind::Frame;
pub use values::Value;
pub use watch::{DataAccess, DataBreakpoint, DataBreakpointInfo};

#[cfg(test)]
mod tests {
    fn send_sync<T: Send + Sync>() {}

    #[test]
    fn a_session_can_be_shared_between_front_end_threads() {
        send_sync::<crate::Session>();
        send_sync::<crate::SessionEvent>();
        send_sync::<crate::Value>();
    }
}
