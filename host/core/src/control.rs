//! Steering a running task from outside: cancel it, or queue a message
//! for its next turn (Roo's message queue). Cancellation is cooperative:
//! the loop stops between steps (never inside a tool call, whose write
//! guard must run), repairs its history and ends `aborted`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

/// The handle a front-end (or the engine) holds on a running task.
#[derive(Debug, Clone, Default)]
pub struct Control {
    cancel: CancellationToken,
    reason: Arc<Mutex<Option<String>>>,
    inbox: Arc<Mutex<VecDeque<String>>>,
}

impl Control {
    /// Ask the task to stop, for `reason`; it ends `aborted` at its next
    /// step. Later calls keep the first reason.
    pub fn cancel(&self, reason: &str) {
        let mut r = self.reason.lock().unwrap_or_else(|p| p.into_inner());
        if r.is_none() {
            *r = Some(reason.to_owned());
        }
        self.cancel.cancel();
    }

    /// Whether the task was asked to stop.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Why it was asked to stop.
    pub fn reason(&self) -> String {
        self.reason
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .unwrap_or_else(|| "cancelled".to_owned())
    }

    /// Resolves once the task is asked to stop.
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await;
    }

    /// Queue a user message; the loop adds it to the conversation at its
    /// next turn.
    pub fn send_message(&self, text: &str) {
        self.inbox
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(text.to_owned());
    }

    /// The queued messages, oldest first (emptying the queue).
    pub(super) fn take_messages(&self) -> Vec<String> {
        self.inbox
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
            .collect()
    }
}
