//! Third-party plugins as installed things: a component with its
//! `plugin.toml`, verified (hash, component, world, imports, tool names
//! that shadow nothing), shown with what it asks for, recorded with what
//! the user granted, kept in the data directory under its hash, and loaded
//! for every task with at most that grant. An upgrade that asks for more
//! than the recorded grant is shown as a list of widenings to approve.

mod archive;
pub mod manifest;
mod registry;
pub mod signature;
pub mod source;

pub use manifest::{Capabilities, LimitRequest, Manifest, ManifestError, ReadAccess};
pub use registry::{Outdated, check_source, upgrade_source};
pub use signature::{Signer, Trust};
pub use source::{Fetched, Source};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::SecretStore;
use crate::first_party;
use crate::store::{PluginRecord, Store, StoreError};
use crate::task::{Access, Registry, RegistryError};
use manifest::{NetworkRule, SUPPORTED_WIT, TOOL_WORLD, check_name};
use roost_sandbox::capability::{Limits, NetworkGrant};
use roost_sandbox::plugins::{ComponentFile, LoadedPlugin, PluginEngine, PluginError};

/// The manifest's file name.
pub const MANIFEST_FILE: &str = "plugin.toml";

/// Why a plugin cannot be installed, changed or loaded. Nothing is left
/// half-installed by any of them.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The manifest is invalid.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// The source cannot be used (missing, unreadable, unknown kind).
    #[error("{0}")]
    Source(String),
    /// The component is not the one the manifest names.
    #[error(
        "plugin.toml: plugin.sha256: the component's SHA-256 is {actual}, the manifest says {expected}"
    )]
    HashMismatch {
        /// From the manifest.
        expected: String,
        /// Of the file.
        actual: String,
    },
    /// The component is not a loadable tool plugin.
    #[error(transparent)]
    Plugin(#[from] PluginError),
    /// A tool name is reserved, taken by a first-party tool, or its schema
    /// is broken.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// A tool name is taken by another installed plugin.
    #[error(
        "tool `{tool}` is already provided by the installed plugin `{owner}`: rename the tool (in the plugin's code and in plugin.toml's `tools`), or remove `{owner}` first"
    )]
    Collision {
        /// The tool.
        tool: String,
        /// The plugin that has it.
        owner: String,
    },
    /// The name of a plugin that ships with Roost.
    #[error("`{0}` is the name of a plugin that ships with Roost; give yours another name")]
    FirstPartyName(String),
    /// Installing a name that is installed (use upgrade).
    #[error("plugin `{0}` is already installed; `roost plugin upgrade {0} <source>` replaces it")]
    AlreadyInstalled(String),
    /// No such installed plugin.
    #[error("no installed plugin `{0}`")]
    NotInstalled(String),
    /// An upgrade from another source than the plugin was installed from.
    #[error(
        "plugin `{name}` was installed from {recorded}; {new} is another source: upgrade from it only if you mean to switch (`--switch-source`)"
    )]
    OtherSource {
        /// The plugin.
        name: String,
        /// Its recorded source.
        recorded: String,
        /// The new one.
        new: String,
    },
    /// An upgrade for another plugin.
    #[error("the new source is plugin `{new}`, not `{old}`")]
    OtherPlugin {
        /// Installed name.
        old: String,
        /// The source's name.
        new: String,
    },
    /// The installed component changed on disk since it was installed.
    #[error(
        "installed plugin `{name}` changed on disk since it was installed (expected SHA-256 {expected}); reinstall or remove it"
    )]
    Tampered {
        /// Plugin.
        name: String,
        /// Recorded hash.
        expected: String,
    },
    /// A record in the store does not decode.
    #[error("installed plugin `{name}`: its record does not decode: {detail}")]
    Corrupt {
        /// Plugin.
        name: String,
        /// Decoder message.
        detail: String,
    },
    /// The signature is missing where required, or does not verify.
    #[error("signature: {0}")]
    Signature(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A file in the data directory could not be written or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
}

/// One tool of a plugin, as `list` and `inspect` show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolSummary {
    /// Name the model calls.
    pub name: String,
    /// Its group.
    pub group: String,
    /// Whether it changes files.
    pub destructive: bool,
}

