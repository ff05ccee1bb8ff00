//! The expression environment of a request, on the tracer thread: a frame of the
//! current stop, or — with no frame — the main executable's globals.

use std::sync::Arc;

use symbols::Scope;
use tracer::Tracer;

use crate::error::{Error, Result};
use crate::expr::{Enumerators, Env, Expr};
use crate::mem::TracerMemory;
use crate::modules::Module;
use crate::tls::ThreadTls;
use crate::unwind::{self, FrameData};

/// Where an expression is evaluated (not to be confused with [`crate::values::Place`],
/// where a value's bytes are).
pub(super) enum EvalIn {
    /// A frame of the current stop.
    Frame(Box<FrameData>),
    /// No frame: the globals of the main executable named in the expression.
    Globals(Arc<Module>),
}

/// Runs `f` with the environment of `place` for evaluating `expr`.
pub(super) fn with_env<R>(
    t: &mut Tracer,
    place: &EvalIn,
    expr: Option<&Expr>,
    enums: &Enumerators,
    f: impl FnOnce(&Env<'_>) -> Result<R>,
) -> Result<R> {
    with_env_seeing(t, place, &[], expr, enums, f)
}

/// [`with_env`] where a frame also sees the globals of `modules` (the process's modules,
/// main executable first) that its own binary does not have.
pub(super) fn with_env_seeing<R>(
    t: &mut Tracer,
    place: &EvalIn,
    modules: &[Arc<Module>],
    expr: Option<&Expr>,
    enums: &Enumerators,
    f: impl FnOnce(&Env<'_>) -> Result<R>,
) -> Result<R> {
    match place {
        EvalIn::Frame(data) => {
            let module = data
                .module
                .clone()
                .ok_or_else(|| Error::Eval("no symbols for this frame".into()))?;
            let binary = module
                .binary()
                .ok_or_else(|| Error::Eval("no symbols for this frame".into()))?;
            let scope = binary.scope_at(module.to_file(data.lookup_pc))?;
            let mem = TracerMemory(t);
            let frame_regs = data.registers(t);
            let tls = ThreadTls {
                mem: &mem,
                thread_pointer: data.tid.and_then(|tid| t.thread_pointer(tid).ok()),
                modules,
            };
            let entry = data
                .caller
                .as_deref()
                .and_then(|c| unwind::entry_registers(c, &mem));
            let env = Env {
                binary,
                bias: module.bias,
                mem: &mem,
                regs: &frame_regs,
                pc: data.lookup_pc,
                cfa: data.frame.cfa,
                scope: &scope,
                inline_index: data.inline_index,
                enums: module.main.then_some(enums),
                entry_regs: entry.as_ref().map(|m| m as &dyn symbols::RegisterReader),
                modules: Some(&modules),
                tls: Some(&tls),
            };
            f(&env)
        }
        EvalIn::Globals(module) => {
            let binary = module
                .binary()
                .ok_or_else(|| Error::Eval("no symbols for the program".into()))?;
            let mut names = Vec::new();
            if let Some(e) = expr {
                identifiers(e, &mut names, 0);
            }
            names.sort();
            names.dedup();
            let mut scope = Scope::default();
            for n in &names {
                scope.globals.extend(binary.global_variables(n)?);
            }
            let mem = TracerMemory(t);
            let no_regs = |_: u16| None;
            let env = Env {
                binary,
                bias: module.bias,
                mem: &mem,
                regs: &no_regs,
                pc: 0,
                cfa: None,
                scope: &scope,
                inline_index: 0,
                enums: Some(enums),
                entry_regs: None,
                modules: None,
                tls: None,
            };
            f(&env)
        }
    }
}

/// Every identifier an expression names (evaluation refuses deeper trees anyway).
fn identifiers(e: &Expr, out: &mut Vec<String>, depth: u32) {
    if depth > 256 {
        return;
    }
    let d = depth + 1;
    match e {
        Expr::Ident(n) => out.push(n.clone()),
        Expr::Member(b, _) | Expr::Arrow(b, _) => identifiers(b, out, d),
        Expr::Index(a, b) | Expr::Binary(_, a, b) => {
            identifiers(a, out, d);
            identifiers(b, out, d);
        }
        Expr::Cond(c, a, b) => {
            identifiers(c, out, d);
            identifiers(a, out, d);
            identifiers(b, out, d);
        }
        Expr::Unary(_, x) | Expr::Cast(_, x) | Expr::SizeofExpr(x) | Expr::MethodCall(x, _) => {
            identifiers(x, out, d)
        }
        Expr::Int(..)
        | Expr::Char(_)
        | Expr::Float(_)
        | Expr::Register(_)
        | Expr::SizeofType(_)
        | Expr::Str(_) => {}
    }
}
