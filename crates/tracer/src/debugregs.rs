//! x86-64 debug registers as one process-wide set: four hardware slots (DR0–DR3) and
//! the control word (DR7) they imply, shared by every thread of the debuggee.
//!
//! The kernel keeps debug registers per thread and does not copy them to a new
//! thread, so [`crate::Tracer::set_watchpoints`] writes them to every thread and
//! remembers them for threads created later (written at their first stop, before
//! they run an instruction). Exec clears them, as the kernel does.

/// What a hardware slot triggers on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HwAccess {
    /// Executing the instruction at the address (a hardware breakpoint; length 1).
    Execute,
    /// Writing any byte of the range.
    Write,
    /// Reading or writing any byte of the range (x86 cannot trap reads alone).
    ReadWrite,
}

/// One hardware slot: an aligned range of 1, 2, 4 or 8 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HwSlot {
    /// Start of the range; aligned to `len`.
    pub addr: u64,
    /// 1, 2, 4 or 8 (1 for [`HwAccess::Execute`]).
    pub len: u8,
    /// What triggers it.
    pub access: HwAccess,
}

/// The four slots of DR0–DR3; `None` is a free slot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DebugRegisters {
    /// DR0–DR3.
    pub slots: [Option<HwSlot>; 4],
}

/// DR6's single-step bit (BS): the trap also ended a single-step.
pub const DR6_SINGLE_STEP: u64 = 1 << 14;

impl HwSlot {
    /// Why this slot cannot be programmed, if it cannot.
    pub fn problem(&self) -> Option<String> {
        if !matches!(self.len, 1 | 2 | 4 | 8) {
            return Some(format!(
                "a hardware watchpoint covers 1, 2, 4 or 8 bytes, not {}",
                self.len
            ));
        }
        if self.access == HwAccess::Execute && self.len != 1 {
            return Some("a hardware breakpoint has length 1".into());
        }
        if self.addr % u64::from(self.len) != 0 {
            return Some(format!(
                "address {:#x} is not aligned to {} bytes",
                self.addr, self.len
            ));
        }
        None
    }
}

impl DebugRegisters {
    /// Whether no slot is in use.
    pub fn is_empty(&self) -> bool {
        self.slots.iter().all(Option::is_none)
    }

    /// The DR7 control word: local enable, access and length of every used slot.
    pub fn dr7(&self) -> u64 {
        let mut dr7 = 0u64;
        for (i, slot) in self.slots.iter().enumerate() {
            let Some(s) = slot else { continue };
            let rw: u64 = match s.access {
                HwAccess::Execute => 0b00,
                HwAccess::Write => 0b01,
                HwAccess::ReadWrite => 0b11,
            };
            let len: u64 = match s.len {
                2 => 0b01,
                4 => 0b11,
                8 => 0b10,
                _ => 0b00,
            };
            dr7 |= 1 << (2 * i);
            dr7 |= (rw | (len << 2)) << (16 + 4 * i);
        }
        dr7
    }

    /// The slots whose condition DR6 reports as met (B0–B3).
    pub fn hit_slots(dr6: u64) -> impl Iterator<Item = usize> {
        (0..4).filter(move |i| dr6 & (1 << i) != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dr7_encodes_enable_access_and_length_per_slot() {
        let mut r = DebugRegisters::default();
        assert_eq!(r.dr7(), 0);
        r.slots[0] = Some(HwSlot {
            addr: 0x1000,
            len: 4,
            access: HwAccess::Write,
        });
        // L0, RW0 = 01, LEN0 = 11.
        assert_eq!(r.dr7(), 0x1 | (0b1101 << 16));
        r.slots[2] = Some(HwSlot {
            addr: 0x2000,
            len: 8,
            access: HwAccess::ReadWrite,
        });
        // L2, RW2 = 11, LEN2 = 10.
        assert_eq!(r.dr7(), 0x1 | 0x10 | (0b1101 << 16) | (0b1011 << 24));
    }

    #[test]
    fn unaligned_or_odd_ranges_are_refused() {
        let slot = |addr, len| HwSlot {
            addr,
            len,
            access: HwAccess::Write,
        };
        assert!(slot(0x1002, 4).problem().is_some());
        assert!(slot(0x1000, 3).problem().is_some());
        assert!(slot(0x1004, 4).problem().is_none());
        assert_eq!(
            DebugRegisters::hit_slots(0x4005).collect::<Vec<_>>(),
            [0, 2]
        );
    }
}
