//! The schema gate's words: every violation of a tool's argument schema,
//! so the model fixes all at once.

use crate::tools::ArgsValidator;

/// The schema gate's message: every violation, so the model fixes all.
pub fn schema_violations(
    tool: &str,
    validator: &ArgsValidator,
    args: &serde_json::Value,
) -> Option<String> {
    validator.check(args).err().map(|errs| {
        let mut msg = format!("Invalid arguments for tool `{tool}`:\n");
        for e in errs {
            msg.push_str("- ");
            msg.push_str(&e);
            msg.push('\n');
        }
        msg.push_str("Fix every listed problem and call the tool again.");
        msg
    })
}
