//! A stripped program's debug information fetched from debuginfod before it is launched
//! or attached to, with `progressStart`/`progressUpdate`/`progressEnd` events and
//! cancellation.
//!
//! A `launch` or `attach` whose program has no DWARF and no separate debug file here
//! (roots, `.gnu_debuglink`, the debuginfod cache), while `DEBUGINFOD_URLS` names servers,
//! is held: the download runs on its own thread and reports to the main loop, which keeps
//! serving requests — `cancel` with the progress's `progressId` (or the held request's
//! `requestId`) stops it. When it ends, however it ends, the program is launched or
//! attached to (without debug information when the download failed or was cancelled,
//! which an `output` event says) and the request is answered. The engine itself only
//! reads the cache.

use std::time::Instant;

use crossbeam_channel::Sender;
use engine::debuginfo::debuginfod::{self, Cancel, Progress};
use engine::LaunchOptions;
use procman::tracer::Pid;

use super::*;
use crate::server::Adapter;

/// How often progress is reported at most.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// What the download thread tells the main loop.
pub(crate) enum FetchEvent {
    Progress(u64, Progress),
    Done(u64, Result<PathBuf, debuginfod::Error>),
}

/// What a held request does once the download ended.
enum Start {
    Launch(Box<LaunchArguments>, Box<LaunchOptions>),
    Attach(Box<AttachArguments>, Pid),
}

impl Start {
    fn command(&self) -> &'static str {
        match self {
            Start::Launch(..) => Launch::COMMAND,
            Start::Attach(..) => Attach::COMMAND,
        }
    }
}

/// A `launch` or `attach` waiting for its program's debug information.
struct Pending {
    /// Which download (events of an abandoned one are ignored).
    id: u64,
    seq: i64,
    start: Start,
    program: String,
    progress_id: Option<String>,
    cancel: Cancel,
    started: Instant,
}

/// The download in flight, if any, and the channel its thread reports on.
pub(crate) struct Fetcher {
    tx: Sender<FetchEvent>,
    rx: Receiver<FetchEvent>,
    pending: Option<Pending>,
    next_id: u64,
}

impl Default for Fetcher {
    fn default() -> Self {
        let (tx, rx) = crossbeam_channel::unbounded();
        Fetcher {
            tx,
            rx,
            pending: None,
            next_id: 1,
        }
    }
}

impl Drop for Fetcher {
    fn drop(&mut self) {
        // The session is over: its download has nobody to wait for it.
        if let Some(p) = &self.pending {
            p.cancel.cancel();
        }
    }
}

/// Whether a request was held for a download.
enum Held<T> {
    Yes,
    /// No download: what was found out already, when anything was.
    No(Option<T>),
    /// The request cannot go on (answered with this).
    Failed(Failure),
}

/// `launch`: held while the program's debug information downloads, else launched at once.
pub(crate) fn launch(a: &mut Adapter, req: &dap::Request) {
    match a.debugger().hold_launch(req) {
        Held::Yes => {}
        Held::No(Some(options)) => {
            a.handle::<Launch>(req, |a, args| a.debugger().launch_with(args, *options));
        }
        Held::No(None) => {
            a.handle::<Launch>(req, |a, args| a.debugger().launch(args));
        }
        Held::Failed(Failure(message)) => a.out().error(req.seq, Launch::COMMAND, &message),
    }
}

/// `attach`: held while the program's debug information downloads, else attached at once.
pub(crate) fn attach(a: &mut Adapter, req: &dap::Request) {
    match a.debugger().hold_attach(req) {
        Held::Yes => {}
        Held::No(Some(pid)) => {
            a.handle::<Attach>(req, |a, args| a.debugger().attach_to(args, pid));
        }
        Held::No(None) => {
            a.handle::<Attach>(req, |a, args| a.debugger().attach(args));
        }
        Held::Failed(Failure(message)) => a.out().error(req.seq, Attach::COMMAND, &message),
    }
}

