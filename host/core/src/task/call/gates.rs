//! The gates a tool call passes before it may run: known tool, well-formed
//! and schema-valid arguments, and not the same call again and again.

use std::collections::VecDeque;

use crate::tools::ArgsValidator;

/// Detects the same tool with the same arguments N times in a row.
#[derive(Debug)]
pub struct RepetitionDetector {
    limit: usize,
    recent: VecDeque<String>,
}

impl RepetitionDetector {
    /// Trip after `limit` identical calls in a row.
    pub fn new(limit: u32) -> Self {
        Self {
            limit: limit.max(2) as usize,
            recent: VecDeque::new(),
        }
    }

    /// Record a call; true when it is the `limit`-th identical one in a row.
    pub fn record(&mut self, tool: &str, args: &serde_json::Value) -> bool {
        let key = format!("{tool}\u{0}{args}");
        if self.recent.back().is_some_and(|k| *k != key) {
            self.recent.clear();
        }
        self.recent.push_back(key);
        if self.recent.len() >= self.limit {
            self.recent.clear();
            return true;
        }
        false
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn trips_on_the_nth_identical_call_only() {
        let mut r = RepetitionDetector::new(3);
        assert!(!r.record("a", &json!({"x": 1})));
        assert!(!r.record("a", &json!({"x": 1})));
        assert!(r.record("a", &json!({"x": 1})));
        assert!(!r.record("a", &json!({"x": 1})));
        assert!(!r.record("a", &json!({"x": 2})));
        assert!(!r.record("b", &json!({"x": 2})));
    }
}
