//! The repetition gate's memory: the same tool with the same arguments N
//! times in a row asks a person for guidance.

use std::collections::VecDeque;

/// Detects the same tool with the same arguments N times in a row.
#[derive(Debug)]
pub struct RepetitionDetector {
    limit: usize,
    recent: VecDeque<(String, serde_json::Value)>,
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
        // The arguments compared as values: the same call with its keys in
        // another order is the same call.
        let key = (tool.to_owned(), args.clone());
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
        // Keys in another order: the same call.
        assert!(!r.record("c", &json!({"x": 1, "y": 2})));
        assert!(!r.record(
            "c",
            &serde_json::from_str(r#"{"y": 2, "x": 1}"#).unwrap_or_default()
        ));
        assert!(r.record("c", &json!({"x": 1, "y": 2})));
    }
}
