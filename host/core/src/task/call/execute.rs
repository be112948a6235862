//! Running a component plugin's call once every gate has passed: a lease
//! on its write roots, the grant (read the workspace, write only the
//! roots), a write guard that undoes what the scope does not allow, the
//! call itself, the diff of what changed, the agent trace (also of every
//! outgoing request the call attempted), and the mode's post-tool hooks.

use std::path::PathBuf;
use std::sync::Arc;

use super::write_session::{self, WriteRule, WriteSession};
use super::{CallResult, Pending, snapshot};
use crate::events::TaskEvent;
use crate::intents::{self, TraceEntry, redact_record};
use crate::store::Step;
use crate::task::TaskError;
use crate::task::runner::{Agent, Ctx, RunState};
use roost_protocol::{TraceKind, UiRow, UiSubtype};
use roost_sandbox::capability::Grant;
use roost_sandbox::plugins::{LoadedPlugin, NetworkReport};
use roost_sandbox::tool::ToolSpec;

impl Agent {
    /// Run `call` in `plugin` and turn the outcome into its result.
    pub(super) async fn execute(
        &self,
        ctx: &Ctx<'_>,
        state: &RunState,
        call: Pending<'_>,
        plugin: &Arc<LoadedPlugin>,
    ) -> Result<CallResult, TaskError> {
        let id = ctx.task.id.as_str();
        let spec = &call.tool.spec;
        let args = call.args;
        let write = call.write;
        let intent_gated = intents::enabled_in(&ctx.ws) && spec.destructive;
        // Execute. A guard watches every write root: it undoes writes the
        // scope does not allow (globs finer than a directory) and any write
        // to an authority file (`.git/`, `.orchestration/`), which no call
        // may change whatever its scope.
        let access = &call.tool.access;
        // An installed plugin gets at most what the user granted it.
        if spec.destructive && !access.write {
            let msg = format!(
                "plugin `{}` was not granted write access at install; `{}` cannot run",
                plugin.name(),
                spec.name
            );
            return Ok(CallResult {
                ui_row: Some((UiSubtype::Error, msg.clone())),
                ..CallResult::error(format!("[ERROR] {msg}"))
            });
        }
        let mut grant = Grant::new(&ctx.workspace).limits(access.limits(self.config.limits));
        if access.read {
            grant = grant.read();
        }
        // Installed plugins granted origins; first-party ones never.
        if let Some(network) = &access.network {
            grant = grant.network(network.as_ref().clone());
        }
        // Edit and command tools are always destructive (see `plugins`).
        let mut roots: Vec<PathBuf> = Vec::new();
        if spec.destructive {
            match &write {
                Some(w) => roots.extend(w.roots.iter().cloned()),
                None => roots.push(PathBuf::from(".")),
            }
        }
        for r in &roots {
            grant = grant.write(r);
        }
        // The write session: a lease on the roots (calls whose roots
        // overlap take turns) and a guard that undoes what the scope does
        // not allow.
        let session = if roots.is_empty() {
            None
        } else {
            let rule = WriteRule {
                scope: state.intent.as_ref().map(|(_, s)| s.clone()),
                approved: write.map(|w| w.approved).unwrap_or_default(),
            };
            match WriteSession::open(&ctx.ws, &roots, rule, self.config.guard_budget).await {
                Ok(s) => Some(s),
                Err(e) => {
                    return Ok(CallResult {
                        ui_row: Some((UiSubtype::Error, e.to_string())),
                        ..CallResult::error(format!("[ERROR] {e}"))
                    });
                }
            }
        };
        let before = snapshot::before(&ctx.ws, spec, &args);
        let outcome = self
            .engine
            .call_with_report(plugin, &spec.name, &args.to_string(), &grant)
            .await;
        let mut result = outcome.result;
        let refusals = self
            .record_network(ctx, state, spec, &args, outcome.network)
            .await?;
        let (report, lease) = match session.map(WriteSession::close) {
            Some((report, lease)) => (report, Some(lease)),
            None => (Default::default(), None),
        };
        let after = snapshot::after(&ctx.ws, &before);
        snapshot::restore_modes(&ctx.ws, &before, &after);
        let diff = snapshot::diff(&before, &after);
        let changed = snapshot::changed(&before, &after);
        drop(lease);
        if intent_gated {
            let mut entry = TraceEntry::now(
                TraceKind::Mutation,
                id,
                state.intent_id(),
                &state.mode.slug,
                &spec.name,
                &args,
            );
            entry.files = snapshot::changes(&before, &after);
            if let Err(e) = &result {
                entry.detail = Some(format!("error {}: {}", e.code, e.message));
            }
            self.trace(ctx, &entry);
        }
        let violation = write_session::violation(&report, &spec.name, state.intent_id());
        if let Some(v) = violation {
            let mut entry = TraceEntry::now(
                TraceKind::Violation,
                id,
                state.intent_id(),
                &state.mode.slug,
                &spec.name,
                &args,
            );
            entry.detail = Some(write_session::trace_detail(&report));
            if intents::enabled_in(&ctx.ws) {
                self.trace(ctx, &entry);
            }
            tracing::warn!(task = id, tool = %spec.name, "scope violation: {}", v.message);
            result = Err(v);
        }
        self.post_hooks(ctx, state, spec, &args, &result, &changed)
            .await;
        let (mut content, is_error) = match &result {
            Ok(out) => (out.text.clone(), false),
            Err(e) if report.violated() => (format!("[ERROR] {}", e.message), true),
            Err(e) => (format!("[ERROR] {}: {}", e.code, e.message), true),
        };
        // The model learns why a request failed: the plugin only got an
        // error code.
        if !refusals.is_empty() {
            content.push_str("\n[network] the host refused: ");
            content.push_str(&refusals.join("; "));
        }
        let subtype = if is_error {
            UiSubtype::Error
        } else {
            UiSubtype::ToolResult
        };
        let mut r = if is_error {
            CallResult::error(content.clone())
        } else {
            CallResult::ok(content.clone())
        };
        r.code = result.err().map(|e| e.code);
        r.diff = diff.map(|d| roost_secrets::redact(&d).into_owned());
        r.ui_row = Some(if is_error {
            (subtype, content)
        } else {
            (subtype, super::ui_preview(&content))
        });
        Ok(r)
    }
}

