//! Every workspace's MCP servers, kept running for the process: the
//! configuration is read again when its files change (servers whose entry
//! did not change keep running), project servers wait for the user's
//! trust, and each server starts when a task of its workspace first needs
//! it.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::config::{self, McpConfig, ServerEntry, Source};
use super::server::{McpServer, ServerState};
use super::trust::{TrustError, TrustStore};
use crate::commands::{CommandHost, OutputStore};

/// One workspace's servers as configured now.
#[derive(Debug)]
pub struct WorkspaceMcp {
    /// The workspace.
    pub workspace: PathBuf,
    stamp: Vec<Option<(u64, i64)>>,
    /// What the files say (and what is wrong in them).
    pub config: McpConfig,
    /// The servers by name.
    pub servers: BTreeMap<String, Arc<McpServer>>,
    /// Where oversized results are kept.
    pub outputs: OutputStore,
}

impl WorkspaceMcp {
    /// Start every server that may start and is not running, all at once;
    /// returns when each is ready or has failed.
    pub async fn start(&self) {
        futures::future::join_all(self.servers.values().map(|s| s.ensure_started())).await;
    }

    /// A number that changes whenever the tools the servers offer do.
    pub fn signature(&self) -> u64 {
        let mut h = blake3::Hasher::new();
        h.update(self.workspace.as_os_str().as_encoded_bytes());
        for s in self.servers.values() {
            h.update(s.name().as_bytes());
            h.update(&s.generation().to_le_bytes());
            h.update(&[u8::from(s.state() == ServerState::Ready)]);
        }
        let bytes = h.finalize();
        let mut first = [0u8; 8];
        first.copy_from_slice(&bytes.as_bytes()[..8]);
        u64::from_le_bytes(first)
    }

    /// Whether any server is configured at all.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }
}

/// The MCP servers of every workspace this process has seen.
#[derive(Debug)]
pub struct McpHub {
    global_dir: Option<PathBuf>,
    data_dir: PathBuf,
    sandbox: Arc<CommandHost>,
    trust: TrustStore,
    workspaces: Mutex<HashMap<PathBuf, Arc<WorkspaceMcp>>>,
}

impl McpHub {
    /// Servers configured in `global_dir`'s `mcp_settings.json` and in
    /// each workspace, stdio ones confined as `sandbox` says; trust and
    /// oversized results kept in `data_dir`.
    pub fn new(global_dir: Option<PathBuf>, data_dir: &Path, sandbox: Arc<CommandHost>) -> Self {
        Self {
            global_dir,
            data_dir: data_dir.to_path_buf(),
            sandbox,
            trust: TrustStore::new(data_dir),
            workspaces: Mutex::default(),
        }
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Arc<WorkspaceMcp>>> {
        self.workspaces.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The configuration of `workspace` as its files say now (nothing
    /// started).
    pub fn config(&self, workspace: &Path) -> McpConfig {
        config::load(self.global_dir.as_deref(), Some(workspace))
    }

    /// `workspace`'s servers as configured now: read again when a file
    /// changed, keeping the servers whose entry and trust did not.
    pub fn servers(&self, workspace: &Path) -> Arc<WorkspaceMcp> {
        let stamp = config::stamp(self.global_dir.as_deref(), Some(workspace));
        let old = self.map().get(workspace).cloned();
        if let Some(old) = &old
            && old.stamp == stamp
        {
            return Arc::clone(old);
        }
        let config = self.config(workspace);
        for issue in &config.issues {
            tracing::warn!("MCP configuration: {issue}");
        }
        let mut servers = BTreeMap::new();
        for (name, entry) in &config.servers {
            let state = self.initial_state(workspace, entry);
            let kept = old.as_ref().and_then(|o| o.servers.get(name)).filter(|s| {
                s.entry == *entry && (state == ServerState::Idle) == is_startable(&s.state())
            });
            let server = match kept {
                Some(s) => Arc::clone(s),
                None => McpServer::new(
                    entry.clone(),
                    workspace.to_path_buf(),
                    Arc::clone(&self.sandbox),
                    state,
                ),
            };
            servers.insert(name.clone(), server);
        }
        if let Some(old) = &old {
            for (name, s) in &old.servers {
                if !servers.get(name).is_some_and(|n| Arc::ptr_eq(n, s)) {
                    s.stop();
                }
            }
        }
        let fresh = Arc::new(WorkspaceMcp {
            workspace: workspace.to_path_buf(),
            stamp,
            config,
            servers,
            outputs: OutputStore::named(
                &self.data_dir,
                "mcp-output",
                crate::tools::mcp::READ_MCP_OUTPUT,
            ),
        });
        self.map()
            .insert(workspace.to_path_buf(), Arc::clone(&fresh));
        fresh
    }

    fn initial_state(&self, workspace: &Path, entry: &ServerEntry) -> ServerState {
        if entry.disabled {
            ServerState::Disabled
        } else if entry.source == Source::Project && !self.trust.is_trusted(workspace, entry) {
            ServerState::Untrusted
        } else {
            ServerState::Idle
        }
    }

    /// The project servers of `workspace` not trusted there yet (and not
    /// disabled).
    pub fn untrusted(&self, workspace: &Path) -> Vec<ServerEntry> {
        self.config(workspace)
            .servers
            .into_values()
            .filter(|e| {
                e.source == Source::Project && !e.disabled && !self.trust.is_trusted(workspace, e)
            })
            .collect()
    }

    /// Trust `workspace`'s project servers named in `names` (all of them
    /// when `None`); returns the names trusted. They start when next
    /// needed.
    pub fn trust(
        &self,
        workspace: &Path,
        names: Option<&[String]>,
    ) -> Result<Vec<String>, TrustError> {
        let config = self.config(workspace);
        let chosen: Vec<&ServerEntry> = config
            .servers
            .values()
            .filter(|e| e.source == Source::Project)
            .filter(|e| names.is_none_or(|n| n.contains(&e.name)))
            .collect();
        self.trust.trust(workspace, &chosen)?;
        // Read again: trusted servers become startable.
        self.map().remove(workspace);
        Ok(chosen.iter().map(|e| e.name.clone()).collect())
    }

    /// Stop every server.
    pub fn shutdown(&self) {
        for ws in self.map().drain().map(|(_, w)| w) {
            for s in ws.servers.values() {
                s.stop();
            }
        }
    }
}

fn is_startable(state: &ServerState) -> bool {
    !matches!(state, ServerState::Disabled | ServerState::Untrusted)
}
