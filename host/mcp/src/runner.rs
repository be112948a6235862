//! Stdio servers started by a package runner — `npx`, `bunx`, `uvx`,
//! `pipx run` (and `npm exec`, `pnpm dlx`, `yarn dlx`, `bun x`,
//! `uv tool run`) — which is how MCP servers are usually configured: the
//! runner fetches the package from its registry into its cache, then runs
//! it.
//!
//! In the command sandbox (read-only file system, no network) that cannot
//! work as such: the runner can write no cache and reach no registry. So a
//! server whose entry starts a package runner gets, and gets only:
//!
//! - **a cache of its own**: a directory in Roost's data dir, one per
//!   server (its source, workspace and name), mounted writable as its
//!   `HOME` (and `XDG_CACHE_HOME`, `npm_config_cache`). Never the
//!   workspace, never the user's real `~/.npm` or `~/.cache`: what one
//!   server's package writes there cannot reach another server, a command
//!   or the user's own tools, and a project's server cannot plant a
//!   package in a global server's cache.
//! - **the registry's origin, while it starts**: the runner's registry
//!   (`https://registry.npmjs.org`, or the one `npm_config_registry` /
//!   `registry=` in `~/.npmrc` names; PyPI's two origins, or the index
//!   `UV_DEFAULT_INDEX`/`UV_INDEX_URL`/`PIP_INDEX_URL` names) is added to
//!   its proxy's allowed origins until the server has answered
//!   `initialize` and listed its tools. Then the proxy narrows to what the
//!   entry itself was granted (its profile's origins and `allowNetwork`)
//!   and closes every tunnel opened under the wider grant: the server's
//!   own code, once running, reaches no registry.
//!
//! Why this rather than an install step run before the server: the
//! fetch and the first run are one command of the runner's own (`npx -y`
//! resolves, fetches, links and runs), each runner spells a "fetch only"
//! differently or not at all, and the package's install scripts run at
//! fetch time anyway — in the same sandbox, with the same single origin.
//! What the fetch may reach is exactly the registry the runner would use
//! outside Roost, and nothing it writes lands outside its own cache. The
//! cost: the package's code starts before the narrowing, so until its
//! `initialize` answer it could reach the registry's origin (never any
//! other); a registry URL with credentials in it is not passed on (the
//! runner then uses its default registry, and a refusal says so).

use std::path::{Path, PathBuf};

use roost_sandbox::capability::Origin;

use super::config::ServerEntry;

/// The directory under the data dir that holds every runner's cache.
pub const CACHE_DIR: &str = "mcp-cache";

/// Where a server's cache is seen inside its sandbox (its own `/tmp` is
/// private, so the mount point is made there).
pub const INSIDE: &str = "/tmp/roost-mcp-cache";

/// The package ecosystems runners fetch from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ecosystem {
    /// npm's registry (npx, bunx, npm exec, pnpm dlx, yarn dlx, bun x).
    Npm,
    /// The Python Package Index (uvx, uv tool run, pipx run).
    PyPi,
}

/// The known runners: the program's file name, the words that must
/// follow it, and where it fetches from.
const RUNNERS: &[(&str, &[&str], Ecosystem)] = &[
    ("npx", &[], Ecosystem::Npm),
    ("bunx", &[], Ecosystem::Npm),
    ("pnpx", &[], Ecosystem::Npm),
    ("npm", &["exec"], Ecosystem::Npm),
    ("npm", &["x"], Ecosystem::Npm),
    ("pnpm", &["dlx"], Ecosystem::Npm),
    ("yarn", &["dlx"], Ecosystem::Npm),
    ("bun", &["x"], Ecosystem::Npm),
    ("uvx", &[], Ecosystem::PyPi),
    ("uv", &["tool", "run"], Ecosystem::PyPi),
    ("pipx", &["run"], Ecosystem::PyPi),
];

/// npm's registry when nothing names another.
const NPM_REGISTRY: &str = "https://registry.npmjs.org/";
/// PyPI's index and the origin its files are served from.
const PYPI: &[&str] = &["https://pypi.org", "https://files.pythonhosted.org"];
/// Host variables that name an npm registry, most specific first.
const NPM_VARS: &[&str] = &["npm_config_registry", "NPM_CONFIG_REGISTRY"];
/// Host variables that name a Python index, most specific first.
const PYPI_VARS: &[&str] = &[
    "UV_DEFAULT_INDEX",
    "UV_INDEX_URL",
    "PIP_INDEX_URL",
    "PIPX_DEFAULT_INDEX_URL",
];

