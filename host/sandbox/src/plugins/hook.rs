//! Mode hooks (world `mode-hook`) as the engine runs them: each handler is
//! one bounded call in a fresh store, exactly like a tool call, so a hook
//! that traps, overruns or loops is a [`ToolError`] and never a host crash.

use std::borrow::Cow;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use wasmtime::Store;

use super::PluginEngine;
use super::bindings::mode_hook::ModeHookPre;
use super::bindings::since_v0_1_0;
use super::bindings::tool_plugin::roost::plugin::types as wit;
use super::cache::CacheOutcome;
use super::deferred::Deferred;
use super::engine::{check_header, wrong_world};
use super::error::PluginError;
use super::state::{CallState, cut};
use crate::capability::Grant;
use crate::tool::{ErrorCode, ToolError, ToolGroup, ToolOutput};

/// A hook's prepared instance, by the `roost:plugin` version it was
/// built against; each handler is answered in the latest types.
#[derive(Clone)]
enum HookPre {
    /// The latest version (0.2.0).
    Latest(ModeHookPre<CallState>),
    /// 0.1.0, through [`since_v0_1_0`].
    V0_1_0(since_v0_1_0::mode_hook::ModeHookPre<CallState>),
}

impl HookPre {
    async fn pre_tool(
        &self,
        store: &mut Store<CallState>,
        call: wit::ToolCall,
    ) -> wasmtime::Result<wit::PreToolDecision> {
        Ok(match self {
            Self::Latest(pre) => {
                let inst = pre.instantiate_async(&mut *store).await?;
                inst.roost_plugin_hook()
                    .call_pre_tool(&mut *store, &call)
                    .await?
            }
            Self::V0_1_0(pre) => {
                let inst = pre.instantiate_async(&mut *store).await?;
                inst.roost_plugin_hook()
                    .call_pre_tool(&mut *store, &call.into())
                    .await?
                    .into()
            }
        })
    }

    async fn post_tool(
        &self,
        store: &mut Store<CallState>,
        call: wit::ToolCall,
        outcome: wit::ToolOutcome,
    ) -> wasmtime::Result<()> {
        match self {
            Self::Latest(pre) => {
                let inst = pre.instantiate_async(&mut *store).await?;
                inst.roost_plugin_hook()
                    .call_post_tool(&mut *store, &call, &outcome)
                    .await
            }
            Self::V0_1_0(pre) => {
                let inst = pre.instantiate_async(&mut *store).await?;
                inst.roost_plugin_hook()
                    .call_post_tool(&mut *store, &call.into(), &outcome.into())
                    .await
            }
        }
    }

    async fn prompt(
        &self,
        store: &mut Store<CallState>,
        mode: &str,
    ) -> wasmtime::Result<Option<String>> {
        match self {
            Self::Latest(pre) => {
                let inst = pre.instantiate_async(&mut *store).await?;
                inst.roost_plugin_hook()
                    .call_prompt_contribution(&mut *store, mode)
                    .await
            }
            Self::V0_1_0(pre) => {
                let inst = pre.instantiate_async(&mut *store).await?;
                inst.roost_plugin_hook()
                    .call_prompt_contribution(&mut *store, mode)
                    .await
            }
        }
    }
}

/// A mode hook ready to run: its prepared instance and its name (as modes
/// list it in `hooks:`).
pub struct LoadedHook {
    name: String,
    /// Its prepared instance: made at load, or on first use for a hook
    /// loaded deferred.
    pre: Deferred<HookPre>,
    /// Its content hash, taken when first asked (a deferred hook that is
    /// never used is never hashed).
    hash: OnceLock<blake3::Hash>,
}

impl LoadedHook {
    /// Name modes refer to it by.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Content hash of the component (for traces).
    pub fn content_hash(&self) -> String {
        self.hash().to_hex().to_string()
    }

    fn hash(&self) -> &blake3::Hash {
        self.hash
            .get_or_init(|| blake3::hash(self.pre.bytes().unwrap_or_default()))
    }

    /// Where its compiled code came from (the build, the cache, or a
    /// compile); `None` while a deferred hook has not been needed.
    pub fn compiled(&self) -> Option<CacheOutcome> {
        self.pre.outcome()
    }
}

impl std::fmt::Debug for LoadedHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedHook")
            .field("name", &self.name)
            .finish()
    }
}

