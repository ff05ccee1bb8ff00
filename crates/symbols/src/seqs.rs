//! One sequence of a unit's line table, decoded without the rest of the unit's line
//! program: what a stop needs for its frames (the row at each pc) and a function
//! breakpoint for its prologue, long before anyone needs every row of the unit.
//!
//! A unit's program is skimmed once (opcodes and operand lengths only, no state
//! machine: `SeqIndex::scan`) for where each sequence's bytes begin and end and the
//! first address it sets. The sequence that can hold an address is then decoded by
//! gimli itself from a copy of the program's header followed by that sequence's bytes
//! alone: a sequence starts from the initial state (DWARF 5 §6.2.5.3: every register is
//! reset after `DW_LNE_end_sequence`), so its rows are the ones the whole program
//! gives. The answer is used only when gimli decodes exactly one sequence from those
//! bytes and it covers the address; anything else falls back to the whole table.
//!
//! ceph-osd's `main` is in the unit of ceph_osd.cc, whose whole table (every header's
//! inline code) took ~0.45 s of the warm first stop on the tracer thread (37 % of its
//! samples); `main`'s own sequence has 4,892 rows.

use std::sync::{Arc, Mutex};

use crate::binary::Binary;
use crate::lines::Sequence;
use crate::reader::{Bytes, R};

/// Decoded sequences kept per unit (a stop's frames and a few breakpoints).
const CACHED_SEQUENCES: usize = 32;
/// Candidate sequences tried for one address before giving up (overlapping ones).
const CANDIDATES: usize = 4;

/// Where one sequence's bytes lie in its unit's line program.
#[derive(Clone, Copy, Debug)]
struct Span {
    /// The lowest address the sequence sets or reaches.
    first_addr: u64,
    /// The address of its `DW_LNE_end_sequence`: its rows lie in `[first_addr, end_addr)`.
    end_addr: u64,
    /// Byte offsets in the program (after the header), `end` past its end_sequence.
    start: usize,
    end: usize,
}

/// The sequences of one unit's line program, by first address.
#[derive(Debug)]
pub(crate) struct SeqIndex {
    spans: Vec<Span>,
}

/// Per unit: the skimmed sequence index and the sequences decoded from it.
#[derive(Debug, Default)]
pub(crate) struct SeqCache {
    index: std::sync::OnceLock<Option<SeqIndex>>,
    decoded: Mutex<Vec<Arc<Sequence>>>,
}

/// How a line program advances its address (one operation per instruction only).
#[derive(Clone, Copy, Debug)]
struct Advance {
    opcode_base: u8,
    line_range: u8,
    min_inst: u64,
}

impl Advance {
    fn special(self, op: u8) -> u64 {
        let adjusted = op.saturating_sub(self.opcode_base);
        u64::from(adjusted / self.line_range.max(1)) * self.min_inst
    }
}

