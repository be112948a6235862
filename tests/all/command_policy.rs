//! The command policy and the network proxy against an attacker, end to
//! end under real bubblewrap: a deny list under `allowed_commands =
//! ["*"]` is not passed by a path, a wrapper or a variable that makes an
//! allowed program run the denied one, whatever the approval policy; and
//! a request pipelined behind an allowed one on the same connection is
//! judged, refused and recorded like the first.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use roost_core::commands::{CommandsConfig, ProfileConfig};
use roost_core::config::SecretStore;
use roost_core::task::{Approval, ApprovalPolicy, TaskOutcome};
use roost_tests::harness::{Harness, call, complete, scripted_harness, turn};
use roost_tests::tree_hash;
use roost_tests::user::ScriptedUser;
use serde_json::{Value, json};

fn run(command: &str) -> Value {
    turn(
        "",
        vec![call("execute_command", json!({ "command": command }))],
    )
}

/// A harness whose model runs `commands` in turn, commands on under
/// `config` and `profiles`, every call approved by the policy (`--yes`).
fn with_commands(
    commands: &[String],
    config: CommandsConfig,
    profiles: Vec<(&str, ProfileConfig)>,
) -> Harness {
    let mut turns: Vec<Value> = commands.iter().map(|c| run(c)).collect();
    turns.push(complete("done"));
    let mut h = scripted_harness(json!({ "turns": turns }), ApprovalPolicy::yes());
    let profiles: BTreeMap<String, ProfileConfig> = profiles
        .into_iter()
        .map(|(n, p)| (n.to_owned(), p))
        .collect();
    h.commands = Some((config, profiles, SecretStore::isolated()));
    h
}

/// The results of the task's execute_command calls, in order.
fn results(h: &Harness, id: &str) -> Vec<(String, bool)> {
    h.results(id)
        .into_iter()
        .filter(|(r, _)| !r.contains("accepted the result"))
        .collect()
}

/// Each spelling deletes the file `f{i}` (its index): by path, through a
/// wrapper, or through a variable that makes the allowed `git status` run
/// a command (`core.fsmonitor`).
fn spellings() -> Vec<String> {
    vec![
        "/bin/rm f0".into(),
        "command rm f1".into(),
        "exec rm f2".into(),
        "timeout 5 rm f3".into(),
        "echo f4 | xargs rm".into(),
        "find . -name f5 -delete".into(),
        "env rm f6".into(),
        "sh -c 'rm f7'".into(),
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='rm -f f8; true' git status"
            .into(),
    ]
}

