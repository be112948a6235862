//! `roost acp`: Roost as an Agent Client Protocol agent over stdio, for
//! the editors that speak it (Zed, the JetBrains IDEs, Neovim's plugins).
//! One more front-end over the session service: an ACP session is a Roost
//! task of the host's own (`Owner::Host`), created by its first prompt and
//! continued by the next; its events reach the editor through the one
//! display mapping (`roost_protocol::display`), and every question a task
//! asks becomes `session/request_permission` — answered, or denied when
//! the editor does not answer in time (never a hang). Standard output
//! carries only ACP messages; logs go to standard error. Protocol v1;
//! draft v2 beside it with `--acp-version 2` (`v2`), the client's
//! `initialize` choosing.

mod buffers;
mod commands;
mod config;
mod editor;
mod history;
mod mcp;
mod sessions;
mod turn;
pub mod updates;
mod v2;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AuthMethod, AuthMethodAgent, AuthenticateRequest, AuthenticateResponse,
    CancelNotification, CloseSessionRequest, CloseSessionResponse, Implementation,
    InitializeRequest, InitializeResponse, ListSessionsRequest, LoadSessionRequest,
    McpCapabilities, NewSessionRequest, NewSessionResponse, PromptCapabilities, PromptRequest,
    SessionCapabilities, SessionCloseCapabilities, SessionListCapabilities, SessionMode,
    SessionModeState, SessionNotification, SetSessionConfigOptionRequest, SetSessionModeRequest,
    SetSessionModeResponse,
};
use agent_client_protocol::{Agent, ConnectTo, Error, Stdio};
use roost_core::engine::Engine;
use roost_core::modes::ModeSet;
use roost_core::session::{Owner, Session};
use roost_protocol::{ApprovalPolicy, Endpoint};

use sessions::Sessions;

/// How `roost acp` runs tasks.
#[derive(Debug, Clone)]
pub struct Settings {
    /// A directory every session's `cwd` must lie within (none: any
    /// directory Roost can open).
    pub root: Option<PathBuf>,
    /// The mode a session starts in.
    pub mode: String,
    /// The model endpoint tasks use (the config's default when empty).
    pub endpoint: Endpoint,
    /// How long an editor has to answer a permission request before the
    /// call is denied.
    pub ask_timeout: Duration,
    /// Where the global modes file is (a session's workspace adds its own).
    pub modes_dir: Option<PathBuf>,
    /// What runs without asking (none: the engine's default, and the
    /// workspace's saved approvals).
    pub approval: Option<ApprovalPolicy>,
    /// The most turns a prompt's run takes before it pauses.
    pub max_turns: Option<u32>,
    /// Offer draft protocol v2 beside v1 (`--acp-version 2`): a client
    /// asking for v2 gets it, any other v1.
    pub draft_v2: bool,
}

/// Why `roost acp` stopped.
#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    /// The connection with the editor failed.
    #[error("the ACP connection failed: {0}")]
    Connection(#[from] Error),
}

/// What every handler shares.
pub(crate) struct Acp {
    pub(crate) engine: Arc<Engine>,
    pub(crate) settings: Settings,
    pub(crate) sessions: Sessions,
    /// Whether the editor offers `fs/read_text_file` (its unsaved
    /// buffers), as it said in `initialize`.
    pub(crate) reads_buffers: std::sync::atomic::AtomicBool,
    /// Each v2 session's message ids for the turn under way.
    pub(crate) v2_ids: v2::Turns,
}

/// Serve the Agent Client Protocol on standard input and output until the
/// editor closes the connection.
pub async fn serve(engine: Arc<Engine>, settings: Settings) -> Result<(), AcpError> {
    serve_on(engine, settings, Stdio::new()).await
}

