//! The API as one table: each route's method, path, handler and
//! documentation. The router and the OpenAPI 3.1 document are both built
//! from it, so they cannot disagree; the schemas come from the protocol
//! types themselves (schemars, JSON Schema 2020-12, which OpenAPI 3.1
//! uses).

use std::sync::Arc;

use axum::Router;
use axum::routing::{MethodRouter, get, post};
use roost_protocol::api::{
    AskAnswered, AskView, CheckpointDiff, CreateTask, Decision, Health, Me, ModeView, PluginView,
    PostMessage, ProfileView, RestoreCheckpoint, TaskList, TaskView, ToolView, UiMessage,
};
use roost_protocol::{Checkpoint, Envelope, ErrorBody, GroupRecord, RestoreReport};
use schemars::JsonSchema;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};

use crate::state::ServerState;
use crate::{asks, catalog, events, tasks};

/// A schema (a `$ref` into the document's components) for `T`.
type SchemaFn = fn(&mut SchemaGenerator) -> Value;

fn schema<T: JsonSchema>(g: &mut SchemaGenerator) -> Value {
    g.subschema_for::<T>().to_value()
}

fn array<T: JsonSchema>(g: &mut SchemaGenerator) -> Value {
    json!({"type": "array", "items": g.subschema_for::<T>().to_value()})
}

fn any_json(_: &mut SchemaGenerator) -> Value {
    json!({})
}

/// What a route's document says.
struct Doc {
    summary: &'static str,
    /// Needs a token (every route but health and readiness).
    auth: bool,
    /// Query parameters: name, required, description.
    query: &'static [(&'static str, bool, &'static str)],
    /// The JSON body it takes.
    body: Option<SchemaFn>,
    /// Its success status, and the JSON it returns (none: no body).
    ok: (u16, Option<SchemaFn>),
    /// It answers with Server-Sent Events.
    sse: bool,
    /// When it answers `503` besides a full queue (the store is down).
    unavailable: Option<&'static str>,
}

/// One route.
struct Route {
    method: &'static str,
    path: &'static str,
    handler: MethodRouter<Arc<ServerState>>,
    doc: Doc,
}

const DEFAULTS: Doc = Doc {
    summary: "",
    auth: true,
    query: &[],
    body: None,
    ok: (200, None),
    sse: false,
    unavailable: None,
};

