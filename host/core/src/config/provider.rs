//! Choosing the model a task talks to: the flags a front-end was given,
//! the task's recorded endpoint (a resume goes back to it), the profile
//! named or the default one, in that order.

use std::path::PathBuf;
use std::sync::Arc;

use super::{Config, ConfigError, Profile};
use crate::llm::anthropic::Anthropic;
use crate::llm::limiter::{Limited, Limiters};
use crate::llm::scripted::{Script, ScriptedTransport};
use crate::llm::{HttpTransport, Labelled, OpenAiCompatible, Provider, RetryPolicy, Transport};

/// What a front-end was asked for; every field may be left to the config.
#[derive(Debug, Clone, Default)]
pub struct ProviderChoice {
    /// `openai`, `anthropic` or `scripted`.
    pub provider: Option<String>,
    /// Model id.
    pub model: Option<String>,
    /// API base URL.
    pub base_url: Option<String>,
    /// Transcript for the scripted provider.
    pub script: Option<PathBuf>,
    /// Profile from the config file.
    pub profile: Option<String>,
}

/// Where a task was created to talk to (from its record): a resume keeps
/// it unless another profile is named.
#[derive(Debug, Clone, Copy)]
pub struct RecordedEndpoint<'a> {
    /// Provider kind.
    pub provider: &'a str,
    /// Base URL.
    pub base_url: &'a str,
    /// Model id.
    pub model: &'a str,
    /// Profile name.
    pub profile: &'a str,
}

