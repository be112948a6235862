//! `roost mcp serve`: Roost's sandboxed tools for other agents (Claude
//! Code, Codex, Goose, editors) over the Model Context Protocol, on the
//! official Rust SDK (`rmcp`).
//!
//! - [`tools`]: `tools/list` offers every component tool (first-party and
//!   installed), annotated from Roost's specs; `tools/call` runs through
//!   the engine's direct-call path, so each call is sandboxed with the
//!   grant the server started with ([`DirectGrant`]) and traced as a task's;
//! - [`resources`]: the workspace's intents and trace;
//! - [`skills`]: the workspace's and the user's skills (SEP-2640);
//! - [`http`]: streamable HTTP with Host/Origin checks against DNS
//!   rebinding and a bearer token off loopback (stdio needs none of it).
//!
//! Protocol versions are those `rmcp` negotiates (2025-06-18, 2025-11-25,
//! and the stateless 2026-07-28).

mod http;
mod resources;
mod skills;
mod tools;

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, GetSkillRequestParams, GetSkillResult, Implementation,
    ListResourcesResult, ListSkillsResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};

pub use http::{HttpError, HttpOptions, MCP_PATH, check_exposure, serve_http};
pub use roost_core::call::grant::{DirectGrant, GrantError};

use roost_core::skills::Skill;
use roost_core::task::Agent;

/// The MCP server: one per process, cloned into each session (stdio has
/// one; HTTP one per client).
#[derive(Clone)]
pub struct RoostMcp {
    shared: Arc<Shared>,
}

/// What every session shares.
struct Shared {
    agent: Agent,
    grant: DirectGrant,
}

impl Shared {
    /// The skills served now (the library rescans what changed).
    fn skills(&self) -> Vec<Arc<Skill>> {
        let catalog = self.agent.skills.catalog(self.grant.workspace());
        skills::served(&catalog)
    }
}

impl RoostMcp {
    /// Serve `agent`'s tools with `grant`.
    pub fn new(agent: Agent, grant: DirectGrant) -> Self {
        Self {
            shared: Arc::new(Shared { agent, grant }),
        }
    }

    /// The grant every call runs with.
    pub fn grant(&self) -> &DirectGrant {
        &self.shared.grant
    }
}

/// Why serving over stdio stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum StdioError {
    /// The client's `initialize` failed (or stdin closed before it).
    #[error("the MCP client did not initialize: {0}")]
    Initialize(String),
    /// The session's task failed.
    #[error("the MCP session ended abnormally: {0}")]
    Session(String),
}

/// Serve `server` on stdin and stdout until the client closes stdin.
/// Nothing else may write to stdout meanwhile: it carries the protocol.
pub async fn serve_stdio(server: RoostMcp) -> Result<(), StdioError> {
    let running = server
        .serve(rmcp::transport::stdio_pipes())
        .await
        .map_err(|e| StdioError::Initialize(e.to_string()))?;
    running
        .waiting()
        .await
        .map_err(|e| StdioError::Session(e.to_string()))?;
    Ok(())
}

/// Who a call came from, for the trace: `mcp:<client name>`.
fn caller(context: &RequestContext<RoleServer>) -> String {
    let name: String = context
        .client_info()
        .map(|i| i.name)
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .take(64)
        .collect();
    if name.is_empty() {
        "mcp".to_owned()
    } else {
        format!("mcp:{name}")
    }
}

/// The trace a call continues: its `params._meta.traceparent` (the MCP
/// convention, over any transport), else its HTTP request's `traceparent`
/// header. Checked where it is used; an invalid one is ignored.
fn traceparent(
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Option<String> {
    // rmcp hands a request's `_meta` to the handler in its context.
    let from_meta = request
        .meta
        .as_ref()
        .and_then(|m| m.get("traceparent"))
        .or_else(|| context.meta.get("traceparent"))
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned);
    from_meta.or_else(|| {
        context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.headers.get("traceparent"))
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    })
}

impl ServerHandler for RoostMcp {
    #[allow(deprecated)] // logging: see `set_level`
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_resources()
            .enable_tools()
            .enable_skills()
            .enable_logging()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(
                Implementation::new("roost", env!("CARGO_PKG_VERSION")).with_title("Roost"),
            )
            .with_instructions(format!(
                "Roost's tools, each call run in a WebAssembly sandbox that reaches only what this server was granted: {}. \
                 A call outside that grant fails with Roost's refusal. Resources: the workspace's intents \
                 (roost://intents) and agent trace (roost://trace), and its skills (skill://index.json).",
                self.shared.grant.describe()
            ))
    }

    /// Clients may set a level (the conformance suite does); Roost's
    /// server sends no log messages (logging is deprecated by SEP-2577),
    /// so any level is accepted and nothing changes.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        tracing::debug!("MCP client set the log level to {:?}", request.level);
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools::list(&self.shared)))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = caller(&context);
        let parent = traceparent(&request, &context);
        tools::call(
            &self.shared,
            &request.name,
            request.arguments,
            &caller,
            parent.as_deref(),
        )
        .await
        .map(Into::into)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let shared = Arc::clone(&self.shared);
        let list = tokio::task::spawn_blocking(move || resources::list(&shared))
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Ok(ListResourcesResult::with_all_items(list))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let shared = Arc::clone(&self.shared);
        tokio::task::spawn_blocking(move || resources::read(&shared, &request.uri))
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?
            .map(Into::into)
    }

    async fn list_skills(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        let shared = Arc::clone(&self.shared);
        let entries = tokio::task::spawn_blocking(move || {
            shared
                .skills()
                .iter()
                .filter_map(|s| skills::entry(s))
                .collect::<Vec<_>>()
        })
        .await
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Ok(ListSkillsResult::with_all_items(entries))
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        let shared = Arc::clone(&self.shared);
        let uri = request.uri;
        tokio::task::spawn_blocking(move || {
            let served = shared.skills();
            let skill = served
                .iter()
                .find(|s| skills::uri(s.name(), "SKILL.md") == uri)
                .ok_or_else(|| ErrorData::invalid_params(format!("no skill at {uri}"), None))?;
            skills::entry(skill)
                .map(GetSkillResult::new)
                .ok_or_else(|| {
                    ErrorData::internal_error(format!("the skill at {uri} cannot be served"), None)
                })
        })
        .await
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?
    }
}
