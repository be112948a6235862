//! The user's `config.toml`, read from disk as every front-end reads it.
//!
//! Must hold: a config that loads yields each of its profiles or a clear
//! error, and its secret store, telemetry and guard settings.

use roost_core::config::load;
use roost_core::telemetry::TelemetryConfig;

/// The target.
pub fn run(data: &[u8]) {
    let dir = crate::scratch::fresh("config");
    let path = dir.join("config.toml");
    if let Err(e) = std::fs::write(&path, data) {
        panic!("cannot write {}: {e}", path.display());
    }
    let Ok(cfg) = load(Some(&path)) else {
        return;
    };
    let _ = cfg.profile(None);
    for name in cfg.profiles.keys() {
        let _ = cfg.profile(Some(name));
    }
    let _ = cfg.secret_store();
    let _ = TelemetryConfig::default().with_table(&cfg.telemetry, |_| false);
}
