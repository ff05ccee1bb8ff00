//! Post-mortem debugging: a program's core file inspected like a stopped process — every
//! thread's stack (CFI unwinding, inlined frames), scopes, variables, evaluate without
//! running code, memory and modules — read-only.
//!
//! The inspection paths are the live session's (`unwind::frames`,
//! `session::frame_variables_in`, `expr::Env`) over the core's memory and registers, so a
//! core shows what a stop of the live process would show.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use symbols::{Binary, LoadBias, MemoryReader, RuntimeAddr};
use tracer::Tid;

use crate::corefile::{CoreFile, CoreSignal};
use crate::error::{Error, Result};
use crate::expr::{self, Enumerators, Env};
use crate::ids::{FrameId, ValueRef};
use crate::mem::FrameRegs;
use crate::modules::{same_file, Module, Modules};
use crate::session::{frame_variables_in, render_result, ModuleInfo, ScopeKind, Stop, StopCause};
use crate::unwind::{self, Frame, FrameData};
use crate::values::{Node, Renderer, Value};

/// A frame's registers: the unwound general ones and the thread's SSE and x87 registers
/// (DWARF 17–32 and 33–40) from the core.
struct CoreRegs<'a> {
    general: &'a FrameRegs,
    xmm: Option<&'a [[u8; 16]; 16]>,
    st: Option<&'a [[u8; 10]; 8]>,
}

impl symbols::RegisterReader for CoreRegs<'_> {
    fn reg(&self, n: u16) -> Option<u64> {
        if (17..=40).contains(&n) {
            let b = self.reg_bytes(n, 8)?;
            let mut x = [0u8; 8];
            x.copy_from_slice(b.get(..8)?);
            return Some(u64::from_le_bytes(x));
        }
        self.general.get(n)
    }

    fn reg_bytes(&self, n: u16, len: usize) -> Option<Vec<u8>> {
        let mut out = match n {
            17..=32 => self.xmm?.get(usize::from(n - 17))?.to_vec(),
            33..=40 => self.st?.get(usize::from(n - 33))?.to_vec(),
            _ => self.general.get(n)?.to_le_bytes().to_vec(),
        };
        out.truncate(len);
        Some(out)
    }
}

/// A core file opened with its program.
pub struct CoreSession {
    core: CoreFile,
    modules: Modules,
    /// What the user should know: libraries whose file differs from the one mapped.
    warnings: Vec<String>,
    main: Arc<Binary>,
    enums: Enumerators,
    tables: Mutex<Tables>,
    next_frame: AtomicU64,
}

