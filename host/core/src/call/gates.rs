//! The schema gate's words: every violation of a tool's argument schema,
//! so the model fixes all at once.

use crate::tools::ArgsValidator;

/// The schema gate's message: every violation, so the model fixes all.
pub fn schema_violations(
    tool: &str,
    validator: &ArgsValidator,
    args: &serde_json::Value,
) -> Option<String> {
    validator.explain(tool, args)
}
