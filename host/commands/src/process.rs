//! Running one confined command: both output streams read as they come
//! (into the [`Capture`] and the live stream), a wall-clock limit and the
//! task's cancel that kill the command's whole process group, and what
//! became of it.

use std::future::Future;
use std::time::Duration;

use tokio::io::AsyncReadExt;

use super::output::Capture;

/// How long a finished command's pipes may stay open before reading
/// stops.
const DRAIN: Duration = Duration::from_secs(2);

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// It exited with this code.
    Exited(i32),
    /// A signal ended it.
    Signalled(i32),
    /// It ran past its time limit and was killed.
    TimedOut,
    /// The task was cancelled and it was killed.
    Cancelled,
}

impl Ended {
    /// The exit code, when it exited.
    pub fn code(self) -> Option<i32> {
        match self {
            Self::Exited(c) => Some(c),
            _ => None,
        }
    }
}

impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Exited(c) => write!(f, "exit code {c}"),
            Self::Signalled(s) => write!(f, "killed by signal {s}"),
            Self::TimedOut => write!(f, "timed out (killed)"),
            Self::Cancelled => write!(f, "cancelled (killed)"),
        }
    }
}

/// Kill the process group `pgid` (the command and everything it started
/// that did not leave the group).
fn kill_group(pgid: Option<u32>) {
    let Some(pid) = pgid
        .and_then(|p| i32::try_from(p).ok())
        .and_then(rustix::process::Pid::from_raw)
    else {
        return;
    };
    if let Err(e) = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL)
        && e != rustix::io::Errno::SRCH
    {
        tracing::warn!("cannot kill command process group {pid:?}: {e}");
    }
}

/// Run `cmd` to its end (or its time limit, or `cancelled`), its output
/// into `capture`; each live chunk goes to `live`.
pub async fn run<L, LF>(
    mut cmd: tokio::process::Command,
    limit: Duration,
    capture: &mut Capture,
    mut live: L,
    cancelled: impl Future<Output = ()>,
) -> std::io::Result<Ended>
where
    L: FnMut(String) -> LF,
    LF: Future<Output = ()>,
{
    let mut child = cmd.spawn()?;
    let pgid = child.id();
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let (mut ob, mut eb) = (vec![0u8; 16 * 1024], vec![0u8; 16 * 1024]);
    let deadline = tokio::time::sleep(limit);
    tokio::pin!(deadline);
    tokio::pin!(cancelled);
    let mut status = None;
    let mut stopped = None;
    // Once it has ended (or been killed), its pipes get a moment to
    // drain: a process that left its group could hold them open forever.
    let drain = tokio::time::sleep(Duration::from_secs(86_400 * 365));
    tokio::pin!(drain);
    let mut draining = false;
    loop {
        if out.is_none() && err.is_none() && (status.is_some() || stopped.is_some()) {
            break;
        }
        if !draining && (status.is_some() || stopped.is_some()) {
            draining = true;
            drain.as_mut().reset(tokio::time::Instant::now() + DRAIN);
        }
        tokio::select! {
            () = &mut drain, if draining => break,
            n = read(&mut out, &mut ob), if out.is_some() => match n {
                Some(n) => {
                    if let Some(chunk) = capture.push(&ob[..n]) {
                        live(chunk).await;
                    }
                }
                None => out = None,
            },
            n = read(&mut err, &mut eb), if err.is_some() => match n {
                Some(n) => {
                    if let Some(chunk) = capture.push(&eb[..n]) {
                        live(chunk).await;
                    }
                }
                None => err = None,
            },
            s = child.wait(), if status.is_none() => {
                status = Some(s?);
                // What it left running in its group goes with it; the
                // pipes then close.
                kill_group(pgid);
            }
            () = &mut deadline, if stopped.is_none() => {
                stopped = Some(Ended::TimedOut);
                kill_group(pgid);
            }
            () = &mut cancelled, if stopped.is_none() => {
                stopped = Some(Ended::Cancelled);
                kill_group(pgid);
            }
        }
    }
    if let Some(s) = stopped {
        // Reap it.
        let _ = tokio::time::timeout(DRAIN, child.wait()).await;
        return Ok(s);
    }
    let status = match status {
        Some(s) => s,
        None => child.wait().await?,
    };
    use std::os::unix::process::ExitStatusExt;
    Ok(match (status.code(), status.signal()) {
        (Some(c), _) => Ended::Exited(c),
        (None, Some(s)) => Ended::Signalled(s),
        (None, None) => Ended::Exited(-1),
    })
}

/// One read from a pipe: `None` at its end (or on an error, which ends it
/// too).
async fn read<R: AsyncReadExt + Unpin>(pipe: &mut Option<R>, buf: &mut [u8]) -> Option<usize> {
    let p = pipe.as_mut()?;
    match p.read(buf).await {
        Ok(0) | Err(_) => None,
        Ok(n) => Some(n),
    }
}
