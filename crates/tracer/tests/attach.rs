//! Attach to a running process, read memory, break, detach: it keeps running and its
//! text equals the ELF's. EPERM and ESRCH give clear errors.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;
use tracer::{AttachConfig, Error, Event, Pid, RuntimeAddr, StopReason, Tracer};

struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spin(sample: &common::Sample) -> Child {
    Child(
        Command::new(&sample.path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn"),
    )
}

fn load_bias(pid: Pid, path: &std::path::Path) -> u64 {
    // The first mapping of the executable is at file offset 0.
    let canon = path.canonicalize().expect("canon");
    let maps = tracer::procfs::read_maps(pid).expect("maps");
    maps.iter()
        .find(|m| std::path::Path::new(&m.path) == canon && m.offset == 0)
        .map(|m| m.start.0)
        .expect("mapping")
}

#[test]
fn attach_read_break_detach_keeps_running() {
    let sample = common::compile("proc_spin", &["-g", "-O0"]);
    let child = spin(&sample);
    let pid = Pid(child.0.id() as i32);
    std::thread::sleep(Duration::from_millis(50));
    let mut t = Tracer::attach(pid, &AttachConfig::default()).expect("attach");
    assert_eq!(
        t.wait().expect("attached"),
        Event::Stopped {
            tid: pid.into(),
            reason: StopReason::Attached
        }
    );
    assert_eq!(common::state(pid.0), Some('t'));
    let bias = t.info().load_bias.expect("bias");
    assert_eq!(bias, load_bias(pid, &sample.path));
    // Read the counter and the code.
    let counter = RuntimeAddr(common::symbol(&sample.path, "proc_spin_counter") + bias);
    let mut c = [0u8; 8];
    t.read_memory(counter, &mut c).expect("read counter");
    assert!(u64::from_le_bytes(c) > 0);
    let func_file = common::symbol(&sample.path, "proc_spin_work");
    let func = RuntimeAddr(func_file + bias);
    let mut code = [0u8; 16];
    t.read_memory(func, &mut code).expect("read code");
    assert_eq!(
        code.to_vec(),
        common::file_bytes(&sample.path, func_file, 16)
    );
    // Break in the loop a few times, then detach while the int3 is in place and the
    // process is running (the detach must stop it, remove the int3, fix the pc).
    t.insert_breakpoint(func).expect("insert");
    for _ in 0..3 {
        t.resume().expect("resume");
        assert_eq!(
            t.wait().expect("hit"),
            Event::Stopped {
                tid: pid.into(),
                reason: StopReason::Breakpoint { addr: func }
            }
        );
    }
    t.resume().expect("resume");
    t.detach().expect("detach");
    std::thread::sleep(Duration::from_millis(100));
    let st = common::state(pid.0).expect("still there");
    assert!(st == 'R' || st == 'S', "state {st}");
    assert_eq!(tracer::procfs::tracer_of(pid), Some(0));
    // Its text in memory equals the ELF's.
    use std::os::unix::fs::FileExt;
    let f = std::fs::File::open(format!("/proc/{}/mem", pid.0)).expect("open mem");
    let mut now = [0u8; 16];
    f.read_exact_at(&mut now, func.0).expect("read mem");
    assert_eq!(
        now.to_vec(),
        common::file_bytes(&sample.path, func_file, 16)
    );
    // And it keeps counting (allow for a loaded machine).
    let mut a = [0u8; 8];
    f.read_exact_at(&mut a, counter.0).expect("read");
    let start = std::time::Instant::now();
    loop {
        let mut b = [0u8; 8];
        f.read_exact_at(&mut b, counter.0).expect("read");
        if u64::from_le_bytes(b) > u64::from_le_bytes(a) {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(5), "still running");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn detach_right_after_hit_with_pending_trap() {
    // Many threads would be better; one thread with a breakpoint hit every few
    // nanoseconds still races the interrupt against int3 often.
    let sample = common::compile("proc_spin", &["-g", "-O0"]);
    let child = spin(&sample);
    let pid = Pid(child.0.id() as i32);
    let func_file = common::symbol(&sample.path, "proc_spin_work");
    for _ in 0..20 {
        let mut t = Tracer::attach(pid, &AttachConfig::default()).expect("attach");
        t.wait().expect("attached");
        let func = RuntimeAddr(func_file + t.info().load_bias.expect("bias"));
        t.insert_breakpoint(func).expect("insert");
        t.resume().expect("resume");
        t.detach().expect("detach");
        std::thread::sleep(Duration::from_millis(5));
        let st = common::state(pid.0).expect("alive");
        assert!(st == 'R' || st == 'S', "state {st}");
    }
}

#[test]
fn attach_errors_are_clear() {
    // ESRCH: a pid above pid_max cannot exist.
    let max: i32 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .expect("pid_max")
        .trim()
        .parse()
        .expect("number");
    let err = Tracer::attach(Pid(max + 1), &AttachConfig::default()).expect_err("esrch");
    assert!(matches!(err, Error::NoSuchProcess { .. }), "{err:?}");
    assert!(err.to_string().contains("no such process"), "{err}");

    // EPERM: a process cannot trace itself.
    let me = Pid(std::process::id() as i32);
    let err = Tracer::attach(me, &AttachConfig::default()).expect_err("eperm");
    assert!(matches!(err, Error::AttachPermission { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("operation not permitted"), "{msg}");
    assert!(msg.contains("cannot trace itself"), "{msg}");

    // EPERM: already traced by someone else.
    let sample = common::compile("proc_spin", &["-O0"]);
    let child = spin(&sample);
    let pid = Pid(child.0.id() as i32);
    let (tx, rx) = crossbeam_channel::bounded(1);
    let (done_tx, done_rx) = crossbeam_channel::bounded::<()>(1);
    let holder = std::thread::spawn(move || {
        let t = Tracer::attach(pid, &AttachConfig::default()).expect("first attach");
        tx.send(()).expect("send");
        done_rx.recv().ok();
        t.detach().expect("detach");
    });
    rx.recv().expect("attached");
    let err = Tracer::attach(pid, &AttachConfig::default()).expect_err("eperm");
    let msg = err.to_string();
    assert!(msg.contains("already traced"), "{msg}");
    done_tx.send(()).expect("send");
    holder.join().expect("join");

    // EPERM: kernel threads cannot be traced (kthreadd is pid 2).
    if tracer::procfs::process_state(Pid(2)).is_some() {
        let err = Tracer::attach(Pid(2), &AttachConfig::default()).expect_err("kthread");
        assert!(matches!(err, Error::AttachPermission { .. }), "{err:?}");
    }
}

#[test]
fn attach_multithreaded_break_detach_repeatedly() {
    // Eight threads calling one function as fast as they can; attach, hit the
    // breakpoint in several threads, detach while they run, several times. The
    // program checks its own counts: exit code 0 means no call was lost or doubled
    // and no stray SIGTRAP reached it.
    let sample = common::compile("proc_threads", &["-g", "-O0", "-pthread"]);
    let mut child = Command::new(&sample.path)
        .arg("60000000")
        .stdin(Stdio::null())
        .spawn()
        .expect("spawn");
    let pid = Pid(child.id() as i32);
    std::thread::sleep(Duration::from_millis(30));
    let func_file = common::symbol(&sample.path, "proc_thread_hit");
    for round in 0..5 {
        let mut t = match Tracer::attach(pid, &AttachConfig::default()) {
            Ok(t) => t,
            Err(Error::NoSuchProcess { .. }) => break,
            Err(e) => panic!("attach: {e}"),
        };
        assert!(matches!(t.wait().expect("attached"), Event::Stopped { .. }));
        assert!(t.threads().len() > 1 || round > 0, "threads seen");
        let func = RuntimeAddr(func_file + t.info().load_bias.expect("bias"));
        t.insert_breakpoint(func).expect("insert");
        let mut hits = 0;
        t.resume().expect("resume");
        while hits < 20 {
            match t.wait().expect("event") {
                Event::Stopped {
                    reason: StopReason::Breakpoint { .. },
                    ..
                } => {
                    hits += 1;
                    t.resume().expect("resume");
                }
                Event::Stopped { .. } => t.resume().expect("resume"),
                Event::Exited { .. } => panic!("exited while breaking"),
                // Thread events: the process keeps running.
                _ => {}
            }
        }
        // Detach while running, right after a hit.
        t.detach().expect("detach");
        std::thread::sleep(Duration::from_millis(10));
    }
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(0), "{status:?}");
}
