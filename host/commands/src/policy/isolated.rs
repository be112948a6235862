//! A line read in a process of its own. The shell parser is another
//! project's, and on some lines a model could write it loops, panics or
//! allocates without end (the fuzz campaigns found nine in under a million
//! lines: FUZZING.md). The guards before it (`unreadable.rs`) stop the
//! cases found; in the host's process an unfound one would stall or
//! exhaust a `roost serve` for every tenant. So a host that has its own
//! binary reads each line in a child of it (`roost __read-line`): CPU
//! time, memory and wall time bounded, and no system call but memory, its
//! two pipes and exit (seccomp). A line it cannot read within them is for
//! a person; the host goes on.

// The bounds are set between fork and exec (`pre_exec`).
#![allow(unsafe_code)]

use std::ffi::OsString;
use std::io::{ErrorKind, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::process::{Pid, PidfdFlags, Resource, Rlimit, pidfd_open, setrlimit};

use super::{Analysis, analysed, unreadable};

/// The hidden subcommand that reads a line (`roost __read-line`).
pub const NAME: &str = "__read-line";

/// The most a reader may answer: an analysis is a few times its line,
/// and a line is at most [`unreadable::MAX_LINE`] (128 KiB).
const MAX_ANSWER: usize = 8 << 20;

/// What a line's reading may cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadBounds {
    /// CPU seconds (the child is killed past them).
    pub cpu_secs: u64,
    /// Bytes of memory the child may map for data, its start included
    /// (`RLIMIT_DATA`: heap and private writable mappings).
    pub memory_bytes: u64,
    /// Longest the host waits for the answer, however the child spends
    /// it.
    pub wall: Duration,
}

impl Default for ReadBounds {
    /// Far above any everyday line (an optimised build reads a 100 KiB
    /// line in milliseconds), far below what would trouble a host.
    fn default() -> Self {
        Self {
            cpu_secs: 4,
            memory_bytes: 512 << 20,
            wall: Duration::from_secs(20),
        }
    }
}

/// Reads lines in a child process: `program` is the `roost` binary (or
/// any that runs [`serve`] for `__read-line`).
#[derive(Debug, Clone)]
pub struct LineReader {
    program: PathBuf,
    /// What a reading may cost.
    pub bounds: ReadBounds,
}

