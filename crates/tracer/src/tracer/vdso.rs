//! Recording: the vDSO's time functions made into real system calls.
//!
//! `clock_gettime`, `gettimeofday`, `time` and `getcpu` in the vDSO answer without
//! entering the kernel, so a recording would not see them and a replay would read a new
//! time. While recording, each of their entry points is overwritten (in the debuggee's
//! private copy of the vDSO page, through /proc/PID/mem) with
//! `mov eax, NR; syscall; ret`, which the kernel answers the same way: the program
//! computes what it would have, and the answer is recorded. The symbols are found in the
//! vDSO's own ELF image, read from memory (section headers, `.dynsym`, `.dynstr`).

use super::*;

/// The vDSO functions and the system call each becomes.
const STUBS: &[(&str, u32)] = &[
    ("__vdso_clock_gettime", 228),
    ("clock_gettime", 228),
    ("__vdso_gettimeofday", 96),
    ("gettimeofday", 96),
    ("__vdso_time", 201),
    ("time", 201),
    ("__vdso_getcpu", 309),
    ("getcpu", 309),
    ("__vdso_clock_getres", 229),
    ("clock_getres", 229),
];

fn stub(nr: u32) -> [u8; 8] {
    let n = nr.to_le_bytes();
    [0xb8, n[0], n[1], n[2], n[3], 0x0f, 0x05, 0xc3]
}

fn u16_at(b: &[u8], o: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], o: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?))
}

/// The (offset in the image, system call, symbol size) of every function of `STUBS` the
/// image defines.
fn entry_points(image: &[u8]) -> Option<Vec<(u64, u32, u64)>> {
    if image.get(..4)? != b"\x7fELF" || *image.get(4)? != 2 {
        return None;
    }
    let shoff = u64_at(image, 0x28)? as usize;
    let shentsize = u16_at(image, 0x3a)? as usize;
    let shnum = u16_at(image, 0x3c)? as usize;
    // The first PT_LOAD's vaddr is where offset 0 of the image is meant to be.
    let phoff = u64_at(image, 0x20)? as usize;
    let phentsize = u16_at(image, 0x36)? as usize;
    let phnum = u16_at(image, 0x38)? as usize;
    let mut base = 0;
    for i in 0..phnum {
        let h = phoff + i * phentsize;
        if u32_at(image, h)? == 1 {
            base = u64_at(image, h + 16)?.wrapping_sub(u64_at(image, h + 8)?);
            break;
        }
    }
    let section = |i: usize| -> Option<(u32, u64, u64, u32, u64)> {
        let h = shoff + i * shentsize;
        Some((
            u32_at(image, h + 4)?,         // sh_type
            u64_at(image, h + 24)?,        // sh_offset
            u64_at(image, h + 32)?,        // sh_size
            u32_at(image, h + 40)?,        // sh_link
            u64_at(image, h + 56)?.max(1), // sh_entsize
        ))
    };
    let mut out = Vec::new();
    for i in 0..shnum {
        let (ty, off, size, link, entsize) = section(i)?;
        if ty != 11 {
            continue; // SHT_DYNSYM
        }
        let (_, stroff, strsize, _, _) = section(link as usize)?;
        let strtab = image.get(stroff as usize..(stroff + strsize) as usize)?;
        for k in 0..size / entsize {
            let s = (off + k * entsize) as usize;
            let name_off = u32_at(image, s)? as usize;
            let value = u64_at(image, s + 8)?;
            let size = u64_at(image, s + 16)?;
            let shndx = u16_at(image, s + 6)?;
            if shndx == 0 || value == 0 {
                continue;
            }
            let name = strtab.get(name_off..)?;
            let name = &name[..name.iter().position(|&c| c == 0)?];
            if let Some((_, nr)) = STUBS.iter().find(|(n, _)| n.as_bytes() == name) {
                out.push((value.wrapping_sub(base), *nr, size));
            }
        }
    }
    Some(out)
}

impl Tracer {
    /// Overwrites the vDSO's time functions with system calls (see the module's doc).
    /// Returns how many entry points were patched.
    pub(super) fn patch_vdso(&mut self) -> Result<usize> {
        let maps = procfs::read_maps(self.pid)?;
        let Some(m) = maps.iter().find(|m| m.path == "[vdso]") else {
            return Ok(0);
        };
        let len = (m.end.0 - m.start.0) as usize;
        let mut image = vec![0u8; len];
        let n = self.read_raw(m.start.0, &mut image)?;
        image.truncate(n);
        let entries = entry_points(&image)
            .ok_or_else(|| Error::Placement("the vDSO's symbols cannot be read".into()))?;
        let mut done = std::collections::BTreeSet::new();
        for (off, nr, _) in entries {
            if off as usize + 8 > image.len() || !done.insert(off) {
                continue;
            }
            self.write_raw(m.start.0 + off, &stub(nr))?;
        }
        Ok(done.len())
    }

    /// The vDSO's entry points made system calls by [`Tracer::patch_vdso`], each once:
    /// (address, system call, the function's size), the vDSO being `[start, end)`.
    pub(super) fn vdso_stubs(&self, start: u64, end: u64) -> Vec<(u64, u32, u64)> {
        let mut image = vec![0u8; (end - start) as usize];
        let Ok(n) = self.read_raw(start, &mut image) else {
            return Vec::new();
        };
        image.truncate(n);
        let mut seen = std::collections::BTreeSet::new();
        entry_points(&image)
            .unwrap_or_default()
            .into_iter()
            .filter(|(off, nr, _)| {
                let o = *off as usize;
                image.get(o..o + 8) == Some(&stub(*nr)[..]) && seen.insert(*off)
            })
            .map(|(off, nr, size)| (start + off, nr, size))
            .collect()
    }
}
