//! Which request goes to which handler, and the capabilities that say so: a request is
//! advertised exactly when it is dispatched here.

use std::time::Instant;

use wire::dap;

use crate::outbox::Failure;
use crate::server::{Adapter, Ending, Flow};
use crate::types::*;

impl Adapter {
    pub(crate) fn on_request(&mut self, req: dap::Request) -> Flow {
        tracing::debug!(seq = req.seq, command = %req.command, "request");
        let command = req.command.clone();
        if self.cancelled.remove(&req.seq) {
            self.out.error(req.seq, &command, "cancelled");
            return Flow::Continue;
        }
        let pre_init = [Initialize::COMMAND, Disconnect::COMMAND, Terminate::COMMAND];
        if !self.initialized && !pre_init.contains(&command.as_str()) {
            self.out.error(
                req.seq,
                &command,
                "the adapter is not initialized: send initialize first",
            );
            return Flow::Continue;
        }
        if command == Initialize::COMMAND {
            if self.handle::<Initialize>(&req, |a, args| a.initialize(args)) {
                // Configuration requests are welcome from now on, before or after launch.
                self.out.event("initialized", None::<()>);
            }
            return Flow::Continue;
        }
        let start = Instant::now();
        let next = dispatch(self, &req);
        tracing::debug!(command = %command, elapsed = ?start.elapsed(), "handled");
        next
    }

    fn initialize(&mut self, args: InitializeArguments) -> Result<Capabilities, Failure> {
        if self.initialized {
            return Err("the adapter is already initialized".into());
        }
        tracing::info!(client = ?args.client_name, adapter = %args.adapter_id, "initialize");
        self.initialized = true;
        self.debugger.set_client(&args);
        Ok(capabilities())
    }
}

/// What an exception filter turns on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FilterEvent {
    /// The program receives this signal.
    Signal(i32),
    /// A language event: a Rust panic, a C++ throw or catch.
    Exception(engine::ExceptionStop),
}

/// One filter of `setExceptionBreakpoints`, as `exceptionBreakpointFilters` offers it.
#[derive(Clone, Copy, Debug)]
pub struct Filter {
    pub id: &'static str,
    pub label: &'static str,
    pub description: &'static str,
    /// On until the client sends `setExceptionBreakpoints` (which replaces the set).
    pub default: bool,
    pub event: FilterEvent,
}

const fn signal(
    id: &'static str,
    label: &'static str,
    signo: i32,
    description: &'static str,
    default: bool,
) -> Filter {
    Filter {
        id,
        label,
        description,
        default,
        event: FilterEvent::Signal(signo),
    }
}

/// Every filter tandem implements, all offered in the capabilities: a filter the client
/// was never shown can never be on or off without the user knowing. The fatal signals
/// and Rust panics are on by default.
pub const FILTERS: &[Filter] = &[
    Filter {
        id: "rust-panic",
        label: "Rust: panic",
        description: "Stop when a Rust panic starts, before the stack unwinds \
                      (rust_begin_unwind, or std::panicking::begin_panic)",
        default: true,
        event: FilterEvent::Exception(engine::ExceptionStop::RustPanic),
    },
    Filter {
        id: "cpp-throw",
        label: "C++: on throw",
        description: "Stop when a C++ exception is thrown (__cxa_throw); shows its type and what()",
        default: false,
        event: FilterEvent::Exception(engine::ExceptionStop::CppThrow),
    },
    Filter {
        id: "cpp-catch",
        label: "C++: on catch",
        description: "Stop when a C++ exception is caught (__cxa_begin_catch)",
        default: false,
        event: FilterEvent::Exception(engine::ExceptionStop::CppCatch),
    },
    signal(
        "SIGSEGV",
        "Signal: SIGSEGV",
        libc::SIGSEGV,
        "Segmentation fault (invalid memory access)",
        true,
    ),
    signal(
        "SIGBUS",
        "Signal: SIGBUS",
        libc::SIGBUS,
        "Bus error (misaligned or truncated mapping)",
        true,
    ),
    signal(
        "SIGFPE",
        "Signal: SIGFPE",
        libc::SIGFPE,
        "Arithmetic exception (division by zero)",
        true,
    ),
    signal(
        "SIGILL",
        "Signal: SIGILL",
        libc::SIGILL,
        "Illegal instruction",
        true,
    ),
    signal(
        "SIGABRT",
        "Signal: SIGABRT",
        libc::SIGABRT,
        "abort() (failed assertion, panic=abort)",
        true,
    ),
    // Like gdb, a SIGTRAP tandem did not cause always stops and is not delivered (the
    // engine keeps the tracer's policy for it): offered as on, saying so.
    signal(
        "SIGTRAP",
        "Signal: SIGTRAP",
        libc::SIGTRAP,
        "A trap the program raised itself; always stops, as in gdb",
        true,
    ),
    signal(
        "SIGINT",
        "Signal: SIGINT",
        libc::SIGINT,
        "Interrupt (Ctrl-C)",
        false,
    ),
    signal(
        "SIGTERM",
        "Signal: SIGTERM",
        libc::SIGTERM,
        "Termination request",
        false,
    ),
    signal("SIGHUP", "Signal: SIGHUP", libc::SIGHUP, "Hangup", false),
    signal(
        "SIGPIPE",
        "Signal: SIGPIPE",
        libc::SIGPIPE,
        "Write to a closed pipe",
        false,
    ),
    signal(
        "SIGALRM",
        "Signal: SIGALRM",
        libc::SIGALRM,
        "Timer alarm",
        false,
    ),
    signal(
        "SIGCHLD",
        "Signal: SIGCHLD",
        libc::SIGCHLD,
        "A child process changed state",
        false,
    ),
    signal(
        "SIGUSR1",
        "Signal: SIGUSR1",
        libc::SIGUSR1,
        "User signal 1",
        false,
    ),
    signal(
        "SIGUSR2",
        "Signal: SIGUSR2",
        libc::SIGUSR2,
        "User signal 2",
        false,
    ),
];

