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
use std::sync::Arc;

use base64::Engine;
use percent_encoding::{AsciiSet, CONTROLS, percent_decode_str, utf8_percent_encode};
use rmcp::model::{
    Resource, ResourceContents, Skill as McpSkill, SkillFrontmatter, SkillResource, SkillResources,
};
use serde_json::{Value, json};

use roost_core::skills::files;
use roost_core::skills::{Catalog, Skill};

/// The scheme skills are served under.
pub(super) const SCHEME: &str = "skill://";
/// The discovery index.
pub(super) const INDEX_URI: &str = "skill://index.json";
/// The schema the index follows.
const INDEX_SCHEMA: &str = "https://schemas.agentskills.io/discovery/0.2.0/schema.json";

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

/// A skill's entry for `skills/list` and `skills/get`: its front-matter
/// and every file with its digest; `None` (logged) when it cannot be
/// served whole.
pub(super) fn entry(skill: &Skill) -> Option<McpSkill> {
    let name = skill.name();
    let listed = match files::files(skill) {
        Ok(f) => f,
        Err(why) => {
            tracing::warn!(skill = name, "skill not served over MCP: {why}");
            return None;
        }
    };
    let mut resources = Vec::with_capacity(listed.len());
    for f in &listed {
        let Some(bytes) = files::read(skill, &f.rel) else {
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
        let Ok(listed) = files::files(s) else {
            continue;
        };
        for f in listed {
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
    let bytes = files::read(skill, rel)?;
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