impl Adapter {
    /// A report of the download thread.
    pub(crate) fn on_fetch(&mut self, event: FetchEvent) {
        let d = self.debugger();
        match event {
            FetchEvent::Progress(id, p) => d.fetch_progress(id, p),
            FetchEvent::Done(id, result) => {
                let Some(pending) = d.fetcher.pending.take_if(|p| p.id == id) else {
                    return;
                };
                let seq = pending.seq;
                let command = pending.start.command();
                let outcome = d.fetch_done(pending, result);
                match outcome {
                    Ok(()) => self.out().success(seq, command, ()),
                    Err(Failure(message)) => self.out().error(seq, command, &message),
                }
                self.debugger().flush_after();
            }
        }
    }
}

impl Debugger {
    /// The download thread's reports.
    pub(crate) fn fetch_events(&self) -> Receiver<FetchEvent> {
        self.fetcher.rx.clone()
    }

    /// Whether a launch is waiting for its debug information.
    pub(super) fn fetching(&self) -> bool {
        self.fetcher.pending.is_some()
    }

    /// Holds a `launch` whose program needs a download.
    fn hold_launch(&mut self, req: &dap::Request) -> Held<Box<LaunchOptions>> {
        if self.debuggee.is_some() || self.fetching() {
            return Held::No(None);
        }
        // Without a server nothing more is looked at.
        let Some(client) = debuginfod::Client::from_env() else {
            return Held::No(None);
        };
        let Some(args) = req
            .arguments
            .clone()
            .and_then(|v| serde_json::from_value::<LaunchArguments>(v).ok())
        else {
            return Held::No(None);
        };
        let Ok(options) = launch::launch_options(&args) else {
            return Held::No(None);
        };
        let Some(build_id) = engine::missing_debug_info(&options.program, &options.debug_info)
        else {
            return Held::No(Some(Box::new(options)));
        };
        let program = options.program.display().to_string();
        let start = Start::Launch(Box::new(args), Box::new(options));
        match self.begin_fetch(req.seq, client, build_id, program, start) {
            Ok(()) => Held::Yes,
            Err(Start::Launch(_, options)) => Held::No(Some(options)),
            Err(Start::Attach(..)) => Held::No(None),
        }
    }

    /// Holds an `attach` whose program needs a download.
    fn hold_attach(&mut self, req: &dap::Request) -> Held<Pid> {
        if self.debuggee.is_some() || self.fetching() {
            return Held::No(None);
        }
        let Some(client) = debuginfod::Client::from_env() else {
            return Held::No(None);
        };
        let Some(args) = req
            .arguments
            .clone()
            .and_then(|v| serde_json::from_value::<AttachArguments>(v).ok())
        else {
            return Held::No(None);
        };
        // Found once: `waitFor` may have waited for it.
        let pid = match launch::attach_pid(&args) {
            Ok(pid) => pid,
            Err(e) => return Held::Failed(Failure(e)),
        };
        let Some(exe) = procman::tracer::procfs::exe_of(pid) else {
            return Held::No(Some(pid));
        };
        let open = engine::modules::main_executable(pid, &exe);
        let options = engine::DebugInfoOptions::default();
        let Some(build_id) = engine::missing_debug_info(&open, &options) else {
            return Held::No(Some(pid));
        };
        let program = exe.display().to_string();
        let start = Start::Attach(Box::new(args), pid);
        match self.begin_fetch(req.seq, client, build_id, program, start) {
            Ok(()) => Held::Yes,
            Err(_) => Held::No(Some(pid)),
        }
    }

