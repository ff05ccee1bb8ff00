//! Line tables: address → source position, and file:line → breakpoint addresses.
//!
//! Resolving a file:line reads only `.debug_line` (plus each unit's root DIE for its
//! compilation directory); DIEs are parsed only for the units that actually contain the
//! line, to find function starts for prologue skipping.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use gimli::Reader;

use crate::addr::{Column, FileAddr, Line};
use crate::binary::Binary;
use crate::error::Result;

/// One row of a line table, compacted.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Row {
    pub(crate) addr: u64,
    pub(crate) file: u32,
    pub(crate) line: u32,
    pub(crate) column: u32,
    pub(crate) is_stmt: bool,
    pub(crate) prologue_end: bool,
}

/// A contiguous sequence of rows `[start, end)`.
#[derive(Debug)]
pub(crate) struct Sequence {
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) rows: Vec<Row>,
}

/// The decoded line program of one unit.
#[derive(Debug, Default)]
pub(crate) struct LineTable {
    /// File paths indexed by DWARF file index (normalized, absolute when possible).
    files: crate::units::FileTable,
    /// Sequences sorted by start address.
    pub(crate) seqs: Vec<Arc<Sequence>>,
}

impl LineTable {
    pub(crate) fn file_path(&self, index: u64) -> Option<&Path> {
        self.files
            .get(usize::try_from(index).ok()?)
            .and_then(|f| f.as_deref())
    }

    /// The sequence covering `addr`: of those starting at or before it, the last.
    pub(crate) fn sequence_covering(&self, addr: u64) -> Option<Arc<Sequence>> {
        let pos = self.seqs.partition_point(|s| s.start <= addr);
        self.seqs[..pos]
            .iter()
            .rev()
            .take(16)
            .find(|seq| addr < seq.end)
            .cloned()
    }
}

impl Sequence {
    /// The row covering `addr` (the last row at the greatest address ≤ `addr`).
    pub(crate) fn row_for(&self, addr: u64) -> Option<&Row> {
        let i = self.rows.partition_point(|r| r.addr <= addr);
        self.rows.get(i.checked_sub(1)?)
    }

    /// The row gdb reports for a frame at `addr`: the row covering `addr` as in
    /// [`Sequence::row_for`], except that when that row is not a statement, the last
    /// statement row at the same address wins (gdb's `find_pc_sect_line` scans back
    /// through rows at the same address, stopping at a line-0 row).
    pub(crate) fn stmt_row_for(&self, addr: u64) -> Option<&Row> {
        let mut i = self
            .rows
            .partition_point(|r| r.addr <= addr)
            .checked_sub(1)?;
        let last = i;
        while i > 0
            && !self.rows[i].is_stmt
            && self.rows[i - 1].addr == self.rows[i].addr
            && self.rows[i - 1].line != 0
        {
            i -= 1;
        }
        let row = if self.rows[i].is_stmt { i } else { last };
        self.rows.get(row)
    }
}

/// The sequences of a line program, in program order: rows out of address order are
/// dropped, as are empty sequences and those at address 0 (discarded code).
pub(crate) fn collect_sequences(
    mut rows_iter: gimli::LineRows<
        crate::reader::R,
        gimli::IncompleteLineProgram<crate::reader::R>,
    >,
) -> std::result::Result<Vec<Sequence>, gimli::Error> {
    let mut seqs = Vec::new();
    let mut current: Vec<Row> = Vec::new();
    while let Some((_, row)) = rows_iter.next_row()? {
        if row.end_sequence() {
            if let Some(first) = current.first() {
                let start = first.addr;
                if row.address() > start && start != 0 {
                    seqs.push(Sequence {
                        start,
                        end: row.address(),
                        rows: std::mem::take(&mut current),
                    });
                }
            }
            current.clear();
            continue;
        }
        if current.last().is_some_and(|r| row.address() < r.addr) {
            // Out-of-order rows are invalid DWARF; drop the row.
            continue;
        }
        current.push(Row {
            addr: row.address(),
            file: u32::try_from(row.file_index()).unwrap_or(u32::MAX),
            line: row
                .line()
                .map_or(0, |l| u32::try_from(l.get()).unwrap_or(u32::MAX)),
            column: match row.column() {
                gimli::ColumnType::LeftEdge => 0,
                gimli::ColumnType::Column(c) => u32::try_from(c.get()).unwrap_or(u32::MAX),
            },
            is_stmt: row.is_stmt(),
            prologue_end: row.prologue_end(),
        });
    }
    Ok(seqs)
}

