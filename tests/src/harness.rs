//! A task-loop harness: an engine built the way production builds one
//! (`EngineBuilder`: first-party tools and hooks, a store in a data
//! directory) on a throwaway workspace, its model scripted through the
//! real OpenAI-compatible decoding path, its history in a real SQLite
//! file, its tasks driven through `Engine` as a front-end drives them.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use roost_core::commands::{CommandsConfig, ProfileConfig};
use roost_core::config::SecretStore;
use roost_core::engine::{Engine, EngineBuilder, EngineError, ResumeSpec, TaskSpec};
use roost_core::events::{Envelope, Subscription};
use roost_core::llm::scripted::{Script, ScriptedTransport};
use roost_core::llm::{ContentBlock, OpenAiCompatible, Provider, RetryPolicy, Role};
use roost_core::store::Store;
use roost_core::task::{Agent, ApprovalPolicy, TaskConfig, TaskOutcome};
use roost_sandbox::plugins::{LoadedHook, LoadedPlugin};
use serde_json::{Value, json};
use tokio::sync::broadcast;

use crate::user::ScriptedUser;
use crate::{TestWorkspace, engine};

/// Every event of every task a harness ran, relayed from the engine's
/// per-task buses: subscribe before a run to see all of it.
pub struct Relay {
    tx: broadcast::Sender<Arc<Envelope>>,
}

impl Relay {
    fn new() -> Self {
        Self {
            tx: broadcast::channel(1 << 16).0,
        }
    }

    /// Events from now on.
    pub fn subscribe(&self) -> Subscription {
        self.tx.subscribe()
    }
}

/// An engine on a throwaway workspace whose model replays a script. Its
/// settings, plugins and hooks may be changed until it is first used
/// (the engine is built then).
pub struct Harness {
    /// The engine's task defaults (the policy given, else `TaskConfig`'s).
    pub config: TaskConfig,
    /// The scripted model's transport (records requests).
    pub transport: Arc<ScriptedTransport>,
    /// The workspace (with a canary directory beside it).
    pub ws: TestWorkspace,
    /// Every task's events.
    pub events: Relay,
    /// Native commands, when a test turns them on (the `[commands]` table
    /// and profiles), with the secrets they may be given.
    pub commands: Option<(CommandsConfig, BTreeMap<String, ProfileConfig>, SecretStore)>,
    /// The program serving a command's network in its sandbox (the
    /// `roost` binary).
    pub command_bridge: Option<PathBuf>,
    /// The user's config directory (global modes, `mcp_settings.json`).
    pub config_dir: Option<PathBuf>,
    provider: Arc<dyn Provider>,
    plugins: Vec<Arc<LoadedPlugin>>,
    hooks: Vec<Arc<LoadedHook>>,
    built: OnceLock<Arc<Engine>>,
}

/// A harness whose model replays `turns`, under `policy`.
pub fn harness(turns: Value, policy: ApprovalPolicy) -> Harness {
    scripted_harness(json!({ "turns": turns }), policy)
}

/// A scripted provider replaying `script`, with its transport.
pub fn scripted_provider(script: Value) -> (Arc<dyn Provider>, Arc<ScriptedTransport>) {
    let script: Script = serde_json::from_value(script).expect("valid script");
    let transport = Arc::new(ScriptedTransport::recording(script));
    let retry = RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(20),
    };
    let provider = Arc::new(OpenAiCompatible::new(
        "scripted",
        "scripted",
        transport.clone(),
        retry,
    ));
    (provider, transport)
}

/// A harness whose model replays the whole transcript `script` (turns and
/// other top-level fields such as `summary`), under `policy`.
pub fn scripted_harness(script: Value, policy: ApprovalPolicy) -> Harness {
    let (provider, transport) = scripted_provider(script);
    Harness {
        config: TaskConfig {
            policy,
            ..TaskConfig::default()
        },
        transport,
        ws: TestWorkspace::new(),
        events: Relay::new(),
        commands: None,
        command_bridge: None,
        config_dir: None,
        provider,
        plugins: Vec::new(),
        hooks: Vec::new(),
        built: OnceLock::new(),
    }
}

/// One tool call of a scripted turn.
pub fn call(name: &str, args: Value) -> Value {
    json!({"name": name, "args": args})
}

