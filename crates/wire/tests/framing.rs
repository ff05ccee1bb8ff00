//! Framing rules, each with a test that fails when the rule breaks.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

use std::io::{self, Read};

use bytes::BytesMut;
use wire::{encode_frame, FrameDecoder, FrameError, FrameReader, FrameWriter, Limits};

/// A reader that hands out at most `step` bytes per call, like a slow pipe.
struct Trickle {
    data: Vec<u8>,
    pos: usize,
    step: usize,
}

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.step.min(buf.len()).min(self.data.len() - self.pos);
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

fn read_all(input: &[u8], step: usize) -> Result<Vec<Vec<u8>>, FrameError> {
    let mut reader = FrameReader::new(Trickle {
        data: input.to_vec(),
        pos: 0,
        step,
    });
    let mut out = Vec::new();
    while let Some(body) = reader.read_frame()? {
        out.push(body.to_vec());
    }
    Ok(out)
}

fn first_error(input: &[u8]) -> FrameError {
    match read_all(input, usize::MAX) {
        Ok(frames) => panic!("expected an error, got {} frames", frames.len()),
        Err(e) => e,
    }
}

#[test]
fn one_byte_at_a_time() {
    let body = br#"{"jsonrpc":"2.0","method":"x"}"#;
    let frames = read_all(&encode_frame(body), 1).unwrap();
    assert_eq!(frames, vec![body.to_vec()]);
}

#[test]
fn two_frames_in_one_read() {
    let mut input = encode_frame(b"{\"a\":1}");
    input.extend(encode_frame(b"{\"b\":2}"));
    let frames = read_all(&input, usize::MAX).unwrap();
    assert_eq!(frames, vec![b"{\"a\":1}".to_vec(), b"{\"b\":2}".to_vec()]);
}

#[test]
fn split_across_the_header_body_boundary() {
    let input = encode_frame(b"{\"k\":\"v\"}");
    for step in 2..input.len() {
        assert_eq!(
            read_all(&input, step).unwrap(),
            vec![b"{\"k\":\"v\"}".to_vec()],
            "step {step}"
        );
    }
}

#[test]
fn length_counts_bytes_not_characters() {
    for text in [
        "café",
        "naïve résumé",
        "数据调试",
        "🦀 crab 🧪",
        "a\u{10FFFF}z",
    ] {
        let body = format!("{{\"text\":\"{text}\"}}");
        assert_ne!(
            body.len(),
            body.chars().count(),
            "{text} must have multi-byte characters"
        );
        let input = encode_frame(body.as_bytes());
        assert!(String::from_utf8_lossy(&input)
            .starts_with(&format!("Content-Length: {}\r\n\r\n", body.len())));
        assert_eq!(read_all(&input, 3).unwrap(), vec![body.into_bytes()]);
    }
}

#[test]
fn header_names_are_case_insensitive_and_bare_lf_is_accepted() {
    let input = b"content-LENGTH: 2\nCONTENT-TYPE: application/vscode-jsonrpc; charset=UTF8\n\n{}";
    assert_eq!(read_all(input, usize::MAX).unwrap(), vec![b"{}".to_vec()]);
}

#[test]
fn unknown_headers_are_ignored_and_content_type_is_optional() {
    let input = b"X-Whatever: 1\r\nContent-Length: 2\r\n\r\n{}Content-Length: 2\r\nContent-Type: application/json; charset=\"utf-8\"\r\n\r\n[]";
    assert_eq!(
        read_all(input, usize::MAX).unwrap(),
        vec![b"{}".to_vec(), b"[]".to_vec()]
    );
}

#[test]
fn other_charsets_are_refused() {
    let err = first_error(
        b"Content-Length: 2\r\nContent-Type: application/json; charset=latin1\r\n\r\n{}",
    );
    assert!(
        matches!(err, FrameError::UnsupportedCharset(ref c) if c == "latin1"),
        "{err}"
    );
}

#[test]
fn missing_duplicate_and_non_numeric_lengths() {
    assert!(matches!(
        first_error(b"Content-Type: x\r\n\r\n{}"),
        FrameError::MissingContentLength
    ));
    assert!(matches!(
        first_error(b"Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}"),
        FrameError::DuplicateContentLength
    ));
    for bad in ["abc", "-1", "1.5", "", "0x10", "12 3"] {
        let input = format!("Content-Length: {bad}\r\n\r\n{{}}");
        assert!(
            matches!(
                first_error(input.as_bytes()),
                FrameError::InvalidContentLength(_)
            ),
            "{bad:?}"
        );
    }
}

#[test]
fn a_line_without_colon_is_malformed() {
    assert!(matches!(
        first_error(b"garbage\r\n\r\n"),
        FrameError::MalformedHeader(_)
    ));
}

#[test]
fn oversize_header_block_is_refused_without_a_newline() {
    let input = vec![b'x'; 9 * 1024];
    assert!(matches!(
        first_error(&input),
        FrameError::HeaderTooLarge { limit: 8192 }
    ));
    let mut many_lines = Vec::new();
    for i in 0..1000 {
        many_lines.extend_from_slice(format!("X-Header-{i}: value\r\n").as_bytes());
    }
    assert!(matches!(
        first_error(&many_lines),
        FrameError::HeaderTooLarge { .. }
    ));
}