/// Lexically normalizes a path: drops `.` components and folds `dir/..`.
pub fn normalize_path(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for comp in path.components() {
        match comp {
            Component::CurDir => {}
            Component::ParentDir => {
                let last_is_normal =
                    matches!(out.components().next_back(), Some(Component::Normal(_)));
                if last_is_normal {
                    out.pop();
                } else {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// A source position found for an address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceLocation {
    /// The source file as recorded in the binary (normalized, not source-mapped).
    pub file: PathBuf,
    /// The line; `None` for compiler-generated code (DWARF line 0).
    pub line: Option<Line>,
    /// The column, when the compiler recorded one.
    pub column: Column,
    /// The address of the line-table row this position comes from.
    pub row_addr: FileAddr,
}

/// One line-table row, for stepping (the engine steps until the pc reaches a row
/// that starts a new statement on a different line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineRow {
    /// Address of the row.
    pub addr: FileAddr,
    /// Source file as recorded in the binary.
    pub file: Arc<Path>,
    /// Line; `None` for compiler-generated code (line 0).
    pub line: Option<Line>,
    /// Column, when recorded.
    pub column: Column,
    /// Whether the row starts a statement (a place to stop when stepping).
    pub is_stmt: bool,
    /// Whether the producer marked the end of the function prologue here.
    pub prologue_end: bool,
}

/// Prefix rewrites between paths recorded in the binary and paths on this machine
/// (for example `/src` → `/home/me/project` for a binary built in a container).
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    rules: Vec<(PathBuf, PathBuf)>,
    /// Where to look for sources whose recorded directories do not exist here
    /// (see [`crate::guess_source_rules`]).
    local_root: Option<PathBuf>,
    /// The rules that were guessed rather than given, for announcing them.
    guessed: Vec<(PathBuf, PathBuf)>,
}

impl SourceMap {
    /// An empty map: paths are used as recorded.
    pub fn new() -> SourceMap {
        SourceMap::default()
    }

    /// Adds a rule: paths under `binary_prefix` are found under `local_prefix`.
    pub fn add(&mut self, binary_prefix: impl Into<PathBuf>, local_prefix: impl Into<PathBuf>) {
        self.rules.push((
            normalize_path(&binary_prefix.into()),
            normalize_path(&local_prefix.into()),
        ));
    }

    /// Sets the directory (a workspace) under which sources whose recorded directories do
    /// not exist on this machine are looked for when a session starts.
    pub fn set_local_root(&mut self, root: impl Into<PathBuf>) {
        self.local_root = Some(root.into());
    }

    /// The directory set by [`SourceMap::set_local_root`].
    pub fn local_root(&self) -> Option<&Path> {
        self.local_root.as_deref()
    }

    /// Adds a rule that was guessed (it is also listed by [`SourceMap::guessed`]).
    pub fn add_guessed(&mut self, binary_prefix: PathBuf, local_prefix: PathBuf) {
        self.add(binary_prefix.clone(), local_prefix.clone());
        self.guessed.push((binary_prefix, local_prefix));
    }

    /// The rules added by [`SourceMap::add_guessed`], in order.
    pub fn guessed(&self) -> &[(PathBuf, PathBuf)] {
        &self.guessed
    }

    /// The rules, in order: (recorded prefix, local prefix).
    pub fn rules(&self) -> &[(PathBuf, PathBuf)] {
        &self.rules
    }

    /// Maps a path recorded in the binary to the local path (first matching rule wins).
    pub fn to_local(&self, binary_path: &Path) -> PathBuf {
        for (from, to) in &self.rules {
            if let Ok(rest) = binary_path.strip_prefix(from) {
                return to.join(rest);
            }
        }
        binary_path.to_path_buf()
    }

    /// Maps a local path back to the path recorded in the binary.
    pub fn to_binary(&self, local_path: &Path) -> PathBuf {
        for (from, to) in &self.rules {
            if let Ok(rest) = local_path.strip_prefix(to) {
                return from.join(rest);
            }
        }
        local_path.to_path_buf()
    }
}

/// How well a recorded file matches a query.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum FileMatch {
    Suffix,
    Exact,
}

fn match_file(recorded_local: &Path, query: &Path) -> Option<FileMatch> {
    if recorded_local == query {
        return Some(FileMatch::Exact);
    }
    let (long, short) = if query.is_relative() {
        (recorded_local, query)
    } else if recorded_local.is_relative() {
        (query, recorded_local)
    } else {
        return None;
    };
    let short: Vec<_> = short.components().collect();
    let long: Vec<_> = long.components().collect();
    (!short.is_empty()
        && long.len() >= short.len()
        && long[long.len() - short.len()..] == short[..])
        .then_some(FileMatch::Suffix)
}

/// A place to put a breakpoint for a requested source line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BreakpointLocation {
    /// Where to plant the breakpoint (after the prologue when the line is a function's
    /// first line).
    pub addr: FileAddr,
    /// The address of the line-table row itself (what `info line` reports).
    pub line_addr: FileAddr,
    /// Whether `addr` was moved past a function prologue.
    pub after_prologue: bool,
    /// The file (source-mapped to local paths).
    pub file: PathBuf,
    /// The line of the row.
    pub line: Line,
    /// The column of the row.
    pub column: Column,
}

