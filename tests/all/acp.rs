//! `roost acp` driven by the ACP SDK's client role from another process:
//! a scripted model's task streams to the editor as updates, every write
//! is a `session/request_permission` whose answer holds (a rejection
//! writes nothing; an editor that never answers gets a denial, not a
//! hang), and hostile frames get errors while the agent goes on.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, InitializeRequest, ListSessionsRequest, LoadSessionRequest, NewSessionRequest,
    PermissionOptionKind, PromptRequest, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome, SessionNotification, SessionUpdate,
    StopReason, TextContent, ToolCallContent, ToolCallStatus, ToolKind,
};
use agent_client_protocol::v1::schema::{InitializeResponse, NewSessionResponse, SessionId};
use agent_client_protocol::{AcpAgent, AcpAgentConfig, Agent, Client, Error as AcpError};
use roost_tests::identity::{Identity, NOBODY, chown_tree, identities, runnable_by_anyone};
use serde_json::{Value, json};

/// How the test's editor answers permission requests.
#[derive(Debug, Clone, Copy)]
enum Editor {
    /// Picks the option of this kind.
    Picks(PermissionOptionKind),
    /// Shows nothing and never answers.
    Silent,
}

/// What the editor saw of a session.
#[derive(Debug, Default)]
struct Seen {
    updates: Vec<SessionUpdate>,
    asked: Vec<RequestPermissionRequest>,
}

/// A scripted model's transcript in `dir`.
fn script(dir: &Path, turns: Value) -> PathBuf {
    let path = dir.join("script.json");
    std::fs::write(&path, json!({ "turns": turns }).to_string()).expect("script");
    path
}

