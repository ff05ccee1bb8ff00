//! tandem's language server: the LSP lifecycle over `wire`, the store of open documents, the
//! workspace's binaries and the language features fed by their debug information (`symbols`).

/// workspace/symbol, documentSymbol, definition and hover from DWARF.
pub mod features;
/// The client's parameters, parsed leniently.
pub mod proto;
/// The main loop: lifecycle, dispatch, cancellation, document sync.
pub mod server;
/// Position encodings and the document store.
pub mod text;
/// `file://` URIs and paths.
pub mod uri;
/// Root folders and the binaries (discovered or configured) that serve them.
pub mod workspace;

pub use server::{serve, Config, Ending};
