//! The TLS provider HTTP MCP servers are reached with: the same `ring`
//! provider the rest of Roost's HTTP uses, installed as the process's
//! default once (the MCP client's HTTP stack takes the default).

use std::sync::Once;

/// Install `ring` as the process's TLS provider, once.
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Another part of the process may have installed one already.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
