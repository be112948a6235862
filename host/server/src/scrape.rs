//! `GET /metrics` (`roost serve --metrics`): the GenAI token and duration
//! histograms, sandboxed calls, refusals by code, task runs by outcome,
//! and this server's queue depth and running tasks, in the Prometheus
//! text format. The page names kinds of work (modes, models, tools,
//! codes), never a tenant, a task or a path; still, off loopback it
//! answers only a scrape that brings the metrics token
//! (`--metrics-token-file`), and the server will not start otherwise.

use std::sync::{Arc, Weak};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use roost_core::telemetry::Scrape;
use roost_protocol::EngineErrorCode;

use crate::error::ApiError;
use crate::state::ServerState;

/// `GET /metrics`.
pub(crate) async fn page(State(state): State<Arc<ServerState>>, headers: HeaderMap) -> Response {
    let Some(page) = &state.config.metrics else {
        return crate::error::not_found().await.into_response();
    };
    if !page.admits(crate::auth::bearer(&headers)) {
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
