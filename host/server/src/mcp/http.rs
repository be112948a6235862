//! The streamable HTTP transport of `roost mcp serve`, at `/mcp`.
//!
//! A local MCP server is reachable from every web page the user opens: a
//! page on `evil.example` can resolve its own name to 127.0.0.1 (DNS
//! rebinding) and post to the server. So every request must name the
//! server in its `Host` header (the bound address, `localhost`,
//! `127.0.0.1` or `[::1]` with the bound port, or an `--allowed-host`;
//! the one check `roost serve` applies too, [`crate::host_check`]), and a
//! request carrying an `Origin` must come from one of those (403
//! otherwise; `rmcp` checks the origin). Off loopback the server is reachable
//! by other machines: it refuses to start without a token, and with one
//! every request must carry `Authorization: Bearer <token>` (401).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use super::RoostMcp;
use crate::host_check::{self, AllowedHosts};

/// The path the MCP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";

/// How the HTTP transport is exposed.
#[derive(Debug, Clone, Default)]
pub struct HttpOptions {
    /// More `Host` values clients may use (`host` for any port, or
    /// `host:port`), for a server reached by a name or address of its own.
    pub allowed_hosts: Vec<String>,
    /// The bearer token every request must carry (required off loopback).
    pub token: Option<String>,
}

/// Why the HTTP transport did not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// A non-loopback address without a token.
    #[error(
        "refusing to serve MCP on {0} without a token: off loopback, other machines can reach it; \
         pass --token or set ROOST_MCP_TOKEN (clients send `Authorization: Bearer <token>`)"
    )]
    NoToken(SocketAddr),
    /// An empty token.
    #[error("the MCP token is empty")]
    EmptyToken,
    /// An `--allowed-host` that is not a host.
    #[error("--allowed-host {0}: not a host name, address or host:port")]
    BadHost(String),
    /// Serving failed.
    #[error("the MCP server stopped: {0}")]
    Serve(#[source] std::io::Error),
}

/// Check that `addr` may be served with `options`: a token off loopback,
/// and well-formed allowed hosts.
pub fn check_exposure(addr: SocketAddr, options: &HttpOptions) -> Result<(), HttpError> {
    match options.token.as_deref() {
        Some("") => return Err(HttpError::EmptyToken),
        None if !addr.ip().is_loopback() => return Err(HttpError::NoToken(addr)),
        _ => {}
    }
    AllowedHosts::check(&options.allowed_hosts).map_err(|e| HttpError::BadHost(e.0))?;
    Ok(())
}

/// Serve `server` on `listener` at [`MCP_PATH`] until `shutdown`
/// resolves; open sessions end then.
pub async fn serve_http(
    listener: tokio::net::TcpListener,
    server: RoostMcp,
    options: HttpOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), HttpError> {
    let addr = listener.local_addr().map_err(HttpError::Serve)?;
    check_exposure(addr, &options)?;
    let hosts =
        AllowedHosts::new(addr, &options.allowed_hosts).map_err(|e| HttpError::BadHost(e.0))?;
    // The `Host` is checked by the guard below, as `roost serve` checks
    // it; rmcp checks the `Origin`.
    let config = StreamableHttpServerConfig::default()
        .with_allowed_origins(hosts.origins())
        .enforce_origin_validation()
        .disable_allowed_hosts();
    let sessions = config.cancellation_token.clone();
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let token = Arc::new(options.token);
    let app = Router::new()
        .route_service(MCP_PATH, service)
        .layer(axum::middleware::from_fn_with_state(token, bearer))
        .layer(axum::middleware::from_fn_with_state(
            Arc::new(hosts),
            host_check::guard,
        ));
    let signal = async move {
        shutdown.await;
        sessions.cancel();
    };
    axum::serve(listener, app)
        .with_graceful_shutdown(signal)
        .await
        .map_err(HttpError::Serve)
}

/// Refuse a request without the token, when there is one.
async fn bearer(
    State(token): State<Arc<Option<String>>>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(token) = token.as_deref()
        && !carries(request.headers(), token)
    {
        tracing::warn!("refused an MCP request without the right bearer token");
        return (
            StatusCode::UNAUTHORIZED,
            [(WWW_AUTHENTICATE, "Bearer")],
            "Unauthorized: send Authorization: Bearer <token>",
        )
            .into_response();
    }
    next.run(request).await
}

/// Whether `headers` carry `Authorization: Bearer <token>`.
fn carries(headers: &HeaderMap, token: &str) -> bool {
    let Some(value) = headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let Some((scheme, given)) = value.trim().split_once(' ') else {
        return false;
    };
    scheme.eq_ignore_ascii_case("bearer") && same(given.trim().as_bytes(), token.as_bytes())
}

/// Compare without leaking, through timing, how much of a guess was right.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn exposure_and_hosts() {
        let lo: SocketAddr = "127.0.0.1:8765".parse().expect("addr");
        let open: SocketAddr = "0.0.0.0:8765".parse().expect("addr");
        assert!(check_exposure(lo, &HttpOptions::default()).is_ok());
        assert!(matches!(
            check_exposure(open, &HttpOptions::default()),
            Err(HttpError::NoToken(_))
        ));
        let with = HttpOptions {
            token: Some("t0ken".into()),
            allowed_hosts: vec!["box.lan".into(), "10.0.0.2:8765".into()],
        };
        assert!(check_exposure(open, &with).is_ok());
        let bad = HttpOptions {
            allowed_hosts: vec!["http://x/".into()],
            ..HttpOptions::default()
        };
        assert!(matches!(
            check_exposure(lo, &bad),
            Err(HttpError::BadHost(_))
        ));
        let hosts = AllowedHosts::new(open, &with.allowed_hosts).expect("hosts");
        assert!(hosts.allows("localhost:8765"));
        assert!(!hosts.allows("0.0.0.0:8765"));
        let origins = hosts.origins();
        assert!(origins.contains(&"http://localhost:8765".to_owned()));
        assert!(origins.contains(&"https://box.lan:*".to_owned()));
    }

    #[test]
    fn bearer_tokens() {
        let mut h = HeaderMap::new();
        assert!(!carries(&h, "s3cret"));
        h.insert(AUTHORIZATION, "Bearer s3cret".parse().expect("value"));
        assert!(carries(&h, "s3cret"));
        assert!(!carries(&h, "s3cre"));
        h.insert(AUTHORIZATION, "bearer s3cret".parse().expect("value"));
        assert!(carries(&h, "s3cret"));
        h.insert(AUTHORIZATION, "Basic s3cret".parse().expect("value"));
        assert!(!carries(&h, "s3cret"));
    }
}
