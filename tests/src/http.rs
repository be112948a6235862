//! A tiny HTTP/1.1 server on 127.0.0.1 for tests of plugins' network
//! access: each request it receives goes to the test (never to the guest),
//! and a closure writes the raw reply.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::Duration;

use roost_sandbox::capability::Origin;

/// A request as the test server received it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The request target.
    pub path: String,
    /// Its headers, in order.
    pub headers: Vec<(String, String)>,
}

impl Seen {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A tiny HTTP/1.1 server on 127.0.0.1: each request it receives goes to
/// `seen` (the test reads it; the guest never does), and `respond` writes
/// the raw reply.
pub struct Server {
    /// Its port on 127.0.0.1.
    pub port: u16,
    seen: mpsc::Receiver<Seen>,
}

impl Server {
    /// Serve with `respond` until the test process ends.
    pub fn start(respond: impl Fn(&Seen) -> Vec<u8> + Send + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let (tx, seen) = mpsc::channel();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
                let Ok(read_half) = conn.try_clone() else {
                    continue;
                };
                let mut reader = BufReader::new(read_half);
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() {
                    continue;
                }
                let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
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
                let seen = Seen { path, headers };
                if let Some(n) = seen
                    .header("content-length")
                    .and_then(|v| v.parse::<usize>().ok())
                {
                    let mut body = vec![0; n];
                    let _ = reader.read_exact(&mut body);
                }
                let reply = respond(&seen);
                let _ = tx.send(seen);
                let _ = conn.write_all(&reply);
                let _ = conn.flush();
            }
        });
        Self { port, seen }
    }

    /// A server answering every request 200 with `body`.
    pub fn ok(body: &'static str) -> Self {
        Self::start(move |_| reply(200, &[], body))
    }

    /// Every request it received so far.
    pub fn received(&self) -> Vec<Seen> {
        self.seen.try_iter().collect()
    }

    /// `http://127.0.0.1:PORT` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Its origin as a grant names it.
    pub fn origin(&self) -> Origin {
        Origin::parse(&self.base()).expect("origin")
    }

    /// `http://127.0.0.1:PORT`, as a manifest's `network` lists it.
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

/// A whole HTTP/1.1 response.
pub fn reply(status: u16, headers: &[(&str, &str)], body: &str) -> Vec<u8> {
    reply_bytes(status, headers, body.as_bytes())
}

/// A whole HTTP/1.1 response with a binary body.
pub fn reply_bytes(status: u16, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    )
    .into_bytes();
    for (k, v) in headers {
        out.extend_from_slice(format!("{k}: {v}\r\n").as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    out
}
