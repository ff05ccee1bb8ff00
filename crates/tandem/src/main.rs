//! The `tandem` binary: command-line glue that starts the language server, the debug adapter
//! or a CLI tool. All behaviour lives in the library crates; this file wires transports,
//! logging and exit codes.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};

mod dap_socket;
mod debug;
mod gcore;
mod mcp_socket;
mod relay;
mod token;
mod websocket;

#[derive(Parser, Debug)]
#[command(
    name = "tandem",
    version,
    about = "Native debugging (DAP) and language features (LSP) from one backend, with tools for coding agents (MCP)"
)]
struct Cli {
    /// Write logs to this file instead of stderr (level from TANDEM_LOG, e.g. `debug`).
    #[arg(long, global = true, value_name = "FILE")]
    log: Option<PathBuf>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve the Language Server Protocol on stdio, or on TCP or WebSocket with --listen;
    /// the workspace's debug adapter is served on a Unix socket beside it.
    Lsp(LspArgs),
    /// Serve the Debug Adapter Protocol on stdio (bridged to the workspace's `tandem lsp`
    /// when one runs), or on TCP or WebSocket with --listen.
    Dap(DapArgs),
    /// Serve the Model Context Protocol for coding agents (tools that debug programs and
    /// answer code questions) on stdio, or on Streamable HTTP with --listen.
    Mcp(McpArgs),
    /// List processes (pid, ppid, user, executable, command line).
    Ps(PsArgs),
    /// Run a program, print the stack and values at each breakpoint, continue to the end,
    /// and exit with the program's exit code.
    Debug(debug::DebugArgs),
    /// Write a core file of a running process (attach, stop, write, detach: it runs on
    /// unchanged) and print its path.
    Gcore(gcore::GcoreArgs),
    /// Connect this terminal to a program the debug adapter launched with
    /// `"console": "integratedTerminal"` (editors run this through runInTerminal).
    #[command(hide = true)]
    TerminalRelay(relay::RelayArgs),
}