/// The provider for `choice` under `cfg`, and the profile it came from
/// (whose context settings the engine applies). `recorded` is the task's
/// endpoint when resuming; `scripted_start` the reply a scripted
/// transcript resumes at. Its requests wait for the profile's limiter in
/// `limiters` (one per profile, shared by every task that uses it).
pub fn provider(
    cfg: &Config,
    choice: &ProviderChoice,
    recorded: Option<RecordedEndpoint<'_>>,
    scripted_start: usize,
    limiters: &Limiters,
) -> Result<(Arc<dyn Provider>, Profile), ConfigError> {
    // Naming a profile picks that profile's endpoint; a flag overrides one
    // field.
    let keep = recorded.filter(|_| choice.profile.is_none());
    let kept = |v: Option<&str>| v.filter(|v| !v.is_empty()).map(str::to_owned);
    let profile_name = choice
        .profile
        .clone()
        .or_else(|| kept(keep.map(|t| t.profile)))
        .or_else(|| cfg.default_profile.clone());
    let profile = match (cfg.profile(profile_name.as_deref()), keep) {
        (Ok(p), _) => p,
        // The task's profile is gone from the config: its recorded
        // endpoint still holds.
        (Err(e), Some(_)) => {
            tracing::warn!("{e}; resuming on the task's recorded endpoint");
            Profile::default()
        }
        (Err(e), None) => return Err(e),
    };
    let kind = choice
        .provider
        .clone()
        .or_else(|| kept(keep.map(|t| t.provider)))
        .or_else(|| profile.provider.clone())
        .or_else(|| choice.script.as_ref().map(|_| "scripted".to_owned()))
        .unwrap_or_else(|| "openai".to_owned());
    // The recorded URL and model belong to the recorded provider.
    let same_kind = keep.is_some_and(|t| t.provider == kind);
    let base_url = |default: &str| {
        choice
            .base_url
            .clone()
            .or_else(|| kept(keep.map(|t| t.base_url)).filter(|_| same_kind))
            .or_else(|| profile.base_url.clone())
            .unwrap_or_else(|| default.to_owned())
    };
    let named_model = choice
        .model
        .clone()
        .or_else(|| kept(keep.map(|t| t.model)).filter(|_| same_kind))
        .or_else(|| profile.model.clone());
    // The provider's default model only on the provider's own endpoint:
    // another server (a local one, a proxy) has its own model names, and
    // asking it for ours fails far from the cause.
    let model = |default: &str, base: &str, own_base: &str| match &named_model {
        Some(m) => Ok(m.clone()),
        None if base.trim_end_matches('/') == own_base => Ok(default.to_owned()),
        None => Err(ConfigError::Provider(format!(
            "which model should {base} run? Pass --model NAME (or use a profile with `model`)"
        ))),
    };
    let http = |url: String, headers| {
        HttpTransport::new(url, headers).map_err(|e| ConfigError::Provider(e.to_string()))
    };
    let label = profile_name.as_deref().unwrap_or("");
    let retry = RetryPolicy::default();
    // The profile's one limiter (an unnamed endpoint is its own profile).
    let limited = |endpoint: &str, t: Arc<dyn Transport>| -> Arc<dyn Transport> {
        let key = if label.is_empty() {
            format!("{kind} {endpoint}")
        } else {
            label.to_owned()
        };
        Arc::new(Limited::new(t, limiters.of(&key, profile.limits())))
    };
    let provider: Arc<dyn Provider> = match kind.as_str() {
        "scripted" => {
            let path = choice
                .script
                .as_ref()
                .or(profile.script.as_ref())
                .ok_or_else(|| {
                    ConfigError::Provider("--provider scripted needs --script FILE".into())
                })?;
            let script = Script::load(path).map_err(|e| ConfigError::Provider(e.to_string()))?;
            let model = script.model.clone();
            let transport = limited(
                &path.display().to_string(),
                Arc::new(ScriptedTransport::starting_at(script, scripted_start)),
            );
            let inner = Arc::new(OpenAiCompatible::new("scripted", &model, transport, retry));
            if label.is_empty() {
                inner
            } else {
                // A scripted profile is recorded by name, so a resume goes
                // back to its transcript.
                Arc::new(Labelled::new(inner, "", label))
            }
        }
        "openai" => {
            const OWN: &str = "https://api.openai.com/v1";
            let env_base = std::env::var("OPENAI_BASE_URL").ok();
            let base = base_url(env_base.as_deref().unwrap_or(OWN));
            let model = model("gpt-4o-mini", &base, OWN)?;
            let key_var = profile.api_key_env.as_deref().unwrap_or("OPENAI_API_KEY");
            let mut headers = Vec::new();
            match std::env::var(key_var) {
                Ok(key) if !key.is_empty() => {
                    headers.push(("authorization".to_owned(), format!("Bearer {key}")));
                }
                // A server on this machine (Ollama, llama.cpp, vLLM) needs
                // no key; a remote one would refuse, after the prompt left.
                _ if is_loopback(&base) => {}
                _ => {
                    return Err(ConfigError::Provider(format!(
                        "{key_var} is not set: set it to your API key for {base} (servers on this machine need none)"
                    )));
                }
            }
            let url = format!("{}/chat/completions", base.trim_end_matches('/'));
            let inner = Arc::new(OpenAiCompatible::new(
                "openai",
                &model,
                limited(&base, Arc::new(http(url, headers)?)),
                retry,
            ));
            Arc::new(Labelled::new(inner, &base, label))
        }
        "anthropic" => {
            const OWN: &str = "https://api.anthropic.com/v1";
            let base = base_url(OWN);
            let model = model("claude-sonnet-4-5", &base, OWN)?;
            let key_var = profile
                .api_key_env
                .as_deref()
                .unwrap_or("ANTHROPIC_API_KEY");
            let key = std::env::var(key_var).map_err(|_| {
                ConfigError::Provider(format!(
                    "{key_var} is not set: set it to your API key for {base}"
                ))
            })?;
            let headers = vec![
                ("x-api-key".to_owned(), key),
                ("anthropic-version".to_owned(), "2023-06-01".to_owned()),
            ];
            let url = format!("{}/messages", base.trim_end_matches('/'));
            let transport = limited(&base, Arc::new(http(url, headers)?));
            let inner = Arc::new(Anthropic::new(&model, transport, retry));
            Arc::new(Labelled::new(inner, &base, label))
        }
        other => {
            return Err(ConfigError::Provider(format!(
                "unknown provider `{other}` (openai, anthropic, scripted)"
            )));
        }
    };
    Ok((provider, profile))
}

/// Whether `url` names a server on this machine (`localhost`, `127.x`,
/// `[::1]`), which needs no API key.
fn is_loopback(url: &str) -> bool {
    let Ok(uri) = url.parse::<reqwest::Url>() else {
        return false;
    };
    match uri.host_str() {
        Some(h) if h.eq_ignore_ascii_case("localhost") => true,
        Some(h) => h
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback()),
        None => false,
    }
}

#[cfg(test)]
mod loopback_tests {
    #[test]
    fn loopback_endpoints_are_told_apart() {
        for url in [
            "http://localhost:11434/v1",
            "http://127.0.0.1:8080/v1",
            "http://127.1.2.3/v1",
            "http://[::1]:8000/v1",
        ] {
            assert!(super::is_loopback(url), "{url}");
        }
        for url in [
            "https://api.openai.com/v1",
            "http://10.0.0.2/v1",
            "http://localhost.example.com/v1",
            "not a url",
        ] {
            assert!(!super::is_loopback(url), "{url}");
        }
    }
}