/// Serve the Agent Client Protocol over `transport` until the editor
/// closes it: what `serve` does on stdio, here on any byte stream (the fuzz
/// target drives it in process).
pub async fn serve_on(
    engine: Arc<Engine>,
    settings: Settings,
    transport: impl ConnectTo<Agent> + 'static,
) -> Result<(), AcpError> {
    let acp = Arc::new(Acp {
        engine,
        settings,
        sessions: Sessions::default(),
        reads_buffers: std::sync::atomic::AtomicBool::new(false),
        v2_ids: v2::Turns::default(),
    });
    let (a2, a3, a4, a5, a6, a7, a8, a9, a10) = (
        Arc::clone(&acp),
        Arc::clone(&acp),
        Arc::clone(&acp),
        Arc::clone(&acp),
        Arc::clone(&acp),
        Arc::clone(&acp),
        Arc::clone(&acp),
        Arc::clone(&acp),
        Arc::clone(&acp),
    );
    let v1 = Agent
        .v1()
        .name("roost")
        .on_receive_request(
            async move |req: InitializeRequest, responder, _cx| {
                a10.reads_buffers.store(
                    req.client_capabilities.fs.read_text_file,
                    std::sync::atomic::Ordering::Release,
                );
                responder.respond(initialize(&req))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |_req: AuthenticateRequest, responder, _cx| {
                // The API key comes from the environment or the config:
                // nothing to do here.
                responder.respond(AuthenticateResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: NewSessionRequest, responder, cx| match a2.new_session(&req) {
                Ok((r, notes)) => {
                    let id = r.session_id.clone();
                    responder.respond(r)?;
                    // Roost's slash commands, once the editor knows the
                    // session; and the editor's MCP servers left out.
                    for note in notes {
                        cx.send_notification(SessionNotification::new(
                            id.clone(),
                            updates::said(note),
                        ))?;
                    }
                    cx.send_notification(SessionNotification::new(id, commands::available()))
                }
                Err(e) => responder.respond_with_error(e),
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: ListSessionsRequest, responder, _cx| match history::list(&a6, &req) {
                Ok(r) => responder.respond(r),
                Err(e) => responder.respond_with_error(e),
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: LoadSessionRequest, responder, cx| match history::load(
                &a7,
                &editor::Editor::v1(&cx),
                &req,
            )
            .await
            {
                Ok(r) => responder.respond(r),
                Err(e) => responder.respond_with_error(e),
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: SetSessionModeRequest, responder, _cx| match a3.sessions.set_mode(
                &req.session_id.0,
                &req.mode_id.0,
                a3.settings.modes_dir.as_deref(),
            ) {
                Ok(()) => responder.respond(SetSessionModeResponse::new()),
                Err(e) => responder.respond_with_error(e),
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: PromptRequest, responder, cx| {
                // The turn runs beside the dispatch loop: it asks the
                // editor for permissions, whose answers that loop routes.
                let acp = Arc::clone(&a4);
                tokio::spawn(async move {
                    let answered = match turn::run(&acp, &editor::Editor::v1(&cx), req).await {
                        Ok(r) => responder.respond(r),
                        Err(e) => responder.respond_with_error(e),
                    };
                    if let Err(e) = answered {
                        tracing::warn!("the prompt's response was not sent: {e}");
                    }
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: SetSessionConfigOptionRequest, responder, _cx| match a9
                .set_config_option(&req)
            {
                Ok(r) => responder.respond(r),
                Err(e) => responder.respond_with_error(e),
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: CloseSessionRequest, responder, _cx| {
                // The session's task stops (resumable) and the session
                // is gone; `session/load` brings it back.
                match a8.close(&req.session_id.0).await {
                    Ok(()) => responder.respond(CloseSessionResponse::new()),
                    Err(e) => responder.respond_with_error(e),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |n: CancelNotification, _cx| {
                a5.cancel(&n.session_id.0).await;
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        );
    let connected = if acp.settings.draft_v2 {
        // The client's `initialize` picks the version.
        Agent
            .protocol_router()
            .with_v1(v1)
            .with_v2(v2::agent(&acp))
            .connect_to(transport)
            .await
    } else {
        v1.connect_to(transport).await
    };
    // The editor went away (or the connection failed): no one is left to
    // approve or read, so every running task stops where it stands —
    // aborted, resumable, nothing half-written — before the process ends.
    acp.close_all().await;
    connected?;
    Ok(())
}

/// What Roost says it can do.
fn initialize(_req: &InitializeRequest) -> InitializeResponse {
    InitializeResponse::new(ProtocolVersion::V1)
        .agent_capabilities(
            AgentCapabilities::new()
                .load_session(true)
                .prompt_capabilities(PromptCapabilities::new())
                // The editor's MCP servers, over every transport Roost's
                // MCP client speaks (stdio always).
                .mcp_capabilities(McpCapabilities::new().http(true).sse(true))
                .session_capabilities(
                    SessionCapabilities::new()
                        .list(SessionListCapabilities::new())
                        .close(SessionCloseCapabilities::new()),
                ),
        )
        .auth_methods(vec![AuthMethod::Agent(
            AuthMethodAgent::new("api-key", "API key").description(
                "The model's API key comes from the environment (OPENAI_API_KEY, ANTHROPIC_API_KEY, …) or Roost's config; no login is needed."
                    .to_owned(),
            ),
        )])
        .agent_info(Implementation::new("roost", env!("CARGO_PKG_VERSION")))
        .meta(sandbox_note())
}

/// What Roost tells the editor of its sandbox (the protocol has no field
/// for it): every tool runs in Roost's own; the editor's `fs` is only
/// read, for unsaved buffers, and its terminals are never used.
pub(crate) fn sandbox_note() -> agent_client_protocol::v1::schema::Meta {
    let mut meta = agent_client_protocol::v1::schema::Meta::new();
    meta.insert(
        "roost".to_owned(),
        serde_json::json!({
            "sandbox": "Every tool, command and MCP server runs in Roost's own sandbox, within what the task's intent grants.",
            "clientFs": "read only: fs/read_text_file, for unsaved buffers of files a read may see; never fs/write_text_file",
            "clientTerminal": "never used: commands run in Roost's command sandbox"
        }),
    );
    meta
}

impl Acp {
    /// `session/new`: a session in `cwd`, checked like any workspace,
    /// with the editor's MCP servers; and a line for each server left out.
    fn new_session(
        &self,
        req: &NewSessionRequest,
    ) -> Result<(NewSessionResponse, Vec<String>), Error> {
        let workspace = sessions::workspace(&req.cwd, self.settings.root.as_deref())?;
        let (mcp, left_out) = mcp::session_servers(self, &workspace, &req.mcp_servers)?;
        let mode = self.settings.mode.clone();
        let modes = self.modes(&workspace, &mode);
        let id = self.sessions.open(workspace, mode, mcp);
        let response = NewSessionResponse::new(id)
            .modes(modes)
            .config_options(self.config_options(None));
        Ok((response, left_out))
    }

    /// The modes of `workspace`, `current` the session's.
    pub(crate) fn modes(&self, workspace: &std::path::Path, current: &str) -> SessionModeState {
        let modes = ModeSet::load(workspace, self.settings.modes_dir.as_deref())
            .iter()
            .map(|m| {
                SessionMode::new(m.slug.clone(), m.name.clone())
                    .description(m.description.clone().or_else(|| m.when_to_use.clone()))
            })
            .collect();
        SessionModeState::new(current.to_owned(), modes)
    }

    /// `session/cancel`: stop the session's task after its current step.
    async fn cancel(&self, session: &str) {
        if let Some(task) = self.sessions.task(session) {
            self.stop(&task, "cancelled by the editor").await;
        }
    }

    /// Ask `task` to stop for `reason` (it may have ended already).
    async fn stop(&self, task: &str, reason: &str) {
        let s = Session::new(&self.engine, Owner::Host);
        if let Err(e) = s.cancel(task, reason).await {
            tracing::info!(task = %task, "cancel: {e}");
        }
    }

    /// Stop `task` if it runs here, and wait until it has stopped.
    async fn stop_and_wait(&self, task: &str, reason: &str) {
        let s = Session::new(&self.engine, Owner::Host);
        if s.live(task).await.is_err() {
            return;
        }
        self.stop(task, reason).await;
        if let Err(e) = s.wait(task).await {
            tracing::info!(task = %task, "after the cancel: {e}");
        }
    }

    /// `session/close`: the session's task stops (aborted, resumable) and
    /// the session is forgotten.
    async fn close(&self, session: &str) -> Result<(), Error> {
        let task = self.sessions.with(session, |s| s.task.clone())?;
        if let Some(task) = task {
            self.stop_and_wait(&task, "the editor closed the session")
                .await;
        }
        self.sessions.forget(session);
        Ok(())
    }

    /// The editor is gone: stop every session's task and wait for each.
    async fn close_all(&self) {
        let tasks = self.sessions.tasks();
        for task in &tasks {
            self.stop(task, "the editor disconnected").await;
        }
        for task in &tasks {
            self.stop_and_wait(task, "the editor disconnected").await;
        }
    }
}

/// An ACP error with Roost's words.
pub(crate) fn invalid(message: impl Into<String>) -> Error {
    Error::invalid_params().data(serde_json::Value::String(message.into()))
}
