//! What a task asks a person and what the person answers, as data: stored
//! with the task, announced in events, answered by any front-end. The
//! types are the protocol's (`roost_protocol::asks`); the waiting and
//! answering live in [`crate::task::ask`].

pub use roost_protocol::asks::{Answer, Approval, Ask, CompletionAnswer};
