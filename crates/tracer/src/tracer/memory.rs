//! Memory: reads that show original bytes under int3s, writes through /proc/PID/mem.

use super::*;

impl Tracer {
    /// Reads memory into `buf`, returning how many bytes could be read (at least one,
    /// else an error). Breakpoints show their original bytes, never 0xCC.
    pub fn read_memory(&self, addr: RuntimeAddr, buf: &mut [u8]) -> Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let n = self.read_raw(addr.0, buf)?;
        let end = addr.0.saturating_add(n as u64);
        for (a, bp) in self.breakpoints.range(addr.0..end) {
            if !self.absent.contains(a) {
                buf[(a - addr.0) as usize] = bp.saved;
            }
        }
        self.overlay_patches(addr.0, &mut buf[..n]);
        Ok(n)
    }

    pub(super) fn read_raw(&self, addr: u64, buf: &mut [u8]) -> Result<usize> {
        let len = buf.len();
        let local = libc::iovec {
            iov_base: buf.as_mut_ptr() as *mut libc::c_void,
            iov_len: len,
        };
        let remote = libc::iovec {
            iov_base: addr as *mut libc::c_void,
            iov_len: len,
        };
        // SAFETY: the local iovec points into `buf`, valid for `len` bytes.
        let n = unsafe { libc::process_vm_readv(self.pid.0, &local, 1, &remote, 1, 0) };
        if n > 0 {
            return Ok(n as usize);
        }
        let err = std::io::Error::last_os_error();
        match &self.mem {
            Some(mem) => match mem.read_at(buf, addr) {
                Ok(n) if n > 0 => Ok(n),
                Ok(_) => Err(Error::Memory {
                    addr: RuntimeAddr(addr),
                    len: buf.len(),
                    source: err,
                }),
                Err(e) => Err(Error::Memory {
                    addr: RuntimeAddr(addr),
                    len: buf.len(),
                    source: e,
                }),
            },
            None => Err(Error::Memory {
                addr: RuntimeAddr(addr),
                len: buf.len(),
                source: err,
            }),
        }
    }

    /// Writes memory (also read-only text, through /proc/PID/mem). Bytes under a
    /// breakpoint update its saved byte; the int3 stays in place.
    pub fn write_memory(&mut self, addr: RuntimeAddr, data: &[u8]) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        if self.is_running() {
            return self.edit_text(|t| t.write_memory(addr, data))?;
        }
        let end = addr.0.saturating_add(data.len() as u64);
        self.patches_before_write(addr.0, end);
        let mut data = data.to_vec();
        for (a, bp) in self.breakpoints.range_mut(addr.0..end) {
            let i = (a - addr.0) as usize;
            bp.saved = data[i];
            if !self.absent.contains(a) {
                data[i] = INT3;
            }
        }
        self.write_raw(addr.0, &data)
    }

    pub(super) fn write_raw(&self, addr: u64, data: &[u8]) -> Result<()> {
        // /proc/PID/mem writes through read-only mappings (FOLL_FORCE), which
        // process_vm_writev cannot; it is one pwrite either way.
        let err = |source| Error::Memory {
            addr: RuntimeAddr(addr),
            len: data.len(),
            source,
        };
        if let Some(mem) = &self.mem {
            return mem.write_all_at(data, addr).map_err(err);
        }
        let local = [std::io::IoSlice::new(data)];
        let remote = [libc::iovec {
            iov_base: addr as *mut libc::c_void,
            iov_len: data.len(),
        }];
        // SAFETY: the local iovec points into `data`.
        let n = unsafe {
            libc::process_vm_writev(
                self.pid.0,
                local.as_ptr() as *const libc::iovec,
                1,
                remote.as_ptr(),
                1,
                0,
            )
        };
        if n as usize == data.len() {
            Ok(())
        } else {
            Err(err(std::io::Error::last_os_error()))
        }
    }
}
