//! One MCP server as Roost runs it: started (a stdio server in the command
//! sandbox, under its profile, with a scrubbed environment and its stderr
//! kept for its status) or reached (HTTP), its tool and resource lists
//! kept fresh (`list_changed`), its calls bounded by its timeout, and a
//! crashed server restarted with backoff. Everything a server sends is
//! bounded before Roost keeps it (see [`super::limits`]). A server started
//! by a package runner gets its own cache and its registry while it starts
//! (see [`super::runner`]). A server that fails to start says why: how it
//! exited (at once, not at its timeout), the end of its stderr, and what
//! its sandbox refused.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

// Logging is deprecated by the protocol (SEP-2577), but servers still
// send it, and a flood of it must stay bounded.
#[allow(deprecated)]
use rmcp::model::LoggingMessageNotificationParam;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation,
    ReadResourceRequestParams,
};
use rmcp::service::{NotificationContext, Peer, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ServiceExt};
use serde::Serialize;
use serde_json::Value;

use super::config::{ServerEntry, Transport};
use super::limits::{self, ToolInfo};
use super::runner::{self, PackageRunner};
use super::stdio::{ChildTransport, Exit, Overflow, StderrTail};
use roost_commands::proxy::Proxy;
use roost_commands::{CommandHost, Confinement, Held, Plan, profile};
use roost_sandbox::capability::Origin;
use roost_sandbox::capability::Workspace;
use std::os::fd::AsFd;

/// Where a server stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", content = "detail", rename_all = "snake_case")]
pub enum ServerState {
    /// Turned off in its entry.
    Disabled,
    /// A project server not trusted in this workspace: not started.
    Untrusted,
    /// Not started yet.
    Idle,
    /// Connecting.
    Starting,
    /// Connected; its tools are offered.
    Ready,
    /// It stopped; started again after a pause.
    Restarting(String),
    /// It cannot be used (why).
    Failed(String),
}

/// Lines of a server's stderr, log messages and errors kept for its
/// status.
const KEPT_LINES: usize = 20;
/// Longest line kept.
const KEPT_LINE_CHARS: usize = 400;
/// Restarts after a crash before the server is given up.
const MAX_RESTARTS: u32 = 5;
/// CPU time a stdio server's process may use in its life, unless its
/// profile bounds it otherwise (a crashed one is restarted).
const SERVER_CPU_SECONDS: u64 = 3600;
/// Longest a server started by a package runner may take to answer
/// `initialize` (unless its `timeout` is longer): its first start fetches
/// the package. A runner that fails exits, and is reported at once.
const RUNNER_START: Duration = Duration::from_secs(180);
/// How long a failed server's stderr and exit are waited for before its
/// failure is reported.
const SETTLE: Duration = Duration::from_secs(2);
/// Most characters of a server's stderr a failure's reason quotes.
const QUOTED_STDERR: usize = 1200;

/// A stdio server's process as started, with what tells why it failed.
struct Spawned {
    transport: ChildTransport,
    proxy: Option<Proxy>,
    exit: Exit,
    stderr: StderrTail,
    /// The origins its entry itself is granted: once it has started, a
    /// package runner's proxy narrows to them.
    own: Vec<Origin>,
    runner: Option<PackageRunner>,
    /// A package runner's cache on the host, and where it sees it.
    cache: Option<(PathBuf, PathBuf)>,
}

/// What `roost mcp list` shows of a server.
#[derive(Debug, Clone, Serialize)]
pub struct ServerStatus {
    /// Its name.
    pub name: String,
    /// Where it stands.
    pub state: ServerState,
    /// Its tools (each with why it is not offered, when it is not).
    pub tools: Vec<ToolInfo>,
    /// Its resources' URIs and names.
    pub resources: Vec<(String, String)>,
    /// The skills it offers (`skill://NAME/SKILL.md` resources): read with
    /// `access_mcp_resource`, never run implicitly.
    pub skills: Vec<String>,
    /// Its last errors, stderr lines and log messages.
    pub errors: Vec<String>,
    /// Log messages it sent in all.
    pub log_messages: u64,
    /// Times it was restarted.
    pub restarts: u32,
}

