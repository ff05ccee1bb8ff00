//! The modules (executable and shared objects) mapped into the debuggee, opened lazily
//! with `symbols` when an address inside them first needs symbols or unwind tables.
//!
//! A debuggee in another mount namespace (a container) maps files whose paths mean
//! nothing on the host, or name a different file. Its modules keep the path the process
//! sees (for display) and are read through /proc/PID/root/PATH, falling back to
//! /proc/PID/map_files/START-END (the mapped file itself, even when its path is gone).
//! When the host has a file at the same path with the same build-id, the host's copy is
//! used (its separate debug files are found); otherwise the container's.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use symbols::{Binary, FileAddr, LoadBias, OpenOptions, RuntimeAddr};

use crate::jit::targets::BranchTargets;
use crate::jit::PlacementCache;
use tracer::Pid;

/// One mapped ELF file.
#[derive(Debug)]
pub struct Module {
    /// The file.
    pub path: PathBuf,
    /// First mapped byte.
    pub start: u64,
    /// One past the last mapped byte.
    pub end: u64,
    /// Runtime minus file addresses.
    pub bias: LoadBias,
    /// Whether this is the main executable.
    pub main: bool,
    binary: OnceLock<Option<Arc<Binary>>>,
    /// Where to read the file when the process runs in another mount namespace.
    inside: Option<Inside>,
    /// Every address the module's code may jump to, scanned on first use (`crate::jit`).
    targets: OnceLock<Arc<BranchTargets>>,
    /// Whether a background scan of `targets` was started.
    scan_started: std::sync::atomic::AtomicBool,
    /// Code placed for the module's sites, reused when placed again (`crate::jit`).
    placements: PlacementCache,
}

/// How to reach a file mapped by a process in another mount namespace.
#[derive(Debug, Clone)]
struct Inside {
    /// /proc/PID/root (the process's root directory).
    root: PathBuf,
    /// /proc/PID/map_files/START-END of one of its mappings.
    map_file: PathBuf,
}

impl Inside {
    /// The file through the process's root, else through its mapping.
    fn open(&self, path: &Path) -> Option<Binary> {
        let options = OpenOptions {
            debug_roots: vec![
                self.root.join("usr/lib/debug"),
                PathBuf::from("/usr/lib/debug"),
            ],
            ..OpenOptions::default()
        };
        let rel = path.strip_prefix("/").unwrap_or(path);
        let through_root = self.root.join(rel);
        match Binary::open_with(&through_root, &options) {
            Ok(b) => return Some(b),
            Err(e) => tracing::debug!(path = %through_root.display(), "cannot open: {e}"),
        }
        match Binary::open_with(&self.map_file, &options) {
            Ok(b) => Some(b),
            Err(e) => {
                tracing::debug!(path = %self.map_file.display(), "cannot open: {e}");
                None
            }
        }
    }
}

/// Opens the file a process in another mount namespace maps at `path`: the container's
/// copy, or the host's file of the same path when its build-id is the same.
fn open_inside(path: &Path, inside: &Inside) -> Option<Binary> {
    let theirs = inside.open(path)?;
    let Some(id) = theirs.info().build_id.clone() else {
        return Some(theirs);
    };
    if path.is_file() {
        match Binary::open(path) {
            Ok(ours) if ours.info().build_id.as_ref() == Some(&id) => {
                tracing::debug!(path = %path.display(), "the host's copy has the same build-id");
                return Some(ours);
            }
            Ok(_) => tracing::info!(
                path = %path.display(),
                "the host's file differs from the container's (build-id): using the container's"
            ),
            Err(_) => {}
        }
    }
    Some(theirs)
}

impl Module {
    /// A module whose binary is already open.
    pub fn with_binary(
        path: PathBuf,
        start: u64,
        end: u64,
        bias: LoadBias,
        binary: Arc<Binary>,
    ) -> Module {
        let cell = OnceLock::new();
        let _ = cell.set(Some(binary));
        Module {
            path,
            start,
            end,
            bias,
            main: true,
            binary: cell,
            inside: None,
            targets: OnceLock::new(),
            scan_started: Default::default(),
            placements: PlacementCache::default(),
        }
    }

    /// A module whose file is opened on first use (a core file's mapping); `usable`
    /// false when the file is not the one mapped (it then has no symbols).
    pub(crate) fn mapped(
        path: PathBuf,
        start: u64,
        end: u64,
        bias: LoadBias,
        usable: bool,
    ) -> Module {
        Module {
            path,
            start,
            end,
            bias,
            main: false,
            binary: if usable {
                OnceLock::new()
            } else {
                OnceLock::from(None)
            },
            inside: None,
            targets: OnceLock::new(),
            scan_started: Default::default(),
            placements: PlacementCache::default(),
        }
    }

