//! Provider errors, classified so the caller knows what to retry.

use std::time::Duration;

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