struct Inner {
    state: ServerState,
    tools: Vec<ToolInfo>,
    resources: Vec<(String, String)>,
    errors: VecDeque<String>,
    restarts: u32,
    peer: Option<Peer<RoleClient>>,
    service: Option<RunningService<RoleClient, Handler>>,
    proxy: Option<Proxy>,
    /// Tripped when the current connection ended for a message too large.
    overflow: Overflow,
}

/// Why a call to a server did not give a result.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The server is not connected (why).
    #[error("MCP server `{0}` is not available: {1}")]
    Unavailable(String, String),
    /// The call took longer than the server's timeout.
    #[error("MCP server `{0}` did not answer within {1:?}")]
    Timeout(String, Duration),
    /// The server stopped during the call.
    #[error("MCP server `{0}` stopped during the call ({1}); it is being restarted")]
    Crashed(String, String),
    /// The server sent a message past the bound: the connection was ended
    /// at once rather than the call left to wait out its timeout.
    #[error("MCP server `{0}` failed the call: {1}; it is being restarted")]
    TooLarge(String, String),
    /// The server answered with an error.
    #[error("MCP server `{0}` answered with an error: {1}")]
    Server(String, String),
}

/// One configured server in one workspace.
pub struct McpServer {
    /// Its entry.
    pub entry: ServerEntry,
    workspace: PathBuf,
    /// Roost's data dir: a package runner's cache lives there.
    data_dir: PathBuf,
    sandbox: Arc<CommandHost>,
    inner: Mutex<Inner>,
    /// Bumped whenever its tool list changes.
    generation: AtomicU64,
    log_messages: AtomicU64,
    /// A `list_changed` came: listed again before the next use.
    dirty: AtomicBool,
    connecting: tokio::sync::Mutex<()>,
    next_attempt: Mutex<Option<Instant>>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.entry.name)
            .finish_non_exhaustive()
    }
}

/// Receives what a server sends on its own.
#[derive(Debug, Clone)]
struct Handler {
    server: Weak<McpServer>,
}

