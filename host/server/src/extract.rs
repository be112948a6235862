//! Request bodies and query strings whose rejections are API errors (a
//! JSON body with a code), not axum's plain-text ones.

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use roost_protocol::EngineErrorCode;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// A JSON body.
pub struct Body<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(v)) => Ok(Self(v)),
            Err(JsonRejection::BytesRejection(e))
                if e.status() == StatusCode::PAYLOAD_TOO_LARGE =>
            {
                Err(ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    EngineErrorCode::TooLarge,
                    "the request body is larger than this server takes",
                ))
            }
            Err(JsonRejection::MissingJsonContentType(_)) => Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                EngineErrorCode::InvalidRequest,
                "send the body as JSON (Content-Type: application/json)",
            )),
            Err(e) => Err(ApiError::invalid(format!(
                "the body is not what this route takes: {}",
                e.body_text()
            ))),
        }
    }
}

/// A query string.
pub struct Query<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(v)) => Ok(Self(v)),
            Err(e @ QueryRejection::FailedToDeserializeQueryString(_)) => {
                Err(ApiError::invalid(e.body_text()))
            }
            Err(e) => Err(ApiError::invalid(e.body_text())),
        }
    }
}

/// Path parameters (a task id, a checkpoint number): one that does not
/// decode (`%FF`, a checkpoint that is not a number) is an API error too.
pub struct Path<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for Path<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(v)) => Ok(Self(v)),
            Err(e) => Err(ApiError::invalid(e.body_text())),
        }
    }
}
