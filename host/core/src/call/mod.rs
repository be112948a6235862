//! The one dispatch: one tool call of any kind (a host-native tool, a
//! component plugin's, later an MCP server's, a skill's, a command), from
//! the model's arguments to its tool_result. Every gate in its order, then
//! the call's write session, its executor ([`crate::tools::ToolExecutor`])
//! and the after stage ([`run`]), the same for every kind. Each gate
//! returns a [`Verdict`]; this module alone decides what a verdict does,
//! so the order below is the whole policy:
//!
//! 1. **arguments**: well-formed JSON, else a mistake the model fixes;
//! 2. **known tool**: in the task's [`Registry`](crate::tools::Registry)
//!    (plugins and host-native tools alike);
//! 3. **path gate** ([`paths`]): declared paths normalised, and refused when
//!    they leave the workspace, are `.rooignore`d or name authority files;
//! 4. **mode gate**: the mode's tool groups and file patterns, and the
//!    tools a skill being followed allows;
//! 5. **schema gate**: the tool's JSON schema, every violation listed;
//! 6. **repetition gate**: the same call N times in a row asks for guidance;
//! 7. **intent gate** (destructive tools): an active intent, declared paths
//!    in its owned scope or widened once by a person;
//! 8. **mode hooks** ([`hook_gate`]): allow, deny, ask, rewrite. A rewrite
//!    passes gates 3–5 and 7 again, once;
//! 9. **approval gate**: the policy, an earlier yes, or a question with
//!    what the executor's dry run would change (an edit's diff);
//!
//! then [`run`]: a [`write_session`] (lease and write guard) when the call
//! mutates, the executor, and the after stage (what was undone, the diff,
//! the trace entries, post-tool hooks, the result).

mod agent;
mod buffers;
pub mod change_set;
pub mod direct;
pub(crate) mod gates;
pub mod grant;
mod hook_gate;
mod observed;
pub mod paths;
mod run;
mod scope;
mod together;
pub mod write_session;

use std::path::PathBuf;

use serde_json::Value;

use crate::asks::{Approval, Ask, Resume};
use crate::events::TaskEvent;
use crate::intents::TraceEntry;
use crate::llm::AssembledCall;
use crate::store::Step;
use crate::tools::{ErrorCode, Needs, PreviewCall, RegisteredTool, Registry, ToolError};
use crate::turn::{Ctx, RunState, TaskError};
pub use agent::Agent;
use gates::schema_violations;
use opentelemetry::context::FutureExt as _;
use roost_protocol::{Grant, UiRow, UiSubtype};

/// The dispatch of one task's calls: every gate in its order, then the
/// call's write session, its executor and the after stage. It runs with
/// the task's services ([`Agent`], which it dereferences to).
pub struct Dispatch<'a> {
    agent: &'a Agent,
    /// The tools the task is offered (the agent's, or a task's overlay).
    registry: &'a Registry,
}

impl<'a> Dispatch<'a> {
    /// The dispatch of calls run with `agent`'s services and tools.
    pub fn new(agent: &'a Agent) -> Self {
        Self {
            agent,
            registry: &agent.registry,
        }
    }

    /// The dispatch of calls run with `agent`'s services, of the tools in
    /// `registry` (the agent's with a task's own laid over them).
    pub fn over(agent: &'a Agent, registry: &'a Registry) -> Self {
        Self { agent, registry }
    }
}

