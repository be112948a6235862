//! A call once every gate has passed, the same for every kind of tool: a
//! [`write_session`](super::write_session) when the call mutates (a lease
//! on its write roots and a guard that undoes what its scope does not
//! allow) and its [`ChangeSet`], the executor, then the after stage — what
//! the guard undid, what the call changed (one account for the diff, the
//! checkpoint, the mutation trace and the mode's post-tool hooks), and the
//! result as the model and the front-ends get it.
//!
//! The order of durable writes is explicit: a call's trace entries are
//! recorded with its result, in the step that makes the result durable,
//! and appended to `.orchestration/agent_trace.jsonl` after it (see
//! [`CallResult::trace`]); a crash in between leaves them in the store,
//! and a resume appends them. No trace line can tell of a call whose
//! result a crash lost.

use std::path::PathBuf;

use super::change_set::{ChangeSet, Settled};
use super::write_session::{self, WriteRule, WriteSession};
use super::{CallResult, Dispatch, Pending, WriteScope};
use crate::events::TaskEvent;
use crate::intents::{self, TraceEntry};
use crate::tools::{Effect, Invocation, Outcome, RegisteredTool, ToolError, ToolSpec};
use crate::turn::{Ctx, RunState, TaskError};
use roost_protocol::{ErrorCode, TraceKind, UiSubtype};
use roost_sandbox::capability::{GuardReport, WriteLease};
use serde_json::Value;

/// A call past its gates whose write session (when it mutates) is open:
/// what its executor needs, and what its after stage compares.
pub(super) struct Begun<'c> {
    /// The model's call id.
    id: &'c str,
    /// The tool and what runs it.
    tool: &'c RegisteredTool,
    /// Its final arguments.
    args: Value,
    /// The gates' trace entries.
    trace: Vec<TraceEntry>,
    /// Whether it may change the workspace.
    mutates: bool,
    /// Where it may write (none for a read).
    roots: Vec<PathBuf>,
    /// Its lease and guard.
    session: Option<WriteSession>,
    /// What it changes, as it was before it ran.
    changes: ChangeSet,
}

