//! `.rooignore`, as Roo Code reads it: gitignore syntax at the workspace
//! root naming files the agent may neither read nor write. The host checks
//! every path a call declares against it before the call runs; listing and
//! search tools leave ignored files out themselves.

use std::path::Path;

use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::Workspace;

/// File name of the ignore list at the workspace root.
pub const ROOIGNORE: &str = ".rooignore";
/// Largest `.rooignore` read.
const MAX_ROOIGNORE: u64 = 1 << 20;

/// The workspace's `.rooignore` patterns (none when the file is missing).
#[derive(Debug, Clone)]
pub struct RooIgnore {
    matcher: Option<Gitignore>,
}

impl RooIgnore {
    /// Read `workspace/.rooignore` through the workspace layer (a regular
    /// file inside the workspace, at most 1 MiB). Lines that do not parse
    /// are skipped with a warning, so one typo cannot switch the whole list
    /// off; a `.rooignore` that cannot be read safely (a FIFO, a device, a
    /// link out of the workspace) is reported and holds no patterns.
    pub fn load(workspace: &Path) -> Self {
        let none = Self { matcher: None };
        let ws = match Workspace::open(workspace) {
            Ok(ws) => ws,
            Err(e) => {
                tracing::warn!(".rooignore not read: {e}");
                return none;
            }
        };
        Self::load_in(&ws)
    }

    /// [`RooIgnore::load`] on an open workspace.
    pub fn load_in(ws: &Workspace) -> Self {
        let text = match ws.read_text(ROOIGNORE, MAX_ROOIGNORE) {
            Ok(Some(t)) => t,
            Ok(None) => return Self { matcher: None },
            Err(e) => {
                tracing::warn!(".rooignore not read: {e}");
                return Self { matcher: None };
            }
        };
        let path = ws.host_path().join(ROOIGNORE);
        let mut b = GitignoreBuilder::new(ws.host_path());
        for line in text.lines() {
            if let Err(e) = b.add_line(Some(path.clone()), line) {
                tracing::warn!(file = %path.display(), "skipping .rooignore line {line:?}: {e}");
            }
        }
        match b.build() {
            Ok(m) => Self { matcher: Some(m) },
            Err(e) => {
                tracing::warn!(file = %path.display(), ".rooignore unusable: {e}");
                Self { matcher: None }
            }
        }
    }

    /// Whether there is nothing to hide (no `.rooignore`, or no pattern).
    pub fn is_empty(&self) -> bool {
        self.matcher.as_ref().is_none_or(|m| m.is_empty())
    }

    /// Whether the workspace-relative `rel` (or a directory above it) is
    /// ignored. `rel` must already be normalised ([`Workspace::normalize`]);
    /// callers check the resolved path too ([`Workspace::resolve`]).
    pub fn blocks(&self, rel: &str) -> bool {
        let Some(m) = &self.matcher else {
            return false;
        };
        let rel = rel.trim().trim_start_matches("./").trim_end_matches('/');
        // Not normalised: no answer (a name with `..` inside, `a..b`, is
        // a name like any other).
        if rel.is_empty() || rel == "." || rel.starts_with('/') || rel.split('/').any(|c| c == "..")
        {
            return false;
        }
        m.matched_path_or_any_parents(rel, false).is_ignore()
    }

    /// Roo's message for a blocked path.
    pub fn message(rel: &str) -> String {
        format!(
            "Access to {rel} is blocked by the .rooignore file settings. You must try to continue in the task \
             without using this file, or ask the user to update the .rooignore file."
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_files_dirs_and_negations() {
        let d = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            d.path().join(".rooignore"),
            "secrets/\n*.key\n!public.key\n[bad\n",
        )
        .expect("write");
        let r = RooIgnore::load(d.path());
        assert!(r.blocks("secrets/a.txt"));
        assert!(r.blocks("./secrets/deep/b.txt"));
        assert!(r.blocks("conf/server.key"));
        assert!(!r.blocks("public.key"));
        assert!(!r.blocks("src/main.rs"));
        // A name with `..` inside it is matched like any other (found by
        // the capability properties: `secret..key` escaped `*.key`).
        assert!(r.blocks("conf/secret..key"));
        assert!(r.blocks("secrets/a..b/c.txt"));
        assert!(!r.blocks("secrets/../src/main.rs"));
        assert!(!RooIgnore::load(&d.path().join("missing")).blocks("secrets/a.txt"));
    }
}