impl SeqCache {
    /// How many sequences are kept decoded.
    pub(crate) fn decoded_count(&self) -> usize {
        self.decoded.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

impl SeqIndex {
    /// Skims `program` (the bytes after the header): `None` when it cannot be skimmed
    /// to its end (the caller decodes the whole program then).
    fn scan(
        program: &[u8],
        opcode_base: u8,
        lengths: &[u8],
        advance: Advance,
        big_endian: bool,
    ) -> Option<Self> {
        fn leb(p: &[u8], at: &mut usize) -> Option<u64> {
            let mut v = 0u64;
            let mut shift = 0;
            loop {
                let b = *p.get(*at)?;
                *at += 1;
                if shift < 64 {
                    v |= u64::from(b & 0x7f) << shift;
                }
                shift += 7;
                if b & 0x80 == 0 {
                    return Some(v);
                }
            }
        }
        let mut spans = Vec::new();
        let mut at = 0;
        let mut start = 0;
        let mut first: Option<u64> = None;
        let mut addr = 0u64;
        let mut low = u64::MAX;
        while at < program.len() {
            let op = program[at];
            at += 1;
            if op >= opcode_base {
                addr = addr.wrapping_add(advance.special(op));
                continue;
            }
            match op {
                0 => {
                    let len = usize::try_from(leb(program, &mut at)?).ok()?;
                    let body = program.get(at..at.checked_add(len)?)?;
                    at += len;
                    match body.first() {
                        // DW_LNE_end_sequence
                        Some(1) => {
                            if first.take().is_some() {
                                spans.push(Span {
                                    first_addr: low.min(addr),
                                    end_addr: addr,
                                    start,
                                    end: at,
                                });
                            }
                            start = at;
                            addr = 0;
                            low = u64::MAX;
                        }
                        // DW_LNE_set_address
                        Some(2) if (2..=9).contains(&body.len()) => {
                            let bytes = &body[1..];
                            let mut v = 0u64;
                            for (i, &b) in bytes.iter().enumerate() {
                                if big_endian {
                                    v = (v << 8) | u64::from(b);
                                } else {
                                    v |= u64::from(b) << (8 * i);
                                }
                            }
                            first = Some(v);
                            addr = v;
                            low = low.min(v);
                        }
                        _ => {}
                    }
                }
                // DW_LNS_advance_pc
                2 => {
                    let n = leb(program, &mut at)?;
                    addr = addr.wrapping_add(n.wrapping_mul(advance.min_inst));
                }
                // DW_LNS_const_add_pc
                8 => addr = addr.wrapping_add(advance.special(255)),
                // DW_LNS_fixed_advance_pc: a uhalf, not a LEB128.
                9 => {
                    let b = program.get(at..at + 2)?;
                    let n = if big_endian {
                        u16::from_be_bytes([b[0], b[1]])
                    } else {
                        u16::from_le_bytes([b[0], b[1]])
                    };
                    addr = addr.wrapping_add(u64::from(n));
                    at += 2;
                }
                _ => {
                    let n = *lengths.get(usize::from(op) - 1)?;
                    for _ in 0..n {
                        leb(program, &mut at)?;
                    }
                }
            }
        }
        if at != program.len() {
            return None;
        }
        spans.sort_by_key(|s| s.first_addr);
        Some(SeqIndex { spans })
    }
}

impl Binary {
    /// The sequence of unit `index`'s line table that covers `addr`: from the whole
    /// table when it was built already, else decoded alone (see the module docs).
    /// `None` when no sequence covers it.
    pub(crate) fn sequence_at(
        &self,
        index: usize,
        addr: u64,
    ) -> crate::Result<Option<Arc<Sequence>>> {
        let slot = self
            .units()
            .get(index)
            .ok_or(crate::Error::BadReference(index as u64))?;
        if slot.lines.get().is_none() {
            match self.decode_sequence_at(index, addr) {
                Ok(seq) => return Ok(Some(seq)),
                Err(Lookup::Absent) => return Ok(None),
                Err(Lookup::Unknown) => {}
            }
        }
        let table = self.line_table(index)?;
        Ok(table.sequence_covering(addr))
    }

    fn decode_sequence_at(&self, index: usize, addr: u64) -> Result<Arc<Sequence>, Lookup> {
        let slot = self.units().get(index).ok_or(Lookup::Unknown)?;
        let cache = &slot.seqs;
        {
            let decoded = cache.decoded.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(seq) = decoded.iter().find(|s| s.start <= addr && addr < s.end) {
                return Ok(seq.clone());
            }
        }
        let unit = self.skeleton(index).map_err(|_| Lookup::Unknown)?;
        let Some(program) = unit.line_program.as_ref() else {
            return Err(Lookup::Absent);
        };
        let header = program.header();
        let section = gimli::Section::reader(&self.dwarf().debug_line).clone();
        let whole: &[u8] = section.bytes();
        let body = header.raw_program_buf();
        let body: &[u8] = body.bytes();
        let big_endian = self.endian() == gimli::RunTimeEndian::Big;
        let seq_index = cache
            .index
            .get_or_init(|| {
                if header.maximum_operations_per_instruction() != 1 || header.line_range() == 0 {
                    return None;
                }
                let advance = Advance {
                    opcode_base: header.opcode_base(),
                    line_range: header.line_range(),
                    min_inst: u64::from(header.minimum_instruction_length()),
                };
                let lengths = header.standard_opcode_lengths();
                SeqIndex::scan(
                    body,
                    header.opcode_base(),
                    lengths.bytes(),
                    advance,
                    big_endian,
                )
            })
            .as_ref()
            .ok_or(Lookup::Unknown)?;
        let header_start = header.offset().0;
        let body_start = (body.as_ptr() as usize)
            .checked_sub(whole.as_ptr() as usize)
            .ok_or(Lookup::Unknown)?;
        let header_bytes = whole.get(header_start..body_start).ok_or(Lookup::Unknown)?;
        let pos = seq_index.spans.partition_point(|s| s.first_addr <= addr);
        let mut candidates = seq_index.spans[..pos]
            .iter()
            .rev()
            .filter(|s| addr < s.end_addr)
            .peekable();
        if candidates.peek().is_none() {
            // Every row of a sequence lies between its lowest and end addresses.
            return Err(Lookup::Absent);
        }
        for span in candidates.take(CANDIDATES) {
            let Some(seq) =
                decode_span(header_bytes, body, *span, header, big_endian, self.endian())
            else {
                tracing::debug!(target: "tandem::parse", unit = index, addr, "a line sequence did not decode alone");
                return Err(Lookup::Unknown);
            };
            if let Some(seq) = seq.filter(|s| s.start <= addr && addr < s.end) {
                let seq = Arc::new(seq);
                let mut decoded = cache.decoded.lock().unwrap_or_else(|p| p.into_inner());
                if decoded.len() >= CACHED_SEQUENCES {
                    decoded.remove(0);
                }
                decoded.push(seq.clone());
                return Ok(seq);
            }
        }
        Err(Lookup::Unknown)
    }
}

/// Why [`Binary::decode_sequence_at`] has no sequence.
enum Lookup {
    /// No sequence of the unit covers the address.
    Absent,
    /// Not known without the whole table.
    Unknown,
}

/// Decodes one span: `Some(None)` when it decodes to no usable sequence (an empty one,
/// or one at address 0, which the whole table drops too), `None` when gimli does not
/// read exactly one sequence from it (the skim was wrong: decode the whole program).
fn decode_span(
    header_bytes: &[u8],
    body: &[u8],
    span: Span,
    header: &gimli::LineProgramHeader<R>,
    big_endian: bool,
    endian: gimli::RunTimeEndian,
) -> Option<Option<Sequence>> {
    let mut buf = Vec::with_capacity(header_bytes.len() + span.end - span.start);
    buf.extend_from_slice(header_bytes);
    buf.extend_from_slice(body.get(span.start..span.end)?);
    let total = buf.len() as u64;
    match header.format() {
        gimli::Format::Dwarf32 => {
            let len = u32::try_from(total.checked_sub(4)?).ok()?;
            let bytes = if big_endian {
                len.to_be_bytes()
            } else {
                len.to_le_bytes()
            };
            buf.get_mut(0..4)?.copy_from_slice(&bytes);
        }
        gimli::Format::Dwarf64 => {
            let len = total.checked_sub(12)?;
            let bytes = if big_endian {
                len.to_be_bytes()
            } else {
                len.to_le_bytes()
            };
            buf.get_mut(4..12)?.copy_from_slice(&bytes);
        }
    }
    let reader = gimli::EndianReader::new(Bytes::Owned(Arc::from(buf)), endian);
    let program = gimli::DebugLine::from(reader)
        .program(gimli::DebugLineOffset(0), header.address_size(), None, None)
        .ok()?;
    let mut seqs = crate::lines::collect_sequences(program.rows()).ok()?;
    match seqs.len() {
        0 => Some(None),
        1 => Some(seqs.pop()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skims_sequences_and_refuses_truncated_programs() {
        // opcode_base 13, the standard lengths of DWARF 4/5.
        let lengths = [0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1];
        let mut p = vec![0, 9, 2];
        p.extend_from_slice(&0x1000u64.to_le_bytes());
        p.extend_from_slice(&[0x13, 2, 0x80, 0x01, 9, 4, 0, 0, 1, 1]); // special, advance_pc, fixed, end
        let first_end = p.len();
        p.extend_from_slice(&[0, 9, 2]);
        p.extend_from_slice(&0x800u64.to_le_bytes());
        p.extend_from_slice(&[3, 0x7f, 0x20, 0, 1, 1]);
        let advance = Advance {
            opcode_base: 13,
            line_range: 14,
            min_inst: 1,
        };
        let index = SeqIndex::scan(&p, 13, &lengths, advance, false).expect("skimmed");
        let spans: Vec<_> = index
            .spans
            .iter()
            .map(|s| (s.first_addr, s.end_addr, s.start, s.end))
            .collect();
        // 0x1000 + special 0x13 (0) + advance_pc 128 + fixed 4; 0x800 + special 0x20 (1).
        assert_eq!(
            spans,
            vec![
                (0x800, 0x801, first_end, p.len()),
                (0x1000, 0x1084, 0, first_end)
            ]
        );
        assert!(SeqIndex::scan(&p[..p.len() - 1], 13, &lengths, advance, false).is_none());
    }
}
