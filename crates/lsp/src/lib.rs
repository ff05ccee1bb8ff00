//! tandem's language server: the LSP lifecycle over `wire`, the store of open documents and
//! (as they land) the language features fed by `symbols` and live debug state.

pub mod proto;
pub mod server;
pub mod text;

pub use server::{serve, Config, Ending};
