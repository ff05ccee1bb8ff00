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
    pub supports_function_breakpoints: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supports_conditional_breakpoints: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supports_hit_conditional_breakpoints: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supports_evaluate_for_hovers: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exception_breakpoint_filters: Option<Vec<ExceptionBreakpointsFilter>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supports_set_variable: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supports_restart_request: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supports_completions_request: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_trigger_characters: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supports_modules_request: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supports_exception_info_request: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub support_terminate_debuggee: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub support_suspend_debuggee: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supports_delayed_stack_trace_loading: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supports_loaded_sources_request: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supports_log_points: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supports_terminate_request: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supports_set_expression: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supports_data_breakpoints: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supports_read_memory_request: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supports_write_memory_request: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supports_disassemble_request: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supports_cancel_request: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supports_breakpoint_locations_request: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supports_clipboard_context: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supports_stepping_granularity: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supports_step_in_targets_request: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supports_instruction_breakpoints: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supports_exception_filter_options: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supports_value_formatting_options: Option<bool>,
}

/// One exception filter the client may offer (tandem's filters are signals).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExceptionBreakpointsFilter {
    pub filter: String,
    pub label: String,
    pub description: String,
    pub default: bool,
    pub supports_condition: bool,
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
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RestartFrameArguments {
    pub frame_id: i64,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorMessage {
    pub id: i64,
    pub format: String,
    pub show_user: bool,
}

// ------------------------------------------------------------------ shared structures

/// A source file (`path` is local; tandem gives out no `sourceReference`s).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Source {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_reference: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub presentation_hint: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Breakpoint {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
    pub verified: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instruction_reference: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Breakpoint {
    /// A breakpoint with no location (yet), and why.
    pub fn unverified(message: Option<String>) -> Breakpoint {
        Breakpoint {
            id: None,
            verified: false,
            message,
            source: None,
            line: None,
            instruction_reference: None,
            reason: None,
        }
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StackFrame {
    pub id: i64,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    pub line: i64,
    pub column: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instruction_pointer_reference: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub module_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub presentation_hint: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Scope {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub presentation_hint: Option<String>,
    pub variables_reference: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub named_variables: Option<i64>,
    pub expensive: bool,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Variable {
    pub name: String,
    pub value: String,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evaluate_name: Option<String>,
    pub variables_reference: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub named_variables: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub indexed_variables: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_reference: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Thread {
    pub id: i64,
    pub name: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Module {
    pub id: String,
    pub name: String,
    pub path: String,
    pub is_user_code: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symbol_status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symbol_file_path: Option<String>,
    pub address_range: String,
}

/// A `{NAME: value}` map or a `["NAME=value"]` list (both appear in launch.json files).
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum EnvSpec {
    Map(std::collections::BTreeMap<String, Option<String>>),
    List(Vec<String>),
}

/// A `{from: to}` map or a `[[from, to]]` list of source path prefixes.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum SourceMapSpec {
    Map(std::collections::BTreeMap<String, String>),
    List(Vec<(String, String)>),
}

impl SourceMapSpec {
    /// Back to JSON, as the client sent it (for a child's configuration).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            SourceMapSpec::Map(m) => serde_json::json!(m),
            SourceMapSpec::List(l) => serde_json::json!(l),
        }
    }
}

impl LaunchArguments {
    /// The source map as JSON, for the children's configurations.
    pub fn source_map_json(&self) -> Option<serde_json::Value> {
        self.source_map.as_ref().map(SourceMapSpec::to_json)
    }
}

impl AttachArguments {
    /// The source map as JSON, for the children's configurations.
    pub fn source_map_json(&self) -> Option<serde_json::Value> {
        self.source_map.as_ref().map(SourceMapSpec::to_json)
    }
}

// ------------------------------------------------------------------ launch and attach

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LaunchArguments {
    pub program: String,
    #[serde(default)]
    pub args: Vec<String>,
    pub cwd: Option<String>,
    pub env: Option<EnvSpec>,
    #[serde(default)]
    pub stop_on_entry: bool,
    pub source_map: Option<SourceMapSpec>,
    pub console: Option<String>,
    #[serde(default)]
    pub no_debug: bool,
    /// Keep address randomization on (it is turned off by default, as gdb does).
    #[serde(default)]
    pub disable_aslr: Option<bool>,
    /// The program's standard streams with the debug console: `terminal` (default:
    /// pseudo-terminals, as in a shell) or `pipes`.
    pub stdio: Option<String>,
    /// Directories searched for the program's separate debug file before /usr/lib/debug
    /// (`.build-id/xx/rest.debug` and `.gnu_debuglink` names), as gdb's
    /// `debug-file-directory`; relative ones are under `cwd`.
    #[serde(default)]
    pub debug_file_directories: Vec<String>,
    /// The configuration's `type` (given to the children's sessions).
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// What happens to the program's children: `sessions` (default when the client
    /// supports `startDebugging`) or `detach` (default otherwise).
    pub follow_children: Option<String>,
    /// Only children whose command line matches this regex are followed.
    pub child_filter: Option<String>,
    /// Record the program from its first instruction so the session can go back in
    /// time (`stepBack`, `reverseContinue`; docs/reverse.md).
    #[serde(default)]
    pub reverse_debugging: bool,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AttachArguments {
    /// The process id; with `container`, the pid inside the container.
    pub pid: Option<PidSpec>,
    pub program: Option<String>,
    /// A container (id prefix, systemd-nspawn machine name, host name, or `pidns:INODE`):
    /// `pid` and `program` are then looked for among its processes.
    pub container: Option<String>,
    /// Where the sources are on this machine when the compilation directories recorded in
    /// the binary do not exist here (default: `cwd`).
    pub local_root: Option<String>,
    /// The workspace the client debugs from (used as the default `localRoot`).
    pub cwd: Option<String>,
    #[serde(default)]
    pub wait_for: bool,
    /// How long `waitFor` waits, in seconds (default 60).
    pub timeout: Option<f64>,
    #[serde(default)]
    pub stop_on_entry: bool,
    pub source_map: Option<SourceMapSpec>,
    /// The configuration's `type` (given to the children's sessions).
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// As for launch.
    pub follow_children: Option<String>,
    /// As for launch.
    pub child_filter: Option<String>,
    /// Set by tandem in the configuration of a child's session (`startDebugging`): the
    /// process is a fork child handed over by its parent's session, waiting to be taken.
    pub tandem_child: Option<ChildHandover>,
}

/// A fork child handed over by the parent's session (`tandemChild`).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChildHandover {
    /// A vfork child that has not exec'd (its memory is its parent's until then).
    #[serde(default)]
    pub vfork: bool,
    /// The parent's pid, for the record.
    pub parent: Option<i64>,
}

/// A pid as a number or a string (`"${command:pickProcess}"` expands to a string).
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum PidSpec {
    Number(i64),
    Text(String),
}

#[derive(Debug, Deserialize)]
pub struct RestartArguments {
    pub arguments: Option<serde_json::Value>,
}

// ------------------------------------------------------------------ breakpoints

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceBreakpoint {
    pub line: i64,
    pub column: Option<i64>,
    pub condition: Option<String>,
    pub hit_condition: Option<String>,
    pub log_message: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetBreakpointsArguments {
    pub source: Source,
    pub breakpoints: Option<Vec<SourceBreakpoint>>,
    pub lines: Option<Vec<i64>>,
    pub source_modified: Option<bool>,
}

#[derive(Debug, Serialize)]
pub struct BreakpointsBody {
    pub breakpoints: Vec<Breakpoint>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FunctionBreakpoint {
    pub name: String,
    pub condition: Option<String>,
    pub hit_condition: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct SetFunctionBreakpointsArguments {
    pub breakpoints: Vec<FunctionBreakpoint>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstructionBreakpoint {
    pub instruction_reference: String,
    pub offset: Option<i64>,
    pub condition: Option<String>,
    pub hit_condition: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct SetInstructionBreakpointsArguments {
    pub breakpoints: Vec<InstructionBreakpoint>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExceptionFilterOptions {
    pub filter_id: String,
    pub condition: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetExceptionBreakpointsArguments {
    pub filters: Vec<String>,
    pub filter_options: Option<Vec<ExceptionFilterOptions>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BreakpointLocationsArguments {
    pub source: Source,
    pub line: i64,
    pub end_line: Option<i64>,
}

#[derive(Debug, Serialize)]
pub struct BreakpointLocation {
    pub line: i64,
}

#[derive(Debug, Serialize)]
pub struct BreakpointLocationsBody {
    pub breakpoints: Vec<BreakpointLocation>,
}

// ------------------------------------------------------------------ execution

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContinueArguments {
    pub thread_id: i64,
    pub single_thread: Option<bool>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContinueBody {
    pub all_threads_continued: bool,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepArguments {
    pub thread_id: i64,
    pub single_thread: Option<bool>,
    pub granularity: Option<String>,
    pub target_id: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepInTargetsArguments {
    pub frame_id: i64,
}

#[derive(Debug, Serialize)]
pub struct StepInTargetsBody {
    pub targets: Vec<StepInTarget>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepInTarget {
    pub id: i64,
    pub label: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PauseArguments {
    pub thread_id: i64,
}

// ------------------------------------------------------------------ state

#[derive(Debug, Serialize)]
pub struct ThreadsBody {
    pub threads: Vec<Thread>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StackTraceArguments {
    pub thread_id: i64,
    pub start_frame: Option<i64>,
    pub levels: Option<i64>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StackTraceBody {
    pub stack_frames: Vec<StackFrame>,
    pub total_frames: i64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScopesArguments {
    pub frame_id: i64,
}

#[derive(Debug, Serialize)]
pub struct ScopesBody {
    pub scopes: Vec<Scope>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VariablesArguments {
    pub variables_reference: i64,
    pub filter: Option<String>,
    pub start: Option<i64>,
    pub count: Option<i64>,
}

#[derive(Debug, Serialize)]
pub struct VariablesBody {
    pub variables: Vec<Variable>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetVariableArguments {
    pub variables_reference: i64,
    pub name: String,
    pub value: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SetVariableBody {
    pub value: String,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_name: Option<String>,
    pub variables_reference: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub named_variables: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub indexed_variables: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_reference: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetExpressionArguments {
    pub expression: String,
    pub value: String,
    pub frame_id: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvaluateArguments {
    pub expression: String,
    pub frame_id: Option<i64>,
    pub context: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EvaluateBody {
    pub result: String,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_name: Option<String>,
    pub variables_reference: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub named_variables: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub indexed_variables: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_reference: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceArguments {
    pub source: Option<Source>,
    pub source_reference: i64,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceBody {
    pub content: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct LoadedSourcesBody {
    pub sources: Vec<Source>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModulesArguments {
    pub start_module: Option<i64>,
    pub module_count: Option<i64>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModulesBody {
    pub modules: Vec<Module>,
    pub total_modules: i64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadMemoryArguments {
    pub memory_reference: String,
    pub offset: Option<i64>,
    pub count: i64,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadMemoryBody {
    pub address: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreadable_bytes: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WriteMemoryArguments {
    pub memory_reference: String,
    pub offset: Option<i64>,
    pub allow_partial: Option<bool>,
    pub data: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WriteMemoryBody {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_written: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelArguments {
    pub request_id: Option<i64>,
    pub progress_id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExceptionInfoArguments {
    pub thread_id: i64,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExceptionInfoBody {
    pub exception_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub break_mode: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<ExceptionDetails>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExceptionDetails {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub type_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evaluate_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stack_trace: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompletionsArguments {
    pub frame_id: Option<i64>,
    pub text: String,
    pub column: i64,
    pub line: Option<i64>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompletionItem {
    pub label: String,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub length: Option<i64>,
}

#[derive(Debug, Serialize)]
pub struct CompletionsBody {
    pub targets: Vec<CompletionItem>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DisassembleArguments {
    pub memory_reference: String,
    pub offset: Option<i64>,
    pub instruction_offset: Option<i64>,
    pub instruction_count: i64,
    pub resolve_symbols: Option<bool>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DisassembledInstruction {
    pub address: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instruction_bytes: Option<String>,
    pub instruction: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Source>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub presentation_hint: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct DisassembleBody {
    pub instructions: Vec<DisassembledInstruction>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DataBreakpointInfoArguments {
    pub variables_reference: Option<i64>,
    pub name: String,
    pub frame_id: Option<i64>,
    pub bytes: Option<i64>,
    pub as_address: Option<bool>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DataBreakpointInfoBody {
    pub data_id: Option<String>,
    pub description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_types: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub can_persist: Option<bool>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DataBreakpoint {
    pub data_id: String,
    pub access_type: Option<String>,
    pub condition: Option<String>,
    pub hit_condition: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct SetDataBreakpointsArguments {
    pub breakpoints: Vec<DataBreakpoint>,
}

/// Declares a request type: `request!(Type, "command", Arguments, Body)`.
macro_rules! request {
    ($name:ident, $command:literal, $args:ty, $body:ty) => {
        pub struct $name;
        impl Request for $name {
            const COMMAND: &'static str = $command;
            type Arguments = $args;
            type Body = $body;
        }
    };
}

request!(Launch, "launch", LaunchArguments, ());
request!(Attach, "attach", AttachArguments, ());
request!(Restart, "restart", Option<RestartArguments>, ());
request!(
    ConfigurationDone,
    "configurationDone",
    Option<NoArguments>,
    ()
);
request!(
    SetBreakpoints,
    "setBreakpoints",
    SetBreakpointsArguments,
    BreakpointsBody
);
request!(
    SetFunctionBreakpoints,
    "setFunctionBreakpoints",
    SetFunctionBreakpointsArguments,
    BreakpointsBody
);
request!(
    SetInstructionBreakpoints,
    "setInstructionBreakpoints",
    SetInstructionBreakpointsArguments,
    BreakpointsBody
);
request!(
    SetExceptionBreakpoints,
    "setExceptionBreakpoints",
    SetExceptionBreakpointsArguments,
    Option<BreakpointsBody>
);
request!(
    SetDataBreakpoints,
    "setDataBreakpoints",
    SetDataBreakpointsArguments,
    BreakpointsBody
);
request!(
    DataBreakpointInfo,
    "dataBreakpointInfo",
    DataBreakpointInfoArguments,
    DataBreakpointInfoBody
);
request!(
    BreakpointLocations,
    "breakpointLocations",
    BreakpointLocationsArguments,
    BreakpointLocationsBody
);
request!(Continue, "continue", ContinueArguments, ContinueBody);
request!(Next, "next", StepArguments, ());
request!(StepBack, "stepBack", StepArguments, ());
request!(ReverseContinue, "reverseContinue", ContinueArguments, ());
request!(RestartFrame, "restartFrame", RestartFrameArguments, ());
request!(StepIn, "stepIn", StepArguments, ());
request!(StepOut, "stepOut", StepArguments, ());
request!(
    StepInTargets,
    "stepInTargets",
    StepInTargetsArguments,
    StepInTargetsBody
);
request!(Pause, "pause", PauseArguments, ());
request!(Threads, "threads", Option<NoArguments>, ThreadsBody);
request!(
    StackTrace,
    "stackTrace",
    StackTraceArguments,
    StackTraceBody
);
request!(Scopes, "scopes", ScopesArguments, ScopesBody);
request!(Variables, "variables", VariablesArguments, VariablesBody);
request!(
    SetVariable,
    "setVariable",
    SetVariableArguments,
    SetVariableBody
);
request!(
    SetExpression,
    "setExpression",
    SetExpressionArguments,
    SetVariableBody
);
request!(Evaluate, "evaluate", EvaluateArguments, EvaluateBody);
request!(SourceRequest, "source", SourceArguments, SourceBody);
request!(
    LoadedSources,
    "loadedSources",
    Option<NoArguments>,
    LoadedSourcesBody
);
request!(Modules, "modules", Option<ModulesArguments>, ModulesBody);
request!(
    ReadMemory,
    "readMemory",
    ReadMemoryArguments,
    ReadMemoryBody
);
request!(
    WriteMemory,
    "writeMemory",
    WriteMemoryArguments,
    WriteMemoryBody
);
request!(Cancel, "cancel", Option<CancelArguments>, ());
request!(
    ExceptionInfo,
    "exceptionInfo",
    ExceptionInfoArguments,
    ExceptionInfoBody
);
request!(
    Completions,
    "completions",
    CompletionsArguments,
    CompletionsBody
);
request!(
    Disassemble,
    "disassemble",
    DisassembleArguments,
    DisassembleBody
);