    /// The symbols of the module, opened on first use; `None` when the file cannot be
    /// read (deleted, not ELF), which degrades to frame-pointer unwinding.
    pub fn binary(&self) -> Option<&Arc<Binary>> {
        self.binary
            .get_or_init(|| match &self.inside {
                Some(inside) => open_inside(&self.path, inside).map(Arc::new),
                None => match Binary::open_with(&self.path, &crate::debuginfo::library_options()) {
                    Ok(b) => Some(Arc::new(b)),
                    Err(e) => {
                        tracing::debug!(path = %self.path.display(), "cannot open module: {e}");
                        None
                    }
                },
            })
            .as_ref()
    }

    /// The symbols of the module if they were opened already (never opens them).
    pub(crate) fn opened_binary(&self) -> Option<&Arc<Binary>> {
        self.binary.get().and_then(Option::as_ref)
    }

    /// Every address the module's code may jump to, scanned from its file on first use;
    /// an empty set that refuses every site when the module has no readable file.
    pub(crate) fn branch_targets(&self) -> Arc<BranchTargets> {
        self.targets
            .get_or_init(|| {
                Arc::new(match self.binary() {
                    Some(b) => BranchTargets::scan(b),
                    None => BranchTargets::unusable("the module's file cannot be read"),
                })
            })
            .clone()
    }

    /// Whether [`Module::branch_targets`] is known (never waits for a scan).
    pub(crate) fn branch_targets_ready(&self) -> bool {
        self.targets.get().is_some()
    }

    /// Starts [`Module::branch_targets`] on a thread of its own (a big module's scan
    /// takes a quarter of a second), so a later caller finds it done or waits only for
    /// the rest; at most one scan runs per module.
    pub(crate) fn scan_branch_targets_in_background(module: Arc<Module>) {
        if module.targets.get().is_some()
            || module
                .scan_started
                .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            return;
        }
        let spawned = std::thread::Builder::new()
            .name("branch-targets".into())
            .spawn(move || {
                module.branch_targets();
            });
        if let Err(e) = spawned {
            tracing::debug!("cannot scan branch targets in the background: {e}");
        }
    }

    /// Code placed for the module's sites.
    pub(crate) fn placements(&self) -> &PlacementCache {
        &self.placements
    }

    /// Whether `addr` is inside the module's mappings.
    pub fn contains(&self, addr: u64) -> bool {
        self.start <= addr && addr < self.end
    }

    /// The file address of a runtime address in this module.
    pub fn to_file(&self, addr: u64) -> FileAddr {
        self.bias.to_file(RuntimeAddr(addr))
    }

    /// The runtime address of a file address in this module.
    pub fn to_runtime(&self, addr: FileAddr) -> u64 {
        self.bias.to_runtime(addr).0
    }

    /// A short name for display (the file name).
    pub fn name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// Every module of the process, the main executable first.
#[derive(Debug, Default)]
pub struct Modules {
    list: Vec<Arc<Module>>,
}

impl Modules {
    /// Starts with the main executable only.
    pub fn new(main: Module) -> Modules {
        Modules {
            list: vec![Arc::new(main)],
        }
    }

    /// Every module of a core file, the main executable first.
    pub(crate) fn from_list(list: Vec<Module>) -> Modules {
        Modules {
            list: list.into_iter().map(Arc::new).collect(),
        }
    }

    /// The main executable.
    pub fn main(&self) -> Option<&Arc<Module>> {
        self.list.first()
    }

    /// Every module known so far.
    pub fn all(&self) -> &[Arc<Module>] {
        &self.list
    }

    /// The module containing `addr`, if it is known.
    pub fn find(&self, addr: u64) -> Option<Arc<Module>> {
        self.list.iter().find(|m| m.contains(addr)).cloned()
    }

