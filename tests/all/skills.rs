//! Skills end to end: discovery and precedence across project, `.agents`,
//! `.claude`, global and mode folders (through `roost skills`), every
//! validation rule, a scripted task that loads a skill and follows it, the
//! prompt's skills section within its budget, `run_skill` of the fixture
//! component in the sandbox (reads, writes in scope, a write out of scope
//! that does not persist, a trap, a loop), scripts that never run, hostile
//! skills, and hot reload under a running engine.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use roost_core::engine::TaskSpec;
use roost_core::events::TaskEvent;
use roost_core::task::{Answer, ApprovalPolicy, Ask, TaskOutcome};
use roost_tests::harness::{Harness, call, complete, harness, trace_lines, turn};
use roost_tests::user::ScriptedUser;
use roost_tests::{TestWorkspace, fixture_wasm};
use serde_json::{Value, json};

use crate::cli::roost;

/// The fixture skill folder (`tests/fixtures/skills/note-taker`).
fn note_taker_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/skills/note-taker")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read dir") {
        let e = e.expect("entry");
        let dest = to.join(e.file_name());
        if e.file_type().expect("type").is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).expect("copy");
        }
    }
}

/// The note-taker skill, with its component, installed in `skills_dir`.
fn install_note_taker(skills_dir: &Path) -> PathBuf {
    let dir = skills_dir.join("note-taker");
    copy_dir(&note_taker_src(), &dir);
    std::fs::copy(fixture_wasm("skill-fixture"), dir.join("skill.wasm")).expect("copy wasm");
    dir
}

/// A minimal skill `name` in `skills_dir`.
fn skill(skills_dir: &Path, name: &str, description: &str) {
    let dir = skills_dir.join(name);
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\n\nInstructions of {name}.\n"),
    )
    .expect("write");
}

/// The system prompt of request `n` the model was sent.
fn system_prompt(h: &Harness, n: usize) -> String {
    h.transport.requests()[n]["messages"][0]["content"]
        .as_str()
        .expect("a system prompt")
        .to_owned()
}

/// The skills section of a system prompt.
fn skills_section(prompt: &str) -> &str {
    let start = prompt.find("SKILLS\n").expect("a skills section");
    let end = prompt[start..]
        .find("\n====\n")
        .map_or(prompt.len(), |e| start + e);
    &prompt[start..end]
}

/// `roost skills …` with a home and config directory of the test's own.
fn skills_cmd(root: &Path, args: &[&str]) -> std::process::Output {
    roost(&root.join("data"))
        .env("HOME", root.join("home"))
        .env("XDG_CONFIG_HOME", root.join("xdg"))
        .arg("skills")
        .args(args)
        .output()
        .expect("roost runs")
}

#[test]
fn discovery_precedence_symlinks_and_overrides_through_the_cli() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().canonicalize().expect("canonical");
    let repo = root.join("repo");
    let ws = repo.join("app");
    std::fs::create_dir_all(repo.join(".git")).expect("git");
    std::fs::create_dir_all(&ws).expect("ws");
    let home = root.join("home");
    let config = root.join("xdg/roost");
    // One name everywhere: the project's mode folder wins for `code`.
    skill(
        &ws.join(".roo/skills-code"),
        "review",
        "project code-mode review",
    );
    skill(&ws.join(".roo/skills"), "review", "project roo review");
    skill(
        &ws.join(".agents/skills"),
        "review",
        "project agents review",
    );
    skill(
        &repo.join(".claude/skills"),
        "review",
        "repository claude review",
    );
    skill(&config.join("skills"), "review", "global roost review");
    skill(&home.join(".roo/skills"), "review", "global roo review");
    skill(
        &home.join(".agents/skills"),
        "review",
        "global agents review",
    );
    // Names found in one place each.
    skill(
        &repo.join(".claude/skills"),
        "deploy",
        "from the repository root",
    );
    skill(&home.join(".agents/skills"), "translate", "global only");
    skill(&home.join(".roo/skills-ask"), "explain", "ask mode only");
    // The same folder reached through a link shows once.
    std::os::unix::fs::symlink(
        home.join(".agents/skills/translate"),
        home.join(".roo/skills/translate"),
    )
    .expect("symlink");

    let out = skills_cmd(
        &root,
        &["list", "--workspace", ws.to_str().expect("utf-8"), "--json"],
    );
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let names: Vec<(&str, &str)> = v["skills"]
        .as_array()
        .expect("skills")
        .iter()
        .map(|s| {
            (
                s["name"].as_str().expect("name"),
                s["description"].as_str().expect("description"),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("review", "project code-mode review"),
            ("deploy", "from the repository root"),
            ("translate", "global only"),
        ]
    );
    let overrides: Vec<String> = v["skills"][0]["overrides"]
        .as_array()
        .expect("overrides")
        .iter()
        .map(|p| {
            Path::new(p.as_str().expect("path"))
                .strip_prefix(&root)
                .expect("under root")
                .display()
                .to_string()
        })
        .collect();
    assert_eq!(
        overrides,
        [
            "repo/app/.roo/skills/review",
            "repo/app/.agents/skills/review",
            "repo/.claude/skills/review",
            "xdg/roost/skills/review",
            "home/.roo/skills/review",
            "home/.agents/skills/review",
        ]
    );
    assert_eq!(v["skills"][1]["origin"], "project");
    assert_eq!(v["skills"][2]["origin"], "global");
    assert_eq!(v["issues"], json!([]));

    // Another mode sees its own folder and the generic winners.
    let out = skills_cmd(
        &root,
        &[
            "list",
            "--workspace",
            ws.to_str().expect("utf-8"),
            "--mode",
            "ask",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("project roo review"), "{text}");
    assert!(
        text.contains("explain") && text.contains("global:ask"),
        "{text}"
    );
    assert!(text.contains("overrides"), "{text}");

    let out = skills_cmd(
        &root,
        &["show", "deploy", "--workspace", ws.to_str().expect("utf-8")],
    );
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("from the repository root") && text.contains("Instructions of deploy."),
        "{text}"
    );
}

