//! Where telemetry goes, from the standard OpenTelemetry variables
//! (`OTEL_EXPORTER_OTLP_ENDPOINT`, `…_TRACES_ENDPOINT`, `…_PROTOCOL`,
//! `…_HEADERS`, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
//! `OTEL_TRACES_SAMPLER[_ARG]`, `OTEL_SDK_DISABLED`, `OTEL_TRACES_EXPORTER`)
//! — read by the SDK and the exporter themselves where they can — and
//! `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` for content —
//! with the config file's `[telemetry]` table under them.

/// The OTLP transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// OTLP over HTTP with protobuf bodies (`http/protobuf`, the default).
    HttpProtobuf,
    /// OTLP over gRPC (`grpc`).
    Grpc,
}

/// The `[telemetry]` table of the config file: the same settings as the
/// standard variables, for a deployment that keeps them with the rest of
/// its configuration. A variable that is set wins over the table.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetryTable {
    /// Export at all (`false`: off, as `OTEL_SDK_DISABLED=true`).
    pub enabled: Option<bool>,
    /// The collector's base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub endpoint: Option<String>,
    /// `http/protobuf` (the default) or `grpc`.
    pub protocol: Option<String>,
    /// Headers on every export (`OTEL_EXPORTER_OTLP_HEADERS`; keep a
    /// credential in that variable rather than in this file).
    #[serde(default)]
    pub headers: std::collections::BTreeMap<String, String>,
    /// The service's name (`OTEL_SERVICE_NAME`; default `roost`).
    pub service_name: Option<String>,
    /// The share of new traces kept, 0.0–1.0 (a parent's decision is
    /// followed; `OTEL_TRACES_SAMPLER=parentbased_traceidratio`).
    pub sample_ratio: Option<f64>,
    /// Export metrics too (default yes; `OTEL_METRICS_EXPORTER=none`).
    pub metrics: Option<bool>,
    /// Message content on spans, secrets redacted
    /// (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`).
    pub capture_content: Option<bool>,
}

/// What the environment (and the config's `[telemetry]` table) say about
/// telemetry.
#[derive(Debug, Clone, Default)]
pub struct TelemetryConfig {
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`: the collector's base URL.
    pub endpoint: Option<String>,
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`: the traces URL, used as is.
    pub traces_endpoint: Option<String>,
    /// `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`: the metrics URL, used as is.
    pub metrics_endpoint: Option<String>,
    /// `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, else `OTEL_EXPORTER_OTLP_PROTOCOL`.
    pub protocol: Option<String>,
    /// `OTEL_SDK_DISABLED=true`, or `OTEL_TRACES_EXPORTER=none`.
    pub disabled: bool,
    /// `OTEL_METRICS_EXPORTER=none`: spans only.
    pub no_metrics: bool,
    /// Prompts, tool arguments and results on the spans (secrets redacted).
    pub capture_content: bool,
    /// Headers from the table (the variable, when set, is read by the
    /// exporter itself and wins).
    pub headers: Vec<(String, String)>,
    /// The service's name from the table (the variables win).
    pub service_name: Option<String>,
    /// The table's sampling ratio (the variables win).
    pub sample_ratio: Option<f64>,
    /// Metrics kept for `/metrics` in the Prometheus text format
    /// (`roost serve --metrics`), whether or not anything is exported.
    pub prometheus: bool,
}

/// Where telemetry goes when export is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The URL spans are sent to.
    pub endpoint: String,
    /// The URL metrics are sent to (none: spans only).
    pub metrics: Option<String>,
    /// How.
    pub protocol: Protocol,
}

impl TelemetryConfig {
    /// The process's environment.
    pub fn from_env() -> Self {
        Self::from_vars(|k| std::env::var(k).ok())
    }

    /// What `var` says (the environment, or a test's).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Self {
        let set = |k: &str| var(k).filter(|v| !v.trim().is_empty());
        let yes = |k: &str| set(k).is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
        let none = |k: &str| set(k).is_some_and(|v| v.trim().eq_ignore_ascii_case("none"));
        Self {
            endpoint: set("OTEL_EXPORTER_OTLP_ENDPOINT"),
            traces_endpoint: set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
            metrics_endpoint: set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"),
            protocol: set("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                .or_else(|| set("OTEL_EXPORTER_OTLP_PROTOCOL")),
            disabled: yes("OTEL_SDK_DISABLED") || none("OTEL_TRACES_EXPORTER"),
            no_metrics: none("OTEL_METRICS_EXPORTER"),
            capture_content: yes("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"),
            headers: Vec::new(),
            service_name: None,
            sample_ratio: None,
            prometheus: false,
        }
    }

