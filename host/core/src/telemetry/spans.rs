//! The spans, in the GenAI semantic conventions (development status):
//! names and attributes in one place, so the instrumented code says what
//! happened and this module says how it is written down.

use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::trace::{Link, SpanContext, SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, KeyValue};

static ENABLED: AtomicBool = AtomicBool::new(false);
static CONTENT: AtomicBool = AtomicBool::new(false);

/// Turn span-making on or off (off: nothing is built at all).
pub(super) fn set_enabled(on: bool, content: bool) {
    ENABLED.store(on, Ordering::Release);
    CONTENT.store(on && content, Ordering::Release);
}

/// Whether spans are made.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Acquire)
}

/// Whether message content goes on spans (opted in).
pub fn content() -> bool {
    CONTENT.load(Ordering::Acquire)
}

/// The tracer spans are made with: the installed provider's, made once
/// (not a lookup of the global provider and a new scope per span).
static TRACER: std::sync::OnceLock<opentelemetry_sdk::trace::SdkTracer> =
    std::sync::OnceLock::new();

/// Make spans with `provider`'s tracer from now on.
pub(super) fn set_tracer(provider: &opentelemetry_sdk::trace::SdkTracerProvider) {
    use opentelemetry::trace::TracerProvider as _;
    let _ = TRACER.set(provider.tracer("roost"));
}

/// A span being recorded, held in the context that makes it its
/// children's parent (so work done under it can add to it, [`note`]);
/// nothing at all when telemetry is off.
pub struct OpenSpan {
    cx: Option<Context>,
}

impl OpenSpan {
    fn off() -> Self {
        Self { cx: None }
    }

    fn start(name: String, kind: SpanKind, parent: &Context, attrs: Vec<KeyValue>) -> Self {
        Self::linked(name, kind, parent, attrs, Vec::new())
    }

    fn linked(
        name: String,
        kind: SpanKind,
        parent: &Context,
        attrs: Vec<KeyValue>,
        links: Vec<Link>,
    ) -> Self {
        let Some(tracer) = TRACER.get().filter(|_| enabled()) else {
            return Self::off();
        };
        let span = tracer
            .span_builder(name)
            .with_kind(kind)
            .with_attributes(attrs)
            .with_links(links)
            .start_with_context(tracer, parent);
        Self {
            cx: Some(parent.with_span(span)),
        }
    }

    /// The context whose parent this span is (for work done under it).
    pub fn context(&self) -> Context {
        self.cx.clone().unwrap_or_else(Context::current)
    }

    /// Its W3C `traceparent` (none when telemetry is off).
    pub fn traceparent(&self) -> Option<String> {
        let cx = self.cx.as_ref()?;
        let span = cx.span();
        w3c(span.span_context())
    }

    /// Add attributes.
    pub fn set(&mut self, attrs: impl IntoIterator<Item = KeyValue>) {
        if let Some(cx) = &self.cx {
            cx.span().set_attributes(attrs);
        }
    }

    /// Record an event (a refusal, a hook's verdict) with its attributes.
    pub fn event(&mut self, name: &'static str, attrs: Vec<KeyValue>) {
        if let Some(cx) = &self.cx {
            cx.span().add_event(name, attrs);
        }
    }

    /// End as failed, with the error's type and message (secrets
    /// redacted).
    pub fn fail(&mut self, error_type: &str, message: &str) {
        if let Some(cx) = &self.cx {
            let span = cx.span();
            span.set_attribute(KeyValue::new("error.type", error_type.to_owned()));
            span.set_status(Status::error(roost_secrets::redact(message).into_owned()));
        }
    }
}

impl Drop for OpenSpan {
    fn drop(&mut self) {
        if let Some(cx) = &self.cx {
            cx.span().end();
        }
    }
}

/// Add attributes to the span the current work is done under (a tool
/// call's, from its gates and executor); nothing when telemetry is off.
pub fn note(attrs: impl FnOnce() -> Vec<KeyValue>) {
    if enabled() {
        let cx = Context::current();
        let span = cx.span();
        if span.is_recording() {
            span.set_attributes(attrs());
        }
    }
}

/// Record an event on the span the current work is done under.
pub fn note_event(name: &'static str, attrs: impl FnOnce() -> Vec<KeyValue>) {
    if enabled() {
        let cx = Context::current();
        let span = cx.span();
        if span.is_recording() {
            span.add_event(name, attrs());
        }
    }
}

