//! The on-disk index cache: a binary's name table (`table.rs`: every named function,
//! global, type and enumerator with the DIE it names, the units inlining each function,
//! which unit covers each address, and the symbol table `workspace/symbol` searches),
//! kept in one flat file per build and read through mmap without deserialising, so a
//! session on the same program needs neither a walk of every unit's DIEs nor an
//! in-memory index. Without a cache the same table is built in memory.
//!
//! Files live in one directory (`$XDG_CACHE_HOME/tandem`, chosen by the caller), named
//! by the binary's build-id (else by a hash of its path, size and mtime). Layout, little
//! endian, every offset a u32 from the payload's start:
//!
//! ```text
//! header (64 bytes): magic "TNDMIDX\0", version u32, header size u32, payload length u64,
//!                    CRC-32 of the whole file but this field u32, key length u32, unit count u32, 0 u32,
//!                    bytes of unit DIEs u64, 16 reserved bytes
//! payload:           key bytes (padded to 8)
//!                    table: address map offset, count; key slots offset, count; links
//!                           offset, count; names offset, count; entries offset,
//!                           count; strings offset, length; then the symbol table's
//!                           12 fields (`symtab.rs`)                      (24 × u32)
//!                    the name table's regions (`table.rs`)
//!                    the symbol table (`symtab.rs`): what `workspace/symbol` lists
//! ```
//!
//! A file is never trusted: magic, version, length, checksum, key and the binary's unit
//! count and DIE size are checked when it is opened, and every read is bounds-checked.
//! The checksum is not read through again while the file is the one a check found
//! unchanged for a while, which its stamp says (`stamps.rs`).
//! A file that fails is removed and rebuilt. Files are written to a temporary name and
//! renamed, so readers and concurrent writers never see half a file; after a write the
//! least recently used files are removed while the directory is over its size cap (a hit
//! refreshes its stamp's mtime, or the file's when it has no stamp).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::Mmap;

use crate::binary::Binary;
use crate::table::EntryKind;
use crate::units::DieId;

const MAGIC: &[u8; 8] = b"TNDMIDX\0";
/// Bumped whenever the layout or the meaning of an entry changes.
const VERSION: u32 = 7;
const HEADER: usize = 64;
/// Bytes of a key slot, an address range, a name and an entry (`table.rs`).
pub(crate) const SLOT: usize = 20;
pub(crate) const RANGE: usize = 24;
pub(crate) const NAME: usize = 16;
pub(crate) const ENTRY: usize = 12;
const SUFFIX: &str = "tidx";
/// The default size cap of [`IndexCache::from_env`].
const DEFAULT_MAX_BYTES: u64 = 4 << 30;

/// Where cache files go and how much room they may take.
#[derive(Clone, Debug)]
pub struct IndexCache {
    dir: PathBuf,
    max_bytes: u64,
}

impl IndexCache {
    /// A cache in `dir` holding at most `max_bytes` of files.
    pub fn new(dir: impl Into<PathBuf>, max_bytes: u64) -> IndexCache {
        IndexCache {
            dir: dir.into(),
            max_bytes,
        }
    }

    /// The cache every face shares: `$XDG_CACHE_HOME/tandem` (else `~/.cache/tandem`),
    /// capped at `TANDEM_INDEX_CACHE_MAX_BYTES` (default 4 GiB); `None` when
    /// `TANDEM_INDEX_CACHE=0` turns it off or no directory is known.
    pub fn from_env() -> Option<IndexCache> {
        let set = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        if set("TANDEM_INDEX_CACHE").is_some_and(|v| v == "0") {
            return None;
        }
        let dir = match set("XDG_CACHE_HOME") {
            Some(d) => PathBuf::from(d),
            None => PathBuf::from(set("HOME")?).join(".cache"),
        }
        .join("tandem");
        let max = set("TANDEM_INDEX_CACHE_MAX_BYTES")
            .and_then(|v| v.to_str()?.parse().ok())
            .unwrap_or(DEFAULT_MAX_BYTES);
        Some(IndexCache::new(dir, max))
    }

    /// The directory of the cache files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path_for(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.{SUFFIX}"))
    }

    /// Removes the least recently used files (by mtime) while the cache is over its
    /// cap, never `keep`: index files and decompressed sections (`sections.rs`) alike.
    pub(crate) fn evict(&self, keep: &Path) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut files: Vec<(std::time::SystemTime, u64, PathBuf)> = entries
            .filter_map(|e| {
                let e = e.ok()?;
                let path = e.path();
                let ext = path.extension().and_then(|x| x.to_str());
                if ext != Some(SUFFIX) && ext != Some(crate::sections::SUFFIX) {
                    return None;
                }
                let meta = e.metadata().ok()?;
                Some((crate::stamps::last_used(&path, &meta)?, meta.len(), path))
            })
            .collect();
        let mut total: u64 = files.iter().map(|f| f.1).sum();
        files.sort();
        for (_, len, path) in files {
            if total <= self.max_bytes {
                break;
            }
            if path == keep {
                continue;
            }
            if std::fs::remove_file(&path).is_ok() {
                crate::stamps::remove(&path);
                total = total.saturating_sub(len);
                tracing::debug!(target: "tandem::cache", path = %path.display(), "index cache evicted");
            }
        }
    }
}

