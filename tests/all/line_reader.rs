//! A command line is read in a process of its own (`roost __read-line`),
//! bounded in CPU, memory and wall time and shut off from everything but
//! its pipes, so a line the shell parser cannot take costs a person's
//! decision, not the host. Against the real `roost` binary: it judges as
//! the in-process judge does; past its memory it is stopped and the line
//! goes to a person; and a reader that hangs, floods, lies, fails or is
//! missing is killed or disbelieved, never followed — as root and as an
//! unprivileged user, with nothing on disk touched.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use roost_core::commands::{CommandRules, LineReader, ReadBounds, Verdict};
use roost_tests::identity::{Identity, chown_tree, identities, runnable_by_anyone};
use roost_tests::tree_hash;

fn roost() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_roost"))
}

fn rules() -> CommandRules {
    CommandRules::new(
        &[
            "git status".into(),
            "cargo test".into(),
            "echo".into(),
            "cat".into(),
        ],
        &["rm".into()],
    )
    .expect("rules")
}

/// Lines of every kind the judge tells apart: allowed, denied, unlisted,
/// left to a person, with redirections, here-documents and nesting.
const LINES: &[&str] = &[
    "git status",
    "cargo test -- --nocapture && echo done",
    "echo hi > out.txt",
    "cat <<EOF > notes.md\nline one\nEOF",
    "echo $(git status)",
    "rm -rf /",
    "timeout 5 rm f",
    "sh -c 'rm f'",
    "ls -la | grep x",
    "$CMD arg",
    "X=1 git status",
    "echo 'unterminated",
    "(cd sub && cargo test) | tee log.txt",
    "for f in *.rs; do echo $f; done",
    "",
];

/// The reader in its own process judges every line exactly as the judge in
/// the host's process does (the same analysis crosses the pipe), for every
/// kind of verdict.
#[test]
fn a_line_read_in_its_own_process_is_judged_as_in_the_host() {
    let rules = rules();
    let reader = LineReader::new(roost());
    let mut kinds = [false; 4];
    for line in LINES {
        let isolated = rules.judge_read(line, &reader);
        assert_eq!(isolated, rules.judge(line), "{line:?}");
        let kind = match isolated.verdict {
            Verdict::Allowed => 0,
            Verdict::Denied { .. } => 1,
            Verdict::Unlisted { .. } => 2,
            Verdict::Unjudged { .. } => 3,
        };
        if let Some(k) = kinds.get_mut(kind) {
            *k = true;
        }
    }
    assert_eq!(kinds, [true; 4], "the lines cover every verdict");
}

/// A reader that runs out of its memory is stopped and its line goes to a
/// person, saying why; the next line reads as ever.
#[test]
fn a_line_that_needs_more_memory_than_the_bound_is_left_to_a_person() {
    let rules = rules();
    let mut reader = LineReader::new(roost());
    reader.bounds = ReadBounds {
        memory_bytes: 8 << 20,
        ..ReadBounds::default()
    };
    // Thousands of commands, each nested: the analysis is many times the
    // line (and the line under the 128 KiB a command line may be).
    let heavy = "echo $(echo $(echo a));".repeat(5_000);
    assert!(heavy.len() < 128 * 1024);
    let judged = rules.judge_read(&heavy, &reader);
    match &judged.verdict {
        Verdict::Unjudged { reason } => assert!(
            reason.contains("needed more than 8 MiB of memory"),
            "{reason}"
        ),
        other => panic!("a line past the memory bound was judged: {other:?}"),
    }
    assert_eq!(
        rules.judge_read("git status", &reader).verdict,
        Verdict::Allowed
    );
    // Within the default bounds the same line reads.
    let reader = LineReader::new(roost());
    assert_eq!(rules.judge_read(&heavy, &reader), rules.judge(&heavy));
}

/// A program standing in for the reader, as a shell script in `dir`.
fn impostor(dir: &Path, name: &str, body: &str) -> LineReader {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let mut reader = LineReader::new(path);
    reader.bounds.wall = Duration::from_secs(2);
    reader
}

fn reason(rules: &CommandRules, line: &str, reader: &LineReader) -> String {
    match rules.judge_read(line, reader).verdict {
        Verdict::Unjudged { reason } => reason,
        other => panic!("{}: {other:?}", reader.program().display()),
    }
}

/// Whether process `pid` is gone (killed and reaped).
fn gone(pid: &str) -> bool {
    !Path::new("/proc").join(pid.trim()).exists()
}

