//! `roost history show --export`: Roo Code's task files, so a task can be
//! inspected with the same tools Roo users already have.

use std::path::Path;

use serde_json::{Value, json};

use super::{Store, StoreError};

fn write_json(dir: &Path, name: &str, v: &Value) -> Result<(), StoreError> {
    let path = dir.join(name);
    let text = serde_json::to_string_pretty(v).map_err(|e| StoreError::Export {
        path: path.clone(),
        source: e.into(),
    })?;
    std::fs::write(&path, text).map_err(|source| StoreError::Export { path, source })
}

/// Roo's name for condensation `upto_seq`.
fn condense_id(upto_seq: i64) -> String {
    format!("condense-{upto_seq}")
}

/// The API history in Roo's non-destructive condensing shape: each message
/// a condensation hid carries `condenseParent` (the id of the first summary
/// that replaced it), and each summary follows the messages it replaced as
/// a user message with `isSummary` and its `condenseId`. A summary that a
/// later one replaced carries that one's `condenseParent` too.
fn with_condensations(
    messages: Vec<super::StoredMessage>,
    condensations: &[(i64, String, i64)],
) -> Vec<Value> {
    let parent = |seq: i64| {
        condensations
            .iter()
            .find(|(upto, _, _)| *upto >= seq)
            .map(|(upto, _, _)| condense_id(*upto))
    };
    let summary = |i: usize, (upto, text, ts): &(i64, String, i64)| {
        let mut v = json!({
            "role": "user",
            "content": [{"type": "text", "text": text}],
            "ts": ts,
            "isSummary": true,
            "condenseId": condense_id(*upto),
        });
        if let Some((later, _, _)) = condensations.get(i + 1) {
            v["condenseParent"] = json!(condense_id(*later));
        }
        v
    };
    let mut out = Vec::with_capacity(messages.len() + condensations.len());
    let mut next = 0;
    for m in messages {
        while let Some(c) = condensations.get(next).filter(|c| c.0 < m.seq) {
            out.push(summary(next, c));
            next += 1;
        }
        let mut v = serde_json::to_value(&m.message).unwrap_or(Value::Null);
        v["ts"] = json!(m.created_at);
        if m.hidden
            && let Some(p) = parent(m.seq)
        {
            v["condenseParent"] = json!(p);
        }
        out.push(v);
    }
    for (i, c) in condensations.iter().enumerate().skip(next) {
        out.push(summary(i, c));
    }
    out
}

/// Write `api_conversation_history.json`, `ui_messages.json` and
/// `task_metadata.json` for `task` into `dir`.
pub fn write(store: &Store, task: &str, dir: &Path) -> Result<(), StoreError> {
    let record = store.get_task(task)?;
    std::fs::create_dir_all(dir).map_err(|source| StoreError::Export {
        path: dir.to_path_buf(),
        source,
    })?;
    let api = with_condensations(store.load_api(task, true)?, &store.condensations(task)?);
    write_json(dir, "api_conversation_history.json", &Value::Array(api))?;
    let ui: Vec<Value> = store
        .load_ui(task)?
        .into_iter()
        .map(|m| {
            let mut v = json!({"ts": m.ts, "type": m.kind, "text": m.text});
            v[m.kind.as_str()] = json!(m.subtype);
            if m.subtype == "condense_context" {
                v["contextCondense"] = json!({"summary": m.text});
            }
            v
        })
        .collect();
    write_json(dir, "ui_messages.json", &Value::Array(ui))?;
    let meta = json!({
        "files_in_context": [],
        "task": {
            "id": record.id,
            "parent_id": record.parent_id,
            "root_id": record.root_id,
            "mode": record.mode,
            "workspace": record.workspace,
            "status": record.status,
            "created_at": record.created_at,
            "updated_at": record.updated_at,
            "provider": record.provider,
            "model": record.model,
        },
        "usage": {
            "tokensIn": record.usage.input_tokens,
            "tokensOut": record.usage.output_tokens,
            "cacheReads": record.usage.cache_read_tokens,
            "cacheWrites": record.usage.cache_write_tokens,
            "totalCost": record.cost,
        },
        "todos": store.get_todos(task)?,
    });
    write_json(dir, "task_metadata.json", &meta)
}
