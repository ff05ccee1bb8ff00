//! The workspace model: root folders, the binaries whose debug information serves them, and
//! their symbol indexes.
//!
//! Binaries come from `initializationOptions.tandem.binaries` (paths or globs relative to the
//! first root) or, when none are configured, are discovered: executable ELF files with DWARF
//! under the roots (`target/` only through `target/debug`) whose line tables name a source
//! under a root. Indexing runs on its own thread so the reader never waits; requests wait on
//! their worker for the index (or answer from the binaries ready so far once their patience
//! runs out). A binary whose mtime changed is re-opened and re-indexed on the next request.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use symbols::Binary;

use crate::facts::Facts;
use crate::features::CachedNames;
use crate::names::NameIndex;
use crate::sources::DiskTexts;

/// Directories discovery never enters.
const SKIP_DIRS: &[&str] = &["node_modules", ".git"];
/// Discovery gives up after looking at this many files, so a huge tree cannot stall indexing.
const MAX_FILES_SEEN: usize = 20_000;
const MAX_DEPTH: usize = 8;

/// What the client told us about the workspace.
#[derive(Clone, Debug, Default)]
pub struct WorkspaceConfig {
    /// Root folders (absolute).
    pub roots: Vec<PathBuf>,
    /// Configured binaries: paths or globs (`*`, `?`, `**`), relative to the first root.
    pub binaries: Vec<String>,
    /// Test hook: wait this long before the first indexing, so tests can send requests
    /// while it runs.
    pub index_delay: Duration,
    /// Test hook: wait this long before building a binary's full index once its quick
    /// symbol table is served, so tests can see the answers it gives.
    pub full_index_delay: Duration,
}

/// How long a binary's indexing runs before a partial table of its ELF functions answers
/// `workspace/symbol` (requests before then wait for the full index until then).
const PARTIAL_PATIENCE: Duration = Duration::from_millis(1000);

/// How often, at most, a request triggers a new look for binaries (a build may have
/// produced a new one since the last look).
const RESCAN_INTERVAL: Duration = Duration::from_secs(2);

/// One binary serving the workspace, opened and indexed.
pub struct Served {
    pub path: PathBuf,
    mtime: Option<SystemTime>,
    pub binary: Binary,
    /// The names of its symbol table arranged for lookups.
    pub names: NameIndex,
    /// DWARF answers remembered for the features (line resolutions, scopes, types).
    pub facts: Facts,
    /// The sources its line tables name, normalized.
    sources: std::collections::HashSet<PathBuf>,
    /// Its symbol table (the index cache file's, or built in memory without a cache):
    /// `workspace/symbol` answers from it (`features::cached_symbols`).
    cached_names: Arc<CachedNames>,
}

impl Served {
    /// The binary's modification time when it was indexed.
    pub fn mtime(&self) -> Option<SystemTime> {
        self.mtime
    }

    /// The sources its line tables name (normalized).
    pub fn sources(&self) -> impl Iterator<Item = &Path> {
        self.sources.iter().map(PathBuf::as_path)
    }

    /// Its symbol table.
    pub fn cached_names(&self) -> Option<Arc<CachedNames>> {
        Some(self.cached_names.clone())
    }

    /// The entry of symbol `e` (with its code range when `code`: its DIE is read).
    pub fn entry(&self, e: crate::names::EntryId, code: bool) -> Option<symbols::SymbolEntry> {
        self.names.entry(&self.binary, e, code)
    }

    /// The entries whose qualified name ends with the components of `query`, in the
    /// table's order, with their code ranges.
    pub fn lookup(&self, query: &str) -> Vec<symbols::SymbolEntry> {
        self.names
            .lookup(&self.binary, query)
            .into_iter()
            .filter_map(|e| self.entry(e, true))
            .collect()
    }

    /// Whether the binary was built from `file` (its line tables name it).
    pub fn serves_source(&self, file: &Path) -> bool {
        self.sources.contains(&symbols::lines::normalize_path(file))
    }
}

