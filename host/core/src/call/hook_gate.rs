//! The mode-hook gate: the active mode's hook components decide on each
//! tool call (plugin and host-native alike) before it runs (allow, deny, ask the user, rewrite the
//! arguments), observe it afterwards, and add to the system prompt. Hooks
//! fail closed: a hook that is missing, traps, times out or answers
//! something malformed denies the call.

use std::ops::ControlFlow;

use serde_json::Value;

use super::Dispatch;
use super::gates::schema_violations;
use super::{CallResult, Verdict};
use crate::asks::{Approval, Ask, Resume};
use crate::turn::{Ctx, RunState, TaskError};

use crate::events::TaskEvent;
use crate::intents::{self, TraceEntry};
use crate::store::Step;
use crate::tools::{ArgsValidator, ToolError, ToolOutput, ToolSpec};
use roost_protocol::{HookVerdict, TraceKind, UiRow, UiSubtype};
use roost_sandbox::capability::Grant;
use roost_sandbox::plugins::{HookCall, HookDecision};

/// The sandbox of a hook call: `.orchestration/` readable, nothing else.
pub(crate) fn hook_grant(ctx: &Ctx<'_>) -> Grant {
    Grant::on_held(&ctx.workspace, &ctx.ws)
        .read_dir(intents::ORCHESTRATION_DIR)
        .limits(ctx.config.hook_limits)
}

