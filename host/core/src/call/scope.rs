//! The gates that judge where a call reaches: the path gate (declared
//! paths inside the workspace, not ignored, not authority files) and the
//! intent gate (writes inside the active intent's owned scope).

use std::path::PathBuf;

use serde_json::Value;

use super::Dispatch;
use super::{CallResult, Pending, Verdict, WriteScope, paths};
use crate::asks::{Approval, Ask, Resume};
use crate::intents::{self, TraceEntry};
use crate::tools::{PreviewCall, ToolSpec};
use crate::turn::{Ctx, RunState, TaskError};
use roost_protocol::TraceKind;
use roost_sandbox::capability::RooIgnore;

impl Dispatch<'_> {
    /// The path gate ([`paths`]): declared paths normalised in place, or
    /// the refusal to return to the model.
    pub(super) fn path_gate(
        &self,
        ctx: &Ctx<'_>,
        spec: &ToolSpec,
        args: &mut Value,
    ) -> Result<Verdict, TaskError> {
        if spec.path_args.is_empty() {
            return Ok(Verdict::Proceed);
        }
        // A view as of now: a workspace without `.rooignore` (most) is
        // known to lack it with no lookup, exactly as a lookup now would.
        let ignore = RooIgnore::load_in(&ctx.ws.as_of_now());
        match paths::check(&ctx.ws, &ignore, spec, args) {
            Ok(()) => Ok(Verdict::Proceed),
            Err(r) => Ok(Verdict::refuse(CallResult {
                ui_row: Some((r.ui_subtype, r.path)),
                ..CallResult::error(format!("[ERROR] {}", r.message))
            })),
        }
    }

    /// The intent gate: a destructive call (when intents are on) needs an
    /// active intent, and its declared paths must lie in the intent's owned
    /// scope or be approved once; it then gets the write roots it may use.
    pub(super) async fn intent_gate(
        &self,
        ctx: &Ctx<'_>,
        state: &RunState,
        call: &mut Pending<'_>,
    ) -> Result<Verdict, TaskError> {
        let spec = &call.tool.spec;
        if !call.tool.executor.mutates(state, &call.args) {
            return Ok(Verdict::Proceed);
        }
        // A subtask's bound comes first: what lies outside its parent's
        // scope is refused, and no one is asked to widen it.
        if let Some(bound) = &state.bound {
            let outside = if bound.read_only() {
                Some(None)
            } else {
                spec.path_args
                    .iter()
                    .filter_map(|arg| call.args.get(arg).and_then(Value::as_str))
                    .find(|path| !bound.allows(path))
                    .map(Some)
            };
            if let Some(path) = outside {
                let (code, message) = match (ctx.site.is_task(), bound.read_only()) {
                    (true, true) => (
                        "outside_parent_scope",
                        "this subtask may not change the workspace: the task that started it had no write scope to give it",
                    ),
                    (true, false) => (
                        "outside_parent_scope",
                        "a subtask may only write inside the scope of the task that started it",
                    ),
                    (false, true) => (
                        "outside_grant",
                        "this call may not change the workspace: its caller was granted no write access",
                    ),
                    (false, false) => (
                        "outside_grant",
                        "a call may only write inside the directories its caller was granted",
                    ),
                };
                let mut v = serde_json::json!({
                    "code": code,
                    "message": message,
                    "allowed": bound.globs(),
                });
                if let Some(p) = path {
                    v["path"] = Value::String(p.to_owned());
                }
                if intents::enabled_in(&ctx.ws) {
                    let mut entry = TraceEntry::now(
                        TraceKind::Violation,
                        &ctx.task.id,
                        state.intent_id(),
                        &state.mode.slug,
                        &spec.name,
                        &call.args,
                    );
                    entry.detail = Some(format!(
                        "{}: {}",
                        if ctx.site.is_task() {
                            "outside the parent's scope"
                        } else {
                            "outside the caller's grant"
                        },
                        path.unwrap_or("(any write)")
                    ));
                    call.trace.push(entry);
                }
                return Ok(Verdict::refuse(CallResult::error(format!("[ERROR] {v}"))));
            }
            // Outside a task with no intent named, the caller's grant is
            // the scope (it is the person's own decision, as a task's
            // person widens a scope): its writes are traced, under no
            // intent.
            if !intents::enabled_in(&ctx.ws) || (state.intent.is_none() && !ctx.site.is_task()) {
                call.write = Some(WriteScope {
                    roots: bound.write_roots().to_vec(),
                    approved: Vec::new(),
                });
                return Ok(Verdict::Proceed);
            }
        }
        if !intents::enabled_in(&ctx.ws) {
            return Ok(Verdict::Proceed);
        }
        let (call_id, args) = (call.id, &call.args);
        let id = ctx.task.id.as_str();
        let Some((intent, scope)) = &state.intent else {
            return Ok(Verdict::refuse(CallResult::error(format!(
                "[ERROR] {}",
                serde_json::json!({
                    "code": "intent_required",
                    "message": format!("`{}` changes the workspace: call select_active_intent with an IN_PROGRESS intent from .orchestration/active_intents.yaml first", spec.name)
                })
            ))));
        };
        let mut roots: Vec<PathBuf> = scope.write_roots().to_vec();
        let mut approved = Vec::new();
        for arg in &spec.path_args {
            let Some(path) = args.get(arg).and_then(Value::as_str) else {
                continue;
            };
            if scope.allows(path) {
                if scope.ignored(path) {
                    roots.push(intents::parent_dir(path));
                }
                continue;
            }
            // The person sees the change, as an edit's approval shows it.
            let preview = call
                .tool
                .executor
                .preview(PreviewCall {
                    agent: &self.agent.services,
                    ctx,
                    args,
                })
                .await;
            let answer = self
                .ask(
                    ctx,
                    Some(call_id),
                    Ask::Scope {
                        intent: intent.id.clone(),
                        tool: spec.name.clone(),
                        path: path.to_owned(),
                        preview,
                    },
                    Resume::Now,
                )
                .await;
            let mut entry = TraceEntry::now(
                TraceKind::Approval,
                id,
                Some(&intent.id),
                &state.mode.slug,
                &spec.name,
                args,
            );
            entry.detail = Some(format!("outside owned scope: {path}"));
            let answer = match answer {
                Err(TaskError::NoPerson(why)) => {
                    entry.kind = TraceKind::Violation;
                    call.trace.push(entry);
                    let v = serde_json::json!({"code": "scope_violation", "intent_id": intent.id, "path": path, "message": why});
                    return Ok(Verdict::refuse(CallResult::error(format!("[ERROR] {v}"))));
                }
                answer => answer?.approval(),
            };
            match answer {
                Approval::Approve | Approval::Always(_) => {
                    // A one-time widening for this call only.
                    roots.push(intents::parent_dir(path));
                    approved.push(path.trim_start_matches("./").to_owned());
                    call.trace.push(entry);
                }
                Approval::Deny { feedback } => {
                    entry.kind = TraceKind::Violation;
                    call.trace.push(entry);
                    let mut v = serde_json::json!({"code": "scope_violation", "intent_id": intent.id, "path": path});
                    if let Some(f) = feedback {
                        v["feedback"] = Value::String(f);
                    }
                    return Ok(Verdict::refuse(CallResult::error(format!("[ERROR] {v}"))));
                }
            }
        }
        call.write = Some(WriteScope { roots, approved });
        Ok(Verdict::Proceed)
    }
}
