//! A plugin's outgoing `wasi:http` requests, checked and sent by the host.
//!
//! Every request a guest hands to `outgoing-handler.handle` reaches
//! [`EgressHooks::send_request`] after it has left the guest's resource
//! table. There, synchronously: the call's request count, the scheme, the
//! exact origin (lower-cased literal host and port, no user name in the
//! authority) against the call's [`NetworkGrant`], and the
//! `{{secret:NAME}}` placeholders in header values, filled only with
//! secrets granted for that origin. Then, asynchronously: a granted name is
//! resolved by the host ([`Resolve`]) and refused if any address is not
//! public, the connection goes to a checked address (never resolved
//! again), TLS is verified against the granted name, and the response body
//! is bounded. Redirects are never followed here: a guest that follows one
//! makes a new request, checked again. Each attempt, allowed or not, is
//! recorded in the call's [`NetworkLog`] (method, origin and path without
//! the query, the decision, status and bytes; header names and
//! placeholders, never a secret's value).

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use http::HeaderValue;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use crate::capability::network::{self, Host, NetworkGrant, Origin, Scheme};

/// A future wasi-http hands the hooks and takes back for the connection.
type Io = Box<dyn Future<Output = Result<(), Error>> + Send>;
/// What [`WasiHttpHooks::send_request`] returns.
type Sent = Box<dyn Future<Output = Result<(http::Response<WasiBody>, Io), Error>> + Send>;
/// What a [`Resolve`] returns.
pub type Resolved = Pin<Box<dyn Future<Output = io::Result<Vec<SocketAddr>>> + Send>>;

/// Most attempts one call's log keeps; later ones are only counted.
const MAX_RECORDS: usize = 256;
/// Longest URL or header line a record keeps.
const MAX_RECORD_TEXT: usize = 512;

/// Turns a granted host name into addresses. The host resolves names
/// itself, checks every address and connects to a checked one, so what it
/// checked is what it reaches. Injectable ([`super::EngineConfig::resolver`])
/// so tests can point a made-up name at an address of their choosing.
pub trait Resolve: Send + Sync + std::fmt::Debug {
    /// Every address `host` has, with `port`.
    fn resolve(&self, host: &str, port: u16) -> Resolved;
}

/// The system resolver (tokio's `lookup_host`, i.e. `getaddrinfo`).
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve(&self, host: &str, port: u16) -> Resolved {
        let host = host.to_owned();
        Box::pin(async move {
            Ok(tokio::net::lookup_host((host.as_str(), port))
                .await?
                .collect())
        })
    }
}

/// One outgoing request a call attempted, as the trace records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkRecord {
    /// HTTP method.
    pub method: String,
    /// `scheme://host:port/path`; a query is shown as `?…`, never its text.
    pub url: String,
    /// Whether the host let the request go out.
    pub allowed: bool,
    /// Why it was refused (by the grant, the address check, a limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// Response status, once one arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Response body bytes the guest was given.
    #[serde(default)]
    pub bytes: u64,
    /// What failed after the request was allowed (connect, TLS, a bound).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Headers whose placeholders the host filled, as the plugin wrote
    /// them (`authorization: Bearer {{secret:TOKEN}}`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<String>,
}

/// The requests of one call, shared by its hooks (which write) and the
/// caller (which reads once the call is over, however it ended).
#[derive(Debug, Clone, Default)]
pub struct NetworkLog {
    inner: Arc<Mutex<LogInner>>,
}

#[derive(Debug, Default)]
struct LogInner {
    records: Vec<NetworkRecord>,
    dropped: u64,
}

/// What a call's log holds at the end.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkReport {
    /// Each attempt, in order (at most 256).
    pub records: Vec<NetworkRecord>,
    /// Attempts past those, counted only.
    pub dropped: u64,
}

impl NetworkReport {
    /// Whether the call attempted no request.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty() && self.dropped == 0
    }
}

impl NetworkLog {
    fn lock(&self) -> MutexGuard<'_, LogInner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Add a record; its index, or `None` when the log is full.
    fn push(&self, record: NetworkRecord) -> Option<usize> {
        let mut log = self.lock();
        if log.records.len() >= MAX_RECORDS {
            log.dropped += 1;
            return None;
        }
        log.records.push(record);
        Some(log.records.len() - 1)
    }

