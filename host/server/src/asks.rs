//! `/v1/tasks/{id}/asks`: a task's open questions, and typed decisions
//! answering them by `ask_id`. An answer to a question that is not open is
//! `409`.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use roost_protocol::api::{AskAnswered, AskView, Decision};

use crate::auth::Caller;
use crate::error::ApiError;
use crate::extract::{Body, Path, Query};
use crate::state::ServerState;
use crate::tasks::owned;
use serde::Deserialize;

/// `GET /v1/tasks/{id}/asks` query.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AsksQuery {
    tree: Option<bool>,
}

/// `GET /v1/tasks/{id}/asks`: the open questions, oldest first; with
/// `tree=true`, those of its subtasks too (one approver for a tree).
pub async fn list(
    State(state): State<Arc<ServerState>>,
    caller: Caller,
    Path(id): Path<String>,
    Query(q): Query<AsksQuery>,
) -> Result<Json<Vec<AskView>>, ApiError> {
    Ok(Json(
        state
            .session(&caller.tenant)
            .asks(&id, q.tree.unwrap_or(false))
            .await?,
    ))
}

/// `POST /v1/tasks/{id}/asks/{ask_id}`: the answer is recorded (and
/// handed to the loop waiting for it); the question, the decision and the
/// task as it stands then are returned.
pub async fn decide(
    State(state): State<Arc<ServerState>>,
    caller: Caller,
    Path((id, ask_id)): Path<(String, String)>,
    Body(decision): Body<Decision>,
) -> Result<Json<AskAnswered>, ApiError> {
    let session = state.session(&caller.tenant);
    let decided = session.decide(&id, &ask_id, decision.clone()).await?;
    let now = owned(&state, &caller, &id).await?;
    Ok(Json(AskAnswered {
        ask_id,
        task_id: decided.stored.task_id,
        kind: decided.stored.kind,
        question: decided.ask.question(),
        decision,
        task: crate::tasks::view(&state, now),
    }))
}
