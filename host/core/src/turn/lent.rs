//! What a front-end's session lends the tasks it runs, and their
//! subtasks: an editor's own MCP servers, and its unsaved buffers to read.
//! Held in memory for the run, never stored: a task resumed by another
//! front-end (or after a crash) runs without them until its session lends
//! them again.

use std::path::Path;
use std::sync::Arc;

use futures::future::BoxFuture;

use crate::mcp::SessionMcp;

/// The text a front-end holds for a file of the workspace: an editor's
/// buffer, with the changes not saved yet. Read-only; asked only for a
/// file the call was allowed to read.
pub trait EditorBuffers: Send + Sync {
    /// The text of the file at `path` (absolute, inside the workspace) as
    /// the front-end holds it, or `None` when it holds none or cannot say
    /// in time.
    fn text(&self, path: &Path) -> BoxFuture<'static, Option<String>>;
}

/// What a front-end's session lends a task (nothing, by default).
#[derive(Clone, Default)]
pub struct Lent {
    /// Its MCP servers, offered beside the workspace's.
    pub mcp: Option<Arc<SessionMcp>>,
    /// Its buffers, whose unsaved changes the reads show.
    pub buffers: Option<Arc<dyn EditorBuffers>>,
}

impl std::fmt::Debug for Lent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lent")
            .field("mcp", &self.mcp.is_some())
            .field("buffers", &self.buffers.is_some())
            .finish()
    }
}
