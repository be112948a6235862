//! Provider errors, classified so the caller knows what to retry.

use std::time::Duration;

/// Longest error body kept for messages.
const MAX_ERROR_BODY: usize = 2000;

/// Why a model request or stream failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// The server answered with an error status.
    #[error("HTTP {status} from the provider: {body}")]
    Http {
        /// Status code.
        status: u16,
        /// Response body (cut).
        body: String,
        /// Retry-After, when the server sent one.
        retry_after: Option<Duration>,
    },
    /// The connection failed or dropped.
    #[error("connection to the provider failed: {0}")]
    Connection(String),
    /// Nothing listens at the endpoint (the connection was refused): a
    /// server that is not running, or a wrong port. Said once, not
    /// retried.
    #[error(
        "nothing listens at {0} (connection refused): start the model server or fix the base URL; \
         `roost doctor` checks every configured endpoint"
    )]
    Unreachable(String),
    /// The stream ended before the reply was complete.
    #[error("the provider's stream ended before the reply was complete")]
    TruncatedStream,
    /// The stream carried something that is not the expected format.
    #[error("cannot decode the provider's stream: {0}")]
    Decode(String),
    /// The provider sent an error event.
    #[error("the provider reported an error: {0}")]
    Provider(String),
    /// Misconfiguration (no API key, bad URL, script exhausted…).
    #[error("{0}")]
    Config(String),
    /// The retry policy is spent: every attempt failed. Not retried again
    /// by anyone (there is one retry layer).
    #[error("gave up after {attempts} attempts: {last}")]
    GaveUp {
        /// Requests made.
        attempts: u32,
        /// The last failure.
        last: Box<LlmError>,
    },
}

impl LlmError {
    /// The error's kind as a short stable name (a span's and a metric's
    /// `error.type`): never its message, which may quote a server.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Http { .. } => "http",
            Self::Connection(_) => "connection",
            Self::Unreachable(_) => "unreachable",
            Self::TruncatedStream => "truncated_stream",
            Self::Decode(_) => "decode",
            Self::Provider(_) => "provider",
            Self::Config(_) => "config",
            Self::GaveUp { .. } => "gave_up",
        }
    }

    /// Whether trying again may help: 429, 5xx, connection errors and
    /// overloaded/rate-limit error events.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Http { status, .. } => *status == 429 || *status == 408 || *status >= 500,
            Self::Connection(_) | Self::TruncatedStream => true,
            Self::Provider(m) => {
                let m = m.to_ascii_lowercase();
                m.contains("overloaded") || m.contains("rate limit") || m.contains("rate_limit")
            }
            Self::Decode(_) | Self::Config(_) | Self::Unreachable(_) | Self::GaveUp { .. } => false,
        }
    }

    /// The server's Retry-After, if it sent one.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// Parse a Retry-After header: delay in seconds or an HTTP date.
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0)
            .then(|| Duration::from_secs_f64(secs.min(3600.0)));
    }
    let when = httpdate::parse_http_date(v).ok()?;
    Some(
        when.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// A provider's error body (outside input: any bytes a server or proxy
/// sends) in one line: a JSON error's message, an HTML page's title, else
/// the first line of the text, cut.
pub fn summarise_body(text: &str, html: bool) -> String {
    let trimmed = text.trim();
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(trimmed) {
        let message = v
            .pointer("/error/message")
            .or_else(|| v.get("error"))
            .or_else(|| v.get("message"))
            .and_then(serde_json::Value::as_str);
        if let Some(m) = message {
            return cut(m, MAX_ERROR_BODY);
        }
        return cut(trimmed, MAX_ERROR_BODY);
    }
    let looks_html = html || trimmed.starts_with('<');
    if looks_html {
        let lower = trimmed.to_ascii_lowercase();
        let title = lower.find("<title>").and_then(|start| {
            let from = start + "<title>".len();
            lower[from..]
                .find("</title>")
                .and_then(|len| trimmed.get(from..from + len))
        });
        return match title.map(str::trim).filter(|t| !t.is_empty()) {
            Some(t) => format!("an HTML page (\"{}\")", cut(t, 120)),
            None => "an HTML page".to_owned(),
        };
    }
    let first = trimmed.lines().next().unwrap_or("");
    cut(first, 300)
}

/// `s` on one line (control characters — line breaks, escapes — made
/// spaces: a message the provider wrote over lines, or a hostile one that
/// would move the cursor) and cut to at most `max` bytes on a character
/// boundary (`…` added).
fn cut(s: &str, max: usize) -> String {
    let s: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}
