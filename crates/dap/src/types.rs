//! Typed DAP requests: each request is a type naming its command, arguments and body, so
//! dispatch is by type rather than by strings scattered through the adapter.
//!
//! Only the requests tandem serves are here; field names follow the specification
//! (camelCase on the wire). Unknown argument fields are ignored, as clients add their own.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// One DAP request type.
pub trait Request {
    const COMMAND: &'static str;
    type Arguments: DeserializeOwned;
    type Body: Serialize;
}

/// Arguments of a request that takes none (or whose arguments are all optional and unused).
#[derive(Debug, Default, Deserialize)]
pub struct NoArguments {}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeArguments {
    #[serde(rename = "clientID")]
    pub client_id: Option<String>,
    pub client_name: Option<String>,
    #[serde(rename = "adapterID")]
    pub adapter_id: String,
    pub locale: Option<String>,
    pub lines_start_at1: Option<bool>,
    pub columns_start_at1: Option<bool>,
    pub path_format: Option<String>,
    pub supports_variable_type: Option<bool>,
    pub supports_variable_paging: Option<bool>,
    pub supports_run_in_terminal_request: Option<bool>,
    pub supports_memory_references: Option<bool>,
    pub supports_progress_reporting: Option<bool>,
    pub supports_invalidated_event: Option<bool>,
    pub supports_memory_event: Option<bool>,
    pub supports_args_can_be_interpreted_by_shell: Option<bool>,
    pub supports_start_debugging_request: Option<bool>,
    #[serde(rename = "supportsANSIStyling")]
    pub supports_ansi_styling: Option<bool>,
}

/// What the adapter can do. A field left `None` is absent on the wire, which the protocol
/// reads as "not supported": only what works is ever set.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Capabilities {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supports_configuration_done_request: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supports_terminate_request: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub support_terminate_debuggee: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DisconnectArguments {
    pub restart: Option<bool>,
    pub terminate_debuggee: Option<bool>,
    pub suspend_debuggee: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TerminateArguments {
    pub restart: Option<bool>,
}

pub struct Initialize;
impl Request for Initialize {
    const COMMAND: &'static str = "initialize";
    type Arguments = InitializeArguments;
    type Body = Capabilities;
}

pub struct Disconnect;
impl Request for Disconnect {
    const COMMAND: &'static str = "disconnect";
    type Arguments = Option<DisconnectArguments>;
    type Body = ();
}

pub struct Terminate;
impl Request for Terminate {
    const COMMAND: &'static str = "terminate";
    type Arguments = Option<TerminateArguments>;
    type Body = ();
}

/// The `body.error` of an error response: a message the client may show.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorMessage {
    pub id: i64,
    pub format: String,
    pub show_user: bool,
}
