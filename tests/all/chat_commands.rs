//! The conversation's slash commands: /undo, /checkpoints, /skills, /mcp, /history.
//!
//! The real binary in a session on piped input (each line a message, a
//! command or the answer to a question), the scripted provider as the
//! model; a task started in one session is taken up in the next with
//! `/tasks ID`, so each command's output is one session's.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{Value, json};

use roost_tests::identity::{Identity, NOBODY, chown_tree, identities, runnable_by_anyone};

/// Longest a session may take before the test calls it hung.
const SESSION_BOUND: std::time::Duration = std::time::Duration::from_secs(180);

/// A workspace, a data dir and a home, driven through `roost` as `who`.
struct Chat {
    dir: tempfile::TempDir,
    who: Identity,
}

impl Chat {
    fn new(who: Identity) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        for d in ["data", "ws", "home"] {
            std::fs::create_dir_all(dir.path().join(d)).expect("mkdir");
        }
        std::fs::write(dir.path().join("data/config.toml"), "").expect("config");
        Self { dir, who }
    }

    fn ws(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// `roost` as `who`, everything the test made so far handed to it.
    fn roost(&self) -> std::process::Command {
        if self.who == Identity::Nobody {
            chown_tree(self.dir.path(), NOBODY);
        }
        let mut c = self
            .who
            .command(&runnable_by_anyone(Path::new(env!("CARGO_BIN_EXE_roost"))));
        c.env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", self.dir.path().join("home"))
            .env("ROOST_CONFIG", self.data().join("config.toml"))
            .arg("--data-dir")
            .arg(self.data());
        c
    }

    /// A session in the workspace typing `lines`, edits approved
    /// (`--approve read,edit`), the model `turns`: what it printed on
    /// stdout and on stderr. A session still going after
    /// [`SESSION_BOUND`] is killed and the test fails.
    fn session(&self, turns: &Value, lines: &[&str]) -> (String, String) {
        let script = self.dir.path().join("script.json");
        std::fs::write(&script, json!({ "turns": turns }).to_string()).expect("script");
        let mut child = self
            .roost()
            .args(["--approve", "read,edit", "--workspace"])
            .arg(self.ws())
            .arg("--script")
            .arg(&script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn roost");
        let mut stdin = child.stdin.take().expect("stdin");
        for l in lines {
            writeln!(stdin, "{l}").expect("type");
        }
        drop(stdin);
        let pid = child.id();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        let out = match rx.recv_timeout(SESSION_BOUND) {
            Ok(out) => out.expect("roost runs"),
            Err(_) => {
                let _ = std::process::Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
                panic!("the session hung: still running after {SESSION_BOUND:?}");
            }
        };
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        assert!(out.status.success(), "as {:?}: {stdout}{stderr}", self.who);
        (stdout, stderr)
    }

    /// What `lines` printed in a session that took up task `id` first
    /// (the banner and the line taking it up left out).
    fn on_task(&self, turns: &Value, id: &str, lines: &[&str]) -> String {
        let mut all = vec![format!("/tasks {id}")];
        all.extend(lines.iter().map(|l| (*l).to_owned()));
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        let (stdout, stderr) = self.session(turns, &all);
        let (_, after) = stdout
            .split_once("your next message continues it\n")
            .unwrap_or_else(|| panic!("the task was not taken up: {stdout}{stderr}"));
        after.to_owned()
    }

    /// `roost ARGS`'s stdout (it must succeed).
    fn cmd(&self, args: &[&str]) -> String {
        let o = self.roost().args(args).output().expect("runs");
        let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(
            o.status.success(),
            "{args:?}: {stdout}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        stdout
    }

    /// The one task of the data dir.
    fn task_id(&self) -> String {
        let listed = self.cmd(&["history", "list", "--json"]);
        let tasks: Vec<Value> = listed
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect();
        assert_eq!(tasks.len(), 1, "{listed}");
        tasks[0]["id"].as_str().expect("id").to_owned()
    }

    /// `text` without what changes from run to run: the temporary
    /// folder, task `id`, times.
    fn stable(&self, text: &str, id: Option<&str>) -> String {
        let times = regex::Regex::new(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d").expect("regex");
        let mut text = text.replace(&self.dir.path().display().to_string(), "[dir]");
        if let Some(id) = id {
            text = text.replace(id, "[task]");
        }
        times.replace_all(&text, "[time]").into_owned()
    }
}

/// A session's output after its banner line.
fn after_banner(out: &str) -> &str {
    match out.split_once('\n') {
        Some((banner, rest)) if banner.starts_with("Roost ·") => rest,
        _ => out,
    }
}

/// Every file of `root` (links as their targets), by relative path.
fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).expect("inside").display().to_string();
            let meta = p.symlink_metadata().expect("stat");
            if meta.is_dir() {
                walk(root, &p, out);
            } else if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&p).expect("readlink");
                out.insert(rel, target.display().to_string().into_bytes());
            } else {
                out.insert(rel, std::fs::read(&p).expect("read"));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// The workspace's files, hashed.
fn hash(root: &Path) -> String {
    let mut h = blake3::Hasher::new();
    for (path, bytes) in tree(root) {
        h.update(path.as_bytes());
        h.update(&[0]);
        h.update(&u64::try_from(bytes.len()).expect("len").to_le_bytes());
        h.update(&bytes);
    }
    h.finalize().to_hex().to_string()
}

fn write(path: &str, content: &str) -> Value {
    json!({"name": "write_to_file", "args": {"path": path, "content": content}})
}

fn done(result: &str) -> Value {
    json!({"text": "", "tool_calls": [{"name": "attempt_completion", "args": {"result": result}}]})
}

/// The model: a first message reads, writes and completes; the next one
/// writes in two turns (one changing two files, one file created) and
/// completes; after an undo it is asked again and does the same.
fn turns() -> Value {
    json!([
        {"text": "Reading first.", "tool_calls": [{"name": "read_file", "args": {"path": "a.txt"}}]},
        {"text": "I'll write it.", "tool_calls": [write("hello.txt", "hello\n")]},
        done("Wrote hello.txt."),
        {"text": "In French, with notes.", "tool_calls": [write("hello.txt", "bonjour\n"), write("notes/new.txt", "new\n")]},
        {"text": "And a.txt.", "tool_calls": [write("a.txt", "changed\n")]},
        done("Changed."),
    ])
}

/// `/undo` takes back everything the last message changed — files
/// written, created and changed over two turns — after showing what goes
/// back and asking; "n" leaves all as is. The workspace is then exactly
/// as the first message left it, the conversation without the undone
/// turns; `/checkpoints` shows which checkpoint `/undo` goes back to and
/// which are undone; `/history` draws the conversation as the live view
/// did. Turns are numbered over the task's life, as checkpoints are.
#[test]
fn undo_takes_back_what_the_last_message_changed() {
    for who in identities() {
        undo_as(who);
    }
}

fn undo_as(who: Identity) {
    let chat = Chat::new(who);
    std::fs::write(chat.ws().join("a.txt"), "original\n").expect("a.txt");
    let turns = turns();
    chat.session(&turns, &["write a greeting"]);
    let first = hash(&chat.ws());
    assert_eq!(
        std::fs::read_to_string(chat.ws().join("hello.txt")).expect("written"),
        "hello\n"
    );
    let id = chat.task_id();

    // Garbage is refused.
    let (_, err) = chat.session(&turns, &[&format!("/tasks {id}"), "/undo x", "/undo 99"]);
    assert!(
        err.contains("`x` is not a checkpoint number") && err.contains("has no checkpoint 99"),
        "{err}"
    );

    let out = chat.on_task(&turns, &id, &["now french"]);
    assert!(out.contains("Changed."), "{out}");
    assert_ne!(
        hash(&chat.ws()),
        first,
        "the second message changed nothing"
    );

    // One numbering: the requests' turns go on after the continuation,
    // and each checkpoint names the turn it was taken in.
    let shown: Value =
        serde_json::from_str(&chat.cmd(&["history", "show", &id, "--json"])).expect("json");
    let requests: Vec<&str> = shown["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["subtype"] == "api_req_started")
        .map(|m| m["text"].as_str().expect("text"))
        .collect();
    assert_eq!(
        requests,
        ["turn 1", "turn 2", "turn 3", "turn 4", "turn 5", "turn 6"]
    );
    let listed = chat.cmd(&["checkpoints", "list", &id, "--json"]);
    let cp_turns: Vec<u64> = listed
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).expect("json")["turn"]
                .as_u64()
                .expect("turn")
        })
        .collect();
    assert_eq!(cp_turns, [2, 4, 5], "{listed}");

    let before = chat.on_task(&turns, &id, &["/checkpoints"]);
    insta::assert_snapshot!("checkpoints_before_undo", chat.stable(&before, Some(&id)));

    // Asked, and "n": nothing changes.
    let declined = chat.on_task(&turns, &id, &["/undo", "n"]);
    assert!(declined.ends_with("not undone\n"), "{declined}");
    assert_ne!(hash(&chat.ws()), first);

    let undone = chat.on_task(&turns, &id, &["/undo", "y"]);
    insta::assert_snapshot!("undo", chat.stable(&undone, Some(&id)));
    assert_eq!(
        hash(&chat.ws()),
        first,
        "the workspace is not as the first message left it: {:?}",
        tree(&chat.ws())
    );

    let after = chat.on_task(&turns, &id, &["/checkpoints"]);
    insta::assert_snapshot!("checkpoints_after_undo", chat.stable(&after, Some(&id)));
    let history = chat.on_task(&turns, &id, &["/history"]);
    insta::assert_snapshot!("history", chat.stable(&history, Some(&id)));

    // The conversation went back too: asked again, the model goes on
    // from the undone turn (the transcript follows the replies kept).
    let again = chat.on_task(&turns, &id, &["in french after all"]);
    assert!(again.contains("In French, with notes."), "{again}");
    assert_eq!(
        std::fs::read_to_string(chat.ws().join("hello.txt")).expect("written"),
        "bonjour\n"
    );
}