#[test]
fn oversize_body_is_refused_before_allocation() {
    let limits = Limits {
        max_header_bytes: 1024,
        max_body_bytes: 16,
    };
    let mut reader = FrameReader::with_limits(&b"Content-Length: 17\r\n\r\n"[..], limits);
    assert!(matches!(
        reader.read_frame(),
        Err(FrameError::BodyTooLarge {
            length: 17,
            limit: 16
        })
    ));
    let huge = b"Content-Length: 99999999999999999999999999\r\n\r\n";
    assert!(matches!(first_error(huge), FrameError::BodyTooLarge { .. }));
}

#[test]
fn eof_inside_a_frame_is_its_own_error() {
    assert!(matches!(
        first_error(b"Content-Length: 10\r\n\r\n{}"),
        FrameError::UnexpectedEof
    ));
    assert!(matches!(
        first_error(b"Content-Len"),
        FrameError::UnexpectedEof
    ));
    assert!(matches!(
        first_error(b"Content-Length: 2\r\n"),
        FrameError::UnexpectedEof
    ));
    assert_eq!(read_all(b"", 1).unwrap(), Vec::<Vec<u8>>::new());
}

#[test]
fn content_length_too_long_swallows_the_next_frame_then_hits_eof() {
    // The declared length runs past the real body: the next frame is read as body bytes and
    // the stream then ends inside a frame.
    let mut input = b"Content-Length: 40\r\n\r\n{}".to_vec();
    input.extend(encode_frame(b"{}"));
    let frames = read_all(&input, usize::MAX);
    assert!(
        matches!(frames, Err(FrameError::UnexpectedEof)),
        "{frames:?}"
    );
}

#[test]
fn content_length_too_short_leaves_garbage_that_fails_as_a_header() {
    let mut reader = FrameReader::new(&b"Content-Length: 1\r\n\r\n{}\r\n\r\n"[..]);
    assert_eq!(reader.read_frame().unwrap().unwrap().as_ref(), b"{");
    assert!(matches!(
        reader.read_frame(),
        Err(FrameError::MalformedHeader(_))
    ));
}

#[test]
fn zero_length_body_is_a_frame() {
    assert_eq!(
        read_all(b"Content-Length: 0\r\n\r\n", 1).unwrap(),
        vec![Vec::<u8>::new()]
    );
}

#[test]
fn decoder_consumes_only_what_it_parsed() {
    let mut decoder = FrameDecoder::default();
    let mut buf = BytesMut::from(&b"Content-Length: 2\r\n\r\n{}Content-"[..]);
    assert_eq!(decoder.decode(&mut buf).unwrap().unwrap().as_ref(), b"{}");
    assert!(decoder.decode(&mut buf).unwrap().is_none());
    assert!(decoder.in_frame());
    buf.extend_from_slice(b"Length: 1\r\n\r\n7");
    assert_eq!(decoder.decode(&mut buf).unwrap().unwrap().as_ref(), b"7");
    assert!(!decoder.in_frame());
}

#[test]
fn writer_emits_whole_frames_with_crlf_from_many_threads() {
    let writer = std::sync::Arc::new(FrameWriter::new(Vec::new()));
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let writer = writer.clone();
            std::thread::spawn(move || {
                for i in 0..200 {
                    let body =
                        format!("{{\"t\":{t},\"i\":{i},\"pad\":\"{}\"}}", "é".repeat(i % 17));
                    writer.write_frame(body.as_bytes()).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let bytes = std::sync::Arc::try_unwrap(writer).unwrap().into_inner();
    let frames = read_all(&bytes, 7).unwrap();
    assert_eq!(frames.len(), 1600);
    for f in frames {
        serde_json::from_slice::<serde_json::Value>(&f).unwrap();
    }
}

#[tokio::test(flavor = "current_thread")]
async fn tokio_codec_uses_the_same_parser() {
    use futures::StreamExt;
    use tokio_util::codec::FramedRead;
    use wire::codec::FrameCodec;

    let (mut tx, rx) = tokio::io::duplex(5);
    let writer = tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        let mut input = encode_frame("{\"x\":\"数据\"}".as_bytes());
        input.extend(encode_frame(b"{}"));
        input.extend_from_slice(b"Content-Length: 9\r\n\r\n{");
        tx.write_all(&input).await.unwrap();
    });
    let mut frames = FramedRead::new(rx, FrameCodec::default());
    assert_eq!(
        frames.next().await.unwrap().unwrap().as_ref(),
        "{\"x\":\"数据\"}".as_bytes()
    );
    assert_eq!(frames.next().await.unwrap().unwrap().as_ref(), b"{}");
    // The writer ends (dropping its half) only once the reader has drained the duplex.
    assert!(matches!(
        frames.next().await,
        Some(Err(FrameError::UnexpectedEof))
    ));
    writer.await.unwrap();
}
