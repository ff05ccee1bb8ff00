//! Int3s of the breakpoint table that the shown process does not have yet
//! (docs/reverse.md, "Replay"). A replay is a fork of a snapshot, and the first
//! snapshot is taken when execve returns, before the dynamic linker maps a single
//! library: an int3 in libc has nowhere to go there. Such an address stays in the table
//! (the live process has it) and is noted absent in the replay; when the replay runs a
//! recorded `mmap` (or `mprotect`, `mremap`, `munmap`) again, the table's int3s that now
//! fall in executable memory holding their original byte (of the file the live process
//! has there) are planted, and those whose mapping went are absent again. So a breakpoint in a library traps in a replay from
//! the moment the library's code is there, as it did live, and never makes going back
//! fail. An absent address is no int3: reads show the process's own byte, removing it
//! writes nothing, a fork of the process has nothing to clean there.

use super::sched::ThreadIndex;
use super::*;

const SYS_MPROTECT: u64 = 10;
const SYS_MUNMAP: u64 = 11;
const SYS_MREMAP: u64 = 25;
const PAGE: u64 = 4096;

fn pages(len: u64) -> u64 {
    len.saturating_add(PAGE - 1) & !(PAGE - 1)
}

impl Tracer {
    /// The shown process is a clean fork (a snapshot, a waypoint, a copy of one): it
    /// has none of the table's int3s.
    pub(super) fn all_absent(&mut self) {
        self.absent = self.breakpoints.keys().copied().collect();
    }

    /// Plants the absent int3s the shown process can take now. In a replay (`strict`)
    /// an int3 goes only into executable memory holding the byte the table saved and,
    /// when the live process maps a file there, the same file at the same offset: not
    /// into the read-only reservation the dynamic linker maps a library's whole extent
    /// with before it maps its text over it, nor into other code that was at the
    /// address earlier in the recording (a library unloaded since). The live process
    /// takes them wherever they can be written, as it always has.
    pub(super) fn plant_absent(&mut self, strict: bool) {
        self.absent.retain(|a| self.breakpoints.contains_key(a));
        if self.absent.is_empty() {
            return;
        }
        let (maps, live_maps) = if strict {
            // Read once per replay process and kept until a replayed call remaps it
            // (a search plants hundreds of breakpoints in one replay).
            let cached = self
                .absent_maps
                .as_ref()
                .filter(|(pid, _, _)| *pid == self.pid)
                .map(|(_, m, l)| (m.clone(), l.clone()));
            match cached {
                Some(c) => c,
                None => {
                    let maps = match procfs::read_maps(self.pid) {
                        Ok(m) => m,
                        Err(e) => {
                            tracing::debug!("reading the maps of a replay: {e}");
                            return;
                        }
                    };
                    let live = self
                        .rec
                        .as_ref()
                        .and_then(|r| r.sched.tid(ThreadIndex(0)))
                        .map(|t| Pid(t.0))
                        .filter(|p| *p != self.pid);
                    let live_maps = live
                        .and_then(|p| procfs::read_maps(p).ok())
                        .unwrap_or_default();
                    self.absent_maps = Some((self.pid, maps.clone(), live_maps.clone()));
                    (maps, live_maps)
                }
            }
        } else {
            (Vec::new(), Vec::new())
        };
        let absent: Vec<u64> = self.absent.iter().copied().collect();
        for a in absent {
            let Some(saved) = self.breakpoints.get(&a).map(|b| b.saved) else {
                continue;
            };
            let mut byte = [0u8; 1];
            if self.read_raw(a, &mut byte).is_err() {
                continue;
            }
            let planted = if byte[0] == INT3 {
                // Still there (its mapping was only re-protected).
                true
            } else if strict {
                let here = maps.iter().find(|m| m.start.0 <= a && a < m.end.0);
                let live = live_maps.iter().find(|m| m.start.0 <= a && a < m.end.0);
                here.is_some_and(|m| m.perms.contains('x') && same_file(m, live, a))
                    && byte[0] == saved
                    && self.write_raw(a, &[INT3]).is_ok()
            } else {
                self.write_raw(a, &[INT3]).is_ok()
            };
            if planted {
                self.absent.remove(&a);
            }
        }
    }

    /// A system call that shapes memory ran again in the shown replay (`nr` with the
    /// recorded `args` and `result`): the int3s in what it mapped, unmapped or
    /// re-protected are checked again, and the absent ones planted where their code is
    /// now.
    pub(super) fn replay_remapped(&mut self, nr: u64, args: [u64; 6], result: u64) {
        if self.breakpoints.is_empty() || (result as i64) < 0 {
            return;
        }
        let ranges: Vec<(u64, u64)> = match nr {
            syscalls::SYS_MMAP => vec![(result, pages(args[1]))],
            SYS_MUNMAP | SYS_MPROTECT => vec![(args[0], pages(args[1]))],
            SYS_MREMAP => vec![(args[0], pages(args[1])), (result, pages(args[2]))],
            _ => return,
        };
        for (start, len) in ranges {
            let touched: Vec<u64> = self
                .breakpoints
                .range(start..start.saturating_add(len))
                .map(|(a, _)| *a)
                .collect();
            // A mapping put over an int3 (MAP_FIXED) or taken away took it along.
            self.absent.extend(touched);
        }
        self.absent_maps = None;
        self.plant_absent(true);
    }
}

/// Whether the replay's mapping `here` holds at `addr` what the live process's `live`
/// holds there, as far as files tell: the same file at the same offset when the live
/// process maps one there (anonymous memory, or none live, is left to the byte check).
fn same_file(here: &procfs::Mapping, live: Option<&procfs::Mapping>, addr: u64) -> bool {
    let Some(live) = live.filter(|l| l.path.starts_with('/')) else {
        return true;
    };
    let offset = |m: &procfs::Mapping| m.offset + (addr - m.start.0);
    here.path == live.path && offset(here) == offset(live)
}
