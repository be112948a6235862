//! The OS sandbox a command runs in: bubblewrap. The whole file system is
//! read-only (or only the profile's `read` paths and the system's program
//! directories are there at all), the write roots are writable, `/tmp` is
//! private, the runtime directories where sockets live (`/run`,
//! `$XDG_RUNTIME_DIR`) are empty, hidden paths are replaced by empty ones,
//! there is no network (only the profile's origins, through the host's
//! filtering proxy), the command gets its own PID namespace and dies with
//! its parent. Whoever runs Roost — root included — the command runs in a
//! fresh user namespace as an unprivileged user with no capabilities at
//! all, `no_new_privs`, no way to make further user namespaces, a seccomp
//! filter ([`super::seccomp`]) and bounds on processes, memory, file size
//! and CPU ([`super::limits`]). Where bubblewrap cannot run, commands are
//! refused with the reason — unless the deployment said
//! `command_sandbox = "none"`, which runs them plainly and is warned about
//! at every start.

// `pre_exec`: the cgroup, rlimits and descriptors set between fork and exec.
#![allow(unsafe_code)]

use std::collections::HashMap;
use std::io::{Seek, Write};
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};

use super::limits::Entry;
use super::profile::Profile;
use super::seccomp;

/// How commands are confined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Confinement {
    /// Under bubblewrap, this program.
    Bubblewrap(PathBuf),
    /// Not at all (`command_sandbox = "none"`).
    None,
}

/// The program directories a profile with restricted reads still sees:
/// without them no command runs.
const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix",
];

/// Where sockets of the host's services live (Docker, D-Bus, databases,
/// agents): empty in every sandbox.
const RUNTIME_DIRS: &[&str] = &["/run", "/var/run"];

/// The user a command runs as inside its sandbox when Roost runs as root:
/// `nobody`, never uid 0.
const NOBODY: u32 = 65534;

/// Where each bubblewrap was tried, and what came of it.
static PROBED: LazyLock<Mutex<HashMap<PathBuf, Result<(), String>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// Everything one command's sandbox is made of.
#[derive(Debug)]
pub struct Plan<'a> {
    /// The command line.
    pub line: &'a str,
    /// Its working directory (absolute, inside the workspace).
    pub cwd: &'a Path,
    /// The workspace (absolute).
    pub workspace: &'a Path,
    /// Writable directories (absolute): the write roots and the
    /// profile's own.
    pub writable: &'a [PathBuf],
    /// The profile.
    pub profile: &'a Profile,
    /// Paths always hidden whatever the profile (Roost's own data and
    /// config).
    pub hidden: &'a [PathBuf],
    /// The environment, whole.
    pub env: &'a [(String, String)],
    /// Paths kept visible read-only whatever the profile hides (even
    /// under `/tmp`): the program an MCP server entry names, with its
    /// package.
    pub visible: &'a [PathBuf],
    /// A Unix socket of the host's filtering proxy to reach from inside,
    /// with the bridge program that serves it on the sandbox's loopback.
    pub proxy: Option<(&'a Path, &'a Path)>,
    /// Directories bound by the handle the host holds rather than by
    /// their path (the workspace, the write roots): a directory swapped
    /// for a link since it was checked cannot redirect the mount.
    pub held: &'a [Held<'a>],
    /// Host directories bound writable at another path (host, inside),
    /// after every hidden path is covered: an MCP package runner's own
    /// cache, kept in Roost's (hidden) data dir, seen under the private
    /// `/tmp`.
    pub binds: &'a [(PathBuf, PathBuf)],
}

/// A directory the host holds open, mounted at `at` in the sandbox.
#[derive(Debug, Clone, Copy)]
pub struct Held<'a> {
    /// The handle.
    pub fd: BorrowedFd<'a>,
    /// Where the command sees it (its path on the host).
    pub at: &'a Path,
    /// Whether the command may write it.
    pub writable: bool,
}

/// The shell that runs a line: bash where there is one (the policy parses
/// bash), else `sh`.
fn shell() -> &'static str {
    if Path::new("/bin/bash").is_file() {
        "/bin/bash"
    } else {
        "/bin/sh"
    }
}

/// Port the bridge listens on inside the sandbox's own loopback.
pub const PROXY_PORT: u16 = 3128;

impl Confinement {
    /// Whether commands can run here, or why not (bubblewrap is tried
    /// once per program and process).
    pub fn check(&self) -> Result<(), String> {
        let Self::Bubblewrap(program) = self else {
            return Ok(());
        };
        let mut probed = PROBED.lock().unwrap_or_else(|p| p.into_inner());
        probed
            .entry(program.clone())
            .or_insert_with(|| probe(program))
            .clone()
    }

