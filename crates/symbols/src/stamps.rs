//! Cache files already checked: a file whose checksum was verified, or that this process
//! wrote, is not read through again while it is the same file. Its stamp, `NAME.ok`
//! beside it, holds the device, inode, size and change time (to the nanosecond) that
//! `fstat` gave once it was checked, and the boot it was checked in. Nothing sets a
//! change time back, so a file rewritten in place, even with its modification time
//! restored, no longer matches and is checked again; a file replaced (always by rename)
//! is another inode; and after a reboot every file is checked once again (cache files are
//! not synced: a crash may have left one torn under an intact inode).
//!
//! Why: a warm session verified the checksum of every cache file it used, reading
//! ceph-osd's 320 MB name table and 620 MB of decompressed sections through: about 0.1 s
//! of CPU and a quarter of its first stop. A cache hit refreshes the file's modification
//! time (least-recently-used eviction), which changes its change time too, so the stamp
//! is written again after that refresh.

use std::fs::{File, Metadata};
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"TNDMOK02";
/// The boot id's length (a UUID's text).
const BOOT: usize = 36;
const LEN: usize = 8 + BOOT + 5 * 8;

/// This boot's id (`/proc/sys/kernel/random/boot_id`); zeros when it cannot be read.
fn boot_id() -> [u8; BOOT] {
    static ID: std::sync::OnceLock<[u8; BOOT]> = std::sync::OnceLock::new();
    *ID.get_or_init(|| {
        let mut id = [0u8; BOOT];
        if let Ok(text) = std::fs::read("/proc/sys/kernel/random/boot_id") {
            let n = text.len().min(BOOT);
            id[..n].copy_from_slice(&text[..n]);
        }
        id
    })
}

/// Where `file`'s stamp is.
pub(crate) fn path_of(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".ok");
    PathBuf::from(name)
}

fn stamp_of(meta: &Metadata) -> [u8; LEN] {
    let mut out = [0u8; LEN];
    out[..8].copy_from_slice(MAGIC);
    out[8..8 + BOOT].copy_from_slice(&boot_id());
    let fields = [
        meta.dev(),
        meta.ino(),
        meta.len(),
        meta.ctime() as u64,
        meta.ctime_nsec() as u64,
    ];
    for (i, v) in fields.into_iter().enumerate() {
        let at = 8 + BOOT + 8 * i;
        out[at..at + 8].copy_from_slice(&v.to_le_bytes());
    }
    out
}

/// Whether the file opened as `opened` (from `path`) is the one its stamp says was
/// checked.
pub(crate) fn is_checked(path: &Path, opened: &File) -> bool {
    let Ok(meta) = opened.metadata() else {
        return false;
    };
    let mut stamp = [0u8; LEN + 1];
    let read = File::open(path_of(path)).and_then(|mut f| {
        let mut n = 0;
        loop {
            match f.read(&mut stamp[n..])? {
                0 => return Ok(n),
                k => n += k,
            }
            if n == stamp.len() {
                return Ok(n);
            }
        }
    });
    matches!(read, Ok(LEN)) && stamp[..LEN] == stamp_of(&meta)
}

/// Records that the file opened as `opened` (at `path`) is checked, as it is now.
pub(crate) fn record(path: &Path, opened: &File) {
    let Ok(meta) = opened.metadata() else {
        return;
    };
    let stamp = path_of(path);
    let tmp = {
        let mut name = stamp.as_os_str().to_owned();
        name.push(format!(
            ".{}.{:?}.tmp",
            std::process::id(),
            std::thread::current().id()
        ));
        PathBuf::from(name)
    };
    let written = File::create(&tmp)
        .and_then(|mut f| f.write_all(&stamp_of(&meta)))
        .and_then(|()| std::fs::rename(&tmp, &stamp));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        tracing::debug!(target: "tandem::cache", file = %path.display(), "cannot write a stamp: {e}");
    }
}

/// What a cache hit does once `checked` (the file it checked or trusted) is in use:
/// refreshes the file's modification time for least-recently-used eviction and stamps
/// it again (the refresh changed its change time) — unless `path` is no longer that
/// file.
pub(crate) fn touch_checked(path: &Path, checked: &File) {
    let Ok(f) = File::options().append(true).open(path) else {
        return;
    };
    let _ = f.set_modified(std::time::SystemTime::now());
    let same = match (checked.metadata(), f.metadata()) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    };
    if same {
        record(path, &f);
    }
}

/// Removes `file`'s stamp (the file is removed or rejected).
pub(crate) fn remove(file: &Path) {
    let _ = std::fs::remove_file(path_of(file));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_holds_until_the_file_is_written_or_replaced() {
        let dir = std::env::temp_dir().join(format!("tandem-stamps-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.tidx");
        std::fs::write(&path, b"contents").unwrap();
        let f = File::open(&path).unwrap();
        assert!(!is_checked(&path, &f), "no stamp yet");
        record(&path, &f);
        assert!(is_checked(&path, &File::open(&path).unwrap()));

        // Rewritten in place with its modification time restored: the change time moved.
        let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(10));
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .write_all(b"CONTENTS")
            .unwrap();
        File::options()
            .append(true)
            .open(&path)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        assert!(!is_checked(&path, &File::open(&path).unwrap()));

        // A cache hit's refresh keeps it checked; a replacement by rename does not.
        let f = File::open(&path).unwrap();
        record(&path, &f);
        std::thread::sleep(std::time::Duration::from_millis(10));
        touch_checked(&path, &f);
        assert!(is_checked(&path, &File::open(&path).unwrap()));
        let other = dir.join("b.tmp");
        std::fs::write(&other, b"CONTENTS").unwrap();
        std::fs::rename(&other, &path).unwrap();
        assert!(!is_checked(&path, &File::open(&path).unwrap()));

        // A stamp of another length or garbage is no stamp.
        std::fs::write(path_of(&path), b"TNDMOK01").unwrap();
        assert!(!is_checked(&path, &File::open(&path).unwrap()));
        remove(&path);
        assert!(!path_of(&path).exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