/// A workspace with the files `f0`… and a git repository (with an index,
/// so `git status` asks its fsmonitor).
fn prepare(h: &Harness, n: usize) {
    for i in 0..n {
        h.ws.write(&format!("f{i}"), "keep me\n");
    }
    h.ws.write("tracked.txt", "tracked\n");
    for args in [&["init", "-q"][..], &["add", "tracked.txt"][..]] {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(h.ws.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .status()
            .expect("git runs")
            .success();
        assert!(ok, "git {args:?}");
    }
}

/// With `allowed_commands = ["*"]`, `denied_commands = ["rm"]` and every
/// call approved by the policy, no spelling of `rm` deletes its file: the
/// wrapped and path-qualified ones are denied, the line whose variables
/// make `git status` run `rm` goes to a person (who says no), and the
/// workspace is byte for byte what it was. Without the denial — what the
/// judge did before — each of them does delete its file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
pub(crate) async fn no_spelling_of_a_denied_command_runs() {
    let lines = spellings();
    let n = lines.len();
    let config = |denied: Vec<String>| CommandsConfig {
        enabled: true,
        allowed_commands: vec!["*".into()],
        denied_commands: denied,
        ..CommandsConfig::default()
    };

    // Denied: nothing changes.
    let h = with_commands(&lines, config(vec!["rm".into()]), vec![]);
    prepare(&h, n);
    let before = tree_hash(&h.ws.path());
    let mut user = ScriptedUser::default();
    for _ in 0..n {
        user = user.approve(Approval::Deny { feedback: None });
    }
    let (id, outcome) = h.run(&user, "delete f by any name").await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let r = results(&h, &id);
    assert_eq!(r.len(), n, "{r:#?}");
    for (line, (text, error)) in lines.iter().zip(&r).take(n - 1) {
        assert!(
            *error && text.contains("is denied by the rule `rm`"),
            "{line}: {text}"
        );
    }
    // The variables: a person decides, told which ones.
    let asked = user.asked();
    assert!(
        asked
            .iter()
            .any(|a| a.contains("the command rules cannot judge this line")
                && a.contains("`GIT_CONFIG_COUNT`, `GIT_CONFIG_KEY_0`, `GIT_CONFIG_VALUE_0`")),
        "{asked:#?}"
    );
    assert!(r[n - 1].1, "{}", r[n - 1].0);
    assert_eq!(before, tree_hash(&h.ws.path()), "the workspace changed");

    // The control: nothing denied, and the person says yes (as the old
    // judge did under `*` and `--yes`): every spelling deletes its file.
    let h = with_commands(&lines, config(vec![]), vec![]);
    prepare(&h, n);
    let (id, _) = h
        .run(&ScriptedUser::default(), "delete f by any name")
        .await;
    let r = results(&h, &id);
    for (i, line) in lines.iter().enumerate() {
        assert!(
            !h.ws.path().join(format!("f{i}")).exists(),
            "{line}: f{i} is still there: {}",
            r.get(i).map(|x| x.0.as_str()).unwrap_or_default()
        );
    }
}

/// A tiny HTTP server on 127.0.0.1 answering every request with `body`;
/// how many connections it got.
fn http_server(body: &'static str) -> (u16, Arc<AtomicUsize>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let hits = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&hits);
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            seen.fetch_add(1, Ordering::SeqCst);
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            let _ = conn.write_all(
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                )
                .as_bytes(),
            );
        }
    });
    (port, hits)
}

/// Two requests pipelined on one connection to the command's proxy, in
/// plain bash: the first to the allowed origin (kept alive), the second
/// to the other one.
fn pipelined(allowed: u16, other: u16) -> String {
    format!(
        "exec 3<>/dev/tcp/127.0.0.1/3128 && printf '\
         GET http://127.0.0.1:{allowed}/ HTTP/1.1\\r\\nHost: 127.0.0.1:{allowed}\\r\\n\\r\\n\
         GET http://127.0.0.1:{other}/ HTTP/1.1\\r\\nHost: 127.0.0.1:{other}\\r\\nConnection: close\\r\\n\\r\\n' >&3 \
         && cat <&3"
    )
}

/// The second request of a kept-alive connection, to an origin the
/// profile does not name, is refused with 403 and recorded; the other
/// origin is never contacted, and the first request still works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
pub(crate) async fn a_pipelined_request_to_another_origin_is_refused_and_recorded() {
    let (allowed, allowed_hits) = http_server("hello-from-allowed");
    let (other, other_hits) = http_server("should-not-see");
    let mut h = with_commands(
        &[pipelined(allowed, other)],
        CommandsConfig {
            enabled: true,
            allowed_commands: vec!["*".into()],
            profile: Some("net".into()),
            ..CommandsConfig::default()
        },
        vec![(
            "net",
            ProfileConfig {
                network: vec![format!("http://127.0.0.1:{allowed}")],
                ..ProfileConfig::default()
            },
        )],
    );
    h.command_bridge = Some(env!("CARGO_BIN_EXE_roost").into());
    let (id, _) = h.run(&ScriptedUser::default(), "pipeline").await;
    let r = results(&h, &id);
    let out = &r[0].0;
    assert!(
        out.contains("200 OK") && out.contains("hello-from-allowed"),
        "{out}"
    );
    assert!(out.contains("403 Forbidden"), "{out}");
    assert!(!out.contains("should-not-see"), "{out}");
    assert!(
        out.contains(&format!(
            "Network refused (not in profile `net`): http://127.0.0.1:{other}"
        )),
        "{out}"
    );
    assert_eq!(allowed_hits.load(Ordering::SeqCst), 1);
    assert_eq!(
        other_hits.load(Ordering::SeqCst),
        0,
        "the other origin was reached"
    );
}