/// Every route of `/v1`.
fn routes() -> Vec<Route> {
    vec![
        Route {
            method: "post",
            path: "/tasks",
            handler: post(tasks::create),
            doc: Doc {
                summary: "Create a task (it starts when a slot is free)",
                body: Some(schema::<CreateTask>),
                ok: (201, Some(schema::<TaskView>)),
                ..DEFAULTS
            },
        },
        Route {
            method: "get",
            path: "/tasks",
            handler: get(tasks::list),
            doc: Doc {
                summary: "The caller's tasks, newest first, a page at a time",
                query: &[
                    ("status", false, "Only tasks with this status"),
                    ("limit", false, "At most this many (1 to 500, default 50)"),
                    ("cursor", false, "The previous page's next_cursor"),
                ],
                ok: (200, Some(schema::<TaskList>)),
                ..DEFAULTS
            },
        },
        Route {
            method: "get",
            path: "/tasks/{id}",
            handler: get(tasks::show),
            doc: Doc {
                summary: "One task",
                ok: (200, Some(schema::<TaskView>)),
                ..DEFAULTS
            },
        },
        Route {
            method: "get",
            path: "/tasks/{id}/children",
            handler: get(tasks::children),
            doc: Doc {
                summary: "The subtasks the task started (new_task), oldest first",
                ok: (200, Some(array::<TaskView>)),
                ..DEFAULTS
            },
        },
        Route {
            method: "get",
            path: "/tasks/{id}/groups",
            handler: get(tasks::groups),
            doc: Doc {
                summary: "The parallel groups the task started (new_parallel_tasks), oldest first",
                ok: (200, Some(array::<GroupRecord>)),
                ..DEFAULTS
            },
        },
        Route {
            method: "get",
            path: "/tasks/{id}/checkpoints",
            handler: get(tasks::checkpoints),
            doc: Doc {
                summary: "The task's checkpoints of its workspace, oldest first",
                ok: (200, Some(array::<Checkpoint>)),
                ..DEFAULTS
            },
        },
        Route {
            method: "get",
            path: "/tasks/{id}/checkpoints/{cp}/diff",
            handler: get(tasks::checkpoint_diff),
            doc: Doc {
                summary: "What changed in the workspace since a checkpoint",
                ok: (200, Some(schema::<CheckpointDiff>)),
                ..DEFAULTS
            },
        },
        Route {
            method: "post",
            path: "/tasks/{id}/checkpoints/{cp}/restore",
            handler: post(tasks::restore_checkpoint),
            doc: Doc {
                summary: "Back to a checkpoint: the files the task changed since (commands' too), the conversation, or both; files someone else changed since are conflicts, left alone unless forced",
                body: Some(schema::<RestoreCheckpoint>),
                ok: (200, Some(schema::<RestoreReport>)),
                ..DEFAULTS
            },
        },
        Route {
            method: "get",
            path: "/tasks/{id}/messages",
            handler: get(tasks::messages),
            doc: Doc {
                summary: "The task's UI history (Roo's say/ask rows)",
                ok: (200, Some(array::<UiMessage>)),
                ..DEFAULTS
            },
        },
        Route {
            method: "post",
            path: "/tasks/{id}/messages",
            handler: post(tasks::post_message),
            doc: Doc {
                summary: "A message for the task's next turn (continues a stopped or completed task)",
                body: Some(schema::<PostMessage>),
                ok: (202, None),
                ..DEFAULTS
            },
        },
        Route {
            method: "get",
            path: "/tasks/{id}/api-messages",
            handler: get(tasks::api_messages),
            doc: Doc {
                summary: "The task's API history (what the model saw)",
                ok: (200, Some(any_json)),
                ..DEFAULTS
            },
        },
        Route {
            method: "get",
            path: "/tasks/{id}/todos",
            handler: get(tasks::todos),
            doc: Doc {
                summary: "The task's todo list",
                ok: (200, Some(array::<roost_protocol::TodoItem>)),
                ..DEFAULTS
            },
        },
        Route {
            method: "post",
            path: "/tasks/{id}/cancel",
            handler: post(tasks::cancel),
            doc: Doc {
                summary: "Stop the task after its current step (it stays resumable)",
                ok: (202, None),
                ..DEFAULTS
            },
        },
        Route {
            method: "post",
            path: "/tasks/{id}/resume",
            handler: post(tasks::resume),
            doc: Doc {
                summary: "Continue an interrupted, aborted, paused or failed task",
                ok: (202, Some(schema::<TaskView>)),
                ..DEFAULTS
            },
        },
        Route {
            method: "get",
            path: "/tasks/{id}/asks",
            handler: get(asks::list),
            doc: Doc {
                summary: "The task's open questions, oldest first (with tree=true, its subtasks' too)",
                query: &[(
                    "tree",
                    false,
                    "true: the questions of the task's subtasks too",
                )],
                ok: (200, Some(array::<AskView>)),
                ..DEFAULTS
            },
        },
        Route {
            method: "post",
            path: "/tasks/{id}/asks/{ask_id}",
            handler: post(asks::decide),
            doc: Doc {
                summary: "Answer an open question with a typed decision (409 when it is not open); returns the question, the decision recorded and the task as it stands",
                body: Some(schema::<Decision>),
                ok: (200, Some(schema::<AskAnswered>)),
                ..DEFAULTS
            },
        },
        Route {
            method: "get",
            path: "/tasks/{id}/events",
            handler: get(events::task_events),
            doc: Doc {
                summary: "The task's events as Server-Sent Events; `id:` is the event's seq, and Last-Event-ID resumes after it",
                ok: (200, Some(schema::<Envelope>)),
                sse: true,
                ..DEFAULTS
            },
        },
        Route {
            method: "get",
            path: "/events",
            handler: get(events::all_events),
            doc: Doc {
                summary: "Task-level events (created, started, a question asked, ended) of all the caller's tasks, as Server-Sent Events",
                ok: (200, Some(schema::<Envelope>)),
                sse: true,
                ..DEFAULTS
            },
        },
        Route {
            method: "get",
            path: "/me",
            handler: get(catalog::me),
            doc: Doc {
                summary: "Who the token acts for: its tenant and workspace root",
                ok: (200, Some(schema::<Me>)),
                ..DEFAULTS
            },
        },
        Route {
            method: "get",
            path: "/profiles",
            handler: get(catalog::profiles),
            doc: Doc {
                summary: "The model profiles a task may name (names and models; the default marked)",
                ok: (200, Some(array::<ProfileView>)),
                ..DEFAULTS
            },
        },
        Route {
            method: "get",
            path: "/modes",
            handler: get(catalog::modes),
            doc: Doc {
                summary: "The modes of a workspace",
                query: &[("workspace", true, "A workspace inside the caller's root")],
                ok: (200, Some(array::<ModeView>)),
                ..DEFAULTS
            },
        },
        Route {
            method: "get",
            path: "/intents",
            handler: get(catalog::intents),
            doc: Doc {
                summary: "The intents of a workspace (.orchestration/active_intents.yaml)",
                query: &[("workspace", true, "A workspace inside the caller's root")],
                ok: (200, Some(any_json)),
                ..DEFAULTS
            },
        },
        Route {
            method: "get",
            path: "/trace",
            handler: get(catalog::trace),
            doc: Doc {
                summary: "The agent trace of a workspace, oldest first",
                query: &[("workspace", true, "A workspace inside the caller's root")],
                ok: (200, Some(any_json)),
                ..DEFAULTS
            },
        },
        Route {
            method: "get",
            path: "/tools",
            handler: get(catalog::tools),
            doc: Doc {
                summary: "The tools tasks may be offered",
                ok: (200, Some(array::<ToolView>)),
                ..DEFAULTS
            },
        },
        Route {
            method: "get",
            path: "/plugins",
            handler: get(catalog::plugins),
            doc: Doc {
                summary: "The installed plugins",
                ok: (200, Some(array::<PluginView>)),
                ..DEFAULTS
            },
        },
        Route {
            method: "get",
            path: "/health",
            handler: get(catalog::health),
            doc: Doc {
                summary: "The process answers",
                auth: false,
                ok: (200, Some(schema::<Health>)),
                ..DEFAULTS
            },
        },
        Route {
            method: "get",
            path: "/ready",
            handler: get(catalog::ready),
            doc: Doc {
                summary: "The task store answers",
                auth: false,
                ok: (200, Some(schema::<Health>)),
                unavailable: Some(
                    "The task store does not answer (a shared database is down); retry after Retry-After",
                ),
                ..DEFAULTS
            },
        },
        Route {
            method: "get",
            path: "/openapi.json",
            handler: get(openapi_json),
            doc: Doc {
                summary: "This document",
                auth: false,
                ok: (200, Some(any_json)),
                ..DEFAULTS
            },
        },
    ]
}