/// `roost acp` on `data` for the workspaces under `root`, replaying
/// `script`, with these extra arguments.
fn agent(data: &Path, root: &Path, script: &Path, extra: &[&str]) -> AcpAgent {
    let config = data.join("none.toml");
    std::fs::create_dir_all(data).expect("data");
    std::fs::write(&config, "").expect("config");
    let mut args: Vec<String> = vec![
        "--data-dir".into(),
        data.display().to_string(),
        "acp".into(),
        "--script".into(),
        script.display().to_string(),
        "--approve".into(),
        "read".into(),
        "--workspace".into(),
        root.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    AcpAgent::new(
        AcpAgentConfig::new(env!("CARGO_BIN_EXE_roost"))
            .args(args)
            .env("ROOST_CONFIG", config.display().to_string()),
    )
}

/// Run `prompts` in one new session of `agent` in `workspace`, answering
/// as `editor` does: what the editor saw, and each prompt's stop reason.
async fn drive(
    agent: AcpAgent,
    workspace: &Path,
    prompts: &[&str],
    editor: Editor,
) -> (Seen, Vec<StopReason>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (on_update, on_ask) = (Arc::clone(&seen), Arc::clone(&seen));
    let workspace = workspace.to_path_buf();
    let prompts: Vec<String> = prompts.iter().map(|p| (*p).to_owned()).collect();
    let run = Client
        .v1()
        .on_receive_notification(
            async move |n: SessionNotification, _cx| {
                on_update.lock().unwrap().updates.push(n.update);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |req: RequestPermissionRequest, responder, _cx| {
                let option = match editor {
                    Editor::Picks(kind) => req
                        .options
                        .iter()
                        .find(|o| o.kind == kind)
                        .map(|o| o.option_id.clone()),
                    Editor::Silent => None,
                };
                on_ask.lock().unwrap().asked.push(req);
                match option {
                    Some(id) => responder.respond(RequestPermissionResponse::new(
                        RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id)),
                    )),
                    None => {
                        // Never answered: held until the test ends.
                        tokio::spawn(async move {
                            let _held = responder;
                            std::future::pending::<()>().await;
                        });
                        Ok(())
                    }
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(agent, async move |cx: ConnectionTo<Agent>| {
            let init = initialize(&cx).await?;
            assert_eq!(init.protocol_version, ProtocolVersion::V1);
            assert!(
                !init.auth_methods.is_empty(),
                "the ACP registry lists agents with authMethods"
            );
            let session = new_session(&cx, &workspace).await?;
            let modes = session.modes.expect("modes");
            assert!(
                modes
                    .available_modes
                    .iter()
                    .any(|m| m.id == modes.current_mode_id)
            );
            assert!(
                modes
                    .available_modes
                    .iter()
                    .any(|m| &*m.id.0 == "architect")
            );
            let mut stops = Vec::new();
            for p in prompts {
                let r = cx
                    .send_request(prompt(&session.session_id, &p))
                    .block_task()
                    .await?;
                stops.push(r.stop_reason);
            }
            Ok(stops)
        });
    let stops = bounded(run).await.expect("the ACP session ran");
    let seen = Arc::try_unwrap(seen)
        .map(|m| m.into_inner().unwrap())
        .unwrap_or_else(|s| std::mem::take(&mut *s.lock().unwrap()));
    (seen, stops)
}

/// `initialize` at protocol v1.
async fn initialize(cx: &ConnectionTo<Agent>) -> Result<InitializeResponse, AcpError> {
    cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
        .block_task()
        .await
}

/// A new session in `ws`.
async fn new_session(cx: &ConnectionTo<Agent>, ws: &Path) -> Result<NewSessionResponse, AcpError> {
    cx.send_request(NewSessionRequest::new(ws.to_path_buf()))
        .block_task()
        .await
}

/// A prompt of `words` to session `id`.
fn prompt(id: &SessionId, words: &str) -> PromptRequest {
    PromptRequest::new(
        id.clone(),
        vec![ContentBlock::Text(TextContent::new(words.to_owned()))],
    )
}

/// `run`, failing the test (rather than hanging CI) if `roost acp` stops
/// answering; a bound on a broken run, not a timing assertion.
async fn bounded<T>(run: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(std::time::Duration::from_secs(300), run)
        .await
        .expect("roost acp stopped answering")
}

/// The tool calls the editor was shown, with their last status.
fn calls(updates: &[SessionUpdate]) -> Vec<(String, ToolKind, Option<ToolCallStatus>)> {
    let mut calls: Vec<(String, String, ToolKind, Option<ToolCallStatus>)> = Vec::new();
    for u in updates {
        match u {
            SessionUpdate::ToolCall(c) => calls.push((
                c.tool_call_id.0.to_string(),
                c.title.clone(),
                c.kind,
                Some(c.status),
            )),
            SessionUpdate::ToolCallUpdate(u) => {
                if let Some(c) = calls.iter_mut().find(|c| *c.0 == *u.tool_call_id.0)
                    && let Some(s) = u.fields.status
                {
                    c.3 = Some(s);
                }
            }
            _ => {}
        }
    }
    calls.into_iter().map(|(_, t, k, s)| (t, k, s)).collect()
}

/// The reply text the editor was shown.
fn said(updates: &[SessionUpdate]) -> String {
    updates
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::AgentMessageChunk(c) => match &c.content {
                ContentBlock::Text(t) => Some(t.text.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// A workspace in `dir` holding `a.txt`.
fn workspace_with_a(dir: &Path) -> PathBuf {
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    std::fs::write(ws.join("a.txt"), "ay\n").expect("a");
    ws
}

fn writing_script(dir: &Path) -> PathBuf {
    script(
        dir,
        json!([
            {"text": "Reading first.", "tool_calls": [{"name": "read_file", "args": {"path": "a.txt"}}], "chunk_size": 4,
             "usage": {"input_tokens": 1200, "output_tokens": 300, "cache_read_tokens": 500, "cache_write_tokens": 0}},
            {"text": "Now the plan.", "tool_calls": [{"name": "update_todo_list", "args": {"todos": "[x] read a\n[-] write b"}}]},
            {"text": "Writing.", "tool_calls": [{"name": "write_to_file", "args": {"path": "b.txt", "content": "bee\n"}}]},
            {"tool_calls": [{"name": "attempt_completion", "args": {"result": "wrote b.txt"}}]},
            {"tool_calls": [{"name": "attempt_completion", "args": {"result": "still done"}}]}
        ]),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_runs_a_task_and_answers_its_permission() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace_with_a(dir.path());
    let script = writing_script(dir.path());
    let (seen, stops) = drive(
        agent(&dir.path().join("data"), dir.path(), &script, &[]),
        &ws,
        &["write b.txt", "thanks, that is all"],
        Editor::Picks(PermissionOptionKind::AllowOnce),
    )
    .await;
    // The result ends the turn (its review is the next prompt), twice.
    assert_eq!(stops, vec![StopReason::EndTurn, StopReason::EndTurn]);
    assert_eq!(
        std::fs::read_to_string(ws.join("b.txt")).expect("b"),
        "bee\n"
    );
    let shown = calls(&seen.updates);
    assert_eq!(
        shown,
        vec![
            (
                "read_file a.txt".to_owned(),
                ToolKind::Read,
                Some(ToolCallStatus::Completed)
            ),
            (
                "update_todo_list".to_owned(),
                ToolKind::Think,
                Some(ToolCallStatus::Completed)
            ),
            (
                "write_to_file b.txt".to_owned(),
                ToolKind::Edit,
                Some(ToolCallStatus::Completed)
            ),
            // Reviewed by the second prompt.
            (
                "attempt_completion".to_owned(),
                ToolKind::Think,
                Some(ToolCallStatus::Completed)
            ),
            // Its review is the person's next prompt: it waits for it.
            (
                "attempt_completion".to_owned(),
                ToolKind::Think,
                Some(ToolCallStatus::Pending)
            ),
        ],
        "{:#?}",
        seen.updates
    );
    let text = said(&seen.updates);
    assert!(
        text.contains("Reading first.") && text.contains("wrote b.txt"),
        "{text}"
    );
    assert!(
        seen.updates
            .iter()
            .any(|u| matches!(u, SessionUpdate::Plan(p) if p.entries.len() == 2)),
        "{:#?}",
        seen.updates
    );
    // How full the context is after each request (the first one's
    // prompt, cached and not, and its reply, of the default window).
    let usage: Vec<(u64, u64)> = seen
        .updates
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::UsageUpdate(u) => Some((u.used, u.size)),
            _ => None,
        })
        .collect();
    assert_eq!(usage.first(), Some(&(2000, 128_000)), "{usage:?}");
    assert_eq!(usage.len(), 5, "one per model request: {usage:?}");
    // The write, and only the write, was asked, with all four answers,
    // its change shown as the editor's diff of the file's absolute path.
    assert_eq!(seen.asked.len(), 1, "{:#?}", seen.asked);
    let asked = seen.asked[0]
        .tool_call
        .fields
        .content
        .clone()
        .unwrap_or_default();
    let b = ws.canonicalize().expect("canonical").join("b.txt");
    assert!(
        matches!(&asked[..], [ToolCallContent::Diff(d)] if d.path == b && d.old_text.is_none() && d.new_text == "bee\n"),
        "{asked:#?}"
    );
    // It is the write's call (named where the file is), and its diff stays
    // when the call's result comes.
    let write = seen
        .updates
        .iter()
        .find_map(|u| match u {
            SessionUpdate::ToolCall(c) if c.locations.iter().any(|l| l.path == b) => {
                Some(c.tool_call_id.clone())
            }
            _ => None,
        })
        .expect("the write's call names b.txt");
    assert_eq!(seen.asked[0].tool_call.tool_call_id, write);
    let last = seen
        .updates
        .iter()
        .rev()
        .find_map(|u| match u {
            SessionUpdate::ToolCallUpdate(u) if u.tool_call_id == write => u.fields.content.clone(),
            _ => None,
        })
        .unwrap_or_default();
    assert!(
        matches!(&last[..], [ToolCallContent::Diff(d), ToolCallContent::Content(_)] if d.path == b),
        "{last:#?}"
    );
    let kinds: Vec<PermissionOptionKind> = seen.asked[0].options.iter().map(|o| o.kind).collect();
    assert_eq!(
        kinds,
        [
            PermissionOptionKind::AllowOnce,
            PermissionOptionKind::AllowAlways,
            PermissionOptionKind::RejectOnce,
            PermissionOptionKind::RejectAlways
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_write_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace_with_a(dir.path());
    let before = roost_tests::tree_hash(&ws);
    let script = writing_script(dir.path());
    let (seen, stops) = drive(
        agent(&dir.path().join("data"), dir.path(), &script, &[]),
        &ws,
        &["write b.txt"],
        Editor::Picks(PermissionOptionKind::RejectOnce),
    )
    .await;
    assert_eq!(stops, vec![StopReason::EndTurn]);
    assert_eq!(roost_tests::tree_hash(&ws), before, "nothing was written");
    let write = calls(&seen.updates)
        .into_iter()
        .find(|c| c.0.starts_with("write_to_file"))
        .expect("the write was shown");
    assert_eq!(write.2, Some(ToolCallStatus::Failed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_that_never_answers_gets_a_denial_not_a_hang() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace_with_a(dir.path());
    let before = roost_tests::tree_hash(&ws);
    let script = writing_script(dir.path());
    let (seen, stops) = drive(
        agent(
            &dir.path().join("data"),
            dir.path(),
            &script,
            &["--ask-timeout", "1"],
        ),
        &ws,
        &["write b.txt"],
        Editor::Silent,
    )
    .await;
    assert_eq!(stops, vec![StopReason::EndTurn]);
    assert_eq!(seen.asked.len(), 1);
    assert_eq!(roost_tests::tree_hash(&ws), before, "nothing was written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_prompt_stops_the_task_and_the_next_prompt_resumes_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    // The model stalls mid-reply until the person stops it.
    let script = script(
        dir.path(),
        json!([
            {"text": "Working on it, slowly and carefully, one step at a time, and then some more words.", "chunk_size": 8, "stall_after": 20},
            {"tool_calls": [{"name": "attempt_completion", "args": {"result": "done after all"}}]}
        ]),
    );
    let streaming = Arc::new(tokio::sync::Notify::new());
    let on_update = Arc::clone(&streaming);
    let said_first = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&said_first);
    let run = Client
        .v1()
        .on_receive_notification(
            async move |n: SessionNotification, _cx| {
                if matches!(n.update, SessionUpdate::AgentMessageChunk(_)) {
                    on_update.notify_one();
                }
                kept.lock().unwrap().push(n.update);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_with(
            agent(&dir.path().join("data"), dir.path(), &script, &[]),
            async move |cx: ConnectionTo<Agent>| {
                initialize(&cx).await?;
                let id = new_session(&cx, &ws).await?.session_id;
                let first = cx.send_request(prompt(&id, "do it")).block_task();
                let cancel = async {
                    streaming.notified().await;
                    cx.send_notification(
                        agent_client_protocol::v1::schema::CancelNotification::new(id.clone()),
                    )
                };
                let (first, cancelled) = tokio::join!(first, cancel);
                cancelled?;
                let second = cx.send_request(prompt(&id, "go on")).block_task().await?;
                Ok(vec![first?.stop_reason, second.stop_reason])
            },
        );
    let stops = bounded(run).await.expect("the ACP session ran");
    assert_eq!(stops, vec![StopReason::Cancelled, StopReason::EndTurn]);
    let text = said(&said_first.lock().unwrap());
    assert!(text.contains("done after all"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_later_roost_acp_lists_the_session_and_load_replays_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace_with_a(dir.path());
    let data = dir.path().join("data");
    let first = writing_script(dir.path());
    let (_, stops) = drive(
        agent(&data, dir.path(), &first, &[]),
        &ws,
        &["write b.txt"],
        Editor::Picks(PermissionOptionKind::AllowOnce),
    )
    .await;
    assert_eq!(stops, vec![StopReason::EndTurn]);
    // Another process on the same store (the scripted model goes on where
    // the history stands): the editor reopens the session.
    let later = first.clone();
    let replayed = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&replayed);
    let ws2 = ws.clone();
    let run = Client
        .v1()
        .on_receive_notification(
            async move |n: SessionNotification, _cx| {
                kept.lock().unwrap().push(n.update);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_with(
            agent(&data, dir.path(), &later, &[]),
            async move |cx: ConnectionTo<Agent>| {
                let init = initialize(&cx).await?;
                assert!(init.agent_capabilities.load_session);
                let listed = cx
                    .send_request(ListSessionsRequest::new())
                    .block_task()
                    .await?;
                assert_eq!(listed.sessions.len(), 1, "{listed:?}");
                let session = &listed.sessions[0];
                assert_eq!(session.title.as_deref(), Some("write b.txt"));
                assert_eq!(session.cwd, ws2.canonicalize().expect("canonical"));
                let loaded = cx
                    .send_request(LoadSessionRequest::new(
                        session.session_id.clone(),
                        ws2.clone(),
                    ))
                    .block_task()
                    .await?;
                assert!(loaded.modes.is_some());
                let r = cx
                    .send_request(prompt(&session.session_id, "one more thing"))
                    .block_task()
                    .await?;
                Ok(r.stop_reason)
            },
        );
    let stop = bounded(run).await.expect("the ACP session ran");
    assert_eq!(stop, StopReason::EndTurn);
    let updates = replayed.lock().unwrap();
    // The history came back: the reply, the calls with their outcomes,
    // then the new turn.
    let text = said(&updates);
    assert!(
        text.contains("Reading first.")
            && text.contains("wrote b.txt")
            && text.contains("still done"),
        "{text}"
    );
    let replayed_calls = calls(&updates);
    assert!(
        replayed_calls
            .iter()
            .any(|c| c.0 == "write_to_file b.txt" && c.2 == Some(ToolCallStatus::Completed)),
        "{replayed_calls:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sessions_run_at_once_each_with_its_own_task() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (one, two) = (dir.path().join("one"), dir.path().join("two"));
    for ws in [&one, &two] {
        std::fs::create_dir_all(ws).expect("ws");
        std::fs::write(ws.join("a.txt"), format!("{}\n", ws.display())).expect("a");
    }
    let script = script(
        dir.path(),
        json!([
            {"text": "Reading.", "tool_calls": [{"name": "read_file", "args": {"path": "a.txt"}}]},
            {"tool_calls": [{"name": "attempt_completion", "args": {"result": "read it"}}]}
        ]),
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&seen);
    let run = Client
        .v1()
        .on_receive_notification(
            async move |n: SessionNotification, _cx| {
                kept.lock()
                    .unwrap()
                    .push((n.session_id.0.to_string(), n.update));
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_with(
            agent(&dir.path().join("data"), dir.path(), &script, &[]),
            async move |cx: ConnectionTo<Agent>| {
                initialize(&cx).await?;
                let a = new_session(&cx, &one).await?.session_id;
                let b = new_session(&cx, &two).await?.session_id;
                let (ra, rb) = tokio::join!(
                    cx.send_request(prompt(&a, "read a.txt")).block_task(),
                    cx.send_request(prompt(&b, "read a.txt")).block_task()
                );
                Ok((a, ra?.stop_reason, b, rb?.stop_reason))
            },
        );
    let (a, stop_a, b, stop_b) = bounded(run).await.expect("the ACP session ran");
    assert_eq!((stop_a, stop_b), (StopReason::EndTurn, StopReason::EndTurn));
    assert_ne!(a, b);
    let seen = seen.lock().unwrap();
    for id in [&a, &b] {
        let own: Vec<SessionUpdate> = seen
            .iter()
            .filter(|(s, _)| *s == *id.0)
            .map(|(_, u)| u.clone())
            .collect();
        let shown = calls(&own);
        assert_eq!(shown.len(), 2, "{shown:?}");
        assert_eq!(shown[0].0, "read_file a.txt");
        assert!(said(&own).contains("read it"));
    }
}

/// A line-by-line JSON-RPC peer of `roost acp`, for frames no SDK sends.
struct Raw {
    child: std::process::Child,
    /// Standard input, until the test hangs up.
    input: Option<std::process::ChildStdin>,
    output: std::sync::mpsc::Receiver<Value>,
    /// Messages read while waiting for another.
    stash: Vec<Value>,
}

impl Raw {
    fn start(data: &Path, script: &Path, extra: &[&str]) -> Self {
        let script = script.display().to_string();
        let mut args = vec!["--script", script.as_str()];
        args.extend_from_slice(extra);
        Self::configured(data, "", &args)
    }

    /// `roost acp` with config file `config` and these arguments.
    fn configured(data: &Path, config: &str, args: &[&str]) -> Self {
        Self::configured_as(Identity::Caller, data, config, args)
    }

    /// [`Raw::configured`] run as `who` (its data directory given to
    /// them).
    fn configured_as(who: Identity, data: &Path, config: &str, args: &[&str]) -> Self {
        std::fs::create_dir_all(data).expect("data");
        let config_file = data.join("config.toml");
        std::fs::write(&config_file, config).expect("config");
        if who == Identity::Nobody {
            chown_tree(data, NOBODY);
        }
        let config = config_file;
        let roost = runnable_by_anyone(Path::new(env!("CARGO_BIN_EXE_roost")));
        let mut child = who
            .command(&roost)
            .arg("--data-dir")
            .arg(data)
            .arg("acp")
            .args(args)
            .env("ROOST_CONFIG", &config)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("roost acp starts");
        let input = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, output) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                // Standard output carries only ACP messages: every line is JSON.
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout carried a non-JSON line ({e}): {line}"));
                if tx.send(v).is_err() {
                    return;
                }
            }
        });
        Self {
            child,
            input: Some(input),
            output,
            stash: Vec::new(),
        }
    }

    fn send(&mut self, line: &str) {
        let input = self.input.as_mut().expect("not hung up");
        input.write_all(line.as_bytes()).expect("write");
        input.write_all(b"\n").expect("write");
        input.flush().expect("flush");
    }

    /// The first message `wanted` picks, read or stashed (the others are
    /// kept for later).
    fn next(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.stash.iter().position(&wanted) {
            return self.stash.remove(i);
        }
        loop {
            let v = self
                .output
                .recv_timeout(std::time::Duration::from_secs(60))
                .expect("roost acp answers");
            if wanted(&v) {
                return v;
            }
            self.stash.push(v);
        }
    }

    /// The response to request `id`.
    fn response(&mut self, id: i64) -> Value {
        self.next(|v| v.get("id") == Some(&json!(id)) && v.get("method").is_none())
    }

    /// The next `session/update` of this kind.
    fn update(&mut self, kind: &str) -> Value {
        self.next(|v| {
            v["method"] == "session/update" && v["params"]["update"]["sessionUpdate"] == kind
        })
    }

    /// Open a session in `ws` (request `id`) and send it a prompt (request
    /// `id + 1`, not waited for): the session's id.
    fn prompt_in_new_session(&mut self, id: i64, ws: &Path) -> String {
        let made = self.request(id, "session/new", json!({"cwd": ws, "mcpServers": []}));
        let session = made["result"]["sessionId"]
            .as_str()
            .expect("session")
            .to_owned();
        self.send(
            &json!({"jsonrpc": "2.0", "id": id + 1, "method": "session/prompt",
                    "params": {"sessionId": session, "prompt": [{"type": "text", "text": "do it"}]}})
            .to_string(),
        );
        session
    }

    /// Load session `task` in `ws` (requests `id` and `id + 1`) and prompt
    /// it to go on: the turn ends `end_turn`.
    fn load_and_go_on(&mut self, id: i64, task: &str, ws: &Path) {
        let loaded = self.request(
            id,
            "session/load",
            json!({"sessionId": task, "cwd": ws, "mcpServers": []}),
        );
        assert!(loaded.get("result").is_some(), "{loaded}");
        let r = self.request(
            id + 1,
            "session/prompt",
            json!({"sessionId": task, "prompt": [{"type": "text", "text": "go on"}]}),
        );
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    }

    /// Close standard input (the editor went away) and wait for the exit.
    fn hang_up(&mut self) -> std::process::ExitStatus {
        drop(self.input.take());
        self.child.wait().expect("roost acp exits")
    }

    /// Send request `id` and answer every permission request that comes
    /// before its response with the option `choose` picks (none: the
    /// request is cancelled): the response, and the permission requests.
    fn request_answering(
        &mut self,
        id: i64,
        method: &str,
        params: Value,
        choose: impl Fn(&Value) -> Option<&'static str>,
    ) -> (Value, Vec<Value>) {
        self.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
        let mut asked = Vec::new();
        loop {
            let v = self.next(|v| {
                v["method"] == "session/request_permission"
                    || (v.get("id") == Some(&json!(id)) && v.get("method").is_none())
            });
            if v.get("method").is_none() {
                return (v, asked);
            }
            let outcome = match choose(&v["params"]) {
                Some(option) => json!({"outcome": "selected", "optionId": option}),
                None => json!({"outcome": "cancelled"}),
            };
            self.send(
                &json!({"jsonrpc": "2.0", "id": v["id"], "result": {"outcome": outcome}})
                    .to_string(),
            );
            asked.push(v);
        }
    }

    fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
        self.response(id)
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn hostile_frames_get_errors_and_the_agent_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    let inside = root.join("project");
    std::fs::create_dir_all(&inside).expect("ws");
    let outside = dir.path().join("elsewhere");
    std::fs::create_dir_all(&outside).expect("outside");
    let script = script(dir.path(), json!([]));
    let root_arg = root.display().to_string();
    let mut acp = Raw::start(
        &dir.path().join("data"),
        &script,
        &["--workspace", &root_arg],
    );
    // A frame that is not JSON, then one that is not JSON-RPC: the agent
    // goes on.
    acp.send("{ this is not json");
    acp.send("[1, 2, 3]");
    // A response to a request the agent never sent.
    acp.send(r#"{"jsonrpc": "2.0", "id": 999, "result": {"outcome": {"outcome": "cancelled"}}}"#);
    let init = acp.request(
        1,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
    // An unknown method.
    let unknown = acp.request(2, "session/teleport", json!({}));
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    // Workspaces: relative, outside the root, a file, missing; then one inside.
    for (id, cwd) in [
        (3, "relative/dir".to_owned()),
        (4, outside.display().to_string()),
        (5, inside.join("missing").display().to_string()),
        (6, "/".to_owned()),
    ] {
        let r = acp.request(id, "session/new", json!({"cwd": cwd, "mcpServers": []}));
        assert!(r.get("error").is_some(), "{cwd}: {r}");
    }
    let made = acp.request(7, "session/new", json!({"cwd": inside, "mcpServers": []}));
    let session = made["result"]["sessionId"]
        .as_str()
        .expect("a session")
        .to_owned();
    // Prompts that cannot run: another session's id, an empty prompt, an image.
    let r = acp.request(
        8,
        "session/prompt",
        json!({"sessionId": "roost-not-a-session", "prompt": [{"type": "text", "text": "hi"}]}),
    );
    assert!(r.get("error").is_some(), "{r}");
    let r = acp.request(
        9,
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "  "}]}),
    );
    assert!(r.get("error").is_some(), "{r}");
    let r = acp.request(
        10,
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]}),
    );
    assert!(r.get("error").is_some(), "{r}");
    // A 50 MB prompt.
    let huge = "x".repeat(50 << 20);
    let r = acp.request(
        18,
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": huge}]}),
    );
    assert!(
        r["error"]["data"]
            .as_str()
            .is_some_and(|d| d.contains("at most")),
        "{}",
        r.to_string().chars().take(300).collect::<String>()
    );
    // A mode that does not exist.
    let r = acp.request(
        11,
        "session/set_mode",
        json!({"sessionId": session, "modeId": "no-such-mode"}),
    );
    assert!(r.get("error").is_some(), "{r}");
    // Loading what is not a session here, listing outside the root.
    for (id, params) in [
        (
            13,
            json!({"sessionId": "01a21fce-0000-7000-8000-000000000000", "cwd": inside, "mcpServers": []}),
        ),
        (
            14,
            json!({"sessionId": "", "cwd": inside, "mcpServers": []}),
        ),
        (
            15,
            json!({"sessionId": session, "cwd": outside, "mcpServers": []}),
        ),
    ] {
        let r = acp.request(id, "session/load", params.clone());
        assert!(r.get("error").is_some(), "{params}: {r}");
    }
    let r = acp.request(16, "session/list", json!({"cwd": outside}));
    assert!(r.get("error").is_some(), "{r}");
    let r = acp.request(17, "session/list", json!({}));
    assert_eq!(r["result"]["sessions"], json!([]), "{r}");
    // Still serving.
    let again = acp.request(12, "session/new", json!({"cwd": inside, "mcpServers": []}));
    assert!(again["result"]["sessionId"].is_string(), "{again}");
}

/// A model that stalls mid-reply until the person stops it, then completes.
fn stalling_script(dir: &Path) -> PathBuf {
    script(
        dir,
        json!([
            {"text": "Working on it, slowly and carefully, one step at a time, and then some more words.", "chunk_size": 8, "stall_after": 20},
            {"tool_calls": [{"name": "attempt_completion", "args": {"result": "done after all"}}]}
        ]),
    )
}

/// The tasks of the store in `data`.
fn tasks_in(data: &Path) -> Vec<roost_core::store::TaskRecord> {
    roost_core::store::Store::open(&roost_core::store::Store::default_path(data))
        .expect("store")
        .list_tasks(10)
        .expect("tasks")
}

#[test]
fn closing_a_session_stops_its_task_and_load_brings_it_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    let script = stalling_script(dir.path());
    let root = dir.path().display().to_string();
    let mut acp = Raw::start(&dir.path().join("data"), &script, &["--workspace", &root]);
    let init = acp.request(1, "initialize", json!({"protocolVersion": 1}));
    assert!(
        init["result"]["agentCapabilities"]["sessionCapabilities"]["close"].is_object(),
        "{init}"
    );
    let session = acp.prompt_in_new_session(2, &ws);
    // The reply streams, then the editor closes the session mid-turn.
    acp.update("agent_message_chunk");
    let closed = acp.request(4, "session/close", json!({"sessionId": session}));
    assert_eq!(closed["result"], json!({}), "{closed}");
    let first = acp.response(3);
    assert_eq!(first["result"]["stopReason"], "cancelled", "{first}");
    // The task stopped where it stood, resumable; the session is gone.
    let tasks = tasks_in(&dir.path().join("data"));
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0].status, roost_core::task::TaskStatus::Aborted);
    let r = acp.request(
        5,
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "go on"}]}),
    );
    assert!(
        r["error"]["data"]
            .as_str()
            .is_some_and(|d| d.contains("no session")),
        "{r}"
    );
    let r = acp.request(6, "session/close", json!({"sessionId": session}));
    assert!(r.get("error").is_some(), "closed twice: {r}");
    // Loaded again, it goes on from its history.
    acp.load_and_go_on(7, &tasks[0].id, &ws);
    // Its result waits for the person's review (the next prompt).
    let done = tasks_in(&dir.path().join("data"));
    assert_eq!(
        done[0].status,
        roost_core::task::TaskStatus::WaitingForInput
    );
}

#[test]
fn an_editor_that_goes_away_mid_turn_leaves_the_task_aborted_and_resumable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    let script = stalling_script(dir.path());
    let root = dir.path().display().to_string();
    let data = dir.path().join("data");
    let mut acp = Raw::start(&data, &script, &["--workspace", &root]);
    acp.request(1, "initialize", json!({"protocolVersion": 1}));
    acp.prompt_in_new_session(2, &ws);
    acp.update("agent_message_chunk");
    // The editor closes the pipe while the model is mid-reply.
    let status = acp.hang_up();
    assert!(status.success(), "{status}");
    let tasks = tasks_in(&data);
    assert_eq!(tasks.len(), 1);
    assert_eq!(
        tasks[0].status,
        roost_core::task::TaskStatus::Aborted,
        "stopped by the agent, not left running by a dead process"
    );
    // A later `roost acp` continues it.
    let mut later = Raw::start(&data, &script, &["--workspace", &root]);
    later.request(1, "initialize", json!({"protocolVersion": 1}));
    later.load_and_go_on(2, &tasks[0].id, &ws);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subtasks_calls_stream_as_nested_calls_and_its_question_is_the_editors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace_with_a(dir.path());
    let path = dir.path().join("script.json");
    std::fs::write(
        &path,
        json!({
            "turns": [
                {"text": "Delegating.", "tool_calls": [{"name": "new_task", "args": {"mode": "code", "message": "CHILD: read a"}}]},
                {"tool_calls": [{"name": "attempt_completion", "args": {"result": "the child read it"}}]},
                {"tool_calls": [{"name": "attempt_completion", "args": {"result": "still done"}}]}
            ],
            "tasks": [{"message": "CHILD: read a", "turns": [
                {"tool_calls": [{"name": "read_file", "args": {"path": "a.txt"}}]},
                {"tool_calls": [{"name": "ask_followup_question", "args": {"question": "Which part of a.txt?"}}]},
                {"tool_calls": [{"name": "attempt_completion", "args": {"result": "read all of a.txt"}}]}
            ]}]
        })
        .to_string(),
    )
    .expect("script");
    let (seen, stops) = drive(
        agent(
            &dir.path().join("data"),
            dir.path(),
            &path,
            &["--mode", "orchestrator"],
        ),
        &ws,
        &["read a through a child", "all of it", "thanks"],
        Editor::Picks(PermissionOptionKind::AllowOnce),
    )
    .await;
    // The child's question ended the first turn and the editor showed it;
    // the second prompt answered it, and the task's result ended the second.
    assert_eq!(
        stops,
        vec![
            StopReason::EndTurn,
            StopReason::EndTurn,
            StopReason::EndTurn
        ]
    );
    let text = said(&seen.updates);
    assert!(text.contains("Which part of a.txt?"), "{text}");
    let shown = calls(&seen.updates);
    assert!(
        shown.iter().any(|c| c.0 == "↳ read_file a.txt"
            && c.1 == ToolKind::Read
            && c.2 == Some(ToolCallStatus::Completed)),
        "{shown:#?}"
    );
    assert!(
        shown
            .iter()
            .any(|c| c.0.starts_with("new_task") && c.2 == Some(ToolCallStatus::Completed)),
        "{shown:#?}"
    );
    // The child's calls have ids of their own: none is the parent's.
    let ids: Vec<String> = seen
        .updates
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::ToolCall(c) => Some(c.tool_call_id.0.to_string()),
            _ => None,
        })
        .collect();
    let unique: std::collections::HashSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");
    assert!(text.contains("the child read it"), "{text}");
    // The child's result was the editor's to accept (a permission), not a
    // message that ends the turn.
    assert!(
        seen.asked
            .iter()
            .any(|a| a.tool_call.fields.title.as_deref()
                == Some("A subtask finished: accept its result?")),
        "{:#?}",
        seen.asked
    );
}