/// The answer to "where does FILE:LINE break?".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineResolution {
    /// The line that was asked for.
    pub requested: Line,
    /// The line that has code: `requested`, or the next line with code after it.
    pub line: Line,
    /// Every address (all units, inlined copies, template instances), sorted.
    pub locations: Vec<BreakpointLocation>,
}

impl LineResolution {
    /// Whether the breakpoint moved to a later line because the requested one had no code.
    pub fn moved(&self) -> bool {
        self.line != self.requested
    }
}

/// A candidate row for a file:line query.
struct Candidate {
    unit: usize,
    addr: u64,
    file: u32,
    line: u32,
    column: u32,
}

impl Binary {
    /// The decoded line table of one unit, cached.
    pub(crate) fn line_table(&self, index: usize) -> Result<Arc<LineTable>> {
        let slot = self
            .units()
            .get(index)
            .ok_or(crate::Error::BadReference(index as u64))?;
        let result = slot
            .lines
            .get_or_init(|| self.build_line_table(index).map(Arc::new));
        result.clone().map_err(crate::Error::from)
    }

    /// One unit's line table: the cached one when it was built already, else built for
    /// this caller alone (a walk over every unit's rows must not keep them all).
    pub(crate) fn line_table_once(&self, index: usize) -> Result<Arc<LineTable>> {
        let slot = self
            .units()
            .get(index)
            .ok_or(crate::Error::BadReference(index as u64))?;
        if let Some(done) = slot.lines.get() {
            return done.clone().map_err(crate::Error::from);
        }
        // Nor the units it parsed for this.
        Ok(Arc::new(
            self.for_pass(index, || self.build_line_table(index))?,
        ))
    }

    /// The file table of one unit's line program (header only), cached.
    pub(crate) fn unit_files(&self, index: usize) -> Result<crate::units::FileTable> {
        let slot = self
            .units()
            .get(index)
            .ok_or(crate::Error::BadReference(index as u64))?;
        let result = slot
            .files
            .get_or_init(|| self.build_file_table(index).map(Arc::new));
        result.clone().map_err(crate::Error::from)
    }

