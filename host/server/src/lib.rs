//! `roost serve`: the engine over HTTP for a team on one shared machine.
//! A REST API under `/v1` (JSON in and out; every error a JSON body with a
//! stable code), live events over Server-Sent Events with `Last-Event-ID`
//! replay from the durable event log, and tenants: each token acts for
//! one tenant, whose tasks lie under its workspace root and whose ids
//! other tenants cannot see.
//!
//! Imports only `roost-core` and `roost-protocol`: the server is one more
//! front-end of the engine, like the CLI.

mod api;
mod asks;
mod auth;
mod catalog;
mod error;
mod events;
mod extract;
mod limits;
pub mod mcp;
mod queue;
mod state;
mod tasks;
mod ui;
mod workspace;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;

pub use api::openapi;
pub use error::ApiError;
pub use state::{ServerConfig, ServerState};

/// Why the server did not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A non-loopback address without authentication.
    #[error(
        "refusing to listen on {0} without authentication: --no-auth is only for loopback addresses (127.0.0.1, ::1)"
    )]
    OpenToTheNetwork(SocketAddr),
    /// Serving failed.
    #[error("the server stopped: {0}")]
    Serve(#[source] std::io::Error),
}

/// The API's routes over `state`.
pub fn router(state: Arc<ServerState>) -> Router {
    let v1 = api::v1().fallback(error::not_found);
    Router::new()
        .nest("/v1", v1)
        .merge(ui::routes())
        .fallback(error::not_found)
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&state),
            limits::guard,
        ))
        .layer(axum::extract::DefaultBodyLimit::max(
            state.config.max_body_bytes,
        ))
        .with_state(state)
}

/// Check that `addr` may be served as `state` is configured (no
/// unauthenticated server off loopback).
pub fn check_exposure(addr: SocketAddr, state: &ServerState) -> Result<(), ServeError> {
    if !state.config.auth && !addr.ip().is_loopback() {
        return Err(ServeError::OpenToTheNetwork(addr));
    }
    Ok(())
}

/// How long running tool calls get to finish when the server stops.
pub const STOP_BOUND: std::time::Duration = std::time::Duration::from_secs(30);

/// Serve `state` on `listener` until `shutdown` resolves; then stop taking
/// requests, stop the tasks after their current step (resumable, open
/// questions still open; [`ServerState::resume_stopped`] picks them up at
/// the next start), end the event streams and let open requests finish.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<ServerState>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    if let Ok(addr) = listener.local_addr() {
        check_exposure(addr, &state)?;
    }
    let stopping = Arc::clone(&state);
    let signal = async move {
        shutdown.await;
        stopping.shutdown(STOP_BOUND).await;
    };
    axum::serve(listener, router(state))
        .with_graceful_shutdown(signal)
        .await
        .map_err(ServeError::Serve)
}
