//! What a shadow index records of each file's inode, read so that a
//! snapshot hands git only the files whose stat differs from it. Git's
//! `update-index` would otherwise `lstat` every file of the workspace a
//! second time after Roost's own walk (half of a 10,000-file snapshot on
//! the AMD VM) and rewrite the whole index even when nothing changed.
//!
//! The index is only a hint here. A file is left out only when its
//! recorded stat matches the walk's exactly and git itself would trust it
//! (stage 0, no flags, not racily clean); anything else, and any index
//! this reader does not follow to its last byte, means "hand it to git",
//! which then decides as it always did. Written by hand rather than with
//! `gix-index`: what is needed is the fixed 62-byte head of each entry and
//! its path, and that crate brings 60 crates with it (git's object,
//! traversal, revision-walk and commit-graph crates among them).
//!
//! Format: `Documentation/gitformat-index.txt` in git (versions 2, 3 and
//! 4; SHA-1 object names, as the shadow repositories are made).

use foldhash::{HashMap, HashMapExt};
use roost_sandbox::capability::dirfd::{EntryStat, Kind};

/// Bytes of an object name in the shadow repositories (SHA-1).
const OID_LEN: usize = 20;
/// The fixed part of an entry: ten 32-bit stat fields, the object name
/// and the 16-bit flags.
const ENTRY_HEAD: usize = 40 + OID_LEN + 2;
/// Flags: assume-valid, extended, stage (two bits).
const FLAG_ASSUME_VALID: u16 = 0x8000;
const FLAG_EXTENDED: u16 = 0x4000;
const FLAG_STAGE: u16 = 0x3000;

/// What an entry records of the inode it was made from, as git compares
/// it (each field as git stores it: the low 32 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Recorded {
    ctime: (u32, u32),
    mtime: (u32, u32),
    ino: u32,
    mode: u32,
    size: u32,
}

impl Recorded {
    /// What git would record of a file the walk found with `st`; `None`
    /// for what git does not record as a file or a link.
    fn of(st: &EntryStat) -> Option<Self> {
        let mode = match st.kind {
            // `core.fileMode=true`: the owner's execute bit decides.
            Kind::File if st.mode & 0o100 != 0 => 0o100_755,
            Kind::File => 0o100_644,
            Kind::Symlink => 0o120_000,
            Kind::Dir | Kind::Special => return None,
        };
        Some(Self {
            ctime: (low_time(st.ctime.0), low_time(st.ctime.1)),
            mtime: (low_time(st.mtime.0), low_time(st.mtime.1)),
            ino: low(st.ino),
            mode,
            size: low(st.size),
        })
    }
}

/// The low 32 bits of `v`, as git's index keeps a stat field.
fn low(v: u64) -> u32 {
    u32::try_from(v & 0xFFFF_FFFF).unwrap_or(u32::MAX)
}

/// The low 32 bits of a time field (seconds before 1970 wrap, as in git).
fn low_time(v: i64) -> u32 {
    u32::try_from(v.rem_euclid(1 << 32)).unwrap_or(u32::MAX)
}

/// A shadow index as this reader understood it.
#[derive(Debug)]
pub(super) struct IndexStamps {
    /// Stage-0 entries git would trust on their stat alone.
    trusted: HashMap<String, Recorded>,
    /// Every path the index holds (any stage), as `ls-files --cached`
    /// would list them, NUL-separated.
    listed: Vec<u8>,
}

impl IndexStamps {
    /// The index whose bytes are `bytes`, its file last written at
    /// `written` (seconds); `None` when it is not one this reader follows
    /// exactly (then the caller asks git for all). The caller reads the
    /// file: it lies in the data dir, where the shadow repositories are.
    pub(super) fn parse(bytes: &[u8], written: i64) -> Option<Self> {
        parse(bytes, written)
    }

    /// The paths the index holds, NUL-separated.
    pub(super) fn listed(&self) -> &[u8] {
        &self.listed
    }

    /// Whether `path`, found by the walk with `st`, is recorded exactly as
    /// it is, so git would find it unchanged without reading it.
    pub(super) fn unchanged(&self, path: &str, st: &EntryStat) -> bool {
        match (self.trusted.get(path), Recorded::of(st)) {
            (Some(recorded), Some(now)) => *recorded == now,
            _ => false,
        }
    }
}