/// `/skills` lists the skills the session's mode sees (a mode's own
/// folder and the generic one) and the ones skipped, with why; `/mcp` the
/// workspace's servers and their state (none is started: one is
/// disabled, the others not trusted); `/help` lists both and `/undo`;
/// with nothing to undo, `/undo` says so.
#[test]
fn skills_and_mcp_in_the_chat() {
    let chat = Chat::new(Identity::Caller);
    let ws = chat.ws();
    for (folder, text) in [
        (
            "skills/greet",
            "---\nname: greet\ndescription: Say hello in the house style.\n---\nBody.\n",
        ),
        ("skills/broken", "---\nname: broken\n---\nNo description.\n"),
        (
            "skills-code/review",
            "---\nname: review\ndescription: Review code changes.\n---\nBody.\n",
        ),
    ] {
        let dir = ws.join(".roo").join(folder);
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(dir.join("SKILL.md"), text).expect("skill");
    }
    std::fs::write(
        ws.join(".roo/mcp.json"),
        json!({"mcpServers": {
            "docs": {"command": "node", "args": ["server.js"]},
            "off": {"command": "true", "disabled": true},
            "remote": {"type": "streamable-http", "url": "http://127.0.0.1:9/mcp"},
        }})
        .to_string(),
    )
    .expect("mcp.json");
    let none = json!([]);
    let (help, _) = chat.session(&none, &["/help"]);
    for line in [
        "/undo [checkpoint]",
        "/checkpoints",
        "/skills",
        "/mcp",
        "/history",
    ] {
        assert!(help.contains(line), "{help}");
    }
    let (skills, _) = chat.session(&none, &["/skills", "/mode ask", "/skills"]);
    insta::assert_snapshot!("skills", chat.stable(after_banner(&skills), None));
    let (mcp, _) = chat.session(&none, &["/mcp"]);
    insta::assert_snapshot!("mcp", chat.stable(after_banner(&mcp), None));

    // A task that changed nothing has nothing to undo, and says so.
    let (out, _) = chat.session(
        &json!([done("Nothing to change.")]),
        &["/undo", "look around", "/checkpoints", "/undo"],
    );
    assert!(out.contains("nothing to undo: no task yet"), "{out}");
    assert!(
        out.contains("the task has no checkpoints (it changed no files yet)")
            && out.contains("nothing to undo: the task changed no files yet"),
        "{out}"
    );
}
