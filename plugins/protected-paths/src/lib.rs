//! `protected-paths`: Roo Code's protected-files rule as a mode hook. Edits
//! to the files that configure the agent itself (modes, rules, ignore
//! files, editor settings, orchestration state) need the user's approval
//! even when edits are otherwise auto-approved, so an agent cannot quietly
//! widen its own permissions.
//!
//! Patterns follow Roo's gitignore semantics: a pattern without a `/`
//! (`.roomodes`, `AGENTS.md`) matches a file or directory of that name at
//! any depth, one with a `/` (`.roo/**`) is anchored at the workspace root,
//! anything inside a matching directory matches too, and case is ignored.
//!
//! The decision is the pure function [`decide`] over plain types, so it is
//! unit-tested natively; the component glue (`component`) is a few lines on
//! `roost-hook-sdk`, compiled for `wasm32` alone.

#[cfg(target_arch = "wasm32")]
mod component;

use std::sync::LazyLock;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// The protected patterns: Roo Code's list plus Roost's `.orchestration/`.
pub const PROTECTED: &[&str] = &[
    ".roo/**",
    ".roomodes",
    ".rooignore",
    ".roorules*",
    ".clinerules*",
    ".rooprotected",
    ".vscode/**",
    "AGENTS.md",
    "AGENT.md",
    ".orchestration/**",
];

/// Text appended to the system prompt, so the model expects the question
/// rather than being surprised by it.
pub const PROMPT_CONTRIBUTION: &str = "The agent's configuration files are protected (.roo/**, .roomodes, .rooignore, .roorules*, .clinerules*, .rooprotected, .vscode/**, AGENTS.md, AGENT.md, .orchestration/**): any edit to them needs the user's explicit approval.";

/// The hook's verdict on a call, independent of the WIT types so it can be
/// tested natively.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Let the call proceed.
    Allow,
    /// Ask the user this question before proceeding.
    Ask(String),
}

/// Compiles [`PROTECTED`] once. The patterns are constants covered by the
/// tests, so a failure is a bug in this file, never bad input.
static GLOBS: LazyLock<GlobSet> = LazyLock::new(|| {
    let mut set = GlobSetBuilder::new();
    for pattern in PROTECTED {
        // gitignore: a pattern without a slash matches at any depth.
        let anchored = pattern.contains('/');
        let full = if anchored {
            (*pattern).to_owned()
        } else {
            format!("**/{pattern}")
        };
        // A protected directory is itself protected: removing or renaming
        // `.roo` changes everything inside it.
        let dir = pattern.strip_suffix("/**").map(str::to_owned);
        for glob in std::iter::once(full).chain(dir) {
            let built = GlobBuilder::new(&glob)
                .literal_separator(true)
                .case_insensitive(true)
                .build()
                .unwrap_or_else(|e| panic!("protected-paths: invalid built-in glob {glob:?}: {e}"));
            set.add(built);
        }
    }
    set.build()
        .unwrap_or_else(|e| panic!("protected-paths: invalid built-in glob set: {e}"))
});

/// Normalises a workspace-relative path for matching: `\` becomes `/`, and
/// empty, `.` and `..` components are resolved lexically, so neither
/// `./AGENTS.md` nor `src/../.roomodes` slips past the patterns.
pub fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

/// Whether `path` is protected: it, or a directory containing it, matches
/// one of [`PROTECTED`] (a `dir/**` pattern also covers `dir` itself).
pub fn is_protected(path: &str) -> bool {
    let norm = normalize(path);
    // Check every ancestor too: anything inside a protected directory (e.g.
    // Cline's `.clinerules/` folder) is protected, as in gitignore.
    let mut prefix = String::new();
    for part in norm.split('/').filter(|p| !p.is_empty()) {
        if !prefix.is_empty() {
            prefix.push('/');
        }
        prefix.push_str(part);
        if GLOBS.is_match(prefix.as_str()) {
            return true;
        }
    }
    false
}

/// Decides on a tool call: `Ask` when a call that changes files declares a
/// protected path (listing every one), `Allow` otherwise.
pub fn decide(tool: &str, group_is_edit: bool, destructive: bool, paths: &[String]) -> Decision {
    if !(group_is_edit || destructive) {
        return Decision::Allow;
    }
    let mut hits: Vec<String> = Vec::new();
    for path in paths {
        let norm = normalize(path);
        if is_protected(&norm) && !hits.contains(&norm) {
            hits.push(norm);
        }
    }
    match hits.as_slice() {
        [] => Decision::Allow,
        [one] => Decision::Ask(format!(
            "`{tool}` edits {one}, a protected configuration file (Roo's protected paths): approve?"
        )),
        many => Decision::Ask(format!(
            "`{tool}` edits {}, protected configuration files (Roo's protected paths): approve?",
            join_and(many)
        )),
    }
}

/// `a`, `a and b`, `a, b and c`.
fn join_and(parts: &[String]) -> String {
    match parts {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests;
