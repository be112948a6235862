//! `plugin.toml`: what a third-party plugin says it is and what it asks
//! for. The manifest only *requests*; what a plugin may do is the grant the
//! user approved at install, recorded in the store. Unknown fields, bad
//! values and a component whose hash differs are errors naming the field.

use std::collections::BTreeSet;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use roost_sandbox::capability::{Limits, Origin};

/// World a tool plugin implements.
pub const TOOL_WORLD: &str = "tool-plugin";
/// WIT package versions of `roost:plugin` this host loads.
pub const SUPPORTED_WIT: &[&str] = &roost_sandbox::plugins::WIT_VERSIONS;

/// The manifest file.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Who the plugin is.
    pub plugin: About,
    /// What it asks to be allowed.
    #[serde(default)]
    pub capabilities: Capabilities,
}

/// The `[plugin]` table.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct About {
    /// Unique name: lowercase letters, digits, `-` and `_`.
    pub name: String,
    /// Version (semver).
    pub version: String,
    /// One line about it.
    #[serde(default)]
    pub description: String,
    /// Its authors.
    #[serde(default)]
    pub authors: Vec<String>,
    /// The WIT world it implements (`tool-plugin`).
    pub world: String,
    /// The `roost:plugin` WIT version it was built against.
    pub wit_version: String,
    /// The component file, relative to the manifest's folder (inside it).
    pub component: String,
    /// SHA-256 of the component file, lowercase hex. Optional while
    /// developing (the installed hash is recorded either way); when given,
    /// the file must match it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sha256: String,
    /// The names of the tools the component provides. Declared so that
    /// `install` can check them against the built-in tools and the
    /// installed plugins' before compiling the component (a minute for a
    /// Python or JavaScript one); when given, the component must provide
    /// exactly these. Optional: without it the names are checked after the
    /// compile.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
}

/// What the plugin may read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReadAccess {
    /// The workspace, read-only.
    #[default]
    Workspace,
    /// Nothing.
    None,
}

/// The `[capabilities]` table: requests, each at most what the host allows.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Capabilities {
    /// Workspace (default) or nothing.
    #[serde(default)]
    pub read: ReadAccess,
    /// Whether its tools may write at all; the roots always come from the
    /// active intent's scope.
    #[serde(default)]
    pub write: bool,
    /// `host[:port]` entries it may call (HTTPS unless `http://` is given).
    #[serde(default)]
    pub network: Vec<String>,
    /// Names of secrets it may use in outgoing requests.
    #[serde(default)]
    pub secrets: Vec<String>,
    /// Per-call limits; missing ones are the host's.
    #[serde(default)]
    pub limits: LimitRequest,
}

/// The `[capabilities.limits]` table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LimitRequest {
    /// Wall-clock deadline per call, milliseconds.
    pub deadline_ms: Option<u64>,
    /// Linear memory, MiB.
    pub memory_mb: Option<u64>,
    /// Output, KiB.
    pub output_kb: Option<u64>,
}

/// A manifest that cannot be used; names the field.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("plugin.toml: {field}: {detail}")]
pub struct ManifestError {
    /// The field, as a TOML path (`plugin.name`, `capabilities.network[0]`).
    pub field: String,
    /// What is wrong with it.
    pub detail: String,
}

fn bad(field: impl Into<String>, detail: impl Into<String>) -> ManifestError {
    ManifestError {
        field: field.into(),
        detail: detail.into(),
    }
}

impl Manifest {
    /// Parse and check a manifest against the host's `ceiling` limits.
    pub fn parse(text: &str, ceiling: &Limits) -> Result<Self, ManifestError> {
        let m: Manifest = toml::from_str(text).map_err(|e| {
            let detail = e.message().to_owned();
            bad(field_of(&e, text), detail)
        })?;
        m.check(ceiling)?;
        Ok(m)
    }

