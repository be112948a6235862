//! Named permission profiles for commands: what a command may read, where
//! it may write besides the task's write scope, what stays hidden from it,
//! which network origins it may reach, and which environment variables and
//! secrets it gets. `read-only` and `workspace` are built in; a deployment
//! adds its own under `[command_profiles.NAME]`. A mode or an intent names
//! the profile its commands run under.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use roost_sandbox::capability::Origin;

use super::limits::{Limits, LimitsConfig};

/// A profile as the config file gives it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileConfig {
    /// Whether commands may write the task's write scope (the intent's
    /// write roots; without intents, the workspace). Default: yes.
    pub writes_scope: Option<bool>,
    /// Only these paths (and the system's program directories and the
    /// workspace) are visible; absent: the whole file system, read-only.
    pub read: Option<Vec<String>>,
    /// Paths writable besides the scope (a build cache, say).
    #[serde(default)]
    pub write: Vec<String>,
    /// Paths hidden from commands (an empty directory or file in their
    /// place).
    #[serde(default)]
    pub deny: Vec<String>,
    /// Origins commands may reach (`https://crates.io`,
    /// `http://127.0.0.1:8080`); none: no network at all.
    #[serde(default)]
    pub network: Vec<String>,
    /// Environment variables passed through by name, besides PATH, HOME,
    /// LANG and TERM.
    #[serde(default)]
    pub env: Vec<String>,
    /// Secrets (from `[secrets]` or the environment) passed as variables
    /// of the same name; no other secret ever reaches a command.
    #[serde(default)]
    pub secrets: Vec<String>,
    /// Whether commands may create Unix sockets (default no: a socket
    /// file is a way out of the sandbox that a read-only mount does not
    /// close; see `commands::seccomp`).
    pub unix_sockets: Option<bool>,
    /// Bounds on processes, memory, file size and CPU time.
    #[serde(default)]
    pub limits: LimitsConfig,
}

/// A profile ready to use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// Its name.
    pub name: String,
    /// Whether the write scope is writable.
    pub writes_scope: bool,
    /// Visible paths, when restricted.
    pub read: Option<Vec<PathBuf>>,
    /// Extra writable paths.
    pub write: Vec<PathBuf>,
    /// Hidden paths.
    pub deny: Vec<PathBuf>,
    /// Reachable origins.
    pub network: Vec<Origin>,
    /// Variables passed through.
    pub env: Vec<String>,
    /// Secrets passed by name.
    pub secrets: Vec<String>,
    /// Whether Unix sockets may be created.
    pub unix_sockets: bool,
    /// Bounds on the machine's resources.
    pub limits: Limits,
}

/// A profile the config gets wrong.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// A path is not absolute (or `~/…`).
    #[error("command profile `{profile}`: `{path}` is not an absolute path (or ~/…)")]
    Path {
        /// The profile.
        profile: String,
        /// The path.
        path: String,
    },
    /// An origin does not parse.
    #[error("command profile `{profile}`: network origin `{origin}`: {why}")]
    Origin {
        /// The profile.
        profile: String,
        /// The origin.
        origin: String,
        /// Why.
        why: String,
    },
    /// No profile of that name.
    #[error("no command profile `{name}` (known: {known})")]
    Unknown {
        /// The name asked for.
        name: String,
        /// The known ones.
        known: String,
    },
}

/// Name of the built-in profile that writes nothing.
pub const READ_ONLY: &str = "read-only";
/// Name of the built-in profile that writes the task's scope.
pub const WORKSPACE: &str = "workspace";

impl Profile {
    fn builtin(name: &str, writes_scope: bool) -> Self {
        Self {
            name: name.to_owned(),
            writes_scope,
            read: None,
            write: Vec::new(),
            deny: Vec::new(),
            network: Vec::new(),
            env: Vec::new(),
            secrets: Vec::new(),
            unix_sockets: false,
            limits: Limits::default(),
        }
    }

