//! Fuzzes JSON-RPC and DAP envelope decoding: any body decodes or yields an error, and an
//! error always converts to a response.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|body: &[u8]| {
    if let Err(err) = wire::jsonrpc::decode(body) {
        let _ = wire::jsonrpc::encode(&wire::jsonrpc::Message::Response(err.to_response()));
    }
    let _ = wire::dap::decode(body);
});
