//! Where a plugin is installed from: a path on this machine (a folder, a
//! `plugin.toml`, a `.tar.gz` or a `.wasm`), a registry reference
//! (`oci://REGISTRY/REPOSITORY:TAG` or `@sha256:…`), a `.tar.gz` on the
//! web pinned by the SHA-256 the user gave (`https://…` with `--sha256`),
//! or a name the configured registries resolve (`hello:1.2`,
//! `roost:hello@1.2.0`). All end as the same [`Fetched`] parts, which every
//! install check then reads alike.

use std::path::{Path, PathBuf};

use reqwest::Url;
use roost_registry::{Client, Name, Options, Reference, artifact, shown};

use super::InstallError;

/// A plugin's source, as the user named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A path on this machine.
    Local(PathBuf),
    /// A registry reference.
    Registry(Reference),
    /// A `.tar.gz` at a URL, to be taken only if it hashes to `sha256`.
    Archive {
        /// Where it is.
        url: Url,
        /// Its SHA-256, as the user gave it (64 lowercase hex digits).
        sha256: String,
    },
    /// A name the configured registries resolve to a reference.
    Name(Name),
}

impl Source {
    /// `text` as a source: a registry reference when it starts with
    /// `oci://`; a path when it exists, looks like one (`./`, `/`, `~`, a
    /// plugin file's extension) or is no name; else a name. A web URL
    /// needs its SHA-256: see [`Source::named`].
    pub fn parse(text: &str) -> Result<Self, InstallError> {
        Self::named(text, None)
    }

    /// `text` as [`Source::parse`] reads it, with the `--sha256` the user
    /// gave: required for an `https://` archive, refused for anything
    /// else (a registry pins by digest, a path is read as it is).
    pub fn named(text: &str, sha256: Option<&str>) -> Result<Self, InstallError> {
        let source = Self::read(text, sha256)?;
        if sha256.is_some() && !matches!(source, Source::Archive { .. }) {
            return Err(InstallError::Source(format!(
                "`--sha256` pins an archive from the web (`https://…/plugin.tar.gz`); `{}` is not one (a registry reference pins with `@sha256:…`)",
                shown(text)
            )));
        }
        Ok(source)
    }

    fn read(text: &str, sha256: Option<&str>) -> Result<Self, InstallError> {
        if Reference::is_reference(text) {
            return Reference::parse(text)
                .map(Source::Registry)
                .map_err(|e| InstallError::Source(e.to_string()));
        }
        if text.starts_with("https://") || text.starts_with("http://") {
            return archive(text, sha256);
        }
        if text.contains("://") {
            return Err(InstallError::Source(format!(
                "`{}`: a plugin comes from a path, an `oci://` registry reference, an `https://` archive or a name",
                shown(text)
            )));
        }
        let path = Path::new(text);
        let looks_like_path = text.starts_with(['.', '/', '~'])
            || [".wasm", ".toml", ".tar.gz", ".tgz"]
                .iter()
                .any(|e| text.ends_with(e))
            || path.exists();
        match Name::parse(text) {
            Some(name) if !looks_like_path => Ok(Source::Name(name)),
            _ => Ok(Source::Local(path.to_path_buf())),
        }
    }

    /// As recorded with the installed plugin: the absolute path, the
    /// reference as named (a tag stays a tag, so `outdated` can follow
    /// it), or the archive's URL. A name is recorded as the reference it
    /// resolved to, so it is never recorded itself.
    pub fn recorded(&self) -> String {
        match self {
            Source::Local(p) => std::path::absolute(p)
                .unwrap_or_else(|_| p.clone())
                .display()
                .to_string(),
            Source::Registry(r) => r.to_string(),
            Source::Archive { url, .. } => url.to_string(),
            Source::Name(n) => n.to_string(),
        }
    }

    /// Whether an upgrade from `self` keeps to the source `recorded` (what
    /// the installed plugin came from): the same registry repository, an
    /// archive from the same origin (scheme, host and port), or a path for
    /// a plugin installed from a path. Another registry, repository or
    /// site, or a switch between kinds, is another source, which an
    /// upgrade takes only when asked to. (A name is resolved first.)
    pub fn same_origin_as(&self, recorded: &str) -> bool {
        let recorded_url = Url::parse(recorded)
            .ok()
            .filter(|u| matches!(u.scheme(), "https" | "http"));
        match self {
            Source::Local(_) => !Reference::is_reference(recorded) && recorded_url.is_none(),
            Source::Registry(r) => {
                Reference::is_reference(recorded)
                    && Reference::parse(recorded).is_ok_and(|old| old.same_repository(r))
            }
            Source::Archive { url, .. } => {
                recorded_url.is_some_and(|old| old.origin() == url.origin())
            }
            Source::Name(_) => false,
        }
    }
}

/// An archive URL with its required SHA-256.
fn archive(text: &str, sha256: Option<&str>) -> Result<Source, InstallError> {
    let url = Url::parse(text)
        .map_err(|e| InstallError::Source(format!("`{}` is not a URL: {e}", shown(text))))?;
    let Some(sha256) = sha256 else {
        return Err(InstallError::Source(format!(
            "`{}`: an archive from the web is installed only with its SHA-256 (`--sha256 HEX`, from the publisher), so what is installed is what was published",
            shown(text)
        )));
    };
    let sha256 = sha256.trim().to_ascii_lowercase();
    if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(InstallError::Source(format!(
            "`--sha256 {}`: a SHA-256 is 64 hex digits",
            shown(&sha256)
        )));
    }
    if !(url.path().ends_with(".tar.gz") || url.path().ends_with(".tgz")) {
        return Err(InstallError::Source(format!(
            "`{}`: an archive from the web is a `.tar.gz` of a plugin folder",
            shown(text)
        )));
    }
    Ok(Source::Archive { url, sha256 })
}

