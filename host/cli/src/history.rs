//! `roost history`: past tasks listed, searched, shown, exported and
//! deleted.

use super::line::outln;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;

use super::sanitize::{json_text, visible, visible_line};
use roost_core::engine::TaskRecord;
use roost_core::engine::{Listed, Records};

/// `roost history`.
#[derive(Debug, Subcommand)]
pub enum HistoryCommand {
    /// Recent tasks.
    List {
        /// How many.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// One JSON object per task.
        #[arg(long)]
        json: bool,
    },
    /// Tasks whose prompt or messages contain some text.
    Search {
        /// The text (case-insensitive for ASCII letters).
        text: String,
        /// How many.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// One JSON object per task.
        #[arg(long)]
        json: bool,
    },
    /// One task's messages.
    Show {
        /// Task id (or a unique prefix).
        #[arg(required_unless_present = "last")]
        id: Option<String>,
        /// The most recent task.
        #[arg(long, conflicts_with = "id")]
        last: bool,
        /// The task and its messages as one JSON object.
        #[arg(long)]
        json: bool,
        /// Write Roo Code's files (api_conversation_history.json, …) here.
        #[arg(long)]
        export: Option<PathBuf>,
        /// The task's tree: it and every subtask below it, indented, each
        /// with its status, mode, totals and result.
        #[arg(long, conflicts_with_all = ["json", "export"])]
        tree: bool,
    },
    /// Delete a task and everything recorded of it.
    Delete {
        /// Task id (or a unique prefix).
        id: String,
    },
}