/// A reader that hangs is killed at the deadline (and reaped); one that
/// spins is stopped by its CPU bound; one that floods is cut off; one that answers nonsense, fails or is missing is
/// not believed: each line goes to a person, and the allowed `git status`
/// is never allowed on a reader's failure.
#[test]
fn a_reader_that_hangs_floods_lies_or_fails_is_never_followed() {
    let dir = tempfile::tempdir().expect("tmp");
    let rules = rules();
    // One keeps its answer open, one closes it and lives on.
    for sleeps in ["sleep 600", "sleep 600 >&-"] {
        let pid = dir.path().join("pid");
        let hang = impostor(
            dir.path(),
            "hang",
            &format!("echo $$ > {}\nexec {sleeps}", pid.display()),
        );
        let why = reason(&rules, "git status", &hang);
        assert!(why.contains("took longer than 2 s"), "{sleeps}: {why}");
        let pid = std::fs::read_to_string(&pid).expect("the impostor ran");
        assert!(
            gone(&pid),
            "{sleeps}: the reader {pid} was killed and reaped"
        );
    }

    // The CPU bound holds whatever the program: set before it starts.
    let mut spin = impostor(dir.path(), "spin", "while :; do :; done");
    spin.bounds.cpu_secs = 1;
    spin.bounds.wall = Duration::from_secs(600);
    let why = reason(&rules, "git status", &spin);
    assert!(why.contains("took more than 1 s of CPU"), "{why}");

    let why = reason(
        &rules,
        "git status",
        &impostor(dir.path(), "flood", "exec yes '{'"),
    );
    assert!(why.contains("answered more than 8 MiB"), "{why}");

    let lie = impostor(
        dir.path(),
        "lie",
        "cat >/dev/null\necho '{\"commands\": 5}'",
    );
    let why = reason(&rules, "git status", &lie);
    assert!(why.contains("answer does not parse"), "{why}");

    let fail = impostor(dir.path(), "fail", "exit 3");
    let why = reason(&rules, "git status", &fail);
    assert!(why.contains("exit status: 3"), "{why}");

    let missing = LineReader::new(dir.path().join("no-such-roost"));
    let why = reason(&rules, "git status", &missing);
    assert!(why.contains("cannot start"), "{why}");

    // A line longer than a command line may be is not read at all.
    let long = format!("echo {}", "a".repeat(128 * 1024));
    let why = reason(&rules, &long, &LineReader::new(roost()));
    assert!(why.contains("longer than a command line may be"), "{why}");
}

/// What `roost __read-line` answers for `line`, run as `who`.
fn answer_as(who: Identity, line: &str, cwd: &Path) -> (bool, Vec<u8>) {
    let mut child = who
        .command(&runnable_by_anyone(&roost()))
        .arg("__read-line")
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("roost starts");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(line.as_bytes()).expect("the line");
    drop(stdin);
    let out = child.wait_with_output().expect("roost ends");
    (out.status.success(), out.stdout)
}

/// The reader reads and never runs: hostile lines read as root and as an
/// unprivileged user give the same answers, and the directory it ran in,
/// a canary beside it and `/etc/passwd` are as they were.
#[test]
fn the_reader_reads_as_root_and_as_an_unprivileged_user_and_runs_nothing() {
    let scene = tempfile::tempdir().expect("tmp");
    let ws = scene.path().join("ws");
    let canary = scene.path().join("canary");
    for d in [&ws, &canary] {
        std::fs::create_dir(d).expect("dir");
    }
    std::fs::write(ws.join("keep.txt"), "keep\n").expect("file");
    std::fs::write(canary.join("secret"), "canary\n").expect("file");
    chown_tree(scene.path(), roost_tests::identity::NOBODY);
    let hostile = [
        format!(
            "rm -rf {} && echo gone > {}/x",
            canary.display(),
            canary.display()
        ),
        "echo owned > keep.txt; touch made".to_owned(),
        "$(touch made2) `touch made3` <(touch made4)".to_owned(),
        "cat <<EOF > keep.txt\nreplaced\nEOF".to_owned(),
    ];
    let passwd = std::fs::read("/etc/passwd").expect("passwd");
    let before = (tree_hash(&ws), tree_hash(&canary));
    for line in &hostile {
        let mut answers = Vec::new();
        for who in identities() {
            let (ok, answer) = answer_as(who, line, &ws);
            assert!(ok, "{who:?} read {line:?}");
            assert!(
                serde_json::from_slice::<serde_json::Value>(&answer)
                    .is_ok_and(|v| v.get("commands").is_some()),
                "{who:?}: {}",
                String::from_utf8_lossy(&answer)
            );
            answers.push(answer);
        }
        assert!(
            answers.windows(2).all(|w| w.first() == w.get(1)),
            "{line:?}"
        );
    }
    assert_eq!((tree_hash(&ws), tree_hash(&canary)), before);
    assert_eq!(std::fs::read("/etc/passwd").expect("passwd"), passwd);
}
