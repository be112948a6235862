//! `/metrics`: the process's metrics in the Prometheus text format
//! (`roost serve --metrics`) — the GenAI token and duration histograms,
//! sandboxed calls, refusals by code, task runs by outcome, and this
//! server's queue depth and running tasks. The page names kinds of work
//! (modes, models, tools, codes), never a tenant, a task or a path; still,
//! off loopback it answers only a scrape that brings the metrics token
//! (`--metrics-token-file`), and the server will not start otherwise.

use std::sync::{Arc, Weak};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use roost_core::telemetry::Scrape;

use crate::error::ApiError;
use crate::state::ServerState;
use roost_protocol::EngineErrorCode;

/// The page and who may read it.
#[derive(Clone)]
pub struct MetricsPage {
    /// The metrics as a scrape reads them.
    pub scrape: Scrape,
    /// The bearer token a scrape must bring (its hash: compared in
    /// constant time); none: any caller that reaches a loopback server.
    token: Option<blake3::Hash>,
}

impl std::fmt::Debug for MetricsPage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsPage")
            .field("token", &self.token.is_some())
            .finish()
    }
}

impl MetricsPage {
    /// The page of `scrape`, read with `token` (none: loopback only).
    pub fn new(scrape: Scrape, token: Option<&str>) -> Self {
        Self {
            scrape,
            token: token.map(|t| blake3::hash(t.trim().as_bytes())),
        }
    }

    /// Whether it needs a token.
    pub fn gated(&self) -> bool {
        self.token.is_some()
    }

    /// Whether a request with `headers` may read it.
    fn admits(&self, headers: &HeaderMap) -> bool {
        match &self.token {
            None => true,
            Some(want) => crate::auth::bearer(headers)
                .is_some_and(|given| blake3::hash(given.as_bytes()) == *want),
        }
    }
}

/// `GET /metrics`.
pub(crate) async fn page(State(state): State<Arc<ServerState>>, headers: HeaderMap) -> Response {
    let Some(page) = &state.config.metrics else {
        return crate::error::not_found().await.into_response();
    };
    if !page.admits(&headers) {
        return ApiError::new(
            StatusCode::UNAUTHORIZED,
            EngineErrorCode::Unauthorized,
            "the metrics token is needed: Authorization: Bearer <the token in --metrics-token-file>",
        )
        .into_response();
    }
    let scrape = page.scrape.clone();
    match tokio::task::spawn_blocking(move || scrape.text()).await {
        Ok(text) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, Scrape::CONTENT_TYPE)],
            text,
        )
            .into_response(),
        Err(e) => ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            EngineErrorCode::Internal,
            format!("the metrics cannot be read: {e}"),
        )
        .into_response(),
    }
}

/// Report this server's queue depth and running tasks in the metrics
/// (for as long as it lives).
pub(crate) fn observe(state: &Arc<ServerState>) {
    let weak: Weak<ServerState> = Arc::downgrade(state);
    roost_core::telemetry::metrics::observe_serve(move || {
        weak.upgrade().map(|s| s.load()).unwrap_or_default()
    });
}
