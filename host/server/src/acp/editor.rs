//! The editor at the other end, whichever protocol version it speaks: what
//! Roost's ACP front-end sends it (session updates, permission requests)
//! is built once, in protocol v1's types, and goes out through the
//! connection's [`Link`] — as it is on a v1 connection, converted on a
//! draft-v2 one (`super::v2`).

use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    RequestPermissionOutcome, RequestPermissionRequest, SessionNotification, SessionUpdate,
};
use agent_client_protocol::{Client, Error};
use futures::future::BoxFuture;
use roost_core::turn::EditorBuffers;

use super::buffers::Buffers;

/// How a permission request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Asked {
    /// The editor picked this option.
    Chosen(String),
    /// The editor cancelled the request (the prompt was cancelled).
    Cancelled,
    /// No answer in time.
    TimedOut,
    /// The editor could not be asked (why).
    Failed(String),
}

impl Asked {
    /// The option picked, if one was.
    pub(crate) fn chosen(&self) -> Option<&str> {
        match self {
            Self::Chosen(o) => Some(o),
            _ => None,
        }
    }
}

/// One protocol version's way to the editor.
pub(crate) trait Link: Send + Sync {
    /// Send session `sid` an update.
    fn notify(&self, sid: &str, update: SessionUpdate) -> Result<(), Error>;

    /// Ask the editor `request`, waiting at most `timeout`.
    fn ask(
        &self,
        request: RequestPermissionRequest,
        timeout: Duration,
    ) -> BoxFuture<'static, Asked>;

    /// Session `sid`'s unsaved buffers, when the editor `offered` them.
    fn buffers(&self, _sid: &str, _offered: bool) -> Option<Arc<dyn EditorBuffers>> {
        None
    }
}

/// A connection to the editor.
#[derive(Clone)]
pub(crate) struct Editor(Arc<dyn Link>);

impl Editor {
    /// The editor through `link`.
    pub(crate) fn new(link: impl Link + 'static) -> Self {
        Self(Arc::new(link))
    }

    /// The editor over a v1 connection.
    pub(crate) fn v1(cx: &ConnectionTo<Client>) -> Self {
        Self::new(V1(cx.clone()))
    }

    /// Send session `sid` an update.
    pub(crate) fn notify(&self, sid: &str, update: SessionUpdate) -> Result<(), Error> {
        self.0.notify(sid, update)
    }

    /// Ask the editor `request`, waiting at most `timeout`.
    pub(crate) async fn ask(&self, request: RequestPermissionRequest, timeout: Duration) -> Asked {
        self.0.ask(request, timeout).await
    }

    /// Session `sid`'s unsaved buffers, when the editor `offered` them
    /// (v1's `fs/read_text_file`; draft v2 has no client file system).
    pub(crate) fn buffers(&self, sid: &str, offered: bool) -> Option<Arc<dyn EditorBuffers>> {
        self.0.buffers(sid, offered)
    }
}

/// Protocol v1: the messages as they are.
struct V1(ConnectionTo<Client>);

impl Link for V1 {
    fn notify(&self, sid: &str, update: SessionUpdate) -> Result<(), Error> {
        self.0
            .send_notification(SessionNotification::new(sid.to_owned(), update))
    }

    fn ask(
        &self,
        request: RequestPermissionRequest,
        timeout: Duration,
    ) -> BoxFuture<'static, Asked> {
        let cx = self.0.clone();
        Box::pin(async move {
            match tokio::time::timeout(timeout, cx.send_request(request).block_task()).await {
                Err(_) => Asked::TimedOut,
                Ok(Err(e)) => Asked::Failed(e.to_string()),
                Ok(Ok(r)) => match r.outcome {
                    RequestPermissionOutcome::Selected(s) => {
                        Asked::Chosen(s.option_id.0.to_string())
                    }
                    _ => Asked::Cancelled,
                },
            }
        })
    }

    fn buffers(&self, sid: &str, offered: bool) -> Option<Arc<dyn EditorBuffers>> {
        offered.then(|| Arc::new(Buffers::new(self.0.clone(), sid)) as Arc<dyn EditorBuffers>)
    }
}
