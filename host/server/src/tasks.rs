//! `/v1/tasks`: create, list, show, the histories and todos, queued
//! messages, cancel and resume. A task of another tenant answers `404`.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use roost_core::engine::TaskFilter;
use roost_core::engine::{Endpoint, Listed, ResumeSpec, TaskSpec};
use roost_core::session::Created;
use roost_core::task::ApprovalPolicy;
use roost_protocol::api::{
    ApiMessageView, CheckpointDiff, CreateTask, PostMessage, RestoreCheckpoint, TaskList, TaskView,
    UiMessage,
};
use roost_protocol::{Checkpoint, GroupRecord, RestoreReport};
use roost_protocol::{TaskStatus, TodoItem};
use serde::Deserialize;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::extract::{Body, Path, Query};
use crate::state::ServerState;

/// The task `id` when it is the caller's (exactly that id: no prefixes,
/// which would let one tenant probe another's ids).
pub(crate) async fn owned(
    state: &ServerState,
    caller: &Caller,
    id: &str,
) -> Result<Listed, ApiError> {
    Ok(state.session(&caller.tenant).task(id).await?)
}

/// A store error as the API says it.
fn store(e: roost_core::engine::StoreError) -> ApiError {
    ApiError::from(roost_core::engine::EngineError::from(e))
}

/// `listed` as the API shows it: `queued` while it waits to start, and
/// `interrupted` only when nothing will run it unless asked to.
///
/// The store calls a task interrupted when it says it runs but no process
/// holds its claim; a loop takes that claim only once it runs. So a task
/// this server has just created, or holds waiting for a slot, has no claim
/// yet and is not interrupted; nor, on a shared store, is a tenant's task
/// no host holds: that is the work queue, and a host takes it from there.
pub(crate) fn view(state: &ServerState, listed: Listed) -> TaskView {
    let t = listed.task;
    let unclaimed = listed.interrupted && !state.holds(&t.id);
    let in_work_queue =
        unclaimed && state.engine.is_shared() && t.parent_id.is_none() && t.owner.is_some();
    TaskView {
        queued: state.is_queued(&t.id) || in_work_queue,
        interrupted: unclaimed && !in_work_queue,
        task: t,
    }
}

/// `POST /v1/tasks`.
pub async fn create(
    State(state): State<Arc<ServerState>>,
    caller: Caller,
    headers: axum::http::HeaderMap,
    Body(req): Body<CreateTask>,
) -> Result<(StatusCode, Json<TaskView>), ApiError> {
    let workspace = crate::workspace::resolve(&caller, &req.workspace)?;
    state.check_capacity()?;
    let approval = req.approve.map(|groups| {
        let mut p = ApprovalPolicy::default();
        p.auto_groups.extend(groups);
        p
    });
    let spec = TaskSpec {
        prompt: req.prompt,
        workspace: workspace.path.clone(),
        mode: req.mode.unwrap_or_default(),
        approval,
        max_turns: None,
        delegation: req.delegation.unwrap_or_default(),
        endpoint: Endpoint {
            profile: req.profile,
            ..Endpoint::default()
        },
        // The caller's trace, continued (W3C trace context; an invalid
        // header is ignored).
        traceparent: headers
            .get("traceparent")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
    };
    // On a shared store the work queue gives it to a host with room
    // (this one too); else it runs here.
    let id = match state.session(&caller.tenant).create(&spec).await? {
        Created::Queued(id) => id,
        Created::Here(id) => {
            state.schedule(id.clone());
            id
        }
    };
    let task = owned(&state, &caller, &id).await?;
    Ok((StatusCode::CREATED, Json(view(&state, task))))
}

/// `GET /v1/tasks` query.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    status: Option<String>,
    limit: Option<usize>,
    cursor: Option<String>,
}

/// `GET /v1/tasks`: the caller's tasks, newest first, a page at a time.
pub async fn list(
    State(state): State<Arc<ServerState>>,
    caller: Caller,
    Query(q): Query<ListQuery>,
) -> Result<Json<TaskList>, ApiError> {
    let status = match q.status.as_deref() {
        None => None,
        Some(s) => Some(
            TaskStatus::parse(s)
                .ok_or_else(|| ApiError::invalid(format!("unknown status `{s}`")))?,
        ),
    };
    let limit = q.limit.unwrap_or(50).clamp(1, 500);
    let cursor = match q.cursor.as_deref() {
        None => None,
        Some(c) => {
            let (at, id) = c
                .split_once('.')
                .and_then(|(a, id)| a.parse::<i64>().ok().map(|a| (a, id)))
                .ok_or_else(|| ApiError::invalid("a cursor is what `next_cursor` said"))?;
            Some((at, id.to_owned()))
        }
    };
    let page = state
        .engine
        .records()
        .page(
            &TaskFilter {
                owner: Some(&caller.tenant),
                status,
                before: cursor.as_ref().map(|(a, id)| (*a, id.as_str())),
            },
            limit,
        )
        .await
        .map_err(store)?;
    Ok(Json(TaskList {
        tasks: page.tasks.into_iter().map(|t| view(&state, t)).collect(),
        next_cursor: page.next.map(|(at, id)| format!("{at}.{id}")),
    }))
}

