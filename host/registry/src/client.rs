//! The distribution-spec client: manifests and blobs by tag or digest,
//! pushed and pulled, under the bounds a hostile registry meets (see the
//! crate's documentation). One request at a time; a plugin is three small
//! layers.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use reqwest::header::{
    ACCEPT, AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, LOCATION, WWW_AUTHENTICATE,
};
use reqwest::{Method, StatusCode, Url};
use serde::Deserialize;
use tokio::time::Instant;

use crate::auth::Credentials;
use crate::reference::{Digest, Reference};
use crate::{RegistryError, shown};

/// How far a client trusts a registry.
#[derive(Debug, Clone)]
pub struct Options {
    /// Registries (`host[:port]`) reached over plain HTTP; every other is
    /// HTTPS with verified certificates.
    pub insecure: Vec<String>,
    /// Logins, each sent to its own registry only.
    pub credentials: Credentials,
    /// The largest manifest read (the distribution spec asks registries to
    /// take at least 4 MiB).
    pub max_manifest: u64,
    /// Connecting may take this long.
    pub connect_timeout: Duration,
    /// A response may send nothing (headers or body) for this long.
    pub stall: Duration,
    /// After [`Options::grace`], a transfer must have averaged this many
    /// bytes a second, or it is cut off (a registry that trickles).
    pub min_rate: u64,
    /// How long a transfer may take before its rate is judged.
    pub grace: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            insecure: Vec::new(),
            credentials: Credentials::none(),
            max_manifest: 4 * 1024 * 1024,
            connect_timeout: Duration::from_secs(10),
            stall: Duration::from_secs(30),
            min_rate: 16 * 1024,
            grace: Duration::from_secs(30),
        }
    }
}

/// At most this many redirects, all within the registry's origin.
const MAX_REDIRECTS: usize = 5;

/// The largest token answer, or error body, read.
const MAX_SMALL_BODY: u64 = 64 * 1024;

/// What a registry answered: the bytes (read under the bounds) and the
/// headers that describe them.
#[derive(Debug)]
pub struct Body {
    /// The content.
    pub bytes: Vec<u8>,
    /// `Content-Type`, without parameters.
    pub content_type: Option<String>,
    /// `Docker-Content-Digest`, when the registry sent one.
    pub digest: Option<String>,
}

/// What to send a registry for one scope.
#[derive(Clone)]
enum Auth {
    Bearer(String),
    Basic(String),
}

/// A client for registries, with the bounds of its [`Options`].
pub struct Client {
    http: reqwest::Client,
    opts: Options,
    /// By `registry scope`.
    auth: Mutex<HashMap<String, Auth>>,
}

/// Pull, or pull and push.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    Pull,
    Push,
}

impl Access {
    fn scope(self, r: &Reference) -> String {
        match self {
            Access::Pull => format!("repository:{}:pull", r.repository()),
            Access::Push => format!("repository:{}:pull,push", r.repository()),
        }
    }
}

impl Client {
    /// A client with `opts`.
    pub fn new(opts: Options) -> Result<Self, RegistryError> {
        let http = reqwest::Client::builder()
            // Redirects are followed here, within the registry's origin.
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(opts.connect_timeout)
            .user_agent(concat!("roost/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| RegistryError::Transport {
                url: String::new(),
                detail: format!("cannot make an HTTP client: {e}"),
            })?;
        Ok(Self {
            http,
            opts,
            auth: Mutex::new(HashMap::new()),
        })
    }

    /// The options in force.
    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// The registry's base URL: HTTPS, or HTTP when it is listed as
    /// insecure.
    fn base(&self, r: &Reference) -> Result<Url, RegistryError> {
        let scheme = if self
            .opts
            .insecure
            .iter()
            .any(|i| i.eq_ignore_ascii_case(r.registry()))
        {
            "http"
        } else {
            "https"
        };
        Url::parse(&format!("{scheme}://{}/", r.registry())).map_err(|e| RegistryError::Reference {
            text: r.to_string(),
            detail: format!("no URL for the registry: {e}"),
        })
    }

