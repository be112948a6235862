//! A tool of a WebAssembly component: each call runs in a fresh sandbox
//! whose grant is the call's and nothing more — the workspace read-only
//! when the plugin may read, the write session's roots read-write, the
//! network its installed grant names (first-party plugins get none) — and
//! every request it made is recorded: a `network` trace entry (when the
//! workspace keeps a trace), a UI row, and a warning for each refusal.

use std::sync::Arc;

use serde_json::Value;

use super::executor::{Invocation, Outcome, PreviewCall, ToolExecutor};
use super::preview;
use crate::events::TaskEvent;
use crate::intents::{self, TraceEntry, redact_record};
use crate::store::Step;
use crate::turn::{RunState, TaskError};
use roost_protocol::{ErrorCode, ToolError, TraceKind, UiRow, UiSubtype};
use roost_sandbox::capability::Grant;
use roost_sandbox::plugins::{LoadedPlugin, NetworkRecord, NetworkReport};
use roost_sandbox::tool::ToolSpec;

/// One tool of a loaded component.
pub struct ComponentTool {
    plugin: Arc<LoadedPlugin>,
    spec: ToolSpec,
}

impl ComponentTool {
    /// The tool `spec` (one of `plugin`'s).
    pub fn new(plugin: Arc<LoadedPlugin>, spec: ToolSpec) -> Self {
        Self { plugin, spec }
    }
}

#[async_trait::async_trait]
impl ToolExecutor for ComponentTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn kind(&self) -> crate::tools::ToolKind {
        crate::tools::ToolKind::Component
    }

    fn provider(&self) -> &str {
        self.plugin.name()
    }

    fn component(&self) -> Option<&Arc<LoadedPlugin>> {
        Some(&self.plugin)
    }

    /// A read runs beside the other reads of its message (each call has
    /// an instance and a sandbox of its own).
    fn concurrent(&self, state: &RunState, args: &Value) -> bool {
        !self.mutates(state, args)
    }

    /// An edit is dry-run by the component itself against copies of the
    /// files it declares, so the person sees the change.
    async fn preview(&self, call: PreviewCall<'_>) -> Option<String> {
        if !self.spec.destructive {
            return None;
        }
        preview::edit_preview(
            &call.agent.engine,
            &self.plugin,
            &self.spec,
            call.args,
            &call.ctx.ws,
            call.ctx.config.limits,
        )
        .await
        .map(|p| roost_secrets::redact(&p).into_owned())
    }

    async fn run(&self, c: Invocation<'_>) -> Result<Outcome, TaskError> {
        let access = c.access;
        let mut grant =
            Grant::on_held(&c.ctx.workspace, &c.ctx.ws).limits(access.limits(c.ctx.config.limits));
        if access.read {
            grant = grant.read();
        }
        // Installed plugins granted origins; first-party ones never.
        if let Some(network) = &access.network {
            grant = grant.network(network.as_ref().clone());
        }
        for r in c.write_roots {
            grant = grant.write(r);
        }
        let report = if c.alongside {
            // On a runtime worker of its own: the reads of one message run
            // in parallel (each in its own instance), not interleaved on one.
            let (engine, plugin) = (Arc::clone(&c.agent.engine), Arc::clone(&self.plugin));
            let (name, args) = (self.spec.name.clone(), c.args.to_string());
            let called = tokio::spawn(async move {
                engine.call_with_report(&plugin, &name, &args, &grant).await
            })
            .await;
            match called {
                Ok(report) => report,
                Err(e) => {
                    return Ok(Outcome::of(Err(ToolError {
                        code: ErrorCode::Internal,
                        message: format!("the call's worker stopped: {e}"),
                    })));
                }
            }
        } else {
            c.agent
                .engine
                .call_with_report(&self.plugin, &self.spec.name, &c.args.to_string(), &grant)
                .await
        };
        let mut outcome = Outcome::of(report.result);
        let refusals = record_network(&c, &self.spec, report.network, &mut outcome).await?;
        // The model learns why a request failed: the plugin only got an
        // error code.
        if !refusals.is_empty() {
            outcome.notes.push(format!(
                "[network] the host refused: {}",
                refusals.join("; ")
            ));
        }
        Ok(outcome)
    }
}

/// One outgoing request in a line, as a person reads it (the task's UI row
/// and `roost tool call` say it the same way).
pub fn describe_request(r: &NetworkRecord) -> String {
    match (&r.refused, r.status, &r.error) {
        (Some(why), _, _) => format!("{} {} refused: {why}", r.method, r.url),
        (None, Some(status), None) => {
            format!("{} {} -> {status} ({} bytes)", r.method, r.url, r.bytes)
        }
        (None, status, Some(e)) => format!(
            "{} {} -> {}failed: {e}",
            r.method,
            r.url,
            status.map(|s| format!("{s}, ")).unwrap_or_default()
        ),
        (None, None, None) => format!("{} {} (no response)", r.method, r.url),
    }
}

/// Record a call's outgoing requests: a `network` trace entry for the
/// outcome (when the workspace keeps a trace), a UI row, and a warning
/// event when the host refused any. Returns the refusals, one line each.
async fn record_network(
    c: &Invocation<'_>,
    spec: &ToolSpec,
    mut network: NetworkReport,
    outcome: &mut Outcome,
) -> Result<Vec<String>, TaskError> {
    if network.is_empty() {
        return Ok(Vec::new());
    }
    let ctx = c.ctx;
    for r in &mut network.records {
        redact_record(r);
    }
    let mut lines = Vec::new();
    let mut refusals = Vec::new();
    for r in &network.records {
        if let Some(why) = &r.refused {
            refusals.push(format!("{} {}: {why}", r.method, r.url));
        }
        lines.push(describe_request(r));
    }
    if network.dropped > 0 {
        lines.push(format!("… and {} more requests", network.dropped));
    }
    let summary = format!(
        "{} request(s), {} refused{}",
        network.records.len(),
        refusals.len(),
        if network.dropped > 0 {
            format!(", {} more not recorded", network.dropped)
        } else {
            String::new()
        }
    );
    outcome.network = network.records.clone();
    if intents::enabled_in(&ctx.ws) {
        let mut entry = TraceEntry::now(
            TraceKind::Network,
            &ctx.task.id,
            c.state.intent_id(),
            &c.state.mode.slug,
            &spec.name,
            c.args,
        );
        entry.detail = Some(summary);
        entry.network = network.records;
        outcome.trace.push(entry);
    }
    let text = format!("network of `{}`:\n{}", spec.name, lines.join("\n"));
    let events = if refusals.is_empty() {
        Vec::new()
    } else {
        vec![TaskEvent::Warning {
            message: format!(
                "`{}` made requests the host refused: {}",
                spec.name,
                refusals.join("; ")
            ),
        }]
    };
    ctx.commit(
        &c.agent.store,
        Step::new().ui(UiRow::say(UiSubtype::Network), text),
        events,
    )
    .await?;
    Ok(refusals)
}
