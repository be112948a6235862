//! A call as telemetry sees it: its `execute_tool` span — opened before
//! the gates, so the gates and the executor add to it (an approval, a
//! hook's verdict, a command's exit code) — and, when it ends, its result
//! on the span and in the metrics (duration, whether it ran in the
//! sandbox, a refusal's code). Nothing is built when telemetry is off.

use std::time::Instant;

use opentelemetry::{Context, KeyValue};

use super::{CallResult, Dispatch};
use crate::llm::AssembledCall;
use crate::telemetry::metrics;
use crate::telemetry::spans::{self, OpenSpan};
use crate::tools::ToolKind;
use crate::turn::{Ctx, RunState, Site};

/// One call's span and what its metrics need.
pub(super) struct Observed<'c> {
    span: OpenSpan,
    tool: &'c str,
    kind: &'static str,
    started: Instant,
}

impl Dispatch<'_> {
    /// Open the telemetry of `call`: its span under the task's, with what
    /// is known before it runs (its kind, the intent and write roots it
    /// works under, its arguments when content is opted in).
    pub(super) fn observe<'c>(
        &self,
        ctx: &Ctx<'_>,
        state: &RunState,
        call: &'c AssembledCall,
    ) -> Observed<'c> {
        // Looked up only when something records it.
        let kind = if spans::enabled() || metrics::enabled() {
            self.registry
                .get(&call.name)
                .map_or(ToolKind::Native, |t| t.kind())
        } else {
            ToolKind::Native
        };
        let mut span = spans::execute_tool(
            &ctx.trace,
            &call.name,
            &call.id,
            kind.as_str(),
            kind.gen_ai_type(),
        );
        span.set(call_attributes(state, call));
        if spans::enabled() {
            // What it may read, as its write roots are: workspace-relative.
            let reads = match &ctx.site {
                Site::Task => true,
                Site::Direct(d) => d.read,
            };
            span.set([strings(
                "roost.grant.read",
                reads.then(|| ".".to_owned()).into_iter(),
            )]);
        }
        Observed {
            span,
            tool: &call.name,
            kind: kind.as_str(),
            started: Instant::now(),
        }
    }
}

impl Observed<'_> {
    /// The context the call's work is done under.
    pub(super) fn context(&self) -> Context {
        self.span.context()
    }

    /// Write how the call ended: on its span (its result's size, opted in
    /// the result itself; an error's code and a refusal's event) and in
    /// the metrics (`ran`: it got past every gate into its executor).
    pub(super) fn ended(&mut self, r: &CallResult, ran: bool) {
        let refused = (r.is_error && !r.mistake).then(|| {
            r.error
                .as_ref()
                .map_or_else(|| "refused".to_owned(), |e| e.code.to_string())
        });
        metrics::tool_call(
            self.tool,
            self.kind,
            self.started.elapsed(),
            ran,
            refused.as_deref(),
        );
        if spans::enabled() {
            ended(&mut self.span, r, refused.as_deref());
        }
    }
}

/// What a call's span says of it before it runs: the intent it works
/// under and its write roots, and (opted in only) its arguments, secrets
/// redacted.
fn call_attributes(state: &RunState, call: &AssembledCall) -> Vec<KeyValue> {
    if !spans::enabled() {
        return Vec::new();
    }
    let mut attrs = Vec::new();
    if let Some(intent) = state.intent_id() {
        attrs.push(KeyValue::new("roost.intent.id", intent.to_owned()));
    }
    if let Some((_, scope)) = &state.intent {
        attrs.push(strings(
            "roost.grant.write",
            scope.write_roots().iter().map(|p| p.display().to_string()),
        ));
    }
    if spans::content() {
        let args = match &call.args {
            Ok(v) => roost_secrets::redact_json(v).to_string(),
            Err(_) => roost_secrets::redact(&call.raw_args).into_owned(),
        };
        attrs.push(KeyValue::new("gen_ai.tool.call.arguments", args));
    }
    attrs
}

/// A string-array attribute.
pub(crate) fn strings(key: &'static str, values: impl Iterator<Item = String>) -> KeyValue {
    KeyValue::new(
        key,
        opentelemetry::Value::Array(
            values
                .map(opentelemetry::StringValue::from)
                .collect::<Vec<_>>()
                .into(),
        ),
    )
}

/// Write how a call ended on its span: an error's code and message, and a
/// refusal's event; its result's size (and, opted in, the result itself,
/// secrets redacted); its trace entries' kinds (an approval, a hook's
/// verdict, a mutation) as events.
fn ended(span: &mut OpenSpan, r: &CallResult, refused: Option<&str>) {
    let n = |v: usize| i64::try_from(v).unwrap_or(i64::MAX);
    span.set([KeyValue::new("roost.result.bytes", n(r.content.len()))]);
    if !r.network.is_empty() {
        span.set([KeyValue::new("roost.network.requests", n(r.network.len()))]);
    }
    if r.error
        .as_ref()
        .is_some_and(|e| e.code == crate::tools::ErrorCode::LimitExceeded)
    {
        // A time, memory, size or fuel limit of the sandbox stopped it.
        span.set([KeyValue::new("roost.sandbox.limit_hit", true)]);
    }
    if spans::content() {
        span.set([KeyValue::new(
            "gen_ai.tool.call.result",
            roost_secrets::redact(&r.content).into_owned(),
        )]);
    }
    for entry in &r.trace {
        let mut attrs = vec![KeyValue::new("roost.trace.kind", entry.kind.as_str())];
        if let Some(d) = &entry.detail {
            attrs.push(KeyValue::new(
                "roost.trace.detail",
                roost_secrets::redact(&cut(d)).into_owned(),
            ));
        }
        span.event("roost.trace", attrs);
    }
    if r.is_error {
        let code = refused.unwrap_or("mistake");
        let first = r.content.lines().next().unwrap_or_default();
        if refused.is_some() {
            span.event(
                "roost.refusal",
                vec![
                    KeyValue::new("roost.refusal.code", code.to_owned()),
                    KeyValue::new(
                        "roost.refusal.message",
                        roost_secrets::redact(first).into_owned(),
                    ),
                ],
            );
        }
        span.fail(code, first);
    }
}

/// At most 1,000 characters of `s` (an event's detail is a summary).
fn cut(s: &str) -> String {
    s.chars().take(1000).collect()
}
