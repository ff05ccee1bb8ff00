//! Live values: what a debuggee paused by the debug adapter of this process shows in the
//! editor — `textDocument/inlineValue`, the live line of a hover, and the hints for
//! breakpoints the adapter moved.
//!
//! The debug adapter and the language server share one [`ProcessManager`], which owns
//! every debug session and keeps its state: the paused debuggees are those whose state is
//! stopped, whichever view stopped or resumed them, and the core files a view opened (a
//! core shows its values for as long as it is open).
//! Each request here asks the paused session itself (a stack trace, the frame's locals and
//! arguments, an evaluation: one round trip each to the tracer thread), so a value shown is
//! the value the debugger reads at that moment, rendered by the engine exactly as the DAP
//! `variables` response renders it. A debuggee that runs again is no longer listed, so
//! requests made after a resume answer with nothing: stale values vanish.
//!
//! Which occurrences get a value is decided from DWARF, never guessed from the text alone:
//! a variable is shown from the line that declares it (parameters from the function's first
//! line) to the line where execution stopped, and only when the variable visible at the
//! stop is the one declared there — a wrong value is worse than none.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use engine::ScopeKind;
use procman::{DebugId, Paused, PausedDebuggee, ProcessManager};
use serde_json::{json, Value};
use symbols::{Line, SourceMap, VariableKind};

use crate::features::{
    decl_end, is_ident_byte, line_span, member_access, pos, range_json, same_file, variable_at,
    word_at, Context, Lang, SourceText, Target,
};
use crate::text::PositionEncoding;
use crate::workspace::Served;

/// A value longer than this is cut (with `…`) in inline values, which sit at line ends.
const INLINE_MAX: usize = 160;

/// The command that focuses the session whose values the editor shows: its one argument is
/// `{"pid": N}` (the debuggee's process id, which DAP's `process` event gives the editor),
/// or `{"pid": null}` to follow the newest stop again.
pub const FOCUS_SESSION: &str = "tandem.focusSession";

/// The live side of the language server: the process manager its debug adapter uses.
#[derive(Debug, Clone)]
pub struct Live {
    manager: Arc<ProcessManager>,
    focus: Arc<Mutex<Focus>>,
}

/// Which paused session answers first when several are paused in the same source: the one
/// the editor focused, else the one whose stop is newest.
#[derive(Debug, Default)]
struct Focus {
    /// The debuggee the editor focused with [`FOCUS_SESSION`].
    pinned: Option<i32>,
    /// Sessions by their latest stop, newest first.
    newest: Vec<DebugId>,
}

/// A frame of a paused debuggee, with what the requests need from it.
struct PausedFrame {
    session: Paused,
    frame: engine::Frame,
    tid: i32,
    /// The frame's 1-based line in the binary's numbering.
    line: Line,
}

impl Live {
    pub fn new(manager: Arc<ProcessManager>) -> Live {
        Live {
            manager,
            focus: Arc::default(),
        }
    }

    fn focus(&self) -> std::sync::MutexGuard<'_, Focus> {
        self.focus.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A session stopped: it becomes the newest.
    pub fn stopped(&self, session: DebugId) {
        let mut focus = self.focus();
        focus.newest.retain(|s| *s != session);
        focus.newest.insert(0, session);
    }

    /// A session ended: it is forgotten.
    pub fn ended(&self, session: DebugId) {
        self.focus().newest.retain(|s| *s != session);
    }

    /// Focuses the debuggee `pid` (`None`: follow the newest stop).
    pub fn set_focus(&self, pid: Option<i32>) {
        self.focus().pinned = pid;
    }

    /// The focused debuggee, if the editor chose one.
    pub fn focused(&self) -> Option<i32> {
        self.focus().pinned
    }

    /// The paused debuggees in the order they answer: the focused one, then by newest stop,
    /// then the rest (core files, sessions stopped before this server saw them).
    pub(crate) fn paused(&self) -> Vec<PausedDebuggee> {
        let mut paused = self.manager.paused_debuggees();
        let focus = self.focus();
        paused.sort_by_key(|p| {
            let pinned = focus.pinned != Some(p.session.pid().0);
            let rank = focus
                .newest
                .iter()
                .position(|s| *s == p.session.id())
                .unwrap_or(usize::MAX);
            (pinned, rank)
        });
        paused
    }

