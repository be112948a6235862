//! The one way out of a command's network namespace: an HTTP proxy the
//! host runs for that command on a Unix socket, which the sandbox sees at
//! a fixed path and a bridge inside serves on the sandbox's own loopback
//! (`HTTP_PROXY`/`HTTPS_PROXY` point there). The proxy lets a request
//! through only to an origin the command's profile names: `CONNECT
//! host:port` for `https` origins, absolute-form requests for `http` ones.
//! Everything else gets `403` and is recorded; the command has no other
//! route out (no interface but loopback).
//!
//! The proxy is an HTTP/1.1 server (hyper), so **every** request on a
//! connection — the first, the next ones of a kept-alive connection,
//! pipelined ones — is parsed, judged and recorded on its own, and a
//! request let through goes on a fresh connection to its own origin with
//! its `Host` set to that origin (a `Host` naming another site is never
//! sent). A `CONNECT` tunnel is the last request of its connection: after
//! it the bytes are the tunnel's, to the origin it named.

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{Either, Empty, Full};
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpStream, UnixListener, UnixStream};
use tokio_util::sync::CancellationToken;

use roost_sandbox::capability::Origin;
use roost_sandbox::capability::network::Scheme;

/// Largest request head read before a request is refused (hyper's
/// smallest buffer is 8 KiB).
const MAX_HEAD: usize = 16 * 1024;

/// One attempt to reach an origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// `scheme://host:port` as asked.
    pub origin: String,
    /// Whether it was let through.
    pub allowed: bool,
}

/// A running proxy for one command.
pub struct Proxy {
    socket: PathBuf,
    attempts: Arc<Mutex<Vec<Attempt>>>,
    /// Stops the listener, every connection and every tunnel.
    stop: CancellationToken,
    /// What it lets through (gone once it stopped).
    judge: std::sync::Weak<Judge>,
}

impl Proxy {
    /// Serve on a new socket in `dir`, letting through `allow`.
    pub fn start(dir: &Path, allow: Vec<Origin>) -> std::io::Result<Self> {
        let socket = dir.join(format!(
            "roost-proxy-{}.sock",
            uuid::Uuid::now_v7().simple()
        ));
        let listener = UnixListener::bind(&socket)?;
        let attempts = Arc::new(Mutex::new(Vec::new()));
        let stop = CancellationToken::new();
        let judge = Arc::new(Judge {
            allow: Mutex::new(Grant {
                tunnels: stop.child_token(),
                origins: allow,
            }),
            seen: Arc::clone(&attempts),
            stop,
        });
        let stop = judge.stop.clone();
        let weak = Arc::downgrade(&judge);
        tokio::spawn(until(stop.clone(), async move {
            loop {
                let Ok((conn, _)) = listener.accept().await else {
                    return;
                };
                let judge = Arc::clone(&judge);
                tokio::spawn(until(judge.stop.clone(), async move {
                    if let Err(e) = serve(conn, judge).await {
                        tracing::debug!("command proxy connection: {e}");
                    }
                }));
            }
        }));
        Ok(Self {
            socket,
            attempts,
            stop,
            judge: weak,
        })
    }

    /// Narrow what it lets through to those of `keep` it already allows
    /// (never wider), closing every tunnel opened before: what they
    /// reached may no longer be allowed. An MCP server's package runner
    /// reaches its registry only while the server starts.
    pub fn narrow(&self, keep: &[Origin]) {
        let Some(judge) = self.judge.upgrade() else {
            return;
        };
        let mut grant = judge.allow.lock().unwrap_or_else(|p| p.into_inner());
        grant.origins.retain(|o| keep.contains(o));
        grant.tunnels.cancel();
        grant.tunnels = judge.stop.child_token();
    }

    /// What was attempted so far.
    pub fn attempts(&self) -> Vec<Attempt> {
        self.attempts.lock().map(|a| a.clone()).unwrap_or_default()
    }

