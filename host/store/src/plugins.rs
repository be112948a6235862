//! Installed plugins: what each is (its manifest, hash, size, tools) and
//! what the user granted it, as text the install layer gives meaning to.

use super::db::{Row, params};
use super::{Store, StoreError, now_ms};

/// One installed plugin as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginRecord {
    /// Unique name.
    pub name: String,
    /// Version from its manifest.
    pub version: String,
    /// The manifest as installed (TOML).
    pub manifest: String,
    /// SHA-256 of the component (hex).
    pub sha256: String,
    /// BLAKE3 of the component (hex; empty for installs older than it):
    /// what a start checks the component against, since the engine keys
    /// its cache by the same hash and the bytes are then read once.
    pub blake3: String,
    /// The capabilities granted at install (JSON).
    pub granted: String,
    /// Its tools: names and groups (JSON).
    pub tools: String,
    /// Whether tasks get its tools.
    pub enabled: bool,
    /// Component size in bytes.
    pub size: i64,
    /// When it was installed or last upgraded (ms since the epoch).
    pub installed_at: i64,
    /// Who signed it (a trusted key's name; empty: unsigned).
    pub signer: String,
    /// Where it was installed from, as the user named it (a folder, or
    /// `oci://REGISTRY/REPOSITORY:TAG`): what an upgrade fetches again.
    pub source: String,
    /// The registry manifest's digest it was installed at (`sha256:…`;
    /// empty for a local source): what `outdated` compares a tag with.
    pub digest: String,
}

const COLUMNS: &str = "name, version, manifest, sha256, granted, tools, enabled, size, installed_at, signer, source, digest, blake3";

fn row(mut r: Row) -> Result<PluginRecord, StoreError> {
    Ok(PluginRecord {
        name: r.take_text(0)?,
        version: r.take_text(1)?,
        manifest: r.take_text(2)?,
        sha256: r.take_text(3)?,
        granted: r.take_text(4)?,
        tools: r.take_text(5)?,
        enabled: r.get::<i64>(6)? != 0,
        size: r.get(7)?,
        installed_at: r.get(8)?,
        signer: r.take_text(9)?,
        source: r.take_text(10)?,
        digest: r.take_text(11)?,
        blake3: r.take_text(12)?,
    })
}

impl Store {
    /// Record `p` as installed (replacing an earlier version of it).
    pub fn put_plugin(&self, p: &PluginRecord) -> Result<(), StoreError> {
        self.db.run(|c| {
            c.exec(
                &format!(
                    "INSERT INTO plugins ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13) \
                     ON CONFLICT (name) DO UPDATE SET version = excluded.version, manifest = excluded.manifest, \
                     sha256 = excluded.sha256, granted = excluded.granted, tools = excluded.tools, \
                     enabled = excluded.enabled, size = excluded.size, installed_at = excluded.installed_at, \
                     signer = excluded.signer, source = excluded.source, digest = excluded.digest, \
                     blake3 = excluded.blake3"
                ),
                params![
                    &p.name,
                    &p.version,
                    &p.manifest,
                    &p.sha256,
                    &p.granted,
                    &p.tools,
                    i64::from(p.enabled),
                    p.size,
                    now_ms(),
                    &p.signer,
                    &p.source,
                    &p.digest,
                    &p.blake3
                ],
            )
        })?;
        Ok(())
    }

    /// The installed plugin `name`.
    pub fn get_plugin(&self, name: &str) -> Result<Option<PluginRecord>, StoreError> {
        self.db
            .run(|c| {
                c.opt(
                    &format!("SELECT {COLUMNS} FROM plugins WHERE name = ?1"),
                    params![name],
                )
            })?
            .map(row)
            .transpose()
    }

    /// Every installed plugin, by name.
    pub fn list_plugins(&self) -> Result<Vec<PluginRecord>, StoreError> {
        self.db
            .run(|c| {
                c.query(
                    &format!("SELECT {COLUMNS} FROM plugins ORDER BY name"),
                    params![],
                )
            })?
            .into_iter()
            .map(row)
            .collect()
    }

    /// Turn `name` on or off; false when it is not installed.
    pub fn set_plugin_enabled(&self, name: &str, enabled: bool) -> Result<bool, StoreError> {
        let n = self.db.run(|c| {
            c.exec(
                "UPDATE plugins SET enabled = ?2 WHERE name = ?1",
                params![name, i64::from(enabled)],
            )
        })?;
        Ok(n > 0)
    }

    /// Forget `name`; false when it was not installed.
    pub fn delete_plugin(&self, name: &str) -> Result<bool, StoreError> {
        let n = self
            .db
            .run(|c| c.exec("DELETE FROM plugins WHERE name = ?1", params![name]))?;
        Ok(n > 0)
    }
}
