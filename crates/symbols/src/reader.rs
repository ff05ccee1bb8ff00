//! The gimli reader type: section bytes shared between the mmap and decompressed buffers.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use memmap2::Mmap;

/// Bytes of one section: either a window into the mapped file or an owned
/// (decompressed) buffer. Cloning is cheap (an `Arc` bump).
#[derive(Clone)]
pub(crate) enum Bytes {
    Mapped {
        map: Arc<Mmap>,
        start: usize,
        len: usize,
    },
    Owned(Arc<[u8]>),
}

impl Bytes {
    pub(crate) fn empty() -> Bytes {
        Bytes::Owned(Arc::from(Vec::new()))
    }
}

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Mapped { map, start, len } => map
                .get(*start..start.saturating_add(*len))
                .unwrap_or_default(),
            Bytes::Owned(bytes) => bytes,
        }
    }
}

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Bytes({} bytes)", self.len())
    }
}

// SAFETY: both variants deref into memory owned by an `Arc` (the mapping or the
// buffer), which never moves while any clone is alive, and clones deref to the same
// address. The mapping is private and read-only.
unsafe impl gimli::StableDeref for Bytes {}
// SAFETY: see above; a clone shares the same `Arc` and the same window.
unsafe impl gimli::CloneStableDeref for Bytes {}

/// The reader used for every DWARF section in this crate.
pub(crate) type R = gimli::EndianReader<gimli::RunTimeEndian, Bytes>;
