//! Whether an endpoint answers (`roost doctor`): the provider its profile
//! makes is built (so a missing key or model is found), then its
//! `/models` is asked, with the key when one is set.

use std::time::Duration;

use super::{Config, ProviderChoice, provider};

/// What a probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// It answered (with what, in words).
    Answers(String),
    /// It cannot be used as configured, or did not answer (why).
    Fails(String),
    /// Nothing to ask (a scripted transcript).
    Local(String),
}

/// Probe the endpoint `choice` names under `cfg`, waiting at most
/// `timeout`.
pub async fn probe(cfg: &Config, choice: &ProviderChoice, timeout: Duration) -> Probe {
    // A probe is one request of its own, outside any engine's limits.
    let limiters = crate::llm::limiter::Limiters::default();
    let (p, profile) = match provider(cfg, choice, None, 0, &limiters) {
        Ok(p) => p,
        Err(e) => return Probe::Fails(e.to_string()),
    };
    let described = format!("{} {}", p.name(), p.model());
    if p.base_url().is_empty() {
        return Probe::Local(described);
    }
    let base = p.base_url().trim_end_matches('/').to_owned();
    let client = match reqwest::Client::builder().timeout(timeout).build() {
        Ok(c) => c,
        Err(e) => return Probe::Fails(format!("cannot build an HTTP client: {e}")),
    };
    let mut req = client.get(format!("{base}/models"));
    let key_var = profile.api_key_env.clone().unwrap_or_else(|| {
        if p.name() == "anthropic" {
            "ANTHROPIC_API_KEY".to_owned()
        } else {
            "OPENAI_API_KEY".to_owned()
        }
    });
    if let Ok(key) = std::env::var(&key_var)
        && !key.is_empty()
    {
        req = if p.name() == "anthropic" {
            req.header("x-api-key", key)
                .header("anthropic-version", "2023-06-01")
        } else {
            req.bearer_auth(key)
        };
    }
    match req.send().await {
        Err(e) => Probe::Fails(format!("{described} at {base}: no answer ({e})")),
        Ok(r) if r.status().is_success() => {
            let count = r.json::<serde_json::Value>().await.ok().and_then(|v| {
                v.get("data")
                    .or_else(|| v.get("models"))
                    .and_then(serde_json::Value::as_array)
                    .map(Vec::len)
            });
            Probe::Answers(match count {
                Some(n) => format!("{described} at {base}: answers ({n} models)"),
                None => format!("{described} at {base}: answers"),
            })
        }
        Ok(r) => Probe::Fails(format!(
            "{described} at {base}: answered HTTP {} to GET /models",
            r.status().as_u16()
        )),
    }
}
