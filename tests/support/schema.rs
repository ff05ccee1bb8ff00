//! Protocol validation for the end-to-end tests: every message tandem emits is checked
//! against the DAP JSON schema and the LSP meta model from `../shared/protocol`.
//!
//! Included by the integration tests with `#[path = "support/schema.rs"] mod schema;`.
//! Both checks are stricter than the published definitions on one point: a property
//! that the definition does not declare is an error, because neither definition forbids
//! extra fields and a misspelt optional field would otherwise pass unnoticed.
//!
//! Where the schemas come from (first match wins):
//! 1. `$TANDEM_PROTOCOL_DIR` (an error if it is set but lacks the file);
//! 2. `<workspace>/../shared/protocol`, the folder CI lays beside the clone;
//! 3. DAP only: the older schema inside PyPI's debugpy wheel, extracted to
//!    `<workspace>/.tools/debugpy/debugProtocol.json` by
//!    `tests/support/fetch-debugpy-schema.sh` (run here when the file is missing).
//!
//! The LSP meta model has no such fallback: no registry package ships it (npm's
//! vscode-languageserver-protocol has only metaModel.schema.json, PyPI's lsprotocol only
//! generated Python). Messages that could not be validated are counted as such by the
//! peers (`support/mod.rs`), and scripts/test fails a run that validated none of a
//! protocol's messages.

// Not every test binary uses every item of this module.
#![allow(dead_code)]
// Which schema a run validated against belongs in the test output.
#![allow(clippy::print_stderr)]

use std::collections::{BTreeSet, HashMap};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::{bail, Context as _};
use serde_json::{Map, Value};

const DAP_FILE: &str = "debugAdapterProtocol.json";
const LSP_FILE: &str = "metaModel.json";
const DEBUGPY_FILE: &str = ".tools/debugpy/debugProtocol.json";
const FETCH_SCRIPT: &str = "tests/support/fetch-debugpy-schema.sh";

/// DAP definitions whose declared properties are only the common ones: the rest are
/// adapter-specific (`launch` / `attach` configurations), so they are not checked strictly.
const OPEN_DAP_DEFINITIONS: &[&str] = &["LaunchRequestArguments", "AttachRequestArguments"];

/// Guards against cyclic definitions in either document.
const MAX_DEPTH: usize = 64;

/// Longest excerpt of a failing value or nested error quoted in an error string.
const MAX_EXCERPT: usize = 240;

// ---------------------------------------------------------------------------------------
// Locating the files

/// The workspace root: the nearest ancestor of this crate's manifest directory whose
/// Cargo.toml declares `[workspace]` (crates/tandem -> the repo root).
pub fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    for dir in manifest.ancestors() {
        let toml = dir.join("Cargo.toml");
        if std::fs::read_to_string(&toml).is_ok_and(|text| text.contains("[workspace]")) {
            return dir.to_path_buf();
        }
    }
    manifest.join("../..")
}

/// Where a schema file was found.
enum Located {
    /// `$TANDEM_PROTOCOL_DIR` or `../shared/protocol`.
    Protocol(PathBuf),
    /// Neither holds the file.
    Absent,
}

/// Finds `file` in `$TANDEM_PROTOCOL_DIR` or `<workspace>/../shared/protocol`.
fn locate(file: &str) -> anyhow::Result<Located> {
    if let Some(dir) = std::env::var_os("TANDEM_PROTOCOL_DIR").filter(|d| !d.is_empty()) {
        let path = PathBuf::from(dir).join(file);
        if !path.is_file() {
            bail!(
                "TANDEM_PROTOCOL_DIR is set but {} does not exist",
                path.display()
            );
        }
        return Ok(Located::Protocol(path));
    }
    let path = workspace_root().join("../shared/protocol").join(file);
    if path.is_file() {
        Ok(Located::Protocol(path))
    } else {
        Ok(Located::Absent)
    }
}

fn read_json(path: &Path) -> anyhow::Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

/// Writes straight to the process's stderr, past the test harness's output capture, so
/// that a fallback is visible in the output of a passing run too.
fn shout(text: &str) {
    let _ = writeln!(std::io::stderr(), "{text}");
}

/// Runs the fetch script once per process; later callers get its first outcome.
fn fetch_debugpy_schema(root: &Path) -> Result<(), String> {
    static FETCHED: OnceLock<Result<(), String>> = OnceLock::new();
    FETCHED
        .get_or_init(|| {
            let script = root.join(FETCH_SCRIPT);
            let output = Command::new("bash")
                .arg(&script)
                .output()
                .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
            if output.status.success() {
                Ok(())
            } else {
                Err(format!(
                    "{} failed ({}): {}",
                    script.display(),
                    output.status,
                    String::from_utf8_lossy(&output.stderr).trim()
                ))
            }
        })
        .clone()
}

