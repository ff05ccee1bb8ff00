//! tandem's agent face: a Model Context Protocol server (`tandem mcp`) whose tools drive
//! the debugger (launch, attach, breakpoints, run control, stacks, values, output) and ask
//! the language index (symbols, definitions, hovers) and the compiler (diagnostics).
//!
//! The protocol is written here on `serde_json` (see docs/agents.md for why not the `rmcp`
//! crate): [`server`] has the lifecycle, dispatch and the stdio transport, [`http`] the
//! Streamable HTTP transport, [`tools`] the tools. Every call into debug sessions goes
//! through [`host::Host`], the one module that knows how sessions are started and
//! watched; [`code`] holds the language-index calls and the diagnostics of drafts.

/// What a tool call can do while it runs: progress and cancellation.
pub mod call;
/// The language index and the compiler behind the `code_*` tools.
pub mod code;
/// Every call into debug sessions, behind one type.
pub mod host;
/// The Streamable HTTP transport.
pub mod http;
/// The MCP lifecycle, dispatch, and the stdio transport.
pub mod server;
/// The tools: schemas, arguments, results.
pub mod tools;

pub use server::{serve_stdio, Config, Server};