/// The W3C `traceparent` of the current span, for what Roost calls (a
/// provider's HTTP request, an MCP server, a command); `None` when
/// telemetry is off or nothing is being traced.
pub fn traceparent() -> Option<String> {
    if !enabled() {
        return None;
    }
    let cx = Context::current();
    let span = cx.span();
    w3c(span.span_context())
}

/// `sc` as a W3C `traceparent`, when it is valid.
fn w3c(sc: &SpanContext) -> Option<String> {
    sc.is_valid().then(|| {
        format!(
            "00-{}-{}-{:02x}",
            sc.trace_id(),
            sc.span_id(),
            sc.trace_flags().to_u8()
        )
    })
}

/// The context a W3C `traceparent` names, as a remote parent; `None` when
/// telemetry is off or the header is not valid (then the task's trace is
/// its own, as W3C says an invalid header is ignored).
pub fn remote_parent(traceparent: &str) -> Option<Context> {
    use opentelemetry::propagation::TextMapPropagator;
    if !enabled() || traceparent.len() > 128 {
        return None;
    }
    let mut carrier = std::collections::HashMap::new();
    carrier.insert("traceparent".to_owned(), traceparent.to_owned());
    let cx = opentelemetry_sdk::propagation::TraceContextPropagator::new().extract(&carrier);
    cx.span().span_context().is_valid().then_some(cx)
}

/// `invoke_agent {mode}`: one run of a task, under `parent` (a subtask's
/// parent call; none: a root of its own trace), linked to `earlier` (the
/// `traceparent` of the task's previous run, when it was traced).
pub fn invoke_agent(
    parent: Option<&Context>,
    earlier: Option<&str>,
    task: &str,
    mode: &str,
    provider: &str,
    model: &str,
) -> OpenSpan {
    if !enabled() {
        return OpenSpan::off();
    }
    let root = Context::new();
    let links = earlier
        .and_then(remote_parent)
        .map(|cx| {
            vec![Link::new(
                cx.span().span_context().clone(),
                vec![KeyValue::new("roost.link", "earlier_run")],
                0,
            )]
        })
        .unwrap_or_default();
    OpenSpan::linked(
        format!("invoke_agent {mode}"),
        SpanKind::Internal,
        parent.unwrap_or(&root),
        vec![
            KeyValue::new("gen_ai.operation.name", "invoke_agent"),
            KeyValue::new("gen_ai.agent.name", mode.to_owned()),
            KeyValue::new("gen_ai.agent.id", task.to_owned()),
            KeyValue::new("gen_ai.conversation.id", task.to_owned()),
            KeyValue::new("gen_ai.provider.name", provider.to_owned()),
            KeyValue::new("gen_ai.request.model", model.to_owned()),
        ],
        links,
    )
}

/// `chat {model}`: one model request under `parent` (its task's run).
pub fn chat(parent: &Context, provider: &str, model: &str) -> OpenSpan {
    if !enabled() {
        return OpenSpan::off();
    }
    OpenSpan::start(
        format!("chat {model}"),
        SpanKind::Client,
        parent,
        vec![
            KeyValue::new("gen_ai.operation.name", "chat"),
            KeyValue::new("gen_ai.provider.name", provider.to_owned()),
            KeyValue::new("gen_ai.request.model", model.to_owned()),
        ],
    )
}

/// `execute_tool {tool}`: one call of any kind under `parent`; `kind` is
/// Roost's (component, native, skill, mcp, command, subtask), `tool_type`
/// the conventions' (`extension`, `function`).
pub fn execute_tool(
    parent: &Context,
    tool: &str,
    call_id: &str,
    kind: &'static str,
    tool_type: &'static str,
) -> OpenSpan {
    if !enabled() {
        return OpenSpan::off();
    }
    OpenSpan::start(
        format!("execute_tool {tool}"),
        SpanKind::Internal,
        parent,
        vec![
            KeyValue::new("gen_ai.operation.name", "execute_tool"),
            KeyValue::new("gen_ai.tool.name", tool.to_owned()),
            KeyValue::new("gen_ai.tool.call.id", call_id.to_owned()),
            KeyValue::new("gen_ai.tool.type", tool_type),
            KeyValue::new("roost.tool.kind", kind),
        ],
    )
}
