//! Following a task's events with replay: everything recorded after the
//! position a front-end last saw, then the live ones, none missed or
//! repeated. Streamed deltas (no seq) pass as they come. A follower that
//! falls behind the live events is ended (it follows again from its last
//! seq): it never slows a task.

use std::sync::Arc;

use futures::{Stream, StreamExt};
use tokio::sync::broadcast::error::RecvError;

use super::{Session, SessionError};
use crate::events::{Envelope, Subscription};

/// A task's events from a position on.
pub struct Follow {
    /// The recorded events after the position, oldest first.
    pub past: Vec<Envelope>,
    live: Option<Subscription>,
    last: i64,
}

impl Follow {
    /// The past, then the live events while the task runs in this engine
    /// (or another host relays them), in order.
    pub fn into_stream(self) -> impl Stream<Item = Arc<Envelope>> + Send + 'static {
        let Follow { past, live, last } = self;
        let past = futures::stream::iter(past.into_iter().map(Arc::new));
        let live = futures::stream::unfold((live, last), |(rx, mut last)| async move {
            let mut rx = rx?;
            loop {
                match rx.recv().await {
                    Ok(env) => match env.seq {
                        // Already in the past (or sent before).
                        Some(seq) if seq <= last => continue,
                        Some(seq) => {
                            last = seq;
                            return Some((env, (Some(rx), last)));
                        }
                        None => return Some((env, (Some(rx), last))),
                    },
                    // Fell behind, or the task's bus closed: the follower
                    // picks up from its last seq.
                    Err(RecvError::Lagged(_) | RecvError::Closed) => return None,
                }
            }
        });
        past.chain(live)
    }
}

impl Session<'_> {
    /// Task `id`'s events after position `after` (0 for all).
    pub async fn follow(&self, id: &str, after: i64) -> Result<Follow, SessionError> {
        if after < 0 {
            return Err(SessionError::Invalid(
                "a position is a number from 0".into(),
            ));
        }
        let task = self.task(id).await?;
        let (past, live) = self.engine.events_of(&task, after).await?;
        let last = past.iter().filter_map(|e| e.seq).max().unwrap_or(after);
        Ok(Follow { past, live, last })
    }
}
