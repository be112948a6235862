//! Slash commands: each is one [`SlashCommand`] in the registry, found by
//! name. The session only looks commands up; a new one (`/undo` from
//! checkpoints, `/skills`, `/mcp`) registers itself in [`Commands::builtin`]
//! or through [`Commands::register`] without touching the session.

use super::super::line::outln;

use super::super::sanitize::{visible, visible_line};
use super::Session;
use roost_core::store::TodoState;

/// What the session does after a command.
#[derive(Debug, PartialEq, Eq)]
pub enum Flow {
    /// Read the next input.
    Continue,
    /// Leave the session.
    Exit,
}

/// One slash command.
pub trait SlashCommand: Send + Sync {
    /// Its name, without the slash.
    fn name(&self) -> &'static str;
    /// Its arguments, for `/help` (`<mode>`; empty for none).
    fn args(&self) -> &'static str {
        ""
    }
    /// What it does, in one line.
    fn about(&self) -> &'static str;
    /// Other names it answers to.
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
    /// Run it with the rest of the line.
    fn run(&self, session: &mut Session, args: &str) -> anyhow::Result<Flow>;
}

/// The registry.
pub struct Commands(Vec<Box<dyn SlashCommand>>);

impl Commands {
    /// The built-in commands.
    pub fn builtin() -> Self {
        let mut c = Self(Vec::new());
        c.register(Box::new(Help));
        c.register(Box::new(ModeCmd));
        c.register(Box::new(ModelCmd));
        c.register(Box::new(Approve));
        c.register(Box::new(Todos));
        c.register(Box::new(History));
        c.register(Box::new(Tasks));
        c.register(Box::new(New));
        c.register(Box::new(Exit));
        c
    }

    /// Add a command.
    pub fn register(&mut self, command: Box<dyn SlashCommand>) {
        self.0.push(command);
    }

    /// The command `name` answers to.
    pub fn find(&self, name: &str) -> Option<&dyn SlashCommand> {
        self.0
            .iter()
            .find(|c| c.name() == name || c.aliases().contains(&name))
            .map(Box::as_ref)
    }

    /// `/name` of each command, for completion.
    pub fn names(&self) -> Vec<String> {
        self.0.iter().map(|c| format!("/{}", c.name())).collect()
    }

    /// `/help`'s text.
    pub fn help(&self) -> String {
        let mut out = String::new();
        for c in &self.0 {
            let head = if c.args().is_empty() {
                format!("/{}", c.name())
            } else {
                format!("/{} {}", c.name(), c.args())
            };
            out.push_str(&format!("  {head:<22} {}\n", c.about()));
        }
        out.push_str(
            "\nA line ending in \\ (or Alt-Enter) goes on to the next line. Ctrl-C stops the \
             current turn (twice: leave); Ctrl-D leaves.\n",
        );
        out
    }
}

struct Help;

impl SlashCommand for Help {
    fn name(&self) -> &'static str {
        "help"
    }
    fn about(&self) -> &'static str {
        "these commands"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &["?"]
    }
    fn run(&self, session: &mut Session, _args: &str) -> anyhow::Result<Flow> {
        outln!("{}", session.commands_help());
        Ok(Flow::Continue)
    }
}

struct ModeCmd;

impl SlashCommand for ModeCmd {
    fn name(&self) -> &'static str {
        "mode"
    }
    fn args(&self) -> &'static str {
        "[slug]"
    }
    fn about(&self) -> &'static str {
        "show the modes, or switch to one (from the next message on)"
    }
    fn run(&self, session: &mut Session, args: &str) -> anyhow::Result<Flow> {
        let slug = args.trim();
        if slug.is_empty() {
            for (m, name) in session.modes() {
                let mark = if m == session.mode() { "*" } else { " " };
                outln!("{mark} {:<14} {}", visible_line(&m), visible_line(&name));
            }
            return Ok(Flow::Continue);
        }
        session.set_mode(slug)?;
        outln!("mode: {}", visible_line(slug));
        Ok(Flow::Continue)
    }
}

struct ModelCmd;

impl SlashCommand for ModelCmd {
    fn name(&self) -> &'static str {
        "model"
    }
    fn args(&self) -> &'static str {
        "[profile]"
    }
    fn about(&self) -> &'static str {
        "show the config's profiles, or switch to one"
    }
    fn run(&self, session: &mut Session, args: &str) -> anyhow::Result<Flow> {
        let name = args.trim();
        if name.is_empty() {
            let current = session.profile();
            let profiles = session.profiles();
            if profiles.is_empty() {
                outln!("no profiles in the config (add [profiles.NAME] to config.toml)");
            }
            for (p, describe) in profiles {
                let mark = if Some(p.as_str()) == current.as_deref() {
                    "*"
                } else {
                    " "
                };
                outln!(
                    "{mark} {:<14} {}",
                    visible_line(&p),
                    visible_line(&describe)
                );
            }
            return Ok(Flow::Continue);
        }
        session.set_profile(name)?;
        outln!("model: profile {}", visible_line(name));
        Ok(Flow::Continue)
    }
}

