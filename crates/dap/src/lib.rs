//! tandem's debug adapter: the Debug Adapter Protocol over `wire`, driving the engine and the
//! process manager. Only this crate, `lsp` and `wire` know JSON.

pub mod processes;
pub mod server;
pub mod types;

pub use server::{serve, Config, Ending};
