//! What hosts sharing a store tell each other, through PostgreSQL's
//! `LISTEN/NOTIFY`: events committed (`roost_events`, `task:seq` a line), a task
//! that needs a host (`roost_queue`), requests left for a host
//! (`roost_inbox`, its id). A notification only wakes: what it is about is
//! read from the store, so one missed while the listener reconnects is
//! made good by [`Notice::Reconnected`] (read everything again).

use std::sync::Arc;
#[cfg(feature = "postgres")]
use std::time::Duration;

use tokio::sync::broadcast;

use super::Store;
#[cfg(feature = "postgres")]
use super::StoreError;

/// A notification from another host (or this one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// Events of `task` up to `seq` are committed.
    Events {
        /// Task id.
        task: String,
        /// Its last committed event.
        seq: i64,
    },
    /// A task needs a host.
    Queue,
    /// Requests wait in `host`'s inbox.
    Inbox {
        /// Host id.
        host: String,
    },
    /// The listener (re)connected: notifications may have been missed.
    Reconnected,
}

impl Notice {
    /// The notices of one notification: `roost_events` carries a
    /// `task:seq` entry a line (a shared commit announces all its tasks at
    /// once); entries that do not read are skipped.
    #[cfg(feature = "postgres")]
    pub(super) fn parse(channel: &str, payload: &str) -> Vec<Self> {
        match channel {
            "roost_events" => payload
                .lines()
                .filter_map(|entry| {
                    let (task, seq) = entry.rsplit_once(':')?;
                    Some(Notice::Events {
                        task: task.to_owned(),
                        seq: seq.parse().ok()?,
                    })
                })
                .collect(),
            "roost_queue" => vec![Notice::Queue],
            "roost_inbox" => vec![Notice::Inbox {
                host: payload.to_owned(),
            }],
            _ => Vec::new(),
        }
    }
}

/// Capacity of the notices channel; a receiver that lags is told to read
/// everything again.
const CAPACITY: usize = 4096;

impl Store {
    /// The notices of a shared store (none for SQLite): the listener starts
    /// with the first call and keeps reconnecting while the store lives.
    pub fn notices(&self) -> Option<broadcast::Receiver<Notice>> {
        let super::db::Db::Pg(pool) = &*self.db else {
            return None;
        };
        let tx = self.notices.get_or_init(|| {
            let (tx, _) = broadcast::channel(CAPACITY);
            let weak = Arc::downgrade(&self.db);
            let sender = tx.clone();
            let pool = pool.clone_config();
            if let Err(e) = super::pg::spawn(listen(pool, sender, weak)) {
                tracing::error!("cannot listen for other hosts: {e}");
            }
            tx
        });
        Some(tx.subscribe())
    }
}

/// Keep a connection listening, reconnecting with backoff, until the
/// store is dropped.
#[cfg(feature = "postgres")]
async fn listen(
    pool: super::pg::Pool,
    tx: broadcast::Sender<Notice>,
    alive: std::sync::Weak<super::db::Db>,
) {
    let mut backoff = Duration::from_millis(100);
    while alive.strong_count() > 0 {
        let (events, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let connected: Result<(), StoreError> = async {
            let client = pool
                .connect_async(move |m| {
                    if let tokio_postgres::AsyncMessage::Notification(n) = m {
                        let _ = events.send((n.channel().to_owned(), n.payload().to_owned()));
                    }
                })
                .await?;
            client
                .batch_execute("LISTEN roost_events; LISTEN roost_queue; LISTEN roost_inbox")
                .await?;
            backoff = Duration::from_millis(100);
            let _ = tx.send(Notice::Reconnected);
            // Until the connection ends (the sender side is dropped with it).
            loop {
                tokio::select! {
                    m = rx.recv() => match m {
                        Some((channel, payload)) => {
                            for n in Notice::parse(&channel, &payload) {
                                let _ = tx.send(n);
                            }
                        }
                        None => return Ok(()),
                    },
                    () = tokio::time::sleep(Duration::from_secs(5)) => {
                        if alive.strong_count() == 0 || client.is_closed() {
                            return Ok(());
                        }
                    }
                }
            }
        }
        .await;
        if let Err(e) = connected {
            tracing::warn!("listening for other hosts: {e}; retrying in {backoff:?}");
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(5));
    }
}

/// No listener without a PostgreSQL client (and no pool to listen on).
#[cfg(not(feature = "postgres"))]
async fn listen(
    pool: super::pg::Pool,
    _: broadcast::Sender<Notice>,
    _: std::sync::Weak<super::db::Db>,
) {
    pool.never()
}
