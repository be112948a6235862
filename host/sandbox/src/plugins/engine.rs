//! The process-wide engine: compiles and caches components, links the host
//! interfaces, and runs each call in a fresh, bounded, sandboxed store.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;
use wasmtime::{Engine, Store, StoreLimitsBuilder, Trap, UpdateDeadline};

use super::bindings::since_v0_1_0;
use super::bindings::tool_plugin::ToolPluginPre;
use super::bindings::tool_plugin::roost::plugin::types as wit;
use super::cache::{CacheOutcome, ComponentCache};
use super::component_file::ComponentFile;
use super::deferred::Deferred;
use super::error::PluginError;
use super::http::{EgressHooks, NetworkLog, NetworkReport, Resolve, SystemResolver};
use super::runtime::Runtime;
use super::state::{CallLimiter, CallState, cut};
use crate::capability::{Grant, NetworkGrant, wasi};
use crate::tool::{ErrorCode, ToolAnnotations, ToolError, ToolGroup, ToolOutput, ToolSpec};

/// Extra wall-clock time past a call's deadline before the host ends a call
/// waiting in an asynchronous host function (a poll, a sleep, a request),
/// which the epoch interrupt does not reach: it only stops guest code.
const HOST_GRACE: Duration = Duration::from_millis(50);
/// Longest trap message passed on to the model.
const MAX_TRAP_MESSAGE: usize = 2048;
/// The cached answer holding what a plugin was found to be at load (its
/// WIT version and checked tool list); the host's version is part of it,
/// so a host that checks differently asks again.
const TOOLS_ANSWER: &str = concat!("plugin-", env!("CARGO_PKG_VERSION"));

/// What a plugin was found to be when this host last loaded it.
#[derive(serde::Serialize, serde::Deserialize)]
struct Known {
    wit_version: String,
    tools: Vec<ToolSpec>,
}
/// Most tools one plugin may list.
pub const MAX_TOOLS: usize = 128;
/// Largest argument schema (JSON text) of one tool.
pub const MAX_SCHEMA_BYTES: usize = 64 << 10;
/// Longest tool description.
pub const MAX_DESCRIPTION_BYTES: usize = 16 << 10;
/// Longest tool title (an annotation).
pub const MAX_TITLE_BYTES: usize = 256;

/// How the engine is set up; one per process.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Where precompiled components are cached; `None` compiles every load.
    pub cache_dir: Option<PathBuf>,
    /// Instances that may run at once (pool slots); further calls wait.
    pub max_concurrent_calls: u32,
    /// Hard ceiling on any call's memory; grants asking for more are clamped.
    pub max_memory_bytes: u64,
    /// Use the pooling allocator (falls back to on-demand if the pool cannot
    /// be reserved).
    pub pooling: bool,
    /// Epoch tick: the resolution of deadlines and how often a running
    /// plugin yields to other tasks.
    pub epoch_tick: Duration,
    /// How granted host names become addresses for plugins' requests (the
    /// system resolver; tests inject their own).
    pub resolver: Arc<dyn Resolve>,
    /// Sealed artifacts this program's build precompiled with the engine
    /// config every Roost engine uses (`roost-engine-config`): the
    /// first-party components, loaded without compiling. Only ever
    /// artifacts the program itself ships: they run as native code. Each is
    /// used only if its seal verifies and wasmtime finds it compatible with
    /// this engine (the same CPU features); otherwise the component is
    /// compiled as any other.
    pub prebuilt: Vec<Cow<'static, [u8]>>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            cache_dir: None,
            max_concurrent_calls: 256,
            max_memory_bytes: 1 << 30,
            pooling: true,
            epoch_tick: Duration::from_millis(10),
            resolver: Arc::new(SystemResolver),
            prebuilt: Vec::new(),
        }
    }
}

impl EngineConfig {
    /// Default configuration caching components in `dir`.
    pub fn with_cache_dir(dir: impl Into<PathBuf>) -> Self {
        Self {
            cache_dir: Some(dir.into()),
            ..Self::default()
        }
    }

