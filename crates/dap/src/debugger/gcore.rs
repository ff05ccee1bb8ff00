//! The custom request `tandem/writeCore`: an ELF core file of the paused program, which
//! gdb and tandem (`attach` with `coreFile`) read (lldb too, by its layout). Not a standard request, so no
//! capability advertises it.

use serde::{Deserialize, Serialize};

use super::*;

/// `tandem/writeCore` arguments.
#[derive(Debug, Deserialize)]
pub struct WriteCoreArguments {
    /// Where to write the core: an absolute path (an existing file is replaced).
    pub path: Option<String>,
}

/// `tandem/writeCore` response body.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WriteCoreBody {
    /// The file written.
    pub path: String,
    /// Its length in bytes (pages of zeros are holes of a sparse file).
    pub bytes: u64,
    /// Threads recorded.
    pub threads: usize,
    /// Memory segments (PT_LOAD) recorded.
    pub segments: usize,
}

/// The request's type.
pub struct WriteCore;

impl Request for WriteCore {
    const COMMAND: &'static str = "tandem/writeCore";
    type Arguments = WriteCoreArguments;
    type Body = WriteCoreBody;
}

impl Debugger {
    pub(crate) fn write_core(
        &mut self,
        args: WriteCoreArguments,
    ) -> Result<WriteCoreBody, Failure> {
        let path = args.path.filter(|p| !p.is_empty()).ok_or_else(|| {
            Failure("tandem/writeCore needs a 'path' to write the core to".into())
        })?;
        let path = PathBuf::from(path);
        if !path.is_absolute() {
            return Err(format!(
                "tandem/writeCore needs an absolute path, not '{}'",
                path.display()
            )
            .into());
        }
        let d = self.debuggee()?;
        let started = Instant::now();
        let written = d.session.live()?.write_core(&path).map_err(fail)?;
        tracing::info!(
            path = %written.path.display(),
            bytes = written.bytes,
            data = written.data_bytes,
            elapsed = ?started.elapsed(),
            "core written"
        );
        Ok(WriteCoreBody {
            path: written.path.display().to_string(),
            bytes: written.bytes,
            threads: written.threads,
            segments: written.segments,
        })
    }
}
