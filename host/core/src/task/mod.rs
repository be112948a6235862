//! The agent task loop (Roo Code's `Task`): a prompt becomes a task that
//! streams a model reply, assembles tool calls, hands each to the one
//! dispatch ([`crate::call`]), feeds the results back, and applies what the
//! calls changed, until the work is accepted, the task is aborted, or a
//! limit is hit.
//!
//! [`runner`](Agent) keeps the turns; `context` keeps requests inside the
//! model's window; `history` holds the API history as the loop sees it;
//! [`prompt`] builds the system prompt; `tools` the tools a task is
//! offered (the process's, and its workspace's skill tools).

mod context;
mod history;
pub mod prompt;
mod reopen;
mod runner;
mod tools;
mod workspace;
/// The task status lives with the record it is part of.
pub use crate::store::status;

pub use crate::asks::{
    Answer, Answers, Approval, Ask, AskBroker, AskError, CompletionAnswer, Responder, answer_asks,
};
pub use crate::call::Agent;
pub use crate::call::paths;
pub use crate::call::write_session::{self, WriteRule, WriteSession};
pub use crate::control::Control;
pub use crate::tools::native;
pub use crate::tools::{Access, HOST, RegisteredTool, Registry, RegistryError};
pub use crate::turn::{Price, Services, TaskConfig, TaskError, TaskOutcome};
pub use roost_protocol::task::ApprovalPolicy;
pub use runner::{Creation, NewRun};
pub use status::TaskStatus;
pub use workspace::{PinnedWorkspace, WorkspaceCheck};