    fn build_file_table(
        &self,
        index: usize,
    ) -> std::result::Result<Vec<Option<Arc<Path>>>, gimli::Error> {
        // A unit parsed for its file table alone is dropped again: a pass over every
        // unit's file table (a `FILE:LINE` breakpoint, the language server's sources)
        // would otherwise keep every unit's abbreviations.
        let unit = self
            .for_pass(index, || self.skeleton(index))
            .map_err(|_| gimli::Error::MissingUnitDie)?;
        let Some(program) = unit.line_program.as_ref() else {
            return Ok(Vec::new());
        };
        let comp_dir = unit
            .comp_dir
            .as_ref()
            .and_then(|d| d.to_string_lossy().ok())
            .map(|d| PathBuf::from(d.as_ref()));
        let header = program.header();
        let count = header.file_names().len() as u64 + 1;
        let mut files = Vec::new();
        for i in 0..count {
            let path = header.file(i).and_then(|entry| {
                let name = unit.string(entry.path_name()).ok()?;
                let name = PathBuf::from(name.to_string_lossy().ok()?.as_ref());
                let mut path = PathBuf::new();
                if let Some(dir) = comp_dir.as_ref() {
                    path.push(dir);
                }
                if let Some(dir) = entry.directory(header) {
                    if let Ok(dir) = unit.string(dir) {
                        if let Ok(dir) = dir.to_string_lossy() {
                            path.push(dir.as_ref());
                        }
                    }
                }
                path.push(name);
                Some(Arc::from(normalize_path(&path)))
            });
            files.push(path);
        }
        Ok(files)
    }

    fn build_line_table(&self, index: usize) -> std::result::Result<LineTable, gimli::Error> {
        let unit = self
            .skeleton(index)
            .map_err(|_| gimli::Error::MissingUnitDie)?;
        let Some(program) = unit.line_program.clone() else {
            return Ok(LineTable::default());
        };
        let files = self
            .unit_files(index)
            .map_err(|_| gimli::Error::MissingUnitDie)?;
        let mut seqs: Vec<Arc<Sequence>> = collect_sequences(program.rows())?
            .into_iter()
            .map(Arc::new)
            .collect();
        seqs.sort_by_key(|s| s.start);
        Ok(LineTable { files, seqs })
    }

    /// The source position of an address.
    pub fn location_for_addr(&self, addr: FileAddr) -> Result<Option<SourceLocation>> {
        let mut units = self.units_for_addr(addr.0);
        if units.is_empty() {
            // In no unit's declared ranges: only a unit that declares none may hold it
            // (rare; e.g. hand-written asm without ranges).
            units = self.units_without_ranges().to_vec();
        }
        for index in units {
            if let Some(seq) = self.sequence_at(index, addr.0)? {
                if let Some(row) = seq.row_for(addr.0) {
                    return Ok(Some(self.row_location(index, row)?));
                }
            }
        }
        Ok(None)
    }

    /// The source position gdb shows for a stack frame whose lookup pc is `addr`
    /// (frame 0's pc, a caller's return address - 1).
    ///
    /// This differs from [`Binary::location_for_addr`], which follows binutils'
    /// addr2line (the last row at the address wins), only when several rows share an
    /// address and the last is not a statement: gdb then takes the last statement row
    /// at that address. At -O2 the non-statement row is often another line's, so frames
    /// use this rule and address → line queries keep addr2line's.
    pub fn frame_location_for_addr(&self, addr: FileAddr) -> Result<Option<SourceLocation>> {
        let mut units = self.units_for_addr(addr.0);
        if units.is_empty() {
            units = self.units_without_ranges().to_vec();
        }
        for index in units {
            if let Some(seq) = self.sequence_at(index, addr.0)? {
                if let Some(row) = seq.stmt_row_for(addr.0) {
                    return Ok(Some(self.row_location(index, row)?));
                }
            }
        }
        Ok(None)
    }