fn excerpt(value: &Value) -> String {
    cut(&value.to_string())
}

fn cut(text: &str) -> String {
    if text.len() <= MAX_EXCERPT {
        return text.to_owned();
    }
    let mut end = MAX_EXCERPT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

fn upper_first(name: &str) -> String {
    let mut chars = name.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// JSON pointer segment escaping (RFC 6901).
fn pointer_segment(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

// ---------------------------------------------------------------------------------------
// DAP

/// The DAP JSON schema (draft-04), compiled once per test process.
struct DapInner {
    source: PathBuf,
    document: Value,
    validators: jsonschema::ValidatorMap,
}

/// Validates the DAP messages tandem sends against debugAdapterProtocol.json.
pub struct DapSchema {
    inner: Arc<DapInner>,
    checked: AtomicUsize,
}

impl DapSchema {
    /// Loads debugAdapterProtocol.json from $TANDEM_PROTOCOL_DIR, else
    /// <workspace>/../shared/protocol, else the debugpy fallback; prints (eprintln) which
    /// source was used, and says loudly when it fell back.
    pub fn load() -> anyhow::Result<DapSchema> {
        static CACHE: Mutex<Option<Arc<DapInner>>> = Mutex::new(None);
        let mut cache = CACHE.lock().unwrap_or_else(|poison| poison.into_inner());
        let inner = match cache.as_ref() {
            Some(inner) => Arc::clone(inner),
            None => {
                let inner = Arc::new(DapInner::load()?);
                *cache = Some(Arc::clone(&inner));
                inner
            }
        };
        eprintln!("DAP messages validated against {}", inner.source.display());
        Ok(DapSchema {
            inner,
            checked: AtomicUsize::new(0),
        })
    }

    /// Loads a given schema file (e.g. the debugpy one), uncached and without fallback.
    pub fn from_file(path: &Path) -> anyhow::Result<DapSchema> {
        Ok(DapSchema {
            inner: Arc::new(DapInner::from_file(path.to_path_buf())?),
            checked: AtomicUsize::new(0),
        })
    }

    /// The file the schema was read from.
    pub fn source(&self) -> &Path {
        &self.inner.source
    }

    /// Validates one message tandem SENT (response, event, or reverse request) and counts it.
    /// The definition is picked as shared/protocol/README.md says; on top of the schema,
    /// every property name must be declared by the definition (strict check).
    pub fn validate(&self, msg: &Value) -> Result<(), String> {
        self.checked.fetch_add(1, Ordering::Relaxed);
        self.inner.validate(msg)
    }

    /// How many messages were validated so far (passed or not).
    pub fn checked(&self) -> usize {
        self.checked.load(Ordering::Relaxed)
    }

    /// The name of the schema definition `msg` is checked against.
    pub fn definition_for(&self, msg: &Value) -> Result<String, String> {
        self.inner.definition_for(msg)
    }
}

impl DapInner {
    fn load() -> anyhow::Result<DapInner> {
        let source = match locate(DAP_FILE)? {
            Located::Protocol(path) => path,
            Located::Absent => {
                let root = workspace_root();
                let fallback = root.join(DEBUGPY_FILE);
                if !fallback.is_file() {
                    fetch_debugpy_schema(&root).map_err(anyhow::Error::msg)?;
                }
                shout(&format!(
                    "\n!!! ../shared/protocol/{DAP_FILE} not found (set TANDEM_PROTOCOL_DIR to \
                     point at it):\n!!! DAP messages are validated against the OLDER schema \
                     shipped in PyPI's debugpy: {}\n",
                    fallback.display()
                ));
                fallback
            }
        };
        DapInner::from_file(source)
    }

    fn from_file(source: PathBuf) -> anyhow::Result<DapInner> {
        let document = read_json(&source)?;
        if !document.get("definitions").is_some_and(Value::is_object) {
            bail!("{} has no `definitions`", source.display());
        }
        let validators = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft4)
            .build_map(&document)
            .map_err(|e| anyhow::anyhow!("compiling {}: {e}", source.display()))?;
        Ok(DapInner {
            source,
            document,
            validators,
        })
    }

    fn definitions(&self) -> &Map<String, Value> {
        static EMPTY: OnceLock<Map<String, Value>> = OnceLock::new();
        self.document
            .get("definitions")
            .and_then(Value::as_object)
            .unwrap_or_else(|| EMPTY.get_or_init(Map::new))
    }

    fn definition_for(&self, msg: &Value) -> Result<String, String> {
        let kind = msg
            .get("type")
            .and_then(Value::as_str)
            .ok_or("message has no string `type`")?;
        let (name_field, suffix, base) = match kind {
            "response" => {
                if msg.get("success") == Some(&Value::Bool(false)) {
                    return Ok("ErrorResponse".into());
                }
                ("command", "Response", "Response")
            }
            "event" => ("event", "Event", "Event"),
            "request" => ("command", "Request", "Request"),
            other => return Err(format!("`type` is {other:?}, not response/event/request")),
        };
        let name = msg
            .get(name_field)
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{kind} has no string `{name_field}`"))?;
        let specific = format!("{}{suffix}", upper_first(name));
        if self.definitions().contains_key(&specific) {
            Ok(specific)
        } else {
            Ok(base.into())
        }
    }

    fn validate(&self, msg: &Value) -> Result<(), String> {
        let definition = self.definition_for(msg)?;
        let mut errors = Vec::new();

        if definition.ends_with("Request")
            && definition != "Request"
            && !self.is_reverse(&definition)
        {
            errors.push(format!(
                "tandem sent a `{definition}`, which is not a reverse request"
            ));
        }

        let pointer = format!("#/definitions/{definition}");
        match self.validators.get(&pointer) {
            Some(validator) => {
                for error in validator.iter_errors(msg) {
                    let at = error.instance_path().to_string();
                    let at = if at.is_empty() { "/".to_owned() } else { at };
                    errors.push(format!("{at}: {}", cut(&error.to_string())));
                }
            }
            None => errors.push(format!("no compiled validator for {pointer}")),
        }

        if let Some(schema) = self.definitions().get(&definition) {
            self.strict(msg, &[schema], "", &mut errors, 0);
        }

        if errors.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "DAP {definition} invalid: {} (message: {})",
                errors.join("; "),
                excerpt(msg)
            ))
        }
    }

    /// A `<Command>Request` the schema files under "Reverse Requests" (adapter to client).
    fn is_reverse(&self, definition: &str) -> bool {
        let Some(def) = self.definitions().get(definition) else {
            return false;
        };
        let mut leaves = Vec::new();
        self.leaves(def, &mut leaves, 0);
        // The schema titles `runInTerminal` "Reverse Requests" but not `startDebugging`,
        // whose description says it all the same.
        leaves.iter().any(|leaf| {
            leaf.get("title").and_then(Value::as_str) == Some("Reverse Requests")
                || leaf
                    .get("description")
                    .and_then(Value::as_str)
                    .is_some_and(|d| {
                        d.starts_with("This request is sent from the debug adapter to the client")
                    })
        })
    }

    /// Resolves `#/definitions/Name`.
    fn resolve(&self, reference: &str) -> Option<(&str, &Value)> {
        let name = reference.strip_prefix("#/definitions/")?;
        self.definitions()
            .get_key_value(name)
            .map(|(name, def)| (name.as_str(), def))
    }

    /// Flattens `$ref` and `allOf` into the schema objects that apply to one value.
    /// Returns false when an open definition was reached (no strict check there).
    fn leaves<'a>(&'a self, schema: &'a Value, out: &mut Vec<&'a Value>, depth: usize) -> bool {
        if depth > MAX_DEPTH {
            return true;
        }
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            // Draft-04 ignores the siblings of `$ref`.
            return match self.resolve(reference) {
                Some((name, _)) if OPEN_DAP_DEFINITIONS.contains(&name) => false,
                Some((_, def)) => self.leaves(def, out, depth + 1),
                // The compiled validator already reports an unresolvable reference.
                None => true,
            };
        }
        out.push(schema);
        let mut closed = true;
        if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
            for sub in all {
                closed &= self.leaves(sub, out, depth + 1);
            }
        }
        closed
    }

    /// Reports property names that no applicable definition declares.
    fn strict(
        &self,
        value: &Value,
        schemas: &[&Value],
        path: &str,
        errors: &mut Vec<String>,
        depth: usize,
    ) {
        if depth > MAX_DEPTH {
            return;
        }
        let mut leaves = Vec::new();
        let mut closed = true;
        for schema in schemas {
            closed &= self.leaves(schema, &mut leaves, depth);
        }
        // `oneOf` / `anyOf` branches count as applicable alternatives: their declared
        // properties are united (the schema validator decides which branch matched).
        let mut index = 0;
        while index < leaves.len() {
            let leaf = leaves[index];
            for key in ["oneOf", "anyOf"] {
                if let Some(branches) = leaf.get(key).and_then(Value::as_array) {
                    for branch in branches {
                        closed &= self.leaves(branch, &mut leaves, depth);
                    }
                }
            }
            index += 1;
        }

        match value {
            Value::Object(object) => {
                let mut declared: HashMap<&str, Vec<&Value>> = HashMap::new();
                let mut any_properties = false;
                let mut extra: Vec<&Value> = Vec::new();
                for leaf in &leaves {
                    if let Some(properties) = leaf.get("properties").and_then(Value::as_object) {
                        any_properties = true;
                        for (name, schema) in properties {
                            declared.entry(name.as_str()).or_default().push(schema);
                        }
                    }
                    match leaf.get("additionalProperties") {
                        Some(Value::Bool(true)) => closed = false,
                        Some(schema @ Value::Object(_)) => {
                            closed = false;
                            extra.push(schema);
                        }
                        _ => {}
                    }
                }
                for (key, item) in object {
                    let item_path = format!("{path}/{}", pointer_segment(key));
                    if let Some(schemas) = declared.get(key.as_str()) {
                        self.strict(item, schemas, &item_path, errors, depth + 1);
                    } else if !extra.is_empty() {
                        self.strict(item, &extra, &item_path, errors, depth + 1);
                    } else if closed && any_properties {
                        let names: BTreeSet<&str> = declared.keys().copied().collect();
                        let names: Vec<&str> = names.into_iter().collect();
                        errors.push(format!(
                            "{item_path}: property `{key}` is not declared by the schema \
                             (declared here: {})",
                            names.join(", ")
                        ));
                    }
                }
            }
            Value::Array(items) => {
                let item_schemas: Vec<&Value> =
                    leaves.iter().filter_map(|leaf| leaf.get("items")).collect();
                if !item_schemas.is_empty() {
                    for (i, item) in items.iter().enumerate() {
                        self.strict(
                            item,
                            &item_schemas,
                            &format!("{path}/{i}"),
                            errors,
                            depth + 1,
                        );
                    }
                }
            }
            _ => {}
        }
    }
}

