//! Cache files already checked: a file whose checksum was verified is not read through
//! again while it is the same file. Its stamp, `NAME.ok` beside it, holds the device,
//! inode, size and change time `fstat` gave after the check, the boot, and when the
//! check began.
//!
//! A stamp is trusted only when the file had last changed well before its check began
//! (git's rule for "racily clean" entries): change times come from a coarse clock (a
//! kernel tick), so a file rewritten in place in the tick of its last change keeps its
//! change time; one changed at least [`MARGIN`] before the check cannot be changed again
//! without its change time moving past that. A file replaced (always by rename) is
//! another inode; after a reboot every file is checked once again (cache files are not
//! synced: a crash may leave one torn under an intact inode). Hits do not touch the cache
//! file (that would change its change time): least-recently-used eviction reads the
//! stamp's modification time, which a hit refreshes ([`last_used`]).
//!
//! Why: a warm session verified the checksum of every cache file it used, reading
//! ceph-osd's 320 MB name table and 620 MB of decompressed sections through: about 0.1 s
//! of CPU and a quarter of its first stop.

use std::fs::{File, Metadata};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const MAGIC: &[u8; 8] = b"TNDMOK03";
/// The boot id's length (a UUID's text).
const BOOT: usize = 36;
/// Magic, boot id, then device, inode, size, change time (s, ns), check start (s, ns).
const LEN: usize = 8 + BOOT + 7 * 8;
/// How long before its check a file must have last changed for its stamp to count.
pub(crate) const MARGIN: Duration = Duration::from_secs(2);

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

/// The fields of a stamp that name the file as it is: everything but the check's start.
fn identity(meta: &Metadata) -> [u64; 5] {
    [
        meta.dev(),
        meta.ino(),
        meta.len(),
        meta.ctime() as u64,
        meta.ctime_nsec() as u64,
    ]
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// When a check begins: what [`record`] is given.
pub(crate) fn now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// Whether the file opened as `opened` (from `path`) is the one its stamp says was
/// checked, and had last changed [`MARGIN`] before that check began.
pub(crate) fn is_checked(path: &Path, opened: &File) -> bool {
    let Ok(meta) = opened.metadata() else {
        return false;
    };
    let Ok(stamp) = std::fs::read(path_of(path)) else {
        return false;
    };
    if stamp.len() != LEN || &stamp[..8] != MAGIC || stamp[8..8 + BOOT] != boot_id() {
        return false;
    }
    let fields: Vec<u64> = (0..7).map(|i| u64_at(&stamp, 8 + BOOT + 8 * i)).collect();
    if fields[..5] != identity(&meta) {
        return false;
    }
    let changed = Duration::new(fields[3], fields[4].min(999_999_999) as u32);
    let checked = Duration::new(fields[5], fields[6].min(999_999_999) as u32);
    changed + MARGIN < checked
}

/// Records that the file opened as `opened` (at `path`) was checked by a check that began
/// at `began` ([`now`]), as `fstat` gives it now. Nothing is recorded (and any stamp is
/// removed) when the file changed too close to the check for the stamp to count.
pub(crate) fn record(path: &Path, opened: &File, began: Duration) {
    let Ok(meta) = opened.metadata() else {
        return;
    };
    let fields = identity(&meta);
    let changed = Duration::new(fields[3], fields[4].min(999_999_999) as u32);
    if changed + MARGIN >= began {
        // A later session checks it and stamps it then.
        remove(path);
        return;
    }
    let mut out = Vec::with_capacity(LEN);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&boot_id());
    for v in fields
        .into_iter()
        .chain([began.as_secs(), u64::from(began.subsec_nanos())])
    {
        out.extend_from_slice(&v.to_le_bytes());
    }
    let stamp = path_of(path);
    let mut tmp = stamp.as_os_str().to_owned();
    tmp.push(format!(
        ".{}.{:?}.tmp",
        std::process::id(),
        std::thread::current().id()
    ));
    let tmp = PathBuf::from(tmp);
    let written = File::create(&tmp)
        .and_then(|mut f| f.write_all(&out))
        .and_then(|()| std::fs::rename(&tmp, &stamp));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        tracing::debug!(target: "tandem::cache", file = %path.display(), "cannot write a stamp: {e}");
    }
}

/// A cache hit on `path`: its stamp's modification time is refreshed, which is when the
/// file was last used ([`last_used`]); a file without a stamp has its own refreshed.
pub(crate) fn touch(path: &Path) {
    let stamp = path_of(path);
    let target = if stamp.exists() {
        stamp
    } else {
        path.to_path_buf()
    };
    if let Ok(f) = File::options().append(true).open(target) {
        let _ = f.set_modified(SystemTime::now());
    }
}

/// When the cache file `path` (whose metadata is `meta`) was last used: the later of its
/// own modification time and its stamp's.
pub(crate) fn last_used(path: &Path, meta: &Metadata) -> Option<SystemTime> {
    let own = meta.modified().ok()?;
    let stamp = std::fs::metadata(path_of(path))
        .and_then(|m| m.modified())
        .ok();
    Some(stamp.map_or(own, |s| s.max(own)))
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

        // Checked right after its last change: racy, not stamped.
        record(&path, &f, now());
        assert!(!path_of(&path).exists());
        assert!(!is_checked(&path, &f));

        // Checked once it is older than the margin: trusted.
        std::thread::sleep(MARGIN + Duration::from_millis(200));
        record(&path, &f, now());
        assert!(is_checked(&path, &File::open(&path).unwrap()));

        // A hit refreshes the stamp, not the file.
        let before = std::fs::metadata(&path).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        touch(&path);
        let after = std::fs::metadata(&path).unwrap();
        assert_eq!(
            identity(&before),
            identity(&after),
            "the file was not touched"
        );
        assert!(last_used(&path, &after).unwrap() > before.modified().unwrap());
        assert!(is_checked(&path, &File::open(&path).unwrap()));

        // Rewritten in place right after the check (same size, same inode, its
        // modification time set back): not trusted.
        let mtime = before.modified().unwrap();
        let mut w = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        w.write_all(b"CONTENTS").unwrap();
        w.set_modified(mtime).unwrap();
        assert!(!is_checked(&path, &File::open(&path).unwrap()));

        // Replaced by rename: another inode, not trusted.
        record(&path, &File::open(&path).unwrap(), now() + MARGIN * 2);
        let other = dir.join("b.tmp");
        std::fs::write(&other, b"CONTENTS").unwrap();
        std::fs::rename(&other, &path).unwrap();
        assert!(!is_checked(&path, &File::open(&path).unwrap()));

        // A stamp of another length or garbage is no stamp.
        std::fs::write(path_of(&path), b"TNDMOK03").unwrap();
        assert!(!is_checked(&path, &File::open(&path).unwrap()));
        remove(&path);
        assert!(!path_of(&path).exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
