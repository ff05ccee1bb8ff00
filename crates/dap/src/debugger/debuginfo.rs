//! A stripped program's debug information fetched from debuginfod before it is launched,
//! with `progressStart`/`progressUpdate`/`progressEnd` events and cancellation.
//!
//! A `launch` whose program has no DWARF and no separate debug file here (roots,
//! `.gnu_debuglink`, the debuginfod cache), while `DEBUGINFOD_URLS` names servers, is held:
//! the download runs on its own thread and reports to the main loop, which keeps serving
//! requests — `cancel` with the progress's `progressId` (or the launch's `requestId`) stops
//! it. When it ends, however it ends, the program is launched (without debug information
//! when the download failed or was cancelled, which an `output` event says) and the
//! `launch` request is answered.

use std::time::Instant;

use crossbeam_channel::Sender;
use engine::debuginfo::debuginfod::{self, Cancel, Progress};
use engine::LaunchOptions;

use super::*;
use crate::server::Adapter;

/// How often progress is reported at most.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// What the download thread tells the main loop.
pub(crate) enum FetchEvent {
    Progress(u64, Progress),
    Done(u64, Result<PathBuf, debuginfod::Error>),
}

/// A `launch` waiting for its program's debug information.
struct Pending {
    /// Which download (events of an abandoned one are ignored).
    id: u64,
    seq: i64,
    args: LaunchArguments,
    options: LaunchOptions,
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

/// Whether a `launch` was held for a download.
enum Held {
    Yes,
    /// No download: the options when they were made already.
    No(Option<Box<LaunchOptions>>),
}

/// `launch`: held while the program's debug information downloads, else launched at once.
pub(crate) fn launch(a: &mut Adapter, req: &dap::Request) {
    match a.debugger().begin_fetch(req) {
        Held::Yes => {}
        Held::No(Some(options)) => {
            a.handle::<Launch>(req, |a, args| a.debugger().launch_with(args, *options));
        }
        Held::No(None) => {
            a.handle::<Launch>(req, |a, args| a.debugger().launch(args));
        }
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
                let outcome = d.fetch_done(pending, result);
                match outcome {
                    Ok(()) => self.out().success(seq, Launch::COMMAND, ()),
                    Err(Failure(message)) => self.out().error(seq, Launch::COMMAND, &message),
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

    /// Starts downloading the program's debug information when it needs one and a server
    /// is configured; then the launch is held (answered when the download ends).
    fn begin_fetch(&mut self, req: &dap::Request) -> Held {
        if self.debuggee.is_some() || self.core.is_some() || self.fetching() {
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
            return Held::No(Some(Box::new(options)));
        }
        self.fetcher.pending = Some(Pending {
            id,
            seq: req.seq,
            args,
            options,
            progress_id,
            cancel,
            started: Instant::now(),
        });
        Held::Yes
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
        let program = pending.options.program.display().to_string();
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
        self.launch_with(pending.args, pending.options)
    }

    /// `cancel` of the download's progress (or of the held launch request).
    pub(super) fn cancel_fetch(&mut self, progress_id: Option<&str>, request_id: Option<i64>) {
        if let Some(p) = &self.fetcher.pending {
            let ours = progress_id.is_some() && progress_id == p.progress_id.as_deref();
            if ours || request_id == Some(p.seq) {
                p.cancel.cancel();
            }
        }
    }

    fn progress_start_cancellable(&mut self, title: &str, message: &str) -> Option<String> {
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
