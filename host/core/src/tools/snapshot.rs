//! What a call changed: the files it declares, read through the workspace
//! layer before and after it runs, for the diff shown to the user and the
//! hashes in the trace. Host work here is bounded whatever the plugin did:
//! files up to [`MAX_DIFF_BYTES`] are kept and diffed (with a deadline),
//! larger ones are hashed as a stream and summarised; a FIFO, device or a
//! link out of the workspace is never opened.

use std::io::Read;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::intents::{FileChange, MAX_DIFF_BYTES, bounded_diff};
use crate::tools::ToolSpec;
use roost_sandbox::capability::Workspace;

/// Largest file hashed for the trace; past it the hash is left out.
const MAX_HASH_BYTES: u64 = 1 << 30;

/// One declared file at one moment. Two states are equal when the content
/// is (permission bits are not content).
#[derive(Debug, Clone)]
pub(crate) enum FileState {
    /// No file there.
    Absent,
    /// A regular file: its bytes when small enough to diff, its hash
    /// (`None` when too large to hash) and size.
    File {
        bytes: Option<Vec<u8>>,
        sha256: Option<String>,
        size: u64,
        /// Permission bits.
        mode: u32,
    },
    /// Something the host does not read (special file, link out, error).
    Unreadable(String),
}

impl PartialEq for FileState {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Absent, Self::Absent) => true,
            (
                Self::File {
                    bytes: b1,
                    sha256: h1,
                    size: s1,
                    ..
                },
                Self::File {
                    bytes: b2,
                    sha256: h2,
                    size: s2,
                    ..
                },
            ) => s1 == s2 && h1 == h2 && b1 == b2,
            (Self::Unreadable(a), Self::Unreadable(b)) => a == b,
            _ => false,
        }
    }
}

