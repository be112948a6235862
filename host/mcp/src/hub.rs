//! Every workspace's MCP servers, kept running for the process: the
//! configuration is read again when its files change (servers whose entry
//! did not change keep running), project servers wait for the user's
//! trust, and each server starts when a task of its workspace first needs
//! it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::config::{self, McpConfig, ServerEntry, Source};
use super::limits::ToolInfo;
use super::server::{McpServer, ServerState, ServerStatus};
use super::trust::{TrustError, TrustStore};
use roost_commands::{CommandHost, OutputStore};
use roost_sandbox::capability::Workspace;

/// A ready server with its tools as a task is offered them.
pub type ServerTools = (Arc<McpServer>, Vec<ToolInfo>);

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

    /// Every ready server's tools as a task is offered them, in server-name
    /// order: an offered name goes to the first tool that claims it, and a
    /// later tool of the same name (from another server, or a name in
    /// `taken`) is refused, saying which one holds it. Returns each ready
    /// server with its tools so marked, and one line per tool refused so.
    /// `roost mcp list` and the tasks' overlay both use it, so what the
    /// list shows is what a task gets.
    pub fn offered(&self, taken: &BTreeSet<String>) -> (Vec<ServerTools>, Vec<String>) {
        let mut holders: BTreeMap<String, Option<(String, String)>> =
            taken.iter().map(|n| (n.clone(), None)).collect();
        let mut out = Vec::new();
        let mut problems = Vec::new();
        for server in self.servers.values() {
            if server.state() != ServerState::Ready {
                continue;
            }
            let mut tools = server.tools();
            for info in &mut tools {
                if info.refused.is_some() {
                    continue;
                }
                match holders.get(&info.offered) {
                    None => {
                        holders.insert(
                            info.offered.clone(),
                            Some((server.name().to_owned(), info.name.clone())),
                        );
                    }
                    Some(holder) => {
                        let why = match holder {
                            Some((s, t)) => format!(
                                "another tool is called `{}`: server `{s}`'s `{t}`, which is offered",
                                info.offered
                            ),
                            None => format!("another tool is called `{}`", info.offered),
                        };
                        problems.push(format!(
                            "MCP tool `{}` of server `{}` is not offered: {why}",
                            info.name,
                            server.name()
                        ));
                        info.refused = Some(why);
                    }
                }
            }
            out.push((Arc::clone(server), tools));
        }
        (out, problems)
    }

    /// What `roost mcp list` shows of each server, in name order, its
    /// tools marked as [`Self::offered`] marks them.
    pub fn statuses(&self) -> Vec<ServerStatus> {
        let (offered, _) = self.offered(&BTreeSet::new());
        self.servers
            .values()
            .map(|s| {
                let mut status = s.status();
                if let Some((_, tools)) = offered.iter().find(|(o, _)| Arc::ptr_eq(o, s)) {
                    status.tools = tools.clone();
                }
                status
            })
            .collect()
    }
}

impl WorkspaceMcp {
    /// These servers with a front-end session's own beside them: what a
    /// task of that session is offered. A session server whose name the
    /// workspace's configuration already uses is left out (the
    /// configuration's holds the name, as a project entry holds a global
    /// one's).
    pub fn joined(&self, session: &SessionMcp) -> WorkspaceMcp {
        let mut servers = self.servers.clone();
        for (name, s) in &session.servers {
            servers.entry(name.clone()).or_insert_with(|| Arc::clone(s));
        }
        WorkspaceMcp {
            workspace: self.workspace.clone(),
            stamp: self.stamp.clone(),
            config: self.config.clone(),
            servers,
            outputs: self.outputs.clone(),
        }
    }
}

/// The MCP servers a front-end hands in for one session (an editor's
/// `mcpServers`): held in memory for that session only — never written
/// to the store — trusted as a project's are, and stopped when the last
/// holder lets go. The session's tasks (and their subtasks) are offered
/// them beside the workspace's own.
#[derive(Debug)]
pub struct SessionMcp {
    workspace: PathBuf,
    servers: BTreeMap<String, Arc<McpServer>>,
}

impl SessionMcp {
    /// The entries not trusted yet in the workspace, nor for this session.
    pub fn untrusted(&self) -> Vec<ServerEntry> {
        self.servers
            .values()
            .filter(|s| s.state() == ServerState::Untrusted)
            .map(|s| s.entry.clone())
            .collect()
    }