impl<'a> Dispatch<'a> {
    /// One call through the gates: its result when a gate settled it (a
    /// mistake, a refusal, a denial), else the call ready to run.
    async fn prepare<'c>(
        &self,
        ctx: &Ctx<'_>,
        state: &mut RunState,
        call: &'c AssembledCall,
    ) -> Result<Prepared<'c>, TaskError>
    where
        'a: 'c,
    {
        let registry: &'a Registry = self.registry;
        // The reply that asked for the call announced it (event and UI row).
        let args = match &call.args {
            Ok(a) => a.clone(),
            Err(msg) => {
                return Ok(Prepared::Done(CallResult {
                    ui_row: Some((UiSubtype::Error, msg.clone())),
                    ..CallResult::mistake(format!(
                        "[ERROR] {msg}\nSend the call again with valid JSON arguments."
                    ))
                }));
            }
        };
        let Some(tool) = registry.get(&call.name) else {
            let known: Vec<&str> = registry.iter().map(|t| t.spec.name.as_str()).collect();
            return Ok(Prepared::Done(CallResult::mistake(format!(
                "[ERROR] Tool `{}` does not exist. Available tools: {}.",
                call.name,
                known.join(", ")
            ))));
        };
        let mut pending = Pending {
            id: &call.id,
            tool,
            args,
            write: None,
            approved: false,
            trace: Vec::new(),
        };
        let mut rewritten = false;
        let mut next = 0;
        while let Some(&gate) = ORDER.get(next) {
            next += 1;
            // After a rewrite only the gates that judge arguments run again.
            if rewritten && matches!(gate, Gate::Repetition | Gate::Hooks) {
                continue;
            }
            let verdict = match self.judge(gate, ctx, state, &mut pending).await {
                Err(TaskError::NoPerson(why)) => Verdict::refuse(CallResult::refused(why)),
                v => v?,
            };
            match verdict {
                Verdict::Proceed => {}
                Verdict::Approved => pending.approved = true,
                Verdict::Rewrite { args, approved } => {
                    pending.args = args;
                    pending.approved |= approved;
                    if !rewritten {
                        rewritten = true;
                        next = 0;
                    }
                }
                Verdict::Ask(ask) => {
                    if let Some(refused) = self.put(ctx, state, &mut pending, ask).await? {
                        return Ok(Prepared::Done(refused.traced(pending.trace)));
                    }
                }
                Verdict::Refuse(r) => return Ok(Prepared::Done((*r).traced(pending.trace))),
            }
        }
        Ok(Prepared::Ready(pending))
    }
}

impl std::ops::Deref for Dispatch<'_> {
    type Target = Agent;

    fn deref(&self) -> &Agent {
        self.agent
    }
}

/// Most lines of a tool's output that its UI row keeps.
const PREVIEW_LINES: usize = 12;
/// Most bytes of a tool's output that its UI row keeps.
const PREVIEW_BYTES: usize = 1024;

/// What the UI history keeps of a tool's output: its first lines and a
/// count of the rest, as the transcripts of Claude Code and Codex show a
/// call. The whole output is in the API history (what the model saw) and
/// in the `tool_call_result` event; storing it a third time, for a
/// `read_file` of a large file, cost as much as the other two.
pub(crate) fn ui_preview(output: &str) -> String {
    use std::fmt::Write as _;
    let mut end = 0;
    for (n, line) in output.split_inclusive('\n').enumerate() {
        if n == PREVIEW_LINES || end + line.len() > PREVIEW_BYTES {
            break;
        }
        end += line.len();
    }
    if end == 0 && !output.is_empty() {
        // One long first line: cut it at a character boundary.
        end = output.floor_char_boundary(PREVIEW_BYTES.min(output.len()));
    }
    if end >= output.len() {
        return output.to_owned();
    }
    let rest = &output[end..];
    // As `rest.lines().count()`, the newlines found by memchr's vector
    // search: each ends a line, and so does the end of a last line
    // without one.
    let newlines = memchr::memchr_iter(b'\n', rest.as_bytes()).count();
    let lines = newlines + usize::from(!rest.ends_with('\n'));
    let mut preview = String::with_capacity(end + 48);
    preview.push_str(&output[..end]);
    let _ = write!(
        preview,
        "… ({lines} more line{}, {} bytes in all)",
        if lines == 1 { "" } else { "s" },
        output.len()
    );
    preview
}

