//! A real HTTP server on 127.0.0.1 that answers each request with the next
//! canned response (status, headers, body bytes verbatim) and records the
//! requests. Used to test the providers against recorded streams.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// One canned response.
pub struct Canned {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Canned {
    /// An SSE stream from a fixture file under tests/fixtures/llm.
    pub fn sse(fixture: &str) -> Self {
        // Included by crates at different depths: find the repository's
        // fixtures above whichever crate this is.
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .ancestors()
            .map(|a| a.join("tests/fixtures/llm"))
            .find(|p| p.is_dir())
            .expect("tests/fixtures/llm above the crate")
            .join(fixture);
        let body =
            std::fs::read(&path).unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()));
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body,
        }
    }

    /// An error status with a body and extra headers.
    pub fn error(status: u16, headers: &[(&str, &str)], body: &str) -> Self {
        Self {
            status,
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            body: body.as_bytes().to_vec(),
        }
    }
}

/// The running server.
pub struct Server {
    pub port: u16,
    pub requests: Arc<Mutex<Vec<String>>>,
}

impl Server {
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }
}

/// Start serving `responses` in order; once they run out, answer 500.
pub async fn start(responses: Vec<Canned>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let queue = Arc::new(Mutex::new(VecDeque::from(responses)));
    let requests = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&requests);
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let queue = Arc::clone(&queue);
            let log = Arc::clone(&log);
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 8192];
                // Read headers, then the body by Content-Length.
                let (head_end, len) = loop {
                    let Ok(n) = sock.read(&mut chunk).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buf[..pos]).to_ascii_lowercase();
                        let len = head
                            .lines()
                            .find_map(|l| {
                                l.strip_prefix("content-length:")
                                    .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        break (pos + 4, len);
                    }
                };
                while buf.len() < head_end + len {
                    let Ok(n) = sock.read(&mut chunk).await else {
                        return;
                    };
                    if n == 0 {
                        break;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                log.lock()
                    .expect("lock")
                    .push(String::from_utf8_lossy(&buf).into_owned());
                let canned = queue
                    .lock()
                    .expect("lock")
                    .pop_front()
                    .unwrap_or_else(|| Canned::error(500, &[], "no more responses"));
                let mut head = format!("HTTP/1.1 {} X\r\nconnection: close\r\n", canned.status);
                for (k, v) in &canned.headers {
                    head.push_str(&format!("{k}: {v}\r\n"));
                }
                head.push_str("\r\n");
                let _ = sock.write_all(head.as_bytes()).await;
                // Body in small pieces, close-delimited, as streaming servers do.
                for piece in canned.body.chunks(97) {
                    if sock.write_all(piece).await.is_err() {
                        return;
                    }
                    let _ = sock.flush().await;
                }
                let _ = sock.shutdown().await;
            });
        }
    });
    Server { port, requests }
}
