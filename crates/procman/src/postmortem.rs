//! Core files under the owner: a post-mortem session is a program stopped for good.
//! The manager lists it with the live sessions, so every view (the DAP adapter that
//! opened it, the language server's live values, an agent) reads the same core.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use engine::{CoreSession, Stop};
use tracer::Pid;

use crate::debug::DebugId;
use crate::error::Result;
use crate::manager::{Bus, ManagerEvent};

/// One open core file. Dropping the last handle closes it (views are told it ended).
pub struct CoreDebug {
    id: DebugId,
    pid: Pid,
    program: PathBuf,
    core_path: PathBuf,
    session: CoreSession,
    /// The stopped thread's stack, unwound once.
    frames: Mutex<Option<Vec<engine::Frame>>>,
    bus: Arc<Bus>,
}

impl std::fmt::Debug for CoreDebug {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CoreDebug")
            .field("id", &self.id)
            .field("core", &self.core_path)
            .finish_non_exhaustive()
    }
}

impl CoreDebug {
    pub(crate) fn open(
        id: DebugId,
        program: &Path,
        core: &Path,
        sysroot: Option<&Path>,
        bus: Arc<Bus>,
    ) -> Result<CoreDebug> {
        let session = CoreSession::open_with(program, core, sysroot)?;
        // The thread-group leader's id is the process id; it is the smallest.
        let pid = Pid(session
            .threads()
            .iter()
            .map(|t| t.0)
            .min()
            .unwrap_or(session.stop().tid.0));
        Ok(CoreDebug {
            id,
            pid,
            program: program.to_path_buf(),
            core_path: core.to_path_buf(),
            session,
            frames: Mutex::new(None),
            bus,
        })
    }

    /// The session's id (shared with live sessions: never reused).
    pub fn id(&self) -> DebugId {
        self.id
    }

    /// The process id the core recorded.
    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// The executable that wrote the core.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// The core file.
    pub fn core_path(&self) -> &Path {
        &self.core_path
    }

    /// The post-mortem engine, for inspection.
    pub fn engine(&self) -> &CoreSession {
        &self.session
    }

    /// Why the program stopped: the fatal signal, or a pause for a core written from a
    /// live process.
    pub fn stop(&self) -> Stop {
        self.session.stop()
    }

    /// The stack of the thread that stopped, unwound once.
    pub fn stop_frames(&self) -> Result<Vec<engine::Frame>> {
        let mut cached = self
            .frames
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(frames) = cached.as_ref() {
            return Ok(frames.clone());
        }
        let frames = self.session.stack_trace(self.session.stop().tid)?;
        *cached = Some(frames.clone());
        Ok(frames)
    }
}

impl Drop for CoreDebug {
    fn drop(&mut self) {
        self.bus.send(ManagerEvent::DebugEnded {
            session: self.id,
            pid: self.pid,
        });
    }
}
