//! `.orchestration/agent_trace.jsonl`: one JSON line per mutating call,
//! approval, violation or plugin call that used the network, with the
//! hash of each changed file before and after, and each outgoing request
//! (method, origin and path, allowed or why not, status, bytes; never a
//! secret's value). Appends take an exclusive file lock, write the whole line in one
//! write and sync it, so lines from concurrent tasks never interleave and a
//! crash never leaves half a line behind an acknowledged call.

use roost_protocol::TraceKind;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::ORCHESTRATION_DIR;
use roost_sandbox::capability::Workspace;
use roost_sandbox::plugins::NetworkRecord;

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    /// Workspace-relative path.
    pub path: String,
    /// SHA-256 before the call (`None`: did not exist).
    pub sha256_before: Option<String>,
    /// SHA-256 after the call (`None`: deleted).
    pub sha256_after: Option<String>,
    /// Lines added plus lines removed.
    pub lines_changed: usize,
}

impl FileChange {
    /// Compare two versions of a file; `None` when nothing changed.
    pub fn between(path: &str, before: Option<&[u8]>, after: Option<&[u8]>) -> Option<Self> {
        if before == after {
            return None;
        }
        Some(Self {
            path: path.to_owned(),
            sha256_before: before.map(sha256),
            sha256_after: after.map(sha256),
            lines_changed: lines_changed(before.unwrap_or_default(), after.unwrap_or_default()),
        })
    }
}

/// Largest file (either side) Roost diffs line by line; past it, a change
/// is summarised by sizes and hashes.
pub const MAX_DIFF_BYTES: usize = 1 << 20;
/// Wall-clock budget of one diff; past it the diff is coarser (still a
/// correct diff, not a minimal one).
pub const DIFF_DEADLINE: std::time::Duration = std::time::Duration::from_millis(300);

/// A line diff of two texts, bounded in input size and time; `None` when
/// either side is over [`MAX_DIFF_BYTES`].
pub fn bounded_diff<'a>(old: &'a str, new: &'a str) -> Option<similar::TextDiff<'a, 'a, 'a, str>> {
    if old.len() > MAX_DIFF_BYTES || new.len() > MAX_DIFF_BYTES {
        return None;
    }
    Some(
        similar::TextDiff::configure()
            .algorithm(similar::Algorithm::Myers)
            .deadline(std::time::Instant::now() + DIFF_DEADLINE)
            .diff_lines(old, new),
    )
}

/// Lines added plus lines removed; for files over the diff bound, the line
/// counts of both sides (an upper bound).
fn lines_changed(before: &[u8], after: &[u8]) -> usize {
    let (old, new) = (
        String::from_utf8_lossy(before),
        String::from_utf8_lossy(after),
    );
    match bounded_diff(&old, &new) {
        Some(d) => d
            .iter_all_changes()
            .filter(|c| c.tag() != similar::ChangeTag::Equal)
            .count(),
        None => old.lines().count() + new.lines().count(),
    }
}

/// Hex SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// One trace line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceEntry {
    /// RFC 3339 time.
    pub time: String,
    /// What it records.
    pub kind: TraceKind,
    /// Task id.
    pub task_id: String,
    /// Active intent, if any.
    pub intent_id: Option<String>,
    /// Mode slug.
    pub mode: String,
    /// Tool name.
    pub tool: String,
    /// Arguments, shortened.
    pub args_summary: String,
    /// Files the call changed.
    #[serde(default)]
    pub files: Vec<FileChange>,
    /// Extra detail (the approved path, the violation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Outgoing requests the call attempted (`network` entries).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub network: Vec<NetworkRecord>,
}

impl TraceEntry {
    /// An entry stamped now.
    pub fn now(
        kind: TraceKind,
        task_id: &str,
        intent_id: Option<&str>,
        mode: &str,
        tool: &str,
        args: &serde_json::Value,
    ) -> Self {
        Self {
            time: humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
            kind,
            task_id: task_id.to_owned(),
            intent_id: intent_id.map(str::to_owned),
            mode: mode.to_owned(),
            tool: tool.to_owned(),
            args_summary: summarize(args),
            files: Vec::new(),
            detail: None,
            network: Vec::new(),
        }
    }
}

/// Arguments with credentials redacted (the trace is a file users commit)
/// and then long strings cut, so the trace stays readable and no
/// credential survives even in part.
pub fn summarize(args: &serde_json::Value) -> String {
    fn cut(v: &serde_json::Value) -> serde_json::Value {
        match v {
            serde_json::Value::String(s) if s.chars().count() > 80 => {
                serde_json::Value::String(format!(
                    "{}… ({} chars)",
                    s.chars().take(80).collect::<String>(),
                    s.chars().count()
                ))
            }
            serde_json::Value::Object(o) => o.iter().map(|(k, v)| (k.clone(), cut(v))).collect(),
            serde_json::Value::Array(a) => a.iter().map(cut).collect(),
            other => other.clone(),
        }
    }
    cut(&roost_secrets::redact_json(args)).to_string()
}