// ---------------------------------------------------------------------------------------
// LSP

/// The LSP meta model, indexed by name, read once per test process.
struct LspInner {
    source: PathBuf,
    requests: HashMap<String, Value>,
    notifications: HashMap<String, Value>,
    structures: HashMap<String, Value>,
    enumerations: HashMap<String, Value>,
    aliases: HashMap<String, Value>,
}

/// Validates the LSP messages tandem sends by walking metaModel.json.
pub struct LspModel {
    inner: Arc<LspInner>,
    checked: AtomicUsize,
}

impl LspModel {
    /// Loads metaModel.json from $TANDEM_PROTOCOL_DIR, else <workspace>/../shared/protocol.
    /// There is no fallback: Err when absent (the caller says LSP validation is skipped).
    pub fn load() -> anyhow::Result<LspModel> {
        static CACHE: Mutex<Option<Arc<LspInner>>> = Mutex::new(None);
        let mut cache = CACHE.lock().unwrap_or_else(|poison| poison.into_inner());
        let inner = match cache.as_ref() {
            Some(inner) => Arc::clone(inner),
            None => {
                let inner = Arc::new(LspInner::load()?);
                *cache = Some(Arc::clone(&inner));
                inner
            }
        };
        eprintln!("LSP messages validated against {}", inner.source.display());
        Ok(LspModel {
            inner,
            checked: AtomicUsize::new(0),
        })
    }

