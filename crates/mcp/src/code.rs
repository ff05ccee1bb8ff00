//! The `code_*` tools: the language server's index (workspace symbols, definition, hover
//! from DWARF) over a workspace root, and compiler diagnostics of a file or a draft.
//!
//! The index is the `lsp` crate's library API, the same functions `tandem lsp` answers
//! with; positions cross here: agents write 1-based lines and columns (columns in bytes,
//! as compilers print them), the index works in 0-based lines and UTF-8 offsets.
//! [`diagnose`] is the language server's check of unsaved text, called as a library.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

/// How long a request waits for the first indexing of the workspace.
const INDEX_PATIENCE: Duration = Duration::from_secs(60);
/// At most this many symbols per answer (an agent pays per token).
const MAX_SYMBOLS: usize = 50;
/// At most this many diagnostics per answer.
const MAX_DIAGNOSTICS: usize = 50;

/// The workspace an MCP server answers code questions about.
pub struct Code {
    root: PathBuf,
    workspace: Arc<lsp::workspace::Workspace>,
}

impl std::fmt::Debug for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Code")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl Code {
    /// Starts indexing the binaries under `root` in the background.
    pub fn new(root: PathBuf) -> Code {
        let workspace = lsp::workspace::Workspace::start(
            lsp::workspace::WorkspaceConfig {
                roots: vec![root.clone()],
                ..Default::default()
            },
            None,
        );
        Code { root, workspace }
    }

    /// The workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn context(&self) -> lsp::features::Context {
        let served = self.workspace.snapshot(INDEX_PATIENCE, &|| false);
        lsp::features::Context {
            served,
            sources: lsp::features::Sources::new(HashMap::new(), self.workspace.texts()),
            encoding: lsp::text::PositionEncoding::Utf8,
            roots: vec![self.root.clone()],
            live: None,
        }
    }

    /// A relative path is relative to the root.
    pub fn path(&self, file: &str) -> PathBuf {
        let p = PathBuf::from(file);
        if p.is_absolute() {
            p
        } else {
            self.root.join(p)
        }
    }

    /// `code_symbols`: functions, variables and types whose names match `query`.
    pub fn symbols(&self, query: &str) -> Result<Value, String> {
        let mut cx = self.context();
        if cx.served.is_empty() {
            return Err(self.no_binaries());
        }
        let found =
            lsp::features::workspace_symbol(&mut cx, query, &lsp::cancel::CancelToken::default())
                .map_err(|e| e.message)?;
        let all = found.as_array().cloned().unwrap_or_default();
        let symbols: Vec<Value> = all
            .iter()
            .take(MAX_SYMBOLS)
            .map(|s| {
                let mut out = json!({
                    "name": s["name"],
                    "kind": symbol_kind(s["kind"].as_u64().unwrap_or(0)),
                });
                if let Some((file, line, column)) = location(&s["location"]) {
                    out["file"] = json!(file);
                    out["line"] = json!(line);
                    out["column"] = json!(column);
                }
                if let Some(c) = s["containerName"].as_str() {
                    out["container"] = json!(c);
                }
                out
            })
            .collect();
        Ok(json!({
            "symbols": symbols,
            "total": all.len(),
            "truncated": all.len() > MAX_SYMBOLS,
        }))
    }

    /// `code_definition`: where the identifier at 1-based `line`:`column` is defined.
    pub fn definition(&self, file: &str, line: u32, column: u32) -> Result<Value, String> {
        let (path, offset, mut cx) = self.position(file, line, column)?;
        let answer = lsp::features::definition(&mut cx, &path, offset);
        let first = match &answer {
            Value::Array(list) => list.first().cloned().unwrap_or(Value::Null),
            other => other.clone(),
        };
        match location(&first) {
            Some((file, line, column)) => {
                Ok(json!({"found": true, "file": file, "line": line, "column": column}))
            }
            None => Ok(json!({"found": false})),
        }
    }

    /// `code_hover`: the declaration, type and layout of the identifier at the position.
    pub fn hover(&self, file: &str, line: u32, column: u32) -> Result<Value, String> {
        let (path, offset, mut cx) = self.position(file, line, column)?;
        let answer = lsp::features::hover(&mut cx, &path, offset);
        match answer["contents"]["value"].as_str() {
            Some(text) => Ok(json!({"found": true, "text": text})),
            None => Ok(json!({"found": false})),
        }
    }

    fn position(
        &self,
        file: &str,
        line: u32,
        column: u32,
    ) -> Result<(PathBuf, usize, lsp::features::Context), String> {
        if line == 0 || column == 0 {
            return Err("'line' and 'column' count from 1".into());
        }
        let path = self.path(file);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let offset = byte_offset(&text, line, column).ok_or_else(|| {
            format!(
                "{}:{line}:{column} is past the end of the file",
                path.display()
            )
        })?;
        let cx = self.context();
        if cx.served.is_empty() {
            return Err(self.no_binaries());
        }
        Ok((path, offset, cx))
    }

    fn no_binaries(&self) -> String {
        format!(
            "no binary with debug information built from sources under {} was found: build with -g first",
            self.root.display()
        )
    }
}

