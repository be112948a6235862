//! The deployment's configuration file (`~/.config/roost/config.toml`):
//! provider profiles (endpoint, model, key variable, context window,
//! prices), plugin signature policy, and the secrets the host may put into
//! plugins' requests ([`secrets`]). Every front-end reads it here, so a profile means the same
//! thing to the CLI and to the server; command-line flags override it.

mod probe;
mod provider;
pub use roost_sandbox::secrets;

pub use probe::{Probe, probe};
pub use provider::{ProviderChoice, RecordedEndpoint, provider};
pub use secrets::{SecretConfig, SecretStore};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::task::{Price, TaskConfig};
use roost_sandbox::capability::GuardBudget;

/// Why the configuration (or a provider from it) cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file named explicitly is missing.
    #[error("the config file {0} does not exist")]
    Missing(PathBuf),
    /// The file cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The file is not valid: the message names the field.
    #[error("invalid config file {path}: {detail}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Which field, and why.
        detail: String,
    },
    /// A profile named on the command line or in the file is not there.
    #[error("no profile `{name}` in the config (known: {known})")]
    NoProfile {
        /// The name asked for.
        name: String,
        /// The profiles there are, comma-separated.
        known: String,
    },
    /// The provider cannot be built (unknown kind, missing key or script).
    #[error("{0}")]
    Provider(String),
}

/// The config file.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Profile used when none is named.
    pub default_profile: Option<String>,
    /// Named provider profiles.
    #[serde(default)]
    pub profiles: BTreeMap<String, Profile>,
    /// Who plugins may be signed by, and whether they must be.
    #[serde(default)]
    pub plugins: PluginPolicy,
    /// Secrets plugins' requests may carry, by name (`[secrets.NAME]`).
    #[serde(default)]
    pub secrets: BTreeMap<String, SecretConfig>,
    /// The host's own budgets around sandboxed calls.
    #[serde(default)]
    pub sandbox: SandboxConfig,
    /// How far and wide tasks may delegate (`new_task`).
    #[serde(default)]
    pub delegation: DelegationConfig,
    /// Whether and how tasks run native commands (`execute_command`).
    #[serde(default)]
    pub commands: crate::commands::CommandsConfig,
    /// Named permission profiles commands run under
    /// (`[command_profiles.NAME]`).
    #[serde(default)]
    pub command_profiles: BTreeMap<String, crate::commands::ProfileConfig>,
    /// Whether tasks take checkpoints (`[checkpoints] enabled`).
    #[serde(default)]
    pub checkpoints: CheckpointsConfig,
    /// Where the task store lives: a SQLite file's path, or a
    /// `postgres://` URL that several hosts share (`--store` and
    /// `ROOST_STORE_URL` come first). Default: `roost.db` in the data dir.
    pub store: Option<String>,
    /// Where traces and metrics go (`[telemetry]`; the standard
    /// `OTEL_*` variables win over it).
    #[serde(default)]
    pub telemetry: crate::telemetry::TelemetryTable,
    /// The file this config was read from (none: defaults): Roost's own,
    /// so hidden from every command and MCP server wherever it lies.
    #[serde(skip)]
    pub source: Option<PathBuf>,
}

/// The `[checkpoints]` table.
#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointsConfig {
    /// Take checkpoints (default yes).
    pub enabled: Option<bool>,
}

/// The `[delegation]` table: bounds on a tree of tasks (defaults: depth 4,
/// 100 subtasks in all, 8 at once, an hour each).
#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DelegationConfig {
    /// Deepest a subtask may be (a root task is 0).
    pub max_depth: Option<u32>,
    /// Most subtasks one tree may start in all.
    pub max_total_children: Option<u32>,
    /// Most subtasks of one tree running at once; more wait.
    pub max_concurrent_children: Option<u32>,
    /// Seconds a subtask may run before it is stopped.
    pub child_timeout_secs: Option<u64>,
}

