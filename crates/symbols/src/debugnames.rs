//! DWARF 5 `.debug_names` (clang's `-gpubnames`, lld, mold): which compilation units
//! define a name, read through gimli's name index from the mapped section, so a
//! function breakpoint walks only those units' DIEs instead of building the full index
//! (as `.gdb_index` does, `gdbindex.rs`).
//!
//! The table holds simple names (`work`, not `big::u93::work`) and linkage names: a
//! qualified query is looked up by its last component, which may name more units than
//! the query matches; the caller filters by the whole name in those units' DIEs.

use gimli::Reader;

use crate::binary::Binary;

impl Binary {
    /// The `.debug_info` offsets of the compilation units whose `.debug_names` entries
    /// name a function or variable called `simple` (its last `::` component); `None`
    /// without a usable `.debug_names`, or when it does not have the name.
    pub(crate) fn units_named_in_debug_names(&self, simple: &str) -> Option<Vec<u64>> {
        let dwarf = self.dwarf();
        let mut headers = dwarf.debug_names.headers();
        let hash = gimli::case_folding_djb_hash(simple);
        let mut out = Vec::new();
        let mut any_index = false;
        loop {
            let header = match headers.next() {
                Ok(Some(h)) => h,
                Ok(None) => break,
                Err(e) => {
                    tracing::debug!("ignoring the rest of .debug_names: {e}");
                    break;
                }
            };
            let Ok(index) = header.index() else { continue };
            if !index.has_hash_table() {
                // Without a hash table the lookup is a scan: not worth it here.
                continue;
            }
            any_index = true;
            let Ok(mut names) = index.find_by_hash(hash) else {
                continue;
            };
            while let Ok(Some(name)) = names.next() {
                let Ok(text) = index.name_string(name, &dwarf.debug_str) else {
                    continue;
                };
                if text.to_slice().ok().as_deref() != Some(simple.as_bytes()) {
                    continue;
                }
                let Ok(mut entries) = index.name_entries(name) else {
                    continue;
                };
                while let Ok(Some(entry)) = entries.next() {
                    if !matches!(
                        entry.tag,
                        gimli::DW_TAG_subprogram
                            | gimli::DW_TAG_inlined_subroutine
                            | gimli::DW_TAG_variable
                    ) {
                        continue;
                    }
                    let cu = match entry.compile_unit(&index) {
                        Ok(Some(cu)) => Some(cu),
                        Ok(None) => index.default_compile_unit().ok().flatten(),
                        Err(_) => None,
                    };
                    if let Some(cu) = cu {
                        out.push(cu.0 as u64);
                    }
                }
            }
        }
        if !any_index || out.is_empty() {
            return None;
        }
        out.sort_unstable();
        out.dedup();
        Some(out)
    }
}
