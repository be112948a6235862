//! A read's view of the editor: when a front-end lends a task its buffers
//! (an ACP editor's `fs/read_text_file`), a call that only reads and
//! declares paths is told of each file the editor holds with changes not
//! saved yet, and given that text after its own output. Tools and
//! commands keep working on the disk (what they read and what they
//! change); the buffer is shown beside it, read-only, for a file the call
//! was allowed to read — past the path gate, inside the workspace, never
//! a `.rooignore`d one — and nothing else is ever asked of the editor.

use serde_json::Value;

use super::Dispatch;
use crate::tools::{Outcome, ToolSpec};
use crate::turn::Ctx;

/// Largest buffer shown (a bigger one is named, not shown).
const MAX_BUFFER: usize = 256 * 1024;
/// Most files of one call the editor is asked about.
const MAX_FILES: usize = 8;

impl Dispatch<'_> {
    /// After a read (`spec` does not mutate here): a note on `outcome` for
    /// each declared file whose editor buffer differs from the disk (or
    /// that only the editor holds).
    pub(super) async fn unsaved_buffers(
        &self,
        ctx: &Ctx<'_>,
        spec: &ToolSpec,
        args: &Value,
        outcome: &mut Outcome,
    ) {
        let Some(buffers) = &ctx.lent.buffers else {
            return;
        };
        let declared = spec
            .path_args
            .iter()
            .filter_map(|a| args.get(a).and_then(Value::as_str))
            .take(MAX_FILES);
        for raw in declared {
            // The path gate normalised it already; a path it would not
            // take is never asked about.
            let Ok(rel) = ctx.ws.normalize(raw) else {
                continue;
            };
            let disk = match ctx
                .ws
                .read(&rel, u64::try_from(MAX_BUFFER).unwrap_or(u64::MAX))
            {
                Ok(Some(bytes)) => Some(String::from_utf8_lossy(&bytes).into_owned()),
                Ok(None) => None,
                // A directory, a file over the bound, one that cannot be
                // read: nothing to compare with.
                Err(_) => continue,
            };
            // A read that failed on a file that is there failed for
            // another reason; one that found no file may be of a file the
            // editor holds unsaved.
            if outcome.result.is_err() && disk.is_some() {
                continue;
            }
            let Some(text) = buffers.text(&ctx.workspace.join(rel.to_path())).await else {
                continue;
            };
            if disk.as_deref() == Some(text.as_str()) {
                continue;
            }
            let name = rel.as_string();
            tracing::info!(task = %ctx.task.id, path = %name, "the editor's unsaved buffer is shown");
            outcome.notes.push(note(&name, disk.is_some(), &text));
        }
    }
}

/// What the model is told of `name`'s unsaved buffer `text`.
fn note(name: &str, on_disk: bool, text: &str) -> String {
    let head = if on_disk {
        format!(
            "The editor has unsaved changes to `{name}`: the file on disk (what this result shows, \
             and what tools and commands read and change) differs from the person's buffer."
        )
    } else {
        format!("`{name}` is not on disk: the editor holds it unsaved.")
    };
    if text.len() > MAX_BUFFER {
        return format!(
            "{head} The buffer is {} bytes, too large to show here.",
            text.len()
        );
    }
    let numbered: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| format!("{} | {l}", i + 1))
        .collect();
    format!("{head} The unsaved buffer reads:\n{}", numbered.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::note;

    #[test]
    fn a_note_names_the_file_and_numbers_the_buffer() {
        let n = note("a.txt", true, "one\ntwo\n");
        assert!(n.contains("unsaved changes to `a.txt`"));
        assert!(n.ends_with("1 | one\n2 | two"));
        assert!(note("new.txt", false, "x").contains("not on disk"));
        let big = "x".repeat(super::MAX_BUFFER + 1);
        assert!(note("big.txt", true, &big).contains("too large to show"));
    }
}
