//! Starting a program under ptrace: fork, seize, exec, stop at the exec event.
//!
//! Between fork and exec the child of a multithreaded process may only make
//! async-signal-safe calls, so everything (argument vectors, environment, paths) is
//! prepared before the fork and the child only makes raw system calls. The child
//! waits on a pipe until the parent has seized it, so the exec itself is traced and
//! the first stop is the PTRACE_EVENT_EXEC stop, before the loader's first instruction.

use crate::error::{Error, Result};
use crate::sys;
use crate::types::{Pid, Tid};
use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// How the debuggee's environment is built.
#[derive(Clone, Debug, Default)]
pub enum Env {
    /// tandem's own environment.
    #[default]
    Inherit,
    /// tandem's environment with these variables set (`Some`) or removed (`None`).
    Merge(Vec<(OsString, Option<OsString>)>),
    /// Exactly these variables.
    Replace(Vec<(OsString, OsString)>),
}

/// Where the debuggee's standard streams go. Never tandem's own stdout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StdioMode {
    /// Three pipes: the caller writes stdin and reads stdout and stderr.
    #[default]
    Pipes,
    /// One pseudo-terminal for all three, which becomes the controlling terminal.
    Pty,
    /// Two pseudo-terminals, as in a shell but with stderr kept apart: stdin and stdout
    /// on one (the controlling terminal), stderr on the other, so `isatty` holds for
    /// all three and C's stdio line-buffers. Neither echoes input nor turns `\n`
    /// into `\r\n`: the caller reads exactly what the program wrote.
    Terminals,
    /// /dev/null for all three.
    Null,
}

/// Where a launched program first stops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StopAt {
    /// At the exec event: before the dynamic loader runs.
    Exec,
    /// At the program's entry point (AT_ENTRY): libraries are loaded.
    #[default]
    Entry,
}

/// What to do with the child when the debuggee forks or vforks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ForkPolicy {
    /// Remove the breakpoints from the child's memory and let it run untraced.
    #[default]
    Detach,
    /// Hand the child over: freed of breakpoints and detached in a job-control stop
    /// (SIGSTOP) before it runs an instruction of its own, so another tracer (a new
    /// session) can attach to it with [`crate::AttachConfig::continue_job_stop`].
    Follow,
}

/// Everything needed to start a debuggee.
#[derive(Clone, Debug, Default)]
pub struct LaunchConfig {
    /// The program; looked up in PATH when it contains no slash.
    pub program: PathBuf,
    /// Arguments after `argv[0]`.
    pub args: Vec<OsString>,
    /// `argv[0]`; the program path when absent.
    pub argv0: Option<OsString>,
    /// The environment.
    pub env: Env,
    /// Working directory; tandem's when absent.
    pub cwd: Option<PathBuf>,
    /// Standard streams.
    pub stdio: StdioMode,
    /// Turn address space randomisation off (personality ADDR_NO_RANDOMIZE).
    pub disable_aslr: bool,
    /// Where to stop first.
    pub stop_at: StopAt,
    /// Fork handling.
    pub fork_policy: ForkPolicy,
    /// Record from the first instruction, for going back in time
    /// ([`crate::Tracer::goto`]).
    pub record: bool,
    /// While recording, stop at every system call instead of buffering the calls that
    /// can be buffered inside the program (docs/reverse.md): slower, for comparisons.
    /// `TANDEM_SYSCALL_BUFFER=0` in the environment does the same.
    pub trace_every_syscall: bool,
}

/// The parent's ends of the debuggee's standard streams.
#[derive(Debug, Default)]
pub struct Stdio {
    /// Write end of stdin (pipes), or the pty master (pty).
    pub stdin: Option<File>,
    /// Read end of stdout (pipes), or a clone of the pty master (pty).
    pub stdout: Option<File>,
    /// Read end of stderr (pipes), or the second pty's master (terminals).
    pub stderr: Option<File>,
}

pub(crate) struct Spawned {
    pub pid: Pid,
    pub stdio: Stdio,
    pub aslr_disabled: bool,
    pub warnings: Vec<String>,
}

const STAGE_SETSID: u32 = 1;
const STAGE_TTY: u32 = 2;
const STAGE_DUP: u32 = 3;
const STAGE_CHDIR: u32 = 4;
const STAGE_PERSONALITY: u32 = 5;
const STAGE_EXEC: u32 = 6;
const STAGE_PDEATHSIG: u32 = 7;

fn stage_name(stage: u32) -> &'static str {
    match stage {
        STAGE_SETSID => "setsid",
        STAGE_TTY => "setting the controlling terminal",
        STAGE_DUP => "redirecting standard streams",
        STAGE_CHDIR => "changing directory",
        STAGE_PERSONALITY => "disabling address randomization",
        STAGE_EXEC => "exec",
        STAGE_PDEATHSIG => "setting the parent-death signal",
        _ => "starting the child",
    }
}