impl DelegationConfig {
    /// Put these settings into `config`.
    pub fn apply(&self, config: &mut TaskConfig) {
        let d = &mut config.delegation;
        if let Some(v) = self.max_depth {
            d.max_depth = v;
        }
        if let Some(v) = self.max_total_children {
            d.max_total_children = v;
        }
        if let Some(v) = self.max_concurrent_children {
            d.max_concurrent_children = v.max(1);
        }
        if let Some(v) = self.child_timeout_secs {
            d.child_timeout = std::time::Duration::from_secs(v.max(1));
        }
    }
}

/// The `[sandbox]` table: how much host work a call may cost beyond its
/// own limits.
#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// Milliseconds undoing a call's writes outside its scope may take
    /// before the call is reported as over its limits (everything is still
    /// undone); default 10,000.
    pub guard_cleanup_ms: Option<u64>,
}

impl SandboxConfig {
    /// The write guard's budget these settings give.
    pub fn guard_budget(&self) -> GuardBudget {
        let mut b = GuardBudget::default();
        if let Some(ms) = self.guard_cleanup_ms {
            b.cleanup = std::time::Duration::from_millis(ms);
        }
        b
    }

    /// Put these settings into `config`.
    pub fn apply(&self, config: &mut TaskConfig) {
        config.guard_budget = self.guard_budget();
    }
}

/// The `[plugins]` table: signature policy for installed plugins.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginPolicy {
    /// Signers the user trusts: a name for each, and its minisign public
    /// key (the base64 line of a `minisign.pub`).
    #[serde(default)]
    pub trusted_keys: BTreeMap<String, String>,
    /// Signers the user trusts for registry plugins signed with Sigstore
    /// (`cosign sign --key`): a name for each, and its `cosign.pub` (the
    /// PEM text, or the file's path).
    #[serde(default)]
    pub cosign_keys: BTreeMap<String, String>,
    /// Refuse plugins without a valid signature by a trusted key.
    #[serde(default)]
    pub require_signed: bool,
    /// Registries (`host:port`) reached over plain HTTP (a registry on
    /// this machine, say); every other is HTTPS.
    #[serde(default)]
    pub insecure_registries: Vec<String>,
    /// How long a registry may take (`[plugins.transfer]`).
    #[serde(default)]
    pub transfer: TransferLimits,
    /// Where a plugin named without a registry is looked for
    /// (`REGISTRY[/PATH]` each, tried in order): `roost plugin install
    /// hello:1.2`.
    #[serde(default)]
    pub registries: Vec<String>,
    /// `wkg`'s config, which places package names (`roost:hello@1.2.0`);
    /// by default `~/.config/wasm-pkg/config.toml` when it exists.
    #[serde(default)]
    pub wkg_config: Option<PathBuf>,
}

/// `[plugins.transfer]`: when a registry transfer is cut off.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TransferLimits {
    /// A registry may send nothing for this many seconds.
    pub stall_secs: u64,
    /// After this many seconds a transfer is judged by its rate.
    pub grace_secs: u64,
    /// The rate (bytes a second) a transfer must average after the grace.
    pub min_bytes_per_sec: u64,
}

impl Default for TransferLimits {
    fn default() -> Self {
        let o = roost_registry::Options::default();
        Self {
            stall_secs: o.stall.as_secs(),
            grace_secs: o.grace.as_secs(),
            min_bytes_per_sec: o.min_rate,
        }
    }
}

