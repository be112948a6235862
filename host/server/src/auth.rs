//! Who is calling: `Authorization: Bearer <token>` names a tenant and its
//! workspace root. Without auth (loopback only) every caller is the one
//! local tenant.

use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::HeaderMap;
use axum::http::request::Parts;
use roost_core::engine::TokenRecord;

use crate::error::ApiError;
use crate::state::{LOCAL_TENANT, ServerState};

/// The caller of a request.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The tenant it acts for.
    pub tenant: String,
    /// The tenant's workspace root (canonical).
    pub root: PathBuf,
}

/// The bearer token of a request, if it has one.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get("authorization")?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

/// A request's token as the guard found it (valid, or `None`), kept in
/// the request's extensions so the token is looked up once per request.
#[derive(Debug, Clone)]
pub struct Verified(pub Option<TokenRecord>);

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
        let verified = match parts.extensions.get::<Verified>() {
            Some(Verified(record)) => Ok(record.clone()),
            None => {
                let token = bearer(&parts.headers).ok_or_else(ApiError::unauthorized)?;
                state.engine.tokens().verify(token).await
            }
        };
        match verified {
            Ok(Some(t)) => Ok(Self {
                tenant: t.tenant,
                root: PathBuf::from(t.root),
            }),
            Ok(None) => Err(ApiError::unauthorized()),
            Err(e) => Err(e.into()),
        }
    }
}