fn cstring(bytes: &[u8], program: &str, what: &'static str) -> Result<CString> {
    CString::new(bytes).map_err(|_| Error::Launch {
        program: program.to_string(),
        stage: what,
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "contains a nul byte"),
    })
}

fn resolve_program(program: &Path, env_path: Option<&OsStr>) -> PathBuf {
    if program.as_os_str().as_bytes().contains(&b'/') {
        return program.to_path_buf();
    }
    let path = env_path
        .map(|p| p.to_os_string())
        .or_else(|| std::env::var_os("PATH"))
        .unwrap_or_else(|| OsString::from("/usr/local/bin:/usr/bin:/bin"));
    for dir in std::env::split_paths(&path) {
        let candidate = dir.join(program);
        if let Ok(meta) = std::fs::metadata(&candidate) {
            use std::os::unix::fs::PermissionsExt;
            if meta.is_file() && meta.permissions().mode() & 0o111 != 0 {
                return candidate;
            }
        }
    }
    program.to_path_buf()
}

fn build_env(env: &Env) -> Vec<(OsString, OsString)> {
    match env {
        Env::Inherit => std::env::vars_os().collect(),
        Env::Replace(vars) => vars.clone(),
        Env::Merge(changes) => {
            let mut vars: Vec<(OsString, OsString)> = std::env::vars_os().collect();
            for (key, value) in changes {
                vars.retain(|(k, _)| k != key);
                if let Some(v) = value {
                    vars.push((key.clone(), v.clone()));
                }
            }
            vars
        }
    }
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: plain system call writing two descriptors into a local array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == -1 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Child-side descriptors for fds 0, 1, 2 and the parent's ends.
struct StdioFds {
    child: [OwnedFd; 3],
    parent: Stdio,
}

fn stdio_fds(mode: StdioMode, program: &str) -> Result<StdioFds> {
    let err = |stage: &'static str| {
        move |source: std::io::Error| Error::Launch {
            program: program.to_string(),
            stage,
            source,
        }
    };
    match mode {
        StdioMode::Pipes => {
            let (in_r, in_w) = pipe().map_err(err("creating pipes"))?;
            let (out_r, out_w) = pipe().map_err(err("creating pipes"))?;
            let (err_r, err_w) = pipe().map_err(err("creating pipes"))?;
            Ok(StdioFds {
                child: [in_r, out_w, err_w],
                parent: Stdio {
                    stdin: Some(File::from(in_w)),
                    stdout: Some(File::from(out_r)),
                    stderr: Some(File::from(err_r)),
                },
            })
        }
        StdioMode::Null => {
            let open = || {
                std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open("/dev/null")
                    .map(OwnedFd::from)
                    .map_err(err("opening /dev/null"))
            };
            Ok(StdioFds {
                child: [open()?, open()?, open()?],
                parent: Stdio::default(),
            })
        }
        StdioMode::Terminals => {
            let (in_out, in_out_slave) = open_pty(true).map_err(err("opening a pty"))?;
            let (errors, errors_slave) = open_pty(false).map_err(err("opening a pty"))?;
            let out = in_out.try_clone().map_err(err("opening a pty"))?;
            let s2 = in_out_slave.try_clone().map_err(err("opening a pty"))?;
            Ok(StdioFds {
                child: [in_out_slave, s2, errors_slave],
                parent: Stdio {
                    stdin: Some(in_out),
                    stdout: Some(out),
                    stderr: Some(errors),
                },
            })
        }
        StdioMode::Pty => {
            let pty = nix::pty::openpty(None, None)
                .map_err(|e| err("opening a pty")(std::io::Error::from(e)))?;
            for fd in [pty.master.as_raw_fd(), pty.slave.as_raw_fd()] {
                // SAFETY: setting FD_CLOEXEC on a descriptor we own.
                unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
            }
            let master = File::from(pty.master);
            let master2 = master.try_clone().map_err(err("opening a pty"))?;
            let slave = pty.slave;
            let s2 = slave.try_clone().map_err(err("opening a pty"))?;
            let s3 = slave.try_clone().map_err(err("opening a pty"))?;
            Ok(StdioFds {
                child: [slave, s2, s3],
                parent: Stdio {
                    stdin: Some(master),
                    stdout: Some(master2),
                    stderr: None,
                },
            })
        }
    }
}

