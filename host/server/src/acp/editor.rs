//! The editor at the other end, whichever protocol version it speaks: what
//! Roost's ACP front-end sends it (session updates, permission requests)
//! is built once, in protocol v1's types, and goes out as they are on a v1
//! connection, or converted ([`super::v2`]) on a draft-v2 one.

use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    RequestPermissionOutcome, RequestPermissionRequest, SessionNotification, SessionUpdate,
};
use agent_client_protocol::{Client, Error};
use roost_core::turn::EditorBuffers;

use super::buffers::Buffers;

/// A connection to the editor.
#[derive(Clone)]
pub(crate) enum Editor {
    /// Protocol v1.
    V1(agent_client_protocol::v1::ConnectionTo<Client>),
    /// Draft protocol v2 (`roost acp --acp-version 2`).
    V2(super::v2::V2Editor),
}

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

impl Editor {
    /// Send session `sid` an update.
    pub(crate) fn notify(&self, sid: &str, update: SessionUpdate) -> Result<(), Error> {
        match self {
            Self::V1(cx) => cx.send_notification(SessionNotification::new(sid.to_owned(), update)),
            Self::V2(v2) => v2.notify(sid, update),
        }
    }

    /// Ask the editor `request`, waiting at most `timeout`.
    pub(crate) async fn ask(&self, request: RequestPermissionRequest, timeout: Duration) -> Asked {
        let outcome = match self {
            Self::V1(cx) => {
                match tokio::time::timeout(timeout, cx.send_request(request).block_task()).await {
                    Err(_) => return Asked::TimedOut,
                    Ok(Err(e)) => return Asked::Failed(e.to_string()),
                    Ok(Ok(r)) => r.outcome,
                }
            }
            Self::V2(v2) => return v2.ask(request, timeout).await,
        };
        match outcome {
            RequestPermissionOutcome::Selected(s) => Asked::Chosen(s.option_id.0.to_string()),
            _ => Asked::Cancelled,
        }
    }

    /// Session `sid`'s unsaved buffers, when the editor offers them (v1's
    /// `fs/read_text_file`; draft v2 has no client file system).
    pub(crate) fn buffers(&self, sid: &str, offered: bool) -> Option<Arc<dyn EditorBuffers>> {
        match self {
            Self::V1(cx) if offered => Some(Arc::new(Buffers::new(cx.clone(), sid))),
            _ => None,
        }
    }
}