/// A second client: the ACP Python SDK (`tests/acp/client.py`), which
/// checks every message it receives against the protocol's schema.
#[test]
fn the_python_sdk_client_runs_a_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace_with_a(dir.path());
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).expect("data");
    let config = data.join("none.toml");
    std::fs::write(&config, "").expect("config");
    let script = writing_script(dir.path());
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/acp/client.py");
    let out = Command::new("python3")
        .arg(&client)
        .arg(env!("CARGO_BIN_EXE_roost"))
        .arg(&data)
        .arg(&ws)
        .arg(&script)
        .arg(&config)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_slice(&out.stdout).expect("the client's JSON");
    assert_eq!(seen["protocol_version"], 1, "{seen}");
    assert_eq!(seen["auth_methods"][0]["id"], "api-key", "{seen}");
    assert_eq!(seen["load_session"], true);
    assert!(
        seen["modes"]
            .as_array()
            .is_some_and(|m| m.contains(&json!("code")))
    );
    assert_eq!(seen["stops"], json!(["end_turn", "end_turn"]));
    assert_eq!(
        seen["asked"],
        json!([{"title": "Run write_to_file?", "options": ["allow_once", "allow_always", "reject_once", "reject_always"]}])
    );
    let kinds: std::collections::BTreeSet<&str> = seen["updates"]
        .as_array()
        .expect("updates")
        .iter()
        .filter_map(|u| u["sessionUpdate"].as_str())
        .collect();
    for kind in [
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
        "usage_update",
    ] {
        assert!(kinds.contains(kind), "{kind} missing: {kinds:?}");
    }
    let diff = seen["updates"]
        .as_array()
        .expect("updates")
        .iter()
        .flat_map(|u| u["content"].as_array().cloned().unwrap_or_default())
        .find(|c| c["type"] == "diff")
        .expect("the write's diff");
    assert_eq!(diff["newText"], "bee\n");
    assert!(
        diff["path"]
            .as_str()
            .is_some_and(|p| p.starts_with('/') && p.ends_with("/ws/b.txt")),
        "{diff}"
    );
    assert_eq!(seen["listed"].as_array().map(Vec::len), Some(1), "{seen}");
    assert_eq!(
        std::fs::read_to_string(ws.join("b.txt")).expect("b"),
        "bee\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_commands_are_offered_and_undo_takes_back_the_last_messages_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace_with_a(dir.path());
    let before = roost_tests::tree_hash(&ws);
    let script = writing_script(dir.path());
    let (seen, stops) = drive(
        agent(&dir.path().join("data"), dir.path(), &script, &[]),
        &ws,
        &[
            "write b.txt",
            "/checkpoints",
            "/undo banana",
            "/undo",
            "/undo",
            "/mode architect",
        ],
        Editor::Picks(PermissionOptionKind::AllowOnce),
    )
    .await;
    assert_eq!(stops, vec![StopReason::EndTurn; 6]);
    let offered: Vec<String> = seen
        .updates
        .iter()
        .find_map(|u| match u {
            SessionUpdate::AvailableCommandsUpdate(a) => Some(
                a.available_commands
                    .iter()
                    .map(|c| c.name.clone())
                    .collect(),
            ),
            _ => None,
        })
        .expect("the commands were offered");
    assert_eq!(offered, ["undo", "checkpoints", "mode"]);
    let text = said(&seen.updates);
    assert!(text.contains("/undo goes back here"), "{text}");
    // Not a checkpoint: said so, nothing asked, nothing undone.
    assert!(text.contains("No checkpoint `banana`"), "{text}");
    // The write, then the undo: asked with what goes back, allowed.
    assert_eq!(seen.asked.len(), 2, "{:#?}", seen.asked);
    assert!(
        seen.asked[1]
            .tool_call
            .fields
            .title
            .as_deref()
            .is_some_and(|t| t.starts_with("Undo: back to checkpoint")),
        "{:#?}",
        seen.asked[1]
    );
    assert!(text.contains("removed b.txt"), "{text}");
    // The files are as they were before the message; a second undo has
    // nothing left to take back.
    assert_eq!(roost_tests::tree_hash(&ws), before);
    assert!(text.contains("undone already"), "{text}");
    assert!(
        seen.updates.iter().any(
            |u| matches!(u, SessionUpdate::CurrentModeUpdate(m) if &*m.current_mode_id.0 == "architect")
        ),
        "{:#?}",
        seen.updates
    );
}

