//! From `launch` and `attach` arguments to what the engine needs: the program, its
//! arguments and environment, the source map, and which process to attach to.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use engine::{LaunchOptions, SourceMap};
use procman::tracer::{self, Pid};

use crate::types::{AttachArguments, EnvSpec, LaunchArguments, PidSpec, SourceMapSpec};

/// How long `waitFor` waits for the program to appear unless told otherwise.
const WAIT_FOR_DEFAULT: Duration = Duration::from_secs(60);
/// How often `waitFor` looks at the process list.
const WAIT_FOR_POLL: Duration = Duration::from_millis(10);

/// The engine's launch options for a `launch` request.
pub fn launch_options(args: &LaunchArguments) -> Result<LaunchOptions, String> {
    if args.program.trim().is_empty() {
        return Err("launch needs a 'program' to run".into());
    }
    let cwd = args
        .cwd
        .as_deref()
        .filter(|c| !c.is_empty())
        .map(PathBuf::from);
    if let Some(cwd) = &cwd {
        if !cwd.is_dir() {
            return Err(format!(
                "the working directory {} does not exist",
                cwd.display()
            ));
        }
    }
    let program = program_path(&args.program, cwd.as_deref())?;
    // Sources built elsewhere are looked for under the working directory.
    let mut source_map = source_map(args.source_map.as_ref());
    if let Some(cwd) = &cwd {
        source_map.set_local_root(cwd);
        engine::guess_source_map(&mut source_map, &program);
    }
    // Relative debug file directories are under the working directory, as the program is.
    let debug_roots = args
        .debug_file_directories
        .iter()
        .filter(|d| !d.is_empty())
        .map(|d| match &cwd {
            Some(cwd) => cwd.join(d),
            None => PathBuf::from(d),
        })
        .collect();
    Ok(LaunchOptions {
        program,
        args: args.args.iter().map(OsString::from).collect(),
        cwd,
        env: environment(args.env.as_ref())?,
        stdio: match args.stdio.as_deref() {
            None | Some("terminal") => tracer::StdioMode::Terminals,
            Some("pipes") => tracer::StdioMode::Pipes,
            Some(other) => {
                return Err(format!(
                    "unknown 'stdio' value '{other}': use \"terminal\" or \"pipes\""
                ))
            }
        },
        disable_aslr: args.disable_aslr.unwrap_or(true),
        source_map,
        // The adapter downloads from debuginfod itself, with progress and cancellation
        // (debugger/debuginfo.rs), before the engine opens the program: the engine only
        // reads the cache, so no request waits on a network without a way out.
        debug_info: engine::DebugInfoOptions {
            roots: debug_roots,
            debuginfod: engine::Debuginfod::CacheOnly,
        },
        // Decided with the client's capabilities (debugger/children.rs).
        follow_children: false,
        record: args.reverse_debugging,
    })
}

/// A relative program is looked for under `cwd` first, then as given (the adapter's
/// working directory or `PATH`).
fn program_path(program: &str, cwd: Option<&Path>) -> Result<PathBuf, String> {
    let path = PathBuf::from(program);
    if path.is_relative() {
        if let Some(candidate) = cwd.map(|c| c.join(&path)).filter(|c| c.is_file()) {
            return Ok(candidate);
        }
    }
    if path.components().count() > 1 && !path.is_file() {
        return Err(format!("the program {program} does not exist"));
    }
    Ok(path)
}

/// The environment: variables set (or removed, with `null`) on top of tandem's own.
fn environment(spec: Option<&EnvSpec>) -> Result<tracer::Env, String> {
    let vars: Vec<(OsString, Option<OsString>)> = match spec {
        None => return Ok(tracer::Env::Inherit),
        Some(EnvSpec::Map(map)) => map
            .iter()
            .map(|(k, v)| (OsString::from(k), v.as_ref().map(OsString::from)))
            .collect(),
        Some(EnvSpec::List(list)) => list
            .iter()
            .map(|entry| match entry.split_once('=') {
                Some((k, v)) => (OsString::from(k), Some(OsString::from(v))),
                None => (OsString::from(entry), None),
            })
            .collect(),
    };
    if let Some((bad, _)) = vars
        .iter()
        .find(|(k, _)| k.is_empty() || k.to_string_lossy().contains('='))
    {
        return Err(format!(
            "invalid environment variable name '{}'",
            bad.to_string_lossy()
        ));
    }
    Ok(tracer::Env::Merge(vars))
}

/// Build-time → local path prefixes.
pub fn source_map(spec: Option<&SourceMapSpec>) -> SourceMap {
    let mut map = SourceMap::new();
    match spec {
        None => {}
        Some(SourceMapSpec::Map(m)) => {
            for (from, to) in m {
                map.add(from, to);
            }
        }
        Some(SourceMapSpec::List(l)) => {
            for (from, to) in l {
                map.add(from, to);
            }
        }
    }
    map
}

