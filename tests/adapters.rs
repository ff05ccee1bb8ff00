//! The editor integrations in adapters/, each exercised by the real editor or by running the
//! command lines its configuration names: Neovim (headless, built-in LSP client) and Emacs
//! (batch, eglot) read tandem's hover on a C file; Helix's languages.toml is parsed and its
//! language server and debugger command lines (launch and attach templates filled in as
//! Helix fills them) are run. Neovim, Emacs and eglot come from Debian
//! (scripts/install-test-deps installs them).
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};
use support::dap::DapClient;
use support::{Peer, Protocol, PATIENCE};

const SAMPLE: &str = "live_values.c";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// A workspace with the sample and its binary, a private runtime directory (sockets), and a
/// `bin/` holding `tandem` so configurations naming plain `tandem` find it on PATH.
struct Fixture {
    base: PathBuf,
    root: PathBuf,
}

impl Fixture {
    fn new(tag: &str) -> Fixture {
        let base =
            std::env::temp_dir().join(format!("tandem-adapters-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let root = base.join("ws");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(base.join("run")).unwrap();
        std::fs::create_dir_all(base.join("bin")).unwrap();
        std::os::unix::fs::symlink(support::tandem_bin(), base.join("bin/tandem")).unwrap();
        let root = root.canonicalize().unwrap();
        std::fs::copy(repo().join("samples/c").join(SAMPLE), root.join(SAMPLE)).unwrap();
        let status = Command::new("gcc")
            .args(["-g", "-O0", "-o", "live", SAMPLE])
            .current_dir(&root)
            .status()
            .unwrap();
        assert!(status.success(), "gcc failed");
        Fixture { base, root }
    }

    fn source(&self) -> PathBuf {
        self.root.join(SAMPLE)
    }

    /// The environment editors run in: PATH with tandem first, private runtime directory.
    fn env(&self, cmd: &mut Command) {
        let path = format!(
            "{}:{}",
            self.base.join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        cmd.env("PATH", path)
            .env("XDG_RUNTIME_DIR", self.base.join("run"))
            .env("HOME", &self.base);
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

/// Where the hover is asked: `factor` in `int sx = p.x * factor;` (0-based line, column).
fn hover_position(file: &Path) -> (usize, usize) {
    let text = std::fs::read_to_string(file).unwrap();
    let (line, l) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains("int sx = p.x * factor"))
        .unwrap();
    (line, l.find("factor").unwrap())
}

fn editor(name: &str) -> PathBuf {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(name))
            .find(|p| p.is_file())
    });
    found.unwrap_or_else(|| {
        panic!("{name} is not installed: run scripts/install-test-deps (Debian's package)")
    })
}

/// Runs an editor to completion (bounded), returning its stdout.
fn run_editor(mut cmd: Command) -> String {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "the editor did not finish; stderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the editor failed ({}): {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn assert_factor_hover(hover: &Value) {
    let value = hover["contents"]["value"].as_str().unwrap_or_default();
    assert!(value.contains("int factor"), "{hover:#}");
    assert!(value.contains("parameter"), "{hover:#}");
}

#[test]
fn neovim_reads_tandems_hover() {
    let fx = Fixture::new("nvim");
    let nvim = editor("nvim");
    let (line, col) = hover_position(&fx.source());
    let out = fx.base.join("hover.json");
    let mut cmd = Command::new(nvim);
    fx.env(&mut cmd);
    cmd.current_dir(&fx.root)
        .args(["--headless", "--clean", "-n", "-c"])
        .arg(format!(
            "luafile {}",
            repo().join("tests/editors/nvim_hover.lua").display()
        ))
        .env("TANDEM_ADAPTER", repo().join("adapters/neovim"))
        .env("TANDEM_BIN", support::tandem_bin())
        .env("TANDEM_FILE", fx.source())
        .env("TANDEM_LINE", line.to_string())
        .env("TANDEM_COL", col.to_string())
        .env("TANDEM_OUT", &out);
    run_editor(cmd);
    let result: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert!(result.get("error").is_none(), "{result:#}");
    assert_eq!(result["clients"], json!(["tandem"]), "{result:#}");
    // No root marker in the fixture: the working directory is the root.
    assert_eq!(result["roots"], json!([fx.root]), "{result:#}");
    assert_factor_hover(&result["hovers"][0]);
    // nvim-dap is not installed here: the adapter says so instead of failing.
    assert_eq!(result["dap"], false);
}

#[test]
fn neovim_runs_tandem_as_companion_beside_another_server() {
    let fx = Fixture::new("nvim-companion");
    let nvim = editor("nvim");
    let (line, col) = hover_position(&fx.source());
    let out = fx.base.join("companion.json");
    let mut cmd = Command::new(nvim);
    fx.env(&mut cmd);
    cmd.current_dir(&fx.root)
        .args(["--headless", "--clean", "-n", "-c"])
        .arg(format!(
            "luafile {}",
            repo().join("tests/editors/nvim_companion.lua").display()
        ))
        .env("TANDEM_ADAPTER", repo().join("adapters/neovim"))
        .env("TANDEM_BIN", support::tandem_bin())
        .env("TANDEM_FAKE_LSP", repo().join("tests/editors/fake_lsp.py"))
        .env("TANDEM_FILE", fx.source())
        .env("TANDEM_LINE", line.to_string())
        .env("TANDEM_COL", col.to_string())
        .env("TANDEM_OUT", &out);
    run_editor(cmd);
    let result: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert!(result.get("error").is_none(), "{result:#}");
    assert_eq!(
        result["clients"],
        json!(["fake-clangd", "tandem"]),
        "{result:#}"
    );
    assert_eq!(result["features"], "companion", "{result:#}");
    // The full-mode server started before the other one attached is gone.
    assert_eq!(result["tandem_running"], 1, "{result:#}");
    assert_eq!(result["document_symbols"], false, "{result:#}");
    assert_eq!(result["definition"], false, "{result:#}");
    assert_eq!(result["hover_provider"], true, "{result:#}");
    // Nothing is paused: tandem's hover is empty, the other server's is shown alone.
    assert_eq!(result["hovers"]["tandem"], Value::Null, "{result:#}");
    assert_eq!(
        result["hovers"]["fake-clangd"]["contents"]["value"], "fake-clangd hover",
        "{result:#}"
    );
    println!("neovim beside a second server: tandem in companion mode, no symbols/definitions, null hover while nothing is paused");
}

#[test]
fn emacs_eglot_reads_tandems_hover() {
    let fx = Fixture::new("emacs");
    let emacs = editor("emacs");
    let (line, col) = hover_position(&fx.source());
    let mut cmd = Command::new(emacs);
    fx.env(&mut cmd);
    cmd.current_dir(&fx.root)
        .args(["--batch", "--no-init-file", "-l"])
        .arg(repo().join("tests/editors/emacs_hover.el"))
        .env("TANDEM_ADAPTER", repo().join("adapters/emacs/tandem.el"))
        .env("TANDEM_BIN", support::tandem_bin())
        .env("TANDEM_FILE", fx.source())
        .env("TANDEM_LINE", line.to_string())
        .env("TANDEM_COL", col.to_string());
    let stdout = run_editor(cmd);
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON from emacs: {stdout}"));
    let result: Value = serde_json::from_str(line).unwrap();
    // eglot's contact: the command line, then the initializationOptions it sends.
    assert_eq!(
        result["server"],
        json!([support::tandem_bin(), "lsp", "initializationOptions", {"tandem": {"features": "full"}}]),
        "{result:#}"
    );
    assert_factor_hover(&result["hover"]);
    // The dape configuration names `tandem dap`; run that command line.
    assert_eq!(result["dapeCommand"], support::tandem_bin());
    assert_eq!(result["dapeArgs"], json!(["dap"]));
    assert_eq!(result["dapeType"], "tandem");
    let mut dap_cmd = Command::new(result["dapeCommand"].as_str().unwrap());
    dap_cmd.args(["dap", "--standalone"]).current_dir(&fx.root);
    let mut dap = DapClient::with_peer(Peer::from_command(Protocol::Dap, dap_cmd));
    dap.initialize();
    dap.finish();
}

/// Helix's template substitution: `{N}` in string values becomes the N-th completion.
fn fill(value: &toml::Value, completions: &[&str]) -> Value {
    match value {
        toml::Value::String(s) => {
            let mut out = s.clone();
            for (i, c) in completions.iter().enumerate() {
                out = out.replace(&format!("{{{i}}}"), c);
            }
            json!(out)
        }
        toml::Value::Array(items) => items.iter().map(|v| fill(v, completions)).collect(),
        toml::Value::Table(t) => t
            .iter()
            .map(|(k, v)| (k.clone(), fill(v, completions)))
            .collect::<serde_json::Map<_, _>>()
            .into(),
        toml::Value::Integer(i) => json!(i),
        toml::Value::Boolean(b) => json!(b),
        other => json!(other.to_string()),
    }
}

/// A command line from the configuration, run with the fixture's PATH in `cwd`.
fn command_line(fx: &Fixture, table: &toml::Value, cwd: &Path) -> Command {
    let program = table["command"].as_str().unwrap();
    let args: Vec<&str> = table["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let mut cmd = Command::new(program);
    fx.env(&mut cmd);
    cmd.args(args).current_dir(cwd);
    cmd
}

#[test]
fn helix_languages_toml_runs_as_helix_would() {
    let fx = Fixture::new("helix");
    let text = std::fs::read_to_string(repo().join("adapters/helix/languages.toml")).unwrap();
    assert!(
        text.starts_with('#'),
        "the file starts with a comment saying what it is"
    );
    let config: toml::Value = toml::from_str(&text).unwrap();
    let server = &config["language-server"]["tandem"];
    assert_eq!(server["command"].as_str(), Some("tandem"));

    // The language server's command line serves LSP.
    let mut lsp = Peer::from_command(Protocol::Lsp, command_line(&fx, server, &fx.root));
    let init = lsp.lsp_request(
        "initialize",
        json!({"processId": null, "rootUri": format!("file://{}", fx.root.display()), "capabilities": {}}),
    );
    assert_eq!(init["result"]["serverInfo"]["name"], "tandem", "{init}");
    lsp.lsp_notify("initialized", json!({}));

    // The companion server: Helix sends its `config` as initializationOptions.
    let companion = &config["language-server"]["tandem-companion"];
    let mut side = Peer::from_command(Protocol::Lsp, command_line(&fx, companion, &fx.root));
    let options = serde_json::to_value(&companion["config"]).unwrap();
    let side_init = side.lsp_request(
        "initialize",
        json!({"processId": null, "rootUri": null, "capabilities": {}, "initializationOptions": options}),
    );
    let caps = &side_init["result"]["capabilities"];
    assert!(caps.get("documentSymbolProvider").is_none(), "{side_init}");
    assert!(caps.get("semanticTokensProvider").is_none(), "{side_init}");
    assert_eq!(caps["hoverProvider"], true, "{side_init}");
    drop(side);
    println!("helix: tandem-companion's config starts tandem lsp in companion mode");

    let languages = config["language"].as_array().unwrap();
    let names: Vec<&str> = languages
        .iter()
        .map(|l| l["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["c", "cpp", "rust"]);
    for language in languages {
        assert_eq!(
            language["language-servers"].as_array().unwrap(),
            &vec![toml::Value::from("tandem")]
        );
        let debugger = &language["debugger"];
        assert_eq!(debugger["transport"].as_str(), Some("stdio"));
        let templates = debugger["templates"].as_array().unwrap();
        for request in ["launch", "attach"] {
            assert!(
                templates
                    .iter()
                    .any(|t| t["request"].as_str() == Some(request)),
                "{} has no {request} template",
                language["name"]
            );
        }
    }

    // The C debugger's templates, filled in and run through its command line — bridged to
    // the language server started above (Helix starts both in the workspace root).
    let debugger = &languages[0]["debugger"];
    let templates = debugger["templates"].as_array().unwrap();
    let launch = templates
        .iter()
        .find(|t| t["name"].as_str() == Some("binary"))
        .unwrap();
    let mut dap = DapClient::with_peer(Peer::from_command(
        Protocol::Dap,
        command_line(&fx, debugger, &fx.root),
    ));
    dap.initialize();
    let mut args = fill(&launch["args"], &["live"]);
    args["stopOnEntry"] = json!(true);
    dap.ok("launch", args);
    dap.ok("configurationDone", json!({}));
    dap.event("stopped");
    let debuggee = dap.debuggee_pid.unwrap();
    let status = std::fs::read_to_string(format!("/proc/{debuggee}/status")).unwrap();
    let ppid: u32 = status
        .lines()
        .find_map(|l| l.strip_prefix("PPid:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(ppid, lsp.pid(), "bridged to the language server");
    dap.finish();

    let attach = templates
        .iter()
        .find(|t| t["request"].as_str() == Some("attach"))
        .unwrap();
    let mut sleeper = Command::new("sleep").arg("60").spawn().unwrap();
    let pid = sleeper.id().to_string();
    let mut dap = DapClient::with_peer(Peer::from_command(
        Protocol::Dap,
        command_line(&fx, debugger, &fx.root),
    ));
    dap.initialize();
    dap.ok("attach", fill(&attach["args"], &[&pid]));
    dap.ok("configurationDone", json!({}));
    dap.finish();
    // Detached, not killed.
    assert!(
        sleeper.try_wait().unwrap().is_none(),
        "the attached process was killed"
    );
    let _ = sleeper.kill();
    let _ = sleeper.wait();

    let r = lsp.lsp_request("shutdown", Value::Null);
    assert!(r.get("error").is_none(), "{r}");
    lsp.lsp_notify("exit", Value::Null);
    assert_eq!(lsp.wait_exit(PATIENCE).code(), Some(0));
}

#[test]
fn docs_include_the_adapters_verbatim() {
    let docs = std::fs::read_to_string(repo().join("docs/editors.md")).unwrap();
    let nvim = std::fs::read_to_string(repo().join("adapters/neovim/lua/tandem/init.lua")).unwrap();
    assert!(
        docs.contains(&nvim),
        "docs/editors.md lacks adapters/neovim/lua/tandem/init.lua"
    );
    let helix = std::fs::read_to_string(repo().join("adapters/helix/languages.toml")).unwrap();
    let c_entry = &helix[..helix.find("[[language]]\nname = \"cpp\"").unwrap()];
    assert!(
        docs.contains(c_entry.trim_end()),
        "docs/editors.md lacks the Helix C entry"
    );
    let emacs = std::fs::read_to_string(repo().join("adapters/emacs/tandem.el")).unwrap();
    let usage = &emacs[emacs.find(";; Usage:").unwrap()..emacs.find(";;; Code:").unwrap()];
    assert!(
        docs.contains(usage.trim_end()),
        "docs/editors.md lacks tandem.el's usage"
    );
}
