//! Where telemetry goes, from the standard OpenTelemetry variables
//! (`OTEL_EXPORTER_OTLP_ENDPOINT`, `…_TRACES_ENDPOINT`, `…_PROTOCOL`,
//! `…_HEADERS`, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
//! `OTEL_TRACES_SAMPLER[_ARG]`, `OTEL_SDK_DISABLED`, `OTEL_TRACES_EXPORTER`)
//! — read by the SDK and the exporter themselves where they can — and
//! `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` for content.

/// The OTLP transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// OTLP over HTTP with protobuf bodies (`http/protobuf`, the default).
    HttpProtobuf,
    /// OTLP over gRPC (`grpc`).
    Grpc,
}

/// What the environment says about telemetry.
#[derive(Debug, Clone, Default)]
pub struct TelemetryConfig {
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub endpoint: Option<String>,
    /// Whether the endpoint is the traces one (used as is) or the base
    /// (`/v1/traces` appended over HTTP).
    pub traces_endpoint: bool,
    /// `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, else `OTEL_EXPORTER_OTLP_PROTOCOL`.
    pub protocol: Option<String>,
    /// `OTEL_SDK_DISABLED=true`, or `OTEL_TRACES_EXPORTER=none`.
    pub disabled: bool,
    /// Prompts, tool arguments and results on the spans (secrets redacted).
    pub capture_content: bool,
}

/// Where spans go when telemetry is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The URL spans are sent to.
    pub endpoint: String,
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
        let traces = set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
        let traces_endpoint = traces.is_some();
        let yes = |k: &str| set(k).is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
        Self {
            endpoint: traces.or_else(|| set("OTEL_EXPORTER_OTLP_ENDPOINT")),
            traces_endpoint,
            protocol: set("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                .or_else(|| set("OTEL_EXPORTER_OTLP_PROTOCOL")),
            disabled: yes("OTEL_SDK_DISABLED")
                || set("OTEL_TRACES_EXPORTER")
                    .is_some_and(|v| v.trim().eq_ignore_ascii_case("none")),
            capture_content: yes("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"),
        }
    }

    /// Where spans go, or `None` when telemetry is off (no endpoint, or
    /// disabled).
    pub fn target(&self) -> Option<Target> {
        if self.disabled {
            return None;
        }
        let base = self.endpoint.as_deref()?.trim().trim_end_matches('/');
        let protocol = match self.protocol.as_deref().map(str::trim) {
            Some("grpc") => Protocol::Grpc,
            _ => Protocol::HttpProtobuf,
        };
        let endpoint = match protocol {
            Protocol::HttpProtobuf if !self.traces_endpoint => format!("{base}/v1/traces"),
            _ => base.to_owned(),
        };
        Some(Target { endpoint, protocol })
    }

    /// One line saying where spans go (for `roost doctor`).
    pub fn describe(&self) -> String {
        match self.target() {
            None if self.disabled => {
                "telemetry: off (OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none)".to_owned()
            }
            None => "telemetry: off (set OTEL_EXPORTER_OTLP_ENDPOINT to export traces over OTLP)"
                .to_owned(),
            Some(t) => format!(
                "telemetry: traces to {} over {}{}",
                t.endpoint,
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
}
