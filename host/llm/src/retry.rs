//! Exponential backoff with jitter, honouring the server's Retry-After.

use std::time::Duration;

/// How often and how patiently to retry a failed request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// Delay before the first retry.
    pub base_delay: Duration,
    /// Longest delay between attempts.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 5,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// Delay before attempt `attempt + 1` (attempt counts from 1): the
    /// server's Retry-After when given, else base·2^(attempt-1) with ±25%
    /// jitter, capped.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(d) = retry_after {
            return d.min(self.max_delay);
        }
        let exp = self
            .base_delay
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
        let capped = exp.min(self.max_delay);
        let jitter = 0.75 + 0.5 * jitter_unit();
        capped.mul_f64(jitter).min(self.max_delay)
    }
}

/// A number in [0, 1) that differs between calls; jitter only needs to
/// spread clients apart, not be unpredictable.
fn jitter_unit() -> f64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mixed = (u64::from(nanos)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11;
    mixed as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_exponentially_with_bounded_jitter_and_honours_retry_after() {
        let p = RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(1),
        };
        let d1 = p.delay(1, None);
        let d3 = p.delay(3, None);
        assert!(
            d1 >= Duration::from_millis(75) && d1 <= Duration::from_millis(125),
            "{d1:?}"
        );
        assert!(
            d3 >= Duration::from_millis(300) && d3 <= Duration::from_millis(500),
            "{d3:?}"
        );
        assert!(p.delay(30, None) <= Duration::from_secs(1));
        assert_eq!(
            p.delay(1, Some(Duration::from_millis(7))),
            Duration::from_millis(7)
        );
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(99))),
            Duration::from_secs(1)
        );
    }
}
