//! Capabilities as data: a [`Grant`] says exactly what one tool call may
//! touch, and [`wasi`] turns it into that call's WASI context and nothing
//! more; its [`network`] part says which origins its `wasi:http` requests
//! may reach and which secrets the host may put into them. The host's own access to a workspace goes through [`Workspace`]
//! (directory handles, no symlinks out, no special files, bounded reads).
//! Scopes finer than a directory, and the [`authority`] files under a write
//! root, are held by a [`WriteGuard`] around the call; `.rooignore`
//! ([`RooIgnore`]) is checked on declared paths. A call holds a
//! [`WriteLease`] on its write roots, so calls whose roots overlap take
//! turns.
//!
//! # Guest path convention
//!
//! The workspace appears inside the sandbox at [`GUEST_WORKSPACE`]
//! (`/workspace`), read-only, when the grant allows reading. Each write root
//! `R` (a workspace-relative directory) is a separate read-write preopen at
//! `/workspace/R`; WASI resolves a path through the longest matching preopen,
//! so writes under `R` succeed and writes anywhere else hit the read-only
//! mount. Tools take and return workspace-relative paths.

pub mod authority;
pub mod dirfd;
mod grant;
mod guard;
mod hidden;
mod lease;
pub mod network;
mod rooignore;
mod top_entries;
mod tree;
pub mod wasi;
mod workspace;

pub use grant::{Grant, GrantError, Held, Limits};
pub use guard::{
    GuardBudget, GuardError, GuardReport, GuardRule, WriteGuard, rule, watch_authority_only,
};
pub use hidden::Hidden;
pub use lease::{WriteLease, WriteLeases};
pub use network::{NetworkGrant, Origin, SecretGrant, SecretValue};
pub use rooignore::{ROOIGNORE, RooIgnore};
pub use tree::{TreeChange, TreeStat};
pub use workspace::{RelPath, Workspace, WorkspaceError, WorkspaceId, WorkspacePin};

/// Guest path where the workspace is mounted.
pub const GUEST_WORKSPACE: &str = "/workspace";