    /// Change record `index` (when it was kept).
    fn update(&self, index: Option<usize>, f: impl FnOnce(&mut NetworkRecord)) {
        if let Some(i) = index
            && let Some(r) = self.lock().records.get_mut(i)
        {
            f(r);
        }
    }

    /// The records so far.
    pub fn report(&self) -> NetworkReport {
        let log = self.lock();
        NetworkReport {
            records: log.records.clone(),
            dropped: log.dropped,
        }
    }
}

/// The `wasi:http` hooks of one call: its grant, its count of requests,
/// its deadline and its log.
pub(crate) struct EgressHooks {
    plugin: String,
    grant: Arc<NetworkGrant>,
    sent: u32,
    deadline: Instant,
    resolver: Arc<dyn Resolve>,
    log: NetworkLog,
}

impl EgressHooks {
    pub(crate) fn new(
        plugin: &str,
        grant: &NetworkGrant,
        deadline: Instant,
        resolver: Arc<dyn Resolve>,
        log: NetworkLog,
    ) -> Self {
        Self {
            plugin: plugin.to_owned(),
            grant: Arc::new(grant.clone()),
            sent: 0,
            deadline,
            resolver,
            log,
        }
    }

    /// Refuse a request: record why, tell the guest `err`.
    fn refuse(&self, mut record: NetworkRecord, reason: String, err: Error) -> Sent {
        tracing::info!(
            plugin = self.plugin.as_str(),
            method = record.method.as_str(),
            url = record.url.as_str(),
            "network request refused: {reason}"
        );
        record.allowed = false;
        record.refused = Some(reason);
        self.log.push(record);
        Box::new(async move { Err(err) })
    }
}

/// Cut `s` to at most [`MAX_RECORD_TEXT`] bytes on a character boundary.
fn short(s: &str) -> String {
    s[..s.floor_char_boundary(MAX_RECORD_TEXT)].to_owned()
}

/// The URL of a request as recorded: no query text, no user name or
/// password (`…@host`).
fn record_url(uri: &http::Uri, origin: Option<&Origin>) -> String {
    let base = match origin {
        Some(o) => o.to_string(),
        None => {
            let authority = uri.authority().map_or("", |a| a.as_str());
            let host = match authority.rsplit_once('@') {
                Some((_, host)) => format!("…@{host}"),
                None => authority.to_owned(),
            };
            format!("{}://{host}", uri.scheme_str().unwrap_or("?"))
        }
    };
    let query = if uri.query().is_some() { "?…" } else { "" };
    short(&format!("{base}{}{query}", uri.path()))
}

impl WasiHttpHooks for EgressHooks {
    /// Every scheme reaches `send_request`, which refuses all but http and
    /// https there, so the refusal is recorded.
    fn is_supported_scheme(&mut self, _scheme: &http::uri::Scheme) -> bool {
        true
    }