/// A request record with credentials redacted from what the plugin wrote
/// (its path and headers). Secrets the host filled in are never in a
/// record to begin with: it holds the plugin's placeholders.
pub fn redact_record(r: &mut NetworkRecord) {
    for text in std::iter::once(&mut r.url)
        .chain(r.secrets.iter_mut())
        .chain(r.refused.iter_mut())
        .chain(r.error.iter_mut())
    {
        if let std::borrow::Cow::Owned(clean) = roost_secrets::redact(text) {
            *text = clean;
        }
    }
}

/// Largest trace Roost reads back (`roost trace`, recent entries).
const MAX_TRACE: u64 = 64 << 20;
/// The trace file, relative to the workspace.
const TRACE_FILE: &str = "agent_trace.jsonl";

/// The trace file of a workspace. Only the host appends to it, through the
/// workspace layer: no symlink is followed and only a regular file is
/// written, so a planted link cannot redirect the trace.
pub struct Trace {
    workspace: PathBuf,
}

impl Trace {
    /// The trace of `workspace`.
    pub fn of(workspace: &Path) -> Self {
        Self {
            workspace: workspace.to_path_buf(),
        }
    }

    fn rel() -> String {
        format!("{ORCHESTRATION_DIR}/{TRACE_FILE}")
    }

    /// Append one entry durably (locked, one write, synced).
    pub fn append(&self, entry: &TraceEntry) -> std::io::Result<()> {
        let mut entry = entry.clone();
        entry.detail = entry.detail.map(|d| roost_secrets::redact(&d).into_owned());
        for r in &mut entry.network {
            redact_record(r);
        }
        let mut line = serde_json::to_string(&entry).map_err(std::io::Error::other)?;
        line.push('\n');
        let ws = Workspace::open(&self.workspace).map_err(std::io::Error::other)?;
        ws.append_strict(&Self::rel(), line.as_bytes())
            .map_err(std::io::Error::other)
    }

    /// Entries in order, optionally of one intent; lines that do not parse
    /// are skipped and counted.
    pub fn read(&self, intent: Option<&str>) -> std::io::Result<(Vec<TraceEntry>, usize)> {
        let ws = Workspace::open(&self.workspace).map_err(std::io::Error::other)?;
        let text = match ws.read_text_strict(&Self::rel(), MAX_TRACE) {
            Ok(Some(t)) => t,
            Ok(None) => return Ok((Vec::new(), 0)),
            Err(e) => return Err(std::io::Error::other(e)),
        };
        let mut bad = 0;
        let mut out = Vec::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            match serde_json::from_str::<TraceEntry>(line) {
                Ok(e) if intent.is_none_or(|i| e.intent_id.as_deref() == Some(i)) => out.push(e),
                Ok(_) => {}
                Err(_) => bad += 1,
            }
        }
        Ok((out, bad))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrent_appends_stay_whole_lines() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join(ORCHESTRATION_DIR)).expect("mkdir");
        let trace = Trace::of(dir.path());
        std::thread::scope(|s| {
            for t in 0..8 {
                let trace = &trace;
                s.spawn(move || {
                    for i in 0..50 {
                        let mut e = TraceEntry::now(TraceKind::Mutation, &format!("task-{t}"), Some("INT-1"), "code", "write_to_file", &serde_json::json!({"path": format!("f{i}"), "content": "x".repeat(5000)}));
                        e.files.push(FileChange::between("f", None, Some(b"x\n")).expect("change"));
                        trace.append(&e).expect("append");
                    }
                });
            }
        });
        let (entries, bad) = trace.read(None).expect("read");
        assert_eq!((entries.len(), bad), (400, 0));
        assert_eq!(
            entries[0].files[0].sha256_after.as_deref(),
            Some(sha256(b"x\n").as_str())
        );
    }

    #[test]
    fn changes_are_hashed_and_counted() {
        let c = FileChange::between("a", Some(b"a\nb\n"), Some(b"a\nc\n")).expect("changed");
        assert_eq!(c.lines_changed, 2);
        assert_eq!(c.sha256_before, Some(sha256(b"a\nb\n")));
        assert_eq!(c.sha256_after, Some(sha256(b"a\nc\n")));
        assert!(FileChange::between("a", Some(b"x"), Some(b"x")).is_none());
        assert_eq!(
            sha256(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
