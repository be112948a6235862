//! `/v1/tasks/{id}/asks`: a task's open questions, and typed decisions
//! answering them by `ask_id`. An answer to a question that is not open is
//! `409`.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use roost_core::asks::{Answer, Ask};
use roost_protocol::api::{AskAnswered, AskView, Decision};
use roost_protocol::{EngineErrorCode, Grant};

use crate::auth::Caller;
use crate::error::ApiError;
use crate::extract::{Body, Query};
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
    let task = owned(&state, &caller, &id)?;
    let tasks: Vec<String> = if q.tree.unwrap_or(false) {
        state
            .engine
            .records()
            .subtree(&task.task.id)
            .map_err(|e| ApiError::from(roost_core::engine::EngineError::from(e)))?
            .into_iter()
            .map(|l| l.task.id)
            .collect()
    } else {
        vec![task.task.id]
    };
    let mut open = Vec::new();
    for t in &tasks {
        open.extend(state.engine.pending_asks(t)?);
    }
    open.sort_by_key(|a| a.created_at);
    Ok(Json(
        open.into_iter()
            .filter_map(|a| {
                let ask: Ask = serde_json::from_str(&a.payload).ok()?;
                Some(AskView {
                    ask_id: a.ask_id,
                    task_id: a.task_id,
                    kind: a.kind,
                    question: ask.question(),
                    ask,
                    created_at: a.created_at,
                })
            })
            .collect(),
    ))
}

/// What `decision` answers to `ask`, or why it does not fit.
fn answer(decision: Decision, ask: &Ask) -> Result<Answer, ApiError> {
    let approval = matches!(ask, Ask::Tool { .. } | Ask::Scope { .. } | Ask::Hook { .. });
    let wrong = |what: &str| {
        ApiError::invalid(format!(
            "`{what}` does not answer a `{}` question",
            ask.kind()
        ))
    };
    Ok(match decision {
        Decision::Approve if approval => Answer::Yes,
        Decision::ApproveForTask => match ask {
            Ask::Tool { group, .. } => Answer::Always {
                grant: Grant::Group(*group),
            },
            _ => return Err(wrong("approve_for_task")),
        },
        Decision::Deny { feedback } if approval => Answer::No { feedback },
        Decision::Answer { text } if !approval => Answer::Text { text },
        Decision::Accept if matches!(ask, Ask::Completion { .. }) => Answer::Yes,
        Decision::Approve => return Err(wrong("approve")),
        Decision::Deny { .. } => return Err(wrong("deny")),
        Decision::Answer { .. } => return Err(wrong("answer")),
        Decision::Accept => return Err(wrong("accept")),
    })
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
    let task = owned(&state, &caller, &id)?;
    // An interrupted task's loop is not there to take the answer yet (it
    // resumes and asks again by the same id): try again then, rather
    // than have the answer miss the resumed question.
    if task.interrupted {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            EngineErrorCode::Conflict,
            "the task is not running yet; answer once it has resumed (it asks again by the same ask_id)",
        ));
    }
    let open = state.engine.pending_asks(&task.task.id)?;
    let Some(stored) = open.into_iter().find(|a| a.ask_id == ask_id) else {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            EngineErrorCode::Conflict,
            format!("task {id} has no open question {ask_id}"),
        ));
    };
    let ask: Ask = serde_json::from_str(&stored.payload)
        .map_err(|_| ApiError::invalid("the question does not decode"))?;
    let answer = answer(decision.clone(), &ask)?;
    state.engine.answer(&task.task.id, &ask_id, answer)?;
    let now = owned(&state, &caller, &task.task.id)?;
    Ok(Json(AskAnswered {
        ask_id,
        task_id: stored.task_id,
        kind: stored.kind,
        question: ask.question(),
        decision,
        task: crate::tasks::view(&state, now),
    }))
}
