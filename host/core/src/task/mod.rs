//! The agent task loop (Roo Code's `Task`): a prompt becomes a task that
//! streams a model reply, assembles tool calls, passes them through the
//! gates, asks for approval, runs them and feeds the results back, until
//! the work is accepted, the task is aborted, or a limit is hit.
//!
//! [`runner`](Agent) keeps the turns; `call` takes one tool call through
//! the gates and its executor; [`Registry`] says what runs each tool (a
//! component plugin or a [`native`] handler); `context` keeps requests
//! inside the model's window; [`ask`] puts questions to a person.

pub mod ask;
mod call;
pub mod config;
mod context;
pub mod control;
mod history;
pub mod native;
pub mod prompt;
mod registry;
mod runner;
/// The task status lives with the record it is part of.
pub use crate::store::status;

pub use crate::asks::{Answer, Approval, Ask, CompletionAnswer};
pub use ask::{Answers, AskBroker, AskError, Responder, answer_asks};
pub use call::paths;
pub use call::write_session::{self, WriteRule, WriteSession};
pub use config::{Price, TaskConfig};
pub use control::Control;
pub use registry::{
    Access, Executor, HOST, NativeHandler, RegisteredTool, Registry, RegistryError,
};
pub use roost_protocol::task::ApprovalPolicy;
pub use runner::{Agent, TaskError, TaskOutcome};
pub use status::TaskStatus;
