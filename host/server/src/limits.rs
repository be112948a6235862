//! What every request passes before its route: a refusal at once while
//! the task store is down, the per-token rate limit and, for requests that change state, the `Origin` check (a page on
//! another site cannot drive a user's tasks). CORS is off: no
//! cross-origin response headers are ever sent.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::auth::{Verified, bearer};
use crate::error::ApiError;
use crate::state::ServerState;

/// The rate-limit key of a request: its token's id when the token is
/// valid (a token's requests share a budget), else `anonymous` — one
/// shared budget, so made-up tokens cannot grow the limiter's table. The
/// token's verdict is kept on the request for [`crate::auth::Caller`].
async fn key(state: &ServerState, req: &mut Request) -> String {
    if !state.config.auth {
        return "anonymous".to_owned();
    }
    let Some(token) = bearer(req.headers()) else {
        return "anonymous".to_owned();
    };
    match state.engine.tokens().verify(token).await {
        Ok(record) => {
            let key = record
                .as_ref()
                .map_or_else(|| "anonymous".to_owned(), |r| format!("token:{}", r.id));
            req.extensions_mut().insert(Verified(record));
            key
        }
        // The store failed: the route's own lookup reports it.
        Err(_) => "anonymous".to_owned(),
    }
}

/// Whether `origin` may send state-changing requests to a server reached
/// as `host`.
fn origin_allowed(origin: &str, host: Option<&str>, allowed: &[String]) -> bool {
    if allowed.iter().any(|a| a == origin) {
        return true;
    }
    let Some(host) = host else {
        return false;
    };
    origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
        .is_some_and(|o| o.eq_ignore_ascii_case(host))
}

/// Whether a request to `path` needs the task store: every API route but
/// the probes and the API's own document (the web UI's files need none).
fn needs_store(path: &str) -> bool {
    path.starts_with("/v1/") && !matches!(path, "/v1/health" | "/v1/ready" | "/v1/openapi.json")
}

/// The guard every request passes.
pub async fn guard(
    State(state): State<Arc<ServerState>>,
    mut req: Request,
    next: Next,
) -> Response {
    // While a shared database is down, a request that needs it is answered
    // at once (retry later, or at another host) instead of waiting out the
    // outage as the tasks do.
    if needs_store(req.uri().path()) && !state.engine.records().reachable() {
        return ApiError::store_unavailable("a shared database is down; retry after Retry-After")
            .into_response();
    }
    if state
        .limiter
        .check_key(&key(&state, &mut req).await)
        .is_err()
    {
        return ApiError::rate_limited().into_response();
    }
    let changes = !matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    if changes && let Some(origin) = req.headers().get("origin") {
        let host = req.headers().get("host").and_then(|h| h.to_str().ok());
        let ok = origin
            .to_str()
            .is_ok_and(|o| origin_allowed(o, host, &state.config.allowed_origins));
        if !ok {
            return ApiError::forbidden(
                "a request from another site's page; allow its origin in the server's config",
            )
            .into_response();
        }
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_servers_own_or_allowed_origins_change_state() {
        let allowed = vec!["https://ui.example.com".to_owned()];
        assert!(origin_allowed(
            "http://127.0.0.1:7878",
            Some("127.0.0.1:7878"),
            &[]
        ));
        assert!(origin_allowed(
            "https://ui.example.com",
            Some("x:1"),
            &allowed
        ));
        assert!(!origin_allowed(
            "https://evil.example",
            Some("127.0.0.1:7878"),
            &allowed
        ));
        assert!(!origin_allowed("null", Some("127.0.0.1:7878"), &[]));
        assert!(!origin_allowed("http://127.0.0.1:7878", None, &[]));
    }
}