#[derive(clap::Args, Debug)]
struct McpArgs {
    /// Serve Streamable HTTP on this address instead of stdio (`127.0.0.1:4712`, endpoint
    /// `/mcp`; port 0 picks a free one). An address other than loopback requires --token.
    #[arg(long, value_name = "ADDR")]
    listen: Option<SocketAddr>,
    /// With --listen: every request must carry `Authorization: Bearer TOKEN`.
    #[arg(long, value_name = "TOKEN", requires = "listen")]
    token: Option<String>,
    /// The workspace root of the code_* tools and of relative paths (default: the working
    /// directory); on stdio, also where to look for the workspace's `tandem lsp` (this
    /// directory, then its parents).
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Serve here even when a `tandem lsp` serves the workspace (on stdio, `tandem mcp`
    /// otherwise relays to it, to share its debug sessions with the editor).
    #[arg(long, conflicts_with = "listen")]
    standalone: bool,
}

#[derive(clap::Args, Debug)]
struct PsArgs {
    /// Print a JSON array instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args, Debug)]
struct ServeArgs {
    /// Listen and serve one session per connection, instead of stdio: TCP with
    /// Content-Length frames (`127.0.0.1:4711`; port 0 picks a free one) or WebSocket with
    /// one message per text frame (`ws://127.0.0.1:4711`). An address other than loopback
    /// (`0.0.0.0:4711`, to be reached from outside a container) requires --token.
    #[arg(long, value_name = "ADDR", value_parser = parse_listen)]
    listen: Option<Listen>,
    /// With --listen: every connection's first message must be `initialize` carrying this
    /// token (DAP: `arguments.tandemToken`; LSP: `initializationOptions.tandem.token`);
    /// other connections are answered with an error and closed.
    #[arg(long, value_name = "TOKEN", requires = "listen")]
    token: Option<String>,
    /// Say so explicitly when listening beyond loopback; like any non-loopback --listen it
    /// requires --token (listeners bind loopback otherwise).
    #[arg(long, requires_all = ["listen", "token"])]
    allow_remote: bool,
    /// With a WebSocket listener: also accept browser pages from this origin (e.g.
    /// `https://ide.example.com`); loopback origins are always accepted. Repeatable.
    #[arg(long, value_name = "ORIGIN")]
    allow_origin: Vec<String>,
}

#[derive(clap::Args, Debug)]
struct LspArgs {
    #[command(flatten)]
    serve: ServeArgs,
    /// Do not serve the workspace's debug adapter on a Unix socket.
    #[arg(long)]
    no_dap_socket: bool,
}

#[derive(clap::Args, Debug)]
struct DapArgs {
    #[command(flatten)]
    serve: ServeArgs,
    /// Bridge stdio to the debug adapter of the `tandem lsp` serving on this Unix socket.
    #[arg(long, value_name = "SOCKET", conflicts_with_all = ["listen", "standalone"])]
    connect: Option<PathBuf>,
    /// Where to look for the workspace's `tandem lsp` (this directory, then its parents);
    /// default: the working directory.
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Serve the session in this process even when a `tandem lsp` serves the workspace.
    #[arg(long, conflicts_with = "listen")]
    standalone: bool,
}

/// Where `--listen` serves.
#[derive(Clone, Copy, Debug)]
enum Listen {
    Tcp(SocketAddr),
    WebSocket(SocketAddr),
}

fn parse_listen(text: &str) -> Result<Listen, String> {
    let (ws, addr) = match text.strip_prefix("ws://") {
        Some(rest) => (true, rest.trim_end_matches('/')),
        None => (false, text),
    };
    let addr: SocketAddr = addr
        .parse()
        .map_err(|e| format!("{e}: expected IP:PORT or ws://IP:PORT"))?;
    Ok(if ws {
        Listen::WebSocket(addr)
    } else {
        Listen::Tcp(addr)
    })
}

#[derive(Clone, Copy, Debug)]
enum Protocol {
    Lsp,
    Dap,
}

fn main() {
    // The guard of handed-over fork children is this executable too (procman::guard).
    if std::env::var_os(procman::guard::GUARD_ENV).is_some() {
        std::process::exit(procman::guard::serve());
    }
    // /proc/self/exe: the same executable even if the file is replaced meanwhile.
    procman::guard::enable(std::path::PathBuf::from("/proc/self/exe"));
    let cli = Cli::parse();
    if let Err(err) = init_logging(cli.log.as_deref()) {
        eprintln!("tandem: {err:#}");
        std::process::exit(2);
    }
    let code = match run(cli.command) {
        Ok(code) => code,
        Err(err) => {
            tracing::error!("{err:#}");
            eprintln!("tandem: {err:#}");
            2
        }
    };
    std::process::exit(code);
}

fn init_logging(file: Option<&std::path::Path>) -> Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_from_env("TANDEM_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false);
    match file {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("cannot open log file {}", path.display()))?;
            builder
                .with_ansi(false)
                .with_writer(std::sync::Mutex::new(file))
                .init();
        }
        // stdout belongs to the protocol: logs never go there.
        None => builder.with_writer(std::io::stderr).init(),
    }
    Ok(())
}

fn run(command: Command) -> Result<i32> {
    match command {
        Command::Lsp(args) => {
            let code = serve(Protocol::Lsp, args.serve, !args.no_dap_socket);
            dap_socket::remove_served();
            code
        }
        Command::Dap(args) => dap(args),
        Command::Mcp(args) => mcp(args),
        Command::Ps(args) => ps(args),
        Command::Debug(args) => debug::run(args),
        Command::Gcore(args) => gcore::run(args),
        Command::TerminalRelay(args) => relay::run(args),
    }
}

fn ps(args: PsArgs) -> Result<i32> {
    let rows = procman::list_processes();
    let text = if args.json {
        let mut text = serde_json::to_string_pretty(&dap::processes::process_list_json(&rows))?;
        text.push('\n');
        text
    } else {
        procman::format_table(&rows)
    };
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    // A closed pipe (`tandem ps | head`) is not an error worth reporting.
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => Ok(0),
        other => other.map(|()| 0).context("cannot write the listing"),
    }
}

