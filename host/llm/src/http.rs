//! The network transport: POST the body, stream the response bytes.

use std::time::Duration;

use futures::StreamExt;

use super::body::HttpBody;
use super::{ByteStream, LlmError, RequestBody, Transport, parse_retry_after, summarise_body};

/// POSTs JSON to one endpoint with the given headers.
pub struct HttpTransport {
    client: reqwest::Client,
    url: String,
    headers: Vec<(String, String)>,
}

impl HttpTransport {
    /// A transport for `url`; `headers` carry auth (`Authorization`,
    /// `x-api-key`, …).
    pub fn new(url: impl Into<String>, headers: Vec<(String, String)>) -> Result<Self, LlmError> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .read_timeout(Duration::from_secs(300))
            .build()
            .map_err(|e| LlmError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self {
            client,
            url: url.into(),
            headers,
        })
    }
}

/// The current trace context as W3C headers (`traceparent`), so the
/// provider's side of a request can join the task's trace; none unless
/// telemetry installed a propagator.
fn trace_headers() -> std::collections::HashMap<String, String> {
    let mut headers = std::collections::HashMap::new();
    opentelemetry::global::get_text_map_propagator(|p| {
        p.inject_context(&opentelemetry::Context::current(), &mut headers);
    });
    headers
}

#[async_trait::async_trait]
impl Transport for HttpTransport {
    async fn send(&self, body: &RequestBody) -> Result<ByteStream, LlmError> {
        // Written out piece by piece, with its length up front.
        let mut req = self
            .client
            .post(&self.url)
            .body(reqwest::Body::wrap(HttpBody::new(body.clone())))
            .header("content-type", "application/json")
            .header("accept", "text/event-stream");
        for (k, v) in &self.headers {
            req = req.header(k, v);
        }
        for (k, v) in trace_headers() {
            req = req.header(k, v);
        }
        let resp = req.send().await.map_err(|e| {
            if refused(&e) {
                LlmError::Unreachable(origin(&self.url))
            } else {
                LlmError::Connection(root_cause(&e))
            }
        })?;
        let status = resp.status();
        if !status.is_success() {
            let retry_after = resp
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(parse_retry_after);
            let html = is_html(resp.headers());
            let text = resp.text().await.unwrap_or_default();
            let mut body = summarise_body(&text, html);
            if status.as_u16() == 404 {
                body = if mentions_model(&text) {
                    self.model_not_found(&body).await
                } else {
                    not_found_hint(&self.url, &body)
                };
            }
            return Err(LlmError::Http {
                status: status.as_u16(),
                body,
                retry_after,
            });
        }
        // A web page where a stream was expected: the base URL points at
        // a website or a proxy's login page, not a model API. Retrying
        // cannot help.
        if is_html(resp.headers()) {
            let text = resp.text().await.unwrap_or_default();
            return Err(LlmError::Decode(format!(
                "{} answered with {}, not a model API's stream; check --base-url",
                self.url,
                summarise_body(&text, true)
            )));
        }
        Ok(Box::pin(resp.bytes_stream().map(|r| {
            r.map_err(|e| LlmError::Connection(root_cause(&e)))
        })))
    }
}

impl HttpTransport {
    /// A 404 about the model: say so, and list the models the server has
    /// when its `/models` answers (OpenAI-compatible servers, Ollama,
    /// Anthropic all list them there).
    async fn model_not_found(&self, body: &str) -> String {
        let base = self
            .url
            .trim_end_matches("/chat/completions")
            .trim_end_matches("/messages");
        let mut req = self
            .client
            .get(format!("{base}/models"))
            .timeout(Duration::from_secs(10));
        for (k, v) in &self.headers {
            req = req.header(k, v);
        }
        let listed = match req.send().await {
            Ok(r) if r.status().is_success() => r.json::<serde_json::Value>().await.ok(),
            _ => None,
        };
        let names: Vec<String> = listed
            .as_ref()
            .and_then(|v| v.get("data").or_else(|| v.get("models")))
            .and_then(serde_json::Value::as_array)
            .map(|models| {
                models
                    .iter()
                    .filter_map(|m| m.get("id").or_else(|| m.get("name")))
                    .filter_map(serde_json::Value::as_str)
                    .take(40)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        if names.is_empty() {
            format!("{body} (the model was not found at {base}; check --model)")
        } else {
            format!(
                "{body} (the model was not found at {base}; it has: {}; pass one with --model)",
                names.join(", ")
            )
        }
    }
}

/// Whether a response says it is an HTML page.
fn is_html(headers: &reqwest::header::HeaderMap) -> bool {
    headers
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.to_ascii_lowercase().contains("text/html"))
}

/// Whether an error body is about the model (OpenAI's `model_not_found`,
/// Ollama's `model "x" not found`).
fn mentions_model(body: &str) -> bool {
    body.to_ascii_lowercase().contains("model")
}

/// Whether the connection was refused: nothing listens at the address
/// (as opposed to a timeout or a dropped connection, which may pass).
fn refused(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    while let Some(c) = cur {
        if c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
        {
            return true;
        }
        cur = c.source();
    }
    false
}

/// `scheme://host:port` of `url` (the request's path says nothing about
/// where a server should listen).
fn origin(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => u.origin().ascii_serialization(),
        Err(_) => url.to_owned(),
    }
}

