//! Intents: the `.orchestration/` handshake. `active_intents.yaml` lists the
//! work items a task may act under; `select_active_intent` picks one, and
//! from then on destructive calls run with write access to that intent's
//! `owned_scope` only. A workspace without `.orchestration/` has intents off.
//! A subtask works under its parent's intent, narrowed to its own scope
//! ([`bound`] says how).

pub mod bound;
pub mod served;
mod trace;

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};

pub use trace::{
    DIFF_DEADLINE, FileChange, MAX_DIFF_BYTES, Trace, TraceEntry, bounded_diff, redact_record,
};

use roost_sandbox::capability::Workspace;

/// Directory of the orchestration sidecars.
pub const ORCHESTRATION_DIR: &str = ".orchestration";

/// One intent. An unknown key is an error (a misspelt `owned_scope` would
/// otherwise leave the intent with no scope, and every write refused).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Intent {
    /// `INT-…`.
    pub id: String,
    /// Short name.
    pub name: String,
    /// `IN_PROGRESS`, `PENDING`, `DONE`, …
    pub status: String,
    /// Globs (workspace-relative) the intent may change.
    #[serde(default)]
    pub owned_scope: Vec<String>,
    /// Rules the work must respect.
    #[serde(default)]
    pub constraints: Vec<String>,
    /// What "done" means.
    #[serde(default)]
    pub acceptance_criteria: Vec<String>,
    /// The command profile its commands run under (`[command_profiles]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_profile: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IntentFile {
    #[serde(default)]
    active_intents: Vec<Intent>,
}

/// Why the intents file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum IntentError {
    /// Unreadable or malformed file.
    #[error("{path}: {message}")]
    File {
        /// File.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A glob in `owned_scope` or `.intentignore` is invalid.
    #[error("intent {intent}: invalid glob {glob:?}: {message}")]
    Glob {
        /// Intent id (or `.intentignore`).
        intent: String,
        /// The glob.
        glob: String,
        /// Why.
        message: String,
    },
}

/// Largest intents file, `.intentignore` or trace Roost reads.
const MAX_SIDECAR: u64 = 1 << 20;
/// Largest `AGENT.md` put into the intent context.
const MAX_AGENT_NOTES: u64 = 64 << 10;

/// Whether intents are on for `workspace` (it has a real `.orchestration/`
/// directory; a symlink there does not count).
pub fn enabled(workspace: &Path) -> bool {
    Workspace::open(workspace).is_ok_and(|ws| enabled_in(&ws))
}

/// [`enabled`] on an already open workspace (the task loop asks every turn).
pub fn enabled_in(ws: &Workspace) -> bool {
    ws.is_dir_strict(ORCHESTRATION_DIR)
}

/// Read an orchestration sidecar: through the workspace layer, following
/// no symlink, a regular file of bounded size. `Ok(None)` when absent.
fn read_sidecar(workspace: &Path, name: &str, max: u64) -> Result<Option<String>, IntentError> {
    let rel = format!("{ORCHESTRATION_DIR}/{name}");
    let err = |message: String| IntentError::File {
        path: workspace.join(&rel),
        message,
    };
    let ws = Workspace::open(workspace).map_err(|e| err(e.to_string()))?;
    ws.read_text_strict(&rel, max)
        .map_err(|e| err(e.to_string()))
}

/// The intents of a workspace (empty when the file is absent).
pub fn load(workspace: &Path) -> Result<Vec<Intent>, IntentError> {
    let path = workspace
        .join(ORCHESTRATION_DIR)
        .join("active_intents.yaml");
    let Some(text) = read_sidecar(workspace, "active_intents.yaml", MAX_SIDECAR)? else {
        return Ok(Vec::new());
    };
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let file: IntentFile = serde_saphyr::from_str(&text).map_err(|e| IntentError::File {
        path: path.clone(),
        message: e.to_string(),
    })?;
    Ok(file.active_intents)
}