/// The bytes a table is read from: a mapped cache file, or a buffer of this process's own
/// when there is no cache (or it could not be written).
pub(crate) enum Blob {
    /// A read-only private mapping of a cache file.
    Map(Mmap),
    /// Built in memory.
    Heap(Vec<u8>),
}

impl std::ops::Deref for Blob {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Blob::Map(m) => m,
            Blob::Heap(v) => v,
        }
    }
}

/// An opened, verified name table (a cache file's, or one built in memory).
pub(crate) struct CachedIndex {
    blob: Arc<Blob>,
    /// Whether `blob` is a cache file's mapping.
    mapped: bool,
    ranges: (usize, usize),
    slots: (usize, usize),
    links: (usize, usize),
    names: (usize, usize),
    entries: (usize, usize),
    strings: (usize, usize),
    symbols: crate::symtab::SymbolTable,
}

/// Fields of the table at the payload's start: those of the name and address maps, then
/// the symbol table's.
pub(crate) const NAME_FIELDS: usize = 12;
pub(crate) const TABLE_FIELDS: usize = NAME_FIELDS + crate::symtab::FIELDS;

pub(crate) fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(FNV_BASIS, |h, &b| fnv1a_byte(h, b))
}

const FNV_BASIS: u32 = 0x811c_9dc5;

fn fnv1a_byte(h: u32, b: u8) -> u32 {
    (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
}

/// A name table key's hash: FNV-1a of its bytes taken from the last to the first, so that
/// a name's suffixes are hashed in one pass over it (see [`suffix_key_hashes`]).
pub(crate) fn key_hash(key: &[u8]) -> u32 {
    key.iter().rev().fold(FNV_BASIS, |h, &b| fnv1a_byte(h, b))
}

/// [`key_hash`] of `name[start..]` for each of `starts` (ascending) and for the whole
/// name, as (start, hash), the whole name's last: one pass over the name from its end.
pub(crate) fn suffix_key_hashes(name: &[u8], starts: &[usize]) -> Vec<(usize, u32)> {
    let mut out = Vec::with_capacity(starts.len() + 1);
    let mut h = FNV_BASIS;
    let mut end = name.len();
    for &start in starts.iter().rev().chain(std::iter::once(&0)) {
        h = name[start..end]
            .iter()
            .rev()
            .fold(h, |h, &b| fnv1a_byte(h, b));
        out.push((start, h));
        end = start;
    }
    out
}

/// The CRC-32 of bytes `range` of `f` but those of `skip`, read in pieces: a big file
/// (a cache file of ceph-osd: 320 MB) in two halves at once, each checksummed alone and
/// the two combined. A warm session checks every cache file it uses before it trusts it,
/// and that check was most of its first stop.
pub(crate) fn crc_of_file(
    f: &std::fs::File,
    range: std::ops::Range<u64>,
    skip: std::ops::Range<u64>,
) -> std::io::Result<u32> {
    use std::os::unix::fs::FileExt;
    let part = |range: std::ops::Range<u64>| -> std::io::Result<crc32fast::Hasher> {
        let mut h = crc32fast::Hasher::new();
        // Small enough to stay in the core's cache between the read and the checksum.
        let mut buf = vec![0u8; 256 << 10];
        let mut at = range.start;
        while at < range.end {
            let want = usize::try_from(range.end - at).map_or(buf.len(), |n| n.min(buf.len()));
            let n = f.read_at(&mut buf[..want], at)?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            for (from, to) in [
                (at, skip.start.clamp(at, at + n as u64)),
                (skip.end.clamp(at, at + n as u64), at + n as u64),
            ] {
                if from < to {
                    h.update(&buf[(from - at) as usize..(to - at) as usize]);
                }
            }
            at += n as u64;
        }
        Ok(h)
    };
    const SPLIT: u64 = 16 << 20;
    let two = std::thread::available_parallelism().is_ok_and(|p| p.get() > 1);
    if !two || range.end - range.start < SPLIT {
        return Ok(part(range)?.finalize());
    }
    let mid = range.start + (range.end - range.start) / 2;
    let (first, second) = std::thread::scope(|s| {
        let second = s.spawn(|| part(mid..range.end));
        (part(range.start..mid), second.join())
    });
    let mut h = first?;
    h.combine(&second.map_err(|_| std::io::Error::other("checksum thread panicked"))??);
    Ok(h.finalize())
}

/// A table's regions as they are written: little-endian values and bytes gathered a few
/// kilobytes at a time, then passed to `out` (the tables are millions of u32s: one call of
/// a `dyn Write` each was a tenth of writing ceph-osd's table). [`Regions::finish`]
/// passes on the rest.
pub(crate) struct Regions<'w, W: Write + ?Sized> {
    out: &'w mut W,
    buf: Vec<u8>,
}

