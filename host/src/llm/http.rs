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
    async fn send(&self, body: &serde_json::Value) -> Result<ByteStream, LlmError> {
        let mut req = self
            .client
            .post(&self.url)
            .json(body)
            .header("accept", "text/event-stream");
        for (k, v) in &self.headers {
            req = req.header(k, v);
        }
        let resp = req
            .send()
            .await
            .map_err(|e| LlmError::Connection(e.to_string()))?;
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
            return Err(LlmError::Http {
                status: status.as_u16(),
                body: text[..end].to_owned(),
                retry_after,
            });
        }
        Ok(Box::pin(resp.bytes_stream().map(|r| {
            r.map_err(|e| LlmError::Connection(e.to_string()))
        })))
    }
}
