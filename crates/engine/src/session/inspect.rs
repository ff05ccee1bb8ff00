//! Inspection of a stopped process: memory, modules, stack traces, variables and their
//! children, evaluate and set-variable.

use super::*;

impl Session {
    /// Reads up to `len` bytes of the stopped process (breakpoints show their
    /// original bytes); fewer when the range runs into unmapped memory.
    pub fn read_memory(&self, addr: u64, len: usize) -> Result<Vec<u8>> {
        self.check_stopped()?;
        Ok(self.handle.read_memory(RuntimeAddr(addr), len)?)
    }

    /// Writes memory of the stopped process (value nodes read it again when expanded).
    pub fn write_memory(&self, addr: u64, data: Vec<u8>) -> Result<()> {
        self.check_stopped()?;
        self.handle.write_memory(RuntimeAddr(addr), data)?;
        Ok(())
    }

    /// Writes an ELF core file of the stopped process to `path` (see [`crate::gcore`]):
    /// every thread's registers, the memory as the program has it (no int3 or jump patch
    /// of tandem's), the mapped files and, when the stop is a signal, that signal. gdb,
    /// lldb and [`crate::CoreSession`] read it.
    pub fn write_core(&self, path: &Path) -> Result<crate::CoreWritten> {
        self.check_stopped()?;
        let core = self.core.clone();
        let path = path.to_path_buf();
        self.handle.call(move |t: &mut Tracer| {
            let (first, signal) = {
                let c = lock(&core);
                let signal = c
                    .last_signal
                    .as_ref()
                    .map(|(tid, s)| crate::gcore::StopSignal {
                        tid: *tid,
                        signo: s.signo,
                        code: s.code,
                        addr: s.fault_address,
                    });
                (c.last_stop.map(|(tid, _)| tid), signal)
            };
            crate::gcore::write_core(t, first, signal, &path)
        })?
    }

    /// Lines of a source file where a breakpoint can bind (for `breakpointLocations`
    /// and the gutter).
    pub fn breakpoint_lines(&self, file: &Path) -> Result<Vec<Line>> {
        Ok(self.main_binary().lines_with_code(file, &self.source_map)?)
    }

    /// The modules mapped so far: file, load bias, mapped range, whether symbols
    /// were opened.
    pub fn modules(&self) -> Vec<ModuleInfo> {
        let mut c = lock(&self.core);
        let pid = c.pid;
        c.modules.refresh(pid);
        c.modules.all().iter().map(|m| ModuleInfo::of(m)).collect()
    }

    /// The stack of a stopped thread, innermost frame first (inlined calls included).
    pub fn stack_trace(&self, tid: Tid) -> Result<Vec<Frame>> {
        self.check_stopped()?;
        // The stopped thread's frames were unwound right after the stop was sent.
        let prepared = lock(&self.core).at_stop.as_ref().and_then(|at| {
            at.frames
                .as_ref()
                .filter(|(t, _)| *t == tid)
                .map(|(_, f)| f.clone())
        });
        let data = match prepared {
            Some(frames) => frames,
            None => {
                let first = self
                    .frame_ids
                    .fetch_add(FRAME_IDS_PER_TRACE, Ordering::Relaxed);
                let core = self.core.clone();
                self.handle
                    .call(move |t: &mut Tracer| -> Result<Vec<FrameData>> {
                        unwind_thread(t, &mut lock(&core), tid, first)
                    })??
            }
        };
        lock(&self.core).report_unreadable_units();
        let mut tables = lock(&self.tables);
        let out = data.iter().map(|d| d.frame.clone()).collect();
        for d in data {
            tables.frames.insert(d.frame.id, d);
        }
        Ok(out)
    }

    pub(super) fn frame(&self, id: FrameId) -> Result<FrameData> {
        lock(&self.tables)
            .frames
            .get(&id)
            .cloned()
            .ok_or(Error::UnknownFrame(id.0))
    }

    /// The variables of one scope of a frame.
    pub fn variables(&self, frame: FrameId, kind: ScopeKind) -> Result<Vec<Value>> {
        self.check_stopped()?;
        let data = self.frame(frame)?;
        let modules = lock(&self.core).modules.all().to_vec();
        let rendered = self
            .handle
            .call(move |t: &mut Tracer| frame_variables(t, &data, &modules, kind))??;
        lock(&self.core).report_unreadable_units();
        Ok(self.register_nodes(rendered))
    }

