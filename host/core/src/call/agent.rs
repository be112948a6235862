//! The agent: the services every task runs with ([`Services`], what the
//! tools below see) and the tools themselves (the [`Registry`]). It lives
//! above `tools/`, so the registry of executors never has to be named by
//! the layers the executors stand on.

use std::sync::Arc;

use crate::tools::Registry;
use crate::turn::Services;

/// The services tasks run with and the tools they are offered.
pub struct Agent {
    /// Runtime, store, hooks, asks, default limits and policies.
    pub services: Services,
    /// Every tool by name.
    pub registry: Arc<Registry>,
}

impl std::ops::Deref for Agent {
    type Target = Services;

    fn deref(&self) -> &Services {
        &self.services
    }
}
