//! `search_tools(query)`: when the MCP servers' tool definitions would
//! take more than a tenth of the context window, the model is offered
//! this instead of them. It returns the definitions whose name or
//! description match the query, and those tools are offered from then on
//! (a deferred tool can still be called by name; its schema is checked
//! like any other's).

use serde::Deserialize;
use serde_json::{Value, json};

use crate::tools::HOST;
use crate::tools::executor::{Effect, Invocation, Needs, Outcome, ToolExecutor};
use crate::tools::host_spec;
use crate::turn::{RunState, TaskError};
use roost_protocol::{ToolGroup, ToolSpec};

/// Name of the tool.
pub const NAME: &str = super::SEARCH_TOOLS;
/// Most definitions one search returns.
const MAX_FOUND: usize = 10;

/// The `search_tools` tool over the deferred tools' specs.
pub(super) struct SearchTools {
    spec: ToolSpec,
    catalog: Vec<ToolSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    query: String,
    #[serde(default)]
    limit: Option<usize>,
}

impl SearchTools {
    pub(super) fn new(catalog: Vec<ToolSpec>) -> Self {
        Self {
            spec: host_spec(
                NAME,
                ToolGroup::Mcp,
                format!(
                    "Find tools of the connected MCP servers ({} in all, too many to list here) by \
                     keywords in their names and descriptions. The tools found are offered from then on.",
                    catalog.len()
                ),
                json!({
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "minLength": 1, "maxLength": 500, "description": "Keywords, or a server's name."},
                        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_FOUND, "description": "Most tools to return (default 5)."}
                    },
                    "required": ["query"],
                    "additionalProperties": false
                }),
            ),
            catalog,
        }
    }

    /// The specs that best match `query`: each word found in the name
    /// counts 3, in the description 1.
    fn find(&self, query: &str, limit: usize) -> Vec<&ToolSpec> {
        let words: Vec<String> = query
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .take(20)
            .collect();
        let mut scored: Vec<(usize, &ToolSpec)> = self
            .catalog
            .iter()
            .map(|s| {
                let name = s.name.to_lowercase();
                let desc = s.description.to_lowercase();
                let score = words
                    .iter()
                    .map(|w| {
                        3 * usize::from(name.contains(w.as_str()))
                            + usize::from(desc.contains(w.as_str()))
                    })
                    .sum();
                (score, s)
            })
            .filter(|(score, _)| *score > 0)
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name.cmp(&b.1.name)));
        scored.into_iter().take(limit).map(|(_, s)| s).collect()
    }
}

#[async_trait::async_trait]
impl ToolExecutor for SearchTools {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn kind(&self) -> crate::tools::ToolKind {
        crate::tools::ToolKind::Mcp
    }

    fn provider(&self) -> &str {
        HOST
    }

    /// Looking tools up changes nothing.
    fn needs(&self, _state: &RunState, _args: &Value) -> Needs {
        Needs::Nothing
    }

    async fn run(&self, call: Invocation<'_>) -> Result<Outcome, TaskError> {
        let a: Args = match serde_json::from_value(call.args.clone()) {
            Ok(a) => a,
            Err(e) => return Ok(Outcome::mistake(e.to_string())),
        };
        let found = self.find(&a.query, a.limit.unwrap_or(5).clamp(1, MAX_FOUND));
        if found.is_empty() {
            return Ok(Outcome::ok(format!(
                "No MCP tool matches `{}`. Try other keywords or a server's name.",
                a.query
            )));
        }
        let defs: Vec<Value> = found
            .iter()
            .map(|s| json!({"name": s.name, "description": s.description, "input_schema": s.args_schema}))
            .collect();
        let names: Vec<String> = found.iter().map(|s| s.name.clone()).collect();
        let text = format!(
            "{} tool(s) found; they are offered from now on:\n{}",
            names.len(),
            serde_json::to_string_pretty(&defs).unwrap_or_default()
        );
        Ok(Outcome::ok(text).with_effect(Effect::Discover(names)))
    }
}