/// A client that asks for a newer protocol (the v2 draft, or one that does
/// not exist) is answered with v1, the version Roost speaks: the client
/// decides whether to go on, and this one does.
#[test]
fn a_client_asking_for_a_newer_protocol_is_answered_v1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace_with_a(dir.path());
    let script = script(dir.path(), json!([]));
    let root = dir.path().display().to_string();
    let mut acp = Raw::start(&dir.path().join("data"), &script, &["--workspace", &root]);
    let init = acp.request(1, "initialize", json!({"protocolVersion": 2}));
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
    // Roost says it keeps its own sandbox, and what it uses of the editor.
    let note = &init["result"]["_meta"]["roost"];
    assert!(
        note["sandbox"].is_string() && note["clientTerminal"].is_string(),
        "{init}"
    );
    let made = acp.request(2, "session/new", json!({"cwd": ws, "mcpServers": []}));
    assert!(made["result"]["sessionId"].is_string(), "{made}");
    let mut again = Raw::start(&dir.path().join("data2"), &script, &["--workspace", &root]);
    let init = again.request(1, "initialize", json!({"protocolVersion": 65535}));
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
}

#[test]
fn the_model_selector_offers_the_configs_profiles_and_a_choice_holds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace_with_a(dir.path());
    let script_of = |name: &str| {
        let path = dir.path().join(format!("{name}.json"));
        std::fs::write(
            &path,
            json!({"turns": [{"text": format!("from {name}"), "tool_calls": [
                {"name": "attempt_completion", "args": {"result": name}}]}]})
            .to_string(),
        )
        .expect("script");
        path.display().to_string()
    };
    let config = format!(
        "default_profile = \"one\"\n[profiles.one]\nprovider = \"scripted\"\nscript = \"{}\"\n[profiles.two]\nprovider = \"scripted\"\nmodel = \"second\"\nscript = \"{}\"\n",
        script_of("one"),
        script_of("two")
    );
    let root = dir.path().display().to_string();
    let data = dir.path().join("data");
    let mut acp = Raw::configured(&data, &config, &["--workspace", &root]);
    acp.request(1, "initialize", json!({"protocolVersion": 1}));
    let made = acp.request(2, "session/new", json!({"cwd": ws, "mcpServers": []}));
    let option = &made["result"]["configOptions"][0];
    assert_eq!(option["id"], "profile", "{made}");
    assert_eq!(option["category"], "model", "{made}");
    assert_eq!(option["currentValue"], "one", "{made}");
    let names: Vec<&str> = option["options"]
        .as_array()
        .expect("options")
        .iter()
        .filter_map(|o| o["value"].as_str())
        .collect();
    assert_eq!(names, ["one", "two"]);
    let session = made["result"]["sessionId"].as_str().expect("id").to_owned();
    // Hostile choices: another option, a profile that does not exist, a
    // boolean for a select.
    for (id, params) in [
        (
            3,
            json!({"sessionId": session, "configId": "temperature", "value": "hot"}),
        ),
        (
            4,
            json!({"sessionId": session, "configId": "profile", "value": "three"}),
        ),
        (
            5,
            json!({"sessionId": session, "configId": "profile", "type": "boolean", "value": true}),
        ),
        (
            6,
            json!({"sessionId": "roost-nope", "configId": "profile", "value": "two"}),
        ),
    ] {
        let r = acp.request(id, "session/set_config_option", params.clone());
        assert!(r.get("error").is_some(), "{params}: {r}");
    }
    let chosen = acp.request(
        7,
        "session/set_config_option",
        json!({"sessionId": session, "configId": "profile", "value": "two"}),
    );
    assert_eq!(
        chosen["result"]["configOptions"][0]["currentValue"], "two",
        "{chosen}"
    );
    let r = acp.request(
        8,
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}),
    );
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    // The task ran on the chosen profile.
    let tasks = tasks_in(&data);
    assert_eq!(tasks[0].profile, "two");
    let said: String = acp
        .stash
        .iter()
        .filter(|v| v["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|v| v["params"]["update"]["content"]["text"].as_str())
        .collect();
    assert!(
        said.contains("from two") && !said.contains("from one"),
        "{said}"
    );
}

/// A value the editor hands its MCP server (a token in `env`): it reaches
/// the server, and nothing else — not the person's screen, not the store.
const EDITOR_SECRET: &str = "editor-t0ken-4f9a";

/// An editor's MCP server, as ACP's `mcpServers` gives it: the tests'
/// hostile server in `mode`, run from `script`, with a token in `env`.
fn editor_server(name: &str, script: &Path, mode: &str) -> Value {
    json!({"name": name, "command": "node", "args": [script, mode],
           "env": [{"name": "EDITOR_TOKEN", "value": EDITOR_SECRET}]})
}

/// Every file under `dir` that holds `needle`.
fn files_holding(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for e in entries.flatten() {
        let path = e.path();
        let Ok(meta) = path.symlink_metadata() else {
            continue;
        };
        if meta.is_dir() {
            found.extend(files_holding(&path, needle));
        } else if meta.is_file()
            && std::fs::read(&path)
                .is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes()))
        {
            found.push(path);
        }
    }
    found
}

