//! fs-tools end to end: every tool through the real component and sandbox,
//! including its error paths.

use std::sync::Arc;

use roost_core::first_party;
use roost_core::task::Registry;
use roost_core::tools::{ErrorCode, ToolError, ToolGroup, ToolOutput};
use roost_sandbox::capability::{Grant, Limits};
use roost_sandbox::plugins::LoadedPlugin;
use roost_tests::{TestWorkspace, engine};
use serde_json::{Value, json};

fn plugin() -> Arc<LoadedPlugin> {
    engine()
        .load_bytes("fs-tools", first_party::FS_TOOLS)
        .expect("fs-tools loads")
}

async fn call(
    ws: &TestWorkspace,
    tool: &str,
    args: Value,
    write: &[&str],
) -> Result<ToolOutput, ToolError> {
    let mut grant = Grant::new(ws.path()).read();
    for w in write {
        grant = grant.write(*w);
    }
    engine()
        .call(&plugin(), tool, &args.to_string(), &grant)
        .await
}

fn err_code(r: Result<ToolOutput, ToolError>) -> (ErrorCode, String) {
    let e = r.expect_err("expected a tool error");
    (e.code, e.message)
}

#[test]
fn specs_declare_groups_and_path_args() {
    let p = plugin();
    let names: Vec<_> = p.tools().iter().map(|t| t.name.as_str()).collect();
    for n in [
        "read_file",
        "write_to_file",
        "list_files",
        "search_files",
        "apply_diff",
        "search_and_replace",
        "insert_content",
    ] {
        assert!(names.contains(&n), "missing {n}: {names:?}");
    }
    for t in p.tools() {
        assert_eq!(t.path_args, vec!["path"], "{}", t.name);
        let edit = matches!(
            t.name.as_str(),
            "write_to_file" | "apply_diff" | "search_and_replace" | "insert_content"
        );
        assert_eq!(
            t.group,
            if edit {
                ToolGroup::Edit
            } else {
                ToolGroup::Read
            },
            "{}",
            t.name
        );
        assert_eq!(t.destructive, edit, "{}", t.name);
        assert_eq!(t.args_schema["type"], "object", "{}", t.name);
    }
}

#[tokio::test]
async fn read_file_numbers_lines_and_ranges() {
    let ws = TestWorkspace::new();
    ws.write("a.txt", "one\ntwo\nthree\n");
    let out = call(&ws, "read_file", json!({"path": "a.txt"}), &[])
        .await
        .expect("reads");
    assert_eq!(out.text, "1 | one\n2 | two\n3 | three\n");
    assert_eq!(out.data.as_ref().expect("data")["total_lines"], 3);
    let out = call(
        &ws,
        "read_file",
        json!({"path": "a.txt", "start_line": 2, "end_line": 3}),
        &[],
    )
    .await
    .expect("range");
    assert_eq!(out.text, "2 | two\n3 | three\n");
    let (code, msg) = err_code(
        call(
            &ws,
            "read_file",
            json!({"path": "a.txt", "start_line": 9}),
            &[],
        )
        .await,
    );
    assert_eq!(code, ErrorCode::InvalidArgs, "{msg}");
}