/// `tandem mcp`: the agents' tools, on stdio or Streamable HTTP. On stdio, relayed to
/// the workspace's `tandem lsp` when one serves it, so the agent shares its sessions.
fn mcp(args: McpArgs) -> Result<i32> {
    if args.listen.is_none() && !args.standalone {
        let cwd = std::env::current_dir().context("no working directory")?;
        if let Some((path, stream)) = dap_socket::discover(args.root.as_deref().unwrap_or(&cwd)) {
            tracing::info!(socket = %path.display(), "relaying MCP to the workspace's language server");
            return mcp_socket::relay(std::io::stdin(), std::io::stdout(), stream, &cwd);
        }
    }
    let manager = Arc::new(procman::ProcessManager::new());
    if let Err(err) = procman::install_signal_hook(manager.shutdown_handle()) {
        tracing::warn!("cannot install the signal hook: {err}");
    }
    procman::install_panic_hook(manager.shutdown_handle());
    let root = match args.root {
        Some(root) => root
            .canonicalize()
            .with_context(|| format!("no workspace root {}", root.display()))?,
        None => std::env::current_dir().context("no working directory")?,
    };
    let server = mcp::Server::new(mcp::Config {
        root,
        manager: manager.clone(),
    });
    let served = match args.listen {
        None => {
            mcp::serve_stdio(&server, std::io::stdin(), std::io::stdout()).context("stdio failed")
        }
        Some(addr) => {
            let token = args.token.filter(|t| !t.is_empty());
            if !addr.ip().is_loopback() && token.is_none() {
                bail!(
                    "refusing to listen on {addr} without --token: only loopback addresses \
                     (127.0.0.0/8, ::1) may be served without one"
                );
            }
            let listener =
                TcpListener::bind(addr).with_context(|| format!("cannot listen on {addr}"))?;
            // Tests and scripts read this line to learn the port when they asked for port 0.
            eprintln!("tandem: listening on http://{}/mcp", listener.local_addr()?);
            // The same constant-time comparison as the other listeners' tokens.
            let check = token.map(|token| -> mcp::http::TokenCheck {
                Arc::new(move |given: Option<&str>| {
                    given.is_some_and(|g| token::constant_time_eq(g.as_bytes(), token.as_bytes()))
                })
            });
            mcp::http::serve(listener, server.clone(), check);
            Ok(())
        }
    };
    server.end_sessions();
    // `main` leaves through process::exit, which runs no destructors.
    manager.shutdown();
    served.map(|()| 0)
}

/// `tandem dap`: bridged to the workspace's language server when one serves it (or the
/// socket `--connect` names), else served here.
fn dap(args: DapArgs) -> Result<i32> {
    if args.serve.listen.is_none() {
        let cwd = std::env::current_dir().context("no working directory")?;
        let found = match &args.connect {
            Some(path) => Some((path.clone(), dap_socket::connect(path)?)),
            None if args.standalone => None,
            None => dap_socket::discover(args.workspace.as_deref().unwrap_or(&cwd)),
        };
        if let Some((path, stream)) = found {
            tracing::info!(socket = %path.display(), "bridging stdio to the workspace's debug adapter");
            return dap_socket::bridge(std::io::stdin(), std::io::stdout(), stream, &cwd);
        }
    }
    serve(Protocol::Dap, args.serve, false)
}

fn serve(protocol: Protocol, args: ServeArgs, dap_socket: bool) -> Result<i32> {
    // One process manager owns every debuggee of this process: SIGTERM, SIGINT, SIGHUP
    // and panics end them (launched killed, attached detached) before tandem goes.
    let manager = Arc::new(procman::ProcessManager::new());
    if let Err(err) = procman::install_signal_hook(manager.shutdown_handle()) {
        tracing::warn!("cannot install the signal hook: {err}");
    }
    procman::install_panic_hook(manager.shutdown_handle());
    let session = Session {
        protocol,
        manager: manager.clone(),
        dap_socket,
    };
    let code = match args.listen {
        None => serve_stream(&session, std::io::stdin(), std::io::stdout()),
        Some(listen_on) => listen(&session, listen_on, &args.allow_origin, args.token),
    };
    // `main` leaves through process::exit, which runs no destructors.
    manager.shutdown();
    code
}

/// What every session of this process shares.
#[derive(Clone)]
struct Session {
    protocol: Protocol,
    manager: Arc<procman::ProcessManager>,
    /// Language server: serve the workspace's debug adapter on its Unix socket.
    dap_socket: bool,
}

/// Serves one session; returns the exit code its ending calls for.
fn serve_stream<R, W>(session: &Session, input: R, output: W) -> Result<i32>
where
    R: std::io::Read + Send + 'static,
    W: std::io::Write + Send + 'static,
{
    let code = match session.protocol {
        Protocol::Lsp => {
            let on_roots = session.dap_socket.then(|| {
                let manager = session.manager.clone();
                lsp::RootsHook(Arc::new(move |roots: &[PathBuf]| {
                    serve_workspace_sockets(roots, &manager);
                }))
            });
            let config = lsp::Config {
                test_hooks: std::env::var_os("TANDEM_TEST_HOOKS").is_some(),
                manager: Some(session.manager.clone()),
                on_roots,
                ..Default::default()
            };
            lsp::serve(input, output, config)?.exit_code()
        }
        Protocol::Dap => {
            let config = dap::Config {
                manager: Some(session.manager.clone()),
                ..Default::default()
            };
            dap::serve(input, output, config)?.exit_code()
        }
    };
    Ok(code)
}

