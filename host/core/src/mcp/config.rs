//! Where MCP servers are configured, in Roo Code's format: the global
//! `mcp_settings.json` in Roost's config directory, and a workspace's
//! `.roo/mcp.json` (and `.mcp.json` at its root, as other agents read it).
//! A project entry overrides a global one of the same name; an invalid
//! entry is reported with its file, server and field, and the others are
//! still used.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use roost_sandbox::capability::Workspace;

/// The global file's name, in Roost's config directory.
pub const GLOBAL_FILE: &str = "mcp_settings.json";
/// The project files, most specific last (a later file's entry wins).
pub const PROJECT_FILES: &[&str] = &[".mcp.json", ".roo/mcp.json"];
/// Largest configuration file read.
const MAX_FILE: u64 = 1 << 20;
/// Most servers one file may configure.
const MAX_SERVERS: usize = 64;
/// Default time a request to a server may take (Roo's default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Where an entry came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The user's own `mcp_settings.json`: needs no trust.
    Global,
    /// A workspace file: started only once the user trusts it there.
    Project,
}

/// How Roost reaches a server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Transport {
    /// A process Roost starts (in the command sandbox), speaking over its
    /// stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Its working directory (default: the workspace).
        cwd: Option<PathBuf>,
        /// Variables set for it (after `${env:VAR}` substitution).
        env: BTreeMap<String, String>,
    },
    /// A server at a URL (streamable HTTP; `sse` entries too, whose
    /// servers the same client reaches through the legacy fallback).
    Http {
        /// Its endpoint.
        url: String,
        /// Headers sent with every request.
        headers: BTreeMap<String, String>,
    },
}

/// One configured server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerEntry {
    /// Its name (the key under `mcpServers`).
    pub name: String,
    /// Which file configured it.
    pub file: PathBuf,
    /// Global or project.
    pub source: Source,
    /// How to reach it.
    pub transport: Transport,
    /// Turned off: not started, its tools not offered.
    pub disabled: bool,
    /// Longest a request may take.
    pub timeout: Duration,
    /// Tools called without asking (`alwaysAllow`).
    pub always_allow: Vec<String>,
    /// Tools never offered (`disabledTools`).
    pub disabled_tools: Vec<String>,
    /// The command profile a stdio server runs under (Roost's
    /// `profile`; default `read-only`).
    pub profile: Option<String>,
    /// Origins a stdio server may reach (Roost's `allowNetwork`; default
    /// none).
    pub network: Vec<String>,
}

impl ServerEntry {
    /// What the user trusts when trusting this entry: everything that
    /// decides what runs and what it gets.
    pub fn fingerprint(&self) -> String {
        let v = serde_json::json!({
            "transport": self.transport,
            "profile": self.profile,
            "network": self.network,
        });
        blake3::hash(v.to_string().as_bytes()).to_hex().to_string()
    }
}

