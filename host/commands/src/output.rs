//! A command's output: all of it saved in the data directory (up to a
//! cap), its head and tail for the model, a bounded share streamed live to
//! the front-ends, and pages of the saved whole for
//! `read_command_output`. A task reads only its own commands' outputs.

use std::collections::VecDeque;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Where a task's command outputs are kept.
#[derive(Debug, Clone)]
pub struct OutputStore {
    dir: PathBuf,
    /// The tool that pages an output (named in the model's text).
    pager: &'static str,
}

/// Sizes that bound one command's output.
#[derive(Debug, Clone, Copy)]
pub struct OutputLimits {
    /// Bytes of the head and of the tail the model gets (each).
    pub model_half: usize,
    /// Bytes streamed live as events.
    pub live: usize,
    /// Bytes saved in all; the rest is counted, not kept.
    pub saved: u64,
}

impl Default for OutputLimits {
    fn default() -> Self {
        Self {
            model_half: 8 * 1024,
            live: 1 << 20,
            saved: 256 << 20,
        }
    }
}

/// Why an output cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// No such output for this task.
    #[error("no saved output `{0}` in this task (its id is what the call that saved it said)")]
    Unknown(String),
    /// The file system failed.
    #[error("cannot read or write command output: {0}")]
    Io(#[from] std::io::Error),
}

/// Whether `id` can name an output: 1–64 of `A-Z a-z 0-9 _ -` (the
/// call id that made it, or one of the host's own).
fn valid_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl OutputStore {
    /// Outputs kept under `data_dir/command-output/`.
    pub fn new(data_dir: &Path) -> Self {
        Self::named(data_dir, "command-output", "read_command_output")
    }

    /// Outputs of another kind of tool, kept under `data_dir/dir/` and
    /// paged by the tool `pager` (an MCP tool's oversized results).
    pub fn named(data_dir: &Path, dir: &str, pager: &'static str) -> Self {
        Self {
            dir: data_dir.join(dir),
            pager,
        }
    }

    fn path(&self, task: &str, id: &str) -> Option<PathBuf> {
        // Task ids are the store's own; refuse anything that is not a
        // plain name all the same.
        if task.is_empty() || task.contains(['/', '\\', '\0']) || task.starts_with('.') {
            return None;
        }
        valid_id(id).then(|| self.dir.join(task).join(format!("{id}.log")))
    }

    /// A new output of `task`'s, named after the call that made it (a
    /// name of the host's own when the call id cannot name a file).
    pub fn start(
        &self,
        task: &str,
        call_id: &str,
        limits: OutputLimits,
    ) -> Result<Capture, OutputError> {
        let id = if valid_id(call_id) {
            call_id.to_owned()
        } else {
            uuid::Uuid::now_v7().simple().to_string()
        };
        let path = self
            .path(task, &id)
            .ok_or_else(|| OutputError::Unknown(id.clone()))?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let file = std::fs::File::create(&path)?;
        Ok(Capture {
            pager: self.pager,
            id,
            file: Some(file),
            limits,
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
            saved: 0,
            live: 0,
            pending: Vec::new(),
        })
    }

    /// Up to `len` bytes of `task`'s output `id` from `offset` (cut back
    /// to a character boundary), with the output's whole size.
    pub fn page(
        &self,
        task: &str,
        id: &str,
        offset: u64,
        len: usize,
    ) -> Result<(String, u64), OutputError> {
        let path = self
            .path(task, id)
            .ok_or_else(|| OutputError::Unknown(id.to_owned()))?;
        let mut f = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(OutputError::Unknown(id.to_owned()));
            }
            Err(e) => return Err(e.into()),
        };
        let size = f.metadata()?.len();
        f.seek(SeekFrom::Start(offset.min(size)))?;
        let mut buf = Vec::with_capacity(len.min(1 << 20));
        f.take(u64::try_from(len).unwrap_or(u64::MAX))
            .read_to_end(&mut buf)?;
        Ok((whole_chars(buf), size))
    }

    /// Forget every output of `task` (the task was deleted).
    pub fn remove_task(&self, task: &str) {
        if let Some(dir) = self
            .path(task, "x")
            .and_then(|p| p.parent().map(Path::to_path_buf))
            && let Err(e) = std::fs::remove_dir_all(&dir)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!("cannot remove command outputs in {}: {e}", dir.display());
        }
    }
}

/// Bytes as text, a trailing partial character dropped, invalid bytes
/// replaced.
fn whole_chars(mut buf: Vec<u8>) -> String {
    if let Err(e) = std::str::from_utf8(&buf)
        && e.error_len().is_none()
    {
        buf.truncate(e.valid_up_to());
    }
    String::from_utf8_lossy(&buf).into_owned()
}

/// One command's output as it comes.
#[derive(Debug)]
pub struct Capture {
    /// Its id, for `read_command_output`.
    pub id: String,
    pager: &'static str,
    file: Option<std::fs::File>,
    limits: OutputLimits,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
    saved: u64,
    live: usize,
    /// Bytes of a character split between chunks, for the live stream.
    pending: Vec<u8>,
}

/// A finished command's output.
#[derive(Debug, Clone)]
pub struct Captured {
    /// Its id.
    pub id: String,
    /// What the model gets: all of it, or the head, a note, and the tail.
    pub text: String,
    /// Bytes the command printed.
    pub total: u64,
    /// Bytes saved (less than `total` past the cap).
    pub saved: u64,
    /// Whether the model's text leaves something out.
    pub cut: bool,
}