    /// Children of a structured value: members, elements `start..start+count` (all
    /// when `count` is `None`), or the pointee.
    pub fn children(&self, value: ValueRef, start: u64, count: Option<u64>) -> Result<Vec<Value>> {
        self.check_stopped()?;
        let node = lock(&self.tables)
            .nodes
            .get(&value.0)
            .cloned()
            .ok_or(Error::UnknownValueRef(value.0))?;
        let bias = self.module_bias_of(&node.binary);
        let rendered = self.handle.call(move |t: &mut Tracer| {
            let mem = TracerMemory(t);
            let r = Renderer {
                binary: &node.binary,
                bias,
                mem: &mem,
                bounds: None,
                languages: &crate::rust::LANGUAGES,
            };
            r.children(&node, start, count)
        })?;
        Ok(self.register_nodes(rendered))
    }

    pub(super) fn module_bias_of(&self, binary: &Arc<Binary>) -> LoadBias {
        let c = lock(&self.core);
        c.modules
            .all()
            .iter()
            .find(|m| m.binary().is_some_and(|b| Arc::ptr_eq(b, binary)))
            .map_or(LoadBias(0), |m| m.bias)
    }

    pub(super) fn register_nodes(&self, rendered: Vec<(Value, Option<Node>)>) -> Vec<Value> {
        let mut tables = lock(&self.tables);
        rendered
            .into_iter()
            .map(|(mut v, node)| {
                if let Some(node) = node {
                    let r = tables.next_ref;
                    tables.next_ref += 1;
                    tables.nodes.insert(r, node);
                    v.children = Some(ValueRef(r));
                }
                v
            })
            .collect()
    }

    /// Assigns `value` to the lvalue `target` in a frame (DAP `setVariable` and
    /// `setExpression`), then returns the new value of `target`. Only values in memory
    /// can be assigned; a variable kept in a register is refused.
    pub fn set_variable(&self, frame: FrameId, target: &str, value: &str) -> Result<Value> {
        self.check_stopped()?;
        let data = self.frame(frame)?;
        let is_type = self.is_type_fn();
        let lhs = expr::parse(target, &is_type)?;
        let rhs = expr::parse(value, &is_type)?;
        let enums = lock(&self.core).enums.clone();
        self.handle.call(move |t: &mut Tracer| -> Result<()> {
            let module = data
                .module
                .clone()
                .ok_or_else(|| Error::Eval("no symbols for this frame".into()))?;
            let binary = module
                .binary()
                .ok_or_else(|| Error::Eval("no symbols for this frame".into()))?;
            let scope = binary.scope_at(module.to_file(data.lookup_pc))?;
            let (addr, bytes) = {
                let mem = TracerMemory(t);
                let env = Env {
                    binary,
                    bias: module.bias,
                    mem: &mem,
                    regs: &data.regs,
                    pc: data.lookup_pc,
                    cfa: data.frame.cfa,
                    scope: &scope,
                    inline_index: data.inline_index,
                    enums: module.main.then_some(&*enums),
                    entry_regs: None,
                    modules: None,
                    tls: None,
                };
                let place = env.eval(&lhs)?;
                let v = env.eval(&rhs)?;
                env.assignment(&place, &v)?
            };
            t.write_memory(RuntimeAddr(addr), &bytes)?;
            Ok(())
        })??;
        // Value nodes stay valid: their children are read from memory when asked for.
        self.evaluate(frame, target)
    }

    /// Evaluates an expression in a frame (watch, hover, repl; no side effects).
    pub fn evaluate(&self, frame: FrameId, expression: &str) -> Result<Value> {
        self.check_stopped()?;
        let data = self.frame(frame)?;
        let parsed = expr::parse(expression, &self.is_type_fn())?;
        let name = expression.to_string();
        let enums = lock(&self.core).enums.clone();
        // In a frame outside the program (libc's usleep), the program's globals are still
        // visible, as in gdb: a name the frame does not know is looked for there.
        let (main, all) = {
            let core = lock(&self.core);
            (core.modules.main().cloned(), core.modules.all().to_vec())
        };
        let fallback = main.filter(|m| {
            !data
                .module
                .as_ref()
                .is_some_and(|f| Arc::ptr_eq(f, m) || f.main)
        });
        let rendered = self.handle.call(move |t: &mut Tracer| {
            let render = |env: &Env<'_>| -> Result<(Value, Option<Node>)> {
                let v = env.eval(&parsed)?;
                Ok(render_result(env, &v, &name))
            };
            let in_frame = env::with_env_seeing(
                t,
                &env::EvalIn::Frame(Box::new(data)),
                &all,
                Some(&parsed),
                &enums,
                render,
            );
            match (in_frame, fallback) {
                (Err(Error::Eval(m)), Some(main)) if m.starts_with("no symbol") => env::with_env(
                    t,
                    &env::EvalIn::Globals(main),
                    Some(&parsed),
                    &enums,
                    render,
                )
                .map_err(|_| Error::Eval(m)),
                (other, _) => other,
            }
        })??;
        Ok(self.register_nodes(vec![rendered]).remove(0))
    }
}

