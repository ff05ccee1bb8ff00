//! Thread-local storage: where a module's `__thread` block lives in one thread, found as
//! glibc's libthread_db finds it (`td_thr_tls_get_addr`): the thread's dtv entry for the
//! module's TLS id, with the C library's own descriptions of its structures.

use std::sync::Arc;

use symbols::{Binary, LoadBias, MemoryReader, ThreadLocalStorage};

use crate::mem::read_u64;
use crate::modules::Module;

/// One thread's thread-local storage, over any memory (a live process or a core): its
/// thread pointer (`fs_base`) and the process's modules.
pub(crate) struct ThreadTls<'a> {
    pub mem: &'a dyn MemoryReader,
    pub thread_pointer: Option<u64>,
    pub modules: &'a [Arc<Module>],
}

impl<'a> ThreadTls<'a> {
    /// The TLS block of the module loaded with `bias` whose symbols are `binary`.
    pub(crate) fn of<'b>(&'b self, bias: LoadBias, binary: &'b Arc<Binary>) -> TlsLocator<'b> {
        TlsLocator {
            thread: self,
            bias,
            binary,
        }
    }
}

/// The TLS block of one module in one thread.
pub(crate) struct TlsLocator<'a> {
    thread: &'a ThreadTls<'a>,
    bias: LoadBias,
    binary: &'a Arc<Binary>,
}

/// One of glibc's `_thread_db_*` descriptors (nptl_db's `DB_STRUCT_FIELD`): the field's
/// size in bits, its count and its offset, three 32-bit words in libc's read-only data,
/// read from the file (a core need not hold read-only mappings).
fn descriptor(libc: &Module, name: &str) -> Option<(u32, u32, u32)> {
    let binary = libc.binary()?;
    let b = binary.code_bytes(binary.data_symbol(name)?, 12)?;
    let word = |i: usize| Some(u32::from_le_bytes(b.get(i..i + 4)?.try_into().ok()?));
    Some((word(0)?, word(4)?, word(8)?))
}

impl TlsLocator<'_> {
    /// The module that describes the thread library's structures (libc.so.6 since glibc
    /// 2.34, libpthread before).
    fn thread_library(&self) -> Option<&Module> {
        self.thread
            .modules
            .iter()
            .find(|m| {
                m.binary()
                    .is_some_and(|b| b.data_symbol("_thread_db_pthread_dtvp").is_some())
            })
            .map(|m| &**m)
    }

    /// The module's TLS id: 1 for the executable (the dynamic linker gives it the first
    /// id when it has a TLS segment), else its link map's `l_tls_modid`, the link map
    /// found in `_r_debug`'s list by its load bias.
    fn module_id(&self, libc: &Module) -> Result<u64, String> {
        let main = self.thread.modules.iter().find(|m| m.main);
        if main.is_some_and(|m| m.binary().is_some_and(|b| Arc::ptr_eq(b, self.binary))) {
            return Ok(1);
        }
        let mem = self.thread.mem;
        let (_, _, modid_at) = descriptor(libc, "_thread_db_link_map_l_tls_modid")
            .ok_or("the C library does not describe its link maps")?;
        let r_debug = self
            .thread
            .modules
            .iter()
            .find_map(|m| Some(m.to_runtime(m.binary()?.data_symbol("_r_debug")?)))
            .ok_or("no _r_debug: the dynamic linker's module list is unknown")?;
        let mut map = read_u64(mem, r_debug + 8).ok_or("cannot read _r_debug")?;
        // l_addr at 0, l_next at 24 (the public part of struct link_map); a bounded walk.
        for _ in 0..4096 {
            if map == 0 {
                break;
            }
            let l_addr = read_u64(mem, map).ok_or("cannot read a link map")?;
            if l_addr == self.bias.0 {
                return read_u64(mem, map + u64::from(modid_at))
                    .ok_or_else(|| "cannot read the link map's TLS id".into());
            }
            map = read_u64(mem, map + 24).ok_or("cannot read a link map")?;
        }
        Err(format!(
            "{} is not in the dynamic linker's list",
            self.binary.path().display()
        ))
    }
}

impl ThreadLocalStorage for TlsLocator<'_> {
    fn block(&self) -> Result<u64, String> {
        let mem = self.thread.mem;
        let tp = self
            .thread
            .thread_pointer
            .ok_or("no thread to read thread-local storage of")?;
        let libc = self
            .thread_library()
            .ok_or("no thread library describes the thread-local storage")?;
        let id = self.module_id(libc)?;
        // The thread's dtv pointer (struct pthread's header.dtv), each entry's size and
        // where the block's address sits in it, as the library describes them.
        let dtvp = descriptor(libc, "_thread_db_pthread_dtvp").map_or(8, |d| d.2);
        let entry = descriptor(libc, "_thread_db_dtv_dtv")
            .map_or(16, |d| u64::from(d.0 / 8))
            .max(8);
        let val = descriptor(libc, "_thread_db_dtv_t_pointer_val").map_or(0, |d| d.2);
        let dtv = read_u64(mem, tp.wrapping_add(u64::from(dtvp)))
            .ok_or("cannot read the thread's dtv")?;
        let block = read_u64(
            mem,
            dtv.wrapping_add(id.wrapping_mul(entry))
                .wrapping_add(u64::from(val)),
        )
        .ok_or("cannot read the thread's dtv")?;
        // TLS_DTV_UNALLOCATED: a dlopened module's block is made on the thread's first use.
        if block == u64::MAX || block == 0 {
            return Err(format!(
                "the thread-local storage of {} is not allocated in this thread yet",
                self.binary.path().display()
            ));
        }
        Ok(block)
    }
}
