//! On-disk cache of precompiled components.
//!
//! Entries are keyed by the component's content hash and the engine's
//! compatibility hash, so a new wasmtime or a changed engine config never
//! loads a stale artifact. Deserializing a precompiled artifact runs native
//! code, so Roost only loads files it wrote itself: each artifact carries a
//! keyed BLAKE3 MAC whose key is created once per cache (mode 0600), and an
//! artifact whose MAC does not verify is recompiled, never loaded. What a
//! component answered when it was loaded (its tool list) is kept beside
//! its artifact under the same kind of MAC, so a start does not
//! instantiate every plugin again to ask.

// wasmtime maps a MAC-checked cached artifact (`Component::deserialize_file`).
#![allow(unsafe_code)]

use std::fs;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use wasmtime::Engine;
use wasmtime::component::Component;

const KEY_FILE: &str = "cache.key";

/// Where a loaded component's compiled code came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheOutcome {
    /// A sealed artifact the build precompiled and the binary embeds
    /// (first-party components): nothing compiled, nothing read from disk.
    Prebuilt,
    /// Loaded a verified precompiled artifact from the cache.
    Hit,
    /// Compiled (and stored, when the cache is writable).
    Compiled,
}

/// A directory of precompiled components written by this Roost install.
pub struct ComponentCache {
    dir: PathBuf,
    key: [u8; 32],
    engine_tag: String,
}

/// Feeds `Hash` output into BLAKE3, to turn the engine's compatibility hash
/// into a stable file-name tag.
struct Blake3Hasher(blake3::Hasher);

