//! Tool-call assembly from streamed argument deltas.
//!
//! Arguments arrive as JSON text in pieces. Each call's buffer grows by
//! appending; a best-effort partial parse (jiter's partial mode) is made
//! only when the buffer has doubled since the last one, so the UI sees the
//! arguments take shape (the path before the content) while the total work
//! stays linear in the argument size. The final parse is strict: malformed
//! JSON becomes an error the model can see, never a call that runs.

use std::collections::BTreeMap;

use jiter::{JsonValue, PartialMode};

/// First buffer size at which a partial parse is attempted.
const FIRST_PARTIAL_AT: usize = 16;

/// A complete tool call as assembled from the stream.
#[derive(Debug, Clone, PartialEq)]
pub struct AssembledCall {
    /// Call id (generated when the provider sent none).
    pub id: String,
    /// Tool name.
    pub name: String,
    /// The parsed arguments, or why they could not be parsed.
    pub args: Result<serde_json::Value, String>,
    /// The raw argument text, as the model sent it.
    pub raw_args: String,
}

#[derive(Debug, Default)]
struct Pending {
    id: String,
    name: String,
    buf: String,
    next_partial_at: usize,
}

/// Assembles any number of interleaved tool calls, keyed by stream index.
#[derive(Debug, Default)]
pub struct ToolCallAssembler {
    calls: BTreeMap<u32, Pending>,
}

impl ToolCallAssembler {
    /// A fresh assembler for one reply.
    pub fn new() -> Self {
        Self::default()
    }

    /// Record the start of call `index` (or repeated id/name deltas, which
    /// some servers send on every chunk: they are ignored once known).
    /// Returns true when this is the first time the call is seen.
    pub fn start(&mut self, index: u32, id: Option<&str>, name: Option<&str>) -> bool {
        let fresh = !self.calls.contains_key(&index);
        let p = self.calls.entry(index).or_insert_with(|| Pending {
            next_partial_at: FIRST_PARTIAL_AT,
            ..Pending::default()
        });
        if let Some(id) = id.filter(|s| !s.is_empty())
            && p.id.is_empty()
        {
            p.id = id.to_owned();
        }
        if let Some(name) = name.filter(|s| !s.is_empty())
            && p.name.is_empty()
        {
            p.name = name.to_owned();
        }
        fresh
    }

    /// Append an argument delta of call `index`; returns a partial parse of
    /// the arguments so far when one is due (amortized linear cost).
    pub fn push_args(&mut self, index: u32, delta: &str) -> Option<serde_json::Value> {
        let p = self.calls.entry(index).or_insert_with(|| Pending {
            next_partial_at: FIRST_PARTIAL_AT,
            ..Pending::default()
        });
        p.buf.push_str(delta);
        if p.buf.len() < p.next_partial_at {
            return None;
        }
        p.next_partial_at = p.buf.len().saturating_mul(2);
        partial(&p.buf)
    }

    /// The id and name of call `index`, once known.
    pub fn id_and_name(&self, index: u32) -> Option<(&str, &str)> {
        self.calls
            .get(&index)
            .map(|p| (p.id.as_str(), p.name.as_str()))
    }

    /// Whether any call was started.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// Finish every call: strict parse of each buffer, in index order.
    /// `make_id` supplies ids for calls the provider left unnamed.
    pub fn finish(self, mut make_id: impl FnMut() -> String) -> Vec<AssembledCall> {
        self.calls
            .into_values()
            .map(|p| {
                let name = p.name;
                let args = strict(&name, &p.buf);
                let id = if p.id.is_empty() { make_id() } else { p.id };
                AssembledCall {
                    id,
                    name,
                    args,
                    raw_args: p.buf,
                }
            })
            .collect()
    }
}

/// Strict parse of final arguments: an object, or an error for the model.
pub fn strict(tool: &str, raw: &str) -> Result<serde_json::Value, String> {
    if raw.trim().is_empty() {
        return Ok(serde_json::Value::Object(serde_json::Map::new()));
    }
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(v @ serde_json::Value::Object(_)) => Ok(v),
        Ok(other) => Err(format!(
            "malformed JSON in arguments of {tool}: expected an object, got {}",
            match other {
                serde_json::Value::Array(_) => "an array",
                serde_json::Value::String(_) => "a string",
                serde_json::Value::Number(_) => "a number",
                serde_json::Value::Bool(_) => "a boolean",
                _ => "null",
            }
        )),
        Err(e) => Err(format!("malformed JSON in arguments of {tool}: {e}")),
    }
}

/// Best-effort parse of an incomplete JSON text.
pub fn partial(buf: &str) -> Option<serde_json::Value> {
    JsonValue::parse_with_config(buf.as_bytes(), false, PartialMode::TrailingStrings)
        .ok()
        .map(|v| to_serde(&v))
}

fn to_serde(v: &JsonValue<'_>) -> serde_json::Value {
    use serde_json::Value;
    match v {
        JsonValue::Null => Value::Null,
        JsonValue::Bool(b) => Value::Bool(*b),
        JsonValue::Int(i) => Value::from(*i),
        JsonValue::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
        JsonValue::Str(s) => Value::String(s.to_string()),
        JsonValue::Array(a) => Value::Array(a.iter().map(to_serde).collect()),
        JsonValue::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.to_string(), to_serde(v)))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn assembles_interleaved_calls_and_ignores_repeated_names() {
        let mut a = ToolCallAssembler::new();
        assert!(a.start(0, Some("c1"), Some("read_file")));
        assert!(!a.start(0, Some("c1"), Some("read_file")));
        a.push_args(0, "{\"path\":");
        a.start(1, Some("c2"), Some("list_files"));
        a.push_args(1, "{}");
        a.push_args(0, "\"a.rs\"}");
        let calls = a.finish(|| "gen".into());
        assert_eq!(calls[0].name, "read_file");
        assert_eq!(calls[0].args, Ok(json!({"path": "a.rs"})));
        assert_eq!(calls[1].args, Ok(json!({})));
    }

    #[test]
    fn partial_parse_shows_the_path_before_the_content() {
        let mut a = ToolCallAssembler::new();
        a.start(0, Some("c"), Some("write_to_file"));
        let mut seen_path = false;
        let text = format!(
            "{{\"path\":\"src/main.rs\",\"content\":\"{}\"}}",
            "x".repeat(4000)
        );
        for chunk in text.as_bytes().chunks(7) {
            if let Some(v) = a.push_args(0, std::str::from_utf8(chunk).expect("ascii"))
                && v["path"] == "src/main.rs"
                && v.get("content")
                    .is_none_or(|c| c.as_str().is_some_and(|s| s.len() < 4000))
            {
                seen_path = true;
            }
        }
        assert!(seen_path);
    }

    #[test]
    fn malformed_and_non_object_args_are_errors() {
        assert!(
            strict("t", "{\"a\":")
                .expect_err("malformed")
                .starts_with("malformed JSON in arguments of t:")
        );
        assert!(strict("t", "[1]").is_err());
        assert_eq!(strict("t", "  "), Ok(json!({})));
    }

    #[test]
    fn missing_ids_are_generated() {
        let mut a = ToolCallAssembler::new();
        a.start(0, None, Some("x"));
        let calls = a.finish(|| "generated".into());
        assert_eq!(calls[0].id, "generated");
    }
}
