//! Draft protocol v2 (`roost acp --acp-version 2`, the SDK's
//! `unstable_protocol_v2`): the same sessions, tasks and approvals as v1,
//! spoken in v2's shape. A prompt is answered as soon as it is taken (its
//! message id) and the turn's end is a `state_update` — `running` when it
//! starts, `idle` with its `stopReason` when it ends; a tool call is one
//! `tool_call_update` from its first appearance; the plan is a
//! `plan_update`; the session's mode is a config option (v2 has no modes);
//! `session/resume` replays a session as v1's `session/load` does. Roost's
//! own mapping produces v1 updates; each is converted here and checked
//! against v2's types before it is sent. v2 has no client file system:
//! unsaved buffers are read on v1 only.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema as v1;
use agent_client_protocol::v2::ConnectionTo;
use agent_client_protocol::v2::schema as v2;
use agent_client_protocol::{Agent, Client, Error};
use futures::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::editor::{Asked, Editor, Link};
use super::{Acp, invalid};

/// The editor over a v2 connection.
#[derive(Clone)]
pub(crate) struct V2Editor {
    cx: ConnectionTo<Client>,
    acp: Weak<Acp>,
    /// Each session's message ids for the turn under way.
    ids: Turns,
}

/// Each session's message ids for the turn under way.
pub(crate) type Turns = Arc<Mutex<HashMap<String, Ids>>>;

/// The ids of one turn's messages.
#[derive(Debug, Clone)]
pub(crate) struct Ids {
    user: String,
    agent: String,
    thought: String,
}

impl Ids {
    fn fresh() -> Self {
        let id = || format!("msg-{}", uuid::Uuid::now_v7());
        Self {
            user: id(),
            agent: id(),
            thought: id(),
        }
    }
}

/// One shape as another: the same JSON read as the other version's type,
/// which refuses anything it does not take.
fn convert<A: Serialize, B: DeserializeOwned>(a: &A) -> Result<B, Error> {
    let v = serde_json::to_value(a).map_err(|e| Error::internal_error().data(e.to_string()))?;
    from_json(v)
}

fn from_json<B: DeserializeOwned>(v: Value) -> Result<B, Error> {
    serde_json::from_value(v)
        .map_err(|e| invalid(format!("not valid in this protocol version: {e}")))
}

/// A v1 config option in v2's shape (`id` is `configId` there).
fn option_v2(mut o: Value) -> Value {
    if let Some(map) = o.as_object_mut()
        && let Some(id) = map.remove("id")
    {
        map.insert("configId".to_owned(), id);
    }
    o
}

/// The session's mode as a v2 config option (category `mode`).
fn mode_option(modes: &v1::SessionModeState) -> Value {
    let options: Vec<Value> = modes
        .available_modes
        .iter()
        .map(|m| json!({"value": m.id.0.as_ref(), "name": m.name, "description": m.description}))
        .collect();
    json!({
        "configId": "mode",
        "name": "Mode",
        "description": "Roost's mode: the tools and instructions the task works with",
        "category": "mode",
        "type": "select",
        "currentValue": modes.current_mode_id.0.as_ref(),
        "options": options,
    })
}

impl Acp {
    /// Session `sid`'s config options in v2's shape: the model profiles
    /// (as v1 offers them) and the mode.
    fn options_v2(&self, sid: &str) -> Result<Vec<v2::SessionConfigOption>, Error> {
        let (workspace, mode, profile) = self.sessions.with(sid, |s| {
            (s.workspace.clone(), s.mode.clone(), s.profile.clone())
        })?;
        let mut all: Vec<Value> = self
            .config_options(profile.as_deref())
            .unwrap_or_default()
            .iter()
            .map(|o| serde_json::to_value(o).map(option_v2))
            .collect::<Result<_, _>>()
            .map_err(|e| Error::internal_error().data(e.to_string()))?;
        all.push(mode_option(&self.modes(&workspace, &mode)));
        from_json(Value::Array(all))
    }
}

impl V2Editor {
    /// Begin a turn of session `sid`: its messages' ids.
    fn begin(&self, sid: &str) -> Ids {
        let ids = Ids::fresh();
        self.ids
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(sid.to_owned(), ids.clone());
        ids
    }

