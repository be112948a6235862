//! MCP servers' tools in Roost's tasks, end to end, against real servers:
//! `@modelcontextprotocol/server-everything` (stdio and streamable HTTP),
//! `@modelcontextprotocol/server-filesystem` (stdio), and a hostile
//! server of the tests' own (`tests/mcp/hostile.mjs`) that crashes,
//! hangs, floods, lies about names and paints its text. Every stdio
//! server runs in the command sandbox (real bubblewrap); every call goes
//! through the one dispatch with every gate.

use std::path::{Path, PathBuf};
use std::process::Command;

use roost_core::task::{Approval, ApprovalPolicy, TaskOutcome};
use roost_tests::harness::{Harness, call, complete, scripted_harness, trace_lines, turn};
use roost_tests::identity::{Identity, NOBODY, chown_tree, identities, runnable_by_anyone};
use roost_tests::user::ScriptedUser;
use roost_tests::{mcp_bin, mcp_script};
use serde_json::{Value, json};

fn hostile(mode: &str) -> Value {
    hostile_at(&mcp_script("hostile.mjs"), mode)
}

/// The hostile server in `mode`, run from the script at `script`.
fn hostile_at(script: &Path, mode: &str) -> Value {
    json!({"command": "node", "args": [script, mode], "timeout": 5})
}

fn one(name: &str, args: Value) -> Value {
    turn("", vec![call(name, args)])
}

fn with_id(name: &str, args: Value, id: &str) -> Value {
    turn("", vec![json!({"name": name, "args": args, "id": id})])
}

/// A harness whose model makes `turns` then completes, with `servers` as
/// the user's global MCP configuration.
fn harness_with(servers: Value, turns: Vec<Value>, policy: ApprovalPolicy) -> Harness {
    let mut turns = turns;
    turns.push(complete("done"));
    let mut h = scripted_harness(json!({ "turns": turns }), policy);
    let config_dir = h.ws.root().join("config");
    std::fs::create_dir_all(&config_dir).expect("config dir");
    std::fs::write(
        config_dir.join("mcp_settings.json"),
        json!({ "mcpServers": servers }).to_string(),
    )
    .expect("settings");
    h.config_dir = Some(config_dir);
    h.command_bridge = Some(PathBuf::from(env!("CARGO_BIN_EXE_roost")));
    h
}

