//! Which project MCP servers the user trusts, per workspace: a repository
//! must not launch processes by being opened, so a server a workspace's
//! `.roo/mcp.json` configures starts only once the user has trusted it
//! there (asked on a terminal, or `roost mcp trust`). Trust is given to an
//! entry as it stands — the whole entry as written (see
//! [`ServerEntry::fingerprint`]): changing any field of it needs trust
//! again. Before trusting, a person is shown all of it ([`disclosure`]),
//! the host environment variables it expands first.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::config::{DEFAULT_TIMEOUT, ServerEntry, Written};

/// The trust file's name in the data directory.
const FILE: &str = "mcp-trust.json";

/// Trusted entries by workspace and server name (their fingerprints).
type Trusted = BTreeMap<String, BTreeMap<String, String>>;

/// Why trust could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// The file system failed.
    #[error("cannot record MCP trust in {path}: {source}")]
    Io {
        /// The trust file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// The trust file of a data directory.
#[derive(Debug)]
pub struct TrustStore {
    path: PathBuf,
    lock: Mutex<()>,
}

fn key(workspace: &Path) -> String {
    workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf())
        .to_string_lossy()
        .into_owned()
}

impl TrustStore {
    /// The trust kept in `data_dir`.
    pub fn new(data_dir: &Path) -> Self {
        Self {
            path: data_dir.join(FILE),
            lock: Mutex::new(()),
        }
    }

    fn read(&self) -> Trusted {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                // A corrupted file trusts nothing; the user is asked again.
                tracing::warn!(
                    "{} is not valid, trusting no project MCP server: {e}",
                    self.path.display()
                );
                Trusted::new()
            }),
            Err(_) => Trusted::new(),
        }
    }

    /// Whether `entry` is trusted in `workspace` as it stands now.
    pub fn is_trusted(&self, workspace: &Path, entry: &ServerEntry) -> bool {
        self.read()
            .get(&key(workspace))
            .and_then(|m| m.get(&entry.trust_name()))
            .is_some_and(|f| *f == entry.fingerprint())
    }

    /// Trust `entries` in `workspace`.
    pub fn trust(&self, workspace: &Path, entries: &[&ServerEntry]) -> Result<(), TrustError> {
        let _held = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut all = self.read();
        let m = all.entry(key(workspace)).or_default();
        for e in entries {
            m.insert(e.trust_name(), e.fingerprint());
        }
        let io = |source| TrustError::Io {
            path: self.path.clone(),
            source,
        };
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(io)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
        let text = serde_json::to_vec_pretty(&all).unwrap_or_default();
        tmp.write_all(&text).map_err(io)?;
        tmp.persist(&self.path).map_err(|e| io(e.error))?;
        Ok(())
    }
}

/// What a person is shown before trusting `entry`, one line each: how it
/// is started or reached, the host environment variables it expands
/// (first: each hands the server a value from Roost's own environment),
/// then every other field that changes what runs or what it may do. Values
/// are shown as written — `${env:NAME}` stays so, a host value is never
/// shown. The lines are not yet made safe for a terminal.
pub fn disclosure(entry: &ServerEntry) -> Vec<String> {
    // Every field, by name: a field added to `Written` does not compile
    // here until it is shown.
    let Written {
        kind,
        command,
        args: _,
        cwd,
        env,
        url,
        headers,
        disabled,
        timeout,
        always_allow,
        disabled_tools,
        profile,
        allow_network,
        watch_paths,
    } = &entry.written;
    let mut out = Vec::new();
    // An editor's values are its own secrets (API keys, tokens): named,
    // never shown.
    let client = entry.source == super::config::Source::Client;
    let shown = |v: &str| {
        if client {
            format!(
                "(a value from the editor, {} characters)",
                v.chars().count()
            )
        } else {
            v.to_owned()
        }
    };
    let stdio = command.is_some();
    let kind = kind
        .as_deref()
        .map(|k| format!(" (type {k})"))
        .unwrap_or_default();
    if stdio {
        out.push(format!(
            "runs: {}{kind}",
            entry.summary().trim_start_matches("stdio: ")
        ));
    } else if let Some(url) = url {
        out.push(format!(
            "reaches: {url}{kind} (Roost connects to it from this machine, outside any sandbox)"
        ));
    }
    // One line per variable, naming every place it goes.
    let mut vars: Vec<(&str, Vec<&str>)> = Vec::new();
    for v in &entry.host_vars {
        match vars.iter_mut().find(|(n, _)| *n == v.name) {
            Some((_, fields)) => fields.push(&v.field),
            None => vars.push((&v.name, vec![&v.field])),
        }
    }
    for (name, fields) in vars {
        out.push(format!(
            "! passes your {name} to this server: expands the host variable ${{env:{name}}} into {}",
            fields.join(", ")
        ));
    }
    if stdio {
        out.push(match cwd {
            None => "in: the workspace".to_owned(),
            Some(c) if c.is_absolute() => format!("in: {} (outside the workspace)", c.display()),
            Some(c) => format!("in: {} (in the workspace)", c.display()),
        });
        if env.is_empty() {
            out.push("env: nothing of its own (a scrubbed environment)".to_owned());
        }
        for (k, v) in env {
            out.push(format!("env: {k}={}", shown(v)));
        }
    }
    for (k, v) in headers {
        out.push(format!("header: {k}: {}", shown(v)));
    }
    if stdio {
        out.push(match profile {
            None => "sandbox profile: read-only (the default)".to_owned(),
            Some(p) => format!("sandbox profile: {p}"),
        });
        out.push(if allow_network.is_empty() {
            "network: no origins of its own (only what its profile allows)".to_owned()
        } else {
            format!("network: {}", allow_network.join(", "))
        });
        let home = std::env::var_os("HOME").map(PathBuf::from);
        if let Some(r) = super::runner::for_entry(entry, |k| std::env::var(k).ok(), home.as_deref())
        {
            let registry: Vec<String> = r.registry.iter().map(ToString::to_string).collect();
            out.push(format!(
                "package runner `{}`: also reaches {} while it starts (to fetch the package), \
                 and writes a cache of its own in Roost's data dir",
                r.runner,
                registry.join(", ")
            ));
        }
    } else {
        if let Some(p) = profile {
            out.push(format!(
                "sandbox profile: {p} (not used: an HTTP server is not started by Roost)"
            ));
        }
        if !allow_network.is_empty() {
            out.push(format!(
                "network: {} (not used: an HTTP server is not started by Roost)",
                allow_network.join(", ")
            ));
        }
    }
    out.push(if always_allow.is_empty() {
        "calls without asking: none (each call is asked or left to the approval policy)".to_owned()
    } else if always_allow.iter().any(|a| a == "*") {
        "! calls without asking: EVERY tool it offers (alwaysAllow: *)".to_owned()
    } else {
        format!("! calls without asking: {}", always_allow.join(", "))
    });
    out.push(match timeout {
        None => format!("timeout: {} s (the default)", DEFAULT_TIMEOUT.as_secs()),
        Some(t) => format!("timeout: {t} s"),
    });
    if !disabled_tools.is_empty() {
        out.push(format!("tools not offered: {}", disabled_tools.join(", ")));
    }
    if *disabled {
        out.push("disabled: not started while it stays so".to_owned());
    }
    if !watch_paths.is_empty() {
        out.push(format!(
            "watchPaths (ignored by Roost): {}",
            watch_paths.join(", ")
        ));
    }
    out
}
