//! Registry credentials: each belongs to one registry host and is sent to
//! that host only. Read from Docker's `config.json` (`auths`, what
//! `docker login` and `wkg` write), or given directly. Credential helper
//! programs (`credsStore`, `credHelpers`) are not run: a registry install
//! runs no program outside the sandbox.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;

/// A user name and password (or token) for one registry.
#[derive(Clone, PartialEq, Eq)]
pub struct Credential {
    /// User name.
    pub username: String,
    /// Password or personal access token.
    pub password: String,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the password, in a log or an error.
        write!(f, "Credential({}, ***)", self.username)
    }
}

impl Credential {
    /// The `Authorization: Basic` value.
    pub(crate) fn basic(&self) -> String {
        format!(
            "Basic {}",
            STANDARD.encode(format!("{}:{}", self.username, self.password))
        )
    }
}

/// Credentials by registry (`host[:port]`, lowercase).
#[derive(Debug, Clone, Default)]
pub struct Credentials {
    by_registry: BTreeMap<String, Credential>,
}

/// Docker's `config.json`, the part Roost reads.
#[derive(Deserialize)]
struct DockerConfig {
    #[serde(default)]
    auths: BTreeMap<String, DockerAuth>,
}

#[derive(Deserialize)]
struct DockerAuth {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
}

impl Credentials {
    /// None.
    pub fn none() -> Self {
        Self::default()
    }

    /// Add `credential` for `registry` (`host[:port]`).
    pub fn with(mut self, registry: &str, credential: Credential) -> Self {
        self.by_registry
            .insert(registry.to_ascii_lowercase(), credential);
        self
    }

    /// The credential for `registry`, if any.
    pub fn get(&self, registry: &str) -> Option<&Credential> {
        self.by_registry.get(&registry.to_ascii_lowercase())
    }

    /// Where Docker keeps its config: `$DOCKER_CONFIG/config.json`, else
    /// `~/.docker/config.json`.
    pub fn docker_config_path() -> Option<PathBuf> {
        if let Some(dir) = std::env::var_os("DOCKER_CONFIG") {
            return Some(PathBuf::from(dir).join("config.json"));
        }
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".docker").join("config.json"))
    }

    /// The `auths` of Docker's config at `path`; a missing file is no
    /// credentials, a malformed one an error naming the file. Entries that
    /// do not decode are skipped with a warning (one bad entry does not
    /// take the others away).
    pub fn from_docker_config(path: &Path) -> Result<Self, String> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::none()),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        Self::from_docker_json(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The `auths` of a Docker config's text.
    pub fn from_docker_json(text: &str) -> Result<Self, String> {
        let config: DockerConfig =
            serde_json::from_str(text).map_err(|e| format!("not a Docker config: {e}"))?;
        let mut out = Self::none();
        for (key, entry) in config.auths {
            let registry = registry_of(&key);
            match decode(&entry) {
                Some(c) => out = out.with(&registry, c),
                None => tracing::warn!(
                    registry = %registry,
                    "a registry login in the Docker config has no usable user name and password; skipped"
                ),
            }
        }
        Ok(out)
    }
}

/// The registry a Docker `auths` key names: keys may be bare hosts or
/// URLs (`https://index.docker.io/v1/`).
fn registry_of(key: &str) -> String {
    let k = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    k.split('/').next().unwrap_or(k).to_ascii_lowercase()
}

fn decode(entry: &DockerAuth) -> Option<Credential> {
    if let (Some(u), Some(p)) = (&entry.username, &entry.password) {
        return Some(Credential {
            username: u.clone(),
            password: p.clone(),
        });
    }
    let raw = STANDARD.decode(entry.auth.as_deref()?.trim()).ok()?;
    let text = String::from_utf8(raw).ok()?;
    let (u, p) = text.split_once(':')?;
    Some(Credential {
        username: u.to_owned(),
        password: p.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_logins_are_read_per_registry() {
        let tmp = tempfile::tempdir().expect("dir");
        let dir = tmp.path();
        let path = dir.join("config.json");
        std::fs::write(
            &path,
            r#"{"auths": {
                "127.0.0.1:5000": {"auth": "YWRhOnNlY3JldDpwYXJ0"},
                "https://index.docker.io/v1/": {"username": "bob", "password": "pw"},
                "bad.example": {"auth": "!!!"}
            }, "credsStore": "desktop"}"#,
        )
        .expect("write");
        let c = Credentials::from_docker_config(&path).expect("reads");
        let ada = c.get("127.0.0.1:5000").expect("ada");
        assert_eq!(
            (ada.username.as_str(), ada.password.as_str()),
            ("ada", "secret:part")
        );
        assert_eq!(c.get("index.docker.io").expect("bob").username, "bob");
        assert!(c.get("bad.example").is_none());
        assert!(!format!("{ada:?}").contains("secret"));
        assert!(
            Credentials::from_docker_config(&dir.join("none.json"))
                .expect("missing")
                .get("x")
                .is_none()
        );
        std::fs::write(&path, "{not json").expect("write");
        assert!(
            Credentials::from_docker_config(&path)
                .expect_err("malformed")
                .contains("not a Docker config")
        );
    }
}
