//! What `/metrics` serves and who may read it (`roost serve --metrics`):
//! the process's metrics in the Prometheus text format, and the token a
//! scrape must bring off loopback. The route itself is [`crate::scrape`].

use roost_core::telemetry::Scrape;

/// The page and who may read it.
#[derive(Clone)]
pub struct MetricsPage {
    /// The metrics as a scrape reads them.
    pub scrape: Scrape,
    /// The bearer token a scrape must bring (its hash: compared in
    /// constant time); none: any caller that reaches a loopback server.
    token: Option<blake3::Hash>,
}

impl std::fmt::Debug for MetricsPage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsPage")
            .field("token", &self.token.is_some())
            .finish()
    }
}

impl MetricsPage {
    /// The page of `scrape`, read with `token` (none: loopback only).
    pub fn new(scrape: Scrape, token: Option<&str>) -> Self {
        Self {
            scrape,
            token: token.map(|t| blake3::hash(t.trim().as_bytes())),
        }
    }

    /// Whether it needs a token.
    pub fn gated(&self) -> bool {
        self.token.is_some()
    }

    /// Whether a request bearing `token` may read it.
    pub(crate) fn admits(&self, token: Option<&str>) -> bool {
        match &self.token {
            None => true,
            Some(want) => token.is_some_and(|given| blake3::hash(given.as_bytes()) == *want),
        }
    }
}