    fn ids(&self, sid: &str) -> Ids {
        self.ids
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(sid.to_owned())
            .or_insert_with(Ids::fresh)
            .clone()
    }

    /// Send session `sid` a v2 update.
    fn send(&self, sid: &str, update: v2::SessionUpdate) -> Result<(), Error> {
        self.cx
            .send_notification(v2::UpdateSessionNotification::new(sid.to_owned(), update))
    }
}

/// The editor over v2: each v1 update converted (a mode change becomes
/// the mode option's change), each permission request in v2's shape.
impl Link for V2Editor {
    fn notify(&self, sid: &str, update: v1::SessionUpdate) -> Result<(), Error> {
        // A mode change is the mode option's change in v2.
        if matches!(update, v1::SessionUpdate::CurrentModeUpdate(_)) {
            let Some(acp) = self.acp.upgrade() else {
                return Ok(());
            };
            let options = acp.options_v2(sid)?;
            return self.send(
                sid,
                v2::SessionUpdate::ConfigOptionUpdate(v2::ConfigOptionUpdate::new(options)),
            );
        }
        match update_v2(&update, &self.ids(sid), sid) {
            Ok(u) => self.send(sid, u),
            Err(e) => {
                // Never expected (each kind is tested); the turn goes on.
                tracing::warn!("an update is not sent over ACP v2: {e}");
                Ok(())
            }
        }
    }

    fn ask(
        &self,
        request: v1::RequestPermissionRequest,
        timeout: Duration,
    ) -> BoxFuture<'static, Asked> {
        let cx = self.cx.clone();
        Box::pin(async move {
            let request = match permission_v2(&request) {
                Ok(r) => r,
                Err(e) => return Asked::Failed(e.to_string()),
            };
            match tokio::time::timeout(timeout, cx.send_request(request).block_task()).await {
                Err(_) => Asked::TimedOut,
                Ok(Err(e)) => Asked::Failed(e.to_string()),
                Ok(Ok(r)) => match r.outcome {
                    v2::RequestPermissionOutcome::Selected(s) => {
                        Asked::Chosen(s.option_id.0.to_string())
                    }
                    _ => Asked::Cancelled,
                },
            }
        })
    }
}

/// A v1 session update in v2's shape (a mode change excepted: see
/// `V2Editor`'s `notify`).
fn update_v2(update: &v1::SessionUpdate, ids: &Ids, sid: &str) -> Result<v2::SessionUpdate, Error> {
    let mut v =
        serde_json::to_value(update).map_err(|e| Error::internal_error().data(e.to_string()))?;
    let kind = v["sessionUpdate"].as_str().unwrap_or_default().to_owned();
    match kind.as_str() {
        "agent_message_chunk" => v["messageId"] = json!(ids.agent),
        "agent_thought_chunk" => v["messageId"] = json!(ids.thought),
        "user_message_chunk" => v["messageId"] = json!(ids.user),
        // A call is one `tool_call_update` from its first appearance.
        "tool_call" => v["sessionUpdate"] = json!("tool_call_update"),
        "plan" => {
            v = json!({
                "sessionUpdate": "plan_update",
                "plan": {"type": "items", "planId": format!("{sid}-todo"), "entries": v["entries"].take()},
            });
        }
        "tool_call_update" => {}
        _ => {}
    }
    if let Some(content) = v.get_mut("content").and_then(Value::as_array_mut) {
        for c in content.iter_mut() {
            if c["type"] == "diff" {
                *c = diff_v2(c);
            }
        }
    }
    match kind.as_str() {
        "available_commands_update" => {
            if let Some(commands) = v["availableCommands"].as_array_mut() {
                for c in commands.iter_mut() {
                    *c = command_v2(c.take());
                }
            }
        }
        "config_option_update" => {
            if let Some(options) = v["configOptions"].as_array_mut() {
                for o in options.iter_mut() {
                    *o = option_v2(o.take());
                }
            }
        }
        _ => {}
    }
    from_json(v)
}

/// A v1 slash command in v2's shape: tagged `command`, its free-text
/// input tagged `text`.
fn command_v2(mut c: Value) -> Value {
    if let Some(map) = c.as_object_mut() {
        map.insert("type".to_owned(), json!("command"));
        if let Some(input) = map.get_mut("input")
            && let Some(i) = input.as_object_mut()
            && i.contains_key("hint")
        {
            i.insert("type".to_owned(), json!("text"));
        }
    }
    c
}