/// A verified plugin ready to install or upgrade to.
pub struct Candidate {
    /// Its manifest (written for a bare `.wasm`).
    pub manifest: Manifest,
    /// Whether the manifest came with the source (else it was written
    /// from the component).
    pub has_manifest: bool,
    /// The component's bytes.
    pub bytes: Vec<u8>,
    /// Its tools.
    pub tools: Vec<ToolSummary>,
    /// The compiled plugin (precompiled into the cache).
    pub plugin: Arc<LoadedPlugin>,
    /// Who signed it.
    pub signer: Signer,
    /// Where it came from.
    pub source: Source,
    /// The registry manifest's digest, for a registry source.
    pub digest: Option<String>,
}

/// One installed plugin.
#[derive(Debug, Clone, PartialEq)]
pub struct Installed {
    /// The manifest it was installed with.
    pub manifest: Manifest,
    /// What the user granted.
    pub granted: Capabilities,
    /// Its tools.
    pub tools: Vec<ToolSummary>,
    /// SHA-256 of its component.
    pub sha256: String,
    /// BLAKE3 of its component (`None` for installs older than the
    /// record of it, which are checked by their SHA-256).
    pub blake3: Option<blake3::Hash>,
    /// Component size in bytes.
    pub size: i64,
    /// Whether tasks get its tools.
    pub enabled: bool,
    /// When it was installed (ms since the epoch).
    pub installed_at: i64,
    /// The trusted signer's name (empty: unsigned or not trusted).
    pub signer: String,
    /// Where it was installed from (a path, or a registry reference as
    /// named); empty for installs older than the record of it.
    pub source: String,
    /// The registry manifest's digest it was installed at (empty for a
    /// path).
    pub digest: String,
}

impl Installed {
    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.manifest.plugin.name
    }
}

/// The installed plugins of a data directory.
pub struct Plugins {
    dir: PathBuf,
    store: Store,
    engine: Arc<PluginEngine>,
    ceiling: Limits,
    trust: Trust,
    secrets: SecretStore,
    registry: roost_registry::Options,
    names: roost_registry::Resolver,
}

impl Plugins {
    /// The most any call of an installed plugin may be given.
    pub fn ceiling(&self) -> Limits {
        self.ceiling
    }

    /// The plugins installed under `data_dir` (recorded in `store`), loaded
    /// with `engine`; `ceiling` is the most any call may be given.
    pub fn new(
        data_dir: &Path,
        store: &Store,
        engine: &Arc<PluginEngine>,
        ceiling: Limits,
    ) -> Self {
        Self {
            dir: data_dir.join("plugins"),
            store: store.clone(),
            engine: Arc::clone(engine),
            ceiling,
            trust: Trust::default(),
            secrets: SecretStore::from_env(),
            registry: roost_registry::Options::default(),
            names: roost_registry::Resolver::default(),
        }
    }

    /// Reach registries with `options` (plain-HTTP registries, logins,
    /// bounds).
    pub fn with_registry(mut self, options: roost_registry::Options) -> Self {
        self.registry = options;
        self
    }

    /// Fetch what `source` names: read from disk, or pulled from its
    /// registry (bounded, every layer checked against its digest).
    /// Nothing is installed or written.
    /// A name is fetched from the reference it resolves to (see
    /// [`Plugins::resolve`]); an archive is unpacked only once it hashes to
    /// the SHA-256 the user gave.
    pub async fn fetch(&self, source: &Source) -> Result<Fetched, InstallError> {
        match source {
            Source::Local(path) => self.read_source(path),
            Source::Registry(r) => {
                source::pull(r, self.registry.clone(), self.trust.uses_cosign()).await
            }
            Source::Name(_) => match self.resolve(source).await? {
                Source::Registry(r) => {
                    source::pull(&r, self.registry.clone(), self.trust.uses_cosign()).await
                }
                other => Err(InstallError::Source(format!(
                    "`{}` resolved to no registry reference",
                    other.recorded()
                ))),
            },
            Source::Archive { url, sha256 } => {
                let bytes = source::download(url, sha256, self.registry.clone()).await?;
                let io = |source| InstallError::Io {
                    path: PathBuf::from(url.as_str()),
                    source,
                };
                let dir = tempfile::tempdir().map_err(io)?;
                let folder = archive::unpack_bytes(&bytes, url.as_str(), dir.path())?;
                let mut fetched = self.read_source(&folder)?;
                fetched.digest = Some(format!("sha256:{sha256}"));
                Ok(fetched)
            }
        }
    }