/// A plugin's parts, from wherever it came: what the install checks read.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// `plugin.toml`'s text, when the source has one.
    pub manifest: Option<String>,
    /// The component's bytes.
    pub bytes: Vec<u8>,
    /// The detached minisign signature over the component, if any.
    pub signature: Option<String>,
    /// What a bare component is named after (its file's or repository's
    /// last part).
    pub stem: String,
    /// The component's file name, for a manifest written for it.
    pub file_name: String,
    /// The registry manifest's digest (`sha256:…`), for a registry source.
    pub digest: Option<String>,
    /// The Sigstore (cosign) signatures the registry holds for that
    /// digest, not yet verified.
    pub cosign: Vec<roost_registry::cosign::Signature>,
}

/// Fetch the plugin `reference` names from its registry with `options`:
/// the manifest resolved once and every layer fetched by digest and
/// checked, within the bounds, and — when `cosign` (some cosign key is
/// trusted) — the Sigstore signatures stored beside it; nothing is written
/// anywhere.
pub async fn pull(
    reference: &Reference,
    options: Options,
    cosign: bool,
) -> Result<Fetched, InstallError> {
    let client = Client::new(options).map_err(|e| InstallError::Source(e.to_string()))?;
    let source = |e: roost_registry::RegistryError| InstallError::Source(e.to_string());
    let pulled = artifact::pull(&client, reference).await.map_err(source)?;
    let signatures = if cosign {
        roost_registry::cosign::fetch(&client, reference, &pulled.digest)
            .await
            .map_err(source)?
    } else {
        Vec::new()
    };
    let stem = reference
        .repository()
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .replace('_', "-");
    Ok(Fetched {
        manifest: pulled.manifest,
        bytes: pulled.component,
        signature: pulled.signature,
        file_name: format!("{stem}.wasm"),
        stem,
        digest: Some(pulled.digest.to_string()),
        cosign: signatures,
    })
}

/// The archive at `url` with `options`' bounds, refused unless it hashes
/// to `sha256`; nothing is written anywhere.
pub async fn download(url: &Url, sha256: &str, options: Options) -> Result<Vec<u8>, InstallError> {
    let client = Client::new(options).map_err(|e| InstallError::Source(e.to_string()))?;
    let bytes = client
        .download(url, super::archive::MAX_DOWNLOAD, url.as_str())
        .await
        .map_err(|e| InstallError::Source(e.to_string()))?;
    let actual = super::sha256_hex(&bytes);
    if actual != sha256 {
        return Err(InstallError::Source(format!(
            "{url}: the archive's SHA-256 is {actual}, not the {sha256} given with `--sha256`: refused (it is not what was published, or the hash is another version's)"
        )));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_paths_or_references() {
        assert!(matches!(
            Source::parse("./hello").expect("p"),
            Source::Local(_)
        ));
        assert!(matches!(
            Source::parse("oci://127.0.0.1:5000/hello:1").expect("r"),
            Source::Registry(_)
        ));
        assert!(Source::parse("oci://nope").is_err());
        assert!(
            Source::parse("https://example.com/p.tar.gz")
                .expect_err("https")
                .to_string()
                .contains("--sha256")
        );
        let hex = "ab".repeat(32);
        let a = Source::named("https://example.com/d/p.tar.gz", Some(&hex)).expect("archive");
        assert!(matches!(a, Source::Archive { .. }));
        assert!(a.same_origin_as("https://example.com/other/p-2.tar.gz"));
        assert!(!a.same_origin_as("https://evil.example/d/p.tar.gz"));
        assert!(!a.same_origin_as("oci://example.com/d/p:1"));
        assert!(Source::named("https://example.com/p.tar.gz", Some("abc")).is_err());
        assert!(Source::named("https://example.com/p.wasm", Some(&hex)).is_err());
        assert!(Source::named("oci://r.example/a/hello:1", Some(&hex)).is_err());
        assert!(Source::parse("ftp://example.com/p.tar.gz").is_err());
        assert!(matches!(
            Source::parse("hello:1.2").expect("n"),
            Source::Name(_)
        ));
        assert!(matches!(
            Source::parse("roost:hello@1.2.0").expect("n"),
            Source::Name(_)
        ));
        assert!(matches!(
            Source::parse("hello.wasm").expect("p"),
            Source::Local(_)
        ));
        assert!(matches!(
            Source::parse("/tmp").expect("p"),
            Source::Local(_)
        ));
        let r = Source::parse("oci://r.example/a/hello:2").expect("r");
        assert!(r.same_origin_as("oci://r.example/a/hello:1"));
        assert!(!r.same_origin_as("oci://r.example/b/hello:1"));
        assert!(!r.same_origin_as("oci://other.example/a/hello:1"));
        assert!(!r.same_origin_as("/home/ada/hello"));
        assert!(
            Source::parse("/tmp/x")
                .expect("p")
                .same_origin_as("/home/ada/hello")
        );
        assert!(
            !Source::parse("/tmp/x")
                .expect("p")
                .same_origin_as("oci://r.example/a/hello:1")
        );
    }
}
