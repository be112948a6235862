//! The most a tool's calls may be granted: an installed plugin's recorded
//! grant (the user approved it at install). Within it, each call still
//! gets only what its intent's scope allows.

use std::sync::Arc;

use roost_sandbox::capability::{Limits, NetworkGrant};

/// What a plugin's calls may be granted at most: an installed plugin's
/// recorded grant (the user approved it at install). Within it, each call
/// still gets only what its intent's scope allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    /// May read the workspace.
    pub read: bool,
    /// May write at all (where the scope allows).
    pub write: bool,
    /// Per-call limits, when tighter than the host's.
    pub limits: Option<Limits>,
    /// The origins its requests may reach and the secrets the host may put
    /// into them (with their values); `None`: no network.
    pub network: Option<Arc<NetworkGrant>>,
}

impl Access {
    /// Everything the intent allows, and no network: host-native tools,
    /// first-party plugins and components named on the command line.
    pub const FULL: Access = Access {
        read: true,
        write: true,
        limits: None,
        network: None,
    };

    /// `limits` narrowed by this access's own.
    pub fn limits(&self, host: Limits) -> Limits {
        match self.limits {
            None => host,
            Some(own) => Limits {
                deadline: own.deadline.min(host.deadline),
                memory_bytes: own.memory_bytes.min(host.memory_bytes),
                output_bytes: own.output_bytes.min(host.output_bytes),
            },
        }
    }
}
