//! Every error is a JSON body with a stable code (the protocol's
//! [`EngineErrorCode`]) and a message for a person; retryable ones carry
//! `Retry-After`.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use roost_core::engine::EngineError;
use roost_core::session::SessionError;
use roost_protocol::{EngineErrorCode, ErrorBody};

/// A refused request.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    body: ErrorBody,
    retry_after: Option<u64>,
}

impl ApiError {
    /// A refusal with `status`, `code` and `message`.
    pub fn new(status: StatusCode, code: EngineErrorCode, message: impl Into<String>) -> Self {
        Self {
            status,
            body: ErrorBody {
                code,
                message: message.into(),
            },
            retry_after: None,
        }
    }

    /// `404`: no such thing for this caller (also another tenant's).
    pub fn not_found(what: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            EngineErrorCode::NotFound,
            format!("no {what} here"),
        )
    }

    /// `400` with `message`.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            EngineErrorCode::InvalidRequest,
            message,
        )
    }

    /// `401`.
    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            EngineErrorCode::Unauthorized,
            "a valid token is needed: Authorization: Bearer <token> (`roost token create`)",
        )
    }

    /// `403` with `message`.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, EngineErrorCode::Forbidden, message)
    }

    /// `429`, retry after a second.
    pub fn rate_limited() -> Self {
        let mut e = Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            EngineErrorCode::RateLimited,
            "too many requests for this token; retry after the Retry-After",
        );
        e.retry_after = Some(1);
        e
    }

    /// `503`: the task store does not answer (a shared database that is
    /// down); retry later.
    pub fn store_unavailable(detail: &str) -> Self {
        let mut e = Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            EngineErrorCode::Storage,
            format!("the task store does not answer: {detail}"),
        );
        e.retry_after = Some(5);
        e
    }

    /// `503`: the task queue is full; retry later.
    pub fn overloaded() -> Self {
        let mut e = Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            EngineErrorCode::Overloaded,
            "the server is at its task capacity and its queue is full; retry after the Retry-After",
        );
        e.retry_after = Some(5);
        e
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> Self {
        let body = e.body();
        let status = match body.code {
            // Another tenant's id and an unknown one look the same.
            EngineErrorCode::NotFound | EngineErrorCode::Ambiguous => StatusCode::NOT_FOUND,
            EngineErrorCode::InvalidRequest => StatusCode::BAD_REQUEST,
            EngineErrorCode::Conflict => StatusCode::CONFLICT,
            EngineErrorCode::Unauthorized => StatusCode::UNAUTHORIZED,
            EngineErrorCode::Forbidden => StatusCode::FORBIDDEN,
            EngineErrorCode::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            EngineErrorCode::RateLimited => StatusCode::TOO_MANY_REQUESTS,
            EngineErrorCode::Overloaded => StatusCode::SERVICE_UNAVAILABLE,
            EngineErrorCode::Storage | EngineErrorCode::Internal => {
                tracing::error!("{}", body.message);
                StatusCode::INTERNAL_SERVER_ERROR
            }
        };
        let body = match body.code {
            EngineErrorCode::NotFound | EngineErrorCode::Ambiguous => ErrorBody {
                code: EngineErrorCode::NotFound,
                message: "no such task here".to_owned(),
            },
            // The store's words stay in the server's log.
            EngineErrorCode::Storage | EngineErrorCode::Internal => ErrorBody {
                code: body.code,
                message: "the server could not do it; see its log".to_owned(),
            },
            _ => body,
        };
        Self {
            status,
            body,
            retry_after: None,
        }
    }
}

impl From<SessionError> for ApiError {
    fn from(e: SessionError) -> Self {
        match e {
            SessionError::NotFound => Self::not_found("such task"),
            SessionError::Conflict(m) => {
                Self::new(StatusCode::CONFLICT, EngineErrorCode::Conflict, m)
            }
            SessionError::Invalid(m) => Self::invalid(m),
            SessionError::Engine(e) => Self::from(e),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut r = (self.status, axum::Json(self.body)).into_response();
        if let Some(secs) = self.retry_after {
            r.headers_mut()
                .insert("retry-after", HeaderValue::from(secs));
        }
        r
    }
}

/// Any route that does not exist.
pub async fn not_found() -> ApiError {
    ApiError::not_found("such route")
}

/// A route that exists, called with a method it does not take (axum
/// adds the `Allow` header); the body is an error like every other.
pub async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        EngineErrorCode::InvalidRequest,
        format!("{} does not take {method}", uri.path()),
    )
}