/// The edges of the one-pass numbering: a range past the end, an
/// inverted range, an empty file, CRLF, invalid UTF-8 after the binary
/// sniff's window (replaced, not refused), and a ranged read whose output
/// passes 1 MiB.
#[tokio::test]
async fn read_file_keeps_its_edges() {
    let ws = TestWorkspace::new();
    ws.write("a.txt", "one\r\ntwo\r\nthree");
    let read = |args: Value| {
        let ws = &ws;
        async move { call(ws, "read_file", args, &[]).await }
    };
    let out = read(json!({"path": "a.txt", "start_line": 2, "end_line": 99}))
        .await
        .expect("a range past the end is cut at the end");
    assert_eq!(out.text, "2 | two\n3 | three\n");
    let data = out.data.expect("data");
    assert_eq!(
        (&data["total_lines"], &data["start_line"], &data["end_line"]),
        (&json!(3), &json!(2), &json!(3))
    );
    let (code, msg) =
        err_code(read(json!({"path": "a.txt", "start_line": 3, "end_line": 2})).await);
    assert_eq!(code, ErrorCode::InvalidArgs, "{msg}");
    assert!(msg.contains("line range 3-2"), "{msg}");

    ws.write("empty.txt", "");
    let out = read(json!({"path": "empty.txt"})).await.expect("empty");
    assert_eq!(out.text, "(empty file)\n");
    assert_eq!(out.data.expect("data")["total_lines"], 0);

    let mut bytes = "x\n".repeat(8192).into_bytes();
    bytes.extend_from_slice(b"bad \xff byte\nlast\n");
    std::fs::write(ws.path().join("late.txt"), &bytes).expect("write");
    let out = read(json!({"path": "late.txt", "start_line": 8193}))
        .await
        .expect("invalid UTF-8 past the sniff is text");
    assert_eq!(out.text, "8193 | bad \u{FFFD} byte\n8194 | last\n");

    let line = "y".repeat(1000);
    std::fs::write(ws.path().join("wide.txt"), format!("{line}\n").repeat(1500)).expect("write");
    // The plugin's own stop, under a grant whose output cap is above it.
    let grant = Grant::new(ws.path()).read().limits(Limits {
        output_bytes: 2 << 20,
        ..Limits::default()
    });
    let args = json!({"path": "wide.txt", "start_line": 1, "end_line": 1500});
    let out = engine()
        .call(&plugin(), "read_file", &args.to_string(), &grant)
        .await
        .expect("a ranged read over 1 MiB of output");
    assert!(
        out.text.ends_with(
            "[... stopped at line 1042: output over 1 MiB; read the rest with start_line]\n"
        ),
        "{}",
        &out.text[out.text.len().saturating_sub(200)..]
    );
    let data = out.data.expect("data");
    assert_eq!(
        (&data["total_lines"], &data["end_line"]),
        (&json!(1500), &json!(1042))
    );
}

#[tokio::test]
async fn read_file_errors_and_binary() {
    let ws = TestWorkspace::new();
    let (code, msg) = err_code(call(&ws, "read_file", json!({"path": "missing.txt"}), &[]).await);
    assert_eq!(code, ErrorCode::NotFound);
    assert!(msg.contains("missing.txt"), "{msg}");
    std::fs::write(ws.path().join("bin.dat"), [0u8, 1, 2, 255, 0, 7]).expect("write");
    let out = call(&ws, "read_file", json!({"path": "bin.dat"}), &[])
        .await
        .expect("binary is reported");
    assert!(out.text.contains("binary file"), "{}", out.text);
    assert_eq!(out.data.as_ref().expect("data")["binary"], true);
    std::fs::write(ws.path().join("big.txt"), "x".repeat(2 << 20)).expect("write");
    let (code, msg) = err_code(call(&ws, "read_file", json!({"path": "big.txt"}), &[]).await);
    assert_eq!(code, ErrorCode::LimitExceeded, "{msg}");
    let (code, _) = err_code(call(&ws, "read_file", json!({"path": 42}), &[]).await);
    assert_eq!(code, ErrorCode::InvalidArgs);
    let (code, _) = err_code(call(&ws, "read_file", json!({"path": "a", "bogus": 1}), &[]).await);
    assert_eq!(code, ErrorCode::InvalidArgs);
}

#[tokio::test]
async fn write_to_file_creates_parents_and_needs_a_write_grant() {
    let ws = TestWorkspace::new();
    let out = call(
        &ws,
        "write_to_file",
        json!({"path": "src/deep/new.rs", "content": "a\nb\nc\n"}),
        &["src"],
    )
    .await
    .expect("writes");
    assert!(out.text.contains("3 lines"), "{}", out.text);
    assert_eq!(ws.read("src/deep/new.rs"), "a\nb\nc\n");
    let (code, msg) = err_code(
        call(
            &ws,
            "write_to_file",
            json!({"path": "other.rs", "content": "x"}),
            &["src"],
        )
        .await,
    );
    assert_eq!(code, ErrorCode::PermissionDenied, "{msg}");
    assert!(!ws.path().join("other.rs").exists());
    let (code, _) =
        err_code(call(&ws, "write_to_file", json!({"path": "src/x.rs"}), &["src"]).await);
    assert_eq!(code, ErrorCode::InvalidArgs);
}