/// One scripted model turn.
pub fn turn(text: &str, calls: Vec<Value>) -> Value {
    json!({"text": text, "tool_calls": calls, "usage": {"input_tokens": 100, "output_tokens": 10}, "chunk_size": 5})
}

/// A turn that calls `attempt_completion`.
pub fn complete(result: &str) -> Value {
    turn(
        "",
        vec![call("attempt_completion", json!({"result": result}))],
    )
}

impl Harness {
    /// Where the engine keeps its store.
    pub fn data_dir(&self) -> PathBuf {
        self.ws.root().join("data")
    }

    /// The engine (built on first use, as production builds it).
    pub fn engine(&self) -> &Arc<Engine> {
        self.built
            .get_or_init(|| self.build(Arc::clone(&self.provider)))
    }

    /// Another engine on the same data directory, workspace and settings
    /// whose model replays `turns`: a second process (after a crash, a
    /// restart) resuming this one's tasks.
    pub fn another_process(&self, turns: Value) -> Arc<Engine> {
        let (provider, _) = scripted_provider(json!({ "turns": turns }));
        self.build(provider)
    }

    /// [`Harness::another_process`] whose model replays the whole
    /// transcript `script` (with subtasks' transcripts).
    pub fn another_process_with(&self, script: Value) -> Arc<Engine> {
        let (provider, _) = scripted_provider(script);
        self.build(provider)
    }

    fn build(&self, provider: Arc<dyn Provider>) -> Arc<Engine> {
        let mut b = EngineBuilder::new(&self.data_dir())
            .plugin_engine(engine())
            .provider(provider)
            .config(self.config.clone());
        for p in &self.plugins {
            b = b.plugin(Arc::clone(p));
        }
        for h in &self.hooks {
            b = b.hook(Arc::clone(h));
        }
        if let Some((c, p, secrets)) = &self.commands {
            b = b.secrets(secrets.clone()).commands(c.clone(), p.clone());
        }
        if let Some(bridge) = &self.command_bridge {
            b = b.command_bridge(bridge.clone());
        }
        // As `roost` does: each command line read in a bounded child.
        if let Some(roost) = roost_binary() {
            b = b.line_reader(roost);
        }
        if self.config_dir.is_some() {
            b = b.modes_dir(self.config_dir.clone());
        }
        b.build().expect("the engine builds")
    }

    /// The services the engine runs tasks with.
    pub fn agent(&self) -> &Agent {
        self.engine().agent()
    }

    /// The engine's store.
    pub fn store(&self) -> &Store {
        &self.agent().store
    }

    /// Start a task in mode `code`.
    pub async fn run(&self, user: &ScriptedUser, prompt: &str) -> (String, TaskOutcome) {
        self.run_in("code", user, prompt).await
    }

    /// Start a task in `mode`.
    pub async fn run_in(
        &self,
        mode: &str,
        user: &ScriptedUser,
        prompt: &str,
    ) -> (String, TaskOutcome) {
        let id = self
            .create(mode, prompt)
            .await
            .unwrap_or_else(|e| panic!("the task is created: {e}"));
        let outcome = self.drive(self.engine(), &id, user).await;
        (id, outcome.expect("task runs"))
    }

    /// Create a task in `mode` (not started).
    pub async fn create(&self, mode: &str, prompt: &str) -> Result<String, EngineError> {
        self.engine()
            .create_task(&TaskSpec {
                prompt: prompt.to_owned(),
                workspace: self.ws.path(),
                mode: mode.to_owned(),
                ..TaskSpec::default()
            })
            .await
    }

    /// Resume task `id` (or an id prefix) on `engine` (this harness's or
    /// [`Harness::another_process`]), `user` answering.
    pub async fn resume_on(
        &self,
        engine: &Arc<Engine>,
        id: &str,
        user: &ScriptedUser,
    ) -> Result<TaskOutcome, EngineError> {
        let prepared = engine.prepare_resume(id, &ResumeSpec::default())?;
        self.drive(engine, &prepared.id, user).await
    }