    /// This configuration with the build's sealed precompiled artifacts.
    pub fn with_prebuilt(mut self, sealed: &[&'static [u8]]) -> Self {
        self.prebuilt
            .extend(sealed.iter().map(|s| Cow::Borrowed(*s)));
        self
    }
}

/// A tool plugin's prepared instance, by the `roost:plugin` version it
/// was built against.
#[derive(Clone)]
enum ToolPre {
    /// The latest version (0.2.0).
    Latest(ToolPluginPre<CallState>),
    /// 0.1.0, through [`since_v0_1_0`].
    V0_1_0(since_v0_1_0::tool_plugin::ToolPluginPre<CallState>),
}

impl ToolPre {
    /// The WIT version the component was built against.
    fn wit_version(&self) -> &'static str {
        match self {
            Self::Latest(_) => WIT_VERSIONS[0],
            Self::V0_1_0(_) => "0.1.0",
        }
    }

    async fn tools(&self, store: &mut Store<CallState>) -> wasmtime::Result<Vec<wit::ToolSpec>> {
        Ok(match self {
            Self::Latest(pre) => {
                let inst = pre.instantiate_async(&mut *store).await?;
                inst.roost_plugin_tool().call_tools(&mut *store).await?
            }
            Self::V0_1_0(pre) => {
                let inst = pre.instantiate_async(&mut *store).await?;
                inst.roost_plugin_tool()
                    .call_tools(&mut *store)
                    .await?
                    .into_iter()
                    .map(Into::into)
                    .collect()
            }
        })
    }

    async fn call(
        &self,
        store: &mut Store<CallState>,
        tool: &str,
        args: &str,
    ) -> wasmtime::Result<Result<wit::ToolOutput, wit::ToolError>> {
        Ok(match self {
            Self::Latest(pre) => {
                let inst = pre.instantiate_async(&mut *store).await?;
                inst.roost_plugin_tool()
                    .call_call(&mut *store, tool, args)
                    .await?
            }
            Self::V0_1_0(pre) => {
                let inst = pre.instantiate_async(&mut *store).await?;
                inst.roost_plugin_tool()
                    .call_call(&mut *store, tool, args)
                    .await?
                    .map(Into::into)
                    .map_err(Into::into)
            }
        })
    }
}

/// The `roost:plugin` versions this host loads, newest first.
pub const WIT_VERSIONS: [&str; 2] = ["0.2.0", "0.1.0"];

/// A component that is of no version of `world` this host loads; `latest`
/// is why the latest version refused it.
pub(super) fn wrong_world(
    plugin: &str,
    world: &'static str,
    latest: &wasmtime::Error,
) -> PluginError {
    PluginError::WrongWorld {
        plugin: plugin.to_owned(),
        world,
        detail: format!(
            "{latest:#} (this Roost loads roost:plugin {})",
            WIT_VERSIONS.join(", ")
        ),
    }
}

/// The outcome of one tool call and the requests it attempted.
#[derive(Debug, Clone, PartialEq)]
pub struct CallReport {
    /// What the tool returned, or why it failed.
    pub result: Result<ToolOutput, ToolError>,
    /// Its outgoing requests, allowed and refused, in order.
    pub network: NetworkReport,
}

/// A loaded tool plugin: its tools and its prepared instance.
pub struct LoadedPlugin {
    name: String,
    /// Its prepared instance: made at load when its tools were asked of
    /// it, else on its first call (a start that only lists tools prepares
    /// nothing).
    pre: Deferred<ToolPre>,
    wit_version: &'static str,
    tools: Vec<ToolSpec>,
    hash: blake3::Hash,
    tools_cached: bool,
}

impl LoadedPlugin {
    /// Plugin name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Tools the plugin exports.
    pub fn tools(&self) -> &[ToolSpec] {
        &self.tools
    }

    /// Content hash of the component (for traces and the registry).
    pub fn content_hash(&self) -> String {
        self.hash.to_hex().to_string()
    }

    /// The `roost:plugin` version the component was built against.
    pub fn wit_version(&self) -> &'static str {
        self.wit_version
    }

    /// Whether its tool list came from the cache (checked when it was
    /// first loaded) rather than from asking an instance.
    pub fn tools_from_cache(&self) -> bool {
        self.tools_cached
    }

    /// Where its compiled code came from (the build, the cache, or a
    /// compile); `None` until it is prepared (see
    /// [`PluginEngine::prepare_now`]).
    pub fn compiled(&self) -> Option<CacheOutcome> {
        self.pre.outcome()
    }
}

impl std::fmt::Debug for LoadedPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedPlugin")
            .field("name", &self.name)
            .field("tools", &self.tools.len())
            .finish()
    }
}

