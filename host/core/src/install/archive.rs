//! A plugin shipped as a `.tar.gz`: unpacked into a folder of our own,
//! taking only regular files and folders at plain relative paths, within
//! bounds, so an archive can neither write outside that folder (absolute
//! paths, `..`, links) nor fill the disk (a small archive of zeros that
//! unpacks to gigabytes). The folder is then installed like any other.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use super::{InstallError, MANIFEST_FILE};

/// Most bytes an archive may unpack to (a Python component is ~20 MB).
const MAX_UNPACKED: u64 = 256 << 20;
/// Most entries an archive may hold.
const MAX_ENTRIES: usize = 4096;
/// Most bytes an archive downloaded from the web may be (a component is
/// at most 128 MiB; compressed, a plugin folder is smaller).
pub const MAX_DOWNLOAD: u64 = 128 << 20;
/// Whether `source` names a gzip'd tarball.
pub fn is_archive(source: &Path) -> bool {
    let name = source.to_string_lossy();
    name.ends_with(".tar.gz") || name.ends_with(".tgz")
}

/// Unpack `archive` into `into` (an empty folder of ours) and return the
/// plugin folder in it: the top, or its one folder, holding `plugin.toml`.
pub fn unpack(archive: &Path, into: &Path) -> Result<PathBuf, InstallError> {
    unpack_within(archive, into, MAX_UNPACKED)
}

/// [`unpack`] for an archive held in memory (one downloaded and checked
/// against its hash: what is unpacked is exactly what was checked);
/// `label` names it in errors.
pub fn unpack_bytes(bytes: &[u8], label: &str, into: &Path) -> Result<PathBuf, InstallError> {
    unpack_from(bytes, label, into, MAX_UNPACKED)
}

/// [`unpack`], refusing an archive that unpacks to more than `max` bytes.
fn unpack_within(archive: &Path, into: &Path, max: u64) -> Result<PathBuf, InstallError> {
    let label = archive.display().to_string();
    let file =
        std::fs::File::open(archive).map_err(|e| InstallError::Source(format!("{label}: {e}")))?;
    unpack_from(file, &label, into, max)
}

