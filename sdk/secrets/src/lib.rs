//! Credential detection and redaction, in one place for both sides of the
//! sandbox: the `secret-guard` mode hook refuses calls that would write a
//! credential, and the host redacts the same credentials from everything it
//! persists (trace, histories, logs, exports). One set of detectors means a
//! secret the hook found is a secret the host removes.

#![forbid(unsafe_code)]

use std::borrow::Cow;
use std::ops::Range;
use std::sync::LazyLock;

use regex::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};
use serde_json::Value;

/// One credential found in a text: what it is, on which line and where,
/// so it can be reported without repeating the value, and redacted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// What was found, with its article (e.g. "an AWS access key id").
    pub kind: &'static str,
    /// 1-based line of the text the credential starts on.
    pub line: usize,
    /// Byte range of the credential in the text.
    pub range: Range<usize>,
}

/// A kind of credential and how to recognise it.
struct Detector {
    /// What the credential is called in refusals.
    kind: &'static str,
    /// Matches the credential (or its tell-tale part).
    pattern: Regex,
    /// A second pattern the same text must also contain, if any.
    also: Option<Regex>,
}

/// Compiles a built-in pattern. The patterns are constants covered by the
/// tests, so a failure is a bug in this file, never bad input.
/// A case-insensitive pattern carries its flag inline, so [`ANY`], built
/// from the patterns' text, matches what they match.
fn compile(pattern: &str, case_insensitive: bool) -> Regex {
    let pattern = if case_insensitive {
        format!("(?i:{pattern})")
    } else {
        pattern.to_owned()
    };
    RegexBuilder::new(&pattern)
        .build()
        .unwrap_or_else(|e| panic!("roost-secrets: invalid built-in pattern {pattern:?}: {e}"))
}

