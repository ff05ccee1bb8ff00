//! Compressed DWARF sections kept decompressed on disk, beside the index cache, and
//! mapped instead of inflated into memory: the first session on a build inflates each
//! SHF_COMPRESSED section once (zlib streamed to the file through a small buffer, the
//! sections in parallel), later sessions map the files. Either way the decompressed bytes
//! are file-backed pages the kernel can drop, not the process's own memory: a program
//! whose DWARF inflates to hundreds of megabytes (Debian's ceph-osd: 174 MB of zlib
//! `.debug_info` → 381 MB) costs the session only the pages it reads.
//!
//! A file (`KEY.SECTION.dsec`, KEY as the index cache's) is a 32-byte header — magic
//! "TNDMSEC\0", version u32, CRC-32 of the payload u32, payload length u64, the compressed
//! section's size u64 — then the section's bytes. It is never trusted: magic, version,
//! lengths and the CRC (read through `read`, so checking it maps nothing) are checked
//! before the file is mapped; one that fails is replaced. Written to a temporary name and
//! renamed, like the index cache's files, and counted in its size cap.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use object::{Object, ObjectSection};

use crate::cache::IndexCache;
use crate::reader::Bytes;

const MAGIC: &[u8; 8] = b"TNDMSEC\0";
const VERSION: u32 = 1;
const HEADER: usize = 32;
pub(crate) const SUFFIX: &str = "dsec";
/// Sections smaller than this (decompressed) stay in memory.
const MIN_BYTES: u64 = 1 << 20;

/// Where one binary's decompressed sections go: the cache and the binary's key.
#[derive(Clone, Debug)]
pub(crate) struct SectionCache {
    pub(crate) cache: IndexCache,
    pub(crate) key: String,
}

impl SectionCache {
    fn path(&self, name: &str) -> PathBuf {
        self.cache.dir().join(format!(
            "{}.{}.{SUFFIX}",
            self.key,
            name.trim_start_matches('.')
        ))
    }

    /// The decompressed bytes of compressed section `name` of `file`, from its cache file
    /// (written first when there is no valid one); `None` when the cache cannot serve it
    /// (the caller decompresses into memory then). `map` is the mapping `file` was
    /// parsed from.
    pub(crate) fn section(
        &self,
        map: &memmap2::Mmap,
        file: &object::File<'_>,
        name: &str,
    ) -> Option<Bytes> {
        let section = file.section_by_name(name)?;
        let range = section.compressed_file_range().ok()?;
        // Small sections inflate faster than a file is checked.
        if range.format == object::CompressionFormat::None || range.uncompressed_size < MIN_BYTES {
            return None;
        }
        let path = self.path(name);
        match verify(&path, range.uncompressed_size, range.compressed_size) {
            Ok(()) => {
                // Refreshed for least-recently-used eviction, as an index file on a hit.
                crate::stamps::touch(&path);
                tracing::debug!(target: "tandem::cache", file = %path.display(), "decompressed section cache hit");
            }
            Err(reason) => {
                if path.exists() {
                    tracing::debug!(target: "tandem::cache", file = %path.display(), reason, "decompressed section cache rejected");
                }
                let started = std::time::Instant::now();
                // The last few MiB the inflater read (and a zstd section's bytes) are
                // released with the rest of the mapping by `binary::load_dwarf`.
                if let Err(e) = self.write(map, &path, &section, range) {
                    tracing::debug!(target: "tandem::cache", file = %path.display(), "cannot write a decompressed section: {e}");
                    return None;
                }
                tracing::debug!(
                    target: "tandem::cache",
                    file = %path.display(),
                    bytes = range.uncompressed_size,
                    elapsed = ?started.elapsed(),
                    "decompressed section written"
                );
                self.cache.evict(&path);
            }
        }
        let map = crate::binary::map_file(&path).ok()?;
        let len = map.len().checked_sub(HEADER)?;
        Some(Bytes::Mapped {
            map,
            start: HEADER,
            len,
        })
    }