/// The `/v1` router.
pub fn v1() -> Router<Arc<ServerState>> {
    routes()
        .into_iter()
        .fold(Router::new(), |r, route| r.route(route.path, route.handler))
}

/// `GET /v1/openapi.json`.
async fn openapi_json() -> axum::Json<Value> {
    axum::Json(openapi())
}

/// The OpenAPI 3.1 document of the API.
pub fn openapi() -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.definitions_path = "/components/schemas".into();
    settings.meta_schema = None;
    let mut g = settings.into_generator();
    let error = schema::<ErrorBody>(&mut g);
    let mut paths: Map<String, Value> = Map::new();
    for r in routes() {
        let d = &r.doc;
        let mut op = Map::new();
        op.insert("summary".into(), json!(d.summary));
        op.insert(
            "operationId".into(),
            json!(format!(
                "{}{}",
                r.method,
                r.path.replace(['/', '{', '}', '-', '.'], "_")
            )),
        );
        let mut params: Vec<Value> = r
            .path
            .split('/')
            .filter_map(|seg| seg.strip_prefix('{')?.strip_suffix('}'))
            .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
            .collect();
        params.extend(d.query.iter().map(|(name, required, description)| {
            json!({"name": name, "in": "query", "required": required, "description": description, "schema": {"type": "string"}})
        }));
        if d.sse {
            params.push(json!({"name": "Last-Event-ID", "in": "header", "required": false, "description": "Resume after this event's seq", "schema": {"type": "string"}}));
        }
        if !params.is_empty() {
            op.insert("parameters".into(), Value::Array(params));
        }
        if let Some(body) = d.body {
            op.insert(
                "requestBody".into(),
                json!({"required": true, "content": {"application/json": {"schema": body(&mut g)}}}),
            );
        }
        let mut responses = Map::new();
        let (status, returns) = d.ok;
        let ok = match (returns, d.sse) {
            (Some(f), true) => {
                json!({"description": "Events: each `data:` line is one event envelope (x-roost-event)", "content": {"text/event-stream": {"schema": {"type": "string"}, "x-roost-event": f(&mut g)}}})
            }
            (Some(f), false) => {
                json!({"description": "OK", "content": {"application/json": {"schema": f(&mut g)}}})
            }
            (None, _) => json!({"description": "Done"}),
        };
        responses.insert(status.to_string(), ok);
        let err = |what: &str| json!({"description": what, "content": {"application/json": {"schema": error.clone()}}});
        responses.insert("400".into(), err("Malformed request"));
        if d.auth {
            responses.insert("401".into(), err("No valid token"));
            responses.insert(
                "403".into(),
                err("Outside the caller's root, a cross-site request, or a Host this server does not answer to"),
            );
            responses.insert("404".into(), err("No such task for this caller"));
        } else {
            responses.insert(
                "403".into(),
                err("A Host this server does not answer to (not its own name, an --allowed-host, or loopback)"),
            );
        }
        if r.method == "post" {
            responses.insert("409".into(), err("The task's state does not allow it"));
            responses.insert("413".into(), err("The body is too large"));
            responses.insert("415".into(), err("The body is not JSON"));
            responses.insert(
                "503".into(),
                err("At capacity, or the task store does not answer; retry after Retry-After"),
            );
        } else if d.auth {
            responses.insert(
                "503".into(),
                err("The task store does not answer (a shared database is down); retry after Retry-After"),
            );
        }
        if let Some(why) = d.unavailable {
            responses.insert("503".into(), err(why));
        }
        responses.insert(
            "429".into(),
            err("Too many requests; retry after Retry-After"),
        );
        op.insert("responses".into(), Value::Object(responses));
        if d.auth {
            op.insert("security".into(), json!([{"bearer": []}]));
        }
        let entry = paths
            .entry(format!("/v1{}", r.path))
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(m) = entry {
            m.insert(r.method.into(), Value::Object(op));
        }
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Roost",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Run sandboxed agent tasks on a shared server: create, follow over SSE, approve by ask_id."
        },
        "paths": paths,
        "components": {
            "schemas": g.take_definitions(true),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `docs/openapi.json` is the document the code makes; regenerate with
    /// `ROOST_WRITE_OPENAPI=1 cargo test -p roost-server`.
    #[test]
    fn the_committed_openapi_document_matches_the_code() {
        let doc = roost_protocol::sorted_pretty(&openapi());
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/openapi.json");
        if std::env::var_os("ROOST_WRITE_OPENAPI").is_some() {
            std::fs::write(&path, &doc).expect("write docs/openapi.json");
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == doc,
            "docs/openapi.json is not the API's document; regenerate it with ROOST_WRITE_OPENAPI=1 cargo test -p roost-server"
        );
    }

    /// Every route is in the document once, with its method.
    #[test]
    fn every_route_is_documented() {
        let doc = openapi();
        for r in routes() {
            assert!(
                doc["paths"][format!("/v1{}", r.path)][r.method].is_object(),
                "{} {}",
                r.method,
                r.path
            );
        }
        assert_eq!(doc["openapi"], "3.1.0");
        assert!(doc["components"]["schemas"]["CreateTask"].is_object());
    }
}
