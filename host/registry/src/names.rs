//! Plugins by name, as a user of `wkg`, Spin or Cargo expects to install
//! them: `hello` or `hello:1.2` looked up in the registries the user
//! configured (`[plugins] registries`, each `REGISTRY[/PATH]`, tried in
//! order), and a WebAssembly package name `NAMESPACE:NAME[@VERSION]`
//! placed where `wkg`'s own config (`~/.config/wasm-pkg/config.toml`)
//! places it — the registry for the package or its namespace, or the
//! default, with the OCI namespace prefix from the config or the
//! registry's `/.well-known/wasm-pkg/registry.json`, as `wkg` does. A name
//! resolves to one pinned-by-tag [`Reference`]; every later step (the
//! manifest resolved once, layers by digest) is a registry install's.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;
use serde::Deserialize;

use crate::client::Client;
use crate::reference::{DEFAULT_TAG, Reference, SCHEME};
use crate::{RegistryError, shown};

/// `wkg`'s label: lowercase kebab-case words.
static LABEL: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^[a-z][a-z0-9]*(?:-[a-z][a-z0-9]*)*$").ok());

/// A plain name: repository path parts (as a reference's), no registry.
static PLAIN: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*)*(?::[A-Za-z0-9_][A-Za-z0-9._-]{0,127})?$").ok()
});

/// The largest registry metadata document read.
const MAX_METADATA: u64 = 64 * 1024;

/// The largest tag list read.
const MAX_TAGS: u64 = 4 * 1024 * 1024;

fn matches(re: &LazyLock<Option<Regex>>, text: &str) -> bool {
    re.as_ref().is_some_and(|r| r.is_match(text))
}

/// A plugin named without where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Name {
    /// `NAMESPACE:NAME[@VERSION]`, a WebAssembly package name placed
    /// through `wkg`'s config.
    Package {
        /// The namespace (`roost` in `roost:hello`).
        namespace: String,
        /// The package (`hello`).
        name: String,
        /// The version; the highest released one when absent.
        version: Option<String>,
    },
    /// `PATH[:TAG]`, looked up in each configured registry in turn.
    Plain {
        /// The repository path under a registry's prefix.
        path: String,
        /// The tag (`latest` when absent).
        tag: Option<String>,
    },
}

impl Name {
    /// `text` as a name, or `None` when it is not one (a path, a URL).
    pub fn parse(text: &str) -> Option<Self> {
        if text.contains("://") {
            return None;
        }
        if let Some((namespace, rest)) = text.split_once(':') {
            let (name, version) = match rest.split_once('@') {
                Some((n, v)) => (n, Some(v)),
                None => (rest, None),
            };
            if matches(&LABEL, namespace) && matches(&LABEL, name) {
                let version = match version {
                    Some(v) => Some(semver::Version::parse(v).ok()?.to_string()),
                    None => None,
                };
                return Some(Name::Package {
                    namespace: namespace.to_owned(),
                    name: name.to_owned(),
                    version,
                });
            }
        }
        if !matches(&PLAIN, text) {
            return None;
        }
        let (path, tag) = match text.split_once(':') {
            Some((p, t)) => (p, Some(t.to_owned())),
            None => (text, None),
        };
        Some(Name::Plain {
            path: path.to_owned(),
            tag,
        })
    }
}

impl std::fmt::Display for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Name::Package {
                namespace,
                name,
                version,
            } => {
                write!(f, "{namespace}:{name}")?;
                if let Some(v) = version {
                    write!(f, "@{v}")?;
                }
                Ok(())
            }
            Name::Plain { path, tag } => {
                write!(f, "{path}")?;
                if let Some(t) = tag {
                    write!(f, ":{t}")?;
                }
                Ok(())
            }
        }
    }
}

/// Where a registry keeps packages, as `wkg`'s config or the registry's
/// well-known metadata says.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
struct OciPlace {
    /// The OCI registry (when it differs from the registry's name).
    #[serde(default)]
    registry: Option<String>,
    /// Put before `NAMESPACE/NAME`.
    #[serde(default)]
    namespace_prefix: Option<String>,
}

/// A registry's metadata (`/.well-known/wasm-pkg/registry.json`, or a
/// mapping's `metadata` in `wkg`'s config): its OCI place, in the current
/// form (`oci = {…}`) or the older (`ociRegistry`, `ociNamespacePrefix`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Metadata {
    #[serde(default)]
    preferred_protocol: Option<String>,
    #[serde(default)]
    oci: Option<OciPlace>,
    #[serde(default)]
    oci_registry: Option<String>,
    #[serde(default)]
    oci_namespace_prefix: Option<String>,
    #[serde(default)]
    warg: Option<serde_json::Value>,
    #[serde(default)]
    warg_url: Option<String>,
}

