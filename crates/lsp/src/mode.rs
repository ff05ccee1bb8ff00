//! Which language features a session serves: everything tandem derives from debug
//! information (`"full"`), or, beside clangd or rust-analyzer, only what a debugger can
//! know (`"companion"`), chosen by `initializationOptions.tandem.features`.
//!
//! Companion mode duplicates nothing the compiler's own server shows: no outline, no
//! definitions, no workspace symbols, no semantic tokens, no compiler diagnostics, and a
//! hover only when the paused program has a value for what is under the cursor. What stays
//! is what needs the binary or the running program: live hovers, inline values, code lenses
//! (hit counts, returned values; Run/Debug for C and C++, whose servers have none), the lines
//! with code, the stale-binary warning and the hints for moved breakpoints.

use serde_json::{json, Value};

use crate::text::PositionEncoding;
use crate::{lens, processes, tokens};

/// The `features` values `initialize` accepts, in the order the error message names them.
pub const ACCEPTED: [&str; 2] = ["full", "companion"];

/// The set of features a session serves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Features {
    /// Every feature: symbols, navigation, tokens, diagnostics, hovers with declarations.
    #[default]
    Full,
    /// Only the debug-derived features, for a server started beside another one.
    Companion,
}

/// A request of the full set that companion mode refuses (not advertised there).
const FULL_ONLY: [&str; 6] = [
    "workspace/symbol",
    "textDocument/documentSymbol",
    "textDocument/definition",
    "textDocument/declaration",
    "textDocument/semanticTokens/full",
    "textDocument/semanticTokens/range",
];

impl Features {
    /// Reads `initializationOptions.tandem.features`; absent means [`Features::Full`].
    /// Anything else than the accepted strings is refused with a message naming them.
    pub fn from_options(options: Option<&Value>) -> Result<Features, String> {
        let Some(value) = options
            .and_then(|o| o.get("tandem"))
            .and_then(|t| t.get("features"))
        else {
            return Ok(Features::Full);
        };
        match value.as_str() {
            Some("full") => Ok(Features::Full),
            Some("companion") => Ok(Features::Companion),
            _ => Err(format!(
                "initializationOptions.tandem.features must be \"{}\" or \"{}\", not {value}",
                ACCEPTED[0], ACCEPTED[1]
            )),
        }
    }

    /// The name the option uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Features::Full => ACCEPTED[0],
            Features::Companion => ACCEPTED[1],
        }
    }

    /// Whether requests of `method` are served (companion mode refuses what it does not
    /// advertise, so a client that asks anyway gets MethodNotFound, not a second answer).
    pub fn serves(self, method: &str) -> bool {
        self == Features::Full || !FULL_ONLY.contains(&method)
    }

    /// Whether the compiler checks edited and saved documents.
    pub fn compiler_diagnostics(self) -> bool {
        self == Features::Full
    }

    /// Whether hovers carry the declaration, type and layout (else only a live value).
    pub fn declaration_hovers(self) -> bool {
        self == Features::Full
    }

    /// Whether Run/Debug lenses are offered for documents of `lang`: always in full mode;
    /// in companion mode not for Rust, whose rust-analyzer shows its own.
    pub(crate) fn run_lenses(self, lang: crate::sources::Lang) -> bool {
        self == Features::Full || lang != crate::sources::Lang::Rust
    }

    /// The `capabilities` of the `initialize` answer.
    pub fn capabilities(self, encoding: PositionEncoding) -> Value {
        let mut caps = json!({
            "positionEncoding": encoding.as_str(),
            "textDocumentSync": {
                "openClose": true,
                // 2 = incremental: ranges against the previous version.
                "change": 2,
                "save": { "includeText": false },
            },
            "hoverProvider": true,
            "inlineValueProvider": true,
            "codeLensProvider": {},
            "executeCommandProvider": {
                "commands": [lens::RUN, processes::LIST_PROCESSES, crate::live::FOCUS_SESSION]
            },
            "experimental": { "tandem": { "features": self.as_str() } },
        });
        if self == Features::Full {
            let full = json!({
                "workspaceSymbolProvider": true,
                "documentSymbolProvider": true,
                "definitionProvider": true,
                "declarationProvider": true,
                "semanticTokensProvider": {
                    "legend": tokens::legend(),
                    "full": true,
                    "range": true,
                },
            });
            if let (Some(caps), Value::Object(full)) = (caps.as_object_mut(), full) {
                caps.extend(full);
            }
        }
        caps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_is_full_and_unknown_values_are_refused_by_name() {
        assert_eq!(Features::from_options(None), Ok(Features::Full));
        assert_eq!(
            Features::from_options(Some(&json!({"tandem": {"binaries": []}}))),
            Ok(Features::Full)
        );
        assert_eq!(
            Features::from_options(Some(&json!({"tandem": {"features": "companion"}}))),
            Ok(Features::Companion)
        );
        for bad in [json!("minimal"), json!(1), json!(null)] {
            let err =
                Features::from_options(Some(&json!({"tandem": {"features": bad}}))).unwrap_err();
            assert!(err.contains("\"full\" or \"companion\""), "{err}");
        }
    }

    #[test]
    fn companion_advertises_only_debug_derived_features() {
        let caps = Features::Companion.capabilities(PositionEncoding::Utf16);
        for absent in [
            "documentSymbolProvider",
            "definitionProvider",
            "declarationProvider",
            "workspaceSymbolProvider",
            "semanticTokensProvider",
        ] {
            assert!(caps.get(absent).is_none(), "{absent} in {caps}");
            assert!(Features::Full
                .capabilities(PositionEncoding::Utf16)
                .get(absent)
                .is_some());
        }
        for method in FULL_ONLY {
            assert!(!Features::Companion.serves(method));
        }
        assert!(Features::Companion.serves("textDocument/hover"));
    }
}