    fn url(&self, r: &Reference, path: &str) -> Result<Url, RegistryError> {
        let base = self.base(r)?;
        base.join(path).map_err(|e| RegistryError::Reference {
            text: r.to_string(),
            detail: format!("no URL for `{path}`: {e}"),
        })
    }

    /// The manifest `r` names (by digest when pinned, else by tag), read
    /// under the manifest bound. `accept` lists the media types asked for.
    pub async fn manifest(&self, r: &Reference, accept: &[&str]) -> Result<Body, RegistryError> {
        let url = self.url(
            r,
            &format!("v2/{}/manifests/{}", r.repository(), r.target()),
        )?;
        let what = format!("the manifest of {r}");
        let resp = self
            .send(
                r,
                Method::GET,
                url,
                Access::Pull,
                &[(ACCEPT.as_str(), accept.join(", "))],
                None,
            )
            .await?;
        let content_type = header(&resp, CONTENT_TYPE.as_str())
            .map(|t| t.split(';').next().unwrap_or_default().trim().to_owned());
        let digest = header(&resp, "docker-content-digest");
        let bytes = self.read(resp, self.opts.max_manifest, &what).await?;
        Ok(Body {
            bytes,
            content_type,
            digest,
        })
    }

    /// The blob `digest` of `r`'s repository, of the `size` the manifest
    /// declared; refused unless `size` is within `limit` and the bytes are
    /// exactly `size` long and hash to `digest`.
    pub async fn blob(
        &self,
        r: &Reference,
        digest: &Digest,
        size: u64,
        limit: u64,
        what: &str,
    ) -> Result<Vec<u8>, RegistryError> {
        if size > limit {
            return Err(RegistryError::TooLarge {
                what: what.to_owned(),
                limit,
                declared: format!(" (the manifest declares {size} bytes)"),
            });
        }
        let url = self.url(r, &format!("v2/{}/blobs/{digest}", r.repository()))?;
        let resp = self
            .send(r, Method::GET, url, Access::Pull, &[], None)
            .await?;
        let bytes = self.read(resp, size, what).await?;
        let got = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        if got != size {
            return Err(RegistryError::DigestMismatch {
                what: what.to_owned(),
                expected: format!("{digest} ({size} bytes)"),
                actual: format!("{} ({got} bytes)", Digest::of(&bytes)),
            });
        }
        let actual = Digest::of(&bytes);
        if &actual != digest {
            return Err(RegistryError::DigestMismatch {
                what: what.to_owned(),
                expected: digest.to_string(),
                actual: actual.to_string(),
            });
        }
        Ok(bytes)
    }

    /// Upload `bytes` as a blob of `r`'s repository (skipped when the
    /// registry has it); its digest.
    pub async fn push_blob(&self, r: &Reference, bytes: &[u8]) -> Result<Digest, RegistryError> {
        let digest = Digest::of(bytes);
        let head = self.url(r, &format!("v2/{}/blobs/{digest}", r.repository()))?;
        let resp = self
            .send(r, Method::HEAD, head, Access::Push, &[], None)
            .await;
        if let Ok(resp) = resp
            && resp.status() == StatusCode::OK
        {
            return Ok(digest);
        }
        let start = self.url(r, &format!("v2/{}/blobs/uploads/", r.repository()))?;
        let resp = self
            .send(
                r,
                Method::POST,
                start.clone(),
                Access::Push,
                &[(CONTENT_LENGTH.as_str(), "0".into())],
                Some(Vec::new()),
            )
            .await?;
        let location =
            header(&resp, LOCATION.as_str()).ok_or_else(|| RegistryError::Transport {
                url: start.to_string(),
                detail: "the upload was accepted without a Location to send it to".into(),
            })?;
        let mut put = start
            .join(&location)
            .map_err(|e| RegistryError::Transport {
                url: start.to_string(),
                detail: format!(
                    "the upload Location `{}` is not a URL: {e}",
                    shown(&location)
                ),
            })?;
        if put.origin() != start.origin() {
            return Err(RegistryError::Redirect {
                from: start.to_string(),
                to: put.to_string(),
            });
        }
        put.query_pairs_mut().append_pair("digest", digest.as_str());
        self.send(
            r,
            Method::PUT,
            put,
            Access::Push,
            &[(CONTENT_TYPE.as_str(), "application/octet-stream".into())],
            Some(bytes.to_vec()),
        )
        .await?;
        Ok(digest)
    }

