//! Secrets the host may put into plugins' outgoing requests, and where
//! each may go. A plugin only ever names a secret (`{{secret:NAME}}` in a
//! header value); the value comes from here, resolved by the host:
//!
//! 1. the environment variable `ROOST_SECRET_<NAME>`, else
//! 2. the config file's `[secrets.NAME]` table: its `value`, or the
//!    environment variable its `env` names.
//!
//! `hosts` in that table binds the secret: it is sent only to those
//! origins (and only those the plugin was granted). A secret without
//! `hosts` may go to any origin the plugin was granted.
//!
//! ```toml
//! [secrets.GITHUB_TOKEN]
//! env = "GITHUB_TOKEN"          # or: value = "ghp_…" (keep the file private)
//! hosts = ["api.github.com"]
//! ```

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::capability::{NetworkGrant, Origin, SecretValue};

/// Prefix of the environment variables that hold secrets' values.
pub const ENV_PREFIX: &str = "ROOST_SECRET_";

/// One `[secrets.NAME]` table as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecretConfig {
    /// The value itself (the config file should then be private).
    pub value: Option<SecretValue>,
    /// An environment variable holding the value.
    pub env: Option<String>,
    /// The only origins it may be sent to (`api.github.com`,
    /// `https://api.example.com:8443`); empty: any the plugin was granted.
    #[serde(default)]
    pub hosts: Vec<String>,
}

/// Whether `name` is a secret name: `A-Z 0-9 _`, not starting with a digit,
/// at most 64 bytes (as manifests name them).
pub fn is_secret_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
}

/// A checked `[secrets.NAME]` entry.
#[derive(Debug, Clone, Default)]
struct Entry {
    value: Option<SecretValue>,
    env: Option<String>,
    hosts: Vec<Origin>,
}

/// Where the host finds secrets' values and bindings. Its `Debug` never
/// shows a value.
#[derive(Debug, Clone, Default)]
pub struct SecretStore {
    entries: BTreeMap<String, Entry>,
    /// Whether `ROOST_SECRET_<NAME>` is consulted (always, outside tests).
    env: bool,
}

impl SecretStore {
    /// The store of a config file's `[secrets]` table (checked by
    /// [`check`]), with the environment.
    pub fn new(table: &BTreeMap<String, SecretConfig>) -> Result<Self, String> {
        check(table)?;
        let entries = table
            .iter()
            .map(|(name, c)| {
                let hosts = c
                    .hosts
                    .iter()
                    .filter_map(|h| Origin::parse(h).ok())
                    .collect();
                let entry = Entry {
                    value: c.value.clone(),
                    env: c.env.clone(),
                    hosts,
                };
                (name.clone(), entry)
            })
            .collect();
        Ok(Self { entries, env: true })
    }

    /// A store that only consults the environment.
    pub fn from_env() -> Self {
        Self {
            entries: BTreeMap::new(),
            env: true,
        }
    }

    /// A store holding exactly the values given with [`Self::with`] and
    /// nothing from the environment (tests, embedders).
    pub fn isolated() -> Self {
        Self::default()
    }

    /// Also hold secret `name` with `value`, bound to `hosts` (empty: any
    /// origin the plugin was granted).
    pub fn with(mut self, name: &str, value: &str, hosts: Vec<Origin>) -> Self {
        self.entries.insert(
            name.to_owned(),
            Entry {
                value: Some(SecretValue::new(value)),
                env: None,
                hosts,
            },
        );
        self
    }

    /// The value of `name`, if the host has one.
    pub fn value(&self, name: &str) -> Option<SecretValue> {
        let from_env = |var: &str| {
            std::env::var(var)
                .ok()
                .filter(|v| !v.is_empty())
                .map(SecretValue::new)
        };
        if self.env
            && let Some(v) = from_env(&format!("{ENV_PREFIX}{name}"))
        {
            return Some(v);
        }
        let entry = self.entries.get(name)?;
        entry
            .value
            .clone()
            .or_else(|| entry.env.as_deref().and_then(from_env))
    }

