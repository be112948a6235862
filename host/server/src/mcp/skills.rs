//! Skills over MCP (the `io.modelcontextprotocol/skills` extension,
//! SEP-2640): the workspace's and the user's skills — found as a task
//! finds them, the first of each name winning, mode-specific folders left
//! out — served as `skill://<name>/<file>` resources, listed by
//! `skills/list` and `skills/get` with each file's digest, and indexed in
//! `skill://index.json` (the Agent Skills discovery index) for clients
//! that only read resources.
//!
//! Files are read by the host without following any link, never outside
//! the skill's folder; hidden entries (a name starting with `.`) are
//! neither listed nor served, and a skill with more files or bytes than
//! the bounds below is left out (logged).

use std::collections::HashSet;
use std::ffi::OsStr;
use std::sync::Arc;

use base64::Engine;
use percent_encoding::{AsciiSet, CONTROLS, percent_decode_str, utf8_percent_encode};
use rmcp::model::{
    Resource, ResourceContents, Skill as McpSkill, SkillFrontmatter, SkillResource, SkillResources,
};
use serde_json::{Value, json};

use roost_core::skills::{Catalog, Skill};
use roost_sandbox::capability::RelPath;
use roost_sandbox::capability::dirfd::{DirFd, Kind};

/// The scheme skills are served under.
pub(super) const SCHEME: &str = "skill://";
/// The discovery index.
pub(super) const INDEX_URI: &str = "skill://index.json";
/// The schema the index follows.
const INDEX_SCHEMA: &str = "https://schemas.agentskills.io/discovery/0.2.0/schema.json";
/// Most files of one skill served.
const MAX_FILES: usize = 512;
/// Most bytes of one skill served.
const MAX_BYTES: u64 = 16 << 20;
/// Deepest directory of a skill served.
const MAX_DEPTH: usize = 8;

/// Characters a URI path segment must not hold literally.
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'[')
    .add(b'\\')
    .add(b']')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

/// The skills served from `catalog`: generic ones, first of each name.
pub(super) fn served(catalog: &Catalog) -> Vec<Arc<Skill>> {
    let mut seen = HashSet::new();
    catalog
        .skills()
        .iter()
        .filter(|s| s.mode.is_none() && seen.insert(s.name().to_owned()))
        .cloned()
        .collect()
}

/// The URI of `rel` (a `/`-separated path) in skill `name`.
pub(super) fn uri(name: &str, rel: &str) -> String {
    let encoded: Vec<String> = std::iter::once(name)
        .chain(rel.split('/'))
        .map(|s| utf8_percent_encode(s, SEGMENT).to_string())
        .collect();
    format!("{SCHEME}{}", encoded.join("/"))
}

/// One file of a skill.
pub(super) struct SkillFile {
    /// Its path in the skill's folder, `/`-separated.
    pub rel: String,
    /// Its size.
    pub size: u64,
}

/// The files of `skill` (no link followed, hidden entries left out), or
/// why it is not served.
pub(super) fn files(skill: &Skill) -> Result<Vec<SkillFile>, String> {
    let root = DirFd::open_resolved(&skill.dir).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    let mut total = 0u64;
    let mut stack = vec![(root, String::new(), 0usize)];
    while let Some((dir, prefix, depth)) = stack.pop() {
        let entries = dir.entries().map_err(|e| e.to_string())?;
        for (name, stat) in entries {
            let Some(n) = name.to_str() else { continue };
            if n.starts_with('.') {
                continue;
            }
            let rel = format!("{prefix}{n}");
            match stat.kind {
                Kind::Dir if depth + 1 < MAX_DEPTH => {
                    let sub = dir.open_dir(&name).map_err(|e| e.to_string())?;
                    stack.push((sub, format!("{rel}/"), depth + 1));
                }
                Kind::File => {
                    total = total.saturating_add(stat.size);
                    out.push(SkillFile {
                        rel,
                        size: stat.size,
                    });
                }
                _ => {}
            }
            if out.len() > MAX_FILES || total > MAX_BYTES {
                return Err(format!("more than {MAX_FILES} files or {MAX_BYTES} bytes"));
            }
        }
    }
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(out)
}

/// The bytes of `rel` in `skill`'s folder, reached without following any
/// link; `None` when there is no such file (or it is hidden).
pub(super) fn read(skill: &Skill, rel: &str) -> Option<Vec<u8>> {
    let path = RelPath::parse(rel).ok()?;
    let parts = path.parts();
    if parts
        .iter()
        .any(|p| p.to_str().is_none_or(|p| p.starts_with('.')))
    {
        return None;
    }
    let (file, dirs) = parts.split_last()?;
    if dirs.len() + 1 > MAX_DEPTH {
        return None;
    }
    DirFd::open_resolved(&skill.dir)
        .and_then(|root| root.open_dir_path(dirs))
        .and_then(|dir| dir.read(OsStr::new(file), MAX_BYTES))
        .ok()
}

