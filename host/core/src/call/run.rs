//! A call once every gate has passed, the same for every kind of tool: a
//! [`write_session`](super::write_session) when the call mutates (a lease
//! on its write roots and a guard that undoes what its scope does not
//! allow), the executor, then the after stage — what the guard undid, the
//! diff of the declared files, the mutation trace, the mode's post-tool
//! hooks, and the result as the model and the front-ends get it.
//!
//! The order of durable writes is explicit: a call's trace entries are
//! recorded with its result, in the step that makes the result durable,
//! and appended to `.orchestration/agent_trace.jsonl` after it (see
//! [`CallResult::trace`]); a crash in between leaves them in the store,
//! and a resume appends them. No trace line can tell of a call whose
//! result a crash lost.

use std::path::PathBuf;

use super::write_session::{self, WriteRule, WriteSession};
use super::{CallResult, Dispatch, Pending};
use crate::events::TaskEvent;
use crate::intents::{self, TraceEntry};
use crate::tools::snapshot;
use crate::tools::{Effect, Invocation, Outcome, ToolError};
use crate::turn::{Ctx, RunState, TaskError};
use roost_protocol::{ErrorCode, TraceKind, UiSubtype};
use roost_sandbox::capability::{RelPath, TreeStat};

impl Dispatch<'_> {
    /// Run `call` (past every gate) and turn its outcome into its result.
    pub(super) async fn run(
        &self,
        ctx: &Ctx<'_>,
        state: &mut RunState,
        call: Pending<'_>,
    ) -> Result<CallResult, TaskError> {
        let tool = call.tool;
        let spec = &tool.spec;
        let args = call.args;
        let mutates = tool.executor.mutates(state, &args);
        // A tool whose grant forbids writing never runs a mutating call.
        if mutates && !tool.access.write {
            let msg = format!(
                "plugin `{}` was not granted write access at install; `{}` cannot run",
                tool.provider(),
                spec.name
            );
            return Ok(CallResult::refused(msg));
        }
        let roots: Vec<PathBuf> = if mutates {
            match &call.write {
                Some(w) => w.roots.clone(),
                None => vec![PathBuf::from(".")],
            }
        } else {
            Vec::new()
        };
        // A call outside a task has no turn to checkpoint.
        if mutates && !state.checkpointed && ctx.site.is_task() {
            state.checkpointed = true;
            self.checkpoint(ctx).await;
        }
        let session = if roots.is_empty() {
            None
        } else {
            let rule = WriteRule {
                scope: state.intent.as_ref().map(|(_, s)| s.clone()),
                approved: call.write.map(|w| w.approved).unwrap_or_default(),
                bound: state.bound.clone(),
            };
            match WriteSession::open(&ctx.ws, &roots, rule, ctx.config.guard_budget).await {
                Ok(s) => Some(s),
                Err(e) => return Ok(CallResult::refused(e.to_string())),
            }
        };
        let before = if mutates {
            snapshot::before(&ctx.ws, spec, &args)
        } else {
            Vec::new()
        };
        // What the call changes, exactly, for its task's checkpoints (the
        // lease keeps other calls out of these roots meanwhile).
        let listed = if mutates && ctx.site.is_task() && self.agent.services.checkpoints.is_some() {
            let rels: Vec<RelPath> = roots
                .iter()
                .filter_map(|r| RelPath::parse(&r.to_string_lossy()).ok())
                .collect();
            TreeStat::take(&ctx.ws, &rels, &[".git"], MAX_LISTED)
                .ok()
                .map(|t| (rels, t))
        } else {
            None
        };
        let access = ctx.site.narrow(&tool.access);
        let ran = tool
            .executor
            .run(Invocation {
                agent: &self.agent.services,
                ctx,
                state,
                call_id: call.id,
                args: &args,
                write_roots: &roots,
                access: &access,
            })
            .await;
        // The guard runs whatever became of the call.
        let (report, lease) = match session.map(WriteSession::close) {
            Some((report, lease)) => (report, Some(lease)),
            None => (Default::default(), None),
        };
        let mut outcome = ran?;
        let after = snapshot::after(&ctx.ws, &before);
        snapshot::restore_modes(&ctx.ws, &before, &after);
        let diff = snapshot::diff(&before, &after);
        let changed = snapshot::changed(&before, &after);
        if let Some((rels, listed)) = listed
            && let Ok(now) = TreeStat::take(&ctx.ws, &rels, &[".git"], MAX_LISTED)
        {
            let paths: Vec<String> = now
                .changes_since(&listed)
                .into_iter()
                .map(|(p, _)| p)
                .collect();
            if !paths.is_empty() {
                self.after_change(ctx, paths).await;
            }
        }
        drop(lease);
        let mut trace = call.trace;
        trace.append(&mut outcome.trace);
        if mutates && intents::enabled_in(&ctx.ws) {
            let mut entry = TraceEntry::now(
                TraceKind::Mutation,
                &ctx.task.id,
                state.intent_id(),
                &state.mode.slug,
                &spec.name,
                &args,
            );
            entry.files = snapshot::changes(&before, &after);
            if let Some((files, detail)) = outcome.changed.take() {
                entry.files.extend(files);
                entry.detail = Some(detail);
            }
            if let Err(e) = &outcome.result {
                let error = format!("error {}: {}", e.code, e.message);
                entry.detail = Some(match entry.detail.take() {
                    Some(d) => format!("{d}; {error}"),
                    None => error,
                });
            }
            trace.push(entry);
        }
        let violation = write_session::violation(&report, &spec.name, state.intent_id());
        let violated = violation.is_some();
        if let Some(v) = violation {
            if intents::enabled_in(&ctx.ws) {
                let mut entry = TraceEntry::now(
                    TraceKind::Violation,
                    &ctx.task.id,
                    state.intent_id(),
                    &state.mode.slug,
                    &spec.name,
                    &args,
                );
                entry.detail = Some(write_session::trace_detail(&report));
                trace.push(entry);
            }
            tracing::warn!(task = %ctx.task.id, tool = %spec.name, "scope violation: {}", v.message);
            // What the call said is still the model's to read (a command's
            // output, its exit code).
            if let Ok(out) = &outcome.result
                && !out.text.is_empty()
            {
                outcome.notes.insert(
                    0,
                    format!("What the call returned before its writes outside the scope were undone:\n{}", out.text),
                );
            }
            outcome.result = Err(v);
            outcome.ui_row = None;
        }
        self.post_hooks(ctx, state, spec, &args, &outcome.result, &changed)
            .await;
        // What the call changes in the task: mode and intent here, the
        // rest (completion, stop) for the loop.
        let (mut completed, mut abort) = (None, None);
        match outcome.effect.take() {
            Some(Effect::SwitchMode(mode)) => state.mode = *mode,
            Some(Effect::SelectIntent(selected)) => state.intent = Some(*selected),
            Some(Effect::FollowSkill(focus)) => state.skill = focus,
            Some(Effect::Discover(names)) => state.discovered.extend(names),
            Some(Effect::Complete(result)) => completed = Some(result),
            Some(Effect::Abort(reason)) => abort = Some(reason),
            None => {}
        }
        let mut r = result_of(outcome, tool.is_native() || violated);
        r.completed = completed;
        r.abort = abort;
        r.diff = diff.map(|d| roost_secrets::redact(&d).into_owned());
        r.trace = trace;
        Ok(r)
    }
}

