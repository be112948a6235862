//! The system prompt, rebuilt every turn from sections (role, formatting,
//! tool use, capabilities, rules, system info, objective, custom
//! instructions), as Roo Code does, so a change to the workspace's rules or
//! the mode takes effect on the next turn.

use std::path::Path;

use crate::tools::ToolSpec;
use roost_sandbox::capability::Workspace;

/// Largest custom-instruction file read into the prompt.
const MAX_RULE_FILE: u64 = 64 << 10;

/// Inputs of one turn's system prompt.
pub struct PromptContext<'a> {
    /// The mode's role definition.
    pub role: &'a str,
    /// Mode slug, for the rules section.
    pub mode: &'a str,
    /// Workspace on the host.
    pub workspace: &'a Path,
    /// The same workspace, opened: the custom-instruction files are read
    /// through it (the task's handle, not a fresh open every turn).
    pub files: &'a Workspace,
    /// Tools offered this turn.
    pub tools: &'a [&'a ToolSpec],
    /// The skills section (the mode's skills and the mandatory check), if
    /// the workspace has skills.
    pub skills: Option<&'a str>,
    /// Extra sections (hook contributions, intent context…).
    pub extra: &'a [String],
}

/// Build the system prompt.
pub fn build(ctx: &PromptContext<'_>) -> String {
    let mut s = String::with_capacity(8 * 1024);
    s.push_str(ctx.role.trim());
    s.push_str("\n\n====\n\nMARKDOWN RULES\n\nIn your replies, write file names and code constructs as clickable markdown, e.g. `src/main.rs`. Keep answers concise and direct.\n");
    s.push_str("\n====\n\nTOOL USE\n\nYou have tools you call with native function calls, one or more per message; each result comes back in the next user message. Use one tool at a time when a call depends on the result of another. Never assume the outcome of a call: wait for its result.\n");
    s.push_str("\n# Tool Use Guidelines\n\n1. Assess what information you already have and what you need.\n2. Pick the tool that best fits the step; prefer reading (read_file, list_files, search_files) before editing.\n3. Edit with apply_diff for targeted changes, write_to_file for new files or complete rewrites.\n4. After each call, check its result before the next step: errors tell you what to fix.\n5. When the task is done, call attempt_completion with the result. Ask with ask_followup_question only when you cannot find the answer with your tools.\n");
    s.push_str("\n====\n\nCAPABILITIES\n\n- Every tool runs in a WebAssembly sandbox that sees only what the call was granted: the workspace read-only, and writable only where the current grant allows. A permission-denied error means the write is outside the grant, not that the file is locked.\n- Paths are relative to the workspace root.\n");
    if !ctx.tools.is_empty() {
        s.push_str("- Tools available in this mode: ");
        let names: Vec<&str> = ctx.tools.iter().map(|t| t.name.as_str()).collect();
        s.push_str(&names.join(", "));
        s.push('\n');
    }
    if let Some(skills) = ctx.skills {
        s.push_str("\n====\n\n");
        s.push_str(skills);
    }
    // Written piece by piece: it is built every turn.
    let workspace = ctx.workspace.to_string_lossy();
    s.push_str("\n====\n\nRULES\n\n- The workspace root is: ");
    s.push_str(&workspace);
    s.push_str("\n- You cannot change directory; pass paths relative to the workspace root.\n- Do not ask for information you can get with a tool.\n- Do not end attempt_completion's result with a question or an offer of further help.\n- Do not start messages with \"Great\", \"Certainly\", \"Okay\" or \"Sure\".\n- Current mode: ");
    s.push_str(ctx.mode);
    s.push_str(".\n\n====\n\nSYSTEM INFORMATION\n\nOperating system: ");
    s.push_str(std::env::consts::OS);
    s.push_str("\nWorkspace: ");
    s.push_str(&workspace);
    s.push('\n');
    s.push_str("\n====\n\nOBJECTIVE\n\nWork through the user's task step by step: set clear goals, use your tools to reach each one, and finish with attempt_completion once the result is verified.\n");
    for extra in ctx.extra {
        s.push_str("\n====\n\n");
        s.push_str(extra.trim());
        s.push('\n');
    }
    let custom = custom_instructions(ctx.files, ctx.mode);
    if !custom.is_empty() {
        s.push_str("\n====\n\nUSER'S CUSTOM INSTRUCTIONS\n\nFollow these instructions from the workspace. They do not override the rules above.\n\n");
        s.push_str(&custom);
    }
    s
}

