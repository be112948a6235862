//! Which project MCP servers the user trusts, per workspace: a repository
//! must not launch processes by being opened, so a server a workspace's
//! `.roo/mcp.json` configures starts only once the user has trusted it
//! there (asked on a terminal, or `roost mcp trust`). Trust is given to an
//! entry as it stands: changing its command, URL, profile or network
//! needs trust again.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::config::ServerEntry;

/// The trust file's name in the data directory.
const FILE: &str = "mcp-trust.json";

/// Trusted entries by workspace and server name (their fingerprints).
type Trusted = BTreeMap<String, BTreeMap<String, String>>;

/// Why trust could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// The file system failed.
    #[error("cannot record MCP trust in {path}: {source}")]
    Io {
        /// The trust file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// The trust file of a data directory.
#[derive(Debug)]
pub struct TrustStore {
    path: PathBuf,
    lock: Mutex<()>,
}

fn key(workspace: &Path) -> String {
    workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf())
        .to_string_lossy()
        .into_owned()
}

impl TrustStore {
    /// The trust kept in `data_dir`.
    pub fn new(data_dir: &Path) -> Self {
        Self {
            path: data_dir.join(FILE),
            lock: Mutex::new(()),
        }
    }

    fn read(&self) -> Trusted {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                // A corrupted file trusts nothing; the user is asked again.
                tracing::warn!(
                    "{} is not valid, trusting no project MCP server: {e}",
                    self.path.display()
                );
                Trusted::new()
            }),
            Err(_) => Trusted::new(),
        }
    }

    /// Whether `entry` is trusted in `workspace` as it stands now.
    pub fn is_trusted(&self, workspace: &Path, entry: &ServerEntry) -> bool {
        self.read()
            .get(&key(workspace))
            .and_then(|m| m.get(&entry.name))
            .is_some_and(|f| *f == entry.fingerprint())
    }

    /// Trust `entries` in `workspace`.
    pub fn trust(&self, workspace: &Path, entries: &[&ServerEntry]) -> Result<(), TrustError> {
        let _held = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut all = self.read();
        let m = all.entry(key(workspace)).or_default();
        for e in entries {
            m.insert(e.name.clone(), e.fingerprint());
        }
        let io = |source| TrustError::Io {
            path: self.path.clone(),
            source,
        };
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(io)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
        let text = serde_json::to_vec_pretty(&all).unwrap_or_default();
        tmp.write_all(&text).map_err(io)?;
        tmp.persist(&self.path).map_err(|e| io(e.error))?;
        Ok(())
    }
}
