//! Roost's slash commands in an editor: advertised with
//! `available_commands_update`, run when a prompt starts with one (the
//! prompt then goes to no model). `/undo` takes back what the last
//! message changed — files and conversation — after the editor allowed it
//! with the diff in front of the person; `/checkpoints` lists them;
//! `/mode` switches the session's mode. The undo's choice is the engine's
//! (`Engine::undo_plan`), the one `roost chat`'s `/undo` makes.

use std::sync::Arc;

use agent_client_protocol::Error;
use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, CurrentModeUpdate,
    PermissionOption, PermissionOptionKind, RequestPermissionRequest, SessionUpdate,
    ToolCallContent, ToolCallUpdate, ToolCallUpdateFields, UnstructuredCommandInput,
};
use roost_protocol::{Checkpoint, RestoreMode};

use super::Acp;
use super::editor::Editor;
use super::updates::{said, text};

/// The commands an editor offers.
pub(crate) fn available() -> SessionUpdate {
    let with_input = |name: &str, about: &str, hint: &str| {
        AvailableCommand::new(name, about).input(AvailableCommandInput::Unstructured(
            UnstructuredCommandInput::new(hint),
        ))
    };
    SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(vec![
        with_input(
            "undo",
            "Take back what your last message changed: files and conversation (or go back to a checkpoint)",
            "checkpoint number (optional)",
        ),
        AvailableCommand::new(
            "checkpoints",
            "The task's checkpoints (/undo N goes back to one)",
        ),
        with_input("mode", "Switch the session's mode", "mode slug"),
    ]))
}

/// A prompt that is one of the commands: its name and what follows it.
pub(crate) fn parse(words: &str) -> Option<(&str, &str)> {
    let rest = words.trim().strip_prefix('/')?;
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    matches!(name, "undo" | "checkpoints" | "mode").then_some((name, args.trim()))
}

/// Run command `name` of session `sid`; what it says goes to the editor
/// as the reply.
pub(crate) async fn run(
    acp: &Arc<Acp>,
    ed: &Editor,
    sid: &str,
    name: &str,
    args: &str,
) -> Result<(), Error> {
    let said = match name {
        "mode" => mode(acp, ed, sid, args)?,
        "checkpoints" => checkpoints(acp, sid),
        _ => undo(acp, ed, sid, args).await,
    };
    say(ed, sid, said)
}

fn say(ed: &Editor, sid: &str, words: String) -> Result<(), Error> {
    ed.notify(sid, said(words))
}

/// `/mode SLUG`.
fn mode(acp: &Acp, ed: &Editor, sid: &str, slug: &str) -> Result<String, Error> {
    if slug.is_empty() {
        let now = acp.sessions.with(sid, |s| s.mode.clone())?;
        return Ok(format!("mode: {now} (/mode SLUG switches)"));
    }
    acp.sessions
        .set_mode(sid, slug, acp.settings.modes_dir.as_deref())?;
    ed.notify(
        sid,
        SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(slug.to_owned())),
    )?;
    Ok(format!("mode: {slug} (from your next message)"))
}

/// `/checkpoints`.
fn checkpoints(acp: &Acp, sid: &str) -> String {
    let Some(task) = acp.sessions.task(sid) else {
        return "No task yet: send a message to start one.".to_owned();
    };
    let plan = match acp.engine.undo_plan(&task) {
        Ok(plan) => plan,
        Err(e) => return format!("The checkpoints cannot be listed: {e}"),
    };
    if plan.checkpoints.is_empty() {
        return "The task has no checkpoints (it changed no files yet).".to_owned();
    }
    let mut out =
        String::from("Checkpoints (each holds the files as they were before its turn):\n");
    for c in &plan.checkpoints {
        let note = if plan.undone(c) {
            " — undone"
        } else if plan.target.as_ref().is_some_and(|t| t.id == c.id) {
            " — /undo goes back here"
        } else {
            ""
        };
        out.push_str(&format!("- {} (before turn {}){note}\n", c.id, c.turn));
    }
    out
}