/// Renders `name: ty` where `loc` says; a synthetic pointer (`DW_OP_implicit_pointer`)
/// shows as gdb shows it, `<synthetic pointer>`, with what it points to as its child.
fn render_at(
    env: &Env<'_>,
    r: &Renderer<'_>,
    name: &str,
    ty: symbols::TypeRef,
    loc: &expr::Loc,
    dim: usize,
) -> (Value, Option<Node>) {
    let place = match loc {
        expr::Loc::Mem(a) => Place::Memory(*a),
        expr::Loc::Val(b) => Place::Bytes(Arc::from(b.as_slice()), 0),
        expr::Loc::Implicit { .. } => {
            let value = Value {
                name: name.to_string(),
                type_name: env.binary.type_name(ty).unwrap_or_default(),
                rendered: "<synthetic pointer>".to_string(),
                children: None,
                child_count: None,
                indexed: false,
                error: false,
                address: None,
            };
            let pointer = expr::EVal {
                ty: expr::ETy::Dwarf(ty),
                loc: loc.clone(),
            };
            let Ok(target) = env.deref_value(&pointer) else {
                return (value, None);
            };
            let expr::ETy::Dwarf(target_ty) = target.ty else {
                return (value, None);
            };
            let child = SyntheticTarget {
                name: format!("*{name}"),
                ty: target_ty,
                place: match target.loc {
                    expr::Loc::Mem(a) => Place::Memory(a),
                    expr::Loc::Val(b) => Place::Bytes(Arc::from(b.as_slice()), 0),
                    expr::Loc::Implicit { .. } => return (value, None),
                },
            };
            let node = Node {
                binary: r.binary.clone(),
                ty,
                dim: 0,
                place: Place::nowhere(8),
                path: name.to_string(),
                count: Some(1),
                synth: Some(Arc::new(child)),
            };
            return (
                Value {
                    child_count: Some(1),
                    ..value
                },
                Some(node),
            );
        }
    };
    r.render(name, ty, place, dim)
}

/// The one child of a synthetic pointer: what it points to.
#[derive(Debug)]
struct SyntheticTarget {
    name: String,
    ty: symbols::TypeRef,
    place: Place,
}

impl crate::values::Synthetic for SyntheticTarget {
    fn children(
        &self,
        r: &Renderer<'_>,
        _node: &Node,
        start: u64,
        _count: Option<u64>,
    ) -> Vec<(Value, Option<Node>)> {
        if start > 0 {
            return Vec::new();
        }
        vec![r.render(&self.name, self.ty, self.place.clone(), 0)]
    }
}

/// The value of an evaluated expression as a front-end shows it: a typed value is rendered
/// (and may have children), anything else (a computed integer) is its text.
pub(crate) fn render_result(env: &Env<'_>, v: &expr::EVal, name: &str) -> (Value, Option<Node>) {
    match (&v.ty, &v.loc) {
        (expr::ETy::Dwarf(ty) | expr::ETy::SubArray(ty, _), loc) => {
            let dim = match v.ty {
                expr::ETy::SubArray(_, d) => d,
                _ => 0,
            };
            let bounds = |b: &symbols::ArrayBound| env.array_bound(b);
            let r = Renderer {
                binary: env.binary,
                bias: env.bias,
                mem: env.mem,
                bounds: Some(&bounds),
                languages: &crate::rust::LANGUAGES,
            };
            render_at(env, &r, name, *ty, loc, dim)
        }
        _ => (
            Value {
                name: name.to_string(),
                type_name: env.type_name(&v.ty),
                rendered: env.text(v),
                children: None,
                child_count: None,
                indexed: false,
                error: false,
                address: None,
            },
            None,
        ),
    }
}

/// Renders the variables of one scope of a frame (on the tracer thread).
pub(super) fn frame_variables(
    t: &mut Tracer,
    data: &FrameData,
    modules: &[Arc<crate::modules::Module>],
    kind: ScopeKind,
) -> Result<Vec<(Value, Option<Node>)>> {
    let mem = TracerMemory(t);
    let frame_regs = data.registers(t);
    let thread_pointer = data.tid.and_then(|tid| t.thread_pointer(tid).ok());
    frame_variables_in(&mem, &frame_regs, data, modules, thread_pointer, kind)
}

