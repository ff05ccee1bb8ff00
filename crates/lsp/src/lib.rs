//! tandem's language server: the LSP lifecycle over `wire`, the store of open documents, the
//! workspace's binaries and the language features fed by their debug information (`symbols`),
//! and live values from the debuggees of the process manager it shares with the debug adapter.

/// The token a request's worker watches for cancellation and staleness.
pub mod cancel;
/// Code lenses of the paused session: breakpoint hit counts, the value a call returned.
pub mod debug_lens;
/// Diagnostics: stale binaries, the compiler's messages after a save and of unsaved text.
pub mod diagnostics;
/// Small questions to a binary's DWARF that several features ask.
pub mod dwarf;
/// DWARF answers remembered per binary: line resolutions, scopes, enumerators, type kinds.
pub mod facts;
/// workspace/symbol, documentSymbol, definition, declaration and hover from DWARF.
pub mod features;
/// The worker side of the feature requests, and the snapshot they work on.
pub(crate) mod handlers;
/// Code lenses (run, debug) and the `tandem.run` command.
pub mod lens;
/// Live values of a paused debuggee: inline values, hovers, breakpoint hints.
pub mod live;
/// Full or companion mode: which features a session serves.
pub mod mode;
/// A binary's symbol names arranged for workspace/symbol and identifier lookups.
pub mod names;
/// The write side of a session (frames, pending requests) and its worker pool.
pub(crate) mod outbox;
/// The `tandem.listProcesses` command.
pub mod processes;
/// The client's parameters, parsed leniently.
pub mod proto;
/// The main loop: lifecycle, dispatch, cancellation, document sync.
pub mod server;
/// Source texts (open documents, files on disk), line maps, lexical helpers.
pub mod sources;
/// Position encodings and the document store.
pub mod text;
/// Semantic tokens: identifiers classified from DWARF.
pub mod tokens;
/// `file://` URIs and paths.
pub mod uri;
/// Root folders and the binaries (discovered or configured) that serve them.
pub mod workspace;

pub use server::{serve, Config, Ending, RootsHook};
