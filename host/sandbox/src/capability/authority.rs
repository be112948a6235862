//! Authority files: the workspace files that define what a task may do or
//! that run code on the host. `.orchestration/` (intents, the trace,
//! `AGENT.md`), `.git/` (config, hooks) and `.rooignore` (what no tool may
//! see) are never writable by a tool call, whatever the scope or mode: the
//! user edits them, and only the host appends to the trace. A declared path into them is refused before the
//! call; a write the plugin did not declare is undone by the write guard.

/// Top-level directories no tool call may change.
pub const AUTHORITY_DIRS: [&str; 2] = [".git", ".orchestration"];

/// Top-level files no tool call may change.
pub const AUTHORITY_FILES: [&str; 1] = [super::ROOIGNORE];

/// Whether the workspace-relative `rel` is an authority file or directory
/// or lies inside one (a `.git` directory at any depth counts for declared
/// paths).
pub fn is_authority(rel: &str) -> bool {
    let rel = rel.trim_start_matches("./");
    let first = rel.split('/').next().unwrap_or_default();
    AUTHORITY_DIRS.contains(&first)
        || AUTHORITY_FILES.contains(&rel)
        || rel.split('/').any(|c| c == ".git")
}

/// Whether the guard keeps the bytes of `rel` to restore it. Git's object
/// store is content-addressed, large and written only by git: the guard
/// records its entries' stamps, removes new ones and reports (rather than
/// restores) a changed one.
pub fn content_kept(rel: &str) -> bool {
    !rel.starts_with(".git/objects/")
}

/// The refusal a declared path into an authority directory gets.
pub fn message(rel: &str) -> String {
    format!(
        "`{rel}` is inside .orchestration/ or .git/, or is .rooignore, which no tool may change: they define this \
         task's authority (intents, trace, what tools may not see) or run code on the host (git config and hooks). \
         Ask the user to edit it."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authority_paths() {
        for p in [
            ".git",
            ".git/config",
            "./.git/hooks/pre-commit",
            ".orchestration/active_intents.yaml",
            ".orchestration",
            "vendor/lib/.git/config",
            ".rooignore",
            "./.rooignore",
        ] {
            assert!(is_authority(p), "{p}");
        }
        for p in [
            "src/main.rs",
            ".gitignore",
            ".github/workflows/ci.yml",
            "orchestration/x",
            "sub/.rooignore",
            ".rooignore.bak",
        ] {
            assert!(!is_authority(p), "{p}");
        }
        assert!(!content_kept(".git/objects/ab/cdef"));
        assert!(content_kept(".git/config"));
    }
}