impl PluginPolicy {
    /// How registries are reached: these settings, and the logins in
    /// Docker's config (`docker login`; a config that does not read is
    /// a warning, and no login).
    pub fn registry_options(&self) -> roost_registry::Options {
        let credentials = roost_registry::Credentials::docker_config_path()
            .map(|p| {
                roost_registry::Credentials::from_docker_config(&p).unwrap_or_else(|e| {
                    tracing::warn!("registry logins not read: {e}");
                    roost_registry::Credentials::none()
                })
            })
            .unwrap_or_default();
        roost_registry::Options {
            insecure: self.insecure_registries.clone(),
            credentials,
            stall: std::time::Duration::from_secs(self.transfer.stall_secs.max(1)),
            grace: std::time::Duration::from_secs(self.transfer.grace_secs),
            min_rate: self.transfer.min_bytes_per_sec,
            ..roost_registry::Options::default()
        }
    }
}

impl PluginPolicy {
    /// How plugin names resolve: the configured registries, and `wkg`'s
    /// config (the one named, else the user's when it exists; one that
    /// does not read is a warning, and no package names).
    pub fn resolver(&self) -> roost_registry::Resolver {
        let path = self.wkg_config.clone().or_else(|| {
            let base = std::env::var_os("XDG_CONFIG_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
            Some(base.join("wasm-pkg").join("config.toml"))
        });
        let wkg = path.and_then(|p| match std::fs::read_to_string(&p) {
            Ok(text) => roost_registry::WkgConfig::parse(&text, &p.display().to_string())
                .map_err(|e| tracing::warn!("package names not resolved through wkg: {e}"))
                .ok(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                tracing::warn!("wkg's config {} not read: {e}", p.display());
                None
            }
        });
        roost_registry::Resolver {
            registries: self.registries.clone(),
            wkg,
        }
    }
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
    /// Transcript the `scripted` provider replays (tests, demos).
    pub script: Option<PathBuf>,
    /// Context window in tokens.
    pub context_window: Option<u64>,
    /// Share of the window (above 0, at most 1) at which older history is
    /// condensed; default 0.8.
    pub condense_threshold: Option<f64>,
    /// Most recent messages kept verbatim when condensing; default 6.
    pub keep_recent_messages: Option<usize>,
    /// Price per million tokens.
    pub price: Option<Price>,
    /// At most this many requests a minute to this profile, evenly spaced,
    /// across every task of the process (subtasks included).
    pub requests_per_minute: Option<u32>,
    /// At least this many seconds between two requests to this profile
    /// (Roo's `rateLimitSeconds`).
    pub rate_limit_seconds: Option<f64>,
    /// Whether the reads of one reply run at the same time (default
    /// true); `false` runs every call of a reply one after another.
    pub parallel_tool_calls: Option<bool>,
}

impl Profile {
    /// This profile's rate limits.
    pub fn limits(&self) -> crate::llm::limiter::Limits {
        crate::llm::limiter::Limits {
            requests_per_minute: self.requests_per_minute,
            min_interval: self
                .rate_limit_seconds
                .filter(|s| s.is_finite() && *s > 0.0)
                .and_then(|s| std::time::Duration::try_from_secs_f64(s).ok()),
        }
    }