impl Metadata {
    /// The OCI place, or why there is none (a registry that speaks only
    /// another protocol).
    fn oci(&self, registry: &str) -> Result<OciPlace, String> {
        if let Some(p) = &self.oci {
            return Ok(p.clone());
        }
        if self.oci_registry.is_some() || self.oci_namespace_prefix.is_some() {
            return Ok(OciPlace {
                registry: self.oci_registry.clone(),
                namespace_prefix: self.oci_namespace_prefix.clone(),
            });
        }
        let warg = self.warg.is_some() || self.warg_url.is_some();
        if warg
            || self
                .preferred_protocol
                .as_deref()
                .is_some_and(|p| p != "oci")
        {
            return Err(format!(
                "registry `{}` serves packages over another protocol than OCI (warg); Roost installs from OCI registries",
                shown(registry)
            ));
        }
        Ok(OciPlace::default())
    }
}

/// A mapping in `wkg`'s config: a registry name, or one with metadata.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Mapping {
    Registry(String),
    Custom {
        registry: String,
        metadata: Box<Metadata>,
    },
}

/// The parts of `wkg`'s config that place a package (its logins and
/// other backends are `wkg`'s own).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct WkgConfig {
    #[serde(default)]
    default_registry: Option<String>,
    #[serde(default)]
    namespace_registries: HashMap<String, Mapping>,
    #[serde(default)]
    package_registry_overrides: HashMap<String, Mapping>,
}

impl WkgConfig {
    /// Parse `wkg`'s `config.toml` (named `file` in errors).
    pub fn parse(text: &str, file: &str) -> Result<Self, RegistryError> {
        toml::from_str(text).map_err(|e| RegistryError::Reference {
            text: shown(file),
            detail: format!("wkg's config does not parse: {}", shown(&e.to_string())),
        })
    }

    /// The mapping for `namespace:name`: the package's own, its
    /// namespace's, or the default registry.
    fn mapping(&self, namespace: &str, name: &str) -> Option<Mapping> {
        self.package_registry_overrides
            .get(&format!("{namespace}:{name}"))
            .or_else(|| self.namespace_registries.get(namespace))
            .cloned()
            .or_else(|| self.default_registry.clone().map(Mapping::Registry))
    }
}

/// Turns names into references, with the user's registries and `wkg`'s
/// config.
#[derive(Debug, Clone, Default)]
pub struct Resolver {
    /// `REGISTRY[/PATH]` prefixes, tried in order for a plain name.
    pub registries: Vec<String>,
    /// `wkg`'s config, when the user has one.
    pub wkg: Option<WkgConfig>,
}

impl Resolver {
    /// The reference `name` stands for: for a plain name, the first
    /// configured registry that has it; for a package name, where `wkg`'s
    /// config places it, at its version or the highest released one.
    pub async fn resolve(&self, client: &Client, name: &Name) -> Result<Reference, RegistryError> {
        match name {
            Name::Plain { path, tag } => self.plain(client, name, path, tag.as_deref()).await,
            Name::Package {
                namespace,
                name: package,
                version,
            } => {
                let place = self.package_place(client, name, namespace, package).await?;
                let tag = match version {
                    Some(v) => v.clone(),
                    None => highest_version(client, &place, name).await?,
                };
                reference(&format!("{place}:{tag}"))
            }
        }
    }

    async fn plain(
        &self,
        client: &Client,
        name: &Name,
        path: &str,
        tag: Option<&str>,
    ) -> Result<Reference, RegistryError> {
        if self.registries.is_empty() {
            return Err(unresolved(
                name,
                "no registries are configured to look it up in (`[plugins] registries = [\"REGISTRY/PATH\"]`), or name it in full (`oci://REGISTRY/REPOSITORY:TAG`)",
            ));
        }
        let mut tried = Vec::new();
        for prefix in &self.registries {
            let prefix = prefix.trim_end_matches('/');
            let r = reference(&format!(
                "{SCHEME}{prefix}/{path}:{}",
                tag.unwrap_or(DEFAULT_TAG)
            ))?;
            match crate::artifact::resolve(client, &r).await {
                Ok(_) => return Ok(r),
                Err(e) if e.is_not_found() => tried.push(r.to_string()),
                Err(e) => return Err(e),
            }
        }
        Err(unresolved(
            name,
            &format!("no configured registry has it (tried {})", tried.join(", ")),
        ))
    }