/// The result of one call, ready to become a tool_result block.
pub struct CallResult {
    /// What the model gets.
    pub content: String,
    /// Whether the call failed.
    pub is_error: bool,
    /// Whether the failure is the model's mistake (counts towards the
    /// mistake limit).
    pub mistake: bool,
    /// The person accepted this result: the task is complete.
    pub completed: Option<String>,
    /// Stop the task after this call, with this reason.
    pub abort: Option<String>,
    /// The error as front-ends get it, when the call failed.
    pub error: Option<ToolError>,
    /// Diff of the files the call changed.
    pub diff: Option<String>,
    /// The call's UI row (subtype, text), recorded with the result in one
    /// transaction; an error without one gets one from the loop, so
    /// `history show` holds every gate error.
    pub ui_row: Option<(UiSubtype, String)>,
    /// Trace entries of the call: recorded with its result, in the step
    /// that makes the result durable, and appended to the trace after it.
    pub trace: Vec<TraceEntry>,
    /// Tokens and cost spent on the call's behalf (a subtask's), added to
    /// the task's totals with the result.
    pub spent: Option<(crate::llm::Usage, f64)>,
    /// The requests the call sent out, credentials redacted.
    pub network: Vec<roost_sandbox::plugins::NetworkRecord>,
    /// The executor's output as it gave it (its structured data too), when
    /// the call ran and succeeded outside a task: such a caller gets it
    /// whole. A task's loop needs only its text, which is `content`.
    pub output: Option<crate::tools::ToolOutput>,
}

impl CallResult {
    /// This result with the gates' trace entries before its own.
    fn traced(mut self, mut gates: Vec<TraceEntry>) -> Self {
        gates.append(&mut self.trace);
        self.trace = gates;
        self
    }

    /// A successful result.
    pub fn ok(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: false,
            mistake: false,
            completed: None,
            abort: None,
            error: None,
            diff: None,
            ui_row: None,
            trace: Vec::new(),
            spent: None,
            network: Vec::new(),
            output: None,
        }
    }

    /// A failed call.
    pub fn error(content: impl Into<String>) -> Self {
        Self {
            is_error: true,
            ..Self::ok(content)
        }
    }

    /// The model's mistake, which it fixes.
    pub fn mistake(content: impl Into<String>) -> Self {
        Self {
            mistake: true,
            ..Self::error(content)
        }
    }

    /// The result as front-ends see it: the output, or the error (the
    /// executor's own, or for a refusal by a gate, its words).
    pub fn event_result(&self) -> Result<String, ToolError> {
        if !self.is_error {
            return Ok(self.content.clone());
        }
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let code = if self.mistake {
            ErrorCode::InvalidArgs
        } else {
            ErrorCode::PermissionDenied
        };
        Err(ToolError::new(
            code,
            self.content
                .strip_prefix("[ERROR] ")
                .unwrap_or(&self.content),
        ))
    }
}

/// Where a destructive call under an intent may write.
struct WriteScope {
    /// Directories granted read-write.
    roots: Vec<PathBuf>,
    /// Paths outside the scope the user approved for this call only.
    approved: Vec<String>,
}

/// What a gate made of a call.
pub(crate) enum Verdict {
    /// Go on to the next gate.
    Proceed,
    /// Go on; a person already said yes to this very call (a hook's or a
    /// scope question), so the approval gate asks nothing more.
    Approved,
    /// Go on with these arguments (a hook rewrote them): the gates that
    /// judge arguments run again, once.
    Rewrite {
        /// The new arguments.
        args: Value,
        /// Whether a person said yes along the way.
        approved: bool,
    },
    /// Ask a person: yes approves the call, no refuses it.
    Ask(Ask),
    /// Do not run the call; this is its result.
    Refuse(Box<CallResult>),
}

impl Verdict {
    /// Refuse the call with `result`.
    fn refuse(result: CallResult) -> Self {
        Self::Refuse(Box::new(result))
    }
}

/// The gates, in the order a call meets them (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gate {
    Paths,
    Mode,
    Schema,
    Repetition,
    Intent,
    Hooks,
    Approval,
}

const ORDER: [Gate; 7] = [
    Gate::Paths,
    Gate::Mode,
    Gate::Schema,
    Gate::Repetition,
    Gate::Intent,
    Gate::Hooks,
    Gate::Approval,
];

/// A call on its way through the gates.
struct Pending<'c> {
    /// The model's call id.
    id: &'c str,
    /// The tool and what runs it.
    tool: &'c RegisteredTool,
    /// Its arguments (normalised and possibly rewritten by now).
    args: Value,
    /// Where it may write, once the intent gate has decided.
    write: Option<WriteScope>,
    /// Whether a person has said yes to it.
    approved: bool,
    /// Trace entries of the gates it passed (a hook's verdict, a widened
    /// scope): recorded with the call's result, like the after stage's.
    trace: Vec<TraceEntry>,
}