    /// `source` with a name resolved to the registry reference it stands
    /// for (the first configured registry that has it, or where `wkg`'s
    /// config places a package); any other source as it is.
    pub async fn resolve(&self, source: &Source) -> Result<Source, InstallError> {
        let Source::Name(name) = source else {
            return Ok(source.clone());
        };
        let client = roost_registry::Client::new(self.registry.clone())
            .map_err(|e| InstallError::Source(e.to_string()))?;
        self.names
            .resolve(&client, name)
            .await
            .map(Source::Registry)
            .map_err(|e| InstallError::Source(e.to_string()))
    }

    /// Resolve plugin names with `names` (the configured registries and
    /// `wkg`'s config).
    pub fn with_names(mut self, names: roost_registry::Resolver) -> Self {
        self.names = names;
        self
    }

    /// Take the values (and host bindings) of granted secrets from
    /// `secrets` (by default: the `ROOST_SECRET_<NAME>` variables only).
    pub fn with_secrets(mut self, secrets: SecretStore) -> Self {
        self.secrets = secrets;
        self
    }

    /// Check signatures against `trust` (by default: none trusted, none
    /// required).
    pub fn with_trust(mut self, trust: Trust) -> Self {
        self.trust = trust;
        self
    }

    /// Read and verify `source` (a folder with a `plugin.toml`, a
    /// `plugin.toml`, a `.tar.gz` of such a folder, or a `.wasm`, with or
    /// without a manifest beside it).
    /// `replacing` is the installed plugin an upgrade replaces, whose tool
    /// names the new version may keep.
    pub fn prepare(
        &self,
        source: &Path,
        replacing: Option<&str>,
    ) -> Result<Candidate, InstallError> {
        let fetched = self.read_source(source)?;
        self.prepare_fetched(&Source::Local(source.to_path_buf()), fetched, replacing)
    }

    /// Verify `fetched` (what [`Plugins::fetch`] got from `source`) as
    /// [`Plugins::prepare`] verifies a path: the same checks, whatever the
    /// source.
    pub fn prepare_fetched(
        &self,
        source: &Source,
        fetched: Fetched,
        replacing: Option<&str>,
    ) -> Result<Candidate, InstallError> {
        let has_manifest = fetched.manifest.is_some();
        let signature = fetched.signature.clone();
        let bytes = fetched.bytes;
        let mut manifest = match &fetched.manifest {
            Some(text) => Manifest::parse(text, &self.ceiling)?,
            None => bare_manifest(&fetched.stem, &fetched.file_name, &bytes)?,
        };
        // Before the slow part (verifying and compiling) and before any
        // question: a name that is installed is refused at once.
        if replacing.is_none() && self.store.get_plugin(&manifest.plugin.name)?.is_some() {
            return Err(InstallError::AlreadyInstalled(manifest.plugin.name));
        }
        if first_party::ALL
            .iter()
            .any(|c| c.name == manifest.plugin.name)
        {
            return Err(InstallError::FirstPartyName(manifest.plugin.name));
        }
        // The tool names the manifest declares, checked against the
        // built-in tools and the installed plugins' before the compile: a
        // clash is known now, not a minute later.
        let mut scratch = Registry::new();
        for p in first_party::load_all(&self.engine)? {
            scratch.add_plugin(p)?;
        }
        let owners = self.tool_owners(&manifest.plugin.name, replacing)?;
        for tool in &manifest.plugin.tools {
            check_free(&scratch, &owners, &manifest.plugin.name, tool)?;
        }
        let actual = sha256_hex(&bytes);
        if manifest.plugin.sha256.is_empty() {
            manifest.plugin.sha256.clone_from(&actual);
        } else if actual != manifest.plugin.sha256 {
            return Err(InstallError::HashMismatch {
                expected: manifest.plugin.sha256.clone(),
                actual,
            });
        }
        let signer = self.trust.check(
            &bytes,
            signature.as_deref(),
            &fetched.cosign,
            fetched.digest.as_deref(),
        )?;
        let plugin = self.engine.load_bytes(&manifest.plugin.name, &bytes)?;
        if !has_manifest {
            manifest.plugin.wit_version = plugin.wit_version().to_owned();
        } else if manifest.plugin.wit_version != plugin.wit_version() {
            return Err(ManifestError {
                field: "plugin.wit_version".into(),
                detail: format!(
                    "says roost:plugin@{}, but the component was built against {}",
                    manifest.plugin.wit_version,
                    plugin.wit_version()
                ),
            }
            .into());
        }
        let tools: Vec<ToolSummary> = plugin
            .tools()
            .iter()
            .map(|t| ToolSummary {
                name: t.name.clone(),
                group: t.group.as_str().to_owned(),
                destructive: t.destructive,
            })
            .collect();
        if !manifest.plugin.tools.is_empty() {
            check_declared(&manifest.plugin.tools, &tools)?;
        }
        // First-party and host-native names, reserved names and schemas.
        scratch.add_plugin(Arc::clone(&plugin))?;
        if let Some(t) = tools.iter().find(|t| owners.contains_key(&t.name)) {
            return Err(InstallError::Collision {
                tool: t.name.clone(),
                owner: owners.get(&t.name).cloned().unwrap_or_default(),
            });
        }
        // A bare component asks for the workspace to read and, when one of
        // its tools writes, for write.
        if !has_manifest && tools.iter().any(|t| t.destructive) {
            manifest.capabilities.write = true;
        }
        Ok(Candidate {
            manifest,
            has_manifest,
            bytes,
            tools,
            plugin,
            signer,
            source: source.clone(),
            digest: fetched.digest,
        })
    }

