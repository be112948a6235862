//! Native commands (`execute_command`): the one door out of Roost's
//! WebAssembly sandbox, so they go through an OS sandbox of their own.
//! Off unless the deployment turns them on; then a line is judged by the
//! [`policy`] (every command in it), runs under a named [`profile`] in
//! [`sandbox`] (bubblewrap: read-only file system but the write roots,
//! private `/tmp`, hidden paths, no network but the profile's origins,
//! own PID namespace), with a scrubbed environment, a time limit that
//! kills its process group ([`process`]) and an output cap whose whole is
//! kept for paging ([`output`]).

// No unsafe code but in the modules that say why they need it (between
// fork and exec: rlimits, cgroups, the seccomp filter).
#![deny(unsafe_code)]

pub mod limits;
pub mod output;
pub mod policy;
mod process;
pub mod profile;
pub mod proxy;
pub mod sandbox;
pub mod seccomp;

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;

pub use limits::{CgroupSupport, Limits, LimitsConfig, cgroup_support};
pub use output::{Capture, Captured, OutputError, OutputLimits, OutputStore};
pub use policy::{CommandRules, Judgement, LineReader, ReadBounds, Verdict};
pub use process::{Ended, run};
pub use profile::{Profile, ProfileConfig, ProfileError, Profiles};
pub use sandbox::{Confinement, Held, Plan};

use roost_sandbox::secrets::SecretStore;

/// The `[commands]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandsConfig {
    /// Whether tasks may run commands at all (also `--allow-commands`).
    #[serde(default)]
    pub enabled: bool,
    /// Command prefixes that may run (approved like any `command` call);
    /// `=words` for an exact command, `*` for all.
    #[serde(default)]
    pub allowed_commands: Vec<String>,
    /// Command prefixes that never run.
    #[serde(default)]
    pub denied_commands: Vec<String>,
    /// `bubblewrap` (the default) or `none`: run unconfined, warned about
    /// at every start.
    pub command_sandbox: Option<String>,
    /// The bubblewrap program (default `bwrap` on PATH).
    pub bwrap: Option<PathBuf>,
    /// The profile commands run under when neither the mode nor the
    /// intent names one (default `workspace`).
    pub profile: Option<String>,
    /// Seconds a command may run unless the call asks for less (default
    /// 600).
    pub timeout_secs: Option<u64>,
    /// Bytes of the head and of the tail of an output the model gets
    /// (default 8192 each).
    pub output_limit_bytes: Option<usize>,
}

/// Why the command settings cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CommandsError {
    /// A rule does not parse.
    #[error(transparent)]
    Rule(#[from] policy::BadRule),
    /// A profile is wrong.
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// `command_sandbox` names no sandbox.
    #[error("command_sandbox = \"{0}\": use \"bubblewrap\" or \"none\"")]
    Sandbox(String),
}

/// Commands as a deployment configured them: the host capability the
/// `execute_command` and `read_command_output` tools run on.
#[derive(Debug, Clone)]
pub struct CommandHost {
    /// Which lines may run.
    pub rules: CommandRules,
    /// The profiles.
    pub profiles: Profiles,
    /// The profile used when neither mode nor intent names one.
    pub default_profile: String,
    /// How commands are confined.
    pub confinement: Confinement,
    /// Longest a command may run.
    pub timeout: Duration,
    /// Output bounds.
    pub limits: OutputLimits,
    /// Where outputs are kept.
    pub outputs: OutputStore,
    /// Paths no command ever sees (Roost's data and config).
    pub hidden: Vec<PathBuf>,
    /// Where secrets bound to a profile come from.
    pub secrets: SecretStore,
    /// The program that serves the filtering proxy inside a sandbox
    /// (`roost __command-bridge`); without it, commands get no network.
    pub bridge: Option<PathBuf>,
    /// Where lines are read (`roost __read-line`, bounded, in a process
    /// of its own); without it, in the host's own process.
    pub reader: Option<LineReader>,
    /// The last lines judged: a call is judged for its approval and for
    /// its lease, and a line is read once.
    judged: Arc<Mutex<VecDeque<(String, Judgement)>>>,
    /// On a shared host, every tenant's workspace roots as they are now:
    /// all but the command's own are hidden from it, wherever they lie.
    pub tenant_roots: Option<TenantRoots>,
}

