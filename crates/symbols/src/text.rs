//! The loaded image of a binary as code analysis needs it: its executable sections'
//! bytes, its other loaded sections' bytes, the code pointers its dynamic relocations
//! store, and where functions start (ELF symbols), all in file addresses.
//!
//! This is what a branch-target analysis reads to learn every address code may jump
//! to without running the program: the relocations give the values absolute code
//! pointers take once loaded (a position-independent binary's file holds no final
//! address), so the answer does not depend on whether the dynamic linker has run yet.

use object::{Object, ObjectSection, ObjectSymbol, RelocationTarget};

use crate::binary::Binary;
use crate::error::Result;
use crate::index::SymbolKind;

/// `SHF_ALLOC`: the section is loaded.
const SHF_ALLOC: u64 = 0x2;
/// `SHF_EXECINSTR`: the section is code.
const SHF_EXECINSTR: u64 = 0x4;
/// x86-64 dynamic relocation types whose value is a plain address.
const R_X86_64_64: u32 = 1;
const R_X86_64_RELATIVE: u32 = 8;
const R_X86_64_IRELATIVE: u32 = 37;

/// One loaded section's contents.
#[derive(Clone, Debug)]
pub struct LoadedSection {
    /// Its file address.
    pub addr: u64,
    /// Its bytes as the file holds them.
    pub bytes: Vec<u8>,
}

impl LoadedSection {
    /// Whether `addr` lies inside the section.
    pub fn contains(&self, addr: u64) -> bool {
        self.addr <= addr && addr - self.addr < self.bytes.len() as u64
    }
}

/// A binary's loaded image (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct CodeImage {
    /// Executable sections, by address.
    pub code: Vec<LoadedSection>,
    /// Other loaded sections with contents in the file (read-only data, data, GOT).
    pub data: Vec<LoadedSection>,
    /// Values dynamic relocations store (`R_X86_64_RELATIVE` and `IRELATIVE` addends,
    /// `R_X86_64_64` against symbols the binary defines), in file addresses.
    pub relocated: Vec<u64>,
    /// Starts of the function symbols (`foo.cold` parts included), sorted.
    pub function_starts: Vec<u64>,
}

impl CodeImage {
    /// Whether `addr` lies in executable code.
    pub fn is_code(&self, addr: u64) -> bool {
        self.code.iter().any(|s| s.contains(addr))
    }
}

impl Binary {
    /// Reads the binary's loaded image. Not cached: the caller keeps what it derives.
    pub fn code_image(&self) -> Result<CodeImage> {
        let mut image = self.with_objects(|file, _| {
            let mut image = CodeImage::default();
            for s in file.sections() {
                let object::SectionFlags::Elf { sh_flags, .. } = s.flags() else {
                    continue;
                };
                if sh_flags.0 & SHF_ALLOC == 0 || s.kind() == object::SectionKind::UninitializedData
                {
                    continue;
                }
                let Ok(bytes) = s.data() else { continue };
                if bytes.is_empty() {
                    continue;
                }
                let loaded = LoadedSection {
                    addr: s.address(),
                    bytes: bytes.to_vec(),
                };
                if sh_flags.0 & SHF_EXECINSTR != 0 {
                    image.code.push(loaded);
                } else {
                    image.data.push(loaded);
                }
            }
            if let Some(relocations) = file.dynamic_relocations() {
                for (_, r) in relocations {
                    let object::RelocationFlags::Elf { r_type } = r.flags() else {
                        continue;
                    };
                    let base = match (r_type.0, r.target()) {
                        (R_X86_64_RELATIVE | R_X86_64_IRELATIVE, _) => 0,
                        (R_X86_64_64, RelocationTarget::Symbol(i)) => {
                            match file.symbol_by_index(i) {
                                Ok(sym) if !sym.is_undefined() && sym.address() != 0 => {
                                    sym.address()
                                }
                                _ => continue,
                            }
                        }
                        _ => continue,
                    };
                    image.relocated.push(base.wrapping_add_signed(r.addend()));
                }
            }
            image
        })?;
        image.code.sort_by_key(|s| s.addr);
        image.function_starts = self
            .elf_symbols()
            .iter()
            .filter(|s| s.kind == SymbolKind::Function)
            .map(|s| s.addr)
            .collect();
        image.function_starts.sort_unstable();
        image.function_starts.dedup();
        Ok(image)
    }
}