    /// These settings with the config file's `[telemetry]` table under
    /// them: what a variable sets stays; what none sets comes from the
    /// table.
    #[must_use]
    pub fn with_table(mut self, table: &TelemetryTable, var: impl Fn(&str) -> bool) -> Self {
        if table.enabled == Some(false) {
            self.disabled = true;
        }
        if self.endpoint.is_none() && self.traces_endpoint.is_none() {
            self.endpoint.clone_from(&table.endpoint);
        }
        if self.protocol.is_none() {
            self.protocol.clone_from(&table.protocol);
        }
        if table.metrics == Some(false) {
            self.no_metrics = true;
        }
        if table.capture_content == Some(true)
            && !var("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
        {
            self.capture_content = true;
        }
        if !var("OTEL_EXPORTER_OTLP_HEADERS") {
            self.headers = table
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
        }
        if !var("OTEL_SERVICE_NAME") {
            self.service_name.clone_from(&table.service_name);
        }
        if !var("OTEL_TRACES_SAMPLER") {
            self.sample_ratio = table.sample_ratio;
        }
        self
    }

    /// Where spans (and metrics) go, or `None` when export is off (no
    /// endpoint, or disabled).
    pub fn target(&self) -> Option<Target> {
        if self.disabled {
            return None;
        }
        let protocol = match self.protocol.as_deref().map(str::trim) {
            Some("grpc") => Protocol::Grpc,
            _ => Protocol::HttpProtobuf,
        };
        let base = self
            .endpoint
            .as_deref()
            .map(|b| b.trim().trim_end_matches('/'));
        // Over HTTP each signal has its path under the base; gRPC takes
        // the base as it is.
        let under = |path: &str| {
            base.map(|b| match protocol {
                Protocol::HttpProtobuf => format!("{b}/v1/{path}"),
                Protocol::Grpc => b.to_owned(),
            })
        };
        let endpoint = match &self.traces_endpoint {
            Some(t) => t.trim().to_owned(),
            None => under("traces")?,
        };
        let metrics = if self.no_metrics {
            None
        } else {
            match &self.metrics_endpoint {
                Some(m) => Some(m.trim().to_owned()),
                None => under("metrics"),
            }
        };
        Some(Target {
            endpoint,
            metrics,
            protocol,
        })
    }

    /// One line saying where telemetry goes (for `roost doctor`).
    pub fn describe(&self) -> String {
        match self.target() {
            None if self.disabled => {
                "telemetry: off (OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER=none or [telemetry] enabled = false)".to_owned()
            }
            None => "telemetry: off (set OTEL_EXPORTER_OTLP_ENDPOINT, or [telemetry] endpoint, to export traces and metrics over OTLP)"
                .to_owned(),
            Some(t) => format!(
                "telemetry: traces to {}{} over {}{}",
                t.endpoint,
                t.metrics
                    .as_deref()
                    .map(|m| format!(", metrics to {m}"))
                    .unwrap_or_default(),
                match t.protocol {
                    Protocol::HttpProtobuf => "OTLP/HTTP (protobuf)",
                    Protocol::Grpc => "OTLP/gRPC",
                },
                if self.capture_content {
                    ", with message content (secrets redacted)"
                } else {
                    ""
                }
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> TelemetryConfig {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        TelemetryConfig::from_vars(|k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
    }

    #[test]
    fn off_unless_an_endpoint_is_set_and_not_disabled() {
        assert_eq!(config(&[]).target(), None);
        assert!(config(&[]).describe().contains("off"));
        let on = config(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318/")]);
        assert_eq!(
            on.target(),
            Some(Target {
                endpoint: "http://127.0.0.1:4318/v1/traces".into(),
                metrics: Some("http://127.0.0.1:4318/v1/metrics".into()),
                protocol: Protocol::HttpProtobuf
            })
        );
        let disabled = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_SDK_DISABLED", "true"),
        ]);
        assert_eq!(disabled.target(), None);
        let none = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_TRACES_EXPORTER", "none"),
        ]);
        assert_eq!(none.target(), None);
    }

    #[test]
    fn grpc_and_the_traces_endpoint_are_used_as_given() {
        let grpc = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ]);
        assert_eq!(
            grpc.target().map(|t| (t.endpoint, t.protocol)),
            Some(("http://127.0.0.1:4317".to_owned(), Protocol::Grpc))
        );
        let traces = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://ignored:1"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://127.0.0.1:9/custom",
            ),
        ]);
        assert_eq!(
            traces.target().map(|t| t.endpoint),
            Some("http://127.0.0.1:9/custom".to_owned())
        );
        assert!(
            config(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:1"),
                ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
            ])
            .describe()
            .contains("message content")
        );
    }

    #[test]
    fn the_table_fills_in_what_no_variable_sets() {
        let table = TelemetryTable {
            endpoint: Some("http://collector:4317".into()),
            protocol: Some("grpc".into()),
            headers: [("x-team".to_owned(), "a".to_owned())].into(),
            service_name: Some("roost-team".into()),
            sample_ratio: Some(0.25),
            metrics: Some(false),
            ..TelemetryTable::default()
        };
        let from_table = config(&[]).with_table(&table, |_| false);
        assert_eq!(
            from_table.target(),
            Some(Target {
                endpoint: "http://collector:4317".into(),
                metrics: None,
                protocol: Protocol::Grpc
            })
        );
        assert_eq!(from_table.headers, vec![("x-team".into(), "a".into())]);
        assert_eq!(from_table.service_name.as_deref(), Some("roost-team"));
        assert_eq!(from_table.sample_ratio, Some(0.25));
        // A variable that is set wins.
        let vars = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_SERVICE_NAME", "mine"),
        ];
        let over = config(&vars).with_table(&table, |k| vars.iter().any(|(n, _)| *n == k));
        assert_eq!(
            over.target().map(|t| t.endpoint),
            Some("http://127.0.0.1:4318".to_owned())
        );
        assert_eq!(over.service_name, None);
        // `enabled = false` turns it off whatever the variables say.
        let off = TelemetryTable {
            enabled: Some(false),
            ..TelemetryTable::default()
        };
        assert_eq!(config(&vars).with_table(&off, |_| true).target(), None);
    }
}