    /// `oci://REGISTRY/PREFIX+NAMESPACE/NAME`, without a tag.
    async fn package_place(
        &self,
        client: &Client,
        name: &Name,
        namespace: &str,
        package: &str,
    ) -> Result<String, RegistryError> {
        let Some(mapping) = self
            .wkg
            .as_ref()
            .and_then(|w| w.mapping(namespace, package))
        else {
            return Err(unresolved(
                name,
                &format!(
                    "wkg's config places no registry for namespace `{namespace}` (`wkg config --default-registry REGISTRY`, or `[namespace_registries] {namespace} = \"REGISTRY\"` in ~/.config/wasm-pkg/config.toml)"
                ),
            ));
        };
        let (registry, metadata) = match mapping {
            Mapping::Custom { registry, metadata } => (registry, *metadata),
            Mapping::Registry(registry) => {
                let metadata = well_known(client, &registry).await?;
                (registry, metadata)
            }
        };
        let place = metadata
            .oci(&registry)
            .map_err(|detail| unresolved(name, &detail))?;
        Ok(format!(
            "{SCHEME}{}/{}{namespace}/{package}",
            place.registry.unwrap_or(registry),
            place.namespace_prefix.unwrap_or_default()
        ))
    }
}

/// The registry's well-known metadata; none (the registry itself, no
/// prefix) when it has none.
async fn well_known(client: &Client, registry: &str) -> Result<Metadata, RegistryError> {
    let url = client.registry_url(registry, ".well-known/wasm-pkg/registry.json")?;
    let what = format!("{registry}'s package metadata");
    match client.download(&url, MAX_METADATA, &what).await {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| RegistryError::Transport {
            url: url.to_string(),
            detail: format!("the registry's metadata is not what wkg reads: {e}"),
        }),
        Err(e) if e.is_not_found() => Ok(Metadata::default()),
        Err(e) => Err(e),
    }
}

/// The highest released (not pre-release) semantic version among the
/// tags at `place`.
async fn highest_version(
    client: &Client,
    place: &str,
    name: &Name,
) -> Result<String, RegistryError> {
    let r = reference(place)?;
    let tags = client.tags(&r, MAX_TAGS).await?;
    tags.iter()
        .filter_map(|t| semver::Version::parse(t).ok().map(|v| (v, t)))
        .filter(|(v, _)| v.pre.is_empty())
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, t)| t.clone())
        .ok_or_else(|| {
            unresolved(
                name,
                &format!("{place} has no released version (no tag is a semantic version)"),
            )
        })
}

fn reference(text: &str) -> Result<Reference, RegistryError> {
    Reference::parse(text)
}

fn unresolved(name: &Name, detail: &str) -> RegistryError {
    RegistryError::Reference {
        text: shown(&name.to_string()),
        detail: detail.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_packages_or_plain_and_paths_are_neither() {
        assert_eq!(
            Name::parse("roost:hello@1.2.0"),
            Some(Name::Package {
                namespace: "roost".into(),
                name: "hello".into(),
                version: Some("1.2.0".into())
            })
        );
        assert_eq!(
            Name::parse("acme/hello:2"),
            Some(Name::Plain {
                path: "acme/hello".into(),
                tag: Some("2".into())
            })
        );
        assert!(matches!(Name::parse("hello"), Some(Name::Plain { .. })));
        for not in [
            "./hello",
            "/tmp/hello",
            "hello.wasm/",
            "oci://r/x",
            "https://e/x.tar.gz",
            "Hello",
            "roost:hello@one",
            "a/../b",
            "",
        ] {
            assert_eq!(Name::parse(not), None, "{not}");
        }
    }

    #[test]
    fn wkg_config_places_packages_by_override_namespace_then_default() {
        let cfg = WkgConfig::parse(
            r#"
default_registry = "default.example"
[namespace_registries]
acme = "acme.example"
[namespace_registries.team]
registry = "team.example"
metadata = { oci = { registry = "oci.team.example", namespacePrefix = "wasm/" } }
[package_registry_overrides]
"acme:special" = "special.example"
[registry."acme.example".oci]
auth = { username = "u", password = "p" }
"#,
            "config.toml",
        )
        .expect("parses");
        let reg = |ns: &str, n: &str| match cfg.mapping(ns, n) {
            Some(Mapping::Registry(r)) => r,
            Some(Mapping::Custom { registry, metadata }) => {
                let p = metadata.oci(&registry).expect("oci");
                format!("{registry}>{:?}{:?}", p.registry, p.namespace_prefix)
            }
            None => String::new(),
        };
        assert_eq!(reg("acme", "hello"), "acme.example");
        assert_eq!(reg("acme", "special"), "special.example");
        assert_eq!(reg("other", "x"), "default.example");
        assert_eq!(
            reg("team", "x"),
            "team.example>Some(\"oci.team.example\")Some(\"wasm/\")"
        );
        assert!(WkgConfig::parse("default_registry = [", "c").is_err());
        let warg: Metadata =
            serde_json::from_str(r#"{"wargUrl":"https://w.example"}"#).expect("json");
        assert!(warg.oci("w.example").is_err());
        let old: Metadata =
            serde_json::from_str(r#"{"ociRegistry":"o.example","ociNamespacePrefix":"p/"}"#)
                .expect("json");
        assert_eq!(
            old.oci("x").expect("oci"),
            OciPlace {
                registry: Some("o.example".into()),
                namespace_prefix: Some("p/".into())
            }
        );
    }
}
