//! One `session/prompt`: the session's task is created by its first prompt
//! and continued by the next (a question the task waits on — a follow-up,
//! the review of its result, a request for guidance — is answered by the
//! prompt, as in Roo Code). The task's events go to the editor as updates
//! until the turn ends: the task asks a question only a person's words
//! answer (`end_turn`), completes (`end_turn`), pauses at its turn limit
//! (`max_turn_requests`) or is cancelled (`cancelled`). Every approval is a
//! `session/request_permission`.

use std::sync::Arc;

use agent_client_protocol::Error;
use agent_client_protocol::v1::schema::{
    ContentBlock, PermissionOption, PermissionOptionKind, PromptRequest, PromptResponse,
    RequestPermissionRequest, StopReason, ToolCallContent, ToolCallUpdate, ToolCallUpdateFields,
};
use roost_core::engine::{ResumeSpec, TaskSpec};
use roost_core::events::{Envelope, TaskEvent};
use roost_core::session::{Owner, Session};
use roost_core::turn::Lent;
use roost_protocol::display::DisplayItem;
use roost_protocol::{Answer, Ask, Grant, TaskStatus};
use tokio::sync::broadcast::Receiver;
use tokio::sync::broadcast::error::RecvError;

use super::editor::{Asked, Editor};
use super::updates::{Updates, text};
use super::{Acp, invalid};

/// Run one prompt of session `req.session_id` to the end of its turn.
pub(crate) async fn run(
    acp: &Arc<Acp>,
    ed: &Editor,
    req: PromptRequest,
) -> Result<PromptResponse, Error> {
    let (sid, words) = take(acp, &req)?;
    go(acp, ed, &sid, words).await
}

/// Take the prompt `req` or refuse it, before anything runs: its words
/// (text and links within the bound), and no other prompt running in its
/// session (one at a time). Returns the session and the words; the
/// session is busy until [`go`] ends.
pub(crate) fn take(acp: &Acp, req: &PromptRequest) -> Result<(String, String), Error> {
    let sid = req.session_id.0.to_string();
    let words = prompt_text(&req.prompt)?;
    acp.sessions.with(&sid, |s| {
        if s.busy {
            Err(invalid("a prompt is already running in this session"))
        } else {
            s.busy = true;
            Ok(())
        }
    })??;
    Ok((sid, words))
}

/// Longest a prompt waits for a cancelled run of its task to leave the
/// engine before resuming it.
const WIND_DOWN: std::time::Duration = std::time::Duration::from_secs(30);

/// Run the words of a prompt [`take`]n in session `sid`: a slash command,
/// or the session's task, to the end of its turn.
pub(crate) async fn go(
    acp: &Arc<Acp>,
    ed: &Editor,
    sid: &str,
    words: String,
) -> Result<PromptResponse, Error> {
    let ended = match super::commands::parse(&words) {
        Some((name, args)) => super::commands::run(acp, ed, sid, name, args)
            .await
            .map(|()| PromptResponse::new(StopReason::EndTurn)),
        None => turn(acp, ed, sid, words).await,
    };
    let _ = acp.sessions.with(sid, |s| s.busy = false);
    ended
}

/// Longest prompt taken (a model's context holds far less): a 50 MB
/// prompt is refused with the reason, not stored in the task's history.
const MAX_PROMPT_BYTES: usize = 1 << 20;

/// The words of a prompt: its text, and the resources it links by name
/// and URI (Roost reads files itself, within the task's grant).
fn prompt_text(blocks: &[ContentBlock]) -> Result<String, Error> {
    let mut words = String::new();
    for b in blocks {
        match b {
            ContentBlock::Text(t) => words.push_str(&t.text),
            ContentBlock::ResourceLink(l) => {
                words.push_str(&format!("\n[{}]({})", l.name, l.uri));
            }
            _ => {
                return Err(invalid(
                    "Roost takes text and resource links in a prompt (no images, audio or embedded resources)",
                ));
            }
        }
    }
    if words.trim().is_empty() {
        return Err(invalid("the prompt is empty"));
    }
    if words.len() > MAX_PROMPT_BYTES {
        return Err(invalid(format!(
            "the prompt is {} bytes; Roost takes at most {MAX_PROMPT_BYTES} (link large files instead: the task reads them)",
            words.len()
        )));
    }
    Ok(words)
}