/// A problem with one file or entry; the rest are still used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigIssue {
    /// The file.
    pub file: PathBuf,
    /// The server, when one entry is wrong.
    pub server: Option<String>,
    /// The field, when one is.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for ConfigIssue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(s) = &self.server {
            write!(f, ": server `{s}`")?;
        }
        if let Some(field) = &self.field {
            write!(f, ", field `{field}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Every server a workspace sees, and what could not be used.
#[derive(Debug, Clone, Default)]
pub struct McpConfig {
    /// The servers by name (project entries over global ones).
    pub servers: BTreeMap<String, ServerEntry>,
    /// Problems found.
    pub issues: Vec<ConfigIssue>,
}

/// One entry as written (Roo's field names).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawEntry {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    cwd: Option<PathBuf>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    disabled: bool,
    /// Seconds.
    timeout: Option<u64>,
    #[serde(default)]
    always_allow: Vec<String>,
    #[serde(default)]
    disabled_tools: Vec<String>,
    profile: Option<String>,
    #[serde(default)]
    allow_network: Vec<String>,
    /// Roo writes it; Roost keeps its own trust store instead.
    #[serde(default)]
    #[allow(dead_code)]
    watch_paths: Vec<String>,
}

/// Read the servers `global_dir`'s file and `workspace`'s files
/// configure.
pub fn load(global_dir: Option<&Path>, workspace: Option<&Path>) -> McpConfig {
    let mut out = McpConfig::default();
    if let Some(dir) = global_dir {
        let file = dir.join(GLOBAL_FILE);
        match read_global(&file) {
            Ok(Some(text)) => parse(&file, &text, Source::Global, &mut out),
            Ok(None) => {}
            Err(message) => out.issues.push(issue(&file, None, None, message)),
        }
    }
    if let Some(ws) = workspace {
        match Workspace::open(ws) {
            Ok(w) => {
                for rel in PROJECT_FILES {
                    let file = ws.join(rel);
                    match w.read_text(rel, MAX_FILE) {
                        Ok(Some(text)) => parse(&file, &text, Source::Project, &mut out),
                        Ok(None) => {}
                        Err(e) => out.issues.push(issue(&file, None, None, e.to_string())),
                    }
                }
            }
            Err(e) => out.issues.push(issue(
                ws,
                None,
                None,
                format!("cannot open the workspace: {e}"),
            )),
        }
    }
    out
}

/// The modification stamps of the files `load` reads: the configuration
/// is read again when they change. A workspace's files are looked at
/// through the workspace layer.
pub fn stamp(global_dir: Option<&Path>, workspace: Option<&Path>) -> Vec<Option<(u64, i64)>> {
    use std::os::unix::fs::MetadataExt;
    let of = |m: std::fs::Metadata| {
        (
            m.len(),
            m.mtime_nsec()
                .saturating_add(m.mtime().saturating_mul(1_000_000_000)),
        )
    };
    let mut out: Vec<Option<(u64, i64)>> = global_dir
        .iter()
        .map(|d| std::fs::metadata(d.join(GLOBAL_FILE)).ok().map(of))
        .collect();
    if let Some(ws) = workspace {
        let w = Workspace::open(ws).ok();
        for rel in PROJECT_FILES {
            let meta = w.as_ref().and_then(|w| {
                let rel = w.normalize(rel).ok()?;
                w.open_file(&rel).ok().flatten()?.metadata().ok()
            });
            out.push(meta.map(of));
        }
    }
    out
}

fn issue(file: &Path, server: Option<&str>, field: Option<String>, message: String) -> ConfigIssue {
    ConfigIssue {
        file: file.to_path_buf(),
        server: server.map(str::to_owned),
        field,
        message,
    }
}

/// The user's own file: a regular file of bounded size.
fn read_global(path: &Path) -> Result<Option<String>, String> {
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => return Err("not a regular file".into()),
        Ok(m) if m.len() > MAX_FILE => return Err(format!("larger than {MAX_FILE} bytes")),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    }
    std::fs::read_to_string(path)
        .map(Some)
        .map_err(|e| e.to_string())
}

/// Parse one file into `out` (its entries override earlier ones).
pub fn parse(file: &Path, text: &str, source: Source, out: &mut McpConfig) {
    if text.trim().is_empty() {
        return;
    }
    let root: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            out.issues
                .push(issue(file, None, None, format!("not valid JSON: {e}")));
            return;
        }
    };
    let Some(servers) = root.get("mcpServers") else {
        return;
    };
    let Some(servers) = servers.as_object() else {
        out.issues.push(issue(
            file,
            None,
            Some("mcpServers".into()),
            "must be an object of servers by name".into(),
        ));
        return;
    };
    if servers.len() > MAX_SERVERS {
        out.issues.push(issue(
            file,
            None,
            Some("mcpServers".into()),
            format!("more than {MAX_SERVERS} servers; only the first {MAX_SERVERS} are used"),
        ));
    }
    for (name, raw) in servers.iter().take(MAX_SERVERS) {
        if let Err(message) = valid_name(name) {
            out.issues.push(issue(file, Some(name), None, message));
            continue;
        }
        match entry(file, name, raw, source.clone()) {
            Ok(e) => {
                out.servers.insert(name.clone(), e);
            }
            Err((field, message)) => {
                out.issues.push(issue(file, Some(name), field, message));
                // A broken project entry must not leave a global one of
                // the same name running in its place unnoticed: it is
                // reported, and the global one stays.
            }
        }
    }
}

/// A server's name: it becomes part of tool names.
fn valid_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.chars().count() > 64 {
        return Err("a server's name must be 1–64 characters".into());
    }
    if name.chars().any(|c| c.is_control()) {
        return Err("a server's name may not hold control characters".into());
    }
    Ok(())
}