    /// Check every field (names, versions, hosts, secrets, limits).
    pub fn check(&self, ceiling: &Limits) -> Result<(), ManifestError> {
        check_name(&self.plugin.name).map_err(|d| bad("plugin.name", d))?;
        if semver_core(&self.plugin.version).is_none() {
            return Err(bad(
                "plugin.version",
                format!("`{}` is not a version like 1.2.3", self.plugin.version),
            ));
        }
        if self.plugin.world != TOOL_WORLD {
            return Err(bad(
                "plugin.world",
                format!(
                    "`{}` is not a world Roost loads plugins of (`{TOOL_WORLD}`)",
                    self.plugin.world
                ),
            ));
        }
        if !SUPPORTED_WIT.contains(&self.plugin.wit_version.as_str()) {
            return Err(bad(
                "plugin.wit_version",
                format!(
                    "roost:plugin@{} is not supported (this Roost loads {})",
                    self.plugin.wit_version,
                    SUPPORTED_WIT.join(", ")
                ),
            ));
        }
        let c = &self.plugin.component;
        if c.is_empty()
            || c.starts_with('/')
            || c.contains('\\')
            || c.split('/')
                .any(|part| part.is_empty() || part == ".." || part == ".")
            || !c.ends_with(".wasm")
        {
            return Err(bad(
                "plugin.component",
                format!("`{c}` must be a .wasm file inside the plugin's folder"),
            ));
        }
        let h = &self.plugin.sha256;
        if !h.is_empty() && h.len() != 64
            || !h
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err(bad("plugin.sha256", "must be 64 lowercase hex digits"));
        }
        let mut declared = BTreeSet::new();
        for (i, t) in self.plugin.tools.iter().enumerate() {
            if !valid_tool_name(t) {
                return Err(bad(
                    format!("plugin.tools[{i}]"),
                    format!("`{t}` is not a tool name (1-64 of A-Z, a-z, 0-9, _ and -)"),
                ));
            }
            if !declared.insert(t) {
                return Err(bad(
                    format!("plugin.tools[{i}]"),
                    format!("`{t}` is listed twice"),
                ));
            }
        }
        if self.plugin.tools.len() > MAX_TOOLS {
            return Err(bad(
                "plugin.tools",
                format!(
                    "lists {} tools; at most {MAX_TOOLS} are accepted",
                    self.plugin.tools.len()
                ),
            ));
        }
        let mut seen = BTreeSet::new();
        for (i, entry) in self.capabilities.network.iter().enumerate() {
            let host = NetworkRule::parse(entry)
                .map_err(|e| bad(format!("capabilities.network[{i}]"), e.to_string()))?;
            if !seen.insert(host) {
                return Err(bad(
                    format!("capabilities.network[{i}]"),
                    format!("`{entry}` is listed twice"),
                ));
            }
        }
        let mut names = BTreeSet::new();
        for (i, s) in self.capabilities.secrets.iter().enumerate() {
            let ok = !s.is_empty()
                && s.len() <= 64
                && s.bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
                && !s.starts_with(|c: char| c.is_ascii_digit());
            if !ok {
                return Err(bad(
                    format!("capabilities.secrets[{i}]"),
                    format!("`{s}` is not a secret name like GITHUB_TOKEN"),
                ));
            }
            if !names.insert(s) {
                return Err(bad(
                    format!("capabilities.secrets[{i}]"),
                    format!("`{s}` is listed twice"),
                ));
            }
        }
        self.capabilities.limits.resolve(ceiling)?;
        Ok(())
    }
}

