//! The exception filters of `setExceptionBreakpoints` (signals, Rust panics, C++ throws
//! and catches): what `initialize` advertises and what the breakpoints code turns on.

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
