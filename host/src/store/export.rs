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

/// Write `api_conversation_history.json`, `ui_messages.json` and
/// `task_metadata.json` for `task` into `dir`.
pub fn write(store: &Store, task: &str, dir: &Path) -> Result<(), StoreError> {
    let record = store.get_task(task)?;
    std::fs::create_dir_all(dir).map_err(|source| StoreError::Export {
        path: dir.to_path_buf(),
        source,
    })?;
    let api: Vec<Value> = store
        .load_api(task, true)?
        .into_iter()
        .map(|m| {
            let mut v = serde_json::to_value(&m.message).unwrap_or(Value::Null);
            v["ts"] = json!(m.created_at);
            v
        })
        .collect();
    write_json(dir, "api_conversation_history.json", &Value::Array(api))?;
    let ui: Vec<Value> = store
        .load_ui(task)?
        .into_iter()
        .map(|m| {
            let mut v = json!({"ts": m.ts, "type": m.kind, "text": m.text});
            v[m.kind.as_str()] = json!(m.subtype);
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