/// Serves the debug adapter on the socket of each workspace root the client named. A client
/// that names none (a single file) gets no socket: guessing a root could capture debug
/// adapters started for another project.
fn serve_workspace_sockets(roots: &[PathBuf], manager: &Arc<procman::ProcessManager>) {
    for root in roots {
        match dap_socket::serve_workspace(root, manager.clone()) {
            Ok(Some(path)) => {
                tracing::info!(root = %root.display(), socket = %path.display(), "debug adapter socket")
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(root = %root.display(), "no debug adapter socket: {e:#}"),
        }
    }
}

fn listen(
    session: &Session,
    listen_on: Listen,
    allowed_origins: &[String],
    token: Option<String>,
) -> Result<i32> {
    let (addr, ws) = match listen_on {
        Listen::Tcp(addr) => (addr, false),
        Listen::WebSocket(addr) => (addr, true),
    };
    let token = token.filter(|t| !t.is_empty());
    if !addr.ip().is_loopback() && token.is_none() {
        bail!(
            "refusing to listen on {addr} without --token: only loopback addresses \
             (127.0.0.0/8, ::1) may be served without one"
        );
    }
    let token: Option<Arc<str>> = token.map(Arc::from);
    let listener = TcpListener::bind(addr).with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr()?;
    let shown = if ws {
        format!("ws://{local}")
    } else {
        local.to_string()
    };
    // Tests and scripts read this line to learn the port when they asked for port 0.
    eprintln!("tandem: listening on {shown}");
    tracing::info!(%shown, protocol = ?session.protocol, "listening");
    let allowed: Arc<[String]> = allowed_origins.into();
    for stream in listener.incoming() {
        match stream {
            Ok(stream) => spawn_connection(
                session.clone(),
                stream,
                ws.then(|| allowed.clone()),
                token.clone(),
            ),
            Err(err) => tracing::warn!("accept failed: {err}"),
        }
    }
    Ok(0)
}

/// Serves one connection on its own thread; `websocket` holds the allowed origins when the
/// connection speaks WebSocket; `token`, the token its first message must carry.
fn spawn_connection(
    session: Session,
    stream: TcpStream,
    websocket: Option<Arc<[String]>>,
    token: Option<Arc<str>>,
) {
    let peer = stream
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let spawned = std::thread::Builder::new()
        .name(format!("session-{peer}"))
        .spawn(move || {
            let served = match websocket {
                Some(allowed) => websocket::accept(stream, &allowed).and_then(|(input, output)| {
                    serve_checked(&session, token.as_deref(), input, output)
                }),
                None => match (stream.try_clone(), stream.try_clone()) {
                    (Ok(input), Ok(closer)) => {
                        let served = serve_checked(&session, token.as_deref(), input, stream);
                        // The session is over: close the connection, so a client waiting
                        // for the end of the stream sees it (the reader thread would
                        // keep it open until the client closes its side).
                        let _ = closer.shutdown(std::net::Shutdown::Both);
                        served
                    }
                    (Err(err), _) | (_, Err(err)) => {
                        return tracing::warn!(%peer, "cannot use connection: {err}")
                    }
                },
            };
            match served {
                Ok(code) => tracing::info!(%peer, code, "session ended"),
                Err(err) => tracing::warn!(%peer, "session failed: {err:#}"),
            }
        });
    if let Err(err) = spawned {
        tracing::error!("cannot start a session thread: {err}");
    }
}

/// Serves one connection, after checking the token of its first message when there is one.
fn serve_checked<R, W>(
    session: &Session,
    token: Option<&str>,
    input: R,
    mut output: W,
) -> Result<i32>
where
    R: std::io::Read + Send + 'static,
    W: std::io::Write + Send + 'static,
{
    match token {
        None => serve_stream(session, input, output),
        Some(token) => {
            let input = token::check_first_message(session.protocol, token, input, &mut output)
                .context("connection refused")?;
            serve_stream(session, input, output)
        }
    }
}