/// Why the session service refused, as an ACP error.
fn refused(e: impl std::fmt::Display) -> Error {
    invalid(e.to_string())
}

/// Start or continue the session's task with `words`, then follow it.
async fn turn(
    acp: &Arc<Acp>,
    ed: &Editor,
    sid: &str,
    words: String,
) -> Result<PromptResponse, Error> {
    let session = Session::new(&acp.engine, Owner::Host);
    let (workspace, mode, mode_changed, task, profile, profile_changed) =
        acp.sessions.with(sid, |s| {
            (
                s.workspace.clone(),
                s.mode.clone(),
                std::mem::take(&mut s.mode_changed),
                s.task.clone(),
                s.profile.clone(),
                std::mem::take(&mut s.profile_changed),
            )
        })?;
    let endpoint = acp.endpoint(profile.as_deref());
    // The editor's MCP servers not trusted yet are asked about first.
    super::mcp::trust(acp, ed, sid).await?;
    // What the session lends its task: the editor's MCP servers, and its
    // unsaved buffers when it offers them.
    let lent = Lent {
        mcp: acp.sessions.with(sid, |s| s.mcp.clone())?,
        buffers: ed.buffers(
            sid,
            acp.reads_buffers.load(std::sync::atomic::Ordering::Acquire),
        ),
    };
    let lends = lent.mcp.is_some() || lent.buffers.is_some();
    // What the task cost before this turn (the editor shows the total).
    let spent = match task.as_deref() {
        Some(id) => session.task(id).await.map_or(0.0, |l| l.task.cost),
        None => 0.0,
    };
    let mut held = None;
    let (id, rx) = match task {
        None => {
            let created = session
                .create(&TaskSpec {
                    prompt: words,
                    workspace: workspace.clone(),
                    mode,
                    approval: acp.settings.approval.clone(),
                    max_turns: acp.settings.max_turns,
                    delegation: Default::default(),
                    endpoint: endpoint.clone(),
                    traceparent: None,
                })
                .await
                .map_err(refused)?;
            let id = created.id().to_owned();
            acp.sessions.with(sid, |s| s.task = Some(id.clone()))?;
            if lends {
                session.lend(&id, lent.clone()).await.map_err(refused)?;
            }
            let rx = session.live(&id).await.map_err(refused)?.subscribe();
            session.start(&id).await.map_err(refused)?;
            (id, rx)
        }
        Some(id) => {
            let waiting = session
                .task(&id)
                .await
                .is_ok_and(|l| l.task.status == TaskStatus::WaitingForInput);
            // A question the task waits on here is answered by the words.
            let open = session.asks(&id, true).await.ok().and_then(|asks| {
                asks.into_iter()
                    .find(|a| ends_turn(&a.ask, a.task_id != id))
            });
            match (open, session.live(&id).await) {
                (Some(open), Ok(bus)) => {
                    let rx = bus.subscribe();
                    session
                        .answer(&open.task_id, &open.ask_id, Answer::Text { text: words })
                        .await
                        .map_err(refused)?;
                    (id, rx)
                }
                // Not running here (stopped, or run by another process):
                // it goes on from its history. A question it waited on is
                // asked again, and the words answer it then.
                (_, live) => {
                    // A cancelled run says so before it has left the
                    // engine: a prompt right after the cancel waits for it
                    // to wind down (bounded) rather than find it "started
                    // already".
                    if live.is_ok() {
                        let _ = tokio::time::timeout(WIND_DOWN, session.wait(&id)).await;
                    }
                    let message = if waiting {
                        held = Some(words);
                        None
                    } else {
                        Some(words)
                    };
                    session
                        .resume(
                            &id,
                            &ResumeSpec {
                                // A profile chosen since the task last ran
                                // is the one it goes on with.
                                endpoint: if profile_changed {
                                    endpoint.clone()
                                } else {
                                    acp.settings.endpoint.clone()
                                },
                                approval: acp.settings.approval.clone(),
                                max_turns: acp.settings.max_turns,
                                message,
                                mode: mode_changed.then_some(mode),
                            },
                        )
                        .await
                        .map_err(refused)?;
                    if lends {
                        session.lend(&id, lent.clone()).await.map_err(refused)?;
                    }
                    let rx = session.live(&id).await.map_err(refused)?.subscribe();
                    session.start(&id).await.map_err(refused)?;
                    (id, rx)
                }
            }
        }
    };
    Follow {
        acp,
        ed,
        sid,
        session: &session,
        root: &id,
        display: session.display(),
        updates: Updates::new(&workspace).spent(spent),
        pending: Vec::new(),
        held,
    }
    .run(rx)
    .await
}