/// A pseudo-terminal (master, slave), both close-on-exec, whose output is passed
/// through unchanged (no `\n` → `\r\n`); `input` keeps canonical line editing for a
/// program reading stdin but turns echo off (what is sent is not printed back).
fn open_pty(input: bool) -> std::io::Result<(File, OwnedFd)> {
    let pty = nix::pty::openpty(None, None).map_err(std::io::Error::from)?;
    for fd in [pty.master.as_raw_fd(), pty.slave.as_raw_fd()] {
        // SAFETY: setting FD_CLOEXEC on a descriptor we own.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    let fd = pty.slave.as_raw_fd();
    // SAFETY: termios is plain data; tcgetattr/tcsetattr on a descriptor we own.
    unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(fd, &mut t) == -1 {
            return Err(std::io::Error::last_os_error());
        }
        t.c_oflag &= !libc::ONLCR;
        if input {
            t.c_lflag &= !(libc::ECHO | libc::ECHONL);
        }
        if libc::tcsetattr(fd, libc::TCSANOW, &t) == -1 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok((File::from(pty.master), pty.slave))
}

/// Writes a (stage, errno) record to the error pipe; async-signal-safe.
fn child_report(fd: i32, stage: u32, errno: i32) {
    let mut rec = [0u8; 8];
    rec[..4].copy_from_slice(&stage.to_ne_bytes());
    rec[4..].copy_from_slice(&errno.to_ne_bytes());
    // SAFETY: write(2) of a local buffer.
    unsafe { libc::write(fd, rec.as_ptr() as *const libc::c_void, rec.len()) };
}

fn child_fail(fd: i32, stage: u32) -> ! {
    child_report(fd, stage, nix::errno::Errno::last_raw());
    // SAFETY: _exit is async-signal-safe and never returns.
    unsafe { libc::_exit(127) }
}

/// Forks, seizes and execs; returns with the child in its exec-event stop.
pub(crate) fn spawn(config: &LaunchConfig, options: libc::c_int) -> Result<Spawned> {
    let program_name = config.program.display().to_string();
    let vars = build_env(&config.env);
    let env_path = vars
        .iter()
        .find(|(k, _)| k.as_bytes() == b"PATH")
        .map(|(_, v)| v.as_os_str());
    let path = resolve_program(&config.program, env_path);
    let c_path = cstring(path.as_os_str().as_bytes(), &program_name, "program path")?;
    let argv0 = config
        .argv0
        .clone()
        .unwrap_or_else(|| config.program.as_os_str().to_os_string());
    let mut c_args = vec![cstring(argv0.as_bytes(), &program_name, "arguments")?];
    for a in &config.args {
        c_args.push(cstring(a.as_bytes(), &program_name, "arguments")?);
    }
    let mut argv: Vec<*const libc::c_char> = c_args.iter().map(|c| c.as_ptr()).collect();
    argv.push(std::ptr::null());
    let mut c_env = Vec::with_capacity(vars.len());
    for (k, v) in &vars {
        let mut kv = k.as_bytes().to_vec();
        kv.push(b'=');
        kv.extend_from_slice(v.as_bytes());
        c_env.push(cstring(&kv, &program_name, "environment")?);
    }
    let mut envp: Vec<*const libc::c_char> = c_env.iter().map(|c| c.as_ptr()).collect();
    envp.push(std::ptr::null());
    let c_cwd = match &config.cwd {
        Some(d) => Some(cstring(d.as_os_str().as_bytes(), &program_name, "cwd")?),
        None => None,
    };
    let launch_err = |stage: &'static str| {
        let program = program_name.clone();
        move |source: std::io::Error| Error::Launch {
            program,
            stage,
            source,
        }
    };
    let fds = stdio_fds(config.stdio, &program_name)?;
    let pty = matches!(config.stdio, StdioMode::Pty | StdioMode::Terminals);
    let (sync_r, sync_w) = pipe().map_err(launch_err("creating pipes"))?;
    let (err_r, err_w) = pipe().map_err(launch_err("creating pipes"))?;
    let child_fds = [
        fds.child[0].as_raw_fd(),
        fds.child[1].as_raw_fd(),
        fds.child[2].as_raw_fd(),
    ];
    let (sync_r_fd, err_w_fd) = (sync_r.as_raw_fd(), err_w.as_raw_fd());
    let disable_aslr = config.disable_aslr;
    // SAFETY: getpid has no preconditions.
    let parent_pid = unsafe { libc::getpid() };

    // SAFETY: fork in a multithreaded process; the child below only makes
    // async-signal-safe system calls on data prepared before the fork, then execs
    // or _exits.
    let pid = unsafe { libc::fork() };
    if pid == -1 {
        return Err(launch_err("fork")(std::io::Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY (whole block): only raw async-signal-safe system calls follow.
        unsafe {
            // Rust ignores SIGPIPE and tandem's threads may block signals: give the
            // program the defaults it would get from a shell.
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
            for sig in 1..32 {
                libc::signal(sig, libc::SIG_DFL);
            }
            // Last resort: the debuggee dies with its tracer thread.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) == -1 {
                child_fail(err_w_fd, STAGE_PDEATHSIG);
            }
            if libc::getppid() != parent_pid {
                libc::_exit(127);
            }
            // A session of its own: the terminal's ^C for tandem never reaches it.
            if libc::setsid() == -1 {
                child_fail(err_w_fd, STAGE_SETSID);
            }
            if pty && libc::ioctl(child_fds[0], libc::TIOCSCTTY as _, 0) == -1 {
                child_fail(err_w_fd, STAGE_TTY);
            }
            for (target, fd) in child_fds.iter().enumerate() {
                if libc::dup2(*fd, target as i32) == -1 {
                    child_fail(err_w_fd, STAGE_DUP);
                }
            }
            if let Some(cwd) = &c_cwd {
                if libc::chdir(cwd.as_ptr()) == -1 {
                    child_fail(err_w_fd, STAGE_CHDIR);
                }
            }
            if disable_aslr {
                let current = libc::personality(0xffff_ffff);
                if current == -1
                    || libc::personality((current | libc::ADDR_NO_RANDOMIZE) as libc::c_ulong) == -1
                {
                    // A warning, not a failure: go on with randomization.
                    child_report(err_w_fd, STAGE_PERSONALITY, nix::errno::Errno::last_raw());
                }
            }
            // Wait until the parent has seized us, so the exec is traced.
            let mut b = 0u8;
            libc::read(sync_r_fd, &mut b as *mut u8 as *mut libc::c_void, 1);
            libc::execve(c_path.as_ptr(), argv.as_ptr(), envp.as_ptr());
            child_fail(err_w_fd, STAGE_EXEC);
        }
    }
    drop(fds.child);
    drop(sync_r);
    drop(err_w);
    let tid = Tid(pid);
    if let Err(e) = sys::seize(tid, options) {
        let _ = sys::kill(pid, libc::SIGKILL);
        let _ = sys::wait(pid, false, false);
        return Err(launch_err("ptrace seize")(std::io::Error::from(e)));
    }
    // A byte rather than EOF: another thread's fork may hold a copy of the write end.
    let _ = (&File::from(sync_w)).write_all(&[1]);
    let mut err_pipe = File::from(err_r);
    // Wait for the exec event (or the child's death).
    loop {
        let res = sys::wait(pid, false, false)
            .map_err(|e| launch_err("waiting for exec")(std::io::Error::from(e)))?;
        let Some(res) = res else { continue };
        match sys::decode(res.status) {
            sys::Status::Stopped(_, ev) if ev == libc::PTRACE_EVENT_EXEC => break,
            sys::Status::Stopped(sig, ev) => {
                // Nothing else is expected before exec; pass signals on.
                let sig = if ev == 0 { sig } else { 0 };
                let _ = sys::cont(tid, sig);
            }
            sys::Status::Exited(_) | sys::Status::Signaled(..) => {
                let mut buf = Vec::new();
                let _ = err_pipe.read_to_end(&mut buf);
                let (stage, errno) = buf
                    .chunks_exact(8)
                    .map(|r| {
                        let mut s = [0u8; 4];
                        let mut e = [0u8; 4];
                        s.copy_from_slice(&r[..4]);
                        e.copy_from_slice(&r[4..]);
                        (u32::from_ne_bytes(s), i32::from_ne_bytes(e))
                    })
                    .find(|(s, _)| *s != STAGE_PERSONALITY)
                    .unwrap_or((0, libc::ECHILD));
                return Err(launch_err(stage_name(stage))(
                    std::io::Error::from_raw_os_error(errno),
                ));
            }
            sys::Status::Other => {}
        }
    }
    // The exec closed the child's copy of the error pipe: read the warnings.
    let mut buf = Vec::new();
    let _ = err_pipe.read_to_end(&mut buf);
    let mut warnings = Vec::new();
    let mut aslr_disabled = disable_aslr;
    for r in buf.chunks_exact(8) {
        let mut s = [0u8; 4];
        let mut e = [0u8; 4];
        s.copy_from_slice(&r[..4]);
        e.copy_from_slice(&r[4..]);
        if u32::from_ne_bytes(s) == STAGE_PERSONALITY {
            aslr_disabled = false;
            let msg = format!(
                "cannot disable address randomization ({}); running with it",
                std::io::Error::from_raw_os_error(i32::from_ne_bytes(e))
            );
            tracing::warn!(pid, "{msg}");
            warnings.push(msg);
        }
    }
    Ok(Spawned {
        pid: Pid(pid),
        stdio: fds.parent,
        aslr_disabled,
        warnings,
    })
}