/// What became of a candidate file.
enum Loaded {
    Served(Box<Served>),
    /// Not a binary for this workspace (no DWARF, no workspace sources, unreadable).
    Rejected,
}

#[derive(Default)]
struct State {
    /// The first indexing is running.
    indexing: bool,
    /// A rescan is running (on some worker).
    scanning: bool,
    last_scan: Option<Instant>,
    served: Vec<Arc<Served>>,
    /// Candidates that were looked at and refused, with the mtime they had then.
    rejected: HashMap<PathBuf, Option<SystemTime>>,
    /// Binaries whose full index is being built, whose index cache file was valid: their
    /// cached symbol tables answer `workspace/symbol` meanwhile.
    quick: Vec<Arc<CachedNames>>,
}

/// What the first indexing reports, for `workDoneProgress`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndexEvent {
    /// Looking for binaries.
    Begin,
    /// About to index the `done + 1`-th of `total` candidates.
    Binary {
        done: usize,
        total: usize,
        path: PathBuf,
    },
    /// Finished, with the binaries now serving the workspace.
    End { served: Vec<PathBuf> },
}

/// Where the indexer reports.
pub type IndexReport = Box<dyn Fn(IndexEvent) + Send + Sync>;

/// The binaries serving a session, shared by the main loop, the indexer and the workers.
pub struct Workspace {
    config: WorkspaceConfig,
    /// The configured binaries: from `initializationOptions`, replaced by what
    /// `workspace/configuration` answers.
    binaries: Mutex<Vec<String>>,
    state: Mutex<State>,
    done: Condvar,
    report: Option<IndexReport>,
    /// Source files read from disk, shared by the requests.
    texts: Arc<DiskTexts>,
}

