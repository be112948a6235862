//! The grant of one call, as plain serializable data.

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::network::NetworkGrant;

/// Per-call resource limits. Every limit is always on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Wall-clock deadline of the call.
    #[serde(with = "duration_ms")]
    pub deadline: Duration,
    /// Linear-memory cap of the instance, in bytes.
    pub memory_bytes: u64,
    /// Output size cap, in bytes; longer output is truncated and marked.
    pub output_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            deadline: Duration::from_secs(30),
            memory_bytes: 256 << 20,
            output_bytes: 1 << 20,
        }
    }
}

mod duration_ms {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

/// What one call may touch. Built per call by the host (later from the
/// active intent); the sandbox is derived from it and from nothing else.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    /// Host path of the workspace.
    pub workspace: PathBuf,
    /// Whether the whole workspace is readable (mounted read-only).
    pub read: bool,
    /// Workspace-relative directories readable when the whole workspace is
    /// not (a mode hook reads `.orchestration/` and nothing else).
    #[serde(default)]
    pub read_roots: Vec<PathBuf>,
    /// Workspace-relative directories the call may write.
    pub write_roots: Vec<PathBuf>,
    /// Origins the call may send `wasi:http` requests to, and the secrets
    /// the host may put into them; nothing by default.
    #[serde(default)]
    pub network: NetworkGrant,
    /// Environment variables passed in. Always empty for now.
    pub env: Vec<(String, String)>,
    /// Resource limits.
    pub limits: Limits,
    /// The workspace as the caller already holds it open (a task's
    /// pinned handle): the sandbox mounts from it instead of opening
    /// `workspace` by its path again, a lookup per call saved and no
    /// window in which the path could lead elsewhere.
    #[serde(skip)]
    pub held: Held,
}

/// A handle on the grant's workspace that the caller holds; not part of
/// what the grant allows, so equal grants stay equal whatever they hold.
#[derive(Debug, Clone, Default)]
pub struct Held(Option<super::Workspace>);

impl Held {
    /// The handle, if the caller gave one.
    pub fn get(&self) -> Option<&super::Workspace> {
        self.0.as_ref()
    }
}

impl PartialEq for Held {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Held {}

/// Why a grant cannot be turned into a sandbox.
#[derive(Debug, thiserror::Error)]
pub enum GrantError {
    /// A write root is absolute or climbs out with `..`.
    #[error("write root `{0}` must be a workspace-relative path without `..`")]
    BadRoot(PathBuf),
    /// A root cannot be mounted: it leads out of the workspace, passes
    /// through a symlink, or is not a directory.
    #[error("root `{root}` cannot be granted: {reason}")]
    RootEscapes {
        /// The root as granted.
        root: PathBuf,
        /// Why.
        reason: String,
    },
    /// The workspace or a write root could not be opened.
    #[error("cannot open {path}: {source}")]
    Io {
        /// Host path.
        path: PathBuf,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// The grant asks for a capability the sandbox does not offer yet.
    #[error("grant asks for {0}, which Roost does not grant to plugins yet")]
    Unsupported(&'static str),
    /// WASI refused the preopen.
    #[error("cannot preopen {path}: {message}")]
    Preopen {
        /// Host path.
        path: PathBuf,
        /// WASI's message.
        message: String,
    },
}

impl Grant {
    /// A grant on `workspace` that allows nothing yet.
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        Self {
            workspace: workspace.into(),
            read: false,
            read_roots: Vec::new(),
            write_roots: Vec::new(),
            network: NetworkGrant::default(),
            env: Vec::new(),
            limits: Limits::default(),
            held: Held::default(),
        }
    }

    /// A grant on `workspace`, which the caller holds open as `ws`: the
    /// sandbox mounts from that handle (see [`Grant::held`]).
    pub fn on_held(workspace: impl Into<PathBuf>, ws: &super::Workspace) -> Self {
        let mut grant = Self::new(workspace);
        grant.held = Held(Some(ws.clone()));
        grant
    }

    /// Allow reading the whole workspace.
    pub fn read(mut self) -> Self {
        self.read = true;
        self
    }

    /// Allow reading under the workspace-relative directory `root` only.
    pub fn read_dir(mut self, root: impl Into<PathBuf>) -> Self {
        self.read_roots.push(root.into());
        self
    }

    /// Allow writing under the workspace-relative directory `root`.
    pub fn write(mut self, root: impl Into<PathBuf>) -> Self {
        self.write_roots.push(root.into());
        self
    }

    /// Allow the network `network` grants.
    pub fn network(mut self, network: NetworkGrant) -> Self {
        self.network = network;
        self
    }

    /// Replace the limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Check a write root is relative and `..`-free, and normalise it
    /// (drops `.` components; `.` alone means the whole workspace).
    pub fn normalize_root(root: &Path) -> Result<PathBuf, GrantError> {
        let mut out = PathBuf::new();
        for c in root.components() {
            match c {
                Component::Normal(s) => out.push(s),
                Component::CurDir => {}
                _ => return Err(GrantError::BadRoot(root.to_path_buf())),
            }
        }
        Ok(out)
    }
}
