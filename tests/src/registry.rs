//! A real OCI registry on 127.0.0.1 for the plugin registry tests — the
//! CNCF distribution registry (Debian's `docker-registry`, which `.ci/run`
//! installs), with or without a login — and a hostile proxy to put in
//! front of it: every request it forwards to the real registry, and a
//! rule the test writes decides what goes back (the answer as it came,
//! changed, trickled, stalled, or another answer).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A running `docker-registry` with its storage in a temp dir; stopped
/// when dropped.
pub struct Registry {
    /// Its port on 127.0.0.1.
    pub port: u16,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Registry {
    /// A registry anyone may pull from and push to.
    pub fn start() -> Self {
        Self::start_with(None)
    }

    /// A registry that asks for `user`'s `password` (htpasswd, bcrypt).
    pub fn with_login(user: &str, password: &str) -> Self {
        Self::start_with(Some((user, password)))
    }

    fn start_with(login: Option<(&str, &str)>) -> Self {
        let dir = tempfile::tempdir().expect("registry dir");
        let port = free_port();
        let mut config = format!(
            "version: 0.1\nlog:\n  level: warn\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n  secret: roost-tests\n",
            dir.path().join("data").display()
        );
        if let Some((user, password)) = login {
            let hash = bcrypt::hash(password, 4).expect("bcrypt");
            let file = dir.path().join("htpasswd");
            std::fs::write(&file, format!("{user}:{hash}\n")).expect("htpasswd");
            config.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: roost-tests\n    path: {}\n",
                file.display()
            ));
        }
        let file = dir.path().join("config.yml");
        std::fs::write(&file, config).expect("registry config");
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(
                std::fs::File::create(dir.path().join("log")).expect("log"),
            ))
            .spawn()
            .expect("docker-registry (Debian's package of the CNCF distribution registry; .ci/run installs it)");
        let r = Self {
            port,
            child,
            _dir: dir,
        };
        r.wait_ready();
        r
    }

    /// Wait until it answers `/v2/`.
    fn wait_ready(&self) {
        for _ in 0..600 {
            if let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) {
                let _ = s.write_all(b"GET /v2/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
                let mut out = String::new();
                let _ = s.read_to_string(&mut out);
                if out.starts_with("HTTP/1.1") {
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("docker-registry did not start on port {}", self.port);
    }

    /// `127.0.0.1:PORT`, as a reference names it.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port nothing listens on now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

/// A request as the proxy received it.
#[derive(Debug, Clone)]
pub struct Request {
    /// `GET`, `HEAD`, `PUT`, …
    pub method: String,
    /// The request target.
    pub path: String,
    /// Its headers, in order.
    pub headers: Vec<(String, String)>,
    /// Its body.
    pub body: Vec<u8>,
}

impl Request {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// An HTTP response.
#[derive(Debug, Clone)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Headers (without `Content-Length`, `Transfer-Encoding` and
    /// `Connection`, which the proxy writes).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// For a `HEAD`: the length the registry declared.
    pub head_length: Option<String>,
}

impl Response {
    /// A response of `status` with `headers` and `body`.
    pub fn new(status: u16, headers: &[(&str, &str)], body: impl Into<Vec<u8>>) -> Self {
        Self {
            status,
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            body: body.into(),
            head_length: None,
        }
    }

    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Set header `name` to `value` (replacing it).
    pub fn set_header(&mut self, name: &str, value: &str) {
        self.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        self.headers.push((name.to_owned(), value.to_owned()));
    }

    fn head(&self, declared: Option<usize>) -> Vec<u8> {
        let mut out = format!("HTTP/1.1 {} X\r\nConnection: close\r\n", self.status);
        for (k, v) in &self.headers {
            out.push_str(&format!("{k}: {v}\r\n"));
        }
        match (&self.head_length, declared) {
            (Some(l), _) => out.push_str(&format!("Content-Length: {l}\r\n")),
            (None, Some(n)) => out.push_str(&format!("Content-Length: {n}\r\n")),
            (None, None) => {}
        }
        out.push_str("\r\n");
        out.into_bytes()
    }
}

/// What the proxy sends back.
pub enum Action {
    /// This response.
    Send(Response),
    /// The headers (declaring the whole body), then the body one byte at
    /// a time, a byte every interval, until the client hangs up.
    Trickle(Response, Duration),
    /// The headers (declaring the whole body), then nothing, until the
    /// client hangs up.
    Stall(Response),
}

type Rule = dyn Fn(&Request, Response) -> Action + Send + Sync;

/// A proxy on 127.0.0.1 in front of a registry.
pub struct Proxy {
    /// Its port.
    pub port: u16,
    seen: Arc<Mutex<Vec<Request>>>,
}

impl Proxy {
    /// Forward every request to the registry on `upstream`, and answer
    /// what `rule` makes of the registry's answer.
    pub fn start(
        upstream: u16,
        rule: impl Fn(&Request, Response) -> Action + Send + Sync + 'static,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let rule: Arc<Rule> = Arc::new(rule);
        let log = Arc::clone(&seen);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let rule = Arc::clone(&rule);
                let log = Arc::clone(&log);
                std::thread::spawn(move || serve(conn, upstream, &*rule, &log));
            }
        });
        Self { port, seen }
    }

    /// A proxy that passes everything through.
    pub fn transparent(upstream: u16) -> Self {
        Self::start(upstream, |_, r| Action::Send(r))
    }

    /// `127.0.0.1:PORT`.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Every request it received so far.
    pub fn seen(&self) -> Vec<Request> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

fn serve(mut conn: TcpStream, upstream: u16, rule: &Rule, log: &Mutex<Vec<Request>>) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(30)));
    let Some(req) = read_request(&conn) else {
        return;
    };
    if let Ok(mut l) = log.lock() {
        l.push(req.clone());
    }
    let Some(resp) = forward(&req, upstream) else {
        return;
    };
    let head_request = req.method == "HEAD";
    match rule(&req, resp) {
        Action::Send(r) => {
            let declared = (!head_request).then_some(r.body.len());
            let _ = conn.write_all(&r.head(declared));
            if !head_request {
                let _ = conn.write_all(&r.body);
            }
        }
        Action::Trickle(r, every) => {
            if conn.write_all(&r.head(Some(r.body.len()))).is_err() {
                return;
            }
            for b in &r.body {
                std::thread::sleep(every);
                if conn.write_all(std::slice::from_ref(b)).is_err() {
                    return;
                }
            }
        }
        Action::Stall(r) => {
            if conn.write_all(&r.head(Some(r.body.len()))).is_err() {
                return;
            }
            // Nothing more: wait for the client to give up.
            let _ = conn.set_read_timeout(None);
            let mut sink = [0u8; 64];
            while matches!(conn.read(&mut sink), Ok(n) if n > 0) {}
        }
    }
    let _ = conn.flush();
}

