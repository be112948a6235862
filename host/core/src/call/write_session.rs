//! The write session around a call that may write: a lease on its write
//! roots (calls whose roots overlap take turns, so a guard only ever judges
//! its own call's writes), and a write guard that undoes what the scope
//! does not allow — every authority file (`.git/`, `.orchestration/`,
//! `.rooignore`) always, and under an intent everything outside its owned
//! scope — and reports exactly what it undid. Every path that runs a tool
//! that may write goes through it: a task's calls and `roost tool call`
//! alike, so a direct call can do no more than the same call in a task.

use std::path::PathBuf;

use crate::intents::Scope;
use crate::intents::bound::Bound;
use crate::tools::{ErrorCode, ToolError};
use roost_sandbox::capability::{
    GuardBudget, GuardError, GuardReport, GuardRule, Workspace, WriteGuard, WriteLease,
    WriteLeases, authority,
};

/// Most paths a violation names; the rest are counted.
const NAMED_PATHS: usize = 50;

/// Where a call may write, and what it may change there.
#[derive(Debug, Clone, Default)]
pub struct WriteRule {
    /// The active intent's scope; `None`: everything under the roots but
    /// authority files.
    pub scope: Option<Scope>,
    /// Paths outside the scope a person approved for this call only.
    pub approved: Vec<String>,
    /// A subtask's bound (its parent's scope), which nothing widens.
    pub bound: Option<Bound>,
}

impl WriteRule {
    /// Whether the call may change the workspace-relative `rel`.
    pub fn allows(&self, rel: &str) -> bool {
        !authority::is_authority(rel)
            && self.bound.as_ref().is_none_or(|b| b.allows(rel))
            && match &self.scope {
                Some(scope) => scope.allows(rel) || self.approved.iter().any(|p| p == rel),
                None => true,
            }
    }
}

/// A lease and an armed guard, from before a call until after it.
#[derive(Debug)]
pub struct WriteSession {
    judge: Judge,
    guard: WriteGuard,
    _lease: WriteLease,
}

/// The rule, with the roots it covers whole (only their authority
/// directories need watching).
#[derive(Debug)]
struct Judge {
    rule: WriteRule,
    covered: Vec<String>,
}

impl Judge {
    fn watch(&self, dir: &str) -> bool {
        authority::is_authority(dir)
            || !self.covered.iter().any(|c| {
                c == "."
                    || dir == c
                    || (dir.len() > c.len()
                        && dir.starts_with(c.as_str())
                        && dir.as_bytes().get(c.len()) == Some(&b'/'))
            })
    }

    /// Run `f` with the rule as the guard asks it.
    fn with_rule<R>(&self, f: impl FnOnce(&GuardRule<'_>) -> R) -> R {
        let allows = |rel: &str| self.rule.allows(rel);
        let watch = |dir: &str| self.watch(dir);
        f(&GuardRule {
            allows: &allows,
            watch_dir: &watch,
        })
    }
}

impl WriteSession {
    /// Wait for a lease on `roots` (workspace-relative directories), then
    /// arm the guard. When the guard cannot promise a restore (too much
    /// outside the scope to keep) the call must not run.
    pub async fn open(
        ws: &Workspace,
        roots: &[PathBuf],
        rule: WriteRule,
        budget: GuardBudget,
    ) -> Result<Self, GuardError> {
        let lease = WriteLeases::process().acquire(ws, roots).await;
        let covered: Vec<String> = roots
            .iter()
            .filter(|r| {
                rule.scope.as_ref().is_none_or(|s| s.covers_dir(r))
                    && rule.bound.as_ref().is_none_or(|b| b.covers_dir(r))
            })
            .map(|r| {
                let c = r.to_string_lossy();
                let c = c.trim_start_matches("./").trim_end_matches('/');
                if c.is_empty() {
                    ".".to_owned()
                } else {
                    c.to_owned()
                }
            })
            .collect();
        let judge = Judge { rule, covered };
        let guard = judge.with_rule(|r| WriteGuard::arm(ws, roots, r, budget))?;
        Ok(Self {
            judge,
            guard,
            _lease: lease,
        })
    }