/// A tool call as a hook sees it: enough to decide without re-deriving
/// anything from the registry.
#[derive(Debug, Clone, PartialEq)]
pub struct HookCall {
    /// Tool name.
    pub tool: String,
    /// Its group.
    pub group: ToolGroup,
    /// Whether it changes state.
    pub destructive: bool,
    /// Arguments (JSON text).
    pub args: String,
    /// Mode slug.
    pub mode: String,
    /// Active intent, if any.
    pub intent_id: Option<String>,
    /// Declared workspace-relative paths.
    pub paths: Vec<String>,
}

impl HookCall {
    fn to_wit(&self) -> wit::ToolCall {
        wit::ToolCall {
            tool: self.tool.clone(),
            group: to_wit_group(self.group),
            destructive: self.destructive,
            args: self.args.clone(),
            mode: self.mode.clone(),
            intent_id: self.intent_id.clone(),
            paths: self.paths.clone(),
        }
    }
}

/// A pre-tool hook's verdict, as the task loop acts on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookDecision {
    /// Proceed.
    Allow,
    /// Refuse, with a reason for the model.
    Deny(String),
    /// Ask the user this question.
    Ask(String),
    /// Replace the arguments (JSON text, not yet checked by anyone).
    Rewrite(String),
}

impl PluginEngine {
    /// Load a mode hook from a file.
    pub fn load_hook_file(&self, name: &str, path: &Path) -> Result<Arc<LoadedHook>, PluginError> {
        let bytes = std::fs::read(path).map_err(|source| PluginError::Read {
            plugin: name.to_owned(),
            path: path.to_path_buf(),
            source,
        })?;
        self.load_hook_bytes(name, &bytes)
    }

    /// Load a mode hook from its bytes: a component of world `mode-hook`,
    /// checked and prepared like any plugin.
    pub fn load_hook_bytes(
        &self,
        name: &str,
        bytes: &[u8],
    ) -> Result<Arc<LoadedHook>, PluginError> {
        let hash = blake3::hash(bytes);
        let ready = self.hook_pre(name, bytes, &hash)?;
        Ok(Arc::new(LoadedHook {
            name: name.to_owned(),
            pre: Deferred::ready(ready.0, ready.1),
            hash: OnceLock::from(hash),
        }))
    }

    /// A mode hook the binary embeds, prepared only when first used: for
    /// the first-party hooks, which most modes never call, so a start does
    /// not pay for them. Only the header is checked now; the rest, as
    /// strictly, on first use.
    pub fn load_hook_deferred(
        &self,
        name: &str,
        bytes: &'static [u8],
    ) -> Result<Arc<LoadedHook>, PluginError> {
        check_header(name, bytes)?;
        Ok(Arc::new(LoadedHook {
            name: name.to_owned(),
            pre: Deferred::later(Cow::Borrowed(bytes)),
            hash: OnceLock::new(),
        }))
    }

    /// Prepare `hook` now if it is not yet, saying where its code came
    /// from.
    pub fn prepare_hook_now(&self, hook: &LoadedHook) -> Result<CacheOutcome, PluginError> {
        self.hook_ready(hook).map(|(_, outcome)| *outcome)
    }

    fn hook_pre(
        &self,
        name: &str,
        bytes: &[u8],
        hash: &blake3::Hash,
    ) -> Result<(HookPre, CacheOutcome), PluginError> {
        let (instance_pre, compiled) = self.prepare(name, bytes, hash)?;
        let pre = match ModeHookPre::new(instance_pre.clone()) {
            Ok(pre) => HookPre::Latest(pre),
            Err(latest) => match since_v0_1_0::mode_hook::ModeHookPre::new(instance_pre) {
                Ok(pre) => HookPre::V0_1_0(pre),
                Err(_) => return Err(wrong_world(name, "roost:plugin/mode-hook", &latest)),
            },
        };
        Ok((pre, compiled))
    }