/// The variables of one scope of a frame over any memory and registers (a live process
/// or a core file).
pub(crate) fn frame_variables_in(
    mem: &dyn symbols::MemoryReader,
    regs: &dyn symbols::RegisterReader,
    data: &FrameData,
    modules: &[Arc<crate::modules::Module>],
    thread_pointer: Option<u64>,
    kind: ScopeKind,
) -> Result<Vec<(Value, Option<Node>)>> {
    if kind == ScopeKind::Registers {
        const NAMES: [&str; 17] = [
            "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11",
            "r12", "r13", "r14", "r15", "rip",
        ];
        return Ok(NAMES
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let v = data.regs.get(i as u16);
                (
                    Value {
                        name: n.to_string(),
                        type_name: "long".into(),
                        rendered: v.map_or_else(|| "<not saved>".into(), |v| format!("{v:#x}")),
                        children: None,
                        child_count: None,
                        indexed: false,
                        error: v.is_none(),
                        address: None,
                    },
                    None,
                )
            })
            .collect());
    }
    let Some(module) = data.module.clone() else {
        return Ok(Vec::new());
    };
    let Some(binary) = module.binary() else {
        return Ok(Vec::new());
    };
    let scope = binary.scope_at(module.to_file(data.lookup_pc))?;
    let tls = crate::tls::ThreadTls {
        mem,
        thread_pointer,
        modules,
    };
    let entry = match (&data.caller, kind) {
        (Some(c), ScopeKind::Arguments | ScopeKind::Locals) => unwind::entry_registers(c, mem),
        _ => None,
    };
    let env = Env {
        binary,
        bias: module.bias,
        mem,
        regs,
        pc: data.lookup_pc,
        cfa: data.frame.cfa,
        scope: &scope,
        inline_index: data.inline_index,
        enums: None,
        entry_regs: entry.as_ref().map(|m| m as &dyn symbols::RegisterReader),
        modules: None,
        tls: Some(&tls),
    };
    let vars: Vec<&symbols::Variable> = match kind {
        ScopeKind::Globals => scope.globals.iter().collect(),
        ScopeKind::Arguments => scope
            .locals
            .iter()
            .filter(|v| v.frame == data.inline_index && expr::is_parameter(v))
            .collect(),
        _ => {
            let mut v: Vec<&symbols::Variable> = scope
                .locals
                .iter()
                .filter(|v| v.frame == data.inline_index && !expr::is_parameter(v))
                .collect();
            // Innermost block first, as gdb lists them.
            v.sort_by_key(|x| std::cmp::Reverse(x.depth));
            v
        }
    };
    let bounds = |b: &symbols::ArrayBound| env.array_bound(b);
    let renderer = Renderer {
        binary,
        bias: module.bias,
        mem,
        bounds: Some(&bounds),
        languages: &crate::rust::LANGUAGES,
    };
    let mut out = Vec::new();
    for var in vars {
        let Some(name) = var.name.clone() else {
            continue;
        };
        // `this` is artificial but is what a C++ method's user wants to see.
        if var.artificial && name != "this" {
            continue;
        }
        let Some(ty) = var.ty else {
            out.push((
                Value::error(&name, String::new(), "<error: no type>".into()),
                None,
            ));
            continue;
        };
        match env.variable_value(var) {
            Ok(v) => {
                let (mut value, node) = render_at(&env, &renderer, &name, ty, &v.loc, 0);
                if var.shadowed {
                    value.name = format!("{name} (shadowed)");
                }
                out.push((value, node));
            }
            Err(e) => {
                let msg = e.to_string();
                if let Some((bytes, known)) = env.partial_variable(var) {
                    let place =
                        Place::Partial(Arc::from(bytes.as_slice()), Arc::from(known.as_slice()), 0);
                    let (mut value, node) = renderer.render(&name, ty, place, 0);
                    if var.shadowed {
                        value.name = format!("{name} (shadowed)");
                    }
                    out.push((value, node));
                    continue;
                }
                let text = if msg.contains("optimized out") {
                    "<optimized out>".to_string()
                } else {
                    format!("<error: {msg}>")
                };
                out.push((
                    Value::error(&name, binary.type_name(ty).unwrap_or_default(), text),
                    None,
                ));
            }
        }
    }
    Ok(out)
}
