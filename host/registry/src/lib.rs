//! Plugins from OCI registries. A plugin is published as an OCI artifact —
//! the component as an `application/wasm` layer (the Wasm OCI artifact
//! layout `wkg` uses), its `plugin.toml` and minisign signature as layers
//! of Roost's own media types — and installed by reference
//! (`oci://REGISTRY/REPOSITORY:TAG` or `@sha256:…`).
//!
//! A registry is outside input like any other, so the client is Roost's
//! own, small and bounded, over `reqwest`: a manifest and every layer have
//! a size bound checked before and while reading, every byte is checked
//! against its digest, a tag is resolved once and everything after it is
//! fetched by digest (a tag that moves mid-install changes nothing), a
//! redirect to another origin is refused, a transfer that stalls or
//! crawls is cut off, and credentials go only to the registry's own host
//! (never over plain HTTP beyond loopback). General-purpose clients
//! (`oci-client`) read manifests unbounded and follow redirects anywhere.

#![forbid(unsafe_code)]

pub mod artifact;
pub mod auth;
pub mod client;
pub mod cosign;
pub mod names;
pub mod reference;

pub use artifact::{Publish, Pulled};
pub use auth::{Credential, Credentials};
pub use client::{Client, Options};
pub use names::{Name, Resolver, WkgConfig};
pub use reference::{Digest, Reference};

/// Why a registry could not give or take a plugin. Each names what was
/// asked for; nothing is installed or kept from a failed transfer.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The text is not a plugin reference.
    #[error("`{text}` is not a registry reference: {detail}")]
    Reference {
        /// As given (bounded for display).
        text: String,
        /// What is wrong with it.
        detail: String,
    },
    /// The connection or the HTTP exchange failed.
    #[error("{url}: {detail}")]
    Transport {
        /// What was asked for.
        url: String,
        /// What failed.
        detail: String,
    },
    /// The registry answered with an error status.
    #[error("{url}: the registry answered {status}{detail}")]
    Status {
        /// What was asked for.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The registry's error message, if it gave one (one line, bounded).
        detail: String,
    },
    /// The registry wants credentials Roost does not have (or refused them).
    #[error("{registry}: {detail}")]
    Unauthorized {
        /// The registry.
        registry: String,
        /// What to do about it.
        detail: String,
    },
    /// More bytes than the bound allows (declared or sent).
    #[error("{what} is larger than the {limit}-byte bound{declared}")]
    TooLarge {
        /// What was being fetched.
        what: String,
        /// The bound.
        limit: u64,
        /// What the registry declared, when it declared more.
        declared: String,
    },
    /// The bytes are not the ones their digest names.
    #[error("{what}: the registry sent content whose digest is {actual}, not {expected}")]
    DigestMismatch {
        /// What was being fetched.
        what: String,
        /// The digest asked for.
        expected: String,
        /// The digest of what came.
        actual: String,
    },
    /// A redirect to another origin (scheme, host or port).
    #[error(
        "{from} redirected to {to}, another origin: refused (content is fetched only from the origin it was asked of)"
    )]
    Redirect {
        /// The URL that redirected.
        from: String,
        /// Where it pointed.
        to: String,
    },
    /// Too many redirects.
    #[error("{url}: more than {limit} redirects")]
    TooManyRedirects {
        /// The first URL.
        url: String,
        /// The bound.
        limit: usize,
    },
    /// A transfer that sent nothing for too long, or too little.
    #[error("{what}: {detail}")]
    Slow {
        /// What was being fetched.
        what: String,
        /// Stalled or too slow, with the figures.
        detail: String,
    },
    /// What the reference names is not a plugin (another media type, an
    /// index, a container image, a malformed manifest).
    #[error("{reference}: not a plugin: {detail}")]
    NotAPlugin {
        /// The reference.
        reference: String,
        /// Why.
        detail: String,
    },
    /// The registry is reached over plain HTTP without being allowed to.
    #[error(
        "{registry}: plain HTTP is not allowed for this registry (add it to `[plugins] insecure_registries` to allow it)"
    )]
    PlainHttp {
        /// The registry.
        registry: String,
    },
}

impl RegistryError {
    /// Whether the registry (or server) answered that what was asked for
    /// does not exist (404), as opposed to failing.
    pub fn is_not_found(&self) -> bool {
        matches!(self, RegistryError::Status { status: 404, .. })
    }
}

/// At most this many characters of outside text in an error.
const SHOWN: usize = 200;

/// `text` as one bounded line for an error message: control characters
/// become spaces, and it is cut at [`SHOWN`] characters.
pub fn shown(text: &str) -> String {
    let mut out: String = text
        .chars()
        .take(SHOWN)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if text.chars().count() > SHOWN {
        out.push('…');
    }
    out
}