    fn write(
        &self,
        map: &memmap2::Mmap,
        path: &Path,
        section: &object::Section<'_, '_>,
        range: object::CompressedFileRange,
    ) -> std::io::Result<()> {
        std::fs::create_dir_all(self.cache.dir())?;
        let tmp = self.cache.dir().join(format!(
            ".{}.{}.{:?}.tmp",
            path.file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("section"),
            std::process::id(),
            std::thread::current().id()
        ));
        let written = (|| {
            let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&tmp)?);
            out.write_all(&[0u8; HEADER])?;
            let mut crc = crc32fast::Hasher::new();
            let mut len = 0u64;
            let mut sink = |chunk: &[u8], out: &mut std::io::BufWriter<std::fs::File>| {
                crc.update(chunk);
                len += chunk.len() as u64;
                out.write_all(chunk)
            };
            let zlib_data = (range.format == object::CompressionFormat::Zlib)
                .then(|| section.compressed_data().ok())
                .flatten();
            match zlib_data {
                // Streamed: the section is never whole in memory.
                Some(data) => {
                    let input = Releasing::new(map, range.offset, data.data);
                    let mut z = flate2::bufread::ZlibDecoder::new(input);
                    let mut buf = vec![0u8; 1 << 20];
                    loop {
                        let n = z.read(&mut buf)?;
                        if n == 0 {
                            break;
                        }
                        sink(&buf[..n], &mut out)?;
                    }
                }
                None => {
                    let data = section
                        .uncompressed_data()
                        .map_err(|e| std::io::Error::other(e.to_string()))?;
                    sink(&data, &mut out)?;
                }
            }
            if len != range.uncompressed_size {
                return Err(std::io::Error::other(format!(
                    "inflated to {len} bytes, the section header says {}",
                    range.uncompressed_size
                )));
            }
            let mut file = out.into_inner().map_err(|e| e.into_error())?;
            let mut header = Vec::with_capacity(HEADER);
            header.extend_from_slice(MAGIC);
            header.extend_from_slice(&VERSION.to_le_bytes());
            header.extend_from_slice(&crc.finalize().to_le_bytes());
            header.extend_from_slice(&len.to_le_bytes());
            header.extend_from_slice(&range.compressed_size.to_le_bytes());
            use std::io::Seek;
            file.seek(std::io::SeekFrom::Start(0))?;
            file.write_all(&header)?;
            std::fs::rename(&tmp, path)?;
            // A stamp of the file this one replaced is no longer true.
            crate::stamps::remove(path);
            Ok(())
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }
}

/// Checks the cache file at `path` for a section of `uncompressed` bytes compressed to
/// `compressed`; the reason when it is unusable.
fn verify(path: &Path, uncompressed: u64, compressed: u64) -> Result<(), String> {
    let mut f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut header = [0u8; HEADER];
    f.read_exact(&mut header).map_err(|e| e.to_string())?;
    let u32_at = |at: usize| u32::from_le_bytes(header[at..at + 4].try_into().unwrap_or_default());
    let u64_at = |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().unwrap_or_default());
    if &header[..8] != MAGIC || u32_at(8) != VERSION {
        return Err("not a decompressed section of this version".into());
    }
    if u64_at(16) != uncompressed || u64_at(24) != compressed {
        return Err("written for another section".into());
    }
    let size = f.metadata().map_err(|e| e.to_string())?.len();
    if size != HEADER as u64 + uncompressed {
        return Err(format!(
            "{size} bytes, not {}",
            HEADER as u64 + uncompressed
        ));
    }
    if crate::stamps::is_checked(path, &f) {
        return Ok(());
    }
    let began = crate::stamps::now();
    let crc =
        crate::cache::crc_of_file(&f, HEADER as u64..size, 0..0).map_err(|e| e.to_string())?;
    if crc != u32_at(12) {
        return Err("checksum mismatch".into());
    }
    crate::stamps::record(path, &f, began);
    Ok(())
}

