//! What a delegated task may write: its parent's scope, or a narrower one
//! it was given, never more. Glob sets are compared conservatively: a
//! child's glob counts as inside a parent's only when every path it can
//! match provably is (its literal directory lies under the parent's literal
//! directory); two sibling scopes count as disjoint only when their
//! literal directories diverge. When containment cannot be proved, the
//! answer is no.

use std::path::PathBuf;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use super::IntentError;

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

    /// Whether the workspace-relative `rel` may be written.
    pub fn allows(&self, rel: &str) -> bool {
        self.set.is_match(rel.trim_start_matches("./"))
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

    #[test]
    fn a_bound_allows_its_globs_only() {
        let b = Bound::new(&["src/a/**".into(), "notes.md".into()]).expect("bound");
        assert!(b.allows("src/a/x.rs") && b.allows("./notes.md"));
        assert!(!b.allows("src/b/x.rs") && !b.allows("notes.md.bak"));
        assert!(Bound::new(&[]).expect("bound").read_only());
    }
}
