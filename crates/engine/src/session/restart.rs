//! Restarting a frame in a recording (DAP `restartFrame`; docs/reverse.md): back to the
//! entry of the function invocation a frame shows, with memory as it was then.

use std::ops::ControlFlow;

use super::reverse::{finish, now_position, reverse_error, windows};
use super::*;
use tracer::{Position, ScanStop};

impl Session {
    /// Goes back to where the invocation `frame` shows began: the last arrival before
    /// now at its function's first instruction with the frame's CFA, then on to the end
    /// of the prologue (where a breakpoint on the function stops, so its arguments read
    /// right). The stop arrives as an event (cause [`StopCause::Restart`]); `then` runs
    /// first, as in [`Session::resume_then`].
    pub fn restart_frame_then(
        &self,
        frame: FrameId,
        then: impl FnOnce() + Send + 'static,
    ) -> Result<()> {
        self.check_stopped()?;
        self.check_records()?;
        let data = self.frame(frame)?;
        if data.frame.inlined || data.frame.tail_call {
            return Err(Error::Reverse(
                "an inlined or tail-called frame has no entry of its own to go back to".into(),
            ));
        }
        let cfa = data.frame.cfa.ok_or_else(|| {
            Error::Reverse("the frame's canonical frame address is not known".into())
        })?;
        let (entry, body, name) = {
            let c = lock(&self.core);
            // A caller's pc is a return address: its lookup pc is the call's.
            function_entry(&c.modules, data.lookup_pc)
        }
        .ok_or_else(|| {
            Error::Reverse("the frame's function has no debug information to find its entry".into())
        })?;
        self.clear_tables();
        let core = self.core.clone();
        self.handle.call(move |t: &mut Tracer| -> Result<()> {
            let now = now_position(&core, t)?;
            then();
            let res = restart_on_tracer(&core, t, &now, entry, body, cfa).map(|()| {
                (
                    StopCause::Restart,
                    Some(format!(
                        "back to the start of {name}, memory as it was then"
                    )),
                )
            });
            finish(&core, t, &now, res)
        })?
    }
}

/// The runtime addresses of the entry and the end of the prologue of the function at
/// `pc`, and its name.
fn function_entry(modules: &Modules, pc: u64) -> Option<(u64, u64, String)> {
    let module = modules.find(pc)?;
    let binary = module.binary()?;
    let f = binary.function_at(module.to_file(pc)).ok()??;
    let entry = f.function.entry()?;
    let body = f.function.breakpoint_addr.unwrap_or(entry);
    let name = f.function.name.clone();
    Some((module.to_runtime(entry), module.to_runtime(body), name))
}

fn restart_on_tracer(
    core: &Mutex<Core>,
    t: &mut Tracer,
    now: &Position,
    entry: u64,
    body: u64,
    cfa: u64,
) -> Result<()> {
    let mut c = lock(core);
    c.clear_step(t);
    let mut extra = vec![RuntimeAddr(entry), RuntimeAddr(body)];
    extra.dedup();
    // Arrivals at the entry and the body with this CFA, in order; searched from the
    // latest stretch of the past back, until one at the entry is among them.
    let mut arrivals: Vec<(u64, Position)> = Vec::new();
    for (from, to) in windows(t, now) {
        let mut found: Vec<(u64, Position)> = Vec::new();
        t.scan_stops(Some(from), &to, &extra, &mut |t, tid, stop| {
            let ScanStop::Breakpoint(addr) = stop else {
                return ControlFlow::Continue(());
            };
            if addr.0 != entry && addr.0 != body {
                return ControlFlow::Continue(());
            }
            let Ok(regs) = t.regs(tid) else {
                return ControlFlow::Continue(());
            };
            let mem = TracerMemory(t);
            let f = unwind::frames(FrameRegs::from_registers(&regs), &c.modules, &mem, 1, 0);
            if f.first().and_then(|f| f.frame.cfa) == Some(cfa) {
                if let Some(pos) = t.position() {
                    found.push((addr.0, pos));
                }
            }
            ControlFlow::Continue(())
        })
        .map_err(reverse_error)?;
        found.append(&mut arrivals);
        arrivals = found;
        if arrivals.iter().any(|(a, _)| *a == entry) {
            break;
        }
    }
    drop(c);
    // The last arrival at the entry, then the first at the body after it.
    let last_entry = arrivals.iter().rposition(|(a, _)| *a == entry);
    let at_entry = last_entry.map(|i| arrivals[i].1.clone());
    let at_body = last_entry.and_then(|i| {
        if body == entry {
            return Some(arrivals[i].1.clone());
        }
        arrivals[i + 1..]
            .iter()
            .find(|(a, _)| *a == body)
            .map(|(_, p)| p.clone())
    });
    let target = match (at_body, at_entry) {
        (Some(b), _) => b,
        (None, Some(e)) => e,
        (None, None) => {
            return Err(Error::Reverse(
                "the start of this frame is before the start of the recording".into(),
            ))
        }
    };
    t.goto(&target).map_err(reverse_error)
}
