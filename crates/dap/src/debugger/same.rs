//! Children in this session (`followChildren: "same"`, the default for a client that
//! cannot open sessions of its own): each followed child is debugged by an adapter of its
//! own inside this process — exactly the session `startDebugging` would have opened — and
//! this adapter is that adapter's client, relaying between it and the real one.
//!
//! The child adapter is told the client supports `startDebugging`; its own children come
//! back here as such requests and get adapters of their own, so every process of the
//! program sits in one flat list. Requests reach the process they name: by `threadId`
//! (the owner of the thread), by `frameId` and `variablesReference` (each child adapter
//! hands out ids in a block of its own), memory requests to the process of the last stop;
//! breakpoint requests go to every process. `threads` lists every process's threads, named
//! with their process; the debugger's console lines about a child start with its process.
//! A child's `exited` and `terminated` end its part only; its `initialized`, `breakpoint`,
//! `capabilities` and progress events are the relay's business and are not shown.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::io::PipeWriter;

use crossbeam_channel::Sender;
use wire::dap::ProtocolMessage;
use wire::{FrameWriter, Inbound, Limits};

use super::*;
use crate::server::{Adapter, Flow};

/// A message from child adapter `.0`.
pub(crate) type ChildMessage = (usize, Inbound);

/// How long a request relayed to a child adapter may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// How many id blocks child adapters use; a block is 2^24 ids from 2^30 up.
const BLOCKS: usize = 64;
const BLOCK_BITS: u32 = 24;

/// The child adapters of this session and what they need to start.
pub(crate) struct Same {
    children: Vec<Option<Child>>,
    tx: Sender<ChildMessage>,
    rx: Receiver<ChildMessage>,
    /// Messages read while waiting for a relayed response, for the main loop.
    pending: VecDeque<ChildMessage>,
    seq: i64,
    /// Requests of the relay itself whose responses are nobody's news.
    swallow: HashSet<(usize, i64)>,
    /// The child of the last stop shown (memory requests go there).
    last_stop: Option<usize>,
    /// The client's `initialize` arguments, given to every child adapter.
    init: Option<Value>,
    /// The last `setBreakpoints` per source, `setFunctionBreakpoints` and
    /// `setExceptionBreakpoints` arguments, replayed to every new child.
    breakpoints: BTreeMap<String, (&'static str, Value)>,
}

struct Child {
    /// The processes whose adapter this is (the child, and its later images).
    pids: Vec<i32>,
    input: FrameWriter<PipeWriter>,
}

impl Default for Same {
    fn default() -> Self {
        let (tx, rx) = crossbeam_channel::unbounded();
        Same {
            children: Vec::new(),
            tx,
            rx,
            pending: VecDeque::new(),
            seq: 0,
            swallow: HashSet::new(),
            last_stop: None,
            init: None,
            breakpoints: BTreeMap::new(),
        }
    }
}

impl std::fmt::Debug for Same {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Same")
            .field("children", &self.children.iter().flatten().count())
            .finish_non_exhaustive()
    }
}

/// The id range of child adapter `k`'s frame ids and variables references.
fn block(k: usize) -> (i64, i64) {
    let lo = ((BLOCKS + k % BLOCKS) as i64) << BLOCK_BITS;
    (lo, lo + (1 << BLOCK_BITS) - 1)
}

/// The child adapter whose block holds `id`, if any.
fn block_of(id: i64) -> Option<usize> {
    let b = usize::try_from(id >> BLOCK_BITS).ok()?;
    (BLOCKS..2 * BLOCKS).contains(&b).then_some(b - BLOCKS)
}

impl Same {
    /// The messages of every child adapter.
    pub(crate) fn receiver(&self) -> Receiver<ChildMessage> {
        self.rx.clone()
    }

    /// A message read ahead while a relayed request waited.
    pub(crate) fn take_pending(&mut self) -> Option<ChildMessage> {
        self.pending.pop_front()
    }

    fn live(&self) -> impl Iterator<Item = (usize, &Child)> {
        self.children
            .iter()
            .enumerate()
            .filter_map(|(k, c)| c.as_ref().map(|c| (k, c)))
    }

    fn any(&self) -> bool {
        self.live().next().is_some()
    }

