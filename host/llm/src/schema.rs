//! Tool schemas as providers accept them. Plugin schemas (from schemars and
//! friends) carry keywords strict backends reject: `$schema`, `$id`, and
//! `format` values such as `uint` or `double` that are not JSON Schema
//! formats. The loop validates arguments against the full schema; what is
//! sent to the model is this portable subset.

use serde_json::{Map, Value};

/// `format` values providers are known to accept.
const PORTABLE_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uuid",
];

/// Keys no provider needs.
const DROPPED_KEYS: &[&str] = &["$schema", "$id", "$comment"];

/// The portable subset of a tool's argument schema.
pub fn portable(schema: &Value) -> Value {
    match schema {
        Value::Object(o) => {
            let mut out = Map::with_capacity(o.len());
            for (k, v) in o {
                if DROPPED_KEYS.contains(&k.as_str()) {
                    continue;
                }
                if k == "format" && !v.as_str().is_some_and(|f| PORTABLE_FORMATS.contains(&f)) {
                    continue;
                }
                // Property names are data, not keywords: keep them all.
                if k == "properties"
                    && let Value::Object(props) = v
                {
                    let props: Map<String, Value> = props
                        .iter()
                        .map(|(n, s)| (n.clone(), portable(s)))
                        .collect();
                    out.insert(k.clone(), Value::Object(props));
                    continue;
                }
                out.insert(k.clone(), portable(v));
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(portable).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_what_strict_backends_reject() {
        let s = serde_json::json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "limit": {"type": ["integer", "null"], "format": "uint", "minimum": 0},
                "when": {"type": "string", "format": "date-time"},
                "format": {"type": "string"},
                "$schema": {"type": "string"}
            },
            "required": ["when"]
        });
        let p = portable(&s);
        assert!(p.get("$schema").is_none());
        assert!(p["properties"]["limit"].get("format").is_none());
        assert_eq!(p["properties"]["limit"]["minimum"], 0);
        assert_eq!(p["properties"]["when"]["format"], "date-time");
        assert!(
            p["properties"].get("format").is_some(),
            "a property named format stays"
        );
        assert!(
            p["properties"].get("$schema").is_some(),
            "a property named $schema stays"
        );
        assert_eq!(p["required"], serde_json::json!(["when"]));
    }
}