/// `/undo [N]`: what goes back is shown and the editor asked; the task
/// stops first if it waits on a question here (the next prompt goes on
/// from the checkpoint).
async fn undo(acp: &Arc<Acp>, ed: &Editor, sid: &str, args: &str) -> String {
    let Some(task) = acp.sessions.task(sid) else {
        return "Nothing to undo: no task yet.".to_owned();
    };
    let plan = match acp.engine.undo_plan(&task) {
        Ok(plan) => plan,
        Err(e) => return format!("Nothing undone: {e}"),
    };
    let target: Checkpoint = match args {
        "" => match plan.target.clone() {
            Some(c) => c,
            None if plan.checkpoints.is_empty() => {
                return "Nothing to undo: the task changed no files yet.".to_owned();
            }
            None => {
                return "Nothing to undo: what the task changed is undone already (/checkpoints lists them; /undo N goes back to one).".to_owned();
            }
        },
        n => match n
            .parse::<u32>()
            .ok()
            .and_then(|n| plan.checkpoints.iter().find(|c| c.id == n))
        {
            Some(c) => c.clone(),
            None => return format!("No checkpoint `{n}`: /checkpoints lists them."),
        },
    };
    let diff = acp
        .engine
        .checkpoint_diff(&plan.id, target.id)
        .await
        .unwrap_or_default();
    let title = format!(
        "Undo: back to checkpoint {} (before turn {}) — the files as they were then, and the conversation without that turn and those after it?",
        target.id, target.turn
    );
    if !allowed(acp, ed, sid, &title, &diff).await {
        return "Not undone.".to_owned();
    }
    acp.stop_and_wait(&plan.id, "undone from the editor").await;
    match acp
        .engine
        .restore_checkpoint(&plan.id, target.id, RestoreMode::Both, false)
        .await
    {
        Ok(report) => {
            let mut out = format!("Undone: back at checkpoint {}.\n", target.id);
            for p in &report.restored {
                out.push_str(&format!("restored {p}\n"));
            }
            for p in &report.removed {
                out.push_str(&format!("removed {p}\n"));
            }
            for p in &report.conflicts {
                out.push_str(&format!(
                    "conflict {p}: changed by someone else since the task did; left alone\n"
                ));
            }
            out.push_str("Your next message goes on from there.");
            out
        }
        Err(e) => format!("Not undone: {e}"),
    }
}

/// Whether the editor allows `title` (with `diff` shown); no answer in
/// time is a no.
async fn allowed(acp: &Acp, ed: &Editor, sid: &str, title: &str, diff: &str) -> bool {
    let mut fields = ToolCallUpdateFields::new().title(title.to_owned());
    if !diff.trim().is_empty() {
        fields = fields.content(vec![ToolCallContent::from(text(diff.to_owned()))]);
    }
    let request = RequestPermissionRequest::new(
        sid.to_owned(),
        ToolCallUpdate::new(format!("undo-{}", uuid::Uuid::now_v7()), fields),
        vec![
            PermissionOption::new("allow_once", "Undo", PermissionOptionKind::AllowOnce),
            PermissionOption::new("reject_once", "Keep", PermissionOptionKind::RejectOnce),
        ],
    );
    ed.ask(request, acp.settings.ask_timeout).await.chosen() == Some("allow_once")
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn only_roosts_commands_are_commands() {
        assert_eq!(parse("/undo"), Some(("undo", "")));
        assert_eq!(parse("  /undo 3 "), Some(("undo", "3")));
        assert_eq!(parse("/mode architect"), Some(("mode", "architect")));
        assert_eq!(parse("/checkpoints"), Some(("checkpoints", "")));
        // Anything else is words for the model.
        assert_eq!(parse("/etc/passwd is what?"), None);
        assert_eq!(parse("undo"), None);
        assert_eq!(parse("please /undo"), None);
    }
}