/// `roost history`.
pub async fn run(cmd: HistoryCommand, data_dir: &Path) -> anyhow::Result<ExitCode> {
    let records = Records::open(&super::store::location_default(data_dir))?;
    match cmd {
        HistoryCommand::List { limit, json } => {
            let listed = records.list(limit)?;
            if listed.is_empty() && !json {
                outln!("no tasks yet: `roost run \"…\"` or `roost` starts one");
            }
            print_tasks(listed, json)?;
        }
        HistoryCommand::Search { text, limit, json } => {
            let found: Vec<Listed> = records
                .search(&text, limit)?
                .into_iter()
                .map(|task| Listed {
                    task,
                    interrupted: false,
                })
                .collect();
            if found.is_empty() && !json {
                outln!("no task mentions \"{}\"", visible_line(&text));
            }
            print_tasks(found, json)?;
        }
        HistoryCommand::Show {
            id,
            last: _,
            json,
            export,
            tree,
        } => {
            let t = match &id {
                Some(id) => records.find(id)?,
                None => records.last(false)?,
            };
            if tree {
                show_tree(&records, &t)?;
            } else if json {
                let v = serde_json::json!({
                    "task": t,
                    "messages": records.ui_messages(&t.id).await?,
                    "todos": records.todos(&t.id).await?,
                });
                outln!("{}", json_text(&v.to_string()));
            } else {
                show(&records, &t).await?;
            }
            if let Some(dir) = export {
                records.export_roo(&t.id, &dir)?;
                super::line::notice!("exported to {}", visible_line(&dir.display().to_string()));
            }
        }
        HistoryCommand::Delete { id } => {
            let id = records.delete(&id)?;
            outln!("deleted task {}", visible_line(&id));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A table of tasks (with a header), or one JSON object per task.
fn print_tasks(tasks: Vec<Listed>, json: bool) -> anyhow::Result<()> {
    if !json && !tasks.is_empty() {
        outln!(
            "{:<36}  {:<16}  {:<20} {:<10} {:>8} {:>7} {:>8}  PROMPT",
            "ID",
            "CREATED",
            "STATUS",
            "MODE",
            "IN",
            "OUT",
            "COST"
        );
    }
    for Listed {
        task: t,
        interrupted,
    } in tasks
    {
        if json {
            let mut v = serde_json::to_value(&t)?;
            v["interrupted"] = serde_json::Value::Bool(interrupted);
            outln!("{}", json_text(&v.to_string()));
            continue;
        }
        let prompt: String = t
            .prompt
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(50)
            .collect();
        let status = if interrupted {
            "interrupted".to_owned()
        } else {
            t.status.to_string()
        };
        outln!(
            "{:<36}  {:<16}  {:<20} {:<10} {:>8} {:>7} {:>8}  {}",
            visible_line(&t.id),
            local_time(t.created_at),
            status,
            visible_line(&t.mode),
            t.usage.input_tokens,
            t.usage.output_tokens,
            cost_column(t.cost),
            visible_line(&prompt)
        );
    }
    Ok(())
}

/// One task's header and messages.
async fn show(records: &Records, t: &TaskRecord) -> anyhow::Result<()> {
    outln!(
        "task {} · {} · mode {} · {}",
        visible_line(&t.id),
        t.status,
        visible_line(&t.mode),
        visible_line(&t.workspace)
    );
    outln!(
        "created {} · tokens in {} out {}{}\n",
        local_time(t.created_at),
        t.usage.input_tokens,
        t.usage.output_tokens,
        cost_suffix(t.cost, &t.usage)
    );
    for m in records.ui_messages(&t.id).await? {
        outln!(
            "[{} {}] {}",
            visible_line(&m.kind),
            visible_line(&m.subtype),
            visible(&m.text)
        );
    }
    Ok(())
}

/// `history show --tree`: the task and every subtask below it, one line
/// each, indented by depth (a task's totals include its subtasks').
fn show_tree(records: &Records, t: &TaskRecord) -> anyhow::Result<()> {
    let all = records.subtree(&t.id)?;
    let depth_of = |id: &str| {
        let mut d = 0usize;
        let mut at = all.iter().find(|l| l.task.id == id);
        while let Some(l) = at {
            match &l.task.parent_id {
                Some(p) if l.task.id != t.id => {
                    d += 1;
                    at = all.iter().find(|x| &x.task.id == p);
                }
                _ => break,
            }
        }
        d
    };
    for l in &all {
        let task = &l.task;
        let result = records
            .outcome(&task.id)?
            .map(|o| match o {
                roost_core::task::TaskOutcome::Completed { result } => result,
                roost_core::task::TaskOutcome::Aborted { reason }
                | roost_core::task::TaskOutcome::Paused { reason } => reason,
                roost_core::task::TaskOutcome::Failed { error } => error,
            })
            .unwrap_or_default();
        outln!(
            "{}{} {} · {} · tokens in {} out {}{}{}",
            "  ".repeat(depth_of(&task.id)),
            // Whole: a tree's ids share their first characters.
            visible_line(&task.id),
            if l.interrupted {
                "interrupted".to_owned()
            } else {
                task.status.to_string()
            },
            visible_line(&task.mode),
            task.usage.input_tokens,
            task.usage.output_tokens,
            cost_suffix(task.cost, &task.usage),
            match result.lines().next() {
                Some(first) if !first.is_empty() => format!(" · {}", visible_line(first)),
                _ => String::new(),
            }
        );
    }
    Ok(())
}

/// The cost column: dollars, or `-` when nothing was charged (no price
/// known, or nothing spent).
fn cost_column(cost: f64) -> String {
    super::render::cost_text(cost, 0).unwrap_or_else(|| "-".to_owned())
}

/// ` · $0.0123`, ` · no price known`, or nothing when nothing was spent.
fn cost_suffix(cost: f64, usage: &roost_protocol::Usage) -> String {
    super::render::cost_text(cost, usage.input_tokens.saturating_add(usage.output_tokens))
        .map(|c| format!(" · {c}"))
        .unwrap_or_default()
}

/// `2026-11-26 04:28` (UTC) for a time in ms since the epoch.
fn local_time(ms: i64) -> String {
    let secs = u64::try_from(ms / 1000).unwrap_or(0);
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
    // `2026-11-26T04:28:09Z` → `2026-11-26 04:28`
    let s = humantime::format_rfc3339_seconds(t).to_string();
    s.get(..16).unwrap_or(&s).replace('T', " ")
}