/// The editor's MCP servers join the session's task — and its subtask —
/// only once the person trusts them, and run in Roost's sandbox: the
/// hostile server, started for a subtask, can neither write outside the
/// workspace nor reach the host's network; the workspace, a canary beside
/// it and the store are as they were (the editor's token is named to the
/// person, never shown, and never stored). "Always" is remembered for the
/// workspace: a later `roost acp` asks only about a server it has not
/// trusted, and a server the person turned down is not offered (the model
/// is told why) and not asked about again in that session. As root and
/// as an unprivileged user.
#[test]
fn the_editors_mcp_servers_are_trusted_first_and_sandboxed() {
    for who in identities() {
        eprintln!("as {who:?}");
        editors_mcp_servers_as(who);
    }
}

fn editors_mcp_servers_as(who: Identity) {
    let ws = roost_tests::TestWorkspace::new();
    ws.write("a.txt", "alpha\n");
    let servers = ws.root().join("servers");
    std::fs::create_dir_all(&servers).expect("servers dir");
    let hostile = servers.join("hostile.mjs");
    std::fs::copy(roost_tests::mcp_script("hostile.mjs"), &hostile).expect("copy");
    let canary = ws.root().join("canary.txt");
    std::fs::write(&canary, "canary\n").expect("canary");
    let target = ws.root().join("escaped.txt");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let data = ws.root().join("data");
    let first = ws.root().join("first.json");
    std::fs::write(
        &first,
        json!({
            "turns": [
                {"text": "Delegating.", "tool_calls": [{"name": "new_task", "args": {"mode": "code", "message": "CHILD: escape"}}]},
                {"tool_calls": [{"name": "attempt_completion", "args": {"result": "parent done"}}]}
            ],
            "tasks": [{"message": "CHILD: escape", "turns": [
                {"tool_calls": [{"name": "mcp__escape__escape", "args": {"path": target, "port": port}}]},
                {"tool_calls": [{"name": "mcp__escape__escape", "args": {"path": canary, "port": port}}]},
                {"tool_calls": [{"name": "attempt_completion", "args": {"result": "child done"}}]}
            ]}]
        })
        .to_string(),
    )
    .expect("script");
    let second = ws.root().join("second.json");
    std::fs::write(
        &second,
        json!({"turns": [
            {"tool_calls": [{"name": "mcp__echoer__echo", "args": {"message": "hi"}}]},
            {"tool_calls": [{"name": "attempt_completion", "args": {"result": "one"}}]},
            {"tool_calls": [{"name": "attempt_completion", "args": {"result": "two"}}]}
        ]})
        .to_string(),
    )
    .expect("script");
    if who == Identity::Nobody {
        chown_tree(ws.root(), NOBODY);
    }
    let before = roost_tests::tree_hash(&ws.path());
    let root = ws.root().display().to_string();
    let first_path = first.display().to_string();
    let mut acp = Raw::configured_as(
        who,
        &data,
        "",
        &[
            "--script",
            &first_path,
            "--workspace",
            &root,
            "--mode",
            "orchestrator",
        ],
    );
    let init = acp.request(1, "initialize", json!({"protocolVersion": 1}));
    let mcp = &init["result"]["agentCapabilities"]["mcpCapabilities"];
    assert_eq!((&mcp["http"], &mcp["sse"]), (&json!(true), &json!(true)));
    let escape = editor_server("escape", &hostile, "escape");
    let made = acp.request(
        2,
        "session/new",
        json!({"cwd": ws.path(), "mcpServers": [escape]}),
    );
    let session = made["result"]["sessionId"].as_str().expect("id").to_owned();
    let (done, asked) = acp.request_answering(
        3,
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}),
        |p| {
            let title = p["toolCall"]["title"].as_str().unwrap_or_default();
            Some(if title.contains("MCP server `escape`") {
                "allow_always"
            } else {
                "allow_once"
            })
        },
    );
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    // Asked first, shown the whole entry: the token by name, not value.
    let trust = &asked[0]["params"];
    let shown = trust.to_string();
    assert!(
        shown.contains("MCP server `escape`") && shown.contains("EDITOR_TOKEN"),
        "{shown}"
    );
    assert!(!shown.contains(EDITOR_SECRET), "{shown}");
    // The subtask called it, inside the sandbox: its write beside the
    // workspace landed in the sandbox's own private /tmp (the server
    // believes it wrote), never on the host.
    let streamed: String = acp.stash.iter().map(Value::to_string).collect();
    assert!(
        streamed.contains("↳ mcp__escape__escape") && streamed.contains("network: failed"),
        "{streamed}"
    );
    assert!(!target.exists(), "the editor's server wrote outside");
    listener.set_nonblocking(true).expect("nonblocking");
    assert!(
        listener.accept().is_err(),
        "the editor's server reached the host's network"
    );
    assert_eq!(
        std::fs::read_to_string(&canary).expect("canary"),
        "canary\n"
    );
    assert_eq!(roost_tests::tree_hash(&ws.path()), before);
    drop(acp);
    // The token is in no file Roost keeps; the trust is, by fingerprint.
    assert_eq!(files_holding(&data, EDITOR_SECRET), Vec::<PathBuf>::new());
    let trusted = std::fs::read_to_string(data.join("mcp-trust.json")).expect("trust");
    assert!(trusted.contains("client:escape"), "{trusted}");

    // A later `roost acp`: the trusted server is not asked about again;
    // another one is, and turned down it is not offered.
    let second_path = second.display().to_string();
    let mut acp = Raw::configured_as(
        who,
        &data,
        "",
        &["--script", &second_path, "--workspace", &root],
    );
    acp.request(1, "initialize", json!({"protocolVersion": 1}));
    let made = acp.request(
        2,
        "session/new",
        json!({"cwd": ws.path(), "mcpServers": [
            editor_server("escape", &hostile, "escape"),
            editor_server("echoer", &hostile, "tools"),
        ]}),
    );
    let session = made["result"]["sessionId"].as_str().expect("id").to_owned();
    let (done, asked) = acp.request_answering(
        3,
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "echo"}]}),
        |p| {
            let title = p["toolCall"]["title"].as_str().unwrap_or_default();
            Some(if title.contains("MCP server") {
                "reject_once"
            } else {
                "allow_once"
            })
        },
    );
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let titles: Vec<&str> = asked
        .iter()
        .filter_map(|a| a["params"]["toolCall"]["title"].as_str())
        .filter(|t| t.contains("MCP server"))
        .collect();
    assert_eq!(titles.len(), 1, "{titles:?}");
    assert!(titles[0].contains("`echoer`"), "{titles:?}");
    let streamed: String = acp.stash.iter().map(Value::to_string).collect();
    assert!(!streamed.contains("echo: hi"), "{streamed}");
    assert!(
        streamed.contains("MCP server `echoer` from the editor is not started"),
        "the task is told why: {streamed}"
    );
    // The same session does not ask again.
    let (done, asked) = acp.request_answering(
        4,
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "again"}]}),
        |_| Some("allow_once"),
    );
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert!(
        asked.iter().all(|a| !a.to_string().contains("MCP server")),
        "{asked:?}"
    );
}