    /// The socket the sandbox binds.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Stop serving; what was attempted.
    pub fn finish(self) -> Vec<Attempt> {
        self.stop.cancel();
        if let Err(e) = remove_socket(&self.socket) {
            tracing::debug!("command proxy socket not removed: {e}");
        }
        self.attempts.lock().map(|a| a.clone()).unwrap_or_default()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Run `work` until it ends or `stop` is cancelled.
async fn until(stop: CancellationToken, work: impl Future<Output = ()>) {
    tokio::select! {
        () = stop.cancelled() => {}
        () = work => {}
    }
}

fn remove_socket(p: &Path) -> std::io::Result<()> {
    match rustix::fs::unlink(p) {
        Ok(()) => Ok(()),
        Err(rustix::io::Errno::NOENT) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// What one proxy lets through now, and what closes the tunnels opened
/// under it.
struct Grant {
    origins: Vec<Origin>,
    tunnels: CancellationToken,
}

/// What one proxy lets through, what it saw, and when it stops.
struct Judge {
    allow: Mutex<Grant>,
    seen: Arc<Mutex<Vec<Attempt>>>,
    stop: CancellationToken,
}

/// What a request asks for.
#[derive(Debug, PartialEq, Eq)]
enum Target {
    /// `CONNECT host:port`: a tunnel (https).
    Tunnel { host: String, port: u16 },
    /// `GET http://host[:port]/…`: one plain request.
    Plain { host: String, port: u16 },
}

/// The target of a request: `CONNECT` to an authority with a port, or an
/// absolute `http://` URI without user information.
fn target(method: &Method, uri: &Uri) -> Option<Target> {
    let authority = uri.authority()?;
    if authority.as_str().contains('@') {
        return None;
    }
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    if host.is_empty() {
        return None;
    }
    if method == Method::CONNECT {
        // Authority-form only: `CONNECT host:port`.
        if uri.scheme().is_some() || uri.path_and_query().is_some_and(|p| p.as_str() != "/") {
            return None;
        }
        return Some(Target::Tunnel {
            host,
            port: authority.port_u16()?,
        });
    }
    if uri.scheme_str() != Some("http") {
        return None;
    }
    Some(Target::Plain {
        host,
        port: authority.port_u16().unwrap_or(80),
    })
}

/// Whether `allow` names `scheme://host:port`.
fn allowed(allow: &[Origin], scheme: Scheme, host: &str, port: u16) -> bool {
    let Ok(asked) = Origin::parse(&format!(
        "{}://{}:{port}",
        scheme.as_str(),
        if host.contains(':') {
            format!("[{host}]")
        } else {
            host.to_owned()
        }
    )) else {
        return false;
    };
    // Names are lower-cased when parsed: equal origins compare equal.
    allow.contains(&asked)
}

type Body = Either<Incoming, Either<Full<Bytes>, Empty<Bytes>>>;

/// Serve one connection: each request on it is handled on its own.
async fn serve(conn: UnixStream, judge: Arc<Judge>) -> Result<(), hyper::Error> {
    let service = hyper::service::service_fn(move |req| {
        let judge = Arc::clone(&judge);
        async move { Ok::<_, Infallible>(judge.handle(req).await) }
    });
    hyper::server::conn::http1::Builder::new()
        .max_buf_size(MAX_HEAD)
        .serve_connection(TokioIo::new(conn), service)
        .with_upgrades()
        .await
}

impl Judge {
    /// Judge one request, record it, and let it through or refuse it.
    async fn handle(&self, req: Request<Incoming>) -> Response<Body> {
        let Some(t) = target(req.method(), req.uri()) else {
            return answer(
                StatusCode::FORBIDDEN,
                "only CONNECT host:port and absolute http:// requests go through this proxy",
            );
        };
        let (scheme, host, port) = match &t {
            Target::Tunnel { host, port } => (Scheme::Https, host.clone(), *port),
            Target::Plain { host, port } => (Scheme::Http, host.clone(), *port),
        };
        let (ok, tunnels) = {
            let grant = self.allow.lock().unwrap_or_else(|p| p.into_inner());
            (
                allowed(&grant.origins, scheme, &host, port),
                grant.tunnels.clone(),
            )
        };
        let shown = if host.contains(':') {
            format!("[{host}]")
        } else {
            host.clone()
        };
        let origin = format!("{}://{shown}:{port}", scheme.as_str());
        if let Ok(mut s) = self.seen.lock() {
            s.push(Attempt {
                origin: origin.clone(),
                allowed: ok,
            });
        }
        if !ok {
            return answer(
                StatusCode::FORBIDDEN,
                &format!("{origin} is not among the origins this command's profile allows"),
            );
        }
        let upstream = match TcpStream::connect((host.as_str(), port)).await {
            Ok(s) => s,
            Err(e) => {
                return answer(
                    StatusCode::BAD_GATEWAY,
                    &format!("cannot reach {origin}: {e}"),
                );
            }
        };
        match t {
            Target::Tunnel { .. } => tunnel(req, upstream, tunnels),
            Target::Plain { .. } => forward(req, upstream, &shown, port, &origin).await,
        }
    }
}

/// Answer `CONNECT` and, once the connection is handed over, copy bytes
/// both ways between it and `upstream` until `closed` (the proxy stopped,
/// or narrowed what it allows).
fn tunnel(
    req: Request<Incoming>,
    mut upstream: TcpStream,
    closed: CancellationToken,
) -> Response<Body> {
    tokio::spawn(until(closed, async move {
        match hyper::upgrade::on(req).await {
            Ok(conn) => {
                let mut conn = TokioIo::new(conn);
                if let Err(e) = tokio::io::copy_bidirectional(&mut conn, &mut upstream).await {
                    tracing::debug!("command proxy tunnel: {e}");
                }
            }
            Err(e) => tracing::debug!("command proxy tunnel not opened: {e}"),
        }
    }));
    let mut r = Response::new(Either::Right(Either::Right(Empty::new())));
    *r.status_mut() = StatusCode::OK;
    r
}

/// Send `req` to its origin on `upstream`: in origin form, with `Host`
/// naming that origin and no hop-by-hop headers; its answer comes back
/// without them either (each side's connection is its own).
async fn forward(
    mut req: Request<Incoming>,
    upstream: TcpStream,
    host: &str,
    port: u16,
    origin: &str,
) -> Response<Body> {
    let (mut sender, conn) =
        match hyper::client::conn::http1::handshake(TokioIo::new(upstream)).await {
            Ok(pair) => pair,
            Err(e) => {
                return answer(
                    StatusCode::BAD_GATEWAY,
                    &format!("cannot speak HTTP to {origin}: {e}"),
                );
            }
        };
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!("command proxy upstream: {e}");
        }
    });
    let path = req
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    *req.uri_mut() = path.parse().unwrap_or_else(|_| Uri::from_static("/"));
    strip_hop_by_hop(req.headers_mut());
    let authority = if port == 80 {
        host.to_owned()
    } else {
        format!("{host}:{port}")
    };
    match HeaderValue::from_str(&authority) {
        Ok(v) => {
            req.headers_mut().insert(header::HOST, v);
        }
        Err(_) => return answer(StatusCode::FORBIDDEN, "the request's host is not a name"),
    }
    match sender.send_request(req).await {
        Ok(mut resp) => {
            strip_hop_by_hop(resp.headers_mut());
            resp.map(Either::Left)
        }
        Err(e) => answer(
            StatusCode::BAD_GATEWAY,
            &format!("{origin} did not answer: {e}"),
        ),
    }
}

/// Drop the headers that belong to one connection (RFC 9110 §7.6.1),
/// and those `Connection` names.
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<String> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|n| n.trim().to_ascii_lowercase())
        .filter(|n| !n.is_empty())
        .collect();
    for n in named {
        headers.remove(n.as_str());
    }
    for h in [
        "connection",
        "proxy-connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "upgrade",
    ] {
        headers.remove(h);
    }
}