    /// Put this profile's context and price settings into `config`.
    pub fn apply(&self, config: &mut TaskConfig) {
        if let Some(w) = self.context_window {
            config.context_window = w;
        }
        if let Some(t) = self.condense_threshold {
            config.condense_threshold = t;
        }
        if let Some(k) = self.keep_recent_messages {
            config.keep_recent_messages = k;
        }
        if let Some(p) = self.price {
            config.price = p;
        }
        if let Some(parallel) = self.parallel_tool_calls {
            config.parallel_reads = parallel;
        }
    }
}

/// Where the config file lives by default.
pub fn default_path() -> PathBuf {
    directories::ProjectDirs::from("", "", "roost")
        .map(|d| d.config_dir().join("config.toml"))
        .unwrap_or_else(|| PathBuf::from(".roost/config.toml"))
}

/// Load the config file `explicit` (which must exist), or else the default
/// one (which may be absent: an empty config). A malformed file is an
/// error naming the file and the field.
pub fn load(explicit: Option<&Path>) -> Result<Config, ConfigError> {
    let path = explicit.map_or_else(default_path, Path::to_path_buf);
    let mut config: Config = match std::fs::read_to_string(&path) {
        Ok(text) => {
            let mut c: Config = toml::from_str(&text).map_err(|e| ConfigError::Invalid {
                path: path.clone(),
                detail: e.to_string(),
            })?;
            c.source = Some(std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone()));
            c
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && explicit.is_none() => {
            Config::default()
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ConfigError::Missing(path));
        }
        Err(source) => return Err(ConfigError::Read { path, source }),
    };
    if let Err(detail) = secrets::check(&config.secrets) {
        return Err(ConfigError::Invalid { path, detail });
    }
    for (name, p) in &config.profiles {
        if let Some(t) = p.condense_threshold
            && !(t > 0.0 && t <= 1.0)
        {
            return Err(ConfigError::Invalid {
                path,
                detail: format!(
                    "profiles.{name}.condense_threshold must be above 0 and at most 1, not {t}"
                ),
            });
        }
    }
    for (name, key) in &config.plugins.trusted_keys {
        if let Err(e) = minisign_verify::PublicKey::from_base64(key.trim()) {
            return Err(ConfigError::Invalid {
                path,
                detail: format!(
                    "plugins.trusted_keys.{name} is not a minisign public key (the base64 line of its .pub file): {e}"
                ),
            });
        }
    }
    // A cosign key named by path (relative to the config's folder) is
    // read now, once: what is trusted is what was checked here.
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    for (name, key) in config.plugins.cosign_keys.iter_mut() {
        if !key.trim_start().starts_with("-----BEGIN") {
            let file = dir.join(key.as_str());
            *key = std::fs::read_to_string(&file).map_err(|e| ConfigError::Invalid {
                path: path.clone(),
                detail: format!("plugins.cosign_keys.{name}: {}: {e}", file.display()),
            })?;
        }
        if let Err(e) = roost_registry::cosign::PublicKey::from_pem(key) {
            return Err(ConfigError::Invalid {
                path,
                detail: format!("plugins.cosign_keys.{name} is {e}"),
            });
        }
    }
    Ok(config)
}

impl Config {
    /// Where the host finds secrets: the environment and `[secrets]`.
    pub fn secret_store(&self) -> SecretStore {
        SecretStore::new(&self.secrets).unwrap_or_else(|e| {
            tracing::warn!("config [secrets] ignored: {e}");
            SecretStore::from_env()
        })
    }

    /// The profile `name`, or the default one, or an empty profile.
    pub fn profile(&self, name: Option<&str>) -> Result<Profile, ConfigError> {
        match name.or(self.default_profile.as_deref()) {
            Some(n) => self
                .profiles
                .get(n)
                .cloned()
                .ok_or_else(|| ConfigError::NoProfile {
                    name: n.to_owned(),
                    known: self
                        .profiles
                        .keys()
                        .map(String::as_str)
                        .collect::<Vec<_>>()
                        .join(", "),
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
        assert!(e.to_string().contains("config.toml"));
        let e = load(Some(&dir.path().join("missing.toml"))).expect_err("named, so required");
        assert!(e.to_string().contains("does not exist"), "{e}");
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
        let mut config = TaskConfig::default();
        prof.apply(&mut config);
        assert_eq!(config.context_window, 8000);
        std::fs::write(
            &p,
            "[plugins]\ntrusted_keys = { ada = \"RWQ not a key\" }\n",
        )
        .expect("write");
        let e = load(Some(&p)).expect_err("not a key");
        assert!(e.to_string().contains("plugins.trusted_keys.ada"), "{e}");
        std::fs::write(&p, "[profiles.bad]\ncondense_threshold = 1.5\n").expect("write");
        let e = load(Some(&p)).expect_err("out of range");
        assert!(
            e.to_string().contains("profiles.bad.condense_threshold"),
            "{e}"
        );
    }
}