impl Handler {
    /// A list changed: listed again before the server's next use.
    fn list_changed(&self) {
        if let Some(s) = self.server.upgrade() {
            s.dirty.store(true, Ordering::Release);
        }
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("roost", env!("CARGO_PKG_VERSION")),
        )
    }

    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.list_changed();
        std::future::ready(())
    }

    fn on_resource_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.list_changed();
        std::future::ready(())
    }

    #[allow(deprecated)]
    fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        // A flood costs a counter and one bounded line each.
        if let Some(s) = self.server.upgrade() {
            s.log_messages.fetch_add(1, Ordering::Relaxed);
            let text = match &params.data {
                Value::String(t) => t.clone(),
                other => other.to_string(),
            };
            s.note(format!("log {:?}: {}", params.level, text));
        }
        std::future::ready(())
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Plain state: consistent whatever panicked while it was held.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl McpServer {
    /// A server of `workspace` as `entry` configures it, started in
    /// `sandbox`'s confinement (a package runner's cache in `data_dir`);
    /// `state` says whether it may start.
    pub fn new(
        entry: ServerEntry,
        workspace: PathBuf,
        data_dir: PathBuf,
        sandbox: Arc<CommandHost>,
        state: ServerState,
    ) -> Arc<Self> {
        Arc::new(Self {
            entry,
            workspace,
            data_dir,
            sandbox,
            inner: Mutex::new(Inner {
                state,
                tools: Vec::new(),
                resources: Vec::new(),
                errors: VecDeque::new(),
                restarts: 0,
                peer: None,
                service: None,
                proxy: None,
                overflow: Overflow::default(),
            }),
            generation: AtomicU64::new(0),
            log_messages: AtomicU64::new(0),
            dirty: AtomicBool::new(false),
            connecting: tokio::sync::Mutex::new(()),
            next_attempt: Mutex::new(None),
        })
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.entry.name
    }

    /// Changes with every change of its tool list.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Where it stands.
    pub fn state(&self) -> ServerState {
        lock(&self.inner).state.clone()
    }

    /// Its tools as last listed.
    pub fn tools(&self) -> Vec<ToolInfo> {
        lock(&self.inner).tools.clone()
    }

    /// Its resources as last listed.
    pub fn resources(&self) -> Vec<(String, String)> {
        lock(&self.inner).resources.clone()
    }

    /// What `roost mcp list` shows.
    pub fn status(&self) -> ServerStatus {
        let i = lock(&self.inner);
        ServerStatus {
            name: self.entry.name.clone(),
            state: i.state.clone(),
            tools: i.tools.clone(),
            resources: i.resources.clone(),
            skills: skills_in(&i.resources),
            errors: i.errors.iter().cloned().collect(),
            log_messages: self.log_messages.load(Ordering::Relaxed),
            restarts: i.restarts,
        }
    }

    /// Keep a line for its status (bounded, terminal escapes removed).
    fn note(&self, line: String) {
        let line = limits::clean_line(&line, KEPT_LINE_CHARS);
        let mut i = lock(&self.inner);
        if i.errors.len() == KEPT_LINES {
            i.errors.pop_front();
        }
        i.errors.push_back(line);
    }

    fn set_state(&self, state: ServerState) {
        lock(&self.inner).state = state;
    }

    /// Connect if it may and is not connected; a server that failed or
    /// crashed is tried again once its pause is over.
    pub async fn ensure_started(self: &Arc<Self>) {
        match self.state() {
            ServerState::Disabled | ServerState::Untrusted => return,
            ServerState::Ready => {
                // Listed again after `list_changed`, once however many
                // notifications came.
                if self.dirty.swap(false, Ordering::AcqRel) {
                    let peer = lock(&self.inner).peer.clone();
                    if let Some(peer) = peer
                        && let Err(e) = self.list(&peer).await
                    {
                        self.note(e);
                    }
                }
                return;
            }
            ServerState::Restarting(_) => {
                // A restart's pause is waited out when it is shorter than
                // a request may take.
                let at = *lock(&self.next_attempt);
                if let Some(at) = at {
                    let wait = at.saturating_duration_since(Instant::now());
                    if wait > self.entry.timeout {
                        return;
                    }
                    tokio::time::sleep(wait).await;
                }
            }
            ServerState::Failed(_) => {
                let due = lock(&self.next_attempt).is_none_or(|t| Instant::now() >= t);
                if !due {
                    return;
                }
            }
            ServerState::Idle | ServerState::Starting => {}
        }
        let _one = self.connecting.lock().await;
        if self.state() == ServerState::Ready {
            return;
        }
        self.set_state(ServerState::Starting);
        match self.connect().await {
            Ok(()) => {
                *lock(&self.next_attempt) = None;
                tracing::info!(server = %self.entry.name, "MCP server ready");
            }
            Err(why) => {
                tracing::warn!(server = %self.entry.name, "MCP server failed: {why}");
                self.note(why.clone());
                self.failed(why);
            }
        }
    }

    /// It failed: restarted after a pause unless it failed too often.
    fn failed(&self, why: String) {
        let mut i = lock(&self.inner);
        i.peer = None;
        i.service = None;
        i.proxy = None;
        if i.restarts >= MAX_RESTARTS {
            i.state = ServerState::Failed(format!("{why} (gave up after {MAX_RESTARTS} restarts)"));
            *lock(&self.next_attempt) = Some(Instant::now() + Duration::from_secs(300));
            return;
        }
        let pause = Duration::from_millis(500u64 << i.restarts.min(6));
        i.restarts += 1;
        i.state = ServerState::Restarting(why);
        *lock(&self.next_attempt) = Some(Instant::now() + pause);
    }

    async fn connect(self: &Arc<Self>) -> Result<(), String> {
        let handler = Handler {
            server: Arc::downgrade(self),
        };
        let timeout = self.entry.timeout;
        let (service, proxy, narrow) = match &self.entry.transport {
            Transport::Stdio { .. } => {
                let overflow = Overflow::default();
                lock(&self.inner).overflow = overflow.clone();
                let Spawned {
                    transport,
                    proxy,
                    exit,
                    stderr,
                    own,
                    runner,
                    cache,
                } = self.spawn(overflow)?;
                let deadline = match &runner {
                    Some(_) => timeout.max(RUNNER_START),
                    None => timeout,
                };
                // Whichever comes first: its answer, its end, the deadline.
                let started = tokio::select! {
                    r = tokio::time::timeout(deadline, handler.serve(transport)) => match r {
                        Err(_) => Err(Failure::Silent(deadline)),
                        Ok(Err(e)) => Err(match self.overflowed() {
                            Some(why) => Failure::Other(format!("initialize failed: {why}")),
                            None => Failure::Closed(format!("initialize failed: {e}")),
                        }),
                        Ok(Ok(s)) => Ok(s),
                    },
                    how = exit.ended() => Err(Failure::Exited(how)),
                };
                match started {
                    Ok(s) => (s, proxy, runner.map(|_| own)),
                    Err(f) => {
                        let seen = Seen {
                            exit: &exit,
                            stderr: &stderr,
                            proxy: proxy.as_ref(),
                            own: &own,
                            runner: runner.as_ref(),
                            cache: cache.as_ref(),
                        };
                        return Err(explain(f, seen).await);
                    }
                }
            }
            Transport::Http { url, headers } => {
                let mut custom = std::collections::HashMap::new();
                let mut auth = None;
                for (k, v) in headers {
                    if k.eq_ignore_ascii_case("authorization") {
                        auth = Some(v.trim_start_matches("Bearer ").to_owned());
                        continue;
                    }
                    let name = http::HeaderName::from_bytes(k.as_bytes())
                        .map_err(|e| format!("header `{k}`: {e}"))?;
                    let value =
                        http::HeaderValue::from_str(v).map_err(|e| format!("header `{k}`: {e}"))?;
                    custom.insert(name, value);
                }
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(custom);
                if let Some(a) = auth {
                    config = config.auth_header(a);
                }
                super::tls::install();
                let transport = rmcp::transport::StreamableHttpClientTransport::from_config(config);
                let s = tokio::time::timeout(timeout, handler.serve(transport))
                    .await
                    .map_err(|_| format!("did not answer `initialize` within {timeout:?}"))?
                    .map_err(|e| format!("initialize failed: {e}"))?;
                (s, None, None)
            }
        };
        let peer = service.peer().clone();
        {
            let mut i = lock(&self.inner);
            i.peer = Some(peer.clone());
            i.service = Some(service);
            i.proxy = proxy;
        }
        self.list(&peer).await?;
        // Started: a package runner's registry is no longer reachable.
        if let Some(own) = narrow
            && let Some(p) = &lock(&self.inner).proxy
        {
            p.narrow(&own);
        }
        self.set_state(ServerState::Ready);
        Ok(())
    }

    /// Start the stdio server in the command sandbox.
    fn spawn(self: &Arc<Self>, overflow: Overflow) -> Result<Spawned, String> {
        let Transport::Stdio {
            command,
            args,
            cwd,
            env,
        } = &self.entry.transport
        else {
            return Err("not a stdio server".into());
        };
        self.sandbox.confinement.check()?;
        let name = self.entry.profile.as_deref().unwrap_or(profile::READ_ONLY);
        let profile = self.sandbox.profiles.get(name).map_err(|e| e.to_string())?;
        let mut network = profile.network.clone();
        for o in &self.entry.network {
            network.push(
                roost_sandbox::capability::Origin::parse(o)
                    .map_err(|e| format!("allowNetwork `{o}`: {e}"))?,
            );
        }
        let own = network.clone();
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let runner = runner::for_entry(&self.entry, |k| std::env::var(k).ok(), home.as_deref());
        if let Some(r) = &runner {
            for o in &r.registry {
                if !network.contains(o) {
                    network.push(o.clone());
                }
            }
        }
        let cwd = match cwd {
            Some(c) if c.is_absolute() => c.clone(),
            Some(c) => self.workspace.join(c),
            None => self.workspace.clone(),
        };
        let mut writable = profile.write.clone();
        if profile.writes_scope {
            writable.push(self.workspace.clone());
        }
        let confined = self.sandbox.confinement != Confinement::None;
        let mut vars = self.sandbox.environment(profile);
        let set = |vars: &mut Vec<(String, String)>, k: &str, v: &str| {
            vars.retain(|(name, _)| name != k);
            vars.push((k.to_owned(), v.to_owned()));
        };
        // A package runner's own cache, seen at a fixed place in its
        // sandbox (in the data dir itself when nothing confines it).
        let mut binds = Vec::new();
        let mut cache_unconfined = None;
        if let Some(r) = &runner {
            let dir = runner::cache_dir(&self.data_dir, &self.workspace, &self.entry);
            runner::make_cache(&dir)
                .map_err(|e| format!("its package cache {} cannot be made: {e}", dir.display()))?;
            let inside = if confined {
                PathBuf::from(runner::INSIDE)
            } else {
                dir.clone()
            };
            for (k, v) in runner::cache_env(&inside).iter().chain(&r.env) {
                set(&mut vars, k, v);
            }
            if confined {
                binds.push((dir, inside));
            } else {
                cache_unconfined = Some((dir, inside));
            }
        }
        for (k, v) in env {
            set(&mut vars, k, v);
        }
        let proxy = match (&self.sandbox.bridge, network.is_empty() || !confined) {
            (_, true) => None,
            (Some(bridge), false) => {
                let p = Proxy::start(&std::env::temp_dir(), network)
                    .map_err(|e| format!("its network proxy cannot start: {e}"))?;
                Some((p, bridge.clone()))
            }
            (None, false) => {
                return Err("it is granted network, but this host has no network bridge".into());
            }
        };
        if proxy.is_some() {
            let url = format!("http://127.0.0.1:{}", roost_commands::sandbox::PROXY_PORT);
            for k in ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"] {
                vars.push((k.to_owned(), url.clone()));
            }
        }
        let words: Vec<&str> = std::iter::once(command.as_str())
            .chain(args.iter().map(String::as_str))
            .collect();
        let line = shell_words::join(words);
        let visible = visible_paths(command, args);
        let hidden = self.sandbox.hidden_for(&self.workspace);
        // The workspace by handle: a directory swapped for a link since
        // it was opened cannot redirect the server's mounts.
        let ws = Workspace::open(&self.workspace)
            .map_err(|e| format!("its workspace cannot be opened: {e}"))?;
        let mut held = vec![Held {
            fd: ws.root().as_fd(),
            at: &self.workspace,
            writable: false,
        }];
        // bubblewrap closes a descriptor once it bound it: the writable
        // bind gets one of its own.
        let rw = ws
            .root()
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| format!("its workspace cannot be opened: {e}"))?;
        if profile.writes_scope {
            held.push(Held {
                fd: rw.as_fd(),
                at: &self.workspace,
                writable: true,
            });
        }
        let plan = Plan {
            visible: &visible,
            line: &line,
            cwd: &cwd,
            workspace: &self.workspace,
            writable: &writable,
            profile,
            hidden: &hidden,
            env: &vars,
            proxy: proxy.as_ref().map(|(p, b)| (p.socket(), b.as_path())),
            held: &held,
            binds: &binds,
        };
        // A server lives across many calls: its CPU is bounded per
        // process lifetime (its profile's own bound, if it has one).
        let mut cmd = self
            .sandbox
            .confinement
            .command(&plan, SERVER_CPU_SECONDS)?;
        cmd.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start `{command}`: {e}"))?;
        let stderr = child.stderr.take();
        // The command holds the process's cgroup: it lives as long as
        // the process.
        let (transport, exit) = ChildTransport::new(child, cmd, overflow)
            .map_err(|e| format!("cannot start `{command}`: {e}"))?;
        let tail = StderrTail::default();
        match stderr {
            Some(stderr) => {
                let me = Arc::downgrade(self);
                let tail = tail.clone();
                tokio::spawn(async move {
                    read_stderr(stderr, &me, &tail).await;
                    tail.close();
                });
            }
            None => tail.close(),
        }
        Ok(Spawned {
            transport,
            proxy: proxy.map(|(p, _)| p),
            exit,
            stderr: tail,
            own,
            runner,
            cache: binds.first().cloned().or(cache_unconfined),
        })
    }

    /// List its tools and resources (bounded), bumping the generation
    /// when the tools changed.
    async fn list(&self, peer: &Peer<RoleClient>) -> Result<(), String> {
        let timeout = self.entry.timeout;
        let tools = tokio::time::timeout(timeout, peer.list_all_tools())
            .await
            .map_err(|_| format!("did not list its tools within {timeout:?}"))?
            .map_err(|e| match self.overflowed() {
                Some(why) => format!("cannot list its tools: {why}"),
                None => format!("cannot list its tools: {e}"),
            })?;
        let tools = limits::tools(&self.entry, tools);
        let has_resources = peer
            .peer_info()
            .is_some_and(|i| i.capabilities.resources.is_some());
        let resources = if has_resources {
            match tokio::time::timeout(timeout, peer.list_all_resources()).await {
                Ok(Ok(r)) => r
                    .into_iter()
                    .take(limits::MAX_RESOURCES)
                    .map(|r| {
                        (
                            limits::clean_line(&r.uri, 512),
                            limits::clean_line(&r.name, 128),
                        )
                    })
                    .collect(),
                Ok(Err(e)) => {
                    self.note(format!("cannot list its resources: {e}"));
                    Vec::new()
                }
                Err(_) => {
                    self.note("did not list its resources in time".into());
                    Vec::new()
                }
            }
        } else {
            Vec::new()
        };
        let mut i = lock(&self.inner);
        if i.tools != tools {
            i.tools = tools;
            self.generation.fetch_add(1, Ordering::AcqRel);
        }
        i.resources = resources;
        Ok(())
    }

    fn peer(&self) -> Result<Peer<RoleClient>, CallError> {
        let i = lock(&self.inner);
        match (&i.state, &i.peer) {
            (ServerState::Ready, Some(p)) => Ok(p.clone()),
            (state, _) => Err(CallError::Unavailable(
                self.entry.name.clone(),
                describe(state),
            )),
        }
    }

    /// Why the current connection ended, when it was for a message too
    /// large.
    fn overflowed(&self) -> Option<String> {
        lock(&self.inner).overflow.reason().map(str::to_owned)
    }

    /// A request's error: a closed transport means the server stopped (at
    /// once, when it sent a message too large).
    fn request_failed(&self, e: rmcp::ServiceError) -> CallError {
        if let Some(why) = self.overflowed() {
            self.note(format!("stopped: {why}"));
            self.failed(format!("stopped: {why}"));
            return CallError::TooLarge(self.entry.name.clone(), why);
        }
        match e {
            rmcp::ServiceError::McpError(e) => CallError::Server(
                self.entry.name.clone(),
                limits::clean_line(&e.message, 2000),
            ),
            rmcp::ServiceError::Timeout { timeout } => {
                CallError::Timeout(self.entry.name.clone(), timeout)
            }
            other => {
                let why = other.to_string();
                self.note(format!("stopped: {why}"));
                self.failed(format!("stopped: {why}"));
                CallError::Crashed(self.entry.name.clone(), why)
            }
        }
    }

    /// Call `tool` (its own name) with `args`; its result as the protocol
    /// gives it (a JSON object).
    pub async fn call(
        self: &Arc<Self>,
        tool: &str,
        args: serde_json::Map<String, Value>,
    ) -> Result<Value, CallError> {
        self.ensure_started().await;
        let peer = self.peer()?;
        let timeout = self.entry.timeout;
        let mut req = CallToolRequestParams::new(tool.to_owned()).with_arguments(args);
        if let Some(meta) = trace_meta() {
            req.meta = Some(meta);
        }
        let res = tokio::time::timeout(timeout, peer.call_tool(req)).await;
        match res {
            Err(_) => Err(CallError::Timeout(self.entry.name.clone(), timeout)),
            Ok(Err(e)) => Err(self.request_failed(e)),
            Ok(Ok(r)) => serde_json::to_value(r)
                .map_err(|e| CallError::Server(self.entry.name.clone(), e.to_string())),
        }
    }

    /// Read the resource at `uri`, as the protocol gives it.
    pub async fn read_resource(self: &Arc<Self>, uri: &str) -> Result<Value, CallError> {
        self.ensure_started().await;
        let peer = self.peer()?;
        let timeout = self.entry.timeout;
        let res = tokio::time::timeout(
            timeout,
            peer.read_resource(ReadResourceRequestParams::new(uri)),
        )
        .await;
        match res {
            Err(_) => Err(CallError::Timeout(self.entry.name.clone(), timeout)),
            Ok(Err(e)) => Err(self.request_failed(e)),
            Ok(Ok(r)) => serde_json::to_value(r)
                .map_err(|e| CallError::Server(self.entry.name.clone(), e.to_string())),
        }
    }

    /// A server waiting for trust may start from now on (the person
    /// trusted it for the session that holds it); any other stays as it
    /// is.
    pub fn allow(&self) {
        let mut i = lock(&self.inner);
        if i.state == ServerState::Untrusted {
            i.state = ServerState::Idle;
        }
    }

    /// Stop it (the process with its sandbox).
    pub fn stop(&self) {
        let mut i = lock(&self.inner);
        i.peer = None;
        i.service = None;
        i.proxy = None;
    }
}