    /// Loads a given metaModel.json, uncached.
    pub fn from_file(path: &Path) -> anyhow::Result<LspModel> {
        Ok(LspModel {
            inner: Arc::new(LspInner::from_file(path.to_path_buf())?),
            checked: AtomicUsize::new(0),
        })
    }

    /// The file the meta model was read from.
    pub fn source(&self) -> &Path {
        &self.inner.source
    }

    /// Validates one message the SERVER sent. `answered_method` is the method of the client
    /// request a response answers (None for notifications and server->client requests).
    pub fn validate_server_message(
        &self,
        msg: &Value,
        answered_method: Option<&str>,
    ) -> Result<(), String> {
        self.checked.fetch_add(1, Ordering::Relaxed);
        self.inner
            .validate_server_message(msg, answered_method)
            .map_err(|error| format!("LSP {error} (message: {})", excerpt(msg)))
    }

    /// How many messages were validated so far (passed or not).
    pub fn checked(&self) -> usize {
        self.checked.load(Ordering::Relaxed)
    }
}

/// A property of a structure or object literal.
struct Property<'a> {
    name: &'a str,
    ty: &'a Value,
    optional: bool,
}

/// The JSON kind of a value, for error messages.
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A JSON-RPC id: an integer or a string (null only where the envelope allows it).
fn check_id(id: &Value, null_allowed: bool) -> Result<(), String> {
    match id {
        Value::String(_) => Ok(()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Ok(()),
        Value::Null if null_allowed => Ok(()),
        other => Err(format!(
            "`id` must be an integer or a string{}, not {}",
            if null_allowed { " or null" } else { "" },
            excerpt(other)
        )),
    }
}

fn check_keys(object: &Map<String, Value>, allowed: &[&str], what: &str) -> Result<(), String> {
    for key in object.keys() {
        if !allowed.contains(&key.as_str()) {
            return Err(format!(
                "{what} has member `{key}` (allowed: {})",
                allowed.join(", ")
            ));
        }
    }
    Ok(())
}

fn index_by(model: &Value, list: &str, key: &str) -> anyhow::Result<HashMap<String, Value>> {
    let items = model
        .get(list)
        .and_then(Value::as_array)
        .with_context(|| format!("meta model has no `{list}` array"))?;
    let mut map = HashMap::new();
    for item in items {
        let name = item
            .get(key)
            .and_then(Value::as_str)
            .with_context(|| format!("an entry of `{list}` has no `{key}`"))?;
        map.insert(name.to_owned(), item.clone());
    }
    Ok(map)
}

impl LspInner {
    fn load() -> anyhow::Result<LspInner> {
        let source = match locate(LSP_FILE)? {
            Located::Protocol(path) => path,
            Located::Absent => bail!(
                "{LSP_FILE} not found in $TANDEM_PROTOCOL_DIR or {}",
                workspace_root().join("../shared/protocol").display()
            ),
        };
        LspInner::from_file(source)
    }

    fn from_file(source: PathBuf) -> anyhow::Result<LspInner> {
        let model = read_json(&source)?;
        Ok(LspInner {
            requests: index_by(&model, "requests", "method")?,
            notifications: index_by(&model, "notifications", "method")?,
            structures: index_by(&model, "structures", "name")?,
            enumerations: index_by(&model, "enumerations", "name")?,
            aliases: index_by(&model, "typeAliases", "name")?,
            source,
        })
    }

    fn validate_server_message(
        &self,
        msg: &Value,
        answered_method: Option<&str>,
    ) -> Result<(), String> {
        let object = msg.as_object().ok_or("message is not a JSON object")?;
        if object.get("jsonrpc") != Some(&Value::String("2.0".into())) {
            return Err("`jsonrpc` is not \"2.0\"".into());
        }
        match object.get("method") {
            Some(method) => {
                let method = method.as_str().ok_or("`method` is not a string")?;
                self.validate_outgoing(object, method)
            }
            None => self.validate_response(object, answered_method),
        }
    }

    /// A server->client request or notification.
    fn validate_outgoing(&self, object: &Map<String, Value>, method: &str) -> Result<(), String> {
        let is_request = object.contains_key("id");
        let what = if is_request {
            format!("request {method}")
        } else {
            format!("notification {method}")
        };
        if is_request {
            check_keys(object, &["jsonrpc", "id", "method", "params"], &what)?;
            check_id(&object["id"], false).map_err(|e| format!("{what}: {e}"))?;
        } else {
            check_keys(object, &["jsonrpc", "method", "params"], &what)?;
        }
        let params = object.get("params");
        if let Some(params) = params {
            if !params.is_object() && !params.is_array() {
                return Err(format!("{what}: `params` must be an object or an array"));
            }
        }
        if method.starts_with("tandem/") {
            return Ok(());
        }
        let table = if is_request {
            &self.requests
        } else {
            &self.notifications
        };
        let Some(definition) = table.get(method) else {
            return Err(format!(
                "{what}: the meta model has no such {}",
                kind_word(is_request)
            ));
        };
        match definition.get("messageDirection").and_then(Value::as_str) {
            Some("serverToClient" | "both") => {}
            direction => {
                return Err(format!(
                    "{what}: a server must not send it (messageDirection {direction:?})"
                ))
            }
        }
        match (definition.get("params"), params) {
            (Some(ty), Some(params)) => self
                .check(params, ty, "params", 0)
                .map_err(|e| format!("{what}: {e}")),
            (Some(_), None) => Err(format!("{what}: `params` is missing")),
            (None, Some(_)) => Err(format!("{what}: takes no `params`")),
            (None, None) => Ok(()),
        }
    }

    fn validate_response(
        &self,
        object: &Map<String, Value>,
        answered_method: Option<&str>,
    ) -> Result<(), String> {
        let what = match answered_method {
            Some(method) => format!("response to {method}"),
            None => "response".to_owned(),
        };
        check_keys(object, &["jsonrpc", "id", "result", "error"], &what)?;
        let id = object
            .get("id")
            .ok_or_else(|| format!("{what} has no `id` (nor a `method`)"))?;
        check_id(id, true).map_err(|e| format!("{what}: {e}"))?;
        let definition = answered_method
            .filter(|method| !method.starts_with("tandem/"))
            .and_then(|method| self.requests.get(method));
        match (object.get("result"), object.get("error")) {
            (Some(_), Some(_)) => Err(format!("{what} has both `result` and `error`")),
            (None, None) => Err(format!("{what} has neither `result` nor `error`")),
            (Some(result), None) => {
                if id.is_null() {
                    return Err(format!("{what}: a `result` with a null `id`"));
                }
                match definition.and_then(|d| d.get("result")) {
                    Some(ty) => self
                        .check(result, ty, "result", 0)
                        .map_err(|e| format!("{what}: {e}")),
                    None => Ok(()),
                }
            }
            (None, Some(error)) => {
                let error = error
                    .as_object()
                    .ok_or_else(|| format!("{what}: `error` is not an object"))?;
                check_keys(
                    error,
                    &["code", "message", "data"],
                    &format!("{what}: error"),
                )?;
                match error.get("code") {
                    Some(Value::Number(n)) if n.is_i64() => {}
                    _ => return Err(format!("{what}: error `code` is not an integer")),
                }
                if !error.get("message").is_some_and(Value::is_string) {
                    return Err(format!("{what}: error `message` is not a string"));
                }
                match (
                    definition.and_then(|d| d.get("errorData")),
                    error.get("data"),
                ) {
                    (Some(ty), Some(data)) => self
                        .check(data, ty, "error.data", 0)
                        .map_err(|e| format!("{what}: {e}")),
                    _ => Ok(()),
                }
            }
        }
    }

    /// Checks `value` at `path` against a meta model type.
    fn check(&self, value: &Value, ty: &Value, path: &str, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!("{path}: nested deeper than {MAX_DEPTH} levels"));
        }
        let kind = ty.get("kind").and_then(Value::as_str).unwrap_or("");
        let mismatch = |expected: &str| {
            Err(format!(
                "{path}: expected {expected}, found {} {}",
                json_kind(value),
                excerpt(value)
            ))
        };
        match kind {
            "base" => {
                let name = ty.get("name").and_then(Value::as_str).unwrap_or("");
                if check_base(value, name) {
                    Ok(())
                } else {
                    mismatch(name)
                }
            }
            "reference" => {
                let name = ty.get("name").and_then(Value::as_str).unwrap_or("");
                self.check_reference(value, name, path, depth)
            }
            "array" => {
                let Value::Array(items) = value else {
                    return mismatch("array");
                };
                let element = ty.get("element").unwrap_or(&Value::Null);
                for (i, item) in items.iter().enumerate() {
                    self.check(item, element, &format!("{path}[{i}]"), depth + 1)?;
                }
                Ok(())
            }
            "map" => {
                let Value::Object(entries) = value else {
                    return mismatch("map (object)");
                };
                let key_ty = ty.get("key").unwrap_or(&Value::Null);
                let value_ty = ty.get("value").unwrap_or(&Value::Null);
                for (key, item) in entries {
                    self.check_map_key(key, key_ty, path, depth)?;
                    self.check(item, value_ty, &format!("{path}[{key:?}]"), depth + 1)?;
                }
                Ok(())
            }
            "and" => {
                let mut properties = Vec::new();
                for item in items_of(ty) {
                    self.properties_of_type(item, &mut properties, path, depth)?;
                }
                self.check_properties(value, &properties, "intersection", path, depth)
            }
            "or" => {
                let mut failures = Vec::new();
                for item in items_of(ty) {
                    match self.check(value, item, path, depth + 1) {
                        Ok(()) => return Ok(()),
                        Err(e) => failures.push(cut(&e)),
                    }
                }
                Err(format!(
                    "{path}: matches no alternative of {} [{}]",
                    describe(ty),
                    failures.join(" | ")
                ))
            }
            "tuple" => {
                let Value::Array(values) = value else {
                    return mismatch("tuple (array)");
                };
                let items = items_of(ty);
                if values.len() != items.len() {
                    return mismatch(&format!("tuple of {} items", items.len()));
                }
                for (i, (item, item_ty)) in values.iter().zip(items).enumerate() {
                    self.check(item, item_ty, &format!("{path}[{i}]"), depth + 1)?;
                }
                Ok(())
            }
            "literal" => {
                let mut properties = Vec::new();
                collect_own_properties(ty.get("value").unwrap_or(&Value::Null), &mut properties);
                self.check_properties(value, &properties, "object literal", path, depth)
            }
            "stringLiteral" | "integerLiteral" | "booleanLiteral" => {
                let expected = ty.get("value").unwrap_or(&Value::Null);
                if literal_eq(value, expected) {
                    Ok(())
                } else {
                    mismatch(&format!("literal {expected}"))
                }
            }
            other => Err(format!("{path}: unknown meta model type kind {other:?}")),
        }
    }

    fn check_reference(
        &self,
        value: &Value,
        name: &str,
        path: &str,
        depth: usize,
    ) -> Result<(), String> {
        if self.structures.contains_key(name) {
            let mut properties = Vec::new();
            self.structure_properties(name, &mut properties, depth)?;
            return self.check_properties(value, &properties, name, path, depth);
        }
        if let Some(enumeration) = self.enumerations.get(name) {
            return check_enumeration(value, enumeration, name, path);
        }
        if let Some(alias) = self.aliases.get(name) {
            let ty = alias.get("type").unwrap_or(&Value::Null);
            return self.check(value, ty, path, depth + 1);
        }
        Err(format!("{path}: the meta model has no type named {name:?}"))
    }

    fn check_map_key(&self, key: &str, ty: &Value, path: &str, depth: usize) -> Result<(), String> {
        let as_value = match ty.get("kind").and_then(Value::as_str) {
            // Keys are strings in JSON; an integer key is its decimal text.
            Some("base")
                if matches!(
                    ty.get("name").and_then(Value::as_str),
                    Some("integer" | "uinteger")
                ) =>
            {
                match key.parse::<i64>() {
                    Ok(n) => Value::from(n),
                    Err(_) => return Err(format!("{path}: map key {key:?} is not an integer")),
                }
            }
            _ => Value::String(key.to_owned()),
        };
        self.check(&as_value, ty, &format!("{path} key {key:?}"), depth + 1)
    }

    /// Properties of a structure with those of its `extends` and `mixins`; a structure's
    /// own property replaces an inherited one of the same name.
    fn structure_properties<'a>(
        &'a self,
        name: &str,
        out: &mut Vec<Property<'a>>,
        depth: usize,
    ) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!(
                "structure {name} inherits deeper than {MAX_DEPTH} levels"
            ));
        }
        let structure = self
            .structures
            .get(name)
            .ok_or_else(|| format!("the meta model has no structure named {name:?}"))?;
        for key in ["extends", "mixins"] {
            for parent in structure
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let parent_name = parent.get("name").and_then(Value::as_str).unwrap_or("");
                self.structure_properties(parent_name, out, depth + 1)?;
            }
        }
        collect_own_properties(structure, out);
        Ok(())
    }

    /// The properties an `and` item contributes: a structure, an object literal, or an
    /// alias of either.
    fn properties_of_type<'a>(
        &'a self,
        ty: &'a Value,
        out: &mut Vec<Property<'a>>,
        path: &str,
        depth: usize,
    ) -> Result<(), String> {
        match ty.get("kind").and_then(Value::as_str) {
            Some("reference") => {
                let name = ty.get("name").and_then(Value::as_str).unwrap_or("");
                if self.structures.contains_key(name) {
                    return self.structure_properties(name, out, depth + 1);
                }
                if let Some(alias) = self.aliases.get(name) {
                    let aliased = alias.get("type").unwrap_or(&Value::Null);
                    return self.properties_of_type(aliased, out, path, depth + 1);
                }
                Err(format!(
                    "{path}: `and` over {name:?}, which is not a structure"
                ))
            }
            Some("literal") => {
                collect_own_properties(ty.get("value").unwrap_or(&Value::Null), out);
                Ok(())
            }
            _ => Err(format!(
                "{path}: `and` over {}, which is not a structure",
                describe(ty)
            )),
        }
    }

    fn check_properties(
        &self,
        value: &Value,
        properties: &[Property<'_>],
        what: &str,
        path: &str,
        depth: usize,
    ) -> Result<(), String> {
        let Value::Object(object) = value else {
            return Err(format!(
                "{path}: expected {what} (object), found {} {}",
                json_kind(value),
                excerpt(value)
            ));
        };
        // Later entries (a structure's own properties) replace inherited ones.
        let mut by_name: HashMap<&str, &Property<'_>> = HashMap::new();
        for property in properties {
            by_name.insert(property.name, property);
        }
        for key in object.keys() {
            if !by_name.contains_key(key.as_str()) {
                let names: BTreeSet<&str> = by_name.keys().copied().collect();
                let names: Vec<&str> = names.into_iter().collect();
                return Err(format!(
                    "{path}: property `{key}` is not declared by {what} (declared: {})",
                    names.join(", ")
                ));
            }
        }
        let mut names: Vec<&&str> = by_name.keys().collect();
        names.sort();
        for name in names {
            let property = by_name[*name];
            let child = if path.is_empty() {
                property.name.to_owned()
            } else {
                format!("{path}.{}", property.name)
            };
            match object.get(property.name) {
                Some(item) => self.check(item, property.ty, &child, depth + 1)?,
                None if property.optional => {}
                None => return Err(format!("{child}: required by {what} but missing")),
            }
        }
        Ok(())
    }
}

