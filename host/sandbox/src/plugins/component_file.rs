//! An installed component's file, held open from the check at load to its
//! first call ([`ComponentFile`]).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::error::PluginError;

/// A component file held open, and the BLAKE3 hash its bytes had when it
/// was opened. A start that only lists tools (`roost tool list`, P10) needs
/// of a plugin the cache knows nothing but that hash: its bytes are hashed
/// in pieces through one small buffer and none of them kept, where reading
/// them whole gave each start a fresh buffer of every component to fault
/// in. The first call reads them again through this handle (not the path:
/// a file renamed over it later is not the one checked) and refuses them
/// unless they still hash the same.
#[derive(Debug)]
pub struct ComponentFile {
    file: File,
    path: PathBuf,
    hash: blake3::Hash,
}

impl ComponentFile {
    /// Open `path` and hash what it holds.
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let file = File::open(path)?;
        let mut hasher = blake3::Hasher::new();
        hasher.update_reader(&file)?;
        Ok(Self {
            file,
            path: path.to_path_buf(),
            hash: hasher.finalize(),
        })
    }

    /// The hash its bytes had when it was opened.
    pub fn hash(&self) -> blake3::Hash {
        self.hash
    }

    /// Its bytes now, refused (for `plugin`) unless they hash as they did
    /// when it was opened.
    pub fn read_checked(&self, plugin: &str) -> Result<Vec<u8>, PluginError> {
        let read_error = |source| PluginError::Read {
            plugin: plugin.to_owned(),
            path: self.path.clone(),
            source,
        };
        let len = self.file.metadata().map_err(read_error)?.len();
        let len = usize::try_from(len).map_err(|_| {
            read_error(std::io::Error::new(
                std::io::ErrorKind::FileTooLarge,
                "larger than this machine can address",
            ))
        })?;
        let mut bytes = vec![0u8; len];
        // Read by offset: two first calls at once share the handle. What is
        // read is what is hashed and what is used, whatever the file does.
        self.file.read_exact_at(&mut bytes, 0).map_err(read_error)?;
        if blake3::hash(&bytes) != self.hash {
            return Err(PluginError::Changed {
                plugin: plugin.to_owned(),
                path: self.path.clone(),
            });
        }
        Ok(bytes)
    }
}
