//! The process manager: every debuggee and session, process listing, lifecycle.
//!
//! [`ProcessManager`] owns every debug session tandem starts or attaches
//! ([`ProcessManager::launch_debug`], [`ProcessManager::attach_debug`]): each is a
//! [`DebugSession`], shared (`Arc`) by every view. The session is the engine's only
//! event consumer (the engine hands it each event on its own thread) and fans it out to every subscriber
//! ([`DebugSession::subscribe`]), keeping the state a late view needs
//! ([`DebugSession::state`]). Run control goes through the session, so views — the
//! DAP adapter, the language server's live values, `tandem debug`, an agent
//! interface — translate protocols and own no process control. The manager's own
//! stream ([`ProcessManager::subscribe`]) carries every session's start, stops,
//! resumes, breakpoint lines and end.
//!
//! # Lifecycle guarantees
//!
//! Every path ends a session the same way — a launched debuggee is killed and
//! reaped, an attached one detached with its int3s removed and left running — and
//! leaves no zombie and no process in a ptrace-stop:
//!
//! - [`DebugSession::end`] / `terminate` / `detach`, explicitly;
//! - the last [`DebugSession`] handle dropped (every view gone);
//! - [`ProcessManager::shutdown`] or dropping the manager (tandem exiting normally,
//!   or unwinding from a panic on the thread that owns it);
//! - SIGTERM, SIGINT, SIGHUP: [`install_signal_hook`] ends every session, then lets
//!   the signal take its default action;
//! - a panic on a tracer thread unwinds through the tracer's `Drop`, which does the
//!   same for its debuggee; [`install_panic_hook`] covers `panic = "abort"` builds;
//! - tandem killed outright (SIGKILL): launched debuggees die through
//!   PTRACE_O_EXITKILL and PR_SET_PDEATHSIG; attached ones are detached by the
//!   kernel (their int3s stay: nothing can run after SIGKILL); fork children handed
//!   over and still waiting for their sessions are ended (a launched program's) or let
//!   run (an attached one's) by the [`guard`] process, which sees tandem's end as the
//!   end of its stdin.
//!
//! # Waiting
//!
//! Each tracer thread waits with `waitpid(-1, __WALL | __WNOTHREAD)`, which reaps
//! only its own tracees and children. tandem's other children (a compiler run) are
//! unaffected and `std::process::Child::wait` keeps working; nothing in tandem may
//! call `waitpid(-1)` without `__WNOTHREAD`.

pub mod containers;
pub mod debug;
pub mod error;
pub mod guard;
pub mod hooks;
pub mod listing;
pub mod manager;
pub mod postmortem;

/// The process-control layer, re-exported for the types in this crate's API.
pub use tracer;

pub use containers::{container_processes, Container, ContainerKey, Runtime};
pub use debug::{
    wait_on, DebugEvent, DebugId, DebugSession, DebugState, EndMode, OutputStream, ViewId,
};
pub use error::{Error, Result};
pub use hooks::{install_panic_hook, install_signal_hook};
pub use listing::{
    format_table, list_processes, read_process, ContainerEntry, ProcessEntry, ProcessRow,
};
pub use manager::{
    kill_child, release_child, ManagerEvent, Paused, PausedDebuggee, ProcessManager, ShutdownHandle,
};
pub use postmortem::CoreDebug;