    fn row_location(&self, index: usize, row: &Row) -> Result<SourceLocation> {
        let files = self.unit_files(index)?;
        Ok(SourceLocation {
            file: files
                .get(row.file as usize)
                .and_then(|f| f.as_deref())
                .map(Path::to_path_buf)
                .unwrap_or_default(),
            line: Line::new(row.line),
            column: std::num::NonZeroU32::new(row.column),
            row_addr: FileAddr(row.addr),
        })
    }

    /// Every row of every line table, in unit order (for tests and tooling).
    pub fn all_line_rows(&self) -> Result<Vec<SourceLocation>> {
        let mut out = Vec::new();
        for index in 0..self.units().len() {
            let table = self.line_table(index)?;
            for seq in &table.seqs {
                for row in &seq.rows {
                    out.push(self.row_location(index, row)?);
                }
            }
        }
        Ok(out)
    }

    /// The line-table rows with addresses in `range` (for example a function's range,
    /// to plan a step over), sorted by address. Rows sharing an address are all kept.
    pub fn line_rows(&self, range: std::ops::Range<FileAddr>) -> Result<Vec<LineRow>> {
        let mut out = Vec::new();
        let mut units = self.units_for_addr(range.start.0);
        if units.is_empty() {
            units = self.units_without_ranges().to_vec();
        }
        for index in units {
            let table = self.line_table(index)?;
            for seq in table
                .seqs
                .iter()
                .filter(|s| s.start < range.end.0 && range.start.0 < s.end)
            {
                for row in seq
                    .rows
                    .iter()
                    .filter(|r| range.start.0 <= r.addr && r.addr < range.end.0)
                {
                    out.push(LineRow {
                        addr: FileAddr(row.addr),
                        file: table
                            .files
                            .get(row.file as usize)
                            .and_then(Clone::clone)
                            .unwrap_or_else(|| Arc::from(Path::new(""))),
                        line: Line::new(row.line),
                        column: std::num::NonZeroU32::new(row.column),
                        is_stmt: row.is_stmt,
                        prologue_end: row.prologue_end,
                    });
                }
            }
        }
        out.sort_by_key(|r| r.addr);
        Ok(out)
    }

