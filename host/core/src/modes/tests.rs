use serde_json::json;

use super::*;

fn spec(name: &str, group: ToolGroup) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: String::new(),
        args_schema: json!({"type": "object"}),
        group,
        destructive: group == ToolGroup::Edit,
        path_args: vec!["path".into()],
        annotations: Default::default(),
    }
}

#[test]
fn builtins_have_roos_groups() {
    let dir = tempfile::tempdir().expect("tempdir");
    let set = ModeSet::load(dir.path(), None);
    let slugs: Vec<_> = set.iter().map(|m| m.slug.as_str()).collect();
    assert_eq!(slugs, ["architect", "ask", "code", "debug", "orchestrator"]);
    let ask = set.get("ask").expect("ask");
    assert!(!ask.offers(&spec("write_to_file", ToolGroup::Edit), false));
    assert!(ask.offers(&spec("attempt_completion", ToolGroup::Modes), true));
    let orch = set.get("orchestrator").expect("orchestrator");
    assert!(!orch.offers(&spec("read_file", ToolGroup::Read), false));
}

#[test]
fn architect_may_edit_markdown_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let set = ModeSet::load(dir.path(), None);
    let a = set.get("architect").expect("architect");
    let w = spec("write_to_file", ToolGroup::Edit);
    assert!(a.check(&w, &json!({"path": "docs/plan.md"}), false).is_ok());
    let e = a
        .check(&w, &json!({"path": "src/main.rs"}), false)
        .expect_err("refused");
    assert!(e.starts_with("FileRestrictionError: This mode (🏗️ Architect) can only edit files matching pattern: \\.md$ (Markdown files only). Got: src/main.rs"), "{e}");
}

#[test]
fn project_overrides_global_overrides_builtin() {
    let ws = tempfile::tempdir().expect("tempdir");
    let cfg = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        cfg.path().join("custom_modes.yaml"),
        "customModes:\n  - slug: code\n    name: Global Code\n    roleDefinition: global role\n    groups: [read]\n  - slug: reviewer\n    name: Reviewer\n    roleDefinition: reviews\n    groups: [read]\n",
    )
    .expect("write");
    std::fs::write(
        ws.path().join(".roomodes"),
        r#"{"customModes": [{"slug": "code", "name": "Project Code", "roleDefinition": "project role", "groups": ["read", ["edit", {"fileRegex": "\\.rs$", "description": "Rust only"}]], "hooks": ["secret-guard"]}]}"#,
    )
    .expect("write");
    let set = ModeSet::load(ws.path(), Some(cfg.path()));
    assert!(set.errors.is_empty(), "{:?}", set.errors);
    let code = set.get("code").expect("code");
    assert_eq!(code.name, "Project Code");
    assert_eq!(code.hooks, vec!["secret-guard"]);
    assert!(matches!(code.source, ModeSource::Project(_)));
    assert!(
        code.check(
            &spec("apply_diff", ToolGroup::Edit),
            &json!({"path": "a.md"}),
            false
        )
        .is_err()
    );
    assert_eq!(
        set.get("reviewer").expect("global mode").role_definition,
        "reviews"
    );
}

#[test]
fn invalid_entries_are_reported_and_valid_ones_load() {
    let ws = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        ws.path().join(".roomodes"),
        "customModes:\n  - slug: good\n    name: Good\n    roleDefinition: fine\n    groups: [read]\n  - slug: nameless\n    roleDefinition: x\n    groups: [read]\n  - slug: badgroup\n    name: B\n    roleDefinition: x\n    groups: [read, teleport]\n  - slug: badregex\n    name: R\n    roleDefinition: x\n    groups: [[edit, {fileRegex: '('}]]\n",
    )
    .expect("write");
    let set = ModeSet::load(ws.path(), None);
    assert!(set.get("good").is_some());
    assert_eq!(set.errors.len(), 3, "{:?}", set.errors);
    let msgs: Vec<String> = set.errors.iter().map(ToString::to_string).collect();
    assert!(
        msgs[0].contains(".roomodes")
            && msgs[0].contains("(nameless)")
            && msgs[0].contains("field `name`"),
        "{}",
        msgs[0]
    );
    assert!(
        msgs[1].contains("field `groups`") && msgs[1].contains("teleport"),
        "{}",
        msgs[1]
    );
    assert!(msgs[2].contains("invalid fileRegex"), "{}", msgs[2]);

    std::fs::write(
        ws.path().join(".roomodes"),
        "customModes:\n  - slug: t\n    name: T\n    roleDefinition: x\n    groups: 3\n",
    )
    .expect("write");
    let set = ModeSet::load(ws.path(), None);
    assert!(
        set.errors[0].to_string().contains("field `groups`"),
        "{}",
        set.errors[0]
    );

    std::fs::write(ws.path().join(".roomodes"), "customModes: [unclosed").expect("write");
    let set = ModeSet::load(ws.path(), None);
    assert_eq!(set.errors.len(), 1);
    assert!(
        set.errors[0].to_string().contains("not valid YAML or JSON"),
        "{}",
        set.errors[0]
    );
    assert!(set.get("code").is_some(), "built-ins survive a broken file");
}