impl LimitRequest {
    /// The limits a call of the plugin runs with: each requested one, which
    /// must be positive and at most the host's, else the host's.
    pub fn resolve(&self, ceiling: &Limits) -> Result<Limits, ManifestError> {
        let mut out = *ceiling;
        let over = |field: &str, asked: u64, max: u64, unit: &str| {
            bad(
                format!("capabilities.limits.{field}"),
                format!("{asked} {unit} is above what this host allows ({max} {unit})"),
            )
        };
        if let Some(ms) = self.deadline_ms {
            let max = u64::try_from(ceiling.deadline.as_millis()).unwrap_or(u64::MAX);
            if ms == 0 {
                return Err(bad("capabilities.limits.deadline_ms", "must be above 0"));
            }
            if ms > max {
                return Err(over("deadline_ms", ms, max, "ms"));
            }
            out.deadline = Duration::from_millis(ms);
        }
        if let Some(mb) = self.memory_mb {
            let max = ceiling.memory_bytes >> 20;
            if mb == 0 {
                return Err(bad("capabilities.limits.memory_mb", "must be above 0"));
            }
            if mb > max {
                return Err(over("memory_mb", mb, max, "MiB"));
            }
            out.memory_bytes = mb << 20;
        }
        if let Some(kb) = self.output_kb {
            let max = u64::try_from(ceiling.output_bytes >> 10).unwrap_or(u64::MAX);
            if kb == 0 {
                return Err(bad("capabilities.limits.output_kb", "must be above 0"));
            }
            if kb > max {
                return Err(over("output_kb", kb, max, "KiB"));
            }
            out.output_bytes = usize::try_from(kb << 10).unwrap_or(ceiling.output_bytes);
        }
        Ok(out)
    }
}

/// One allowed destination: scheme, host and port (the sandbox's
/// [`Origin`]: HTTPS unless `http://` is given, which only loopback hosts
/// may use; no wildcards, no paths).
pub type NetworkRule = Origin;

/// `1.2.3` (with an optional `-pre` / `+build`), as three numbers.
pub fn semver_core(v: &str) -> Option<(u64, u64, u64)> {
    let core = v.split(['-', '+']).next()?;
    let mut parts = core.split('.').map(|p| p.parse::<u64>().ok());
    let out = (parts.next()??, parts.next()??, parts.next()??);
    parts.next().is_none().then_some(out)
}

/// The most tools one plugin may provide (the sandbox's limit).
const MAX_TOOLS: usize = 128;

