//! What a delegated task may write: its parent's scope, or a narrower one
//! it was given, never more. Glob sets are compared conservatively: a
//! child's glob counts as inside a parent's only when every path it can
//! match provably is (its literal directory lies under the parent's literal
//! directory); two sibling scopes count as disjoint only when their
//! literal directories diverge. When containment cannot be proved, the
//! answer is no.
//!
//! # Subtasks under intents
//!
//! Where intents are on, a subtask works under its parent's intent,
//! narrowed to what it was given — Roo's "Touch and Go": an orchestrator
//! under `INT-A` (`src/a/**`) fans out children scoped `src/a/p1.txt` and
//! `src/a/p2.txt`, and each writes its own file under `INT-A`:
//!
//! - The parent passes its active intent on (`Inherited::intent`, with
//!   `write_bound`: the part of the intent's scope the child may write).
//!   The child starts under it: no `select_active_intent` is needed.
//! - A subtask holds an intent through [`hold`], the one rule for starting,
//!   resuming and `select_active_intent`: an intent whose `owned_scope`
//!   lies inside its bound is held as it is; the intent it was passed on is
//!   held narrowed to its bound (its writes, sandbox write roots, trace
//!   and the `<intent_context>` it reads name only its own part); any other
//!   intent is refused (`intent_outside_parent_scope`), so a child never
//!   works under an intent its parent did not hand it, and its work is
//!   recorded under that intent.
//! - Nothing widens on the way down: a child's bound lies inside what its
//!   parent holds, a narrowed intent passes on narrowed, and `.intentignore`
//!   exempts nothing beyond a narrowed scope. A write outside it is refused
//!   (`outside_parent_scope`) with no one asked.

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use super::{Intent, IntentError, Scope};

/// The glob's components, normalised (`./` and trailing `/` dropped).
fn components(glob: &str) -> Vec<&str> {
    glob.trim_start_matches("./")
        .trim_end_matches('/')
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect()
}

fn wild(component: &str) -> bool {
    component.contains(['*', '?', '[', '{', '\\'])
}

/// The leading literal components of `glob`, and whether the glob is
/// literal throughout (a literal glob also covers what lies under it).
fn literal_prefix(glob: &str) -> (Vec<&str>, bool) {
    let comps = components(glob);
    let literal: Vec<&str> = comps.iter().copied().take_while(|c| !wild(c)).collect();
    let whole = literal.len() == comps.len();
    (literal, whole)
}

/// Whether everything `child` matches provably lies in what `parent`
/// matches.
pub fn glob_within(child: &str, parent: &str) -> bool {
    let (c_comps, p_comps) = (components(child), components(parent));
    if c_comps.contains(&"..") {
        return false;
    }
    if p_comps == ["**"] || c_comps == p_comps {
        return true;
    }
    // The parent's subtree: `dir/**` (below dir) or a literal `dir`
    // (dir itself and below).
    let (base, inclusive): (&[&str], bool) = match p_comps.split_last() {
        Some((&"**", base)) if !base.iter().any(|c| wild(c)) => (base, false),
        _ if !p_comps.iter().any(|c| wild(c)) => (&p_comps[..], true),
        _ => return false,
    };
    let (c_literal, _) = literal_prefix(child);
    if !c_literal.starts_with(base) {
        // The child's wildcards begin before the parent's directory ends.
        return false;
    }
    // Below `base`: the child must name something strictly under it,
    // unless the parent covers `base` itself.
    inclusive || c_comps.len() > base.len()
}

/// Whether every glob of `child` lies within one of `parent`'s.
pub fn within(child: &[String], parent: &[String]) -> bool {
    child
        .iter()
        .all(|c| parent.iter().any(|p| glob_within(c, p)))
}

/// Whether `a` and `b` provably match no path in common.
pub fn globs_disjoint(a: &str, b: &str) -> bool {
    let (la, _) = literal_prefix(a);
    let (lb, _) = literal_prefix(b);
    !(la.starts_with(&lb) || lb.starts_with(&la))
}

/// The first pair of globs of `a` and `b` that may overlap.
pub fn overlap<'a>(a: &'a [String], b: &'a [String]) -> Option<(&'a str, &'a str)> {
    a.iter().find_map(|x| {
        b.iter()
            .find(|y| !globs_disjoint(x, y))
            .map(|y| (x.as_str(), y.as_str()))
    })
}

/// The write bound a delegated task runs under: the globs it may write
/// (empty: nothing, it is read-only).
#[derive(Debug, Clone)]
pub struct Bound {
    globs: Vec<String>,
    set: GlobSet,
    roots: Vec<PathBuf>,
}

