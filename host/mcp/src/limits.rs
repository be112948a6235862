//! What Roost accepts from an MCP server, whoever wrote it: tool names
//! the providers accept (and that never pass for a native tool or another
//! server's), descriptions and schemas of bounded size, no terminal
//! escapes in anything shown or kept, a bounded number of tools and
//! resources. A tool past a bound is not offered, and its server's status
//! says why.

use serde::Serialize;
use serde_json::Value;

use super::config::ServerEntry;

/// Most tools taken from one server.
pub const MAX_TOOLS: usize = 1000;
/// Most resources listed for one server.
pub const MAX_RESOURCES: usize = 500;
/// Longest description offered (characters).
pub const MAX_DESCRIPTION: usize = 2048;
/// Largest input schema accepted (bytes of JSON).
pub const MAX_SCHEMA: usize = 32 * 1024;
/// Longest tool name the providers accept.
pub const MAX_NAME: usize = 64;

/// One of a server's tools as Roost took it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolInfo {
    /// Its name on the server.
    pub name: String,
    /// The name the model calls it by (`mcp__server__tool`).
    pub offered: String,
    /// Its description, cleaned and bounded.
    pub description: String,
    /// Its input schema.
    #[serde(skip)]
    pub schema: Value,
    /// Whether the server marks it read-only (`readOnlyHint`): the
    /// others are destructive.
    pub read_only: bool,
    /// Called without asking (`alwaysAllow`).
    pub always_allow: bool,
    /// Why it is not offered, when it is not.
    pub refused: Option<String>,
}

/// `s` on one line: escape sequences and control characters removed, cut
/// to `max` characters.
pub fn clean_line(s: &str, max: usize) -> String {
    cut(&strip(s, false), max)
}

/// `s` with escape sequences and control characters (but newlines and
/// tabs) removed, cut to `max` characters.
pub fn clean_text(s: &str, max: usize) -> String {
    cut(&strip(s, true), max)
}

fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Remove ANSI escape sequences (CSI, OSC, single-character ones) and
/// other control characters.
fn strip(s: &str, keep_lines: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                // CSI: parameters and intermediates, then one final byte.
                Some('[') => {
                    for d in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&d) {
                            break;
                        }
                    }
                }
                // OSC (and DCS, PM, APC): up to BEL or ESC \.
                Some(']' | 'P' | '^' | '_') => {
                    while let Some(d) = chars.next() {
                        if d == '\u{7}' {
                            break;
                        }
                        if d == '\u{1b}' {
                            chars.next_if_eq(&'\\');
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\u{9b}' => {
                for d in chars.by_ref() {
                    if ('\u{40}'..='\u{7e}').contains(&d) {
                        break;
                    }
                }
            }
            '\n' | '\t' if keep_lines => out.push(c),
            '\n' | '\t' | '\r' => out.push(' '),
            c if c.is_control() => {}
            // Bidirectional overrides reorder what a person reads.
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {}
            c => out.push(c),
        }
    }
    out
}

/// The name the model calls `tool` of `server` by: `mcp__server__tool`
/// with every character the providers refuse made `_`, cut to their
/// length limit with a hash of the whole (two long names stay apart).
pub fn offered_name(server: &str, tool: &str) -> String {
    let raw = format!("mcp__{server}__{tool}");
    let mut name: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name != raw || name.len() > MAX_NAME {
        // A changed or cut name carries a hash of the original, so
        // `a.b` and `a_b` are two tools, not one.
        let hash = blake3::hash(raw.as_bytes()).to_hex();
        let keep = MAX_NAME - 9;
        if name.len() > keep || name != raw {
            name.truncate(keep.min(name.len()));
            name.push('_');
            name.push_str(&hash[..8]);
        }
    }
    name
}

/// Whether `name` is a tool name the protocol allows (1–128 of
/// `A-Z a-z 0-9 _ - .`).
fn valid_tool_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// The tools `listed` by `entry`'s server, each taken or refused.
pub fn tools(entry: &ServerEntry, listed: Vec<rmcp::model::Tool>) -> Vec<ToolInfo> {
    let total = listed.len();
    let mut out: Vec<ToolInfo> = Vec::new();
    for t in listed.into_iter().take(MAX_TOOLS) {
        let name = t.name.to_string();
        let read_only = t
            .annotations
            .as_ref()
            .and_then(|a| a.read_only_hint)
            .unwrap_or(false);
        let description = clean_text(t.description.as_deref().unwrap_or(""), MAX_DESCRIPTION);
        let schema = Value::Object((*t.input_schema).clone());
        let mut refused = None;
        if !valid_tool_name(&name) {
            refused = Some(
                "its name is not 1–128 of A-Z a-z 0-9 _ - . (as the protocol requires)".to_owned(),
            );
        } else if entry.disabled_tools.contains(&name) {
            refused = Some("disabled in the configuration (disabledTools)".to_owned());
        } else if schema.to_string().len() > MAX_SCHEMA {
            refused = Some(format!(
                "its input schema is larger than {MAX_SCHEMA} bytes"
            ));
        } else if out.iter().any(|o| o.name == name) {
            refused = Some("the server lists this name twice".to_owned());
        }
        let shown = if valid_tool_name(&name) {
            name.clone()
        } else {
            clean_line(&name, 128)
        };
        out.push(ToolInfo {
            offered: offered_name(&entry.name, &shown),
            always_allow: entry.always_allow.iter().any(|a| *a == name || a == "*"),
            name: shown,
            description,
            schema,
            read_only,
            refused,
        });
    }
    if total > MAX_TOOLS {
        out.push(ToolInfo {
            name: format!("({} more)", total - MAX_TOOLS),
            offered: String::new(),
            description: String::new(),
            schema: Value::Null,
            read_only: false,
            always_allow: false,
            refused: Some(format!(
                "the server lists {total} tools; Roost takes {MAX_TOOLS}"
            )),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_removed() {
        assert_eq!(
            clean_line(
                "\u{1b}[31mred\u{1b}[0m \u{1b}]0;title\u{7}x\r\ny\u{202e}",
                100
            ),
            "red x  y"
        );
        assert_eq!(clean_text("a\nb\u{1b}[2J", 100), "a\nb");
        assert_eq!(clean_line("abcdef", 4), "abc…");
    }

    #[test]
    fn offered_names_stay_apart_and_within_limits() {
        assert_eq!(offered_name("fs", "read_file"), "mcp__fs__read_file");
        let a = offered_name("srv", "a.b");
        let b = offered_name("srv", "a_b");
        assert_ne!(a, b);
        let long = offered_name("server", &"x".repeat(128));
        assert!(long.len() <= MAX_NAME, "{long}");
        assert_ne!(long, offered_name("server", &"x".repeat(127)));
        assert!(
            offered_name("my server", "t")
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        );
    }
}