/// One per process: owns the wasmtime side (engine, linker, epoch ticker;
/// made on first use), the component cache and the pool of call slots.
pub struct PluginEngine {
    /// Made by the first load or call that needs it ([`Runtime`]); a
    /// creation error is kept and given to every caller.
    runtime: OnceLock<Result<Runtime, String>>,
    pub(super) cache: Option<ComponentCache>,
    /// The build's sealed artifacts, by the component they were compiled
    /// from (checked when used).
    pub(super) prebuilt: HashMap<blake3::Hash, Cow<'static, [u8]>>,
    /// Told about each compile (a front-end shows progress).
    pub(super) compile_watch: Mutex<Option<Arc<dyn super::deferred::CompileWatch>>>,
    slots: Arc<Semaphore>,
    config: EngineConfig,
}

impl PluginEngine {
    /// Set the engine up. The wasmtime engine and its pool are made on
    /// first use; a cache's entries are named by an engine of the same
    /// configuration without a pool.
    pub fn new(config: EngineConfig) -> Result<Self, PluginError> {
        let cache = match &config.cache_dir {
            Some(dir) => match ComponentCache::open(dir, &super::runtime::unpooled_engine()?) {
                Ok(c) => Some(c),
                Err(e) => {
                    tracing::warn!(dir = %dir.display(), "component cache unavailable, compiling every load: {e}");
                    None
                }
            },
            None => None,
        };
        let prebuilt = config
            .prebuilt
            .iter()
            .filter_map(|sealed| {
                Some((
                    roost_engine_config::Sealed::component_of(sealed)?,
                    sealed.clone(),
                ))
            })
            .collect();
        Ok(Self {
            runtime: OnceLock::new(),
            cache,
            prebuilt,
            compile_watch: Mutex::new(None),
            slots: Arc::new(Semaphore::new(
                usize::try_from(config.max_concurrent_calls).unwrap_or(usize::MAX),
            )),
            config,
        })
    }

    /// The wasmtime side, made now if no load or call made it yet.
    pub(super) fn runtime(&self) -> Result<&Runtime, PluginError> {
        self.runtime
            .get_or_init(|| Runtime::new(&self.config))
            .as_ref()
            .map_err(|e| PluginError::Engine(e.clone()))
    }

    /// Whether the pooling allocator is in use (false after a fallback, or
    /// when the engine cannot be made).
    pub fn is_pooled(&self) -> bool {
        self.runtime().is_ok_and(|r| r.pooled)
    }

    /// Whether the wasmtime side has been made: a start that only lists
    /// tools the cache knows never makes it.
    pub fn runtime_started(&self) -> bool {
        self.runtime.get().is_some()
    }

    /// The underlying wasmtime engine (for benchmarks and diagnostics).
    pub fn wasmtime(&self) -> Result<&Engine, PluginError> {
        self.runtime().map(|r| &r.engine)
    }

    /// The component cache, if one is configured.
    pub fn cache(&self) -> Option<&ComponentCache> {
        self.cache.as_ref()
    }

    /// Load a tool plugin from a file.
    pub fn load_file(&self, name: &str, path: &Path) -> Result<Arc<LoadedPlugin>, PluginError> {
        let bytes = std::fs::read(path).map_err(|source| PluginError::Read {
            plugin: name.to_owned(),
            path: path.to_path_buf(),
            source,
        })?;
        self.load_component(name, Cow::Owned(bytes))
    }

    /// Load a tool plugin from its bytes (see [`Self::load_component`]).
    pub fn load_bytes(&self, name: &str, bytes: &[u8]) -> Result<Arc<LoadedPlugin>, PluginError> {
        self.load_component(name, Cow::Owned(bytes.to_vec()))
    }

    /// Load a tool plugin: check it is a component and learn its tools. A
    /// plugin this host loaded before is known from the cache (its checked
    /// tool list, under the cache's MAC) and keeps `bytes` to be prepared
    /// on its first call; any other is compiled (or loaded), linked,
    /// checked against its world and asked for its tools now. Borrowed
    /// bytes (a component the binary embeds) are never copied.
    pub fn load_component(
        &self,
        name: &str,
        bytes: Cow<'static, [u8]>,
    ) -> Result<Arc<LoadedPlugin>, PluginError> {
        let hash = blake3::hash(&bytes);
        self.load_component_hashed(name, bytes, hash)
    }