/// Say on the call's span who let it run: the task's approval `policy`
/// (its auto-approvals and the saved ones) or a `person` (asked by the
/// gate, or by a hook).
fn approved_by(who: &'static str) {
    crate::telemetry::spans::note(|| vec![opentelemetry::KeyValue::new("roost.approval", who)]);
}

/// What the gates made of a call.
enum Prepared<'c> {
    /// Its result: a gate settled it.
    Done(CallResult),
    /// Past every gate, ready to run.
    Ready(Pending<'c>),
}

impl Dispatch<'_> {
    /// One call through the gates, then its write session, its executor
    /// and the after stage.
    pub async fn handle(
        &self,
        ctx: &Ctx<'_>,
        state: &mut RunState,
        call: &AssembledCall,
    ) -> Result<CallResult, TaskError> {
        let mut observed = self.observe(ctx, state, call);
        let mut ran = false;
        let handled = async {
            match self.prepare(ctx, state, call).await? {
                Prepared::Done(r) => Ok(r),
                Prepared::Ready(pending) => {
                    ran = true;
                    self.run(ctx, state, pending).await
                }
            }
        }
        .with_context(observed.context())
        .await;
        if let Ok(r) = &handled {
            observed.ended(r, ran);
        }
        handled
    }

    /// Put a gate's question about `call` to a person: a yes (or an
    /// "always", which widens the task's policy) approves it; a no, or no
    /// one to ask outside a task, is its result.
    async fn put(
        &self,
        ctx: &Ctx<'_>,
        state: &mut RunState,
        call: &mut Pending<'_>,
        ask: Ask,
    ) -> Result<Option<CallResult>, TaskError> {
        // The approval's or the denial's announcement follows at once.
        let answer = match self
            .ask(ctx, Some(call.id), ask, Resume::WithNextStep)
            .await
        {
            Err(TaskError::NoPerson(why)) => return Ok(Some(CallResult::refused(why))),
            answer => answer?.approval(),
        };
        let feedback = match answer {
            Approval::Always(grant) => {
                self.grant(ctx, state, &grant).await?;
                None
            }
            Approval::Approve => None,
            Approval::Deny { feedback } => Some(feedback),
        };
        let Some(feedback) = feedback else {
            approved_by("person");
            call.approved = true;
            ctx.events
                .publish(TaskEvent::ToolCallApproved {
                    id: call.id.to_owned(),
                    auto: false,
                })
                .await;
            return Ok(None);
        };
        self.record_denial(ctx, call.id, &feedback).await?;
        let msg = match feedback.filter(|f| !f.trim().is_empty()) {
            Some(f) => format!(
                "The user denied this operation and provided the following feedback:\n<feedback>\n{f}\n</feedback>"
            ),
            None => "The user denied this operation.".to_owned(),
        };
        Ok(Some(CallResult::error(msg)))
    }

    /// One gate's verdict on `call`.
    async fn judge(
        &self,
        gate: Gate,
        ctx: &Ctx<'_>,
        state: &mut RunState,
        call: &mut Pending<'_>,
    ) -> Result<Verdict, TaskError> {
        let spec = &call.tool.spec;
        Ok(match gate {
            Gate::Paths => self.path_gate(ctx, spec, &mut call.args)?,
            Gate::Mode => {
                let always = call.tool.executor.always_available();
                let checked = state.mode.check(spec, &call.args, always).and_then(|()| {
                    // A skill being followed may limit the tools (its
                    // `allowed-tools`, experimental).
                    match &state.skill {
                        Some(f) if !always && !f.allows(&spec.name) => Err(format!(
                            "`{}` is not among the tools skill `{}` allows ({}); load another skill with \
                             read_skill to work differently",
                            spec.name,
                            f.skill,
                            f.tools.join(", ")
                        )),
                        _ => Ok(()),
                    }
                });
                match checked {
                    Ok(()) => Verdict::Proceed,
                    Err(msg) => Verdict::refuse(CallResult {
                        ui_row: Some((UiSubtype::Error, msg.clone())),
                        ..CallResult::error(format!("[ERROR] {msg}"))
                    }),
                }
            }
            Gate::Schema => match schema_violations(&spec.name, &call.tool.validator, &call.args) {
                Some(msg) => Verdict::refuse(CallResult::mistake(format!("[ERROR] {msg}"))),
                None => Verdict::Proceed,
            },
            Gate::Repetition => self.repetition_gate(ctx, state, call).await?,
            Gate::Intent => self.intent_gate(ctx, state, call).await?,
            Gate::Hooks => {
                self.pre_hooks(
                    ctx,
                    state,
                    (spec, &call.tool.validator),
                    call.id,
                    call.args.clone(),
                    &mut call.trace,
                )
                .await?
            }
            Gate::Approval => self.approval_gate(ctx, state, call).await,
        })
    }

    /// The same call again and again: ask for guidance, which goes to the
    /// model with the refusal; with no one to ask, the task stops.
    async fn repetition_gate(
        &self,
        ctx: &Ctx<'_>,
        state: &mut RunState,
        call: &Pending<'_>,
    ) -> Result<Verdict, TaskError> {
        let name = &call.tool.spec.name;
        if !state.repetition.record(name, &call.args) {
            return Ok(Verdict::Proceed);
        }
        let limit = ctx.config.repetition_limit;
        let reason =
            format!("The model called `{name}` with the same arguments {limit} times in a row.");
        let guidance = self
            .ask(
                ctx,
                Some(call.id),
                Ask::Guidance {
                    reason,
                    repetition: true,
                },
                // The call's refusal is its result, recorded at once.
                Resume::WithNextStep,
            )
            .await?
            .words();
        let mut msg = format!(
            "[ERROR] You have called `{name}` with the same arguments {limit} times in a row. Its result will not \
             change; try a different approach."
        );
        Ok(Verdict::refuse(match guidance {
            Some(g) => {
                msg.push_str(&format!("\n<user_guidance>\n{g}\n</user_guidance>"));
                CallResult::mistake(msg)
            }
            None => CallResult {
                abort: Some(format!(
                    "stopped: the model called `{name}` with the same arguments {limit} times in a row and no one \
                     could give guidance"
                )),
                ..CallResult::mistake(msg)
            },
        }))
    }

    /// A call runs when the policy covers what it needs or a person has
    /// said yes; otherwise a person is asked, shown what the executor's dry
    /// run would change (an edit's diff). A tool that is itself a question
    /// to the person (follow-up, completion) needs nothing.
    async fn approval_gate(&self, ctx: &Ctx<'_>, state: &RunState, call: &Pending<'_>) -> Verdict {
        let tool = call.tool;
        let spec = &tool.spec;
        let group = match tool.executor.needs(state, &call.args) {
            Needs::Nothing => return Verdict::Proceed,
            Needs::Refused(outcome) => {
                let outcome = *outcome;
                let msg = match &outcome.result {
                    Ok(o) => o.text.clone(),
                    Err(e) => e.message.clone(),
                };
                return Verdict::refuse(CallResult {
                    mistake: outcome.mistake,
                    error: outcome.result.err(),
                    ..CallResult::error(format!("[ERROR] {msg}"))
                });
            }
            Needs::Approval(group) => (group, None),
            Needs::Person(group, why) => (group, Some(why)),
        };
        let (group, person_only) = group;
        let covered = person_only.is_none() && state.policy.covers(&spec.name, group);
        if call.approved || covered {
            approved_by(if call.approved { "person" } else { "policy" });
            ctx.events
                .publish(TaskEvent::ToolCallApproved {
                    id: call.id.to_owned(),
                    auto: !call.approved,
                })
                .await;
            return Verdict::Proceed;
        }
        let preview = tool
            .executor
            .preview(PreviewCall {
                agent: &self.agent.services,
                ctx,
                args: &call.args,
            })
            .await;
        let ask = Ask::Tool {
            tool: spec.name.clone(),
            group,
            args: roost_secrets::redact_json(&call.args),
            preview,
            // No rule allows it: a person decides, whatever the policy.
            why: person_only,
        };
        // The very call, asked the very question, approved before an
        // interruption (a subtask's start, run again to follow it): the
        // answer holds.
        if self.approved_before(ctx, call.id, &ask) {
            approved_by("person");
            return Verdict::Proceed;
        }
        Verdict::Ask(ask)
    }

    /// Whether call `call_id` was asked `ask` and approved before.
    fn approved_before(&self, ctx: &Ctx<'_>, call_id: &str, ask: &Ask) -> bool {
        let Ok(payload) = serde_json::to_string(ask) else {
            return false;
        };
        match self
            .store
            .answered_ask(&ctx.task.id, ask.kind(), call_id, &payload)
        {
            Ok(Some(prior)) => prior
                .answer
                .and_then(|a| serde_json::from_str::<crate::asks::Answer>(&a).ok())
                .is_some_and(|a| {
                    matches!(
                        a,
                        crate::asks::Answer::Yes | crate::asks::Answer::Always { .. }
                    )
                }),
            Ok(None) => false,
            Err(e) => {
                tracing::warn!(task = %ctx.task.id, "cannot read earlier answers: {e}");
                false
            }
        }
    }

    /// A person said "always allow" `grant`: the rest of the task runs
    /// such calls without asking, and a resumed task keeps the grant (it
    /// is recorded with the task's settings).
    async fn grant(
        &self,
        ctx: &Ctx<'_>,
        state: &mut RunState,
        grant: &Grant,
    ) -> Result<(), TaskError> {
        state.policy.grant(grant);
        let mut settings = ctx.config.settings();
        settings.approval = state.policy.clone();
        // The run's trace stays recorded for the next run's link.
        settings.trace = ctx.task.settings.as_ref().and_then(|s| s.trace.clone());
        self.store.set_settings(&ctx.task.id, &settings)?;
        tracing::info!(task = %ctx.task.id, "approved for the rest of the task: {}", grant.describe());
        Ok(())
    }

    /// A person denied a call: their words (if any) in the UI history and
    /// the denial's announcement, as one step.
    async fn record_denial(
        &self,
        ctx: &Ctx<'_>,
        call_id: &str,
        feedback: &Option<String>,
    ) -> Result<(), TaskError> {
        let step = Step::new().ui(
            UiRow::say(UiSubtype::UserFeedback),
            feedback.as_deref().unwrap_or("(denied)"),
        );
        let announce = TaskEvent::ToolCallDenied {
            id: call_id.to_owned(),
            feedback: feedback.clone(),
        };
        ctx.commit(&self.store, step, vec![announce]).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{PREVIEW_BYTES, ui_preview};

    /// Short output is kept whole; long output keeps its first lines and
    /// says how much more there is; a long line is cut at a character
    /// boundary.
    #[test]
    fn ui_rows_keep_a_preview_of_long_output() {
        assert_eq!(ui_preview("one\ntwo\n"), "one\ntwo\n");
        assert_eq!(ui_preview(""), "");
        let file: String = (1..=100).map(|i| format!("{i} | line\n")).collect();
        let p = ui_preview(&file);
        assert!(
            p.starts_with("1 | line\n") && p.contains("12 | line\n"),
            "{p}"
        );
        assert!(!p.contains("13 | line"), "{p}");
        assert!(
            p.ends_with(&format!("… (88 more lines, {} bytes in all)", file.len())),
            "{p}"
        );
        // The lines left are counted as `str::lines` counts them.
        for rest in ["a", "a\n", "a\nb", "a\r\nb\r\n", "\n", "\n\n"] {
            let output = format!("{}{rest}", "x".repeat(PREVIEW_BYTES));
            let lines = rest.lines().count();
            assert!(
                ui_preview(&output).contains(&format!(
                    "({lines} more line{}",
                    if lines == 1 { "" } else { "s" }
                )),
                "{rest:?}: {}",
                ui_preview(&output)
            );
        }
        let wide = "é".repeat(2000);
        let p = ui_preview(&wide);
        assert!(
            p.starts_with(&"é".repeat(512)) && p.contains("(1 more line, 4000 bytes in all)"),
            "{p}"
        );
    }
}