    /// Put `bytes` (a manifest of `media_type`) at `tag` in `r`'s
    /// repository; its digest.
    pub async fn push_manifest(
        &self,
        r: &Reference,
        tag: &str,
        media_type: &str,
        bytes: &[u8],
    ) -> Result<Digest, RegistryError> {
        let url = self.url(r, &format!("v2/{}/manifests/{tag}", r.repository()))?;
        self.send(
            r,
            Method::PUT,
            url,
            Access::Push,
            &[(CONTENT_TYPE.as_str(), media_type.to_owned())],
            Some(bytes.to_vec()),
        )
        .await?;
        Ok(Digest::of(bytes))
    }

    /// Send a request to `r`'s registry: with what its scope was granted,
    /// answering one authentication challenge, following redirects within
    /// the registry's origin (GET and HEAD only). A success status, or an
    /// error.
    async fn send(
        &self,
        r: &Reference,
        method: Method,
        mut url: Url,
        access: Access,
        headers: &[(&str, String)],
        body: Option<Vec<u8>>,
    ) -> Result<reqwest::Response, RegistryError> {
        let origin = self.base(r)?.origin();
        let first = url.clone();
        let key = format!("{} {}", r.registry(), access.scope(r));
        let mut challenged = false;
        let mut hops = 0;
        loop {
            let mut req = self.http.request(method.clone(), url.clone());
            for (k, v) in headers {
                req = req.header(*k, v);
            }
            // Only to the registry's own origin: every URL here is (a
            // redirect elsewhere was refused below).
            let auth = lock(&self.auth).get(&key).cloned();
            if let Some(a) = auth {
                req = req.header(
                    AUTHORIZATION,
                    match a {
                        Auth::Bearer(t) => format!("Bearer {t}"),
                        Auth::Basic(b) => b,
                    },
                );
            }
            if let Some(b) = &body {
                req = req.body(b.clone());
            }
            let resp = self.answer(req, &url).await?;
            let status = resp.status();
            if status == StatusCode::UNAUTHORIZED {
                if challenged {
                    return Err(RegistryError::Unauthorized {
                        registry: r.registry().to_owned(),
                        detail: format!(
                            "refused the credentials for {} ({})",
                            access.scope(r),
                            self.error_detail(resp).await
                        ),
                    });
                }
                challenged = true;
                let challenge = resp
                    .headers()
                    .get_all(WWW_AUTHENTICATE)
                    .iter()
                    .filter_map(|v| v.to_str().ok())
                    .collect::<Vec<_>>()
                    .join(", ");
                let auth = self.authenticate(r, &url, access, &challenge).await?;
                lock(&self.auth).insert(key.clone(), auth);
                continue;
            }
            if status.is_redirection() {
                url = redirect(&resp, &url, &origin, &method, &mut hops, &first)?;
                continue;
            }
            if !status.is_success() {
                return Err(RegistryError::Status {
                    url: url.to_string(),
                    status: status.as_u16(),
                    detail: self.error_detail(resp).await,
                });
            }
            return Ok(resp);
        }
    }

    /// `path` at `registry`'s base URL (HTTPS, or HTTP when listed as
    /// insecure).
    pub fn registry_url(&self, registry: &str, path: &str) -> Result<Url, RegistryError> {
        let r = Reference::parse(&format!("{}{registry}/x", crate::reference::SCHEME))?;
        self.url(&r, path)
    }

    /// The tags of `r`'s repository (the distribution spec's tag list),
    /// read under `limit` bytes.
    pub async fn tags(&self, r: &Reference, limit: u64) -> Result<Vec<String>, RegistryError> {
        let url = self.url(r, &format!("v2/{}/tags/list", r.repository()))?;
        let resp = self
            .send(r, Method::GET, url.clone(), Access::Pull, &[], None)
            .await?;
        let what = format!("the tags of {}/{}", r.registry(), r.repository());
        let bytes = self.read(resp, limit, &what).await?;
        #[derive(Deserialize)]
        struct Tags {
            #[serde(default)]
            tags: Option<Vec<String>>,
        }
        let t: Tags = serde_json::from_slice(&bytes).map_err(|e| RegistryError::Transport {
            url: url.to_string(),
            detail: format!("the tag list does not parse: {e}"),
        })?;
        Ok(t.tags.unwrap_or_default())
    }