/// The tool names of the `n`th request the model got.
fn offered(h: &Harness, n: usize) -> Vec<String> {
    let requests = h.transport.requests();
    requests[n]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

/// A task calls a hostile server's tools through every gate: escapes
/// removed from results and descriptions, a schema-invalid call refused
/// before it leaves Roost, a destructive call refused before an intent
/// and traced after one, `alwaysAllow` not asked, others asked,
/// `disabledTools` and oversized or misnamed tools not offered, an
/// oversized result spilled and paged, a call past its timeout and a
/// crash mid-call as error results (the server restarted), and the tool
/// list refreshed on `list_changed`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_uses_mcp_tools_under_every_gate() {
    let mut server = hostile("tools");
    server["alwaysAllow"] = json!(["echo"]);
    server["disabledTools"] = json!(["disabled_one"]);
    let h = harness_with(
        json!({ "hostile": server }),
        vec![
            one("mcp__hostile__echo", json!({"message": "hi"})),
            one("mcp__hostile__echo", json!({"wrong": 1})),
            one("mcp__hostile__write_note", json!({"text": "before"})),
            one("select_active_intent", json!({"intent_id": "INT-1"})),
            one("mcp__hostile__write_note", json!({"text": "after"})),
            with_id("mcp__hostile__big", json!({"bytes": 300000}), "big1"),
            one("read_mcp_output", json!({"id": "big1", "offset": 290000})),
            one("mcp__hostile__hang", json!({})),
            one("mcp__hostile__crash", json!({})),
            one("mcp__hostile__echo", json!({"message": "again"})),
            one("mcp__hostile__flip", json!({})),
            // The notification comes before the result; a turn later the
            // list is fresh.
            one("mcp__hostile__echo", json!({"message": "later"})),
            one("mcp__hostile__new_tool", json!({})),
            one("mcp__hostile__disabled_one", json!({})),
            one("mcp__hostile__read_file", json!({})),
        ],
        ApprovalPolicy::default(),
    );
    h.ws.write(
        ".orchestration/active_intents.yaml",
        "active_intents:\n  - {id: INT-1, name: Notes, status: IN_PROGRESS, owned_scope: [\"notes/**\"]}\n",
    );
    let user = ScriptedUser::default()
        .approve(Approval::Approve)
        .approve(Approval::Approve)
        .approve(Approval::Approve)
        .approve(Approval::Approve)
        .approve(Approval::Approve)
        .approve(Approval::Approve)
        .approve(Approval::Approve)
        .approve(Approval::Approve)
        .approve(Approval::Approve)
        .approve(Approval::Approve)
        .approve(Approval::Approve)
        .approve(Approval::Approve);
    let (id, outcome) = h.run(&user, "use the hostile server").await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let r = h.results(&id);
    let text = |i: usize| r[i].0.clone();
    // 0: escapes removed.
    assert!(
        !r[0].1 && text(0).contains("echo: hi") && text(0).contains("done"),
        "{}",
        text(0)
    );
    assert!(
        !text(0).contains('\u{1b}') && !text(0).contains('\u{7}'),
        "{:?}",
        text(0)
    );
    // 1: refused by the schema before it left Roost.
    assert!(r[1].1 && text(1).contains("message"), "{}", text(1));
    // 2: destructive before an intent.
    assert!(
        r[2].1 && text(2).to_lowercase().contains("intent"),
        "{}",
        text(2)
    );
    // 4: after one: run and traced with its result size.
    assert!(!r[4].1 && text(4).contains("noted: after"), "{}", text(4));
    let trace = trace_lines(&h.ws.path());
    let traced = trace
        .iter()
        .find(|l| l["tool"] == "mcp__hostile__write_note" && l["kind"] == "mutation")
        .expect("the destructive MCP call is traced");
    assert!(
        traced["detail"]
            .as_str()
            .is_some_and(|d| d.contains("result 12 bytes")),
        "{traced}"
    );
    assert_eq!(traced["intent_id"], "INT-1");
    // 5, 6: an oversized result spilled and paged.
    assert!(
        text(5).contains("read_mcp_output") && text(5).len() < 40_000,
        "{}",
        &text(5)[..200]
    );
    assert!(
        text(6).contains("END"),
        "{}",
        &text(6)[..200.min(text(6).len())]
    );
    // 7: past its timeout; 8: crashed mid-call; 9: restarted.
    assert!(r[7].1 && text(7).contains("did not answer"), "{}", text(7));
    assert!(r[8].1 && text(8).contains("stopped"), "{}", text(8));
    assert!(!r[9].1 && text(9).contains("echo: again"), "{}", text(9));
    // 10–12: the list refreshed on list_changed.
    assert!(
        !r[12].1 && text(12).contains("called new_tool"),
        "{}",
        text(12)
    );
    // 13: disabledTools is not offered.
    assert!(r[13].1 && text(13).contains("disabled_one"), "{}", text(13));
    // 14: a tool named like a native one stays under its server's name.
    assert!(
        !r[14].1 && text(14).contains("called read_file"),
        "{}",
        text(14)
    );
    // Asked for every call but the alwaysAllow one.
    let asked = user.asked();
    assert!(asked.iter().any(|a| a.contains("write_note")), "{asked:?}");
    assert!(
        !asked.iter().any(|a| a.contains("mcp__hostile__echo")),
        "{asked:?}"
    );
    // What was offered: no oversized schema, no bad name, descriptions
    // cut and clean.
    let tools = offered(&h, 0);
    assert!(
        tools.contains(&"mcp__hostile__echo".to_owned()),
        "{tools:?}"
    );
    assert!(tools.contains(&"access_mcp_resource".to_owned()));
    assert!(
        !tools
            .iter()
            .any(|t| t.contains("fat_schema") || t.contains("disabled_one") || t.contains("bad")),
        "{tools:?}"
    );
    assert!(
        !tools.contains(&"search_tools".to_owned()),
        "few tools are not deferred"
    );
    let body = h.transport.requests()[0]["tools"].to_string();
    assert!(
        !body.contains("\\u001b") && body.contains("Harmless red"),
        "escapes in descriptions"
    );
    assert!(
        !body.contains(&"z".repeat(2100)),
        "a long description is cut"
    );
    assert!(
        tools.contains(&"read_file".to_owned()),
        "the native read_file stays"
    );
    roost_tests::harness::assert_pairing(h.store(), &id);
}

