//! `secret-guard`: a mode hook that refuses file changes which would put
//! credentials into the workspace, or which touch `.env*` files (where
//! credentials usually live). Agents copy keys they see into code and
//! config; a refusal that names what was found (never the value) lets the
//! model switch to environment variables or a secret manager instead.
//!
//! The decision is the pure function [`decide`] over plain types, so it is
//! unit-tested natively; the component glue (`component`) is a few lines on
//! `roost-hook-sdk`, compiled for `wasm32` alone.

#[cfg(target_arch = "wasm32")]
mod component;

pub use roost_secrets::{Finding, find_secrets};
use serde_json::Value;

/// Text appended to the system prompt, so the model knows the rule before it
/// trips over it.
pub const PROMPT_CONTRIBUTION: &str = "Never write credentials (private keys, access keys, API tokens, passwords) into files, and never create or edit `.env*` files: such edits are refused. Read secrets from environment variables or a secret manager instead, and ask the user to set them.";

/// How the reason for a refusal ends: what to do instead.
const ADVICE: &str =
    "keep credentials out of the workspace — use environment variables or a secret manager";

/// At most this many findings are listed in a refusal, to keep it short.
const MAX_LISTED: usize = 5;

/// The hook's verdict on a call, independent of the WIT types so it can be
/// tested natively.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Let the call proceed.
    Allow,
    /// Refuse the call; the reason goes to the model.
    Deny(String),
}

/// Whether `path` names a `.env*` file (`.env`, `.env.local`, `.envrc`, …)
/// in any directory. Such files hold credentials, so an agent should leave
/// them to the user. Case-insensitive, for case-insensitive file systems.
pub fn is_env_file(path: &str) -> bool {
    let trimmed = path.trim_end_matches(['/', '\\']);
    let name = trimmed.rsplit(['/', '\\']).next().unwrap_or(trimmed);
    name.to_ascii_lowercase().starts_with(".env")
}

/// Decides on a tool call: `Deny` when a call that changes files touches a
/// `.env*` file or would add a credential, `Allow` otherwise.
///
/// `args` is the call's JSON arguments; `paths` the workspace-relative paths
/// it declares. Only text the call would add is scanned: declared paths and
/// `search` (existing content for `search_and_replace`) are skipped, and
/// for `diff` (Roo's SEARCH/REPLACE blocks) only the replace halves count.
/// Arguments that are not valid JSON are scanned as raw text.
pub fn decide(
    tool: &str,
    group_is_edit: bool,
    destructive: bool,
    args: &str,
    paths: &[String],
) -> Decision {
    if !(group_is_edit || destructive) {
        return Decision::Allow;
    }
    let env: Vec<&str> = paths
        .iter()
        .map(String::as_str)
        .filter(|p| is_env_file(p))
        .collect();
    if !env.is_empty() {
        return Decision::Deny(format!(
            "`{tool}` would change {}, an environment file that usually holds credentials; {ADVICE}, and ask the user to edit such files themselves",
            quote_list(&env)
        ));
    }
    let mut found = Vec::new();
    match serde_json::from_str::<Value>(args) {
        Ok(value) => scan_value(&value, "", paths, &mut found),
        Err(_) => scan_text(args, "arguments", 1, &mut found),
    }
    if found.is_empty() {
        Decision::Allow
    } else {
        Decision::Deny(format!("`{tool}` would add {}; {ADVICE}", describe(&found)))
    }
}

/// A finding with the argument it was found in.
struct Located {
    /// Argument path, e.g. `content` or `files[0].content`.
    at: String,
    /// What was found.
    kind: &'static str,
    /// 1-based line within that argument.
    line: usize,
}