#[tokio::test]
async fn list_files_honours_ignore_files_and_limit() {
    let ws = TestWorkspace::new();
    ws.write(".gitignore", "build/\n*.log\n");
    ws.write(".rooignore", "secret/\n");
    ws.write("src/main.rs", "");
    ws.write("src/util/mod.rs", "");
    ws.write("build/out.bin", "");
    ws.write("debug.log", "");
    ws.write("secret/key.pem", "");
    ws.write(".git/HEAD", "ref");
    let out = call(
        &ws,
        "list_files",
        json!({"path": ".", "recursive": true}),
        &[],
    )
    .await
    .expect("lists");
    let entries: Vec<&str> = out.text.lines().collect();
    assert!(entries.contains(&"src/"), "{entries:?}");
    assert!(entries.contains(&"src/util/mod.rs"), "{entries:?}");
    for hidden in ["build/", "debug.log", "secret/", "secret/key.pem", ".git/"] {
        assert!(!entries.contains(&hidden), "{hidden} listed: {entries:?}");
    }
    let top = call(&ws, "list_files", json!({"path": "."}), &[])
        .await
        .expect("lists");
    assert!(!top.text.contains("src/main.rs"), "{}", top.text);
    let limited = call(
        &ws,
        "list_files",
        json!({"path": ".", "recursive": true, "limit": 2}),
        &[],
    )
    .await
    .expect("lists");
    assert_eq!(limited.data.as_ref().expect("data")["truncated"], true);
    assert!(limited.text.contains("truncated at 2"), "{}", limited.text);
    let (code, _) = err_code(call(&ws, "list_files", json!({"path": "nope"}), &[]).await);
    assert_eq!(code, ErrorCode::NotFound);
}

/// A `.rooignore` the user makes while a task holds its workspace open
/// hides its paths from the very next call, however it appears (written,
/// or renamed into place), and a name it no longer lists is readable
/// again: a call knows the workspace lacks one only as of that call.
#[tokio::test]
async fn a_rooignore_made_while_the_workspace_is_held_hides_at_the_next_call() {
    let ws = TestWorkspace::new();
    ws.write("secret/key.pem", "PRIVATE\n");
    let held = roost_sandbox::capability::Workspace::open(&ws.path()).expect("workspace opens");
    let grant = Grant::on_held(ws.path(), &held).read();
    let read = || async {
        engine()
            .call(
                &plugin(),
                "read_file",
                &json!({"path": "secret/key.pem"}).to_string(),
                &grant,
            )
            .await
    };
    // Twice without one: the second call knows it is missing.
    for _ in 0..2 {
        let out = read().await.expect("readable without a .rooignore");
        assert!(out.text.contains("PRIVATE"), "{}", out.text);
    }
    ws.write(".rooignore", "secret/\n");
    let refused = read().await.expect_err("hidden once listed");
    assert!(!refused.message.contains("PRIVATE"), "{}", refused.message);
    std::fs::remove_file(ws.path().join(".rooignore")).expect("removed");
    assert!(
        read()
            .await
            .expect("readable again")
            .text
            .contains("PRIVATE")
    );
    // Renamed into place rather than written.
    ws.write("staged", "secret/\n");
    std::fs::rename(ws.path().join("staged"), ws.path().join(".rooignore")).expect("renamed");
    let refused = read().await.expect_err("hidden once renamed into place");
    assert!(!refused.message.contains("PRIVATE"), "{}", refused.message);
}

