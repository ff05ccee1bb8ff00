//! The modules (executable and shared objects) mapped into the debuggee, opened lazily
//! with `symbols` when an address inside them first needs symbols or unwind tables.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use symbols::{Binary, FileAddr, LoadBias, RuntimeAddr};
use target::Pid;

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
        }
    }

    /// The symbols of the module, opened on first use; `None` when the file cannot be
    /// read (deleted, not ELF), which degrades to frame-pointer unwinding.
    pub fn binary(&self) -> Option<&Arc<Binary>> {
        self.binary
            .get_or_init(|| match Binary::open(&self.path) {
                Ok(b) => Some(Arc::new(b)),
                Err(e) => {
                    tracing::debug!(path = %self.path.display(), "cannot open module: {e}");
                    None
                }
            })
            .as_ref()
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
        let Ok(maps) = target::procfs::read_maps(pid) else {
            return;
        };
        let mut groups: Vec<(String, u64, u64, Option<u64>)> = Vec::new();
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
                )),
            }
        }
        for (path, start, end, base) in groups {
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
            self.list.push(Arc::new(Module {
                path,
                start,
                end,
                bias,
                main: false,
                binary: OnceLock::new(),
            }));
        }
    }

    /// Sets the mapped range of the main executable from /proc/PID/maps.
    pub fn set_main_range(&mut self, pid: Pid) {
        let Some(main) = self.list.first().cloned() else {
            return;
        };
        let Ok(maps) = target::procfs::read_maps(pid) else {
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
            };
            if let Some(b) = binary {
                module.binary = OnceLock::from(Some(b));
            }
            self.list[0] = Arc::new(module);
        }
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    if a == b {
        return true;
    }
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}
