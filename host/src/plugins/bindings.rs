//! Host-side bindings of the `roost:plugin` WIT worlds.

/// World `tool-plugin`.
pub mod tool_plugin {
    wasmtime::component::bindgen!({
        world: "tool-plugin",
        path: "../wit",
        exports: { default: async },
    });
}