/// The filter named `id`.
pub fn filter(id: &str) -> Option<&'static Filter> {
    FILTERS.iter().find(|f| f.id == id)
}

pub fn capabilities() -> Capabilities {
    Capabilities {
        supports_configuration_done_request: Some(true),
        supports_function_breakpoints: Some(true),
        supports_conditional_breakpoints: Some(true),
        supports_hit_conditional_breakpoints: Some(true),
        supports_evaluate_for_hovers: Some(true),
        exception_breakpoint_filters: Some(
            FILTERS
                .iter()
                .map(|f| ExceptionBreakpointsFilter {
                    filter: f.id.to_string(),
                    label: f.label.to_string(),
                    description: f.description.to_string(),
                    default: f.default,
                    supports_condition: false,
                })
                .collect(),
        ),
        supports_set_variable: Some(true),
        supports_restart_request: Some(true),
        supports_modules_request: Some(true),
        support_terminate_debuggee: Some(true),
        support_suspend_debuggee: Some(true),
        supports_delayed_stack_trace_loading: Some(true),
        supports_log_points: Some(true),
        supports_terminate_request: Some(true),
        supports_set_expression: Some(true),
        supports_read_memory_request: Some(true),
        supports_write_memory_request: Some(true),
        supports_cancel_request: Some(true),
        supports_breakpoint_locations_request: Some(true),
        supports_clipboard_context: Some(true),
        supports_stepping_granularity: Some(true),
        supports_instruction_breakpoints: Some(true),
        supports_exception_info_request: Some(true),
        supports_data_breakpoints: Some(true),
        supports_disassemble_request: Some(true),
        supports_completions_request: Some(true),
        completion_trigger_characters: Some(vec![".".into(), ">".into()]),
        supports_loaded_sources_request: Some(true),
        ..Capabilities::default()
    }
}

pub(crate) fn dispatch(a: &mut Adapter, req: &dap::Request) -> Flow {
    macro_rules! route {
        ($ty:ty, $method:ident) => {{
            a.handle::<$ty>(req, |a, args| a.debugger().$method(args));
        }};
    }
    match req.command.as_str() {
        Disconnect::COMMAND => {
            if a.handle::<Disconnect>(req, |a, args| a.debugger().disconnect(args)) {
                return Flow::End(Ending::Disconnected);
            }
        }
        Terminate::COMMAND => route!(Terminate, terminate),
        Launch::COMMAND => route!(Launch, launch),
        Attach::COMMAND => route!(Attach, attach),
        Restart::COMMAND => route!(Restart, restart),
        ConfigurationDone::COMMAND => route!(ConfigurationDone, configuration_done),
        SetBreakpoints::COMMAND => route!(SetBreakpoints, set_breakpoints),
        SetFunctionBreakpoints::COMMAND => route!(SetFunctionBreakpoints, set_function_breakpoints),
        SetInstructionBreakpoints::COMMAND => {
            route!(SetInstructionBreakpoints, set_instruction_breakpoints)
        }
        SetExceptionBreakpoints::COMMAND => {
            route!(SetExceptionBreakpoints, set_exception_breakpoints)
        }
        BreakpointLocations::COMMAND => route!(BreakpointLocations, breakpoint_locations),
        Continue::COMMAND => route!(Continue, continue_),
        Next::COMMAND => route!(Next, next),
        StepIn::COMMAND => route!(StepIn, step_in),
        StepOut::COMMAND => route!(StepOut, step_out),
        Pause::COMMAND => route!(Pause, pause),
        Threads::COMMAND => route!(Threads, threads),
        StackTrace::COMMAND => route!(StackTrace, stack_trace),
        Scopes::COMMAND => route!(Scopes, scopes),
        Variables::COMMAND => route!(Variables, variables),
        SetVariable::COMMAND => route!(SetVariable, set_variable),
        SetExpression::COMMAND => route!(SetExpression, set_expression),
        Evaluate::COMMAND => route!(Evaluate, evaluate),
        SourceRequest::COMMAND => route!(SourceRequest, source),
        Modules::COMMAND => route!(Modules, modules),
        ReadMemory::COMMAND => route!(ReadMemory, read_memory),
        WriteMemory::COMMAND => route!(WriteMemory, write_memory),
        Cancel::COMMAND => route!(Cancel, cancel),
        ExceptionInfo::COMMAND => route!(ExceptionInfo, exception_info),
        DataBreakpointInfo::COMMAND => route!(DataBreakpointInfo, data_breakpoint_info),
        SetDataBreakpoints::COMMAND => route!(SetDataBreakpoints, set_data_breakpoints),
        Disassemble::COMMAND => route!(Disassemble, disassemble),
        Completions::COMMAND => route!(Completions, completions),
        LoadedSources::COMMAND => route!(LoadedSources, loaded_sources),
        "tandem/processes" => crate::processes::processes_request(a, req),
        command => a
            .out()
            .error(req.seq, command, &format!("unknown command '{command}'")),
    }
    Flow::Continue
}