impl Dispatch<'_> {
    /// Run `call` (past every gate) and turn its outcome into its result.
    pub(super) async fn run(
        &self,
        ctx: &Ctx<'_>,
        state: &mut RunState,
        call: Pending<'_>,
    ) -> Result<CallResult, TaskError> {
        let begun = match self.begin(ctx, state, call).await {
            Ok(begun) => begun,
            Err(refused) => return Ok(refused),
        };
        let ran = self.execute_begun(ctx, state, &begun, false).await;
        self.end(ctx, state, begun, ran).await
    }

    /// Before the executor: the turn's checkpoint before its first change,
    /// the write session, the declared files and the roots' tree. `Err`
    /// is the call's result when it cannot run.
    pub(super) async fn begin<'c>(
        &self,
        ctx: &Ctx<'_>,
        state: &mut RunState,
        call: Pending<'c>,
    ) -> Result<Begun<'c>, CallResult> {
        let Pending {
            id,
            tool,
            args,
            write,
            trace,
            ..
        } = call;
        let mutates = tool.executor.mutates(state, &args);
        // A tool whose grant forbids writing never runs a mutating call.
        if mutates && !tool.access.write {
            return Err(CallResult::refused(no_write_grant(tool)).traced(trace));
        }
        let roots = write_roots(mutates, write.as_ref());
        self.checkpoint_first_change(ctx, state, mutates).await;
        let session = match open_session(ctx, state, &roots, write).await {
            Ok(session) => session,
            Err(why) => return Err(CallResult::refused(why).traced(trace)),
        };
        let changes = if mutates {
            ChangeSet::before(&ctx.ws, &tool.spec, &args, &roots)
        } else {
            ChangeSet::none()
        };
        Ok(Begun {
            id,
            tool,
            args,
            trace,
            mutates,
            roots,
            session,
            changes,
        })
    }

    /// The executor of a begun call, its access narrowed to where the
    /// call is made (the task's state read-only: calls that run together
    /// share it; `alongside` when they do).
    pub(super) async fn execute_begun(
        &self,
        ctx: &Ctx<'_>,
        state: &RunState,
        b: &Begun<'_>,
        alongside: bool,
    ) -> Result<Outcome, TaskError> {
        let access = ctx.site.narrow(&b.tool.access);
        b.tool
            .executor
            .run(Invocation {
                agent: &self.agent.services,
                ctx,
                state,
                call_id: b.id,
                args: &b.args,
                write_roots: &b.roots,
                changes: &b.changes,
                access: &access,
                alongside,
            })
            .await
    }

    /// After the executor: the guard's report, the diff, the trace, the
    /// post-tool hooks and the call's effect on the task.
    pub(super) async fn end(
        &self,
        ctx: &Ctx<'_>,
        state: &mut RunState,
        b: Begun<'_>,
        ran: Result<Outcome, TaskError>,
    ) -> Result<CallResult, TaskError> {
        let Begun {
            tool,
            args,
            trace: gates,
            mutates,
            session,
            changes,
            ..
        } = b;
        let spec = &tool.spec;
        // The guard runs whatever became of the call.
        let (report, lease) = close_session(session);
        if report.violated() {
            crate::telemetry::spans::note(|| {
                let n = |v: usize| i64::try_from(v).unwrap_or(i64::MAX);
                vec![
                    opentelemetry::KeyValue::new(
                        "roost.write_guard.undone",
                        n(report.reverted.len()),
                    ),
                    opentelemetry::KeyValue::new(
                        "roost.write_guard.not_undone",
                        n(report.failed.len()),
                    ),
                ]
            });
        }
        let mut outcome = ran?;
        let changes = changes.settle(&ctx.ws);
        let diff = changes.diff();
        let changed = changes.paths();
        if mutates && ctx.site.is_task() && !changed.is_empty() {
            self.after_change(ctx, changed.clone()).await;
        }
        // What the call changed is read: other calls may write there now.
        drop(lease);
        let subject = TraceSubject {
            ctx,
            state,
            spec,
            args: &args,
        };
        // The gates' entries first, then the executor's, then the after stage's.
        let mut trace = gates;
        trace.append(&mut outcome.trace);
        if mutates && intents::enabled_in(&ctx.ws) {
            trace.push(trace_mutation(&subject, &changes, &mut outcome));
        }
        let violated = report_violation(&subject, &report, &mut outcome, &mut trace);
        if !mutates && ctx.site.narrow(&tool.access).read {
            self.unsaved_buffers(ctx, spec, &args, &mut outcome).await;
        }
        self.post_hooks(ctx, state, spec, &args, &outcome.result, &changed)
            .await;
        let (completed, abort) = apply_effect(state, outcome.effect.take());
        let mut r = result_of(outcome, tool.is_native() || violated, !ctx.site.is_task());
        r.completed = completed;
        r.abort = abort;
        r.diff = diff.map(|d| roost_secrets::redact(&d).into_owned());
        r.trace = trace;
        Ok(r)
    }

    /// Take the turn's checkpoint before its first change; a call outside a task has no turn.
    async fn checkpoint_first_change(&self, ctx: &Ctx<'_>, state: &mut RunState, mutates: bool) {
        if mutates && !state.checkpointed && ctx.site.is_task() {
            state.checkpointed = true;
            self.checkpoint(ctx).await;
        }
    }
}

/// Why a mutating call of a tool installed without write access cannot run.
fn no_write_grant(tool: &RegisteredTool) -> String {
    format!(
        "plugin `{}` was not granted write access at install; `{}` cannot run",
        tool.provider(),
        tool.spec.name
    )
}

/// Where a mutating call may write: the intent gate's roots, else the whole workspace; none if it does not.
fn write_roots(mutates: bool, write: Option<&WriteScope>) -> Vec<PathBuf> {
    if !mutates {
        return Vec::new();
    }
    match write {
        Some(w) => w.roots.clone(),
        None => vec![PathBuf::from(".")],
    }
}

/// Open the call's write session (lease, then guard) on `roots`; none without roots, `Err` why it cannot run.
async fn open_session(
    ctx: &Ctx<'_>,
    state: &RunState,
    roots: &[PathBuf],
    write: Option<WriteScope>,
) -> Result<Option<WriteSession>, String> {
    if roots.is_empty() {
        return Ok(None);
    }
    let rule = WriteRule {
        scope: state.intent.as_ref().map(|(_, s)| s.clone()),
        approved: write.map(|w| w.approved).unwrap_or_default(),
        bound: state.bound.clone(),
    };
    match WriteSession::open(&ctx.ws, roots, rule, ctx.config.guard_budget).await {
        Ok(s) => Ok(Some(s)),
        Err(e) => Err(e.to_string()),
    }
}

