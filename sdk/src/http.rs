//! Outgoing HTTP through the host (`wasi:http`), as blocking calls. A
//! request reaches only the hosts the plugin was granted at install; any
//! other is refused by the host before it leaves the machine, and comes
//! back here as [`HttpError::Denied`]. Secrets are never in the plugin: put
//! `{{secret:NAME}}` in a header value and the host fills it in for the
//! granted hosts.
//!
//! ```ignore
//! let res = roost_sdk::http::get("https://api.example.com/v1/items")?;
//! let res = roost_sdk::http::Request::post("https://api.example.com/v1/items")
//!     .header("authorization", "Bearer {{secret:EXAMPLE_TOKEN}}")
//!     .body(b"{}".to_vec())
//!     .send()?;
//! ```

use crate::ToolError;
use crate::bindings::wasi::http::outgoing_handler;
use crate::bindings::wasi::http::types::{
    ErrorCode, Fields, Method, OutgoingBody, OutgoingRequest, Scheme,
};
use crate::bindings::wasi::io::streams::StreamError;

/// Most bytes of a response body read (the host bounds it too).
const MAX_BODY: usize = 16 << 20;

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpError {
    /// The URL cannot be sent (not http(s), no host, bad header).
    Invalid(String),
    /// The host refused the request: the plugin was not granted that host
    /// (or that port, scheme, secret), or a bound was reached.
    Denied(String),
    /// The request was sent and failed (connection, TLS, protocol).
    Failed(String),
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Invalid(m) => write!(f, "invalid request: {m}"),
            Self::Denied(m) => write!(f, "refused by the host: {m}"),
            Self::Failed(m) => write!(f, "request failed: {m}"),
        }
    }
}

impl std::error::Error for HttpError {}

impl From<HttpError> for ToolError {
    fn from(e: HttpError) -> Self {
        match e {
            HttpError::Invalid(_) => ToolError::invalid_args(e.to_string()),
            HttpError::Denied(_) => ToolError::permission_denied(e.to_string()),
            HttpError::Failed(_) => ToolError::internal(e.to_string()),
        }
    }
}

/// A response, read whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Headers, as sent (names lower-case).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// The body as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A request being built.
#[derive(Debug, Clone)]
pub struct Request {
    method: &'static str,
    url: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// `GET url`.
pub fn get(url: &str) -> Result<Response, HttpError> {
    Request::get(url).send()
}

impl Request {
    /// A `GET`.
    pub fn get(url: &str) -> Self {
        Self::new("GET", url)
    }

    /// A `POST`.
    pub fn post(url: &str) -> Self {
        Self::new("POST", url)
    }

    /// Any method (`GET`, `POST`, `PUT`, `PATCH`, `DELETE`, `HEAD`).
    pub fn new(method: &'static str, url: &str) -> Self {
        Self {
            method,
            url: url.to_owned(),
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// Add a header. A value may hold `{{secret:NAME}}`, filled in by the
    /// host for the hosts the secret is granted to.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Set the body.
    pub fn body(mut self, body: Vec<u8>) -> Self {
        self.body = body;
        self
    }

    /// Send it and read the whole response.
    pub fn send(self) -> Result<Response, HttpError> {
        let (https, rest) = if let Some(r) = self.url.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = self.url.strip_prefix("http://") {
            (false, r)
        } else {
            return Err(HttpError::Invalid(format!(
                "{}: only http:// and https:// URLs",
                self.url
            )));
        };
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) if rest[i..].starts_with('?') => (&rest[..i], format!("/{}", &rest[i..])),
            Some(i) => (&rest[..i], rest[i..].to_owned()),
            None => (rest, "/".to_owned()),
        };
        if authority.is_empty() {
            return Err(HttpError::Invalid(format!("{}: no host", self.url)));
        }
        let fields = Fields::new();
        for (k, v) in &self.headers {
            fields
                .append(k, v.as_bytes())
                .map_err(|e| HttpError::Invalid(format!("header {k}: {e:?}")))?;
        }
        let req = OutgoingRequest::new(fields);
        let method = match self.method {
            "GET" => Method::Get,
            "POST" => Method::Post,
            "PUT" => Method::Put,
            "PATCH" => Method::Patch,
            "DELETE" => Method::Delete,
            "HEAD" => Method::Head,
            other => Method::Other(other.to_owned()),
        };
        let invalid = |what: &str| HttpError::Invalid(format!("{}: bad {what}", self.url));
        req.set_method(&method).map_err(|()| invalid("method"))?;
        req.set_scheme(Some(if https { &Scheme::Https } else { &Scheme::Http }))
            .map_err(|()| invalid("scheme"))?;
        req.set_authority(Some(authority))
            .map_err(|()| invalid("host"))?;
        req.set_path_with_query(Some(&path))
            .map_err(|()| invalid("path"))?;
        let out_body = req
            .body()
            .map_err(|()| HttpError::Failed("the request body is unavailable".into()))?;
        {
            let stream = out_body
                .write()
                .map_err(|()| HttpError::Failed("cannot write the request body".into()))?;
            for chunk in self.body.chunks(4096) {
                stream
                    .blocking_write_and_flush(chunk)
                    .map_err(|e| HttpError::Failed(format!("writing the body: {e:?}")))?;
            }
        }
        let future = outgoing_handler::handle(req, None).map_err(classify)?;
        OutgoingBody::finish(out_body, None).map_err(classify)?;
        let res = loop {
            if let Some(res) = future.get() {
                break res;
            }
            future.subscribe().block();
        };
        let res = res
            .map_err(|()| HttpError::Failed("the response was already taken".into()))?
            .map_err(classify)?;
        let status = res.status();
        let headers = res
            .headers()
            .entries()
            .into_iter()
            .map(|(k, v)| (k, String::from_utf8_lossy(&v).into_owned()))
            .collect();
        let incoming = res
            .consume()
            .map_err(|()| HttpError::Failed("the response body is unavailable".into()))?;
        let mut body = Vec::new();
        {
            let stream = incoming
                .stream()
                .map_err(|()| HttpError::Failed("the response body is unavailable".into()))?;
            loop {
                match stream.blocking_read(64 << 10) {
                    Ok(chunk) => {
                        body.extend_from_slice(&chunk);
                        if body.len() > MAX_BODY {
                            return Err(HttpError::Denied(format!(
                                "the response body is over {} MiB",
                                MAX_BODY >> 20
                            )));
                        }
                    }
                    Err(StreamError::Closed) => break,
                    Err(StreamError::LastOperationFailed(e)) => {
                        return Err(HttpError::Failed(format!(
                            "reading the body: {}",
                            e.to_debug_string()
                        )));
                    }
                }
            }
        }
        Ok(Response {
            status,
            headers,
            body,
        })
    }
}

/// The host's error for a request, as an [`HttpError`].
fn classify(e: ErrorCode) -> HttpError {
    match e {
        ErrorCode::HttpRequestDenied
        | ErrorCode::DestinationIpProhibited
        | ErrorCode::ConnectionLimitReached
        | ErrorCode::HttpResponseBodySize(_) => HttpError::Denied(format!("{e:?}")),
        ErrorCode::HttpRequestUriInvalid | ErrorCode::HttpRequestMethodInvalid => {
            HttpError::Invalid(format!("{e:?}"))
        }
        other => HttpError::Failed(format!("{other:?}")),
    }
}
