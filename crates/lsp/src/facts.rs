//! DWARF answers the language features ask one binary for again and again, remembered: the
//! breakpoint lines of a source file (line → address), the scope at an address, the
//! enumerators of a named type and the LSP kind of a named type.
//!
//! A [`Facts`] belongs to one indexed binary ([`crate::workspace::Served`]); re-indexing a
//! changed binary makes a new one, so nothing here outlives the debug information it came
//! from. Keys are in the binary's terms (DWARF lines, file addresses, type names), never in
//! an open document's, so edits to a document never make an entry wrong: callers map
//! document lines to built lines first. Each table is bounded; a full table is emptied.

use std::collections::HashMap;
use std::hash::Hash;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use symbols::{Binary, FileAddr, Line, LineResolution, Scope, SourceMap, TypeKind};

/// Source files whose line resolutions are kept.
const MAX_FILES: usize = 64;
/// Scopes kept.
const MAX_SCOPES: usize = 4096;
/// Named types whose enumerators or kinds are kept.
const MAX_TYPES: usize = 65_536;

/// The enumerators of an enum: (name, value).
pub type Enumerators = Arc<[(String, i128)]>;

/// A bounded memo table.
struct Table<K, V> {
    map: Mutex<HashMap<K, V>>,
    limit: usize,
}

impl<K: Eq + Hash, V: Clone> Table<K, V> {
    fn new(limit: usize) -> Self {
        Table {
            map: Mutex::new(HashMap::new()),
            limit,
        }
    }

    /// The value for `key`, computed by `make` when absent. The lock is not held while
    /// computing, so two threads may compute the same value; both get the same answer.
    fn get_or(&self, key: &K, make: impl FnOnce() -> V) -> V
    where
        K: Clone,
    {
        if let Some(v) = self.lock().get(key) {
            return v.clone();
        }
        let v = make();
        let mut map = self.lock();
        if map.len() >= self.limit {
            map.clear();
        }
        map.insert(key.clone(), v.clone());
        v
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<K, V>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Remembered answers of one binary.
pub struct Facts {
    /// Per source file (as asked): what `resolve_line` answers for each line with code.
    lines: Table<PathBuf, Arc<[LineResolution]>>,
    /// Scopes by address; `None` when the binary could not say.
    scopes: Table<FileAddr, Option<Arc<Scope>>>,
    /// Enumerators by type name; `None` when the name is not an enum.
    enumerators: Table<Arc<str>, Option<Enumerators>>,
    /// LSP symbol kinds by type name.
    type_kinds: Table<Arc<str>, u32>,
}

impl Default for Facts {
    fn default() -> Self {
        Facts {
            lines: Table::new(MAX_FILES),
            scopes: Table::new(MAX_SCOPES),
            enumerators: Table::new(MAX_TYPES),
            type_kinds: Table::new(MAX_TYPES),
        }
    }
}

impl Facts {
    /// `binary.resolve_line(file, line, &SourceMap::new())`, with every line of `file`
    /// resolved on the first call; errors answer `None`, as they do for the callers.
    pub fn resolve_line(&self, binary: &Binary, file: &Path, line: Line) -> Option<LineResolution> {
        let all = self.lines.get_or(&file.to_path_buf(), || {
            match binary.resolve_file_lines(file, &SourceMap::new()) {
                Ok(all) => all.into(),
                Err(e) => {
                    tracing::debug!(file = %file.display(), "no line table: {e}");
                    Arc::from([])
                }
            }
        });
        let at = all.partition_point(|r| r.line < line);
        let found = all.get(at)?;
        Some(LineResolution {
            requested: line,
            line: found.line,
            locations: found.locations.clone(),
        })
    }

    /// `binary.scope_at(pc)`, remembered.
    pub fn scope_at(&self, binary: &Binary, pc: FileAddr) -> Option<Arc<Scope>> {
        self.scopes
            .get_or(&pc, || binary.scope_at(pc).ok().map(Arc::new))
    }

    /// The enumerators of the type named `name` when it is an enum (the first type of that
    /// name the binary can describe, as `features::named_type` picks it).
    pub fn enumerators(&self, binary: &Binary, name: &Arc<str>) -> Option<Enumerators> {
        self.enumerators.get_or(name, || {
            match crate::dwarf::named_type(binary, name)?.kind {
                TypeKind::Enum { enumerators, .. } => Some(enumerators.into()),
                _ => None,
            }
        })
    }

    /// The LSP symbol kind of the type named `name`, computed by `kind` once.
    pub fn type_kind(&self, name: &Arc<str>, kind: impl FnOnce() -> u32) -> u32 {
        self.type_kinds.get_or(name, kind)
    }
}
