//! The schema gate: a call's arguments are checked against the tool's JSON
//! schema before anything runs, and every violation is reported so the model
//! can fix them all at once.

use std::sync::OnceLock;

use jsonschema::Validator;

/// Longest violation message that echoes the offending value; past it the
/// value is named instead (a 100-item list is not repeated to the model).
const LONGEST_ECHO: usize = 200;

/// A tool's argument schema, compiled once: at registration, or, for a
/// tool whose schema this host already compiled when it first loaded the
/// plugin (known from the component cache), when a call first needs it.
/// Remote `$ref`s are never fetched (the crate is built without its HTTP
/// and file resolvers).
pub struct ArgsValidator {
    schema: serde_json::Value,
    compiled: OnceLock<Result<Validator, String>>,
}

impl std::fmt::Debug for ArgsValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ArgsValidator")
    }
}

impl ArgsValidator {
    /// Compile `schema` now; an invalid schema is a plugin bug, reported as text.
    pub fn new(schema: &serde_json::Value) -> Result<Self, String> {
        let v = Self::deferred(schema.clone());
        v.compiled()?;
        Ok(v)
    }

    /// `schema`, compiled when first used (a start that only lists tools
    /// compiles none). A schema that then fails to compile refuses every
    /// call, saying why.
    pub fn deferred(schema: serde_json::Value) -> Self {
        Self {
            schema,
            compiled: OnceLock::new(),
        }
    }

    fn compiled(&self) -> Result<&Validator, String> {
        self.compiled
            .get_or_init(|| jsonschema::validator_for(&self.schema).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Check `args`; on failure, one line per violation (`/path: message`).
    pub fn check(&self, args: &serde_json::Value) -> Result<(), Vec<String>> {
        let validator = self.compiled().map_err(|e| {
            vec![format!(
                "(schema): the tool's own argument schema does not compile: {e}"
            )]
        })?;
        // Almost every call is valid: a pass that stops at the first
        // failure and builds no error costs a fraction of collecting them.
        if validator.is_valid(args) {
            return Ok(());
        }
        let errors: Vec<String> = validator
            .iter_errors(args)
            .map(|e| {
                let path = e.instance_path().to_string();
                let at = if path.is_empty() {
                    "(root)".to_owned()
                } else {
                    path
                };
                // A long value is named, not echoed back: the model has it.
                let full = e.to_string();
                if full.len() > LONGEST_ECHO {
                    format!("{at}: {}", e.masked_with("the value"))
                } else {
                    format!("{at}: {full}")
                }
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

    #[test]
    fn a_deferred_schema_is_checked_when_first_used() {
        let good = ArgsValidator::deferred(schema());
        assert!(good.check(&json!({"path": "a"})).is_ok());
        assert!(good.check(&json!({})).is_err());
        let bad = ArgsValidator::deferred(json!({"type": 5}));
        let errs = bad
            .check(&json!({}))
            .expect_err("a broken schema refuses every call");
        assert!(errs[0].contains("does not compile"), "{errs:?}");
        assert!(ArgsValidator::new(&json!({"type": 5})).is_err());
    }
}