/// A tool name as the sandbox accepts one from a component: 1–64 of
/// `A-Z a-z 0-9 _ -` (the names models' APIs accept).
pub fn valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A plugin name: 1–64 of `a-z 0-9 - _`, starting with a letter.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{name}` is not a plugin name (a-z, 0-9, - and _, starting with a letter, at most 64)"
        ))
    }
}

/// The dotted path of the field a TOML error is about: the key serde
/// names (unknown or missing field) or the key on the error's line, under
/// the table whose header comes last before it.
fn field_of(e: &toml::de::Error, text: &str) -> String {
    let msg = e.message();
    let named = ["unknown field `", "missing field `"]
        .iter()
        .find_map(|marker| {
            msg.split(marker)
                .nth(1)
                .and_then(|rest| rest.split('`').next())
                .map(str::to_owned)
        });
    let start = e.span().map_or(0, |s| s.start);
    let before = text.get(..start).unwrap_or("");
    let line_no = before.matches('\n').count();
    let this_line = text.lines().nth(line_no).unwrap_or("").trim();
    let header = |l: &str| {
        l.strip_prefix('[')
            .and_then(|l| l.strip_suffix(']'))
            .map(|h| h.trim().to_owned())
    };
    // The table the error is in: this line when it is a header (a missing
    // field is reported at its table), else the last header above it.
    let table = header(this_line).or_else(|| {
        text.lines()
            .take(line_no)
            .filter_map(|l| header(l.trim()))
            .last()
    });
    let key = named.or_else(|| {
        this_line
            .split('=')
            .next()
            .map(str::trim)
            .filter(|k| !k.is_empty() && !k.starts_with('['))
            .map(str::to_owned)
    });
    match (table, key) {
        (Some(t), Some(k)) => format!("{t}.{k}"),
        (None, Some(k)) => k,
        (Some(t), None) => t,
        (None, None) => "(file)".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[plugin]
name = "weather"
version = "1.2.0"
description = "Forecasts"
authors = ["Ada"]
world = "tool-plugin"
wit_version = "0.1.0"
component = "weather.wasm"
sha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

[capabilities]
read = "none"
write = false
network = ["api.weather.example", "http://127.0.0.1:8080"]
secrets = ["WEATHER_KEY"]

[capabilities.limits]
deadline_ms = 5000
"#;

    #[test]
    fn a_good_manifest_parses() {
        let m = Manifest::parse(GOOD, &Limits::default()).expect("parses");
        assert_eq!(m.plugin.name, "weather");
        assert_eq!(m.capabilities.read, ReadAccess::None);
        let limits = m
            .capabilities
            .limits
            .resolve(&Limits::default())
            .expect("limits");
        assert_eq!(limits.deadline, Duration::from_secs(5));
        assert_eq!(
            NetworkRule::parse("api.weather.example")
                .expect("rule")
                .to_string(),
            "https://api.weather.example:443"
        );
    }

    #[test]
    fn every_bad_field_is_named() {
        let cases: &[(&str, &str, &str)] = &[
            ("name = \"weather\"", "name = \"Weather!\"", "plugin.name"),
            ("version = \"1.2.0\"", "version = \"one\"", "plugin.version"),
            (
                "world = \"tool-plugin\"",
                "world = \"mode-hook\"",
                "plugin.world",
            ),
            (
                "wit_version = \"0.1.0\"",
                "wit_version = \"9.0.0\"",
                "plugin.wit_version",
            ),
            (
                "component = \"weather.wasm\"",
                "component = \"../x.wasm\"",
                "plugin.component",
            ),
            ("sha256 = \"0123", "sha256 = \"XY23", "plugin.sha256"),
            (
                "\"api.weather.example\"",
                "\"http://api.weather.example\"",
                "capabilities.network[0]",
            ),
            (
                "\"api.weather.example\"",
                "\"ftp://x\"",
                "capabilities.network[0]",
            ),
            (
                "\"WEATHER_KEY\"",
                "\"weather key\"",
                "capabilities.secrets[0]",
            ),
            (
                "deadline_ms = 5000",
                "deadline_ms = 999999999",
                "capabilities.limits.deadline_ms",
            ),
            (
                "deadline_ms = 5000",
                "deadline_ms = 0",
                "capabilities.limits.deadline_ms",
            ),
            (
                "write = false",
                "write = false\nshell = true",
                "capabilities.shell",
            ),
            ("write = false", "write = \"yes\"", "capabilities.write"),
            ("description = \"Forecasts\"\n", "", "(none: still fine)"),
            (
                "component = \"weather.wasm\"",
                "component = \"weather.wasm\"\ntools = [\"forecast\", \"fore cast\"]",
                "plugin.tools[1]",
            ),
            (
                "component = \"weather.wasm\"",
                "component = \"weather.wasm\"\ntools = [\"forecast\", \"forecast\"]",
                "plugin.tools[1]",
            ),
            (
                "component = \"weather.wasm\"",
                "component = \"weather.wasm\"\ntools = [\"forecast\", \"weather_alerts\"]",
                "(none: declared tools are fine)",
            ),
        ];
        for (from, to, field) in cases {
            let text = GOOD.replacen(from, to, 1);
            assert_ne!(text, GOOD, "case {from} did not apply");
            match Manifest::parse(&text, &Limits::default()) {
                Ok(_) => assert!(field.starts_with("(none"), "{to} was accepted"),
                Err(e) => {
                    assert_eq!(&e.field, field, "{to}: {e}");
                    assert!(e.to_string().contains(field), "{e}");
                }
            }
        }
        // A missing required field is named with its table.
        let missing = GOOD.replacen("version = ", "# version = ", 1);
        let e = Manifest::parse(&missing, &Limits::default()).expect_err("missing");
        assert_eq!(e.field, "plugin.version");
        // The hash is optional while developing; when given it must be hex.
        let unhashed = GOOD.replacen("sha256 = ", "# sha256 = ", 1);
        assert!(Manifest::parse(&unhashed, &Limits::default()).is_ok());
    }
}
