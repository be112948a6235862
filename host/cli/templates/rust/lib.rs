//! A Roost tool plugin. Each tool is a function from typed arguments
//! (their JSON schema is derived for the model) to a result.

use roost_sdk::{Group, Output, Tool, ToolError, ToolResult};

/// Arguments of `count_words`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct CountArgs {
    /// Workspace-relative path of a text file.
    path: String,
}

/// Count the words of a workspace file (read-only).
fn count_words(a: CountArgs) -> ToolResult {
    let p = roost_sdk::workspace::resolve(&a.path)?;
    let text = std::fs::read_to_string(&p).map_err(|e| ToolError::io(&a.path, &e))?;
    Ok(Output::text(format!("{} words", words(&text))))
}

fn words(text: &str) -> usize {
    text.split_whitespace().count()
}

// The name the model calls: prefixed with the plugin's, so it clashes with
// no other plugin's. plugin.toml lists it under `tools` (Roost checks the
// names before compiling the component); keep the two in step.
roost_sdk::export_tools!(|| vec![
    Tool::new("__TOOL_NAME__", "Count the words of a workspace text file", Group::Read, count_words)
        .paths(&["path"]),
]);

#[cfg(test)]
mod tests {
    #[test]
    fn counts_words() {
        assert_eq!(super::words("one two\nthree"), 3);
    }
}
