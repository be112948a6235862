//! One rate limiter per provider profile, shared by every task of the
//! process: a parallel group of twenty subtasks asks the model no faster
//! than one task would be allowed to, and a 429 from the provider backs
//! the whole profile off — not only the task that got it, whose siblings
//! would otherwise keep hammering the same quota.
//!
//! Two limits, both optional: `requests_per_minute` (a token bucket,
//! `governor`, spaced evenly) and Roo's `rate_limit_seconds` (the least
//! time between two requests). The back-off after a 429 always applies.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use tokio::time::Instant;

use super::{ByteStream, LlmError, RequestBody, Transport};

/// How long a profile waits after a 429 that did not say (no
/// `Retry-After`).
const DEFAULT_BACK_OFF: Duration = Duration::from_secs(5);

/// A profile's limits, from its config.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Limits {
    /// At most this many requests a minute, evenly spaced.
    pub requests_per_minute: Option<u32>,
    /// At least this long between two requests (Roo's `rateLimitSeconds`).
    pub min_interval: Option<Duration>,
}

/// The limiter of one profile.
pub struct Limiter {
    bucket: Option<DefaultDirectRateLimiter>,
    min_interval: Duration,
    /// The earliest the next request may go by the spacing.
    next: Mutex<Instant>,
    /// No request goes before this (the provider's last 429).
    backoff: Mutex<Instant>,
}

impl Limiter {
    /// A limiter enforcing `limits`.
    pub fn new(limits: Limits) -> Self {
        let bucket = limits
            .requests_per_minute
            .and_then(NonZeroU32::new)
            .map(|rpm| RateLimiter::direct(Quota::per_minute(rpm).allow_burst(NonZeroU32::MIN)));
        Self {
            bucket,
            min_interval: limits.min_interval.unwrap_or_default(),
            next: Mutex::new(Instant::now()),
            backoff: Mutex::new(Instant::now()),
        }
    }

    fn lock(m: &Mutex<Instant>) -> std::sync::MutexGuard<'_, Instant> {
        m.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wait until a request may go: spaced from the one before, within
    /// the bucket, and after the profile's back-off — including one that
    /// began while this request waited its turn.
    pub async fn acquire(&self) {
        let at = {
            let mut next = Self::lock(&self.next);
            let at = (*next).max(Instant::now());
            *next = at + self.min_interval;
            at
        };
        tokio::time::sleep_until(at).await;
        loop {
            if let Some(bucket) = &self.bucket {
                bucket.until_ready().await;
            }
            let until = *Self::lock(&self.backoff);
            if until <= Instant::now() {
                return;
            }
            tokio::time::sleep_until(until).await;
        }
    }

    /// The provider said "too many requests": no request of the profile
    /// goes before `wait` has passed.
    pub fn back_off(&self, wait: Duration) {
        let until = Instant::now() + wait;
        let mut backoff = Self::lock(&self.backoff);
        if *backoff < until {
            *backoff = until;
        }
    }
}

/// The limiters of a process's profiles, made on first use.
#[derive(Default)]
pub struct Limiters(Mutex<HashMap<String, Arc<Limiter>>>);

impl Limiters {
    /// The limiter of the profile known as `key` (made with `limits` the
    /// first time; a profile's limits are read once).
    pub fn of(&self, key: &str, limits: Limits) -> Arc<Limiter> {
        let mut all = self.0.lock().unwrap_or_else(|p| p.into_inner());
        Arc::clone(
            all.entry(key.to_owned())
                .or_insert_with(|| Arc::new(Limiter::new(limits))),
        )
    }
}

/// A transport whose requests wait for their profile's limiter, and whose
/// 429s back the profile off.
pub struct Limited {
    inner: Arc<dyn Transport>,
    limiter: Arc<Limiter>,
}

impl Limited {
    /// `inner`, limited by `limiter`.
    pub fn new(inner: Arc<dyn Transport>, limiter: Arc<Limiter>) -> Self {
        Self { inner, limiter }
    }
}

#[async_trait::async_trait]
impl Transport for Limited {
    async fn send(&self, body: &RequestBody) -> Result<ByteStream, LlmError> {
        self.limiter.acquire().await;
        let sent = self.inner.send(body).await;
        if let Err(LlmError::Http {
            status: 429,
            retry_after,
            ..
        }) = &sent
        {
            let wait = retry_after.unwrap_or(DEFAULT_BACK_OFF);
            tracing::warn!(
                ?wait,
                "the provider is rate limiting: the profile backs off"
            );
            self.limiter.back_off(wait);
        }
        sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn requests_are_spaced_and_a_back_off_holds_everyone() {
        let l = Limiter::new(Limits {
            requests_per_minute: None,
            min_interval: Some(Duration::from_secs(2)),
        });
        let start = Instant::now();
        l.acquire().await;
        l.acquire().await;
        assert_eq!(start.elapsed(), Duration::from_secs(2));
        l.back_off(Duration::from_secs(10));
        l.acquire().await;
        assert!(start.elapsed() >= Duration::from_secs(12));
    }

    #[test]
    fn one_limiter_per_profile() {
        let all = Limiters::default();
        let a = all.of("p", Limits::default());
        let b = all.of("p", Limits::default());
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &all.of("q", Limits::default())));
    }
}
