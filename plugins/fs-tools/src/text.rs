//! Text helpers shared by the tools: reading a workspace file as text,
//! binary detection, line endings, and writing back.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use roost_sdk::{ToolError, workspace};

use crate::links::check_readable;

/// Bytes inspected to decide whether a file is binary.
const SNIFF_BYTES: usize = 8192;

/// A text file read from the workspace.
pub struct TextFile {
    /// Guest path.
    pub path: PathBuf,
    /// Contents.
    pub text: String,
}

/// Whether `bytes` look binary: a NUL byte, or invalid UTF-8, in the first
/// few KiB (the same heuristic as git and ripgrep).
pub fn is_binary(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(SNIFF_BYTES)];
    if head.contains(&0) {
        return true;
    }
    match std::str::from_utf8(head) {
        Ok(_) => false,
        // A multi-byte character cut at the sniff boundary is still text.
        Err(e) => e.error_len().is_some(),
    }
}

/// `bytes` as text: borrowed when they are valid UTF-8 (checked a word at
/// a time), invalid sequences replaced by U+FFFD only when they are not.
/// `String::from_utf8_lossy` alone walks every byte through its chunker,
/// which was the largest part of a 4 KiB `read_file` inside the sandbox.
pub fn decode(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// Read `rel` as UTF-8 text, refusing binary files with a clear message.
pub fn read_text(rel: &str) -> Result<TextFile, ToolError> {
    let path = workspace::resolve(rel)?;
    // Not through a symlink to a .rooignore'd file, and never a FIFO.
    if check_readable(Path::new(workspace::ROOT), &path, rel)?.is_dir() {
        return Err(ToolError::invalid_args(format!("{rel} is a directory")));
    }
    let bytes = std::fs::read(&path).map_err(|e| ToolError::io(rel, &e))?;
    if is_binary(&bytes) {
        return Err(ToolError::invalid_args(format!(
            "{rel} is a binary file ({} bytes); it cannot be edited as text",
            bytes.len()
        )));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| ToolError::invalid_args(format!("{rel} is not valid UTF-8 text")))?;
    Ok(TextFile { path, text })
}

/// The file's dominant line ending.
pub fn line_ending(text: &str) -> &'static str {
    if text.contains("\r\n") { "\r\n" } else { "\n" }
}

/// Join lines with `eol`, keeping a trailing newline if the original had one.
pub fn join(lines: &[String], eol: &str, trailing_newline: bool) -> String {
    let mut s = lines.join(eol);
    if trailing_newline && !lines.is_empty() {
        s.push_str(eol);
    }
    s
}

/// Write `text` to `rel`, creating parent directories.
pub fn write_text(rel: &str, path: &std::path::Path, text: &str) -> Result<(), ToolError> {
    use std::io::Write;
    // Writing through a symlink (inside the workspace) changes its target,
    // as a plain write would: the replacement goes beside the real file.
    let root = std::path::Path::new(roost_sdk::workspace::ROOT);
    let real = match crate::links::resolve(root, path, true) {
        Ok(r) if r.via_link => root.join(r.rel),
        _ => path.to_path_buf(),
    };
    let path = real.as_path();
    let parent = path.parent().unwrap_or(std::path::Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| ToolError::io(rel, &e))?;
    // Atomic: the new content goes to a temporary file beside the target,
    // synced, then renamed over it, so a crash leaves the old file or the
    // new one, never an empty or half-written one. (The host puts back
    // the old file's permission bits, which WASI cannot set.)
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut last_err = None;
    for attempt in 0..8u32 {
        let tmp = parent.join(format!(".{name}.roost-{stamp:x}-{attempt}.tmp"));
        let mut f = match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                last_err = Some(e);
                continue;
            }
            Err(e) => return Err(ToolError::io(rel, &e)),
        };
        let written = f
            .write_all(text.as_bytes())
            .and_then(|_| f.sync_all())
            .and_then(|_| std::fs::rename(&tmp, path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(ToolError::io(rel, &e));
        }
        return Ok(());
    }
    let e = last_err.unwrap_or_else(|| std::io::Error::other("no temporary name"));
    Err(ToolError::io(rel, &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_detection() {
        assert!(is_binary(b"abc\0def"));
        assert!(is_binary(&[0xff, 0xfe, 0x41]));
        assert!(!is_binary("héllo\nworld".as_bytes()));
        assert!(!is_binary(b""));
    }

    #[test]
    fn writes_replace_the_file_whole_and_leave_no_temporaries() {
        let d = std::env::temp_dir().join(format!("roost-fs-tools-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("mkdir");
        let p = d.join("a.txt");
        std::fs::write(&p, "old\n").expect("write");
        write_text("a.txt", &p, "new\n").expect("writes");
        assert_eq!(std::fs::read_to_string(&p).expect("read"), "new\n");
        write_text("deep/b.txt", &d.join("deep/b.txt"), "b").expect("creates dirs");
        let names: Vec<String> = std::fs::read_dir(&d)
            .expect("list")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.contains("roost-")), "{names:?}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn endings() {
        assert_eq!(line_ending("a\r\nb\r\n"), "\r\n");
        assert_eq!(line_ending("a\nb"), "\n");
        assert_eq!(join(&["a".into(), "b".into()], "\n", true), "a\nb\n");
    }
}
