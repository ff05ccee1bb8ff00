//! The compilers' diagnostics as [`Found`]s: GCC's `-fdiagnostics-format=json`, the classic
//! `file:line:col: kind: message` text, and `cargo check --message-format=json`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// LSP `DiagnosticSeverity`.
pub(crate) const ERROR: u32 = 1;
pub(crate) const WARNING: u32 = 2;
pub(crate) const INFORMATION: u32 = 3;
pub(crate) const HINT: u32 = 4;

/// One diagnostic before positions are converted: 1-based line, 0-based byte columns.
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    pub file: PathBuf,
    pub line: u32,
    pub start: Option<u32>,
    pub end: Option<u32>,
    pub severity: u32,
    pub message: String,
    pub code: Option<String>,
    /// Notes: (file, 1-based line, 0-based byte column, message).
    pub related: Vec<(PathBuf, u32, u32, String)>,
}

pub(crate) fn severity_of(kind: &str) -> u32 {
    match kind {
        k if k.contains("error") => ERROR,
        "warning" => WARNING,
        "note" | "help" => HINT,
        _ => INFORMATION,
    }
}

fn absolute(base: &Path, file: &str) -> PathBuf {
    symbols::lines::normalize_path(&base.join(file))
}

/// GCC's `-fdiagnostics-format=json`: columns are 1-based bytes, `finish` is inclusive.
pub(crate) fn parse_gcc_json(stderr: &str, base: &Path) -> Vec<Found> {
    let start = stderr.find('[').unwrap_or(0);
    let Ok(Value::Array(list)) = serde_json::from_str::<Value>(stderr[start..].trim()) else {
        tracing::warn!("the compiler's JSON diagnostics could not be read");
        return Vec::new();
    };
    list.iter()
        .filter_map(|d| {
            let loc = d["locations"].get(0)?;
            let caret = &loc["caret"];
            let col = |p: &Value| {
                p["byte-column"]
                    .as_u64()
                    .or_else(|| p["column"].as_u64())
                    .and_then(|c| u32::try_from(c).ok())
            };
            let related = d["children"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| {
                    let caret = &c["locations"].get(0)?["caret"];
                    Some((
                        absolute(base, caret["file"].as_str()?),
                        u32::try_from(caret["line"].as_u64()?).ok()?,
                        col(caret).unwrap_or(1).saturating_sub(1),
                        c["message"].as_str()?.to_owned(),
                    ))
                })
                .collect();
            Some(Found {
                file: absolute(base, caret["file"].as_str()?),
                line: u32::try_from(caret["line"].as_u64()?).ok()?,
                start: col(caret).map(|c| c.saturating_sub(1)),
                end: loc.get("finish").and_then(col),
                severity: severity_of(d["kind"].as_str().unwrap_or("error")),
                message: d["message"].as_str().unwrap_or_default().to_owned(),
                code: d["option"].as_str().map(str::to_owned),
                related,
            })
        })
        .collect()
}

/// The classic `file:line:col: kind: message` lines.
pub(crate) fn parse_gcc_text(stderr: &str, base: &Path) -> Vec<Found> {
    let mut out: Vec<Found> = Vec::new();
    for line in stderr.lines() {
        let mut parts = line.splitn(5, ':');
        let (Some(file), Some(l), Some(c), Some(kind), Some(message)) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            continue;
        };
        let (Ok(l), Ok(c)) = (l.trim().parse::<u32>(), c.trim().parse::<u32>()) else {
            continue;
        };
        let kind = kind.trim();
        if !matches!(kind, "error" | "warning" | "note" | "fatal error") {
            continue;
        }
        let file = absolute(base, file);
        let message = message.trim().to_owned();
        if kind == "note" {
            if let Some(last) = out.last_mut() {
                last.related.push((file, l, c.saturating_sub(1), message));
                continue;
            }
        }
        out.push(Found {
            file,
            line: l,
            start: Some(c.saturating_sub(1)),
            end: None,
            severity: severity_of(kind),
            message,
            code: None,
            related: Vec::new(),
        });
    }
    out
}

/// `cargo check --message-format=json`: one JSON object per line; rustc's columns are
/// 1-based characters, turned into bytes with the file's text.
pub(crate) fn parse_cargo(stdout: &str, base: &Path) -> Vec<Found> {
    let mut out = Vec::new();
    let mut texts: HashMap<PathBuf, Option<String>> = HashMap::new();
    let mut byte_col = |file: &Path, line: u64, col: u64| -> Option<u32> {
        let text = texts
            .entry(file.to_path_buf())
            .or_insert_with(|| std::fs::read_to_string(file).ok())
            .as_deref()?;
        let l = text
            .lines()
            .nth(usize::try_from(line).ok()?.checked_sub(1)?)?;
        let chars = usize::try_from(col.saturating_sub(1)).ok()?;
        let bytes: usize = l.chars().take(chars).map(char::len_utf8).sum();
        u32::try_from(bytes).ok()
    };
    for line in stdout.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if v["reason"] != "compiler-message" {
            continue;
        }
        let m = &v["message"];
        let Some(span) = m["spans"]
            .as_array()
            .and_then(|s| s.iter().find(|s| s["is_primary"] == true))
        else {
            continue;
        };
        let Some(file) = span["file_name"]
            .as_str()
            .map(|f| resolve_cargo_path(base, f))
        else {
            continue;
        };
        let (Some(ls), Some(le)) = (span["line_start"].as_u64(), span["line_end"].as_u64()) else {
            continue;
        };
        let start = byte_col(&file, ls, span["column_start"].as_u64().unwrap_or(1));
        let end = if le == ls {
            byte_col(&file, le, span["column_end"].as_u64().unwrap_or(1))
        } else {
            None
        };
        let related = m["children"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| {
                let msg = c["message"].as_str()?;
                let s = c["spans"].as_array()?.first()?;
                let f = resolve_cargo_path(base, s["file_name"].as_str()?);
                let l = s["line_start"].as_u64()?;
                let col = byte_col(&f, l, s["column_start"].as_u64().unwrap_or(1)).unwrap_or(0);
                Some((f, u32::try_from(l).ok()?, col, msg.to_owned()))
            })
            .collect();
        out.push(Found {
            file,
            line: u32::try_from(ls).unwrap_or(1),
            start,
            end,
            severity: severity_of(m["level"].as_str().unwrap_or("error")),
            message: m["message"].as_str().unwrap_or_default().to_owned(),
            code: m["code"]["code"].as_str().map(str::to_owned),
            related,
        });
    }
    out
}

/// Cargo reports paths relative to the workspace root, which may be above the package.
fn resolve_cargo_path(base: &Path, file: &str) -> PathBuf {
    base.ancestors()
        .map(|d| d.join(file))
        .find(|p| p.is_file())
        .map_or_else(
            || absolute(base, file),
            |p| symbols::lines::normalize_path(&p),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classic_text_is_parsed() {
        let text = "bad.c: In function 'main':\nbad.c:3:10: error: 'y' undeclared\nbad.c:3:10: note: reported once\n";
        let found = parse_gcc_text(text, Path::new("/w"));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].file, Path::new("/w/bad.c"));
        assert_eq!((found[0].line, found[0].start), (3, Some(9)));
        assert_eq!(found[0].severity, ERROR);
        assert_eq!(found[0].related.len(), 1);
    }
}