    /// After the call: undo every change the rule does not allow and
    /// report it. The lease comes back: drop it once what the call changed
    /// has been read (its diff), so no other call writes there before.
    pub fn close(self) -> (GuardReport, WriteLease) {
        let Self {
            judge,
            guard,
            _lease,
        } = self;
        (judge.with_rule(|r| guard.check(r)), _lease)
    }
}

/// The error a call that wrote where it may not gets (`None` when it did
/// not): under an intent a `scope_violation`, otherwise `protected_path`;
/// `limit_exceeded` when undoing cost the host more than its budget. The
/// message says what was undone and, plainly, anything that was not.
pub fn violation(report: &GuardReport, tool: &str, intent_id: Option<&str>) -> Option<ToolError> {
    if !report.violated() {
        return None;
    }
    let mut paths: Vec<&str> = report.reverted.iter().map(String::as_str).collect();
    paths.extend(report.failed.iter().map(|(p, _)| p.as_str()));
    let total = paths.len();
    let touched_authority = paths.iter().any(|p| authority::is_authority(p));
    let first = paths.first().copied().unwrap_or_default().to_owned();
    paths.truncate(NAMED_PATHS);
    let mut message = match intent_id {
        Some(id) => format!(
            "`{tool}` wrote outside the owned scope of {id}{}",
            if touched_authority {
                " (including .git/, .orchestration/ or .rooignore, which no tool may change)"
            } else {
                ""
            }
        ),
        None => format!(
            "`{tool}` changed .git/, .orchestration/ or .rooignore, which no tool may change"
        ),
    };
    if report.failed.is_empty() {
        message.push_str(&format!("; those changes were undone ({total} in all)"));
    } else {
        message.push_str(&format!(
            "; {} undone, but NOT undone: {}",
            report.reverted.len(),
            not_undone(report)
        ));
    }
    if let Some(took) = report.overran {
        message.push_str(&format!(
            ". Undoing them took the host {:.1} s, more than its budget for a call; the call is reported as over its limits",
            took.as_secs_f64()
        ));
    }
    let mut v = match intent_id {
        Some(id) => serde_json::json!({
            "code": "scope_violation",
            "intent_id": id,
        }),
        None => serde_json::json!({ "code": "protected_path" }),
    };
    v["path"] = serde_json::json!(first);
    v["paths"] = serde_json::json!(paths);
    if total > NAMED_PATHS {
        v["more_paths"] = serde_json::json!(total - NAMED_PATHS);
    }
    if !report.failed.is_empty() {
        v["not_undone"] = serde_json::json!(
            report
                .failed
                .iter()
                .take(NAMED_PATHS)
                .map(|(p, why)| serde_json::json!({ "path": p, "why": why }))
                .collect::<Vec<_>>()
        );
    }
    v["message"] = serde_json::json!(message);
    let code = if report.overran.is_some() {
        ErrorCode::LimitExceeded
    } else {
        ErrorCode::PermissionDenied
    };
    Some(ToolError::new(code, v.to_string()))
}

/// The trace's account of a violation, bounded like the error.
pub fn trace_detail(report: &GuardReport) -> String {
    let mut named: Vec<&str> = report
        .reverted
        .iter()
        .map(String::as_str)
        .take(NAMED_PATHS)
        .collect();
    if report.reverted.len() > NAMED_PATHS {
        named.push("…");
    }
    let mut detail = format!(
        "wrote outside owned scope, undone ({}): {}",
        report.reverted.len(),
        named.join(", ")
    );
    if !report.failed.is_empty() {
        detail.push_str(&format!("; NOT undone: {}", not_undone(report)));
    }
    if let Some(took) = report.overran {
        detail.push_str(&format!(
            "; undoing took {:.1} s, over the host's budget",
            took.as_secs_f64()
        ));
    }
    detail
}

fn not_undone(report: &GuardReport) -> String {
    let mut s = report
        .failed
        .iter()
        .take(NAMED_PATHS)
        .map(|(p, e)| format!("{p} ({e})"))
        .collect::<Vec<_>>()
        .join(", ");
    if report.failed.len() > NAMED_PATHS {
        s.push_str(&format!(" and {} more", report.failed.len() - NAMED_PATHS));
    }
    s
}
