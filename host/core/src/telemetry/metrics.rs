//! The metrics: the GenAI client metrics (`gen_ai.client.token.usage`,
//! `gen_ai.client.operation.duration`) and the agent-side durations
//! (`gen_ai.invoke_agent.duration`, `gen_ai.execute_tool.duration`), and
//! Roost's own — sandboxed calls, refusals by code, task runs by how they
//! ended, and `roost serve`'s queue and running tasks. Recorded only when
//! a meter provider is installed (export, or `roost serve --metrics`):
//! otherwise every record is one atomic load.
//!
//! Labels never name a tenant, a task, a path or a prompt: a `/metrics`
//! page shows what kinds of work a server did, not whose.

use std::sync::OnceLock;
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, Meter, ObservableGauge};

/// The semantic conventions' advised buckets for token counts.
const TOKEN_BUCKETS: [f64; 14] = [
    1.0,
    4.0,
    16.0,
    64.0,
    256.0,
    1024.0,
    4096.0,
    16384.0,
    65536.0,
    262_144.0,
    1_048_576.0,
    4_194_304.0,
    16_777_216.0,
    67_108_864.0,
];

/// The semantic conventions' advised buckets for durations (seconds),
/// with finer ones below 10 ms for tool calls that take microseconds.
const SECOND_BUCKETS: [f64; 17] = [
    0.0005, 0.001, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48,
    40.96, 81.92,
];

/// The instruments, made once a meter provider is installed.
struct Instruments {
    tokens: Histogram<u64>,
    operation: Histogram<f64>,
    agent: Histogram<f64>,
    tool: Histogram<f64>,
    sandboxed: Counter<u64>,
    refusals: Counter<u64>,
    runs: Counter<u64>,
}

static INSTRUMENTS: OnceLock<Instruments> = OnceLock::new();
/// `roost serve`'s gauges, kept for as long as the process runs.
static SERVE_GAUGES: OnceLock<[ObservableGauge<u64>; 2]> = OnceLock::new();

/// Whether metrics are recorded.
pub fn enabled() -> bool {
    INSTRUMENTS.get().is_some()
}

fn meter() -> Meter {
    opentelemetry::global::meter("roost")
}

/// Make the instruments from the installed provider (once).
pub(super) fn install() {
    INSTRUMENTS.get_or_init(|| {
        let m = meter();
        let seconds = |name: &'static str, what: &'static str| {
            m.f64_histogram(name)
                .with_unit("s")
                .with_description(what)
                .with_boundaries(SECOND_BUCKETS.to_vec())
                .build()
        };
        Instruments {
            tokens: m
                .u64_histogram("gen_ai.client.token.usage")
                .with_unit("{token}")
                .with_description("Tokens used by a model request, by type (input, output)")
                .with_boundaries(TOKEN_BUCKETS.to_vec())
                .build(),
            operation: seconds(
                "gen_ai.client.operation.duration",
                "How long a model request took, to its last chunk",
            ),
            agent: seconds(
                "gen_ai.invoke_agent.duration",
                "How long a run of a task took",
            ),
            tool: seconds(
                "gen_ai.execute_tool.duration",
                "How long a tool call took, its gates included",
            ),
            sandboxed: m
                .u64_counter("roost.sandbox.calls")
                .with_unit("{call}")
                .with_description("Calls that ran (past every gate), by kind of tool")
                .build(),
            refusals: m
                .u64_counter("roost.refusals")
                .with_unit("{refusal}")
                .with_description("Calls refused by a gate, a hook or the sandbox, by code")
                .build(),
            runs: m
                .u64_counter("roost.tasks")
                .with_unit("{run}")
                .with_description(
                    "Runs of tasks that ended, by how (completed, paused, aborted, failed, error)",
                )
                .build(),
        }
    });
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// A model request ended after `took`: its tokens (when it answered) and
/// its duration (`error`: why it failed).
pub fn model_request(
    provider: &str,
    model: &str,
    took: Duration,
    tokens: Option<(u64, u64)>,
    error: Option<&str>,
) {
    let Some(i) = INSTRUMENTS.get() else { return };
    let mut attrs = vec![
        KeyValue::new("gen_ai.operation.name", "chat"),
        KeyValue::new("gen_ai.provider.name", provider.to_owned()),
        KeyValue::new("gen_ai.request.model", model.to_owned()),
    ];
    if let Some((input, output)) = tokens {
        for (kind, n) in [("input", input), ("output", output)] {
            let mut a = attrs.clone();
            a.push(KeyValue::new("gen_ai.token.type", kind));
            i.tokens.record(n, &a);
        }
    }
    if let Some(e) = error {
        attrs.push(KeyValue::new("error.type", e.to_owned()));
    }
    i.operation.record(secs(took), &attrs);
}

/// A run of a task in `mode` ended after `took`, as `outcome` says.
pub fn run_ended(mode: &str, outcome: &'static str, took: Duration) {
    let Some(i) = INSTRUMENTS.get() else { return };
    let attrs = [
        KeyValue::new("gen_ai.operation.name", "invoke_agent"),
        KeyValue::new("gen_ai.agent.name", mode.to_owned()),
        KeyValue::new("roost.task.status", outcome),
    ];
    i.agent.record(secs(took), &attrs);
    i.runs.add(1, &attrs[2..]);
}

/// A tool call ended after `took`: whether it ran (past every gate) and,
/// refused, the refusal's code.
pub fn tool_call(tool: &str, kind: &str, took: Duration, ran: bool, refused: Option<&str>) {
    let Some(i) = INSTRUMENTS.get() else { return };
    let mut attrs = vec![
        KeyValue::new("gen_ai.operation.name", "execute_tool"),
        KeyValue::new("gen_ai.tool.name", tool.to_owned()),
        KeyValue::new("roost.tool.kind", kind.to_owned()),
    ];
    if ran {
        i.sandboxed
            .add(1, &[KeyValue::new("roost.tool.kind", kind.to_owned())]);
    }
    if let Some(code) = refused {
        i.refusals
            .add(1, &[KeyValue::new("roost.refusal.code", code.to_owned())]);
        attrs.push(KeyValue::new("error.type", code.to_owned()));
    }
    i.tool.record(secs(took), &attrs);
}

/// How busy a `roost serve` is right now.
#[derive(Debug, Clone, Copy, Default)]
pub struct ServeLoad {
    /// Tasks waiting for a slot.
    pub queued: u64,
    /// Tasks running.
    pub running: u64,
}

/// Report `roost serve`'s queue depth and running tasks from `load`
/// (asked at each collection). Nothing when metrics are off.
pub fn observe_serve(load: impl Fn() -> ServeLoad + Send + Sync + 'static) {
    if INSTRUMENTS.get().is_none() {
        return;
    }
    let load = std::sync::Arc::new(load);
    let running = std::sync::Arc::clone(&load);
    let m = meter();
    SERVE_GAUGES.get_or_init(|| {
        [
            m.u64_observable_gauge("roost.serve.queue.depth")
                .with_unit("{task}")
                .with_description("Tasks waiting for a free slot")
                .with_callback(move |o| o.observe(load().queued, &[]))
                .build(),
            m.u64_observable_gauge("roost.serve.tasks.running")
                .with_unit("{task}")
                .with_description("Tasks running")
                .with_callback(move |o| o.observe(running().running, &[]))
                .build(),
        ]
    });
}