    /// The network grant of a plugin granted `allow` and the secrets
    /// `names`: each secret bound to its configured hosts among `allow`
    /// (all of `allow` when it has none), with its value if the host has
    /// one (a request using one without is refused, saying so).
    pub fn network_grant(&self, allow: Vec<Origin>, names: &[String]) -> NetworkGrant {
        let mut grant = NetworkGrant::allow(allow);
        for name in names {
            let bound = self.entries.get(name).map(|e| e.hosts.as_slice());
            let hosts: Vec<Origin> = match bound {
                Some(b) if !b.is_empty() => b.iter().filter(|o| grant.allows(o)).cloned().collect(),
                _ => grant.allow.clone(),
            };
            let value = self.value(name);
            if value.is_none() {
                tracing::warn!(
                    secret = name.as_str(),
                    "a granted secret has no value (set {ENV_PREFIX}{name} or [secrets.{name}] in the config); requests using it are refused"
                );
            }
            grant = grant.secret(name.clone(), value, hosts);
        }
        grant
    }
}

/// Check a `[secrets]` table: names, `value` and `env` not both, `hosts`
/// that parse. The message names the field.
pub fn check(table: &BTreeMap<String, SecretConfig>) -> Result<(), String> {
    for (name, c) in table {
        if !is_secret_name(name) {
            return Err(format!(
                "secrets.{name}: `{name}` is not a secret name like GITHUB_TOKEN"
            ));
        }
        if c.value.is_some() && c.env.is_some() {
            return Err(format!("secrets.{name}: give `value` or `env`, not both"));
        }
        if let Some(var) = &c.env
            && (var.is_empty() || var.contains(['=', '\0']))
        {
            return Err(format!(
                "secrets.{name}.env: `{var}` is not an environment variable name"
            ));
        }
        for (i, h) in c.hosts.iter().enumerate() {
            Origin::parse(h).map_err(|e| format!("secrets.{name}.hosts[{i}]: {e}"))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(toml_text: &str) -> BTreeMap<String, SecretConfig> {
        toml::from_str(toml_text).expect("parses")
    }

    #[test]
    fn secrets_bind_to_their_hosts_among_the_granted_ones() {
        let store = SecretStore::new(&table(
            "[BOUND]\nvalue = \"bound-v4lue\"\nhosts = [\"api.example.com\", \"never.example.com\"]\n[FREE]\nvalue = \"free-v4lue\"\n",
        ))
        .expect("valid");
        let api = Origin::parse("api.example.com").expect("origin");
        let other = Origin::parse("other.example.com").expect("origin");
        let grant = store.network_grant(
            vec![api.clone(), other.clone()],
            &[
                "BOUND".into(),
                "FREE".into(),
                "ROOST_TEST_NO_SUCH_SECRET".into(),
            ],
        );
        let bound = &grant.secrets["BOUND"];
        assert_eq!(bound.hosts, vec![api.clone()]);
        assert_eq!(
            bound.value.as_ref().map(SecretValue::expose),
            Some("bound-v4lue")
        );
        assert_eq!(grant.secrets["FREE"].hosts, vec![api, other]);
        assert!(grant.secrets["ROOST_TEST_NO_SUCH_SECRET"].value.is_none());
        assert!(!format!("{store:?}").contains("v4lue"));
    }

    #[test]
    fn bad_tables_name_the_field() {
        for (text, field) in [
            ("[lower]\nvalue = \"x\"\n", "secrets.lower"),
            ("[A]\nvalue = \"x\"\nenv = \"B\"\n", "secrets.A"),
            ("[A]\nenv = \"\"\n", "secrets.A.env"),
            (
                "[A]\nhosts = [\"http://api.example.com\"]\n",
                "secrets.A.hosts[0]",
            ),
        ] {
            let e = check(&table(text)).expect_err(text);
            assert!(e.starts_with(field), "{text}: {e}");
        }
        assert!(toml::from_str::<BTreeMap<String, SecretConfig>>("[A]\nvalu = \"x\"\n").is_err());
    }
}
