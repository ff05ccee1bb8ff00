//! Fuzzes the framing state machine: arbitrary bytes, fed in arbitrary chunk sizes, must give
//! frames or a framing error — never a panic, never a body beyond the limits — and chunking
//! must not change the outcome.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use wire::{FrameDecoder, Limits};

fn frames(data: &[u8], chunk: usize, limits: Limits) -> (Vec<Vec<u8>>, bool) {
    let mut decoder = FrameDecoder::new(limits);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for piece in data.chunks(chunk.max(1)) {
        buf.extend_from_slice(piece);
        loop {
            match decoder.decode(&mut buf) {
                Ok(Some(body)) => {
                    assert!(body.len() <= limits.max_body_bytes);
                    out.push(body.to_vec());
                }
                Ok(None) => break,
                Err(_) => return (out, true),
            }
        }
    }
    (out, false)
}

fuzz_target!(|input: &[u8]| {
    let Some((&chunk, data)) = input.split_first() else {
        return;
    };
    let limits = Limits {
        max_header_bytes: 256,
        max_body_bytes: 4096,
    };
    let whole = frames(data, data.len(), limits);
    let chunked = frames(data, chunk as usize % 17 + 1, limits);
    assert_eq!(whole, chunked);
});
