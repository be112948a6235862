//! `~/.config/roost/config.toml`: provider profiles (endpoint, model, key
//! variable, context window, prices). Command-line flags override it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Deserialize;

use roost_core::task::Price;

/// The config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Profile used when `--profile` is not given.
    pub default_profile: Option<String>,
    /// Named provider profiles.
    #[serde(default)]
    pub profiles: BTreeMap<String, Profile>,
}

/// One provider profile.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// `openai` (any OpenAI-compatible server), `anthropic` or `scripted`.
    pub provider: Option<String>,
    /// Model id.
    pub model: Option<String>,
    /// API base URL (e.g. `http://localhost:11434/v1` for Ollama).
    pub base_url: Option<String>,
    /// Environment variable holding the API key.
    pub api_key_env: Option<String>,
    /// Context window in tokens.
    pub context_window: Option<u64>,
    /// Share of the window (above 0, at most 1) at which older history is
    /// condensed; default 0.8.
    pub condense_threshold: Option<f64>,
    /// Most recent messages kept verbatim when condensing; default 6.
    pub keep_recent_messages: Option<usize>,
    /// Price per million tokens.
    pub price: Option<Price>,
}

/// Where the config file lives.
pub fn default_path() -> PathBuf {
    directories::ProjectDirs::from("", "", "roost")
        .map(|d| d.config_dir().join("config.toml"))
        .unwrap_or_else(|| PathBuf::from(".roost/config.toml"))
}

/// Load the config file named with `--config` (or `ROOST_CONFIG`), which
/// must exist, or else the default one, which may be absent (an empty
/// config). A malformed file is an error naming the file and the field.
pub fn load(explicit: Option<&Path>) -> anyhow::Result<Config> {
    let path = explicit.map_or_else(default_path, Path::to_path_buf);
    let config: Config = match std::fs::read_to_string(&path) {
        Ok(text) => toml::from_str(&text)
            .with_context(|| format!("invalid config file {}", path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && explicit.is_none() => {
            Config::default()
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            anyhow::bail!("the config file {} does not exist", path.display())
        }
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    for (name, p) in &config.profiles {
        if let Some(t) = p.condense_threshold
            && !(t > 0.0 && t <= 1.0)
        {
            anyhow::bail!(
                "invalid config file {}: profiles.{name}.condense_threshold must be above 0 and at most 1, not {t}",
                path.display()
            );
        }
    }
    Ok(config)
}

impl Config {
    /// The profile `name`, or the default one, or an empty profile.
    pub fn profile(&self, name: Option<&str>) -> anyhow::Result<Profile> {
        match name.or(self.default_profile.as_deref()) {
            Some(n) => self.profiles.get(n).cloned().with_context(|| {
                let known: Vec<&str> = self.profiles.keys().map(String::as_str).collect();
                format!(
                    "no profile `{n}` in the config (known: {})",
                    known.join(", ")
                )
            }),
            None => Ok(Profile::default()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_profiles_and_reports_bad_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("config.toml");
        std::fs::write(
            &p,
            "default_profile = \"local\"\n[profiles.local]\nprovider = \"openai\"\nmodel = \"qwen\"\nbase_url = \"http://localhost:11434/v1\"\n[profiles.local.price]\ninput = 1.0\noutput = 2.0\n",
        )
        .expect("write");
        let c = load(Some(&p)).expect("parses");
        let prof = c.profile(None).expect("default");
        assert_eq!(prof.model.as_deref(), Some("qwen"));
        assert_eq!(prof.price.expect("price").output, 2.0);
        assert!(c.profile(Some("nope")).is_err());
        std::fs::write(&p, "profiles = 3").expect("write");
        let e = load(Some(&p)).expect_err("invalid");
        assert!(format!("{e:#}").contains("config.toml"));
        let e = load(Some(&dir.path().join("missing.toml"))).expect_err("named, so required");
        assert!(format!("{e:#}").contains("does not exist"), "{e:#}");
        std::fs::write(
            &p,
            "[profiles.small]\ncontext_window = 8000\ncondense_threshold = 0.7\nkeep_recent_messages = 4\n",
        )
        .expect("write");
        let prof = load(Some(&p))
            .expect("parses")
            .profile(Some("small"))
            .expect("profile");
        assert_eq!(prof.condense_threshold, Some(0.7));
        assert_eq!(prof.keep_recent_messages, Some(4));
    }
}