    /// The file at `url` (`https://`, or `http://` on this machine or at
    /// a host listed as insecure), at most `limit` bytes, read under the
    /// bounds a registry's answers are: redirects followed within the
    /// URL's origin only, a stalled or crawling transfer cut off. No
    /// credentials are sent with it.
    pub async fn download(
        &self,
        url: &Url,
        limit: u64,
        what: &str,
    ) -> Result<Vec<u8>, RegistryError> {
        let host = match (url.host_str(), url.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_owned(),
            (None, _) => String::new(),
        };
        match url.scheme() {
            "https" => {}
            "http"
                if is_loopback_host(url.host_str().unwrap_or_default())
                    || self
                        .opts
                        .insecure
                        .iter()
                        .any(|i| i.eq_ignore_ascii_case(&host)) => {}
            "http" => return Err(RegistryError::PlainHttp { registry: host }),
            other => {
                return Err(RegistryError::Transport {
                    url: shown(url.as_str()),
                    detail: format!("`{}:` URLs are not fetched (https:// only)", shown(other)),
                });
            }
        }
        let origin = url.origin();
        let mut at = url.clone();
        let mut hops = 0;
        loop {
            let resp = self.answer(self.http.get(at.clone()), &at).await?;
            let status = resp.status();
            if status.is_redirection() {
                at = redirect(&resp, &at, &origin, &Method::GET, &mut hops, url)?;
                continue;
            }
            if !status.is_success() {
                return Err(RegistryError::Status {
                    url: at.to_string(),
                    status: status.as_u16(),
                    detail: self.error_detail(resp).await,
                });
            }
            return self.read(resp, limit, what).await;
        }
    }

