//! `file://` URIs ↔ local paths, with percent-encoding.

use std::path::{Path, PathBuf};

/// The local path of a `file://` URI; `None` for other schemes or a malformed escape.
pub fn to_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    // `file:///p` has an empty authority; `file://localhost/p` names this host.
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return None;
    }
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    use std::os::unix::ffi::OsStringExt;
    Some(PathBuf::from(std::ffi::OsString::from_vec(out)))
}

/// The `file://` URI of an absolute path, escaping everything but unreserved characters and `/`.
pub fn from_path(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file://");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(char::from(b));
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_escapes() {
        let p = Path::new("/tmp/a b/é#.c");
        let uri = from_path(p);
        assert_eq!(uri, "file:///tmp/a%20b/%C3%A9%23.c");
        assert_eq!(to_path(&uri).as_deref(), Some(p));
        assert_eq!(
            to_path("file://localhost/x").as_deref(),
            Some(Path::new("/x"))
        );
        assert_eq!(to_path("untitled:1"), None);
        assert_eq!(to_path("file:///bad%zz"), None);
    }
}