/// Bytes [`Regions`] gathers before it passes them on.
const REGIONS_CHUNK: usize = 16 << 10;

impl<'w, W: Write + ?Sized> Regions<'w, W> {
    pub(crate) fn new(out: &'w mut W) -> Self {
        Regions {
            out,
            buf: Vec::with_capacity(REGIONS_CHUNK),
        }
    }

    fn spill(&mut self) -> std::io::Result<()> {
        if self.buf.len() >= REGIONS_CHUNK {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    pub(crate) fn u32s(&mut self, vs: &[u32]) -> std::io::Result<()> {
        for part in vs.chunks(REGIONS_CHUNK / 4) {
            self.buf.extend(part.iter().flat_map(|v| v.to_le_bytes()));
            self.spill()?;
        }
        Ok(())
    }

    pub(crate) fn u64s(&mut self, vs: &[u64]) -> std::io::Result<()> {
        for part in vs.chunks(REGIONS_CHUNK / 8) {
            self.buf.extend(part.iter().flat_map(|v| v.to_le_bytes()));
            self.spill()?;
        }
        Ok(())
    }

    pub(crate) fn bytes(&mut self, b: &[u8]) -> std::io::Result<()> {
        if b.len() >= REGIONS_CHUNK {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
            return self.out.write_all(b);
        }
        self.buf.extend_from_slice(b);
        self.spill()
    }

    /// Passes on what is gathered.
    pub(crate) fn finish(mut self) -> std::io::Result<()> {
        self.out.write_all(&self.buf)?;
        self.buf.clear();
        Ok(())
    }
}

pub(crate) fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        b.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}

/// One entry of the name table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TableEntry {
    pub(crate) kind: EntryKind,
    pub(crate) die: DieId,
}

/// A writer of a whole file that checksums it as it goes: the header first (its checksum
/// field left 0), then the payload through [`Write`]; [`Checksummed::finish`] gives the
/// checksum to put in the field. The payload is mostly written four bytes at a time: it
/// is gathered in a buffer, checksummed and passed on a buffer at a time (checksumming
/// and writing each u32 alone took 0.5 s of ceph-osd's table).
pub(crate) struct Checksummed<'w> {
    out: &'w mut dyn Write,
    crc: crc32fast::Hasher,
    buf: Vec<u8>,
}

/// Bytes [`Checksummed`] gathers before it checksums and writes them.
const CHECKSUMMED_BUFFER: usize = 256 << 10;

impl<'w> Checksummed<'w> {
    /// Writes the header of a file of `payload_len` bytes of payload for `binary` under
    /// `key`.
    pub(crate) fn new(
        out: &'w mut dyn Write,
        binary: &Binary,
        key: &str,
        payload_len: usize,
    ) -> std::io::Result<Checksummed<'w>> {
        let mut header = Vec::with_capacity(HEADER);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(&(HEADER as u32).to_le_bytes());
        header.extend_from_slice(&(payload_len as u64).to_le_bytes());
        header.extend_from_slice(&0u32.to_le_bytes()); // the checksum, at the end
        header.extend_from_slice(&(key.len() as u32).to_le_bytes());
        header.extend_from_slice(&(binary.unit_count() as u32).to_le_bytes());
        header.extend_from_slice(&0u32.to_le_bytes());
        header.extend_from_slice(&binary.debug_info_bytes().to_le_bytes());
        header.resize(HEADER, 0);
        out.write_all(&header)?;
        let mut crc = crc32fast::Hasher::new();
        crc.update(&header[..24]);
        crc.update(&header[28..]);
        Ok(Checksummed {
            out,
            crc,
            buf: Vec::with_capacity(CHECKSUMMED_BUFFER),
        })
    }

    /// Checksums and writes what is gathered.
    fn pass_on(&mut self) -> std::io::Result<()> {
        self.crc.update(&self.buf);
        self.out.write_all(&self.buf)?;
        self.buf.clear();
        Ok(())
    }

    /// Writes what is left and gives the checksum of everything written but the
    /// checksum field.
    pub(crate) fn finish(mut self) -> std::io::Result<u32> {
        self.pass_on()?;
        Ok(self.crc.finalize())
    }
}

