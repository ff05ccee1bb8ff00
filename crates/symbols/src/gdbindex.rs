//! `.gdb_index` (versions 7 and 8, as `gdb-add-index`, mold and lld write it): which
//! compilation units define a name, read from the mapped section without copying, so a
//! function breakpoint walks only those units' DIEs instead of building the full index.
//!
//! Layout (gdb's "Index Section Format"): a header of six little-endian u32s (version,
//! then the offsets of the CU list, the type-unit list, the address area, the symbol
//! table and the constant pool); the CU list is (offset, length) u64 pairs; the symbol
//! table is an open-addressing hash of (name offset, CU-vector offset) u32 pairs, both
//! offsets into the constant pool; a CU vector is a u32 count and that many u32 entries
//! whose low 24 bits index the CU list (then the type-unit list).

use crate::reader::Bytes;

/// A validated `.gdb_index`: every offset in the header lies inside the section.
pub(crate) struct GdbIndex {
    bytes: Bytes,
    cu_list: usize,
    cus: usize,
    symbols: usize,
    slots: usize,
    pool: usize,
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    let lo = u64::from(u32_at(bytes, at)?);
    let hi = u64::from(u32_at(bytes, at.checked_add(4)?)?);
    Some(lo | hi << 32)
}

/// gdb's `mapped_index_string_hash` for versions 5 and later (case-folded).
fn hash(name: &str) -> u32 {
    name.bytes().fold(0u32, |r, c| {
        r.wrapping_mul(67)
            .wrapping_add(u32::from(c.to_ascii_lowercase()))
            .wrapping_sub(113)
    })
}

impl GdbIndex {
    /// Checks the header; `None` for a version this reader does not know (below 7: no
    /// symbol kinds; above 8: unknown) or offsets outside the section.
    pub(crate) fn parse(bytes: Bytes) -> Option<GdbIndex> {
        let version = u32_at(&bytes, 0)?;
        if !(7..=8).contains(&version) {
            tracing::debug!(version, "ignoring a .gdb_index of an unknown version");
            return None;
        }
        let off = |i: usize| u32_at(&bytes, 4 * i).map(|v| v as usize);
        let (cu_list, types, _addresses, symbols, pool) =
            (off(1)?, off(2)?, off(3)?, off(4)?, off(5)?);
        let ordered = 24 <= cu_list && cu_list <= types && symbols <= pool && pool <= bytes.len();
        let slots = pool.checked_sub(symbols)? / 8;
        if !ordered || !slots.is_power_of_two() {
            tracing::debug!("ignoring a malformed .gdb_index");
            return None;
        }
        Some(GdbIndex {
            cus: (types - cu_list) / 16,
            bytes,
            cu_list,
            symbols,
            slots,
            pool,
        })
    }

    /// The `.debug_info` offsets of the compilation units that define `name` (a fully
    /// qualified name without parameters, as gdb indexes it: `ns::Class::method`), or
    /// `None` when the index does not have the name.
    pub(crate) fn units_defining(&self, name: &str) -> Option<Vec<u64>> {
        let mask = self.slots - 1;
        let h = hash(name) as usize;
        let step = ((h.wrapping_mul(17)) & mask) | 1;
        let mut slot = h & mask;
        for _ in 0..self.slots {
            let at = self.symbols + slot * 8;
            let name_off = u32_at(&self.bytes, at)? as usize;
            let vec_off = u32_at(&self.bytes, at + 4)? as usize;
            if name_off == 0 && vec_off == 0 {
                return None;
            }
            if self.name_at(name_off) == Some(name.as_bytes()) {
                return Some(self.cu_vector(vec_off));
            }
            slot = (slot + step) & mask;
        }
        None
    }

    fn name_at(&self, offset: usize) -> Option<&[u8]> {
        let start = self.pool.checked_add(offset)?;
        let rest = self.bytes.get(start..)?;
        let len = rest.iter().position(|&b| b == 0)?;
        Some(&rest[..len])
    }

    fn cu_vector(&self, offset: usize) -> Vec<u64> {
        let Some(start) = self.pool.checked_add(offset) else {
            return Vec::new();
        };
        let count = u32_at(&self.bytes, start).unwrap_or(0) as usize;
        let mut out = Vec::new();
        for i in 0..count.min(self.cus.max(1) * 4) {
            let Some(entry) = u32_at(&self.bytes, start + 4 + 4 * i) else {
                break;
            };
            let cu = (entry & 0x00ff_ffff) as usize;
            if cu >= self.cus {
                continue; // a type unit: no code
            }
            if let Some(offset) = u64_at(&self.bytes, self.cu_list + 16 * cu) {
                out.push(offset);
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}
