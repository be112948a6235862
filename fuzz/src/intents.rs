//! A workspace's `.orchestration/active_intents.yaml` and its
//! `.intentignore`, as the task loop reads them through the workspace
//! layer, each intent's scope compiled and asked about paths.
//!
//! Must hold: no path with a `..` component, and no absolute path, is
//! in any scope.

use roost_core::intents::{Scope, load};

use crate::input::Input;

/// The target.
pub fn run(data: &[u8]) {
    let mut input = Input::new(data);
    let ignore = input.part().to_vec();
    let paths: Vec<String> = input.text().lines().map(str::to_owned).collect();
    let yaml = input.rest();
    let ws = crate::scratch::fresh("intents");
    let write = |rel: &str, bytes: &[u8]| {
        let path = ws.join(rel);
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        if let Err(e) = std::fs::write(&path, bytes) {
            panic!("cannot write {}: {e}", path.display());
        }
    };
    write(".orchestration/active_intents.yaml", yaml);
    write(".intentignore", &ignore);
    let Ok(intents) = load(&ws) else {
        return;
    };
    for intent in intents.iter().take(8) {
        let Ok(scope) = Scope::new(&ws, intent) else {
            continue;
        };
        for p in &paths {
            let allowed = scope.allows(p);
            let _ = scope.ignored(p);
            let escapes = p.starts_with('/') || p.split('/').any(|c| c == "..");
            assert!(
                !(allowed && escapes),
                "scope {:?} allows {p:?}",
                scope.globs()
            );
        }
        let _ = scope.write_roots();
    }
}
