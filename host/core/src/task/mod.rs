//! The agent task loop (Roo Code's `Task`): a prompt becomes a task that
//! streams a model reply, assembles tool calls, passes them through the
//! gates, asks for approval, runs them and feeds the results back, until
//! the work is accepted, the task is aborted, or a limit is hit.

pub mod approval;
pub mod ask;
pub mod config;
mod context;
pub mod control;
mod gates;
mod history;
mod hook_gate;
pub mod native;
pub mod paths;
mod preview;
pub mod prompt;
mod runner;
mod snapshot;
/// The task status lives with the record it is part of.
pub use crate::store::status;

pub use crate::asks::{Answer, Approval, Ask, CompletionAnswer};
pub use approval::ApprovalPolicy;
pub use ask::{Answers, AskBroker, AskError, Responder, answer_asks};
pub use config::{Price, TaskConfig};
pub use control::Control;
pub use runner::{Agent, TaskError, TaskOutcome};
pub use status::TaskStatus;
