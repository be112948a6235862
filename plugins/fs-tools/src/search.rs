//! `search_files`: regex search across the workspace, ripgrep-style output.

use std::path::Path;
use std::sync::Arc;

use globset::{Glob, GlobMatcher};
use regex::Regex;
use roost_sdk::{Output, ToolError, ToolResult, workspace};
use serde::Deserialize;

use crate::links::{Guard, Refused, relative};
use crate::list::walker;
use crate::text::{decode, is_binary};

/// Files larger than this are skipped.
const MAX_FILE_BYTES: u64 = 10 << 20;
/// Longest line shown; longer ones are cut.
const MAX_LINE_CHARS: usize = 500;

pub const DESCRIPTION: &str = "Search files under a workspace directory with a regular expression (Rust \
regex syntax), showing each match with surrounding context lines, grouped by file like ripgrep. \
file_pattern is a glob on file names (e.g. '*.rs'). Honours .gitignore and .rooignore; symlinks and special \
files inside path are not searched. At most `limit` matches (default 300).";

/// Arguments of `search_files`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// Workspace-relative directory to search.
    pub path: String,
    /// Regular expression to find.
    pub regex: String,
    /// Glob on file names, e.g. "*.ts".
    pub file_pattern: Option<String>,
    /// Lines of context before and after each match (default 1).
    pub context_lines: Option<usize>,
    /// Maximum number of matches (default 300).
    #[schemars(range(min = 1))]
    pub limit: Option<usize>,
}

fn shorten(line: &str) -> String {
    if line.chars().count() <= MAX_LINE_CHARS {
        line.to_owned()
    } else {
        let cut: String = line.chars().take(MAX_LINE_CHARS).collect();
        format!("{cut} [...]")
    }
}

/// What a search found.
pub struct Found {
    /// The matches, grouped by file.
    pub text: String,
    /// Number of matches shown.
    pub matches: usize,
    /// Number of files with a match.
    pub files: usize,
    /// Whether the limit cut the search short.
    pub truncated: bool,
}

/// Search the regular files under `dir` (workspace at `root`). Symlinks are
/// never followed (the start aside), and only regular files are opened:
/// never a FIFO, socket or device.
pub fn search_in(
    root: &Path,
    dir: &Path,
    re: &Regex,
    glob: Option<&GlobMatcher>,
    context: usize,
    limit: usize,
) -> Result<Found, Refused> {
    let guard = Arc::new(Guard::new(root));
    let mut out = String::new();
    let mut matches = 0usize;
    let mut files = 0usize;
    let mut truncated = false;
    'files: for result in walker(&guard, dir, None)?.build() {
        let Ok(entry) = result else { continue };
        // The entry's own type: a symlink is not a file here.
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        if let Some(g) = glob
            && !g.is_match(entry.file_name())
            && !g.is_match(relative(root, entry.path()))
        {
            continue;
        }
        // Looked up again just before opening (not following a symlink
        // below the start): still a regular file, and not too large.
        if !entry
            .metadata()
            .is_ok_and(|m| m.is_file() && m.len() <= MAX_FILE_BYTES)
        {
            continue;
        }
        let Ok(bytes) = std::fs::read(entry.path()) else {
            continue;
        };
        if is_binary(&bytes) {
            continue;
        }
        let text = decode(&bytes);
        let lines: Vec<&str> = text.lines().collect();
        let hits: Vec<usize> = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| re.is_match(l))
            .map(|(i, _)| i)
            .collect();
        if hits.is_empty() {
            continue;
        }
        files += 1;
        out.push_str(&format!("# {}\n", relative(root, entry.path())));
        let mut last_shown: Option<usize> = None;
        for &h in &hits {
            if matches >= limit {
                truncated = true;
                break 'files;
            }
            matches += 1;
            let from = h.saturating_sub(context);
            let to = (h + context).min(lines.len() - 1);
            if let Some(prev) = last_shown
                && from > prev + 1
            {
                out.push_str("----\n");
            }
            let start = last_shown.map_or(from, |p| from.max(p + 1));
            for (i, line) in lines.iter().enumerate().take(to + 1).skip(start) {
                out.push_str(&format!("{:>4} | {}\n", i + 1, shorten(line)));
            }
            last_shown = Some(to);
        }
        out.push_str("----\n\n");
    }
    Ok(Found {
        text: out,
        matches,
        files,
        truncated,
    })
}

pub fn search_files(a: SearchArgs) -> ToolResult {
    let re = Regex::new(&a.regex)
        .map_err(|e| ToolError::invalid_args(format!("invalid regex {:?}: {e}", a.regex)))?;
    let glob: Option<GlobMatcher> = match &a.file_pattern {
        Some(p) if !p.trim().is_empty() => Some(
            Glob::new(p)
                .map_err(|e| ToolError::invalid_args(format!("invalid file_pattern {p:?}: {e}")))?
                .compile_matcher(),
        ),
        _ => None,
    };
    let dir = workspace::resolve(&a.path)?;
    std::fs::metadata(&dir).map_err(|e| ToolError::io(&a.path, &e))?;
    let context = a.context_lines.unwrap_or(1).min(20);
    let limit = a.limit.unwrap_or(300);
    let Found {
        text: out,
        matches,
        files,
        truncated,
    } = search_in(
        Path::new(workspace::ROOT),
        &dir,
        &re,
        glob.as_ref(),
        context,
        limit,
    )
    .map_err(|r| r.error(&a.path))?;
    let header = if matches == 0 {
        "Found 0 results.".to_owned()
    } else if truncated {
        format!(
            "Showing the first {matches} results (limit reached); narrow the search to see more.\n\n"
        )
    } else {
        format!("Found {matches} result(s) in {files} file(s).\n\n")
    };
    Ok(
        Output::text(format!("{header}{out}")).with_data(serde_json::json!({
            "matches": matches,
            "files": files,
            "truncated": truncated,
        })),
    )
}
