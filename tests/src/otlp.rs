//! A real OTLP receiver for the telemetry tests: it listens on 127.0.0.1
//! over HTTP (`POST /v1/traces` and `/v1/metrics`, protobuf) and gRPC (the
//! collector's trace and metrics services), decodes each request with
//! `opentelemetry-proto`'s types, and keeps every span and metric point it
//! got, flattened for assertions. Tests wait on what arrives, never on
//! time.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use prost::Message;

/// One span as received.
#[derive(Debug, Clone)]
pub struct ReceivedSpan {
    /// Its name.
    pub name: String,
    /// Its trace, hex.
    pub trace_id: String,
    /// Its id, hex.
    pub span_id: String,
    /// Its parent's id, hex (empty for a root).
    pub parent_span_id: String,
    /// Its attributes, each as text (an array as its items joined by `,`).
    pub attributes: BTreeMap<String, String>,
    /// Its events' names.
    pub events: Vec<String>,
    /// Its links: (trace id, span id), hex.
    pub links: Vec<(String, String)>,
    /// Its status code (0 unset, 1 ok, 2 error).
    pub status: i32,
    /// The `service.name` of the resource it came with.
    pub service: String,
}

impl ReceivedSpan {
    /// Attribute `key`, if set.
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).map(String::as_str)
    }
}

/// One metric data point as received.
#[derive(Debug, Clone)]
pub struct ReceivedPoint {
    /// The metric's name.
    pub name: String,
    /// The point's attributes, each as text.
    pub attributes: BTreeMap<String, String>,
    /// A sum's or gauge's value; a histogram's count.
    pub value: f64,
}

impl ReceivedPoint {
    /// Attribute `key`, if set.
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).map(String::as_str)
    }
}

fn text(v: Option<&opentelemetry_proto::tonic::common::v1::AnyValue>) -> String {
    match v.and_then(|v| v.value.as_ref()) {
        Some(AnyValue::StringValue(s)) => s.clone(),
        Some(AnyValue::IntValue(i)) => i.to_string(),
        Some(AnyValue::BoolValue(b)) => b.to_string(),
        Some(AnyValue::DoubleValue(d)) => d.to_string(),
        Some(AnyValue::ArrayValue(a)) => a
            .values
            .iter()
            .map(|v| text(Some(v)))
            .collect::<Vec<_>>()
            .join(","),
        _ => String::new(),
    }
}