/// Each rule of the specification, one fixture each, with its exact
/// message; the good skill beside them still validates and lists.
#[test]
fn every_validation_rule_reports_file_field_and_reason() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().canonicalize().expect("canonical");
    let dir = root.join("ws/.roo/skills");
    let cases: &[(&str, &str, &str)] = &[
        (
            "no-front-matter",
            "# just text\n",
            "has no front-matter: SKILL.md must start with a `---` line, the YAML fields, and another `---` line",
        ),
        (
            "unterminated",
            "---\nname: unterminated\n",
            "has an unterminated front-matter: no closing `---` line",
        ),
        (
            "bad-yaml",
            "---\nname: [bad\n---\n",
            "has front-matter that is not valid YAML",
        ),
        ("no-name", "---\ndescription: x\n---\n", "`name` is missing"),
        (
            "no-description",
            "---\nname: no-description\n---\n",
            "`description` is missing",
        ),
        (
            "empty-description",
            "---\nname: empty-description\ndescription: ''\n---\n",
            "`description` must not be empty",
        ),
        (
            "Upper",
            "---\nname: Upper\ndescription: x\n---\n",
            "`name` may hold only lowercase letters a-z, digits and hyphens; `U` is not allowed",
        ),
        (
            "-edge",
            "---\nname: -edge\ndescription: x\n---\n",
            "`name` must not start or end with a hyphen",
        ),
        (
            "two--hyphens",
            "---\nname: two--hyphens\ndescription: x\n---\n",
            "`name` must not hold two hyphens in a row",
        ),
        (
            "folder",
            "---\nname: other\ndescription: x\n---\n",
            "`name` `other` must equal the folder's name `folder`",
        ),
        (
            "long-compat",
            &format!(
                "---\nname: long-compat\ndescription: x\ncompatibility: {}\n---\n",
                "c".repeat(501)
            ),
            "`compatibility` is 501 characters; at most 500",
        ),
        (
            "bad-metadata",
            "---\nname: bad-metadata\ndescription: x\nmetadata: [1, 2]\n---\n",
            "`metadata` must be a map of strings to strings",
        ),
        (
            "bad-tools",
            "---\nname: bad-tools\ndescription: x\nallowed-tools: 7\n---\n",
            "`allowed-tools` must be a space-separated string or a list of tool names",
        ),
        (
            "no-skill-md",
            "",
            "is missing: a skill folder needs a SKILL.md",
        ),
    ];
    let long_name = "n".repeat(65);
    let long_desc = format!(
        "---\nname: long-desc\ndescription: {}\n---\n",
        "d".repeat(1025)
    );
    let mut all: Vec<(String, String, String)> = cases
        .iter()
        .map(|(f, t, m)| ((*f).to_owned(), (*t).to_owned(), (*m).to_owned()))
        .collect();
    all.push((
        long_name.clone(),
        format!("---\nname: {long_name}\ndescription: x\n---\n"),
        "`name` is 65 characters; at most 64".to_owned(),
    ));
    all.push((
        "long-desc".to_owned(),
        long_desc,
        "`description` is 1025 characters; at most 1024".to_owned(),
    ));
    for (folder, text, _) in &all {
        std::fs::create_dir_all(dir.join(folder)).expect("mkdir");
        if !text.is_empty() {
            std::fs::write(dir.join(folder).join("SKILL.md"), text).expect("write");
        }
    }
    skill(&dir, "good-one", "A fine skill");

    let out = skills_cmd(&root, &["validate", dir.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    for (folder, _, message) in &all {
        let file = dir.join(folder).join("SKILL.md");
        let expected = format!("invalid: {}: {message}", file.display());
        assert!(
            text.lines().any(|l| l.starts_with(&expected)),
            "missing `{expected}` in\n{text}"
        );
    }
    assert!(
        text.contains(&format!("ok: {}", dir.join("good-one").display())),
        "{text}"
    );

    // The catalog skips each bad one, reports it, and keeps the good one.
    let out = skills_cmd(
        &root,
        &[
            "list",
            "--workspace",
            root.join("ws").to_str().expect("utf-8"),
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "bad skills make the list fail");
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["skills"].as_array().map(Vec::len), Some(1), "{v}");
    assert_eq!(v["skills"][0]["name"], "good-one");
    assert_eq!(
        v["issues"].as_array().map(Vec::len),
        Some(all.len()),
        "{}",
        v["issues"]
    );
    let issue = v["issues"]
        .as_array()
        .expect("issues")
        .iter()
        .find(|i| i["file"].as_str().is_some_and(|f| f.contains("/folder/")))
        .expect("the folder issue");
    assert_eq!(issue["field"], "name");
    assert_eq!(
        issue["reason"],
        "`other` must equal the folder's name `folder`"
    );
}

/// A task loads the skill the prompt lists, reads the file its
/// instructions name, runs its entry, and completes; the load is an event
/// and a trace entry; the section and its mandatory check are pinned.
#[tokio::test]
async fn a_task_loads_a_skill_with_read_skill_and_follows_it() {
    let h = harness(
        json!([
            turn(
                "A skill applies.",
                vec![call("read_skill", json!({"name": "note-taker"}))]
            ),
            turn(
                "",
                vec![call(
                    "read_skill",
                    json!({"name": "note-taker", "path": "references/style.md"})
                )]
            ),
            turn(
                "",
                vec![call("select_active_intent", json!({"intent_id": "INT-1"}))]
            ),
            turn(
                "",
                vec![call(
                    "run_skill",
                    json!({"skill": "note-taker", "entry": "count", "args": {"path": "README.md"}})
                )]
            ),
            turn(
                "",
                vec![call(
                    "run_skill",
                    json!({"skill": "note-taker", "entry": "write", "args": {"path": "notes/summary.md", "content": "README.md has 3 lines\n"}})
                )]
            ),
            complete("Recorded the count."),
        ]),
        ApprovalPolicy::yes(),
    );
    h.ws.write("README.md", "one\ntwo\nthree\n");
    h.ws.write(
        ".orchestration/active_intents.yaml",
        "active_intents:\n  - {id: INT-1, name: Notes, status: IN_PROGRESS, owned_scope: [\"notes/**\"]}\n",
    );
    install_note_taker(&h.ws.path().join(".roo/skills"));
    let mut rx = h.events.subscribe();
    let (id, outcome) = h.run(&ScriptedUser::default(), "count the README").await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );

    let results = h.results(&id);
    let (body, err) = &results[0];
    assert!(!err, "{body}");
    assert!(
        body.contains("# Note taker") && body.contains("references/style.md"),
        "{body}"
    );
    assert!(
        body.contains("scripts/run.sh"),
        "the files are listed: {body}"
    );
    assert!(body.contains("were not run by loading it"), "{body}");
    assert!(
        body.contains("- count: Count the lines"),
        "entries listed: {body}"
    );
    assert_eq!(
        results[1].0,
        "Notes are one line each, in the present tense.\n"
    );
    assert_eq!(results[3].0, "README.md has 3 lines");
    assert_eq!(results[4].0, "wrote notes/summary.md");
    assert_eq!(h.ws.read("notes/summary.md"), "README.md has 3 lines\n");

    let mut loads = Vec::new();
    while let Ok(ev) = rx.try_recv() {
        if let TaskEvent::SkillLoaded {
            skill,
            path,
            origin,
        } = &ev.event
        {
            loads.push((skill.clone(), path.clone(), origin.clone()));
        }
    }
    assert_eq!(
        loads,
        [
            ("note-taker".to_owned(), None, "project".to_owned()),
            (
                "note-taker".to_owned(),
                Some("references/style.md".to_owned()),
                "project".to_owned()
            ),
        ]
    );
    let kinds: Vec<String> = trace_lines(&h.ws.path())
        .iter()
        .map(|l| {
            format!(
                "{} {}",
                l["kind"].as_str().unwrap_or(""),
                l["tool"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert!(
        kinds.contains(&"skill_loaded read_skill".to_owned()),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&"mutation run_skill".to_owned()),
        "{kinds:?}"
    );

    let prompt = system_prompt(&h, 0);
    insta::assert_snapshot!("skills_section", skills_section(&prompt));
    // The scripts never ran: not by loading, not by reading them.
    assert!(!h.ws.root().join("SCRIPT_RAN").exists());
    assert!(!h.ws.path().join("SCRIPT_RAN").exists());
}

/// A thousand skills: the section stays within 2% of the context window,
/// the highest precedence stays, and the model is told how to list the
/// rest; `read_skill` without a name lists them.
#[tokio::test]
async fn a_thousand_skills_stay_inside_the_budget() {
    let h = harness(
        json!([
            turn("", vec![call("read_skill", json!({}))]),
            complete("listed"),
        ]),
        ApprovalPolicy::yes(),
    );
    let dir = h.ws.path().join(".roo/skills");
    for i in 0..1000 {
        skill(
            &dir,
            &format!("skill-{i:04}"),
            &format!(
                "Skill number {i}, {}",
                "a long description of what it does ".repeat(6)
            ),
        );
    }
    let (id, outcome) = h.run(&ScriptedUser::default(), "anything").await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let prompt = system_prompt(&h, 0);
    let section = skills_section(&prompt);
    let budget = usize::try_from(h.config.context_window / 50).expect("fits") * 4;
    assert!(section.len() <= budget, "{} > {budget}", section.len());
    assert!(
        section.contains("<name>skill-0000</name>"),
        "the highest precedence stays"
    );
    assert!(
        !section.contains("<name>skill-0999</name>"),
        "the lowest goes first"
    );
    assert!(
        section.contains("more skills are available but not listed here"),
        "{section}"
    );
    let listing = &h.results(&id)[0].0;
    assert!(
        listing.starts_with("1000 skills are available in this mode:"),
        "{listing}"
    );
}

/// `run_skill` runs sandboxed: it reads the workspace, writes inside the
/// intent's scope only (a write outside does not persist), its args are
/// checked against the entry's schema, and an entry that traps or loops
/// fails cleanly while the task goes on.
#[tokio::test]
pub(crate) async fn run_skill_is_sandboxed_scoped_and_bounded() {
    let mut h = harness(
        json!([
            turn(
                "",
                vec![call("select_active_intent", json!({"intent_id": "INT-1"}))]
            ),
            turn(
                "",
                vec![call(
                    "run_skill",
                    json!({"skill": "note-taker", "entry": "write", "args": {"path": "src/evil.txt", "content": "x"}})
                )]
            ),
            turn(
                "",
                vec![call(
                    "run_skill",
                    json!({"skill": "note-taker", "entry": "count", "args": {"path": 7}})
                )]
            ),
            turn(
                "",
                vec![call(
                    "run_skill",
                    json!({"skill": "note-taker", "entry": "nope"})
                )]
            ),
            turn(
                "",
                vec![call(
                    "run_skill",
                    json!({"skill": "missing", "entry": "count"})
                )]
            ),
            turn(
                "",
                vec![call(
                    "run_skill",
                    json!({"skill": "note-taker", "entry": "trap", "args": {}})
                )]
            ),
            turn(
                "",
                vec![call(
                    "run_skill",
                    json!({"skill": "note-taker", "entry": "spin", "args": {}})
                )]
            ),
            turn(
                "",
                vec![call(
                    "run_skill",
                    json!({"skill": "note-taker", "entry": "count", "args": {"path": "../canary/secret.txt"}})
                )]
            ),
            complete("done"),
        ]),
        ApprovalPolicy::yes(),
    );
    h.config.limits.deadline = Duration::from_secs(2);
    h.config.max_mistakes = 10;
    h.ws.write(
        ".orchestration/active_intents.yaml",
        "active_intents:\n  - {id: INT-1, name: Notes, status: IN_PROGRESS, owned_scope: [\"notes/**\"]}\n",
    );
    h.ws.write("src/keep.txt", "keep\n");
    install_note_taker(&h.ws.path().join(".roo/skills"));
    let (id, outcome) = h.run(&ScriptedUser::default(), "try everything").await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let r = h.results(&id);
    assert!(r[1].1, "out of scope: {:?}", r[1]);
    assert!(
        !h.ws.path().join("src/evil.txt").exists(),
        "the write did not persist"
    );
    assert!(
        r[2].1
            && r[2]
                .0
                .contains("Invalid arguments for tool `note-taker/count`"),
        "{:?}",
        r[2]
    );
    assert!(
        r[3].1
            && r[3]
                .0
                .contains("has no entry `nope`. Its entries: count, write, trap, spin"),
        "{:?}",
        r[3]
    );
    assert!(
        r[4].1
            && r[4]
                .0
                .contains("There is no skill `missing` in mode `code`"),
        "{:?}",
        r[4]
    );
    assert!(
        r[5].1 && r[5].0.contains("plugin `note-taker` failed") && r[5].0.contains("unreachable"),
        "trap: {:?}",
        r[5]
    );
    assert!(
        r[6].1 && r[6].0.contains("exceeded its deadline"),
        "spin: {:?}",
        r[6]
    );
    assert!(r[7].1, "the canary is out of reach: {:?}", r[7]);
    assert!(!r[7].0.contains("canary secret"), "{:?}", r[7]);
    assert_eq!(h.ws.read("src/keep.txt"), "keep\n");
}

/// `run_skill` asks before it runs (group `command`), and a denial runs
/// nothing.
#[tokio::test]
async fn run_skill_needs_approval() {
    let h = harness(
        json!([
            turn(
                "",
                vec![call(
                    "run_skill",
                    json!({"skill": "note-taker", "entry": "write", "args": {"path": "x.txt", "content": "x"}})
                )]
            ),
            complete("done"),
        ]),
        ApprovalPolicy::from_groups("read,edit").expect("policy"),
    );
    install_note_taker(&h.ws.path().join(".roo/skills"));
    let user = ScriptedUser::default().approve(roost_core::task::Approval::Deny { feedback: None });
    let (id, _) = h.run(&user, "write x").await;
    assert_eq!(user.asked(), ["approve: run_skill", "completion: done"]);
    assert!(h.results(&id)[0].1);
    assert!(!h.ws.path().join("x.txt").exists());
}

/// Hostile skills: paths out of the skill folder, links inside it, a
/// FIFO, a huge file, a component that is not one, and a component that
/// claims to be another skill all fail with a clear error.
#[tokio::test]
async fn hostile_skills_fail_cleanly() {
    let h = harness(
        json!([
            turn(
                "",
                vec![call(
                    "read_skill",
                    json!({"name": "note-taker", "path": "../../../canary/secret.txt"})
                )]
            ),
            turn(
                "",
                vec![call(
                    "read_skill",
                    json!({"name": "note-taker", "path": "link.md"})
                )]
            ),
            turn(
                "",
                vec![call(
                    "read_skill",
                    json!({"name": "note-taker", "path": "fifo"})
                )]
            ),
            turn(
                "",
                vec![call(
                    "read_skill",
                    json!({"name": "note-taker", "path": "huge.md"})
                )]
            ),
            turn(
                "",
                vec![call(
                    "run_skill",
                    json!({"skill": "not-wasm", "entry": "x"})
                )]
            ),
            turn(
                "",
                vec![call(
                    "run_skill",
                    json!({"skill": "impostor", "entry": "count", "args": {"path": "a"}})
                )]
            ),
            complete("done"),
        ]),
        ApprovalPolicy::yes(),
    );
    let skills = h.ws.path().join(".roo/skills");
    let nt = install_note_taker(&skills);
    std::os::unix::fs::symlink(h.ws.canary().join("secret.txt"), nt.join("link.md"))
        .expect("symlink");
    roost_tests::mkfifo(&nt.join("fifo"));
    std::fs::write(nt.join("huge.md"), "x".repeat(300 << 10)).expect("write");
    skill(&skills, "not-wasm", "has a broken component");
    std::fs::write(skills.join("not-wasm/skill.wasm"), b"\0asm\x01\0\0\0").expect("write");
    skill(&skills, "impostor", "ships another skill's component");
    std::fs::copy(
        fixture_wasm("skill-fixture"),
        skills.join("impostor/skill.wasm"),
    )
    .expect("copy");
    let (id, outcome) = h.run(&ScriptedUser::default(), "attack").await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let r = h.results(&id);
    assert!(
        r[0].1 && r[0].0.contains("is not a path inside the skill's folder"),
        "{:?}",
        r[0]
    );
    assert!(
        r[1].1 && r[1].0.contains("reached without links"),
        "{:?}",
        r[1]
    );
    assert!(
        r[2].1 && r[2].0.contains("reached without links"),
        "{:?}",
        r[2]
    );
    assert!(
        r[3].1 && r[3].0.contains("larger than 262144 bytes"),
        "{:?}",
        r[3]
    );
    assert!(
        r[4].1 && r[4].0.contains("skill.wasm cannot be loaded"),
        "{:?}",
        r[4]
    );
    assert!(
        r[5].1 && r[5].0.contains("says it is skill `note-taker`"),
        "{:?}",
        r[5]
    );
    for (text, _) in &r {
        assert!(!text.contains("canary secret"), "{text}");
    }
}

/// A skill's `allowed-tools` limits what the model may call while it
/// follows that skill (experimental); the tools every mode has stay.
#[tokio::test]
async fn allowed_tools_limit_the_calls_while_a_skill_is_followed() {
    let h = harness(
        json!([
            turn("", vec![call("read_skill", json!({"name": "read-only"}))]),
            turn(
                "",
                vec![call(
                    "write_to_file",
                    json!({"path": "a.txt", "content": "x"})
                )]
            ),
            turn("", vec![call("read_file", json!({"path": "b.txt"}))]),
            complete("done"),
        ]),
        ApprovalPolicy::yes(),
    );
    let dir = h.ws.path().join(".roo/skills/read-only");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: read-only\ndescription: Look, do not touch.\nallowed-tools: read_file list_files\n---\nOnly read.\n",
    )
    .expect("write");
    h.ws.write("b.txt", "bee\n");
    let (id, outcome) = h.run(&ScriptedUser::default(), "look").await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let r = h.results(&id);
    assert!(
        r[0].0.contains("you may call only: read_file, list_files"),
        "{:?}",
        r[0]
    );
    assert!(
        r[1].1
            && r[1]
                .0
                .contains("`write_to_file` is not among the tools skill `read-only` allows"),
        "{:?}",
        r[1]
    );
    assert!(!h.ws.path().join("a.txt").exists());
    assert!(!r[2].1 && r[2].0.contains("bee"), "{:?}", r[2]);
}

/// Wait until the engine's watcher has seen a change to `ws`'s skills.
fn wait_for_change(h: &Harness, ws: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !h.agent().skills.is_stale(ws) {
        assert!(Instant::now() < deadline, "no change noticed in a minute");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Run a task in `h`'s workspace on its engine, calling `before_answer`
/// with the count of follow-up questions so far before each is answered
/// ("yes"), accepting the rest; returns its id and its warnings.
async fn drive(
    h: &Harness,
    prompt: &str,
    mut before_answer: impl FnMut(usize),
) -> (String, Vec<String>) {
    let engine = h.engine();
    let id = engine
        .create_task(&TaskSpec {
            prompt: prompt.into(),
            workspace: h.ws.path(),
            mode: "code".into(),
            ..TaskSpec::default()
        })
        .await
        .expect("created");
    let mut rx = engine.subscribe(&id).expect("subscribe");
    engine.start(&id).expect("start");
    let mut asked = 0;
    let mut warnings = Vec::new();
    loop {
        let ev = rx.recv().await.expect("events until the end");
        match &ev.event {
            TaskEvent::AskRequired {
                ask_id,
                ask: Ask::Followup { .. },
                ..
            } => {
                asked += 1;
                before_answer(asked);
                engine
                    .answer(&id, ask_id, Answer::Text { text: "yes".into() })
                    .await
                    .expect("answered");
            }
            // The completion is accepted.
            TaskEvent::AskRequired { ask_id, .. } => engine
                .answer(&id, ask_id, Answer::Yes)
                .await
                .expect("answered"),
            TaskEvent::Warning { message } => warnings.push(message.clone()),
            TaskEvent::Completed { .. } => break,
            TaskEvent::Failed { error } => panic!("the task failed: {error}"),
            _ => {}
        }
    }
    (id, warnings)
}

/// Skills edited, added and removed under a running engine: the task's
/// next turn sees them; a broken edit keeps the last good version and is
/// reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skills_reload_under_a_running_engine() {
    let h = harness(
        json!([
            turn(
                "",
                vec![call("ask_followup_question", json!({"question": "ready?"}))]
            ),
            turn(
                "",
                vec![call("ask_followup_question", json!({"question": "again?"}))]
            ),
            complete("done"),
        ]),
        ApprovalPolicy::yes(),
    );
    let ws = h.ws.path();
    let dir = ws.join(".roo/skills");
    skill(&dir, "alpha", "first version of alpha");
    skill(&dir, "beta", "beta, soon removed");
    let (_, warnings) = drive(&h, "watch", |asked| {
        if asked == 1 {
            // Edit one, add one, delete one.
            skill(&dir, "alpha", "second version of alpha");
            skill(&dir, "gamma", "gamma, added while running");
            std::fs::remove_dir_all(dir.join("beta")).expect("remove");
        } else {
            // A broken edit.
            std::fs::write(dir.join("alpha/SKILL.md"), "---\nname: alpha\n---\n").expect("write");
        }
        wait_for_change(&h, &ws);
    })
    .await;
    let first = skills_section(&system_prompt(&h, 0)).to_owned();
    assert!(
        first.contains("first version of alpha") && first.contains("beta"),
        "{first}"
    );
    let second = skills_section(&system_prompt(&h, 1)).to_owned();
    assert!(second.contains("second version of alpha"), "{second}");
    assert!(second.contains("gamma, added while running"), "{second}");
    assert!(!second.contains("<name>beta</name>"), "{second}");
    let third = skills_section(&system_prompt(&h, 2)).to_owned();
    assert!(
        third.contains("second version of alpha"),
        "the last good version stays: {third}"
    );
    assert!(
        warnings.iter().any(|w| w.contains("alpha/SKILL.md")
            && w.contains("`description` is missing (the last good version is kept)")),
        "{warnings:?}"
    );
}

/// Loading a skill never runs its scripts, and a workspace without skills
/// has no skill tools and no skills section.
#[tokio::test]
async fn no_skills_no_section_and_scripts_never_run() {
    let h = harness(json!([complete("done")]), ApprovalPolicy::yes());
    let (_, outcome) = h.run(&ScriptedUser::default(), "x").await;
    assert!(matches!(outcome, TaskOutcome::Completed { .. }));
    let prompt = system_prompt(&h, 0);
    assert!(!prompt.contains("SKILLS\n"), "no section without skills");
    let tools = h.transport.requests()[0]["tools"].to_string();
    assert!(
        !tools.contains("read_skill") && !tools.contains("run_skill"),
        "{tools}"
    );

    let ws = TestWorkspace::new();
    let nt = install_note_taker(&ws.path().join(".roo/skills"));
    let out = roost(&ws.root().join("data"))
        .env("HOME", ws.root().join("home"))
        .args(["skills", "show", "note-taker", "--workspace"])
        .arg(ws.path())
        .output()
        .expect("roost runs");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("entry:        count"), "{text}");
    assert!(!nt.join("../../../../SCRIPT_RAN").exists());
    assert!(!ws.root().join("SCRIPT_RAN").exists());
}

/// A folder of skills that appears while the engine runs (a `.roo/`
/// created later) is found at the next use, without the workspace itself
/// being watched.
#[test]
fn a_skills_folder_created_later_is_found() {
    let h = harness(json!([]), ApprovalPolicy::yes());
    let ws = h.ws.path();
    let library = &h.agent().skills;
    assert!(library.catalog(&ws).is_empty());
    assert!(!library.is_stale(&ws));
    skill(
        &ws.join(".agents/skills"),
        "late",
        "created after the first look",
    );
    wait_for_change(&h, &ws);
    let names: Vec<String> = library
        .catalog(&ws)
        .skills()
        .iter()
        .map(|s| s.name().to_owned())
        .collect();
    assert_eq!(names, ["late"]);
    std::fs::remove_dir_all(ws.join(".agents")).expect("remove");
    wait_for_change(&h, &ws);
    assert!(library.catalog(&ws).is_empty());
}

/// Where a folder of skills could appear is watched for entries made or
/// removed, not looked for at every use: the folders are looked for once,
/// then only after such an entry came or went. What is made is seen at the
/// very next use (the watch's queue is read, not waited on): a family
/// folder in the workspace, a `.git` above it that makes its directory the
/// project's root, a config directory whose parent did not exist. A file
/// the workspace gains does not make the library look again; with the
/// watch off, it looks at every use.
#[test]
fn where_skill_folders_could_appear_is_watched_not_looked_for() {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path().canonicalize().expect("canonical");
    let (repo, home, config) = (root.join("repo"), root.join("home"), root.join("cfg/roost"));
    let ws = repo.join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    std::fs::create_dir_all(&home).expect("home");
    let sources = roost_core::skills::Sources {
        home: Some(home.clone()),
        config_dir: Some(config.clone()),
    };
    let names = |library: &roost_core::skills::SkillLibrary| -> Vec<String> {
        let mut n: Vec<String> = library
            .catalog(&ws)
            .skills()
            .iter()
            .map(|s| s.name().to_owned())
            .collect();
        n.sort();
        n
    };
    let library = roost_core::skills::SkillLibrary::new(sources.clone());
    assert!(names(&library).is_empty());
    assert_eq!(library.presence_lookups(), 1);
    for _ in 0..3 {
        assert!(names(&library).is_empty());
    }
    std::fs::write(ws.join("notes.txt"), "a file of the workspace").expect("write");
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt"))
            .expect("read")
            .len(),
        23
    );
    assert!(names(&library).is_empty());
    assert_eq!(
        library.presence_lookups(),
        1,
        "nothing appeared where skills live"
    );

    skill(&ws.join(".claude/skills"), "claude-one", "in the workspace");
    assert_eq!(names(&library), ["claude-one"]);
    std::fs::remove_dir_all(ws.join(".claude")).expect("remove");
    assert!(names(&library).is_empty());

    // A `.git` above the workspace: that directory's folders are the
    // project's now.
    skill(
        &repo.join(".roo/skills"),
        "repo-one",
        "at the repository's root",
    );
    assert!(names(&library).is_empty(), "not a project folder yet");
    std::fs::create_dir(repo.join(".git")).expect("git");
    assert_eq!(names(&library), ["repo-one"]);

    // The config directory, whose parent did not exist.
    skill(
        &config.join("skills"),
        "config-one",
        "in the config directory",
    );
    assert_eq!(names(&library), ["config-one", "repo-one"]);
    let looked = library.presence_lookups();
    assert!(looked <= 6, "looked {looked} times");
    for _ in 0..3 {
        assert_eq!(names(&library), ["config-one", "repo-one"]);
    }
    assert_eq!(library.presence_lookups(), looked);

    let unwatched = roost_core::skills::SkillLibrary::with_presence_watch(sources, false);
    for _ in 0..3 {
        assert_eq!(names(&unwatched), ["config-one", "repo-one"]);
    }
    assert_eq!(unwatched.presence_lookups(), 3);
}

/// A project skill's folder swapped for a link out of the project while a
/// task runs never lets `read_skill` read where the link leads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_folder_swapped_for_a_link_reads_nothing_outside() {
    let h = harness(
        json!([
            turn("", vec![call("read_skill", json!({"name": "note-taker"}))]),
            turn(
                "",
                vec![call("ask_followup_question", json!({"question": "go on?"}))]
            ),
            turn(
                "",
                vec![call(
                    "read_skill",
                    json!({"name": "note-taker", "path": "secret.txt"})
                )]
            ),
            complete("done"),
        ]),
        ApprovalPolicy::yes(),
    );
    let ws = h.ws.path();
    let folder = install_note_taker(&ws.join(".roo/skills"));
    let (id, _) = drive(&h, "read", |_| {
        std::fs::remove_dir_all(&folder).expect("remove");
        std::os::unix::fs::symlink(h.ws.canary(), &folder).expect("symlink");
    })
    .await;
    let r = h.results(&id);
    assert!(!r[0].1, "{:?}", r[0]);
    assert!(r[2].1, "{:?}", r[2]);
    assert!(!r[2].0.contains("canary secret"), "{:?}", r[2]);
}