    /// Starts the download on its thread and holds the request; gives `start` back when
    /// the thread cannot be started.
    fn begin_fetch(
        &mut self,
        seq: i64,
        client: debuginfod::Client,
        build_id: Vec<u8>,
        program: String,
        start: Start,
    ) -> Result<(), Start> {
        let hex = debuginfod::hex(&build_id);
        self.console(format!(
            "downloading the debug information of {program} (build-id {hex}) from {}",
            client.urls().join(" ")
        ));
        let progress_id = self.progress_start_cancellable(
            "Downloading debug information",
            &format!("{program} (build-id {hex})"),
        );
        let id = self.fetcher.next_id;
        self.fetcher.next_id += 1;
        let cancel = Cancel::default();
        let tx = self.fetcher.tx.clone();
        let thread_cancel = cancel.clone();
        let spawned = std::thread::Builder::new()
            .name("debuginfod".into())
            .spawn(move || {
                let mut last: Option<Instant> = None;
                let mut report = |p: Progress| {
                    let whole = p.total.is_some_and(|t| p.received >= t);
                    if whole || last.is_none_or(|l| l.elapsed() >= PROGRESS_EVERY) {
                        last = Some(Instant::now());
                        let _ = tx.send(FetchEvent::Progress(id, p));
                    }
                };
                let result = client.fetch(&build_id, &mut report, &thread_cancel);
                let _ = tx.send(FetchEvent::Done(id, result));
            });
        if let Err(e) = spawned {
            tracing::warn!("cannot start the debuginfod download: {e}");
            self.progress_end(progress_id);
            return Err(start);
        }
        self.fetcher.pending = Some(Pending {
            id,
            seq,
            start,
            program,
            progress_id,
            cancel,
            started: Instant::now(),
        });
        Ok(())
    }

    fn fetch_progress(&mut self, id: u64, p: Progress) {
        let Some(pending) = self.fetcher.pending.as_ref().filter(|x| x.id == id) else {
            return;
        };
        let Some(progress_id) = pending.progress_id.clone() else {
            return;
        };
        let mut body = json!({"progressId": progress_id, "message": amount(p)});
        if let Some(total) = p.total.filter(|t| *t > 0) {
            body["percentage"] = json!((p.received.min(total) * 100 / total) as f64);
        }
        self.out.event("progressUpdate", Some(body));
    }

    fn fetch_done(
        &mut self,
        pending: Pending,
        result: Result<PathBuf, debuginfod::Error>,
    ) -> Result<(), Failure> {
        let program = pending.program.clone();
        let (ended, note) = match &result {
            Ok(path) => {
                let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
                (
                    "downloaded".to_string(),
                    format!(
                        "downloaded the debug information of {program} ({}) in {:.2} s: {}",
                        kib(size),
                        pending.started.elapsed().as_secs_f64(),
                        path.display()
                    ),
                )
            }
            Err(debuginfod::Error::Cancelled) => (
                "cancelled".to_string(),
                format!(
                    "the download of debug information was cancelled: {program} is debugged \
                     without debug information"
                ),
            ),
            Err(e) => (
                "failed".to_string(),
                format!(
                    "no debug information from debuginfod ({e}): {program} is debugged \
                     without debug information"
                ),
            ),
        };
        if let Some(id) = pending.progress_id {
            self.out.event(
                "progressEnd",
                Some(json!({"progressId": id, "message": ended})),
            );
        }
        self.console(note);
        match pending.start {
            Start::Launch(args, options) => self.launch_with(*args, *options),
            Start::Attach(args, pid) => self.attach_to(*args, pid),
        }
    }

    /// `cancel` of the download's progress (or of the held request).
    pub(super) fn cancel_fetch(&mut self, progress_id: Option<&str>, request_id: Option<i64>) {
        if let Some(p) = &self.fetcher.pending {
            let ours = progress_id.is_some() && progress_id == p.progress_id.as_deref();
            if ours || request_id == Some(p.seq) {
                p.cancel.cancel();
            }
        }
    }

    pub(super) fn progress_start_cancellable(
        &mut self,
        title: &str,
        message: &str,
    ) -> Option<String> {
        if !self.client.progress {
            return None;
        }
        self.progress += 1;
        let id = format!("tandem-{}", self.progress);
        self.out.event(
            "progressStart",
            Some(json!({"progressId": id, "title": title, "message": message,
                        "cancellable": true, "percentage": 0})),
        );
        Some(id)
    }
}

fn kib(bytes: u64) -> String {
    format!("{} KiB", bytes.div_ceil(1024))
}

fn amount(p: Progress) -> String {
    match p.total {
        Some(total) => format!("{} of {}", kib(p.received), kib(total)),
        None => kib(p.received),
    }
}