impl Write for Checksummed<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.buf.len() + buf.len() > CHECKSUMMED_BUFFER {
            self.pass_on()?;
        }
        if buf.len() >= CHECKSUMMED_BUFFER {
            self.crc.update(buf);
            self.out.write_all(buf)?;
        } else {
            self.buf.extend_from_slice(buf);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.pass_on()?;
        self.out.flush()
    }
}

/// Checks the magic, version and length a file's header gives.
fn check_header(b: &[u8]) -> Result<(), String> {
    if b.len() < HEADER || &b[..8] != MAGIC {
        return Err("not an index cache file".into());
    }
    let version = u32_at(b, 8).unwrap_or(0);
    if version != VERSION {
        return Err(format!("version {version}, not {VERSION}"));
    }
    let payload_len = u64_at(b, 16).unwrap_or(u64::MAX);
    if u64::try_from(b.len() - HEADER).ok() != Some(payload_len) {
        return Err(format!(
            "truncated: {} bytes of payload, the header says {payload_len}",
            b.len() - HEADER
        ));
    }
    Ok(())
}

impl CachedIndex {
    /// Opens and verifies the file at `path` for a binary whose key is `key`, with
    /// `units` units and `die_bytes` bytes of DIEs; the reason when it is unusable.
    fn open(path: &Path, key: &str, units: usize, die_bytes: u64) -> Result<CachedIndex, String> {
        let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
        // SAFETY: a private read-only mapping of a file that is only ever replaced by
        // rename, never written in place, so its inode's contents do not change.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| e.to_string())?;
        check_header(&map)?;
        // Read through read(2), not the mapping: checking a file of hundreds of megabytes
        // must not make every page of it resident. Not again while its stamp holds.
        let checked = if crate::stamps::is_checked(path, &file) {
            None
        } else {
            let began = crate::stamps::now();
            tracing::debug!(target: "tandem::cache", file = %path.display(), "index cache file read through for its checksum");
            let sum = crc_of_file(&file, 0..map.len() as u64, 24..28).map_err(|e| e.to_string())?;
            if sum != u32_at(&map, 24).unwrap_or(0) {
                return Err("checksum mismatch".into());
            }
            Some(began)
        };
        let index = CachedIndex::parse(Blob::Map(map), true, key, units, die_bytes)?;
        if let Some(began) = checked {
            crate::stamps::record(path, &file, began);
        }
        // Refreshed for least-recently-used eviction (its stamp, when it has one).
        crate::stamps::touch(path);
        Ok(index)
    }

    /// The table in `blob` (a whole file's bytes, its checksum already checked or made
    /// here), checked against the binary's `key`, unit count and DIE size, its regions
    /// against the bytes.
    pub(crate) fn parse(
        blob: Blob,
        mapped: bool,
        key: &str,
        units: usize,
        die_bytes: u64,
    ) -> Result<CachedIndex, String> {
        let b = &blob[..];
        check_header(b)?;
        let payload = &b[HEADER..];
        let key_len = u32_at(b, 28).unwrap_or(0) as usize;
        if payload.get(..key_len) != Some(key.as_bytes()) {
            return Err("written for another build".into());
        }
        if u32_at(b, 32) != u32::try_from(units).ok() || u64_at(b, 40) != Some(die_bytes) {
            return Err("written for another version of the file".into());
        }
        let table = key_len.div_ceil(8) * 8;
        let field = |i: usize| u32_at(payload, table + 4 * i).map(|v| v as usize);
        let fields: Option<Vec<usize>> = (0..NAME_FIELDS).map(field).collect();
        let Some(&[r0, rn, s0, sn, l0, ln, n0, nn, e0, en, t0, tn]) = fields.as_deref() else {
            return Err("no table".into());
        };
        let fits = |start: usize, n: usize, size: usize| {
            n.checked_mul(size)
                .and_then(|l| l.checked_add(start))
                .is_some_and(|end| end <= payload.len())
        };
        if !fits(r0, rn, RANGE)
            || !fits(s0, sn, SLOT)
            || !sn.is_power_of_two()
            || !fits(l0, ln, 4)
            || !fits(n0, nn, NAME)
            || !fits(e0, en, ENTRY)
            || !fits(t0, tn, 1)
        {
            return Err("a table lies outside the file".into());
        }
        let symbol_fields: Option<Vec<usize>> = (NAME_FIELDS..TABLE_FIELDS).map(field).collect();
        let blob = Arc::new(blob);
        let symbols = symbol_fields
            .and_then(|f| crate::symtab::SymbolTable::open(blob.clone(), HEADER, &f))
            .ok_or("the symbol table lies outside the file")?;
        Ok(CachedIndex {
            blob,
            mapped,
            ranges: (r0, rn),
            slots: (s0, sn),
            links: (l0, ln),
            names: (n0, nn),
            entries: (e0, en),
            strings: (t0, tn),
            symbols,
        })
    }