/// The proxy's own answer.
fn answer(status: StatusCode, why: &str) -> Response<Body> {
    let mut r = Response::new(Either::Right(Either::Left(Full::new(Bytes::from(
        format!("Roost: {why}\n"),
    )))));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(method: &str, uri: &str) -> Option<Target> {
        let m = Method::from_bytes(method.as_bytes()).expect("method");
        let u: Uri = uri.parse().ok()?;
        target(&m, &u)
    }

    #[test]
    fn requests_name_their_targets() {
        assert_eq!(
            t("CONNECT", "crates.io:443"),
            Some(Target::Tunnel {
                host: "crates.io".into(),
                port: 443
            })
        );
        assert_eq!(
            t("GET", "http://127.0.0.1:8080/x?y"),
            Some(Target::Plain {
                host: "127.0.0.1".into(),
                port: 8080
            })
        );
        assert_eq!(
            t("GET", "http://example.com/"),
            Some(Target::Plain {
                host: "example.com".into(),
                port: 80
            })
        );
        assert_eq!(
            t("GET", "http://[::1]:8080/"),
            Some(Target::Plain {
                host: "::1".into(),
                port: 8080
            })
        );
        assert_eq!(t("GET", "/relative"), None);
        assert_eq!(t("GET", "http://user@evil/"), None);
        assert_eq!(t("GET", "https://crates.io/"), None);
        assert_eq!(t("CONNECT", "crates.io"), None);
    }

    #[test]
    fn only_named_origins_pass() {
        let allow = vec![
            Origin::parse("https://crates.io").expect("origin"),
            Origin::parse("http://127.0.0.1:8080").expect("origin"),
        ];
        assert!(allowed(&allow, Scheme::Https, "crates.io", 443));
        assert!(allowed(&allow, Scheme::Https, "CRATES.io", 443));
        assert!(!allowed(&allow, Scheme::Https, "crates.io", 8443));
        assert!(!allowed(&allow, Scheme::Http, "crates.io", 443));
        assert!(allowed(&allow, Scheme::Http, "127.0.0.1", 8080));
        assert!(!allowed(&allow, Scheme::Http, "127.0.0.1", 8081));
        assert!(!allowed(&allow, Scheme::Https, "evil.example", 443));
    }

    /// A tiny HTTP server answering every request with `body` and
    /// closing; what it was asked, in order.
    fn server(body: &'static str) -> (u16, Arc<Mutex<Vec<String>>>) {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let asked = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&asked);
        std::thread::spawn(move || {
            for mut conn in listener.incoming().flatten() {
                let mut buf = vec![0u8; 8192];
                let n = conn.read(&mut buf).unwrap_or(0);
                log.lock()
                    .expect("log")
                    .push(String::from_utf8_lossy(&buf[..n]).into_owned());
                let _ = conn.write_all(
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    )
                    .as_bytes(),
                );
            }
        });
        (port, asked)
    }

    /// Every request of a kept-alive, pipelined connection is judged and
    /// recorded: the second, to another origin, is refused; the first
    /// reaches its origin with its `Host` naming it (not the one sent).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_request_of_a_connection_is_judged() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (good, good_seen) = server("from-allowed");
        let (evil, evil_seen) = server("from-forbidden");
        let dir = tempfile::tempdir().expect("dir");
        let proxy = Proxy::start(
            dir.path(),
            vec![Origin::parse(&format!("http://127.0.0.1:{good}")).expect("origin")],
        )
        .expect("proxy");
        let mut c = UnixStream::connect(proxy.socket()).await.expect("connect");
        c.write_all(
            format!(
                "GET http://127.0.0.1:{good}/a HTTP/1.1\r\nHost: evil.example\r\n\r\n\
                 GET http://127.0.0.1:{evil}/b HTTP/1.1\r\nHost: 127.0.0.1:{evil}\r\nConnection: close\r\n\r\n"
            )
            .as_bytes(),
        )
        .await
        .expect("write");
        let mut got = String::new();
        c.read_to_string(&mut got).await.expect("read");
        assert!(got.contains("from-allowed"), "{got}");
        assert!(got.contains("403 Forbidden"), "{got}");
        assert!(!got.contains("from-forbidden"), "{got}");
        assert!(evil_seen.lock().expect("log").is_empty());
        let first = good_seen.lock().expect("log").join("");
        assert!(first.starts_with("GET /a HTTP/1.1\r\n"), "{first}");
        assert!(
            first
                .to_ascii_lowercase()
                .contains(&format!("host: 127.0.0.1:{good}\r\n")),
            "{first}"
        );
        assert!(!first.contains("evil.example"), "{first}");
        let attempts = proxy.finish();
        assert_eq!(
            attempts,
            vec![
                Attempt {
                    origin: format!("http://127.0.0.1:{good}"),
                    allowed: true
                },
                Attempt {
                    origin: format!("http://127.0.0.1:{evil}"),
                    allowed: false
                },
            ]
        );
    }

    /// Narrowed, a proxy refuses what it no longer allows, closes the
    /// tunnels opened before, and is never widened.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn narrowing_refuses_and_closes_what_was_dropped() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        // An upstream that echoes until its peer closes.
        let echo = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = echo.local_addr().expect("addr").port();
        tokio::spawn(async move {
            while let Ok((mut c, _)) = echo.accept().await {
                tokio::spawn(async move {
                    let (mut r, mut w) = c.split();
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                });
            }
        });
        let registry = Origin::parse(&format!("https://127.0.0.1:{port}")).expect("origin");
        let other = Origin::parse("https://other.example").expect("origin");
        let dir = tempfile::tempdir().expect("dir");
        let proxy = Proxy::start(dir.path(), vec![registry.clone()]).expect("proxy");
        let connect = || async {
            let mut c = UnixStream::connect(proxy.socket()).await.expect("connect");
            c.write_all(format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n").as_bytes())
                .await
                .expect("write");
            let mut head = [0u8; 12];
            c.read_exact(&mut head).await.expect("status line");
            (c, String::from_utf8_lossy(&head).into_owned())
        };
        let (mut open, status) = connect().await;
        assert_eq!(status, "HTTP/1.1 200");
        // The rest of the answer's head, then the tunnel.
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            head.push(open.read_u8().await.expect("head"));
        }
        open.write_all(b"ping").await.expect("write");
        let mut got = [0u8; 4];
        open.read_exact(&mut got).await.expect("echo");
        assert_eq!(&got, b"ping");
        // Never wider: an origin it did not allow stays refused.
        proxy.narrow(&[other]);
        let mut rest = Vec::new();
        let closed = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            open.read_to_end(&mut rest),
        )
        .await;
        assert!(
            matches!(closed, Ok(Ok(0))),
            "the tunnel opened before is closed: {closed:?}"
        );
        let (_, status) = connect().await;
        assert_eq!(status, "HTTP/1.1 403");
        let seen = proxy.attempts();
        assert_eq!(seen.len(), 2);
        assert!(seen[0].allowed && !seen[1].allowed, "{seen:?}");
    }

    /// A `CONNECT` is judged and recorded like any request; once open,
    /// the tunnel's bytes go to the origin it named, and nowhere else.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tunnels_are_judged_and_reach_only_their_origin() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (good, good_seen) = server("through-the-tunnel");
        let (evil, evil_seen) = server("from-forbidden");
        let dir = tempfile::tempdir().expect("dir");
        let proxy = Proxy::start(
            dir.path(),
            vec![Origin::parse(&format!("https://127.0.0.1:{good}")).expect("origin")],
        )
        .expect("proxy");
        let mut refused = UnixStream::connect(proxy.socket()).await.expect("connect");
        refused
            .write_all(
                format!("CONNECT 127.0.0.1:{evil} HTTP/1.1\r\nConnection: close\r\n\r\n")
                    .as_bytes(),
            )
            .await
            .expect("write");
        let mut got = String::new();
        refused.read_to_string(&mut got).await.expect("read");
        assert!(got.starts_with("HTTP/1.1 403"), "{got}");
        let mut c = UnixStream::connect(proxy.socket()).await.expect("connect");
        // The tunnel's first bytes sent at once with the CONNECT: a
        // request that names another origin, which only the tunnel's own
        // origin ever sees.
        c.write_all(
            format!(
                "CONNECT 127.0.0.1:{good} HTTP/1.1\r\n\r\nGET http://127.0.0.1:{evil}/ HTTP/1.1\r\n\r\n"
            )
            .as_bytes(),
        )
        .await
        .expect("write");
        let mut got = String::new();
        c.read_to_string(&mut got).await.expect("read");
        assert!(got.starts_with("HTTP/1.1 200"), "{got}");
        assert!(got.contains("through-the-tunnel"), "{got}");
        assert!(evil_seen.lock().expect("log").is_empty());
        assert_eq!(good_seen.lock().expect("log").len(), 1);
        assert_eq!(
            proxy.finish(),
            vec![
                Attempt {
                    origin: format!("https://127.0.0.1:{evil}"),
                    allowed: false
                },
                Attempt {
                    origin: format!("https://127.0.0.1:{good}"),
                    allowed: true
                },
            ]
        );
    }
}
