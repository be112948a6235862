//! What a front-end is told when the engine refuses a request: a stable
//! code to branch on and a message for a person. The HTTP server sends
//! it as the JSON body of an error; the CLI prints its message.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Why the engine refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EngineErrorCode {
    /// No such task (or question) here.
    NotFound,
    /// An id prefix matches more than one task.
    Ambiguous,
    /// The request is malformed or names what does not exist (an unknown
    /// mode, a workspace that cannot be opened, an unknown endpoint).
    InvalidRequest,
    /// The task's state does not allow it (started already, finished,
    /// the question answered already).
    Conflict,
    /// The store could not be read or written, or holds what does not
    /// decode.
    Storage,
    /// A task's loop ended without an outcome.
    Internal,
    /// No valid credentials (missing, unknown, expired or revoked token).
    Unauthorized,
    /// Valid credentials, but not for this (a workspace outside the
    /// tenant's root, a cross-site request).
    Forbidden,
    /// The request body is larger than the server takes.
    TooLarge,
    /// Too many requests for this token: retry after the `Retry-After`.
    RateLimited,
    /// The server is at its task capacity and its queue is full: retry
    /// after the `Retry-After`.
    Overloaded,
}

impl EngineErrorCode {
    /// Its name, as on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotFound => "not_found",
            Self::Ambiguous => "ambiguous",
            Self::InvalidRequest => "invalid_request",
            Self::Conflict => "conflict",
            Self::Storage => "storage",
            Self::Internal => "internal",
            Self::Unauthorized => "unauthorized",
            Self::Forbidden => "forbidden",
            Self::TooLarge => "too_large",
            Self::RateLimited => "rate_limited",
            Self::Overloaded => "overloaded",
        }
    }
}

impl EngineErrorCode {
    /// Whether the same request may succeed later (a client retries
    /// after `Retry-After`).
    pub fn retryable(self) -> bool {
        matches!(self, Self::RateLimited | Self::Overloaded)
    }
}

impl std::fmt::Display for EngineErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refused request, as a front-end shows or sends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorBody {
    /// What went wrong, to branch on.
    pub code: EngineErrorCode,
    /// What went wrong, for a person.
    pub message: String,
}
