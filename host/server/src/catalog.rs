//! What a client looks up besides tasks: who it is signed in as, the
//! modes, intents and trace of a workspace (inside the caller's root), the
//! model profiles, the tools, and the server's health and readiness.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use roost_core::config::Config;
use roost_core::intents::{self, Intent, Trace, TraceEntry};
use roost_core::modes::{ModeSet, ModeSource};
use roost_protocol::api::{Health, Me, ModeView, PluginView, ProfileView, ToolView};
use serde::Deserialize;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::extract::Query;
use crate::state::ServerState;

/// `?workspace=`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceQuery {
    workspace: String,
}

/// `GET /v1/modes?workspace=`.
pub async fn modes(
    State(state): State<Arc<ServerState>>,
    caller: Caller,
    Query(q): Query<WorkspaceQuery>,
) -> Result<Json<Vec<ModeView>>, ApiError> {
    let ws = crate::workspace::resolve(&caller, &q.workspace)?;
    let set = ModeSet::load(&ws, state.config.modes_dir.as_deref());
    Ok(Json(
        set.iter()
            .map(|m| ModeView {
                slug: m.slug.clone(),
                name: m.name.clone(),
                // Where a file mode comes from, not the host's file names.
                source: match m.source {
                    ModeSource::BuiltIn => "builtin",
                    ModeSource::Global(_) => "global",
                    ModeSource::Project(_) => "project",
                }
                .to_owned(),
            })
            .collect(),
    ))
}

/// `GET /v1/intents?workspace=`.
pub async fn intents(
    caller: Caller,
    Query(q): Query<WorkspaceQuery>,
) -> Result<Json<Vec<Intent>>, ApiError> {
    let ws = crate::workspace::resolve(&caller, &q.workspace)?;
    intents::load(&ws)
        .map(Json)
        .map_err(|e| ApiError::invalid(e.to_string()))
}

/// `GET /v1/trace?workspace=`: the agent trace, oldest first.
pub async fn trace(
    caller: Caller,
    Query(q): Query<WorkspaceQuery>,
) -> Result<Json<Vec<TraceEntry>>, ApiError> {
    let ws = crate::workspace::resolve(&caller, &q.workspace)?;
    let (entries, _) = Trace::of(&ws)
        .read(None)
        .map_err(|e| ApiError::invalid(e.to_string()))?;
    Ok(Json(entries))
}

/// `GET /v1/tools`: the tools a task may be offered.
pub async fn tools(State(state): State<Arc<ServerState>>, _caller: Caller) -> Json<Vec<ToolView>> {
    Json(state.engine.tools())
}

/// `GET /v1/plugins`: the installed plugins.
pub async fn plugins(
    State(state): State<Arc<ServerState>>,
    _caller: Caller,
) -> Result<Json<Vec<PluginView>>, ApiError> {
    let records = state
        .engine
        .records()
        .plugins()
        .map_err(|e| ApiError::from(roost_core::engine::EngineError::from(e)))?;
    Ok(Json(
        records
            .into_iter()
            .map(|p| {
                // The recorded tool list: `[{"name": …, "group": …}, …]`.
                let tools = serde_json::from_str::<Vec<serde_json::Value>>(&p.tools)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|t| t.get("name")?.as_str().map(str::to_owned))
                    .collect();
                PluginView {
                    name: p.name,
                    version: p.version,
                    enabled: p.enabled,
                    signer: p.signer,
                    tools,
                }
            })
            .collect(),
    ))
}

/// `GET /v1/me`: who the request's token acts for (a web page says who
/// is signed in).
pub async fn me(State(state): State<Arc<ServerState>>, caller: Caller) -> Json<Me> {
    Json(Me {
        tenant: caller.tenant,
        root: caller.root.display().to_string(),
        auth: state.config.auth,
    })
}

/// `GET /v1/profiles`: the model profiles a task may name. The server's
/// config is the same for every tenant; a token is needed all the same,
/// and only names and models are shown (no key variables, URLs or files
/// of the host).
pub async fn profiles(
    State(state): State<Arc<ServerState>>,
    _caller: Caller,
) -> Json<Vec<ProfileView>> {
    Json(state.config.profiles.clone())
}

/// The profiles of `config` as `GET /v1/profiles` lists them, by name.
pub fn profiles_of(config: &Config) -> Vec<ProfileView> {
    config
        .profiles
        .iter()
        .map(|(name, p)| ProfileView {
            name: name.clone(),
            provider: p.provider.clone(),
            model: p.model.clone(),
            default: config.default_profile.as_deref() == Some(name.as_str()),
        })
        .collect()
}

/// `GET /v1/health`: the process answers (no token needed).
pub async fn health() -> Json<Health> {
    Json(Health {
        status: "ok".to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
    })
}

/// `GET /v1/ready`: the task store answers (no token needed); `503`
/// while it does not (a shared database that is down, say), so a load
/// balancer sends requests to another host meanwhile.
pub async fn ready(State(state): State<Arc<ServerState>>) -> Result<Json<Health>, ApiError> {
    let engine = state.engine.clone();
    match tokio::task::spawn_blocking(move || engine.records().ping()).await {
        Ok(Ok(())) => Ok(health().await),
        Ok(Err(e)) => Err(ApiError::store_unavailable(&e.to_string())),
        Err(e) => Err(ApiError::store_unavailable(&e.to_string())),
    }
}