    /// [`Self::load_component`] for bytes whose BLAKE3 hash the caller
    /// already has and vouches for: one the build computed for the
    /// components it embeds, or one just checked against an install
    /// record. A start then reads each component's bytes once, not twice.
    pub fn load_component_hashed(
        &self,
        name: &str,
        bytes: Cow<'static, [u8]>,
        hash: blake3::Hash,
    ) -> Result<Arc<LoadedPlugin>, PluginError> {
        check_header(name, &bytes)?;
        if let Some((wit_version, tools)) = self.known(&hash) {
            return Ok(Arc::new(LoadedPlugin {
                name: name.to_owned(),
                pre: Deferred::later(bytes),
                wit_version,
                tools,
                hash,
                tools_cached: true,
            }));
        }
        let (pre, compiled) = self.tool_pre(name, &bytes, &hash)?;
        let tools = self.checked_tools(name, &pre)?;
        if let Some(cache) = &self.cache
            && let Ok(json) = serde_json::to_vec(&Known {
                wit_version: pre.wit_version().to_owned(),
                tools: tools.clone(),
            })
        {
            cache.store_answer(&hash, TOOLS_ANSWER, &json);
        }
        Ok(Arc::new(LoadedPlugin {
            name: name.to_owned(),
            wit_version: pre.wit_version(),
            pre: Deferred::ready(pre, compiled),
            tools,
            hash,
            tools_cached: false,
        }))
    }

    /// [`Self::load_component_hashed`] for a component file the cache
    /// knows (this host loaded it before): nothing of it is read beyond the
    /// hash it was opened with until its first call, which reads it again
    /// and refuses it if it changed. `Err` gives the file back when the
    /// cache does not know it: the caller reads it whole and loads that.
    pub fn load_known_file(
        &self,
        name: &str,
        file: ComponentFile,
    ) -> Result<Arc<LoadedPlugin>, ComponentFile> {
        let hash = file.hash();
        let Some((wit_version, tools)) = self.known(&hash) else {
            return Err(file);
        };
        Ok(Arc::new(LoadedPlugin {
            name: name.to_owned(),
            pre: Deferred::from_file(file),
            wit_version,
            tools,
            hash,
            tools_cached: true,
        }))
    }

    /// What the cache says the component `hash` was found to be when this
    /// host last loaded it; `None` if it says nothing it can vouch for.
    fn known(&self, hash: &blake3::Hash) -> Option<(&'static str, Vec<ToolSpec>)> {
        let json = self.cache.as_ref()?.load_answer(hash, TOOLS_ANSWER)?;
        let known: Known = serde_json::from_slice(&json).ok()?;
        let version = WIT_VERSIONS.into_iter().find(|v| *v == known.wit_version)?;
        Some((version, known.tools))
    }

    /// Compile (or load), link and check the tool-plugin world of `bytes`.
    fn tool_pre(
        &self,
        name: &str,
        bytes: &[u8],
        hash: &blake3::Hash,
    ) -> Result<(ToolPre, CacheOutcome), PluginError> {
        let (instance_pre, compiled) = self.prepare(name, bytes, hash)?;
        let pre = match ToolPluginPre::new(instance_pre.clone()) {
            Ok(pre) => ToolPre::Latest(pre),
            Err(latest) => match since_v0_1_0::tool_plugin::ToolPluginPre::new(instance_pre) {
                Ok(pre) => ToolPre::V0_1_0(pre),
                Err(_) => return Err(wrong_world(name, "roost:plugin/tool-plugin", &latest)),
            },
        };
        Ok((pre, compiled))
    }

    /// Prepare `plugin` now if it is not yet (it is otherwise prepared on
    /// its first call), saying where its code came from.
    pub fn prepare_now(&self, plugin: &LoadedPlugin) -> Result<CacheOutcome, PluginError> {
        self.prepared(plugin).map(|(_, outcome)| *outcome)
    }

