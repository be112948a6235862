//! A task's open questions and the answers to them: what a person's typed
//! decision means for each kind of question, checked once for every
//! front-end (an approval does not answer a follow-up, nor words an
//! approval), and recorded for the loop waiting on it.

use roost_protocol::api::{AskView, Decision};
use roost_protocol::{Answer, Ask, Grant};

use super::{Session, SessionError};
use crate::store::StoredAsk;

/// A question answered: as it was asked, and as stored.
#[derive(Debug, Clone)]
pub struct Decided {
    /// The question.
    pub ask: Ask,
    /// Its record (the task that asked, its kind).
    pub stored: StoredAsk,
}

/// What `decision` answers to `ask`, or why it does not fit.
pub fn answer_for(decision: Decision, ask: &Ask) -> Result<Answer, SessionError> {
    let approval = matches!(ask, Ask::Tool { .. } | Ask::Scope { .. } | Ask::Hook { .. });
    let wrong = |what: &str| {
        SessionError::Invalid(format!(
            "`{what}` does not answer a `{}` question",
            ask.kind()
        ))
    };
    Ok(match decision {
        Decision::Approve if approval => Answer::Yes,
        Decision::ApproveForTask => match ask {
            Ask::Tool { group, .. } => Answer::Always {
                grant: Grant::Group(*group),
            },
            _ => return Err(wrong("approve_for_task")),
        },
        Decision::Deny { feedback } if approval => Answer::No { feedback },
        Decision::Answer { text } if !approval => Answer::Text { text },
        Decision::Accept if matches!(ask, Ask::Completion { .. }) => Answer::Yes,
        Decision::Approve => return Err(wrong("approve")),
        Decision::Deny { .. } => return Err(wrong("deny")),
        Decision::Answer { .. } => return Err(wrong("answer")),
        Decision::Accept => return Err(wrong("accept")),
    })
}

impl Session<'_> {
    /// Task `id`'s open questions, oldest first; with `tree`, those of its
    /// subtasks too (one approver for a tree). A question whose record no
    /// longer decodes is left out (and logged), never guessed at.
    pub async fn asks(&self, id: &str, tree: bool) -> Result<Vec<AskView>, SessionError> {
        let task = self.task(id).await?;
        let open = self.engine.read_pending_asks(&task.task.id, tree).await?;
        Ok(open
            .into_iter()
            .filter_map(|a| match serde_json::from_str::<Ask>(&a.payload) {
                Ok(ask) => Some(AskView {
                    ask_id: a.ask_id,
                    task_id: a.task_id,
                    kind: a.kind,
                    question: ask.question(),
                    ask,
                    created_at: a.created_at,
                }),
                Err(e) => {
                    tracing::warn!(task = %a.task_id, ask = %a.ask_id, "an open question does not decode: {e}");
                    None
                }
            })
            .collect())
    }

    /// Answer task `id`'s open question `ask_id` with a person's typed
    /// `decision`. Refused when the task is not running yet (its resumed
    /// loop asks again by the same id: answer then), when the question is
    /// not open, or when the decision does not answer its kind.
    pub async fn decide(
        &self,
        id: &str,
        ask_id: &str,
        decision: Decision,
    ) -> Result<Decided, SessionError> {
        let task = self.task(id).await?;
        if task.interrupted {
            return Err(SessionError::Conflict(
                "the task is not running yet; answer once it has resumed (it asks again by the same ask_id)"
                    .into(),
            ));
        }
        let stored = self.open_ask(&task.task.id, ask_id).await?;
        let ask: Ask = serde_json::from_str(&stored.payload)
            .map_err(|_| SessionError::Invalid("the question does not decode".into()))?;
        let answer = answer_for(decision, &ask)?;
        self.engine.answer(&task.task.id, ask_id, answer).await?;
        Ok(Decided { ask, stored })
    }

    /// Answer task `id`'s open question `ask_id` with `answer` as it is (a
    /// front-end that asks in the question's own terms, like a terminal).
    pub async fn answer(&self, id: &str, ask_id: &str, answer: Answer) -> Result<(), SessionError> {
        let task = self.task(id).await?;
        self.engine.answer(&task.task.id, ask_id, answer).await?;
        Ok(())
    }

    /// The open question `ask_id` of task `task`.
    async fn open_ask(&self, task: &str, ask_id: &str) -> Result<StoredAsk, SessionError> {
        self.engine
            .read_pending_asks(task, false)
            .await?
            .into_iter()
            .find(|a| a.ask_id == ask_id)
            .ok_or_else(|| {
                SessionError::Conflict(format!("task {task} has no open question {ask_id}"))
            })
    }
}