/// An error with its causes, innermost last: reqwest's own message ("error
/// sending request for url …") leaves out what the user needs ("Connection
/// refused").
fn root_cause(e: &dyn std::error::Error) -> String {
    let mut msg = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let s = c.to_string();
        if !msg.contains(&s) {
            msg.push_str(": ");
            msg.push_str(&s);
        }
        cur = c.source();
    }
    msg
}

/// A 404 names the URL that was tried and, when the base URL has no API
/// version (`http://localhost:11434` instead of `…/v1`), the likely fix.
fn not_found_hint(url: &str, body: &str) -> String {
    let mut msg = format!("{body} (POST {url} was not found");
    if let Some((base, endpoint)) = url.rsplit_once('/').and_then(|(rest, last)| {
        let (base, mid) = rest.rsplit_once('/').unwrap_or((rest, ""));
        (last == "completions" && mid == "chat")
            .then_some((base, "chat/completions"))
            .or_else(|| (last == "messages").then_some((rest, "messages")))
    }) && !base.trim_end_matches('/').ends_with("/v1")
    {
        msg.push_str(&format!(
            "; the base URL `{base}` has no API version: try `--base-url {}/v1` (requests go to <base URL>/{endpoint})",
            base.trim_end_matches('/')
        ));
    } else {
        msg.push_str("; check --base-url");
    }
    msg.push(')');
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A refused connection is told apart from other failures, through
    /// the error's causes.
    #[tokio::test]
    async fn a_refused_connection_is_unreachable_and_not_retried() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("port");
        let t = HttpTransport::new(
            format!("http://127.0.0.1:{port}/v1/chat/completions"),
            vec![],
        )
        .expect("transport");
        let e = match t.send(&RequestBody::from(&b"{}"[..])).await {
            Err(e) => e,
            Ok(_) => panic!("nothing listens there"),
        };
        assert_eq!(e, LlmError::Unreachable(format!("http://127.0.0.1:{port}")));
        assert!(!e.is_retryable());
        assert_eq!(origin("not a url"), "not a url");
    }

    #[test]
    fn error_bodies_are_one_line() {
        let page =
            "<!DOCTYPE html>\n<html><head><TITLE>Sign in</TITLE></head>\n<body>…</body></html>";
        assert_eq!(summarise_body(page, true), "an HTML page (\"Sign in\")");
        assert_eq!(
            summarise_body("<html><body>x</body>", false),
            "an HTML page"
        );
        assert_eq!(
            summarise_body(
                r#"{"error":{"message":"The model `x` does not exist"}}"#,
                false
            ),
            "The model `x` does not exist"
        );
        assert_eq!(
            summarise_body(
                r#"{"error":"model \"x\" not found, try pulling it first"}"#,
                false
            ),
            "model \"x\" not found, try pulling it first"
        );
        assert_eq!(summarise_body("line one\nline two", false), "line one");
        // A JSON message over lines, or with escapes, is one line too
        // (found by the error_body fuzz target).
        assert_eq!(
            summarise_body(
                r#"{"error":{"message":"model\nnot \u001b[31mfound"}}"#,
                false
            ),
            "model not  [31mfound"
        );
        let long = "é".repeat(400);
        assert!(summarise_body(&long, false).chars().count() <= 151);
    }

    #[test]
    fn a_404_names_the_url_and_the_fix() {
        let m = not_found_hint(
            "http://localhost:11434/chat/completions",
            "404 page not found",
        );
        assert!(
            m.contains("POST http://localhost:11434/chat/completions"),
            "{m}"
        );
        assert!(m.contains("--base-url http://localhost:11434/v1"), "{m}");
        let m = not_found_hint("http://h/v1/chat/completions", "");
        assert!(m.contains("check --base-url") && !m.contains("try"), "{m}");
        let m = not_found_hint("http://h/messages", "");
        assert!(m.contains("--base-url http://h/v1"), "{m}");
    }
}