/// Scans every string in `value` that the call would add, recording
/// findings under the argument path `at`.
fn scan_value(value: &Value, at: &str, paths: &[String], found: &mut Vec<Located>) {
    match value {
        Value::String(s) => {
            // A declared path names a file; it is not content.
            if !paths.iter().any(|p| p == s) {
                scan_text(s, name_or(at, "arguments"), 1, found);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                scan_value(item, &format!("{at}[{i}]"), paths, found);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                let child = if at.is_empty() {
                    key.clone()
                } else {
                    format!("{at}.{key}")
                };
                match (key.as_str(), item) {
                    // The file's name and existing content, not added text.
                    ("path" | "search", _) => {}
                    ("diff", Value::String(diff)) => scan_diff(diff, &child, found),
                    _ => scan_value(item, &child, paths, found),
                }
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// `at`, or `fallback` when `at` is empty (a bare top-level value).
fn name_or<'a>(at: &'a str, fallback: &'a str) -> &'a str {
    if at.is_empty() { fallback } else { at }
}

/// Scans `text` (starting at line `first_line` of argument `at`).
fn scan_text(text: &str, at: &str, first_line: usize, found: &mut Vec<Located>) {
    for f in find_secrets(text) {
        found.push(Located {
            at: at.to_owned(),
            kind: f.kind,
            line: f.line + first_line - 1,
        });
    }
}

/// Whether `line` is the diff marker `marker` (as `apply_diff` reads it).
fn is_marker(line: &str, marker: &str) -> bool {
    line.trim_end() == marker
}

/// Scans the replace halves of Roo's SEARCH/REPLACE blocks in `diff`; the
/// search halves are the file's existing content. A `diff` without any
/// `<<<<<<< SEARCH` marker is not a block diff (and `apply_diff` would
/// reject it), so all of it is scanned rather than trusted.
fn scan_diff(diff: &str, at: &str, found: &mut Vec<Located>) {
    if !diff.lines().any(|l| is_marker(l, "<<<<<<< SEARCH")) {
        scan_text(diff, at, 1, found);
        return;
    }
    #[derive(PartialEq)]
    enum State {
        Outside,
        Search,
        Replace,
    }
    let mut state = State::Outside;
    // (first line number, text) of the replace half being collected.
    let mut half: Option<(usize, String)> = None;
    for (i, line) in diff.lines().enumerate() {
        let n = i + 1;
        match state {
            State::Outside if is_marker(line, "<<<<<<< SEARCH") => state = State::Search,
            State::Search if is_marker(line, "=======") => {
                state = State::Replace;
                half = Some((n + 1, String::new()));
            }
            State::Replace if is_marker(line, ">>>>>>> REPLACE") => {
                state = State::Outside;
                if let Some((first, text)) = half.take() {
                    scan_text(&text, at, first, found);
                }
            }
            State::Replace => {
                if let Some((_, text)) = half.as_mut() {
                    text.push_str(line);
                    text.push('\n');
                }
            }
            State::Outside | State::Search => {}
        }
    }
    // An unterminated replace half is still text the caller meant to add.
    if let Some((first, text)) = half {
        scan_text(&text, at, first, found);
    }
}

/// Describes findings for a refusal: kind, argument and line(s), grouped
/// by kind and argument in order of appearance, at most [`MAX_LISTED`]
/// groups.
fn describe(found: &[Located]) -> String {
    let mut groups: Vec<(&str, &str, Vec<usize>)> = Vec::new();
    for l in found {
        let (kind, at, line) = (l.kind, l.at.as_str(), l.line);
        match groups.iter_mut().find(|g| g.0 == kind && g.1 == at) {
            Some(g) if g.2.contains(&line) => {}
            Some(g) => g.2.push(line),
            None => groups.push((kind, at, vec![line])),
        }
    }
    let mut parts: Vec<String> = groups
        .iter()
        .take(MAX_LISTED)
        .map(|(kind, at, lines)| {
            let nums: Vec<String> = lines.iter().map(usize::to_string).collect();
            let label = if lines.len() == 1 { "line" } else { "lines" };
            format!("{kind} (`{at}`, {label} {})", nums.join(", "))
        })
        .collect();
    if groups.len() > MAX_LISTED {
        parts.push(format!("{} more", groups.len() - MAX_LISTED));
    }
    join_and(&parts)
}

/// `a`, `a and b`, `a, b and c`.
fn join_and(parts: &[String]) -> String {
    match parts {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The paths, each in backquotes, joined with commas and "and".
fn quote_list(paths: &[&str]) -> String {
    let quoted: Vec<String> = paths.iter().map(|p| format!("`{p}`")).collect();
    join_and(&quoted)
}

#[cfg(test)]
mod tests;
