//! An MCP configuration file (`mcp_settings.json`, a workspace's
//! `.roo/mcp.json` or `.mcp.json`), as the hub reads it.
//!
//! Must hold: every entry taken has a name, a fingerprint that is the
//! same when computed twice, and a summary; a project entry needs trust.

use std::path::Path;

use roost_mcp::config::{McpConfig, Source, parse};

/// The target.
pub fn run(data: &[u8]) {
    let Some((first, rest)) = data.split_first() else {
        return;
    };
    let source = if first % 2 == 0 {
        Source::Global
    } else {
        Source::Project
    };
    let text = String::from_utf8_lossy(rest);
    let mut out = McpConfig::default();
    parse(
        Path::new("/fuzz/.roo/mcp.json"),
        &text,
        source.clone(),
        &mut out,
    );
    for (name, entry) in &out.servers {
        assert_eq!(name, &entry.name);
        assert_eq!(entry.fingerprint(), entry.fingerprint());
        let _ = entry.summary();
        let _ = entry.trust_name();
        if source == Source::Project {
            assert!(entry.source.needs_trust());
        }
    }
}
