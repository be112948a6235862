//! Host-side bindings of the `roost:plugin` WIT worlds.

/// World `tool-plugin`.
pub mod tool_plugin {
    wasmtime::component::bindgen!({
        world: "tool-plugin",
        path: "../../wit",
        exports: { default: async },
    });
}

/// World `mode-hook`; shares the host and type interfaces with `tool-plugin`.
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