/// Hostile `mcpServers`: each malformed list refuses the session with the
/// reason, and the agent goes on; a server named as one of the
/// workspace's own is left out, and the editor is told.
#[test]
fn malformed_editor_mcp_servers_are_refused_with_the_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace_with_a(dir.path());
    std::fs::create_dir_all(ws.join(".roo")).expect(".roo");
    std::fs::write(
        ws.join(".roo/mcp.json"),
        json!({"mcpServers": {"mine": {"command": "node", "args": ["x.js"]}}}).to_string(),
    )
    .expect("mcp.json");
    let script = script(dir.path(), json!([]));
    let root = dir.path().display().to_string();
    let mut acp = Raw::start(&dir.path().join("data"), &script, &["--workspace", &root]);
    acp.request(1, "initialize", json!({"protocolVersion": 1}));
    let stdio = |name: &str, command: &str| json!({"name": name, "command": command, "args": [], "env": []});
    let many: Vec<Value> = (0..65)
        .map(|i| stdio(&format!("s{i}"), "/bin/true"))
        .collect();
    let cases = [
        (json!([stdio("", "/bin/true")]), "name"),
        (
            json!([stdio("a", "/bin/true"), stdio("a", "/bin/false")]),
            "two MCP servers",
        ),
        (json!([stdio("a", " ")]), "command"),
        (
            json!([{"type": "http", "name": "h", "url": "file:///etc/passwd", "headers": []}]),
            "not an http(s) URL",
        ),
        (
            json!([{"name": "e", "command": "/bin/true", "args": [],
                    "env": [{"name": "K", "value": "1"}, {"name": "K", "value": "2"}]}]),
            "given twice",
        ),
        (json!(many), "at most 64"),
        (json!([{"name": "odd", "args": []}]), ""),
        (json!("not a list"), ""),
    ];
    for (i, (servers, why)) in cases.iter().enumerate() {
        let id = i64::try_from(i).expect("small") + 10;
        let r = acp.request(id, "session/new", json!({"cwd": ws, "mcpServers": servers}));
        let error = r.get("error").unwrap_or_else(|| panic!("{servers}: {r}"));
        assert!(error.to_string().contains(why), "{why}: {error}");
    }
    // A name the workspace's configuration holds is left out, said so.
    let made = acp.request(
        30,
        "session/new",
        json!({"cwd": ws, "mcpServers": [stdio("mine", "/bin/true"), stdio("theirs", "/bin/true")]}),
    );
    assert!(made["result"]["sessionId"].is_string(), "{made}");
    let told = acp.update("agent_message_chunk");
    assert!(
        told.to_string()
            .contains("MCP server `mine` from the editor is not used"),
        "{told}"
    );
    // The agent goes on.
    let made = acp.request(31, "session/new", json!({"cwd": ws, "mcpServers": []}));
    assert!(made["result"]["sessionId"].is_string(), "{made}");
}