/// What a stdio entry's command line names, kept visible read-only in
/// its sandbox (a private `/tmp` would otherwise hide a server installed
/// under it): the program and every absolute path among the arguments,
/// each as the directory holding its package (the parent of its highest
/// `node_modules`, else its own directory).
fn visible_paths(command: &str, args: &[String]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for word in std::iter::once(command).chain(args.iter().map(String::as_str)) {
        let path = std::path::Path::new(word);
        if !path.is_absolute() {
            continue;
        }
        let Ok(real) = path.canonicalize() else {
            continue;
        };
        let package = real
            .ancestors()
            .filter(|a| a.file_name().is_some_and(|n| n == "node_modules"))
            .last()
            .and_then(std::path::Path::parent)
            .map(std::path::Path::to_path_buf);
        let dir = package.unwrap_or_else(|| {
            if real.is_dir() {
                real.clone()
            } else {
                real.parent()
                    .map_or_else(|| real.clone(), std::path::Path::to_path_buf)
            }
        });
        // The root itself is already visible (read-only) or, with a
        // restricted profile, deliberately not.
        if dir.parent().is_some() && !out.contains(&dir) {
            out.push(dir);
        }
    }
    out
}

/// How a stdio server's start failed, before it is explained.
enum Failure {
    /// No answer within this long.
    Silent(Duration),
    /// Its process ended (how, when known).
    Exited(Option<String>),
    /// The connection closed (the process is ending).
    Closed(String),
    /// Anything else.
    Other(String),
}