/// With 200 tools whose definitions would crowd the context window, the
/// model gets `search_tools` instead; the tools it finds are offered
/// from then on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_tools_are_deferred_behind_search() {
    let mut h = harness_with(
        json!({ "many": hostile("many") }),
        vec![
            one("search_tools", json!({"query": "celsius fahrenheit"})),
            one("mcp__many__tool_137", json!({"value": "20C"})),
        ],
        ApprovalPolicy::yes(),
    );
    h.config.context_window = 100_000;
    let (id, outcome) = h.run(&ScriptedUser::default(), "convert").await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let first = offered(&h, 0);
    assert!(first.contains(&"search_tools".to_owned()), "{first:?}");
    assert!(
        !first.iter().any(|t| t.starts_with("mcp__many__")),
        "{first:?}"
    );
    let r = h.results(&id);
    assert!(r[0].0.contains("mcp__many__tool_137"), "{}", r[0].0);
    let second = offered(&h, 1);
    assert!(
        second.contains(&"mcp__many__tool_137".to_owned()),
        "{second:?}"
    );
    assert!(
        second
            .iter()
            .filter(|t| t.starts_with("mcp__many__"))
            .count()
            <= 5
    );
    assert!(r[1].0.contains("tool_137: 20C"), "{}", r[1].0);
}

/// Two servers whose tools would be offered under one name: the first
/// (by server name) keeps it, the other is not offered and the task is
/// told why; nothing else breaks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn colliding_tool_names_are_refused_not_confused() {
    let h = harness_with(
        json!({ "a": hostile("collide"), "a__b": hostile("collide") }),
        vec![
            one("mcp__a__b__c", json!({})),
            one("mcp__a__b__b__c", json!({})),
        ],
        ApprovalPolicy::yes(),
    );
    let mut events = h.events.subscribe();
    let (id, outcome) = h.run(&ScriptedUser::default(), "collide").await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let r = h.results(&id);
    assert!(
        r[0].0.contains("called b__c"),
        "server `a` keeps the name: {}",
        r[0].0
    );
    assert!(r[1].0.contains("called b__c"), "{}", r[1].0);
    let tools = offered(&h, 0);
    assert_eq!(
        tools.iter().filter(|t| *t == "mcp__a__b__c").count(),
        1,
        "{tools:?}"
    );
    let mut warned = false;
    while let Ok(ev) = events.try_recv() {
        if format!("{:?}", ev.event).contains("another tool is called `mcp__a__b__c`") {
            warned = true;
        }
    }
    assert!(warned, "the task is told which tool was not offered");
}

