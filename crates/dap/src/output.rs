//! The debuggee's stdout and stderr, read on their own threads and handed to the main loop
//! as text: a UTF-8 sequence split between two reads is joined before it is decoded, and
//! bytes that are not UTF-8 become U+FFFD rather than being dropped.

use std::fs::File;
use std::io::Read;

use crossbeam_channel::Sender;

/// A piece of the debuggee's output, or the end of one stream.
#[derive(Debug)]
pub enum Chunk {
    Text {
        /// The DAP output category (`stdout` or `stderr`).
        category: &'static str,
        text: String,
    },
    End,
}

/// Starts a thread that forwards `file` until its end.
pub fn spawn_reader(mut file: File, category: &'static str, tx: Sender<Chunk>) -> bool {
    std::thread::Builder::new()
        .name(format!("dap-{category}"))
        .spawn(move || {
            let mut buf = vec![0u8; 16 * 1024];
            let mut pending: Vec<u8> = Vec::new();
            loop {
                match file.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        pending.extend_from_slice(&buf[..n]);
                        let text = take_text(&mut pending);
                        if !text.is_empty() && tx.send(Chunk::Text { category, text }).is_err() {
                            return;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    // EIO on a pty whose last writer is gone is its end of file.
                    Err(_) => break,
                }
            }
            if !pending.is_empty() {
                let text = String::from_utf8_lossy(&pending).into_owned();
                let _ = tx.send(Chunk::Text { category, text });
            }
            let _ = tx.send(Chunk::End);
        })
        .map_err(|e| tracing::warn!("cannot start the {category} reader: {e}"))
        .is_ok()
}

/// Decodes what `pending` holds, keeping an incomplete UTF-8 sequence at its end for the
/// next read.
fn take_text(pending: &mut Vec<u8>) -> String {
    let mut out = String::new();
    let mut rest: &[u8] = pending;
    loop {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                out.push_str(s);
                rest = &[];
                break;
            }
            Err(e) => {
                let (good, bad) = rest.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(good).unwrap_or_default());
                match e.error_len() {
                    Some(n) => {
                        out.push('\u{FFFD}');
                        rest = &bad[n..];
                    }
                    // Incomplete at the end: wait for the rest of the sequence.
                    None => {
                        rest = bad;
                        break;
                    }
                }
            }
        }
    }
    let keep = rest.to_vec();
    *pending = keep;
    out
}

#[cfg(test)]
mod tests {
    use super::take_text;

    #[test]
    fn split_sequences_are_joined_and_invalid_bytes_replaced() {
        let mut p = "é".as_bytes()[..1].to_vec();
        assert_eq!(take_text(&mut p), "");
        p.extend_from_slice(&"é".as_bytes()[1..]);
        p.extend_from_slice(b"x\xffy");
        assert_eq!(take_text(&mut p), "éx\u{FFFD}y");
        assert!(p.is_empty());
    }
}
