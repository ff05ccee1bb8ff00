//! Process-wide hooks that end every session when tandem is told to stop: SIGTERM,
//! SIGINT and SIGHUP, and (opt-in) panics.
//!
//! The signal handler only writes the signal number to a pipe (async-signal-safe);
//! a watcher thread reads it, ends every session through the [`ShutdownHandle`]
//! (launched debuggees killed and reaped, attached ones detached), then restores the
//! default action and raises the signal again, so tandem dies of it as it would have
//! without the hook.

use crate::error::{Error, Result};
use crate::manager::ShutdownHandle;
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, Ordering};

static HOOK_FD: AtomicI32 = AtomicI32::new(-1);

/// The signals the hook handles.
pub const HOOKED_SIGNALS: [i32; 3] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP];

extern "C" fn on_signal(sig: libc::c_int) {
    let fd = HOOK_FD.load(Ordering::SeqCst);
    if fd >= 0 {
        let b = sig as u8;
        // SAFETY: write(2) is async-signal-safe; a one-byte local buffer.
        unsafe { libc::write(fd, &b as *const u8 as *const libc::c_void, 1) };
    }
}

/// Installs the SIGTERM/SIGINT/SIGHUP hook. Call once, early in `main`; a second call
/// fails with [`Error::HookInstalled`].
pub fn install_signal_hook(shutdown: ShutdownHandle) -> Result<()> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into a local array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == -1 {
        return Err(Error::Io(
            "creating the signal pipe".into(),
            std::io::Error::last_os_error(),
        ));
    }
    // SAFETY: both descriptors were just created and belong to nobody else.
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    if HOOK_FD
        .compare_exchange(-1, fds[1], Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        return Err(Error::HookInstalled);
    }
    // The write end lives as long as the process.
    std::mem::forget(write_end);
    std::thread::Builder::new()
        .name("procman-signals".into())
        .spawn(move || {
            let mut file = std::fs::File::from(read_end);
            let mut b = [0u8; 1];
            loop {
                match file.read(&mut b) {
                    Ok(1) => break,
                    Ok(_) => return,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => return,
                }
            }
            let sig = b[0] as i32;
            tracing::info!(signal = sig, "ending every debug session before exiting");
            shutdown.shutdown();
            // SAFETY: restoring the default action and re-raising is the documented
            // way to die of a signal after handling it.
            unsafe {
                libc::signal(sig, libc::SIG_DFL);
                libc::raise(sig);
            }
        })
        .map_err(|e| Error::Io("starting the signal thread".into(), e))?;
    for sig in HOOKED_SIGNALS {
        // SAFETY: installs a handler that only makes async-signal-safe calls.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            sa.sa_flags = libc::SA_RESTART;
            if libc::sigaction(sig, &sa, std::ptr::null_mut()) == -1 {
                return Err(Error::Io(
                    "installing a signal handler".into(),
                    std::io::Error::last_os_error(),
                ));
            }
        }
    }
    Ok(())
}

/// Chains a panic hook that ends every session (but the panicking tracer thread's own,
/// which its unwinding cleans up) before the previous hook runs. For binaries where a
/// panic ends the process (`panic = "abort"`, or a main loop that exits on any panic):
/// a panic in any thread then releases every debuggee.
pub fn install_panic_hook(shutdown: ShutdownHandle) {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        shutdown.shutdown_others();
        previous(info);
    }));
}