    /// The innermost frame of a paused thread whose source is `path`; with `prefer`
    /// (a 1-based line in the binary's numbering, from the client's stopped location),
    /// the innermost such frame on that line when there is one.
    fn frame_in(&self, path: &Path, prefer: Option<u32>) -> Option<PausedFrame> {
        let mut fallback = None;
        for paused in self.paused() {
            let Ok(stack) = paused.session.stop_frames() else {
                // The program ran again since the list was taken.
                continue;
            };
            for frame in stack {
                let (Some(file), Some(line)) = (frame.file.as_deref(), frame.line) else {
                    continue;
                };
                if !same_source(file, path) {
                    continue;
                }
                let found = PausedFrame {
                    session: paused.session.clone(),
                    tid: paused.tid.0,
                    line,
                    frame,
                };
                match prefer {
                    Some(want) if want != line.get() => {
                        fallback.get_or_insert(found);
                    }
                    _ => return Some(found),
                }
            }
        }
        fallback
    }

    /// The innermost frame of a paused thread whose source `serves` accepts (for globals:
    /// a frame of the program the document belongs to).
    fn frame_where(&self, serves: impl Fn(&Path) -> bool) -> Option<(Paused, engine::Frame)> {
        self.paused().into_iter().find_map(|p| {
            let frame = p
                .session
                .stop_frames()
                .ok()?
                .into_iter()
                .find(|f| f.file.as_deref().is_some_and(&serves))?;
            Some((p.session, frame))
        })
    }
}