impl LineReader {
    /// A reader running `program __read-line`, with the default bounds.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            bounds: ReadBounds::default(),
        }
    }

    /// The program it runs.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// The line read by a child: what it answered, or, when the child
    /// could not answer within the bounds, a line for a person (why).
    pub(super) fn analyse(&self, line: &str) -> Analysis {
        // What the guards refuse needs no process.
        if let Some(why) = unreadable::why(line) {
            return Analysis::unread(why);
        }
        match self.read(line) {
            Ok(analysis) => analysis,
            Err(why) => {
                tracing::warn!(reader = %self.program.display(), %why, "a command line could not be read; left for a person");
                Analysis::unread(why)
            }
        }
    }

    fn read(&self, line: &str) -> Result<Analysis, String> {
        let mut command = Command::new(&self.program);
        command
            .arg(NAME)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let (cpu, memory) = (self.bounds.cpu_secs, self.bounds.memory_bytes);
        // Bounded from its first instruction, so an allocator's start-up
        // reservation (mimalloc reserves a GiB) counts too. Past the soft
        // CPU bound it gets SIGXCPU, a second on SIGKILL.
        // SAFETY: between fork and exec, two setrlimit system calls on
        // copied integers: no allocation, no lock.
        unsafe {
            command.pre_exec(move || {
                let bound = |current: u64, maximum: u64| Rlimit {
                    current: Some(current),
                    maximum: Some(maximum),
                };
                setrlimit(Resource::Cpu, bound(cpu, cpu.saturating_add(1)))?;
                setrlimit(Resource::Data, bound(memory, memory))?;
                Ok(())
            });
        }
        let mut child = command
            .spawn()
            .map_err(|e| format!("its reader ({}) cannot start: {e}", self.program.display()))?;
        tracing::debug!(
            pid = child.id(),
            bytes = line.len(),
            "reading a command line in a bounded child"
        );
        let deadline = Instant::now() + self.bounds.wall;
        let ended = self
            .exchange(&mut child, line.as_bytes(), deadline)
            .and_then(|answer| Ok((answer, self.ended(&mut child, deadline)?)));
        let (answer, status) = match ended {
            Ok(ended) => ended,
            Err(why) => {
                // Past a bound or the deadline: it ends now.
                let _ = child.kill();
                let _ = child.wait();
                return Err(why);
            }
        };
        if !status.success() {
            return Err(self.failure(status));
        }
        serde_json::from_slice(&answer)
            .map_err(|e| format!("its reader's answer does not parse ({e})"))
    }

    /// Write the line, read the answer to its end, before `deadline`.
    fn exchange(
        &self,
        child: &mut Child,
        line: &[u8],
        deadline: Instant,
    ) -> Result<Vec<u8>, String> {
        let pipe = |e: std::io::Error| format!("its reader's pipe: {e}");
        let mut stdin = child.stdin.take().filter(|_| !line.is_empty());
        let mut stdout = child.stdout.take();
        if let Some(i) = &stdin {
            rustix::io::ioctl_fionbio(i, true).map_err(|e| pipe(e.into()))?;
        }
        if let Some(o) = &stdout {
            rustix::io::ioctl_fionbio(o, true).map_err(|e| pipe(e.into()))?;
        }
        let mut written = 0;
        let mut answer = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        while let Some(out) = stdout.as_mut() {
            let timeout = until(deadline).ok_or_else(|| self.slow())?;
            let (readable, writable) = {
                let mut fds = vec![PollFd::new(&*out, PollFlags::IN)];
                if let Some(i) = &stdin {
                    fds.push(PollFd::new(i, PollFlags::OUT));
                }
                match poll(&mut fds, Some(&timeout)) {
                    Ok(_) | Err(rustix::io::Errno::INTR) => {}
                    Err(e) => return Err(pipe(e.into())),
                }
                let ready = |f: Option<&PollFd<'_>>| f.is_some_and(|f| !f.revents().is_empty());
                (ready(fds.first()), ready(fds.get(1)))
            };
            if writable && let Some(i) = stdin.as_mut() {
                match i.write(line.get(written..).unwrap_or_default()) {
                    Ok(n) => written += n,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                    // It stopped reading: how it ended says why.
                    Err(_) => written = line.len(),
                }
                if written >= line.len() {
                    stdin = None;
                }
            }
            if !readable {
                continue;
            }
            match out.read(&mut buf) {
                Ok(0) => stdout = None,
                Ok(n) => {
                    answer.extend_from_slice(buf.get(..n).unwrap_or_default());
                    if answer.len() > MAX_ANSWER {
                        return Err(format!(
                            "its reader answered more than {} MiB",
                            MAX_ANSWER >> 20
                        ));
                    }
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {}
                Err(e) => return Err(pipe(e)),
            }
        }
        Ok(answer)
    }

    /// How the child ended, once it has, before `deadline`.
    fn ended(&self, child: &mut Child, deadline: Instant) -> Result<ExitStatus, String> {
        let waited = |e: std::io::Error| format!("its reader could not be waited for: {e}");
        let Ok(pidfd) = pidfd_open(Pid::from_child(child), PidfdFlags::empty()) else {
            // A kernel without pidfds (before 5.3): it closed its answer,
            // so it is ending.
            return child.wait().map_err(waited);
        };
        loop {
            if let Some(status) = child.try_wait().map_err(waited)? {
                return Ok(status);
            }
            let timeout = until(deadline).ok_or_else(|| self.slow())?;
            let mut fds = [PollFd::new(&pidfd, PollFlags::IN)];
            match poll(&mut fds, Some(&timeout)) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(waited(e.into())),
            }
        }
    }

    fn slow(&self) -> String {
        format!(
            "reading it took longer than {} s",
            self.bounds.wall.as_secs()
        )
    }

    /// Why a child that ended with `status` gave no answer.
    fn failure(&self, status: ExitStatus) -> String {
        match status.signal() {
            Some(libc::SIGXCPU) => format!(
                "reading it took more than {} s of CPU",
                self.bounds.cpu_secs
            ),
            // Rust aborts when an allocation fails.
            Some(libc::SIGABRT) => format!(
                "reading it needed more than {} MiB of memory",
                self.bounds.memory_bytes >> 20
            ),
            Some(libc::SIGKILL) => self.slow(),
            _ => format!("its reader ended with {status} and no answer"),
        }
    }
}

/// The time left until `deadline`, as poll takes it (`None`: past it).
fn until(deadline: Instant) -> Option<Timespec> {
    let left = deadline.checked_duration_since(Instant::now())?;
    if left.is_zero() {
        return None;
    }
    Some(Timespec {
        tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: i64::from(left.subsec_nanos()),
    })
}

/// The child's side, `roost __read-line` (its bounds set by the host
/// before it started): shut every door but its pipes, read the line on
/// stdin, answer its analysis as JSON on stdout.
pub fn serve(args: &[OsString]) -> ExitCode {
    if !args.is_empty() {
        eprintln!("usage: roost {NAME} (run by the host, never by a person)");
        return ExitCode::from(2);
    }
    // Quiet: a panic is caught and becomes the answer.
    std::panic::set_hook(Box::new(|_| {}));
    match crate::seccomp::reader_program().and_then(|p| crate::seccomp::apply(&p)) {
        Ok(()) => {}
        Err(e) => {
            eprintln!("roost {NAME}: cannot shut its doors: {e}");
            return ExitCode::from(126);
        }
    }
    let mut line = Vec::new();
    let limit = u64::try_from(unreadable::MAX_LINE).unwrap_or(u64::MAX);
    if let Err(e) = std::io::stdin()
        .take(limit.saturating_add(1))
        .read_to_end(&mut line)
    {
        eprintln!("roost {NAME}: cannot read the line: {e}");
        return ExitCode::from(1);
    }
    let analysis = match std::str::from_utf8(&line) {
        Ok(line) => analysed(line),
        Err(_) => Analysis::unread("it is not UTF-8"),
    };
    let mut out = std::io::stdout().lock();
    match serde_json::to_writer(&mut out, &analysis).map(|()| out.flush()) {
        Ok(Ok(())) => ExitCode::SUCCESS,
        _ => ExitCode::from(1),
    }
}