fn kind_word(is_request: bool) -> &'static str {
    if is_request {
        "request"
    } else {
        "notification"
    }
}

fn items_of(ty: &Value) -> &[Value] {
    ty.get("items")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn collect_own_properties<'a>(holder: &'a Value, out: &mut Vec<Property<'a>>) {
    for property in holder
        .get("properties")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        out.push(Property {
            name: property.get("name").and_then(Value::as_str).unwrap_or(""),
            ty: property.get("type").unwrap_or(&Value::Null),
            optional: property.get("optional") == Some(&Value::Bool(true)),
        });
    }
}

/// A short name for a type, for error messages.
fn describe(ty: &Value) -> String {
    let kind = ty.get("kind").and_then(Value::as_str).unwrap_or("?");
    match kind {
        "base" | "reference" => ty
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_owned(),
        "array" => format!("{}[]", describe(ty.get("element").unwrap_or(&Value::Null))),
        "or" | "and" | "tuple" => {
            let separator = match kind {
                "or" => " | ",
                "and" => " & ",
                _ => ", ",
            };
            let parts: Vec<String> = items_of(ty).iter().map(describe).collect();
            if kind == "tuple" {
                format!("[{}]", parts.join(separator))
            } else {
                parts.join(separator)
            }
        }
        "map" => format!(
            "map<{}, {}>",
            describe(ty.get("key").unwrap_or(&Value::Null)),
            describe(ty.get("value").unwrap_or(&Value::Null))
        ),
        "literal" => "object literal".to_owned(),
        _ => format!("{}", ty.get("value").unwrap_or(&Value::Null)),
    }
}