/// Whether `ask` is answered by a person's words, so it ends the turn: a
/// question, a request for guidance, the review of the session's result.
/// A subtask's result is accepted or not (Roo's "finish subtask"), as a
/// permission.
fn ends_turn(ask: &Ask, subtask: bool) -> bool {
    match ask {
        Ask::Followup { .. } | Ask::Guidance { .. } => true,
        Ask::Completion { .. } => !subtask,
        Ask::Tool { .. } | Ask::Scope { .. } | Ask::Hook { .. } => false,
    }
}

/// Following a task through one turn.
struct Follow<'a> {
    acp: &'a Arc<Acp>,
    ed: &'a Editor,
    sid: &'a str,
    session: &'a Session<'a>,
    /// The session's task (its subtasks' events come through it too).
    root: &'a str,
    display: roost_protocol::display::Display,
    updates: Updates,
    /// Calls asked for and not yet approved: `(task, call id, tool)`.
    pending: Vec<(String, String, String)>,
    /// The prompt's words, for the question a resumed task asks again.
    held: Option<String>,
}

impl Follow<'_> {
    async fn run(mut self, mut rx: Receiver<Arc<Envelope>>) -> Result<PromptResponse, Error> {
        loop {
            let env = match rx.recv().await {
                Ok(env) => env,
                Err(RecvError::Lagged(n)) => {
                    // Questions among the missed events are still open:
                    // ask them now.
                    tracing::warn!(task = %self.root, "the editor's view fell {n} events behind");
                    if let Some(stop) = self.open_questions().await? {
                        return Ok(PromptResponse::new(stop));
                    }
                    continue;
                }
                Err(RecvError::Closed) => {
                    return match self.session.wait(self.root).await {
                        Ok(outcome) => Ok(PromptResponse::new(stop_of(&outcome))),
                        Err(e) => Err(refused(e)),
                    };
                }
            };
            self.show(&env)?;
            if let Some(stop) = self.on(&env).await? {
                return Ok(PromptResponse::new(stop));
            }
        }
    }

    /// Send what `env` shows: all of the session's own task; of a subtask
    /// (or a parallel group's child, or theirs) its calls and questions.
    fn show(&mut self, env: &Envelope) -> Result<(), Error> {
        let items = self.display.items(env);
        let nested = env.task_id != self.root;
        for item in items {
            let item = if nested {
                match nested_item(&env.task_id, item) {
                    Some(item) => item,
                    None => continue,
                }
            } else {
                item
            };
            for update in self.updates.of(&item) {
                self.ed.notify(self.sid, update)?;
            }
        }
        Ok(())
    }

    /// What `env` does to the turn: a question, the end of the run.
    async fn on(&mut self, env: &Envelope) -> Result<Option<StopReason>, Error> {
        let root = env.task_id == self.root;
        match &env.event {
            TaskEvent::ToolCallRequested { id, tool, .. } => {
                self.pending
                    .push((env.task_id.clone(), id.clone(), tool.clone()));
            }
            TaskEvent::ToolCallApproved { id, .. }
            | TaskEvent::ToolCallDenied { id, .. }
            | TaskEvent::ToolCallResult { id, .. } => {
                self.pending
                    .retain(|(t, c, _)| !(t == &env.task_id && c == id));
            }
            TaskEvent::AskRequired { ask_id, ask, .. } => {
                return self.ask(&env.task_id, ask_id, ask).await;
            }
            TaskEvent::Completed { .. } if root => return Ok(Some(StopReason::EndTurn)),
            TaskEvent::Paused { .. } if root => return Ok(Some(StopReason::MaxTurnRequests)),
            TaskEvent::Aborted { .. } if root => return Ok(Some(StopReason::Cancelled)),
            TaskEvent::Failed { error } if root => {
                return Err(
                    Error::internal_error().data(serde_json::Value::String(format!(
                        "the task failed: {error}"
                    ))),
                );
            }
            _ => {}
        }
        Ok(None)
    }

    /// Put question `ask_id` of `task`: an approval to the editor; a
    /// question for words ends the turn (the next prompt answers it).
    async fn ask(
        &mut self,
        task: &str,
        ask_id: &str,
        ask: &Ask,
    ) -> Result<Option<StopReason>, Error> {
        if ends_turn(ask, task != self.root) {
            let Some(words) = self.held.take() else {
                return Ok(Some(StopReason::EndTurn));
            };
            // The question the task waited on, asked again: the words answer it.
            if let Err(e) = self
                .session
                .answer(task, ask_id, Answer::Text { text: words })
                .await
            {
                tracing::info!(task = %task, "answer not taken: {e}");
            }
            return Ok(None);
        }
        let answer = self.permission(task, ask).await;
        if let Err(e) = self.session.answer(task, ask_id, answer).await {
            // Answered elsewhere meanwhile, or the task ended.
            tracing::info!(task = %task, "answer not taken: {e}");
        }
        Ok(None)
    }

    /// After a lag: put the open questions of the task's tree.
    async fn open_questions(&mut self) -> Result<Option<StopReason>, Error> {
        let open = self.session.asks(self.root, true).await.unwrap_or_default();
        for a in open {
            if let Some(stop) = self.ask(&a.task_id.clone(), &a.ask_id, &a.ask).await? {
                return Ok(Some(stop));
            }
        }
        Ok(None)
    }

    /// The editor's answer to an approval, or a denial when it cannot
    /// answer in time (it shows no UI, or it went away): never a hang.
    async fn permission(&mut self, task: &str, ask: &Ask) -> Answer {
        let (tool, title, preview, always) = match ask {
            Ask::Tool {
                tool, preview, why, ..
            } => (
                tool.clone(),
                match why {
                    Some(w) => format!("Run {tool}? ({w})"),
                    None => format!("Run {tool}?"),
                },
                preview.clone(),
                true,
            ),
            Ask::Scope {
                intent,
                tool,
                path,
                preview,
            } => (
                tool.clone(),
                format!("{tool} writes {path}, outside the owned scope of {intent}: allow once?"),
                preview.clone(),
                false,
            ),
            Ask::Hook {
                hook,
                tool,
                question,
            } => (
                tool.clone(),
                format!("hook {hook} asks about {tool}: {question}"),
                None,
                false,
            ),
            // Not approvals: answered by words (see `ends_turn`).
            // A subtask's result: accepted, it goes back to the task that
            // started the subtask.
            Ask::Completion { result } => (
                "attempt_completion".to_owned(),
                "A subtask finished: accept its result?".to_owned(),
                Some(result.clone()),
                false,
            ),
            // Not approvals: answered by words (see `ends_turn`).
            Ask::Followup { .. } | Ask::Guidance { .. } => {
                return Answer::No { feedback: None };
            }
        };
        let rejected = self
            .acp
            .sessions
            .with(self.sid, |s| s.rejected.contains(&tool))
            .unwrap_or(false);
        if rejected {
            return Answer::No {
                feedback: Some(format!(
                    "The user rejected `{tool}` for the rest of this session; do the work another way."
                )),
            };
        }
        let call = self
            .pending
            .iter()
            .find(|(t, _, name)| t == task && name == &tool)
            .map(|(t, c, _)| {
                if t == self.root {
                    c.clone()
                } else {
                    nested_id(t, c)
                }
            })
            .unwrap_or_else(|| format!("ask-{tool}"));
        let mut fields = ToolCallUpdateFields::new().title(title);
        if let Some(p) = preview {
            // An edit's preview as the editor's diff; any other as text.
            let diffs = self.updates.diffs(&p);
            self.updates.keep_diffs(&call, &diffs);
            fields = fields.content(if diffs.is_empty() {
                vec![ToolCallContent::from(text(p))]
            } else {
                diffs.into_iter().map(ToolCallContent::Diff).collect()
            });
        }
        let mut options = vec![PermissionOption::new(
            "allow_once",
            "Allow",
            PermissionOptionKind::AllowOnce,
        )];
        if always {
            options.push(PermissionOption::new(
                "allow_always",
                format!("Always allow {tool} in this workspace"),
                PermissionOptionKind::AllowAlways,
            ));
        }
        options.push(PermissionOption::new(
            "reject_once",
            "Reject",
            PermissionOptionKind::RejectOnce,
        ));
        if always {
            options.push(PermissionOption::new(
                "reject_always",
                format!("Reject {tool} for the rest of this session"),
                PermissionOptionKind::RejectAlways,
            ));
        }
        let request = RequestPermissionRequest::new(
            self.sid.to_owned(),
            ToolCallUpdate::new(call, fields),
            options,
        );
        let timeout = self.acp.settings.ask_timeout;
        let chosen = match self.ed.ask(request, timeout).await {
            Asked::TimedOut => {
                return Answer::No {
                    feedback: Some(format!(
                        "Denied: the editor did not answer the permission request within {} s.",
                        timeout.as_secs()
                    )),
                };
            }
            Asked::Failed(e) => {
                return Answer::No {
                    feedback: Some(format!("Denied: the editor could not be asked ({e}).")),
                };
            }
            // The prompt was cancelled while the question was open.
            Asked::Cancelled => return Answer::No { feedback: None },
            Asked::Chosen(option) => option,
        };
        match chosen.as_str() {
            "allow_once" => Answer::Yes,
            "allow_always" if always => {
                let grant = Grant::Tool(tool);
                let workspace = self
                    .acp
                    .sessions
                    .with(self.sid, |s| s.workspace.clone())
                    .ok();
                if let Some(ws) = workspace
                    && let Err(e) = self.acp.engine.approvals().save(&ws, &grant)
                {
                    tracing::warn!("the approval was not saved: {e}");
                }
                Answer::Always { grant }
            }
            "reject_always" if always => {
                let _ = self.acp.sessions.with(self.sid, |s| {
                    s.rejected.insert(tool.clone());
                });
                Answer::No { feedback: None }
            }
            "reject_once" => Answer::No { feedback: None },
            other => Answer::No {
                feedback: Some(format!(
                    "Denied: the editor chose `{other}`, which is not an option Roost offered."
                )),
            },
        }
    }
}

