//! The registry side of installed plugins: where an upgrade fetches from
//! when none is named, which registry plugins have a newer version at
//! their tag, and publishing a plugin folder to a registry.

use std::path::Path;

use serde::Serialize;

use roost_registry::{Client, Publish, Reference, artifact};

use super::{InstallError, Installed, Plugins, Source};

/// One registry plugin's state, as `roost plugin outdated` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct Outdated {
    /// The plugin.
    pub name: String,
    /// Its recorded source (the reference with its tag).
    pub source: String,
    /// The digest it was installed at.
    pub installed: String,
    /// The digest its tag names now (absent when pinned or unreachable).
    pub latest: Option<String>,
    /// Why `latest` is absent: pinned by digest, or the registry's error.
    pub note: Option<String>,
}

impl Outdated {
    /// Whether the tag now names another version.
    pub fn is_outdated(&self) -> bool {
        self.latest.as_ref().is_some_and(|l| *l != self.installed)
    }

    /// One line: up to date, newer (and how to get it), or why unknown.
    pub fn status(&self) -> String {
        match (&self.latest, &self.note) {
            (Some(l), _) if *l != self.installed => format!(
                "newer: {} (installed {}); `roost plugin upgrade {}`",
                short(l),
                short(&self.installed),
                self.name
            ),
            (Some(_), _) => format!("up to date ({})", short(&self.installed)),
            (None, Some(n)) => n.clone(),
            (None, None) => String::new(),
        }
    }
}

fn short(digest: &str) -> &str {
    digest.get(..19).unwrap_or(digest)
}

/// Where `roost plugin upgrade NAME` fetches from when no source is
/// named: the recorded path again, or the recorded registry tag resolved
/// again. A plugin pinned by digest alone, or with no recorded source,
/// needs one named.
pub fn upgrade_source(old: &Installed) -> Result<Source, InstallError> {
    if old.source.is_empty() {
        return Err(InstallError::Source(format!(
            "no source is recorded for `{}` (installed before sources were recorded): name where the new version is",
            old.name()
        )));
    }
    if old.source.starts_with("https://") || old.source.starts_with("http://") {
        return Err(InstallError::Source(format!(
            "`{}` was installed from an archive pinned by its SHA-256 ({}); name the new version's archive and its `--sha256`",
            old.name(),
            old.source
        )));
    }
    match Source::parse(&old.source)? {
        Source::Registry(r) if r.tag().is_none() => Err(InstallError::Source(format!(
            "`{}` was installed by digest ({}); name the version to upgrade to",
            old.name(),
            old.source
        ))),
        Source::Registry(r) => Ok(Source::Registry(r.unpinned())),
        local => Ok(local),
    }
}

/// Refuse an upgrade of `old` from `new` when `new` is another source
/// than the recorded one, unless `switch_source`.
pub fn check_source(
    old: &Installed,
    new: &Source,
    switch_source: bool,
) -> Result<(), InstallError> {
    if switch_source || new.same_origin_as(&old.source) {
        return Ok(());
    }
    Err(InstallError::OtherSource {
        name: old.name().to_owned(),
        recorded: if old.source.is_empty() {
            "a path".to_owned()
        } else {
            old.source.clone()
        },
        new: new.recorded(),
    })
}

impl Plugins {
    fn registry_client(&self) -> Result<Client, InstallError> {
        Client::new(self.registry.clone()).map_err(|e| InstallError::Source(e.to_string()))
    }

    /// Every plugin installed from a registry, with the digest its tag
    /// names now. A registry that cannot be reached is noted on its row.
    pub async fn outdated(&self) -> Result<Vec<Outdated>, InstallError> {
        let client = self.registry_client()?;
        let mut out = Vec::new();
        for p in self.list()? {
            if p.source.starts_with("https://") || p.source.starts_with("http://") {
                out.push(Outdated {
                    name: p.name().to_owned(),
                    source: p.source.clone(),
                    installed: p.digest.clone(),
                    latest: None,
                    note: Some(
                        "an archive pinned by its SHA-256: a newer one is known only by its URL and hash".into(),
                    ),
                });
                continue;
            }
            let Ok(r) = Reference::parse(&p.source) else {
                continue;
            };
            let (latest, note) = if r.tag().is_none() {
                (None, Some("pinned by digest".to_owned()))
            } else {
                match artifact::resolve(&client, &r.unpinned()).await {
                    Ok(d) => (Some(d.to_string()), None),
                    Err(e) => (None, Some(format!("not checked: {e}"))),
                }
            };
            out.push(Outdated {
                name: p.name().to_owned(),
                source: p.source.clone(),
                installed: p.digest.clone(),
                latest,
                note,
            });
        }
        Ok(out)
    }

    /// Publish the plugin folder `dir` at `reference` (which needs a
    /// tag), after the checks an install makes (so what is published
    /// installs): the reference pinned at what it now names.
    pub async fn publish(
        &self,
        dir: &Path,
        reference: &str,
    ) -> Result<(Reference, String), InstallError> {
        let r = Reference::parse(reference).map_err(|e| InstallError::Source(e.to_string()))?;
        let source = Source::Local(dir.to_path_buf());
        let fetched = self.fetch(&source).await?;
        let Some(manifest) = fetched.manifest.clone() else {
            return Err(InstallError::Source(format!(
                "{}: publishing needs a plugin folder with plugin.toml",
                dir.display()
            )));
        };
        let name = super::Manifest::parse(&manifest, &self.ceiling)?
            .plugin
            .name;
        // An installed plugin of the same name is no clash here.
        let c = self.prepare_fetched(&source, fetched.clone(), Some(&name))?;
        let plugin = Publish {
            component: fetched.bytes,
            component_name: fetched.file_name,
            manifest,
            signature: fetched.signature,
            version: c.manifest.plugin.version.clone(),
        };
        let client = self.registry_client()?;
        let digest = artifact::publish(&client, &r, &plugin)
            .await
            .map_err(|e| InstallError::Source(e.to_string()))?;
        Ok((r, digest.to_string()))
    }
}
