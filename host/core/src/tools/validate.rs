//! The schema gate: a call's arguments are checked against the tool's JSON
//! schema before anything runs, and every violation is reported so the model
//! can fix them all at once.

use jsonschema::Validator;

/// A compiled argument schema. Remote `$ref`s are never fetched (the crate
/// is built without its HTTP and file resolvers).
pub struct ArgsValidator {
    validator: Validator,
}

impl std::fmt::Debug for ArgsValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ArgsValidator")
    }
}

impl ArgsValidator {
    /// Compile `schema`; an invalid schema is a plugin bug, reported as text.
    pub fn new(schema: &serde_json::Value) -> Result<Self, String> {
        jsonschema::validator_for(schema)
            .map(|validator| Self { validator })
            .map_err(|e| e.to_string())
    }

    /// Check `args`; on failure, one line per violation (`/path: message`).
    pub fn check(&self, args: &serde_json::Value) -> Result<(), Vec<String>> {
        let errors: Vec<String> = self
            .validator
            .iter_errors(args)
            .map(|e| {
                let path = e.instance_path().to_string();
                let at = if path.is_empty() {
                    "(root)".to_owned()
                } else {
                    path
                };
                format!("{at}: {e}")
            })
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    /// The schema gate's message for `args` of `tool`: every violation,
    /// so the model fixes all at once; `None` when the args are valid.
    pub fn explain(&self, tool: &str, args: &serde_json::Value) -> Option<String> {
        self.check(args).err().map(|errs| {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> serde_json::Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "start_line": {"type": "integer", "minimum": 1}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    #[test]
    fn accepts_valid_args() {
        let v = ArgsValidator::new(&schema()).expect("schema compiles");
        assert!(v.check(&json!({"path": "a.rs", "start_line": 3})).is_ok());
    }

    #[test]
    fn lists_every_violation() {
        let v = ArgsValidator::new(&schema()).expect("schema compiles");
        let errs = v
            .check(&json!({"start_line": "x", "extra": 1}))
            .expect_err("invalid");
        assert!(errs.len() >= 3, "{errs:?}");
        assert!(errs.iter().any(|e| e.contains("path")), "{errs:?}");
        assert!(
            errs.iter().any(|e| e.starts_with("/start_line")),
            "{errs:?}"
        );
    }

    #[test]
    fn invalid_schema_is_an_error() {
        assert!(ArgsValidator::new(&json!({"type": 12})).is_err());
    }
}