impl Agent {
    /// Record a call's outgoing requests: a `network` trace entry (when
    /// the workspace keeps a trace), a UI row, and a warning event when the
    /// host refused any. Returns the refusals, one line each.
    async fn record_network(
        &self,
        ctx: &Ctx<'_>,
        state: &RunState,
        spec: &ToolSpec,
        args: &serde_json::Value,
        mut network: NetworkReport,
    ) -> Result<Vec<String>, TaskError> {
        if network.is_empty() {
            return Ok(Vec::new());
        }
        for r in &mut network.records {
            redact_record(r);
        }
        let mut lines = Vec::new();
        let mut refusals = Vec::new();
        for r in &network.records {
            let line = match (&r.refused, r.status, &r.error) {
                (Some(why), _, _) => {
                    refusals.push(format!("{} {}: {why}", r.method, r.url));
                    format!("{} {} refused: {why}", r.method, r.url)
                }
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
            };
            lines.push(line);
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
        if intents::enabled_in(&ctx.ws) {
            let mut entry = TraceEntry::now(
                TraceKind::Network,
                &ctx.task.id,
                state.intent_id(),
                &state.mode.slug,
                &spec.name,
                args,
            );
            entry.detail = Some(summary);
            entry.network = network.records;
            self.trace(ctx, &entry);
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
        ctx.events
            .commit(
                &self.store,
                &ctx.task.id,
                Step::new().ui(UiRow::say(UiSubtype::Network), text),
                events,
            )
            .await?;
        Ok(refusals)
    }
}