/// A v1 diff (a file's text before and after) in v2's shape: the change
/// (`add` for a new file, else `modify`) and a `git_patch` of it with
/// absolute paths, as v2 asks.
fn diff_v2(d: &Value) -> Value {
    let path = d["path"].as_str().unwrap_or_default();
    let new = d["newText"].as_str().unwrap_or_default();
    let old = d["oldText"].as_str();
    let before = if old.is_some() { path } else { "/dev/null" };
    let body = similar::TextDiff::from_lines(old.unwrap_or_default(), new)
        .unified_diff()
        .header(before, path)
        .to_string();
    let patch = format!(
        "diff --git {path} {path}\n{}{body}",
        if old.is_none() {
            "new file mode 100644\n"
        } else {
            ""
        }
    );
    json!({
        "type": "diff",
        "changes": [{"operation": if old.is_some() { "modify" } else { "add" }, "path": path}],
        "patch": {"format": "git_patch", "text": patch},
    })
}

/// A v1 permission request in v2's shape: the call it is about is its
/// subject, the call's title its title.
fn permission_v2(r: &v1::RequestPermissionRequest) -> Result<v2::RequestPermissionRequest, Error> {
    let call = serde_json::to_value(&r.tool_call)
        .map_err(|e| Error::internal_error().data(e.to_string()))?;
    let options = serde_json::to_value(&r.options)
        .map_err(|e| Error::internal_error().data(e.to_string()))?;
    let title = r
        .tool_call
        .fields
        .title
        .clone()
        .unwrap_or_else(|| "Allow this call?".to_owned());
    from_json(json!({
        "sessionId": r.session_id.0.as_ref(),
        "title": title,
        "subject": {"type": "tool_call", "toolCall": call},
        "options": options,
    }))
}

/// How a turn's v1 stop reason ends it in v2.
fn idle(stop: Result<v1::StopReason, Error>) -> v2::SessionUpdate {
    let reason = match stop {
        Ok(v1::StopReason::EndTurn) => json!({"stopReason": "end_turn"}),
        Ok(v1::StopReason::MaxTurnRequests) => json!({"stopReason": "max_turn_requests"}),
        Ok(v1::StopReason::MaxTokens) => json!({"stopReason": "max_tokens"}),
        Ok(v1::StopReason::Cancelled) => json!({"stopReason": "cancelled"}),
        Ok(v1::StopReason::Refusal) => json!({"stopReason": "refusal"}),
        Ok(_) => json!({"stopReason": "end_turn"}),
        Err(e) => {
            json!({"stopReason": "error", "error": {"code": i32::from(e.code), "message": e.message, "data": e.data}})
        }
    };
    let mut state = json!({"sessionUpdate": "state_update", "state": "idle"});
    if let (Some(s), Some(r)) = (state.as_object_mut(), reason.as_object()) {
        s.extend(r.clone());
    }
    serde_json::from_value(state).unwrap_or_else(|e| {
        tracing::warn!("the idle state is sent without its reason: {e}");
        v2::SessionUpdate::StateUpdate(v2::StateUpdate::Idle(v2::IdleStateUpdate::new()))
    })
}