#[derive(Default)]
struct Tables {
    frames: HashMap<u64, FrameData>,
    nodes: HashMap<u64, Node>,
    next_ref: u64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The file address of the segment at file offset 0 (where a module's bias is measured
/// from): 0 for shared objects and PIE, the link address for fixed executables.
fn first_load_vaddr(path: &Path) -> Option<u64> {
    use std::io::Read;
    let mut head = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(64 * 1024)
        .read_to_end(&mut head)
        .ok()?;
    if head.len() < 64 || &head[..4] != b"\x7fELF" || head[4] != 2 {
        return None;
    }
    let u16_at = |at: usize| {
        Some(u16::from_le_bytes(
            head.get(at..at.checked_add(2)?)?.try_into().ok()?,
        ))
    };
    let u32_at = |at: usize| {
        Some(u32::from_le_bytes(
            head.get(at..at.checked_add(4)?)?.try_into().ok()?,
        ))
    };
    let u64_at = |at: usize| {
        Some(u64::from_le_bytes(
            head.get(at..at.checked_add(8)?)?.try_into().ok()?,
        ))
    };
    let phoff = usize::try_from(u64_at(32)?).ok()?;
    let (size, num) = (usize::from(u16_at(54)?), usize::from(u16_at(56)?));
    (0..num).find_map(|i| {
        let h = phoff.checked_add(i.checked_mul(size)?)?;
        h.checked_add(56)?;
        (u32_at(h)? == 1 && u64_at(h + 8)? == 0).then(|| u64_at(h + 16))?
    })
}

impl CoreSession {
    /// Opens `core`, written by `program` (a kernel core or gdb's `gcore`).
    pub fn open(program: &Path, core: &Path) -> Result<CoreSession> {
        CoreSession::open_with(program, core, None)
    }

    /// [`CoreSession::open`] with the core's files looked for under `sysroot` first (a
    /// core from a container or another machine: `SYSROOT/usr/lib/…`).
    pub fn open_with(program: &Path, core: &Path, sysroot: Option<&Path>) -> Result<CoreSession> {
        // A stripped program's debug file is looked up as for a live session: debug
        // roots, .gnu_debuglink, the debuginfod cache, then its servers.
        let debug = crate::debuginfo::DebugInfoOptions::default().open_options();
        let main = Arc::new(Binary::open_with(program, &debug)?);
        let mut core = CoreFile::open(core)?;
        if let Some(root) = sysroot {
            core.use_sysroot(root);
        }
        let (modules, warnings) = Self::modules_of(program, &main, &core)?;
        Ok(CoreSession {
            core,
            modules,
            warnings,
            main: main.clone(),
            enums: Enumerators::new(main.clone()),
            tables: Mutex::new(Tables::default()),
            next_frame: AtomicU64::new(1),
        })
    }

    /// The modules from NT_FILE: one per mapped file, the program first. The program is
    /// the mapping of the program's file (same path, else the same file name, else the
    /// mapping holding the entry point), with the same build-id as the core's copy of
    /// its ELF header when the core has it; a core with no such mapping is refused.
    fn modules_of(
        program: &Path,
        main: &Arc<Binary>,
        core: &CoreFile,
    ) -> Result<(Modules, Vec<String>)> {
        // (path, start, end, where offset 0 is mapped)
        let mut groups: Vec<(PathBuf, u64, u64, Option<u64>)> = Vec::new();
        for m in &core.mappings {
            match groups.iter_mut().find(|g| g.0 == m.path) {
                Some(g) => {
                    g.1 = g.1.min(m.start);
                    g.2 = g.2.max(m.end);
                    if m.offset == 0 && g.3.is_none() {
                        g.3 = Some(m.start);
                    }
                }
                None => groups.push((
                    m.path.clone(),
                    m.start,
                    m.end,
                    (m.offset == 0).then_some(m.start),
                )),
            }
        }
        let bias_of = |path: &Path, start: u64, base: Option<u64>| {
            let base = base.unwrap_or(start);
            LoadBias(base.wrapping_sub(first_load_vaddr(path).unwrap_or(0) & !0xfff))
        };
        let main_index = groups
            .iter()
            .position(|g| same_file(&g.0, program))
            .or_else(|| {
                // The program may have moved since: the mapping named like it.
                groups.iter().position(|g| {
                    g.0.file_name().is_some() && g.0.file_name() == program.file_name()
                })
            })
            .or_else(|| {
                // Or renamed (a stripped copy, a container's path): the mapping holding
                // the process's entry point (AT_ENTRY) is its executable; the build-id
                // check below keeps another program out.
                const AT_ENTRY: u64 = 9;
                let entry = core.auxv.iter().find(|(k, _)| *k == AT_ENTRY)?.1;
                groups.iter().position(|g| (g.1..g.2).contains(&entry))
            })
            .ok_or_else(|| {
                Error::Core(format!(
                    "the core was not written by {} (it maps no such file)",
                    program.display()
                ))
            })?;
        let g = groups.remove(main_index);
        let bias = bias_of(program, g.1, g.3);
        check_build_id(main, core, g.3.unwrap_or(g.1))?;
        let mut list = vec![Module::with_binary(
            program.to_path_buf(),
            g.1,
            g.2,
            bias,
            main.clone(),
        )];
        let mut warnings = Vec::new();
        for (path, start, end, base) in groups {
            let bias = bias_of(&path, start, base);
            // A library replaced since the core was written (an upgrade) would give wrong
            // frames: its build-id is compared with the core's copy of its first page.
            let usable = match library_mismatch(&path, core, base.unwrap_or(start)) {
                Some(why) => {
                    tracing::debug!(path = %path.display(), "{why}");
                    warnings.push(why);
                    false
                }
                None => true,
            };
            list.push(Module::mapped(path, start, end, bias, usable));
        }
        Ok((Modules::from_list(list), warnings))
    }

    /// Warnings about the core's files (a library replaced since: no symbols for it).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The threads of the core, in its order (the faulting thread first in kernel cores).
    pub fn threads(&self) -> Vec<Tid> {
        self.core.threads.iter().map(|t| Tid(t.tid)).collect()
    }

    /// The fatal signal the core records.
    pub fn signal(&self) -> Option<CoreSignal> {
        self.core.signal.or_else(|| {
            self.core
                .threads
                .iter()
                .find(|t| t.signal != 0)
                .map(|t| CoreSignal {
                    signo: t.signal,
                    code: 0,
                    addr: None,
                })
        })
    }

    /// The stop a core stands for: the fatal signal in the thread that got it (the first
    /// thread with a signal), or a pause in the first thread (a core written by gcore).
    pub fn stop(&self) -> Stop {
        let thread = self
            .core
            .threads
            .iter()
            .find(|t| t.signal != 0)
            .or_else(|| self.core.threads.first());
        let tid = Tid(thread.map_or(0, |t| t.tid));
        // A debugger's own stop (gcore at a breakpoint records SIGTRAP) is a pause.
        let debugger_stop = |s: i32| matches!(s, libc::SIGTRAP | libc::SIGSTOP);
        match self.signal() {
            Some(sig) if thread.is_some_and(|t| t.signal != 0) && !debugger_stop(sig.signo) => {
                Stop {
                    tid,
                    cause: StopCause::Signal(sig.signo),
                    return_value: None,
                    description: Some(signal_description(&sig)),
                }
            }
            _ => Stop {
                tid,
                cause: StopCause::Pause,
                return_value: None,
                description: None,
            },
        }
    }

    /// The stack of a thread, innermost frame first (inlined calls included).
    pub fn stack_trace(&self, tid: Tid) -> Result<Vec<Frame>> {
        let thread = self
            .core
            .threads
            .iter()
            .find(|t| t.tid == tid.0)
            .ok_or(Error::UnknownThread(tid.0))?;
        let first = self
            .next_frame
            .fetch_add(unwind::MAX_FRAMES as u64 * 2, Ordering::Relaxed);
        let frames = unwind::frames(
            FrameRegs::from_registers(&thread.regs),
            &self.modules,
            &self.core,
            unwind::MAX_FRAMES,
            first,
        );
        let out = frames.iter().map(|d| d.frame.clone()).collect();
        let mut tables = lock(&self.tables);
        for mut d in frames {
            d.tid = Some(tid);
            tables.frames.insert(d.frame.id.0, d);
        }
        Ok(out)
    }

    /// The registers expressions in a frame read: the thread's SSE and x87 registers
    /// too, in callers as well (undescribed by the CFI, they keep their value across a
    /// call, as for a live thread: `FrameData::registers`).
    fn regs_of<'a>(&'a self, data: &'a FrameData) -> CoreRegs<'a> {
        let thread = match data.tid {
            Some(tid) if !data.frame.tail_call => self.core.threads.iter().find(|t| t.tid == tid.0),
            _ => None,
        };
        CoreRegs {
            general: &data.regs,
            xmm: thread.and_then(|t| t.xmm.as_deref()),
            st: thread.and_then(|t| t.st.as_deref()),
        }
    }

    /// The thread pointer (`fs_base`) of the frame's thread, for its thread-local storage.
    fn thread_pointer(&self, data: &FrameData) -> Option<u64> {
        let tid = data.tid?;
        let t = self.core.threads.iter().find(|t| t.tid == tid.0)?;
        Some(t.regs.0.fs_base)
    }

    fn frame(&self, id: FrameId) -> Result<FrameData> {
        lock(&self.tables)
            .frames
            .get(&id.0)
            .cloned()
            .ok_or(Error::UnknownFrame(id.0))
    }

    fn register_nodes(&self, rendered: Vec<(Value, Option<Node>)>) -> Vec<Value> {
        let mut tables = lock(&self.tables);
        rendered
            .into_iter()
            .map(|(mut v, node)| {
                if let Some(node) = node {
                    tables.next_ref += 1;
                    let r = tables.next_ref;
                    tables.nodes.insert(r, node);
                    v.children = Some(ValueRef(r));
                }
                v
            })
            .collect()
    }

    /// The variables of one scope of a frame.
    pub fn variables(&self, frame: FrameId, kind: ScopeKind) -> Result<Vec<Value>> {
        let data = self.frame(frame)?;
        let regs = self.regs_of(&data);
        let rendered = frame_variables_in(
            &self.core,
            &regs,
            &data,
            self.modules.all(),
            self.thread_pointer(&data),
            kind,
        )?;
        Ok(self.register_nodes(rendered))
    }

    /// Children of a structured value.
    pub fn children(&self, value: ValueRef, start: u64, count: Option<u64>) -> Result<Vec<Value>> {
        let node = lock(&self.tables)
            .nodes
            .get(&value.0)
            .cloned()
            .ok_or(Error::UnknownValueRef(value.0))?;
        let bias = self
            .modules
            .all()
            .iter()
            .find(|m| m.binary().is_some_and(|b| Arc::ptr_eq(b, &node.binary)))
            .map_or(LoadBias(0), |m| m.bias);
        let r = Renderer {
            binary: &node.binary,
            bias,
            mem: &self.core,
            bounds: None,
            languages: &crate::rust::LANGUAGES,
        };
        let rendered = r.children(&node, start, count);
        Ok(self.register_nodes(rendered))
    }

    /// Evaluates an expression in a frame (no function calls, no assignments).
    pub fn evaluate(&self, frame: FrameId, expression: &str) -> Result<Value> {
        let data = self.frame(frame)?;
        let main = self.main.clone();
        let parsed = expr::parse(expression, &move |n: &str| {
            !main.types_by_name(n).is_empty()
        })?;
        if expr_assigns(expression) {
            return Err(Error::PostMortem("assignment"));
        }
        let module = data
            .module
            .clone()
            .ok_or_else(|| Error::Eval("no symbols for this frame".into()))?;
        let binary = module
            .binary()
            .ok_or_else(|| Error::Eval("no symbols for this frame".into()))?;
        let scope = binary.scope_at(module.to_file(data.lookup_pc))?;
        let regs = self.regs_of(&data);
        let entry = data
            .caller
            .as_deref()
            .and_then(|c| unwind::entry_registers(c, &self.core));
        let all = self.modules.all();
        let tls = crate::tls::ThreadTls {
            mem: &self.core,
            thread_pointer: self.thread_pointer(&data),
            modules: all,
        };
        let env = Env {
            binary,
            bias: module.bias,
            mem: &self.core,
            regs: &regs,
            pc: data.lookup_pc,
            cfa: data.frame.cfa,
            scope: &scope,
            inline_index: data.inline_index,
            enums: module.main.then_some(&self.enums),
            entry_regs: entry.as_ref().map(|m| m as &dyn symbols::RegisterReader),
            modules: Some(&all),
            tls: Some(&tls),
        };
        let v = env.eval(&parsed)?;
        let rendered = render_result(&env, &v, expression);
        Ok(self.register_nodes(vec![rendered]).remove(0))
    }

    /// Disassembles `count` instructions starting `instruction_offset` instructions from
    /// the one at `address`, as [`crate::Session::disassemble`] does.
    pub fn disassemble(
        &self,
        address: u64,
        instruction_offset: i64,
        count: usize,
    ) -> Result<Vec<crate::Instruction>> {
        crate::session::disassemble_in(
            &self.core,
            self.modules.all(),
            address,
            instruction_offset,
            count,
        )
    }

    /// Reads up to `len` bytes of the core's memory (fewer where the core has none).
    pub fn read_memory(&self, addr: u64, len: usize) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; len.min(16 << 20)];
        let n = self.core.read_at(addr, &mut buf);
        buf.truncate(n);
        Ok(buf)
    }