struct Approve;

impl SlashCommand for Approve {
    fn name(&self) -> &'static str {
        "approve"
    }
    fn args(&self) -> &'static str {
        "<groups>"
    }
    fn about(&self) -> &'static str {
        "run these tool groups without asking in this session (read,edit,…)"
    }
    fn run(&self, session: &mut Session, args: &str) -> anyhow::Result<Flow> {
        let now = session.approve(args.trim())?;
        outln!("approved without asking: {}", visible_line(&now));
        Ok(Flow::Continue)
    }
}

struct Todos;

impl SlashCommand for Todos {
    fn name(&self) -> &'static str {
        "todos"
    }
    fn about(&self) -> &'static str {
        "the current task's todo list"
    }
    fn run(&self, session: &mut Session, _args: &str) -> anyhow::Result<Flow> {
        let Some(id) = session.task() else {
            outln!("no task yet: type a message to start one");
            return Ok(Flow::Continue);
        };
        let todos = session.records().todos(&id)?;
        if todos.is_empty() {
            outln!("the task has no todo list");
        }
        for t in todos {
            let mark = match t.state {
                TodoState::Pending => "[ ]",
                TodoState::InProgress => "[-]",
                TodoState::Completed => "[x]",
            };
            outln!("{mark} {}", visible_line(&t.text));
        }
        Ok(Flow::Continue)
    }
}

struct History;

impl SlashCommand for History {
    fn name(&self) -> &'static str {
        "history"
    }
    fn about(&self) -> &'static str {
        "the current task's messages"
    }
    fn run(&self, session: &mut Session, _args: &str) -> anyhow::Result<Flow> {
        let Some(id) = session.task() else {
            outln!("no task yet: type a message to start one");
            return Ok(Flow::Continue);
        };
        let records = session.records();
        let t = records.find(&id)?;
        super::super::history::show(&records, &t)?;
        Ok(Flow::Continue)
    }
}

struct Tasks;

impl SlashCommand for Tasks {
    fn name(&self) -> &'static str {
        "tasks"
    }
    fn args(&self) -> &'static str {
        "[id]"
    }
    fn about(&self) -> &'static str {
        "recent tasks, or go on with one of them"
    }
    fn run(&self, session: &mut Session, args: &str) -> anyhow::Result<Flow> {
        let records = session.records();
        let id = args.trim();
        if !id.is_empty() {
            let t = records.find(id)?;
            session.switch_to(&t.id, &t.mode);
            outln!(
                "task {} ({}): your next message continues it",
                visible_line(&t.id),
                t.status
            );
            return Ok(Flow::Continue);
        }
        let listed = records.list(15)?;
        if listed.is_empty() {
            outln!("no tasks yet");
        }
        for l in listed {
            let current = session.task().as_deref() == Some(l.task.id.as_str());
            let prompt: String = l.task.prompt.chars().take(50).collect();
            outln!(
                "{} {}  {:<12} {}",
                if current { "*" } else { " " },
                visible_line(&l.task.id),
                if l.interrupted {
                    "interrupted".to_owned()
                } else {
                    l.task.status.to_string()
                },
                visible(&prompt).replace('\n', " ")
            );
        }
        Ok(Flow::Continue)
    }
}

struct New;

impl SlashCommand for New {
    fn name(&self) -> &'static str {
        "new"
    }
    fn about(&self) -> &'static str {
        "start a new task with the next message"
    }
    fn run(&self, session: &mut Session, _args: &str) -> anyhow::Result<Flow> {
        session.new_task();
        outln!("your next message starts a new task");
        Ok(Flow::Continue)
    }
}

struct Exit;

impl SlashCommand for Exit {
    fn name(&self) -> &'static str {
        "exit"
    }
    fn about(&self) -> &'static str {
        "leave (the task stays in the history)"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &["quit", "q"]
    }
    fn run(&self, _session: &mut Session, _args: &str) -> anyhow::Result<Flow> {
        Ok(Flow::Exit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_found_by_name_and_alias() {
        let c = Commands::builtin();
        for name in [
            "mode", "model", "approve", "todos", "history", "new", "tasks", "help", "exit",
        ] {
            assert_eq!(c.find(name).map(|c| c.name()), Some(name));
        }
        assert_eq!(c.find("quit").map(|c| c.name()), Some("exit"));
        assert!(c.find("undo").is_none());
        assert!(c.help().contains("/mode [slug]"));
    }
}
