//! Where an engine gets the model each task talks to. A task names an
//! endpoint (a profile, or a provider, URL and model) in its spec, or
//! leaves it to the engine's default; a resumed task goes back to the one
//! it recorded unless the resume names another. One engine runs tasks on
//! different models at once.

use std::path::PathBuf;
use std::sync::Arc;

use crate::config::{self, Config, ConfigError, Profile, ProviderChoice, RecordedEndpoint};
use crate::llm::Provider;
use crate::llm::limiter::Limiters;
use roost_protocol::task::Endpoint;

/// Opens the provider of an endpoint.
pub trait Endpoints: Send + Sync {
    /// The provider for `want` (all fields empty: the default), or, when
    /// resuming, for the task's `recorded` endpoint unless `want` names
    /// another; a scripted transcript starts at reply `scripted_start`.
    /// With it, the profile whose context settings and prices the task
    /// runs with.
    fn open(
        &self,
        want: &Endpoint,
        recorded: Option<RecordedEndpoint<'_>>,
        scripted_start: usize,
    ) -> Result<(Arc<dyn Provider>, Profile), ConfigError>;

    /// The named profiles a person may choose between (an editor's model
    /// selector), in name order, each with one line saying what it is;
    /// and the one used when none is chosen. None for a single endpoint.
    fn profiles(&self) -> (Vec<(String, String)>, Option<String>) {
        (Vec::new(), None)
    }
}

/// The endpoints of a config file: its profiles, its default profile, and
/// what a front-end's flags override.
pub struct ConfigEndpoints {
    config: Config,
    script: Option<PathBuf>,
    /// Each profile's rate limiter, shared by every task of the engine.
    limiters: Limiters,
}

impl ConfigEndpoints {
    /// The endpoints `config` names; `script` is the transcript a
    /// `scripted` endpoint replays when its profile names none (a
    /// front-end's `--script`).
    pub fn new(config: Config, script: Option<PathBuf>) -> Self {
        Self {
            config,
            script,
            limiters: Limiters::default(),
        }
    }
}

impl Endpoints for ConfigEndpoints {
    fn open(
        &self,
        want: &Endpoint,
        recorded: Option<RecordedEndpoint<'_>>,
        scripted_start: usize,
    ) -> Result<(Arc<dyn Provider>, Profile), ConfigError> {
        let choice = ProviderChoice {
            provider: want.provider.clone(),
            model: want.model.clone(),
            base_url: want.base_url.clone(),
            script: self.script.clone(),
            profile: want.profile.clone(),
        };
        config::provider(
            &self.config,
            &choice,
            recorded,
            scripted_start,
            &self.limiters,
        )
    }

    fn profiles(&self) -> (Vec<(String, String)>, Option<String>) {
        let named = self
            .config
            .profiles
            .iter()
            .map(|(name, p)| {
                let about = [p.provider.as_deref(), p.model.as_deref()]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join(" · ");
                (name.clone(), about)
            })
            .collect();
        (named, self.config.default_profile.clone())
    }
}

/// One model for every task (an engine given a provider directly: tests,
/// benches, embedders with their own provider).
pub struct OneEndpoint {
    provider: Arc<dyn Provider>,
    profile: Profile,
}

impl OneEndpoint {
    /// Every task talks to `provider`, with `profile`'s context settings.
    pub fn new(provider: Arc<dyn Provider>, profile: Profile) -> Self {
        Self { provider, profile }
    }
}

impl Endpoints for OneEndpoint {
    fn open(
        &self,
        want: &Endpoint,
        _recorded: Option<RecordedEndpoint<'_>>,
        _scripted_start: usize,
    ) -> Result<(Arc<dyn Provider>, Profile), ConfigError> {
        if *want != Endpoint::default() {
            return Err(ConfigError::Provider(format!(
                "this engine talks to one model ({} {}); it cannot open another endpoint",
                self.provider.name(),
                self.provider.model()
            )));
        }
        Ok((Arc::clone(&self.provider), self.profile.clone()))
    }
}

/// `provider model at url` (for telling a person which endpoint).
pub fn describe(provider: &str, base_url: &str, model: &str) -> String {
    let url = if base_url.is_empty() {
        "(none)"
    } else {
        base_url
    };
    format!("{provider} {model} at {url}")
}
