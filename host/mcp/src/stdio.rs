//! The stdio transport to a server Roost started: its stdout read through
//! [`Bounded`], which ends the connection with a clear error the moment a
//! message grows past [`MAX_MESSAGE`], and its process killed when the
//! transport is dropped.
//!
//! `rmcp`'s own reader (3.11) caps a line at 16 MiB too, but it drops an
//! oversized line, logs it and reads on: the request it answered then
//! waits out its whole timeout for a reply that already came. Here the
//! connection ends at once instead; every request waiting on it fails
//! with [`Overflow`]'s reason, and the server is restarted.
//!
//! How the process ended is watched ([`Exit`]) and the last lines of its
//! stderr kept ([`StderrTail`]): a server that exits before it answers
//! fails at once, saying why, instead of waiting out its timeout.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::watch;
use tokio_util::sync::{CancellationToken, DropGuard};

/// Largest message (one line of JSON-RPC) Roost reads from a stdio server:
/// the size `rmcp` caps a line at, and its HTTP transport an event.
pub const MAX_MESSAGE: usize = 16 * 1024 * 1024;

/// Set once a connection's reader met a message past its bound: why the
/// connection ended.
#[derive(Debug, Clone, Default)]
pub struct Overflow(Arc<OnceLock<String>>);

impl Overflow {
    /// Why the connection ended, when a message was too large.
    pub fn reason(&self) -> Option<&str> {
        self.0.get().map(String::as_str)
    }

    fn trip(&self, limit: usize) {
        let _ = self.0.set(format!(
            "it sent a message larger than {} MiB, the most Roost reads (a result that large \
             must be cut by the server, or read in parts)",
            limit / (1024 * 1024)
        ));
    }
}

/// A reader that fails — instead of handing on — a line longer than its
/// bound, so the protocol layer above ends the connection at once.
#[derive(Debug)]
pub struct Bounded<R> {
    inner: R,
    limit: usize,
    /// Bytes of the current line read so far.
    line: usize,
    overflow: Overflow,
}

impl<R> Bounded<R> {
    /// `inner` read with lines of at most `limit` bytes (newline not
    /// counted); a longer one trips `overflow`.
    pub fn new(inner: R, limit: usize, overflow: Overflow) -> Self {
        Self {
            inner,
            limit,
            line: 0,
            overflow,
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Bounded<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if this.overflow.reason().is_some() {
            return Poll::Ready(Err(too_large(this.limit)));
        }
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        for &b in &buf.filled()[before..] {
            if b == b'\n' {
                this.line = 0;
            } else {
                this.line += 1;
                if this.line > this.limit {
                    this.overflow.trip(this.limit);
                    // What was read with it is dropped with the
                    // connection.
                    buf.set_filled(before);
                    return Poll::Ready(Err(too_large(this.limit)));
                }
            }
        }
        Poll::Ready(Ok(()))
    }
}

fn too_large(limit: usize) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("a message from the server is larger than {limit} bytes"),
    )
}

/// How a started server's process ended, once it has.
#[derive(Debug, Clone)]
pub struct Exit(watch::Receiver<Option<String>>);

impl Exit {
    /// Wait until the process has ended; how (`exit code 1`, `killed by
    /// signal 9`), or `None` when Roost stopped it.
    pub async fn ended(&self) -> Option<String> {
        let mut rx = self.0.clone();
        match rx.wait_for(Option::is_some).await {
            Ok(v) => v.clone(),
            // The watcher is gone: the transport was dropped and the
            // process killed.
            Err(_) => None,
        }
    }

    /// How it ended, if it has.
    pub fn now(&self) -> Option<String> {
        self.0.borrow().clone()
    }
}

/// How `status` ended a process, in words.
fn describe(status: std::io::Result<std::process::ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Ok(s) => match (s.code(), s.signal()) {
            (Some(c), _) => format!("exit code {c}"),
            (None, Some(sig)) => format!("killed by signal {sig}"),
            (None, None) => "ended".to_owned(),
        },
        Err(e) => format!("lost ({e})"),
    }
}

/// A started server's stdin and (bounded) stdout as an MCP transport; the
/// process lives as long as the transport (it is killed on drop).
pub struct ChildTransport {
    io: AsyncRwTransport<RoleClient, Bounded<ChildStdout>, ChildStdin>,
    /// Dropped with the transport: the watcher kills the process.
    _kill: DropGuard,
}