    /// Every source file named by any line table (as recorded, normalized).
    pub fn source_files(&self) -> Result<Vec<PathBuf>> {
        let mut out = Vec::new();
        for index in 0..self.units().len() {
            let files = self.unit_files(index)?;
            out.extend(files.iter().flatten().map(|f| f.to_path_buf()));
            // Every unit's root DIE and line program header are read once: their file
            // pages are not kept resident (ceph-osd: 120 MiB of them).
            if index % crate::table::RELEASE_EVERY == crate::table::RELEASE_EVERY - 1 {
                self.release_file_pages();
            }
        }
        self.release_file_pages();
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// Rows of units whose files match `file`: (unit, file index set) pairs.
    fn matching_files(&self, file: &Path, map: &SourceMap) -> Result<Vec<(usize, Vec<u32>)>> {
        let query = normalize_path(file);
        let mut best = None;
        let mut found: Vec<(usize, FileMatch, Vec<u32>)> = Vec::new();
        for index in 0..self.units().len() {
            let files = match self.unit_files(index) {
                Ok(f) => f,
                Err(e) => {
                    tracing::debug!("skipping unit {index}: {e}");
                    continue;
                }
            };
            let mut ids = Vec::new();
            let mut quality = None;
            for (i, f) in files.iter().enumerate() {
                let Some(f) = f else { continue };
                if let Some(m) = match_file(&map.to_local(f), &query) {
                    ids.push(i as u32);
                    quality = quality.max(Some(m));
                }
            }
            if let Some(q) = quality {
                best = best.max(Some(q));
                found.push((index, q, ids));
            }
        }
        Ok(found
            .into_iter()
            .filter(|(_, q, _)| Some(*q) == best)
            .map(|(u, _, ids)| (u, ids))
            .collect())
    }

    fn candidates(&self, file: &Path, map: &SourceMap) -> Result<Vec<Candidate>> {
        let mut out = Vec::new();
        for (unit, ids) in self.matching_files(file, map)? {
            let table = self.line_table(unit)?;
            for seq in &table.seqs {
                let mut prev_line = None;
                for row in &seq.rows {
                    let matches = row.is_stmt && row.line != 0 && ids.contains(&row.file);
                    // Every statement row binds (as in gdb, also rows that share their
                    // address with a later row); a run of rows for the same line counts
                    // once, at its start.
                    let continues_run = prev_line == Some(row.line);
                    prev_line = matches.then_some(row.line);
                    if !matches || continues_run {
                        continue;
                    }
                    out.push(Candidate {
                        unit,
                        addr: row.addr,
                        file: row.file,
                        line: row.line,
                        column: row.column,
                    });
                }
            }
        }
        Ok(out)
    }

    /// Lines of `file` that have code (where a breakpoint can bind), sorted.
    pub fn lines_with_code(&self, file: &Path, map: &SourceMap) -> Result<Vec<Line>> {
        let mut lines: Vec<Line> = self
            .candidates(file, map)?
            .iter()
            .filter_map(|c| Line::new(c.line))
            .collect();
        lines.sort();
        lines.dedup();
        Ok(lines)
    }

    /// Resolves FILE:LINE to breakpoint addresses.
    ///
    /// `file` may be absolute (compared after applying `map` to recorded paths) or a
    /// path suffix such as `src/main.rs`. When the line has no code the next line with
    /// code is used (`moved()` says so). A location at the start of a function is moved
    /// past the prologue. Returns `None` when the file is unknown or no line at or
    /// after `line` has code.
    pub fn resolve_line(
        &self,
        file: &Path,
        line: Line,
        map: &SourceMap,
    ) -> Result<Option<LineResolution>> {
        let candidates = self.candidates(file, map)?;
        let Some(best) = candidates
            .iter()
            .map(|c| c.line)
            .filter(|&l| l >= line.get())
            .min()
        else {
            return Ok(None);
        };
        let chosen: Vec<&Candidate> = candidates.iter().filter(|c| c.line == best).collect();
        self.resolve_chosen(chosen, best, line, map).map(Some)
    }

    /// What [`Binary::resolve_line`] answers for each line of `file` that has code, sorted
    /// by line. The line tables are read once for the whole file, for callers that ask about
    /// many lines of one file (a language server's hovers): `resolve_line(file, n)` is the
    /// first resolution whose `line` is at least `n`, with `requested` set to `n`.
    pub fn resolve_file_lines(&self, file: &Path, map: &SourceMap) -> Result<Vec<LineResolution>> {
        let mut candidates = self.candidates(file, map)?;
        // Stable: within a line, candidates keep the order `resolve_line` sees them in.
        candidates.sort_by_key(|c| c.line);
        let mut out = Vec::new();
        for group in candidates.chunk_by(|a, b| a.line == b.line) {
            let Some(first) = group.first() else { continue };
            let Some(line) = Line::new(first.line) else {
                continue;
            };
            out.push(self.resolve_chosen(group.iter().collect(), first.line, line, map)?);
        }
        Ok(out)
    }

    /// Resolves the candidates `chosen` of line `best` (the line with code for `requested`).
    fn resolve_chosen(
        &self,
        mut chosen: Vec<&Candidate>,
        best: u32,
        line: Line,
        map: &SourceMap,
    ) -> Result<LineResolution> {
        // Like gdb, keep one location per innermost block (function, lexical block or
        // inlined copy): later rows of the same line in the same block are cleanup or
        // loop-back code. Only units with several candidates need their DIEs for this.
        let mut seen_blocks = Vec::new();
        let mut keep = vec![true; chosen.len()];
        for (i, c) in chosen.iter().enumerate() {
            let same_unit = chosen.iter().filter(|o| o.unit == c.unit).count();
            if same_unit < 2 {
                continue;
            }
            if let Some(block) = self.innermost_block(c.unit, c.addr)? {
                if seen_blocks.contains(&block) {
                    keep[i] = false;
                } else {
                    seen_blocks.push(block);
                }
            }
        }
        let mut flags = keep.into_iter();
        chosen.retain(|_| flags.next().unwrap_or(true));
        let mut locations = Vec::new();
        for c in chosen {
            let table = self.line_table(c.unit)?;
            let (addr, after_prologue) = match self.post_prologue(c.unit, c.addr)? {
                Some(a) if a > c.addr => (a, true),
                _ => (c.addr, false),
            };
            locations.push(BreakpointLocation {
                addr: FileAddr(addr),
                line_addr: FileAddr(c.addr),
                after_prologue,
                file: map.to_local(table.file_path(u64::from(c.file)).unwrap_or(Path::new(""))),
                line: Line::new(c.line).unwrap_or(line),
                column: std::num::NonZeroU32::new(c.column),
            });
        }
        locations.sort_by_key(|l| l.line_addr);
        locations.dedup_by_key(|l| l.addr);
        Ok(LineResolution {
            requested: line,
            line: Line::new(best).unwrap_or(line),
            locations,
        })
    }

    /// If `addr` is the entry of a function in `unit`, the first address past its
    /// prologue, following gdb: the first `prologue_end` row when the producer marks
    /// one (rustc, clang); otherwise, when the code sets up a frame pointer
    /// (`[endbr64] push %rbp; mov %rsp,%rbp`), the start of the first line-table row
    /// after that; a frameless function (typical of -O2) is not skipped.
    pub(crate) fn post_prologue(&self, unit: usize, addr: u64) -> Result<Option<u64>> {
        if !self.may_be_function_start(addr) {
            return Ok(None);
        }
        let funcs = self.unit_functions(unit)?;
        let Some(func) = funcs
            .funcs
            .iter()
            .find(|f| f.ranges.first().is_some_and(|r| r.0 == addr))
        else {
            return Ok(None);
        };
        let end = func.ranges.first().map_or(addr, |r| r.1);
        let Some(seq) = self.sequence_at(unit, addr)? else {
            return Ok(None);
        };
        // A sequence's rows are in address order: start at `addr` rather than scanning
        // them all (SQLite's amalgamation is one sequence of ~400,000 rows, and a
        // whole-file setBreakpoints asks this for every function of the file).
        let first = seq.rows.partition_point(|r| r.addr < addr);
        let rows = seq.rows[first..].iter().take_while(|r| r.addr < end);
        if let Some(r) = rows.clone().find(|r| r.prologue_end) {
            return Ok(Some(r.addr));
        }
        let Some(after_frame_setup) = self.frame_setup_end(addr) else {
            return Ok(None);
        };
        // Inside a row: move to the next row boundary if it is still inside the
        // function, as gdb does; otherwise stay right after the frame setup.
        if rows.clone().any(|r| r.addr == after_frame_setup) {
            return Ok(Some(after_frame_setup));
        }
        Ok(Some(
            rows.map(|r| r.addr)
                .find(|&a| a > after_frame_setup)
                .unwrap_or(after_frame_setup),
        ))
    }

    /// The address after `[endbr64] push %rbp; mov %rsp,%rbp` at `addr`, if the code
    /// there starts that way.
    fn frame_setup_end(&self, addr: u64) -> Option<u64> {
        let code = self.code_bytes(FileAddr(addr), 12)?;
        let mut at = 0;
        if code.starts_with(&[0xf3, 0x0f, 0x1e, 0xfa]) {
            at = 4;
        }
        if code.get(at) != Some(&0x55) {
            return None;
        }
        at += 1;
        let mov = code.get(at..at + 3)?;
        if mov == [0x48, 0x89, 0xe5] || mov == [0x48, 0x8b, 0xec] {
            Some(addr + at as u64 + 3)
        } else {
            None
        }
    }
}