    /// Which installed plugin provides each tool name, leaving out `name`
    /// itself and the plugin an upgrade replaces.
    fn tool_owners(
        &self,
        name: &str,
        replacing: Option<&str>,
    ) -> Result<BTreeMap<String, String>, InstallError> {
        let mut owners = BTreeMap::new();
        for other in self.list()? {
            if Some(other.name()) == replacing || other.name() == name {
                continue;
            }
            for t in &other.tools {
                owners.insert(t.name.clone(), other.name().to_owned());
            }
        }
        Ok(owners)
    }

    /// The parts of a plugin on disk: its manifest's text (when it has
    /// one), the component's bytes, and the detached signature beside it.
    fn read_source(&self, source: &Path) -> Result<Fetched, InstallError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| InstallError::Io { path, source }
        };
        if archive::is_archive(source) {
            // Unpacked into a folder of ours, read, and dropped: what is
            // installed is only what is read here.
            let dir = tempfile::tempdir().map_err(io(source))?;
            let folder = archive::unpack(source, dir.path())?;
            return self.read_source(&folder);
        }
        let meta = std::fs::metadata(source)
            .map_err(|e| InstallError::Source(format!("{}: {e}", source.display())))?;
        let manifest_path = if meta.is_dir() {
            Some(source.join(MANIFEST_FILE))
        } else if source.extension().is_some_and(|e| e == "toml") {
            Some(source.to_path_buf())
        } else if source.extension().is_some_and(|e| e == "wasm") {
            // A manifest beside the component that names it is used.
            let beside = source.with_file_name(MANIFEST_FILE);
            let names_it = std::fs::read_to_string(&beside).ok().is_some_and(|t| {
                Manifest::parse(&t, &self.ceiling).is_ok_and(|m| {
                    source
                        .file_name()
                        .is_some_and(|f| f.to_string_lossy() == m.plugin.component)
                })
            });
            names_it.then_some(beside)
        } else {
            return Err(InstallError::Source(format!(
                "{}: not a plugin folder, plugin.toml or .wasm component",
                source.display()
            )));
        };
        match manifest_path {
            Some(path) => {
                let text = std::fs::read_to_string(&path).map_err(io(&path))?;
                let manifest = Manifest::parse(&text, &self.ceiling)?;
                let dir = path.parent().unwrap_or(Path::new("."));
                let component = dir.join(&manifest.plugin.component);
                let bytes = std::fs::read(&component).map_err(io(&component))?;
                Ok(Fetched {
                    manifest: Some(text),
                    bytes,
                    signature: signature_beside(&component),
                    stem: manifest.plugin.name.clone(),
                    file_name: manifest.plugin.component.clone(),
                    digest: None,
                    cosign: Vec::new(),
                })
            }
            None => {
                let bytes = std::fs::read(source).map_err(io(source))?;
                let stem = source
                    .file_stem()
                    .map(|s| s.to_string_lossy().replace('_', "-"))
                    .unwrap_or_default();
                Ok(Fetched {
                    manifest: None,
                    signature: signature_beside(source),
                    bytes,
                    stem,
                    file_name: source
                        .file_name()
                        .map(|f| f.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                    digest: None,
                    cosign: Vec::new(),
                })
            }
        }
    }

    /// What `c` asks for.
    pub fn requested(c: &Candidate) -> Capabilities {
        c.manifest.capabilities.clone()
    }

    /// Install `c` with `granted` (what the user approved). The component
    /// is kept under its hash; a name already installed is refused.
    pub fn install(
        &self,
        c: &Candidate,
        granted: &Capabilities,
    ) -> Result<Installed, InstallError> {
        let name = &c.manifest.plugin.name;
        if self.store.get_plugin(name)?.is_some() {
            return Err(InstallError::AlreadyInstalled(name.clone()));
        }
        self.record(c, granted, true)
    }

    /// Replace the installed `name` with `c`, granted `granted`; the old
    /// component stays until the new one is recorded.
    /// An upgrade from another source than the recorded one (another
    /// registry or repository, or between a registry and a path) is
    /// refused unless `switch_source`.
    pub fn upgrade(
        &self,
        name: &str,
        c: &Candidate,
        granted: &Capabilities,
        switch_source: bool,
    ) -> Result<Installed, InstallError> {
        let old = self.get(name)?;
        check_source(&old, &c.source, switch_source)?;
        if c.manifest.plugin.name != name {
            return Err(InstallError::OtherPlugin {
                old: name.to_owned(),
                new: c.manifest.plugin.name.clone(),
            });
        }
        let new = self.record(c, granted, old.enabled)?;
        if old.sha256 != new.sha256 {
            let _ = std::fs::remove_file(self.component_path(name, &old.sha256));
        }
        Ok(new)
    }

    fn record(
        &self,
        c: &Candidate,
        granted: &Capabilities,
        enabled: bool,
    ) -> Result<Installed, InstallError> {
        let name = &c.manifest.plugin.name;
        let sha = &c.manifest.plugin.sha256;
        let dir = self.dir.join(name);
        std::fs::create_dir_all(&dir).map_err(|source| InstallError::Io {
            path: dir.clone(),
            source,
        })?;
        let path = self.component_path(name, sha);
        let tmp = dir.join(format!(".{sha}.tmp"));
        std::fs::write(&tmp, &c.bytes)
            .and_then(|()| std::fs::rename(&tmp, &path))
            .map_err(|source| InstallError::Io {
                path: path.clone(),
                source,
            })?;
        let record = PluginRecord {
            name: name.clone(),
            version: c.manifest.plugin.version.clone(),
            manifest: toml::to_string(&c.manifest).unwrap_or_default(),
            sha256: sha.clone(),
            blake3: c.plugin.content_hash(),
            granted: to_json(granted),
            tools: to_json(&c.tools),
            enabled,
            size: i64::try_from(c.bytes.len()).unwrap_or(i64::MAX),
            installed_at: 0,
            signer: c.signer.name().to_owned(),
            source: c.source.recorded(),
            digest: c.digest.clone().unwrap_or_default(),
        };
        self.store.put_plugin(&record)?;
        self.get(name)
    }

    fn component_path(&self, name: &str, sha: &str) -> PathBuf {
        self.dir.join(name).join(format!("{sha}.wasm"))
    }

    /// The installed plugin `name`.
    pub fn get(&self, name: &str) -> Result<Installed, InstallError> {
        let r = self
            .store
            .get_plugin(name)?
            .ok_or_else(|| InstallError::NotInstalled(name.to_owned()))?;
        decode(&r)
    }

    /// Every installed plugin, by name.
    pub fn list(&self) -> Result<Vec<Installed>, InstallError> {
        self.store.list_plugins()?.iter().map(decode).collect()
    }

    /// Remove `name`: its record and its component. A record that no
    /// longer decodes is removed too (it is how one gets rid of it).
    pub fn remove(&self, name: &str) -> Result<(), InstallError> {
        if !self.store.delete_plugin(name)? {
            return Err(InstallError::NotInstalled(name.to_owned()));
        }
        let _ = std::fs::remove_dir_all(self.dir.join(name));
        Ok(())
    }

    /// Turn `name` on or off for tasks.
    pub fn set_enabled(&self, name: &str, enabled: bool) -> Result<(), InstallError> {
        if self.store.set_plugin_enabled(name, enabled)? {
            Ok(())
        } else {
            Err(InstallError::NotInstalled(name.to_owned()))
        }
    }

    /// Register every enabled plugin's tools in `registry`, each with at
    /// most its grant. A component that changed on disk is refused.
    pub fn load_enabled(&self, registry: &mut Registry) -> Result<(), InstallError> {
        let enabled: Vec<Installed> = self.list()?.into_iter().filter(|p| p.enabled).collect();
        let loaded = self.load_checked_all(&enabled);
        for (p, plugin) in enabled.iter().zip(loaded) {
            let plugin = plugin?;
            let limits = p.granted.limits.resolve(&self.ceiling)?;
            let access = Access {
                read: p.granted.read == ReadAccess::Workspace,
                write: p.granted.write,
                limits: Some(limits),
                network: self.network(p)?,
            };
            registry.add_plugin_with(plugin, access)?;
        }
        Ok(())
    }
}