/// Compile scope globs as users read them: `*` and `?` match within one
/// path component and never cross `/`; `**` crosses any number of them; a
/// pattern without wildcards names that path and, if it is a directory,
/// everything under it (`src/auth` = `src/auth` + `src/auth/**`).
fn globset(owner: &str, globs: &[String]) -> Result<GlobSet, IntentError> {
    let mut b = GlobSetBuilder::new();
    for g in globs {
        let pattern = g.trim_start_matches("./").trim_end_matches('/');
        let compile = |p: &str| {
            GlobBuilder::new(p)
                .literal_separator(true)
                .build()
                .map_err(|e| IntentError::Glob {
                    intent: owner.to_owned(),
                    glob: g.clone(),
                    message: e.to_string(),
                })
        };
        b.add(compile(pattern)?);
        if !pattern.contains(['*', '?', '[', '{']) && !pattern.is_empty() {
            b.add(compile(&format!("{pattern}/**"))?);
        }
    }
    b.build().map_err(|e| IntentError::Glob {
        intent: owner.to_owned(),
        glob: String::new(),
        message: e.to_string(),
    })
}

/// `rel` without a leading `./`, when it is a normalised workspace-relative
/// path (no `..` component, not absolute): the only paths a scope judges.
pub(crate) fn normalised(rel: &str) -> Option<&str> {
    let rel = rel.trim_start_matches("./");
    (!rel.starts_with('/') && !rel.split('/').any(|c| c == "..")).then_some(rel)
}

/// What an active intent lets a call write.
#[derive(Debug, Clone)]
pub struct Scope {
    intent: String,
    owned: GlobSet,
    owned_globs: Vec<String>,
    ignored: GlobSet,
    roots: Vec<PathBuf>,
}

impl Scope {
    /// The scope of `intent` in `workspace` (with its `.intentignore`).
    pub fn new(workspace: &Path, intent: &Intent) -> Result<Self, IntentError> {
        let ignore_lines: Vec<String> = read_sidecar(workspace, ".intentignore", MAX_SIDECAR)?
            .unwrap_or_default()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(str::to_owned)
            .collect();
        Ok(Self {
            intent: intent.id.clone(),
            owned: globset(&intent.id, &intent.owned_scope)?,
            owned_globs: intent.owned_scope.clone(),
            ignored: globset(".intentignore", &ignore_lines)?,
            roots: intent.owned_scope.iter().map(|g| root_of(g)).collect(),
        })
    }

    /// The scope of `intent` as a subtask holds it: narrowed to `globs`
    /// (its parent's grant, which [`bound::hold`] proved lies inside the
    /// intent's `owned_scope`). `.intentignore` widens nothing here: the
    /// subtask may write exactly what it was given.
    fn narrowed(intent: &Intent, globs: &[String]) -> Result<Self, IntentError> {
        Ok(Self {
            intent: intent.id.clone(),
            owned: globset(&intent.id, globs)?,
            owned_globs: globs.to_vec(),
            ignored: GlobSet::empty(),
            roots: globs.iter().map(|g| root_of(g)).collect(),
        })
    }

    /// The intent's id.
    pub fn intent(&self) -> &str {
        &self.intent
    }

    /// The globs the task may write under the intent: its `owned_scope`,
    /// or the narrower part a subtask was given.
    pub fn globs(&self) -> &[String] {
        &self.owned_globs
    }

    /// Whether a workspace-relative path may be written under this intent
    /// (in `owned_scope`, or exempted by `.intentignore`). The path must be
    /// normalised ([`Workspace::normalize`](roost_sandbox::capability::Workspace::normalize)):
    /// one that climbs (`src/../x`) or is absolute is in no scope (a glob
    /// would match its words, not the place it names).
    pub fn allows(&self, rel: &str) -> bool {
        let Some(rel) = normalised(rel) else {
            return false;
        };
        self.owned.is_match(rel) || self.ignored.is_match(rel)
    }

    /// Whether `.intentignore` exempts the (normalised) path.
    pub fn ignored(&self, rel: &str) -> bool {
        normalised(rel).is_some_and(|rel| self.ignored.is_match(rel))
    }

    /// Whether everything under the workspace-relative directory `dir` is
    /// in scope (a `dir/**` glob), so writes there need no guard.
    pub fn covers_dir(&self, dir: &Path) -> bool {
        let d = dir.to_string_lossy();
        let d = d.trim_start_matches("./").trim_end_matches('/');
        self.owned_globs.iter().any(|g| {
            let g = g.trim_start_matches("./");
            let g = g.trim_end_matches('/');
            let literal = !g.contains(['*', '?', '[', '{']);
            g == "**"
                || (!d.is_empty()
                    && d != "."
                    && (g.strip_suffix("/**") == Some(d) || (literal && g == d)))
        })
    }

