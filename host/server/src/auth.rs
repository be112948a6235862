//! Who is calling: `Authorization: Bearer <token>` names a tenant and its
//! workspace root. Without auth (loopback only) every caller is the one
//! local tenant.

use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use crate::error::ApiError;
use crate::state::ServerState;

/// The tenant of the local, unauthenticated server.
pub const LOCAL_TENANT: &str = "local";

/// The caller of a request.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The tenant it acts for.
    pub tenant: String,
    /// The tenant's workspace root (canonical).
    pub root: PathBuf,
}

/// The bearer token of a request, if it has one.
pub fn bearer(parts: &Parts) -> Option<&str> {
    let value = parts.headers.get("authorization")?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

impl FromRequestParts<Arc<ServerState>> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<ServerState>,
    ) -> Result<Self, Self::Rejection> {
        if !state.config.auth {
            return Ok(Self {
                tenant: LOCAL_TENANT.to_owned(),
                root: state.config.local_root.clone(),
            });
        }
        let token = bearer(parts).ok_or_else(ApiError::unauthorized)?;
        match state.engine.tokens().verify(token) {
            Ok(Some(t)) => Ok(Self {
                tenant: t.tenant,
                root: PathBuf::from(t.root),
            }),
            Ok(None) => Err(ApiError::unauthorized()),
            Err(e) => Err(e.into()),
        }
    }
}