impl ChildTransport {
    /// The transport to `child`, started by `command`, whose stdin and
    /// stdout must be piped; an oversized message trips `overflow`. The
    /// process is watched: [`Exit`] says when and how it ended, and it is
    /// killed when the transport is dropped. `command` (which holds the
    /// process's cgroup) is kept until then.
    pub fn new(
        mut child: Child,
        command: Command,
        overflow: Overflow,
    ) -> std::io::Result<(Self, Exit)> {
        let missing = |what: &str| std::io::Error::other(format!("its {what} is not a pipe"));
        let stdin = child.stdin.take().ok_or_else(|| missing("stdin"))?;
        let stdout = child.stdout.take().ok_or_else(|| missing("stdout"))?;
        // `rmcp`'s own bound sits past ours (the newline is not counted
        // here): it never drops a line silently.
        let io = AsyncRwTransport::new_client(Bounded::new(stdout, MAX_MESSAGE, overflow), stdin)
            .with_max_line_length(MAX_MESSAGE.saturating_add(2));
        let (tx, rx) = watch::channel(None);
        let kill = CancellationToken::new();
        let dropped = kill.clone();
        tokio::spawn(async move {
            let _command = command;
            tokio::select! {
                status = child.wait() => {
                    let _ = tx.send(Some(describe(status)));
                    dropped.cancelled().await;
                }
                () = dropped.cancelled() => {
                    // A process whose output just closed is exiting on its
                    // own: how it ended is still told.
                    match tokio::time::timeout(EXITING, child.wait()).await {
                        Ok(status) => {
                            let _ = tx.send(Some(describe(status)));
                        }
                        Err(_) => {
                            let _ = child.start_kill();
                            let _ = child.wait().await;
                        }
                    }
                }
            }
        });
        Ok((
            Self {
                io,
                _kill: kill.drop_guard(),
            },
            Exit(rx),
        ))
    }
}

/// How long a dropped transport's process may take to exit on its own
/// before it is killed.
const EXITING: Duration = Duration::from_millis(500);

/// Lines of a server's stderr kept for the reason it failed.
const TAIL_LINES: usize = 12;

/// The last lines a server wrote to its stderr (each bounded and
/// cleaned by whoever pushes it), and whether the stream has closed.
#[derive(Debug, Clone)]
pub struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
    closed: watch::Sender<bool>,
}

impl Default for StderrTail {
    fn default() -> Self {
        Self {
            lines: Arc::default(),
            closed: watch::Sender::new(false),
        }
    }
}

impl StderrTail {
    /// Keep `line`, dropping the oldest past the bound.
    pub fn push(&self, line: String) {
        let mut l = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        if l.len() == TAIL_LINES {
            l.pop_front();
        }
        l.push_back(line);
    }

    /// The stream has ended.
    pub fn close(&self) {
        self.closed.send_replace(true);
    }

    /// The lines kept, oldest first.
    pub fn lines(&self) -> Vec<String> {
        self.lines
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .cloned()
            .collect()
    }

    /// Wait until the stream has closed, at most `bound` (a process that
    /// left a child holding it could keep it open forever).
    pub async fn drained(&self, bound: Duration) {
        let mut rx = self.closed.subscribe();
        let _ = tokio::time::timeout(bound, rx.wait_for(|c| *c)).await;
    }
}

impl Transport<RoleClient> for ChildTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.io.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.io.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.io.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn a_line_past_the_bound_fails_the_read() {
        let overflow = Overflow::default();
        let data: &[u8] = b"short\nlonger than ten\n";
        let mut r = Bounded::new(data, 10, overflow.clone());
        let mut out = Vec::new();
        let e = r.read_to_end(&mut out).await.expect_err("too long");
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
        assert!(overflow.reason().is_some_and(|r| r.contains("larger than")));

        let fine = Overflow::default();
        let mut r = Bounded::new(&b"0123456789\n0123456789\n"[..], 10, fine.clone());
        let mut out = Vec::new();
        r.read_to_end(&mut out).await.expect("within the bound");
        assert_eq!(out.len(), 22);
        assert!(fine.reason().is_none());
    }
}
