//! The network transport: POST the body, stream the response bytes.

use std::time::Duration;

use futures::StreamExt;

use super::{ByteStream, LlmError, Transport, parse_retry_after};

/// Longest error body kept for messages.
const MAX_ERROR_BODY: usize = 2000;

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

#[async_trait::async_trait]
impl Transport for HttpTransport {
    async fn send(&self, body: &bytes::Bytes) -> Result<ByteStream, LlmError> {
        let mut req = self
            .client
            .post(&self.url)
            .body(body.clone())
            .header("content-type", "application/json")
            .header("accept", "text/event-stream");
        for (k, v) in &self.headers {
            req = req.header(k, v);
        }
        let resp = req
            .send()
            .await
            .map_err(|e| LlmError::Connection(root_cause(&e)))?;
        let status = resp.status();
        if !status.is_success() {
            let retry_after = resp
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(parse_retry_after);
            let text = resp.text().await.unwrap_or_default();
            let mut end = text.len().min(MAX_ERROR_BODY);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            let mut body = text[..end].to_owned();
            if status.as_u16() == 404 {
                body = not_found_hint(&self.url, &body);
            }
            return Err(LlmError::Http {
                status: status.as_u16(),
                body,
                retry_after,
            });
        }
        Ok(Box::pin(resp.bytes_stream().map(|r| {
            r.map_err(|e| LlmError::Connection(root_cause(&e)))
        })))
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