/// The reference servers: server-everything over stdio (a tool call, a
/// resource read) and over streamable HTTP, server-filesystem over stdio
/// reading a workspace file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_servers_over_stdio_and_http() {
    let port = crate::served::free_port();
    let mut http_server = Command::new(mcp_bin("mcp-server-everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("server-everything over HTTP starts");
    wait_for_port(port);
    let h = harness_with(
        json!({
            "everything": {"command": mcp_bin("mcp-server-everything"), "args": ["stdio"]},
            "everything_http": {"type": "streamable-http", "url": format!("http://127.0.0.1:{port}/mcp")},
        }),
        vec![
            one("mcp__everything__echo", json!({"message": "over stdio"})),
            one(
                "access_mcp_resource",
                json!({"server_name": "everything", "uri": "demo://resource/static/document/architecture.md"}),
            ),
            one(
                "mcp__everything_http__echo",
                json!({"message": "over http"}),
            ),
            one("mcp__everything__get-sum", json!({"a": 2, "b": 3})),
        ],
        ApprovalPolicy::yes(),
    );
    let (id, outcome) = h.run(&ScriptedUser::default(), "echo").await;
    let _ = http_server.kill();
    let _ = http_server.wait();
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let r = h.results(&id);
    assert!(r[0].0.contains("over stdio"), "{}", r[0].0);
    assert!(!r[1].1 && r[1].0.len() > 20, "{}", r[1].0);
    assert!(r[2].0.contains("over http"), "{}", r[2].0);
    assert!(r[3].0.contains('5'), "{:?}", r[3]);

    // server-filesystem, sandboxed, reads the workspace it is given.
    let fs = harness_with(
        json!({"fs": {"command": mcp_bin("mcp-server-filesystem"), "args": ["."]}}),
        vec![one("mcp__fs__read_text_file", json!({"path": "notes.txt"}))],
        ApprovalPolicy::yes(),
    );
    fs.ws.write("notes.txt", "read through MCP\n");
    let (id, outcome) = fs.run(&ScriptedUser::default(), "read").await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let r = fs.results(&id);
    assert!(r[0].0.contains("read through MCP"), "{:?}", r[0]);
}
fn wait_for_port(port: u16) {
    for _ in 0..600 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("nothing listens on {port}");
}

/// A host secret the tests' project entries expand (`${env:…}`): it may
/// reach a trusted server, and is never printed.
const SECRET_VAR: &str = "ROOST_TEST_MCP_SECRET";
const SECRET: &str = "s3cr3t-host-value";

fn roost(who: Identity, data: &Path, config_home: &Path, args: &[&str]) -> std::process::Output {
    who.command(&runnable_by_anyone(Path::new(env!("CARGO_BIN_EXE_roost"))))
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .env("XDG_CONFIG_HOME", config_home)
        .env(SECRET_VAR, SECRET)
        .env_remove("ROOST_CONFIG")
        .output()
        .expect("roost runs")
}

/// `roost mcp list --json` of `ws`, each server's state by name.
fn states(who: Identity, data: &Path, config_home: &Path, ws: &Path) -> Vec<(String, String)> {
    let out = roost(
        who,
        data,
        config_home,
        &[
            "mcp",
            "list",
            "--json",
            "--workspace",
            ws.to_str().expect("utf-8"),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    v["servers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            (
                s["name"].as_str().unwrap_or_default().to_owned(),
                s["status"]["state"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// A workspace for `roost mcp …` runs: its data directory and its
/// `XDG_CONFIG_HOME` (with an empty `roost` configuration directory).
fn cli_workspace() -> (roost_tests::TestWorkspace, PathBuf, PathBuf) {
    let ws = roost_tests::TestWorkspace::new();
    let data = ws.root().join("data");
    let xdg = ws.root().join("xdg");
    std::fs::create_dir_all(xdg.join("roost")).expect("config dir");
    (ws, data, xdg)
}

/// A copy of the hostile server's script in `ws`'s folder, which every
/// identity can read once the folder is theirs (the checkout may lie
/// where `nobody` cannot enter, such as root's home).
fn hostile_copy(ws: &roost_tests::TestWorkspace) -> PathBuf {
    let dir = ws.root().join("servers");
    std::fs::create_dir_all(&dir).expect("servers dir");
    let script = dir.join("hostile.mjs");
    std::fs::copy(mcp_script("hostile.mjs"), &script).expect("copy the hostile server");
    script
}

/// `ws`'s whole folder (workspace, data, config) given to `who`.
fn give(who: Identity, ws: &roost_tests::TestWorkspace) {
    if who == Identity::Nobody {
        chown_tree(ws.root(), NOBODY);
    }
}

/// `roost mcp trust` in `ws`, which succeeds; what it printed.
fn mcp_trust(who: Identity, data: &Path, config_home: &Path, ws: &Path) -> std::process::Output {
    let out = roost(
        who,
        data,
        config_home,
        &["mcp", "trust", "--workspace", ws.to_str().expect("utf-8")],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Trust is given to the whole entry: after `roost mcp trust`, adding
/// `alwaysAllow: ["*"]`, changing the timeout, the env or
/// `disabledTools` makes the server untrusted again (nothing starts
/// until it is trusted as it now stands).
#[test]
pub(crate) fn any_change_to_a_trusted_entry_needs_trust_again() {
    for who in identities() {
        eprintln!("as {who:?}");
        trust_again_as(who);
    }
}

fn trust_again_as(who: Identity) {
    let (ws, data, xdg) = cli_workspace();
    let script = hostile_copy(&ws);
    let write = |entry: &Value| {
        ws.write(
            ".roo/mcp.json",
            &json!({"mcpServers": {"repo": entry}}).to_string(),
        );
        give(who, &ws);
    };
    let trust = || {
        mcp_trust(who, &data, &xdg, &ws.path());
    };
    let repo = || states(who, &data, &xdg, &ws.path());
    let untrusted = vec![("repo".to_owned(), "untrusted".to_owned())];
    let mut entry = hostile_at(&script, "tools");
    write(&entry);
    assert_eq!(repo(), untrusted);
    trust();
    assert_eq!(repo(), vec![("repo".to_owned(), "ready".to_owned())]);
    let changes: [(&str, Value); 4] = [
        ("alwaysAllow", json!(["*"])),
        ("timeout", json!(6)),
        ("env", json!({"EXTRA": "1"})),
        ("disabledTools", json!(["echo"])),
    ];
    for (field, value) in changes {
        entry[field] = value;
        write(&entry);
        assert_eq!(repo(), untrusted, "after changing {field}");
        trust();
    }
}

/// What `roost mcp trust` prints is exactly what it trusted, all of it:
/// the command line, the working directory, every env variable and header
/// as written, each host variable the entry expands (prominently, by
/// name — its value is never shown), the profile, the network origins,
/// the tools called without asking, the timeout, the tools not offered.
#[test]
pub(crate) fn mcp_trust_prints_everything_it_trusted() {
    for who in identities() {
        eprintln!("as {who:?}");
        trust_prints_as(who);
    }
}

fn trust_prints_as(who: Identity) {
    let (ws, data, xdg) = cli_workspace();
    ws.write(
        ".roo/mcp.json",
        &json!({"mcpServers": {
            "local": {
                "command": "node",
                "args": ["server.js", "--token", format!("${{env:{SECRET_VAR}}}")],
                "cwd": "tools",
                "env": {"API_KEY": format!("${{env:{SECRET_VAR}}}"), "MODE": "quiet"},
                "profile": "workspace",
                "allowNetwork": ["https://api.example.com"],
                "alwaysAllow": ["*"],
                "timeout": 7,
                "disabledTools": ["crash"],
            },
            "remote": {
                "type": "streamable-http",
                "url": "https://mcp.example.com/mcp",
                "headers": {"Authorization": format!("Bearer ${{env:{SECRET_VAR}}}")},
            },
        }})
        .to_string(),
    );
    give(who, &ws);
    let out = mcp_trust(who, &data, &xdg, &ws.path());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains(SECRET) && !String::from_utf8_lossy(&out.stderr).contains(SECRET),
        "a host value is never shown: {text}"
    );
    let file = ws.path().join(".roo/mcp.json").display().to_string();
    insta::assert_snapshot!(
        "mcp_trust_output",
        text.replace(&file, "[workspace]/.roo/mcp.json")
    );
}

/// Two servers whose tools would be offered under one name: `roost mcp
/// list` shows what a task gets — the first server's tool offered, the
/// other's refused, naming the one that holds the name.
#[test]
pub(crate) fn mcp_list_shows_which_colliding_tool_is_offered() {
    for who in identities() {
        eprintln!("as {who:?}");
        colliding_as(who);
    }
}

fn colliding_as(who: Identity) {
    let (ws, data, xdg) = cli_workspace();
    let script = hostile_copy(&ws);
    std::fs::write(
        xdg.join("roost/mcp_settings.json"),
        json!({"mcpServers": {
            "a": hostile_at(&script, "collide"),
            "a__b": hostile_at(&script, "collide"),
        }})
        .to_string(),
    )
    .expect("settings");
    give(who, &ws);
    let w = ws.path();
    let w = w.to_str().expect("utf-8");
    let out = roost(
        who,
        &data,
        &xdg,
        &["mcp", "list", "--json", "--workspace", w],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let tool = |server: &str, tool: &str| {
        v["servers"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|s| s["name"] == server)
            .and_then(|s| s["tools"].as_array())
            .into_iter()
            .flatten()
            .find(|t| t["name"] == tool)
            .cloned()
            .unwrap_or_else(|| panic!("{server}'s {tool} listed: {v}"))
    };
    let kept = tool("a", "b__c");
    assert_eq!(kept["offered"], "mcp__a__b__c");
    assert!(kept["refused"].is_null(), "{kept}");
    let refused = tool("a__b", "c");
    let why = refused["refused"].as_str().unwrap_or_default();
    assert!(
        why.contains("another tool is called `mcp__a__b__c`")
            && why.contains("server `a`'s `b__c`"),
        "{refused}"
    );
    // The same in words.
    let out = roost(who, &data, &xdg, &["mcp", "list", "--workspace", w]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("tool mcp__a__b__c") && text.contains("tool c NOT OFFERED: another tool"),
        "{text}"
    );
}

/// A result line larger than Roost reads (16 MiB) fails the call at once
/// with a clear error — the MCP library would drop it and leave the call
/// to wait out its timeout — and the server is restarted.
#[test]
pub(crate) fn an_oversized_result_fails_at_once_with_a_clear_error() {
    for who in identities() {
        eprintln!("as {who:?}");
        oversized_as(who);
    }
}

fn oversized_as(who: Identity) {
    let (ws, data, xdg) = cli_workspace();
    let mut server = hostile_at(&hostile_copy(&ws), "tools");
    server["timeout"] = json!(30);
    std::fs::write(
        xdg.join("roost/mcp_settings.json"),
        json!({"mcpServers": {"big": server}}).to_string(),
    )
    .expect("settings");
    give(who, &ws);
    let w = ws.path();
    let out = roost(
        who,
        &data,
        &xdg,
        &[
            "mcp",
            "call",
            "big",
            "big",
            "--args",
            r#"{"bytes": 17000000}"#,
            "--workspace",
            w.to_str().expect("utf-8"),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("larger than 16 MiB") && !err.contains("did not answer"),
        "{err}"
    );
}

/// A workspace's own `.roo/mcp.json` starts nothing until trusted (not
/// even with `--yes`); `roost mcp list` then shows each server's status
/// and what was refused: a server that never answers `initialize`, one
/// that floods log messages, tools past the caps; a sandboxed server
/// cannot write outside its profile or reach the network.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn project_servers_wait_for_trust_and_hostile_ones_are_bounded() {
    let ws = roost_tests::TestWorkspace::new();
    let data = ws.root().join("data");
    let config_home = ws.root().join("xdg");
    std::fs::create_dir_all(config_home.join("roost")).expect("config dir");
    let outside = tempfile::tempdir_in("/var/tmp")
        .or_else(|_| tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")))
        .expect("dir outside /tmp");
    let mut silent = hostile("silent");
    silent["timeout"] = json!(2);
    // The flood server answers after 20,000 log messages: on two busy cores
    // (a build beside the suite) that took longer than 5 s. It is to be
    // ready, its log bounded; how fast is not what this test asks.
    let mut flood = hostile("flood");
    flood["timeout"] = json!(300);
    ws.write(
        ".roo/mcp.json",
        &json!({"mcpServers": {
            "starter": hostile("tools"),
            "silent": silent,
            "flood": flood,
            "escape": hostile("escape"),
            "broken": {"command": "x", "timeout": "never"},
        }})
        .to_string(),
    );
    let w = ws.path();
    let w = w.to_str().expect("utf-8 path");
    // Untrusted: nothing starts, even with a task run under --yes.
    let out = roost(
        Identity::Caller,
        &data,
        &config_home,
        &["mcp", "list", "--workspace", w, "--json"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert!(
        listed["servers"]
            .as_array()
            .into_iter()
            .flatten()
            .all(|s| s["status"]["state"] == "untrusted"
                && s["errors"].as_array().is_some_and(Vec::is_empty)),
        "{listed}"
    );
    let issue = &listed["issues"][0];
    assert_eq!(issue["server"], "broken");
    assert_eq!(issue["field"], "timeout");

    // Trusted: each runs, bounded.
    let out = roost(
        Identity::Caller,
        &data,
        &config_home,
        &["mcp", "trust", "--workspace", w],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = roost(
        Identity::Caller,
        &data,
        &config_home,
        &["mcp", "list", "--workspace", w, "--json"],
    );
    let listed: Value = serde_json::from_slice(&out.stdout).expect("json");
    let server = |name: &str| {
        listed["servers"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|s| s["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} listed: {listed}"))
    };
    let starter = server("starter");
    assert_eq!(starter["status"]["state"], "ready", "{starter}");
    assert!(
        starter["errors"].to_string().contains("got initialize"),
        "its stderr is kept: {starter}"
    );
    let refused: Vec<(String, String)> = starter["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| {
            Some((
                t["name"].as_str()?.to_owned(),
                t["refused"].as_str()?.to_owned(),
            ))
        })
        .collect();
    assert!(
        refused
            .iter()
            .any(|(n, why)| n == "fat_schema" && why.contains("schema")),
        "{refused:?}"
    );
    assert!(
        refused.iter().any(|(n, _)| n.starts_with("bad name")),
        "{refused:?}"
    );
    let painted = starter["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| t["name"] == "painted")
        .cloned()
        .unwrap_or_default();
    assert!(!painted.to_string().contains("\\u001b"), "{painted}");
    let silent = server("silent");
    assert!(
        silent["status"]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("initialize")),
        "{silent}"
    );
    let flood = server("flood");
    assert_eq!(flood["status"]["state"], "ready", "{flood}");
    assert!(
        flood["errors"].as_array().is_some_and(|e| e.len() <= 20),
        "{flood}"
    );

    // The escape server, sandboxed: no write outside, no network.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let target = outside.path().join("escaped.txt");
    let mut h = scripted_harness(
        json!({"turns": [
            one("mcp__escape__escape", json!({"path": target, "port": port})),
            complete("done"),
        ]}),
        ApprovalPolicy::yes(),
    );
    h.command_bridge = Some(PathBuf::from(env!("CARGO_BIN_EXE_roost")));
    h.ws.write(
        ".roo/mcp.json",
        &json!({"mcpServers": {"escape": hostile("escape")}}).to_string(),
    );
    h.engine()
        .mcp()
        .expect("an MCP hub")
        .trust(&h.ws.path(), None)
        .expect("trusted");
    let (id, outcome) = h.run(&ScriptedUser::default(), "escape").await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let r = h.results(&id);
    assert!(
        r[0].0.contains("write: failed") && r[0].0.contains("network: failed"),
        "{}",
        r[0].0
    );
    assert!(!target.exists());
    listener.set_nonblocking(true).expect("nonblocking");
    assert!(
        listener.accept().is_err(),
        "the server reached the host's network"
    );
}

/// On the command line: `--yes` without a terminal does not trust a
/// workspace's own servers (it says how to); on a terminal the person is
/// asked, and a yes starts them.
#[test]
fn the_cli_asks_before_a_project_server_starts() {
    let ws = roost_tests::TestWorkspace::new();
    let data = ws.root().join("data");
    let xdg = ws.root().join("xdg");
    std::fs::create_dir_all(&xdg).expect("xdg");
    let mut repo = hostile("tools");
    repo["env"] = json!({"TOKEN": format!("${{env:{SECRET_VAR}}}")});
    ws.write(
        ".roo/mcp.json",
        &json!({"mcpServers": {"repo": repo}}).to_string(),
    );
    let script = ws.root().join("script.json");
    std::fs::write(&script, json!({"turns": [complete("done")]}).to_string()).expect("script");
    let run = |yes: bool| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_roost"));
        c.arg("--data-dir")
            .arg(&data)
            .args(["run", "hello", "--workspace"])
            .arg(ws.path())
            .arg("--script")
            .arg(&script)
            .env("XDG_CONFIG_HOME", &xdg)
            .env(SECRET_VAR, SECRET)
            .env("TERM", "xterm")
            .env_remove("ROOST_CONFIG");
        if yes {
            c.arg("--yes");
        }
        c
    };
    let state = || {
        let out = roost(
            Identity::Caller,
            &data,
            &xdg,
            &[
                "mcp",
                "list",
                "--json",
                "--workspace",
                ws.path().to_str().expect("utf-8"),
            ],
        );
        let v: Value = serde_json::from_slice(&out.stdout).expect("json");
        v["servers"][0]["status"]["state"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let out = run(true)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not started until you trust them") && err.contains("roost mcp trust"),
        "{err}"
    );
    assert_eq!(state(), "untrusted");

    let ask = || {
        let mut p = crate::cli::on_pty(run(true));
        p.exp_string("wants to start:")
            .expect("the servers are named");
        // All of the entry, the host variable it expands first.
        p.exp_string(&format!("! passes your {SECRET_VAR} to this server"))
            .expect("the host variable is named");
        p.exp_string(&format!("env: TOKEN=${{env:{SECRET_VAR}}}"))
            .expect("the env is shown as written");
        p.exp_string("sandbox profile: read-only")
            .expect("the profile is shown");
        let before = p
            .exp_string("Trust and start them in this workspace? [y/N]")
            .expect("asked");
        assert!(!before.contains(SECRET), "{before}");
        p
    };
    // The entry changes while the person reads it: what they trust is
    // what they were shown, so the changed entry stays untrusted.
    let mut p = ask();
    let mut changed = repo.clone();
    changed["alwaysAllow"] = json!(["*"]);
    ws.write(
        ".roo/mcp.json",
        &json!({"mcpServers": {"repo": changed}}).to_string(),
    );
    p.send_line("y").expect("send");
    p.exp_eof().expect("the task ends");
    assert_eq!(state(), "untrusted", "what was not shown is not trusted");

    let mut p = ask();
    p.send_line("y").expect("send");
    p.exp_eof().expect("the task ends");
    assert_eq!(state(), "ready", "trusted once, the server starts");
}