fn read_request(conn: &TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(conn.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.trim_end().split_once(':') {
            headers.push((k.trim().to_owned(), v.trim().to_owned()));
        }
    }
    let mut req = Request {
        method,
        path,
        headers,
        body: Vec::new(),
    };
    if let Some(n) = req
        .header("content-length")
        .and_then(|v| v.parse::<usize>().ok())
    {
        let mut body = vec![0; n];
        reader.read_exact(&mut body).ok()?;
        req.body = body;
    }
    Some(req)
}

/// Send `req` to the registry and read its whole answer.
fn forward(req: &Request, upstream: u16) -> Option<Response> {
    let mut s = TcpStream::connect(("127.0.0.1", upstream)).ok()?;
    let mut out = format!("{} {} HTTP/1.1\r\n", req.method, req.path);
    for (k, v) in &req.headers {
        if k.eq_ignore_ascii_case("connection") {
            continue;
        }
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("Connection: close\r\n\r\n");
    s.write_all(out.as_bytes()).ok()?;
    s.write_all(&req.body).ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut body = raw[split + 4..].to_vec();
    let mut lines = head.lines();
    let status = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let mut headers = Vec::new();
    let mut chunked = false;
    let mut length = None;
    for l in lines {
        let Some((k, v)) = l.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        if k.eq_ignore_ascii_case("transfer-encoding") {
            chunked = v.eq_ignore_ascii_case("chunked");
        } else if k.eq_ignore_ascii_case("content-length") {
            length = Some(v.to_owned());
        } else if !k.eq_ignore_ascii_case("connection") {
            headers.push((k.to_owned(), v.to_owned()));
        }
    }
    if chunked {
        body = dechunk(&body);
    }
    Some(Response {
        status,
        headers,
        body,
        head_length: if req.method == "HEAD" { length } else { None },
    })
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = raw.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(
            String::from_utf8_lossy(&raw[..end])
                .split(';')
                .next()
                .unwrap_or("0")
                .trim(),
            16,
        )
        .unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = end + 2;
        let Some(chunk) = raw.get(start..start + size) else {
            break;
        };
        out.extend_from_slice(chunk);
        raw = raw.get(start + size + 2..).unwrap_or_default();
    }
    out
}