impl Workspace {
    /// Starts discovering and indexing on a background thread.
    pub fn start(config: WorkspaceConfig, report: Option<IndexReport>) -> Arc<Workspace> {
        let ws = Arc::new(Workspace {
            binaries: Mutex::new(config.binaries.clone()),
            report,
            config,
            state: Mutex::new(State {
                indexing: true,
                ..State::default()
            }),
            done: Condvar::new(),
            texts: Arc::default(),
        });
        let worker = ws.clone();
        let spawned = std::thread::Builder::new()
            .name("lsp-index".into())
            .spawn(move || {
                // Below the request workers, and so are the index's own workers (a thread
                // inherits its creator's nice value): a query answered from a quick table
                // must not wait for cores the full index is using.
                // SAFETY: setpriority only reads its arguments; with PRIO_PROCESS and a
                // thread id it changes the nice value of this thread alone (Linux).
                unsafe {
                    libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 5);
                }
                worker.emit(IndexEvent::Begin);
                std::thread::sleep(worker.config.index_delay);
                worker.scan(true);
                worker.state().indexing = false;
                worker.done.notify_all();
                let served = worker
                    .state()
                    .served
                    .iter()
                    .map(|s| s.path.clone())
                    .collect();
                worker.emit(IndexEvent::End { served });
            });
        if let Err(e) = spawned {
            tracing::error!("cannot start the indexer: {e}");
            ws.state().indexing = false;
        }
        ws
    }

    fn emit(&self, event: IndexEvent) {
        if let Some(report) = &self.report {
            report(event);
        }
    }

    fn binaries(&self) -> Vec<String> {
        self.binaries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Replaces the configured binaries (an empty list means discovery): what was indexed is
    /// dropped and the next request looks again.
    pub fn set_binaries(&self, binaries: Vec<String>) {
        let mut current = self.binaries.lock().unwrap_or_else(|p| p.into_inner());
        if *current == binaries {
            return;
        }
        tracing::info!(?binaries, "configured binaries changed");
        *current = binaries;
        drop(current);
        let mut state = self.state();
        state.served.clear();
        state.quick.clear();
        state.rejected.clear();
        state.last_scan = None;
    }

    /// The configured binaries (paths or globs); empty when they are discovered.
    pub fn configured(&self) -> Vec<String> {
        self.binaries()
    }

    /// A watched file changed: the next request looks for binaries again (and re-indexes
    /// changed ones, as it always does).
    pub fn invalidate(&self) {
        self.state().last_scan = None;
    }

    /// The roots of the workspace.
    pub fn roots(&self) -> &[PathBuf] {
        &self.config.roots
    }

    /// The source files read from disk so far (each checked against the file when used).
    pub fn texts(&self) -> Arc<DiskTexts> {
        self.texts.clone()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Looks for binaries and indexes those not seen before, one at a time so requests can
    /// answer from the ones ready.
    fn scan(&self, report: bool) {
        let candidates = self.candidates();
        let total = candidates.len();
        for (done, path) in candidates.into_iter().enumerate() {
            if report {
                self.emit(IndexEvent::Binary {
                    done,
                    total,
                    path: path.clone(),
                });
            }
            let stamp = mtime(&path);
            {
                let state = self.state();
                let known = state.served.iter().any(|s| s.path == path)
                    || state.rejected.get(&path) == Some(&stamp);
                if known {
                    continue;
                }
            }
            match self.load(&path) {
                Loaded::Served(served) => {
                    served.binary.release_file_pages();
                    let served = warm(served, self.texts.clone());
                    let mut state = self.state();
                    tracing::debug!(path = %served.path.display(), "binary serves the workspace");
                    state.quick.retain(|q| q.path != served.path);
                    state.served.push(served);
                    drop(state);
                    self.done.notify_all();
                }
                Loaded::Rejected => {
                    self.state().rejected.insert(path, stamp);
                }
            }
        }
        self.state().last_scan = Some(Instant::now());
    }

    /// Opens a candidate, checks that it serves the workspace, and indexes it.
    fn load(&self, path: &Path) -> Loaded {
        let load_started = Instant::now();
        let mtime = mtime(path);
        let options = symbols::OpenOptions {
            section_cache: symbols::IndexCache::from_env(),
            ..symbols::OpenOptions::default()
        };
        let binary = match Binary::open_with(path, &options) {
            Ok(b) => b,
            Err(e) => {
                tracing::debug!(path = %path.display(), "not a usable binary: {e}");
                return Loaded::Rejected;
            }
        };
        // A valid index cache file of this build answers `workspace/symbol` at once, while
        // the rest of the binary is read. Looked at before the line tables are read for
        // the binary's sources (every unit's line program).
        let started = Instant::now();
        let cache = symbols::IndexCache::from_env();
        let hit = cache.as_ref().is_some_and(|c| binary.load_index_cache(c));
        let cached_names = binary
            .symbol_table()
            .map(|t| Arc::new(CachedNames::new(path, t, &self.config.roots)));
        // Without one, the ELF symbol table's functions (at their code's first line)
        // answer meanwhile: a partial answer in a second or two rather than none for the
        // minutes a big program's index can take (docs/lsp.md, "Workspace symbols").
        let quick_names = cached_names.clone().or_else(|| {
            binary.elf_symbol_table().map(|t| {
                let from = load_started + PARTIAL_PATIENCE;
                Arc::new(CachedNames::partial(path, t, &self.config.roots, from))
            })
        });
        let configured = !self
            .binaries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty();
        if let (true, Some(names)) = (configured, &quick_names) {
            self.serve_quick(path, names, started);
        }
        let sources: std::collections::HashSet<PathBuf> = binary
            .source_files()
            .unwrap_or_default()
            .iter()
            .map(|f| symbols::lines::normalize_path(f))
            .collect();
        if !configured {
            // Discovered: it must have DWARF naming a source under a root.
            let roots = &self.config.roots;
            let serves = binary.info().has_dwarf
                && sources
                    .iter()
                    .any(|f| roots.iter().any(|r| f.starts_with(r)));
            if !serves {
                tracing::debug!(path = %path.display(), "binary does not serve the workspace");
                return Loaded::Rejected;
            }
        }
        if let (false, Some(names)) = (configured, &quick_names) {
            self.serve_quick(path, names, started);
        }
        if quick_names.is_some() && !hit {
            std::thread::sleep(self.config.full_index_delay);
        }
        // The name table and symbol table, built one unit at a time and written to the
        // cache (kept in memory without one): no in-memory index is kept.
        if !hit {
            if let (Err(e), Some(cache)) =
                (binary.build_index_cache(cache.as_ref(), &|_, _| {}), &cache)
            {
                tracing::warn!(dir = %cache.dir().display(), "cannot write the index cache: {e}");
            }
        }
        let Some(table) = binary.symbol_table() else {
            tracing::debug!(path = %path.display(), "no symbol table");
            return Loaded::Rejected;
        };
        let cached_names = match cached_names {
            Some(c) => c,
            None => Arc::new(CachedNames::new(path, table.clone(), &self.config.roots)),
        };
        let names = NameIndex::new(table);
        tracing::info!(path = %path.display(), symbols = names.len(), elapsed = ?started.elapsed(), "indexed");
        Loaded::Served(Box::new(Served {
            path: path.to_path_buf(),
            mtime,
            binary,
            names,
            facts: Facts::default(),
            sources,
            cached_names,
        }))
    }

    /// Lets `workspace/symbol` answer from a quick table of the binary at `path` (its
    /// index cache file's, else its ELF symbols') while its full index is built.
    fn serve_quick(&self, path: &Path, names: &Arc<CachedNames>, started: Instant) {
        tracing::info!(
            path = %path.display(),
            symbols = names.table().symbol_count(),
            elapsed = ?started.elapsed(),
            partial = names.is_partial(),
            "workspace symbols served from a quick table"
        );
        let mut state = self.state();
        state.quick.retain(|q| q.path != path);
        state.quick.push(names.clone());
        drop(state);
        self.done.notify_all();
    }

    /// Files that may be binaries for the workspace: the configured paths and globs, or else
    /// every executable or shared ELF file the walk finds.
    fn candidates(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let binaries = self.binaries();
        if binaries.is_empty() {
            use std::os::unix::fs::PermissionsExt;
            for root in &self.config.roots {
                walk(root, &mut |path, meta| {
                    let executable = meta.permissions().mode() & 0o111 != 0;
                    let shared = path.to_string_lossy().contains(".so");
                    if (executable || shared) && meta.len() >= 64 && is_elf(path) {
                        out.push(path.to_path_buf());
                    }
                });
            }
        }
        let base = self.config.roots.first().cloned().unwrap_or_default();
        for entry in &binaries {
            if entry.contains(['*', '?', '[']) {
                for root in &self.config.roots {
                    walk(root, &mut |path, _| {
                        let rel = path.strip_prefix(root).unwrap_or(path);
                        if glob_match(entry, &rel.to_string_lossy()) && is_elf(path) {
                            out.push(path.to_path_buf());
                        }
                    });
                }
            } else {
                let path = base.join(entry);
                if path.is_file() {
                    out.push(path);
                } else {
                    tracing::debug!(path = %path.display(), "configured binary not found");
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// While the binaries are being indexed, the cached symbol tables that can answer
    /// `workspace/symbol` without waiting: those of the binaries being indexed whose cache
    /// file was valid, and of those served already (each of which must have one). `None`
    /// when the request should wait for the index (see [`Workspace::snapshot`]).
    /// While no binary is ready at all, waits (up to `patience`, polling `cancelled`) for
    /// one of them to have a cached table or for the indexing to end.
    pub fn quick_tables(
        &self,
        patience: Duration,
        cancelled: &dyn Fn() -> bool,
    ) -> Option<Vec<Arc<CachedNames>>> {
        let deadline = Instant::now() + patience;
        let mut state = self.state();
        while state.indexing && state.served.is_empty() && state.quick.is_empty() && !cancelled() {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            let step = (deadline - now).min(Duration::from_millis(50));
            state = match self.done.wait_timeout(state, step) {
                Ok((s, _)) => s,
                Err(p) => p.into_inner().0,
            };
        }
        // A partial table (ELF functions) answers only once its binary's indexing has
        // run for [`PARTIAL_PATIENCE`]: a small program's index is ready by then, and its
        // answer is whole.
        while (state.indexing || state.scanning) && !cancelled() {
            let Some(partial_deadline) = state.quick.iter().filter_map(|q| q.answers_from()).max()
            else {
                break;
            };
            let now = Instant::now();
            if now >= partial_deadline {
                break;
            }
            let step = (partial_deadline - now).min(Duration::from_millis(20));
            state = match self.done.wait_timeout(state, step) {
                Ok((s, _)) => s,
                Err(p) => p.into_inner().0,
            };
        }
        if !(state.indexing || state.scanning) || state.quick.is_empty() {
            return None;
        }
        let mut tables: Vec<Arc<CachedNames>> = state
            .served
            .iter()
            .map(|s| s.cached_names())
            .collect::<Option<_>>()?;
        tables.extend(state.quick.iter().cloned());
        Some(tables)
    }

    /// The binaries ready now. Waits up to `patience` for the first indexing to finish (polling
    /// `cancelled`); re-indexes any binary whose modification time changed, and looks for new
    /// binaries when the last look is older than [`RESCAN_INTERVAL`].
    pub fn snapshot(&self, patience: Duration, cancelled: &dyn Fn() -> bool) -> Vec<Arc<Served>> {
        let deadline = Instant::now() + patience;
        let mut state = self.state();
        // A look for binaries running on another thread (a watcher's) is waited for too.
        while (state.indexing || state.scanning) && !cancelled() {
            let now = Instant::now();
            if now >= deadline {
                tracing::debug!("answering while indexing is still running");
                break;
            }
            let step = (deadline - now).min(Duration::from_millis(50));
            state = match self.done.wait_timeout(state, step) {
                Ok((s, _)) => s,
                Err(p) => p.into_inner().0,
            };
        }
        let rescan = !state.indexing
            && !state.scanning
            && state
                .last_scan
                .is_none_or(|t| t.elapsed() >= RESCAN_INTERVAL);
        if rescan {
            state.scanning = true;
        }
        let served = state.served.clone();
        drop(state);
        for old in served.iter().filter(|s| mtime(&s.path) != s.mtime) {
            tracing::info!(path = %old.path.display(), "binary changed, re-indexing");
            let new = match self.load(&old.path) {
                Loaded::Served(s) => Some(warm(s, self.texts.clone())),
                Loaded::Rejected => None,
            };
            let mut state = self.state();
            state.quick.retain(|q| q.path != old.path);
            if let Some(pos) = state.served.iter().position(|s| Arc::ptr_eq(s, old)) {
                match new {
                    Some(new) => state.served[pos] = new,
                    None => {
                        state.served.remove(pos);
                    }
                }
            }
        }
        if rescan {
            self.scan(false);
            self.state().scanning = false;
            self.done.notify_all();
        }
        self.state().served.clone()
    }
}

/// Shares a newly indexed binary and, on a background thread of lower priority, writes its
/// index cache file (when it did not come from one) and answers `workspace/symbol` from it
/// from then on, builds the rest of its name tables and reads the files its symbols are
/// declared in: the request waiting for the index is answered meanwhile, and later
/// requests find the tables ready (or wait for the same build) and the files read (each
/// still checked when used).
fn warm(served: Box<Served>, texts: Arc<DiskTexts>) -> Arc<Served> {
    let served: Arc<Served> = Arc::from(served);
    let background = served.clone();
    let spawned = std::thread::Builder::new()
        .name("lsp-names".into())
        .spawn(move || {
            // SAFETY: setpriority only reads its arguments; with PRIO_PROCESS and a thread id
            // it changes the nice value of this thread alone (Linux). Failing is harmless.
            unsafe {
                libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 10);
            }
            let started = Instant::now();
            background.names.warm();
            tracing::debug!(path = %background.path.display(), elapsed = ?started.elapsed(), "name tables built");
            for f in 0..background.names.file_count() {
                texts.get(background.names.file(crate::names::FileId::new(f)));
            }
            tracing::debug!(path = %background.path.display(), elapsed = ?started.elapsed(), "declaration files read");
            // The load and the tables read much of the DWARF once; requests read little.
            background.binary.release_file_pages();
            // SAFETY: malloc_trim only walks the allocator's own free lists. What the
            // table's build freed goes back to the system.
            unsafe {
                libc::malloc_trim(0);
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("name tables will be built on first use: {e}");
    }
    served
}

fn mtime(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Whether `path` is an ELF file (by its magic number).
pub fn is_elf(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && magic == *b"\x7fELF"
}

/// Visits regular files under `root`: hidden directories, `node_modules` and every `target/`
/// subdirectory except `target/debug` (without its `deps`/`build` folders) are skipped.
fn walk(root: &Path, visit: &mut dyn FnMut(&Path, &std::fs::Metadata)) {
    let mut seen = 0usize;
    let mut stack = vec![(root.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let in_target = dir.file_name().is_some_and(|n| n == "target");
        let in_target_debug = dir.file_name().is_some_and(|n| n == "debug")
            && dir.parent().is_some_and(|p| p.ends_with("target"));
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_FILES_SEEN {
                tracing::warn!(root = %root.display(), "stopped looking for binaries after {MAX_FILES_SEEN} files");
                return;
            }
            let path = entry.path();
            let Ok(meta) = entry.metadata() else { continue };
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if meta.is_dir() {
                let skip = name.starts_with('.')
                    || SKIP_DIRS.contains(&name.as_ref())
                    || (in_target && name != "debug")
                    || in_target_debug
                    || depth >= MAX_DEPTH;
                if !skip {
                    stack.push((path, depth + 1));
                }
            } else if meta.is_file() {
                visit(&path, &meta);
            }
        }
    }
}

/// Matches a relative path against a glob: `*` and `?` stay within one component, `**`
/// spans any number of components, `[abc]` is a character class.
pub fn glob_match(pattern: &str, path: &str) -> bool {
    fn go(p: &[u8], s: &[u8]) -> bool {
        match p.first() {
            None => s.is_empty(),
            Some(b'*') if p.get(1) == Some(&b'*') => {
                let rest = p[2..].strip_prefix(b"/").unwrap_or(&p[2..]);
                (0..=s.len()).any(|i| (i == 0 || s[i - 1] == b'/') && go(rest, &s[i..]))
            }
            Some(b'*') => {
                let mut i = 0;
                loop {
                    if go(&p[1..], &s[i..]) {
                        return true;
                    }
                    if i >= s.len() || s[i] == b'/' {
                        return false;
                    }
                    i += 1;
                }
            }
            Some(b'?') => s.first().is_some_and(|&c| c != b'/') && go(&p[1..], &s[1..]),
            Some(b'[') => {
                let Some(close) = p.iter().position(|&c| c == b']') else {
                    return s.first() == Some(&b'[') && go(&p[1..], &s[1..]);
                };
                s.first().is_some_and(|c| p[1..close].contains(c)) && go(&p[close + 1..], &s[1..])
            }
            Some(&c) => s.first() == Some(&c) && go(&p[1..], &s[1..]),
        }
    }
    go(pattern.as_bytes(), path.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs() {
        assert!(glob_match("build/*", "build/prog"));
        assert!(!glob_match("build/*", "build/sub/prog"));
        assert!(glob_match("**/prog", "a/b/prog"));
        assert!(glob_match("**/prog", "prog"));
        assert!(glob_match("target/debug/p?og", "target/debug/prog"));
        assert!(glob_match("bin/[ab]", "bin/b"));
        assert!(!glob_match("bin/[ab]", "bin/c"));
        assert!(glob_match("a/**/z", "a/z"));
    }
}