/// A package runner a stdio entry starts, and what it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageRunner {
    /// The runner as written (`npx`, `uv tool run`).
    pub runner: String,
    /// Where it fetches from.
    pub ecosystem: Ecosystem,
    /// The registry's origins, reachable while the server starts.
    pub registry: Vec<Origin>,
    /// Variables that tell the runner its registry inside the sandbox
    /// (its home there has no `.npmrc`).
    pub env: Vec<(String, String)>,
}

/// The runner `command args` starts, if it is one.
pub fn detect(command: &str, args: &[String]) -> Option<(String, Ecosystem)> {
    let program = Path::new(command).file_name()?.to_str()?;
    RUNNERS
        .iter()
        .find(|(p, words, _)| {
            *p == program
                && words.len() <= args.len()
                && words.iter().zip(args).all(|(w, a)| w == a)
        })
        .map(|(p, words, eco)| {
            let mut runner = (*p).to_owned();
            for w in *words {
                runner.push(' ');
                runner.push_str(w);
            }
            (runner, *eco)
        })
}

/// The runner `entry` starts, with the registry it would use here:
/// `var` reads the host's environment, `home` is the user's home (for
/// `~/.npmrc`).
pub fn for_entry(
    entry: &ServerEntry,
    var: impl Fn(&str) -> Option<String>,
    home: Option<&Path>,
) -> Option<PackageRunner> {
    let super::config::Transport::Stdio { command, args, .. } = &entry.transport else {
        return None;
    };
    let (runner, ecosystem) = detect(command, args)?;
    let (registry, env) = match ecosystem {
        Ecosystem::Npm => {
            let named = NPM_VARS
                .iter()
                .find_map(|v| var(v))
                .or_else(|| home.and_then(npmrc_registry));
            let url = named
                .filter(|u| origin_of(u).is_some())
                .unwrap_or_else(|| NPM_REGISTRY.to_owned());
            let origins = origin_of(&url).into_iter().collect();
            let env = vec![
                ("npm_config_registry".to_owned(), url.clone()),
                ("BUN_CONFIG_REGISTRY".to_owned(), url),
            ];
            (origins, env)
        }
        Ecosystem::PyPi => {
            let named = PYPI_VARS
                .iter()
                .find_map(|v| var(v).map(|u| (*v, u)))
                .filter(|(_, u)| origin_of(u).is_some());
            match named {
                Some((name, url)) => (
                    origin_of(&url).into_iter().collect(),
                    vec![(name.to_owned(), url)],
                ),
                None => (
                    PYPI.iter().filter_map(|u| Origin::parse(u).ok()).collect(),
                    Vec::new(),
                ),
            }
        }
    };
    Some(PackageRunner {
        runner,
        ecosystem,
        registry,
        env,
    })
}

/// The origin of a registry URL: `https` (or `http` on loopback) with no
/// user information — a URL that carries credentials is not used.
fn origin_of(url: &str) -> Option<Origin> {
    let u = url::Url::parse(url).ok()?;
    if !u.username().is_empty() || u.password().is_some() {
        return None;
    }
    let host = u.host_str()?;
    let port = u.port().map(|p| format!(":{p}")).unwrap_or_default();
    Origin::parse(&format!("{}://{host}{port}", u.scheme())).ok()
}

/// `registry=` in the user's `~/.npmrc` (the default registry; scoped
/// ones are not followed).
fn npmrc_registry(home: &Path) -> Option<String> {
    let text = std::fs::read_to_string(home.join(".npmrc")).ok()?;
    text.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (k.trim() == "registry").then(|| v.trim().trim_matches('"').to_owned())
    })
}

/// The cache directory of the server `entry` configures in `workspace`,
/// under `data_dir`: one per source, workspace and name (a project's
/// server never shares a global one's).
pub fn cache_dir(data_dir: &Path, workspace: &Path, entry: &ServerEntry) -> PathBuf {
    let source = entry.source.as_str();
    let mut h = blake3::Hasher::new();
    h.update(source.as_bytes());
    h.update(b"\0");
    h.update(workspace.as_os_str().as_encoded_bytes());
    h.update(b"\0");
    h.update(entry.name.as_bytes());
    let hex = h.finalize().to_hex();
    data_dir.join(CACHE_DIR).join(&hex.as_str()[..24])
}

