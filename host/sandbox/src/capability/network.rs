//! The network capability as data: which origins a call may reach over
//! `wasi:http` ([`NetworkGrant`]), which secrets the host may put into its
//! requests for it and where ([`SecretGrant`]), and the checks that need
//! no I/O: parsing and matching an [`Origin`], filling `{{secret:NAME}}`
//! placeholders ([`fill_secrets`]) and telling a public address from one
//! a plugin must never reach ([`is_public`]). The requests themselves are
//! sent by `plugins::http`.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::{Deserialize, Serialize};

/// Requests one call may make unless its grant says otherwise.
pub const DEFAULT_MAX_REQUESTS: u32 = 32;
/// Largest response body one request may receive unless the grant says
/// otherwise (8 MiB).
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 8 << 20;
/// How a plugin names a secret in a header value.
pub const SECRET_OPEN: &str = "{{secret:";
/// The end of a placeholder.
pub const SECRET_CLOSE: &str = "}}";

/// `https` or `http`: the only schemes a plugin may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheme {
    /// TLS, verified against the granted name.
    Https,
    /// Plain text; granted only for loopback hosts.
    Http,
}

impl Scheme {
    /// The scheme's name, as in a URL.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Https => "https",
            Self::Http => "http",
        }
    }

    /// The port a URL without one means.
    pub fn default_port(self) -> u16 {
        match self {
            Self::Https => 443,
            Self::Http => 80,
        }
    }
}

/// A host as granted or requested: a lower-case DNS name, or an IP literal
/// (IPv6 written in brackets in URLs).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Host {
    /// A DNS name, lower case, without a trailing dot.
    Name(String),
    /// An IP literal: connected to as it is, never resolved.
    Ip(IpAddr),
}

impl Host {
    /// Parse the host part of an authority (`api.example.com`,
    /// `127.0.0.1`, `[::1]`); names are lower-cased and must be plain DNS
    /// names (letters, digits, `-`, dots between labels).
    pub fn parse(text: &str) -> Result<Self, OriginError> {
        let bad = || OriginError::Host(text.to_owned());
        if let Some(inner) = text.strip_prefix('[') {
            let inner = inner.strip_suffix(']').ok_or_else(bad)?;
            return inner
                .parse::<Ipv6Addr>()
                .map(|ip| Self::Ip(IpAddr::V6(ip)))
                .map_err(|_| bad());
        }
        if let Ok(ip) = text.parse::<Ipv4Addr>() {
            return Ok(Self::Ip(IpAddr::V4(ip)));
        }
        let name = text.to_ascii_lowercase();
        let labels_ok = name.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
        // A last label of digits only is an IP address in some other
        // spelling (`127.1`, `0177.0.0.1`): refused, not guessed at.
        let numeric_tail = name
            .rsplit('.')
            .next()
            .is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()));
        if name.is_empty() || name.len() > 253 || !labels_ok || numeric_tail {
            return Err(bad());
        }
        Ok(Self::Name(name))
    }

    /// Whether the host is this machine: `localhost`, 127.0.0.0/8, `::1`.
    pub fn is_loopback(&self) -> bool {
        match self {
            Self::Name(n) => n == "localhost",
            Self::Ip(ip) => ip.to_canonical().is_loopback(),
        }
    }

    /// The host as it goes into a URL and a TLS server name check.
    pub fn as_url_host(&self) -> String {
        match self {
            Self::Name(n) => n.clone(),
            Self::Ip(IpAddr::V4(ip)) => ip.to_string(),
            Self::Ip(IpAddr::V6(ip)) => format!("[{ip}]"),
        }
    }
}

impl std::fmt::Display for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.as_url_host())
    }
}

/// Why an origin (a grant entry or a request's target) is not acceptable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OriginError {
    /// Not `http` or `https`.
    #[error("scheme `{0}` is not http or https")]
    Scheme(String),
    /// Not a DNS name or IP literal.
    #[error("`{0}` is not a host name or IP address")]
    Host(String),
    /// Not a port number from 1 to 65535.
    #[error("`{0}` is not a port")]
    Port(String),
    /// A user name or password in the authority (`user@host`).
    #[error("`{0}`: a user name or password in the address is not allowed")]
    Userinfo(String),
    /// A path, query or fragment where only an origin belongs.
    #[error("`{0}` is not scheme://host[:port] (no path, query or fragment)")]
    NotAnOrigin(String),
    /// Plain `http` to anything but this machine.
    #[error(
        "`{0}`: plain http is allowed only to loopback (localhost, 127.0.0.1, [::1]); use https"
    )]
    PlainHttp(String),
}

