//! What a task asks a person and what the person answers: the data (the
//! protocol's types, `roost_protocol::asks`), and the one ask path every
//! question goes through ([`broker`]: durable asks, stored, announced and
//! answered by any front-end, also after a restart).

mod broker;

pub use broker::{Answers, AskBroker, AskError, AskSite, Responder, Resume, answer_asks, ask};
pub use roost_protocol::asks::{Answer, Approval, Ask, CompletionAnswer};