    /// `plugin`'s prepared instance, made on first use.
    fn prepared<'p>(
        &self,
        plugin: &'p LoadedPlugin,
    ) -> Result<&'p (ToolPre, CacheOutcome), PluginError> {
        plugin.pre.get("plugin", &plugin.name, |bytes| {
            self.tool_pre(&plugin.name, bytes, &plugin.hash)
        })
    }

    /// Ask a plugin for its tools and check them (count, names, schemas,
    /// uniqueness).
    fn checked_tools(&self, name: &str, pre: &ToolPre) -> Result<Vec<ToolSpec>, PluginError> {
        let raw = self.list_tools(name, pre)?;
        if raw.len() > MAX_TOOLS {
            return Err(PluginError::BadTools {
                plugin: name.to_owned(),
                detail: format!(
                    "lists {} tools; at most {MAX_TOOLS} are accepted",
                    raw.len()
                ),
            });
        }
        let tools = raw
            .into_iter()
            .map(|s| convert_spec(name, s))
            .collect::<Result<Vec<_>, _>>()?;
        check_unique(name, &tools)?;
        Ok(tools)
    }

    /// Ask a freshly prepared plugin for its tools, in a call that is granted
    /// nothing.
    fn list_tools(&self, name: &str, pre: &ToolPre) -> Result<Vec<wit::ToolSpec>, PluginError> {
        self.at_load(name, async |store: &mut Store<CallState>| {
            pre.tools(store).await
        })
        .map_err(|e| PluginError::BadTools {
            plugin: name.to_owned(),
            detail: format!("`tools` {e}"),
        })
    }

    /// Run `f` once in a fresh store of `name` granted nothing, as loading
    /// a component asks it what it offers (a plugin's tools, a skill's
    /// entries). Runs on its own thread and runtime so loading works from
    /// synchronous code and from inside any tokio runtime alike; the error
    /// says what went wrong (`failed: …`, `did not return …`).
    pub(super) fn at_load<T, F>(&self, name: &str, f: F) -> Result<T, String>
    where
        T: Send,
        F: AsyncFnOnce(&mut Store<CallState>) -> wasmtime::Result<T> + Send,
    {
        let grant = Grant::new(PathBuf::new());
        std::thread::scope(|s| {
            s.spawn(|| {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| format!("cannot start a runtime: {e}"))?;
                rt.block_on(async {
                    let mut store = self.new_store(name, &grant, None).map_err(|e| e.message)?;
                    let fut = f(&mut store);
                    let res = tokio::time::timeout(grant.limits.deadline + HOST_GRACE, fut).await;
                    match res {
                        Ok(Ok(v)) => Ok(v),
                        Ok(Err(e)) => Err(format!(
                            "failed: {}",
                            classify_trap(name, &e, &store, &grant).message
                        )),
                        Err(_) => Err("did not return within the deadline".into()),
                    }
                })
            })
            .join()
            .map_err(|_| "panicked while loading".to_owned())?
        })
    }

    /// A fresh store for one call of `name` under `grant`. Its `wasi:http`
    /// requests may use the grant's network only when `net` is given (the
    /// log they are recorded in): tool calls; hooks and tool listing get
    /// none.
    fn new_store(
        &self,
        name: &str,
        grant: &Grant,
        net: Option<NetworkLog>,
    ) -> Result<Store<CallState>, ToolError> {
        let sandbox = wasi::sandbox(grant)
            .map_err(|e| ToolError::new(ErrorCode::PermissionDenied, e.to_string()))?;
        let memory = grant.limits.memory_bytes.min(self.config.max_memory_bytes);
        let limits = StoreLimitsBuilder::new()
            .memory_size(usize::try_from(memory).unwrap_or(usize::MAX))
            .table_elements(1_000_000)
            .instances(64)
            .tables(256)
            .memories(16)
            .build();
        let deadline = Instant::now() + grant.limits.deadline;
        let none = NetworkGrant::default();
        let (network, log) = match net {
            Some(log) => (&grant.network, log),
            None => (&none, NetworkLog::default()),
        };
        let hooks = EgressHooks::new(
            name,
            network,
            deadline,
            Arc::clone(&self.config.resolver),
            log,
        );
        let state = CallState::new(name, sandbox, hooks, CallLimiter::new(limits), grant.read);
        let runtime = self
            .runtime()
            .map_err(|e| ToolError::new(ErrorCode::Internal, e.to_string()))?;
        let mut store = Store::new(&runtime.engine, state);
        store.limiter(|s| &mut s.limiter);
        store.epoch_deadline_callback(move |_| {
            if Instant::now() >= deadline {
                Ok(UpdateDeadline::Interrupt)
            } else {
                // Yield every tick so a busy plugin never holds a runtime
                // thread that other tasks need.
                Ok(UpdateDeadline::Yield(1))
            }
        });
        store.set_epoch_deadline(1);
        Ok(store)
    }

    /// Run `tool` of `plugin` with `args` (JSON text) under `grant`: a fresh
    /// store, a sandbox built from the grant, the grant's limits. A plugin
    /// that traps, overruns or misbehaves yields a [`ToolError`]; the engine
    /// and other calls are unaffected.
    pub async fn call(
        &self,
        plugin: &LoadedPlugin,
        tool: &str,
        args: &str,
        grant: &Grant,
    ) -> Result<ToolOutput, ToolError> {
        self.call_with_report(plugin, tool, args, grant)
            .await
            .result
    }

    /// [`call`](Self::call), also returning every outgoing request the call
    /// attempted (allowed or refused), for the trace.
    pub async fn call_with_report(
        &self,
        plugin: &LoadedPlugin,
        tool: &str,
        args: &str,
        grant: &Grant,
    ) -> CallReport {
        let pre = match self.prepared(plugin) {
            Ok((pre, _)) => pre.clone(),
            Err(e) => {
                return CallReport {
                    result: Err(ToolError::new(ErrorCode::Internal, e.to_string())),
                    network: NetworkReport::default(),
                };
            }
        };
        let (tool, args) = (tool.to_owned(), args.to_owned());
        let log = NetworkLog::default();
        let res = self
            .bounded_with(
                &plugin.name,
                grant,
                Some(log.clone()),
                async move |store: &mut Store<CallState>| pre.call(store, &tool, &args).await,
            )
            .await;
        let result = match res {
            Err(e) => Err(e),
            Ok(Err(e)) => Err(ToolError::new(
                convert_code(e.code),
                cut(&e.message, grant.limits.output_bytes),
            )),
            Ok(Ok(out)) => Ok(cap_output(&plugin.name, out, grant.limits.output_bytes)),
        };
        CallReport {
            result,
            network: log.report(),
        }
    }

    /// Run `f` in a fresh store for `name` under `grant`: a call slot, the
    /// grant's sandbox and limits, and traps and overruns turned into
    /// [`ToolError`]s.
    ///
    /// The call runs on the caller's own runtime thread, with no hand-off
    /// to another thread: nothing a guest can ask of the host blocks that
    /// thread. Guest code is interrupted at every epoch tick (it yields, so
    /// other tasks run) and trapped at its deadline; sleeps, polls and
    /// `wasi:http` are asynchronous and end with the deadline's timeout;
    /// the only filesystem call that could wait for another process,
    /// opening a FIFO or a device, opens without blocking and refuses
    /// anything but a regular file or a directory ([`super::special_files`]).
    ///
    /// The call gets no network (mode hooks): see [`Self::bounded_with`].
    pub(super) async fn bounded<T, F>(
        &self,
        name: &str,
        grant: &Grant,
        f: F,
    ) -> Result<T, ToolError>
    where
        T: Send + 'static,
        F: AsyncFnOnce(&mut Store<CallState>) -> wasmtime::Result<T> + Send + 'static,
    {
        self.bounded_with(name, grant, None, f).await
    }

    /// [`Self::bounded`], the call's `wasi:http` requests allowed what the
    /// grant's network allows and recorded in `net` when it is given.
    async fn bounded_with<T, F>(
        &self,
        name: &str,
        grant: &Grant,
        net: Option<NetworkLog>,
        f: F,
    ) -> Result<T, ToolError>
    where
        T: Send + 'static,
        F: AsyncFnOnce(&mut Store<CallState>) -> wasmtime::Result<T> + Send + 'static,
    {
        let slot = Arc::clone(&self.slots)
            .acquire_owned()
            .await
            .map_err(|_| ToolError::new(ErrorCode::Internal, "plugin engine is shutting down"))?;
        let mut store = self.new_store(name, grant, net)?;
        let limit = grant.limits.deadline + HOST_GRACE;
        let outcome = match tokio::time::timeout(limit, f(&mut store)).await {
            Err(_) => Err(deadline_error(name, grant)),
            Ok(Err(trap)) => Err(classify_trap(name, &trap, &store, grant)),
            Ok(Ok(v)) => Ok(v),
        };
        // The instance goes back to the pool before its slot is released.
        drop(store);
        drop(slot);
        outcome
    }
}

