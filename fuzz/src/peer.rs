//! What the targets that stand in for another program share: an engine
//! whose model replays a script (no network), and the checks on what a
//! JSON-RPC peer (`roost mcp serve`, `roost acp`) wrote and left.

use std::path::Path;
use std::sync::Arc;

use roost_core::config::Config;
use roost_core::engine::{Engine, EngineBuilder};

/// A config whose default profile replays `turns` (a scripted
/// transcript), written under `dir`, and the engine it builds there.
pub fn scripted_engine(dir: &Path, turns: &str) -> (Config, Arc<Engine>) {
    let script = dir.join("script.json");
    if let Err(e) = std::fs::write(&script, turns) {
        panic!("cannot write the script: {e}");
    }
    let toml = format!(
        "default_profile = \"replay\"\n[profiles.replay]\nprovider = \"scripted\"\nscript = \"{}\"\n",
        script.display()
    );
    let path = dir.join("config.toml");
    if let Err(e) = std::fs::write(&path, toml) {
        panic!("cannot write the config: {e}");
    }
    let cfg: Config = match roost_core::config::load(Some(&path)) {
        Ok(c) => c,
        Err(e) => panic!("the fuzz config does not load: {e}"),
    };
    match EngineBuilder::from_config(&dir.join("data"), &cfg).build() {
        Ok(engine) => (cfg, engine),
        Err(e) => panic!("no engine: {e}"),
    }
}

/// Every non-empty line the peer wrote is one JSON-RPC 2.0 message.
pub fn assert_json_rpc<'a>(lines: impl IntoIterator<Item = &'a [u8]>) {
    for line in lines.into_iter().filter(|l| !l.is_empty()) {
        let v: serde_json::Value = match serde_json::from_slice(line) {
            Ok(v) => v,
            Err(e) => panic!(
                "the peer wrote a line that is not JSON ({e}): {:?}",
                String::from_utf8_lossy(line)
            ),
        };
        assert_eq!(
            v.get("jsonrpc").and_then(|j| j.as_str()),
            Some("2.0"),
            "{v}"
        );
    }
}

/// The canary file (`canary\n`) outside what the peer may write is as it
/// was.
pub fn assert_canary(canary: &Path) {
    match std::fs::read_to_string(canary) {
        Ok(s) => assert_eq!(s, "canary\n", "a file outside the grant changed"),
        Err(e) => panic!("the canary outside the grant is gone: {e}"),
    }
}
