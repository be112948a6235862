//! The editor's unsaved buffers, read through the client's
//! `fs/read_text_file` when it offers it: lent to a session's tasks so a
//! read shows the person's unsaved text beside the disk's. Read-only, and
//! only for a file the call was allowed to read (the dispatch asks);
//! an editor that does not answer in time is taken as holding nothing.

use std::path::Path;
use std::time::Duration;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::ReadTextFileRequest;
use futures::future::BoxFuture;
use roost_core::turn::EditorBuffers;

/// Longest an editor has to give a buffer before the read goes on
/// without it.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// One session's buffers, through its connection.
pub(crate) struct Buffers {
    cx: ConnectionTo<Client>,
    session: String,
}

impl Buffers {
    /// Session `session`'s buffers, asked over `cx`.
    pub(crate) fn new(cx: ConnectionTo<Client>, session: &str) -> Self {
        Self {
            cx,
            session: session.to_owned(),
        }
    }
}

impl EditorBuffers for Buffers {
    fn text(&self, path: &Path) -> BoxFuture<'static, Option<String>> {
        let request = ReadTextFileRequest::new(self.session.clone(), path.to_path_buf());
        let cx = self.cx.clone();
        Box::pin(async move {
            match tokio::time::timeout(READ_TIMEOUT, cx.send_request(request).block_task()).await {
                Ok(Ok(r)) => Some(r.content),
                Ok(Err(e)) => {
                    tracing::info!("the editor gave no buffer: {e}");
                    None
                }
                Err(_) => {
                    tracing::info!("the editor gave no buffer in time");
                    None
                }
            }
        })
    }
}