    fn send(&mut self, k: usize, command: &str, arguments: Option<Value>) -> Option<i64> {
        self.seq += 1;
        let seq = self.seq;
        let child = self.children.get(k)?.as_ref()?;
        let message = ProtocolMessage::Request(dap::Request {
            seq,
            command: command.to_owned(),
            arguments,
        });
        child.input.write_frame(&dap::encode(&message)).ok()?;
        Some(seq)
    }

    /// Sends a request whose answer nobody waits for.
    fn tell(&mut self, k: usize, command: &str, arguments: Option<Value>) {
        if let Some(seq) = self.send(k, command, arguments) {
            self.swallow.insert((k, seq));
        }
    }

    /// Relays a request to child adapter `k` and waits for its answer; what else it
    /// says meanwhile waits for the main loop.
    fn call(&mut self, k: usize, command: &str, arguments: Option<Value>) -> Option<dap::Response> {
        let seq = self.send(k, command, arguments)?;
        let deadline = Instant::now() + CALL_TIMEOUT;
        loop {
            let (j, m) = self.rx.recv_deadline(deadline).ok()?;
            if j == k {
                if let Inbound::Frame(body) = &m {
                    if let Ok(ProtocolMessage::Response(r)) = dap::decode(body) {
                        if r.request_seq == seq {
                            return Some(r);
                        }
                    }
                } else {
                    self.pending.push_back((j, m));
                    return None;
                }
            }
            self.pending.push_back((j, m));
        }
    }

    /// The child adapter owning thread `tid`.
    fn owner_of_thread(&self, tid: i64) -> Option<usize> {
        self.live()
            .find(|(_, c)| {
                c.pids
                    .iter()
                    .any(|p| Path::new(&format!("/proc/{p}/task/{tid}")).exists())
            })
            .map(|(k, _)| k)
    }

    fn respond_to_child(&self, k: usize, request_seq: i64, command: &str, success: bool) {
        let Some(Some(child)) = self.children.get(k) else {
            return;
        };
        let message = ProtocolMessage::Response(dap::Response {
            seq: 0,
            request_seq,
            success,
            command: command.to_owned(),
            message: (!success).then(|| "not supported by the relay".to_owned()),
            body: None,
        });
        let _ = child.input.write_frame(&dap::encode(&message));
    }

    /// Keeps a breakpoint request for children that start later.
    fn remember(&mut self, command: &'static str, args: &Value) {
        let key = match command {
            "setBreakpoints" => {
                let source = &args["source"];
                let path = source["path"]
                    .as_str()
                    .or_else(|| source["name"].as_str())
                    .unwrap_or_default();
                format!("source {path}")
            }
            other => other.to_owned(),
        };
        self.breakpoints.insert(key, (command, args.clone()));
    }
}

impl Debugger {
    /// Keeps the client's `initialize` arguments for the adapters of children.
    pub(crate) fn keep_initialize(&mut self, args: Option<&Value>) {
        self.same.init = args.cloned();
    }