    fn send_request(
        &mut self,
        mut request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: Io,
    ) -> Sent {
        let scheme = match request.uri().scheme_str() {
            Some(s) if s.eq_ignore_ascii_case("https") => Some(Scheme::Https),
            Some(s) if s.eq_ignore_ascii_case("http") => Some(Scheme::Http),
            _ => None,
        };
        let authority = request
            .uri()
            .authority()
            .map(|a| a.as_str().to_owned())
            .unwrap_or_default();
        let origin = scheme.map(|s| Origin::from_authority(s, &authority));
        let mut record = NetworkRecord {
            method: short(request.method().as_str()),
            url: record_url(request.uri(), origin.as_ref().and_then(|o| o.as_ref().ok())),
            allowed: true,
            refused: None,
            status: None,
            bytes: 0,
            error: None,
            secrets: Vec::new(),
        };
        self.sent = self.sent.saturating_add(1);
        if self.sent > self.grant.max_requests {
            let reason = format!(
                "more than {} requests in one call (the grant's bound)",
                self.grant.max_requests
            );
            return self.refuse(record, reason, Error::ConnectionLimitReached);
        }
        let origin = match origin {
            None => {
                let reason = format!(
                    "scheme `{}` is not http or https",
                    request.uri().scheme_str().unwrap_or("")
                );
                return self.refuse(record, reason, Error::HttpRequestDenied);
            }
            Some(Err(e @ network::OriginError::Userinfo(_))) => {
                return self.refuse(record, e.to_string(), Error::HttpRequestDenied);
            }
            Some(Err(e)) => {
                return self.refuse(record, e.to_string(), Error::HttpRequestUriInvalid);
            }
            Some(Ok(o)) => o,
        };
        if !self.grant.allows(&origin) {
            let reason = if origin.scheme == Scheme::Http && !origin.host.is_loopback() {
                format!("{origin} is not granted (plain http only ever goes to loopback)")
            } else {
                format!("{origin} is not granted to this plugin")
            };
            return self.refuse(record, reason, Error::HttpRequestDenied);
        }
        // Secrets: filled here, after the request left the guest's table,
        // so the guest never holds a value.
        for (name, value) in request.headers_mut().iter_mut() {
            let Ok(text) = value.to_str() else { continue };
            match network::fill_secrets(text, &origin, &self.grant) {
                Ok(None) => {}
                Ok(Some((filled, _names))) => {
                    let line = short(&format!("{name}: {text}"));
                    match HeaderValue::from_str(&filled) {
                        Ok(mut v) => {
                            v.set_sensitive(true);
                            *value = v;
                            record.secrets.push(line);
                        }
                        Err(_) => {
                            let reason = format!(
                                "header `{name}`: a secret's value cannot go into a header"
                            );
                            return self.refuse(record, reason, Error::HttpRequestDenied);
                        }
                    }
                }
                Err(e) => {
                    let reason = format!("header `{name}`: {e}");
                    return self.refuse(record, reason, Error::HttpRequestDenied);
                }
            }
        }
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            let reason = "the call's deadline has passed".to_owned();
            return self.refuse(record, reason, Error::ConnectionTimeout);
        }
        let opts = options.unwrap_or_default();
        let clamp = |d: Option<Duration>| d.map_or(left, |d| d.min(left));
        let wire = Wire {
            connect: clamp(opts.connect_timeout),
            first_byte: clamp(opts.first_byte_timeout),
            max_body: self.grant.max_response_bytes,
        };
        tracing::debug!(
            plugin = self.plugin.as_str(),
            method = record.method.as_str(),
            url = record.url.as_str(),
            "network request allowed"
        );
        let log = self.log.clone();
        let index = log.push(record);
        let resolver = Arc::clone(&self.resolver);
        Box::new(async move {
            let res = send(request, &origin, wire, resolver.as_ref(), &log, index).await;
            match &res {
                Ok((r, _)) => log.update(index, |rec| rec.status = Some(r.status().as_u16())),
                Err(e) => {
                    let msg = e.to_string();
                    log.update(index, |rec| {
                        if rec.allowed && rec.error.is_none() {
                            rec.error = Some(msg);
                        }
                    });
                }
            }
            res
        })
    }
}

/// The bounds of one request on the wire.
struct Wire {
    connect: Duration,
    first_byte: Duration,
    max_body: u64,
}

trait Stream: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Stream for T {}

/// The TLS client of the process: webpki roots, ring, built once.
fn tls_config() -> Result<Arc<rustls::ClientConfig>, Error> {
    static TLS: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    TLS.get_or_init(|| {
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.into(),
        };
        rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map(|b| Arc::new(b.with_root_certificates(roots).with_no_client_auth()))
        .map_err(|e| e.to_string())
    })
    .clone()
    .map_err(|e| Error::InternalError(Some(format!("TLS setup: {e}"))))
}

/// The addresses a checked origin may be reached at: an IP literal as
/// granted, `localhost` as the loopback addresses, a name resolved by the
/// host and refused if any address is not public.
async fn addresses(
    origin: &Origin,
    wire: &Wire,
    resolver: &dyn Resolve,
    log: &NetworkLog,
    index: Option<usize>,
) -> Result<Vec<SocketAddr>, Error> {
    let name = match &origin.host {
        Host::Ip(ip) => return Ok(vec![SocketAddr::new(*ip, origin.port)]),
        Host::Name(n) if n == "localhost" => {
            return Ok(vec![
                SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), origin.port),
                SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), origin.port),
            ]);
        }
        Host::Name(n) => n,
    };
    let found = tokio::time::timeout(wire.connect, resolver.resolve(name, origin.port))
        .await
        .map_err(|_| Error::DnsTimeout)?
        .map_err(|e| Error::DnsError {
            rcode: Some(e.to_string()),
            info_code: None,
        })?;
    if found.is_empty() {
        return Err(Error::DestinationNotFound);
    }
    if let Some(bad) = found.iter().find(|a| !network::is_public(a.ip())) {
        let reason = format!(
            "{name} resolves to {}, which is not a public address",
            bad.ip()
        );
        tracing::info!(host = name.as_str(), "network request refused: {reason}");
        log.update(index, |r| {
            r.allowed = false;
            r.refused = Some(reason);
        });
        return Err(Error::DestinationIpProhibited);
    }
    Ok(found)
}

