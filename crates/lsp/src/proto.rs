//! The parameters tandem reads from the client, parsed leniently.
//!
//! Only the fields tandem uses are declared, and unknown fields are ignored, so a client whose
//! capabilities carry values newer than our protocol types (a new enum member, a URI our URI
//! parser would reject) is still served. Shapes the specification requires (an object where an
//! object must be) are still checked: those failures become -32602.

use serde::Deserialize;
use serde_json::{Map, Value};
use wire::jsonrpc::Id;

use crate::text::WirePosition;

#[derive(Debug, Deserialize)]
pub struct InitializeParams {
    pub capabilities: Map<String, Value>,
}

impl InitializeParams {
    /// `capabilities.general.positionEncodings`, ignoring entries that are not strings.
    pub fn position_encodings(&self) -> Vec<&str> {
        self.capabilities
            .get("general")
            .and_then(|g| g.get("positionEncodings"))
            .and_then(Value::as_array)
            .map(|list| list.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }
}

#[derive(Debug, Deserialize)]
pub struct CancelParams {
    pub id: Id,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextDocumentItem {
    pub uri: String,
    pub language_id: String,
    pub version: i32,
    pub text: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DidOpenTextDocumentParams {
    pub text_document: TextDocumentItem,
}

#[derive(Debug, Deserialize)]
pub struct VersionedTextDocumentIdentifier {
    pub uri: String,
    pub version: i32,
}

#[derive(Debug, Deserialize)]
pub struct TextDocumentIdentifier {
    pub uri: String,
}

#[derive(Clone, Copy, Debug, Deserialize)]
pub struct Position {
    pub line: u32,
    pub character: u32,
}

impl From<Position> for WirePosition {
    fn from(p: Position) -> Self {
        WirePosition {
            line: p.line,
            column: p.character,
        }
    }
}

#[derive(Clone, Copy, Debug, Deserialize)]
pub struct Range {
    pub start: Position,
    pub end: Position,
}

#[derive(Debug, Deserialize)]
pub struct ContentChange {
    pub range: Option<Range>,
    pub text: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DidChangeTextDocumentParams {
    pub text_document: VersionedTextDocumentIdentifier,
    pub content_changes: Vec<ContentChange>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DidCloseTextDocumentParams {
    pub text_document: TextDocumentIdentifier,
}

#[derive(Debug, Deserialize)]
pub struct WorkspaceFolder {
    pub uri: String,
}

/// The parts of `initialize` that describe the workspace.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceParams {
    pub root_uri: Option<String>,
    pub root_path: Option<String>,
    pub workspace_folders: Option<Vec<WorkspaceFolder>>,
    pub initialization_options: Option<Value>,
}

impl WorkspaceParams {
    fn tandem_option(&self, key: &str) -> Option<&Value> {
        self.initialization_options
            .as_ref()
            .and_then(|o| o.get("tandem"))
            .and_then(|t| t.get(key))
    }

    /// `initializationOptions.tandem.testIndexDelayMs`: a test hook that holds indexing back.
    pub fn test_index_delay_ms(&self) -> Option<u64> {
        self.tandem_option("testIndexDelayMs")
            .and_then(Value::as_u64)
    }

    /// `initializationOptions.tandem.testFullIndexDelayMs`: a test hook that holds each
    /// binary's full index back once its quick symbol table is served.
    pub fn test_full_index_delay_ms(&self) -> Option<u64> {
        self.tandem_option("testFullIndexDelayMs")
            .and_then(Value::as_u64)
    }

    /// `initializationOptions.tandem.binaries`, ignoring entries that are not strings.
    pub fn binaries(&self) -> Vec<String> {
        self.tandem_option("binaries")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[derive(Debug, Deserialize)]
pub struct WorkspaceSymbolParams {
    pub query: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DocumentSymbolParams {
    pub text_document: TextDocumentIdentifier,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextDocumentPositionParams {
    pub text_document: TextDocumentIdentifier,
    pub position: Position,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SemanticTokensParams {
    pub text_document: TextDocumentIdentifier,
    pub range: Option<Range>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InlineValueContext {
    /// The range where execution stopped, in the document's current numbering.
    pub stopped_location: Option<Range>,
}

/// `textDocument/inlineValue`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InlineValueParams {
    pub text_document: TextDocumentIdentifier,
    pub range: Range,
    pub context: Option<InlineValueContext>,
}

/// `tandem/breakpointLocations`: the lines with code of a document, optionally within a range.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BreakpointLocationsParams {
    pub text_document: TextDocumentIdentifier,
    pub range: Option<Range>,
}
