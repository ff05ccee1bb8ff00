//! Disassembly on the tracer thread: memory read through the tracer (breakpoints show
//! the program's bytes), instruction boundaries found by decoding forward from the
//! start of the containing function, and symbols and lines attached.

use std::sync::Arc;

use tracer::{RuntimeAddr, Tracer};

use super::{lock, Session};
use crate::disasm::{decode, Decoded, Instruction, MAX_INSN};
use crate::error::{Error, Result};
use crate::modules::Module;

/// The most instructions one request may ask for.
const MAX_COUNT: usize = 100_000;
/// How far back to look for the function before padding between functions.
const PADDING_REACH: u64 = 256;
/// How many functions back a negative offset may walk.
const MAX_ANCHORS: usize = 4096;

/// Memory code is read from: the live process (through the tracer) or a core file.
pub(crate) trait CodeBytes {
    /// Reads into `buf` from `addr`; how many bytes were read (0 at unreadable memory).
    fn read_some(&self, addr: u64, buf: &mut [u8]) -> usize;
}

impl CodeBytes for Tracer {
    fn read_some(&self, addr: u64, buf: &mut [u8]) -> usize {
        self.read_memory(RuntimeAddr(addr), buf).unwrap_or(0)
    }
}

impl CodeBytes for crate::corefile::CoreFile {
    fn read_some(&self, addr: u64, buf: &mut [u8]) -> usize {
        self.read_at(addr, buf)
    }
}

/// Reads as many of `len` bytes at `addr` as are readable, from the first.
fn read_available(t: &dyn CodeBytes, addr: u64, len: usize) -> Vec<u8> {
    let mut buf = vec![0u8; len];
    let mut got = 0;
    while got < len {
        match t.read_some(addr.wrapping_add(got as u64), &mut buf[got..]) {
            0 => break,
            n => got += n,
        }
    }
    buf.truncate(got);
    buf
}

/// Decodes `n` instructions from `start`; unreadable bytes become invalid one-byte
/// entries (a whole unreadable page at once, without reading it byte by byte).
fn forward(t: &dyn CodeBytes, start: u64, n: usize) -> Vec<Decoded> {
    let mut out = Vec::with_capacity(n);
    let mut at = start;
    while out.len() < n {
        let want = ((n - out.len()) * 8).clamp(64, 1 << 16);
        let bytes = read_available(t, at, want);
        if bytes.is_empty() {
            let page_end = (at | 0xfff).wrapping_add(1);
            while out.len() < n && at != page_end {
                out.push(Decoded::unreadable(at));
                at = at.wrapping_add(1);
            }
            continue;
        }
        let decoded = decode(&bytes, at, n - out.len());
        let end = decoded.last().map_or(at, Decoded::end);
        let short = bytes.len() < want;
        out.extend(decoded);
        if end == at || (short && end.wrapping_sub(at) as usize >= bytes.len()) {
            // Nothing decoded (an instruction cut off by unreadable memory), or the
            // readable bytes are used up: the byte at `end` starts no readable
            // instruction.
            if out.len() < n {
                out.push(Decoded::unreadable(end));
            }
            at = end.wrapping_add(1);
        } else {
            at = end;
        }
    }
    out
}

/// Decodes from `from` up to `to`: every instruction that starts before `to`.
fn range(t: &dyn CodeBytes, from: u64, to: u64) -> Vec<Decoded> {
    let len = usize::try_from(to.saturating_sub(from)).unwrap_or(usize::MAX);
    if len == 0 || len > (1 << 24) {
        return Vec::new();
    }
    let bytes = read_available(t, from, len + MAX_INSN);
    let mut out = decode(&bytes, from, usize::MAX);
    out.retain(|d| d.address < to);
    out
}

/// A known instruction boundary below `end`: the start of the code range of the
/// function containing `end - 1`, or of the function just before the padding (between
/// functions) that contains it.
fn anchor_below(modules: &[Arc<Module>], end: u64) -> Option<u64> {
    let probe = end.checked_sub(1)?;
    let module = modules.iter().find(|m| m.contains(probe))?;
    let binary = module.binary()?;
    for back in (0..=PADDING_REACH).step_by(16) {
        let Some(at) = probe.checked_sub(back) else {
            break;
        };
        if !module.contains(at) {
            break;
        }
        let file = module.to_file(at);
        let Ok(Some(f)) = binary.function_at(file) else {
            continue;
        };
        let start = f
            .function
            .ranges
            .iter()
            .find(|r| r.start <= file && file < r.end)
            .map(|r| r.start)
            .or(f.function.entry())?;
        let start = module.to_runtime(start);
        if start < end {
            return Some(start);
        }
    }
    None
}

/// The instruction `address` is in: decoded forward from the function's start, so a
/// mid-instruction address snaps back to where its instruction starts.
fn boundary(t: &dyn CodeBytes, modules: &[Arc<Module>], address: u64) -> u64 {
    let Some(anchor) = anchor_below(modules, address.wrapping_add(1)) else {
        return address;
    };
    range(t, anchor, address.wrapping_add(1))
        .last()
        .filter(|d| d.end() > address)
        .map_or(address, |d| d.address)
}