    /// Answer a `401`'s challenge for `access`: a Bearer token from the
    /// realm the registry names, or Basic credentials. The registry's
    /// login goes only to the registry's own host; a token service on
    /// another host gets its own login, if one is configured, or none.
    async fn authenticate(
        &self,
        r: &Reference,
        url: &Url,
        access: Access,
        challenge: &str,
    ) -> Result<Auth, RegistryError> {
        let unauthorized = |detail: String| RegistryError::Unauthorized {
            registry: r.registry().to_owned(),
            detail,
        };
        let challenges = http_auth::parse_challenges(challenge).map_err(|e| {
            unauthorized(format!(
                "asks for authentication in a form that does not parse (`{}`: {e})",
                shown(challenge)
            ))
        })?;
        let param = |c: &http_auth::ChallengeRef<'_>, name: &str| {
            c.params
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.to_unescaped())
        };
        if let Some(c) = challenges
            .iter()
            .find(|c| c.scheme.eq_ignore_ascii_case("bearer"))
        {
            let realm = param(c, "realm").ok_or_else(|| {
                unauthorized("asks for a token without saying where to get one (no realm)".into())
            })?;
            let mut token_url = Url::parse(&realm).map_err(|e| {
                unauthorized(format!(
                    "its token service `{}` is not a URL: {e}",
                    shown(&realm)
                ))
            })?;
            let realm_registry = match (token_url.host_str(), token_url.port()) {
                (Some(h), Some(p)) => format!("{h}:{p}"),
                (Some(h), None) => h.to_owned(),
                (None, _) => String::new(),
            };
            let realm_host = token_url
                .host_str()
                .unwrap_or_default()
                .to_ascii_lowercase();
            let same_origin = token_url.origin() == self.base(r)?.origin();
            if token_url.scheme() != "https"
                && !(token_url.scheme() == "http" && url.scheme() == "http")
            {
                return Err(unauthorized(format!(
                    "its token service `{}` is not HTTPS",
                    shown(&realm)
                )));
            }
            // The registry's login at the registry's own origin; a token
            // service elsewhere (another host or port) only with a login of
            // its own.
            let login = if same_origin {
                self.opts.credentials.get(r.registry())
            } else {
                self.opts.credentials.get(&realm_registry)
            };
            // Never in the clear beyond this machine.
            let login =
                login.filter(|_| token_url.scheme() == "https" || is_loopback_host(&realm_host));
            {
                let mut q = token_url.query_pairs_mut();
                if let Some(service) = param(c, "service") {
                    q.append_pair("service", &service);
                }
                q.append_pair("scope", &access.scope(r));
            }
            let mut req = self.http.get(token_url.clone());
            if let Some(l) = login {
                req = req.header(AUTHORIZATION, l.basic());
            }
            let resp = self.answer(req, &token_url).await?;
            if !resp.status().is_success() {
                let status = resp.status();
                return Err(unauthorized(format!(
                    "its token service answered {status} for {}{}{}",
                    access.scope(r),
                    if login.is_none() {
                        " without a login (none is configured for it: `docker login`)"
                    } else {
                        ""
                    },
                    self.error_detail(resp).await
                )));
            }
            let bytes = self
                .read(resp, MAX_SMALL_BODY, "the registry's token")
                .await?;
            #[derive(Deserialize)]
            struct Token {
                token: Option<String>,
                access_token: Option<String>,
            }
            let t: Token = serde_json::from_slice(&bytes).map_err(|e| {
                unauthorized(format!(
                    "its token service answered something that is not a token: {e}"
                ))
            })?;
            let token = t
                .token
                .or(t.access_token)
                .filter(|t| !t.is_empty())
                .ok_or_else(|| unauthorized("its token service answered without a token".into()))?;
            if token.chars().any(|c| c.is_control() || c == ' ') {
                return Err(unauthorized(
                    "its token service answered a token that cannot be sent in a header".into(),
                ));
            }
            return Ok(Auth::Bearer(token));
        }
        if challenges
            .iter()
            .any(|c| c.scheme.eq_ignore_ascii_case("basic"))
        {
            let Some(login) = self.opts.credentials.get(r.registry()) else {
                return Err(unauthorized(format!(
                    "asks for a user name and password for {} and none is configured (`docker login {}` writes one)",
                    access.scope(r),
                    r.registry()
                )));
            };
            if url.scheme() == "http" && !r.is_loopback() {
                return Err(unauthorized(
                    "asks for a password over plain HTTP; credentials are not sent over plain HTTP beyond this machine".into(),
                ));
            }
            return Ok(Auth::Basic(login.basic()));
        }
        Err(unauthorized(format!(
            "asks for authentication Roost does not speak (`{}`)",
            shown(challenge)
        )))
    }

    /// Send `req` (to `url`) and wait for its answer's head, at most the
    /// stall time.
    async fn answer(
        &self,
        req: reqwest::RequestBuilder,
        url: &Url,
    ) -> Result<reqwest::Response, RegistryError> {
        match tokio::time::timeout(self.opts.stall, req.send()).await {
            Ok(Ok(resp)) => Ok(resp),
            Ok(Err(e)) => Err(RegistryError::Transport {
                url: url.to_string(),
                detail: error_chain(&e),
            }),
            Err(_) => Err(RegistryError::Slow {
                what: url.to_string(),
                detail: format!("no answer in {} s", self.opts.stall.as_secs_f32()),
            }),
        }
    }

    /// The body of `resp`, at most `limit` bytes, read while it keeps
    /// coming: cut off when nothing arrives for the stall time, or when,
    /// after the grace time, it has averaged less than the minimum rate.
    async fn read(
        &self,
        mut resp: reqwest::Response,
        limit: u64,
        what: &str,
    ) -> Result<Vec<u8>, RegistryError> {
        let too_large = |declared: String| RegistryError::TooLarge {
            what: what.to_owned(),
            limit,
            declared,
        };
        if let Some(len) = resp.content_length()
            && len > limit
        {
            return Err(too_large(format!(" (the registry declares {len} bytes)")));
        }
        let start = Instant::now();
        let mut last = start;
        let mut out: Vec<u8> = Vec::new();
        // Wake at least once a second to judge the rate.
        let tick = self.opts.stall.min(Duration::from_secs(1));
        loop {
            match tokio::time::timeout(tick, resp.chunk()).await {
                Ok(Ok(Some(chunk))) => {
                    let total =
                        u64::try_from(out.len().saturating_add(chunk.len())).unwrap_or(u64::MAX);
                    if total > limit {
                        return Err(too_large(String::new()));
                    }
                    out.extend_from_slice(&chunk);
                    last = Instant::now();
                }
                Ok(Ok(None)) => return Ok(out),
                Ok(Err(e)) => {
                    return Err(RegistryError::Transport {
                        url: what.to_owned(),
                        detail: format!(
                            "the transfer failed after {} bytes: {}",
                            out.len(),
                            error_chain(&e)
                        ),
                    });
                }
                Err(_) => {}
            }
            let now = Instant::now();
            if now.duration_since(last) >= self.opts.stall {
                return Err(RegistryError::Slow {
                    what: what.to_owned(),
                    detail: format!(
                        "the server sent nothing for {} s (after {} bytes)",
                        self.opts.stall.as_secs_f32(),
                        out.len()
                    ),
                });
            }
            let elapsed = now.duration_since(start);
            if elapsed > self.opts.grace {
                let got = u64::try_from(out.len()).unwrap_or(u64::MAX);
                let ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
                if got.saturating_mul(1000) < self.opts.min_rate.saturating_mul(ms) {
                    return Err(RegistryError::Slow {
                        what: what.to_owned(),
                        detail: format!(
                            "{got} bytes in {:.1} s, under the {} bytes a second a transfer must average",
                            elapsed.as_secs_f32(),
                            self.opts.min_rate
                        ),
                    });
                }
            }
        }
    }

    /// A registry's error answer as one short line: the distribution
    /// spec's `errors[].code: message`, or the start of the body.
    async fn error_detail(&self, resp: reqwest::Response) -> String {
        let Ok(bytes) = self.read(resp, MAX_SMALL_BODY, "an error answer").await else {
            return String::new();
        };
        #[derive(Deserialize)]
        struct Errors {
            errors: Vec<ErrorEntry>,
        }
        #[derive(Deserialize)]
        struct ErrorEntry {
            #[serde(default)]
            code: String,
            #[serde(default)]
            message: String,
        }
        let text = match serde_json::from_slice::<Errors>(&bytes) {
            Ok(e) => e
                .errors
                .iter()
                .map(|e| format!("{}: {}", e.code, e.message))
                .collect::<Vec<_>>()
                .join("; "),
            Err(_) => String::from_utf8_lossy(&bytes).into_owned(),
        };
        let text = text.trim();
        if text.is_empty() {
            String::new()
        } else {
            format!(" ({})", shown(text))
        }
    }
}

