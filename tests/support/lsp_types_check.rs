//! The LSP validation used when no meta model is found (a clone without ../shared/protocol):
//! each message tandem sends is deserialised into the typed structure the crates.io package
//! `lsp-types` gives its method. Weaker than the meta model — serde accepts unknown fields
//! and lsp-types is lenient in places — and said so wherever its tally is printed.

use lsp_types::notification::{self, Notification};
use lsp_types::request::{self, Request};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// What the tally names as the definition these checks use.
pub const SOURCE: &str =
    "lsp-types 0.97 from crates.io (typed deserialisation; weaker than the LSP meta model)";

fn check<T: DeserializeOwned>(what: &str, value: &Value) -> Result<(), String> {
    serde_json::from_value::<T>(value.clone())
        .map(|_| ())
        .map_err(|e| format!("LSP {what} does not fit lsp-types: {e}"))
}

/// Checks one message the server sent; `None` when lsp-types has no type for it (a custom
/// method such as `tandem/document`), which the caller counts as not validated.
pub fn check_server_message(
    msg: &Value,
    answered_method: Option<&str>,
) -> Option<Result<(), String>> {
    if msg.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Some(Err(format!("LSP message without jsonrpc 2.0: {msg}")));
    }
    if let Some(method) = msg.get("method").and_then(Value::as_str) {
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        macro_rules! notifications {
            ($($t:ty),*) => {$(
                if method == <$t>::METHOD {
                    return Some(check::<<$t as Notification>::Params>(method, &params));
                }
            )*};
        }
        macro_rules! requests {
            ($($t:ty),*) => {$(
                if method == <$t>::METHOD {
                    return Some(check::<<$t as Request>::Params>(method, &params));
                }
            )*};
        }
        notifications!(
            notification::PublishDiagnostics,
            notification::LogMessage,
            notification::ShowMessage,
            notification::Progress,
            notification::LogTrace
        );
        requests!(
            request::WorkDoneProgressCreate,
            request::RegisterCapability,
            request::UnregisterCapability,
            request::WorkspaceConfiguration,
            request::InlineValueRefreshRequest,
            request::SemanticTokensRefresh,
            request::CodeLensRefresh,
            request::ShowMessageRequest
        );
        return None;
    }
    if let Some(error) = msg.get("error") {
        let ok = error.get("code").is_some_and(Value::is_i64)
            && error.get("message").is_some_and(Value::is_string);
        return Some(if ok {
            Ok(())
        } else {
            Err(format!(
                "LSP error response without an integer code and a message: {msg}"
            ))
        });
    }
    let result = msg.get("result").cloned().unwrap_or(Value::Null);
    let method = answered_method?;
    macro_rules! results {
        ($($t:ty),*) => {$(
            if method == <$t>::METHOD {
                return Some(check::<<$t as Request>::Result>(method, &result));
            }
        )*};
    }
    results!(
        request::Initialize,
        request::Shutdown,
        request::HoverRequest,
        request::GotoDefinition,
        request::GotoDeclaration,
        request::DocumentSymbolRequest,
        request::WorkspaceSymbolRequest,
        request::SemanticTokensFullRequest,
        request::SemanticTokensRangeRequest,
        request::CodeLensRequest,
        request::InlineValueRequest,
        request::ExecuteCommand,
        request::Completion
    );
    None
}
