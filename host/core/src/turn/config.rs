//! Limits and policies of a task run.

use serde::{Deserialize, Serialize};

use crate::llm::Usage;
use roost_protocol::task::{ApprovalPolicy, DelegationLimits, Inherited, TaskSettings};
use roost_sandbox::capability::{GuardBudget, Limits};

/// Price of a model, in USD per million tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Price {
    /// Uncached input tokens.
    #[serde(default)]
    pub input: f64,
    /// Output tokens.
    #[serde(default)]
    pub output: f64,
    /// Input tokens read from cache.
    #[serde(default)]
    pub cache_read: f64,
    /// Input tokens written to cache.
    #[serde(default)]
    pub cache_write: f64,
}

impl Price {
    /// Cost of `u` in USD.
    pub fn cost(&self, u: &Usage) -> f64 {
        (u.input_tokens as f64 * self.input
            + u.output_tokens as f64 * self.output
            + u.cache_read_tokens as f64 * self.cache_read
            + u.cache_write_tokens as f64 * self.cache_write)
            / 1_000_000.0
    }
}

/// How a task runs.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskConfig {
    /// Model requests before the task pauses.
    pub max_turns: u32,
    /// Consecutive mistakes before the user is asked for guidance.
    pub max_mistakes: u32,
    /// Identical calls in a row before the repetition gate trips.
    pub repetition_limit: u32,
    /// Which calls run without asking.
    pub policy: ApprovalPolicy,
    /// Limits of each plugin call.
    pub limits: Limits,
    /// Model context window, in tokens.
    pub context_window: u64,
    /// Share of the window at which older history is condensed.
    pub condense_threshold: f64,
    /// Most recent messages kept verbatim when condensing, fewer when
    /// they would not leave half the room free (never fewer than the
    /// newest turn: the last reply and its results).
    pub keep_recent_messages: usize,
    /// Retries of a reply whose stream broke mid-way.
    pub stream_retries: u32,
    /// Price of the model, for cost accounting.
    pub price: Price,
    /// Limits of each mode-hook call: hooks run on every tool call, so they
    /// get a tighter budget than tools.
    pub hook_limits: Limits,
    /// How much a write guard may keep to undo writes outside a scope that
    /// is finer than a directory.
    pub guard_budget: GuardBudget,
    /// How far and wide a task may delegate.
    pub delegation: Delegation,
    /// What the task inherited from the tasks above it (nothing for a
    /// root task).
    pub inherited: Inherited,
    /// Whether the reads of one reply (calls whose tools say they may run
    /// together) run at the same time; their results are recorded in
    /// call order either way (a profile's `parallel_tool_calls`).
    pub parallel_reads: bool,
}

/// How far and wide a tree of tasks may delegate (`[delegation]` in the
/// config): a runaway orchestrator is stopped by the host, not by a
/// prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delegation {
    /// Deepest a subtask may be (a root task is 0, its children 1).
    pub max_depth: u32,
    /// Most subtasks one tree may start in all; `new_task` beyond it is
    /// an error the model reads.
    pub max_total_children: u32,
    /// Most subtasks of one tree running at once; more wait their turn.
    pub max_concurrent_children: u32,
    /// Longest a subtask may run (wall clock) before it is stopped and
    /// its parent told so.
    pub child_timeout: std::time::Duration,
}

impl Delegation {
    /// These bounds, tightened by a task's own (never widened by them).
    pub fn narrowed(self, task: &DelegationLimits) -> Self {
        let min = |ours: u32, theirs: Option<u32>| theirs.map_or(ours, |t| ours.min(t));
        Self {
            max_depth: min(self.max_depth, task.max_depth),
            max_total_children: min(self.max_total_children, task.max_total_children),
            max_concurrent_children: min(
                self.max_concurrent_children,
                task.max_concurrent_children,
            )
            .max(1),
            child_timeout: task.child_timeout_secs.map_or(self.child_timeout, |s| {
                self.child_timeout
                    .min(std::time::Duration::from_secs(s.max(1)))
            }),
        }
    }
}

impl Default for Delegation {
    fn default() -> Self {
        Self {
            max_depth: 4,
            max_total_children: 100,
            max_concurrent_children: 8,
            child_timeout: std::time::Duration::from_secs(3600),
        }
    }
}

impl Default for TaskConfig {
    fn default() -> Self {
        Self {
            max_turns: 50,
            max_mistakes: 3,
            repetition_limit: 3,
            policy: ApprovalPolicy::default(),
            limits: Limits::default(),
            context_window: 128_000,
            condense_threshold: 0.8,
            keep_recent_messages: 6,
            stream_retries: 2,
            price: Price::default(),
            hook_limits: Limits {
                deadline: std::time::Duration::from_secs(5),
                memory_bytes: 64 << 20,
                output_bytes: 64 << 10,
            },
            guard_budget: GuardBudget::default(),
            delegation: Delegation::default(),
            inherited: Inherited::default(),
            parallel_reads: true,
        }
    }
}

impl TaskConfig {
    /// The settings a task records from this config.
    pub fn settings(&self) -> TaskSettings {
        TaskSettings {
            approval: self.policy.clone(),
            max_turns: self.max_turns,
            inherited: self.inherited.clone(),
            delegation: DelegationLimits::default(),
            trace: None,
        }
    }

    /// This config with a task's own settings in place of its defaults.
    pub fn with_settings(mut self, settings: &TaskSettings) -> Self {
        self.policy = settings.approval.clone();
        self.max_turns = settings.max_turns;
        self.inherited = settings.inherited.clone();
        self.delegation = self.delegation.narrowed(&settings.delegation);
        self
    }
}
