//! A third-party plugin's `plugin.toml`, as `roost plugin install` reads
//! it: parsed, checked against the host's ceiling, its limits resolved.
//!
//! Must hold: a manifest that parses resolves to limits within the
//! ceiling, and checks again the same.

use roost_core::install::Manifest;
use roost_sandbox::capability::Limits;

/// The target.
pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let ceiling = Limits::default();
    let Ok(m) = Manifest::parse(&text, &ceiling) else {
        return;
    };
    assert_eq!(m.check(&ceiling), Ok(()));
    if let Ok(limits) = m.capabilities.limits.resolve(&ceiling) {
        assert!(limits.deadline <= ceiling.deadline);
        assert!(limits.memory_bytes <= ceiling.memory_bytes);
    }
}