/// Close the write session: what the guard undid, and the lease, held until the changes are read.
fn close_session(session: Option<WriteSession>) -> (GuardReport, Option<WriteLease>) {
    match session.map(WriteSession::close) {
        Some((report, lease)) => (report, Some(lease)),
        None => (Default::default(), None),
    }
}

/// What a call's trace entries name: its task, intent and mode, its tool and arguments.
struct TraceSubject<'a> {
    /// The task.
    ctx: &'a Ctx<'a>,
    /// Its intent and mode.
    state: &'a RunState,
    /// The tool called.
    spec: &'a ToolSpec,
    /// The call's arguments.
    args: &'a Value,
}

impl TraceSubject<'_> {
    /// A trace entry of `kind` about the call, stamped now.
    fn entry(&self, kind: TraceKind) -> TraceEntry {
        TraceEntry::now(
            kind,
            &self.ctx.task.id,
            self.state.intent_id(),
            &self.state.mode.slug,
            &self.spec.name,
            self.args,
        )
    }
}

/// The mutation entry: the declared files' changes, what else the call changed, and its error.
fn trace_mutation(
    subject: &TraceSubject<'_>,
    changes: &Settled,
    outcome: &mut Outcome,
) -> TraceEntry {
    let mut entry = subject.entry(TraceKind::Mutation);
    entry.files = changes.trace_files();
    entry.detail = outcome.detail.take();
    if let Err(e) = &outcome.result {
        let error = format!("error {}: {}", e.code, e.message);
        entry.detail = Some(match entry.detail.take() {
            Some(d) => format!("{d}; {error}"),
            None => error,
        });
    }
    entry
}

/// Make writes the guard undid the call's error (and a violation entry); whether there were any.
fn report_violation(
    subject: &TraceSubject<'_>,
    report: &GuardReport,
    outcome: &mut Outcome,
    trace: &mut Vec<TraceEntry>,
) -> bool {
    let (ctx, spec) = (subject.ctx, subject.spec);
    let Some(v) = write_session::violation(report, &spec.name, subject.state.intent_id()) else {
        return false;
    };
    if intents::enabled_in(&ctx.ws) {
        let mut entry = subject.entry(TraceKind::Violation);
        entry.detail = Some(write_session::trace_detail(report));
        trace.push(entry);
    }
    tracing::warn!(task = %ctx.task.id, tool = %spec.name, "scope violation: {}", v.message);
    // What the call said is still the model's to read (a command's output,
    // its exit code).
    if let Ok(out) = &outcome.result
        && !out.text.is_empty()
    {
        outcome.notes.insert(
            0,
            format!(
                "What the call returned before its writes outside the scope were undone:\n{}",
                out.text
            ),
        );
    }
    outcome.result = Err(v);
    outcome.ui_row = None;
    true
}

/// Apply the call's effect on the task (mode, intent, skill, tools); completion and stop are the loop's.
fn apply_effect(state: &mut RunState, effect: Option<Effect>) -> (Option<String>, Option<String>) {
    let (mut completed, mut abort) = (None, None);
    match effect {
        Some(Effect::SwitchMode(mode)) => state.mode = *mode,
        Some(Effect::SelectIntent(selected)) => state.intent = Some(*selected),
        Some(Effect::FollowSkill(focus)) => state.skill = focus,
        Some(Effect::Discover(names)) => state.discovered.extend(names),
        Some(Effect::Complete(result)) => completed = Some(result),
        Some(Effect::Abort(reason)) => abort = Some(reason),
        None => {}
    }
    (completed, abort)
}

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
///
/// The executor's output is kept whole only for a caller outside a task
/// (`keep_output`): a task's loop takes its text as the content, not a
/// copy of it.
fn result_of(outcome: Outcome, plain_errors: bool, keep_output: bool) -> CallResult {
    let Outcome {
        result,
        mistake,
        ui_row,
        notes,
        spent,
        network,
        ..
    } = outcome;
    let is_error = result.is_err();
    let (mut content, output, error) = match result {
        Ok(out) if keep_output => (out.text.clone(), Some(out), None),
        Ok(out) => (out.text, None, None),
        Err(e) if plain_errors => (format!("[ERROR] {}", e.message), None, Some(e)),
        Err(e) => (format!("[ERROR] {}: {}", e.code, e.message), None, Some(e)),
    };
    for note in notes {
        content.push('\n');
        content.push_str(&note);
    }
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