    /// Re-reads /proc/PID/maps and adds the modules not seen before (libraries loaded
    /// since). Modules already known keep their opened symbols.
    pub fn refresh(&mut self, pid: Pid) {
        let Ok(maps) = tracer::procfs::read_maps(pid) else {
            return;
        };
        // (path, start, end, where offset 0 is mapped, one mapping's exact range)
        type Group = (String, u64, u64, Option<u64>, (u64, u64));
        let mut groups: Vec<Group> = Vec::new();
        for m in &maps {
            if !m.path.starts_with('/') {
                continue;
            }
            match groups.iter_mut().find(|g| g.0 == m.path) {
                Some(g) => {
                    g.1 = g.1.min(m.start.0);
                    g.2 = g.2.max(m.end.0);
                    if m.offset == 0 && g.3.is_none() {
                        g.3 = Some(m.start.0);
                    }
                }
                None => groups.push((
                    m.path.clone(),
                    m.start.0,
                    m.end.0,
                    (m.offset == 0).then_some(m.start.0),
                    (m.start.0, m.end.0),
                )),
            }
        }
        let foreign = in_other_mount_namespace(pid);
        for (path, start, end, base, one) in groups {
            let path = PathBuf::from(path);
            if let Some(main) = self.list.first() {
                if same_file(&main.path, &path) {
                    continue;
                }
            }
            if self.list.iter().any(|m| m.path == path && m.start == start) {
                continue;
            }
            // Shared objects are linked at 0: the bias is where offset 0 is mapped.
            let bias = LoadBias(base.unwrap_or(start));
            let inside = foreign.then(|| Inside {
                root: PathBuf::from(format!("/proc/{}/root", pid.0)),
                map_file: PathBuf::from(format!(
                    "/proc/{}/map_files/{:x}-{:x}",
                    pid.0, one.0, one.1
                )),
            });
            self.list.push(Arc::new(Module {
                path,
                start,
                end,
                bias,
                main: false,
                binary: OnceLock::new(),
                inside,
                targets: OnceLock::new(),
                scan_started: Default::default(),
                placements: PlacementCache::default(),
            }));
        }
    }

    /// Sets the mapped range of the main executable from /proc/PID/maps.
    pub fn set_main_range(&mut self, pid: Pid) {
        let Some(main) = self.list.first().cloned() else {
            return;
        };
        let Ok(maps) = tracer::procfs::read_maps(pid) else {
            return;
        };
        let (mut start, mut end) = (u64::MAX, 0);
        for m in maps
            .iter()
            .filter(|m| same_file(&main.path, Path::new(&m.path)))
        {
            start = start.min(m.start.0);
            end = end.max(m.end.0);
        }
        if start < end {
            let binary = main.binary().cloned();
            let mut module = Module {
                path: main.path.clone(),
                start,
                end,
                bias: main.bias,
                main: true,
                binary: OnceLock::new(),
                inside: main.inside.clone(),
                targets: OnceLock::new(),
                scan_started: Default::default(),
                placements: PlacementCache::default(),
            };
            if let Some(b) = binary {
                module.binary = OnceLock::from(Some(b));
            }
            self.list[0] = Arc::new(module);
        }
    }
}

/// Whether the process runs in a mount namespace other than tandem's (paths in its maps
/// then name files of its own file system).
pub fn in_other_mount_namespace(pid: Pid) -> bool {
    let ns = |who: &str| std::fs::read_link(format!("/proc/{who}/ns/mnt")).ok();
    match (ns(&pid.0.to_string()), ns("self")) {
        (Some(theirs), Some(ours)) => theirs != ours,
        _ => false,
    }
}

/// The file tandem opens for the main executable of a process it attaches to: the path
/// /proc/PID/exe names when the process shares tandem's mount namespace (so separate
/// debug files beside it are found), else /proc/PID/exe itself, which is the mapped file
/// whatever its path.
pub fn main_executable(pid: Pid, exe: &Path) -> PathBuf {
    if !in_other_mount_namespace(pid) && exe.is_file() {
        return exe.to_path_buf();
    }
    PathBuf::from(format!("/proc/{}/exe", pid.0))
}

pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    if a == b {
        return true;
    }
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

pub use crate::system::is_system;

impl crate::expr::ModuleGlobals for &[Arc<Module>] {
    fn find_map(
        &self,
        f: &mut crate::expr::GlobalFinder<'_>,
    ) -> Option<crate::Result<crate::expr::EVal>> {
        self.iter()
            .find_map(|m| m.binary().and_then(|b| f(&m.path, m.bias, b)))
    }
}

impl crate::jit::SiteModule for Module {
    fn binary(&self) -> Option<&Arc<Binary>> {
        Module::binary(self)
    }
    fn bias(&self) -> LoadBias {
        self.bias
    }
    fn is_main(&self) -> bool {
        self.main
    }
    fn branch_targets(&self) -> Arc<BranchTargets> {
        Module::branch_targets(self)
    }
    fn placements(&self) -> &PlacementCache {
        Module::placements(self)
    }
}
