//! The agent face on the workspace socket: a connection to the socket of a running
//! `tandem lsp` whose first byte (after blanks) is `{` speaks MCP's stdio transport
//! (newline-delimited JSON-RPC) and is served by an MCP server inside the language
//! server's process, on its process manager, beside the DAP sessions (which start with a
//! `Content-Length` header). `tandem mcp` on stdio finds that socket the way `tandem dap`
//! does and relays its stdio to it, so an agent sees and drives the editor's sessions.
//! docs/agents.md and docs/editors.md state the rule.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use anyhow::{Context, Result};
use serde_json::{json, Value};

/// The protocol a workspace-socket connection speaks, told by its first byte that is not
/// a blank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Speaks {
    /// Content-Length framed (a header comes first).
    Dap,
    /// One JSON-RPC message per line (a JSON object comes first).
    Mcp,
}

/// Reads up to the first byte that is not a blank; returns the bytes read (to be replayed
/// to the session) and the protocol they tell. `None`: the peer closed first.
pub fn sniff(stream: &mut UnixStream) -> std::io::Result<Option<(Vec<u8>, Speaks)>> {
    let mut read = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        match stream.read(&mut byte) {
            Ok(0) => return Ok(None),
            Ok(_) => {
                read.push(byte[0]);
                if !byte[0].is_ascii_whitespace() {
                    let speaks = if byte[0] == b'{' {
                        Speaks::Mcp
                    } else {
                        Speaks::Dap
                    };
                    return Ok(Some((read, speaks)));
                }
                if read.len() > 4096 {
                    return Ok(Some((read, Speaks::Dap)));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// The workspace index the MCP connections of one socket share, made at the first one.
pub type SharedCode = Arc<OnceLock<Arc<mcp::code::Code>>>;

/// Serves one MCP connection (its first bytes already read into `input`'s front) on the
/// language server's process manager; ends the sessions it started when it ends.
pub fn serve<R: Read + Send + 'static>(
    input: R,
    stream: UnixStream,
    manager: Arc<procman::ProcessManager>,
    root: &Path,
    code: &SharedCode,
) {
    let code = code
        .get_or_init(|| Arc::new(mcp::code::Code::new(root.to_path_buf())))
        .clone();
    let server = mcp::Server::with_code(manager, code);
    let shutdown = stream.try_clone();
    if let Err(e) = mcp::serve_stdio(&server, input, stream) {
        tracing::debug!("MCP connection ended: {e}");
    }
    server.end_sessions();
    if let Ok(s) = shutdown {
        let _ = s.shutdown(Shutdown::Both);
    }
    tracing::info!("MCP connection on the workspace socket ended");
}

/// Relays MCP's stdio transport on stdin/stdout to the server on `stream`, until either
/// side ends. A `debug_launch` without `cwd` gets the relay's directory, as a `launch`
/// relayed by `tandem dap` does, so relative programs mean what they would standalone.
pub fn relay<R, W>(input: R, mut output: W, stream: UnixStream, cwd: &Path) -> Result<i32>
where
    R: Read + Send + 'static,
    W: Write,
{
    let mut writer = stream.try_clone().context("cannot use the socket")?;
    let cwd = cwd.to_path_buf();
    std::thread::Builder::new()
        .name("mcp-relay-in".into())
        .spawn(move || {
            let mut lines = BufReader::new(input);
            let mut line = Vec::new();
            loop {
                line.clear();
                match lines.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                let patched = patch_line(&line, &cwd);
                if writer
                    .write_all(&patched)
                    .and_then(|()| writer.flush())
                    .is_err()
                {
                    break;
                }
            }
            // The server ends this agent's sessions at the end of its input.
            let _ = writer.shutdown(Shutdown::Write);
        })
        .context("cannot start the relay thread")?;
    let mut reader = stream;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                tracing::debug!("relay input ended: {e}");
                break;
            }
        };
        if output
            .write_all(&buf[..n])
            .and_then(|()| output.flush())
            .is_err()
        {
            break;
        }
    }
    let _ = reader.shutdown(Shutdown::Both);
    Ok(0)
}

/// Gives a `debug_launch` call without `cwd` the relay's directory; every other line
/// passes unchanged (byte for byte).
fn patch_line(line: &[u8], cwd: &Path) -> Vec<u8> {
    let Ok(mut msg) = serde_json::from_slice::<Value>(line) else {
        return line.to_vec();
    };
    if msg["method"] != "tools/call" || msg["params"]["name"] != "debug_launch" {
        return line.to_vec();
    }
    let Some(args) = msg["params"]
        .get_mut("arguments")
        .and_then(Value::as_object_mut)
    else {
        return line.to_vec();
    };
    if args.contains_key("cwd") {
        return line.to_vec();
    }
    args.insert("cwd".into(), json!(cwd));
    match serde_json::to_vec(&msg) {
        Ok(mut v) => {
            v.push(b'\n');
            v
        }
        Err(_) => line.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launch_without_cwd_gets_the_relays() {
        let line =
            b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"debug_launch\",\"arguments\":{\"program\":\"a.out\"}}}\n";
        let out: Value = serde_json::from_slice(&patch_line(line, Path::new("/w"))).unwrap();
        assert_eq!(out["params"]["arguments"]["cwd"], "/w");
        assert_eq!(out["id"], 3);
        let with = b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"debug_launch\",\"arguments\":{\"cwd\":\"/x\"}}}\n";
        assert_eq!(patch_line(with, Path::new("/w")), with.to_vec());
        let other = b"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}\n";
        assert_eq!(patch_line(other, Path::new("/w")), other.to_vec());
        assert_eq!(patch_line(b"{bad\n", Path::new("/w")), b"{bad\n".to_vec());
    }

    #[test]
    fn the_first_byte_tells_the_protocol() {
        let (mut a, mut b) = UnixStream::pair().unwrap();
        a.write_all(b" \n{\"jsonrpc\"").unwrap();
        assert_eq!(
            sniff(&mut b).unwrap(),
            Some((b" \n{".to_vec(), Speaks::Mcp))
        );
        let (mut a, mut b) = UnixStream::pair().unwrap();
        a.write_all(b"Content-Length: 2\r\n\r\n{}").unwrap();
        assert_eq!(sniff(&mut b).unwrap(), Some((b"C".to_vec(), Speaks::Dap)));
        let (a, mut b) = UnixStream::pair().unwrap();
        drop(a);
        assert_eq!(sniff(&mut b).unwrap(), None);
    }
}
