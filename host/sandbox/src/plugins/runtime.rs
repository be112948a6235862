//! The wasmtime side of the engine, made on first use: the `Engine` with
//! its pool of instance slots, the linker of every host interface, and
//! the epoch ticker. A start that only lists tools (every component known
//! to the cache) never makes it: reserving a pool of 256 call slots and
//! linking the host interfaces is about a tenth of `roost tool list`'s
//! CPU, and freeing them at exit as much again.

use std::time::Duration;

use wasmtime::component::{HasSelf, Linker};
use wasmtime::{Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::bindings::since_v0_1_0;
use super::bindings::tool_plugin::roost::plugin::host as wit_host;
use super::bindings::tool_plugin::roost::plugin::types as wit;
use super::engine::EngineConfig;
use super::error::PluginError;
use super::state::CallState;

/// What running a component needs: the engine, its linker, and whether
/// the pooling allocator is in use (false after a fallback).
pub(super) struct Runtime {
    pub(super) engine: Engine,
    pub(super) linker: Linker<CallState>,
    pub(super) pooled: bool,
}

impl Runtime {
    /// Create the engine (pooled unless `config` says not, or the pool
    /// cannot be reserved), link the host interfaces and start the epoch
    /// ticker. The error says why the engine cannot be made.
    pub(super) fn new(config: &EngineConfig) -> Result<Self, String> {
        let (engine, pooled) = create_engine(config)?;
        let linker = link(&engine)?;
        spawn_epoch_ticker(&engine, config.epoch_tick);
        Ok(Self {
            engine,
            linker,
            pooled,
        })
    }
}

/// An engine of the same configuration with no pool and no ticker: its
/// compatibility hash (which names the component cache's entries) is the
/// pooled engine's, since the allocator is not part of it, and it costs a
/// start a small part of one with a pool.
pub(super) fn unpooled_engine() -> Result<Engine, PluginError> {
    Engine::new(&base_config()).map_err(|e| PluginError::Engine(e.to_string()))
}

/// The linker of every host interface a Roost component may import.
fn link(engine: &Engine) -> Result<Linker<CallState>, String> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(|e| e.to_string())?;
    // wasi:http for tool plugins' egress; each call's hooks decide what
    // goes out (nothing unless its grant names origins).
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)
        .map_err(|e| format!("cannot link wasi:http: {e:#}"))?;
    super::special_files::refuse_special_files(&mut linker)
        .map_err(|e| format!("cannot guard open-at: {e:#}"))?;
    super::hidden_paths::hide_ignored_paths(&mut linker)
        .map_err(|e| format!("cannot hide .rooignore'd paths: {e:#}"))?;
    super::preopens::mount_held_directories(&mut linker)
        .map_err(|e| format!("cannot mount held directories: {e:#}"))?;
    // Roost's own interfaces, in every version the host loads (WASI,
    // added above, is shared by all).
    wit_host::add_to_linker::<_, HasSelf<CallState>>(&mut linker, |s| s)
        .map_err(|e| e.to_string())?;
    wit::add_to_linker::<_, HasSelf<CallState>>(&mut linker, |s| s).map_err(|e| e.to_string())?;
    since_v0_1_0::tool_plugin::ToolPlugin::add_to_linker::<_, HasSelf<CallState>>(
        &mut linker,
        |s| s,
    )
    .map_err(|e| e.to_string())?;
    Ok(linker)
}

fn create_engine(config: &EngineConfig) -> Result<(Engine, bool), String> {
    if config.pooling {
        let mut c = base_config();
        let slots = config.max_concurrent_calls.max(1);
        let mut pool = PoolingAllocationConfig::default();
        pool.total_component_instances(slots)
            .total_core_instances(slots.saturating_mul(8))
            .total_memories(slots.saturating_mul(2))
            .total_tables(slots.saturating_mul(8))
            .total_stacks(slots)
            .max_memory_size(usize::try_from(config.max_memory_bytes).unwrap_or(usize::MAX))
            .table_elements(100_000)
            .max_core_instance_size(4 << 20)
            .max_component_instance_size(4 << 20)
            .max_core_instances_per_component(64)
            .max_memories_per_component(16)
            .max_tables_per_component(64)
            .max_tables_per_module(8)
            .linear_memory_keep_resident(640 << 10)
            .table_keep_resident(64 << 10)
            // Where the kernel has PAGEMAP_SCAN (Linux 6.7+), only the pages
            // a call dirtied are reset, not the whole resident prefix.
            .pagemap_scan(wasmtime::Enabled::Auto);
        c.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        match Engine::new(&c) {
            Ok(e) => return Ok((e, true)),
            Err(e) => tracing::warn!(
                "cannot reserve the pooling allocator ({e}); falling back to on-demand instance allocation"
            ),
        }
    }
    Engine::new(&base_config())
        .map(|e| (e, false))
        .map_err(|e| e.to_string())
}

/// Every Roost engine's configuration, the allocator aside: the build
/// precompiles the first-party components with this same one.
fn base_config() -> wasmtime::Config {
    with_profiler(roost_engine_config::config())
}

/// With `ROOST_WASM_PERF_MAP` set (not `0`), wasmtime writes
/// `/tmp/perf-<pid>.map` naming the code it compiled or loaded, so `perf
/// report` names a plugin's own functions; without it their samples are
/// `[unknown]` and cannot be told from the kernel's. For profiling only:
/// it changes no compiled code.
fn with_profiler(mut c: wasmtime::Config) -> wasmtime::Config {
    if std::env::var_os("ROOST_WASM_PERF_MAP").is_some_and(|v| v != "0") {
        c.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    c
}

fn spawn_epoch_ticker(engine: &Engine, tick: Duration) {
    let weak = engine.weak();
    let spawned = std::thread::Builder::new()
        .name("roost-epoch".into())
        .spawn(move || {
            loop {
                std::thread::sleep(tick);
                match weak.upgrade() {
                    Some(e) => e.increment_epoch(),
                    None => break,
                }
            }
        });
    if let Err(e) = spawned {
        tracing::error!(
            "cannot start the epoch ticker; plugin deadlines rely on the host timeout only: {e}"
        );
    }
}