    /// Start the created or prepared task `id` of `engine`, relay its
    /// events, answer its questions with `user`, and wait for it.
    pub async fn drive(
        &self,
        engine: &Arc<Engine>,
        id: &str,
        user: &dyn roost_core::asks::Responder,
    ) -> Result<TaskOutcome, EngineError> {
        let mut rx = engine.subscribe(id)?;
        let tx = self.events.tx.clone();
        let relay = tokio::spawn(async move {
            loop {
                match rx.recv().await {
                    Ok(ev) => {
                        let _ = tx.send(ev);
                    }
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        panic!("the relay lagged {n} events behind")
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        });
        let answering = engine.answer_with(id, user)?;
        engine.start(id)?;
        tokio::pin!(answering);
        let wait = engine.wait(id);
        tokio::pin!(wait);
        let outcome = tokio::select! {
            o = &mut wait => o,
            () = &mut answering => wait.await,
        };
        // Every event is relayed once the task's bus has closed.
        let _ = tokio::time::timeout(Duration::from_secs(30), relay).await;
        outcome
    }

    /// Offer `plugin`'s tools too (before the engine is first used).
    pub fn add_plugin(&mut self, plugin: Arc<LoadedPlugin>) {
        assert!(
            self.built.get().is_none(),
            "add plugins before the first run"
        );
        self.plugins.push(plugin);
    }

    /// Make `hook` available to modes (before the engine is first used).
    pub fn add_hook(&mut self, hook: Arc<LoadedHook>) {
        assert!(self.built.get().is_none(), "add hooks before the first run");
        self.hooks.push(hook);
    }

    /// Tool results of the task, in order: (content, is_error).
    pub fn results(&self, id: &str) -> Vec<(String, bool)> {
        self.store()
            .load_api(id, true)
            .expect("history")
            .into_iter()
            .flat_map(|m| m.message.content)
            .filter_map(|b| match b {
                ContentBlock::ToolResult {
                    content, is_error, ..
                } => Some((content, is_error)),
                _ => None,
            })
            .collect()
    }
}

/// The entries of `.orchestration/agent_trace.jsonl` in `workspace`; every
/// line must be valid JSON.
pub fn trace_lines(workspace: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(workspace.join(".orchestration/agent_trace.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("every trace line is valid JSON"))
        .collect()
}

/// The totals a completed task's `completed` event announced equal the
/// ones its record holds (the run adds them up without reading them back).
pub fn assert_completed_with_its_totals(store: &Store, id: &str) {
    let completed = store
        .events_after(id, 0, usize::MAX)
        .expect("events")
        .iter()
        .filter_map(|e| serde_json::from_str::<roost_core::events::TaskEvent>(&e.event).ok())
        .find_map(|e| match e {
            roost_core::events::TaskEvent::Completed { usage, cost, .. } => Some((usage, cost)),
            _ => None,
        })
        .expect("a completed event");
    let task = store.get_task(id).expect("task");
    assert_eq!(completed.0, task.usage, "announced tokens");
    assert!(
        (completed.1 - task.cost).abs() < 1e-9,
        "announced cost {} against {}",
        completed.1,
        task.cost
    );
}

/// Every assistant message's tool_use ids are answered, in order, by the
/// tool_results of the next message; no result answers nothing.
pub fn assert_pairing(store: &Store, id: &str) {
    let h = store.load_api(id, true).expect("history");
    for (i, m) in h.iter().enumerate() {
        let uses: Vec<&str> = m.message.tool_use_ids().collect();
        if m.message.role == Role::Assistant && !uses.is_empty() {
            let next = h.get(i + 1).expect("tool_use without a following message");
            let answered: Vec<&str> = next
                .message
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
                    _ => None,
                })
                .collect();
            assert_eq!(uses, answered, "message {} is not answered in order", m.seq);
        }
        if m.message.role == Role::User && i > 0 {
            let prev_uses: Vec<&str> = h[i - 1].message.tool_use_ids().collect();
            for b in &m.message.content {
                if let ContentBlock::ToolResult { tool_use_id, .. } = b {
                    assert!(
                        prev_uses.contains(&tool_use_id.as_str()),
                        "orphan tool_result {tool_use_id}"
                    );
                }
            }
        }
    }
}

/// The `roost` binary the tests run with (cargo builds a package's
/// binaries before its integration tests: `target/<profile>/roost`, beside
/// the tests' own `deps/`).
pub fn roost_binary() -> Option<PathBuf> {
    let me = std::env::current_exe().ok()?;
    let roost = me.parent()?.parent()?.join("roost");
    roost.is_file().then_some(roost)
}