    /// The process that runs `plan`'s line, confined; `time_limit_secs`
    /// bounds each process's CPU time unless the profile says otherwise.
    /// The command joins its own cgroup and sets its rlimits before it
    /// starts (the cgroup goes when the returned command is dropped).
    /// Fails closed: a command whose filter cannot be made does not start.
    pub fn command(
        &self,
        plan: &Plan<'_>,
        time_limit_secs: u64,
    ) -> Result<tokio::process::Command, String> {
        let entry = Arc::new(Entry::new(&plan.profile.limits, time_limit_secs));
        let mut filter = None;
        let mut cmd = match self {
            Self::None => {
                let mut c = tokio::process::Command::new(shell());
                c.arg("-c").arg(plan.line).current_dir(plan.cwd);
                c
            }
            Self::Bubblewrap(program) => {
                let mut c = tokio::process::Command::new(program);
                // The bridge needs a Unix socket itself: it installs the
                // filter on the command it starts; else bubblewrap does.
                let seccomp_fd = if plan.proxy.is_some() {
                    None
                } else {
                    let f = filter_file(plan.profile.unix_sockets)
                        .map_err(|e| format!("the command's seccomp filter cannot be made: {e}"))?;
                    let fd = f.as_raw_fd();
                    filter = Some(f);
                    Some(fd)
                };
                c.args(bwrap_args(plan, seccomp_fd));
                c
            }
        };
        cmd.env_clear()
            .envs(plan.env.iter().map(|(k, v)| (k, v)))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            // Its own process group: a timeout kills the whole group.
            .process_group(0)
            .kill_on_drop(true);
        let mut keep: Vec<RawFd> = filter.iter().map(AsRawFd::as_raw_fd).collect();
        if matches!(self, Self::Bubblewrap(_)) {
            // bubblewrap binds these and closes them before the command.
            keep.extend(plan.held.iter().map(|h| h.fd.as_raw_fd()));
        }
        // SAFETY: the closure makes only async-signal-safe system calls
        // (write, setrlimit, fcntl) on descriptors and data prepared
        // before the fork; it owns what it uses (the cgroup and the
        // filter's file live as long as the command).
        unsafe {
            cmd.pre_exec(move || {
                let _keep = &filter;
                entry.enter()?;
                for fd in &keep {
                    if libc::fcntl(*fd, libc::F_SETFD, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        Ok(cmd)
    }
}

/// The seccomp filter for bubblewrap, in an unlinked file at its start.
fn filter_file(unix_sockets: bool) -> Result<std::fs::File, String> {
    static BYTES: LazyLock<[Result<Vec<u8>, String>; 2]> = LazyLock::new(|| {
        [false, true].map(|u| {
            seccomp::program(u)
                .map(|p| seccomp::bytes(&p))
                .map_err(|e| e.to_string())
        })
    });
    let bytes = BYTES[usize::from(unix_sockets)].clone()?;
    let mut f = tempfile::tempfile().map_err(|e| e.to_string())?;
    f.write_all(&bytes).map_err(|e| e.to_string())?;
    f.rewind().map_err(|e| e.to_string())?;
    Ok(f)
}

/// Run bubblewrap once with the namespaces commands get.
fn probe(program: &Path) -> Result<(), String> {
    let out = std::process::Command::new(program)
        .args([
            "--ro-bind",
            "/",
            "/",
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            "--cap-drop",
            "ALL",
            "--die-with-parent",
            "--",
            "/bin/sh",
            "-c",
            "true",
        ])
        .env_clear()
        .stdin(std::process::Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!(
            "bubblewrap ({}) cannot make a sandbox here: {}",
            program.display(),
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
            "bubblewrap is not installed (no {}): install the `bubblewrap` package, or set \
             `command_sandbox = \"none\"` in [commands] to run commands unconfined",
            program.display()
        )),
        Err(e) => Err(format!(
            "cannot run bubblewrap ({}): {e}",
            program.display()
        )),
    }
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// The uid and gid a command has inside its sandbox: the caller's, but
/// never root's.
fn inside_ids() -> (u32, u32) {
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    if uid == 0 {
        (NOBODY, NOBODY)
    } else {
        (uid, gid)
    }
}

/// bubblewrap's arguments for `plan`, mounts in order (a later mount
/// covers an earlier one); `seccomp` the descriptor of the filter it
/// installs.
fn bwrap_args(plan: &Plan<'_>, seccomp: Option<i32>) -> Vec<String> {
    let (uid, gid) = inside_ids();
    let mut a: Vec<String> = [
        "--die-with-parent",
        "--new-session",
        "--unshare-all",
        // A user namespace of its own even when Roost runs as root, with
        // no capability in it and none to gain, and no nested one.
        "--unshare-user",
        "--disable-userns",
        "--cap-drop",
        "ALL",
        "--hostname",
        "roost-sandbox",
    ]
    .iter()
    .map(|x| (*x).to_owned())
    .collect();
    a.extend([
        "--uid".to_owned(),
        uid.to_string(),
        "--gid".to_owned(),
        gid.to_string(),
    ]);
    if let Some(fd) = seccomp {
        a.extend(["--seccomp".to_owned(), fd.to_string()]);
    }
    let ro = |a: &mut Vec<String>, p: &Path| {
        a.extend(["--ro-bind-try".to_owned(), s(p), s(p)]);
    };
    match &plan.profile.read {
        None => ro(&mut a, Path::new("/")),
        Some(_) => {
            for d in SYSTEM_DIRS {
                ro(&mut a, Path::new(d));
            }
        }
    }
    a.extend(["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"].map(str::to_owned));
    // The host's sockets: their directories empty (a symlink such as
    // /var/run -> /run is covered by its target).
    let runtime = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from);
    for d in RUNTIME_DIRS
        .iter()
        .map(PathBuf::from)
        .chain(runtime.filter(|p| p.is_absolute()))
    {
        if d.symlink_metadata().is_ok_and(|m| m.is_dir()) {
            a.extend([
                "--tmpfs".to_owned(),
                s(&d),
                "--remount-ro".to_owned(),
                s(&d),
            ]);
        }
    }
    // What the profile names stays visible, even under /tmp.
    for p in plan.profile.read.iter().flatten() {
        ro(&mut a, p);
    }
    // The workspace again: it may lie under /tmp, or outside `read`.
    let held = |p: &Path, writable: bool| {
        plan.held
            .iter()
            .find(|h| h.at == p && h.writable == writable)
    };
    match held(plan.workspace, false) {
        Some(h) => a.extend([
            "--ro-bind-fd".to_owned(),
            h.fd.as_raw_fd().to_string(),
            s(plan.workspace),
        ]),
        None => ro(&mut a, plan.workspace),
    }
    for p in plan.visible {
        ro(&mut a, p);
    }
    for w in plan.writable {
        match held(w, true) {
            Some(h) => a.extend(["--bind-fd".to_owned(), h.fd.as_raw_fd().to_string(), s(w)]),
            _ => a.extend(["--bind-try".to_owned(), s(w), s(w)]),
        }
    }
    // A cover only where the path is shown at all: covering a path the
    // view leaves out would make its mount point, and show its name.
    let shown = |h: &Path| match &plan.profile.read {
        None => true,
        Some(read) => {
            SYSTEM_DIRS.iter().any(|d| h.starts_with(d))
                || read.iter().any(|r| h.starts_with(r))
                || h.starts_with(plan.workspace)
                || plan.visible.iter().any(|v| h.starts_with(v))
                || plan.writable.iter().any(|w| h.starts_with(w))
        }
    };
    for h in plan.profile.deny.iter().chain(plan.hidden) {
        if !shown(h) {
            continue;
        }
        if h.is_dir() {
            a.extend(["--tmpfs".to_owned(), s(h), "--remount-ro".to_owned(), s(h)]);
        } else if h.exists() {
            a.extend(["--ro-bind".to_owned(), "/dev/null".to_owned(), s(h)]);
        }
    }
    for (host, inside) in plan.binds {
        a.extend(["--bind".to_owned(), s(host), s(inside)]);
    }
    // A home the restricted view does not show: the private /tmp.
    if plan.profile.read.is_some() {
        let home = plan
            .env
            .iter()
            .find(|(k, _)| k == "HOME")
            .map(|(_, v)| Path::new(v));
        let shown = |h: &Path| {
            plan.profile.read.iter().flatten().any(|r| h.starts_with(r))
                || h.starts_with(plan.workspace)
                || SYSTEM_DIRS.iter().any(|d| h.starts_with(d))
                || plan.binds.iter().any(|(_, inside)| h.starts_with(inside))
        };
        if home.is_none_or(|h| !shown(h)) {
            a.extend(["--setenv", "HOME", "/tmp"].map(str::to_owned));
        }
    }
    a.extend(["--chdir".to_owned(), s(plan.cwd)]);
    match plan.proxy {
        Some((socket, bridge)) => {
            // The proxy's socket inside, served on the sandbox's loopback
            // by the bridge, which then runs the line under the seccomp
            // filter.
            // Under the private /tmp: a mount point needs a writable parent.
            let inside = "/tmp/.roost-proxy.sock";
            a.extend([
                "--bind".to_owned(),
                s(socket),
                inside.to_owned(),
                "--ro-bind".to_owned(),
                s(bridge),
                s(bridge),
                "--".to_owned(),
                s(bridge),
                "__command-bridge".to_owned(),
                if plan.profile.unix_sockets {
                    "--unix-sockets=allow".to_owned()
                } else {
                    "--unix-sockets=deny".to_owned()
                },
                inside.to_owned(),
                PROXY_PORT.to_string(),
                shell().to_owned(),
                "-c".to_owned(),
                plan.line.to_owned(),
            ]);
        }
        None => {
            a.extend([
                "--".to_owned(),
                shell().to_owned(),
                "-c".to_owned(),
                plan.line.to_owned(),
            ]);
        }
    }
    a
}