/// `GET /v1/tasks/{id}/children`: the subtasks it started, oldest first.
pub async fn children(
    State(state): State<Arc<ServerState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Vec<TaskView>>, ApiError> {
    let task = owned(&state, &caller, &id).await?;
    let kids = state
        .engine
        .records()
        .children(&task.task.id)
        .await
        .map_err(store)?;
    Ok(Json(kids.into_iter().map(|t| view(&state, t)).collect()))
}

/// `GET /v1/tasks/{id}/checkpoints`: its checkpoints, oldest first.
pub async fn checkpoints(
    State(state): State<Arc<ServerState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Vec<Checkpoint>>, ApiError> {
    let task = owned(&state, &caller, &id).await?;
    Ok(Json(state.engine.read_checkpoints(&task.task.id).await?))
}

/// `GET /v1/tasks/{id}/checkpoints/{cp}/diff`: what changed since.
pub async fn checkpoint_diff(
    State(state): State<Arc<ServerState>>,
    caller: Caller,
    Path((id, cp)): Path<(String, u32)>,
) -> Result<Json<CheckpointDiff>, ApiError> {
    let task = owned(&state, &caller, &id).await?;
    let diff = state.engine.checkpoint_diff(&task.task.id, cp).await?;
    Ok(Json(CheckpointDiff {
        checkpoint: cp,
        diff,
    }))
}

/// `POST /v1/tasks/{id}/checkpoints/{cp}/restore`: back to a checkpoint
/// (409 while the task runs; conflicts are in the report).
pub async fn restore_checkpoint(
    State(state): State<Arc<ServerState>>,
    caller: Caller,
    Path((id, cp)): Path<(String, u32)>,
    Body(req): Body<RestoreCheckpoint>,
) -> Result<Json<RestoreReport>, ApiError> {
    let task = owned(&state, &caller, &id).await?;
    if state.is_queued(&task.task.id) {
        return Err(ApiError::from(
            roost_core::engine::EngineError::AlreadyStarted(task.task.id),
        ));
    }
    let report = state
        .engine
        .restore_checkpoint(&task.task.id, cp, req.mode, req.force)
        .await?;
    Ok(Json(report))
}

/// `GET /v1/tasks/{id}/groups`: the parallel groups it started, oldest
/// first.
pub async fn groups(
    State(state): State<Arc<ServerState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Vec<GroupRecord>>, ApiError> {
    let task = owned(&state, &caller, &id).await?;
    let groups = state
        .engine
        .records()
        .groups(&task.task.id)
        .await
        .map_err(store)?;
    Ok(Json(groups))
}

/// `GET /v1/tasks/{id}`.
pub async fn show(
    State(state): State<Arc<ServerState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<TaskView>, ApiError> {
    Ok(Json(view(&state, owned(&state, &caller, &id).await?)))
}

/// `GET /v1/tasks/{id}/messages`: the UI history.
pub async fn messages(
    State(state): State<Arc<ServerState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Vec<UiMessage>>, ApiError> {
    let task = owned(&state, &caller, &id).await?;
    Ok(Json(
        state
            .engine
            .records()
            .ui_messages(&task.task.id)
            .await
            .map_err(store)?,
    ))
}

/// `GET /v1/tasks/{id}/api-messages`: what the model saw.
pub async fn api_messages(
    State(state): State<Arc<ServerState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Vec<ApiMessageView>>, ApiError> {
    let task = owned(&state, &caller, &id).await?;
    let rows = state
        .engine
        .records()
        .api_messages(&task.task.id)
        .await
        .map_err(store)?;
    Ok(Json(
        rows.into_iter()
            .map(|m| ApiMessageView {
                seq: m.seq,
                role: serde_json::to_value(m.message.role)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                content: serde_json::to_value(&m.message.content).unwrap_or_default(),
                hidden: m.hidden,
            })
            .collect(),
    ))
}

/// `GET /v1/tasks/{id}/todos`.
pub async fn todos(
    State(state): State<Arc<ServerState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Vec<TodoItem>>, ApiError> {
    let task = owned(&state, &caller, &id).await?;
    Ok(Json(
        state
            .engine
            .records()
            .todos(&task.task.id)
            .await
            .map_err(store)?,
    ))
}

/// `POST /v1/tasks/{id}/messages`: a message for the task's next turn; a
/// stopped or completed task is resumed with it.
pub async fn post_message(
    State(state): State<Arc<ServerState>>,
    caller: Caller,
    Path(id): Path<String>,
    Body(req): Body<PostMessage>,
) -> Result<StatusCode, ApiError> {
    let session = state.session(&caller.tenant);
    let task = session.task(&id).await?;
    if req.text.trim().is_empty() {
        return Err(ApiError::invalid("the message is empty"));
    }
    let id = task.task.id;
    if session.send_message(&id, &req.text).await? {
        return Ok(StatusCode::ACCEPTED);
    }
    state.check_capacity()?;
    let prepared = session
        .resume(
            &id,
            &ResumeSpec {
                message: Some(req.text),
                ..ResumeSpec::default()
            },
        )
        .await?;
    state.schedule(prepared.id);
    Ok(StatusCode::ACCEPTED)
}

/// `POST /v1/tasks/{id}/cancel`: the task stops after its current step.
pub async fn cancel(
    State(state): State<Arc<ServerState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    state
        .session(&caller.tenant)
        .cancel(&id, "cancelled over the API")
        .await?;
    Ok(StatusCode::ACCEPTED)
}

/// `POST /v1/tasks/{id}/resume`: an interrupted, aborted, paused or
/// failed task continues from its history.
pub async fn resume(
    State(state): State<Arc<ServerState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<TaskView>), ApiError> {
    let session = state.session(&caller.tenant);
    session.task(&id).await?;
    state.check_capacity()?;
    let prepared = session.resume(&id, &ResumeSpec::default()).await?;
    state.schedule(prepared.id.clone());
    let task = owned(&state, &caller, &prepared.id).await?;
    Ok((StatusCode::ACCEPTED, Json(view(&state, task))))
}