/// What tells why a stdio server failed to start.
struct Seen<'a> {
    exit: &'a Exit,
    stderr: &'a StderrTail,
    proxy: Option<&'a Proxy>,
    own: &'a [Origin],
    runner: Option<&'a PackageRunner>,
    cache: Option<&'a (PathBuf, PathBuf)>,
}

/// Why a stdio server failed to start, in full: how it ended (once it
/// has, waited for briefly), the end of its stderr (its cache's paths as
/// the host sees them), and what its sandbox refused.
async fn explain(failure: Failure, seen: Seen<'_>) -> String {
    let exited = match &failure {
        Failure::Exited(how) => how.clone(),
        // The connection closed: the process is ending.
        Failure::Closed(_) => tokio::time::timeout(SETTLE, seen.exit.ended())
            .await
            .ok()
            .flatten(),
        Failure::Silent(_) | Failure::Other(_) => seen.exit.now(),
    };
    seen.stderr.drained(SETTLE).await;
    let mut lines = seen.stderr.lines();
    if let Some((host, inside)) = seen.cache
        && host != inside
    {
        let (host, inside) = (host.to_string_lossy(), inside.to_string_lossy());
        for l in &mut lines {
            *l = l.replace(inside.as_ref(), host.as_ref());
        }
    }
    let mut why = match (&failure, &exited) {
        (Failure::Silent(d), _) => format!("did not answer `initialize` within {d:?}"),
        (Failure::Other(w), _) => w.clone(),
        (_, Some(how)) => format!("it exited ({how}) before answering `initialize`"),
        (Failure::Closed(w), None) => w.clone(),
        (Failure::Exited(_), None) => "it stopped before answering `initialize`".to_owned(),
    };
    if !lines.is_empty() {
        why.push_str("; its stderr ends: ");
        why.push_str(&quoted(&lines));
    } else if exited.is_some() {
        why.push_str("; it wrote nothing to stderr");
    }
    let refused = seen.proxy.map(refusals).unwrap_or_default();
    if !refused.is_empty() {
        let list = |o: &[Origin]| {
            o.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let may = match (seen.runner, seen.own.is_empty()) {
            (Some(r), true) => format!("it may reach {} while it starts", list(&r.registry)),
            (Some(r), false) => format!(
                "it may reach {} while it starts, and {}",
                list(&r.registry),
                list(seen.own)
            ),
            (None, _) => format!("it may reach {}", list(seen.own)),
        };
        why.push_str(&format!(
            "; its sandbox refused the network origin{} {} ({may}; `allowNetwork` grants more)",
            if refused.len() == 1 { "" } else { "s" },
            refused.join(", ")
        ));
    }
    for hint in hints(&lines, seen.proxy.is_some()) {
        why.push_str("; ");
        why.push_str(hint);
    }
    why
}

/// Read a server's stderr to its end: each line (bounded) noted for its
/// status and kept in `tail`.
async fn read_stderr(
    mut stderr: tokio::process::ChildStderr,
    server: &Weak<McpServer>,
    tail: &StderrTail,
) {
    use tokio::io::AsyncReadExt;
    let mut buf = vec![0u8; 4096];
    let mut line = Vec::new();
    let keep = |line: &[u8]| {
        let text = limits::clean_line(&String::from_utf8_lossy(line), KEPT_LINE_CHARS);
        if text.trim().is_empty() {
            return;
        }
        tail.push(text.clone());
        if let Some(s) = server.upgrade() {
            s.note(format!("stderr: {text}"));
        }
    };
    loop {
        let n = match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for &b in &buf[..n] {
            if b == b'\n' {
                keep(&line);
                line.clear();
            } else if line.len() < KEPT_LINE_CHARS * 4 {
                line.push(b);
            }
        }
    }
    if !line.is_empty() {
        keep(&line);
    }
}

/// The end of a server's stderr as one bounded line: its last lines,
/// most recent kept whole.
fn quoted(lines: &[String]) -> String {
    let mut out: Vec<&str> = Vec::new();
    let mut used = 0;
    for l in lines.iter().rev() {
        let n = l.chars().count();
        if used + n > QUOTED_STDERR && !out.is_empty() {
            break;
        }
        used += n + 3;
        out.push(l);
    }
    out.reverse();
    let joined = out.join(" | ");
    limits::clean_line(&joined, QUOTED_STDERR)
}

/// The network origins `proxy` refused, each once, in order.
fn refusals(proxy: &Proxy) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for a in proxy.attempts() {
        if !a.allowed && !out.contains(&a.origin) {
            out.push(a.origin);
        }
    }
    out
}