    fn from_config(
        name: &str,
        c: &ProfileConfig,
        home: Option<&Path>,
    ) -> Result<Self, ProfileError> {
        let path = |p: &String| -> Result<PathBuf, ProfileError> {
            let expanded = match (p.strip_prefix("~/"), home) {
                (Some(rest), Some(h)) => h.join(rest),
                _ if p == "~" => home.map(Path::to_path_buf).unwrap_or_default(),
                _ => PathBuf::from(p),
            };
            if expanded.is_absolute() {
                Ok(expanded)
            } else {
                Err(ProfileError::Path {
                    profile: name.to_owned(),
                    path: p.clone(),
                })
            }
        };
        let paths = |list: &[String]| list.iter().map(path).collect::<Result<Vec<_>, _>>();
        Ok(Self {
            name: name.to_owned(),
            writes_scope: c.writes_scope.unwrap_or(true),
            read: c.read.as_deref().map(paths).transpose()?,
            write: paths(&c.write)?,
            deny: paths(&c.deny)?,
            network: c
                .network
                .iter()
                .map(|o| {
                    Origin::parse(o).map_err(|e| ProfileError::Origin {
                        profile: name.to_owned(),
                        origin: o.clone(),
                        why: e.to_string(),
                    })
                })
                .collect::<Result<_, _>>()?,
            env: c.env.clone(),
            secrets: c.secrets.clone(),
            unix_sockets: c.unix_sockets.unwrap_or(false),
            limits: Limits::from_config(&c.limits),
        })
    }
}

/// Every profile of a deployment: the built-in ones and the config's.
#[derive(Debug, Clone)]
pub struct Profiles(BTreeMap<String, Profile>);

impl Default for Profiles {
    fn default() -> Self {
        let mut m = BTreeMap::new();
        m.insert(READ_ONLY.to_owned(), Profile::builtin(READ_ONLY, false));
        m.insert(WORKSPACE.to_owned(), Profile::builtin(WORKSPACE, true));
        Self(m)
    }
}

impl Profiles {
    /// The built-in profiles and `config`'s (which may redefine
    /// `workspace`, never `read-only`); `home` expands `~/`.
    pub fn new(
        config: &BTreeMap<String, ProfileConfig>,
        home: Option<&Path>,
    ) -> Result<Self, ProfileError> {
        let mut all = Self::default();
        for (name, c) in config {
            if name == READ_ONLY {
                continue;
            }
            all.0
                .insert(name.clone(), Profile::from_config(name, c, home)?);
        }
        Ok(all)
    }

    /// The same profiles for a shared host (`roost serve`): a profile
    /// that shows the whole file system shows only the system's program
    /// directories and the task's workspace instead, so one tenant's
    /// commands never see another's root or the server's state.
    pub fn confined_reads(mut self) -> Self {
        for p in self.0.values_mut() {
            if p.read.is_none() {
                p.read = Some(Vec::new());
            }
        }
        self
    }

    /// The profile called `name`.
    pub fn get(&self, name: &str) -> Result<&Profile, ProfileError> {
        self.0.get(name).ok_or_else(|| ProfileError::Unknown {
            name: name.to_owned(),
            known: self.0.keys().cloned().collect::<Vec<_>>().join(", "),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_from_config() {
        let mut c = BTreeMap::new();
        c.insert(
            "ci".to_owned(),
            ProfileConfig {
                write: vec!["~/.cache/ci".into()],
                deny: vec!["/etc/shadow".into()],
                network: vec!["http://127.0.0.1:8080".into()],
                env: vec!["CI".into()],
                ..ProfileConfig::default()
            },
        );
        c.insert(
            READ_ONLY.to_owned(),
            ProfileConfig {
                writes_scope: Some(true),
                ..ProfileConfig::default()
            },
        );
        let p = Profiles::new(&c, Some(Path::new("/home/me"))).expect("profiles");
        let ci = p.get("ci").expect("ci");
        assert_eq!(ci.write, vec![PathBuf::from("/home/me/.cache/ci")]);
        assert_eq!(ci.network.len(), 1);
        // `read-only` cannot be redefined to write.
        assert!(!p.get(READ_ONLY).expect("builtin").writes_scope);
        assert!(p.get(WORKSPACE).expect("builtin").writes_scope);
        let e = p.get("nope").expect_err("unknown");
        assert!(
            e.to_string().contains("known: ci, read-only, workspace"),
            "{e}"
        );
        let mut bad = BTreeMap::new();
        bad.insert(
            "x".to_owned(),
            ProfileConfig {
                write: vec!["relative/dir".into()],
                ..ProfileConfig::default()
            },
        );
        assert!(Profiles::new(&bad, None).is_err());
        let mut bad = BTreeMap::new();
        bad.insert(
            "x".to_owned(),
            ProfileConfig {
                network: vec!["ftp://x".into()],
                ..ProfileConfig::default()
            },
        );
        assert!(Profiles::new(&bad, None).is_err());
    }
}