/// Where a shared host's tenants' roots are (read at each command, so a
/// token made since counts).
#[derive(Clone)]
pub struct TenantRoots(pub std::sync::Arc<dyn Fn() -> Vec<PathBuf> + Send + Sync>);

impl std::fmt::Debug for TenantRoots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TenantRoots")
    }
}

impl CommandHost {
    /// Commands as `config` and `profiles` say, keeping outputs in
    /// `data_dir`; `hidden` are never visible to a command.
    pub fn new(
        config: &CommandsConfig,
        profiles: &BTreeMap<String, ProfileConfig>,
        data_dir: &Path,
        hidden: Vec<PathBuf>,
        secrets: SecretStore,
    ) -> Result<Self, CommandsError> {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let profiles = Profiles::new(profiles, home.as_deref())?;
        let default_profile = config
            .profile
            .clone()
            .unwrap_or_else(|| profile::WORKSPACE.to_owned());
        profiles.get(&default_profile)?;
        let confinement = match config.command_sandbox.as_deref() {
            None | Some("bubblewrap") | Some("bwrap") => Confinement::Bubblewrap(
                config
                    .bwrap
                    .clone()
                    .unwrap_or_else(|| PathBuf::from("bwrap")),
            ),
            Some("none") => Confinement::None,
            Some(other) => return Err(CommandsError::Sandbox(other.to_owned())),
        };
        let mut limits = OutputLimits::default();
        if let Some(n) = config.output_limit_bytes {
            limits.model_half = n.max(256);
        }
        let mut hidden = hidden;
        hidden.push(data_dir.to_path_buf());
        Ok(Self {
            rules: CommandRules::new(&config.allowed_commands, &config.denied_commands)?,
            profiles,
            default_profile,
            confinement,
            timeout: Duration::from_secs(config.timeout_secs.unwrap_or(600).max(1)),
            limits,
            outputs: OutputStore::new(data_dir),
            hidden,
            secrets,
            bridge: None,
            reader: None,
            judged: Arc::default(),
            tenant_roots: None,
        })
    }

    /// Everything a command in `workspace` must not see: Roost's own
    /// files, and on a shared host every tenant root that does not hold
    /// the workspace.
    pub fn hidden_for(&self, workspace: &Path) -> Vec<PathBuf> {
        let mut hidden = self.hidden.clone();
        if let Some(roots) = &self.tenant_roots {
            hidden.extend(
                (roots.0)()
                    .into_iter()
                    .filter(|r| !workspace.starts_with(r)),
            );
        }
        hidden
    }

    /// The rules' judgement of `line`, read by the host's reader (in a
    /// child within bounds) where it has one.
    pub fn judge(&self, line: &str) -> Judgement {
        /// Lines remembered.
        const KEPT: usize = 16;
        let mut judged = self.judged.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, j)) = judged.iter().find(|(l, _)| l == line) {
            return j.clone();
        }
        // Read without the lock: another call's line need not wait.
        drop(judged);
        let j = match &self.reader {
            // Reading waits on a child (up to its wall bound): on a
            // runtime's worker, the worker's other tasks move on first.
            Some(reader) => match tokio::runtime::Handle::try_current() {
                Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                    tokio::task::block_in_place(|| self.rules.judge_read(line, reader))
                }
                _ => self.rules.judge_read(line, reader),
            },
            None => self.rules.judge(line),
        };
        judged = self.judged.lock().unwrap_or_else(|p| p.into_inner());
        if judged.len() >= KEPT {
            judged.pop_front();
        }
        judged.push_back((line.to_owned(), j.clone()));
        j
    }

    /// A warning for every start when commands run unconfined.
    pub fn warning(&self) -> Option<&'static str> {
        (self.confinement == Confinement::None).then_some(
            "commands run WITHOUT a sandbox (command_sandbox = \"none\"): they can read and write anything you can",
        )
    }

    /// The environment of a command under `profile`: PATH, HOME, LANG and
    /// TERM, the variables the profile names (never one that holds a
    /// secret's name), and the secrets bound to it by name.
    pub fn environment(&self, profile: &Profile) -> Vec<(String, String)> {
        let host = |k: &str| std::env::var(k).ok();
        let mut env = vec![
            (
                "PATH".to_owned(),
                host("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".to_owned()),
            ),
            (
                "HOME".to_owned(),
                host("HOME").unwrap_or_else(|| "/".to_owned()),
            ),
            (
                "LANG".to_owned(),
                host("LANG").unwrap_or_else(|| "C.UTF-8".to_owned()),
            ),
            (
                "TERM".to_owned(),
                host("TERM").unwrap_or_else(|| "dumb".to_owned()),
            ),
        ];
        for name in &profile.env {
            if looks_secret(name) || env.iter().any(|(k, _)| k == name) {
                continue;
            }
            if let Some(v) = host(name) {
                env.push((name.clone(), v));
            }
        }
        for name in &profile.secrets {
            if let Some(v) = self.secrets.value(name) {
                env.retain(|(k, _)| k != name);
                env.push((name.clone(), v.expose().to_owned()));
            }
        }
        env
    }
}