pub(crate) fn same_source(a: &Path, b: &Path) -> bool {
    if same_file(a, b) {
        return true;
    }
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// The 0-based line, in the document's current numbering, where the function holding the
/// binary's 1-based `line` of `path` is declared.
fn function_start(cx: &mut Context, path: &Path, line: Line) -> Option<u32> {
    let decl = cx.served.iter().find_map(|served| {
        let res = served
            .binary
            .resolve_line(path, line, &SourceMap::new())
            .ok()??;
        let loc = res.locations.first()?;
        let func = served.binary.function_at(loc.addr).ok()??;
        func.function.decl_line
    })?;
    Some(cx.sources.to_current(path, decl.zero_based()))
}

/// Renders a value for a line end: one line, bounded.
fn inline_text(name: &str, rendered: &str) -> String {
    let one_line: String = rendered.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut text = format!("{name} = {one_line}");
    if text.chars().count() > INLINE_MAX {
        text = text.chars().take(INLINE_MAX - 1).collect();
        text.push('…');
    }
    text
}

/// A variable of the stopped frame and the first line (0-based, current numbering) where
/// its name means it.
struct Shown {
    name: String,
    rendered: String,
    from_line: u32,
}

/// `textDocument/inlineValue`: `name = value` for the variables of the stopped frame in
/// this document, at their occurrences from their declaration to the stopped line, within
/// the requested lines. Empty when no debuggee of this process is paused in the document.
pub fn inline_values(
    cx: &mut Context,
    live: &Live,
    path: &Path,
    lines: (u32, u32),
    stopped: Option<u32>,
) -> Value {
    let prefer = stopped.map(|l| cx.sources.to_built(path, l) + 1);
    let Some(paused) = live.frame_in(path, prefer) else {
        return json!([]);
    };
    let Some(text) = cx.sources.text(path) else {
        return json!([]);
    };
    let stop_line = cx.sources.to_current(path, paused.line.zero_based());
    let func_start = function_start(cx, path, paused.line).unwrap_or(lines.0.min(stop_line));
    let mut values = Vec::new();
    for kind in [ScopeKind::Arguments, ScopeKind::Locals] {
        match paused.session.inspect().variables(paused.frame.id, kind) {
            Ok(v) => values.extend(v.into_iter().map(|v| (kind, v))),
            // The program ran again meanwhile: nothing is current.
            Err(e) => {
                tracing::debug!("inline values: {e}");
                return json!([]);
            }
        }
    }
    // Names the engine qualifies ("x (shadowed)", "f returned") are not what the source
    // writes; an unqualified name with a shadowed twin is shown only from its own
    // declaration, which DWARF must then give.
    let shadowed: Vec<String> = values
        .iter()
        .filter_map(|(_, v)| v.name.strip_suffix(" (shadowed)").map(str::to_owned))
        .collect();
    let mut shown = Vec::new();
    for (kind, v) in values {
        if v.name.is_empty() || !v.name.bytes().all(is_ident_byte) {
            continue;
        }
        let dwarf = cx
            .served
            .iter()
            .find_map(|s| variable_at(s, path, paused.line.get(), &v.name));
        let from_line = match dwarf {
            Some(d) if d.kind == VariableKind::Parameter => func_start,
            Some(d) => match d.decl_line {
                Some(l) => cx.sources.to_current(path, l.zero_based()),
                None if !shadowed.contains(&v.name) => func_start,
                None => continue,
            },
            None if kind == ScopeKind::Arguments && !shadowed.contains(&v.name) => func_start,
            None if !shadowed.contains(&v.name) => func_start,
            None => continue,
        };
        shown.push(Shown {
            name: v.name,
            rendered: v.rendered,
            from_line,
        });
    }
    let first = lines.0.max(func_start);
    let last = lines.1.min(stop_line);
    let mut out = Vec::new();
    for line in first..=last {
        for s in shown.iter().filter(|s| s.from_line <= line) {
            if let Some((start, end)) = occurrence(&text, line, &s.name) {
                out.push((
                    start,
                    json!({
                        "range": range_json(pos(&text, start, cx.encoding), pos(&text, end, cx.encoding)),
                        "text": inline_text(&s.name, &s.rendered),
                    }),
                ));
            }
        }
    }
    out.sort_by_key(|(start, _)| *start);
    Value::Array(out.into_iter().map(|(_, v)| v).collect())
}

/// The first occurrence of `name` on `line` that names a variable: a whole word, not a
/// member (`p.name`, `p->name`) and not after a `//` comment.
pub(crate) fn occurrence(text: &SourceText, line: u32, name: &str) -> Option<(usize, usize)> {
    let (line_start, line_end) = line_span(text, line)?;
    let hay = &text[line_start..line_end];
    let code = hay.find("//").map_or(hay, |c| &hay[..c]);
    let bytes = text.as_bytes();
    let mut at = 0;
    while let Some(i) = code.get(at..)?.find(name) {
        let start = line_start + at + i;
        let end = start + name.len();
        let left = start == 0 || !is_ident_byte(bytes[start - 1]);
        let right = end >= bytes.len() || !is_ident_byte(bytes[end]);
        if left && right && !name.is_empty() && member_access(text, start).is_none() {
            return Some((start, end));
        }
        at += i + name.len().max(1);
    }
    None
}

impl crate::features::LiveHover for Live {
    fn hover_value(
        &self,
        cx: &mut Context,
        path: &Path,
        text: &SourceText,
        span: (usize, usize),
        target: &Target,
        served: &Served,
    ) -> Option<String> {
        hover_value(cx, self, path, text, span, target, served)
    }
}

/// The live value for a hover on a variable or a member chain (`o.in.v`, `p->x`), when a
/// debuggee of this process is paused where that variable is the one in scope.
pub(crate) fn hover_value(
    cx: &mut Context,
    live: &Live,
    path: &Path,
    text: &SourceText,
    span: (usize, usize),
    target: &Target,
    served: &Served,
) -> Option<String> {
    // The expression: the member chain ending at the identifier.
    let mut root = span.0;
    let mut depth = 0;
    while let Some(base_end) = member_access(text, root) {
        let (s, _) = word_at(text, base_end)?;
        root = s;
        depth += 1;
        if depth > 16 {
            return None;
        }
    }
    let expression: String = text[root..span.1]
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let (root_start, root_end) = word_at(text, root)?;
    let root_name = &text[root_start..root_end];
    let hover_line = cx
        .sources
        .to_built(path, pos(text, root_start, PositionEncoding::Utf8).line)
        + 1;
    let root_var = match target {
        Target::Variable(v) if depth == 0 => Some(v.clone()),
        Target::Member { .. } => cx
            .served
            .iter()
            .find_map(|s| variable_at(s, path, hover_line, root_name)),
        _ => None,
    }?;
    let (session, frame, where_) = if root_var.kind == VariableKind::Global {
        // A frame in this document first (its unit's statics), else one of the same program.
        let (session, frame) = match live.frame_in(path, None) {
            Some(p) => (p.session, p.frame),
            None => live.frame_where(|f| served.serves_source(f))?,
        };
        (session, frame, None)
    } else {
        let paused = live.frame_in(path, None)?;
        // The variable at the hover must be the one visible where the frame stopped.
        let at_stop = cx
            .served
            .iter()
            .find_map(|s| variable_at(s, path, paused.line.get(), root_name))?;
        if at_stop.decl_line != root_var.decl_line
            || at_stop.kind != root_var.kind
            || at_stop.depth != root_var.depth
        {
            return None;
        }
        let function = paused.frame.function.clone();
        let line = paused.line;
        let end = cx.sources.text(path).and_then(|t| {
            let start = function_start(cx, path, line)?;
            decl_end(&t, start).map(|e| pos(&t, e, PositionEncoding::Utf8).line)
        });
        if let Some(end) = end {
            let here = pos(text, root_start, PositionEncoding::Utf8).line;
            if here > end {
                return None;
            }
        }
        (paused.session, paused.frame, Some((function, paused.tid)))
    };
    let value = session.inspect().evaluate(frame.id, &expression).ok()?;
    if value.error {
        return None;
    }
    let fence = Lang::of(path).fence();
    let place = match where_ {
        Some((Some(function), tid)) => format!(" (stopped in `{function}`, thread {tid})"),
        Some((None, tid)) => format!(" (thread {tid})"),
        None => String::new(),
    };
    Some(format!(
        "\n\n---\nlive value{place}:\n```{fence}\n{expression} = {}\n```",
        value.rendered
    ))
}

/// `tandem/breakpointLocations`: the 0-based lines (current numbering) of `path` that
/// have code, in `range` when given, from the DWARF line tables of the served binaries.
pub fn breakpoint_lines(cx: &mut Context, path: &Path, range: Option<(u32, u32)>) -> Value {
    let mut lines: Vec<u32> = cx
        .served
        .iter()
        .filter_map(|s| s.binary.lines_with_code(path, &SourceMap::new()).ok())
        .flatten()
        .map(|l| cx.sources.to_current(path, l.zero_based()))
        .filter(|l| range.is_none_or(|(a, b)| (a..=b).contains(l)))
        .collect();
    lines.sort_unstable();
    lines.dedup();
    json!({ "lines": lines })
}

/// Hint diagnostics for breakpoints the debug adapter moved or could not bind:
/// (0-based line, message) per adjusted line.
pub fn breakpoint_hints(lines: &[(u32, Option<u32>)]) -> Vec<(u32, String)> {
    let mut seen = HashMap::new();
    for &(requested, bound) in lines {
        let Some(line0) = requested.checked_sub(1) else {
            continue;
        };
        let message = match bound {
            Some(b) if b == requested => continue,
            Some(b) => format!("breakpoint moved to line {b}: no code on line {requested}"),
            None => format!("breakpoint not set: no code on line {requested} or after it"),
        };
        seen.entry(line0).or_insert(message);
    }
    let mut out: Vec<(u32, String)> = seen.into_iter().collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_name_the_line_a_breakpoint_moved_to() {
        let hints = breakpoint_hints(&[(40, Some(42)), (42, Some(42)), (90, None), (0, None)]);
        assert_eq!(
            hints,
            vec![
                (
                    39,
                    "breakpoint moved to line 42: no code on line 40".to_owned()
                ),
                (
                    89,
                    "breakpoint not set: no code on line 90 or after it".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn inline_text_is_one_bounded_line() {
        assert_eq!(inline_text("x", "5"), "x = 5");
        assert_eq!(
            inline_text("o", "{id = 7,\n  in = {v = 3}}"),
            "o = {id = 7, in = {v = 3}}"
        );
        let long = "a".repeat(400);
        let t = inline_text("s", &long);
        assert_eq!(t.chars().count(), INLINE_MAX);
        assert!(t.ends_with('…'));
    }
}