/// Drops from this process's memory the pages of `map` that `len` bytes at `offset`
/// cover (the compressed bytes of a section once inflated to its file: 230 MB for
/// ceph-osd's debug file, which would otherwise stay in the session's RSS). They stay in
/// the page cache; a later read faults them in again. `map` must be a read-only private
/// file mapping (`binary::map_file`).
pub(crate) fn release_pages(map: &memmap2::Mmap, offset: u64, len: u64) {
    let (Ok(offset), Ok(len)) = (usize::try_from(offset), usize::try_from(len)) else {
        return;
    };
    if offset.checked_add(len).is_none_or(|end| end > map.len()) {
        return;
    }
    // SAFETY: `map` is a read-only private mapping of a file (`map_file`): no page of it
    // was ever written, so a dropped page faults back in with the same bytes from the
    // file, and every slice into it stays valid.
    let dropped =
        unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, offset, len) };
    if let Err(e) = dropped {
        tracing::debug!(target: "tandem::cache", "cannot release inflated pages: {e}");
    }
}

/// The compressed bytes of a section as the inflater reads them, each 8 MiB dropped from
/// memory ([`release_pages`]) once read, so the peak holds a few of them, not the whole
/// compressed section.
struct Releasing<'a> {
    map: &'a memmap2::Mmap,
    /// Where `data` starts in `map`.
    offset: u64,
    data: &'a [u8],
    pos: usize,
    released: usize,
}

impl<'a> Releasing<'a> {
    const STEP: usize = 8 << 20;

    fn new(map: &'a memmap2::Mmap, offset: u64, data: &'a [u8]) -> Self {
        Releasing {
            map,
            offset,
            data,
            pos: 0,
            released: 0,
        }
    }
}

impl Read for Releasing<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = std::io::BufRead::fill_buf(self)?.len().min(buf.len());
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        std::io::BufRead::consume(self, n);
        Ok(n)
    }
}

impl std::io::BufRead for Releasing<'_> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        let end = self.data.len().min(self.pos + (1 << 20));
        Ok(&self.data[self.pos..end])
    }

    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.data.len());
        if self.pos - self.released >= Self::STEP {
            release_pages(
                self.map,
                self.offset + self.released as u64,
                (self.pos - self.released) as u64,
            );
            self.released = self.pos;
        }
    }
}

/// Every compressed DWARF section of `file` that gimli reads, served from `cache` — each
/// on its own thread, so the first session inflates them in parallel and later ones check
/// them in parallel. Sections the cache cannot serve are missing from the answer.
pub(crate) fn load_all(
    cache: &SectionCache,
    map: &memmap2::Mmap,
    file: &object::File<'_>,
) -> std::collections::HashMap<&'static str, Bytes> {
    let names: Vec<&'static str> = gimli_sections()
        .into_iter()
        .filter(|name| {
            file.section_by_name(name)
                .and_then(|s| s.compressed_file_range().ok())
                .is_some_and(|r| r.format != object::CompressionFormat::None)
        })
        .collect();
    // The biggest first: `.debug_info` (most of the bytes) is not left for last, to be
    // checked or inflated by one thread while the others have nothing left to do.
    let size = |name: &str| {
        file.section_by_name(name)
            .and_then(|s| s.compressed_file_range().ok())
            .map_or(0, |r| r.uncompressed_size)
    };
    let mut names = names;
    names.sort_by_key(|name| std::cmp::Reverse(size(name)));
    let out = std::sync::Mutex::new(std::collections::HashMap::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let threads = std::thread::available_parallelism()
        .map_or(2, |p| p.get())
        .clamp(1, 8)
        .min(names.len());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&name) = names.get(i) else { break };
                if let Some(bytes) = cache.section(map, file, name) {
                    out.lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(name, bytes);
                }
            });
        }
    });
    out.into_inner().unwrap_or_else(|p| p.into_inner())
}

/// The sections `gimli::DwarfSections::load` asks for, by name.
fn gimli_sections() -> Vec<&'static str> {
    use gimli::SectionId::*;
    [
        DebugAbbrev,
        DebugAddr,
        DebugAranges,
        DebugInfo,
        DebugLine,
        DebugLineStr,
        DebugStr,
        DebugStrOffsets,
        DebugTypes,
        DebugLoc,
        DebugLocLists,
        DebugRanges,
        DebugRngLists,
        DebugMacinfo,
        DebugMacro,
    ]
    .into_iter()
    .map(|id| id.name())
    .collect()
}