    /// Directories to grant write access to: the literal prefix of each
    /// owned glob (`src/auth/**` → `src/auth`).
    pub fn write_roots(&self) -> &[PathBuf] {
        &self.roots
    }
}

/// The directory part of a glob before its first wildcard.
pub fn root_of(glob: &str) -> PathBuf {
    let mut root = PathBuf::new();
    let parts: Vec<&str> = glob.trim_start_matches("./").split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        if part.contains(['*', '?', '[', '{']) || last {
            // A literal last component is a file: its directory is the root.
            break;
        }
        root.push(part);
    }
    if root.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        root
    }
}

/// The directory a single path lives in (for a one-time widened grant).
pub fn parent_dir(rel: &str) -> PathBuf {
    match Path::new(rel.trim_start_matches("./")).parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The `<intent_context>` block returned by `select_active_intent`:
/// `owned_scope` is what the task may write under the intent (`scope`'s
/// globs); a subtask holding it narrowed also sees the intent's own
/// scope, as `intent_scope`.
pub fn context_block(
    workspace: &Path,
    intent: &Intent,
    scope: &Scope,
    recent: &[TraceEntry],
) -> String {
    let list = |items: &[String]| {
        if items.is_empty() {
            "  (none)".to_owned()
        } else {
            items
                .iter()
                .map(|i| format!("  - {i}"))
                .collect::<Vec<_>>()
                .join("\n")
        }
    };
    let mut s = format!(
        "<intent_context>\nid: {}\nname: {}\nstatus: {}\nowned_scope:\n{}\nconstraints:\n{}\nacceptance_criteria:\n{}\n",
        intent.id,
        intent.name,
        intent.status,
        list(scope.globs()),
        list(&intent.constraints),
        list(&intent.acceptance_criteria)
    );
    if scope.globs() != intent.owned_scope.as_slice() {
        s.push_str(&format!(
            "intent_scope: (the whole intent's; this subtask may write only its owned_scope above)\n{}\n",
            list(&intent.owned_scope)
        ));
    }
    s.push_str("recent_trace:\n");
    if recent.is_empty() {
        s.push_str("  (none)\n");
    }
    for e in recent {
        let files: Vec<&str> = e.files.iter().map(|f| f.path.as_str()).collect();
        s.push_str(&format!(
            "  - {} {} {} [{}]\n",
            e.time,
            e.tool,
            e.args_summary,
            files.join(", ")
        ));
    }
    match read_sidecar(workspace, "AGENT.md", MAX_AGENT_NOTES) {
        Ok(Some(agent)) => {
            s.push_str("agent_notes: |\n");
            for line in agent.lines() {
                s.push_str(&format!("  {line}\n"));
            }
        }
        Ok(None) => {}
        Err(e) => {
            tracing::warn!("AGENT.md left out of the intent context: {e}");
            s.push_str(&format!(
                "agent_notes: (left out: {})\n",
                e.to_string().replace('\n', " ")
            ));
        }
    }
    s.push_str("</intent_context>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope_of(globs: &[&str]) -> (tempfile::TempDir, Scope) {
        let dir = tempfile::tempdir().expect("tempdir");
        let intent = Intent {
            id: "INT-9".into(),
            name: "t".into(),
            status: "IN_PROGRESS".into(),
            owned_scope: globs.iter().map(|g| (*g).to_owned()).collect(),
            constraints: vec![],
            acceptance_criteria: vec![],
            command_profile: None,
        };
        let s = Scope::new(dir.path(), &intent).expect("scope");
        (dir, s)
    }

    #[test]
    fn globs_mean_what_users_think() {
        let (_d, s) = scope_of(&["src/*.rs"]);
        assert!(s.allows("src/lib.rs"));
        // A path that climbs is in no scope, whatever its words match
        // (found by the intents fuzz target: `src/auth/**` matched
        // `src/auth/../../x`).
        assert!(!s.allows("src/../src/lib.rs") && !s.allows("/src/lib.rs"));
        assert!(!s.allows("src/auth/session.rs"), "* crosses /");
        assert!(!s.allows("src/new/deep/x.rs"), "* crosses /");
        let (_d, s) = scope_of(&["*.yaml"]);
        assert!(s.allows("config.yaml"));
        assert!(!s.allows(".orchestration/active_intents.yaml"));
        let (_d, s) = scope_of(&["src/?.rs"]);
        assert!(s.allows("src/a.rs") && !s.allows("src/a/b.rs"));
        let (_d, s) = scope_of(&["src/**/*.rs"]);
        assert!(s.allows("src/a/b/c.rs") && s.allows("src/c.rs"));
        let (_d, s) = scope_of(&["src/auth"]);
        assert!(s.allows("src/auth") && s.allows("src/auth/session.rs"));
        assert!(!s.allows("src/authx.rs"));
        assert!(s.covers_dir(Path::new("src/auth")));
    }

    #[test]
    fn roots_and_scope() {
        assert_eq!(root_of("src/auth/**"), PathBuf::from("src/auth"));
        assert_eq!(root_of("src/*.rs"), PathBuf::from("src"));
        assert_eq!(root_of("**/*.md"), PathBuf::from("."));
        assert_eq!(root_of("docs/plan.md"), PathBuf::from("docs"));
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join(ORCHESTRATION_DIR)).expect("mkdir");
        std::fs::write(
            dir.path().join(ORCHESTRATION_DIR).join(".intentignore"),
            "# comment\nCHANGELOG.md\n",
        )
        .expect("write");
        let intent = Intent {
            id: "INT-1".into(),
            name: "auth".into(),
            status: "IN_PROGRESS".into(),
            owned_scope: vec!["src/auth/**".into()],
            constraints: vec![],
            acceptance_criteria: vec![],
            command_profile: None,
        };
        let s = Scope::new(dir.path(), &intent).expect("scope");
        assert!(s.allows("src/auth/x.rs") && s.allows("./src/auth/deep/y.rs"));
        assert!(!s.allows("src/other.rs"));
        assert!(s.allows("CHANGELOG.md") && s.ignored("CHANGELOG.md"));
        assert_eq!(parent_dir("src/other.rs"), PathBuf::from("src"));
        assert_eq!(parent_dir("top.rs"), PathBuf::from("."));
    }

    #[test]
    fn loads_and_reports_bad_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(!enabled(dir.path()));
        let o = dir.path().join(ORCHESTRATION_DIR);
        std::fs::create_dir(&o).expect("mkdir");
        assert!(enabled(dir.path()));
        assert!(load(dir.path()).expect("empty").is_empty());
        std::fs::write(o.join("active_intents.yaml"), "active_intents:\n  - id: INT-001\n    name: Auth\n    status: IN_PROGRESS\n    owned_scope: [\"src/auth/**\"]\n").expect("write");
        let i = load(dir.path()).expect("loads");
        assert_eq!(i[0].owned_scope, vec!["src/auth/**"]);
        std::fs::write(
            o.join("active_intents.yaml"),
            "active_intents:\n  - id: [oops\n",
        )
        .expect("write");
        let e = load(dir.path()).expect_err("bad");
        assert!(e.to_string().contains("active_intents.yaml"), "{e}");
    }

    /// A misspelt key is an error naming the file, the line, the key and
    /// the keys that exist, not an intent with no scope.
    #[test]
    fn unknown_keys_are_errors_with_the_known_ones() {
        let dir = tempfile::tempdir().expect("tempdir");
        let o = dir.path().join(ORCHESTRATION_DIR);
        std::fs::create_dir(&o).expect("mkdir");
        std::fs::write(
            o.join("active_intents.yaml"),
            "active_intents:\n  - id: INT-001\n    name: Auth\n    status: IN_PROGRESS\n    owned_scop: [\"src/auth/**\"]\n",
        )
        .expect("write");
        let e = load(dir.path()).expect_err("unknown key").to_string();
        assert!(e.contains("active_intents.yaml"), "{e}");
        assert!(e.contains("owned_scop"), "{e}");
        assert!(
            e.contains("owned_scope") && e.contains("acceptance_criteria"),
            "{e}"
        );
        assert!(e.contains("line 5"), "{e}");
        std::fs::write(o.join("active_intents.yaml"), "intents: []\n").expect("write");
        let e = load(dir.path()).expect_err("unknown top key").to_string();
        assert!(e.contains("intents") && e.contains("active_intents"), "{e}");
    }
}