    /// Starts the adapter of a child in this session, for the `attach` configuration
    /// `startDebugging` would have carried.
    pub(super) fn same_child(&mut self, pid: i32, configuration: Value) {
        let k = self.same.children.len();
        let (ids_lo, ids_hi) = block(k);
        let manager = self.manager.clone();
        let started = (|| -> std::io::Result<FrameWriter<PipeWriter>> {
            let (in_r, in_w) = std::io::pipe()?;
            let (out_r, out_w) = std::io::pipe()?;
            std::thread::Builder::new()
                .name(format!("child-{pid}"))
                .spawn(move || {
                    crate::server::serve_child(in_r, out_w, manager, (ids_lo, ids_hi))
                })?;
            let inbound = wire::spawn_reader(out_r, Limits::default())?;
            let tx = self.same.tx.clone();
            std::thread::Builder::new()
                .name(format!("child-{pid}-relay"))
                .spawn(move || {
                    for m in inbound {
                        let end = !matches!(m, Inbound::Frame(_));
                        if tx.send((k, m)).is_err() || end {
                            break;
                        }
                    }
                })?;
            Ok(FrameWriter::new(in_w))
        })();
        let input = match started {
            Ok(input) => input,
            Err(e) => {
                procman::release_child(procman::tracer::Pid(pid));
                self.console(format!(
                    "[child process {pid} cannot be debugged in this session ({e}): it runs \
                     without the debugger]"
                ));
                return;
            }
        };
        self.same.children.push(Some(Child {
            pids: vec![pid],
            input,
        }));
        let mut init = self.same.init.clone().unwrap_or_else(|| json!({}));
        if let Some(o) = init.as_object_mut() {
            o.insert("supportsStartDebuggingRequest".into(), json!(true));
            o.insert("supportsRunInTerminalRequest".into(), json!(false));
            o.insert("supportsProgressReporting".into(), json!(false));
            o.entry("adapterID").or_insert(json!("tandem"));
        }
        self.same.tell(k, "initialize", Some(init));
        self.same.tell(k, "attach", Some(configuration));
        let replay: Vec<(&'static str, Value)> = self.same.breakpoints.values().cloned().collect();
        for (command, args) in replay {
            self.same.tell(k, command, Some(args));
        }
        self.same.tell(k, "configurationDone", None);
        self.console(format!("[child process {pid} is debugged in this session]"));
    }

    /// A message of a child adapter, as the main loop reads it.
    pub(crate) fn on_same_message(&mut self, (k, m): ChildMessage) {
        let body = match m {
            Inbound::Frame(body) => body,
            Inbound::Closed | Inbound::Failed(_) => {
                if let Some(slot) = self.same.children.get_mut(k) {
                    *slot = None;
                }
                return;
            }
        };
        match dap::decode(&body) {
            Ok(ProtocolMessage::Response(r)) => {
                if self.same.swallow.remove(&(k, r.request_seq))
                    && !r.success
                    && matches!(r.command.as_str(), "attach" | "configurationDone")
                {
                    self.console(format!(
                        "[a child process's {}: {}]",
                        r.command,
                        r.message.unwrap_or_default()
                    ));
                }
            }
            Ok(ProtocolMessage::Event(e)) => self.on_same_event(k, e),
            Ok(ProtocolMessage::Request(r)) => {
                if r.command == "startDebugging" {
                    self.same.respond_to_child(k, r.seq, &r.command, true);
                    let configuration = r
                        .arguments
                        .as_ref()
                        .map(|a| a["configuration"].clone())
                        .unwrap_or(Value::Null);
                    match configuration["pid"]
                        .as_i64()
                        .and_then(|p| i32::try_from(p).ok())
                    {
                        Some(pid) => self.same_child(pid, configuration),
                        None => tracing::warn!("startDebugging without a pid from a child"),
                    }
                } else {
                    self.same.respond_to_child(k, r.seq, &r.command, false);
                }
            }
            Err(_) => tracing::debug!("undecodable message from a child adapter"),
        }
    }

    fn on_same_event(&mut self, k: usize, e: dap::Event) {
        let mut body = e.body.unwrap_or(Value::Null);
        match e.event.as_str() {
            "initialized" | "capabilities" | "breakpoint" | "progressStart" | "progressUpdate"
            | "progressEnd" => return,
            "process" => {
                if let (Some(pid), Some(Some(child))) = (
                    body["systemProcessId"]
                        .as_i64()
                        .and_then(|p| i32::try_from(p).ok()),
                    self.same.children.get_mut(k),
                ) {
                    if !child.pids.contains(&pid) {
                        child.pids.push(pid);
                    }
                }
            }
            "stopped" => {
                // Breakpoint ids are the parent's: the child's numbering means nothing
                // to the client.
                if let Some(o) = body.as_object_mut() {
                    o.remove("hitBreakpointIds");
                }
                self.same.last_stop = Some(k);
            }
            // The child adapter says how its process ended in its console output.
            "exited" => return,
            "output" if matches!(body["category"].as_str(), None | Some("console")) => {
                // The debugger's words about a child: which process they are about.
                let pid = self
                    .same
                    .children
                    .get(k)
                    .and_then(|c| c.as_ref())
                    .and_then(|c| c.pids.first().copied())
                    .unwrap_or(0);
                if let Some(text) = body["output"].as_str() {
                    body["output"] = json!(format!("[process {pid}] {text}"));
                }
            }
            "terminated" => {
                self.same
                    .tell(k, "disconnect", Some(json!({"terminateDebuggee": false})));
                if self.same.last_stop == Some(k) {
                    self.same.last_stop = None;
                }
                if let Some(slot) = self.same.children.get_mut(k) {
                    *slot = None;
                }
                return;
            }
            _ => {}
        }
        self.out.event(&e.event, Some(body));
    }

    /// Ends every child adapter's session (`terminateDebuggee` as the parent's) and waits
    /// for each to answer.
    pub(super) fn end_same_children(&mut self, terminate: bool) {
        let ks: Vec<usize> = self.same.live().map(|(k, _)| k).collect();
        for k in ks {
            let _ = self.same.call(
                k,
                "disconnect",
                Some(json!({"terminateDebuggee": terminate})),
            );
            if let Some(slot) = self.same.children.get_mut(k) {
                *slot = None;
            }
        }
    }
}

/// What the relay does with a client request: relayed to one child adapter (answered
/// here), answered here from several, or left to this adapter (`None`), after copies went
/// to the children where every process needs it.
pub(crate) fn route(a: &mut Adapter, req: &dap::Request) -> Option<Flow> {
    let args = req.arguments.clone().unwrap_or(Value::Null);
    let command = req.command.as_str();
    if let Some(c) = [
        "setBreakpoints",
        "setFunctionBreakpoints",
        "setExceptionBreakpoints",
    ]
    .into_iter()
    .find(|c| *c == command)
    {
        let same = &mut a.debugger().same;
        same.remember(c, &args);
        let ks: Vec<usize> = same.live().map(|(k, _)| k).collect();
        for k in ks {
            same.tell(k, c, Some(args.clone()));
        }
        return None;
    }
    if !a.debugger().same.any() {
        return None;
    }
    let target = match command {
        "continue" | "next" | "stepIn" | "stepOut" | "pause" | "stackTrace" | "stepBack"
        | "reverseContinue" | "goto" | "exceptionInfo" => args["threadId"]
            .as_i64()
            .and_then(|t| a.debugger().same.owner_of_thread(t)),
        "scopes" | "evaluate" | "setExpression" | "completions" | "stepInTargets"
        | "restartFrame" => args["frameId"].as_i64().and_then(block_of),
        "variables" | "setVariable" => args["variablesReference"].as_i64().and_then(block_of),
        "dataBreakpointInfo" => args["variablesReference"]
            .as_i64()
            .or_else(|| args["frameId"].as_i64())
            .and_then(block_of),
        "readMemory" | "writeMemory" | "disassemble" => a.debugger().same.last_stop,
        "threads" => return Some(threads(a, req)),
        _ => None,
    };
    let k = target?;
    match a.debugger().same.call(k, command, req.arguments.clone()) {
        Some(r) => a
            .out()
            .response(req.seq, command, r.success, r.message, r.body),
        None => a.out().error(
            req.seq,
            command,
            "the child process's session did not answer",
        ),
    }
    Some(Flow::Continue)
}

/// Every process's threads, named with their process.
fn threads(a: &mut Adapter, req: &dap::Request) -> Flow {
    let own = a.debugger().threads(None);
    let pid = a.debugger().debuggee.as_ref().map(|d| d.session.pid().0);
    let mut threads: Vec<Value> = match own {
        Ok(body) => body
            .threads
            .into_iter()
            .map(|t| json!({"id": t.id, "name": with_process(&t.name, pid)}))
            .collect(),
        Err(Failure(message)) => {
            a.out().error(req.seq, "threads", &message);
            return Flow::Continue;
        }
    };
    let ks: Vec<usize> = a.debugger().same.live().map(|(k, _)| k).collect();
    for k in ks {
        let Some(r) = a.debugger().same.call(k, "threads", None) else {
            continue;
        };
        let child = a
            .debugger()
            .same
            .children
            .get(k)
            .and_then(|c| c.as_ref())
            .and_then(|c| c.pids.first().copied());
        for t in r
            .body
            .as_ref()
            .and_then(|b| b["threads"].as_array())
            .into_iter()
            .flatten()
        {
            threads.push(json!({
                "id": t["id"],
                "name": with_process(t["name"].as_str().unwrap_or_default(), child),
            }));
        }
    }
    a.out()
        .success(req.seq, "threads", json!({"threads": threads}));
    a.debugger().flush_after();
    Flow::Continue
}

fn with_process(name: &str, pid: Option<i32>) -> String {
    match pid {
        Some(pid) => format!("[process {pid}] {name}"),
        None => name.to_owned(),
    }
}
