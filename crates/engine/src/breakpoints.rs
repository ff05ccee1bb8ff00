//! User breakpoints: what was asked (line, function, address), where it resolved, and
//! the compiled condition, hit condition and log message evaluated on every hit.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use symbols::{Line, RuntimeAddr, Scope};

use crate::error::{Error, Result};
use crate::expr::Expr;
use crate::ids::BreakpointId;

/// A source-line breakpoint as a front-end asks for it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceBreakpoint {
    /// The requested line.
    pub line: u32,
    /// Stop only when this expression is true.
    pub condition: Option<String>,
    /// Stop only when the hit count satisfies this (`N`, `== N`, `>= N`, `> N`, `% N`).
    pub hit_condition: Option<String>,
    /// Print this message (with `{expr}` interpolated) instead of stopping.
    pub log_message: Option<String>,
}

/// A function breakpoint: `main`, `ns::Class::method`, `krate::module::func`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FunctionBreakpoint {
    /// The function's name.
    pub name: String,
    /// Stop only when this expression is true.
    pub condition: Option<String>,
    /// Stop only when the hit count satisfies this.
    pub hit_condition: Option<String>,
}

/// An instruction breakpoint: a runtime address, with an optional condition and hit
/// condition evaluated in the frame at the address (the DAP `setInstructionBreakpoints`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InstructionBreakpoint {
    /// The runtime address of the instruction.
    pub address: u64,
    /// Stop only when this expression is true.
    pub condition: Option<String>,
    /// Stop only when the hit count satisfies this.
    pub hit_condition: Option<String>,
}

impl InstructionBreakpoint {
    /// A breakpoint that always stops at `address`.
    pub fn at(address: u64) -> InstructionBreakpoint {
        InstructionBreakpoint {
            address,
            ..Default::default()
        }
    }
}

/// What became of a requested breakpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BreakpointStatus {
    /// The id, stable while the same line or function stays set.
    pub id: BreakpointId,
    /// Whether it has at least one location.
    pub verified: bool,
    /// Why it is not verified, or a problem with its condition.
    pub message: Option<String>,
    /// The file of its first location.
    pub file: Option<PathBuf>,
    /// The line it was bound to (may be after the requested line).
    pub line: Option<Line>,
    /// Whether it moved to a later line because the requested one has no code.
    pub moved: bool,
    /// Every runtime address it was planted at.
    pub addresses: Vec<u64>,
}

/// How often a line breakpoint was hit in a session, for views that show counts beside
/// the source (the language server's hit-count lenses).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineHits {
    /// The breakpoint.
    pub id: BreakpointId,
    /// The source file it was set in, as the session names it.
    pub file: PathBuf,
    /// The line it was bound to (the requested line when no location has a line).
    pub line: Line,
    /// Hits counted so far (a disabled breakpoint counts none).
    pub hits: u64,
}

/// When a hit count lets a breakpoint stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HitCondition {
    /// `N` or `>= N`: from the N-th hit on (gdb's ignore count N-1).
    AtLeast(u64),
    /// `== N`: only the N-th hit.
    Exactly(u64),
    /// `> N`: after the N-th hit.
    After(u64),
    /// `% N`: every N-th hit.
    Every(u64),
}

impl HitCondition {
    /// Parses `N`, `== N`, `>= N`, `> N`, `% N`.
    pub fn parse(text: &str) -> Result<HitCondition> {
        let t = text.trim();
        let (op, rest) = ["==", ">=", ">", "%", "="]
            .iter()
            .find_map(|op| t.strip_prefix(op).map(|r| (*op, r)))
            .unwrap_or(("", t));
        let n: u64 = rest
            .trim()
            .parse()
            .map_err(|_| Error::HitCondition(text.to_string()))?;
        Ok(match op {
            "==" | "=" => HitCondition::Exactly(n),
            ">" => HitCondition::After(n),
            "%" if n == 0 => return Err(Error::HitCondition(text.to_string())),
            "%" => HitCondition::Every(n),
            _ => HitCondition::AtLeast(n),
        })
    }

    /// Whether the `hits`-th hit (1-based) stops.
    pub fn allows(self, hits: u64) -> bool {
        match self {
            HitCondition::AtLeast(n) => hits >= n,
            HitCondition::Exactly(n) => hits == n,
            HitCondition::After(n) => hits > n,
            HitCondition::Every(n) => n != 0 && hits % n == 0,
        }
    }
}

/// One piece of a log message.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum LogPart {
    Text(String),
    Expr(Expr, String),
}

/// Splits `x = {x}, {{literal}}` into text and expressions.
pub(crate) fn parse_log(message: &str, is_type: &dyn Fn(&str) -> bool) -> Result<Vec<LogPart>> {
    let mut parts = Vec::new();
    let mut text = String::new();
    let mut chars = message.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                text.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                text.push('}');
            }
            '{' => {
                let mut src = String::new();
                let mut closed = false;
                for d in chars.by_ref() {
                    if d == '}' {
                        closed = true;
                        break;
                    }
                    src.push(d);
                }
                if !closed {
                    return Err(Error::Syntax("unclosed '{' in log message".into()));
                }
                if !text.is_empty() {
                    parts.push(LogPart::Text(std::mem::take(&mut text)));
                }
                parts.push(LogPart::Expr(crate::expr::parse(&src, is_type)?, src));
            }
            c => text.push(c),
        }
    }
    if !text.is_empty() {
        parts.push(LogPart::Text(text));
    }
    Ok(parts)
}

/// What was asked for, to keep ids stable when it is asked again.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum BpKey {
    Line(PathBuf, u32),
    Function(String),
    Address(u64),
}

impl BpKey {
    /// The name of a function breakpoint.
    pub(crate) fn function(&self) -> Option<&str> {
        match self {
            BpKey::Function(name) => Some(name),
            _ => None,
        }
    }
}

/// A user breakpoint as the tracer thread sees it.
#[derive(Debug)]
pub(crate) struct Bp {
    pub id: BreakpointId,
    pub key: BpKey,
    pub addrs: Vec<RuntimeAddr>,
    pub condition: Option<Expr>,
    pub hit_condition: Option<HitCondition>,
    pub log: Option<Vec<LogPart>>,
    pub hits: u64,
    /// A disabled breakpoint keeps its locations and id but neither counts hits nor
    /// stops; its int3s stay planted, so a hit there costs one silent round trip.
    pub enabled: bool,
    /// The scope at each address, looked up on the first hit there and kept, so later
    /// hits evaluate the condition without walking DWARF again.
    pub scopes: HashMap<u64, Arc<HitSite>>,
    /// Whether moving its condition into the debuggee was tried (see `crate::jit`).
    pub jit_tried: bool,
}

/// What a condition needs at one breakpoint address, computed on its first hit.
#[derive(Debug)]
pub(crate) struct HitSite {
    /// The variables visible there.
    pub scope: Scope,
    /// Which inlined frame the address executes (0: none).
    pub inline_index: u32,
    /// The unwind row, for the CFA the frame base needs.
    pub row: Option<symbols::UnwindRow>,
}