fn attrs(kvs: &[KeyValue]) -> BTreeMap<String, String> {
    kvs.iter()
        .map(|kv| (kv.key.clone(), text(kv.value.as_ref())))
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[derive(Default)]
struct Store {
    spans: Mutex<Vec<ReceivedSpan>>,
    points: Mutex<Vec<ReceivedPoint>>,
    changed: tokio::sync::Notify,
}

impl Store {
    fn take_metrics(&self, req: &ExportMetricsServiceRequest) {
        use opentelemetry_proto::tonic::metrics::v1::metric::Data;
        use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value;
        let number = |v: &Option<Value>| match v {
            Some(Value::AsDouble(d)) => *d,
            #[allow(clippy::cast_precision_loss)] // test counts are small
            Some(Value::AsInt(i)) => *i as f64,
            None => 0.0,
        };
        let mut points = self.points.lock().unwrap_or_else(|p| p.into_inner());
        for rm in &req.resource_metrics {
            for sm in &rm.scope_metrics {
                for m in &sm.metrics {
                    let mut push = |a: &[KeyValue], value: f64| {
                        points.push(ReceivedPoint {
                            name: m.name.clone(),
                            attributes: attrs(a),
                            value,
                        });
                    };
                    match &m.data {
                        Some(Data::Sum(s)) => {
                            for p in &s.data_points {
                                push(&p.attributes, number(&p.value));
                            }
                        }
                        Some(Data::Gauge(g)) => {
                            for p in &g.data_points {
                                push(&p.attributes, number(&p.value));
                            }
                        }
                        Some(Data::Histogram(h)) => {
                            for p in &h.data_points {
                                #[allow(clippy::cast_precision_loss)] // test counts are small
                                push(&p.attributes, p.count as f64);
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        drop(points);
        self.changed.notify_waiters();
    }

    fn take(&self, req: &ExportTraceServiceRequest) {
        let mut spans = self.spans.lock().unwrap_or_else(|p| p.into_inner());
        for rs in &req.resource_spans {
            let service = rs
                .resource
                .as_ref()
                .map(|r| attrs(&r.attributes))
                .and_then(|a| a.get("service.name").cloned())
                .unwrap_or_default();
            for ss in &rs.scope_spans {
                for s in &ss.spans {
                    spans.push(ReceivedSpan {
                        name: s.name.clone(),
                        trace_id: hex(&s.trace_id),
                        span_id: hex(&s.span_id),
                        parent_span_id: hex(&s.parent_span_id),
                        attributes: attrs(&s.attributes),
                        events: s.events.iter().map(|e| e.name.clone()).collect(),
                        links: s
                            .links
                            .iter()
                            .map(|l| (hex(&l.trace_id), hex(&l.span_id)))
                            .collect(),
                        status: s.status.as_ref().map_or(0, |st| st.code),
                        service: service.clone(),
                    });
                }
            }
        }
        drop(spans);
        self.changed.notify_waiters();
    }
}

struct Grpc(Arc<Store>);

#[tonic::async_trait]
impl TraceService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        self.0.take(request.get_ref());
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

struct GrpcMetrics(Arc<Store>);

#[tonic::async_trait]
impl MetricsService for GrpcMetrics {
    async fn export(
        &self,
        request: tonic::Request<ExportMetricsServiceRequest>,
    ) -> Result<tonic::Response<ExportMetricsServiceResponse>, tonic::Status> {
        self.0.take_metrics(request.get_ref());
        Ok(tonic::Response::new(ExportMetricsServiceResponse::default()))
    }
}

/// A receiver listening on two ports of 127.0.0.1.
pub struct Receiver {
    /// Its OTLP/HTTP base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub http: String,
    /// Its OTLP/gRPC URL.
    pub grpc: String,
    store: Arc<Store>,
}

impl Receiver {
    /// Listen, on the current runtime.
    pub async fn start() -> Self {
        let store = Arc::new(Store::default());
        let http = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let http_url = format!("http://{}", http.local_addr().expect("addr"));
        let for_http = Arc::clone(&store);
        let for_metrics = Arc::clone(&store);
        let app = axum::Router::new()
            .route(
                "/v1/metrics",
                axum::routing::post(move |body: axum::body::Bytes| {
                    let store = Arc::clone(&for_metrics);
                    async move {
                        export::<ExportMetricsServiceRequest, ExportMetricsServiceResponse>(
                            &body,
                            |r| store.take_metrics(r),
                        )
                    }
                }),
            )
            .route(
                "/v1/traces",
                axum::routing::post(move |body: axum::body::Bytes| {
                    let store = Arc::clone(&for_http);
                    async move {
                        export::<ExportTraceServiceRequest, ExportTraceServiceResponse>(
                            &body,
                            |r| store.take(r),
                        )
                    }
                }),
            );
        tokio::spawn(async move {
            let _ = axum::serve(http, app).await;
        });
        let grpc = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let grpc_url = format!("http://{}", grpc.local_addr().expect("addr"));
        let service = TraceServiceServer::new(Grpc(Arc::clone(&store)));
        let metrics = MetricsServiceServer::new(GrpcMetrics(Arc::clone(&store)));
        tokio::spawn(async move {
            let _ = tonic::transport::Server::builder()
                .add_service(service)
                .add_service(metrics)
                .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(grpc))
                .await;
        });
        Self {
            http: http_url,
            grpc: grpc_url,
            store,
        }
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.store
            .spans
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Every metric point received so far.
    pub fn points(&self) -> Vec<ReceivedPoint> {
        self.store
            .points
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Wait until `done` holds of the metric points received.
    pub async fn wait_for_points(
        &self,
        done: impl Fn(&[ReceivedPoint]) -> bool,
    ) -> Vec<ReceivedPoint> {
        self.until(|| self.points(), done, "the metrics").await
    }

    /// Wait until `done` holds of what `read` gives (looked at on each
    /// arrival); a bound only ends a test that would otherwise hang.
    async fn until<T: std::fmt::Debug>(
        &self,
        read: impl Fn() -> Vec<T>,
        done: impl Fn(&[T]) -> bool,
        what: &str,
    ) -> Vec<T> {
        let waited = tokio::time::timeout(std::time::Duration::from_secs(300), async {
            loop {
                let changed = self.store.changed.notified();
                let got = read();
                if done(&got) {
                    return got;
                }
                changed.await;
            }
        })
        .await;
        waited.unwrap_or_else(|_| panic!("{what} never came: {:#?}", read()))
    }

    /// Wait until `done` holds of the spans received (each arrival is
    /// looked at); a bound only ends a test that would otherwise hang.
    pub async fn wait_for(&self, done: impl Fn(&[ReceivedSpan]) -> bool) -> Vec<ReceivedSpan> {
        self.until(|| self.spans(), done, "the spans").await
    }
}

/// Decode an OTLP/HTTP export body as `Req`, hand it to `take`, and answer
/// as a collector does (an empty `Resp`; a body that is not one: 400).
fn export<Req: Message + Default, Resp: Message + Default>(
    body: &[u8],
    take: impl FnOnce(&Req),
) -> (
    axum::http::StatusCode,
    [(&'static str, &'static str); 1],
    Vec<u8>,
) {
    match Req::decode(body) {
        Ok(req) => {
            take(&req);
            (
                axum::http::StatusCode::OK,
                [("content-type", "application/x-protobuf")],
                Resp::default().encode_to_vec(),
            )
        }
        Err(e) => (
            axum::http::StatusCode::BAD_REQUEST,
            [("content-type", "text/plain")],
            format!("not an OTLP export request: {e}").into_bytes(),
        ),
    }
}
