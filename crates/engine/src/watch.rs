//! Data breakpoints (hardware watchpoints) as front-ends ask for them, and how a
//! watched range is split into the x86 debug registers' aligned slots.

use std::sync::Arc;

use symbols::{Binary, LoadBias, TypeRef};
use tracer::Tid;

/// Which accesses stop at a data breakpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DataAccess {
    /// Reads only. x86 debug registers cannot trap reads alone: a `Read` request is
    /// set as [`DataAccess::ReadWrite`] and its status says so in its message.
    Read,
    /// Writes (also writes of the same value).
    Write,
    /// Reads and writes.
    ReadWrite,
}

/// A data breakpoint as a front-end asks for it (DAP `setDataBreakpoints`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataBreakpoint {
    /// First byte watched (a runtime address).
    pub address: u64,
    /// Bytes watched: 1, 2, 4 or 8.
    pub size: u64,
    /// Which accesses stop.
    pub access: DataAccess,
    /// Stop only when this expression is true (evaluated in the frame that accessed
    /// the data, after the access).
    pub condition: Option<String>,
    /// Stop only when the hit count satisfies this (`N`, `== N`, `>= N`, `> N`, `% N`).
    pub hit_condition: Option<String>,
}

/// What can be watched for an lvalue (DAP `dataBreakpointInfo`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataBreakpointInfo {
    /// First byte of the value.
    pub address: u64,
    /// Its size: 1, 2, 4 or 8.
    pub size: u64,
    /// `counter (int, 4 bytes at 0x4010)`.
    pub description: String,
    /// The accesses a data breakpoint can watch: write and read-write on x86.
    pub access_types: Vec<DataAccess>,
}

impl DataBreakpointInfo {
    /// A compact id for a front-end to hand back (`0x4010/4`); see [`parse_data_id`].
    pub fn data_id(&self) -> String {
        format!("{:#x}/{}", self.address, self.size)
    }
}

/// Reads an id made by [`DataBreakpointInfo::data_id`] back into (address, size).
pub fn parse_data_id(id: &str) -> Option<(u64, u64)> {
    let (addr, size) = id.split_once('/')?;
    let addr = addr.trim();
    let addr = match addr.strip_prefix("0x").or_else(|| addr.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok()?,
        None => addr.parse().ok()?,
    };
    Some((addr, size.trim().parse().ok()?))
}

/// The highest user-space address on x86-64 (the kernel refuses debug registers
/// pointing above it).
const USER_END: u64 = 0x7fff_ffff_f000;

/// Why `size` bytes at `address` cannot be watched, if they cannot.
pub(crate) fn range_problem(address: u64, size: u64) -> Option<String> {
    if !matches!(size, 1 | 2 | 4 | 8) {
        return Some(format!(
            "cannot watch {size} bytes: x86 debug registers watch 1, 2, 4 or 8 bytes"
        ));
    }
    if address == 0 || address.checked_add(size).is_none_or(|end| end > USER_END) {
        return Some(format!("cannot watch address {address:#x}"));
    }
    None
}

/// Covers `size` bytes at `address` with aligned pieces of 1, 2, 4 or 8 bytes, largest
/// first: an aligned range is one piece, an unaligned one takes two or more (each of
/// which costs a debug register).
pub(crate) fn split_aligned(address: u64, size: u64) -> Vec<(u64, u8)> {
    let mut out = Vec::new();
    let (mut at, end) = (address, address.saturating_add(size));
    while at < end {
        let len = [8u8, 4, 2, 1]
            .into_iter()
            .find(|&l| at % u64::from(l) == 0 && at + u64::from(l) <= end)
            .unwrap_or(1);
        out.push((at, len));
        at += u64::from(len);
    }
    out
}

/// How to show a watched value: typed by what `dataBreakpointInfo` evaluated.
#[derive(Clone, Debug)]
pub(crate) enum ValueKind {
    Dwarf {
        binary: Arc<Binary>,
        bias: LoadBias,
        ty: TypeRef,
    },
    Int {
        signed: bool,
    },
    Float,
    Pointer,
}

/// The name and type of a watched range, remembered from `dataBreakpointInfo`.
#[derive(Clone, Debug)]
pub(crate) struct WatchLabel {
    pub name: String,
    pub kind: ValueKind,
    /// The frame the expression was evaluated in, when it names a local, a parameter or
    /// a register of it: a watch on it ends with that frame.
    pub scope: Option<WatchScope>,
}

/// The frame a watch is tied to (gdb's `watchpoint_frame`): its expression names a
/// local, a parameter or a register, so once the frame is gone the address means
/// another variable, or none. A frame is its CFA and its function's entry, as gdb's
/// frame ids are: another function's frame at the same depth reuses the slot but is
/// another frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WatchScope {
    /// The thread whose stack holds the frame.
    pub tid: Tid,
    /// That thread is the main thread (a replay's main thread has another id).
    pub main_thread: bool,
    /// The frame's canonical frame address: the caller's sp before the call.
    pub cfa: u64,
    /// The runtime entry of the frame's function.
    pub function: u64,
    /// Where the frame returns to in its caller: a hidden breakpoint there, checked
    /// against the CFA (a deeper invocation returning to the same address goes on),
    /// ends the watch.
    pub ret: Option<u64>,
}

impl WatchScope {
    /// Whether `tid`, a thread of the process `pid` shown now, is the frame's thread.
    pub fn owned_by(&self, tid: Tid, pid: i32) -> bool {
        tid == self.tid || (self.main_thread && tid.0 == pid)
    }
}

/// What gdb says when it deletes a watchpoint whose frame is gone, word for word (its
/// own output breaks the line after "in").
pub fn scope_ended_message(id: impl std::fmt::Display) -> String {
    format!(
        "Watchpoint {id} deleted because the program has left the block in which its expression is valid."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_ranges_take_one_piece_unaligned_ones_more() {
        assert_eq!(split_aligned(0x1000, 4), [(0x1000, 4)]);
        assert_eq!(split_aligned(0x1002, 4), [(0x1002, 2), (0x1004, 2)]);
        assert_eq!(
            split_aligned(0x1001, 4),
            [(0x1001, 1), (0x1002, 2), (0x1004, 1)]
        );
        assert_eq!(split_aligned(0x1004, 8), [(0x1004, 4), (0x1008, 4)]);
    }

    #[test]
    fn data_ids_round_trip_and_bad_ranges_say_why() {
        let info = DataBreakpointInfo {
            address: 0x4010,
            size: 4,
            description: String::new(),
            access_types: vec![],
        };
        assert_eq!(parse_data_id(&info.data_id()), Some((0x4010, 4)));
        assert_eq!(parse_data_id("nonsense"), None);
        assert!(range_problem(0x4010, 3).unwrap().contains("1, 2, 4 or 8"));
        assert!(range_problem(0, 4).is_some());
        assert!(range_problem(0x4010, 8).is_none());
    }
}