/// What a server's stderr says its sandbox stopped, in the system's own
/// words (errno names): a write to the read-only file system, or a name
/// lookup with no network at all.
fn hints(lines: &[String], has_proxy: bool) -> Vec<&'static str> {
    let any = |words: &[&str]| {
        lines.iter().any(|l| {
            let l = l.to_ascii_lowercase();
            words.iter().any(|w| l.contains(w))
        })
    };
    let mut out = Vec::new();
    if any(&["erofs", "read-only file system"]) {
        out.push(
            "it tried to write where its sandbox is read-only (a `profile` with `write` paths, or `workspace`, lets it write there)",
        );
    }
    if !has_proxy && any(&["eai_again", "enotfound", "getaddrinfo", "name resolution"]) {
        out.push("it has no network in its sandbox (`allowNetwork` grants it origins)");
    }
    out
}

/// The skills among `resources`: `skill://NAME/SKILL.md`.
pub fn skills_in(resources: &[(String, String)]) -> Vec<String> {
    resources
        .iter()
        .filter_map(|(uri, _)| {
            uri.strip_prefix("skill://")?
                .strip_suffix("/SKILL.md")
                .filter(|n| !n.is_empty() && !n.contains('/'))
                .map(str::to_owned)
        })
        .collect()
}

/// A state in words, for an error.
pub fn describe(state: &ServerState) -> String {
    match state {
        ServerState::Disabled => "it is disabled in its configuration".into(),
        ServerState::Untrusted => {
            "it is a project server not trusted in this workspace (`roost mcp trust`)".into()
        }
        ServerState::Idle | ServerState::Starting => "it is starting".into(),
        ServerState::Ready => "ready".into(),
        ServerState::Restarting(why) => format!("it stopped ({why}) and is being restarted"),
        ServerState::Failed(why) => format!("it failed: {why}"),
    }
}

/// The current trace context as a request's `_meta` (`traceparent`, as
/// the MCP tracing convention puts it), so the server's side of a call can
/// join the task's trace; none unless telemetry installed a propagator.
fn trace_meta() -> Option<rmcp::model::RequestMetaObject> {
    let mut carrier = std::collections::HashMap::new();
    opentelemetry::global::get_text_map_propagator(|p| {
        p.inject_context(&opentelemetry::Context::current(), &mut carrier);
    });
    if carrier.is_empty() {
        return None;
    }
    let mut meta = rmcp::model::RequestMetaObject::new();
    for (k, v) in carrier {
        meta.insert(k, Value::String(v));
    }
    Some(meta)
}