impl Hasher for Blake3Hasher {
    fn finish(&self) -> u64 {
        let h = self.0.finalize();
        let mut b = [0u8; 8];
        b.copy_from_slice(&h.as_bytes()[..8]);
        u64::from_le_bytes(b)
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

impl ComponentCache {
    /// Open (creating if needed) the cache in `dir` for `engine`.
    pub fn open(dir: &Path, engine: &Engine) -> std::io::Result<Self> {
        create_private_dir(dir)?;
        let key = load_or_create_key(&dir.join(KEY_FILE))?;
        let mut h = Blake3Hasher(blake3::Hasher::new());
        engine.precompile_compatibility_hash().hash(&mut h);
        let engine_tag = h.0.finalize().to_hex()[..16].to_owned();
        Ok(Self {
            dir: dir.to_path_buf(),
            key,
            engine_tag,
        })
    }

    /// Directory of the cache.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn entry(&self, id: &blake3::Hash) -> PathBuf {
        self.dir
            .join(format!("{}-{}.cwasm", id.to_hex(), self.engine_tag))
    }

    /// Whether the component whose BLAKE3 hash is `id` has an entry (not
    /// yet verified), so a front-end can say a compile is coming.
    pub fn has_entry(&self, id: &blake3::Hash) -> bool {
        self.entry(id).is_file()
    }

    /// Load the precompiled form of `bytes`, or compile and store it.
    /// Compile errors are returned; cache I/O problems are logged and only
    /// cost a recompile.
    pub fn load_or_compile(
        &self,
        engine: &Engine,
        bytes: &[u8],
    ) -> wasmtime::Result<(Component, CacheOutcome)> {
        let id = blake3::hash(bytes);
        if let Some(c) = self.load(engine, &id) {
            return Ok((c, CacheOutcome::Hit));
        }
        let component = Component::new(engine, bytes)?;
        self.store_compiled(&id, &component);
        Ok((component, CacheOutcome::Compiled))
    }

    /// The verified precompiled form of the component whose BLAKE3 hash
    /// is `id`, if this cache has one.
    pub fn load(&self, engine: &Engine, id: &blake3::Hash) -> Option<Component> {
        self.load_verified(engine, &self.entry(id))
    }

    /// Keep `component`, compiled from the component whose BLAKE3 hash is
    /// `id`, for the next load; a write that fails is logged and only
    /// costs a recompile.
    pub fn store_compiled(&self, id: &blake3::Hash, component: &Component) {
        let path = self.entry(id);
        match component.serialize() {
            Ok(artifact) => {
                if let Err(e) = self.store(&path, &artifact) {
                    tracing::warn!(path = %path.display(), "cannot write component cache entry: {e}");
                }
            }
            Err(e) => tracing::warn!("cannot serialize compiled component: {e}"),
        }
    }

    fn answer_path(&self, id: &blake3::Hash, what: &str) -> PathBuf {
        self.dir
            .join(format!("{}-{}.{what}", id.to_hex(), self.engine_tag))
    }

    /// The MAC of an answer: keyed, and bound to the component's content
    /// and to what was asked, so no file can stand in for another's.
    fn answer_mac(&self, content: &blake3::Hash, what: &str, answer: &[u8]) -> blake3::Hash {
        let mut h = blake3::Hasher::new_keyed(&self.key);
        h.update(content.as_bytes());
        h.update(what.as_bytes());
        h.update(&[0]);
        h.update(answer);
        h.finalize()
    }

    /// What the component whose BLAKE3 hash is `id` answered when it was
    /// last asked `what` at load (its tool list), as this cache stored it;
    /// `None` when there is no such answer or it fails its integrity check
    /// (it is asked again then).
    pub fn load_answer(&self, id: &blake3::Hash, what: &str) -> Option<Vec<u8>> {
        let path = self.answer_path(id, what);
        let file = fs::read(&path).ok()?;
        let (mac, answer) = file.split_at_checked(64)?;
        let stored = std::str::from_utf8(mac)
            .ok()
            .and_then(|m| blake3::Hash::from_hex(m).ok());
        // blake3::Hash equality is constant-time.
        if stored != Some(self.answer_mac(id, what, answer)) {
            tracing::warn!(path = %path.display(), "cached answer failed its integrity check; asking the component again");
            return None;
        }
        Some(answer.to_vec())
    }

    /// Keep what the component whose BLAKE3 hash is `id` answered to
    /// `what`, for the next load; a write that fails only costs asking
    /// again.
    pub fn store_answer(&self, id: &blake3::Hash, what: &str, answer: &[u8]) {
        let path = self.answer_path(id, what);
        let mut file = self
            .answer_mac(id, what, answer)
            .to_hex()
            .as_bytes()
            .to_vec();
        file.extend_from_slice(answer);
        if let Err(e) = write_atomic(&self.dir, &path, &file) {
            tracing::warn!(path = %path.display(), "cannot keep a component's answer: {e}");
        }
    }

    fn load_verified(&self, engine: &Engine, path: &Path) -> Option<Component> {
        let artifact = fs::read(path).ok()?;
        let mac_path = mac_path(path);
        let stored = fs::read_to_string(&mac_path).ok()?;
        let expected = blake3::keyed_hash(&self.key, &artifact);
        let stored = match blake3::Hash::from_hex(stored.trim()) {
            Ok(h) => h,
            Err(_) => {
                tracing::warn!(path = %path.display(), "cache entry has a malformed MAC; recompiling");
                return None;
            }
        };
        // blake3::Hash equality is constant-time.
        if stored != expected {
            tracing::warn!(path = %path.display(), "cache entry failed its integrity check; recompiling");
            return None;
        }
        drop(artifact);
        // SAFETY: the file was written by this cache (its keyed MAC
        // verifies) from `Component::serialize` of this engine configuration
        // (the file name carries the engine's compatibility hash), which is
        // what `Component::deserialize_file` requires. It is mapped rather
        // than copied; the directory is private (0700) and the file 0600, so
        // only this user could change it between the check and the map.
        match unsafe { Component::deserialize_file(engine, path) } {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::warn!(path = %path.display(), "cannot load cache entry ({e}); recompiling");
                None
            }
        }
    }

    fn store(&self, path: &Path, artifact: &[u8]) -> std::io::Result<()> {
        let mac = blake3::keyed_hash(&self.key, artifact);
        write_atomic(&self.dir, path, artifact)?;
        write_atomic(&self.dir, &mac_path(path), mac.to_hex().as_bytes())
    }
}

fn mac_path(path: &Path) -> PathBuf {
    path.with_extension("cwasm.mac")
}

fn write_atomic(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    fs::create_dir_all(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

fn load_or_create_key(path: &Path) -> std::io::Result<[u8; 32]> {
    if let Ok(text) = fs::read_to_string(path) {
        if let Ok(h) = blake3::Hash::from_hex(text.trim()) {
            return Ok(*h.as_bytes());
        }
        tracing::warn!(path = %path.display(), "component cache key is malformed; making a new one");
    }
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).map_err(|e| std::io::Error::other(e.to_string()))?;
    let mut opts = fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(path)?;
    f.write_all(blake3::Hash::from_bytes(key).to_hex().as_bytes())?;
    f.sync_all()?;
    Ok(key)
}