/// The `k` instructions before `end`, walking back function by function; padded with
/// unreadable entries when there is no code to decode from.
fn backward(t: &dyn CodeBytes, modules: &[Arc<Module>], end: u64, k: usize) -> Vec<Decoded> {
    let mut collected: Vec<Decoded> = Vec::new();
    let mut limit = end;
    for _ in 0..MAX_ANCHORS {
        if collected.len() >= k {
            break;
        }
        let Some(anchor) = anchor_below(modules, limit) else {
            break;
        };
        let mut part = range(t, anchor, limit);
        if part.is_empty() {
            break;
        }
        part.append(&mut collected);
        collected = part;
        limit = anchor;
    }
    if collected.len() < k {
        let missing = k - collected.len();
        let first = collected.first().map_or(end, |d| d.address);
        let mut pad: Vec<Decoded> = (1..=missing as u64)
            .rev()
            .map(|j| Decoded::unreadable(first.wrapping_sub(j)))
            .collect();
        pad.append(&mut collected);
        collected = pad;
    }
    collected.split_off(collected.len() - k)
}

/// The instruction that ends where `end` begins (the one executed before reaching
/// `end` by falling through), found by decoding forward from the containing function's
/// start; `None` without a function to decode from, or when no instruction ends there.
pub(super) fn instruction_ending_at(
    t: &dyn CodeBytes,
    modules: &[Arc<Module>],
    end: u64,
) -> Option<u64> {
    let anchor = anchor_below(modules, end)?;
    range(t, anchor, end)
        .last()
        .filter(|d| d.end() == end)
        .map(|d| d.address)
}

/// Attaches the symbol (`main+12`) and the source position of each instruction.
fn annotate(modules: &[Arc<Module>], decoded: Vec<Decoded>) -> Vec<Instruction> {
    let name_of = |addr: u64| -> Option<(String, u64)> {
        let m = modules.iter().find(|m| m.contains(addr))?;
        let f = m.binary()?.function_at(m.to_file(addr)).ok()??;
        let entry = m.to_runtime(f.function.entry()?);
        Some((f.function.name, addr.checked_sub(entry)?))
    };
    let symbol = |addr: u64| {
        name_of(addr).map(|(name, off)| {
            if off == 0 {
                name
            } else {
                format!("{name}+{off}")
            }
        })
    };
    decoded
        .into_iter()
        .map(|d| {
            let mut text = d.text;
            if let Some(target) = d.branch {
                if let Some(s) = symbol(target) {
                    text.push_str(&format!(" <{s}>"));
                }
            }
            if let Some(target) = d.rip_target {
                text.push_str(&format!("        # {target:#x}"));
            }
            let (file, line) = if d.invalid {
                (None, None)
            } else {
                modules
                    .iter()
                    .find(|m| m.contains(d.address))
                    .and_then(|m| m.binary()?.location_for_addr(m.to_file(d.address)).ok()?)
                    .map_or((None, None), |loc| (Some(loc.file), loc.line))
            };
            Instruction {
                address: d.address,
                symbol: if d.bytes.is_empty() {
                    None
                } else {
                    symbol(d.address)
                },
                bytes: d.bytes,
                text,
                file,
                line,
                invalid: d.invalid,
            }
        })
        .collect()
}

impl Session {
    /// Disassembles `count` instructions (exactly that many entries, always) starting
    /// `instruction_offset` instructions from the one at `address` (DAP
    /// `disassemble`). A negative offset walks back over real instruction boundaries:
    /// decoding starts at the beginning of the containing function (walking back
    /// function by function), never at a guessed byte. Memory is read through the
    /// tracer, so breakpoints show the program's bytes; unreadable memory gives
    /// entries marked invalid. Text is AT&T syntax, as gdb prints it.
    pub fn disassemble(
        &self,
        address: u64,
        instruction_offset: i64,
        count: usize,
    ) -> Result<Vec<Instruction>> {
        self.check_stopped()?;
        if count > MAX_COUNT {
            return Err(Error::Eval(format!(
                "cannot disassemble {count} instructions at once (at most {MAX_COUNT})"
            )));
        }
        if count == 0 {
            return Ok(Vec::new());
        }
        let modules: Vec<Arc<Module>> = {
            let mut c = lock(&self.core);
            let pid = c.pid;
            c.modules.refresh(pid);
            c.modules.all().to_vec()
        };
        let out = self.handle.call(move |t: &mut Tracer| {
            disassemble_in(&*t, &modules, address, instruction_offset, count)
        })??;
        Ok(out)
    }
}

/// [`Session::disassemble`] over any code bytes and modules (a live process or a core).
pub(crate) fn disassemble_in(
    t: &dyn CodeBytes,
    modules: &[Arc<Module>],
    address: u64,
    instruction_offset: i64,
    count: usize,
) -> Result<Vec<Instruction>> {
    if count > MAX_COUNT {
        return Err(Error::Eval(format!(
            "cannot disassemble {count} instructions at once (at most {MAX_COUNT})"
        )));
    }
    if count == 0 {
        return Ok(Vec::new());
    }
    let zero = boundary(t, modules, address);
    let mut decoded = Vec::with_capacity(count);
    let first = instruction_offset;
    if first < 0 {
        let before = usize::try_from(first.unsigned_abs()).unwrap_or(usize::MAX);
        if before > MAX_COUNT {
            return Err(Error::Eval(format!(
                "instruction offset {first} is too large"
            )));
        }
        let take = before.min(count);
        let back = backward(t, modules, zero, before);
        decoded.extend(back.into_iter().take(take));
        if decoded.len() < count {
            decoded.extend(forward(t, zero, count - decoded.len()));
        }
    } else {
        let skip = usize::try_from(first).unwrap_or(usize::MAX);
        if skip > MAX_COUNT {
            return Err(Error::Eval(format!(
                "instruction offset {first} is too large"
            )));
        }
        let mut all = forward(t, zero, skip + count);
        decoded = all.split_off(skip.min(all.len()));
    }
    Ok(annotate(modules, decoded))
}