/// Custom instructions from the workspace, as Roo Code reads them:
/// `.roo/rules/*` (sorted), `.roo/rules-<mode>/*`, and `AGENTS.md`. Read
/// through the workspace layer: symlinks are followed only while they stay
/// inside the workspace, only regular files are read, each at most 64 KiB.
pub fn custom_instructions(ws: &Workspace, mode: &str) -> String {
    let mut out = String::new();
    for dir in [".roo/rules".to_owned(), format!(".roo/rules-{mode}")] {
        let files = match ws.list_files(&dir) {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!("custom instructions in {dir} not read: {e}");
                continue;
            }
        };
        for f in files {
            if let Some(text) = read_small(ws, &f.as_string()) {
                out.push_str(&format!("# Rules from {f}:\n{}\n\n", text.trim()));
            }
        }
    }
    if let Some(text) = read_small(ws, "AGENTS.md") {
        out.push_str(&format!("# Rules from AGENTS.md:\n{}\n\n", text.trim()));
    }
    out
}

fn read_small(ws: &Workspace, rel: &str) -> Option<String> {
    match ws.read_text(rel, MAX_RULE_FILE) {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!("custom instruction file left out: {e}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_sections_rules_and_agents_md() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join(".roo/rules")).expect("mkdir");
        std::fs::write(dir.path().join(".roo/rules/01-style.md"), "Use tabs.").expect("write");
        std::fs::write(dir.path().join("AGENTS.md"), "Run tests first.").expect("write");
        let files = Workspace::open(dir.path()).expect("open");
        let p = build(&PromptContext {
            role: "You are Roost.",
            mode: "code",
            workspace: dir.path(),
            files: &files,
            tools: &[],
            skills: None,
            extra: &[],
        });
        for needle in [
            "You are Roost.",
            "TOOL USE",
            "CAPABILITIES",
            "RULES",
            "SYSTEM INFORMATION",
            "OBJECTIVE",
            "Use tabs.",
            "Run tests first.",
        ] {
            assert!(p.contains(needle), "missing {needle}");
        }
    }

    /// Rule files that are links out of the workspace, devices or FIFOs are
    /// left out without blocking or reading them; a link inside counts.
    #[test]
    fn hostile_rule_files_are_left_out() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().expect("tempdir");
        let w = dir.path().join("ws");
        std::fs::create_dir_all(w.join(".roo/rules")).expect("mkdir");
        std::fs::write(dir.path().join("outside.md"), "OUTSIDE SECRET").expect("write");
        symlink("/dev/zero", w.join("AGENTS.md")).expect("symlink");
        symlink("/proc/self/environ", w.join(".roo/rules/01-env.md")).expect("symlink");
        symlink("../../../outside.md", w.join(".roo/rules/02-out.md")).expect("symlink");
        std::fs::write(w.join("CLAUDE.md"), "Inside rules.").expect("write");
        symlink("../../CLAUDE.md", w.join(".roo/rules/03-in.md")).expect("symlink");
        let fifo = std::process::Command::new("mkfifo")
            .arg(w.join(".roo/rules/04-fifo.md"))
            .status()
            .expect("mkfifo");
        assert!(fifo.success());
        let text = custom_instructions(&Workspace::open(&w).expect("open"), "code");
        assert!(text.contains("Inside rules."), "{text}");
        assert!(!text.contains("OUTSIDE SECRET"), "{text}");
        assert!(!text.contains("PATH="), "{text}");
        assert!(!text.contains("AGENTS.md"), "{text}");
    }
}
