//! Every question the loop puts to a person goes through one mechanism:
//! the ask ([`crate::asks::Ask`]) is stored (kind, payload, the call it is
//! about), announced as an event, and waits until a front-end answers it by
//! id — the terminal, a test's scripted user, later an HTTP client. A
//! question left open by a process that died is found again when its task
//! resumes.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::{broadcast, oneshot};

use super::{Answer, Approval, Ask, CompletionAnswer};
use crate::control::Control;
use crate::events::{Envelope, TaskEvent};
use crate::store::{Step, Store, StoreError, StoredAsk, TaskStatus};
use roost_protocol::ToolGroup;

/// Why an answer was not taken.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    /// No open ask has this id in this task (unknown, or already answered).
    #[error("task {task} has no open question {ask_id}")]
    NotOpen {
        /// Task id.
        task: String,
        /// Ask id.
        ask_id: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The answer could not be recorded.
    #[error("cannot record the answer: {0}")]
    Encode(#[from] serde_json::Error),
}

impl AskError {
    fn not_open(task: &str, ask_id: &str) -> Self {
        Self::NotOpen {
            task: task.to_owned(),
            ask_id: ask_id.to_owned(),
        }
    }
}

/// Where waiting loops meet their answers: one per process, shared by all
/// tasks. An answer is recorded durably before the loop sees it.
#[derive(Default)]
pub struct AskBroker {
    waiting: Mutex<HashMap<String, oneshot::Sender<Answer>>>,
}

impl AskBroker {
    /// Register interest in the answer to `ask_id`; the receiver resolves
    /// when it is answered (or with `No` if the broker goes away).
    pub(super) fn wait_for(&self, ask_id: &str) -> oneshot::Receiver<Answer> {
        let (tx, rx) = oneshot::channel();
        self.lock().insert(ask_id.to_owned(), tx);
        rx
    }

    /// Answer the open ask `ask_id` of `task`: recorded in `store` first,
    /// then handed to the loop waiting for it. (With no loop waiting, the
    /// answer stays on record and a resumed task asks again.) A front-end
    /// answers from the runtime: the answer is recorded in the store's
    /// shared commit with the steps of other tasks (not in a transaction
    /// of its own that parks a runtime worker), and handed over once
    /// durable.
    pub async fn answer(
        &self,
        store: &Store,
        task: &str,
        ask_id: &str,
        answer: Answer,
    ) -> Result<(), AskError> {
        let text = serde_json::to_string(&answer)?;
        let step = Step::new().answer(ask_id, &text).prepare(task)?;
        match store.commit(task, step).await {
            Ok(_) => {}
            Err(StoreError::AskNotOpen { .. } | StoreError::NotFound(_)) => {
                return Err(AskError::not_open(task, ask_id));
            }
            Err(e) => return Err(e.into()),
        }
        self.deliver(ask_id, answer);
        Ok(())
    }

    /// Hand a recorded answer to the loop waiting for it, if one is (here,
    /// or, for an answer another host recorded, as that host asks).
    pub(crate) fn deliver(&self, ask_id: &str, answer: Answer) {
        if let Some(tx) = self.lock().remove(ask_id) {
            let _ = tx.send(answer);
        }
    }

    /// Stop waiting for `ask_id` (its task ended another way).
    pub(super) fn forget(&self, ask_id: &str) {
        self.lock().remove(ask_id);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<Answer>>> {
        // The map stays consistent whatever panicked while it was held.
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A front-end that answers asks as they come (the terminal; a test's
/// scripted user).
#[async_trait::async_trait]
pub trait Responder: Send + Sync {
    /// The answer to `ask`.
    async fn respond(&self, ask: &Ask) -> Answer;
}

/// A front-end that answers each kind of question with a method of its
/// own (the terminal, a test's scripted user); it is a [`Responder`].
#[async_trait::async_trait]
pub trait Answers: Send + Sync {
    /// May `tool` run with `args`? `preview`: the diff an edit would make.
    async fn approve(
        &self,
        tool: &str,
        group: ToolGroup,
        args: &serde_json::Value,
        preview: Option<&str>,
    ) -> Approval;
    /// Answer the model's question; `None` when nobody can.
    async fn followup(&self, question: &str, suggestions: &[String]) -> Option<String>;
    /// Accept the result, or send feedback.
    async fn completion(&self, result: &str) -> CompletionAnswer;
    /// Allow `tool` to write `path`, outside `intent`'s scope, once?
    /// (`preview`: the diff the call would make.)
    async fn scope_violation(
        &self,
        intent: &str,
        tool: &str,
        path: &str,
        preview: Option<&str>,
    ) -> Approval;
    /// Hook `hook` asks about a call of `tool`, in its own words.
    async fn hook_question(&self, hook: &str, tool: &str, question: &str) -> Approval;
    /// The model is stuck: guidance to go on, or `None` to stop.
    async fn guidance(&self, reason: &str) -> Option<String>;
}

#[async_trait::async_trait]
impl<T: Answers> Responder for T {
    async fn respond(&self, ask: &Ask) -> Answer {
        match ask {
            Ask::Tool {
                tool,
                group,
                args,
                preview,
                why,
            } => {
                let shown = match (why, preview) {
                    (Some(w), Some(p)) => Some(format!("{w}\n{p}")),
                    (Some(w), None) => Some(w.clone()),
                    (None, p) => p.clone(),
                };
                self.approve(tool, *group, args, shown.as_deref())
                    .await
                    .into()
            }
            Ask::Followup {
                question,
                suggestions,
            } => self.followup(question, suggestions).await.into(),
            Ask::Completion { result } => self.completion(result).await.into(),
            Ask::Scope {
                intent,
                tool,
                path,
                preview,
            } => self
                .scope_violation(intent, tool, path, preview.as_deref())
                .await
                .into(),
            Ask::Hook {
                hook,
                tool,
                question,
            } => self.hook_question(hook, tool, question).await.into(),
            Ask::Guidance { reason, .. } => self.guidance(reason).await.into(),
        }
    }
}

/// Answer every ask announced on `events` with `responder`, until the bus
/// closes; when the front-end falls behind the bus, the questions `open`
/// lists (those still open in the store) are answered instead of the
/// announcements it missed. Run it beside the task (for example in a
/// `select!`).
pub async fn answer_asks<Open>(
    mut events: broadcast::Receiver<std::sync::Arc<Envelope>>,
    broker: &AskBroker,
    store: &Store,
    responder: &dyn Responder,
    open: impl Fn() -> Open,
) where
    Open: std::future::Future<Output = Vec<StoredAsk>>,
{
    // Each question is put to the responder once, however it was seen.
    let mut put = std::collections::HashSet::new();
    loop {
        let received = events.recv().await;
        match received.as_deref() {
            Ok(Envelope {
                task_id,
                event: TaskEvent::AskRequired { ask_id, ask, .. },
                ..
            }) => {
                if put.insert(ask_id.clone()) {
                    answer_one(broker, store, responder, task_id, ask_id, ask).await;
                }
            }
            Ok(_) => {}
            // Fell behind (events come faster than this front-end runs):
            // a question among the missed ones is still open in the store.
            Err(broadcast::error::RecvError::Lagged(n)) => {
                tracing::warn!(
                    "the answering front-end fell {n} events behind: answering the questions still open"
                );
                for a in open().await {
                    if put.contains(&a.ask_id) {
                        continue;
                    }
                    match serde_json::from_str::<Ask>(&a.payload) {
                        Ok(ask) => {
                            put.insert(a.ask_id.clone());
                            answer_one(broker, store, responder, &a.task_id, &a.ask_id, &ask).await;
                        }
                        Err(e) => tracing::warn!(
                            task = %a.task_id,
                            ask = %a.ask_id,
                            "an open question does not decode: {e}"
                        ),
                    }
                }
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// Put `ask` to `responder` and record its answer.
async fn answer_one(
    broker: &AskBroker,
    store: &Store,
    responder: &dyn Responder,
    task_id: &str,
    ask_id: &str,
    ask: &Ask,
) {
    let answer = responder.respond(ask).await;
    if let Err(e) = broker.answer(store, task_id, ask_id, answer).await {
        tracing::warn!("answer not taken: {e}");
    }
}

/// The task a question is put for, as its run holds it.
#[derive(Clone, Copy)]
pub struct AskSite<'a> {
    /// The task's id.
    pub task: &'a str,
    /// Where its events go.
    pub events: &'a crate::events::EventBus,
    /// Its cancellation.
    pub control: &'a Control,
    /// Whether its run resumes it (only then can a question be open from
    /// before).
    pub resumed: bool,
    /// When the task is set running again once answered.
    pub resume: Resume,
}

/// When a task that waited for an answer is set running again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resume {
    /// At once, in a step of its own: what follows the answer may take
    /// long (the call it approved runs, the next turn's request).
    Now,
    /// With the next step the asker takes, at once (the approval's
    /// announcement, the denial's, the call's result): a step fewer.
    WithNextStep,
}

/// Ask, as the loop does: reuse a question about the same call left open
/// by a process that died (else record a new one), set the waiting status,
/// record the UI row, announce it, wait for the answer, set `running` (as
/// `site.resume` says).
/// Only a `resumed` task's run can find one left open: a new task's
/// questions are all its own run's, each answered before the next.
pub async fn ask(
    store: &Store,
    broker: &AskBroker,
    site: AskSite<'_>,
    call_id: Option<&str>,
    ask: Ask,
) -> Result<Option<Answer>, StoreError> {
    let AskSite {
        task,
        events,
        control,
        resumed,
        resume,
    } = site;
    let payload = serde_json::to_string(&ask).unwrap_or_default();
    let open = if resumed {
        store.find_open_ask(task, ask.kind(), call_id)?
    } else {
        None
    };
    let (stored, new) = match open {
        Some(open) => (open, false),
        None => (StoredAsk::open(task, call_id, ask.kind(), &payload), true),
    };
    let waiting = broker.wait_for(&stored.ask_id);
    // An ask left open by a process that died was visible all along: a
    // front-end may have answered it before the waiter above was
    // registered, in which case the answer is only on record. Read it back
    // now that a later answer can no longer miss the waiter (answers are
    // recorded before delivered). A new ask is recorded by the step below,
    // after the waiter exists, so no answer can come before it.
    let early = if new {
        None
    } else {
        store
            .get_ask(task, &stored.ask_id)?
            .and_then(|a| a.answer)
            .and_then(|text| serde_json::from_str::<Answer>(&text).ok())
    };
    // The record, the waiting status, the UI row and the announcement are
    // one step.
    let (row, text) = ask.ui_row();
    let mut step = Step::new().status(ask.waiting_status()).ui(row, text);
    if new {
        step = step.ask(&stored);
    }
    let announce = TaskEvent::AskRequired {
        ask_id: stored.ask_id.clone(),
        text: ask.question(),
        ask,
    };
    events.commit(store, task, step, vec![announce]).await?;
    // A cancel while waiting answers nothing: the task stops (aborted,
    // resumable), the question stays unanswered.
    let answer = match early {
        Some(a) => a,
        None => tokio::select! {
            a = waiting => a.unwrap_or(Answer::No { feedback: None }),
            () = control.cancelled() => {
                broker.forget(&stored.ask_id);
                return Ok(None);
            }
        },
    };
    broker.forget(&stored.ask_id);
    if resume == Resume::Now || !events.owe_status(TaskStatus::Running) {
        let running = Step::new().status(TaskStatus::Running);
        events.commit(store, task, running, Vec::new()).await?;
    }
    Ok(Some(answer))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::store::NewTask;

    /// Says yes, and counts the questions it was put.
    #[derive(Default)]
    struct Counting(std::sync::atomic::AtomicUsize);

    #[async_trait::async_trait]
    impl Responder for Counting {
        async fn respond(&self, _: &Ask) -> Answer {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Answer::Yes
        }
    }

    /// A store in `dir` with one task in it.
    fn store_with_task(dir: &std::path::Path) -> (Store, crate::store::TaskRecord) {
        let store = Store::open(&dir.join("roost.db")).expect("store");
        let task = store
            .create_task(&NewTask {
                mode: "code".into(),
                workspace: "/ws".into(),
                prompt: "p".into(),
                ..NewTask::default()
            })
            .expect("task");
        (store, task)
    }

    /// `n` events of `task` that are no question, sent on `tx`.
    fn send_later(tx: &broadcast::Sender<Arc<Envelope>>, task: &str, n: usize) {
        for _ in 0..n {
            tx.send(envelope(
                task,
                TaskEvent::MessageFinal {
                    text: "later".into(),
                },
            ))
            .expect("sent");
        }
    }

    fn envelope(task: &str, event: TaskEvent) -> Arc<Envelope> {
        Arc::new(Envelope {
            task_id: task.to_owned(),
            seq: None,
            event,
        })
    }

    /// A front-end that fell behind the events (the announcement of a
    /// question among those it missed) still answers every open question,
    /// each once.
    #[tokio::test]
    async fn a_front_end_that_fell_behind_answers_what_is_still_open() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, task) = store_with_task(dir.path());
        let ask = Ask::Followup {
            question: "which one?".into(),
            suggestions: Vec::new(),
        };
        let payload = serde_json::to_string(&ask).expect("json");
        let stored = StoredAsk::open(&task.id, None, "followup", &payload);
        store
            .commit_step(&task.id, Step::new().ask(&stored))
            .expect("asked");
        // Capacity 2: the announcement and the events after it overflow it
        // before the front-end reads anything.
        let (tx, rx) = broadcast::channel(2);
        let announced = TaskEvent::AskRequired {
            ask_id: stored.ask_id.clone(),
            text: "which one?".into(),
            ask: ask.clone(),
        };
        tx.send(envelope(&task.id, announced.clone()))
            .expect("sent");
        send_later(&tx, &task.id, 4);
        drop(tx);
        let broker = AskBroker::default();
        let responder = Counting::default();
        let open = || async { store.read_open_asks(&task.id).await.expect("open asks") };
        answer_asks(rx, &broker, &store, &responder, open).await;
        assert!(
            store.open_asks(&task.id).expect("open").is_empty(),
            "the missed question was answered"
        );
        assert_eq!(responder.0.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    /// A stored question that no longer decodes (a corrupted or foreign
    /// record) is left open and said in the log, never guessed at; the
    /// others are still answered.
    #[tokio::test]
    async fn a_question_that_does_not_decode_is_skipped_not_guessed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, task) = store_with_task(dir.path());
        let garbled = StoredAsk::open(&task.id, None, "followup", "{not json");
        let good = StoredAsk::open(
            &task.id,
            None,
            "completion",
            &serde_json::to_string(&Ask::Completion {
                result: "done".into(),
            })
            .expect("json"),
        );
        for a in [&garbled, &good] {
            store
                .commit_step(&task.id, Step::new().ask(a))
                .expect("asked");
        }
        let (tx, rx) = broadcast::channel(1);
        send_later(&tx, &task.id, 3);
        drop(tx);
        let responder = Counting::default();
        let open = || async { store.read_open_asks(&task.id).await.expect("open asks") };
        answer_asks(rx, &AskBroker::default(), &store, &responder, open).await;
        let left: Vec<String> = store
            .open_asks(&task.id)
            .expect("open")
            .into_iter()
            .map(|a| a.ask_id)
            .collect();
        assert_eq!(left, vec![garbled.ask_id], "only the garbled one left open");
        assert_eq!(responder.0.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    /// Ask `task` a question through `events` and answer it as a
    /// front-end would once it is announced; the answer the loop got.
    async fn asked_and_answered(
        store: &Store,
        broker: &AskBroker,
        events: &crate::events::EventBus,
        task: &str,
        resume: Resume,
    ) -> Option<Answer> {
        let control = Control::default();
        let mut rx = events.subscribe();
        let site = AskSite {
            task,
            events,
            control: &control,
            resumed: false,
            resume,
        };
        let question = Ask::Followup {
            question: "which one?".into(),
            suggestions: Vec::new(),
        };
        let front_end = async {
            loop {
                let ev = rx.recv().await.expect("an event");
                if let TaskEvent::AskRequired { ask_id, .. } = &ev.event {
                    broker
                        .answer(store, task, ask_id, Answer::Yes)
                        .await
                        .expect("answered");
                    return;
                }
            }
        };
        let (answer, ()) = tokio::join!(ask(store, broker, site, None, question), front_end);
        answer.expect("asked")
    }

    /// An answer sets the task running again with the step its asker takes
    /// next, when the asker takes one at once (`Resume::WithNextStep`):
    /// no step of its own, and a next step that sets a status of its own
    /// (the task's end) keeps it. With `Resume::Now`, at once, in a step
    /// of its own.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_answer_sets_the_task_running_with_the_next_step_or_at_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, task) = store_with_task(dir.path());
        let broker = AskBroker::default();
        let events = crate::events::EventBus::for_task(&task.id, &store);
        let status = || store.get_task(&task.id).expect("the task").status;
        let steps = || store.stats().steps;

        let before = steps();
        let answer =
            asked_and_answered(&store, &broker, &events, &task.id, Resume::WithNextStep).await;
        assert_eq!(answer, Some(Answer::Yes));
        assert_eq!(status(), TaskStatus::WaitingForInput, "no step of its own");
        assert_eq!(steps() - before, 2, "the question's, the answer's");
        let next = Step::new().ui(
            roost_protocol::UiRow::say(roost_protocol::UiSubtype::UserFeedback),
            "yes",
        );
        events
            .commit(&store, &task.id, next, Vec::new())
            .await
            .expect("the next step");
        assert_eq!(status(), TaskStatus::Running, "set by the next step");
        assert_eq!(steps() - before, 3);

        let before = steps();
        asked_and_answered(&store, &broker, &events, &task.id, Resume::Now).await;
        assert_eq!(status(), TaskStatus::Running, "at once");
        assert_eq!(steps() - before, 3, "the question's, the answer's, its own");

        asked_and_answered(&store, &broker, &events, &task.id, Resume::WithNextStep).await;
        let end = Step::new().status(TaskStatus::Completed);
        events
            .commit(&store, &task.id, end, Vec::new())
            .await
            .expect("the last step");
        assert_eq!(status(), TaskStatus::Completed, "the step's own status");
        // Owed once: a later step sets nothing.
        let later = Step::new().ui(
            roost_protocol::UiRow::say(roost_protocol::UiSubtype::Text),
            "later",
        );
        events
            .commit(&store, &task.id, later, Vec::new())
            .await
            .expect("a later step");
        assert_eq!(status(), TaskStatus::Completed);
    }
}