/// Send a checked request: connect to a checked address, TLS against the
/// granted name, one HTTP/1.1 exchange, the response body bounded.
async fn send(
    mut req: http::Request<WasiBody>,
    origin: &Origin,
    wire: Wire,
    resolver: &dyn Resolve,
    log: &NetworkLog,
    index: Option<usize>,
) -> Result<(http::Response<WasiBody>, Io), Error> {
    let addrs = addresses(origin, &wire, resolver, log, index).await?;
    let mut last = Error::ConnectionRefused;
    let mut tcp = None;
    for addr in &addrs {
        match tokio::time::timeout(wire.connect, TcpStream::connect(addr)).await {
            Ok(Ok(s)) => {
                tcp = Some(s);
                break;
            }
            Ok(Err(e)) => last = Error::Connect(e),
            Err(_) => last = Error::ConnectionTimeout,
        }
    }
    let tcp = tcp.ok_or(last)?;
    let stream: Box<dyn Stream> = match origin.scheme {
        Scheme::Https => {
            let name = match &origin.host {
                Host::Ip(ip) => rustls::pki_types::ServerName::from(*ip),
                Host::Name(n) => rustls::pki_types::ServerName::try_from(n.clone())
                    .map_err(|_| Error::HttpRequestUriInvalid)?,
            };
            let tls = tokio_rustls::TlsConnector::from(tls_config()?);
            let s = tokio::time::timeout(wire.connect, tls.connect(name, tcp))
                .await
                .map_err(|_| Error::ConnectionTimeout)?
                .map_err(Error::Tls)?;
            Box::new(s)
        }
        Scheme::Http => Box::new(tcp),
    };
    let (mut sender, conn) = tokio::time::timeout(
        wire.connect,
        hyper::client::conn::http1::handshake(TokioIo::new(stream)),
    )
    .await
    .map_err(|_| Error::ConnectionTimeout)??;
    let conn = wasmtime_wasi::runtime::spawn(conn);
    // Origin-form request line; the Host header names the origin.
    let pq = req
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    *req.uri_mut() = http::Uri::builder()
        .path_and_query(pq)
        .build()
        .map_err(|_| Error::HttpRequestUriInvalid)?;
    let res = tokio::time::timeout(wire.first_byte, sender.send_request(req))
        .await
        .map_err(|_| Error::ConnectionReadTimeout)??;
    let max = wire.max_body;
    let declared = res
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if let Some(n) = declared.filter(|n| *n > max) {
        let status = res.status().as_u16();
        log.update(index, |r| {
            r.status = Some(status);
            r.error = Some(format!(
                "response body of {n} bytes is over the bound of {max} bytes"
            ));
        });
        return Err(Error::HttpResponseBodySize(Some(n)));
    }
    let (counting, failing) = (log.clone(), log.clone());
    let res = res.map(move |body| {
        Limited::new(body, usize::try_from(max).unwrap_or(usize::MAX))
            .map_frame(move |frame| {
                if let Some(data) = frame.data_ref() {
                    let n = u64::try_from(data.len()).unwrap_or(u64::MAX);
                    counting.update(index, |r| r.bytes = r.bytes.saturating_add(n));
                }
                frame
            })
            .map_err(move |e| {
                let err = match e.downcast::<hyper::Error>() {
                    Ok(h) => Error::Hyper(*h),
                    Err(e) if e.is::<LengthLimitError>() => Error::HttpResponseBodySize(Some(max)),
                    Err(e) => Error::InternalError(Some(e.to_string())),
                };
                let msg = match &err {
                    Error::HttpResponseBodySize(_) => {
                        format!("response body over the bound of {max} bytes")
                    }
                    other => other.to_string(),
                };
                failing.update(index, |r| r.error = Some(msg));
                err
            })
            .boxed_unsync()
    });
    let io: Io = Box::new(async move { conn.await.map_err(Error::from) });
    Ok((res, io))
}
