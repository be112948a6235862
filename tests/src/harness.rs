//! A task-loop harness: an agent with fs-tools on a throwaway workspace,
//! its model scripted through the real OpenAI-compatible decoding path,
//! its history in a real SQLite file.

use std::sync::Arc;
use std::time::Duration;

use roost_core::events::EventBus;
use roost_core::first_party;
use roost_core::llm::scripted::{Script, ScriptedTransport};
use roost_core::llm::{ContentBlock, OpenAiCompatible, RetryPolicy, Role};
use roost_core::store::Store;
use roost_core::task::Registry;
use roost_core::task::{Agent, ApprovalPolicy, TaskConfig, TaskOutcome};
use roost_sandbox::plugins::LoadedPlugin;
use serde_json::{Value, json};

use crate::user::ScriptedUser;
use crate::{TestWorkspace, engine};

/// An agent on a throwaway workspace whose model replays `turns`.
pub struct Harness {
    /// The agent (fields are public: tests swap in hooks and plugins).
    pub agent: Agent,
    /// The scripted model's transport (records requests).
    pub transport: Arc<ScriptedTransport>,
    /// The workspace (with a canary directory beside it).
    pub ws: TestWorkspace,
    /// The task's event bus.
    pub events: EventBus,
}

/// A harness whose model replays `turns`, under `policy`.
pub fn harness(turns: Value, policy: ApprovalPolicy) -> Harness {
    scripted_harness(json!({ "turns": turns }), policy)
}

/// A harness whose model replays the whole transcript `script` (turns and
/// other top-level fields such as `summary`), under `policy`.
pub fn scripted_harness(script: Value, policy: ApprovalPolicy) -> Harness {
    let ws = TestWorkspace::new();
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
    let mut registry = Registry::new();
    registry
        .add_plugin(
            engine()
                .load_bytes("fs-tools", first_party::FS_TOOLS)
                .expect("fs-tools"),
        )
        .expect("registers");
    let store = Store::open(&ws.root().join("data").join("roost.db")).expect("store");
    let config = TaskConfig {
        policy,
        ..TaskConfig::default()
    };
    let agent = Agent {
        provider,
        engine: engine(),
        registry: Arc::new(registry),
        store,
        config,
        modes_dir: None,
        hooks: Default::default(),
        asks: Default::default(),
    };
    Harness {
        agent,
        transport,
        ws,
        events: EventBus::new(),
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
        let ws = self.ws.path();
        self.agent
            .answered(
                &self.events,
                user,
                self.agent.start(prompt, &ws, mode, &self.events),
            )
            .await
            .expect("task runs")
    }

    /// Offer `plugin`'s tools too.
    pub fn add_plugin(&mut self, plugin: Arc<LoadedPlugin>) {
        let mut registry = (*self.agent.registry).clone();
        registry.add_plugin(plugin).expect("registers");
        self.agent.registry = Arc::new(registry);
    }

    /// Tool results of the task, in order: (content, is_error).
    pub fn results(&self, id: &str) -> Vec<(String, bool)> {
        self.agent
            .store
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
