//! `write_to_file`, `search_and_replace` and `insert_content`.

use std::path::Path;

use regex::RegexBuilder;
use roost_sdk::{Output, ToolError, ToolResult, workspace};
use serde::Deserialize;

use crate::links::check_writable;
use crate::text::{join, line_ending, read_text, write_text};

pub const WRITE_DESCRIPTION: &str = "Write a complete file to the workspace, creating it (and any \
missing parent directories) or replacing it. Provide the COMPLETE intended content: no placeholders \
like '// rest of code unchanged'. Prefer apply_diff for changes to existing files.";

pub const REPLACE_DESCRIPTION: &str = "Find and replace text in a file: a literal string by default, \
or a regular expression with use_regex (captures available as $1 in replace). Optionally restrict the \
replacement to lines start_line..=end_line. Reports how many replacements were made.";

pub const INSERT_DESCRIPTION: &str = "Insert lines into a file before the given 1-based line number \
(existing lines move down); line 0 appends at the end of the file. A missing file is created when \
line is 0 or 1.";

/// Arguments of `write_to_file`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteArgs {
    /// Workspace-relative path of the file.
    pub path: String,
    /// The complete content to write.
    pub content: String,
    /// Number of lines in content, as the model counted them (checked).
    pub line_count: Option<usize>,
}

/// A model sometimes wraps a whole file in a markdown fence; drop it.
fn strip_fence(content: &str) -> &str {
    let trimmed = content.trim_end();
    if let Some(rest) = trimmed.strip_prefix("```")
        && let Some(body_start) = rest.find('\n')
        && let Some(body) = rest[body_start + 1..].strip_suffix("```")
        && !rest[..body_start].contains(' ')
    {
        return body;
    }
    content
}

pub fn write_to_file(a: WriteArgs) -> ToolResult {
    let path = workspace::resolve(&a.path)?;
    let content = strip_fence(&a.content);
    let lines = content.lines().count();
    if let Some(expected) = a.line_count
        && expected > 0
        && lines + 5 < expected
    {
        return Err(ToolError::invalid_args(format!(
            "content of {} has {lines} lines but line_count says {expected}: the content looks truncated; \
             send the complete file",
            a.path
        )));
    }
    // Not through a symlink into a .rooignore'd directory or file, and
    // never into a FIFO or device.
    check_writable(Path::new(workspace::ROOT), &path, &a.path)?;
    let existed = path.exists();
    write_text(&a.path, &path, content)?;
    let verb = if existed { "Updated" } else { "Created" };
    Ok(Output::text(format!(
        "{verb} {} ({lines} line{} written).",
        a.path,
        if lines == 1 { "" } else { "s" }
    ))
    .with_data(serde_json::json!({
        "path": a.path,
        "lines": lines,
        "bytes": content.len(),
        "created": !existed,
    })))
}

/// Arguments of `search_and_replace`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplaceArgs {
    /// Workspace-relative path of the file.
    pub path: String,
    /// Text (or regex, with use_regex) to find.
    pub search: String,
    /// Replacement text.
    pub replace: String,
    /// Treat `search` as a regular expression.
    #[serde(default)]
    pub use_regex: bool,
    /// Match case-insensitively.
    #[serde(default)]
    pub ignore_case: bool,
    /// First line of the range to search (1-based, inclusive).
    #[schemars(range(min = 1))]
    pub start_line: Option<usize>,
    /// Last line of the range to search (1-based, inclusive).
    #[schemars(range(min = 1))]
    pub end_line: Option<usize>,
}

pub fn search_and_replace(a: ReplaceArgs) -> ToolResult {
    if a.search.is_empty() {
        return Err(ToolError::invalid_args("search must not be empty"));
    }
    let file = read_text(&a.path)?;
    let pattern = if a.use_regex {
        a.search.clone()
    } else {
        regex::escape(&a.search)
    };
    let re = RegexBuilder::new(&pattern)
        .case_insensitive(a.ignore_case)
        .multi_line(true)
        .build()
        .map_err(|e| ToolError::invalid_args(format!("invalid regex {:?}: {e}", a.search)))?;
    // Literal replacement text must not expand `$1`.
    let replacement = if a.use_regex {
        a.replace.clone()
    } else {
        a.replace.replace('$', "$$")
    };

    let eol = line_ending(&file.text);
    let trailing = file.text.ends_with('\n');
    let all: Vec<&str> = file.text.lines().collect();
    let total = all.len();
    let start = a.start_line.unwrap_or(1).max(1);
    let end = a.end_line.unwrap_or(total).min(total);
    if start > end.max(1) || (a.start_line.is_some() && start > total) {
        return Err(ToolError::invalid_args(format!(
            "line range {start}-{end} is outside {} ({total} lines)",
            a.path
        )));
    }
    let before = all[..start - 1].join(eol);
    let region = all[start - 1..end].join(eol);
    let after = all[end..].join(eol);
    let count = re.find_iter(&region).count();
    if count == 0 {
        return Err(ToolError::not_found(format!(
            "no match for {:?} in {}{}; read the file to check the exact text",
            a.search,
            a.path,
            if a.start_line.is_some() || a.end_line.is_some() {
                format!(" lines {start}-{end}")
            } else {
                String::new()
            }
        )));
    }
    let replaced = re.replace_all(&region, replacement.as_str());
    let mut parts = Vec::new();
    if start > 1 {
        parts.push(before);
    }
    parts.push(replaced.into_owned());
    if end < total {
        parts.push(after);
    }
    let mut out = parts.join(eol);
    if trailing {
        out.push_str(eol);
    }
    write_text(&a.path, &file.path, &out)?;
    Ok(
        Output::text(format!("Made {count} replacement(s) in {}.", a.path))
            .with_data(serde_json::json!({"path": a.path, "replacements": count})),
    )
}

/// Arguments of `insert_content`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InsertArgs {
    /// Workspace-relative path of the file.
    pub path: String,
    /// 1-based line to insert before; 0 appends at the end.
    pub line: usize,
    /// Lines to insert.
    pub content: String,
}

pub fn insert_content(a: InsertArgs) -> ToolResult {
    let path = workspace::resolve(&a.path)?;
    let existing = match read_text(&a.path) {
        Ok(f) => Some(f.text),
        Err(e) if e.code == roost_sdk::ErrorCode::NotFound && a.line <= 1 => None,
        Err(e) => return Err(e),
    };
    let text = existing.unwrap_or_default();
    let eol = line_ending(&text);
    let trailing = text.is_empty() || text.ends_with('\n');
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let new: Vec<String> = a.content.lines().map(str::to_owned).collect();
    let at = if a.line == 0 { lines.len() } else { a.line - 1 };
    if at > lines.len() {
        return Err(ToolError::invalid_args(format!(
            "line {} is past the end of {} ({} lines); use 0 to append",
            a.line,
            a.path,
            lines.len()
        )));
    }
    let inserted = new.len();
    lines.splice(at..at, new);
    write_text(&a.path, &path, &join(&lines, eol, trailing))?;
    Ok(Output::text(format!(
        "Inserted {inserted} line(s) into {} at line {}.",
        a.path,
        at + 1
    ))
    .with_data(serde_json::json!({"path": a.path, "line": at + 1, "lines_inserted": inserted})))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fence_is_stripped_only_when_it_wraps_everything() {
        assert_eq!(
            strip_fence("```rust\nfn main() {}\n```\n"),
            "fn main() {}\n"
        );
        assert_eq!(strip_fence("plain\n"), "plain\n");
        assert_eq!(strip_fence("```\na\n``` trailing"), "```\na\n``` trailing");
    }
}
