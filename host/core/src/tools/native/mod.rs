//! Host-native tools: the ones that talk to the person or steer the task
//! itself rather than touch the workspace, so they run in the host, not a
//! plugin. One file each; [`all`] is the one list of them: the registry
//! registers it, their names are reserved from plugins
//! (`tools::reserved`), and every mode offers them (they are
//! [`always_available`](super::ToolExecutor::always_available)). Each is a
//! [`ToolExecutor`] like any tool and goes through the same dispatch
//! (gates, mode hooks, approval, after stage).

mod ask_followup_question;
mod attempt_completion;
mod delegate;
mod new_parallel_tasks;
mod new_task;
mod select_active_intent;
mod switch_mode;
mod update_todo_list;

use std::sync::{Arc, LazyLock};

use super::executor::ToolExecutor;

pub use ask_followup_question::NAME as ASK_FOLLOWUP;
pub use attempt_completion::NAME as ATTEMPT_COMPLETION;
pub use new_parallel_tasks::NAME as NEW_PARALLEL_TASKS;
pub use new_task::NAME as NEW_TASK;
pub use select_active_intent::NAME as SELECT_ACTIVE_INTENT;
pub use switch_mode::NAME as SWITCH_MODE;
pub use update_todo_list::NAME as UPDATE_TODO_LIST;

/// Every host-native tool, built once.
static ALL: LazyLock<Vec<Arc<dyn ToolExecutor>>> = LazyLock::new(|| {
    vec![
        Arc::new(attempt_completion::AttemptCompletion::new()),
        Arc::new(ask_followup_question::AskFollowup::new()),
        Arc::new(new_task::NewTask::new()),
        Arc::new(new_parallel_tasks::NewParallelTasks::new()),
        Arc::new(select_active_intent::SelectActiveIntent::new()),
        Arc::new(switch_mode::SwitchMode::new()),
        Arc::new(update_todo_list::UpdateTodoList::new()),
    ]
});

/// Every host-native tool.
pub fn all() -> Vec<Arc<dyn ToolExecutor>> {
    ALL.clone()
}

/// Whether `name` is a host-native tool's.
pub fn is_native(name: &str) -> bool {
    ALL.iter().any(|t| t.spec().name == name)
}

/// The host-native tools' names.
pub fn names() -> impl Iterator<Item = &'static str> {
    ALL.iter().map(|t| t.spec().name.as_str())
}

pub use update_todo_list::{parse_todos, render_todos};