    /// `hook`'s prepared instance, made on first use.
    fn hook_ready<'h>(
        &self,
        hook: &'h LoadedHook,
    ) -> Result<&'h (HookPre, CacheOutcome), PluginError> {
        hook.pre.get("hook", &hook.name, |bytes| {
            self.hook_pre(&hook.name, bytes, hook.hash())
        })
    }

    /// [`Self::hook_ready`]'s instance for a call, or why there is none.
    fn hook_instance(&self, hook: &LoadedHook) -> Result<HookPre, ToolError> {
        self.hook_ready(hook)
            .map(|(pre, _)| pre.clone())
            .map_err(|e| ToolError::new(ErrorCode::Internal, e.to_string()))
    }

    /// Ask `hook` about a call before it runs.
    pub async fn hook_pre_tool(
        &self,
        hook: &LoadedHook,
        call: &HookCall,
        grant: &Grant,
    ) -> Result<HookDecision, ToolError> {
        let wit_call = call.to_wit();
        let cap = grant.limits.output_bytes;
        let pre = self.hook_instance(hook)?;
        let d = self
            .bounded(
                &hook.name,
                grant,
                async move |store: &mut Store<CallState>| pre.pre_tool(store, wit_call).await,
            )
            .await?;
        let over = |what: &str, s: &str| {
            ToolError::new(
                ErrorCode::LimitExceeded,
                format!(
                    "hook `{}` returned a {what} of {} bytes, over the cap of {cap}",
                    hook.name,
                    s.len()
                ),
            )
        };
        Ok(match d {
            wit::PreToolDecision::Allow => HookDecision::Allow,
            wit::PreToolDecision::Deny(r) => HookDecision::Deny(cut(&r, cap).to_owned()),
            wit::PreToolDecision::Ask(q) => HookDecision::Ask(cut(&q, cap).to_owned()),
            // A cut rewrite would be different arguments: refuse it whole.
            wit::PreToolDecision::Rewrite(a) if a.len() > cap => {
                return Err(over("rewrite", &a));
            }
            wit::PreToolDecision::Rewrite(a) => HookDecision::Rewrite(a),
        })
    }

    /// Tell `hook` how a call went.
    pub async fn hook_post_tool(
        &self,
        hook: &LoadedHook,
        call: &HookCall,
        result: &Result<ToolOutput, ToolError>,
        changed_paths: &[String],
        grant: &Grant,
    ) -> Result<(), ToolError> {
        let wit_call = call.to_wit();
        let outcome = wit::ToolOutcome {
            outcome: match result {
                Ok(o) => Ok(wit::ToolOutput {
                    text: o.text.clone(),
                    data: o.data.as_ref().map(|d| d.to_string()),
                }),
                Err(e) => Err(wit::ToolError {
                    code: to_wit_code(e.code),
                    message: e.message.clone(),
                }),
            },
            changed_paths: changed_paths.to_vec(),
        };
        let pre = self.hook_instance(hook)?;
        self.bounded(
            &hook.name,
            grant,
            async move |store: &mut Store<CallState>| pre.post_tool(store, wit_call, outcome).await,
        )
        .await
    }

    /// The text `hook` adds to the system prompt in `mode`, if any.
    pub async fn hook_prompt(
        &self,
        hook: &LoadedHook,
        mode: &str,
        grant: &Grant,
    ) -> Result<Option<String>, ToolError> {
        let pre = self.hook_instance(hook)?;
        let mode = mode.to_owned();
        let text = self
            .bounded(
                &hook.name,
                grant,
                async move |store: &mut Store<CallState>| pre.prompt(store, &mode).await,
            )
            .await?;
        Ok(text.map(|t| cut(&t, grant.limits.output_bytes).to_owned()))
    }
}

fn to_wit_group(g: ToolGroup) -> wit::ToolGroup {
    match g {
        ToolGroup::Read => wit::ToolGroup::Read,
        ToolGroup::Edit => wit::ToolGroup::Edit,
        ToolGroup::Command => wit::ToolGroup::Command,
        ToolGroup::Browser => wit::ToolGroup::Browser,
        ToolGroup::Mcp => wit::ToolGroup::Mcp,
        ToolGroup::Modes => wit::ToolGroup::Modes,
    }
}

fn to_wit_code(c: ErrorCode) -> wit::ErrorCode {
    match c {
        ErrorCode::InvalidArgs => wit::ErrorCode::InvalidArgs,
        ErrorCode::NotFound => wit::ErrorCode::NotFound,
        ErrorCode::PermissionDenied => wit::ErrorCode::PermissionDenied,
        ErrorCode::LimitExceeded => wit::ErrorCode::LimitExceeded,
        ErrorCode::Internal => wit::ErrorCode::Internal,
    }
}