impl Plugins {
    /// Each of `enabled` read, checked against its install record and
    /// loaded, in order. Reading and hashing the components is most of a
    /// start with many plugins installed (`roost tool list`, P10), so the
    /// work is spread over the cores; the results keep `enabled`'s order.
    fn load_checked_all(
        &self,
        enabled: &[Installed],
    ) -> Vec<Result<Arc<LoadedPlugin>, InstallError>> {
        let workers = std::thread::available_parallelism()
            .map_or(1, std::num::NonZeroUsize::get)
            .min(enabled.len());
        if workers <= 1 {
            return enabled.iter().map(|p| self.load_checked(p)).collect();
        }
        let share = enabled.len().div_ceil(workers);
        std::thread::scope(|s| {
            let parts: Vec<_> = enabled
                .chunks(share)
                .map(|part| {
                    s.spawn(move || {
                        part.iter()
                            .map(|p| self.load_checked(p))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            parts
                .into_iter()
                .flat_map(|part| part.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        })
    }

    /// Installed plugin `p`'s component, refused when its bytes are not the
    /// ones recorded at install (changed on disk). The bytes are hashed
    /// once: by the BLAKE3 recorded at install, which is also what the
    /// engine keys its cache by; an install older than that record is
    /// checked by its SHA-256. A component the cache knows is hashed in
    /// pieces and kept as its open file until its first call (which checks
    /// it again); any other is read whole and prepared now.
    fn load_checked(&self, p: &Installed) -> Result<Arc<LoadedPlugin>, InstallError> {
        let path = self.component_path(p.name(), &p.sha256);
        let io_error = |source| InstallError::Io {
            path: path.clone(),
            source,
        };
        let tampered = || InstallError::Tampered {
            name: p.name().to_owned(),
            expected: p.sha256.clone(),
        };
        if let Some(recorded) = p.blake3 {
            let file = ComponentFile::open(&path).map_err(io_error)?;
            if file.hash() != recorded {
                return Err(tampered());
            }
            let file = match self.engine.load_known_file(p.name(), file) {
                Ok(plugin) => return Ok(plugin),
                Err(file) => file,
            };
            let bytes = file.read_checked(p.name()).map_err(|e| match e {
                PluginError::Changed { .. } => tampered(),
                e => e.into(),
            })?;
            return Ok(self
                .engine
                .load_component_hashed(p.name(), bytes.into(), recorded)?);
        }
        let bytes = std::fs::read(&path).map_err(io_error)?;
        if sha256_hex(&bytes) != p.sha256 {
            return Err(tampered());
        }
        Ok(self.engine.load_component(p.name(), bytes.into())?)
    }
}

impl Plugins {
    /// The network an installed plugin's calls get: its granted origins,
    /// and its granted secrets with their values and bindings; `None`
    /// when it was granted no origin.
    fn network(&self, p: &Installed) -> Result<Option<Arc<NetworkGrant>>, InstallError> {
        if p.granted.network.is_empty() {
            return Ok(None);
        }
        let allow = p
            .granted
            .network
            .iter()
            .map(|n| NetworkRule::parse(n))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| InstallError::Corrupt {
                name: p.name().to_owned(),
                detail: format!("granted network: {e}"),
            })?;
        Ok(Some(Arc::new(
            self.secrets.network_grant(allow, &p.granted.secrets),
        )))
    }
}

/// What `new` asks for beyond `old`, one line each (empty: nothing more).
pub fn widening(old: &Capabilities, new: &Capabilities, ceiling: &Limits) -> Vec<String> {
    let mut out = Vec::new();
    if old.read == ReadAccess::None && new.read == ReadAccess::Workspace {
        out.push("+ read: the workspace".to_owned());
    }
    if new.write && !old.write {
        out.push(if new.read == ReadAccess::None {
            "+ write: where the task's intent allows (and reading there: write access is read access)"
                .to_owned()
        } else {
            "+ write: where the task's intent allows".to_owned()
        });
    }
    let rules = |c: &Capabilities| -> Vec<NetworkRule> {
        c.network
            .iter()
            .filter_map(|n| NetworkRule::parse(n).ok())
            .collect()
    };
    let had = rules(old);
    for r in rules(new) {
        if !had.contains(&r) {
            out.push(format!("+ network: {r}"));
        }
    }
    for s in &new.secrets {
        if !old.secrets.contains(s) {
            out.push(format!("+ secret: {s}"));
        }
    }
    if let (Ok(o), Ok(n)) = (old.limits.resolve(ceiling), new.limits.resolve(ceiling)) {
        if n.deadline > o.deadline {
            out.push(format!(
                "+ deadline: {} ms (was {} ms)",
                n.deadline.as_millis(),
                o.deadline.as_millis()
            ));
        }
        if n.memory_bytes > o.memory_bytes {
            out.push(format!(
                "+ memory: {} MiB (was {} MiB)",
                n.memory_bytes >> 20,
                o.memory_bytes >> 20
            ));
        }
        if n.output_bytes > o.output_bytes {
            out.push(format!(
                "+ output: {} KiB (was {} KiB)",
                n.output_bytes >> 10,
                o.output_bytes >> 10
            ));
        }
    }
    out
}

/// The capability lines an install prompt and `inspect` show.
pub fn describe(c: &Capabilities, ceiling: &Limits) -> Vec<String> {
    let mut out = vec![
        match (c.read, c.write) {
            (ReadAccess::Workspace, _) => {
                "read: the workspace (read-only), except what its .rooignore hides".to_owned()
            }
            // WASI cannot write a directory it cannot see: say so.
            (ReadAccess::None, true) => {
                "read: only where it may write (write access is read access; with intents \
                 off that is the whole workspace), except what .rooignore hides"
                    .to_owned()
            }
            (ReadAccess::None, false) => "read: nothing".to_owned(),
        },
        if c.write {
            "write: yes, only where the task's active intent allows".to_owned()
        } else {
            "write: no".to_owned()
        },
    ];
    if c.network.is_empty() {
        out.push("network: none".to_owned());
    }
    for n in &c.network {
        match NetworkRule::parse(n) {
            Ok(r) => out.push(format!("network: {r}")),
            Err(e) => out.push(format!("network: {e}")),
        }
    }
    for s in &c.secrets {
        out.push(format!(
            "secret: {s} (used by the host in requests; never shown to the plugin)"
        ));
    }
    if let Ok(l) = c.limits.resolve(ceiling) {
        out.push(format!(
            "limits: {} ms, {} MiB memory, {} KiB output per call",
            l.deadline.as_millis(),
            l.memory_bytes >> 20,
            l.output_bytes >> 10
        ));
    }
    out
}

/// Whether `plugin` may take the tool name `tool`: not reserved for the
/// host, not a first-party tool's (in `builtin`), not another installed
/// plugin's (in `owners`).
fn check_free(
    builtin: &Registry,
    owners: &BTreeMap<String, String>,
    plugin: &str,
    tool: &str,
) -> Result<(), InstallError> {
    if let Some(reason) = crate::tools::reserved::reserved(tool) {
        return Err(RegistryError::Reserved {
            tool: tool.to_owned(),
            plugin: plugin.to_owned(),
            reason,
        }
        .into());
    }
    if let Some(existing) = builtin.get(tool) {
        return Err(RegistryError::Duplicate {
            tool: tool.to_owned(),
            first: existing.provider().to_owned(),
            second: plugin.to_owned(),
        }
        .into());
    }
    if let Some(owner) = owners.get(tool) {
        return Err(InstallError::Collision {
            tool: tool.to_owned(),
            owner: owner.clone(),
        });
    }
    Ok(())
}

/// The component provides exactly the tools its manifest declares.
fn check_declared(declared: &[String], tools: &[ToolSummary]) -> Result<(), InstallError> {
    let declared: std::collections::BTreeSet<&str> = declared.iter().map(String::as_str).collect();
    let provided: std::collections::BTreeSet<&str> =
        tools.iter().map(|t| t.name.as_str()).collect();
    if declared == provided {
        return Ok(());
    }
    let list = |s: &std::collections::BTreeSet<&str>| {
        s.iter()
            .map(|t| format!("`{t}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    Err(ManifestError {
        field: "plugin.tools".into(),
        detail: format!(
            "lists {}, but the component provides {}",
            list(&declared),
            list(&provided)
        ),
    }
    .into())
}

fn decode(r: &PluginRecord) -> Result<Installed, InstallError> {
    let corrupt = |detail: String| InstallError::Corrupt {
        name: r.name.clone(),
        detail,
    };
    let manifest: Manifest = toml::from_str(&r.manifest).map_err(|e| corrupt(e.to_string()))?;
    let granted: Capabilities =
        serde_json::from_str(&r.granted).map_err(|e| corrupt(e.to_string()))?;
    let tools: Vec<ToolSummary> =
        serde_json::from_str(&r.tools).map_err(|e| corrupt(e.to_string()))?;
    Ok(Installed {
        manifest,
        granted,
        tools,
        sha256: r.sha256.clone(),
        blake3: match r.blake3.as_str() {
            "" => None,
            hex => Some(blake3::Hash::from_hex(hex).map_err(|e| corrupt(format!("blake3: {e}")))?),
        },
        size: r.size,
        enabled: r.enabled,
        installed_at: r.installed_at,
        signer: r.signer.clone(),
        source: r.source.clone(),
        digest: r.digest.clone(),
    })
}

/// The manifest a bare component (no `plugin.toml`) is installed with:
/// named after `stem`, asking for the defaults.
fn bare_manifest(stem: &str, file_name: &str, bytes: &[u8]) -> Result<Manifest, InstallError> {
    check_name(stem).map_err(|d| ManifestError {
        field: "plugin.name".into(),
        detail: format!("taken from the file name: {d}"),
    })?;
    Ok(Manifest {
        plugin: manifest::About {
            name: stem.to_owned(),
            version: "0.0.0".into(),
            description: String::new(),
            authors: Vec::new(),
            world: TOOL_WORLD.into(),
            wit_version: SUPPORTED_WIT.first().copied().unwrap_or("0.1.0").into(),
            component: file_name.to_owned(),
            sha256: sha256_hex(bytes),
            tools: Vec::new(),
        },
        capabilities: Capabilities::default(),
    })
}

/// The detached signature beside `component`, if there is one.
fn signature_beside(component: &Path) -> Option<String> {
    let mut name = component.file_name()?.to_os_string();
    name.push(signature::SIGNATURE_SUFFIX);
    std::fs::read_to_string(component.with_file_name(name)).ok()
}

/// SHA-256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `v` as JSON text (the types recorded here always serialise).
fn to_json<T: Serialize + ?Sized>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}
