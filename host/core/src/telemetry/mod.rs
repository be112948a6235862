//! OpenTelemetry: every task a trace in the GenAI semantic conventions —
//! `invoke_agent {mode}` per task run, `chat {model}` per model request,
//! `execute_tool {tool}` per call of any kind — and the GenAI and Roost
//! metrics, exported over OTLP (HTTP/protobuf or gRPC) when the standard
//! variables (or the config's `[telemetry]` table) say where, kept for
//! `/metrics` when `roost serve --metrics` asks, and free when neither
//! (no provider is installed: every span and record is a no-op). Export
//! is batched in the background with a bounded queue: a task never waits
//! on the collector, and an unreachable one costs dropped data and one
//! warning.

mod config;
mod export;
pub mod metrics;
pub mod spans;

pub use config::{Protocol, TelemetryConfig, TelemetryTable};

use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;

/// Why telemetry could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The OTLP exporter could not be built (a malformed endpoint or header).
    #[error("the OTLP exporter cannot be built: {0}")]
    Exporter(String),
}

/// The process's telemetry: where spans and metrics go, and the providers
/// that send them (none: off).
pub struct Telemetry {
    tracer: Option<SdkTracerProvider>,
    meter: Option<SdkMeterProvider>,
    scrape: Option<Scrape>,
    described: String,
}

/// The metrics as a Prometheus scrape reads them (`roost serve --metrics`).
#[derive(Clone)]
pub struct Scrape {
    registry: prometheus::Registry,
}

impl std::fmt::Debug for Scrape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Scrape")
    }
}

impl Scrape {
    /// The metrics now, in the Prometheus text exposition format.
    pub fn text(&self) -> String {
        use prometheus::Encoder;
        let mut out = Vec::new();
        if let Err(e) = prometheus::TextEncoder::new().encode(&self.registry.gather(), &mut out) {
            tracing::warn!("metrics: cannot be written as text: {e}");
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    /// The content type of [`Scrape::text`].
    pub const CONTENT_TYPE: &'static str = "text/plain; version=0.0.4; charset=utf-8";
}

impl Telemetry {
    /// Telemetry as `config` says: off, or spans batched and metrics read
    /// to its collector, and metrics kept for a scrape when asked
    /// (installed as the process's providers). Needs a tokio runtime when
    /// on.
    pub fn start(config: &TelemetryConfig) -> Result<Self, TelemetryError> {
        let target = config.target();
        // The exporters' HTTP stack takes the process's TLS provider.
        if target.is_some() {
            roost_mcp::tls::install();
        }
        let said = export::Said::new(target.as_ref().map_or("", |t| t.endpoint.as_str()));
        let tracer = match &target {
            Some(t) => Some(export::tracer_provider(t, config, &said)?),
            None => None,
        };
        let scrape = config.prometheus.then(|| Scrape {
            registry: prometheus::Registry::new(),
        });
        let metered = target.as_ref().is_some_and(|t| t.metrics.is_some()) || scrape.is_some();
        let meter = if metered {
            Some(export::meter_provider(
                target.as_ref(),
                scrape.as_ref().map(|s| &s.registry),
                config,
                &said,
            )?)
        } else {
            None
        };
        if let Some(p) = &tracer {
            opentelemetry::global::set_tracer_provider(p.clone());
            spans::set_tracer(p);
            // What Roost calls (providers, MCP servers) gets `traceparent`.
            opentelemetry::global::set_text_map_propagator(
                opentelemetry_sdk::propagation::TraceContextPropagator::new(),
            );
            spans::set_enabled(true, config.capture_content);
        }
        if let Some(p) = &meter {
            opentelemetry::global::set_meter_provider(p.clone());
            metrics::install();
        }
        Ok(Self {
            tracer,
            meter,
            scrape,
            described: config.describe(),
        })
    }

    /// Where spans go, in a line (for `roost doctor`).
    pub fn describe(&self) -> &str {
        &self.described
    }

    /// Whether spans are exported.
    pub fn is_on(&self) -> bool {
        self.tracer.is_some()
    }

    /// The metrics for a Prometheus scrape, when asked for at start.
    pub fn scrape(&self) -> Option<Scrape> {
        self.scrape.clone()
    }

    /// Send what is queued and stop (at the process's end).
    pub fn shutdown(self) {
        if let Some(p) = self.tracer {
            spans::set_enabled(false, false);
            if let Err(e) = p.shutdown() {
                tracing::debug!("telemetry shutdown: {e}");
            }
        }
        if let Some(p) = self.meter
            && let Err(e) = p.shutdown()
        {
            tracing::debug!("metrics shutdown: {e}");
        }
    }
}