/// One place a plugin may send requests to: scheme, host and port, all
/// three compared exactly (the host lower-cased; no wildcards, no
/// subdomains).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Origin {
    /// `https` (the default) or `http` (loopback only).
    pub scheme: Scheme,
    /// Name or IP literal.
    pub host: Host,
    /// Port; the scheme's default when the entry names none.
    pub port: u16,
}

impl Origin {
    /// Parse a grant entry: `host`, `host:port`, `https://host[:port]` or
    /// `http://host[:port]` (loopback hosts only). HTTPS unless `http://`
    /// is written; one trailing `/` is accepted, nothing else after the
    /// authority.
    pub fn parse(entry: &str) -> Result<Self, OriginError> {
        let (scheme, rest) = match entry.split_once("://") {
            Some((s, rest)) if s.eq_ignore_ascii_case("https") => (Scheme::Https, rest),
            Some((s, rest)) if s.eq_ignore_ascii_case("http") => (Scheme::Http, rest),
            Some((s, _)) => return Err(OriginError::Scheme(s.to_owned())),
            None => (Scheme::Https, entry),
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains(['/', '?', '#', '\\']) {
            return Err(OriginError::NotAnOrigin(entry.to_owned()));
        }
        let origin = Self::from_authority(scheme, rest)?;
        if scheme == Scheme::Http && !origin.host.is_loopback() {
            return Err(OriginError::PlainHttp(entry.to_owned()));
        }
        Ok(origin)
    }

    /// The origin a request's scheme and authority (`host[:port]`) name.
    /// A user name or password in the authority is refused.
    pub fn from_authority(scheme: Scheme, authority: &str) -> Result<Self, OriginError> {
        if authority.contains('@') {
            return Err(OriginError::Userinfo(authority.to_owned()));
        }
        // `[v6]:port`, `[v6]`, `host:port` or `host`.
        let (host, port) = if authority.starts_with('[') {
            match authority.rsplit_once("]:") {
                Some((h, p)) => (format!("{h}]"), Some(p)),
                None => (authority.to_owned(), None),
            }
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h.to_owned(), Some(p)),
                None => (authority.to_owned(), None),
            }
        };
        let port = match port {
            None => scheme.default_port(),
            Some(p) => Some(p)
                .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|p| p.parse::<u16>().ok())
                .filter(|p| *p != 0)
                .ok_or_else(|| OriginError::Port(p.to_owned()))?,
        };
        Ok(Self {
            scheme,
            host: Host::parse(&host)?,
            port,
        })
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}:{}", self.scheme.as_str(), self.host, self.port)
    }
}

/// A secret's value. It never serialises, and prints as `[secret]`, so a
/// grant can be logged, compared and stored without it.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SecretValue(String);

impl SecretValue {
    /// Wrap a value the host resolved (from its environment or config).
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value itself, for the one place that puts it into a request.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

/// A value read from a config file or the like; writing one back out is
/// what never happens.
impl<'de> Deserialize<'de> for SecretValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Self)
    }
}

impl std::fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[secret]")
    }
}

/// One secret a plugin may have the host put into its requests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretGrant {
    /// The only origins it is ever sent to (each also in the grant's
    /// `allow`).
    pub hosts: Vec<Origin>,
    /// Its value; `None` when the host has none (a request naming it is
    /// refused, saying so). Never serialised.
    #[serde(skip)]
    pub value: Option<SecretValue>,
}

/// The network a call may use: nothing unless `allow` names origins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkGrant {
    /// Origins requests may go to, compared exactly.
    pub allow: Vec<Origin>,
    /// Secrets by name (`GITHUB_TOKEN`) and where each may be sent.
    #[serde(default)]
    pub secrets: BTreeMap<String, SecretGrant>,
    /// Requests the call may make; the next ones are refused.
    pub max_requests: u32,
    /// Largest response body of one request, in bytes.
    pub max_response_bytes: u64,
}

impl Default for NetworkGrant {
    fn default() -> Self {
        Self {
            allow: Vec::new(),
            secrets: BTreeMap::new(),
            max_requests: DEFAULT_MAX_REQUESTS,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        }
    }
}

impl NetworkGrant {
    /// A grant of exactly these origins.
    pub fn allow(origins: impl IntoIterator<Item = Origin>) -> Self {
        Self {
            allow: origins.into_iter().collect(),
            ..Self::default()
        }
    }

