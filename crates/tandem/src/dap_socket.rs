//! One process per workspace: `tandem lsp` serves the Debug Adapter Protocol on a Unix
//! socket named after its workspace, and `tandem dap` started by the editor on stdio finds
//! that socket and bridges to it, so the debugging session lives in the language server's
//! process manager (where hovers and inline values read it).
//!
//! Discovery rule (docs/editors.md says the same):
//! - The socket directory is `$XDG_RUNTIME_DIR/tandem` when `XDG_RUNTIME_DIR` names a
//!   directory, else `<temp dir>/tandem-<uid>`. It is created with mode 0700 and used only
//!   when it is a real directory (no symlink) owned by the user with no group or other
//!   permission bits.
//! - The socket of a workspace root is `dap-<16 hex digits>.sock` in that directory, the
//!   digits being the 64-bit FNV-1a hash of the root's canonical path (its bytes). It is
//!   mode 0600.
//! - `tandem lsp` serves a socket for each root `initialize` names (workspace folders, else
//!   rootUri/rootPath; none when the client names none). A root already served by a live
//!   `tandem lsp` stays with that one; a socket nobody answers is stale and replaced.
//! - `tandem dap` (stdio) starts from `--workspace DIR` or its working directory, canonical,
//!   and tries that directory and then each parent up to `/`: the first socket that accepts
//!   a connection from a server of the same user wins. None: it serves the session itself.
//!   `--connect SOCKET` names the socket; `--standalone` skips discovery.
//! - Both ends check the peer's uid with SO_PEERCRED; a connection from another user is
//!   closed unanswered.
//! - A connection whose first byte that is not a blank is `{` speaks MCP (one JSON-RPC
//!   message per line; `tandem mcp` relays to it, see `mcp_socket.rs`); any other speaks
//!   DAP (Content-Length headers come first).

use std::io::{Read, Write};
use std::net::Shutdown;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use wire::{Inbound, Limits};

/// The 64-bit FNV-1a hash: stable across tandem versions and platforms (std's hasher
/// promises neither), which the socket names need.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

fn uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The private directory holding the sockets, created when missing.
pub fn runtime_dir() -> Result<PathBuf> {
    let dir = match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(base) if base.is_absolute() && base.is_dir() => base.join("tandem"),
        _ => std::env::temp_dir().join(format!("tandem-{}", uid())),
    };
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e).with_context(|| format!("cannot create {}", dir.display())),
    }
    let meta = std::fs::symlink_metadata(&dir)
        .with_context(|| format!("cannot inspect {}", dir.display()))?;
    if !meta.file_type().is_dir() {
        bail!("{} is not a directory", dir.display());
    }
    if meta.uid() != uid() {
        bail!("{} belongs to another user", dir.display());
    }
    if meta.mode() & 0o077 != 0 {
        bail!(
            "{} is open to other users (mode {:o}); expected 0700",
            dir.display(),
            meta.mode() & 0o777
        );
    }
    Ok(dir)
}

/// The socket path of a workspace root (canonicalised here).
pub fn socket_path(root: &Path) -> Result<PathBuf> {
    let canonical = root
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", root.display()))?;
    Ok(socket_in(&runtime_dir()?, &canonical))
}

fn socket_in(dir: &Path, canonical_root: &Path) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    let hash = fnv1a(canonical_root.as_os_str().as_bytes());
    dir.join(format!("dap-{hash:016x}.sock"))
}

/// The uid of the process at the other end of a Unix socket.
fn peer_uid(stream: &UnixStream) -> std::io::Result<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writes of the sizes passed; the descriptor is
    // owned by `stream` for the duration of the call.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut cred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(cred.uid)
}

/// Connects to a socket whose server runs as this user.
pub fn connect(path: &Path) -> Result<UnixStream> {
    let stream = UnixStream::connect(path)
        .with_context(|| format!("cannot connect to {}", path.display()))?;
    let peer = peer_uid(&stream).context("cannot read the peer's credentials")?;
    if peer != uid() {
        bail!(
            "{} is served by uid {peer}, not by this user; refusing it",
            path.display()
        );
    }
    Ok(stream)
}

