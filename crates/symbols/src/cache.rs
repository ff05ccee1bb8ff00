//! The on-disk index cache: what the full symbol index learned about a binary (which
//! units define or inline each function name, which unit covers each address), kept in
//! one flat file per build and read through mmap without deserialising, so a second
//! session on the same program needs neither the background index nor a walk of every
//! unit's DIEs.
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
//!                    table: address map offset, count; name slots offset, count;
//!                           unit lists offset; strings offset; then the symbol
//!                           table's 12 fields (`symtab.rs`)       (18 × u32)
//!                    address map: (start u64, end u64, unit u32, 0 u32), sorted by start
//!                    name slots: (hash u32, name offset u32, name length u32,
//!                                 units offset u32, units count u32), open addressing
//!                                 (FNV-1a, linear probing, a power of two of slots)
//!                    unit lists: u32 unit indices
//!                    strings: the names, one blob
//!                    the symbol table (`symtab.rs`): what `workspace/symbol` lists
//! ```
//!
//! A file is never trusted: magic, version, length, checksum, key and the binary's unit
//! count and DIE size are checked when it is opened, and every read is bounds-checked.
//! A file that fails is removed and rebuilt. Files are written to a temporary name and
//! renamed, so readers and concurrent writers never see half a file; after a write the
//! least recently used files are removed while the directory is over its size cap (a hit
//! refreshes the file's mtime).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::Mmap;

use crate::binary::Binary;
use crate::index::SymbolIndex;

const MAGIC: &[u8; 8] = b"TNDMIDX\0";
/// Bumped whenever the layout or the meaning of an entry changes.
const VERSION: u32 = 3;
const HEADER: usize = 64;
const SLOT: usize = 20;
const RANGE: usize = 24;
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
                Some((meta.modified().ok()?, meta.len(), path))
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
                total = total.saturating_sub(len);
                tracing::debug!(target: "tandem::cache", path = %path.display(), "index cache evicted");
            }
        }
    }
}

/// An opened, verified cache file.
pub(crate) struct CachedIndex {
    map: Arc<Mmap>,
    payload: usize,
    ranges: (usize, usize),
    slots: (usize, usize),
    strings: usize,
    symbols: crate::symtab::SymbolTable,
}

/// Fields of the table at the payload's start: 6 of the name and address maps, then the
/// symbol table's.
const TABLE_FIELDS: usize = 6 + crate::symtab::FIELDS;

fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |h, &b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// The CRC-32 of the whole file but its own field (header bytes 24..28).
fn checksum(file: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&file[..24.min(file.len())]);
    h.update(file.get(28..).unwrap_or_default());
    h.finalize()
}

/// [`checksum`] of the file at `path`, read in chunks.
fn checksum_of_file(path: &Path) -> std::io::Result<u32> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut h = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 4 << 20];
    let mut at = 0usize;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        // The checksum field (bytes 24..28) is left out.
        let chunk = &buf[..n];
        let skip = 24usize.saturating_sub(at)..28usize.saturating_sub(at);
        if skip.end == 0 || skip.start >= n {
            h.update(chunk);
        } else {
            h.update(&chunk[..skip.start]);
            h.update(chunk.get(skip.end.min(n)..).unwrap_or_default());
        }
        at += n;
    }
    Ok(h.finalize())
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        b.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}

