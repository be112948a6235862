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
    /// A front-end's session (an editor's ACP `mcpServers`): held in
    /// memory only — its values never reach the store — and started only
    /// once the user trusts it in the workspace, as a project's.
    Client,
}

impl Source {
    /// Whether an entry from here starts only once the user trusts it in
    /// the workspace.
    pub fn needs_trust(&self) -> bool {
        !matches!(self, Self::Global)
    }

    /// Its name in listings and cache keys.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Global => "global",
            Self::Project => "project",
            Self::Client => "client",
        }
    }
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
    /// The entry as written, before `${env:…}` substitution: what a person
    /// is shown before trusting it (never the host's values), and what the
    /// trust is given to.
    pub written: Written,
    /// The host environment variables the entry expands, and where: each
    /// hands the server a value from Roost's own environment.
    pub host_vars: Vec<HostVar>,
}

/// A host environment variable an entry expands (`${env:NAME}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostVar {
    /// The variable.
    pub name: String,
    /// Where its value goes (`env.API_KEY`, `args[1]`, `headers.Authorization`,
    /// `command`, `url`).
    pub field: String,
}

impl ServerEntry {
    /// What the user trusts when trusting this entry: the whole entry as
    /// written (every field, normalized), so that any change to what runs,
    /// what it gets or what it may do without asking — a field added later
    /// included — needs trust again. The host's values of the variables it
    /// expands are not part of it: trust is given to "passes your KEY", and
    /// a rotated key does not ask again.
    pub fn fingerprint(&self) -> String {
        let v = serde_json::json!({
            "version": FINGERPRINT_VERSION,
            "name": self.name,
            "entry": self.written,
        });
        blake3::hash(v.to_string().as_bytes()).to_hex().to_string()
    }

    /// The name its trust is recorded under: a client's server never
    /// shares a project server's trust, whatever their names.
    pub fn trust_name(&self) -> String {
        match self.source {
            Source::Client => format!("client:{}", self.name),
            _ => self.name.clone(),
        }
    }

    /// One line saying how it is reached, as written (`stdio: node x.js`,
    /// `http: https://…`): `${env:…}` stays as written, so no host value is
    /// ever shown.
    pub fn summary(&self) -> String {
        match (&self.written.command, &self.written.url) {
            (Some(command), _) => {
                let words = std::iter::once(command.as_str())
                    .chain(self.written.args.iter().map(String::as_str));
                format!("stdio: {}", shell_words::join(words))
            }
            (None, Some(url)) => format!("http: {url}"),
            (None, None) => "(neither command nor url)".to_owned(),
        }
    }
}

/// Changes when what the fingerprint covers does: trust recorded under an
/// older version is asked for again.
const FINGERPRINT_VERSION: u32 = 2;

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

/// One entry as written (Roo's field names, and Roost's `profile` and
/// `allowNetwork`). Every field is part of the trust fingerprint; an
/// unknown field is an error, so nothing in a file goes unseen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Written {
    /// `stdio`, `sse`, `streamable-http` (default: from `command`/`url`).
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// A stdio server's program.
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Its working directory (default: the workspace).
    pub cwd: Option<PathBuf>,
    /// Variables set for it.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// An HTTP server's endpoint.
    pub url: Option<String>,
    /// Headers sent with every request to it.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Turned off.
    #[serde(default)]
    pub disabled: bool,
    /// Longest a request may take, in seconds.
    pub timeout: Option<u64>,
    /// Tools called without asking (`*`: all).
    #[serde(default)]
    pub always_allow: Vec<String>,
    /// Tools never offered.
    #[serde(default)]
    pub disabled_tools: Vec<String>,
    /// The command profile a stdio server runs under.
    pub profile: Option<String>,
    /// Origins a stdio server may reach.
    #[serde(default)]
    pub allow_network: Vec<String>,
    /// Roo writes it; Roost keeps its own trust store instead and ignores
    /// it.
    #[serde(default)]
    pub watch_paths: Vec<String>,
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
    let ws = workspace.map(|ws| Workspace::open(ws).ok());
    stamp_in(global_dir, ws.as_ref().map(Option::as_ref))
}