impl Capture {
    /// Take in a chunk; returns the part to stream live (whole
    /// characters), if any is left of the live budget.
    pub fn push(&mut self, bytes: &[u8]) -> Option<String> {
        self.total = self
            .total
            .saturating_add(u64::try_from(bytes.len()).unwrap_or(u64::MAX));
        let room = self.limits.saved.saturating_sub(self.saved);
        let keep = usize::try_from(room).unwrap_or(usize::MAX).min(bytes.len());
        if keep > 0
            && let Some(f) = &mut self.file
        {
            match f.write_all(&bytes[..keep]) {
                Ok(()) => self.saved += u64::try_from(keep).unwrap_or(0),
                Err(e) => {
                    tracing::warn!("command output {} not saved further: {e}", self.id);
                    self.file = None;
                }
            }
        }
        let head_room = self.limits.model_half.saturating_sub(self.head.len());
        let into_head = head_room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..into_head]);
        for &b in &bytes[into_head..] {
            if self.tail.len() == self.limits.model_half {
                self.tail.pop_front();
            }
            self.tail.push_back(b);
        }
        if self.live >= self.limits.live {
            return None;
        }
        let take = (self.limits.live - self.live).min(bytes.len());
        self.live += take;
        self.pending.extend_from_slice(&bytes[..take]);
        let mut cut = self.pending.len();
        if let Err(e) = std::str::from_utf8(&self.pending)
            && e.error_len().is_none()
        {
            cut = e.valid_up_to();
        }
        let rest = self.pending.split_off(cut);
        let chunk =
            String::from_utf8_lossy(&std::mem::replace(&mut self.pending, rest)).into_owned();
        (!chunk.is_empty()).then_some(chunk)
    }

    /// The output once the command has ended.
    pub fn finish(mut self) -> Captured {
        if let Some(f) = &mut self.file
            && let Err(e) = f.flush()
        {
            tracing::warn!("command output {} not flushed: {e}", self.id);
        }
        let shown = u64::try_from(self.head.len() + self.tail.len()).unwrap_or(u64::MAX);
        let cut = self.total > shown;
        let head_bytes = std::mem::take(&mut self.head);
        let text = if cut {
            let head = whole_chars(head_bytes);
            let tail: Vec<u8> = self.tail.iter().copied().collect();
            // Drop a partial character at the tail's start.
            let start = tail
                .iter()
                .position(|b| (*b & 0xC0) != 0x80)
                .unwrap_or(tail.len());
            let tail = String::from_utf8_lossy(&tail[start..]).into_owned();
            let head_len = head.len();
            format!(
                "{head}\n\n[… {} bytes left out; {}(id: \"{}\", offset: {head_len}) pages the whole output …]\n\n{tail}",
                self.total.saturating_sub(shown),
                self.pager,
                self.id
            )
        } else {
            let mut all = head_bytes;
            all.extend(self.tail.iter());
            whole_chars(all)
        };
        Captured {
            id: self.id,
            text,
            total: self.total,
            saved: self.saved,
            cut,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> OutputLimits {
        OutputLimits {
            model_half: 10,
            live: 15,
            saved: 40,
        }
    }

    /// Short output whole; long output as head, note and tail; the saved
    /// whole capped and pageable; the live stream capped and never split
    /// inside a character; another task's or a forged id unreadable.
    #[test]
    fn outputs_are_capped_saved_and_paged() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = OutputStore::new(dir.path());
        let mut c = store.start("task-1", "call_1_0", limits()).expect("start");
        assert_eq!(c.id, "call_1_0");
        assert_eq!(c.push(b"hello\n").as_deref(), Some("hello\n"));
        let done = c.finish();
        assert_eq!(done.text, "hello\n");
        assert!(!done.cut);

        let mut c = store.start("task-1", "../../x", limits()).expect("start");
        let id = c.id.clone();
        assert_eq!(
            id.len(),
            32,
            "a call id that cannot name a file is not used"
        );
        // "é" is two bytes: split it across chunks.
        let live1 = c.push(b"0123456789abc\xC3");
        assert_eq!(live1.as_deref(), Some("0123456789abc"));
        let live2 = c.push(b"\xA9fghijklmnopqrstuvwxyz0123456789ABCDEFGH");
        assert_eq!(live2.as_deref(), Some("é"), "the live budget ends");
        assert_eq!(c.push(b"more"), None);
        let done = c.finish();
        assert!(done.cut);
        assert!(done.text.starts_with("0123456789\n\n[… "), "{}", done.text);
        assert!(done.text.ends_with("\n\nCDEFGHmore"), "{}", done.text);
        assert!(done.text.contains(&id));
        assert_eq!(done.saved, 40);
        assert!(done.total > 40);
        let (page, size) = store.page("task-1", &id, 10, 5).expect("page");
        assert_eq!((page.as_str(), size), ("abcé", 40));
        assert!(matches!(
            store.page("task-2", &id, 0, 5),
            Err(OutputError::Unknown(_))
        ));
        assert!(matches!(
            store.page("task-1", "../../etc/passwd", 0, 5),
            Err(OutputError::Unknown(_))
        ));
        assert!(matches!(
            store.page("../x", &id, 0, 5),
            Err(OutputError::Unknown(_))
        ));
        store.remove_task("task-1");
        assert!(store.page("task-1", &id, 0, 5).is_err());
    }
}