/// Workspace-relative paths a call declares through its path args.
pub(super) fn declared_paths(spec: &ToolSpec, args: &Value) -> Vec<String> {
    spec.path_args
        .iter()
        .filter_map(|a| args.get(a).and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}

/// The call as hooks see it.
fn hook_call(spec: &ToolSpec, state: &RunState, args: &Value) -> HookCall {
    HookCall {
        tool: spec.name.clone(),
        group: spec.group,
        destructive: spec.destructive,
        args: args.to_string(),
        mode: state.mode.slug.clone(),
        intent_id: state.intent_id().map(str::to_owned),
        paths: declared_paths(spec, args),
    }
}

/// The call the pre-tool hooks are deciding on, and the sandbox they run in.
struct PreToolGate<'g, 'c> {
    ctx: &'g Ctx<'c>,
    state: &'g RunState,
    spec: &'g ToolSpec,
    validator: &'g ArgsValidator,
    call_id: &'g str,
    grant: Grant,
}

impl PreToolGate<'_, '_> {
    /// Trace one hook's verdict on the call (with `args` as it then stood).
    fn record(&self, trace: &mut Vec<TraceEntry>, args: &Value, detail: String) {
        trace_hook(trace, self.ctx, self.state, self.spec, args, detail);
    }
}

impl Dispatch<'_> {
    /// Run the mode's pre-tool hooks, in the order the mode lists them,
    /// each seeing the arguments as the hooks before it left them.
    pub(super) async fn pre_hooks(
        &self,
        ctx: &Ctx<'_>,
        state: &RunState,
        (spec, validator): (&ToolSpec, &ArgsValidator),
        call_id: &str,
        mut args: Value,
        trace: &mut Vec<TraceEntry>,
    ) -> Result<Verdict, TaskError> {
        let mut user_approved = false;
        if state.hooks().next().is_none() {
            return Ok(Verdict::Proceed);
        }
        let original = args.clone();
        let grant = hook_grant(ctx);
        let gate = PreToolGate {
            ctx,
            state,
            spec,
            validator,
            call_id,
            grant,
        };
        for name in state.hooks() {
            let decision = match self.consult(&gate, name, &args, trace).await? {
                ControlFlow::Continue(decision) => decision,
                ControlFlow::Break(refusal) => return Ok(refusal),
            };
            crate::telemetry::spans::note_event("roost.hook", || {
                vec![
                    opentelemetry::KeyValue::new("roost.hook.name", name.clone()),
                    opentelemetry::KeyValue::new(
                        "roost.hook.verdict",
                        match &decision {
                            HookDecision::Allow => "allow",
                            HookDecision::Deny(_) => "deny",
                            HookDecision::Ask(_) => "ask",
                            HookDecision::Rewrite(_) => "rewrite",
                        },
                    ),
                ]
            });
            match decision {
                HookDecision::Allow => {}
                HookDecision::Deny(reason) => {
                    return self.denied(&gate, name, reason, &args, trace).await;
                }
                HookDecision::Ask(question) => {
                    match self.asked(&gate, name, question, &args, trace).await? {
                        ControlFlow::Continue(()) => user_approved = true,
                        ControlFlow::Break(refusal) => return Ok(refusal),
                    }
                }
                HookDecision::Rewrite(text) => {
                    match self.rewritten(&gate, name, &text, &args, trace).await? {
                        ControlFlow::Continue(new_args) => args = new_args,
                        ControlFlow::Break(refusal) => return Ok(refusal),
                    }
                }
            }
        }
        Ok(gate_verdict(args, &original, user_approved))
    }

    /// Ask hook `name` for its verdict; a hook that is not installed or fails refuses the call.
    async fn consult(
        &self,
        gate: &PreToolGate<'_, '_>,
        name: &str,
        args: &Value,
        trace: &mut Vec<TraceEntry>,
    ) -> Result<ControlFlow<Verdict, HookDecision>, TaskError> {
        let (ctx, call_id) = (gate.ctx, gate.call_id);
        let Some(hook) = self.hooks.get(name) else {
            let msg = format!(
                "hook `{name}`, listed by mode `{}`, is not installed",
                gate.state.mode.slug
            );
            return self
                .hook_failed(ctx, call_id, name, msg)
                .await
                .map(ControlFlow::Break);
        };
        let call = hook_call(gate.spec, gate.state, args);
        match self.engine.hook_pre_tool(hook, &call, &gate.grant).await {
            Ok(decision) => Ok(ControlFlow::Continue(decision)),
            Err(e) => {
                let msg = format!("hook `{name}` failed ({}: {})", e.code, e.message);
                tracing::warn!(task = ctx.task.id.as_str(), "{msg}");
                gate.record(trace, args, format!("failed: {name}: {msg}"));
                self.hook_failed(ctx, call_id, name, msg)
                    .await
                    .map(ControlFlow::Break)
            }
        }
    }

    /// Hook `name` denied the call: trace it and refuse with its reason.
    async fn denied(
        &self,
        gate: &PreToolGate<'_, '_>,
        name: &str,
        reason: String,
        args: &Value,
        trace: &mut Vec<TraceEntry>,
    ) -> Result<Verdict, TaskError> {
        let reason = if reason.trim().is_empty() {
            "(no reason given)".to_owned()
        } else {
            reason
        };
        gate.record(trace, args, format!("denied: {name}: {reason}"));
        self.hook_refused(
            gate.ctx,
            gate.call_id,
            name,
            (HookVerdict::Deny, reason.clone()),
            (UiSubtype::HookDenied, format!("{name}: {reason}")),
            format!("[ERROR] Denied by hook `{name}`: {reason}"),
        )
        .await
    }

    /// Hook `name` asks the user about the call: go on if they approve, refuse otherwise.
    async fn asked(
        &self,
        gate: &PreToolGate<'_, '_>,
        name: &str,
        question: String,
        args: &Value,
        trace: &mut Vec<TraceEntry>,
    ) -> Result<ControlFlow<Verdict>, TaskError> {
        let (ctx, call_id, spec) = (gate.ctx, gate.call_id, gate.spec);
        let question = if question.trim().is_empty() {
            format!("hook `{name}` asks for approval of `{}`", spec.name)
        } else {
            question
        };
        ctx.events
            .publish(TaskEvent::HookDecided {
                id: call_id.to_owned(),
                hook: name.to_owned(),
                decision: HookVerdict::Ask,
                detail: question.clone(),
            })
            .await;
        let ask = Ask::Hook {
            hook: name.to_owned(),
            tool: spec.name.clone(),
            question: question.clone(),
        };
        let answer = match self.ask(ctx, Some(call_id), ask, Resume::Now).await {
            Err(TaskError::NoPerson(why)) => {
                let detail = format!("denied: {name}: {question} (no one to ask)");
                gate.record(trace, args, detail);
                let refusal = CallResult::refused(why);
                return Ok(ControlFlow::Break(Verdict::refuse(refusal)));
            }
            answer => answer?.approval(),
        };
        match answer {
            // A hook's question is about this one call.
            Approval::Approve | Approval::Always(_) => {
                gate.record(trace, args, format!("approved: {name}: {question}"));
                Ok(ControlFlow::Continue(()))
            }
            Approval::Deny { feedback } => {
                self.record_denial(ctx, call_id, &feedback).await?;
                gate.record(trace, args, format!("denied: {name}: {question}"));
                let refusal = CallResult::error(user_denial(name, &question, feedback));
                Ok(ControlFlow::Break(Verdict::refuse(refusal)))
            }
        }
    }

    /// Hook `name` rewrote the arguments: announce and trace the rewrite, or refuse if unusable.
    async fn rewritten(
        &self,
        gate: &PreToolGate<'_, '_>,
        name: &str,
        text: &str,
        args: &Value,
        trace: &mut Vec<TraceEntry>,
    ) -> Result<ControlFlow<Verdict, Value>, TaskError> {
        let (ctx, call_id) = (gate.ctx, gate.call_id);
        let new_args = match rewritten_args(gate, name, text) {
            Ok(new_args) => new_args,
            Err(msg) => {
                return self
                    .hook_failed(ctx, call_id, name, msg)
                    .await
                    .map(ControlFlow::Break);
            }
        };
        // One step: the UI row and its announcement.
        let row = serde_json::json!({"hook": name, "args": new_args}).to_string();
        let announce = TaskEvent::HookDecided {
            id: call_id.to_owned(),
            hook: name.to_owned(),
            decision: HookVerdict::Rewrite,
            detail: new_args.to_string(),
        };
        ctx.commit(
            &self.store,
            Step::new().ui(UiRow::say(UiSubtype::HookRewrite), row.as_str()),
            vec![announce],
        )
        .await?;
        gate.record(trace, &new_args, format!("rewrote: {name}: was {args}"));
        Ok(ControlFlow::Continue(new_args))
    }

    /// The hook could not give a usable verdict: deny, and say so.
    async fn hook_failed(
        &self,
        ctx: &Ctx<'_>,
        call_id: &str,
        name: &str,
        msg: String,
    ) -> Result<Verdict, TaskError> {
        let content = format!("[ERROR] {msg}; the call was denied (hooks fail closed).");
        self.hook_refused(
            ctx,
            call_id,
            name,
            (HookVerdict::Failed, msg.clone()),
            (UiSubtype::Error, msg),
            content,
        )
        .await
    }

    /// Refuse a call for hook `name`: its UI row and the `hook_decided`
    /// event (`decision`, `detail`) are one step; `content` goes to the model.
    async fn hook_refused(
        &self,
        ctx: &Ctx<'_>,
        call_id: &str,
        name: &str,
        (decision, detail): (HookVerdict, String),
        (subtype, row): (UiSubtype, String),
        content: String,
    ) -> Result<Verdict, TaskError> {
        let announce = TaskEvent::HookDecided {
            id: call_id.to_owned(),
            hook: name.to_owned(),
            decision,
            detail,
        };
        ctx.commit(
            &self.store,
            Step::new().ui(UiRow::say(subtype), row),
            vec![announce],
        )
        .await?;
        Ok(Verdict::refuse(CallResult::error(content)))
    }

    /// Tell the mode's hooks how a call went. A failing post-tool hook is
    /// reported; the call has already happened, so nothing is undone.
    pub(super) async fn post_hooks(
        &self,
        ctx: &Ctx<'_>,
        state: &RunState,
        spec: &ToolSpec,
        args: &Value,
        result: &Result<ToolOutput, ToolError>,
        changed: &[String],
    ) {
        if state.hooks().next().is_none() {
            return;
        }
        let grant = hook_grant(ctx);
        let call = hook_call(spec, state, args);
        for name in state.hooks() {
            let Some(hook) = self.hooks.get(name) else {
                continue;
            };
            if let Err(e) = self
                .engine
                .hook_post_tool(hook, &call, result, changed, &grant)
                .await
            {
                let msg = format!("post-tool hook `{name}` failed ({}: {})", e.code, e.message);
                tracing::warn!(task = %ctx.task.id, "{msg}");
                ctx.events
                    .publish(TaskEvent::Warning { message: msg })
                    .await;
            }
        }
    }

    /// What the mode's hooks add to the system prompt this turn. A hook
    /// that fails here only loses its contribution (its pre-tool gate
    /// still fails closed).
    pub async fn hook_prompts(&self, ctx: &Ctx<'_>, state: &RunState) -> Vec<String> {
        let mut out = Vec::new();
        if state.hooks().next().is_none() {
            return out;
        }
        let grant = hook_grant(ctx);
        for name in state.hooks() {
            let Some(hook) = self.hooks.get(name) else {
                continue;
            };
            match self
                .engine
                .hook_prompt(hook, &state.mode.slug, &grant)
                .await
            {
                Ok(Some(text)) if !text.trim().is_empty() => {
                    out.push(format!("HOOK {name}\n\n{text}"));
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(
                    task = %ctx.task.id,
                    "prompt contribution of hook `{name}` failed: {}",
                    e.message
                ),
            }
        }
        out
    }
}

/// The arguments hook `name` rewrote the call's into, or why they are unusable.
fn rewritten_args(gate: &PreToolGate<'_, '_>, name: &str, text: &str) -> Result<Value, String> {
    let spec = gate.spec;
    let new_args = match serde_json::from_str::<Value>(text) {
        Ok(v) if v.is_object() => v,
        Ok(_) => {
            return Err(format!(
                "hook `{name}` rewrote the arguments of `{}` into JSON that is not an object",
                spec.name
            ));
        }
        Err(e) => {
            return Err(format!(
                "hook `{name}` rewrote the arguments of `{}` into malformed JSON ({e})",
                spec.name
            ));
        }
    };
    if let Some(violations) = schema_violations(&spec.name, gate.validator, &new_args) {
        return Err(format!(
            "hook `{name}` rewrote the arguments into ones the tool does not accept. {violations}"
        ));
    }
    Ok(new_args)
}

/// What the model is told when the user denies the call a hook asked about.
fn user_denial(name: &str, question: &str, feedback: Option<String>) -> String {
    let mut msg = format!("The user denied this operation when hook `{name}` asked: {question}");
    if let Some(f) = feedback.filter(|f| !f.trim().is_empty()) {
        msg.push_str(&format!("\n<feedback>\n{f}\n</feedback>"));
    }
    msg
}

/// The gate's verdict once every hook let the call through (rewritten, approved, or neither).
fn gate_verdict(args: Value, original: &Value, user_approved: bool) -> Verdict {
    if args != *original {
        Verdict::Rewrite {
            args,
            approved: user_approved,
        }
    } else if user_approved {
        Verdict::Approved
    } else {
        Verdict::Proceed
    }
}

/// A hook's verdict on a call, as a trace entry recorded with the call's
/// result (when the workspace keeps a trace).
fn trace_hook(
    trace: &mut Vec<TraceEntry>,
    ctx: &Ctx<'_>,
    state: &RunState,
    spec: &ToolSpec,
    args: &Value,
    detail: String,
) {
    if !intents::enabled_in(&ctx.ws) {
        return;
    }
    let mut entry = TraceEntry::now(
        TraceKind::Hook,
        &ctx.task.id,
        state.intent_id(),
        &state.mode.slug,
        &spec.name,
        args,
    );
    entry.detail = Some(detail);
    trace.push(entry);
}
