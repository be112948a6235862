//! The built-in modes, with Roo Code's tool groups and role definitions in
//! Roost's own words.

use std::sync::Arc;

use regex::Regex;

use super::{GroupGrant, Mode, ModeSource};
use roost_protocol::ToolGroup;

fn g(group: ToolGroup) -> GroupGrant {
    GroupGrant {
        group,
        file_regex: None,
        description: None,
    }
}

fn mode(slug: &str, name: &str, role: &str, when: &str, groups: Vec<GroupGrant>) -> Mode {
    Mode {
        slug: slug.into(),
        name: name.into(),
        role_definition: role.into(),
        when_to_use: Some(when.into()),
        description: None,
        custom_instructions: None,
        groups,
        hooks: Vec::new(),
        command_profile: None,
        source: ModeSource::BuiltIn,
    }
}

/// `code`, `architect`, `ask`, `debug`, `orchestrator`. Built once per
/// process and shared: each task loads its mode set (compiling the file
/// regexes, then copying the modes' texts, every time showed in the
/// many-task profile).
pub fn modes() -> &'static [Arc<Mode>] {
    static BUILT: std::sync::OnceLock<Vec<Arc<Mode>>> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| build().into_iter().map(Arc::new).collect())
}

fn build() -> Vec<Mode> {
    use ToolGroup::{Browser, Command, Edit, Mcp, Modes, Read};
    let markdown_only = GroupGrant {
        group: Edit,
        file_regex: Regex::new(r"\.md$").ok(),
        description: Some("Markdown files only".into()),
    };
    vec![
        mode(
            "code",
            "💻 Code",
            "You are Roost, a highly skilled software engineer working in the user's workspace through sandboxed tools. You read before you edit, make focused changes, verify them, and report clearly.",
            "Writing, changing or refactoring code.",
            vec![g(Read), g(Edit), g(Browser), g(Command), g(Mcp)],
        ),
        mode(
            "architect",
            "🏗️ Architect",
            "You are Roost, an experienced technical lead. You gather context, ask clarifying questions, and write plans and designs as Markdown documents that another mode will implement.",
            "Planning, designing or specifying before implementation.",
            vec![g(Read), markdown_only, g(Browser), g(Mcp)],
        ),
        mode(
            "ask",
            "❓ Ask",
            "You are Roost, a knowledgeable technical assistant. You answer questions about the code and concepts precisely, reading the workspace as needed, without changing anything.",
            "Explanations, documentation lookups, questions about the code.",
            vec![g(Read), g(Browser), g(Mcp)],
        ),
        mode(
            "debug",
            "🪲 Debug",
            "You are Roost, an expert at systematic debugging. You form hypotheses, add diagnostics, narrow down the cause, and fix it with the smallest sound change.",
            "Investigating errors, failures and unexpected behaviour.",
            vec![g(Read), g(Edit), g(Browser), g(Command), g(Mcp)],
        ),
        mode(
            "orchestrator",
            "🪃 Orchestrator",
            "You are Roost, a strategic coordinator. You break complex work into subtasks and delegate each to the mode best suited to it; you do not edit files yourself.",
            "Complex, multi-step work that spans several specialities.",
            vec![g(Modes)],
        ),
    ]
}