/// Magic and layer bytes: `\0asm`, then version 1 (core module) or the
/// component layer (`0d 00 01 00`).
pub(super) fn check_header(name: &str, bytes: &[u8]) -> Result<(), PluginError> {
    if bytes.len() < 8 || &bytes[..4] != b"\0asm" {
        return Err(PluginError::NotWasm {
            plugin: name.to_owned(),
        });
    }
    if bytes[6..8] == [0, 0] {
        return Err(PluginError::CoreModule {
            plugin: name.to_owned(),
        });
    }
    Ok(())
}

fn deadline_error(plugin: &str, grant: &Grant) -> ToolError {
    ToolError::new(
        ErrorCode::LimitExceeded,
        format!(
            "plugin `{plugin}` exceeded its deadline of {:?} and was stopped",
            grant.limits.deadline
        ),
    )
}

pub(super) fn classify_trap(
    plugin: &str,
    err: &wasmtime::Error,
    store: &Store<CallState>,
    grant: &Grant,
) -> ToolError {
    let trap = err.downcast_ref::<Trap>().copied();
    if trap == Some(Trap::Interrupt) {
        return deadline_error(plugin, grant);
    }
    if store.data().limiter.memory_refused {
        return ToolError::new(
            ErrorCode::LimitExceeded,
            format!(
                "plugin `{plugin}` exceeded its memory limit of {} MiB",
                grant.limits.memory_bytes >> 20
            ),
        );
    }
    if trap == Some(Trap::StackOverflow) {
        return ToolError::new(
            ErrorCode::LimitExceeded,
            format!("plugin `{plugin}` overflowed its stack (unbounded recursion?)"),
        );
    }
    let msg = format!("{err:#}");
    ToolError::new(
        ErrorCode::Internal,
        format!("plugin `{plugin}` failed: {}", cut(&msg, MAX_TRAP_MESSAGE)),
    )
}

