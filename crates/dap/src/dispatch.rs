//! Which request goes to which handler, and the capabilities that say so: a request is
//! advertised exactly when it is dispatched here.

use std::time::Instant;

use wire::dap;

use crate::filters::FILTERS;
use crate::outbox::Failure;
use crate::server::{Adapter, Ending, Flow};
use crate::types::*;

impl Adapter {
    pub(crate) fn on_request(&mut self, req: dap::Request) -> Flow {
        tracing::debug!(seq = req.seq, command = %req.command, "request");
        let command = req.command.clone();
        if self.cancelled.remove(&req.seq) {
            self.out.error(req.seq, &command, "cancelled");
            return Flow::Continue;
        }
        let pre_init = [Initialize::COMMAND, Disconnect::COMMAND, Terminate::COMMAND];
        if !self.initialized && !pre_init.contains(&command.as_str()) {
            self.out.error(
                req.seq,
                &command,
                "the adapter is not initialized: send initialize first",
            );
            return Flow::Continue;
        }
        if command == Initialize::COMMAND {
            self.debugger.keep_initialize(req.arguments.as_ref());
            if self.handle::<Initialize>(&req, |a, args| a.initialize(args)) {
                // Configuration requests are welcome from now on, before or after launch.
                self.out.event("initialized", None::<()>);
            }
            return Flow::Continue;
        }
        let start = Instant::now();
        let next = dispatch(self, &req);
        tracing::debug!(command = %command, elapsed = ?start.elapsed(), "handled");
        next
    }

    fn initialize(&mut self, args: InitializeArguments) -> Result<Capabilities, Failure> {
        if self.initialized {
            return Err("the adapter is already initialized".into());
        }
        tracing::info!(client = ?args.client_name, adapter = %args.adapter_id, "initialize");
        self.initialized = true;
        self.debugger.set_client(&args);
        Ok(capabilities())
    }
}

pub fn capabilities() -> Capabilities {
    Capabilities {
        supports_configuration_done_request: Some(true),
        supports_function_breakpoints: Some(true),
        supports_conditional_breakpoints: Some(true),
        supports_hit_conditional_breakpoints: Some(true),
        supports_evaluate_for_hovers: Some(true),
        exception_breakpoint_filters: Some(
            FILTERS
                .iter()
                .map(|f| ExceptionBreakpointsFilter {
                    filter: f.id.to_string(),
                    label: f.label.to_string(),
                    description: f.description.to_string(),
                    default: f.default,
                    supports_condition: false,
                })
                .collect(),
        ),
        supports_set_variable: Some(true),
        supports_restart_request: Some(true),
        supports_modules_request: Some(true),
        support_terminate_debuggee: Some(true),
        support_suspend_debuggee: Some(true),
        supports_delayed_stack_trace_loading: Some(true),
        supports_log_points: Some(true),
        supports_terminate_request: Some(true),
        supports_set_expression: Some(true),
        supports_read_memory_request: Some(true),
        supports_write_memory_request: Some(true),
        supports_cancel_request: Some(true),
        supports_breakpoint_locations_request: Some(true),
        supports_clipboard_context: Some(true),
        supports_stepping_granularity: Some(true),
        supports_step_in_targets_request: Some(true),
        supports_instruction_breakpoints: Some(true),
        supports_exception_info_request: Some(true),
        supports_data_breakpoints: Some(true),
        supports_disassemble_request: Some(true),
        supports_completions_request: Some(true),
        completion_trigger_characters: Some(vec![".".into(), ">".into()]),
        supports_loaded_sources_request: Some(true),
        ..Capabilities::default()
    }
}

pub(crate) fn dispatch(a: &mut Adapter, req: &dap::Request) -> Flow {
    if let Some(flow) = crate::debugger::postmortem::route(a, req) {
        return flow;
    }
    if let Some(flow) = crate::debugger::same::route(a, req) {
        return flow;
    }
    macro_rules! route {
        ($ty:ty, $method:ident) => {{
            a.handle::<$ty>(req, |a, args| a.debugger().$method(args));
        }};
    }
    match req.command.as_str() {
        Disconnect::COMMAND => {
            if a.handle::<Disconnect>(req, |a, args| a.debugger().disconnect(args)) {
                return Flow::End(Ending::Disconnected);
            }
        }
        Terminate::COMMAND => route!(Terminate, terminate),
        Launch::COMMAND => crate::debugger::debuginfo::launch(a, req),
        Attach::COMMAND => crate::debugger::debuginfo::attach(a, req),
        Restart::COMMAND => route!(Restart, restart),
        ConfigurationDone::COMMAND => route!(ConfigurationDone, configuration_done),
        SetBreakpoints::COMMAND => route!(SetBreakpoints, set_breakpoints),
        SetFunctionBreakpoints::COMMAND => crate::debugger::hold::set_function_breakpoints(a, req),
        SetInstructionBreakpoints::COMMAND => {
            route!(SetInstructionBreakpoints, set_instruction_breakpoints)
        }
        SetExceptionBreakpoints::COMMAND => {
            route!(SetExceptionBreakpoints, set_exception_breakpoints)
        }
        BreakpointLocations::COMMAND => route!(BreakpointLocations, breakpoint_locations),
        Continue::COMMAND => route!(Continue, continue_),
        Next::COMMAND => route!(Next, next),
        StepBack::COMMAND => route!(StepBack, step_back),
        ReverseContinue::COMMAND => route!(ReverseContinue, reverse_continue),
        RestartFrame::COMMAND => route!(RestartFrame, restart_frame),
        StepIn::COMMAND => route!(StepIn, step_in),
        StepOut::COMMAND => route!(StepOut, step_out),
        StepInTargets::COMMAND => route!(StepInTargets, step_in_targets),
        Pause::COMMAND => route!(Pause, pause),
        Threads::COMMAND => route!(Threads, threads),
        StackTrace::COMMAND => route!(StackTrace, stack_trace),
        Scopes::COMMAND => route!(Scopes, scopes),
        Variables::COMMAND => route!(Variables, variables),
        SetVariable::COMMAND => route!(SetVariable, set_variable),
        SetExpression::COMMAND => route!(SetExpression, set_expression),
        Evaluate::COMMAND => route!(Evaluate, evaluate),
        SourceRequest::COMMAND => route!(SourceRequest, source),
        Modules::COMMAND => route!(Modules, modules),
        ReadMemory::COMMAND => route!(ReadMemory, read_memory),
        WriteMemory::COMMAND => route!(WriteMemory, write_memory),
        Cancel::COMMAND => crate::debugger::hold::cancel(a, req),
        ExceptionInfo::COMMAND => route!(ExceptionInfo, exception_info),
        DataBreakpointInfo::COMMAND => route!(DataBreakpointInfo, data_breakpoint_info),
        SetDataBreakpoints::COMMAND => route!(SetDataBreakpoints, set_data_breakpoints),
        Disassemble::COMMAND => route!(Disassemble, disassemble),
        Completions::COMMAND => route!(Completions, completions),
        LoadedSources::COMMAND => route!(LoadedSources, loaded_sources),
        crate::debugger::gcore::WriteCore::COMMAND => {
            route!(crate::debugger::gcore::WriteCore, write_core)
        }
        "tandem/processes" => crate::processes::processes_request(a, req),
        command => a
            .out()
            .error(req.seq, command, &format!("unknown command '{command}'")),
    }
    Flow::Continue
}
