//! Where a plugin is installed from: a path on this machine (a folder, a
//! `plugin.toml`, a `.tar.gz` or a `.wasm`), or a registry reference
//! (`oci://REGISTRY/REPOSITORY:TAG` or `@sha256:…`). Both end as the same
//! [`Fetched`] parts, which every install check then reads alike.

use std::path::PathBuf;

use roost_registry::{Client, Options, Reference, artifact};

use super::InstallError;

/// A plugin's source, as the user named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A path on this machine.
    Local(PathBuf),
    /// A registry reference.
    Registry(Reference),
}

impl Source {
    /// `text` as a source: a registry reference when it starts with
    /// `oci://`, else a path.
    pub fn parse(text: &str) -> Result<Self, InstallError> {
        if Reference::is_reference(text) {
            return Reference::parse(text)
                .map(Source::Registry)
                .map_err(|e| InstallError::Source(e.to_string()));
        }
        if text.contains("://") {
            return Err(InstallError::Source(format!(
                "`{text}`: a plugin comes from a path or an `oci://` registry reference"
            )));
        }
        Ok(Source::Local(PathBuf::from(text)))
    }

    /// As recorded with the installed plugin: the absolute path, or the
    /// reference as named (a tag stays a tag, so `outdated` can follow it).
    pub fn recorded(&self) -> String {
        match self {
            Source::Local(p) => std::path::absolute(p)
                .unwrap_or_else(|_| p.clone())
                .display()
                .to_string(),
            Source::Registry(r) => r.to_string(),
        }
    }

    /// Whether an upgrade from `self` keeps to the source `recorded` (what
    /// the installed plugin came from): the same registry repository, or a
    /// path for a plugin installed from a path. Another registry, another
    /// repository, or a switch between a registry and a path is another
    /// source, which an upgrade takes only when asked to.
    pub fn same_origin_as(&self, recorded: &str) -> bool {
        match (self, Reference::is_reference(recorded)) {
            (Source::Local(_), false) => true,
            (Source::Registry(r), true) => {
                Reference::parse(recorded).is_ok_and(|old| old.same_repository(r))
            }
            _ => false,
        }
    }
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
}

/// Fetch the plugin `reference` names from its registry with `options`:
/// the manifest resolved once and every layer fetched by digest and
/// checked, within the bounds; nothing is written anywhere.
pub async fn pull(reference: &Reference, options: Options) -> Result<Fetched, InstallError> {
    let client = Client::new(options).map_err(|e| InstallError::Source(e.to_string()))?;
    let pulled = artifact::pull(&client, reference)
        .await
        .map_err(|e| InstallError::Source(e.to_string()))?;
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
    })
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
                .contains("oci://")
        );
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