#[tokio::test]
async fn search_files_groups_by_file_with_context() {
    let ws = TestWorkspace::new();
    ws.write("src/a.rs", "fn alpha() {}\nlet x = 1;\nfn beta() {}\n");
    ws.write("src/b.txt", "fn gamma() {}\n");
    ws.write("target/c.rs", "fn ignored() {}\n");
    ws.write(".gitignore", "target/\n");
    let out = call(
        &ws,
        "search_files",
        json!({"path": ".", "regex": "fn \\w+", "file_pattern": "*.rs"}),
        &[],
    )
    .await
    .expect("searches");
    assert!(out.text.contains("# src/a.rs"), "{}", out.text);
    assert!(out.text.contains("   1 | fn alpha() {}"), "{}", out.text);
    assert!(
        out.text.contains("   2 | let x = 1;"),
        "context line missing: {}",
        out.text
    );
    assert!(
        !out.text.contains("b.txt") && !out.text.contains("ignored"),
        "{}",
        out.text
    );
    assert_eq!(out.data.as_ref().expect("data")["matches"], 2);
    let limited = call(
        &ws,
        "search_files",
        json!({"path": ".", "regex": "fn", "limit": 1}),
        &[],
    )
    .await
    .expect("ok");
    assert_eq!(limited.data.as_ref().expect("data")["truncated"], true);
    let (code, msg) = err_code(
        call(
            &ws,
            "search_files",
            json!({"path": ".", "regex": "fn ("}),
            &[],
        )
        .await,
    );
    assert_eq!(code, ErrorCode::InvalidArgs);
    assert!(msg.contains("invalid regex"), "{msg}");
}

#[tokio::test]
async fn apply_diff_applies_blocks_and_reports_missing_ones() {
    let ws = TestWorkspace::new();
    ws.write(
        "src/lib.rs",
        "fn a() {\n    one();\n}\n\nfn b() {\n    two();\n}\n",
    );
    let diff = "<<<<<<< SEARCH\n:start_line:2\n-------\n    one();\n=======\n    uno();\n>>>>>>> REPLACE\n\n<<<<<<< SEARCH\n:start_line:6\n-------\n  two();\n=======\n  dos();\n  tres();\n>>>>>>> REPLACE\n";
    let out = call(
        &ws,
        "apply_diff",
        json!({"path": "src/lib.rs", "diff": diff}),
        &["src"],
    )
    .await
    .expect("applies");
    assert!(out.text.contains("2 block(s)"), "{}", out.text);
    assert_eq!(
        ws.read("src/lib.rs"),
        "fn a() {\n    uno();\n}\n\nfn b() {\n    dos();\n    tres();\n}\n"
    );

    let before = ws.read("src/lib.rs");
    let bad = "<<<<<<< SEARCH\n    uno();\n=======\n    eins();\n>>>>>>> REPLACE\n<<<<<<< SEARCH\nnot in the file\n=======\nx\n>>>>>>> REPLACE\n";
    let (code, msg) = err_code(
        call(
            &ws,
            "apply_diff",
            json!({"path": "src/lib.rs", "diff": bad}),
            &["src"],
        )
        .await,
    );
    assert_eq!(code, ErrorCode::NotFound);
    assert!(
        msg.contains("block 2 of 2") && msg.contains("No block was applied"),
        "{msg}"
    );
    assert_eq!(
        ws.read("src/lib.rs"),
        before,
        "a failed diff must change nothing"
    );

    let (code, _) = err_code(
        call(
            &ws,
            "apply_diff",
            json!({"path": "src/lib.rs", "diff": "garbage"}),
            &["src"],
        )
        .await,
    );
    assert_eq!(code, ErrorCode::InvalidArgs);
    let (code, _) = err_code(
        call(
            &ws,
            "apply_diff",
            json!({"path": "src/none.rs", "diff": diff}),
            &["src"],
        )
        .await,
    );
    assert_eq!(code, ErrorCode::NotFound);
}