/// The detectors, most specific first: a match overlapping an earlier
/// detector's match is not reported again (an Anthropic key also looks like
/// an OpenAI one).
static DETECTORS: LazyLock<Vec<Detector>> = LazyLock::new(|| {
    let d = |kind, pattern, ci| Detector {
        kind,
        pattern: compile(pattern, ci),
        also: None,
    };
    vec![
        // The whole block, so redaction removes the key and not only its
        // header; an unterminated block runs to the end of the text.
        d(
            "a private key (PEM)",
            r"-----BEGIN (RSA |EC |DSA |OPENSSH |ENCRYPTED |PGP )?PRIVATE KEY( BLOCK)?-----(?s:.*?)(-----END [A-Z ]*PRIVATE KEY( BLOCK)?-----|\z)",
            false,
        ),
        d(
            "an AWS access key id",
            r"\b(AKIA|ASIA)[0-9A-Z]{16}\b",
            false,
        ),
        d(
            "an AWS secret access key",
            r#"aws_secret_access_key\s*[=:]\s*["']?[A-Za-z0-9/+=]{40}"#,
            true,
        ),
        Detector {
            kind: "a GCP service-account key",
            pattern: compile(r#""type"\s*:\s*"service_account""#, false),
            also: Some(compile(r#""private_key""#, false)),
        },
        d("a GitHub token", r"\bgh[pousr]_[A-Za-z0-9]{36,}\b", false),
        d("a GitHub token", r"\bgithub_pat_[A-Za-z0-9_]{22,}\b", false),
        d("a Slack token", r"\bxox[baprs]-[A-Za-z0-9-]{10,}", false),
        d(
            "an Anthropic API key",
            r"\bsk-ant-[A-Za-z0-9_-]{20,}",
            false,
        ),
        d(
            "an OpenAI API key",
            r"\bsk-(proj-)?[A-Za-z0-9_-]{20,}",
            false,
        ),
        d("a Stripe live key", r"\b[sr]k_live_[A-Za-z0-9]{20,}", false),
        d("a Google API key", r"\bAIza[0-9A-Za-z_-]{35}\b", false),
    ]
});

/// Whether any detector's pattern occurs in a text at all: one pass over
/// the text instead of one per detector, and almost every text the host
/// redacts (replies, tool output, UI rows) holds no credential.
static ANY: LazyLock<RegexSet> = LazyLock::new(|| {
    let patterns: Vec<String> = DETECTORS
        .iter()
        .map(|d| format!("(?:{})", d.pattern.as_str()))
        .collect();
    RegexSetBuilder::new(patterns)
        .build()
        .unwrap_or_else(|e| panic!("roost-secrets: invalid built-in pattern set: {e}"))
});

/// How many detectors there are (for tests that every one compiles).
pub fn detector_count() -> usize {
    DETECTORS.len()
}

/// Finds the credentials in `text`, in the order they appear, without
/// overlaps.
pub fn find_secrets(text: &str) -> Vec<Finding> {
    if !ANY.is_match(text) {
        return Vec::new();
    }
    let mut found: Vec<(Range<usize>, &'static str)> = Vec::new();
    for det in DETECTORS.iter() {
        if let Some(also) = &det.also
            && !also.is_match(text)
        {
            continue;
        }
        for m in det.pattern.find_iter(text) {
            let range = m.range();
            if found
                .iter()
                .any(|(r, _)| range.start < r.end && r.start < range.end)
            {
                continue;
            }
            found.push((range, det.kind));
        }
    }
    found.sort_by_key(|(r, _)| r.start);
    found
        .into_iter()
        .map(|(range, kind)| Finding {
            kind,
            line: line_of(text, range.start),
            range,
        })
        .collect()
}

/// 1-based line number of byte offset `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()
        .get(..at)
        .map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count())
        + 1
}

/// What replaces a credential of `kind`: says what was there, never what.
pub fn placeholder(kind: &str) -> String {
    format!("[REDACTED: {kind}]")
}

/// `text` with every credential replaced by its [`placeholder`]; borrowed
/// when there was nothing to redact (the common case costs no copy).
pub fn redact(text: &str) -> Cow<'_, str> {
    let found = find_secrets(text);
    if found.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for f in found {
        out.push_str(text.get(at..f.range.start).unwrap_or_default());
        out.push_str(&placeholder(f.kind));
        at = f.range.end;
    }
    out.push_str(text.get(at..).unwrap_or_default());
    Cow::Owned(out)
}

/// `value` with every string in it (object keys included) redacted; JSON
/// arguments are redacted value by value, so escapes inside strings never
/// hide a credential and the result stays valid JSON.
pub fn redact_json(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(redact(s).into_owned()),
        Value::Array(items) => Value::Array(items.iter().map(redact_json).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (redact(k).into_owned(), redact_json(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Whether `value` holds any credential (cheaper to ask than to redact).
pub fn json_has_secret(value: &Value) -> bool {
    match value {
        Value::String(s) => !find_secrets(s).is_empty(),
        Value::Array(items) => items.iter().any(json_has_secret),
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| !find_secrets(k).is_empty() || json_has_secret(v)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A fake GitHub token: pattern-valid, built at run time.
    fn github() -> String {
        format!("ghp_{}", "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zCaB3d")
    }

    #[test]
    fn every_detector_compiles() {
        assert_eq!(detector_count(), 11);
    }

    #[test]
    fn findings_carry_kind_line_and_range() {
        let text = format!("x\n{}\nAKIAABCDEFGHIJKLMNOP\n", github());
        let found = find_secrets(&text);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].kind, "a GitHub token");
        assert_eq!(found[0].line, 2);
        assert_eq!(&text[found[0].range.clone()], github());
        assert_eq!(found[1].kind, "an AWS access key id");
        assert_eq!(found[1].line, 3);
    }

    #[test]
    fn redaction_replaces_only_the_credential() {
        let text = format!("token = \"{}\" # mine", github());
        assert_eq!(
            redact(&text),
            "token = \"[REDACTED: a GitHub token]\" # mine"
        );
        assert!(matches!(redact("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_whole_private_key_block_is_redacted() {
        let pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAKBg\n-----END RSA PRIVATE KEY-----";
        let text = format!("before\n{pem}\nafter");
        assert_eq!(
            redact(&text),
            "before\n[REDACTED: a private key (PEM)]\nafter"
        );
        // An unterminated block runs to the end.
        let cut = "-----BEGIN PRIVATE KEY-----\nMIIEow\nAKBg";
        assert_eq!(redact(cut), "[REDACTED: a private key (PEM)]");
    }

    /// One sample of every detector's credential, built at run time (a
    /// literal would trip secret scanners on this repository).
    fn samples() -> Vec<(&'static str, String)> {
        let run = |c: char, n: usize| std::iter::repeat_n(c, n).collect::<String>();
        vec![
            (
                "a private key (PEM)",
                "-----BEGIN EC PRIVATE KEY-----\nx\n-----END EC PRIVATE KEY-----".into(),
            ),
            ("an AWS access key id", format!("ASIA{}", run('Q', 16))),
            (
                "an AWS secret access key",
                format!("AWS_SECRET_ACCESS_KEY = {}", run('a', 40)),
            ),
            (
                "a GCP service-account key",
                "{\"type\": \"service_account\", \"private_key\": \"x\"}".into(),
            ),
            ("a GitHub token", github()),
            ("a GitHub token", format!("github_pat_{}", run('b', 30))),
            ("a Slack token", format!("xoxb-{}", run('1', 12))),
            ("an Anthropic API key", format!("sk-ant-{}", run('c', 24))),
            ("an OpenAI API key", format!("sk-proj-{}", run('d', 24))),
            ("a Stripe live key", format!("sk_live_{}", run('e', 24))),
            ("a Google API key", format!("AIza{}", run('f', 35))),
        ]
    }

    #[test]
    fn every_detector_finds_its_credential_through_the_one_pass_check() {
        let samples = samples();
        assert_eq!(samples.len(), detector_count());
        for (kind, secret) in samples {
            let text = format!("before\n{secret}\nafter");
            let found = find_secrets(&text);
            assert_eq!(found.len(), 1, "{kind}: {found:?}");
            assert_eq!(found[0].kind, kind);
        }
        // A GCP key needs both parts; one alone passes the quick check and
        // is still not reported.
        assert!(find_secrets("{\"type\": \"service_account\"}").is_empty());
        assert!(find_secrets(&"plain text without credentials\n".repeat(100)).is_empty());
    }

    #[test]
    fn json_is_redacted_value_by_value() {
        let v = json!({"path": "a.rs", "content": format!("k={}\n", github()), "n": 3,
                       "list": [github()]});
        assert!(json_has_secret(&v));
        let r = redact_json(&v);
        assert!(!json_has_secret(&r));
        assert_eq!(r["path"], "a.rs");
        assert_eq!(r["n"], 3);
        assert_eq!(r["content"], "k=[REDACTED: a GitHub token]\n");
        assert!(!r.to_string().contains(&github()));
    }
}