impl FileState {
    fn read(ws: &Workspace, rel: &str) -> Self {
        let path = match ws.normalize(rel) {
            Ok(p) => p,
            Err(e) => return Self::Unreadable(e.to_string()),
        };
        let f = match ws.open_file(&path) {
            Ok(Some(f)) => f,
            Ok(None) => return Self::Absent,
            Err(e) => return Self::Unreadable(e.to_string()),
        };
        let mode = {
            use std::os::unix::fs::PermissionsExt;
            f.metadata()
                .map_or(0o644, |m| m.permissions().mode() & 0o7777)
        };
        let mut hasher = Sha256::new();
        let mut kept: Vec<u8> = Vec::new();
        let mut size = 0u64;
        let mut buf = vec![0u8; 64 << 10];
        let mut reader = f.take(MAX_HASH_BYTES + 1);
        loop {
            match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let chunk = &buf[..n];
                    hasher.update(chunk);
                    size += u64::try_from(n).unwrap_or(u64::MAX);
                    if kept.len() <= MAX_DIFF_BYTES {
                        kept.extend_from_slice(chunk);
                    }
                }
                Err(e) => return Self::Unreadable(e.to_string()),
            }
        }
        let small = kept.len() <= MAX_DIFF_BYTES;
        Self::File {
            bytes: small.then_some(kept),
            sha256: (size <= MAX_HASH_BYTES).then(|| hex(&hasher.finalize())),
            size,
            mode,
        }
    }

    fn sha(&self) -> Option<String> {
        match self {
            Self::File { sha256, .. } => sha256.clone(),
            _ => None,
        }
    }

    fn text(&self) -> Option<String> {
        match self {
            Self::Absent => Some(String::new()),
            Self::File { bytes: Some(b), .. } => Some(String::from_utf8_lossy(b).into_owned()),
            _ => None,
        }
    }

    fn describe(&self) -> String {
        match self {
            Self::Absent => "(absent)".into(),
            Self::File { sha256, size, .. } => format!(
                "{size} bytes, sha256 {}",
                sha256
                    .as_deref()
                    .map_or("(not hashed: too large)", |h| &h[..12.min(h.len())])
            ),
            Self::Unreadable(why) => format!("(not read: {why})"),
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The declared files of a call with their states.
pub(crate) type Snapshot = Vec<(String, FileState)>;

/// The declared files of a destructive call, before it runs.
pub(crate) fn before(ws: &Workspace, spec: &ToolSpec, args: &Value) -> Snapshot {
    if !spec.destructive {
        return Vec::new();
    }
    spec.path_args
        .iter()
        .filter_map(|a| args.get(a).and_then(Value::as_str))
        .map(|p| (p.to_owned(), FileState::read(ws, p)))
        .collect()
}

/// The same files as they are now.
pub(crate) fn after(ws: &Workspace, before: &Snapshot) -> Snapshot {
    before
        .iter()
        .map(|(rel, _)| (rel.clone(), FileState::read(ws, rel)))
        .collect()
}

/// Put back the permission bits of declared files a tool replaced (tools
/// write a new file and rename it over the old one, atomically; WASI cannot
/// set permission bits, so an executable script would lose its `x`). Only
/// the old bits are ever restored, never new ones added.
pub(crate) fn restore_modes(ws: &Workspace, before: &Snapshot, after: &Snapshot) {
    for ((rel, old), (_, new)) in before.iter().zip(after) {
        if let (FileState::File { mode: was, .. }, FileState::File { mode: now, .. }) = (old, new)
            && was != now
            && let Ok(path) = ws.normalize(rel)
            && let Err(e) = ws.set_mode(&path, *was)
        {
            tracing::warn!("cannot restore the permissions of {rel}: {e}");
        }
    }
}

/// Paths whose state changed.
pub(crate) fn changed(before: &Snapshot, after: &Snapshot) -> Vec<String> {
    before
        .iter()
        .zip(after)
        .filter(|((_, old), (_, new))| old != new)
        .map(|((rel, _), _)| rel.clone())
        .collect()
}

/// Trace records of the changed files.
pub(crate) fn changes(before: &Snapshot, after: &Snapshot) -> Vec<FileChange> {
    before
        .iter()
        .zip(after)
        .filter(|((_, old), (_, new))| old != new)
        .map(|((rel, old), (_, new))| FileChange {
            path: rel.clone(),
            sha256_before: old.sha(),
            sha256_after: new.sha(),
            lines_changed: match (old.text(), new.text()) {
                (Some(o), Some(n)) => bounded_diff(&o, &n).map_or(0, |d| {
                    d.iter_all_changes()
                        .filter(|c| c.tag() != similar::ChangeTag::Equal)
                        .count()
                }),
                _ => 0,
            },
        })
        .collect()
}

/// Unified diff of the changed files; files too large to diff get a
/// summary line with sizes and hashes.
pub(crate) fn diff(before: &Snapshot, after: &Snapshot) -> Option<String> {
    let mut out = String::new();
    for ((rel, old), (_, new)) in before.iter().zip(after) {
        if old == new {
            continue;
        }
        let diffed = match (old.text(), new.text()) {
            (Some(o), Some(n)) => unified(rel, &o, &n),
            _ => None,
        };
        match diffed {
            Some(d) => out.push_str(&d),
            None => out.push_str(&format!(
                "--- a/{rel}\n+++ b/{rel}\n@@ too large to diff: {} -> {} @@\n",
                old.describe(),
                new.describe()
            )),
        }
    }
    (!out.is_empty()).then_some(out)
}

fn unified(rel: &str, old: &str, new: &str) -> Option<String> {
    let d = bounded_diff(old, new)?;
    let mut u = d.unified_diff();
    let text = u
        .header(&format!("a/{rel}"), &format!("b/{rel}"))
        .to_string();
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::ToolGroup;

    #[test]
    fn large_and_special_files_are_summarised_not_read() {
        let d = tempfile::tempdir().expect("tempdir");
        let big = "line\n".repeat(300_000);
        std::fs::write(d.path().join("big.txt"), &big).expect("write");
        std::fs::write(d.path().join("small.txt"), "a\n").expect("write");
        let ws = Workspace::open(d.path()).expect("ws");
        let spec = ToolSpec {
            name: "t".into(),
            description: String::new(),
            args_schema: serde_json::json!({}),
            group: ToolGroup::Edit,
            destructive: true,
            path_args: vec!["a".into(), "b".into()],
            annotations: Default::default(),
        };
        let args = serde_json::json!({"a": "big.txt", "b": "small.txt"});
        let b = before(&ws, &spec, &args);
        std::fs::write(d.path().join("big.txt"), format!("{big}more\n")).expect("write");
        std::fs::write(d.path().join("small.txt"), "b\n").expect("write");
        let a = after(&ws, &b);
        let text = diff(&b, &a).expect("diff");
        assert!(text.contains("too large to diff"), "{text}");
        assert!(text.contains("-a\n+b"), "{text}");
        let ch = changes(&b, &a);
        assert_eq!(ch.len(), 2);
        assert!(
            ch.iter()
                .all(|c| c.sha256_before.is_some() && c.sha256_after.is_some())
        );
    }
}