    /// A table with no name, no range and no symbol.
    fn empty() -> CachedIndex {
        let blob = Arc::new(Blob::Heap(vec![0; HEADER]));
        CachedIndex {
            symbols: crate::symtab::SymbolTable::empty(blob.clone(), HEADER),
            blob,
            mapped: false,
            ranges: (0, 0),
            slots: (0, 0),
            links: (0, 0),
            names: (0, 0),
            entries: (0, 0),
            strings: (0, 0),
        }
    }

    fn payload(&self) -> &[u8] {
        self.blob.get(HEADER..).unwrap_or_default()
    }

    /// The whole file's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.blob
    }

    /// Whether the table is a cache file's mapping (not this process's own memory).
    pub(crate) fn is_mapped(&self) -> bool {
        self.mapped
    }

    /// Number of distinct names.
    pub(crate) fn name_count(&self) -> usize {
        self.names.1
    }

    /// Name `n` (names are in the order of their bytes).
    pub(crate) fn name(&self, n: usize) -> Option<&str> {
        if n >= self.names.1 {
            return None;
        }
        let p = self.payload();
        let at = self.names.0 + NAME * n;
        let off = self.strings.0.checked_add(u32_at(p, at)? as usize)?;
        let len = u32_at(p, at + 4)? as usize;
        std::str::from_utf8(p.get(off..off.checked_add(len)?)?).ok()
    }

    /// The entries of name `n`, in (unit, kind, offset) order.
    pub(crate) fn entries(&self, n: usize) -> impl Iterator<Item = TableEntry> + '_ {
        let p = self.payload();
        let at = self.names.0 + NAME * n;
        let (first, count) = if n < self.names.1 {
            (
                u32_at(p, at + 8).unwrap_or(0) as usize,
                u32_at(p, at + 12).unwrap_or(0) as usize,
            )
        } else {
            (0, 0)
        };
        let end = first.saturating_add(count).min(self.entries.1);
        (first.min(end)..end).filter_map(move |i| {
            let at = self.entries.0 + ENTRY * i;
            let kind = EntryKind::from_code(u32_at(p, at)?)?;
            let unit = u32_at(p, at + 4)? as usize;
            let offset = u32_at(p, at + 8)? as usize;
            Some(TableEntry {
                kind,
                die: DieId {
                    unit,
                    offset: gimli::UnitOffset(offset),
                },
            })
        })
    }

    /// The names `key` stands for, as their whole name or one of their `::`-suffixes:
    /// (name, whether `key` is the whole name), in name order.
    pub(crate) fn names_for_key(&self, key: &str) -> Vec<(usize, bool)> {
        self.links_for_key(key)
            .map(|(l0, count)| {
                let p = self.payload();
                (0..count)
                    .filter_map(|i| {
                        let n = u32_at(p, l0.checked_add(4 * i)?)? as usize;
                        let whole = self.name(n)?.len() == key.len();
                        Some((n, whole))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    fn links_for_key(&self, key: &str) -> Option<(usize, usize)> {
        let p = self.payload();
        let (s0, n) = self.slots;
        if n == 0 || key.is_empty() {
            return None;
        }
        let hash = key_hash(key.as_bytes());
        let mut slot = hash as usize & (n - 1);
        for _ in 0..n {
            let at = s0 + slot * SLOT;
            let count = u32_at(p, at + 16)? as usize;
            if count == 0 {
                return None;
            }
            if u32_at(p, at)? == hash {
                let off = self.strings.0.checked_add(u32_at(p, at + 4)? as usize)?;
                let len = u32_at(p, at + 8)? as usize;
                if p.get(off..off.checked_add(len)?) == Some(key.as_bytes()) {
                    let first = u32_at(p, at + 12)? as usize;
                    let l0 = self.links.0.checked_add(first.checked_mul(4)?)?;
                    let count = count.min(self.links.1.saturating_sub(first));
                    return Some((l0, count));
                }
            }
            slot = (slot + 1) & (n - 1);
        }
        None
    }

    /// The entries of every name `key` stands for (whole or suffix) whose kind `want`
    /// accepts, with whether the key is that name whole.
    pub(crate) fn lookup(
        &self,
        key: &str,
        want: impl Fn(EntryKind) -> bool,
    ) -> Vec<(TableEntry, bool)> {
        let mut out = Vec::new();
        for (n, whole) in self.names_for_key(key) {
            out.extend(self.entries(n).filter(|e| want(e.kind)).map(|e| (e, whole)));
        }
        out
    }

    /// The units that define or inline a function whose name ends with the components
    /// of `name` (normalized), or `None` when no unit does.
    pub(crate) fn units_for_name(&self, name: &str) -> Option<Vec<usize>> {
        let mut units: Vec<usize> = self
            .lookup(name, |k| {
                matches!(k, EntryKind::Function | EntryKind::Inlined)
            })
            .into_iter()
            .map(|(e, _)| e.die.unit)
            .collect();
        units.sort_unstable();
        units.dedup();
        (!units.is_empty()).then_some(units)
    }

    /// The names that start with `prefix`: a range of name indices.
    pub(crate) fn names_with_prefix(&self, prefix: &str) -> std::ops::Range<usize> {
        let below = |n: usize, strict: bool| {
            let name = self.name(n).unwrap_or_default().as_bytes();
            if strict {
                name < prefix.as_bytes()
            } else {
                name.starts_with(prefix.as_bytes()) || name < prefix.as_bytes()
            }
        };
        let search = |strict: bool| {
            let (mut lo, mut hi) = (0usize, self.names.1);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if below(mid, strict) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            lo
        };
        search(true)..search(false)
    }

    /// Number of address ranges recorded (for logs).
    pub(crate) fn range_count(&self) -> usize {
        self.ranges.1
    }
}

/// The cache key of a binary: its build-id, else its path, size and mtime.
pub(crate) fn key_of(binary: &Binary) -> Option<String> {
    if let Some(id) = binary.info().build_id.as_ref().filter(|id| id.len() >= 8) {
        return Some(format!(
            "b-{}",
            id.iter().map(|b| format!("{b:02x}")).collect::<String>()
        ));
    }
    let path = std::fs::canonicalize(binary.path()).ok()?;
    let meta = std::fs::metadata(&path).ok()?;
    let mtime = meta
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_nanos();
    let text = format!("{} {} {mtime}", path.display(), meta.len());
    let h = fnv1a(text.as_bytes());
    let h2 = fnv1a(&[text.as_bytes(), b"#"].concat());
    Some(format!("p-{h:08x}{h2:08x}"))
}

/// Writes the cache file `path` with `write` (through a temporary file renamed over it,
/// the checksum `write` returns, if any, put in its header) and maps what was written:
/// the file's pages, not this process's memory.
fn stream_and_map(
    cache: &IndexCache,
    path: &Path,
    key: &str,
    write: impl FnOnce(&mut dyn Write) -> Result<Option<u32>, String>,
) -> std::io::Result<Mmap> {
    use std::os::unix::fs::FileExt;
    let started = std::time::Instant::now();
    std::fs::create_dir_all(&cache.dir)?;
    let tmp = cache.dir.join(format!(
        ".{key}.{}.{:?}.tmp",
        std::process::id(),
        std::thread::current().id()
    ));
    let written = (|| -> std::io::Result<(Mmap, u64)> {
        let f = std::fs::File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        // Not synced: a file a crash left torn fails its checksum and is rebuilt, and
        // flushing hundreds of megabytes would hold the session's index up for seconds.
        let mut out = std::io::BufWriter::with_capacity(1 << 20, &f);
        let sum = write(&mut out).map_err(std::io::Error::other)?;
        out.flush()?;
        drop(out);
        if let Some(sum) = sum {
            f.write_all_at(&sum.to_le_bytes(), 24)?;
        }
        // SAFETY: a private read-only mapping of the file this thread just wrote, which
        // is only ever replaced by rename afterwards, never written in place.
        let map = unsafe { Mmap::map(&f) }?;
        std::fs::rename(&tmp, path)?;
        // A stamp of the file this one replaced is no longer true.
        crate::stamps::remove(path);
        Ok((map, f.metadata()?.len()))
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    let (map, bytes) = written?;
    tracing::debug!(
        target: "tandem::cache",
        file = %path.display(),
        bytes,
        elapsed = ?started.elapsed(),
        "index cache written"
    );
    cache.evict(path);
    Ok(map)
}

/// Writes `bytes`, a whole cache file (its checksum in it), as the cache file `path`, as
/// [`stream_and_map`] does.
fn write_and_map(
    cache: &IndexCache,
    path: &Path,
    key: &str,
    bytes: &[u8],
) -> std::io::Result<Mmap> {
    stream_and_map(cache, path, key, |out| {
        out.write_all(bytes).map_err(|e| e.to_string())?;
        Ok(None)
    })
}

impl Binary {
    /// Opens this binary's file in `cache` when there is a valid one, so name lookups
    /// need no walk of every unit (see [`Binary::functions_by_index_section`]); `false`
    /// on a miss. A file that fails verification is removed (and logged).
    pub fn load_index_cache(&self, cache: &IndexCache) -> bool {
        let Some(key) = key_of(self) else {
            return false;
        };
        let path = cache.path_for(&key);
        if !path.exists() {
            tracing::debug!(target: "tandem::cache", binary = %self.path.display(), "index cache miss");
            return false;
        }
        match CachedIndex::open(&path, &key, self.unit_count(), self.debug_info_bytes()) {
            Ok(c) => {
                tracing::debug!(
                    target: "tandem::cache",
                    binary = %self.path.display(),
                    file = %path.display(),
                    ranges = c.range_count(),
                    names = c.name_count(),
                    "index cache hit"
                );
                let _ = self.cached.set(c);
                true
            }
            Err(reason) => {
                tracing::debug!(
                    target: "tandem::cache",
                    binary = %self.path.display(),
                    file = %path.display(),
                    reason,
                    "index cache rejected"
                );
                let _ = std::fs::remove_file(&path);
                crate::stamps::remove(&path);
                false
            }
        }
    }

    /// Writes this binary's name table to `cache` (atomically) and trims the cache to its
    /// cap: the table in use when there is one, else the one the built full index gives.
    /// Does nothing when there is neither (see [`Binary::build_index_cache`] for a
    /// session's background build).
    pub fn store_index_cache(&self, cache: &IndexCache) -> std::io::Result<()> {
        let Some(key) = key_of(self) else {
            return Ok(());
        };
        let path = cache.path_for(&key);
        if let Some(table) = self.cached.get() {
            if !table.is_mapped() {
                write_and_map(cache, &path, &key, table.bytes())?;
            }
            return Ok(());
        }
        if self.built_index().is_none() {
            return Ok(());
        }
        // Every unit's symbols are cached by the full index: nothing is walked again.
        let bytes = self.table_bytes(&key, &|_, _| {});
        write_and_map(cache, &path, &key, &bytes)?;
        Ok(())
    }

    /// Builds the name table on behalf of no request (its walks are counted as the
    /// background's, [`crate::CacheStats`]), one unit at a time, each unit's tables
    /// dropped once read; writes it to `cache` and maps the file (without a cache, or
    /// when the file cannot be written, the table stays in this process's memory). From
    /// then on every name lookup reads the table. Does nothing when the binary has one
    /// (a cache file was loaded); a lookup that needs the table meanwhile waits for this
    /// build. For the thread a session starts to index its program.
    pub fn build_index_cache(
        &self,
        cache: Option<&IndexCache>,
        progress: &(dyn Fn(usize, usize) + Sync),
    ) -> std::io::Result<()> {
        let was = crate::stats::in_background();
        crate::stats::set_background(true);
        let mut result = Ok(());
        let key = key_of(self).unwrap_or_default();
        self.cached.get_or_init(|| {
            let Some(cache) = cache.filter(|_| !key.is_empty()) else {
                return self.adopt_or_empty(self.table_bytes(&key, progress), &key);
            };
            // Streamed to its file: a big program's table is never whole in memory.
            let gathered = self.gather(progress);
            let streamed = stream_and_map(cache, &cache.path_for(&key), &key, |out| {
                gathered.write(self, &key, out).map(Some)
            });
            match streamed.map(|map| self.adopt(Blob::Map(map), true, &key)) {
                Ok(Ok(table)) => return table,
                Ok(Err(e)) => result = Err(std::io::Error::other(e)),
                Err(e) => result = Err(e),
            }
            // The file could not be written: the table in memory after all.
            self.adopt_or_empty(self.table_bytes(&key, progress), &key)
        });
        // A request that needed the table first built it in memory: written now.
        if let (Some(cache), Some(table)) = (cache, self.cached.get()) {
            if !table.is_mapped() && result.is_ok() && !key.is_empty() {
                result = write_and_map(cache, &cache.path_for(&key), &key, table.bytes()).map(drop);
            }
        }
        crate::stats::set_background(was);
        result
    }

    fn adopt(&self, blob: Blob, mapped: bool, key: &str) -> Result<CachedIndex, String> {
        CachedIndex::parse(
            blob,
            mapped,
            key,
            self.unit_count(),
            self.debug_info_bytes(),
        )
    }

    /// The table in `bytes`, kept in memory; an empty one if they do not parse (which
    /// only a bug makes happen).
    fn adopt_or_empty(&self, bytes: Vec<u8>, key: &str) -> CachedIndex {
        self.adopt(Blob::Heap(bytes), false, key)
            .unwrap_or_else(|e| {
                tracing::warn!(path = %self.path.display(), "name table unusable: {e}");
                CachedIndex::empty()
            })
    }

    /// The name table every name lookup reads: the cache file's when one was loaded or
    /// written, else built now on the calling thread (every unit walked once) and kept in
    /// memory — or the one a session's background build is making, waited for.
    pub(crate) fn name_table(&self) -> &CachedIndex {
        self.cached.get_or_init(|| {
            let key = key_of(self).unwrap_or_default();
            let started = std::time::Instant::now();
            let bytes = self.table_bytes(&key, &|_, _| {});
            tracing::debug!(
                target: "tandem::cache",
                binary = %self.path.display(),
                bytes = bytes.len(),
                elapsed = ?started.elapsed(),
                "name table built in memory for a request"
            );
            self.adopt_or_empty(bytes, &key)
        })
    }

    /// The name table, if it is there (loaded, or built by anyone): never builds it.
    pub(crate) fn cached_index(&self) -> Option<&CachedIndex> {
        self.cached.get()
    }

    /// The symbol table of the cache file [`Binary::load_index_cache`] opened, if any:
    /// what `workspace/symbol` searches without the full index.
    pub fn symbol_table(&self) -> Option<crate::symtab::SymbolTable> {
        self.cached.get().map(|c| c.symbols.clone())
    }

    /// Whether a name table (a cache file's, or one built) answers this binary's name
    /// lookups.
    pub fn has_index_cache(&self) -> bool {
        self.cached.get().is_some()
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::{crc_of_file, Regions};

    #[test]
    fn regions_are_written_in_order_little_endian_across_chunks() {
        let values: Vec<u32> = (0..9000u32).map(|v| v.wrapping_mul(0x9e37_79b9)).collect();
        let big = vec![7u8; 40_000];
        let mut out = Vec::new();
        let mut r = Regions::new(&mut out);
        r.u32s(&values).unwrap();
        r.bytes(b"abc").unwrap();
        r.u64s(&[1, u64::MAX]).unwrap();
        r.bytes(&big).unwrap();
        r.u32s(&[5]).unwrap();
        r.finish().unwrap();
        let mut expected: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        expected.extend_from_slice(b"abc");
        expected.extend([1u64, u64::MAX].iter().flat_map(|v| v.to_le_bytes()));
        expected.extend_from_slice(&big);
        expected.extend(5u32.to_le_bytes());
        assert_eq!(out, expected);
    }

    /// The checksum read in two halves (a file over 16 MiB) is the checksum of the whole
    /// range but the skipped bytes, wherever they fall; one changed byte in either half
    /// changes it.
    #[test]
    fn a_big_file_checksummed_in_halves_is_checksummed_whole() {
        let mut bytes = vec![0u8; (40 << 20) + 12345];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for b in bytes.iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
        let mut f = tempfile::tempfile().expect("a temporary file");
        f.write_all(&bytes).expect("written");
        let whole = |range: std::ops::Range<usize>, skip: std::ops::Range<usize>| {
            let mut h = crc32fast::Hasher::new();
            h.update(&bytes[range.start..skip.start.max(range.start)]);
            h.update(&bytes[skip.end.min(range.end).max(range.start)..range.end]);
            h.finalize()
        };
        let len = bytes.len() as u64;
        for (range, skip) in [
            (0..len, 24..28),
            (64..len, 0..0),
            (0..len, len / 2 - 2..len / 2 + 2),
            (1000..len - 1000, len - 5000..len - 4000),
            (0..4096, 24..28),
        ] {
            let got = crc_of_file(&f, range.clone(), skip.clone()).expect("read");
            let r = range.start as usize..range.end as usize;
            let s = if skip.is_empty() {
                r.start..r.start
            } else {
                skip.start as usize..skip.end as usize
            };
            assert_eq!(got, whole(r, s), "{range:?} without {skip:?}");
        }
        let before = crc_of_file(&f, 0..len, 24..28).expect("read");
        for at in [100u64, len / 2 + 10, len - 1] {
            let mut one = [0u8];
            std::os::unix::fs::FileExt::read_exact_at(&f, &mut one, at).expect("read");
            std::os::unix::fs::FileExt::write_all_at(&f, &[one[0] ^ 1], at).expect("write");
            assert_ne!(
                crc_of_file(&f, 0..len, 24..28).expect("read"),
                before,
                "byte {at}"
            );
            std::os::unix::fs::FileExt::write_all_at(&f, &one, at).expect("write");
        }
        assert_eq!(
            crc_of_file(&f, 0..len + 1, 0..0).map_err(|e| e.kind()),
            Err(std::io::ErrorKind::UnexpectedEof)
        );
    }

    /// The one pass over a name gives each suffix the hash a lookup of that suffix
    /// computes on its own.
    #[test]
    fn suffix_hashes_in_one_pass_are_those_of_each_suffix() {
        for name in [
            "std::map<std::string, int>::find",
            "a::b::c",
            "main",
            "",
            "ns::(anonymous namespace)::f",
        ] {
            let starts = crate::table::suffix_starts(name);
            let got = super::suffix_key_hashes(name.as_bytes(), &starts);
            let mut want: Vec<(usize, u32)> = starts
                .iter()
                .rev()
                .chain(std::iter::once(&0))
                .map(|&s| (s, super::key_hash(&name.as_bytes()[s..])))
                .collect();
            assert_eq!(got, want, "{name}");
            want.dedup_by_key(|w| w.1);
            assert_eq!(want.len(), starts.len() + 1, "{name}: distinct hashes");
        }
    }
}