/// Bound a call's output before the host does any work on it: sizes are
/// checked first, so `data` is parsed as JSON only when it fits the cap.
pub(super) fn cap_output(plugin: &str, out: wit::ToolOutput, cap: usize) -> ToolOutput {
    let data_len = out.data.as_ref().map_or(0, String::len);
    let total = out.text.len().saturating_add(data_len);
    let parse = |d: String| match serde_json::from_str(&d) {
        Ok(v) => Some(v),
        Err(e) => {
            tracing::warn!(plugin, "tool returned data that is not JSON, dropped: {e}");
            None
        }
    };
    if total <= cap {
        return ToolOutput {
            text: out.text,
            data: out.data.and_then(parse),
            truncated: false,
        };
    }
    let room = cap.saturating_sub(out.text.len());
    let data = out.data.filter(|d| d.len() <= room).and_then(parse);
    let mut text = cut(&out.text, cap).to_owned();
    text.push_str(&format!(
        "\n[output truncated by Roost: {total} bytes, cap {cap} bytes]"
    ));
    ToolOutput {
        text,
        data,
        truncated: true,
    }
}

pub(super) fn convert_code(c: wit::ErrorCode) -> ErrorCode {
    match c {
        wit::ErrorCode::InvalidArgs => ErrorCode::InvalidArgs,
        wit::ErrorCode::NotFound => ErrorCode::NotFound,
        wit::ErrorCode::PermissionDenied => ErrorCode::PermissionDenied,
        wit::ErrorCode::LimitExceeded => ErrorCode::LimitExceeded,
        wit::ErrorCode::Internal => ErrorCode::Internal,
    }
}

fn convert_group(g: wit::ToolGroup) -> ToolGroup {
    match g {
        wit::ToolGroup::Read => ToolGroup::Read,
        wit::ToolGroup::Edit => ToolGroup::Edit,
        wit::ToolGroup::Command => ToolGroup::Command,
        wit::ToolGroup::Browser => ToolGroup::Browser,
        wit::ToolGroup::Mcp => ToolGroup::Mcp,
        wit::ToolGroup::Modes => ToolGroup::Modes,
    }
}