/// A cursor over the index's bytes.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let out = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(out)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_be_bytes(self.take(2)?.try_into().ok()?))
    }

    /// Bytes up to the next NUL (which is consumed).
    fn until_nul(&mut self) -> Option<&'a [u8]> {
        let rest = self.bytes.get(self.at..)?;
        let n = memchr::memchr(0, rest)?;
        let out = self.take(n)?;
        self.take(1)?;
        Some(out)
    }

    /// Git's variable-length offset (version 4's prefix to strip).
    fn varint(&mut self) -> Option<usize> {
        let mut c = *self.take(1)?.first()?;
        let mut v = usize::from(c & 0x7f);
        while c & 0x80 != 0 {
            c = *self.take(1)?.first()?;
            v = v
                .checked_add(1)?
                .checked_mul(128)?
                .checked_add(usize::from(c & 0x7f))?;
        }
        Some(v)
    }
}

/// Parse an index written at `written` (its file's mtime, seconds).
fn parse(bytes: &[u8], written: i64) -> Option<IndexStamps> {
    let mut r = Reader { bytes, at: 0 };
    if r.take(4)? != b"DIRC" {
        return None;
    }
    let version = r.u32()?;
    if !(2..=4).contains(&version) {
        return None;
    }
    let count = usize::try_from(r.u32()?).ok()?;
    // Each entry takes at least its head and a NUL.
    if count > bytes.len() / (ENTRY_HEAD + 1) {
        return None;
    }
    let written = low_time(written);
    let mut trusted = HashMap::with_capacity(count);
    let mut listed = Vec::new();
    let mut path: Vec<u8> = Vec::new();
    for _ in 0..count {
        let start = r.at;
        let ctime = (r.u32()?, r.u32()?);
        let mtime = (r.u32()?, r.u32()?);
        let _dev = r.u32()?;
        let ino = r.u32()?;
        let mode = r.u32()?;
        let _uid = r.u32()?;
        let _gid = r.u32()?;
        let size = r.u32()?;
        r.take(OID_LEN)?;
        let flags = r.u16()?;
        let extended = if flags & FLAG_EXTENDED != 0 {
            if version < 3 {
                return None;
            }
            r.u16()?
        } else {
            0
        };
        if version == 4 {
            let strip = r.varint()?;
            path.truncate(path.len().checked_sub(strip)?);
            path.extend_from_slice(r.until_nul()?);
        } else {
            path.clear();
            path.extend_from_slice(r.until_nul()?);
            // NUL padding to a multiple of eight bytes from the entry's
            // start (the path's own NUL is the first of them).
            let len = r.at.checked_sub(start)?;
            let pad = (8 - len % 8) % 8;
            if r.take(pad)?.iter().any(|&b| b != 0) {
                return None;
            }
        }
        listed.extend_from_slice(&path);
        listed.push(0);
        // Git trusts an entry's stat unless it is racily clean: written
        // in the same second as the index or later (then it reads the
        // file); a conflict stage or a flag is left to git too.
        let racy = mtime.0 >= written;
        if flags & (FLAG_STAGE | FLAG_ASSUME_VALID) == 0 && extended == 0 && !racy {
            let name = std::str::from_utf8(&path).ok()?.to_owned();
            trusted.insert(
                name,
                Recorded {
                    ctime,
                    mtime,
                    ino,
                    mode,
                    size,
                },
            );
        }
    }
    // Extensions (a four-byte signature and a length each), then the
    // checksum, which must end the file exactly.
    let end = bytes.len().checked_sub(OID_LEN)?;
    while r.at < end {
        r.take(4)?;
        let len = usize::try_from(r.u32()?).ok()?;
        r.take(len)?;
    }
    if r.at != end {
        return None;
    }
    Some(IndexStamps { trusted, listed })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::process::Command;

    /// The index at `path`, as `Shadow::stage` reads it.
    fn read(path: &Path) -> Option<IndexStamps> {
        use std::os::unix::fs::MetadataExt;
        let written = std::fs::metadata(path).expect("index").mtime();
        IndexStamps::parse(&std::fs::read(path).expect("index"), written)
    }

    fn git(dir: &Path, args: &[&str]) {
        let st = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "core.fileMode=true"])
            .args(args)
            .status()
            .expect("git");
        assert!(st.success(), "git {args:?}");
    }

    /// A fresh git repository in a temporary folder.
    fn repo() -> tempfile::TempDir {
        let tmp = tempfile::tempdir().expect("tempdir");
        git(tmp.path(), &["init", "-q"]);
        tmp
    }

    fn stat(dir: &Path, rel: &str) -> EntryStat {
        roost_sandbox::capability::dirfd::DirFd::open_ambient(dir)
            .expect("dir")
            .stat(std::ffi::OsStr::new(rel))
            .expect("stat")
    }

    /// An index git wrote, in each version, read back: every path listed
    /// as `ls-files` lists it, each file unchanged once the index is
    /// newer than it, and changed as soon as its inode is touched.
    #[test]
    fn an_index_git_wrote_in_each_version_is_read_as_git_reads_it() {
        for version in ["2", "3", "4"] {
            let tmp = repo();
            let dir = tmp.path();
            for (name, body) in [("a.txt", "a"), ("run.sh", "#!/bin/sh\n"), ("zz", "z")] {
                std::fs::write(dir.join(name), body).expect("write");
            }
            std::fs::set_permissions(
                dir.join("run.sh"),
                std::os::unix::fs::PermissionsExt::from_mode(0o755),
            )
            .expect("chmod");
            std::os::unix::fs::symlink("a.txt", dir.join("link")).expect("link");
            let old = filetime::FileTime::from_unix_time(1_600_000_000, 5);
            for name in ["a.txt", "run.sh", "zz"] {
                filetime::set_file_mtime(dir.join(name), old).expect("mtime");
            }
            filetime::set_symlink_file_times(dir.join("link"), old, old).expect("link mtime");
            git(dir, &["update-index", "--index-version", version]);
            git(dir, &["add", "a.txt", "run.sh", "zz", "link"]);
            if version == "3" {
                // An extended flag (intent to add) makes git write v3.
                std::fs::write(dir.join("new"), "n").expect("write");
                git(dir, &["add", "-N", "new"]);
            }
            let index = dir.join(".git/index");
            let stamps = read(&index).expect("read");
            let listed: Vec<&[u8]> = stamps
                .listed()
                .split(|b| *b == 0)
                .filter(|p| !p.is_empty())
                .collect();
            let mut want: Vec<&[u8]> = vec![b"a.txt", b"link", b"run.sh", b"zz"];
            if version == "3" {
                want.insert(2, b"new");
            }
            assert_eq!(listed, want, "v{version}");
            for name in ["a.txt", "run.sh", "zz", "link"] {
                assert!(
                    stamps.unchanged(name, &stat(dir, name)),
                    "v{version} {name}"
                );
            }
            if version == "3" {
                // Intent to add: git's to judge.
                assert!(!stamps.unchanged("new", &stat(dir, "new")));
            }
            // Touched (ctime moves even with mtime put back), its mode
            // changed, or not in the index: changed.
            std::fs::write(dir.join("a.txt"), "b").expect("write");
            filetime::set_file_mtime(dir.join("a.txt"), old).expect("mtime");
            assert!(!stamps.unchanged("a.txt", &stat(dir, "a.txt")));
            std::fs::set_permissions(
                dir.join("zz"),
                std::os::unix::fs::PermissionsExt::from_mode(0o755),
            )
            .expect("chmod");
            assert!(!stamps.unchanged("zz", &stat(dir, "zz")));
            assert!(!stamps.unchanged("missing", &stat(dir, "run.sh")));
        }
    }

    /// A file written in the same second as the index, or later, is
    /// racily clean: git reads it, and so it is handed to git.
    #[test]
    fn a_racily_clean_entry_is_left_to_git() {
        let tmp = repo();
        let dir = tmp.path();
        std::fs::write(dir.join("f"), "x").expect("write");
        git(dir, &["add", "f"]);
        let index = dir.join(".git/index");
        let f = std::fs::metadata(dir.join("f")).expect("stat");
        // The index dated to the file's own second.
        filetime::set_file_mtime(&index, filetime::FileTime::from_last_modification_time(&f))
            .expect("mtime");
        let stamps = read(&index).expect("read");
        assert!(!stamps.unchanged("f", &stat(dir, "f")));
    }

    /// Whatever is not an index this reader follows to its last byte is
    /// no index at all: a wrong signature or version, a count past the
    /// file, a truncation anywhere, a path running off the end, bytes
    /// after the checksum.
    #[test]
    fn a_damaged_index_is_no_hint() {
        let tmp = repo();
        let dir = tmp.path();
        for i in 0..20 {
            std::fs::write(dir.join(format!("f{i}")), "x").expect("write");
        }
        git(dir, &["add", "."]);
        let good = std::fs::read(dir.join(".git/index")).expect("index");
        assert!(parse(&good, i64::MAX).is_some());
        for cut in 0..good.len() {
            assert!(parse(&good[..cut], i64::MAX).is_none(), "cut at {cut}");
        }
        let mut longer = good.clone();
        longer.push(0);
        assert!(parse(&longer, i64::MAX).is_none());
        for (at, byte) in [(0, b'X'), (7, 9), (11, 0xff), (10, 0xff)] {
            let mut bad = good.clone();
            bad[at] = byte;
            assert!(parse(&bad, i64::MAX).is_none(), "byte {at}");
        }
        assert!(parse(b"", 0).is_none() && parse(b"DIRC", 0).is_none());
    }
}
