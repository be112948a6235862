//! `GET /v1/tasks/{id}/events`: Server-Sent Events. Each recorded event
//! carries `id:` = its durable per-task `seq`; a client reconnecting with
//! `Last-Event-ID: N` gets every event after N from the store, then the
//! live ones, none missed or repeated. Streamed deltas (no seq) go without
//! `id:`. A client that falls behind is disconnected (and reconnects with
//! `Last-Event-ID`): it never slows a task.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::{Stream, StreamExt};
use roost_core::events::Envelope;
use tokio_stream::wrappers::BroadcastStream;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::extract::Path;
use crate::state::ServerState;

/// The SSE form of `envelope`.
fn event(envelope: &Envelope) -> Event {
    let data = serde_json::to_string(envelope).unwrap_or_default();
    let e = Event::default().data(data);
    match envelope.seq {
        Some(seq) => e.id(seq.to_string()),
        None => e,
    }
}

/// `GET /v1/tasks/{id}/events`.
pub async fn task_events(
    State(state): State<Arc<ServerState>>,
    caller: Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let after = match headers.get("last-event-id") {
        None => 0,
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok())
            .filter(|n| *n >= 0)
            .ok_or_else(|| ApiError::invalid("Last-Event-ID is an event's id (a number)"))?,
    };
    let follow = state.session(&caller.tenant).follow(&id, after).await?;
    let stream = follow
        .into_stream()
        .map(|env| Ok(event(&env)))
        .take_until(state.stopped());
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

/// `GET /v1/events`: task-level events (created, started, a question
/// asked, ended) of all the caller's tasks, live.
pub async fn all_events(
    State(state): State<Arc<ServerState>>,
    caller: Caller,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let tenant = caller.tenant;
    let stopped = state.stopped();
    let stream = BroadcastStream::new(state.feed.subscribe())
        .take_while(|r| std::future::ready(r.is_ok()))
        .filter_map(move |r| {
            std::future::ready(match r {
                Ok(item) if item.owner == tenant => Some(Ok(event(&item.envelope))),
                _ => None,
            })
        })
        .take_until(stopped);
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}
