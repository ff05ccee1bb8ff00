//! The `tandem` binary: command-line glue that starts the language server, the debug adapter
//! or a CLI tool. All behaviour lives in the library crates; this file wires transports,
//! logging and exit codes.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};

mod debug;
mod relay;

#[derive(Parser, Debug)]
#[command(
    name = "tandem",
    version,
    about = "Native debugging (DAP) and language features (LSP) from one backend"
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
    /// Serve the Language Server Protocol on stdio, or on TCP with --listen.
    Lsp(ServeArgs),
    /// Serve the Debug Adapter Protocol on stdio, or on TCP with --listen.
    Dap(ServeArgs),
    /// List processes (pid, ppid, user, executable, command line).
    Ps(PsArgs),
    /// Run a program, print the stack and values at each breakpoint, continue to the end,
    /// and exit with the program's exit code.
    Debug(debug::DebugArgs),
    /// Connect this terminal to a program the debug adapter launched with
    /// `"console": "integratedTerminal"` (editors run this through runInTerminal).
    #[command(hide = true)]
    TerminalRelay(relay::RelayArgs),
}

#[derive(clap::Args, Debug)]
struct PsArgs {
    /// Print a JSON array instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args, Debug)]
struct ServeArgs {
    /// Listen on a loopback TCP address (e.g. 127.0.0.1:4711; port 0 picks a free one) and serve
    /// one session per connection, instead of stdio.
    #[arg(long, value_name = "ADDR")]
    listen: Option<SocketAddr>,
}

#[derive(Clone, Copy, Debug)]
enum Protocol {
    Lsp,
    Dap,
}

fn main() {
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
        Command::Lsp(args) => serve(Protocol::Lsp, args),
        Command::Dap(args) => serve(Protocol::Dap, args),
        Command::Ps(args) => ps(args),
        Command::Debug(args) => debug::run(args),
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

fn serve(protocol: Protocol, args: ServeArgs) -> Result<i32> {
    // One process manager owns every debuggee of this process: SIGTERM, SIGINT, SIGHUP
    // and panics end them (launched killed, attached detached) before tandem goes.
    let manager = Arc::new(procman::ProcessManager::new());
    if let Err(err) = procman::install_signal_hook(manager.shutdown_handle()) {
        tracing::warn!("cannot install the signal hook: {err}");
    }
    procman::install_panic_hook(manager.shutdown_handle());
    let code = match args.listen {
        None => serve_stream(protocol, std::io::stdin(), std::io::stdout(), &manager),
        Some(addr) => listen(protocol, addr, &manager),
    };
    // `main` leaves through process::exit, which runs no destructors.
    manager.shutdown();
    code
}

/// Serves one session; returns the exit code its ending calls for.
fn serve_stream<R, W>(
    protocol: Protocol,
    input: R,
    output: W,
    manager: &Arc<procman::ProcessManager>,
) -> Result<i32>
where
    R: std::io::Read + Send + 'static,
    W: std::io::Write + Send + 'static,
{
    let code = match protocol {
        Protocol::Lsp => {
            let config = lsp::Config {
                test_hooks: std::env::var_os("TANDEM_TEST_HOOKS").is_some(),
                ..Default::default()
            };
            lsp::serve(input, output, config)?.exit_code()
        }
        Protocol::Dap => {
            let config = dap::Config {
                manager: Some(manager.clone()),
                ..Default::default()
            };
            dap::serve(input, output, config)?.exit_code()
        }
    };
    Ok(code)
}

fn listen(
    protocol: Protocol,
    addr: SocketAddr,
    manager: &Arc<procman::ProcessManager>,
) -> Result<i32> {
    if !addr.ip().is_loopback() {
        bail!(
            "refusing to listen on {addr}: only loopback addresses (127.0.0.0/8, ::1) are allowed"
        );
    }
    let listener = TcpListener::bind(addr).with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr()?;
    // Tests and scripts read this line to learn the port when they asked for port 0.
    eprintln!("tandem: listening on {local}");
    tracing::info!(%local, ?protocol, "listening");
    for stream in listener.incoming() {
        match stream {
            Ok(stream) => spawn_connection(protocol, stream, manager.clone()),
            Err(err) => tracing::warn!("accept failed: {err}"),
        }
    }
    Ok(0)
}

fn spawn_connection(protocol: Protocol, stream: TcpStream, manager: Arc<procman::ProcessManager>) {
    let peer = stream
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let spawned = std::thread::Builder::new()
        .name(format!("session-{peer}"))
        .spawn(move || {
            let input = match stream.try_clone() {
                Ok(input) => input,
                Err(err) => return tracing::warn!(%peer, "cannot use connection: {err}"),
            };
            match serve_stream(protocol, input, stream, &manager) {
                Ok(code) => tracing::info!(%peer, code, "session ended"),
                Err(err) => tracing::warn!(%peer, "session failed: {err:#}"),
            }
        });
    if let Err(err) = spawned {
        tracing::error!("cannot start a session thread: {err}");
    }
}