/// Most entries listed under a call's write roots to see what it changed.
const MAX_LISTED: usize = 200_000;

impl Dispatch<'_> {
    /// The turn's checkpoint, before its first change (a failure is
    /// logged and said, never the call's).
    async fn checkpoint(&self, ctx: &Ctx<'_>) {
        let Some(cps) = self.agent.services.checkpoints.clone() else {
            return;
        };
        let (store, task, ws) = (self.store.clone(), ctx.task.id.clone(), ctx.ws.clone());
        let taken = tokio::task::spawn_blocking(move || cps.before_turn(&store, &task, &ws)).await;
        match taken {
            Ok(Ok(Some(cp))) => {
                ctx.events
                    .publish(TaskEvent::CheckpointSaved {
                        checkpoint: cp.view,
                    })
                    .await;
            }
            Ok(Ok(None)) => {}
            Ok(Err(e)) => {
                tracing::warn!(task = %ctx.task.id, "no checkpoint: {e}");
                ctx.events
                    .publish(TaskEvent::Warning {
                        message: format!("no checkpoint was taken before this change: {e}"),
                    })
                    .await;
            }
            Err(e) => tracing::warn!(task = %ctx.task.id, "checkpoint task failed: {e}"),
        }
    }

    /// The task's own view of what it changed (`paths`), for a later
    /// restore.
    async fn after_change(&self, ctx: &Ctx<'_>, paths: Vec<String>) {
        let Some(cps) = self.agent.services.checkpoints.clone() else {
            return;
        };
        let (task, ws) = (ctx.task.id.clone(), ctx.ws.clone());
        match tokio::task::spawn_blocking(move || cps.after_change(&task, &ws, &paths)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(task = %ctx.task.id, "checkpoint head not updated: {e}"),
            Err(e) => tracing::warn!(task = %ctx.task.id, "checkpoint task failed: {e}"),
        }
    }
}

/// The result the model and the front-ends get of `outcome`. An error is
/// `[ERROR] code: message`, or `[ERROR] message` where the message speaks
/// for itself (the host's own tools, a violation's structured account).
fn result_of(outcome: Outcome, plain_errors: bool) -> CallResult {
    let Outcome {
        result,
        mistake,
        ui_row,
        notes,
        spent,
        network,
        ..
    } = outcome;
    let mut content = match &result {
        Ok(out) => out.text.clone(),
        Err(e) if plain_errors => format!("[ERROR] {}", e.message),
        Err(e) => format!("[ERROR] {}: {}", e.code, e.message),
    };
    for note in notes {
        content.push('\n');
        content.push_str(&note);
    }
    let is_error = result.is_err();
    let (output, error) = match result {
        Ok(out) => (Some(out), None),
        Err(e) => (None, Some(e)),
    };
    let ui_row = ui_row.or_else(|| {
        Some(if is_error {
            (UiSubtype::Error, content.clone())
        } else {
            (UiSubtype::ToolResult, super::ui_preview(&content))
        })
    });
    CallResult {
        content,
        is_error,
        mistake,
        completed: None,
        abort: None,
        error,
        diff: None,
        ui_row,
        trace: Vec::new(),
        spent,
        network,
        output,
    }
}

impl CallResult {
    /// A call the dispatch would not run, with why (also its UI row).
    pub(super) fn refused(msg: String) -> Self {
        Self {
            ui_row: Some((UiSubtype::Error, msg.clone())),
            error: Some(ToolError::new(ErrorCode::PermissionDenied, msg.clone())),
            ..CallResult::error(format!("[ERROR] {msg}"))
        }
    }
}
