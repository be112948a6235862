//! OpenTelemetry: every task a trace in the GenAI semantic conventions —
//! `invoke_agent {mode}` per task run, `chat {model}` per model request,
//! `execute_tool {tool}` per call of any kind — exported over OTLP
//! (HTTP/protobuf or gRPC) when the standard variables say where, and free
//! when they do not (no provider is installed: every span is the API's
//! no-op). Export is batched in the background with a bounded queue: a
//! task never waits on the collector, and an unreachable one costs dropped
//! spans and one warning.

mod config;
mod export;
pub mod spans;

pub use config::{Protocol, TelemetryConfig};

use opentelemetry_sdk::trace::SdkTracerProvider;

/// Why telemetry could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The OTLP exporter could not be built (a malformed endpoint or header).
    #[error("the OTLP exporter cannot be built: {0}")]
    Exporter(String),
}

/// The process's telemetry: where spans go, and the provider that sends
/// them (none: off).
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
    described: String,
}

impl Telemetry {
    /// Telemetry as `config` says: off, or spans batched to its collector
    /// (installed as the process's tracer provider). Needs a tokio runtime
    /// when on.
    pub fn start(config: &TelemetryConfig) -> Result<Self, TelemetryError> {
        let Some(target) = config.target() else {
            return Ok(Self {
                provider: None,
                described: config.describe(),
            });
        };
        let provider = export::provider(&target)?;
        opentelemetry::global::set_tracer_provider(provider.clone());
        spans::set_enabled(true, config.capture_content);
        Ok(Self {
            provider: Some(provider),
            described: config.describe(),
        })
    }

    /// Where spans go, in a line (for `roost doctor`).
    pub fn describe(&self) -> &str {
        &self.described
    }

    /// Whether spans are exported.
    pub fn is_on(&self) -> bool {
        self.provider.is_some()
    }

    /// Send what is queued and stop (at the process's end).
    pub fn shutdown(self) {
        if let Some(p) = self.provider {
            spans::set_enabled(false, false);
            if let Err(e) = p.shutdown() {
                tracing::debug!("telemetry shutdown: {e}");
            }
        }
    }
}