/// How a run's outcome ends the turn.
fn stop_of(outcome: &roost_core::task::TaskOutcome) -> StopReason {
    use roost_core::task::TaskOutcome;
    match outcome {
        TaskOutcome::Completed { .. } => StopReason::EndTurn,
        TaskOutcome::Paused { .. } => StopReason::MaxTurnRequests,
        TaskOutcome::Aborted { .. } => StopReason::Cancelled,
        TaskOutcome::Failed { .. } => StopReason::Refusal,
    }
}

/// A subtask's item as its session shows it: its calls as calls of the
/// session (marked, their ids scoped by the subtask: two tasks may both
/// have a `call_0_0`), and its questions (its result is a permission); its reply, plan and usage stay
/// in the subtask (its result comes back as the delegating call's).
fn nested_item(task: &str, item: DisplayItem) -> Option<DisplayItem> {
    match item {
        DisplayItem::Call { mut call } => {
            call.id = nested_id(task, &call.id);
            call.title = format!("↳ {}", call.title);
            Some(DisplayItem::Call { call })
        }
        DisplayItem::CallUpdate {
            id,
            status,
            content,
        } => Some(DisplayItem::CallUpdate {
            id: nested_id(task, &id),
            status,
            content,
        }),
        // Its result is a permission, not a message.
        DisplayItem::Question {
            ask: Ask::Completion { .. },
            ..
        } => None,
        DisplayItem::Question { .. } => Some(item),
        _ => None,
    }
}

/// The session's id of call `call` of subtask `task`.
fn nested_id(task: &str, call: &str) -> String {
    format!("{task}/{call}")
}