/// The byte offset of 1-based `line`:`column` (a column past the end of its line is its end).
fn byte_offset(text: &str, line: u32, column: u32) -> Option<usize> {
    let mut start = 0;
    for _ in 1..line {
        start += text[start..].find('\n')? + 1;
    }
    let end = text[start..].find('\n').map_or(text.len(), |n| start + n);
    let mut offset = (start + column as usize - 1).min(end);
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    Some(offset)
}

/// (file, 1-based line, 1-based column) of an LSP location.
fn location(loc: &Value) -> Option<(String, u64, u64)> {
    let path = lsp::uri::to_path(loc["uri"].as_str()?)?;
    let start = &loc["range"]["start"];
    Some((
        path.display().to_string(),
        start["line"].as_u64()? + 1,
        start["character"].as_u64()? + 1,
    ))
}

fn symbol_kind(kind: u64) -> &'static str {
    match kind {
        2 => "module",
        5 => "class",
        6 => "method",
        8 => "field",
        10 => "enum",
        12 => "function",
        13 => "variable",
        22 => "enum member",
        23 => "struct",
        26 => "type parameter",
        _ => "symbol",
    }
}

/// `code_diagnostics`: the compiler's errors and warnings for `file`, or for `text` as if
/// it were `file`'s contents (a draft the agent has not written to disk).
///
/// The language server's own check of unsaved text ([`lsp::diagnostics::diagnose_text`]):
/// the compiler and flags of the file's compile_commands.json entry (else `cc`/`c++`) read
/// the text from stdin, so an agent's draft gets exactly what the editor shows on a change.
/// Rust files are checked by `cargo check` at save time in the language server; a draft
/// of one cannot be checked alone.
pub fn diagnose(path: &Path, text: Option<&str>) -> Result<Value, String> {
    if path.extension().is_some_and(|e| e == "rs") {
        return Err(
            "Rust files are checked with cargo check when they are saved (tandem lsp); \
             drafts of Rust files cannot be checked here"
                .into(),
        );
    }
    let owned;
    let text = match text {
        Some(t) => t,
        None => {
            owned = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            &owned
        }
    };
    let found = lsp::diagnostics::diagnose_text(path, text).map_err(|e| e.to_string())?;
    let shown = path.display().to_string();
    let (mut errors, mut warnings) = (0, 0);
    let mut diagnostics = Vec::new();
    for d in &found {
        match d.severity {
            lsp::diagnostics::Severity::Error => errors += 1,
            lsp::diagnostics::Severity::Warning => warnings += 1,
            _ => {}
        }
        diagnostics.push(json!({
            "severity": d.severity.as_str(),
            "message": d.message,
            "file": shown,
            "line": d.line,
            "column": d.column,
        }));
    }
    let total = diagnostics.len();
    diagnostics.truncate(MAX_DIAGNOSTICS);
    Ok(json!({
        "file": shown,
        "diagnostics": diagnostics,
        "errors": errors,
        "warnings": warnings,
        "truncated": total > MAX_DIAGNOSTICS,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_count_bytes_from_one() {
        let text = "ab\ncdé\n";
        assert_eq!(byte_offset(text, 1, 1), Some(0));
        assert_eq!(byte_offset(text, 2, 2), Some(4));
        assert_eq!(byte_offset(text, 2, 99), Some(7));
        assert_eq!(byte_offset(text, 5, 1), None);
    }
}
