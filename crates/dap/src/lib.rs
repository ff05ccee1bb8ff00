//! tandem's debug adapter: the Debug Adapter Protocol over `wire`, driving the engine and the
//! process manager. Only this crate, `lsp`, `mcp` and `wire` know JSON.

/// The debugging state behind the requests.
mod debugger;
/// Which request goes to which handler; the capabilities.
mod dispatch;
/// The exception filters: signals and language exceptions.
mod filters;
/// Frame ids, variables references and breakpoint ids handed to the client.
mod handles;
/// From launch and attach arguments to engine options.
mod launch;
/// The write side of a session, a request's failure.
mod outbox;
/// The debuggee's stdout and stderr as output events.
mod output;
pub mod processes;
pub mod server;
/// integratedTerminal: the program's pty relayed to the editor's terminal.
mod terminal;
pub mod types;

pub use server::{serve, Config, Ending};