/// The gzip'd tar read from `reader` (named `label`) unpacked into `into`,
/// within `max` bytes.
fn unpack_from(
    reader: impl Read,
    label: &str,
    into: &Path,
    max: u64,
) -> Result<PathBuf, InstallError> {
    let bad = |detail: String| InstallError::Source(format!("{label}: {detail}"));
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(reader));
    let mut unpacked: u64 = 0;
    let entries = tar
        .entries()
        .map_err(|e| bad(format!("not a .tar.gz archive: {e}")))?;
    for (n, entry) in entries.enumerate() {
        if n >= MAX_ENTRIES {
            return Err(bad(format!("holds more than {MAX_ENTRIES} entries")));
        }
        let mut entry =
            entry.map_err(|e| bad(format!("not a .tar.gz archive, or a damaged one: {e}")))?;
        let raw = entry
            .path()
            .map_err(|e| bad(format!("an entry has an unreadable name: {e}")))?
            .into_owned();
        let Some(rel) = plain_relative(&raw) else {
            return Err(bad(format!(
                "entry `{}` leads outside the archive's folder (absolute or `..`)",
                raw.display()
            )));
        };
        if rel.as_os_str().is_empty() {
            continue;
        }
        let target = into.join(&rel);
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            std::fs::create_dir_all(&target).map_err(|e| bad(e.to_string()))?;
            continue;
        }
        if !kind.is_file() {
            return Err(bad(format!(
                "entry `{}` is not a regular file or folder (links and special files are refused)",
                raw.display()
            )));
        }
        let size = entry.header().size().map_err(|e| bad(e.to_string()))?;
        unpacked = unpacked.saturating_add(size);
        if unpacked > max {
            return Err(bad(format!("unpacks to more than {} MiB", max >> 20)));
        }
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| bad(e.to_string()))?;
        }
        // Never through something already there (an earlier entry).
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&target)
            .map_err(|e| bad(format!("entry `{}`: {e}", raw.display())))?;
        // The header's size is what is read, however long the data claims.
        let copied = std::io::copy(&mut (&mut entry).take(size), &mut out)
            .map_err(|e| bad(format!("entry `{}`: {e}", raw.display())))?;
        if copied != size {
            return Err(bad(format!("entry `{}` is truncated", raw.display())));
        }
    }
    if into.join(MANIFEST_FILE).is_file() {
        return Ok(into.to_path_buf());
    }
    let folders: Vec<PathBuf> = std::fs::read_dir(into)
        .map_err(|e| bad(e.to_string()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    match folders.as_slice() {
        [one] if one.join(MANIFEST_FILE).is_file() => Ok(one.clone()),
        _ => Err(bad(format!(
            "holds no {MANIFEST_FILE} at its top or in its one folder"
        ))),
    }
}

/// `p` as a plain relative path (`.` components dropped), or `None` when
/// it is absolute or climbs with `..`.
fn plain_relative(p: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Normal(s) => out.push(s),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A gzip'd tar of raw entries: (name bytes, type, data), names
    /// written into the header as they are (hostile ones included).
    fn archive(entries: &[(&[u8], tar::EntryType, &[u8])]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (name, kind, data) in entries {
            let mut h = tar::Header::new_old();
            let raw = &mut h.as_old_mut().name;
            raw[..name.len()].copy_from_slice(name);
            h.set_entry_type(*kind);
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            if *kind == tar::EntryType::Symlink {
                h.as_old_mut().linkname[..11].copy_from_slice(b"/etc/passwd");
            }
            h.set_cksum();
            b.append(&h, *data).expect("append");
        }
        let tar = b.into_inner().expect("tar");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &tar).expect("gzip");
        gz.finish().expect("gzip")
    }

    fn try_unpack(bytes: &[u8]) -> (tempfile::TempDir, Result<PathBuf, InstallError>) {
        try_unpack_within(bytes, MAX_UNPACKED)
    }

    fn try_unpack_within(
        bytes: &[u8],
        max: u64,
    ) -> (tempfile::TempDir, Result<PathBuf, InstallError>) {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("p.tar.gz");
        std::fs::write(&file, bytes).expect("write");
        let into = dir.path().join("out");
        std::fs::create_dir(&into).expect("mkdir");
        let r = unpack_within(&file, &into, max);
        (dir, r)
    }

    #[test]
    fn a_plugin_folder_unpacks() {
        let file = tar::EntryType::Regular;
        let bytes = archive(&[
            (b"hello/", tar::EntryType::Directory, b""),
            (b"hello/plugin.toml", file, b"[plugin]"),
            (b"hello/./hello.wasm", file, b"\0asm"),
        ]);
        let (dir, r) = try_unpack(&bytes);
        let folder = r.expect("unpacked");
        assert_eq!(folder, dir.path().join("out/hello"));
        assert_eq!(
            std::fs::read(folder.join("hello.wasm")).expect("read"),
            b"\0asm"
        );
    }

    #[test]
    fn hostile_archives_are_refused_and_write_nothing_outside() {
        let file = tar::EntryType::Regular;
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (archive(&[(b"../escape.txt", file, b"x")]), "leads outside"),
            (
                archive(&[(b"a/../../escape.txt", file, b"x")]),
                "leads outside",
            ),
            (
                archive(&[(b"/tmp/escape.txt", file, b"x")]),
                "leads outside",
            ),
            (
                archive(&[(b"link", tar::EntryType::Symlink, b"")]),
                "not a regular file",
            ),
            (
                archive(&[(b"hard", tar::EntryType::Link, b"")]),
                "not a regular file",
            ),
            (
                archive(&[(b"fifo", tar::EntryType::Fifo, b"")]),
                "not a regular file",
            ),
            (
                archive(&[(b"dev", tar::EntryType::Char, b"")]),
                "not a regular file",
            ),
            (
                archive(&[(b"a.txt", file, b"1"), (b"a.txt", file, b"2")]),
                "a.txt",
            ),
            (
                archive(&[(b"readme.txt", file, b"no manifest")]),
                "no plugin.toml",
            ),
            (b"not gzip at all".to_vec(), "archive"),
        ];
        for (bytes, expect) in cases {
            let (dir, r) = try_unpack(&bytes);
            let err = r.expect_err(expect).to_string();
            assert!(err.contains(expect), "expected {expect:?} in {err}");
            assert!(!dir.path().join("escape.txt").exists(), "{err}");
        }
    }

    /// A small archive that would unpack to more than the bound (a bomb
    /// of zeros) is refused before it is written out.
    #[test]
    fn an_archive_that_unpacks_too_far_is_refused() {
        let mut b = tar::Builder::new(Vec::new());
        let mut h = tar::Header::new_gnu();
        h.set_path("zeros.bin").expect("path");
        let max: u64 = 1 << 20;
        h.set_size(4 * max);
        h.set_entry_type(tar::EntryType::Regular);
        h.set_cksum();
        b.append(&h, std::io::repeat(0).take(4 * max))
            .expect("append");
        let tar = b.into_inner().expect("tar");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &tar).expect("gzip");
        let bytes = gz.finish().expect("gzip");
        assert!(bytes.len() < 64 << 10, "the bomb is small");
        let (dir, r) = try_unpack_within(&bytes, max);
        let err = r.expect_err("too big").to_string();
        assert!(err.contains("unpacks to more than"), "{err}");
        assert!(!dir.path().join("out/zeros.bin").exists());
    }
}
