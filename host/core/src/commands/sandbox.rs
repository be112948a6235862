//! The OS sandbox a command runs in: bubblewrap. The whole file system is
//! read-only (or only the profile's `read` paths and the system's program
//! directories are there at all), the write roots are writable, `/tmp` is
//! private, hidden paths are replaced by empty ones, there is no network
//! (only the profile's origins, through the host's filtering proxy), the
//! command gets its own PID namespace and dies with its parent. Where
//! bubblewrap cannot run, commands are refused with the reason — unless
//! the deployment said `command_sandbox = "none"`, which runs them plainly
//! and is warned about at every start.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};

use super::profile::Profile;

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

    /// The process that runs `plan`'s line, confined.
    pub fn command(&self, plan: &Plan<'_>) -> tokio::process::Command {
        let mut cmd = match self {
            Self::None => {
                let mut c = tokio::process::Command::new(shell());
                c.arg("-c").arg(plan.line).current_dir(plan.cwd);
                c
            }
            Self::Bubblewrap(program) => {
                let mut c = tokio::process::Command::new(program);
                c.args(bwrap_args(plan));
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
        cmd
    }
}

/// Run bubblewrap once with the namespaces commands get.
fn probe(program: &Path) -> Result<(), String> {
    let out = std::process::Command::new(program)
        .args([
            "--ro-bind",
            "/",
            "/",
            "--unshare-all",
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

/// bubblewrap's arguments for `plan`, mounts in order (a later mount
/// covers an earlier one).
fn bwrap_args(plan: &Plan<'_>) -> Vec<String> {
    let mut a: Vec<String> = [
        "--die-with-parent",
        "--new-session",
        "--unshare-all",
        "--hostname",
        "roost-sandbox",
    ]
    .iter()
    .map(|x| (*x).to_owned())
    .collect();
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
    // What the profile names stays visible, even under /tmp.
    for p in plan.profile.read.iter().flatten() {
        ro(&mut a, p);
    }
    // The workspace again: it may lie under /tmp, or outside `read`.
    ro(&mut a, plan.workspace);
    for p in plan.visible {
        ro(&mut a, p);
    }
    for w in plan.writable {
        a.extend(["--bind-try".to_owned(), s(w), s(w)]);
    }
    for h in plan.profile.deny.iter().chain(plan.hidden) {
        if h.is_dir() {
            a.extend(["--tmpfs".to_owned(), s(h), "--remount-ro".to_owned(), s(h)]);
        } else if h.exists() {
            a.extend(["--ro-bind".to_owned(), "/dev/null".to_owned(), s(h)]);
        }
    }
    a.extend(["--chdir".to_owned(), s(plan.cwd)]);
    match plan.proxy {
        Some((socket, bridge)) => {
            // The proxy's socket inside, served on the sandbox's loopback
            // by the bridge, which then runs the line.
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
