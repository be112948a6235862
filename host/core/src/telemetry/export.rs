//! The export pipelines: OTLP exporters for the configured protocol,
//! wrapped so a failing collector is said once, spans behind the SDK's
//! batch processor with a bounded queue (spans past it are dropped, never
//! waited for; its thread wakes per batch, not per span — the async
//! variant's channel woke a runtime task for every span, 15% of a
//! zero-latency turn), each export run on the tokio runtime the
//! transports need; metrics read periodically on that runtime — and, for
//! `roost serve --metrics`, a Prometheus registry the `/metrics` page is
//! written from.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry_otlp::{WithExportConfig, WithHttpConfig, WithTonicConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::periodic_reader_with_async_runtime::PeriodicReader;
use opentelemetry_sdk::metrics::{SdkMeterProvider, Temporality};
use opentelemetry_sdk::runtime::Tokio;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, Sampler, SdkTracerProvider, SpanData, SpanExporter,
};

use super::TelemetryError;
use super::config::{Protocol, Target, TelemetryConfig};

/// Most spans waiting to be sent; more are dropped.
const MAX_QUEUE: usize = 4096;
/// Most spans in one export.
const MAX_BATCH: usize = 512;

/// The resource every span and metric names: the service (`roost` unless
/// the variables or the table name it) and its version.
pub(super) fn resource(config: &TelemetryConfig) -> Resource {
    let mut resource = Resource::builder();
    let named = std::env::var("OTEL_SERVICE_NAME").is_ok()
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|a| a.contains("service.name="));
    if !named {
        resource =
            resource.with_service_name(config.service_name.clone().unwrap_or("roost".to_owned()));
    }
    resource
        .with_attributes([opentelemetry::KeyValue::new(
            "service.version",
            env!("CARGO_PKG_VERSION"),
        )])
        .build()
}

/// The headers of the config's table, as each transport takes them.
fn headers(config: &TelemetryConfig) -> HashMap<String, String> {
    config.headers.iter().cloned().collect()
}

fn metadata(config: &TelemetryConfig) -> Result<tonic::metadata::MetadataMap, TelemetryError> {
    let map: http::HeaderMap = (&headers(config))
        .try_into()
        .map_err(|e: http::Error| TelemetryError::Exporter(format!("a [telemetry] header: {e}")))?;
    Ok(tonic::metadata::MetadataMap::from_headers(map))
}

/// The provider sending spans to `target`.
pub(super) fn tracer_provider(
    target: &Target,
    config: &TelemetryConfig,
    said: &Said,
) -> Result<SdkTracerProvider, TelemetryError> {
    let built = match target.protocol {
        Protocol::HttpProtobuf => opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(target.endpoint.clone())
            .with_headers(headers(config))
            .build(),
        Protocol::Grpc => opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(target.endpoint.clone())
            .with_metadata(metadata(config)?)
            .build(),
    };
    let mut exporter = SaidOnce::wrap(built, said)?;
    exporter.runtime = tokio::runtime::Handle::try_current().ok();
    let processor = BatchSpanProcessor::builder(exporter)
        .with_batch_config(
            BatchConfigBuilder::default()
                .with_max_queue_size(MAX_QUEUE)
                .with_max_export_batch_size(MAX_BATCH)
                .build(),
        )
        .build();
    let mut builder = SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_resource(resource(config));
    if let Some(ratio) = config.sample_ratio {
        builder = builder.with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
            ratio.clamp(0.0, 1.0),
        ))));
    }
    Ok(builder.build())
}

/// The meter provider: metrics read to `target` (if exporting) and kept
/// in `registry` (if `/metrics` is served).
pub(super) fn meter_provider(
    target: Option<&Target>,
    registry: Option<&prometheus::Registry>,
    config: &TelemetryConfig,
    said: &Said,
) -> Result<SdkMeterProvider, TelemetryError> {
    let mut builder = SdkMeterProvider::builder().with_resource(resource(config));
    if let Some((endpoint, protocol)) =
        target.and_then(|t| t.metrics.as_ref().map(|m| (m, t.protocol)))
    {
        let built = match protocol {
            Protocol::HttpProtobuf => opentelemetry_otlp::MetricExporter::builder()
                .with_http()
                .with_endpoint(endpoint.clone())
                .with_headers(headers(config))
                .build(),
            Protocol::Grpc => opentelemetry_otlp::MetricExporter::builder()
                .with_tonic()
                .with_endpoint(endpoint.clone())
                .with_metadata(metadata(config)?)
                .build(),
        };
        let exporter = SaidOnce::wrap(built, said)?;
        builder = builder.with_reader(PeriodicReader::builder(exporter, Tokio).build());
    }
    if let Some(registry) = registry {
        let reader = opentelemetry_prometheus::exporter()
            .with_registry(registry.clone())
            .build()
            .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
        builder = builder.with_reader(reader);
    }
    Ok(builder.build())
}

/// Whether the collector's failure has been said (shared by the span and
/// metric exporters: one warning for one collector).
#[derive(Debug, Clone)]
pub(super) struct Said {
    endpoint: String,
    said: Arc<AtomicBool>,
}

impl Said {
    pub(super) fn new(endpoint: &str) -> Self {
        Self {
            endpoint: endpoint.to_owned(),
            said: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Note how an export of `n` items (`what`) went: a failure is said
    /// the first time; a success resets it.
    fn note(&self, result: &OTelSdkResult, what: &str) {
        match result {
            Ok(()) => self.said.store(false, Ordering::Relaxed),
            Err(e) => {
                if !self.said.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        "telemetry: cannot send to {} ({e}); {what} dropped, and later spans and metrics are dropped too until it answers",
                        self.endpoint
                    );
                }
            }
        }
    }
}

/// An exporter that says once, as a warning, that its collector cannot be
/// reached (then drops quietly; the next success resets it).
#[derive(Debug)]
struct SaidOnce<E> {
    inner: Arc<E>,
    said: Said,
    /// Where exports run (the batch processor's own thread has no
    /// runtime; the HTTP and gRPC transports need tokio's).
    runtime: Option<tokio::runtime::Handle>,
}

impl<E> SaidOnce<E> {
    /// The exporter `built` made, saying its failures once through `said`.
    fn wrap(
        built: Result<E, opentelemetry_otlp::ExporterBuildError>,
        said: &Said,
    ) -> Result<Self, TelemetryError> {
        Ok(Self {
            inner: Arc::new(built.map_err(|e| TelemetryError::Exporter(e.to_string()))?),
            said: said.clone(),
            runtime: None,
        })
    }
}

impl<E: SpanExporter + 'static> SpanExporter for SaidOnce<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let n = batch.len();
        let inner = Arc::clone(&self.inner);
        let result = match &self.runtime {
            Some(rt) => rt
                .spawn(async move { inner.export(batch).await })
                .await
                .unwrap_or_else(|e| {
                    Err(opentelemetry_sdk::error::OTelSdkError::InternalFailure(
                        e.to_string(),
                    ))
                }),
            None => inner.export(batch).await,
        };
        self.said.note(&result, &format!("{n} spans"));
        result
    }

    fn shutdown_with_timeout(&self, timeout: std::time::Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        // Set once, before the first export: the exporter is not shared yet.
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.set_resource(resource);
        }
    }
}

impl<E: PushMetricExporter> PushMetricExporter for SaidOnce<E> {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        let result = self.inner.export(metrics).await;
        self.said.note(&result, "metrics");
        result
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: std::time::Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn temporality(&self) -> Temporality {
        self.inner.temporality()
    }
}