impl Raw {
    /// Send request `id`, answering every request the agent makes before
    /// its response with what `serve` returns for it (its `result`): the
    /// response, and the agent's requests.
    fn request_serving(
        &mut self,
        id: i64,
        method: &str,
        params: Value,
        mut serve: impl FnMut(&Value) -> Value,
    ) -> (Value, Vec<Value>) {
        self.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
        let mut asked = Vec::new();
        loop {
            let v = self.next(|v| {
                (v.get("method").is_some() && v.get("id").is_some())
                    || (v.get("id") == Some(&json!(id)) && v.get("method").is_none())
            });
            if v.get("method").is_none() {
                return (v, asked);
            }
            let result = serve(&v);
            self.send(&json!({"jsonrpc": "2.0", "id": v["id"], "result": result}).to_string());
            asked.push(v);
        }
    }
}

/// An editor that offers `fs/read_text_file`: a read shows the person's
/// unsaved text beside the disk's, and the editor is asked only about the
/// files the read was allowed — never a path outside the workspace or a
/// `.rooignore`d one, never a directory — and is never asked to write.
/// A buffer equal to the disk adds nothing; a file the editor holds
/// unsaved that is not on disk is said so.
#[test]
fn unsaved_buffers_are_read_through_the_editor_and_only_those_a_read_may_see() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace_with_a(dir.path());
    std::fs::write(ws.join("b.txt"), "bravo\n").expect("b");
    std::fs::write(ws.join("secret.txt"), "hidden\n").expect("secret");
    std::fs::write(ws.join(".rooignore"), "secret.txt\n").expect("rooignore");
    std::fs::write(dir.path().join("outside.txt"), "outside\n").expect("outside");
    let read = |path: &str| json!({"tool_calls": [{"name": "read_file", "args": {"path": path}}]});
    let script = script(
        dir.path(),
        json!([
            read("a.txt"),
            read("../outside.txt"),
            read("secret.txt"),
            read("b.txt"),
            {"tool_calls": [{"name": "list_files", "args": {"path": "."}}]},
            read("draft.txt"),
            {"tool_calls": [{"name": "attempt_completion", "args": {"result": "read"}}]}
        ]),
    );
    let root = dir.path().display().to_string();
    let data = dir.path().join("data");
    let mut acp = Raw::start(&data, &script, &["--workspace", &root, "--approve", "read"]);
    acp.request(
        1,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": true}}}),
    );
    let made = acp.request(2, "session/new", json!({"cwd": ws, "mcpServers": []}));
    let session = made["result"]["sessionId"].as_str().expect("id").to_owned();
    let a = ws.join("a.txt");
    let draft = ws.join("draft.txt");
    let (done, asked) = acp.request_serving(
        3,
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "read"}]}),
        |req| {
            let path = PathBuf::from(req["params"]["path"].as_str().unwrap_or_default());
            if path == a {
                json!({"content": "alpha EDITED in the editor\n"})
            } else if path == draft {
                json!({"content": "a draft never saved\n"})
            } else {
                // Zed answers with the disk's text for a file it holds
                // no buffer of.
                json!({"content": std::fs::read_to_string(&path).unwrap_or_default()})
            }
        },
    );
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let methods: Vec<&str> = asked.iter().filter_map(|r| r["method"].as_str()).collect();
    assert!(
        methods.iter().all(|m| *m == "fs/read_text_file"),
        "{methods:?}"
    );
    let paths: Vec<PathBuf> = asked
        .iter()
        .filter_map(|r| r["params"]["path"].as_str().map(PathBuf::from))
        .collect();
    assert_eq!(paths, [a.clone(), ws.join("b.txt"), draft.clone()]);
    assert!(
        asked
            .iter()
            .all(|r| r["params"]["sessionId"] == session.as_str())
    );
    // What the model was told, in the task's history.
    let tasks = tasks_in(&data);
    let store = roost_core::store::Store::open(&roost_core::store::Store::default_path(&data))
        .expect("store");
    let history = format!("{:?}", store.load_api(&tasks[0].id, true).expect("history"));
    assert!(
        history.contains("unsaved changes to `a.txt`")
            && history.contains("1 | alpha EDITED in the editor"),
        "{history}"
    );
    assert!(!history.contains("unsaved changes to `b.txt`"), "{history}");
    assert!(
        history.contains("`draft.txt` is not on disk: the editor holds it unsaved"),
        "{history}"
    );
    // The disk is untouched.
    assert_eq!(std::fs::read_to_string(&a).expect("a"), "ay\n");
    assert!(!draft.exists());

    // An editor that does not offer `fs/read_text_file` is never asked.
    let quiet = dir.path().join("quiet.json");
    std::fs::write(
        &quiet,
        json!({"turns": [read("a.txt"),
            {"tool_calls": [{"name": "attempt_completion", "args": {"result": "read"}}]}]})
        .to_string(),
    )
    .expect("script");
    let mut acp = Raw::start(
        &dir.path().join("data2"),
        &quiet,
        &["--workspace", &root, "--approve", "read"],
    );
    acp.request(1, "initialize", json!({"protocolVersion": 1}));
    let made = acp.request(2, "session/new", json!({"cwd": ws, "mcpServers": []}));
    let session = made["result"]["sessionId"].as_str().expect("id").to_owned();
    let (done, asked) = acp.request_serving(
        3,
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "read"}]}),
        |_| json!({"content": "never asked"}),
    );
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert!(asked.is_empty(), "{asked:?}");
}

/// `session/load` of a session this connection opened and has not
/// prompted yet (nothing recorded): it is taken up as it stands, in its
/// own workspace only; its next prompt runs as the first would have.
#[test]
fn a_session_not_prompted_yet_loads_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace_with_a(dir.path());
    let other = dir.path().join("other");
    std::fs::create_dir_all(&other).expect("other");
    let script = script(
        dir.path(),
        json!([{"text": "hello", "tool_calls": [
            {"name": "attempt_completion", "args": {"result": "hello"}}]}]),
    );
    let root = dir.path().display().to_string();
    let mut acp = Raw::start(&dir.path().join("data"), &script, &["--workspace", &root]);
    acp.request(1, "initialize", json!({"protocolVersion": 1}));
    let made = acp.request(2, "session/new", json!({"cwd": ws, "mcpServers": []}));
    let session = made["result"]["sessionId"].as_str().expect("id").to_owned();
    let elsewhere = acp.request(
        3,
        "session/load",
        json!({"sessionId": session, "cwd": other, "mcpServers": []}),
    );
    assert!(elsewhere.get("error").is_some(), "{elsewhere}");
    let loaded = acp.request(
        4,
        "session/load",
        json!({"sessionId": session, "cwd": ws, "mcpServers": []}),
    );
    assert!(loaded["result"]["modes"].is_object(), "{loaded}");
    let r = acp.request(
        5,
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}),
    );
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
}

