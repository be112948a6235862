//! The one way out of a command's network namespace: an HTTP proxy the
//! host runs for that command on a Unix socket, which the sandbox sees at
//! a fixed path and a bridge inside serves on the sandbox's own loopback
//! (`HTTP_PROXY`/`HTTPS_PROXY` point there). The proxy lets a connection
//! through only to an origin the command's profile names: `CONNECT
//! host:port` for `https` origins, absolute-form requests for `http` ones.
//! Everything else gets `403` and is recorded; the command has no other
//! route out (no interface but loopback).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};

use roost_sandbox::capability::Origin;
use roost_sandbox::capability::network::Scheme;

/// Largest request head read before a request is refused.
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
    task: tokio::task::JoinHandle<()>,
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
        let allow = Arc::new(allow);
        let seen = Arc::clone(&attempts);
        let task = tokio::spawn(async move {
            loop {
                let Ok((conn, _)) = listener.accept().await else {
                    return;
                };
                let (allow, seen) = (Arc::clone(&allow), Arc::clone(&seen));
                tokio::spawn(async move {
                    if let Err(e) = serve(conn, &allow, &seen).await {
                        tracing::debug!("command proxy connection: {e}");
                    }
                });
            }
        });
        Ok(Self {
            socket,
            attempts,
            task,
        })
    }

    /// The socket the sandbox binds.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Stop serving; what was attempted.
    pub fn finish(self) -> Vec<Attempt> {
        self.task.abort();
        if let Err(e) = remove_socket(&self.socket) {
            tracing::debug!("command proxy socket not removed: {e}");
        }
        self.attempts.lock().map(|a| a.clone()).unwrap_or_default()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn remove_socket(p: &Path) -> std::io::Result<()> {
    match rustix::fs::unlink(p) {
        Ok(()) => Ok(()),
        Err(rustix::io::Errno::NOENT) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// What a request head asks for.
#[derive(Debug, PartialEq, Eq)]
enum Target {
    /// `CONNECT host:port`: a tunnel (https).
    Tunnel { host: String, port: u16 },
    /// `GET http://host[:port]/…`: one plain request.
    Plain { host: String, port: u16 },
}

/// Parse the request line of `head`.
fn target(head: &str) -> Option<Target> {
    let line = head.lines().next()?;
    let mut parts = line.split(' ');
    let method = parts.next()?;
    let uri = parts.next()?;
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = split_host_port(uri)?;
        return Some(Target::Tunnel { host, port: port? });
    }
    let rest = uri.strip_prefix("http://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    if authority.contains('@') {
        return None;
    }
    let (host, port) = split_host_port(authority)?;
    Some(Target::Plain {
        host,
        port: port.unwrap_or(80),
    })
}

fn split_host_port(s: &str) -> Option<(String, Option<u16>)> {
    if let Some(inner) = s.strip_prefix('[') {
        let (h, rest) = inner.split_once(']')?;
        let port = match rest.strip_prefix(':') {
            Some(p) => Some(p.parse().ok()?),
            None if rest.is_empty() => None,
            None => return None,
        };
        return Some((h.to_owned(), port));
    }
    match s.rsplit_once(':') {
        Some((h, p)) => Some((h.to_owned(), Some(p.parse().ok()?))),
        None => Some((s.to_owned(), None)),
    }
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

async fn serve(
    mut conn: UnixStream,
    allow: &[Origin],
    seen: &Mutex<Vec<Attempt>>,
) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    let end = loop {
        let n = conn.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
        if let Some(i) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if head.len() > MAX_HEAD {
            return refuse(&mut conn, "the request head is too large").await;
        }
    };
    let text = String::from_utf8_lossy(&head[..end]).into_owned();
    let Some(t) = target(&text) else {
        return refuse(
            &mut conn,
            "only CONNECT host:port and absolute http:// requests go through this proxy",
        )
        .await;
    };
    let (scheme, host, port) = match &t {
        Target::Tunnel { host, port } => (Scheme::Https, host.clone(), *port),
        Target::Plain { host, port } => (Scheme::Http, host.clone(), *port),
    };
    let ok = allowed(allow, scheme, &host, port);
    let origin = format!("{}://{host}:{port}", scheme.as_str());
    if let Ok(mut s) = seen.lock() {
        s.push(Attempt {
            origin: origin.clone(),
            allowed: ok,
        });
    }
    if !ok {
        return refuse(
            &mut conn,
            &format!("{origin} is not among the origins this command's profile allows"),
        )
        .await;
    }
    let mut upstream = match TcpStream::connect((host.as_str(), port)).await {
        Ok(s) => s,
        Err(e) => {
            let msg = format!("cannot reach {origin}: {e}");
            conn.write_all(
                format!(
                    "HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{msg}",
                    msg.len()
                )
                .as_bytes(),
            )
            .await?;
            return Ok(());
        }
    };
    match t {
        Target::Tunnel { .. } => {
            conn.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await?;
            // Anything sent after the head already belongs to the tunnel.
            upstream.write_all(&head[end..]).await?;
        }
        // The request goes as it came: servers accept the absolute form,
        // and the connection can only ever reach this origin.
        Target::Plain { .. } => upstream.write_all(&head).await?,
    }
    tokio::io::copy_bidirectional(&mut conn, &mut upstream).await?;
    Ok(())
}

async fn refuse(conn: &mut UnixStream, why: &str) -> std::io::Result<()> {
    let body = format!("Roost: {why}\n");
    conn.write_all(
        format!(
            "HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines_name_their_targets() {
        assert_eq!(
            target("CONNECT crates.io:443 HTTP/1.1\r\n\r\n"),
            Some(Target::Tunnel {
                host: "crates.io".into(),
                port: 443
            })
        );
        assert_eq!(
            target("GET http://127.0.0.1:8080/x?y HTTP/1.1\r\n\r\n"),
            Some(Target::Plain {
                host: "127.0.0.1".into(),
                port: 8080
            })
        );
        assert_eq!(
            target("GET http://example.com/ HTTP/1.1\r\n\r\n"),
            Some(Target::Plain {
                host: "example.com".into(),
                port: 80
            })
        );
        assert_eq!(target("GET /relative HTTP/1.1\r\n\r\n"), None);
        assert_eq!(target("GET http://user@evil/ HTTP/1.1\r\n\r\n"), None);
        assert_eq!(target("CONNECT crates.io HTTP/1.1\r\n\r\n"), None);
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
}