fn entry(
    file: &Path,
    name: &str,
    raw: &Value,
    source: Source,
) -> Result<ServerEntry, (Option<String>, String)> {
    let raw: RawEntry = serde_path_to_error::deserialize(raw).map_err(|e| {
        let path = e.path().to_string();
        ((path != ".").then_some(path), e.into_inner().to_string())
    })?;
    let field = |f: &str, m: String| (Some(f.to_owned()), m);
    let kind = raw.kind.as_deref().map(str::to_ascii_lowercase);
    let transport = match (kind.as_deref(), &raw.command, &raw.url) {
        (Some("stdio") | None, Some(command), None) => {
            if command.trim().is_empty() {
                return Err(field("command", "is empty".into()));
            }
            let mut env = BTreeMap::new();
            for (k, v) in &raw.env {
                env.insert(k.clone(), substitute(v).map_err(|m| field("env", m))?);
            }
            Transport::Stdio {
                command: substitute(command).map_err(|m| field("command", m))?,
                args: raw
                    .args
                    .iter()
                    .map(|a| substitute(a))
                    .collect::<Result<_, _>>()
                    .map_err(|m| field("args", m))?,
                cwd: raw.cwd.clone(),
                env,
            }
        }
        (Some("sse" | "streamable-http" | "http" | "streamablehttp") | None, None, Some(url)) => {
            let url = substitute(url).map_err(|m| field("url", m))?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(field("url", format!("`{url}` is not an http(s) URL")));
            }
            let mut headers = BTreeMap::new();
            for (k, v) in &raw.headers {
                headers.insert(k.clone(), substitute(v).map_err(|m| field("headers", m))?);
            }
            Transport::Http { url, headers }
        }
        (Some("stdio"), _, _) => {
            return Err(field(
                "command",
                "a stdio server needs `command` (and no `url`)".into(),
            ));
        }
        (Some("sse" | "streamable-http" | "http" | "streamablehttp"), _, _) => {
            return Err(field(
                "url",
                "an HTTP server needs `url` (and no `command`)".into(),
            ));
        }
        (Some(other), _, _) => {
            return Err(field(
                "type",
                format!("unknown type `{other}` (stdio, sse, streamable-http)"),
            ));
        }
        (None, Some(_), Some(_)) => {
            return Err((
                None,
                "give either `command` (stdio) or `url`, not both".into(),
            ));
        }
        (None, None, None) => {
            return Err((None, "needs `command` (stdio) or `url` (HTTP)".into()));
        }
    };
    let timeout = match raw.timeout {
        None => DEFAULT_TIMEOUT,
        Some(s) if (1..=3600).contains(&s) => Duration::from_secs(s),
        Some(s) => return Err(field("timeout", format!("{s} is not 1–3600 seconds"))),
    };
    Ok(ServerEntry {
        name: name.to_owned(),
        file: file.to_path_buf(),
        source,
        transport,
        disabled: raw.disabled,
        timeout,
        always_allow: raw.always_allow,
        disabled_tools: raw.disabled_tools,
        profile: raw.profile,
        network: raw.allow_network,
    })
}

/// `${env:VAR}` replaced by the variable's value (an unset one is an
/// error: a server started without the key it was configured with fails
/// in ways that are hard to see).
fn substitute(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("${env:") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 6..];
        let Some(end) = after.find('}') else {
            return Err(format!("unclosed `${{env:` in `{s}`"));
        };
        let var = &after[..end];
        match std::env::var(var) {
            Ok(v) => out.push_str(&v),
            Err(_) => return Err(format!("environment variable `{var}` is not set")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_errors_and_overrides() {
        let mut out = McpConfig::default();
        let g = Path::new("/cfg/mcp_settings.json");
        parse(
            g,
            r#"{"mcpServers": {
                "a": {"command": "node", "args": ["x.js"], "alwaysAllow": ["echo"], "timeout": 5},
                "b": {"url": "http://127.0.0.1:1/mcp", "type": "streamable-http"},
                "bad": {"command": "x", "timeout": "soon"},
                "worse": {"type": "carrier-pigeon", "url": "http://x"},
                "both": {"command": "x", "url": "http://x"}
            }}"#,
            Source::Global,
            &mut out,
        );
        assert_eq!(out.servers.len(), 2);
        assert_eq!(out.servers["a"].timeout, Duration::from_secs(5));
        assert_eq!(out.servers["a"].always_allow, vec!["echo"]);
        let fields: Vec<_> = out
            .issues
            .iter()
            .map(|i| (i.server.clone().unwrap_or_default(), i.field.clone()))
            .collect();
        assert!(
            fields.contains(&("bad".into(), Some("timeout".into()))),
            "{fields:?}"
        );
        assert!(
            fields.contains(&("worse".into(), Some("type".into()))),
            "{fields:?}"
        );
        assert!(fields.iter().any(|(s, _)| s == "both"));
        parse(
            Path::new("/ws/.roo/mcp.json"),
            r#"{"mcpServers": {"a": {"command": "python3", "disabled": true}}}"#,
            Source::Project,
            &mut out,
        );
        assert_eq!(out.servers["a"].source, Source::Project);
        assert!(out.servers["a"].disabled);
        let mut broken = McpConfig::default();
        parse(g, "{nope", Source::Global, &mut broken);
        assert_eq!(broken.issues.len(), 1);
        assert!(broken.issues[0].message.contains("not valid JSON"));
    }

    #[test]
    fn env_substitution() {
        // PATH is set wherever tests run.
        let path = std::env::var("PATH").unwrap_or_default();
        assert_eq!(substitute("a${env:PATH}b").ok(), Some(format!("a{path}b")));
        assert!(substitute("${env:ROOST_SURELY_UNSET_VAR_123}").is_err());
        assert!(substitute("${env:PATH").is_err());
    }
}
