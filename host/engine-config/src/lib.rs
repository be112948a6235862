//! The wasmtime configuration every Roost engine compiles with, and the
//! seal on the artifacts the build precompiles with it.
//!
//! The runtime (`roost-sandbox`) and the build of the first-party
//! components (`host/core/build.rs`) both take their `Config` from
//! [`config`], so an artifact compiled at build time is one the runtime's
//! engine accepts: wasmtime checks its own compatibility (version,
//! target, CPU features, tunables) when it deserializes, and Roost checks
//! the [`seal`] first, so a damaged or swapped file is never handed to
//! wasmtime.

#![forbid(unsafe_code)]

pub mod seal;

pub use seal::{SealError, Sealed, seal};

/// The engine configuration shared by everything that compiles or loads
/// components: epoch interruption (deadlines and yielding), the component
/// model, and a 1 MiB wasm stack. The runtime adds only its instance
/// allocator, which does not change compiled code.
pub fn config() -> wasmtime::Config {
    let mut c = wasmtime::Config::new();
    c.epoch_interruption(true);
    c.wasm_component_model(true);
    c.max_wasm_stack(1 << 20);
    c
}

/// Precompile the component `wasm` with [`config`] for this machine and
/// seal the artifact (what a build ships for the runtime to load).
pub fn precompile(wasm: &[u8]) -> wasmtime::Result<Vec<u8>> {
    let engine = wasmtime::Engine::new(&config())?;
    let artifact = engine.precompile_component(wasm)?;
    Ok(seal(wasm, &artifact))
}