/// Draft protocol v2 behind `--acp-version 2`: a v2 client's prompt is
/// answered at once with its message id (echoed as a `user_message`), the
/// turn runs between a `running` and an `idle` state with its stop reason,
/// calls are `tool_call_update`s (the write's diff as v2's changes and
/// patch), the plan a `plan_update`, the write a v2 permission request
/// whose answer holds; the mode is a config option; a refused prompt is an
/// error before anything runs; and a v1 client of the same process still
/// gets v1.
#[test]
fn draft_v2_runs_a_session_with_state_updates_and_v1_clients_still_get_v1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace_with_a(dir.path());
    let script = writing_script(dir.path());
    let root = dir.path().display().to_string();
    let data = dir.path().join("data");
    let mut acp = Raw::start(
        &data,
        &script,
        &[
            "--workspace",
            &root,
            "--approve",
            "read",
            "--acp-version",
            "2",
        ],
    );
    let init = acp.request(
        1,
        "initialize",
        json!({"protocolVersion": 2, "info": {"name": "test", "version": "1"}, "capabilities": {}}),
    );
    assert_eq!(init["result"]["protocolVersion"], 2, "{init}");
    let mcp = &init["result"]["capabilities"]["session"]["mcp"];
    assert!(
        mcp["http"].is_object() && mcp["stdio"].is_object(),
        "{init}"
    );
    assert!(
        init["result"]["authMethods"]
            .as_array()
            .is_some_and(|a| !a.is_empty()),
        "{init}"
    );
    let made = acp.request(2, "session/new", json!({"cwd": ws, "mcpServers": []}));
    let session = made["result"]["sessionId"].as_str().expect("id").to_owned();
    let options = made["result"]["configOptions"].as_array().expect("options");
    let mode = options
        .iter()
        .find(|o| o["configId"] == "mode")
        .expect("the mode option");
    assert_eq!(mode["currentValue"], "code", "{made}");
    assert_eq!(
        made["result"]["availableCommands"][0]["name"], "undo",
        "{made}"
    );
    // Refused before anything runs: an error, no turn.
    let empty = acp.request(
        3,
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "  "}]}),
    );
    assert!(empty.get("error").is_some(), "{empty}");

    let (taken, asked) = acp.request_answering(
        4,
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "write b"}]}),
        |_| Some("allow_once"),
    );
    let message = taken["result"]["messageId"]
        .as_str()
        .expect("a message id")
        .to_owned();
    assert!(asked.is_empty(), "answered before the turn runs: {asked:?}");
    // The turn, up to its idle state (permissions answered on the way).
    let mut updates = Vec::new();
    let mut permissions = Vec::new();
    loop {
        let v = acp.next(|v| {
            v["method"] == "session/request_permission" || v["method"] == "session/update"
        });
        if v["method"] == "session/request_permission" {
            acp.send(
                &json!({"jsonrpc": "2.0", "id": v["id"],
                        "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}})
                .to_string(),
            );
            permissions.push(v);
            continue;
        }
        let u = v["params"]["update"].clone();
        let idle = u["sessionUpdate"] == "state_update" && u["state"] == "idle";
        updates.push(u);
        if idle {
            break;
        }
    }
    let kinds: Vec<&str> = updates
        .iter()
        .filter_map(|u| u["sessionUpdate"].as_str())
        .collect();
    assert_eq!(updates[0]["sessionUpdate"], "user_message", "{kinds:?}");
    assert_eq!(updates[0]["messageId"], message.as_str());
    assert_eq!(updates[1]["state"], "running", "{kinds:?}");
    assert_eq!(
        updates.last().expect("idle")["stopReason"],
        "end_turn",
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&"plan_update") && kinds.contains(&"agent_message_chunk"),
        "{kinds:?}"
    );
    assert!(
        !kinds.contains(&"tool_call") && !kinds.contains(&"plan"),
        "v1 kinds: {kinds:?}"
    );
    let write = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call_update" && u["content"][0]["type"] == "diff")
        .expect("the write's diff");
    assert_eq!(
        write["content"][0]["changes"][0]["operation"], "add",
        "{write}"
    );
    assert!(
        write["content"][0]["patch"]["text"]
            .as_str()
            .is_some_and(|p| p.contains("+bee")),
        "{write}"
    );
    assert_eq!(permissions.len(), 1, "{permissions:?}");
    let p = &permissions[0]["params"];
    assert_eq!(p["subject"]["type"], "tool_call", "{p}");
    assert!(
        p["title"]
            .as_str()
            .is_some_and(|t| t.contains("write_to_file")),
        "{p}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("b.txt")).expect("written"),
        "bee\n"
    );

    // The mode as a config option.
    let set = acp.request(
        5,
        "session/set_config_option",
        json!({"sessionId": session, "configId": "mode", "type": "id", "value": "architect"}),
    );
    let mode = set["result"]["configOptions"]
        .as_array()
        .and_then(|o| o.iter().find(|o| o["configId"] == "mode"))
        .unwrap_or_else(|| panic!("the mode option: {set}"));
    assert_eq!(mode["currentValue"], "architect", "{set}");
    let bad = acp.request(
        6,
        "session/set_config_option",
        json!({"sessionId": session, "configId": "mode", "type": "id", "value": "no-such-mode"}),
    );
    assert!(bad.get("error").is_some(), "{bad}");

    drop(acp);

    // A later v2 process lists the session and resumes it: its history
    // replayed, then where it stands.
    let mut later = Raw::start(
        &data,
        &script,
        &["--workspace", &root, "--acp-version", "2"],
    );
    later.request(
        1,
        "initialize",
        json!({"protocolVersion": 2, "info": {"name": "test", "version": "1"}, "capabilities": {}}),
    );
    let listed = later.request(2, "session/list", json!({}));
    let task = listed["result"]["sessions"][0]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("a session: {listed}"))
        .to_owned();
    let resumed = later.request(
        3,
        "session/resume",
        json!({"sessionId": task, "cwd": ws, "mcpServers": []}),
    );
    assert!(resumed["result"]["configOptions"].is_array(), "{resumed}");
    let replayed: Vec<Value> = later
        .stash
        .iter()
        .filter(|v| v["method"] == "session/update")
        .map(|v| v["params"]["update"].clone())
        .collect();
    assert!(
        replayed
            .iter()
            .any(|u| u["sessionUpdate"] == "tool_call_update"),
        "{replayed:?}"
    );
    let last = later.update("state_update");
    assert_eq!(last["params"]["update"]["state"], "idle", "{last}");

    // A v1 client of a v2-offering `roost acp` gets v1.
    let mut old = Raw::start(
        &dir.path().join("data1"),
        &script,
        &["--workspace", &root, "--acp-version", "2"],
    );
    let init = old.request(1, "initialize", json!({"protocolVersion": 1}));
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
    let made = old.request(2, "session/new", json!({"cwd": ws, "mcpServers": []}));
    assert!(made["result"]["modes"].is_object(), "{made}");
}

/// The SDK's own v2 client role drives `roost acp --acp-version 2`: it
/// negotiates v2, and every update and request Roost sends parses as the
/// SDK's v2 types (an invalid one would fail the connection here); the
/// write's permission is answered and the turn ends idle, `end_turn`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdks_v2_client_runs_a_prompt_to_its_idle_state() {
    use agent_client_protocol::v2::InitializeOutcome;
    use agent_client_protocol::v2::schema as v2s;
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace_with_a(dir.path());
    let script = writing_script(dir.path());
    let agent = agent(
        &dir.path().join("data"),
        dir.path(),
        &script,
        &["--acp-version", "2"],
    );
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let asked = Arc::new(Mutex::new(0usize));
    let on_ask = Arc::clone(&asked);
    let workspace = ws.clone();
    let updates = bounded(
        Client
            .v2()
            .on_receive_notification(
                async move |n: v2s::UpdateSessionNotification, _cx| {
                    let _ = tx.send(n.update);
                    Ok(())
                },
                agent_client_protocol::on_receive_notification!(),
            )
            .on_receive_request(
                async move |_req: v2s::RequestPermissionRequest, responder, _cx| {
                    *on_ask.lock().unwrap() += 1;
                    responder.respond(v2s::RequestPermissionResponse::new(
                        v2s::RequestPermissionOutcome::Selected(
                            v2s::SelectedPermissionOutcome::new("allow_once"),
                        ),
                    ))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .connect_with(
                agent,
                async move |cx: agent_client_protocol::v2::ConnectionTo<Agent>| {
                    let outcome = cx
                        .send_initialize(v2s::InitializeRequest::new(
                            ProtocolVersion::V2,
                            v2s::Implementation::new("roost-tests", "1"),
                        ))
                        .block_task()
                        .await?;
                    let InitializeOutcome::Initialized(init) = outcome else {
                        panic!("v2 is offered: {outcome:?}");
                    };
                    assert_eq!(init.protocol_version, ProtocolVersion::V2);
                    let made = cx
                        .send_request(v2s::NewSessionRequest::new(workspace))
                        .block_task()
                        .await?;
                    cx.send_request(v2s::PromptRequest::new(
                        made.session_id.clone(),
                        vec![v2s::ContentBlock::Text(v2s::TextContent::new("write b"))],
                    ))
                    .block_task()
                    .await?;
                    let mut seen = Vec::new();
                    while let Some(u) = rx.recv().await {
                        let idle = matches!(
                            &u,
                            v2s::SessionUpdate::StateUpdate(v2s::StateUpdate::Idle(_))
                        );
                        seen.push(u);
                        if idle {
                            break;
                        }
                    }
                    Ok(seen)
                },
            ),
    )
    .await
    .expect("the v2 session runs");
    let Some(v2s::SessionUpdate::StateUpdate(v2s::StateUpdate::Idle(idle))) = updates.last() else {
        panic!("ends idle: {updates:?}");
    };
    assert!(
        matches!(idle.stop_reason, Some(v2s::StopReason::EndTurn)),
        "{idle:?}"
    );
    assert!(
        updates
            .iter()
            .any(|u| matches!(u, v2s::SessionUpdate::ToolCallUpdate(_))),
        "{updates:?}"
    );
    assert!(
        updates
            .iter()
            .any(|u| matches!(u, v2s::SessionUpdate::PlanUpdate(_))),
        "{updates:?}"
    );
    assert_eq!(*asked.lock().unwrap(), 1);
    assert_eq!(
        std::fs::read_to_string(ws.join("b.txt")).expect("written"),
        "bee\n"
    );
}