/// `roost acp`'s draft-v2 agent, over the same [`Acp`] as v1's.
pub(crate) fn agent(acp: &Arc<Acp>) -> impl agent_client_protocol::ConnectTo<Client> {
    let (a1, a2, a3, a4, a5, a6, a7, a8) = (
        Arc::clone(acp),
        Arc::clone(acp),
        Arc::clone(acp),
        Arc::clone(acp),
        Arc::clone(acp),
        Arc::clone(acp),
        Arc::clone(acp),
        Arc::clone(acp),
    );
    let editor = move |acp: &Arc<Acp>, cx: &ConnectionTo<Client>| V2Editor {
        cx: cx.clone(),
        acp: Arc::downgrade(acp),
        ids: Arc::clone(&acp.v2_ids),
    };
    Agent
        .v2()
        .name("roost")
        .on_receive_request(
            async move |_req: v2::InitializeRequest, responder, _cx| {
                responder.respond(initialize())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: v2::NewSessionRequest, responder, cx| match new_session(&a1, &req) {
                Ok((response, notes)) => {
                    let sid = response.session_id.0.to_string();
                    responder.respond(response)?;
                    let ed = editor(&a1, &cx);
                    for note in notes {
                        ed.notify(&sid, super::updates::said(note))?;
                    }
                    Ok(())
                }
                Err(e) => responder.respond_with_error(e),
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: v2::PromptRequest, responder, cx| {
                let v1_req: v1::PromptRequest = match convert(&req) {
                    Ok(r) => r,
                    Err(e) => return responder.respond_with_error(e),
                };
                let (sid, words) = match super::turn::take(&a2, &v1_req) {
                    Ok(taken) => taken,
                    Err(e) => return responder.respond_with_error(e),
                };
                let ed = editor(&a2, &cx);
                let ids = ed.begin(&sid);
                responder.respond(v2::PromptResponse::new(ids.user.clone()))?;
                // The prompt is in: echoed, and the turn runs beside the
                // dispatch loop (it asks the editor for permissions).
                let user: v2::SessionUpdate = from_json(json!({
                    "sessionUpdate": "user_message",
                    "messageId": ids.user,
                    "content": req.prompt,
                }))?;
                ed.send(&sid, user)?;
                ed.send(
                    &sid,
                    v2::SessionUpdate::StateUpdate(v2::StateUpdate::Running(
                        v2::RunningStateUpdate::new(),
                    )),
                )?;
                let acp = Arc::clone(&a2);
                tokio::spawn(async move {
                    let ended = super::turn::go(&acp, &Editor::new(ed.clone()), &sid, words).await;
                    if let Err(e) = ed.send(&sid, idle(ended.map(|r| r.stop_reason))) {
                        tracing::warn!("the turn's end was not sent: {e}");
                    }
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: v2::ListSessionsRequest, responder, _cx| {
                let listed = convert(&req)
                    .and_then(|r: v1::ListSessionsRequest| super::history::list(&a3, &r))
                    .and_then(|r| {
                        let mut v = serde_json::to_value(&r)
                            .map_err(|e| Error::internal_error().data(e.to_string()))?;
                        if let Some(sessions) = v["sessions"].as_array_mut() {
                            for s in sessions {
                                s["additionalDirectories"] = json!([]);
                            }
                        }
                        from_json::<v2::ListSessionsResponse>(v)
                    });
                match listed {
                    Ok(r) => responder.respond(r),
                    Err(e) => responder.respond_with_error(e),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: v2::ResumeSessionRequest, responder, cx| {
                let ed = editor(&a4, &cx);
                let sid = req.session_id.0.to_string();
                let load = mcp_v1(&req.mcp_servers).and_then(|servers| {
                    from_json::<v1::LoadSessionRequest>(json!({
                        "sessionId": sid,
                        "cwd": req.cwd,
                        "mcpServers": servers,
                    }))
                });
                let resumed = match load {
                    Ok(r) => super::history::load(&a4, &Editor::new(ed.clone()), &r).await,
                    Err(e) => Err(e),
                };
                match resumed.and_then(|_| {
                    Ok(v2::ResumeSessionResponse::new()
                        .config_options(a4.options_v2(&sid)?)
                        .available_commands(available_commands()?))
                }) {
                    Ok(r) => {
                        responder.respond(r)?;
                        // After the history, where the session stands.
                        ed.send(&sid, idle(Ok(v1::StopReason::EndTurn)))
                    }
                    Err(e) => responder.respond_with_error(e),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: v2::SetSessionConfigOptionRequest, responder, _cx| {
                match set_config_option(&a5, &req) {
                    Ok(r) => responder.respond(r),
                    Err(e) => responder.respond_with_error(e),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: v2::CloseSessionRequest, responder, _cx| match a6
                .close(&req.session_id.0)
                .await
            {
                Ok(()) => responder.respond(v2::CloseSessionResponse::new()),
                Err(e) => responder.respond_with_error(e),
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |n: v2::CancelSessionNotification, _cx| {
                a7.cancel(&n.session_id.0).await;
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |_req: v2::LoginAuthRequest, responder, _cx| {
                // The API key comes from the environment or the config.
                let _ = &a8;
                responder.respond(v2::LoginAuthResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
}

/// Roost's slash commands in v2's shape.
fn available_commands() -> Result<Vec<v2::AvailableCommand>, Error> {
    let v1::SessionUpdate::AvailableCommandsUpdate(u) = super::commands::available() else {
        return Ok(Vec::new());
    };
    let v = serde_json::to_value(&u.available_commands)
        .map_err(|e| Error::internal_error().data(e.to_string()))?;
    let commands: Vec<Value> = v
        .as_array()
        .map(|a| a.iter().cloned().map(command_v2).collect())
        .unwrap_or_default();
    from_json(Value::Array(commands))
}

/// What Roost says it can do, in v2 (MCP servers over stdio and HTTP,
/// v2's transports; no client file system in v2).
fn initialize() -> v2::InitializeResponse {
    let session = v2::SessionCapabilities::new()
        .prompt(v2::PromptCapabilities::new())
        .mcp(
            v2::McpCapabilities::new()
                .stdio(v2::McpStdioCapabilities::new())
                .http(v2::McpHttpCapabilities::new()),
        );
    let auth = v2::AuthMethod::Agent(v2::AuthMethodAgent::new("api-key", "API key").description(
        "The model's API key comes from the environment (OPENAI_API_KEY, ANTHROPIC_API_KEY, …) or Roost's config; no login is needed."
            .to_owned(),
    ));
    let mut note = super::sandbox_note();
    if let Some(roost) = note.get_mut("roost") {
        roost["clientFs"] = json!("never used (draft v2 has no client file system)");
    }
    v2::InitializeResponse::new(
        ProtocolVersion::V2,
        v2::Implementation::new("roost", env!("CARGO_PKG_VERSION")),
    )
    .capabilities(v2::AgentCapabilities::new().session(session))
    .auth_methods(vec![auth])
    .meta(note)
}

/// v2's MCP servers as v1 writes them (a stdio one untagged, every list
/// present), for the one check both versions share.
fn mcp_v1(servers: &[v2::McpServer]) -> Result<Value, Error> {
    let v =
        serde_json::to_value(servers).map_err(|e| Error::internal_error().data(e.to_string()))?;
    let mut out = Vec::new();
    for mut s in v.as_array().cloned().unwrap_or_default() {
        if let Some(map) = s.as_object_mut() {
            if map.get("type").and_then(Value::as_str) == Some("stdio") {
                map.remove("type");
                map.entry("args").or_insert_with(|| json!([]));
                map.entry("env").or_insert_with(|| json!([]));
            } else {
                map.entry("headers").or_insert_with(|| json!([]));
            }
        }
        out.push(s);
    }
    Ok(Value::Array(out))
}

/// `session/new` in v2: v1's, its mode a config option, its commands in
/// the response.
fn new_session(
    acp: &Acp,
    req: &v2::NewSessionRequest,
) -> Result<(v2::NewSessionResponse, Vec<String>), Error> {
    let v1_req: v1::NewSessionRequest = from_json(json!({
        "cwd": req.cwd,
        "mcpServers": mcp_v1(&req.mcp_servers)?,
    }))?;
    let (made, notes) = acp.new_session(&v1_req)?;
    let sid = made.session_id.0.to_string();
    let response = v2::NewSessionResponse::new(sid.clone())
        .config_options(acp.options_v2(&sid)?)
        .available_commands(available_commands()?);
    Ok((response, notes))
}

/// `session/set_config_option` in v2: the mode, or v1's options.
fn set_config_option(
    acp: &Acp,
    req: &v2::SetSessionConfigOptionRequest,
) -> Result<v2::SetSessionConfigOptionResponse, Error> {
    let sid = req.session_id.0.to_string();
    if &*req.config_id.0 == "mode" {
        let value = serde_json::to_value(&req.value).map_err(|e| invalid(e.to_string()))?;
        let Some(mode) = value.as_str().or_else(|| value["value"].as_str()) else {
            return Err(invalid("the mode is chosen by its id (a string)"));
        };
        acp.sessions
            .set_mode(&sid, mode, acp.settings.modes_dir.as_deref())?;
    } else {
        let v1_req: v1::SetSessionConfigOptionRequest = convert(req)?;
        acp.set_config_option(&v1_req)?;
    }
    Ok(v2::SetSessionConfigOptionResponse::new(
        acp.options_v2(&sid)?,
    ))
}

#[cfg(test)]
mod tests;
