//! Host-side bindings of the `roost:plugin` WIT worlds, one module per
//! version the host loads (zed's habit): the latest here, and
//! [`since_v0_1_0`] for components built against 0.1.0, whose types it
//! converts into the latest ones so the rest of the host knows only those.

pub mod since_v0_1_0;

/// World `tool-plugin` of `roost:plugin@0.2.0`. Its WASI imports are the
/// ones `wasmtime-wasi` and `wasmtime-wasi-http` implement (linked by the
/// engine), not generated again here.
pub mod tool_plugin {
    wasmtime::component::bindgen!({
        world: "tool-plugin",
        path: "../../wit",
        exports: { default: async },
        with: {
            "wasi:io": wasmtime_wasi::p2::bindings::io,
            "wasi:clocks": wasmtime_wasi::p2::bindings::clocks,
            "wasi:filesystem": wasmtime_wasi::p2::bindings::filesystem,
            "wasi:http": wasmtime_wasi_http::p2::bindings::http,
        },
    });
}

/// World `mode-hook` of `roost:plugin@0.2.0`; shares the host and type
/// interfaces with `tool-plugin`.
pub mod mode_hook {
    wasmtime::component::bindgen!({
        world: "mode-hook",
        path: "../../wit",
        exports: { default: async },
        with: {
            "roost:plugin/types": super::tool_plugin::roost::plugin::types,
            "roost:plugin/host": super::tool_plugin::roost::plugin::host,
        },
    });
}

/// World `skill` of `roost:plugin@0.2.0`: a skill's scripts as one
/// component; shares the host and type interfaces with `tool-plugin`, and
/// WASI (its filesystem) with everything the engine links.
pub mod skill {
    wasmtime::component::bindgen!({
        world: "skill",
        path: "../../wit",
        exports: { default: async },
        with: {
            "roost:plugin/types": super::tool_plugin::roost::plugin::types,
            "roost:plugin/host": super::tool_plugin::roost::plugin::host,
            "wasi:io": wasmtime_wasi::p2::bindings::io,
            "wasi:clocks": wasmtime_wasi::p2::bindings::clocks,
            "wasi:filesystem": wasmtime_wasi::p2::bindings::filesystem,
        },
    });
}
