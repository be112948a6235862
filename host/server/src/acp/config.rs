//! The session's model selector: the config's named profiles as an ACP
//! `select` config option (category `model`). A choice applies from the
//! session's next prompt: a new task is created with it, a continued one
//! resumes on it.

use agent_client_protocol::Error;
use agent_client_protocol::v1::schema::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigOptionValue,
    SessionConfigSelectOption, SetSessionConfigOptionRequest, SetSessionConfigOptionResponse,
};
use roost_protocol::Endpoint;

use super::{Acp, invalid};

/// The option's id.
const PROFILE: &str = "profile";

impl Acp {
    /// The session's config options (none when the config names no
    /// profiles): the model profile, `current` the session's choice.
    pub(crate) fn config_options(&self, current: Option<&str>) -> Option<Vec<SessionConfigOption>> {
        let (profiles, default) = self.engine.profiles();
        if profiles.is_empty() {
            return None;
        }
        let current = current
            .map(str::to_owned)
            .or_else(|| self.settings.endpoint.profile.clone())
            .or(default)
            .or_else(|| profiles.first().map(|(name, _)| name.clone()))
            .unwrap_or_default();
        let options: Vec<SessionConfigSelectOption> = profiles
            .into_iter()
            .map(|(name, about)| {
                let option = SessionConfigSelectOption::new(name.clone(), name);
                if about.is_empty() {
                    option
                } else {
                    option.description(about)
                }
            })
            .collect();
        Some(vec![
            SessionConfigOption::select(PROFILE, "Model", current, options)
                .description(
                    "The config profile (provider and model) the session's tasks use".to_owned(),
                )
                .category(SessionConfigOptionCategory::Model),
        ])
    }

    /// `session/set_config_option`: choose the session's model profile.
    pub(crate) fn set_config_option(
        &self,
        req: &SetSessionConfigOptionRequest,
    ) -> Result<SetSessionConfigOptionResponse, Error> {
        let sid = req.session_id.0.to_string();
        if &*req.config_id.0 != PROFILE {
            return Err(invalid(format!(
                "no config option `{}` (Roost has `{PROFILE}`)",
                req.config_id.0
            )));
        }
        let SessionConfigOptionValue::ValueId { value } = &req.value else {
            return Err(invalid("the model profile is chosen by name"));
        };
        let chosen = value.0.to_string();
        let (profiles, _) = self.engine.profiles();
        if !profiles.iter().any(|(name, _)| *name == chosen) {
            return Err(invalid(format!("no profile `{chosen}` in Roost's config")));
        }
        self.sessions.with(&sid, |s| {
            if s.profile.as_deref() != Some(chosen.as_str()) {
                s.profile = Some(chosen.clone());
                s.profile_changed = true;
            }
        })?;
        Ok(SetSessionConfigOptionResponse::new(
            self.config_options(Some(&chosen)).unwrap_or_default(),
        ))
    }

    /// The endpoint session `sid`'s tasks use: its chosen profile, or what
    /// `roost acp` was started with.
    pub(crate) fn endpoint(&self, chosen: Option<&str>) -> Endpoint {
        match chosen {
            Some(profile) => Endpoint {
                profile: Some(profile.to_owned()),
                ..Endpoint::default()
            },
            None => self.settings.endpoint.clone(),
        }
    }
}