/// [`stamp`] of a workspace the caller holds open (`Some(None)`: one that
/// could not be opened): a task's, asked every turn, is not looked up by
/// its path again.
pub fn stamp_in(
    global_dir: Option<&Path>,
    workspace: Option<Option<&Workspace>>,
) -> Vec<Option<(u64, i64)>> {
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
    if let Some(w) = workspace {
        for rel in PROJECT_FILES {
            let meta = w.and_then(|w| {
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
    let written: Written = serde_path_to_error::deserialize(raw).map_err(|e| {
        let path = e.path().to_string();
        ((path != ".").then_some(path), e.into_inner().to_string())
    })?;
    entry_of(file, name, written, source)
}

/// Where a front-end's entries say they come from.
pub const CLIENT_FILE: &str = "(the editor's session)";

/// A server a front-end hands in for its session (an editor's ACP
/// `mcpServers`), checked as a file's entry is. Its values are taken as
/// they are: `${env:…}` is not expanded (the editor gives values, never
/// Roost's own environment).
pub fn client_entry(name: &str, written: Written) -> Result<ServerEntry, String> {
    valid_name(name)?;
    entry_of(Path::new(CLIENT_FILE), name, written, Source::Client).map_err(
        |(field, m)| match field {
            Some(f) => format!("`{f}`: {m}"),
            None => m,
        },
    )
}

fn entry_of(
    file: &Path,
    name: &str,
    written: Written,
    source: Source,
) -> Result<ServerEntry, (Option<String>, String)> {
    let raw = &written;
    let field = |f: &str, m: String| (Some(f.to_owned()), m);
    let mut vars = Vec::new();
    // A front-end's values are literal; a file's may name host variables.
    let expand = source != Source::Client;
    let substitute = |s: &str, f: &str, vars: &mut Vec<HostVar>| {
        if expand {
            substitute(s, f, vars)
        } else {
            Ok(s.to_owned())
        }
    };
    let kind = raw.kind.as_deref().map(str::to_ascii_lowercase);
    let transport = match (kind.as_deref(), &raw.command, &raw.url) {
        (Some("stdio") | None, Some(command), None) => {
            if command.trim().is_empty() {
                return Err(field("command", "is empty".into()));
            }
            let mut env = BTreeMap::new();
            for (k, v) in &raw.env {
                let value =
                    substitute(v, &format!("env.{k}"), &mut vars).map_err(|m| field("env", m))?;
                env.insert(k.clone(), value);
            }
            let mut args = Vec::with_capacity(raw.args.len());
            for (i, a) in raw.args.iter().enumerate() {
                args.push(
                    substitute(a, &format!("args[{i}]"), &mut vars)
                        .map_err(|m| field("args", m))?,
                );
            }
            Transport::Stdio {
                command: substitute(command, "command", &mut vars)
                    .map_err(|m| field("command", m))?,
                args,
                cwd: raw.cwd.clone(),
                env,
            }
        }
        (Some("sse" | "streamable-http" | "http" | "streamablehttp") | None, None, Some(url)) => {
            let url = substitute(url, "url", &mut vars).map_err(|m| field("url", m))?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(field(
                    "url",
                    format!(
                        "`{}` is not an http(s) URL",
                        raw.url.as_deref().unwrap_or("")
                    ),
                ));
            }
            let mut headers = BTreeMap::new();
            for (k, v) in &raw.headers {
                let value = substitute(v, &format!("headers.{k}"), &mut vars)
                    .map_err(|m| field("headers", m))?;
                headers.insert(k.clone(), value);
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
        always_allow: raw.always_allow.clone(),
        disabled_tools: raw.disabled_tools.clone(),
        profile: raw.profile.clone(),
        network: raw.allow_network.clone(),
        host_vars: vars,
        written,
    })
}

/// `${env:VAR}` replaced by the variable's value (an unset one is an
/// error: a server started without the key it was configured with fails
/// in ways that are hard to see); each variable expanded is noted in
/// `vars` with `field`, where its value goes.
fn substitute(s: &str, field: &str, vars: &mut Vec<HostVar>) -> Result<String, String> {
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
        let noted = HostVar {
            name: var.to_owned(),
            field: field.to_owned(),
        };
        if !vars.contains(&noted) {
            vars.push(noted);
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

    /// Every field of an entry is part of what is trusted: changing any
    /// one changes the fingerprint.
    #[test]
    fn every_field_changes_the_fingerprint() {
        let fingerprint = |json: &str| {
            let mut out = McpConfig::default();
            parse(
                Path::new("/ws/.roo/mcp.json"),
                &format!(r#"{{"mcpServers": {{"s": {json}}}}}"#),
                Source::Project,
                &mut out,
            );
            assert!(out.issues.is_empty(), "{:?}", out.issues);
            out.servers["s"].fingerprint()
        };
        let base = fingerprint(r#"{"command": "node", "args": ["x.js"]}"#);
        let changed = [
            r#"{"command": "node", "args": ["y.js"]}"#,
            r#"{"command": "deno", "args": ["x.js"]}"#,
            r#"{"command": "node", "args": ["x.js"], "type": "stdio"}"#,
            r#"{"command": "node", "args": ["x.js"], "cwd": "sub"}"#,
            r#"{"command": "node", "args": ["x.js"], "env": {"A": "1"}}"#,
            r#"{"command": "node", "args": ["x.js"], "disabled": true}"#,
            r#"{"command": "node", "args": ["x.js"], "timeout": 5}"#,
            r#"{"command": "node", "args": ["x.js"], "alwaysAllow": ["*"]}"#,
            r#"{"command": "node", "args": ["x.js"], "disabledTools": ["t"]}"#,
            r#"{"command": "node", "args": ["x.js"], "profile": "full"}"#,
            r#"{"command": "node", "args": ["x.js"], "allowNetwork": ["https://a.example"]}"#,
            r#"{"command": "node", "args": ["x.js"], "watchPaths": ["w"]}"#,
        ];
        for c in changed {
            assert_ne!(fingerprint(c), base, "{c}");
        }
        let http = fingerprint(r#"{"url": "https://a.example/mcp"}"#);
        assert_ne!(
            fingerprint(r#"{"url": "https://a.example/mcp", "headers": {"X": "1"}}"#),
            http
        );
        // The written form is what counts, not the order it was written in.
        assert_eq!(
            fingerprint(r#"{"args": ["x.js"], "command": "node"}"#),
            base
        );
    }

    #[test]
    fn env_substitution() {
        // PATH is set wherever tests run.
        let path = std::env::var("PATH").unwrap_or_default();
        let mut vars = Vec::new();
        assert_eq!(
            substitute("a${env:PATH}b", "args[0]", &mut vars).ok(),
            Some(format!("a{path}b"))
        );
        assert_eq!(
            vars,
            vec![HostVar {
                name: "PATH".into(),
                field: "args[0]".into()
            }]
        );
        assert!(substitute("${env:ROOST_SURELY_UNSET_VAR_123}", "url", &mut vars).is_err());
        assert!(substitute("${env:PATH", "url", &mut vars).is_err());
    }

    #[test]
    fn a_clients_values_are_literal_and_its_trust_its_own() {
        let written: Written = serde_json::from_value(serde_json::json!({
            "type": "stdio", "command": "node", "args": ["${env:PATH}"],
            "env": {"TOKEN": "${env:PATH}"}
        }))
        .expect("written");
        let e = client_entry("fs", written).expect("an entry");
        // The editor's values are taken as given: no host variable leaks.
        match &e.transport {
            Transport::Stdio { args, env, .. } => {
                assert_eq!(args, &["${env:PATH}"]);
                assert_eq!(env["TOKEN"], "${env:PATH}");
            }
            Transport::Http { .. } => panic!("stdio expected"),
        }
        assert!(e.host_vars.is_empty());
        assert_eq!(e.source, Source::Client);
        assert_eq!(e.trust_name(), "client:fs");
        assert!(e.source.needs_trust() && !Source::Global.needs_trust());
        let bad: Written =
            serde_json::from_value(serde_json::json!({"url": "ftp://x"})).expect("written");
        assert!(client_entry("x", bad).is_err());
        let empty = Written {
            kind: None,
            command: Some("node".into()),
            ..serde_json::from_value(serde_json::json!({})).expect("written")
        };
        assert!(client_entry("", empty).is_err());
    }
}
