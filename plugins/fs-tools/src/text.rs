//! Text helpers shared by the tools: reading a workspace file as text,
//! binary detection, line endings, and writing back.

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
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| ToolError::io(rel, &e))?;
    }
    std::fs::write(path, text).map_err(|e| ToolError::io(rel, &e))
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
    fn endings() {
        assert_eq!(line_ending("a\r\nb\r\n"), "\r\n");
        assert_eq!(line_ending("a\nb"), "\n");
        assert_eq!(join(&["a".into(), "b".into()], "\n", true), "a\nb\n");
    }
}
