//! The one wire layer of tandem: Content-Length framing plus the JSON-RPC 2.0 (LSP) and DAP
//! envelopes, shared by both front-ends, the tests and the tools.
//!
//! Framing is a single incremental state machine ([`frame::FrameDecoder`]) driven by a blocking
//! reader ([`frame::FrameReader`]) and, with the `tokio` feature, a tokio codec
//! ([`codec::FrameCodec`]). A framing error is final: the caller closes the connection and logs
//! the reason; there is no attempt to resynchronise on a byte stream whose boundaries are lost.
//! Envelope errors inside a well-framed body are not final: they become error responses.

pub mod dap;
pub mod frame;
pub mod jsonrpc;

#[cfg(feature = "tokio")]
pub mod codec;

pub use frame::{
    encode_frame, spawn_reader, FrameDecoder, FrameError, FrameReader, FrameWriter, Inbound, Limits,
};