impl Bound {
    /// The bound of `globs`.
    pub fn new(globs: &[String]) -> Result<Self, IntentError> {
        let mut b = GlobSetBuilder::new();
        for g in globs {
            let pattern = g.trim_start_matches("./").trim_end_matches('/');
            let compile = |p: &str| {
                GlobBuilder::new(p)
                    .literal_separator(true)
                    .build()
                    .map_err(|e| IntentError::Glob {
                        intent: "(delegated scope)".to_owned(),
                        glob: g.clone(),
                        message: e.to_string(),
                    })
            };
            b.add(compile(pattern)?);
            if !pattern.contains(['*', '?', '[', '{']) && !pattern.is_empty() {
                b.add(compile(&format!("{pattern}/**"))?);
            }
        }
        let set = b.build().map_err(|e| IntentError::Glob {
            intent: "(delegated scope)".to_owned(),
            glob: globs.join(", "),
            message: e.to_string(),
        })?;
        Ok(Self {
            roots: globs.iter().map(|g| super::root_of(g)).collect(),
            globs: globs.to_vec(),
            set,
        })
    }

    /// Whether the workspace-relative `rel` (normalised; a path that
    /// climbs or is absolute is in no scope) may be written.
    pub fn allows(&self, rel: &str) -> bool {
        super::normalised(rel).is_some_and(|rel| self.set.is_match(rel))
    }

    /// Whether everything under the workspace-relative directory `dir` may
    /// be written (so writes there need no guard beyond the authority
    /// files).
    pub fn covers_dir(&self, dir: &std::path::Path) -> bool {
        let d = dir.to_string_lossy();
        let d = d.trim_start_matches("./").trim_end_matches('/');
        self.globs.iter().any(|g| {
            let g = g.trim_start_matches("./").trim_end_matches('/');
            g == "**"
                || (!d.is_empty()
                    && d != "."
                    && (g.strip_suffix("/**") == Some(d) || (!wild(g) && g == d)))
        })
    }

    /// Its globs.
    pub fn globs(&self) -> &[String] {
        &self.globs
    }

    /// The directories writes may happen under.
    pub fn write_roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// Whether it allows no write at all.
    pub fn read_only(&self) -> bool {
        self.globs.is_empty()
    }
}

/// Why a subtask may not hold an intent.
#[derive(Debug, thiserror::Error)]
pub enum HoldError {
    /// The intent reaches beyond the subtask's bound and is not the one its
    /// parent passed on (or that one does not provably cover the bound).
    #[error(
        "intent {intent} ({}) is not inside this subtask's scope ({}) and is not the intent its parent \
         passed on{}",
        .owned_scope.join(", "),
        if .bound.is_empty() { "nothing".to_owned() } else { .bound.join(", ") },
        .inherited.as_ref().map(|i| format!(" ({i})")).unwrap_or_default()
    )]
    OutsideParentScope {
        /// The intent asked for.
        intent: String,
        /// Its `owned_scope`.
        owned_scope: Vec<String>,
        /// What the subtask may write.
        bound: Vec<String>,
        /// The intent its parent passed on, if any.
        inherited: Option<String>,
    },
    /// A glob is invalid.
    #[error(transparent)]
    Invalid(#[from] IntentError),
}

