//! The command policy and the network proxy against an attacker, end to
//! end under real bubblewrap: a deny list under `allowed_commands =
//! ["*"]` is not passed by a path, a wrapper or a variable that makes an
//! allowed program run the denied one, whatever the approval policy; and
//! a request pipelined behind an allowed one on the same connection is
//! judged, refused and recorded like the first.

use std::sync::atomic::Ordering;

use roost_core::commands::CommandsConfig;
use roost_core::config::SecretStore;
use roost_core::task::{Approval, TaskOutcome};
use roost_tests::harness::Harness;
use roost_tests::tree_hash;
use roost_tests::user::ScriptedUser;

use crate::commands::{http_server, results, run, with_commands, with_net_profile};

/// Each spelling deletes the file `f{i}` (its index): by path, through a
/// wrapper, or through a variable that makes the allowed `git status` run
/// a command (`core.fsmonitor`).
pub(crate) fn spellings() -> Vec<String> {
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
    let h = with_commands(
        lines.iter().map(|c| run(c)).collect(),
        config(vec!["rm".into()]),
        vec![],
        SecretStore::isolated(),
    );
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
    let h = with_commands(
        lines.iter().map(|c| run(c)).collect(),
        config(vec![]),
        vec![],
        SecretStore::isolated(),
    );
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

/// Two requests pipelined on one connection to the command's proxy, in
/// plain bash: the first to the allowed origin (kept alive), the second
/// to the other one.
pub(crate) fn pipelined(allowed: u16, other: u16) -> String {
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
    let h = with_net_profile(vec![run(&pipelined(allowed, other))], allowed);
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
