//! Unit tests for the protected-paths decision logic.

use super::*;

/// `decide` for `write_to_file` of the given paths.
fn write(paths: &[&str]) -> Decision {
    let paths: Vec<String> = paths.iter().map(|p| (*p).to_owned()).collect();
    decide("write_to_file", true, true, &paths)
}

/// The question asked, failing the test on `Allow`.
fn question(d: Decision) -> String {
    match d {
        Decision::Ask(q) => q,
        Decision::Allow => panic!("expected a question, got Allow"),
    }
}

#[test]
fn every_pattern_asks() {
    for path in [
        ".roo/config.json",
        ".roomodes",
        ".rooignore",
        ".roorules",
        ".roorules-code",
        ".clinerules",
        ".clinerules-architect.md",
        ".rooprotected",
        ".vscode/settings.json",
        "AGENTS.md",
        "AGENT.md",
        ".orchestration/state.json",
    ] {
        let q = question(write(&[path]));
        assert!(q.contains(path), "{path}: {q}");
        assert!(q.contains("`write_to_file`"), "{q}");
        assert!(q.contains("protected"), "{q}");
        assert!(q.ends_with("approve?"), "{q}");
    }
}

#[test]
fn the_question_has_the_documented_shape() {
    assert_eq!(
        question(write(&[".roomodes"])),
        "`write_to_file` edits .roomodes, a protected configuration file (Roo's protected paths): approve?"
    );
}

#[test]
fn nested_paths_in_protected_directories_ask() {
    for path in [
        ".roo/rules/x.md",
        ".roo/rules-code/deep/er/file.md",
        ".vscode/extensions/a/b.json",
        ".orchestration/intents/1/trace.jsonl",
        ".clinerules/01-style.md",
    ] {
        assert!(matches!(write(&[path]), Decision::Ask(_)), "{path}");
    }
}

#[test]
fn protected_directories_themselves_ask() {
    for path in [".roo", ".vscode/", ".orchestration"] {
        assert!(matches!(write(&[path]), Decision::Ask(_)), "{path}");
    }
}

#[test]
fn slash_free_patterns_match_at_any_depth() {
    // Roo's gitignore semantics.
    for path in [
        "nested/.roomodes",
        "nested/.rooignore",
        "pkg/.roorules.md",
        "docs/AGENTS.md",
    ] {
        assert!(matches!(write(&[path]), Decision::Ask(_)), "{path}");
    }
}

#[test]
fn near_misses_are_allowed() {
    for path in [
        "src/.roomodes.rs",
        ".roomodes.bak",
        "roomodes",
        ".rooignore.d.ts",
        "AGENTS.md.bak",
        "docs/AGENTS.mdx",
        "MY_AGENTS.md",
        ".roo-notes/x.md",
        "src/roo/config.json",
        ".vscodeextra/settings.json",
        "src/.vscode/settings.json",
        "orchestration/state.json",
        "sub/.orchestration/state.json",
        "src/main.rs",
    ] {
        assert_eq!(write(&[path]), Decision::Allow, "{path}");
    }
}

#[test]
fn paths_are_normalised() {
    for (path, shown) in [
        ("./AGENTS.md", "AGENTS.md"),
        ("././.roomodes", ".roomodes"),
        ("src/../.roomodes", ".roomodes"),
        (".roo//rules/x.md", ".roo/rules/x.md"),
        (".vscode\\settings.json", ".vscode/settings.json"),
    ] {
        let q = question(write(&[path]));
        assert!(q.contains(&format!("edits {shown},")), "{path}: {q}");
    }
}

#[test]
fn case_is_ignored() {
    assert!(matches!(write(&[".RooModes"]), Decision::Ask(_)));
    assert!(matches!(write(&["agents.md"]), Decision::Ask(_)));
    assert!(matches!(write(&[".VSCode/tasks.json"]), Decision::Ask(_)));
}

#[test]
fn every_protected_hit_is_listed_once() {
    let q = question(write(&[
        "src/main.rs",
        ".roomodes",
        ".roo/rules/x.md",
        "./.roomodes",
        "AGENTS.md",
    ]));
    assert_eq!(
        q,
        "`write_to_file` edits .roomodes, .roo/rules/x.md and AGENTS.md, protected configuration files (Roo's protected paths): approve?"
    );
    assert!(!q.contains("src/main.rs"));
}

#[test]
fn unprotected_edits_are_allowed() {
    assert_eq!(write(&["src/lib.rs", "README.md"]), Decision::Allow);
    assert_eq!(write(&[]), Decision::Allow);
    assert_eq!(write(&[""]), Decision::Allow);
}

#[test]
fn reads_are_allowed() {
    let paths = vec![".roomodes".to_owned(), ".roo/rules/x.md".to_owned()];
    assert_eq!(decide("read_file", false, false, &paths), Decision::Allow);
    assert_eq!(decide("list_files", false, false, &paths), Decision::Allow);
}

#[test]
fn destructive_calls_outside_the_edit_group_ask() {
    let paths = vec![".vscode/settings.json".to_owned()];
    let q = question(decide("execute_command", false, true, &paths));
    assert!(
        q.starts_with("`execute_command` edits .vscode/settings.json"),
        "{q}"
    );
}

#[test]
fn edit_group_calls_ask_even_if_not_marked_destructive() {
    let paths = vec!["AGENT.md".to_owned()];
    assert!(matches!(
        decide("insert_content", true, false, &paths),
        Decision::Ask(_)
    ));
}

#[test]
fn normalize_resolves_components() {
    assert_eq!(normalize("./a/./b/../c"), "a/c");
    assert_eq!(normalize("a\\b"), "a/b");
    assert_eq!(normalize(""), "");
    assert_eq!(normalize("../x"), "x");
}

#[test]
fn every_glob_compiles() {
    assert!(!is_protected("src/lib.rs"));
    assert_eq!(PROTECTED.len(), 10);
}

#[test]
fn prompt_contribution_lists_the_paths() {
    for pattern in PROTECTED {
        assert!(PROMPT_CONTRIBUTION.contains(pattern), "{pattern}");
    }
    assert!(PROMPT_CONTRIBUTION.contains("approval"));
}