    /// Also let the host send secret `name` (value `value`, if it has one)
    /// to `hosts`; only those among the granted origins count.
    pub fn secret(
        mut self,
        name: impl Into<String>,
        value: Option<SecretValue>,
        hosts: impl IntoIterator<Item = Origin>,
    ) -> Self {
        self.secrets.insert(
            name.into(),
            SecretGrant {
                hosts: hosts.into_iter().collect(),
                value,
            },
        );
        self
    }

    /// Whether no request at all is allowed.
    pub fn is_empty(&self) -> bool {
        self.allow.is_empty()
    }

    /// Whether `origin` is granted.
    pub fn allows(&self, origin: &Origin) -> bool {
        self.allow.contains(origin)
    }
}

/// Why a placeholder could not be filled; the request is then refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    /// `{{secret:` without `}}`, or an empty name.
    #[error("a `{{{{secret:NAME}}}}` placeholder is malformed")]
    Malformed,
    /// The plugin was not granted this secret.
    #[error("secret `{0}` was not granted to this plugin")]
    NotGranted(String),
    /// The secret may not be sent to this origin.
    #[error("secret `{name}` may not be sent to {origin}")]
    NotForHost {
        /// The secret.
        name: String,
        /// Where the request was going.
        origin: String,
    },
    /// The host has no value for it.
    #[error(
        "secret `{0}` has no value on this host (set ROOST_SECRET_{0} or [secrets] {0} in the config)"
    )]
    NoValue(String),
    /// The filled-in value is not a valid header value (CR, LF, controls).
    #[error(
        "secret `{0}` cannot go into a header (its value holds a line break or control character)"
    )]
    BadValue(String),
}

/// A header value with its `{{secret:NAME}}` placeholders filled for a
/// request to `origin`: `Ok(None)` when there is none, the filled text and
/// the names used otherwise. Every placeholder must name a secret granted
/// for `origin` that has a value; the result must be a valid header value.
pub fn fill_secrets(
    value: &str,
    origin: &Origin,
    grant: &NetworkGrant,
) -> Result<Option<(String, Vec<String>)>, SecretError> {
    if !value.contains(SECRET_OPEN) {
        return Ok(None);
    }
    let mut out = String::with_capacity(value.len());
    let mut names = Vec::new();
    let mut rest = value;
    while let Some(i) = rest.find(SECRET_OPEN) {
        out.push_str(&rest[..i]);
        let after = &rest[i + SECRET_OPEN.len()..];
        let end = after.find(SECRET_CLOSE).ok_or(SecretError::Malformed)?;
        let name = &after[..end];
        if name.is_empty() {
            return Err(SecretError::Malformed);
        }
        let secret = grant
            .secrets
            .get(name)
            .ok_or_else(|| SecretError::NotGranted(name.to_owned()))?;
        if !secret.hosts.contains(origin) || !grant.allows(origin) {
            return Err(SecretError::NotForHost {
                name: name.to_owned(),
                origin: origin.to_string(),
            });
        }
        let v = secret
            .value
            .as_ref()
            .ok_or_else(|| SecretError::NoValue(name.to_owned()))?;
        let v = v.expose();
        if v.bytes().any(|b| b.is_ascii_control() && b != b'\t') {
            return Err(SecretError::BadValue(name.to_owned()));
        }
        out.push_str(v);
        names.push(name.to_owned());
        rest = &after[end + SECRET_CLOSE.len()..];
    }
    out.push_str(rest);
    Ok(Some((out, names)))
}

