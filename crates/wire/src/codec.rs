//! A tokio codec over [`FrameDecoder`], for async transports (TCP, sockets) and async tests.

use bytes::{Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use crate::frame::{frame_header, FrameDecoder, FrameError, Limits};

/// Splits an async byte stream into frame bodies and writes bodies as frames.
#[derive(Debug, Default)]
pub struct FrameCodec {
    decoder: FrameDecoder,
}

impl FrameCodec {
    pub fn new(limits: Limits) -> Self {
        FrameCodec {
            decoder: FrameDecoder::new(limits),
        }
    }
}

impl Decoder for FrameCodec {
    type Item = Bytes;
    type Error = FrameError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Bytes>, FrameError> {
        self.decoder.decode(src)
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Bytes>, FrameError> {
        match self.decoder.decode(src)? {
            Some(body) => Ok(Some(body)),
            None if self.decoder.in_frame() || !src.is_empty() => Err(FrameError::UnexpectedEof),
            None => Ok(None),
        }
    }
}

impl<T: AsRef<[u8]>> Encoder<T> for FrameCodec {
    type Error = FrameError;

    fn encode(&mut self, body: T, dst: &mut BytesMut) -> Result<(), FrameError> {
        let body = body.as_ref();
        dst.reserve(body.len() + 32);
        dst.extend_from_slice(frame_header(body.len()).as_bytes());
        dst.extend_from_slice(body);
        Ok(())
    }
}
