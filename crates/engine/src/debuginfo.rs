//! Where separate debug information is looked for: the caller's roots, /usr/lib/debug
//! (`.build-id/xx/rest.debug`), `.gnu_debuglink`, then debuginfod — its cache for every
//! module, its servers (`DEBUGINFOD_URLS`) for the main executable only.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use symbols::{Binary, DebugFileLookup, OpenOptions};

pub use debuginfod;

/// The system's root of separate debug files.
const SYSTEM_ROOT: &str = "/usr/lib/debug";

/// How a session finds the main executable's separate debug information.
#[derive(Clone, Debug, Default)]
pub struct DebugInfoOptions {
    /// Roots searched before /usr/lib/debug, in order (`.build-id` layout and
    /// `.gnu_debuglink` names, as gdb's `debug-file-directory`).
    pub roots: Vec<PathBuf>,
    /// Whether debuginfod servers may be asked.
    pub debuginfod: Debuginfod,
}

/// How far debuginfod is used for the main executable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Debuginfod {
    /// The cache, then the servers of `DEBUGINFOD_URLS` (without progress: a front-end
    /// that reports progress fetches first, see [`missing_debug_info`]).
    #[default]
    Fetch,
    /// The cache only.
    CacheOnly,
}

impl DebugInfoOptions {
    /// The options for opening the main executable.
    pub fn open_options(&self) -> OpenOptions {
        let mut roots = self.roots.clone();
        roots.push(PathBuf::from(SYSTEM_ROOT));
        OpenOptions {
            debug_roots: roots,
            lookup: Some(Arc::new(Lookup {
                cache: debuginfod::cache_dir(),
                client: match self.debuginfod {
                    Debuginfod::Fetch => debuginfod::Client::from_env(),
                    Debuginfod::CacheOnly => None,
                },
            })),
            // Compressed sections are kept decompressed beside the index cache.
            section_cache: symbols::IndexCache::from_env(),
            ..OpenOptions::default()
        }
    }
}

/// The options for a shared library: the system root, its debuglink, the debuginfod
/// cache (libraries are opened on the tracer thread, which must not wait for a network).
pub(crate) fn library_options() -> OpenOptions {
    DebugInfoOptions {
        roots: Vec::new(),
        debuginfod: Debuginfod::CacheOnly,
    }
    .open_options()
}

/// The build-id of `program` when it has no DWARF of its own and no separate debug file
/// is found without a network (roots, debuglink, the debuginfod cache): what a front-end
/// fetches from debuginfod, with progress, before it launches. `None` when there is
/// nothing to fetch (the debug information is there, the program has no build-id, or it
/// cannot be read).
pub fn missing_debug_info(program: &Path, options: &DebugInfoOptions) -> Option<Vec<u8>> {
    let program = crate::session::resolve_program(program).ok()?;
    let offline = DebugInfoOptions {
        debuginfod: Debuginfod::CacheOnly,
        ..options.clone()
    };
    let binary = Binary::open_with(&program, &offline.open_options()).ok()?;
    let info = binary.info();
    if info.has_dwarf {
        return None;
    }
    info.build_id.clone().filter(|id| id.len() > 1)
}

/// debuginfod as a [`DebugFileLookup`]: the cache, then (when a client is given) the
/// servers.
#[derive(Debug)]
struct Lookup {
    cache: PathBuf,
    client: Option<debuginfod::Client>,
}

impl DebugFileLookup for Lookup {
    fn debug_file(&self, build_id: &[u8]) -> Option<PathBuf> {
        if let Some(hit) = debuginfod::cached_in(&self.cache, build_id) {
            return Some(hit);
        }
        let client = self.client.as_ref()?;
        let cancel = debuginfod::Cancel::default();
        match client.fetch(build_id, &mut |_| {}, &cancel) {
            Ok(path) => Some(path),
            Err(e) => {
                tracing::warn!(
                    "debuginfod: no debug file for {}: {e}",
                    debuginfod::hex(build_id)
                );
                None
            }
        }
    }
}
