//! The `Host` allow-list of both HTTP front-ends, `roost serve` and
//! `roost mcp serve --http`, applied to every request before any route.
//!
//! A server on a loopback address is reachable from every web page its
//! user opens: a page on `evil.example` can resolve its own name to
//! 127.0.0.1 (DNS rebinding) and then talk to the server as a page of its
//! own origin — the `Origin` check passes, since the page's origin is the
//! name it used. What it cannot change is that name, which the browser
//! sends as `Host`. So a request must name the server: `localhost`,
//! `127.0.0.1` or `[::1]` with the bound port, the bound address, or a
//! name allowed with `--allowed-host` (a proxy's, or the address clients
//! use when it listens on `0.0.0.0`); anything else is refused with `403`.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::uri::Authority;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// An `--allowed-host` that is not a host.
#[derive(Debug, thiserror::Error)]
#[error("--allowed-host {0}: not a host name, address or host:port")]
pub struct BadHost(pub String);

/// One allowed `Host`: a name or address (lower case, IPv6 without its
/// brackets) and a port, or any port.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Allowed {
    host: String,
    port: Option<u16>,
}

impl Allowed {
    fn parse(value: &str) -> Option<Self> {
        let value = value.trim();
        if value.is_empty() || value.contains(['/', '@', '?', '#']) {
            return None;
        }
        let a = Authority::try_from(value).ok()?;
        let host = a.host().trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return None;
        }
        Some(Self {
            host: host.to_ascii_lowercase(),
            port: a.port_u16(),
        })
    }

    fn matches(&self, asked: &Allowed) -> bool {
        self.host == asked.host
            && match (self.port, asked.port) {
                (None, _) => true,
                (Some(p), Some(q)) => p == q,
                // No port in `Host` is the scheme's default (HTTP's 80).
                (Some(p), None) => p == 80,
            }
    }

    fn name(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        match self.port {
            Some(p) => format!("{host}:{p}"),
            None => host,
        }
    }
}

/// The `Host` values a server answers to.
#[derive(Debug, Clone)]
pub struct AllowedHosts {
    allowed: Vec<Allowed>,
}

impl AllowedHosts {
    /// Check that each of `extra` is a host, `host:port` or address.
    pub fn check(extra: &[String]) -> Result<(), BadHost> {
        for h in extra {
            Allowed::parse(h).ok_or_else(|| BadHost(h.clone()))?;
        }
        Ok(())
    }

    /// What a server bound to `addr` answers to: `localhost`,
    /// `127.0.0.1` and `[::1]` with its port, its address (unless it is
    /// `0.0.0.0` or `::`, which no client names), and `extra`.
    pub fn new(addr: SocketAddr, extra: &[String]) -> Result<Self, BadHost> {
        let port = addr.port();
        let mut names = vec![
            format!("localhost:{port}"),
            format!("127.0.0.1:{port}"),
            format!("[::1]:{port}"),
        ];
        if !addr.ip().is_unspecified() {
            names.push(match addr.ip() {
                IpAddr::V4(ip) => format!("{ip}:{port}"),
                IpAddr::V6(ip) => format!("[{ip}]:{port}"),
            });
        }
        let mut allowed: Vec<Allowed> = Vec::new();
        for n in names.iter().chain(extra) {
            let a = Allowed::parse(n).ok_or_else(|| BadHost(n.clone()))?;
            if !allowed.contains(&a) {
                allowed.push(a);
            }
        }
        Ok(Self { allowed })
    }

    /// The allowed values as `Host` spells them (`host:port`, or `host`
    /// for any port).
    pub fn names(&self) -> Vec<String> {
        self.allowed.iter().map(Allowed::name).collect()
    }

    /// The origins of pages served from those hosts (`:*`: any port, for
    /// a host allowed without one).
    pub fn origins(&self) -> Vec<String> {
        let mut out = Vec::new();
        for a in &self.allowed {
            let authority = match a.port {
                Some(_) => a.name(),
                None => format!("{}:*", a.name()),
            };
            out.push(format!("http://{authority}"));
            out.push(format!("https://{authority}"));
        }
        out
    }

    /// Whether a request naming `host` (a `Host` header's value) is for
    /// this server.
    pub fn allows(&self, host: &str) -> bool {
        Allowed::parse(host).is_some_and(|asked| self.allowed.iter().any(|a| a.matches(&asked)))
    }
}

/// The host a request names: its `Host` header, or the authority of its
/// target (HTTP/2's `:authority`) when it has no such header.
fn named_host(req: &Request) -> Option<String> {
    match req.headers().get(axum::http::header::HOST) {
        Some(v) => v.to_str().ok().map(str::to_owned),
        None => req.uri().authority().map(|a| a.as_str().to_owned()),
    }
}

/// The check every request passes first: a `Host` that is not on the
/// list is refused (`403`, a JSON error body).
pub async fn guard(State(hosts): State<Arc<AllowedHosts>>, req: Request, next: Next) -> Response {
    let named = named_host(&req);
    if named.as_deref().is_some_and(|h| hosts.allows(h)) {
        return next.run(req).await;
    }
    let shown: String = named
        .as_deref()
        .unwrap_or("")
        .chars()
        .filter(|c| !c.is_control())
        .take(100)
        .collect();
    tracing::warn!(host = %shown, "refused a request for a Host this server does not answer to (DNS rebinding?)");
    ApiError::forbidden(format!(
        "the request names Host `{shown}`, which is not this server (a page on another site reaching it \
         through DNS rebinding, say); it answers to {}. A proxy or another name of its own is allowed with \
         --allowed-host",
        hosts.names().join(", ")
    ))
    .into_response()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn loopback_names_the_bound_address_and_extras() {
        let lo: SocketAddr = "127.0.0.1:8765".parse().expect("addr");
        let h = AllowedHosts::new(lo, &["box.lan".into(), "10.0.0.2:9000".into()]).expect("hosts");
        for ok in [
            "localhost:8765",
            "LOCALHOST:8765",
            "127.0.0.1:8765",
            "[::1]:8765",
            "box.lan",
            "box.lan:1234",
            "10.0.0.2:9000",
        ] {
            assert!(h.allows(ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:8765",
            "localhost:8766",
            "localhost",
            "127.0.0.1",
            "10.0.0.2:8765",
            "localhost.evil.example:8765",
            "user@localhost:8765",
            "",
            "127.0.0.1:8765/x",
        ] {
            assert!(!h.allows(bad), "{bad}");
        }
        let open: SocketAddr = "0.0.0.0:80".parse().expect("addr");
        let h = AllowedHosts::new(open, &[]).expect("hosts");
        assert!(h.allows("localhost"), "no port is port 80");
        assert!(!h.allows("0.0.0.0:80"));
        let v6: SocketAddr = "[::1]:7000".parse().expect("addr");
        assert!(
            AllowedHosts::new(v6, &[])
                .expect("hosts")
                .names()
                .contains(&"[::1]:7000".to_owned())
        );
        assert!(AllowedHosts::check(&["http://x/".into()]).is_err());
        assert!(AllowedHosts::check(&["".into()]).is_err());
        assert!(AllowedHosts::check(&["a@b".into()]).is_err());
        assert!(AllowedHosts::check(&["roost.example.com".into(), "[fd00::1]:443".into()]).is_ok());
        let origins = AllowedHosts::new(lo, &["box.lan".into()])
            .expect("hosts")
            .origins();
        assert!(origins.contains(&"http://localhost:8765".to_owned()));
        assert!(origins.contains(&"https://box.lan:*".to_owned()));
    }
}
