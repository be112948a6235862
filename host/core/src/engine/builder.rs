//! Assembling an [`Engine`] from what a deployment chooses: where its data
//! lives, which model, which extra plugins and hooks, which policies. Every
//! front-end (the CLI today, the HTTP server next) builds its engine here,
//! so they all run tasks with the same tools, hooks and store.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{ConfigEndpoints, Endpoints, Engine, OneEndpoint};
use crate::checkpoints::Checkpoints;
use crate::commands::{CommandHost, CommandsConfig, LineReader, ProfileConfig};
use crate::config::{Config, Profile, SecretStore};
use crate::first_party;
use crate::install::{Plugins, Trust};
use crate::llm::Provider;
use crate::mcp::McpHub;
use crate::modes::HookRegistry;
use crate::skills::{SkillLibrary, Sources};
use crate::store::{Store, StoreError, StoreLocation};
use crate::task::{Agent, Registry, RegistryError, Services, TaskConfig};
use roost_sandbox::plugins::{CompileWatch, LoadedHook, LoadedPlugin, PluginEngine, PluginError};

/// Why an engine could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// No model was chosen.
    #[error(
        "no model provider was given to the engine builder (a provider, a profile or endpoints)"
    )]
    NoProvider,
    /// A component failed to load or compile.
    #[error(transparent)]
    Plugin(#[from] PluginError),
    /// A plugin's tools cannot be registered.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The task store cannot be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// An installed plugin cannot be loaded.
    #[error(transparent)]
    Install(#[from] crate::install::InstallError),
    /// A component file has no usable name.
    #[error("{0}: cannot take a plugin or hook name from this file name")]
    Unnamed(PathBuf),
    /// The command settings cannot be used.
    #[error("[commands]: {0}")]
    Commands(#[from] crate::commands::CommandsError),
}

/// Builds an [`Engine`]: first-party tools and hooks always, then the
/// extra components given, a store in the data directory.
pub struct EngineBuilder {
    data_dir: PathBuf,
    endpoints: Option<Arc<dyn Endpoints>>,
    config: TaskConfig,
    plugin_files: Vec<PathBuf>,
    plugins: Vec<Arc<LoadedPlugin>>,
    hook_files: Vec<PathBuf>,
    hooks: Vec<Arc<LoadedHook>>,
    modes_dir: Option<PathBuf>,
    skills: Sources,
    plugin_engine: Option<Arc<PluginEngine>>,
    compile_watch: Option<Arc<dyn CompileWatch>>,
    installed: bool,
    secrets: SecretStore,
    trust: Trust,
    /// How registries are reached (plugin installs from `oci://`).
    registry: roost_registry::Options,
    names: roost_registry::Resolver,
    commands: Option<(CommandsConfig, BTreeMap<String, ProfileConfig>)>,
    /// The command sandbox's settings even where commands are off: MCP
    /// stdio servers run in it.
    sandbox_settings: (CommandsConfig, BTreeMap<String, ProfileConfig>),
    command_bridge: Option<PathBuf>,
    line_reader: Option<PathBuf>,
    checkpoints: bool,
    /// Where the task store is (default: `roost.db` in the data dir).
    store: Option<StoreLocation>,
    /// Roost's own files outside the data dir (the config file): hidden
    /// from every command and MCP server.
    own_files: Vec<PathBuf>,
    /// Whether this host serves several tenants: commands then see the
    /// system and their workspace, not the whole file system.
    shared_host: bool,
}

impl EngineBuilder {
    /// An engine keeping its store and component cache in `data_dir`.
    pub fn new(data_dir: &Path) -> Self {
        Self {
            data_dir: data_dir.to_path_buf(),
            endpoints: None,
            config: TaskConfig::default(),
            plugin_files: Vec::new(),
            plugins: Vec::new(),
            hook_files: Vec::new(),
            hooks: Vec::new(),
            modes_dir: None,
            skills: Sources::default(),
            plugin_engine: None,
            compile_watch: None,
            installed: false,
            secrets: SecretStore::from_env(),
            trust: Trust::default(),
            registry: roost_registry::Options::default(),
            names: roost_registry::Resolver::default(),
            commands: None,
            sandbox_settings: Default::default(),
            command_bridge: None,
            line_reader: None,
            checkpoints: true,
            store: None,
            own_files: Vec::new(),
            shared_host: false,
        }
    }

    /// This host serves several tenants (`roost serve`): every command
    /// profile that would show the whole file system shows only the
    /// system's program directories and the task's workspace.
    pub fn shared_host(mut self) -> Self {
        self.shared_host = true;
        self
    }

    /// What no command or MCP server may see: the config directory, the
    /// config file and the task store wherever they are (the data dir is
    /// hidden by the command host itself). Public for front-ends that run
    /// MCP servers outside an engine (`roost mcp list`).
    pub fn hidden_paths(&self) -> Vec<PathBuf> {
        let mut hidden: Vec<PathBuf> = self.modes_dir.iter().cloned().collect();
        hidden.extend(self.own_files.iter().cloned());
        if let StoreLocation::File(db) = self.store_location() {
            let db = std::fs::canonicalize(&db).unwrap_or(db);
            for suffix in ["", "-wal", "-shm", "-journal"] {
                let mut name = db.clone().into_os_string();
                name.push(suffix);
                hidden.push(PathBuf::from(name));
            }
        }
        hidden
    }

    /// Keep tasks in the store at `location` (a PostgreSQL database that
    /// several hosts share, say) instead of the data directory's.
    pub fn store(mut self, location: StoreLocation) -> Self {
        self.store = Some(location);
        self
    }

    /// Where the task store is.
    fn store_location(&self) -> StoreLocation {
        self.store
            .clone()
            .unwrap_or_else(|| StoreLocation::resolve(None, None, &self.data_dir))
    }

    /// An engine as a deployment's config file describes it: its profiles
    /// are the endpoints tasks choose from (the default profile when a
    /// task names none), its `[sandbox]` settings the limits, its
    /// `[secrets]` what installed plugins' requests may carry, and the
    /// installed plugins are offered.
    pub fn from_config(data_dir: &Path, config: &Config) -> Self {
        let mut task = TaskConfig::default();
        config.sandbox.apply(&mut task);
        config.delegation.apply(&mut task);
        let mut b = Self::new(data_dir)
            .config(task)
            .endpoints(Arc::new(ConfigEndpoints::new(config.clone(), None)))
            .secrets(config.secret_store())
            .installed_plugins(true);
        b.trust = Trust {
            keys: config.plugins.trusted_keys.clone(),
            cosign_keys: config.plugins.cosign_keys.clone(),
            require_signed: config.plugins.require_signed,
        };
        b.registry = config.plugins.registry_options();
        b.names = config.plugins.resolver();
        b.checkpoints = config.checkpoints.enabled.unwrap_or(true);
        b.own_files.extend(config.source.iter().cloned());
        b.store = Some(StoreLocation::resolve(
            None,
            config.store.as_deref(),
            data_dir,
        ));
        b.sandbox_settings = (config.commands.clone(), config.command_profiles.clone());
        if config.commands.enabled {
            b.commands = Some((config.commands.clone(), config.command_profiles.clone()));
        }
        b
    }

    /// Offer native commands (`execute_command`) with these settings and
    /// profiles (`--allow-commands`, or `[commands] enabled = true`).
    pub fn commands(
        mut self,
        config: CommandsConfig,
        profiles: BTreeMap<String, ProfileConfig>,
    ) -> Self {
        self.sandbox_settings = (config.clone(), profiles.clone());
        self.commands = Some((config, profiles));
        self
    }

    /// Whether tasks take checkpoints of their workspace (on by default;
    /// `[checkpoints] enabled = false` turns them off).
    pub fn checkpoints(mut self, on: bool) -> Self {
        self.checkpoints = on;
        self
    }

    /// The program that serves a command's network proxy inside its
    /// sandbox (the `roost` binary itself: `roost __command-bridge`).
    pub fn command_bridge(mut self, program: PathBuf) -> Self {
        self.command_bridge = Some(program);
        self
    }

    /// The program that reads a command line in a process of its own,
    /// bounded (the `roost` binary itself: `roost __read-line`); without
    /// it, lines are read in the host's process, where a line the shell
    /// parser cannot take would stall it.
    pub fn line_reader(mut self, program: PathBuf) -> Self {
        self.line_reader = Some(program);
        self
    }

    /// Refuse to install anything not signed by a trusted key, whatever
    /// the config says.
    pub fn require_signed(mut self, yes: bool) -> Self {
        self.trust.require_signed |= yes;
        self
    }

    /// The installed plugins of the data directory, to install, list,
    /// upgrade or remove (`roost plugin`): the same runtime, store, limits,
    /// secrets and signature trust as the engine's.
    pub fn plugins(self) -> Result<Plugins, BuildError> {
        let engine = self.runtime()?;
        let store = Store::open_at(&self.store_location())?;
        Ok(
            Plugins::new(&self.data_dir, &store, &engine, self.config.limits)
                .with_trust(self.trust)
                .with_secrets(self.secrets)
                .with_registry(self.registry)
                .with_names(self.names),
        )
    }

    /// The plugin runtime given, or one on the data directory's cache.
    fn runtime(&self) -> Result<Arc<PluginEngine>, BuildError> {
        let engine = match &self.plugin_engine {
            Some(e) => Arc::clone(e),
            None => Arc::new(PluginEngine::new(first_party::engine_config(
                self.data_dir.join("cache").join("components"),
            ))?),
        };
        if let Some(w) = &self.compile_watch {
            engine.watch_compiles(Arc::clone(w));
        }
        Ok(engine)
    }

    /// Where tasks get their models.
    pub fn endpoints(mut self, endpoints: Arc<dyn Endpoints>) -> Self {
        self.endpoints = Some(endpoints);
        self
    }

    /// The one model every task talks to.
    pub fn provider(self, provider: Arc<dyn Provider>) -> Self {
        self.endpoints(Arc::new(OneEndpoint::new(provider, Profile::default())))
    }

    /// Limits and policies of a task whose own settings leave them open.
    pub fn config(mut self, config: TaskConfig) -> Self {
        self.config = config;
        self
    }

    /// The one model every task talks to, with a profile's context
    /// settings (window, condensing, prices).
    pub fn profile(self, provider: Arc<dyn Provider>, profile: &Profile) -> Self {
        self.endpoints(Arc::new(OneEndpoint::new(provider, profile.clone())))
    }

    /// Also offer the tools of every enabled plugin installed in the data
    /// directory (`roost plugin install`), each with at most its grant.
    pub fn installed_plugins(mut self, yes: bool) -> Self {
        self.installed = yes;
        self
    }

    /// Where installed plugins' granted secrets get their values and host
    /// bindings (by default: the `ROOST_SECRET_<NAME>` variables only; a
    /// front-end passes the config file's, [`crate::config::Config::secret_store`]).
    pub fn secrets(mut self, secrets: SecretStore) -> Self {
        self.secrets = secrets;
        self
    }

    /// Also offer the tools of the component at `path` (named after its
    /// file stem).
    pub fn plugin_file(mut self, path: &Path) -> Self {
        self.plugin_files.push(path.to_path_buf());
        self
    }

    /// Also offer the tools of a loaded component.
    pub fn plugin(mut self, plugin: Arc<LoadedPlugin>) -> Self {
        self.plugins.push(plugin);
        self
    }

    /// Also make a loaded mode hook available, for modes that list it.
    pub fn hook(mut self, hook: Arc<LoadedHook>) -> Self {
        self.hooks.push(hook);
        self
    }

    /// Also make the mode hook at `path` available (named after its file
    /// stem), for modes that list it.
    pub fn hook_file(mut self, path: &Path) -> Self {
        self.hook_files.push(path.to_path_buf());
        self
    }

    /// Where the global `custom_modes.yaml` lives.
    pub fn modes_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.modes_dir = dir;
        self
    }

    /// Where global skills live (home and config directory); by default
    /// none, only the workspace's own.
    pub fn skill_sources(mut self, sources: Sources) -> Self {
        self.skills = sources;
        self
    }

    /// Share an existing plugin runtime (its cache and compiled
    /// components) instead of opening one on the data directory.
    pub fn plugin_engine(mut self, engine: Arc<PluginEngine>) -> Self {
        self.plugin_engine = Some(engine);
        self
    }

    /// Told about each component the engine really compiles (a plugin
    /// installed since the cache was last filled, a `--plugin` file,
    /// first-party components whose precompiled artifacts do not suit
    /// this machine) — at build or at a plugin's first call: that takes
    /// seconds, and a front-end shows progress.
    pub fn watch_compiles(mut self, watch: Arc<dyn CompileWatch>) -> Self {
        self.compile_watch = Some(watch);
        self
    }

    /// Load everything and open the store.
    pub fn build(mut self) -> Result<Arc<Engine>, BuildError> {
        let endpoints = self.endpoints.take().ok_or(BuildError::NoProvider)?;
        Ok(Engine::new(self.build_agent()?, endpoints))
    }

    /// The services an engine runs its tasks with (for a front-end that
    /// needs its tools outside a task: `roost tool`).
    pub fn build_agent(self) -> Result<Agent, BuildError> {
        let hidden = self.hidden_paths();
        let shared_host = self.shared_host;
        let engine = self.runtime()?;
        let mut registry = Registry::new();
        for p in first_party::load_all(&engine)? {
            registry.add_plugin(p)?;
        }
        for path in &self.plugin_files {
            registry.add_plugin(engine.load_file(&stem(path)?, path)?)?;
        }
        let location = self.store_location();
        for p in self.plugins {
            registry.add_plugin(p)?;
        }
        let store = Store::open_at(&location)?;
        if self.installed {
            Plugins::new(&self.data_dir, &store, &engine, self.config.limits)
                .with_secrets(self.secrets.clone())
                .load_enabled(&mut registry)?;
        }
        let commands = match self.commands {
            None => None,
            Some((config, profiles)) => {
                // Roost's own data and config are never a command's to see.
                let mut host = CommandHost::new(
                    &config,
                    &profiles,
                    &self.data_dir,
                    hidden.clone(),
                    self.secrets.clone(),
                )?;
                host.bridge = self.command_bridge.clone();
                host.reader = self.line_reader.clone().map(LineReader::new);
                if shared_host {
                    host.profiles = host.profiles.confined_reads();
                    host.tenant_roots = Some(tenant_roots(&store));
                }
                let host = Arc::new(host);
                if let Some(w) = host.warning() {
                    tracing::warn!("{w}");
                }
                for t in crate::tools::command::tools(&host) {
                    registry.add(t)?;
                }
                Some(host)
            }
        };
        // MCP stdio servers run in the command sandbox whether or not
        // tasks may run commands.
        let mcp = {
            let (config, profiles) = &self.sandbox_settings;
            let mut host = match CommandHost::new(
                config,
                profiles,
                &self.data_dir,
                hidden.clone(),
                self.secrets.clone(),
            ) {
                Ok(h) => h,
                // Commands are off (else their own host failed above):
                // the servers run under the built-in profiles.
                Err(e) => {
                    tracing::warn!(
                        "[commands] settings are wrong ({e}); MCP servers use the built-in profiles"
                    );
                    CommandHost::new(
                        &CommandsConfig::default(),
                        &BTreeMap::new(),
                        &self.data_dir,
                        hidden,
                        self.secrets.clone(),
                    )?
                }
            };
            host.bridge = self.command_bridge.clone();
            host.reader = self.line_reader.clone().map(LineReader::new);
            if shared_host {
                host.profiles = host.profiles.confined_reads();
                host.tenant_roots = Some(tenant_roots(&store));
            }
            Arc::new(McpHub::new(
                self.modes_dir.clone(),
                &self.data_dir,
                Arc::new(host),
            ))
        };
        let mut hooks = HookRegistry::first_party(&engine)?;
        for path in &self.hook_files {
            hooks.add(engine.load_hook_file(&stem(path)?, path)?);
        }
        for h in self.hooks {
            hooks.add(h);
        }
        Ok(Agent {
            services: Services {
                engine,
                store,
                config: self.config,
                modes_dir: self.modes_dir,
                hooks: Arc::new(hooks),
                asks: Default::default(),
                skills: Arc::new(SkillLibrary::new(self.skills)),
                commands,
                mcp: Some(mcp),
                checkpoints: self
                    .checkpoints
                    .then(|| Arc::new(Checkpoints::new(&self.data_dir))),
            },
            registry: Arc::new(registry),
        })
    }
}

/// A component's name: its file stem.
fn stem(path: &Path) -> Result<String, BuildError> {
    path.file_stem()
        .and_then(|s| s.to_str())
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| BuildError::Unnamed(path.to_path_buf()))
}

/// Every tenant's workspace root on record (its tokens'), for a shared
/// host's commands to hide all but their own.
fn tenant_roots(store: &Store) -> crate::commands::TenantRoots {
    let store = store.clone();
    crate::commands::TenantRoots(Arc::new(move || match store.list_token_records() {
        Ok(tokens) => tokens.into_iter().map(|t| PathBuf::from(t.root)).collect(),
        Err(e) => {
            tracing::warn!("tenants' roots cannot be read to hide them from commands: {e}");
            Vec::new()
        }
    }))
}
