//! The mode-hook gate: the active mode's hook components decide on each
//! tool call (plugin and host-native alike) before it runs (allow, deny, ask the user, rewrite the
//! arguments), observe it afterwards, and add to the system prompt. Hooks
//! fail closed: a hook that is missing, traps, times out or answers
//! something malformed denies the call.

use serde_json::Value;

use super::Dispatch;
use super::gates::schema_violations;
use super::{CallResult, Verdict};
use crate::asks::{Approval, Ask};
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
    Grant::new(&ctx.workspace)
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
        let id = ctx.task.id.as_str();
        let grant = hook_grant(ctx);
        for name in state.hooks() {
            let Some(hook) = self.hooks.get(name) else {
                let msg = format!(
                    "hook `{name}`, listed by mode `{}`, is not installed",
                    state.mode.slug
                );
                return self.hook_failed(ctx, call_id, name, msg).await;
            };
            let call = hook_call(spec, state, &args);
            let decision = match self.engine.hook_pre_tool(hook, &call, &grant).await {
                Ok(d) => d,
                Err(e) => {
                    let msg = format!("hook `{name}` failed ({}: {})", e.code, e.message);
                    tracing::warn!(task = id, "{msg}");
                    trace_hook(
                        trace,
                        ctx,
                        state,
                        spec,
                        &args,
                        format!("failed: {name}: {msg}"),
                    );
                    return self.hook_failed(ctx, call_id, name, msg).await;
                }
            };
            match decision {
                HookDecision::Allow => {}
                HookDecision::Deny(reason) => {
                    let reason = if reason.trim().is_empty() {
                        "(no reason given)".to_owned()
                    } else {
                        reason
                    };
                    trace_hook(
                        trace,
                        ctx,
                        state,
                        spec,
                        &args,
                        format!("denied: {name}: {reason}"),
                    );
                    return self
                        .hook_refused(
                            ctx,
                            call_id,
                            name,
                            (HookVerdict::Deny, reason.clone()),
                            (UiSubtype::HookDenied, format!("{name}: {reason}")),
                            format!("[ERROR] Denied by hook `{name}`: {reason}"),
                        )
                        .await;
                }
                HookDecision::Ask(question) => {
                    let question = if question.trim().is_empty() {
                        format!("hook `{name}` asks for approval of `{}`", spec.name)
                    } else {
                        question
                    };
                    ctx.events
                        .publish(TaskEvent::HookDecided {
                            id: call_id.to_owned(),
                            hook: name.clone(),
                            decision: HookVerdict::Ask,
                            detail: question.clone(),
                        })
                        .await;
                    let answer = self
                        .ask(
                            ctx,
                            Some(call_id),
                            Ask::Hook {
                                hook: name.to_owned(),
                                tool: spec.name.clone(),
                                question: question.clone(),
                            },
                        )
                        .await;
                    let answer = match answer {
                        Err(TaskError::NoPerson(why)) => {
                            trace_hook(
                                trace,
                                ctx,
                                state,
                                spec,
                                &args,
                                format!("denied: {name}: {question} (no one to ask)"),
                            );
                            return Ok(Verdict::refuse(CallResult::refused(why)));
                        }
                        answer => answer?.approval(),
                    };
                    match answer {
                        // A hook's question is about this one call.
                        Approval::Approve | Approval::Always(_) => {
                            user_approved = true;
                            trace_hook(
                                trace,
                                ctx,
                                state,
                                spec,
                                &args,
                                format!("approved: {name}: {question}"),
                            );
                        }
                        Approval::Deny { feedback } => {
                            self.record_denial(ctx, call_id, &feedback).await?;
                            trace_hook(
                                trace,
                                ctx,
                                state,
                                spec,
                                &args,
                                format!("denied: {name}: {question}"),
                            );
                            let mut msg = format!(
                                "The user denied this operation when hook `{name}` asked: {question}"
                            );
                            if let Some(f) = feedback.filter(|f| !f.trim().is_empty()) {
                                msg.push_str(&format!("\n<feedback>\n{f}\n</feedback>"));
                            }
                            return Ok(Verdict::refuse(CallResult::error(msg)));
                        }
                    }
                }
                HookDecision::Rewrite(text) => {
                    let new_args = match serde_json::from_str::<Value>(&text) {
                        Ok(v) if v.is_object() => v,
                        Ok(_) => {
                            let msg = format!(
                                "hook `{name}` rewrote the arguments of `{}` into JSON that is not an object",
                                spec.name
                            );
                            return self.hook_failed(ctx, call_id, name, msg).await;
                        }
                        Err(e) => {
                            let msg = format!(
                                "hook `{name}` rewrote the arguments of `{}` into malformed JSON ({e})",
                                spec.name
                            );
                            return self.hook_failed(ctx, call_id, name, msg).await;
                        }
                    };
                    if let Some(violations) = schema_violations(&spec.name, validator, &new_args) {
                        let msg = format!(
                            "hook `{name}` rewrote the arguments into ones the tool does not accept. {violations}"
                        );
                        return self.hook_failed(ctx, call_id, name, msg).await;
                    }
                    // One step: the UI row and its announcement.
                    let row = serde_json::json!({"hook": name, "args": new_args}).to_string();
                    let announce = TaskEvent::HookDecided {
                        id: call_id.to_owned(),
                        hook: name.clone(),
                        decision: HookVerdict::Rewrite,
                        detail: new_args.to_string(),
                    };
                    ctx.commit(
                        &self.store,
                        Step::new().ui(UiRow::say(UiSubtype::HookRewrite), row.as_str()),
                        vec![announce],
                    )
                    .await?;
                    trace_hook(
                        trace,
                        ctx,
                        state,
                        spec,
                        &new_args,
                        format!("rewrote: {name}: was {args}"),
                    );
                    args = new_args;
                }
            }
        }
        Ok(if args != original {
            Verdict::Rewrite {
                args,
                approved: user_approved,
            }
        } else if user_approved {
            Verdict::Approved
        } else {
            Verdict::Proceed
        })
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
