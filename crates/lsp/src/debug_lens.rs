//! What only the paused program can say about a document, as code lenses (served in both
//! modes): how often each breakpoint line of the session was hit, and after a step out the
//! value the function returned, on the line of the call it returned to.
//!
//! Both come from the session that answers first ([`Live::paused`]: the one the editor
//! focused, else the newest stop), are shown only while it is paused and vanish when it runs
//! again; the client is asked to refresh its lenses at each stop, resume and end. A lens
//! carries an empty command: it is a label, nothing to click.

use std::path::Path;

use serde_json::{json, Value};

use crate::features::{pos, range_json, Context};
use crate::live::{occurrence, same_source, Live};

/// A value longer than this is cut (with `…`) in a lens title.
const TITLE_MAX: usize = 120;

/// One lens for the client: a label above the 0-based `line`, over `span` of it when the
/// words it speaks of are found there.
fn label(
    cx: &mut Context,
    path: &Path,
    line: u32,
    span: Option<(usize, usize)>,
    title: &str,
) -> Option<Value> {
    let text = cx.sources.text(path)?;
    let (start, end) = match span {
        Some(s) => s,
        None => {
            let (s, _) = crate::features::line_span(&text, line)?;
            (s, s)
        }
    };
    Some(json!({
        "range": range_json(pos(&text, start, cx.encoding), pos(&text, end, cx.encoding)),
        "command": { "title": title, "command": "" },
    }))
}

fn times(n: u64) -> String {
    match n {
        0 => "not hit yet".to_owned(),
        1 => "hit once".to_owned(),
        n => format!("hit {n} times"),
    }
}

/// Cuts a rendered value to one bounded line.
fn one_line(rendered: &str) -> String {
    let mut text: String = rendered.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.chars().count() > TITLE_MAX {
        text = text.chars().take(TITLE_MAX - 1).collect();
        text.push('…');
    }
    text
}

/// The lenses of the paused session in `path`: `● breakpoint hit N times` on each line
/// breakpoint's line, and `↩ f returned v` on the line a step out returned to.
pub fn session_lenses(cx: &mut Context, live: &Live, path: &Path) -> Vec<(u32, Value)> {
    let Some(paused) = live.paused().into_iter().next() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for hits in paused.session.line_breakpoint_hits() {
        if !same_source(&hits.file, path) {
            continue;
        }
        let line = cx.sources.to_current(path, hits.line.zero_based());
        let title = format!("● breakpoint {}", times(hits.hits));
        out.extend(label(cx, path, line, None, &title).map(|l| (line, l)));
    }
    if let Some(r) = returned(cx, &paused.session, path) {
        let title = format!("↩ {}", r.text);
        out.extend(label(cx, path, r.line, r.span, &title).map(|l| (r.line, l)));
    }
    out
}

/// Where a step out returned to, and what the function returned.
struct Returned {
    /// The 0-based line (current numbering) of the call.
    line: u32,
    /// The byte span of the called function's name on it, when found.
    span: Option<(usize, usize)>,
    /// `f returned v`.
    text: String,
}

/// After a step out of `session` that stopped in `path`: where it returned to and what.
fn returned(cx: &mut Context, session: &procman::Paused, path: &Path) -> Option<Returned> {
    let value = session.stop()?.return_value?.value?;
    let frame = session.stop_frames().ok()?.into_iter().next()?;
    let (file, line) = (frame.file.as_deref()?, frame.line?);
    if !same_source(file, path) {
        return None;
    }
    let line = cx.sources.to_current(path, line.zero_based());
    let text = cx.sources.text(path)?;
    // `ns::f` and `crate::f` are called as `f` (or with a path ending in it).
    let short = value.name.rsplit("::").next().unwrap_or(&value.name);
    let span = occurrence(&text, line, short);
    let text = format!("{} returned {}", value.name, one_line(&value.rendered));
    Some(Returned { line, span, text })
}

/// The inline value for the call a step out returned to: `f returned v` over the called
/// function's name, when the stop is in `path` within the requested lines.
pub fn returned_inline(
    cx: &mut Context,
    live: &Live,
    path: &Path,
    lines: (u32, u32),
) -> Option<Value> {
    let paused = live.paused().into_iter().next()?;
    let r = returned(cx, &paused.session, path)?;
    let (start, end) = r.span?;
    if !(lines.0..=lines.1).contains(&r.line) {
        return None;
    }
    let text = cx.sources.text(path)?;
    Some(json!({
        "range": range_json(pos(&text, start, cx.encoding), pos(&text, end, cx.encoding)),
        "text": r.text,
    }))
}