/// Where a redirect from `url` leads, when it may be followed: within
/// `origin`, for a GET or HEAD, at most [`MAX_REDIRECTS`] times (`hops`
/// counts them from `first`).
fn redirect(
    resp: &reqwest::Response,
    url: &Url,
    origin: &url::Origin,
    method: &Method,
    hops: &mut usize,
    first: &Url,
) -> Result<Url, RegistryError> {
    let to = header(resp, LOCATION.as_str()).unwrap_or_default();
    let next = url.join(&to).map_err(|e| RegistryError::Transport {
        url: url.to_string(),
        detail: format!("redirected to `{}`, not a URL: {e}", shown(&to)),
    })?;
    if next.origin() != *origin {
        return Err(RegistryError::Redirect {
            from: url.to_string(),
            to: shown(next.as_str()),
        });
    }
    if !(*method == Method::GET || *method == Method::HEAD) {
        return Err(RegistryError::Transport {
            url: url.to_string(),
            detail: format!(
                "a {method} was redirected ({}); not followed",
                resp.status()
            ),
        });
    }
    *hops += 1;
    if *hops > MAX_REDIRECTS {
        return Err(RegistryError::TooManyRedirects {
            url: first.to_string(),
            limit: MAX_REDIRECTS,
        });
    }
    Ok(next)
}

fn header(resp: &reqwest::Response, name: &str) -> Option<String> {
    resp.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn is_loopback_host(host: &str) -> bool {
    host == "localhost"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// An error and its causes, one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cause = c.source();
    }
    shown(&out)
}