#[tokio::test]
async fn apply_diff_keeps_crlf_line_endings() {
    let ws = TestWorkspace::new();
    ws.write("w.txt", "a\r\nb\r\nc\r\n");
    let diff = "<<<<<<< SEARCH\nb\n=======\nB\n>>>>>>> REPLACE";
    call(
        &ws,
        "apply_diff",
        json!({"path": "w.txt", "diff": diff}),
        &["."],
    )
    .await
    .expect("applies");
    assert_eq!(ws.read("w.txt"), "a\r\nB\r\nc\r\n");
}

#[tokio::test]
async fn search_and_replace_literal_regex_and_ranges() {
    let ws = TestWorkspace::new();
    ws.write("f.txt", "cost $5\nfoo1 foo2\nfoo3\n");
    let out = call(
        &ws,
        "search_and_replace",
        json!({"path": "f.txt", "search": "$5", "replace": "$6"}),
        &["."],
    )
    .await
    .expect("literal");
    assert!(out.text.contains("1 replacement"), "{}", out.text);
    assert_eq!(ws.read("f.txt"), "cost $6\nfoo1 foo2\nfoo3\n");
    call(
        &ws,
        "search_and_replace",
        json!({"path": "f.txt", "search": "foo(\\d)", "replace": "bar$1", "use_regex": true, "start_line": 3, "end_line": 3}),
        &["."],
    )
    .await
    .expect("regex in range");
    assert_eq!(ws.read("f.txt"), "cost $6\nfoo1 foo2\nbar3\n");
    call(
        &ws,
        "search_and_replace",
        json!({"path": "f.txt", "search": "FOO", "replace": "x", "ignore_case": true}),
        &["."],
    )
    .await
    .expect("ignore case");
    assert_eq!(ws.read("f.txt"), "cost $6\nx1 x2\nbar3\n");
    let (code, _) = err_code(
        call(
            &ws,
            "search_and_replace",
            json!({"path": "f.txt", "search": "(", "replace": "", "use_regex": true}),
            &["."],
        )
        .await,
    );
    assert_eq!(code, ErrorCode::InvalidArgs);
    let (code, _) = err_code(
        call(
            &ws,
            "search_and_replace",
            json!({"path": "f.txt", "search": "absent", "replace": ""}),
            &["."],
        )
        .await,
    );
    assert_eq!(code, ErrorCode::NotFound);
}

#[tokio::test]
async fn insert_content_at_line_and_append() {
    let ws = TestWorkspace::new();
    ws.write("i.txt", "a\nc\n");
    call(
        &ws,
        "insert_content",
        json!({"path": "i.txt", "line": 2, "content": "b"}),
        &["."],
    )
    .await
    .expect("insert");
    assert_eq!(ws.read("i.txt"), "a\nb\nc\n");
    call(
        &ws,
        "insert_content",
        json!({"path": "i.txt", "line": 0, "content": "d\ne"}),
        &["."],
    )
    .await
    .expect("append");
    assert_eq!(ws.read("i.txt"), "a\nb\nc\nd\ne\n");
    let (code, _) = err_code(
        call(
            &ws,
            "insert_content",
            json!({"path": "i.txt", "line": 99, "content": "x"}),
            &["."],
        )
        .await,
    );
    assert_eq!(code, ErrorCode::InvalidArgs);
    call(
        &ws,
        "insert_content",
        json!({"path": "new.txt", "line": 1, "content": "first"}),
        &["."],
    )
    .await
    .expect("create");
    assert_eq!(ws.read("new.txt"), "first\n");
    let (code, _) = err_code(
        call(
            &ws,
            "insert_content",
            json!({"path": "none.txt", "line": 5, "content": "x"}),
            &["."],
        )
        .await,
    );
    assert_eq!(code, ErrorCode::NotFound);
}

#[test]
fn host_schema_gate_lists_every_violation() {
    let mut registry = Registry::new();
    registry.add_plugin(plugin()).expect("registers");
    let tool = registry.get("read_file").expect("read_file registered");
    assert!(tool.validator.check(&json!({"path": "a"})).is_ok());
    let errs = tool
        .validator
        .check(&json!({"path": 1, "start_line": "x", "bogus": true}))
        .expect_err("invalid");
    assert!(errs.len() >= 3, "{errs:?}");
}