/// Tool names follow the rules every provider accepts for function names.
pub(super) fn valid_tool_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 64
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn convert_spec(plugin: &str, s: wit::ToolSpec) -> Result<ToolSpec, PluginError> {
    let bad = |detail: String| PluginError::BadTools {
        plugin: plugin.to_owned(),
        detail,
    };
    if !valid_tool_name(&s.name) {
        return Err(bad(format!(
            "invalid tool name {:?} (want 1-64 of [A-Za-z0-9_-])",
            s.name
        )));
    }
    if s.args_schema.len() > MAX_SCHEMA_BYTES {
        return Err(bad(format!(
            "tool `{}` has an args schema of {} bytes; at most {MAX_SCHEMA_BYTES} are accepted",
            s.name,
            s.args_schema.len()
        )));
    }
    if s.description.len() > MAX_DESCRIPTION_BYTES {
        return Err(bad(format!(
            "tool `{}` has a description of {} bytes; at most {MAX_DESCRIPTION_BYTES} are accepted",
            s.name,
            s.description.len()
        )));
    }
    if s.path_args.len() > 32 || s.path_args.iter().any(|a| a.len() > 64) {
        return Err(bad(format!(
            "tool `{}` declares too many or too long path arguments",
            s.name
        )));
    }
    let schema: serde_json::Value = serde_json::from_str(&s.args_schema).map_err(|e| {
        bad(format!(
            "tool `{}` has an args schema that is not JSON: {e}",
            s.name
        ))
    })?;
    if !schema.is_object() {
        return Err(bad(format!(
            "tool `{}` has an args schema that is not a JSON object",
            s.name
        )));
    }
    let group = convert_group(s.group);
    let title = s.annotations.title.filter(|t| !t.trim().is_empty());
    if title.as_ref().is_some_and(|t| t.len() > MAX_TITLE_BYTES) {
        return Err(bad(format!(
            "tool `{}` has a title longer than {MAX_TITLE_BYTES} bytes",
            s.name
        )));
    }
    Ok(ToolSpec {
        name: s.name,
        description: s.description,
        args_schema: schema,
        group,
        // Edit and command tools change state whatever they declare: a
        // plugin cannot opt out of the intent gate by saying otherwise.
        destructive: s.destructive || matches!(group, ToolGroup::Edit | ToolGroup::Command),
        path_args: s.path_args,
        annotations: ToolAnnotations {
            title,
            idempotent: s.annotations.idempotent,
            open_world: s.annotations.open_world,
        },
    })
}

fn check_unique(plugin: &str, tools: &[ToolSpec]) -> Result<(), PluginError> {
    let mut seen = std::collections::HashSet::new();
    for t in tools {
        if !seen.insert(t.name.as_str()) {
            return Err(PluginError::BadTools {
                plugin: plugin.to_owned(),
                detail: format!("tool `{}` listed twice", t.name),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call waiting in the host past its deadline (here: on a future
    /// that never completes, as a guest polling a pollable that never
    /// fires would) is ended at the deadline with `limit-exceeded`, and the
    /// engine serves the next call.
    #[tokio::test]
    async fn a_call_waiting_in_the_host_is_ended_at_its_deadline() {
        let engine = PluginEngine::new(EngineConfig {
            pooling: false,
            ..EngineConfig::default()
        })
        .expect("engine");
        let grant = Grant::new(PathBuf::new()).limits(crate::capability::Limits {
            deadline: Duration::from_millis(100),
            ..crate::capability::Limits::default()
        });
        let stuck = engine
            .bounded("stuck", &grant, async |_store: &mut Store<CallState>| {
                std::future::pending::<()>().await;
                Ok(1u32)
            })
            .await;
        let err = stuck.expect_err("abandoned");
        assert_eq!(err.code, ErrorCode::LimitExceeded, "{err}");
        let next = engine
            .bounded("next", &grant, async |_store: &mut Store<CallState>| {
                Ok(2u32)
            })
            .await;
        assert_eq!(next.expect("runs"), 2);
    }

    fn spec(group: wit::ToolGroup, destructive: bool) -> wit::ToolSpec {
        wit::ToolSpec {
            name: "t".into(),
            description: String::new(),
            args_schema: "{}".into(),
            group,
            destructive,
            path_args: Vec::new(),
            annotations: wit::ToolAnnotations {
                title: None,
                idempotent: false,
                open_world: false,
            },
        }
    }

    #[test]
    fn edit_and_command_tools_are_always_destructive() {
        for (group, declared, expected) in [
            (wit::ToolGroup::Edit, false, true),
            (wit::ToolGroup::Command, false, true),
            (wit::ToolGroup::Read, false, false),
            (wit::ToolGroup::Read, true, true),
        ] {
            let s = convert_spec("p", spec(group, declared)).expect("valid spec");
            assert_eq!(s.destructive, expected, "{group:?} declared {declared}");
        }
    }
}
