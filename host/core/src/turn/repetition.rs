//! The repetition gate's memory: the same tool with the same arguments N
//! times in a row asks a person for guidance.

/// Detects the same tool with the same arguments N times in a row.
#[derive(Debug)]
pub struct RepetitionDetector {
    limit: usize,
    /// The last call (tool, arguments) and how many times in a row it
    /// was made: a repeat is counted, not copied again.
    last: Option<(String, serde_json::Value)>,
    repeats: usize,
}

impl RepetitionDetector {
    /// Trip after `limit` identical calls in a row.
    pub fn new(limit: u32) -> Self {
        Self {
            limit: usize::try_from(limit.max(2)).unwrap_or(usize::MAX),
            last: None,
            repeats: 0,
        }
    }

    /// Record a call; true when it is the `limit`-th identical one in a row.
    pub fn record(&mut self, tool: &str, args: &serde_json::Value) -> bool {
        // The arguments compared as values: the same call with its keys in
        // another order is the same call.
        if self
            .last
            .as_ref()
            .is_some_and(|(t, a)| t == tool && a == args)
        {
            self.repeats += 1;
        } else {
            self.last = Some((tool.to_owned(), args.clone()));
            self.repeats = 1;
        }
        if self.repeats >= self.limit {
            self.last = None;
            self.repeats = 0;
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
