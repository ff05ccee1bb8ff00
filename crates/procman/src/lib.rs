//! The process manager: every debuggee and session, process listing, lifecycle.
//!
//! [`ProcessManager`] owns every debuggee tandem launches or attaches to, each on its
//! own tracer thread (see the `tracer` crate). Front-ends get a [`Session`] per
//! debuggee (`Send + Sync + Clone`; its [`Session::target`] is the typed command
//! handle) and subscribe to one event stream ([`ProcessManager::subscribe`]) that
//! carries every session's stops, output and end, so the DAP and LSP sides see the
//! same picture.
//!
//! # Lifecycle guarantees
//!
//! Every path ends a session the same way — a launched debuggee is killed and
//! reaped, an attached one detached with its int3s removed and left running — and
//! leaves no zombie and no process in a ptrace-stop:
//!
//! - [`Session::end`] / `terminate` / `detach`, explicitly;
//! - the last [`Session`] clone dropped (client gone);
//! - [`ProcessManager::shutdown`] or dropping the manager (tandem exiting normally,
//!   or unwinding from a panic on the thread that owns it);
//! - SIGTERM, SIGINT, SIGHUP: [`install_signal_hook`] ends every session, then lets
//!   the signal take its default action;
//! - a panic on a tracer thread unwinds through the tracer's `Drop`, which does the
//!   same for its debuggee; [`install_panic_hook`] covers `panic = "abort"` builds;
//! - tandem killed outright (SIGKILL): launched debuggees die through
//!   PTRACE_O_EXITKILL and PR_SET_PDEATHSIG; attached ones are detached by the
//!   kernel (their int3s stay: nothing can run after SIGKILL).
//!
//! # Waiting
//!
//! Each tracer thread waits with `waitpid(-1, __WALL | __WNOTHREAD)`, which reaps
//! only its own tracees and children. tandem's other children (a compiler run) are
//! unaffected and `std::process::Child::wait` keeps working; nothing in tandem may
//! call `waitpid(-1)` without `__WNOTHREAD`.

pub mod containers;
pub mod error;
pub mod hooks;
pub mod listing;
pub mod manager;

/// The process-control layer, re-exported for the types in this crate's API.
pub use tracer;

pub use containers::{container_processes, Container, ContainerKey, Runtime};
pub use error::{Error, Result};
pub use hooks::{install_panic_hook, install_signal_hook};
pub use listing::{format_table, list_processes, read_process, ProcessRow};
pub use manager::{
    ManagerEvent, OutputStream, PausedDebuggee, ProcessManager, Session, SessionId, SessionInfo,
    ShutdownHandle,
};
