//! The user's `custom_modes.yaml` and a workspace's `.roomodes` (YAML or
//! JSON, Roo Code's format), as the mode set loads them over the built-ins,
//! each mode's file restriction asked about a path.
//!
//! Must hold: the built-in modes survive any file (a broken file is an
//! error beside them, not an empty set).

use roost_core::modes::ModeSet;

use crate::input::Input;

/// The target.
pub fn run(data: &[u8]) {
    let mut input = Input::new(data);
    let path = input.text();
    let global = input.part().to_vec();
    let project = input.rest();
    let ws = crate::scratch::fresh("modes-ws");
    let config = crate::scratch::fresh("modes-config");
    for (file, bytes) in [
        (config.join("custom_modes.yaml"), global.as_slice()),
        (ws.join(".roomodes"), project),
    ] {
        if let Err(e) = std::fs::write(&file, bytes) {
            panic!("cannot write {}: {e}", file.display());
        }
    }
    let set = ModeSet::load(&ws, Some(&config));
    assert!(set.get("code").is_some() || set.iter().any(|m| m.slug == "code"));
    for mode in set.iter() {
        for g in &mode.groups {
            if let Some(re) = &g.file_regex {
                let _ = re.is_match(&path);
            }
        }
    }
}
