//! The export pipeline: an OTLP exporter for the configured protocol,
//! wrapped so a failing collector is said once, behind a batch processor on
//! the tokio runtime with a bounded queue (spans past it are dropped, never
//! waited for).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::runtime::Tokio;
use opentelemetry_sdk::trace::span_processor_with_async_runtime::BatchSpanProcessor;
use opentelemetry_sdk::trace::{BatchConfigBuilder, SdkTracerProvider, SpanData, SpanExporter};

use super::TelemetryError;
use super::config::{Protocol, Target};

/// Most spans waiting to be sent; more are dropped.
const MAX_QUEUE: usize = 4096;
/// Most spans in one export.
const MAX_BATCH: usize = 512;

/// The provider sending spans to `target`.
pub(super) fn provider(target: &Target) -> Result<SdkTracerProvider, TelemetryError> {
    let built = match target.protocol {
        Protocol::HttpProtobuf => opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(target.endpoint.clone())
            .build(),
        Protocol::Grpc => opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(target.endpoint.clone())
            .build(),
    };
    let exporter = built.map_err(|e| TelemetryError::Exporter(e.to_string()))?;
    let exporter = SaidOnce {
        inner: exporter,
        endpoint: target.endpoint.clone(),
        said: Arc::new(AtomicBool::new(false)),
    };
    let processor = BatchSpanProcessor::builder(exporter, Tokio)
        .with_batch_config(
            BatchConfigBuilder::default()
                .with_max_queue_size(MAX_QUEUE)
                .with_max_export_batch_size(MAX_BATCH)
                .build(),
        )
        .build();
    let mut resource = Resource::builder();
    let named = std::env::var("OTEL_SERVICE_NAME").is_ok()
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|a| a.contains("service.name="));
    if !named {
        resource = resource.with_service_name("roost");
    }
    Ok(SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_resource(
            resource
                .with_attributes([opentelemetry::KeyValue::new(
                    "service.version",
                    env!("CARGO_PKG_VERSION"),
                )])
                .build(),
        )
        .build())
}

/// An exporter that says once, as a warning, that its collector cannot be
/// reached (then drops quietly; the next success resets it).
#[derive(Debug)]
struct SaidOnce<E> {
    inner: E,
    endpoint: String,
    said: Arc<AtomicBool>,
}

impl<E: SpanExporter> SpanExporter for SaidOnce<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let n = batch.len();
        let result = self.inner.export(batch).await;
        match &result {
            Ok(()) => self.said.store(false, Ordering::Relaxed),
            Err(e) => {
                if !self.said.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        "telemetry: spans cannot be sent to {} ({e}); {n} dropped, and later ones are dropped too until it answers",
                        self.endpoint
                    );
                }
            }
        }
        result
    }

    fn shutdown_with_timeout(&mut self, timeout: std::time::Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}