/// A skill's entry for `skills/list` and `skills/get`: its front-matter
/// and every file with its digest; `None` (logged) when it cannot be
/// served whole.
pub(super) fn entry(skill: &Skill) -> Option<McpSkill> {
    let name = skill.name();
    let files = match files(skill) {
        Ok(f) => f,
        Err(why) => {
            tracing::warn!(skill = name, "skill not served over MCP: {why}");
            return None;
        }
    };
    let mut resources = Vec::with_capacity(files.len());
    for f in &files {
        let Some(bytes) = read(skill, &f.rel) else {
            tracing::warn!(skill = name, file = %f.rel, "skill not served over MCP: a file cannot be read");
            return None;
        };
        resources.push(SkillResource::from_bytes(uri(name, &f.rel), &bytes));
    }
    let m = &skill.manifest;
    let mut front = SkillFrontmatter::new(name, m.description.clone());
    if let Some(l) = &m.license {
        front = front.with_field("license", l.clone());
    }
    if let Some(c) = &m.compatibility {
        front = front.with_field("compatibility", c.clone());
    }
    if !m.metadata.is_empty() {
        front = front.with_field("metadata", json!(m.metadata));
    }
    if let Some(tools) = &m.allowed_tools {
        // As SKILL.md writes it: one space-separated string.
        front = front.with_field("allowed-tools", tools.join(" "));
    }
    let entry = McpSkill::new(
        uri(name, "SKILL.md"),
        front,
        SkillResources::Files(resources),
    );
    match entry.validate() {
        Ok(()) => Some(entry),
        Err(e) => {
            tracing::warn!(skill = name, "skill not served over MCP: {e}");
            None
        }
    }
}

/// The discovery index of `skills`.
pub(super) fn index(skills: &[Arc<Skill>]) -> String {
    let entries: Vec<Value> = skills
        .iter()
        .map(|s| {
            json!({
                "name": s.name(),
                "type": "skill-md",
                "description": s.manifest.description,
                "url": uri(s.name(), "SKILL.md"),
            })
        })
        .collect();
    json!({"$schema": INDEX_SCHEMA, "skills": entries}).to_string()
}

/// Every file of `skills` as a resource (`SKILL.md` named and described
/// as its skill).
pub(super) fn resources(skills: &[Arc<Skill>]) -> Vec<Resource> {
    let mut out = Vec::new();
    for s in skills {
        let Ok(files) = files(s) else { continue };
        for f in files {
            let mut r = Resource::new(uri(s.name(), &f.rel), format!("{}/{}", s.name(), f.rel))
                .with_mime_type(mime_of(&f.rel))
                .with_size(f.size);
            if f.rel == "SKILL.md" {
                r.name = s.name().to_owned();
                r = r.with_description(s.manifest.description.clone());
            }
            out.push(r);
        }
    }
    out
}

/// The skill and file a `skill://` URI names.
pub(super) fn parse_uri(uri: &str) -> Option<(String, String)> {
    let rest = uri.strip_prefix(SCHEME)?;
    if rest.contains(['?', '#']) {
        return None;
    }
    let (name, rel) = rest.split_once('/')?;
    let name = percent_decode_str(name).decode_utf8().ok()?.into_owned();
    let rel = percent_decode_str(rel).decode_utf8().ok()?.into_owned();
    Some((name, rel))
}

/// The contents of `rel` of `skill` at `uri`: text when it is UTF-8
/// without NUL bytes, else base64.
pub(super) fn contents(skill: &Skill, rel: &str, uri: &str) -> Option<ResourceContents> {
    let bytes = read(skill, rel)?;
    let mime = mime_of(rel);
    Some(match String::from_utf8(bytes) {
        Ok(text) if !text.contains('\0') => ResourceContents::text(text, uri).with_mime_type(mime),
        Ok(text) => ResourceContents::blob(
            base64::engine::general_purpose::STANDARD.encode(text.as_bytes()),
            uri,
        )
        .with_mime_type(mime),
        Err(e) => ResourceContents::blob(
            base64::engine::general_purpose::STANDARD.encode(e.as_bytes()),
            uri,
        )
        .with_mime_type(mime),
    })
}

/// A MIME type from a file name, for clients that show resources.
fn mime_of(rel: &str) -> &'static str {
    let ext = rel.rsplit_once('.').map_or("", |(_, e)| e);
    match ext.to_ascii_lowercase().as_str() {
        "md" | "markdown" => "text/markdown",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        "py" => "text/x-python",
        "sh" => "text/x-shellscript",
        "js" | "mjs" => "text/javascript",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "csv" => "text/csv",
        "txt" | "rs" | "ts" | "go" | "java" | "c" | "h" => "text/plain",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "svg" => "image/svg+xml",
        "pdf" => "application/pdf",
        "wasm" => "application/wasm",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn uris_round_trip() {
        let u = uri("pdf-tools", "refs/my notes#1.md");
        assert_eq!(u, "skill://pdf-tools/refs/my%20notes%231.md");
        assert_eq!(
            parse_uri(&u),
            Some(("pdf-tools".into(), "refs/my notes#1.md".into()))
        );
        assert_eq!(parse_uri("skill://index.json"), None);
        assert_eq!(parse_uri("skill://a/SKILL.md?x"), None);
        assert_eq!(parse_uri("file:///etc/passwd"), None);
    }
}