impl CachedIndex {
    /// Opens and verifies the file at `path` for a binary whose key is `key`, with
    /// `units` units and `die_bytes` bytes of DIEs; the reason when it is unusable.
    fn open(path: &Path, key: &str, units: usize, die_bytes: u64) -> Result<CachedIndex, String> {
        let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
        // SAFETY: a private read-only mapping of a file that is only ever replaced by
        // rename, never written in place, so its inode's contents do not change.
        let map = Arc::new(unsafe { Mmap::map(&file) }.map_err(|e| e.to_string())?);
        let b = &map[..];
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
        let payload = &b[HEADER..];
        // Read through read(2), not the mapping: checking a file of hundreds of megabytes
        // (a big C++ program's symbol table) must not make every page of it resident.
        if checksum_of_file(path).map_err(|e| e.to_string())? != u32_at(b, 24).unwrap_or(0) {
            return Err("checksum mismatch".into());
        }
        let key_len = u32_at(b, 28).unwrap_or(0) as usize;
        if payload.get(..key_len) != Some(key.as_bytes()) {
            return Err("written for another build".into());
        }
        if u32_at(b, 32) != u32::try_from(units).ok() || u64_at(b, 40) != Some(die_bytes) {
            return Err("written for another version of the file".into());
        }
        let table = key_len.div_ceil(8) * 8;
        let field = |i: usize| u32_at(payload, table + 4 * i).map(|v| v as usize);
        let (Some(r0), Some(rn), Some(s0), Some(sn), Some(_lists), Some(strings)) =
            (field(0), field(1), field(2), field(3), field(4), field(5))
        else {
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
            || strings > payload.len()
        {
            return Err("a table lies outside the file".into());
        }
        let symbol_fields: Option<Vec<usize>> = (6..TABLE_FIELDS).map(field).collect();
        let symbols = symbol_fields
            .and_then(|f| crate::symtab::SymbolTable::open(map.clone(), HEADER, &f))
            .ok_or("the symbol table lies outside the file")?;
        Ok(CachedIndex {
            map,
            payload: HEADER,
            ranges: (r0, rn),
            slots: (s0, sn),
            strings,
            symbols,
        })
    }

    fn payload(&self) -> &[u8] {
        &self.map[self.payload..]
    }

    /// The units that define or inline a function whose name ends with the components
    /// of `name` (normalized), or `None` when no unit does.
    pub(crate) fn units_for_name(&self, name: &str) -> Option<Vec<usize>> {
        let p = self.payload();
        let (s0, n) = self.slots;
        let hash = fnv1a(name.as_bytes());
        let mut slot = hash as usize & (n - 1);
        for _ in 0..n {
            let at = s0 + slot * SLOT;
            let count = u32_at(p, at + 16)? as usize;
            if count == 0 {
                return None;
            }
            if u32_at(p, at)? == hash {
                let off = self.strings.checked_add(u32_at(p, at + 4)? as usize)?;
                let len = u32_at(p, at + 8)? as usize;
                if p.get(off..off.checked_add(len)?) == Some(name.as_bytes()) {
                    let lists = u32_at(p, at + 12)? as usize;
                    return (0..count)
                        .map(|i| u32_at(p, lists.checked_add(4 * i)?).map(|u| u as usize))
                        .collect();
                }
            }
            slot = (slot + 1) & (n - 1);
        }
        None
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

/// Builds the file's bytes from a full index.
fn serialize(binary: &Binary, key: &str, index: &SymbolIndex) -> Vec<u8> {
    // Names → units: every "::"-suffix of each function's qualified name (what a query
    // matches, `names::normalized_matches`), for the unit holding the function and the
    // units holding inlined copies of it. Each (name, unit) is taken once before its
    // suffixes are (a function inlined a thousand times in a unit is one pair), the
    // suffixes borrow from the index's names, and pairs are ordered by hash first, so
    // the sort compares strings only for equal hashes: on ceph-osd the string sort was
    // a fifth of the background index's CPU.
    let mut qualified_of: std::collections::HashMap<crate::units::DieId, &str> =
        std::collections::HashMap::new();
    for (_, f) in index.unit_functions() {
        qualified_of.insert(f.key, &f.qualified);
    }
    let mut roots: Vec<(&str, u32)> = Vec::new();
    for (_, f) in index.unit_functions() {
        if let Ok(unit) = u32::try_from(f.die.unit) {
            roots.push((&f.qualified, unit));
        }
    }
    for (unit, key) in index.inlined_keys() {
        if let (Some(name), Ok(unit)) = (qualified_of.get(&key), u32::try_from(unit)) {
            roots.push((name, unit));
        }
    }
    // By the name's address: copies of one function share its string.
    roots.sort_unstable_by_key(|&(name, unit)| (name.as_ptr() as usize, name.len(), unit));
    roots.dedup_by_key(|&mut (name, unit)| (name.as_ptr() as usize, name.len(), unit));
    let mut pairs: Vec<(u32, &str, u32)> = Vec::new();
    for &(name, unit) in &roots {
        pairs.push((fnv1a(name.as_bytes()), name, unit));
        for (i, _) in name.match_indices("::") {
            let suffix = &name[i + 2..];
            pairs.push((fnv1a(suffix.as_bytes()), suffix, unit));
        }
    }
    pairs.sort_unstable();
    pairs.dedup();

    let mut strings: Vec<u8> = Vec::new();
    let mut lists: Vec<u32> = Vec::new();
    // (hash, name offset, name length, first list index, count)
    let mut names: Vec<(u32, u32, u32, u32, u32)> = Vec::new();
    let mut i = 0;
    while i < pairs.len() {
        let (hash, name, _) = pairs[i];
        let first = lists.len() as u32;
        while i < pairs.len() && pairs[i].0 == hash && pairs[i].1 == name {
            lists.push(pairs[i].2);
            i += 1;
        }
        let off = strings.len() as u32;
        strings.extend_from_slice(name.as_bytes());
        names.push((
            hash,
            off,
            name.len() as u32,
            first,
            lists.len() as u32 - first,
        ));
    }
    let slot_count = (names.len() * 2).next_power_of_two().max(8);
    let ranges = binary.unit_address_ranges();

    let key_pad = key.len().div_ceil(8) * 8;
    let table = key_pad;
    let ranges_at = table + 4 * TABLE_FIELDS;
    let slots_at = ranges_at + ranges.len() * RANGE;
    let lists_at = slots_at + slot_count * SLOT;
    let strings_at = lists_at + lists.len() * 4;
    let mut p = vec![0u8; strings_at];
    p[..key.len()].copy_from_slice(key.as_bytes());
    let put32 = |p: &mut [u8], at: usize, v: usize| {
        p[at..at + 4].copy_from_slice(&(v as u32).to_le_bytes());
    };
    for (i, v) in [
        ranges_at,
        ranges.len(),
        slots_at,
        slot_count,
        lists_at,
        strings_at,
    ]
    .into_iter()
    .enumerate()
    {
        put32(&mut p, table + 4 * i, v);
    }
    for (i, &(start, end, unit)) in ranges.iter().enumerate() {
        let at = ranges_at + i * RANGE;
        p[at..at + 8].copy_from_slice(&start.to_le_bytes());
        p[at + 8..at + 16].copy_from_slice(&end.to_le_bytes());
        put32(&mut p, at + 16, unit);
    }
    for &(hash, off, len, first, count) in &names {
        let mut slot = hash as usize & (slot_count - 1);
        while u32_at(&p, slots_at + slot * SLOT + 16) != Some(0) {
            slot = (slot + 1) & (slot_count - 1);
        }
        let at = slots_at + slot * SLOT;
        put32(&mut p, at, hash as usize);
        put32(&mut p, at + 4, off as usize);
        put32(&mut p, at + 8, len as usize);
        put32(&mut p, at + 12, lists_at + 4 * first as usize);
        put32(&mut p, at + 16, count as usize);
    }
    for (i, u) in lists.iter().enumerate() {
        put32(&mut p, lists_at + 4 * i, *u as usize);
    }
    p.extend_from_slice(&strings);
    let (symbols, fields) = crate::symtab::serialize(binary, index, p.len());
    p.extend_from_slice(&symbols);
    for (i, v) in fields.into_iter().enumerate() {
        put32(&mut p, table + 4 * (6 + i), v);
    }

    let mut out = Vec::with_capacity(HEADER + p.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(HEADER as u32).to_le_bytes());
    out.extend_from_slice(&(p.len() as u64).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes()); // the checksum, below
    out.extend_from_slice(&(key.len() as u32).to_le_bytes());
    out.extend_from_slice(&(binary.unit_count() as u32).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&binary.debug_info_bytes().to_le_bytes());
    out.resize(HEADER, 0);
    out.extend_from_slice(&p);
    let sum = checksum(&out);
    out[24..28].copy_from_slice(&sum.to_le_bytes());
    out
}

impl Binary {
    /// Opens this binary's file in `cache` when there is a valid one, so name lookups
    /// walk only the units it names (see [`Binary::functions_by_index_section`]);
    /// `false` on a miss. A file that fails verification is removed (and logged).
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
                // Refreshed for least-recently-used eviction.
                if let Ok(f) = std::fs::File::options().append(true).open(&path) {
                    let _ = f.set_modified(std::time::SystemTime::now());
                }
                tracing::debug!(
                    target: "tandem::cache",
                    binary = %self.path.display(),
                    file = %path.display(),
                    ranges = c.range_count(),
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
                false
            }
        }
    }

    /// Writes this binary's built index to `cache` (atomically) and trims the cache to
    /// its cap. Does nothing before the full index is built.
    pub fn store_index_cache(&self, cache: &IndexCache) -> std::io::Result<()> {
        let Some(index) = self.built_index() else {
            return Ok(());
        };
        let Some(key) = key_of(self) else {
            return Ok(());
        };
        std::fs::create_dir_all(&cache.dir)?;
        let bytes = serialize(self, &key, &index);
        let path = cache.path_for(&key);
        let tmp = cache.dir.join(format!(
            ".{key}.{}.{:?}.tmp",
            std::process::id(),
            std::thread::current().id()
        ));
        let written = (|| {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(&bytes)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &path)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written?;
        tracing::debug!(
            target: "tandem::cache",
            binary = %self.path.display(),
            file = %path.display(),
            bytes = bytes.len(),
            "index cache written"
        );
        cache.evict(&path);
        Ok(())
    }

    /// The cache file opened by [`Binary::load_index_cache`], if any.
    pub(crate) fn cached_index(&self) -> Option<&CachedIndex> {
        self.cached.get()
    }

    /// The symbol table of the cache file [`Binary::load_index_cache`] opened, if any:
    /// what `workspace/symbol` searches without the full index.
    pub fn symbol_table(&self) -> Option<crate::symtab::SymbolTable> {
        self.cached.get().map(|c| c.symbols.clone())
    }

    /// Whether a valid cache file answers this binary's name lookups.
    pub fn has_index_cache(&self) -> bool {
        self.cached.get().is_some()
    }
}