    /// Whether `len` bytes at `addr` are in the core.
    pub fn readable(&self, addr: u64, len: usize) -> bool {
        let mut buf = vec![0u8; len.min(4096)];
        self.core.read(RuntimeAddr(addr), &mut buf).is_ok()
    }

    /// The modules: the program and every file the core maps.
    pub fn modules(&self) -> Vec<ModuleInfo> {
        self.modules
            .all()
            .iter()
            .map(|m| ModuleInfo::of(m))
            .collect()
    }
}

/// Whether an expression assigns (`=`, `+=`…, `++`, `--`), which a core cannot do.
fn expr_assigns(e: &str) -> bool {
    let b = e.as_bytes();
    e.contains("++")
        || e.contains("--")
        || b.iter().enumerate().any(|(i, c)| {
            *c == b'='
                && b.get(i + 1) != Some(&b'=')
                && !matches!(b.get(i.wrapping_sub(1)), Some(b'=' | b'!' | b'<' | b'>'))
        })
}

/// The program's build-id compared with the one in the core's copy of its first page
/// (the ELF header and notes, which both the kernel and gcore keep). Unknown on either
/// side: accepted.
fn check_build_id(main: &Binary, core: &CoreFile, base: u64) -> Result<()> {
    let Some(ours) = main.info().build_id.as_ref() else {
        return Ok(());
    };
    let mut page = vec![0u8; 4096];
    let n = core.read_at(base, &mut page);
    page.truncate(n);
    let Some(theirs) = build_id_in_page(&page) else {
        return Ok(());
    };
    if &theirs != ours {
        return Err(Error::Core(format!(
            "the core does not match the program: its build-id is {}, the program's {}",
            hex(&theirs),
            hex(ours)
        )));
    }
    Ok(())
}