/// Whether `ip` is a public unicast address a plugin may reach through a
/// granted name. Refused: loopback, private (10/8, 172.16/12,
/// 192.168/16), link-local (169.254/16, where cloud metadata lives;
/// fe80::/10), CGNAT (100.64/10), unspecified, broadcast, multicast,
/// documentation and benchmarking ranges, 0/8, 240/4, 192.0.0/24, unique
/// local (fc00::/7), site-local, discard-only and Teredo, and IPv6 forms
/// that embed an IPv4 address (mapped, compatible, NAT64, 6to4) whose
/// IPv4 address is not public.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let refused = ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || a >= 240
        || (a == 100 && (b & 0xc0) == 64)
        || (a == 192 && b == 0 && c == 0)
        || (a == 192 && b == 88 && c == 99)
        || (a == 198 && (b & 0xfe) == 18);
    !refused
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let seg = ip.segments();
    let embedded = |hi: usize| {
        let lo = |s: u16| s.to_be_bytes();
        let [a, b] = lo(seg[hi]);
        let [c, d] = lo(seg[hi + 1]);
        Ipv4Addr::new(a, b, c, d)
    };
    // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible (::a.b.c.d).
    if seg[..5].iter().all(|s| *s == 0) && (seg[5] == 0xffff || seg[5] == 0) {
        return seg[5] == 0xffff && is_public_v4(embedded(6));
    }
    // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) reach an IPv4 address.
    if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return is_public_v4(embedded(6));
    }
    if seg[0] == 0x2002 {
        return is_public_v4(embedded(1));
    }
    let refused = ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || ip.is_unique_local()
        || ip.is_unicast_link_local()
        || (seg[0] & 0xffc0) == 0xfec0 // site-local, deprecated
        || (seg[0] == 0x2001 && seg[1] == 0x0db8) // documentation
        || (seg[0] == 0x2001 && seg[1] == 0) // Teredo
        || seg[..4] == [0x100, 0, 0, 0]; // discard-only
    !refused
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(s: &str) -> Origin {
        Origin::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn grant_entries_parse_to_exact_origins() {
        for (entry, want) in [
            ("api.example.com", "https://api.example.com:443"),
            ("API.Example.COM", "https://api.example.com:443"),
            ("api.example.com:8443", "https://api.example.com:8443"),
            ("https://api.example.com/", "https://api.example.com:443"),
            ("HTTPS://api.example.com", "https://api.example.com:443"),
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
            ("http://localhost", "http://localhost:80"),
            ("http://[::1]:9000", "http://[::1]:9000"),
            ("[2001:4860::8888]", "https://[2001:4860::8888]:443"),
            ("8.8.8.8", "https://8.8.8.8:443"),
        ] {
            assert_eq!(origin(entry).to_string(), want, "{entry}");
        }
        assert_eq!(
            origin("http://[::1]:9000").host,
            Host::Ip(IpAddr::V6(Ipv6Addr::LOCALHOST))
        );
    }

    #[test]
    fn bad_entries_are_refused_with_the_reason() {
        for (entry, want) in [
            ("ftp://x.example", OriginError::Scheme("ftp".into())),
            (
                "http://api.example.com",
                OriginError::PlainHttp("http://api.example.com".into()),
            ),
            (
                "http://10.0.0.1:80",
                OriginError::PlainHttp("http://10.0.0.1:80".into()),
            ),
            (
                "user@api.example.com",
                OriginError::Userinfo("user@api.example.com".into()),
            ),
            (
                "http://127.0.0.1:1@evil.example",
                OriginError::Userinfo("127.0.0.1:1@evil.example".into()),
            ),
            (
                "api.example.com/path",
                OriginError::NotAnOrigin("api.example.com/path".into()),
            ),
            (
                "api.example.com?q",
                OriginError::NotAnOrigin("api.example.com?q".into()),
            ),
            ("*.example.com", OriginError::Host("*.example.com".into())),
            ("example.com.", OriginError::Host("example.com.".into())),
            ("-x.example", OriginError::Host("-x.example".into())),
            ("127.1", OriginError::Host("127.1".into())),
            ("0x7f.0.0.1", OriginError::Host("0x7f.0.0.1".into())),
            ("[::1", OriginError::Host("[::1".into())),
            ("", OriginError::Host(String::new())),
            ("api.example.com:0", OriginError::Port("0".into())),
            ("api.example.com:99999", OriginError::Port("99999".into())),
            ("api.example.com:+1", OriginError::Port("+1".into())),
            ("api.example.com:", OriginError::Port(String::new())),
        ] {
            assert_eq!(Origin::parse(entry), Err(want), "{entry}");
        }
    }

    #[test]
    fn requests_match_only_exact_origins() {
        let grant =
            NetworkGrant::allow([origin("api.example.com"), origin("http://127.0.0.1:8080")]);
        let req = |s: Scheme, a: &str| Origin::from_authority(s, a).map(|o| grant.allows(&o));
        assert_eq!(req(Scheme::Https, "api.example.com"), Ok(true));
        assert_eq!(req(Scheme::Https, "API.EXAMPLE.com:443"), Ok(true));
        assert_eq!(req(Scheme::Http, "api.example.com"), Ok(false));
        assert_eq!(req(Scheme::Https, "api.example.com:8443"), Ok(false));
        assert_eq!(req(Scheme::Https, "x.api.example.com"), Ok(false));
        assert_eq!(
            req(Scheme::Https, "api.example.com.evil.example"),
            Ok(false)
        );
        assert_eq!(req(Scheme::Http, "127.0.0.1:8080"), Ok(true));
        assert_eq!(req(Scheme::Http, "127.0.0.1:8081"), Ok(false));
        assert_eq!(req(Scheme::Https, "127.0.0.1:8080"), Ok(false));
        assert_eq!(req(Scheme::Http, "localhost:8080"), Ok(false));
        assert_eq!(req(Scheme::Http, "127.0.0.1.nip.io:8080"), Ok(false));
        assert!(matches!(
            req(Scheme::Http, "127.0.0.1:8080@evil.example"),
            Err(OriginError::Userinfo(_))
        ));
        assert!(req(Scheme::Https, "api.example.com.").is_err());
    }

    #[test]
    fn secrets_fill_only_for_their_hosts() {
        let api = origin("api.example.com");
        let other = origin("other.example.com");
        let grant = NetworkGrant::allow([api.clone(), other.clone()])
            .secret("TOKEN", Some(SecretValue::new("s3cr3t")), [api.clone()])
            .secret("EMPTY", None, [api.clone()])
            .secret(
                "BROKEN",
                Some(SecretValue::new("a\r\nX-Evil: 1")),
                [api.clone()],
            );
        assert_eq!(fill_secrets("Bearer x", &api, &grant), Ok(None));
        assert_eq!(
            fill_secrets("Bearer {{secret:TOKEN}}", &api, &grant),
            Ok(Some(("Bearer s3cr3t".into(), vec!["TOKEN".into()])))
        );
        assert_eq!(
            fill_secrets("{{secret:TOKEN}}:{{secret:TOKEN}}", &api, &grant)
                .map(|o| o.map(|(v, _)| v)),
            Ok(Some("s3cr3t:s3cr3t".into()))
        );
        assert!(matches!(
            fill_secrets("Bearer {{secret:TOKEN}}", &other, &grant),
            Err(SecretError::NotForHost { .. })
        ));
        assert_eq!(
            fill_secrets("{{secret:NOPE}}", &api, &grant),
            Err(SecretError::NotGranted("NOPE".into()))
        );
        assert_eq!(
            fill_secrets("{{secret:EMPTY}}", &api, &grant),
            Err(SecretError::NoValue("EMPTY".into()))
        );
        assert_eq!(
            fill_secrets("{{secret:BROKEN}}", &api, &grant),
            Err(SecretError::BadValue("BROKEN".into()))
        );
        assert_eq!(
            fill_secrets("{{secret:TOKEN", &api, &grant),
            Err(SecretError::Malformed)
        );
        assert_eq!(
            fill_secrets("{{secret:}}", &api, &grant),
            Err(SecretError::Malformed)
        );
        // An origin outside the grant never gets a secret, even if bound.
        let narrow = NetworkGrant::allow([other.clone()]).secret(
            "TOKEN",
            Some(SecretValue::new("s3cr3t")),
            [api.clone()],
        );
        assert!(fill_secrets("{{secret:TOKEN}}", &api, &narrow).is_err());
    }

    #[test]
    fn secret_values_never_print_or_serialise() {
        let api = origin("api.example.com");
        let grant = NetworkGrant::allow([api.clone()]).secret(
            "TOKEN",
            Some(SecretValue::new("s3cr3t")),
            [api],
        );
        assert!(!format!("{grant:?}").contains("s3cr3t"));
        let json = serde_json::to_string(&grant).expect("serialises");
        assert!(!json.contains("s3cr3t"), "{json}");
        assert!(json.contains("TOKEN"), "{json}");
    }

    #[test]
    fn only_public_addresses_are_public() {
        for ip in [
            "127.0.0.1",
            "127.255.0.9",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "0.0.0.0",
            "0.1.2.3",
            "255.255.255.255",
            "224.0.0.1",
            "240.0.0.1",
            "192.0.0.8",
            "192.0.2.1",
            "198.51.100.1",
            "203.0.113.1",
            "198.18.0.1",
            "::1",
            "::",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "64:ff9b::a00:1",
            "2002:a00:1::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "2001:db8::1",
            "2001::1",
            "100::1",
        ] {
            let addr: IpAddr = ip.parse().expect("ip");
            assert!(!is_public(addr), "{ip} must not be public");
        }
        for ip in [
            "8.8.8.8",
            "1.1.1.1",
            "100.63.255.255",
            "100.128.0.0",
            "172.32.0.1",
            "192.169.0.1",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::",
            "2606:4700:4700::1111",
            "2001:4860:4860::8888",
        ] {
            let addr: IpAddr = ip.parse().expect("ip");
            assert!(is_public(addr), "{ip} is public");
        }
    }
}