/// Make `dir` (and its parents), readable by its owner only.
pub fn make_cache(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// The variables that point the runner at its cache, seen at `home`.
pub fn cache_env(home: &Path) -> Vec<(String, String)> {
    let at = |rel: &str| home.join(rel).to_string_lossy().into_owned();
    vec![
        ("HOME".to_owned(), home.to_string_lossy().into_owned()),
        ("XDG_CACHE_HOME".to_owned(), at(".cache")),
        ("npm_config_cache".to_owned(), at(".npm")),
        // Nothing asks the registry for news of npm itself.
        ("npm_config_update_notifier".to_owned(), "false".to_owned()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Source;

    fn entry(command: &str, args: &[&str]) -> ServerEntry {
        let mut out = super::super::config::McpConfig::default();
        let json = serde_json::json!({"mcpServers": {"s": {"command": command, "args": args}}});
        super::super::config::parse(
            Path::new("/cfg/mcp_settings.json"),
            &json.to_string(),
            Source::Global,
            &mut out,
        );
        out.servers.remove("s").expect("the entry")
    }

    #[test]
    fn runners_are_known_by_program_and_words() {
        let d = |c: &str, a: &[&str]| {
            detect(c, &a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>()).map(|(r, _)| r)
        };
        assert_eq!(d("npx", &["-y", "pkg"]).as_deref(), Some("npx"));
        assert_eq!(d("/usr/bin/npx", &["pkg"]).as_deref(), Some("npx"));
        assert_eq!(
            d("uv", &["tool", "run", "x"]).as_deref(),
            Some("uv tool run")
        );
        assert_eq!(d("pipx", &["run", "x"]).as_deref(), Some("pipx run"));
        assert_eq!(d("pipx", &["install", "x"]), None);
        assert_eq!(d("npm", &["start"]), None);
        assert_eq!(d("node", &["server.js"]), None);
    }

    #[test]
    fn the_registry_is_the_one_the_runner_would_use() {
        let none = |_: &str| None;
        let npx = for_entry(&entry("npx", &["-y", "p"]), none, None).expect("runner");
        assert_eq!(npx.registry.len(), 1);
        assert_eq!(
            npx.registry[0].to_string(),
            "https://registry.npmjs.org:443"
        );
        let mirror = |v: &str| {
            (v == "npm_config_registry").then(|| "https://npm.corp.example/api/npm/".to_owned())
        };
        let m = for_entry(&entry("npx", &["p"]), mirror, None).expect("runner");
        assert_eq!(m.registry[0].to_string(), "https://npm.corp.example:443");
        assert!(m.env.contains(&(
            "npm_config_registry".to_owned(),
            "https://npm.corp.example/api/npm/".to_owned()
        )));
        // Credentials in the URL: not passed on.
        let secret = |v: &str| {
            (v == "npm_config_registry").then(|| "https://u:tok@npm.corp.example/".to_owned())
        };
        let s = for_entry(&entry("npx", &["p"]), secret, None).expect("runner");
        assert_eq!(s.registry[0].to_string(), "https://registry.npmjs.org:443");
        assert!(!s.env.iter().any(|(_, v)| v.contains("tok")));
        let uvx = for_entry(&entry("uvx", &["mcp-server-time"]), none, None).expect("runner");
        assert_eq!(uvx.registry.len(), 2);
        assert!(for_entry(&entry("node", &["x.js"]), none, None).is_none());
    }

    /// Trusting a project's runner shows what it is granted besides its
    /// entry.
    #[test]
    fn trust_shows_the_registry_grant() {
        let shown = super::super::trust::disclosure(&entry("npx", &["-y", "p"]));
        assert!(
            shown.iter().any(
                |l| l.starts_with("package runner `npx`: also reaches https://")
                    && l.contains("while it starts")
            ),
            "{shown:?}"
        );
        let plain = super::super::trust::disclosure(&entry("node", &["x.js"]));
        assert!(
            !plain.iter().any(|l| l.contains("package runner")),
            "{plain:?}"
        );
    }

    #[test]
    fn each_server_has_its_own_cache() {
        let data = Path::new("/data");
        let e = entry("npx", &["p"]);
        let a = cache_dir(data, Path::new("/ws/a"), &e);
        assert!(a.starts_with("/data/mcp-cache"));
        assert_ne!(a, cache_dir(data, Path::new("/ws/b"), &e));
        let mut project = e.clone();
        project.source = Source::Project;
        assert_ne!(a, cache_dir(data, Path::new("/ws/a"), &project));
        let mut other = e;
        other.name = "t".into();
        assert_ne!(a, cache_dir(data, Path::new("/ws/a"), &other));
    }
}