/// Why a library's file is not the one the core mapped (build-ids differ, or the file is
/// gone), or `None` when it is (or the core's build-id is unknown).
fn library_mismatch(path: &Path, core: &CoreFile, base: u64) -> Option<String> {
    use std::io::Read;
    let mut page = vec![0u8; 4096];
    let n = core.read_at(base, &mut page);
    page.truncate(n);
    let theirs = build_id_in_page(&page)?;
    let mut head = Vec::new();
    let opened = std::fs::File::open(path).and_then(|f| f.take(4096).read_to_end(&mut head));
    if opened.is_err() {
        return Some(format!("{}: not found (no symbols for it)", path.display()));
    }
    let ours = build_id_in_page(&head)?;
    (ours != theirs).then(|| {
        format!(
            "{}: the file's build-id {} differs from the core's {} (replaced since: no symbols for it)",
            path.display(),
            hex(&ours),
            hex(&theirs)
        )
    })
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The NT_GNU_BUILD_ID note among the PT_NOTE segments of an ELF file's first page.
fn build_id_in_page(page: &[u8]) -> Option<Vec<u8>> {
    if page.len() < 64 || &page[..4] != b"\x7fELF" {
        return None;
    }
    let u16_at = |at: usize| {
        Some(u16::from_le_bytes(
            page.get(at..at.checked_add(2)?)?.try_into().ok()?,
        ))
    };
    let u32_at = |at: usize| {
        Some(u32::from_le_bytes(
            page.get(at..at.checked_add(4)?)?.try_into().ok()?,
        ))
    };
    let u64_at = |at: usize| {
        Some(u64::from_le_bytes(
            page.get(at..at.checked_add(8)?)?.try_into().ok()?,
        ))
    };
    let phoff = usize::try_from(u64_at(32)?).ok()?;
    let (size, num) = (usize::from(u16_at(54)?), usize::from(u16_at(56)?));
    for i in 0..num {
        let h = phoff.checked_add(i.checked_mul(size)?)?;
        h.checked_add(56)?;
        if u32_at(h)? != 4 {
            continue;
        }
        let (off, len) = (
            usize::try_from(u64_at(h + 8)?).ok()?,
            usize::try_from(u64_at(h + 32)?).ok()?,
        );
        let seg = page.get(off..off.checked_add(len)?)?;
        let mut at = 0;
        while at + 12 <= seg.len() {
            let namesz = u32_at(off + at)? as usize;
            let descsz = u32_at(off + at + 4)? as usize;
            let kind = u32_at(off + at + 8)?;
            let desc = at + 12 + ((namesz + 3) & !3);
            let name = seg.get(at + 12..at + 12 + namesz)?;
            if kind == 3 && name.starts_with(b"GNU") {
                return seg.get(desc..desc + descsz).map(<[u8]>::to_vec);
            }
            at = (desc + descsz + 3) & !3;
        }
    }
    None
}

/// Words for a fatal signal, as a live stop words them
/// (`SIGSEGV: address not mapped to object at 0x0`).
fn signal_description(sig: &CoreSignal) -> String {
    crate::signals::SignalInfo::from_siginfo(&tracer::SigInfo {
        signo: sig.signo,
        code: sig.code,
        addr: sig.addr,
        sender: None,
    })
    .description
}

impl CoreSession {
    /// The fatal signal described as a live stop's exception information.
    pub fn exception_info(&self) -> Option<crate::signals::SignalInfo> {
        let sig = self.signal()?;
        Some(crate::signals::SignalInfo::from_siginfo(&tracer::SigInfo {
            signo: sig.signo,
            code: sig.code,
            addr: sig.addr,
            sender: None,
        }))
    }
}
