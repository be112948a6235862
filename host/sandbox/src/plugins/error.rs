//! Why a plugin could not be loaded. Every variant names the plugin.

/// A plugin failed to load; the rest of the host is unaffected.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// The file could not be read.
    #[error("plugin `{plugin}`: cannot read {path}: {source}")]
    Read {
        /// Plugin name.
        plugin: String,
        /// File.
        path: std::path::PathBuf,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// A component file's bytes no longer hash as they did when it was
    /// loaded: changed on disk since.
    #[error(
        "plugin `{plugin}`: {path} changed on disk since it was loaded; restart Roost or reinstall the plugin"
    )]
    Changed {
        /// Plugin name.
        plugin: String,
        /// File.
        path: std::path::PathBuf,
    },
    /// Not WebAssembly at all.
    #[error("plugin `{plugin}`: not a WebAssembly file (no `\\0asm` header)")]
    NotWasm {
        /// Plugin name.
        plugin: String,
    },
    /// A core module where a component is required.
    #[error(
        "plugin `{plugin}`: is a core WebAssembly module, not a component; build it for wasm32-wasip2 (or wrap it with `wasm-tools component new`)"
    )]
    CoreModule {
        /// Plugin name.
        plugin: String,
    },
    /// Compilation failed (malformed or unsupported component).
    #[error("plugin `{plugin}`: invalid component: {detail}")]
    Compile {
        /// Plugin name.
        plugin: String,
        /// Compiler message.
        detail: String,
    },
    /// The component imports something the host does not provide.
    #[error("plugin `{plugin}`: imports something Roost does not provide: {detail}")]
    UnsatisfiedImport {
        /// Plugin name.
        plugin: String,
        /// Linker message.
        detail: String,
    },
    /// The component does not export the expected world.
    #[error("plugin `{plugin}`: is not a `{world}` component: {detail}")]
    WrongWorld {
        /// Plugin name.
        plugin: String,
        /// Expected world.
        world: &'static str,
        /// Detail.
        detail: String,
    },
    /// The plugin's tool list is unusable.
    #[error("plugin `{plugin}`: bad tool list: {detail}")]
    BadTools {
        /// Plugin name.
        plugin: String,
        /// What is wrong.
        detail: String,
    },
    /// The engine could not be created.
    #[error("cannot create the WebAssembly engine: {0}")]
    Engine(String),
    /// The component cache failed in a way that stops loading.
    #[error("plugin `{plugin}`: component cache: {detail}")]
    Cache {
        /// Plugin name.
        plugin: String,
        /// Detail.
        detail: String,
    },
}