/// Docker's config dir at `dir` with a login for `registry`: what
/// `DOCKER_CONFIG` names for a `roost` under test.
pub fn docker_login(dir: &Path, registry: &str, user: &str, password: &str) {
    use base64::Engine as _;
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    std::fs::create_dir_all(dir).expect("docker config dir");
    std::fs::write(
        dir.join("config.json"),
        serde_json::json!({"auths": {registry: {"auth": auth}}}).to_string(),
    )
    .expect("docker config");
}

/// A cosign key made from a fixed seed (no randomness in tests): the
/// signing key, and its `cosign.pub` PEM for Roost's config.
pub fn cosign_key(seed: u8) -> (p256::ecdsa::SigningKey, String) {
    use p256::pkcs8::{EncodePublicKey, LineEnding};
    let key = p256::ecdsa::SigningKey::from_slice(&[seed; 32]).expect("key");
    let pem = key
        .verifying_key()
        .to_public_key_pem(LineEnding::LF)
        .expect("public pem");
    (key, pem)
}

/// Sign the artifact `digest` of `repository` on the plain-HTTP registry
/// `host` with `key`, as `cosign sign --key` stores a signature: a
/// simple-signing payload naming the digest, its ECDSA signature in the
/// layer's `dev.cosignproject.cosign/signature` annotation, pushed as an
/// OCI manifest at the tag `sha256-<hex>.sig` beside the artifact.
pub fn cosign_sign(host: &str, repository: &str, digest: &str, key: &p256::ecdsa::SigningKey) {
    cosign_sign_as(host, repository, digest, digest, key);
}

/// [`cosign_sign`], but the payload names `signed` while the signature is
/// stored as `digest`'s (a signature moved onto other content).
pub fn cosign_sign_as(
    host: &str,
    repository: &str,
    digest: &str,
    signed: &str,
    key: &p256::ecdsa::SigningKey,
) {
    use base64::Engine as _;
    use p256::ecdsa::signature::Signer as _;
    use roost_registry::{Client, Options, Reference};
    // Go's encoding of cosign's payload: fields in order, no spaces.
    let payload = format!(
        r#"{{"critical":{{"identity":{{"docker-reference":"{host}/{repository}"}},"image":{{"docker-manifest-digest":"{signed}"}},"type":"cosign container image signature"}},"optional":null}}"#
    );
    let signature: p256::ecdsa::Signature = key.sign(payload.as_bytes());
    let signature = base64::engine::general_purpose::STANDARD.encode(signature.to_der().as_bytes());
    let hex = digest.trim_start_matches("sha256:");
    let r = Reference::parse(&format!("oci://{host}/{repository}:sha256-{hex}.sig")).expect("ref");
    let client = Client::new(Options {
        insecure: vec![host.to_owned()],
        ..Options::default()
    })
    .expect("client");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let config = br#"{"architecture":"","config":{},"created":"0001-01-01T00:00:00Z","history":[{"created":"0001-01-01T00:00:00Z"}],"os":"","rootfs":{"type":"layers","diff_ids":[]}}"#;
        let config_digest = client.push_blob(&r, config).await.expect("config");
        let payload_digest = client.push_blob(&r, payload.as_bytes()).await.expect("payload");
        let manifest = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "size": config.len(),
                "digest": config_digest.as_str(),
            },
            "layers": [{
                "mediaType": "application/vnd.dev.cosign.simplesigning.v1+json",
                "size": payload.len(),
                "digest": payload_digest.as_str(),
                "annotations": {"dev.cosignproject.cosign/signature": signature},
            }],
        });
        client
            .push_manifest(
                &r,
                &format!("sha256-{hex}.sig"),
                "application/vnd.oci.image.manifest.v1+json",
                &serde_json::to_vec(&manifest).expect("json"),
            )
            .await
            .expect("signature manifest");
    });
}