/// The source map of an `attach` request to `pid`: `sourceMap`, plus the rules guessed
/// under `localRoot` (else `cwd`) for sources whose compilation directories do not exist
/// here (the session announces them).
pub fn attach_source_map(args: &AttachArguments, pid: Pid) -> SourceMap {
    let mut map = source_map(args.source_map.as_ref());
    let root = args
        .local_root
        .as_deref()
        .filter(|r| !r.is_empty())
        .or(args.cwd.as_deref().filter(|c| !c.is_empty()))
        .map(PathBuf::from);
    if let Some(root) = root.filter(|r| r.is_dir()) {
        map.set_local_root(root);
        if let Some(exe) = tracer::procfs::exe_of(pid) {
            let open = engine::modules::main_executable(pid, &exe);
            engine::guess_source_map(&mut map, &open);
        }
    }
    map
}

/// The process an `attach` request names (its pid in tandem's namespace): a pid, or the
/// one process running `program` (waiting for it to appear with `waitFor`); with
/// `container`, the pid is the one inside the container and `program` is looked for
/// among the container's processes.
pub fn attach_pid(args: &AttachArguments) -> Result<Pid, String> {
    let container = args.container.as_deref().filter(|c| !c.trim().is_empty());
    let pid = match &args.pid {
        Some(PidSpec::Number(n)) => Some(pid_from(*n)?),
        Some(PidSpec::Text(t)) => {
            let n = t
                .trim()
                .parse::<i64>()
                .map_err(|_| format!("'{t}' is not a process id"))?;
            Some(pid_from(n)?)
        }
        None => None,
    };
    match (pid, container) {
        (Some(pid), None) => return Ok(pid),
        (Some(inner), Some(container)) => return container_pid(container, inner),
        (None, _) => {}
    }
    let Some(program) = args.program.as_deref().filter(|p| !p.is_empty()) else {
        return Err("attach needs a 'pid' or a 'program' name".into());
    };
    let deadline = Instant::now()
        + args
            .timeout
            .filter(|t| t.is_finite() && *t > 0.0)
            .map_or(WAIT_FOR_DEFAULT, Duration::from_secs_f64);
    loop {
        let found = match container {
            None => processes_named(procman::list_processes(), program),
            Some(c) => {
                let rows = procman::container_processes(&procman::list_processes(), c)
                    .map_err(|e| e.to_string())?;
                processes_named(rows, program)
            }
        };
        match found.as_slice() {
            [one] => return Ok(one.pid),
            [] if args.wait_for && Instant::now() < deadline => {
                std::thread::sleep(WAIT_FOR_POLL);
            }
            [] if args.wait_for => {
                return Err(format!("no process named '{program}' appeared in time"))
            }
            [] => return Err(format!("no process named '{program}' is running")),
            many if container.is_some() => {
                let list: Vec<String> = many
                    .iter()
                    .map(|r| format!("{} ({})", r.inner_pid().0, r.command()))
                    .collect();
                return Err(format!(
                    "{} processes are named '{program}' in the container; attach by its pid \
                     in the container to one of: {}",
                    many.len(),
                    list.join(", ")
                ));
            }
            many => {
                let list: Vec<String> = many
                    .iter()
                    .map(|r| format!("{} ({})", r.pid.0, r.command()))
                    .collect();
                return Err(format!(
                    "{} processes are named '{program}'; attach by pid to one of: {}",
                    many.len(),
                    list.join(", ")
                ));
            }
        }
    }
}

/// The host pid of the process whose pid inside `container` is `inner`.
fn container_pid(container: &str, inner: Pid) -> Result<Pid, String> {
    let rows = procman::container_processes(&procman::list_processes(), container)
        .map_err(|e| e.to_string())?;
    rows.iter()
        .find(|r| r.inner_pid() == inner && r.state != 'Z')
        .map(|r| r.pid)
        .ok_or_else(|| format!("no process has pid {} in container '{container}'", inner.0))
}

fn pid_from(n: i64) -> Result<Pid, String> {
    i32::try_from(n)
        .ok()
        .filter(|n| *n > 0)
        .map(Pid)
        .ok_or_else(|| format!("{n} is not a process id"))
}

/// Live processes (not tandem itself, not zombies) whose executable, command name or
/// first argument is `program` (a path, or a file name).
fn processes_named(rows: Vec<procman::ProcessRow>, program: &str) -> Vec<procman::ProcessRow> {
    let me = std::process::id() as i32;
    let wanted = Path::new(program);
    let by_path = wanted.components().count() > 1;
    rows.into_iter()
        .filter(|r| r.pid.0 != me && r.state != 'Z')
        .filter(|r| {
            let exe = r.exe.as_deref();
            if by_path {
                return exe == Some(wanted) || r.cmdline.first().map(Path::new) == Some(wanted);
            }
            let base = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
            exe.and_then(base).as_deref() == Some(program)
                || r.cmdline
                    .first()
                    .and_then(|a| base(Path::new(a)))
                    .as_deref()
                    == Some(program)
                || (r.cmdline.is_empty() && r.name == program)
        })
        .collect()
}
