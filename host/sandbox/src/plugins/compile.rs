//! Where a component's compiled code comes from, in order: the sealed
//! artifact the build precompiled (first-party components), the
//! component cache, or a compile (kept in the cache) — and the notice a
//! front-end gives before a compile, which takes seconds.

// wasmtime deserializes a sealed, verified artifact (`Component::deserialize`).
#![allow(unsafe_code)]

use std::sync::Arc;

use roost_engine_config::Sealed;
use wasmtime::component::{Component, InstancePre};

use super::PluginEngine;
use super::cache::CacheOutcome;
use super::deferred::CompileWatch;
use super::error::PluginError;
use super::state::CallState;

impl PluginEngine {
    /// Tell `watch` about every compile from now on.
    pub fn watch_compiles(&self, watch: Arc<dyn CompileWatch>) {
        if let Ok(mut slot) = self.compile_watch.lock() {
            *slot = Some(watch);
        }
    }

    /// The compiled form of `bytes`: the build's sealed artifact when one
    /// verifies and suits this engine, else the cache's, else a compile
    /// (kept in the cache). Exposed for benchmarks and tests.
    pub fn compile(
        &self,
        name: &str,
        bytes: &[u8],
    ) -> Result<(Component, CacheOutcome), PluginError> {
        self.compile_known(name, bytes, &blake3::hash(bytes))
    }

    /// [`Self::compile`] for bytes whose BLAKE3 hash `id` the caller has.
    fn compile_known(
        &self,
        name: &str,
        bytes: &[u8],
        id: &blake3::Hash,
    ) -> Result<(Component, CacheOutcome), PluginError> {
        if let Some(c) = self.load_prebuilt(name, id)? {
            return Ok((c, CacheOutcome::Prebuilt));
        }
        let engine = &self.runtime()?.engine;
        if let Some(c) = self.cache.as_ref().and_then(|c| c.load(engine, id)) {
            return Ok((c, CacheOutcome::Hit));
        }
        let watch = self.compile_watch.lock().ok().and_then(|w| w.clone());
        if let Some(w) = &watch {
            w.started(name, bytes.len());
        }
        let compiled = Component::new(engine, bytes);
        if let Some(w) = &watch {
            w.finished(name, compiled.is_ok());
        }
        let component = compiled.map_err(|e| PluginError::Compile {
            plugin: name.to_owned(),
            detail: format!("{e:#}"),
        })?;
        if let Some(cache) = &self.cache {
            cache.store_compiled(id, &component);
        }
        Ok((component, CacheOutcome::Compiled))
    }

    /// The build's precompiled artifact of the component `id`, if there is
    /// one whose seal verifies and which wasmtime accepts for this engine.
    fn load_prebuilt(
        &self,
        name: &str,
        id: &blake3::Hash,
    ) -> Result<Option<Component>, PluginError> {
        let Some(file) = self.prebuilt.get(id) else {
            return Ok(None);
        };
        let sealed = match Sealed::open(file.as_ref(), id) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(
                    plugin = name,
                    "precompiled artifact unusable ({e}); compiling"
                );
                return Ok(None);
            }
        };
        // SAFETY: the artifact comes from this program's own build, which
        // precompiled it with `roost_engine_config::config()`, the config
        // this engine was created from; its seal binds it to these
        // component bytes and verified just now, so it is intact. wasmtime
        // checks its version, target, CPU features and tunables against
        // this engine and refuses a mismatch, which falls back to a compile.
        let engine = &self.runtime()?.engine;
        Ok(
            match unsafe { Component::deserialize(engine, sealed.artifact()) } {
                Ok(c) => Some(c),
                Err(e) => {
                    tracing::warn!(
                        plugin = name,
                        "precompiled artifact does not suit this engine ({e:#}); compiling"
                    );
                    None
                }
            },
        )
    }

    /// Check, compile (or load) and link a component of any Roost world,
    /// whose BLAKE3 hash is `id`; the caller checks the world's exports.
    pub(super) fn prepare(
        &self,
        name: &str,
        bytes: &[u8],
        id: &blake3::Hash,
    ) -> Result<(InstancePre<CallState>, CacheOutcome), PluginError> {
        super::engine::check_header(name, bytes)?;
        let (component, outcome) = self.compile_known(name, bytes, id)?;
        self.runtime()?
            .linker
            .instantiate_pre(&component)
            .map(|pre| (pre, outcome))
            .map_err(|e| PluginError::UnsatisfiedImport {
                plugin: name.to_owned(),
                detail: format!("{e:#}"),
            })
    }
}