/// The socket of the workspace holding `start` (it, then its parents), when a live
/// `tandem lsp` serves one.
pub fn discover(start: &Path) -> Option<(PathBuf, UnixStream)> {
    let dir = match runtime_dir() {
        Ok(d) => d,
        Err(e) => {
            tracing::debug!("no socket directory: {e:#}");
            return None;
        }
    };
    let start = start.canonicalize().ok()?;
    for root in start.ancestors() {
        let path = socket_in(&dir, root);
        if !path.exists() {
            continue;
        }
        match connect(&path) {
            Ok(stream) => {
                tracing::info!(root = %root.display(), socket = %path.display(), "found the workspace's language server");
                return Some((path, stream));
            }
            Err(e) => tracing::debug!("{e:#}"),
        }
    }
    None
}

/// The sockets this process serves, removed when it ends.
static SERVED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Removes the sockets this process created (called before exiting: `process::exit` runs
/// no destructors).
pub fn remove_served() {
    let paths: Vec<PathBuf> = SERVED
        .lock()
        .map(|mut s| std::mem::take(&mut *s))
        .unwrap_or_default();
    for path in paths {
        if let Err(e) = std::fs::remove_file(&path) {
            tracing::debug!("cannot remove {}: {e}", path.display());
        }
    }
}

/// Serves DAP for the workspace `root` on its socket, one `dap::serve` session per
/// connection, with `manager`. `Ok(None)` when a live tandem already serves that root.
pub fn serve_workspace(
    root: &Path,
    manager: Arc<procman::ProcessManager>,
) -> Result<Option<PathBuf>> {
    let path = socket_path(root)?;
    if SERVED.lock().is_ok_and(|s| s.contains(&path)) {
        return Ok(None);
    }
    if path.exists() {
        if connect(&path).is_ok() {
            tracing::info!(socket = %path.display(), "the workspace is served by another tandem");
            return Ok(None);
        }
        // Nobody answers: a tandem that ended without cleaning up.
        std::fs::remove_file(&path)
            .with_context(|| format!("cannot remove the stale socket {}", path.display()))?;
    }
    let listener =
        UnixListener::bind(&path).with_context(|| format!("cannot bind {}", path.display()))?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("cannot restrict {}", path.display()))?;
    if let Ok(mut served) = SERVED.lock() {
        served.push(path.clone());
    }
    tracing::info!(root = %root.display(), socket = %path.display(), "serving DAP and MCP for the workspace");
    let me = uid();
    let root = root.to_path_buf();
    let code = crate::mcp_socket::SharedCode::default();
    std::thread::Builder::new()
        .name("dap-socket".into())
        .spawn(move || {
            for stream in listener.incoming() {
                let stream = match stream {
                    Ok(s) => s,
                    Err(e) => {
                        tracing::warn!("accept failed: {e}");
                        continue;
                    }
                };
                match peer_uid(&stream) {
                    Ok(peer) if peer == me => {}
                    Ok(peer) => {
                        tracing::warn!(peer, "refused a DAP connection from another user");
                        continue;
                    }
                    Err(e) => {
                        tracing::warn!("refused a DAP connection: no credentials: {e}");
                        continue;
                    }
                }
                spawn_session(stream, manager.clone(), &root, &code);
            }
        })
        .context("cannot start the socket thread")?;
    Ok(Some(path))
}

fn spawn_session(
    stream: UnixStream,
    manager: Arc<procman::ProcessManager>,
    root: &Path,
    code: &crate::mcp_socket::SharedCode,
) {
    let root = root.to_path_buf();
    let code = code.clone();
    let spawned = std::thread::Builder::new()
        .name("dap-session".into())
        .spawn(move || {
            let mut input = match stream.try_clone() {
                Ok(i) => i,
                Err(e) => return tracing::warn!("cannot use the connection: {e}"),
            };
            let (first, speaks) = match crate::mcp_socket::sniff(&mut input) {
                Ok(Some(found)) => found,
                Ok(None) => return,
                Err(e) => return tracing::debug!("connection ended before a message: {e}"),
            };
            let input = std::io::Cursor::new(first).chain(input);
            if speaks == crate::mcp_socket::Speaks::Mcp {
                return crate::mcp_socket::serve(input, stream, manager, &root, &code);
            }
            let shutdown = stream.try_clone();
            let config = dap::Config {
                manager: Some(manager),
                ..Default::default()
            };
            match dap::serve(input, stream, config) {
                Ok(ending) => tracing::info!(?ending, "bridged DAP session ended"),
                Err(e) => tracing::warn!("bridged DAP session failed: {e}"),
            }
            // The reader thread still holds a clone: close both directions so the bridge
            // sees the end at once.
            if let Ok(s) = shutdown {
                let _ = s.shutdown(Shutdown::Both);
            }
        });
    if let Err(e) = spawned {
        tracing::error!("cannot start a DAP session thread: {e}");
    }
}