    /// Trust the server `name` for this session only: it starts when a
    /// task first needs it.
    pub fn allow(&self, name: &str) {
        if let Some(s) = self.servers.get(name) {
            s.allow();
        }
    }

    /// The servers, by name.
    pub fn servers(&self) -> &BTreeMap<String, Arc<McpServer>> {
        &self.servers
    }

    /// The workspace they run for.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }
}

impl Drop for SessionMcp {
    fn drop(&mut self) {
        for s in self.servers.values() {
            s.stop();
        }
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
        self.servers_stamped(workspace, stamp)
    }

    /// [`Self::servers`] of `workspace`, which the caller holds open as
    /// `held` (a task, every turn): its files are looked at through that
    /// handle.
    pub fn servers_in(&self, workspace: &Path, held: &Workspace) -> Arc<WorkspaceMcp> {
        let stamp = config::stamp_in(self.global_dir.as_deref(), Some(Some(held)));
        self.servers_stamped(workspace, stamp)
    }

    fn servers_stamped(
        &self,
        workspace: &Path,
        stamp: Vec<Option<(u64, i64)>>,
    ) -> Arc<WorkspaceMcp> {
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
                    self.data_dir.clone(),
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
            outputs: OutputStore::named(&self.data_dir, "mcp-output", crate::READ_MCP_OUTPUT),
        });
        self.map()
            .insert(workspace.to_path_buf(), Arc::clone(&fresh));
        fresh
    }

    /// A front-end session's own servers in `workspace` (built with
    /// [`config::client_entry`]), each waiting for trust unless the user
    /// trusted that very entry there before; none is started yet. The
    /// names the workspace's configuration uses are left out, each with a
    /// line saying so.
    pub fn session_servers(
        &self,
        workspace: &Path,
        entries: Vec<ServerEntry>,
    ) -> (Arc<SessionMcp>, Vec<String>) {
        let taken = self.config(workspace);
        let mut servers = BTreeMap::new();
        let mut problems = Vec::new();
        for entry in entries {
            if taken.servers.contains_key(&entry.name) {
                problems.push(format!(
                    "MCP server `{}` from the editor is not used: this workspace's MCP configuration has a server of that name",
                    entry.name
                ));
                continue;
            }
            let state = self.initial_state(workspace, &entry);
            let name = entry.name.clone();
            servers.insert(
                name,
                McpServer::new(
                    entry,
                    workspace.to_path_buf(),
                    self.data_dir.clone(),
                    Arc::clone(&self.sandbox),
                    state,
                ),
            );
        }
        let session = SessionMcp {
            workspace: workspace.to_path_buf(),
            servers,
        };
        (Arc::new(session), problems)
    }

    fn initial_state(&self, workspace: &Path, entry: &ServerEntry) -> ServerState {
        if entry.disabled {
            ServerState::Disabled
        } else if entry.source.needs_trust() && !self.trust.is_trusted(workspace, entry) {
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
    /// when `None`), as its files say now; returns the entries trusted,
    /// for the caller to show exactly what was trusted. They start when
    /// next needed.
    pub fn trust(
        &self,
        workspace: &Path,
        names: Option<&[String]>,
    ) -> Result<Vec<ServerEntry>, TrustError> {
        let chosen: Vec<ServerEntry> = self
            .config(workspace)
            .servers
            .into_values()
            .filter(|e| e.source == Source::Project)
            .filter(|e| names.is_none_or(|n| n.contains(&e.name)))
            .collect();
        self.trust_entries(workspace, &chosen)?;
        Ok(chosen)
    }

    /// Trust exactly `entries` of `workspace` (the ones a person was
    /// shown): an entry whose file changed since it was read stays
    /// untrusted, its fingerprint being another. Global entries need no
    /// trust and are passed over.
    pub fn trust_entries(
        &self,
        workspace: &Path,
        entries: &[ServerEntry],
    ) -> Result<(), TrustError> {
        let project: Vec<&ServerEntry> =
            entries.iter().filter(|e| e.source.needs_trust()).collect();
        self.trust.trust(workspace, &project)?;
        // Read again: trusted servers become startable.
        self.map().remove(workspace);
        Ok(())
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