/// The intent `intent` as a task bounded by `bound` (`None`: a root task)
/// and passed `inherited` by its parent holds it, with the scope it may
/// write under it. See the module's documentation for the rule.
pub fn hold(
    workspace: &Path,
    intent: Intent,
    bound: Option<&Bound>,
    inherited: Option<&str>,
) -> Result<(Intent, Scope), HoldError> {
    let Some(bound) = bound else {
        let scope = Scope::new(workspace, &intent)?;
        return Ok((intent, scope));
    };
    if within(&intent.owned_scope, bound.globs()) {
        let scope = Scope::new(workspace, &intent)?;
        return Ok((intent, scope));
    }
    if inherited == Some(intent.id.as_str()) && within(bound.globs(), &intent.owned_scope) {
        let scope = Scope::narrowed(&intent, bound.globs())?;
        return Ok((intent, scope));
    }
    Err(HoldError::OutsideParentScope {
        owned_scope: intent.owned_scope.clone(),
        intent: intent.id,
        bound: bound.globs().to_vec(),
        inherited: inherited.map(str::to_owned),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containment_is_proved_or_refused() {
        assert!(glob_within("src/auth/**", "src/**"));
        assert!(glob_within("src/*.rs", "src/**"));
        assert!(glob_within("src/a.rs", "src"));
        assert!(glob_within("src", "src"));
        assert!(glob_within("anything/**", "**"));
        assert!(glob_within("./src/x/", "src/**"));
        // Not provable, or wider.
        assert!(!glob_within("src", "src/**"));
        assert!(!glob_within("**/x.rs", "src/**"));
        assert!(!glob_within("s*/x", "src/**"));
        assert!(!glob_within("src/**", "src/auth/**"));
        assert!(!glob_within("srcx/**", "src/**"));
        assert!(!glob_within("src/../etc/**", "src/**"));
        assert!(!glob_within("src/a.rs", "src/*.rs"));
        assert!(glob_within("src/*.rs", "src/*.rs"));
        assert!(within(
            &["src/a/**".into(), "docs/x.md".into()],
            &["src/**".into(), "docs/**".into()]
        ));
        assert!(!within(&["src/**".into()], &[]));
    }

    #[test]
    fn disjointness_is_proved_or_refused() {
        assert!(globs_disjoint("src/a/**", "src/b/**"));
        assert!(globs_disjoint("src/a.rs", "src/b.rs"));
        assert!(!globs_disjoint("src/**", "src/a/**"));
        assert!(!globs_disjoint("src/*.rs", "src/*.md"));
        assert!(!globs_disjoint("**", "docs/**"));
        let a = vec!["x/**".to_owned(), "src/**".to_owned()];
        let b = vec!["src/lib.rs".to_owned()];
        assert_eq!(overlap(&a, &b), Some(("src/**", "src/lib.rs")));
        assert_eq!(overlap(&a, &["docs/**".to_owned()]), None);
    }

    fn intent(id: &str, scope: &[&str]) -> Intent {
        Intent {
            id: id.into(),
            name: id.into(),
            status: "IN_PROGRESS".into(),
            owned_scope: scope.iter().map(|g| (*g).to_owned()).collect(),
            constraints: vec![],
            acceptance_criteria: vec![],
            command_profile: None,
        }
    }

    /// Touch and Go: the intent passed on is held narrowed to the child's
    /// part; an intent inside the part as it is; any other wider one, and
    /// the passed-on one where it cannot be proved to cover the part, not.
    #[test]
    fn a_subtask_holds_its_parents_intent_narrowed_and_nothing_wider() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join(super::super::ORCHESTRATION_DIR)).expect("mkdir");
        std::fs::write(
            dir.path().join(".orchestration/.intentignore"),
            "CHANGELOG.md\n",
        )
        .expect("write");
        let ws = dir.path();
        let part = Bound::new(&["src/a/p1.txt".into()]).expect("bound");
        let (held, scope) = hold(
            ws,
            intent("INT-A", &["src/a/**"]),
            Some(&part),
            Some("INT-A"),
        )
        .expect("held");
        assert_eq!(
            held.owned_scope,
            vec!["src/a/**"],
            "the intent itself is unchanged"
        );
        assert_eq!(scope.intent(), "INT-A");
        assert_eq!(scope.globs(), ["src/a/p1.txt"]);
        assert!(scope.allows("src/a/p1.txt"));
        assert!(!scope.allows("src/a/p2.txt") && !scope.allows("CHANGELOG.md"));
        assert_eq!(scope.write_roots(), [PathBuf::from("src/a")]);
        // Not passed on: refused, even though it covers the part.
        let e = hold(
            ws,
            intent("INT-SRC", &["src/**"]),
            Some(&part),
            Some("INT-A"),
        )
        .expect_err("not passed on");
        assert!(
            matches!(e, HoldError::OutsideParentScope { ref intent, .. } if intent == "INT-SRC"),
            "{e}"
        );
        assert!(e.to_string().contains("(INT-A)"), "{e}");
        // Passed on but not provably covering the part.
        let other = Bound::new(&["src/b/**".into()]).expect("bound");
        assert!(
            hold(
                ws,
                intent("INT-A", &["src/a/**"]),
                Some(&other),
                Some("INT-A")
            )
            .is_err()
        );
        let wide = Bound::new(&["src/**".into()]).expect("bound");
        // Inside the part: held as it is, `.intentignore` and all.
        let (_, s) =
            hold(ws, intent("INT-N", &["src/a/p1.txt"]), Some(&wide), None).expect("inside");
        assert_eq!(s.globs(), ["src/a/p1.txt"]);
        assert!(s.allows("CHANGELOG.md"));
        // A read-only subtask holds it with nothing to write.
        let none = Bound::new(&[]).expect("bound");
        let (_, s) = hold(
            ws,
            intent("INT-A", &["src/a/**"]),
            Some(&none),
            Some("INT-A"),
        )
        .expect("held");
        assert!(s.globs().is_empty() && !s.allows("src/a/p1.txt"));
        // A root task holds any intent as it is.
        let (_, s) = hold(ws, intent("INT-SRC", &["src/**"]), None, None).expect("root");
        assert!(s.allows("src/b/x.rs"));
    }

    #[test]
    fn a_bound_allows_its_globs_only() {
        let b = Bound::new(&["src/a/**".into(), "notes.md".into()]).expect("bound");
        assert!(b.allows("src/a/x.rs") && b.allows("./notes.md"));
        assert!(!b.allows("src/b/x.rs") && !b.allows("notes.md.bak"));
        assert!(Bound::new(&[]).expect("bound").read_only());
    }
}