/// Relays a DAP client on stdin/stdout to a session served on `stream`; returns the exit
/// code a standalone adapter would have had (0 after `disconnect`, 1 otherwise).
///
/// A `launch` without `cwd` gets the bridge's working directory, so relative programs and
/// the debuggee's directory are what they would be had this process served the session.
pub fn bridge<R, W>(input: R, mut output: W, stream: UnixStream, cwd: &Path) -> Result<i32>
where
    R: Read + Send + 'static,
    W: Write + Send + 'static,
{
    let mut reader = stream.try_clone().context("cannot use the socket")?;
    let writer = stream;
    let inbound = wire::spawn_reader(input, Limits::default())?;
    let disconnected = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = disconnected.clone();
    let cwd = cwd.to_path_buf();
    let to_server = std::thread::Builder::new()
        .name("bridge-in".into())
        .spawn(move || -> Result<()> {
            let mut writer = writer;
            for event in inbound {
                match event {
                    Inbound::Frame(body) => {
                        let body = patch_request(&body, &cwd, &seen);
                        writer.write_all(&wire::encode_frame(&body))?;
                        writer.flush()?;
                    }
                    Inbound::Closed => break,
                    Inbound::Failed(e) => {
                        tracing::error!("closing the connection: {e}");
                        break;
                    }
                }
            }
            // The server ends the session at end of input, as it would on stdio.
            let _ = writer.shutdown(Shutdown::Write);
            Ok(())
        })
        .context("cannot start the bridge thread")?;
    // Not io::copy: stdout is line-buffered and a frame's body has no newline, so each
    // chunk is flushed as it arrives.
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                tracing::debug!("bridge input ended: {e}");
                break;
            }
        };
        if let Err(e) = output.write_all(&buf[..n]).and_then(|()| output.flush()) {
            tracing::debug!("bridge output ended: {e}");
            break;
        }
    }
    let _ = reader.shutdown(Shutdown::Both);
    // The input thread may be blocked reading stdin; it ends with the process.
    drop(to_server);
    Ok(if disconnected.load(std::sync::atomic::Ordering::Relaxed) {
        0
    } else {
        1
    })
}

/// Notes a `disconnect` and gives a `launch` without `cwd` the bridge's directory; every
/// other body passes unchanged (byte for byte).
fn patch_request(body: &[u8], cwd: &Path, disconnected: &std::sync::atomic::AtomicBool) -> Vec<u8> {
    let Ok(mut msg) = serde_json::from_slice::<Value>(body) else {
        return body.to_vec();
    };
    if msg["type"] != "request" {
        return body.to_vec();
    }
    match msg["command"].as_str() {
        Some("disconnect") => {
            disconnected.store(true, std::sync::atomic::Ordering::Relaxed);
            body.to_vec()
        }
        Some("launch") => {
            let Some(args) = msg.get_mut("arguments").and_then(Value::as_object_mut) else {
                return body.to_vec();
            };
            if args.contains_key("cwd") {
                return body.to_vec();
            }
            args.insert("cwd".into(), json!(cwd));
            serde_json::to_vec(&msg).unwrap_or_else(|_| body.to_vec())
        }
        _ => body.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_names_are_stable() {
        // FNV-1a test vectors.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(
            socket_in(Path::new("/run/user/1/tandem"), Path::new("/")),
            PathBuf::from("/run/user/1/tandem/dap-af63a24c860189fe.sock")
        );
    }

    #[test]
    fn launch_gets_the_bridge_cwd_unless_it_has_one() {
        let flag = std::sync::atomic::AtomicBool::new(false);
        let body =
            br#"{"seq":2,"type":"request","command":"launch","arguments":{"program":"a.out"}}"#;
        let out: Value =
            serde_json::from_slice(&patch_request(body, Path::new("/w"), &flag)).unwrap();
        assert_eq!(out["arguments"]["cwd"], "/w");
        let body = br#"{"seq":2,"type":"request","command":"launch","arguments":{"cwd":"/x"}}"#;
        assert_eq!(patch_request(body, Path::new("/w"), &flag), body.to_vec());
        assert!(!flag.load(std::sync::atomic::Ordering::Relaxed));
        let body = br#"{"seq":3,"type":"request","command":"disconnect"}"#;
        assert_eq!(patch_request(body, Path::new("/w"), &flag), body.to_vec());
        assert!(flag.load(std::sync::atomic::Ordering::Relaxed));
    }
}
