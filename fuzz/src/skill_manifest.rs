//! A skill's `SKILL.md` (its YAML front matter and body), as the skills
//! library reads it from a workspace, a user folder or an MCP server.
//!
//! Must hold: a parsed skill's name passes the name rules for its folder.

use roost_core::skills::manifest::{name_problems, parse};

use crate::input::Input;

/// The target.
pub fn run(data: &[u8]) {
    let mut input = Input::new(data);
    let folder = input.text();
    let text = String::from_utf8_lossy(input.rest());
    if let Ok((manifest, _body)) = parse(&text, &folder) {
        assert!(name_problems(&manifest.name, &folder).is_empty());
    }
}