/// Whether a variable's name says it holds a secret: such a variable only
/// reaches a command bound to its profile under `secrets`.
fn looks_secret(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    [
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "API_KEY",
        "APIKEY",
        "PRIVATE",
        "CREDENTIAL",
    ]
    .iter()
    .any(|w| n.contains(w))
        || n.ends_with("_KEY")
}

/// One protection of the command sandbox and whether this machine gives
/// it (`roost doctor`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protection {
    /// What it is.
    pub name: &'static str,
    /// Whether commands get it here.
    pub given: bool,
    /// How, or why not.
    pub detail: String,
}

/// Which of the command sandbox's protections this machine gives: a user
/// namespace without capabilities (bubblewrap), a cgroup per command, the
/// seccomp filter.
pub fn protections(confinement: &Confinement) -> Vec<Protection> {
    let root = rustix::process::getuid().is_root();
    let userns = match confinement.check() {
        Ok(()) => Protection {
            name: "user namespaces",
            given: true,
            detail: format!(
                "each command in a user namespace of its own, as an unprivileged user with no capabilities{}",
                if root {
                    " (Roost runs as root: commands run as nobody inside)"
                } else {
                    ""
                }
            ),
        },
        Err(e) => Protection {
            name: "user namespaces",
            given: false,
            detail: e,
        },
    };
    let cgroups = match cgroup_support() {
        CgroupSupport::V2(dir) => Protection {
            name: "cgroups",
            given: true,
            detail: format!(
                "cgroup v2 under {}: processes and memory bounded per command",
                dir.display()
            ),
        },
        CgroupSupport::V1 { pids, .. } => Protection {
            name: "cgroups",
            given: true,
            detail: format!(
                "cgroup v1 pids and memory under {}: processes and memory bounded per command",
                pids.display()
            ),
        },
        CgroupSupport::Unavailable(why) => Protection {
            name: "cgroups",
            given: false,
            detail: if root {
                format!(
                    "{why}: rlimits only, and the kernel does not bound a root-owned process's count, so run Roost as an ordinary user or where it can make cgroups"
                )
            } else {
                format!(
                    "{why}: rlimits per process only (processes counted per command's user namespace)"
                )
            },
        },
    };
    let seccomp_on = std::path::Path::new("/proc/sys/kernel/seccomp/actions_avail").exists();
    let seccomp = match (seccomp_on, seccomp::program(false)) {
        (true, Ok(_)) => Protection {
            name: "seccomp",
            given: true,
            detail: "commands cannot create Unix sockets (unless a profile says unix_sockets = true) nor use io_uring".to_owned(),
        },
        (false, _) => Protection {
            name: "seccomp",
            given: false,
            detail: "this kernel has no seccomp filters: commands cannot run (they fail closed)".to_owned(),
        },
        (true, Err(e)) => Protection {
            name: "seccomp",
            given: false,
            detail: format!("{e}: commands cannot run (they fail closed)"),
        },
    };
    vec![userns, cgroups, seccomp]
}
