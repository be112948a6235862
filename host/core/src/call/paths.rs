//! The path gate: every path a call declares is normalised before any
//! other gate sees it. `a/../secret`, `/workspace/secret` and the
//! workspace's host path all become `secret`; a path that leaves the
//! workspace (`..` above the root, another absolute path, a symlink
//! pointing out) is refused. The normalised path and the path it resolves
//! to through in-workspace symlinks are both checked against `.rooignore`,
//! and a destructive call may not name an authority file
//! ([`authority`](roost_sandbox::capability::authority)). The call then runs with
//! the normalised paths, so what was checked is what the tool acts on.

use serde_json::Value;

use crate::tools::ToolSpec;
use roost_protocol::UiSubtype;
use roost_sandbox::capability::{RooIgnore, Workspace, WorkspaceError, authority};

/// Why the gate refused a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathRefusal {
    /// UI row subtype (`rooignore_error`, `path_error`).
    pub ui_subtype: UiSubtype,
    /// The path as declared.
    pub path: String,
    /// The message the model gets.
    pub message: String,
}

/// Normalise the declared paths of `args` in place, or refuse the call.
pub fn check(
    ws: &Workspace,
    ignore: &RooIgnore,
    spec: &ToolSpec,
    args: &mut Value,
) -> Result<(), PathRefusal> {
    for arg in &spec.path_args {
        let Some(raw) = args.get(arg).and_then(Value::as_str).map(str::to_owned) else {
            continue;
        };
        let refuse = |message: String| PathRefusal {
            ui_subtype: UiSubtype::PathError,
            path: raw.clone(),
            message,
        };
        let rel = ws.normalize(&raw).map_err(|e| refuse(describe(&raw, &e)))?;
        let real = ws.resolve(&rel).map_err(|e| refuse(describe(&raw, &e)))?;
        for p in [&rel, &real] {
            if ignore.blocks(&p.as_string()) {
                return Err(PathRefusal {
                    ui_subtype: UiSubtype::RooignoreError,
                    path: raw.clone(),
                    message: RooIgnore::message(&raw),
                });
            }
            if spec.destructive && authority::is_authority(&p.as_string()) {
                return Err(refuse(authority::message(&p.as_string())));
            }
        }
        if let Some(slot) = args.get_mut(arg) {
            *slot = Value::String(rel.as_string());
        }
    }
    Ok(())
}

fn describe(raw: &str, e: &WorkspaceError) -> String {
    match e {
        WorkspaceError::Outside { .. } => format!(
            "`{raw}` is outside the workspace. Use a path relative to the workspace root (no `..` above it, no other \
             absolute path, no symlink that leads out)."
        ),
        other => format!("`{raw}` cannot be used: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::ToolGroup;

    fn spec(destructive: bool) -> ToolSpec {
        ToolSpec {
            name: "t".into(),
            description: String::new(),
            args_schema: serde_json::json!({"type": "object"}),
            group: if destructive {
                ToolGroup::Edit
            } else {
                ToolGroup::Read
            },
            destructive,
            path_args: vec!["path".into()],
            annotations: Default::default(),
        }
    }

    #[test]
    fn every_path_form_is_normalised_and_checked() {
        let d = tempfile::tempdir().expect("tempdir");
        let w = d.path().join("ws");
        std::fs::create_dir_all(w.join("a")).expect("mkdir");
        std::fs::write(w.join("secret"), "s").expect("write");
        std::fs::write(w.join(".rooignore"), "secret\n").expect("write");
        std::fs::create_dir_all(w.join(".git")).expect("mkdir");
        std::os::unix::fs::symlink("secret", w.join("alias")).expect("symlink");
        std::os::unix::fs::symlink(".git/config", w.join("gitlink")).expect("symlink");
        std::os::unix::fs::symlink("/etc", w.join("out")).expect("symlink");
        let ws = Workspace::open(&w).expect("ws");
        let ignore = RooIgnore::load_in(&ws);
        let host = ws.host_path().display().to_string();
        for raw in [
            "a/../secret".to_owned(),
            "/workspace/secret".to_owned(),
            "./secret".to_owned(),
            format!("{host}/secret"),
            "alias".to_owned(),
        ] {
            let mut args = serde_json::json!({ "path": raw });
            let err = check(&ws, &ignore, &spec(false), &mut args).expect_err(&raw);
            assert_eq!(err.ui_subtype, UiSubtype::RooignoreError, "{raw}");
        }
        for raw in ["../x", "/etc/passwd", "/dev/stdin", "out/passwd"] {
            let mut args = serde_json::json!({ "path": raw });
            let err = check(&ws, &ignore, &spec(false), &mut args).expect_err(raw);
            assert_eq!(err.ui_subtype, UiSubtype::PathError, "{raw}");
            assert!(err.message.contains("outside the workspace"), "{raw}");
        }
        for raw in [
            ".git/config",
            "gitlink",
            ".orchestration/active_intents.yaml",
        ] {
            let mut args = serde_json::json!({ "path": raw });
            let err = check(&ws, &ignore, &spec(true), &mut args).expect_err(raw);
            assert!(err.message.contains(".git/"), "{raw}: {}", err.message);
            let mut args = serde_json::json!({ "path": raw });
            assert!(
                check(&ws, &ignore, &spec(false), &mut args).is_ok(),
                "reads are fine"
            );
        }
        let mut args = serde_json::json!({ "path": "/workspace/a/../a/new.rs" });
        check(&ws, &ignore, &spec(true), &mut args).expect("allowed");
        assert_eq!(args["path"], "a/new.rs");
    }
}