/// LSP base types. `integer` is a signed 32-bit integer, `uinteger` an unsigned one
/// (at most 2^31 - 1), `decimal` any number. URIs must at least have a scheme.
fn check_base(value: &Value, name: &str) -> bool {
    match name {
        "string" | "RegExp" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "decimal" => value.is_number(),
        "integer" => value.as_i64().is_some_and(|n| i32::try_from(n).is_ok()),
        "uinteger" => value.as_u64().is_some_and(|n| n <= i32::MAX as u64),
        "DocumentUri" | "URI" => value.as_str().is_some_and(has_uri_scheme),
        _ => false,
    }
}

/// `scheme ":"` where scheme is ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) (RFC 3986).
fn has_uri_scheme(text: &str) -> bool {
    let Some((scheme, _)) = text.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

fn literal_eq(value: &Value, expected: &Value) -> bool {
    match (value, expected) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        _ => value == expected,
    }
}

fn check_enumeration(
    value: &Value,
    enumeration: &Value,
    name: &str,
    path: &str,
) -> Result<(), String> {
    let base = enumeration
        .get("type")
        .and_then(|t| t.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("string");
    if !check_base(value, base) {
        return Err(format!(
            "{path}: expected {name} ({base}), found {} {}",
            json_kind(value),
            excerpt(value)
        ));
    }
    if enumeration.get("supportsCustomValues") == Some(&Value::Bool(true)) {
        return Ok(());
    }
    let values: Vec<&Value> = enumeration
        .get("values")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("value"))
        .collect();
    if values.iter().any(|v| literal_eq(value, v)) {
        Ok(())
    } else {
        let allowed: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        Err(format!(
            "{path}: {value} is not a value of {name} (allowed: {})",
            allowed.join(", ")
        ))
    }
}
