//! `read_file`: a file's lines, numbered, optionally a range of them.

use std::fmt::Write as _;
use std::io::Read as _;
use std::path::Path;

use roost_sdk::{Output, ToolError, ToolResult, workspace};
use serde::Deserialize;

use crate::links::check_readable;
use crate::text::{decode, is_binary};

/// Largest file returned whole; larger ones need a line range.
const MAX_WHOLE_FILE: usize = 1 << 20;

pub const DESCRIPTION: &str = "Read a file in the workspace and return its contents with line numbers \
(e.g. \"1 | const x = 1\"), which you can use to reference lines in apply_diff or insert_content. \
Use start_line and end_line (1-based, inclusive) to read part of a large file. Binary files are \
detected and not returned. Files over 1 MiB must be read in ranges.";

/// Arguments of `read_file`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    /// Workspace-relative path of the file.
    pub path: String,
    /// First line to read (1-based, inclusive).
    #[schemars(range(min = 1))]
    pub start_line: Option<usize>,
    /// Last line to read (1-based, inclusive).
    #[schemars(range(min = 1))]
    pub end_line: Option<usize>,
}

pub fn read_file(a: ReadArgs) -> ToolResult {
    let path = workspace::resolve(&a.path)?;
    read_in(Path::new(workspace::ROOT), &path, &a)
}

/// A regular file directly in the workspace root, in the sandbox, read
/// through WASI itself ([`workspace::read_top_file`]: no metadata hash,
/// no stream); `None` anywhere else (natively too), and for anything but
/// such a file, which [`read_checked`] then reads or refuses.
fn read_top(root: &Path, path: &Path) -> Option<Vec<u8>> {
    #[cfg(target_family = "wasm")]
    if root == Path::new(workspace::ROOT) && path.parent() == Some(root) {
        return workspace::read_top_file(path.file_name()?.to_str()?);
    }
    let _ = (root, path);
    None
}

/// `path`'s bytes once it is found readable: a regular file, no link out
/// of the workspace or to a hidden path, no FIFO, socket or device.
fn read_checked(root: &Path, path: &Path, rel: &str) -> Result<Vec<u8>, ToolError> {
    // Looked up before opening: a symlink to a .rooignore'd file is refused,
    // and so is a FIFO, socket or device (opening a FIFO blocks).
    let meta = check_readable(root, path, rel)?;
    if meta.is_dir() {
        return Err(ToolError::invalid_args(format!(
            "{rel} is a directory; use list_files"
        )));
    }
    // Not looked up again once open: `check_readable` found a regular
    // file, and what is opened in its place meanwhile is refused by the
    // host's `open-at` unless it is a regular file or a directory (which
    // fails the read). Its length only sizes the buffer.
    let file = std::fs::File::open(path).map_err(|e| ToolError::io(rel, &e))?;
    let mut bytes = Vec::with_capacity(
        usize::try_from(meta.len())
            .unwrap_or(0)
            .min(MAX_WHOLE_FILE + 1),
    );
    // Through `Take`, whose reading to the end sizes nothing: a `File`'s
    // own looks the open file up again (two host calls) for a size the
    // buffer already has.
    file.take(u64::MAX)
        .read_to_end(&mut bytes)
        .map_err(|e| ToolError::io(rel, &e))?;
    Ok(bytes)
}

/// `read_file` of `path`, in the workspace at `root`.
pub fn read_in(root: &Path, path: &Path, a: &ReadArgs) -> ToolResult {
    let bytes = match read_top(root, path) {
        Some(bytes) => bytes,
        None => read_checked(root, path, &a.path)?,
    };
    if is_binary(&bytes) {
        return Ok(Output::text(format!(
            "{} is a binary file ({} bytes); its contents are not shown.",
            a.path,
            bytes.len()
        ))
        .with_data(serde_json::json!({"path": a.path, "binary": true, "bytes": bytes.len()})));
    }
    let ranged = a.start_line.is_some() || a.end_line.is_some();
    if !ranged && bytes.len() > MAX_WHOLE_FILE {
        return Err(ToolError::limit_exceeded(format!(
            "{} is {} bytes, over the 1 MiB limit for a whole read; read it in parts with start_line and end_line",
            a.path,
            bytes.len()
        )));
    }
    let text = decode(&bytes);
    let start = a.start_line.unwrap_or(1).max(1);
    let last = a.end_line.unwrap_or(usize::MAX);
    // One pass: the lines in range numbered into `out`, every line counted.
    let mut out = String::with_capacity(text.len() + text.len() / 8 + 32);
    let mut total = 0usize;
    let mut shown = 0usize;
    let mut stopped = false;
    let mut number = itoa::Buffer::new();
    for (i, line) in text.lines().enumerate() {
        total = i + 1;
        if stopped || total < start || total > last {
            continue;
        }
        if out.len() > MAX_WHOLE_FILE {
            let _ = writeln!(
                out,
                "[... stopped at line {i}: output over 1 MiB; read the rest with start_line]"
            );
            stopped = true;
            continue;
        }
        // "12 | text\n", pushed piece by piece: no formatting machinery and
        // no allocation per line.
        out.push_str(number.format(total));
        out.push_str(" | ");
        out.push_str(line);
        out.push('\n');
        shown += 1;
    }
    let end = last.min(total);
    if ranged && (start > end || start > total.max(1)) {
        return Err(ToolError::invalid_args(format!(
            "line range {start}-{} is outside {} ({total} lines)",
            a.end_line.map_or("end".to_owned(), |e| e.to_string()),
            a.path
        )));
    }
    if total == 0 {
        out.push_str("(empty file)\n");
    }
    Ok(Output::text(out).with_data(serde_json::json!({
        "path": a.path,
        "total_lines": total,
        "start_line": start,
        "end_line": start + shown.saturating_sub(1),
    })))
}
