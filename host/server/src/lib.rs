//! `roost serve`: the engine over HTTP for a team on one shared machine.
//! A REST API under `/v1` (JSON in and out; every error a JSON body with a
//! stable code), live events over Server-Sent Events with `Last-Event-ID`
//! replay from the durable event log, and tenants: each token acts for
//! one tenant, whose tasks lie under its workspace root (checked again at
//! every start of a task, on the directory as it is then) and whose ids
//! other tenants cannot see. Every route answers only requests that name
//! the server in their `Host` ([`host_check`]: no DNS rebinding).
//!
//! The crate holds Roost's other front-ends too, each apart from its
//! transport: [`mcp`] (`roost mcp serve`) and [`acp`] (`roost acp`, an
//! editor's agent over the Agent Client Protocol).
//!
//! Imports `roost-core` and `roost-protocol`, never the sandbox (Cargo
//! keeps it so: it is not a dependency): the server is one more front-end
//! of the engine, like the CLI.

#![forbid(unsafe_code)]

pub mod acp;
mod api;
mod asks;
mod auth;
mod catalog;
mod error;
mod events;
mod extract;
pub mod host_check;
mod limits;
pub mod mcp;
mod metrics;
mod queue;
mod scrape;
mod state;
mod tasks;
mod ui;
mod workspace;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;

pub use api::openapi;
pub use catalog::profiles_of;
pub use error::ApiError;
pub use metrics::MetricsPage;
pub use state::{ServerConfig, ServerState};

/// Why the server did not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A non-loopback address without authentication.
    #[error(
        "refusing to listen on {0} without authentication: --no-auth is only for loopback addresses (127.0.0.1, ::1)"
    )]
    OpenToTheNetwork(SocketAddr),
    /// `/metrics` off loopback without a token.
    #[error(
        "refusing to serve /metrics on {0} without a token: give --metrics-token-file, or listen on a loopback address"
    )]
    OpenMetrics(SocketAddr),
    /// An allowed host that is not a host.
    #[error(transparent)]
    BadHost(#[from] host_check::BadHost),
    /// Serving failed.
    #[error("the server stopped: {0}")]
    Serve(#[source] std::io::Error),
}

/// The API's routes over `state`, answering only requests whose `Host`
/// is one of `hosts` (every route: the API, its event streams, its
/// document and the web UI).
pub fn router(state: Arc<ServerState>, hosts: host_check::AllowedHosts) -> Router {
    let v1 = api::v1()
        .fallback(error::not_found)
        .method_not_allowed_fallback(error::method_not_allowed);
    let mut router = Router::new();
    if state.config.metrics.is_some() {
        router = router.route("/metrics", axum::routing::get(scrape::page));
    }
    router
        .nest("/v1", v1)
        .merge(ui::routes(state.config.auth))
        .fallback(error::not_found)
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&state),
            limits::guard,
        ))
        .layer(axum::extract::DefaultBodyLimit::max(
            state.config.max_body_bytes,
        ))
        // Outermost: before the rate limit, the store, or a route.
        .layer(axum::middleware::from_fn_with_state(
            Arc::new(hosts),
            host_check::guard,
        ))
        .with_state(state)
}

/// Check that `addr` may be served as `state` is configured (no
/// unauthenticated server off loopback; allowed hosts that are hosts).
pub fn check_exposure(addr: SocketAddr, state: &ServerState) -> Result<(), ServeError> {
    if !state.config.auth && !addr.ip().is_loopback() {
        return Err(ServeError::OpenToTheNetwork(addr));
    }
    if state.config.metrics.as_ref().is_some_and(|m| !m.gated()) && !addr.ip().is_loopback() {
        return Err(ServeError::OpenMetrics(addr));
    }
    host_check::AllowedHosts::check(&state.config.allowed_hosts)?;
    Ok(())
}

/// The `Host` values a server of `state` bound to `addr` answers to.
pub fn allowed_hosts(
    addr: SocketAddr,
    state: &ServerState,
) -> Result<host_check::AllowedHosts, ServeError> {
    Ok(host_check::AllowedHosts::new(
        addr,
        &state.config.allowed_hosts,
    )?)
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
    let addr = listener.local_addr().map_err(ServeError::Serve)?;
    check_exposure(addr, &state)?;
    let hosts = allowed_hosts(addr, &state)?;
    scrape::observe(&state);
    let stopping = Arc::clone(&state);
    let signal = async move {
        shutdown.await;
        stopping.shutdown(STOP_BOUND).await;
    };
    axum::serve(listener, router(state, hosts))
        .with_graceful_shutdown(signal)
        .await
        .map_err(ServeError::Serve)
}
