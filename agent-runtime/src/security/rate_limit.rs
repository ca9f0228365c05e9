//! Rate limiting (docs/lap.md §3.3): the spec string, the limiter trait, and the default limiter on
//! `governor`.
//!
//! One token bucket per `"<bucket>:<key>"`: capacity = the count, continuous refill of count per
//! window, a new key starts full, a call consumes one token. Denied calls get
//! `retryAfterMs = ceil((1 - tokens) / (count / windowMs))`.

use std::fmt;
use std::num::NonZeroU32;
use std::str::FromStr;
use std::sync::Mutex;
use std::time::Duration;

use futures::future::{self, BoxFuture, FutureExt as _};
use governor::clock::{Clock as GovernorClock, DefaultClock, Reference as _};
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::DashMapStateStore;
use governor::Quota;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::error::ConfigError;
#[cfg(test)]
use crate::clock::SharedClock;

/// The unit of a rate-limit spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RateUnit {
    /// Per second.
    Second,
    /// Per minute.
    Minute,
    /// Per hour.
    Hour,
}

impl RateUnit {
    /// The window of the unit.
    pub const fn window(self) -> Duration {
        match self {
            RateUnit::Second => Duration::from_secs(1),
            RateUnit::Minute => Duration::from_secs(60),
            RateUnit::Hour => Duration::from_secs(3600),
        }
    }

    /// The spelling in a spec string (`second`, `minute`, `hour`).
    pub const fn as_str(self) -> &'static str {
        match self {
            RateUnit::Second => "second",
            RateUnit::Minute => "minute",
            RateUnit::Hour => "hour",
        }
    }
}

/// A rate limit `<count>/<unit>`, e.g. `30/minute` (the default).
///
/// Parsing accepts exactly `^\d+/(second|minute|hour)$` (singular units) with a count of at
/// least 1; anything else is a [`ConfigError::InvalidRateLimit`]. So is a count too large to
/// represent (beyond `u32`, or a refill period under one nanosecond).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RateLimitSpec {
    count: NonZeroU32,
    unit: RateUnit,
}

impl RateLimitSpec {
    /// `count` per `unit`.
    pub fn new(count: NonZeroU32, unit: RateUnit) -> Result<Self, ConfigError> {
        let spec = RateLimitSpec { count, unit };
        spec.quota()
            .map(|_| spec)
            .ok_or_else(|| ConfigError::InvalidRateLimit(spec.to_string()))
    }

    /// The bucket capacity (calls allowed at once).
    pub fn count(&self) -> u32 {
        self.count.get()
    }

    /// The unit.
    pub fn unit(&self) -> RateUnit {
        self.unit
    }

    /// The refill window (count tokens per window).
    pub fn window(&self) -> Duration {
        self.unit.window()
    }

    /// The governor quota: `Quota::with_period(window / count).allow_burst(count)`.
    fn quota(&self) -> Option<Quota> {
        Quota::with_period(self.window() / self.count.get()).map(|q| q.allow_burst(self.count))
    }
}

impl Default for RateLimitSpec {
    /// `30/minute`.
    fn default() -> Self {
        RateLimitSpec {
            count: NonZeroU32::MIN.saturating_add(29),
            unit: RateUnit::Minute,
        }
    }
}

impl FromStr for RateLimitSpec {
    type Err = ConfigError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let invalid = || ConfigError::InvalidRateLimit(s.to_owned());
        let (count, unit) = s.split_once('/').ok_or_else(invalid)?;
        if count.is_empty() || !count.bytes().all(|b| b.is_ascii_digit()) {
            return Err(invalid());
        }
        let unit = match unit {
            "second" => RateUnit::Second,
            "minute" => RateUnit::Minute,
            "hour" => RateUnit::Hour,
            _ => return Err(invalid()),
        };
        let count = count
            .parse::<u32>()
            .ok()
            .and_then(NonZeroU32::new)
            .ok_or_else(invalid)?;
        RateLimitSpec::new(count, unit).map_err(|_| invalid())
    }
}

impl fmt::Display for RateLimitSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.count, self.unit.as_str())
    }
}

impl Serialize for RateLimitSpec {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for RateLimitSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// The bucket namespace of a rate-limit key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Bucket {
    /// Per agent token (key `tid`): the LAP gate.
    Token,
    /// Per caller (key = client address): MCP session allocation.
    Identity,
    /// Per caller (key = identity, or the client address without one): `/agent/mint`. Its
    /// own namespace, so cookieless mints and MCP `initialize` from one address do not share
    /// a bucket.
    Mint,
    /// Per client address: failed authentications (a bearer or an MCP session id that does
    /// not verify). Taken only by failures; an empty bucket blocks the address's credentials
    /// before any lookup until it refills.
    AuthFailure,
}

impl Bucket {
    /// `token`, `identity`, `mint` or `auth-failure`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Bucket::Token => "token",
            Bucket::Identity => "identity",
            Bucket::Mint => "mint",
            Bucket::AuthFailure => "auth-failure",
        }
    }
}

/// A denied call: 429 `{"error":{"code":"rate-limited","retryAfterMs":N}}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("rate limited; retry after {retry_after_ms} ms")]
pub struct RateLimited {
    /// Milliseconds until a call would be allowed (at least 1).
    pub retry_after_ms: u64,
}

impl RateLimited {
    /// The MCP endpoint's `retry-after` header value in seconds: `max(1, ceil(N / 1000))`.
    pub fn retry_after_secs(&self) -> u64 {
        super::error::retry_after_secs(self.retry_after_ms)
    }
}

/// Decides whether a call may proceed.
///
/// `check` returns a `Send` future, so a limiter can await a shared store (Redis, a database);
/// an implementation writes `Box::pin(async move { … })`. The trait stays dyn-compatible and is
/// used as `Arc<dyn RateLimiter>`.
pub trait RateLimiter: Send + Sync {
    /// Consumes one token of `"<bucket>:<key>"`, or answers how long to wait.
    fn check<'a>(&'a self, key: &'a str, bucket: Bucket) -> BoxFuture<'a, Result<(), RateLimited>>;
}

impl<T: RateLimiter + ?Sized> RateLimiter for std::sync::Arc<T> {
    fn check<'a>(&'a self, key: &'a str, bucket: Bucket) -> BoxFuture<'a, Result<(), RateLimited>> {
        (**self).check(key, bucket)
    }
}

/// Rounds a wait up to whole milliseconds, at least 1.
fn ceil_ms(wait: Duration) -> u64 {
    let ms = wait.as_nanos().div_ceil(1_000_000);
    u64::try_from(ms).unwrap_or(u64::MAX).max(1)
}

type KeyedGovernor<C> = governor::RateLimiter<
    String,
    DashMapStateStore<String>,
    C,
    NoOpMiddleware<<C as GovernorClock>::Instant>,
>;

/// The default limiter: a `governor` keyed limiter with
/// `Quota::with_period(window / count).allow_burst(count)`, keyed by `"<bucket>:<key>"`.
/// Buckets idle for a whole window are dropped by `retain_recent()`, run at most once per
/// window from `check`.
///
/// The clock is governor's: its monotonic default in production, `FakeRelativeClock` in unit
/// tests, or the runtime's injectable clock through `RuntimeGovernorClock`.
pub struct GovernorRateLimiter<C: GovernorClock = DefaultClock> {
    spec: RateLimitSpec,
    limiter: KeyedGovernor<C>,
    last_sweep: Mutex<C::Instant>,
}

impl<C: GovernorClock> fmt::Debug for GovernorRateLimiter<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GovernorRateLimiter")
            .field("spec", &self.spec.to_string())
            .field("tracked_keys", &self.limiter.len())
            .finish()
    }
}

impl GovernorRateLimiter<DefaultClock> {
    /// A limiter for `spec` on governor's default monotonic clock.
    pub fn new(spec: RateLimitSpec) -> Self {
        Self::with_clock(spec, DefaultClock::default())
    }
}

impl Default for GovernorRateLimiter<DefaultClock> {
    /// `30/minute` on the default clock.
    fn default() -> Self {
        Self::new(RateLimitSpec::default())
    }
}

impl<C: GovernorClock> GovernorRateLimiter<C> {
    /// A limiter for `spec` on `clock`.
    pub fn with_clock(spec: RateLimitSpec, clock: C) -> Self {
        // `RateLimitSpec` only exists when its quota does; the fallback keeps this total.
        let quota = spec
            .quota()
            .unwrap_or_else(|| Quota::per_hour(NonZeroU32::MIN));
        let limiter = KeyedGovernor::<C>::dashmap_with_clock(quota, clock);
        let start = limiter.clock().now();
        GovernorRateLimiter {
            spec,
            limiter,
            last_sweep: Mutex::new(start),
        }
    }

    /// The configured spec.
    pub fn spec(&self) -> RateLimitSpec {
        self.spec
    }

    /// How many buckets are currently kept.
    pub fn tracked_buckets(&self) -> usize {
        self.limiter.len()
    }

    fn sweep_if_due(&self, now: C::Instant) {
        // A contended lock means another caller is sweeping (or just checked): skip.
        let Ok(mut last) = self.last_sweep.try_lock() else {
            return;
        };
        if Duration::from(now.duration_since(*last)) >= self.spec.window() {
            self.limiter.retain_recent();
            *last = now;
        }
    }

    /// Consumes one token of `"<bucket>:<key>"`, or answers how long to wait, synchronously
    /// (see [`RateLimiter::check`]): governor never waits.
    pub fn check(&self, key: &str, bucket: Bucket) -> Result<(), RateLimited> {
        self.sweep_if_due(self.limiter.clock().now());
        // Pushed, not `format!`ed: the formatting machinery cost more than the check.
        let bucket = bucket.as_str();
        let mut bucket_key = String::with_capacity(bucket.len() + 1 + key.len());
        bucket_key.push_str(bucket);
        bucket_key.push(':');
        bucket_key.push_str(key);
        self.limiter.check_key(&bucket_key).map_err(|denied| {
            let wait = denied.wait_time_from(self.limiter.clock().now());
            RateLimited {
                retry_after_ms: ceil_ms(wait),
            }
        })
    }
}

impl<C> RateLimiter for GovernorRateLimiter<C>
where
    C: GovernorClock + Send + Sync,
    C::Instant: Send + Sync,
{
    fn check<'a>(&'a self, key: &'a str, bucket: Bucket) -> BoxFuture<'a, Result<(), RateLimited>> {
        future::ready(GovernorRateLimiter::check(self, key, bucket)).boxed()
    }
}

#[cfg(test)]
/// Adapts the runtime's injectable [`crate::clock::Clock`] (milliseconds since the epoch) to
/// governor, so that a limiter follows a `ManualClock` in tests.
#[derive(Clone)]
pub(super) struct RuntimeGovernorClock(pub SharedClock);

#[cfg(test)]
impl fmt::Debug for RuntimeGovernorClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RuntimeGovernorClock")
    }
}

#[cfg(test)]
impl GovernorClock for RuntimeGovernorClock {
    type Instant = Duration;

    fn now(&self) -> Duration {
        Duration::from_millis(self.0.now_ms())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use governor::clock::FakeRelativeClock;
    use std::sync::Arc;

    fn spec(s: &str) -> RateLimitSpec {
        s.parse().unwrap()
    }

    fn limiter(s: &str) -> (GovernorRateLimiter<FakeRelativeClock>, FakeRelativeClock) {
        let clock = FakeRelativeClock::default();
        (
            GovernorRateLimiter::with_clock(spec(s), clock.clone()),
            clock,
        )
    }

    #[test]
    fn spec_parsing() {
        assert_eq!(spec("5/second").count(), 5);
        assert_eq!(spec("5/second").window(), Duration::from_secs(1));
        assert_eq!(spec("30/minute").window(), Duration::from_secs(60));
        assert_eq!(spec("1/hour").window(), Duration::from_secs(3600));
        assert_eq!(spec("007/minute").count(), 7);
        assert_eq!(spec("100000/minute").count(), 100_000);
        assert_eq!(RateLimitSpec::default(), spec("30/minute"));
        assert_eq!(spec("12/hour").to_string(), "12/hour");
        for bad in [
            "5/seconds",
            "5/min",
            "x/minute",
            "0/minute",
            "000/second",
            "",
            "/minute",
            "5",
            "5/",
            " 5/minute",
            "5/minute ",
            "+5/minute",
            "-5/minute",
            "5/Minute",
            "5.0/minute",
            "5/minute/hour",
            "99999999999/minute",
            "4000000000/second",
        ] {
            assert_eq!(
                bad.parse::<RateLimitSpec>(),
                Err(ConfigError::InvalidRateLimit(bad.to_owned())),
                "{bad}"
            );
        }
    }

    #[test]
    fn spec_serde_is_the_string() {
        assert_eq!(
            serde_json::to_string(&spec("3/minute")).unwrap(),
            "\"3/minute\""
        );
        let back: RateLimitSpec = serde_json::from_str("\"3/minute\"").unwrap();
        assert_eq!(back, spec("3/minute"));
        assert!(serde_json::from_str::<RateLimitSpec>("\"0/minute\"").is_err());
    }

    #[test]
    fn five_per_second_allows_five_then_denies() {
        let (l, _) = limiter("5/second");
        for i in 0..5 {
            assert_eq!(l.check("k", Bucket::Token), Ok(()), "call {i}");
        }
        assert!(l.check("k", Bucket::Token).is_err());
    }

    #[test]
    fn two_per_second_retry_after_and_refill() {
        let (l, clock) = limiter("2/second");
        assert!(l.check("k", Bucket::Identity).is_ok());
        assert!(l.check("k", Bucket::Identity).is_ok());
        assert_eq!(
            l.check("k", Bucket::Identity),
            Err(RateLimited {
                retry_after_ms: 500
            })
        );
        // Partial refill: 200 ms later the wait is 300 ms.
        clock.advance(Duration::from_millis(200));
        assert_eq!(
            l.check("k", Bucket::Identity),
            Err(RateLimited {
                retry_after_ms: 300
            })
        );
        // A whole window later the bucket is full again.
        clock.advance(Duration::from_millis(800));
        assert!(l.check("k", Bucket::Identity).is_ok());
        assert!(l.check("k", Bucket::Identity).is_ok());
        assert!(l.check("k", Bucket::Identity).is_err());
    }

    #[test]
    fn retry_after_rounds_up() {
        let (l, clock) = limiter("1/second");
        assert!(l.check("k", Bucket::Token).is_ok());
        clock.advance(Duration::from_nanos(1));
        assert_eq!(
            l.check("k", Bucket::Token),
            Err(RateLimited {
                retry_after_ms: 1000
            })
        );
        clock.advance(Duration::from_nanos(999_999_000));
        assert_eq!(
            l.check("k", Bucket::Token),
            Err(RateLimited { retry_after_ms: 1 })
        );
        assert_eq!(ceil_ms(Duration::from_micros(1500)), 2);
        assert_eq!(ceil_ms(Duration::from_millis(3)), 3);
        assert_eq!(ceil_ms(Duration::ZERO), 1);
    }

    #[test]
    fn buckets_and_keys_are_independent() {
        let (l, _) = limiter("1/minute");
        assert!(l.check("same", Bucket::Token).is_ok());
        assert!(l.check("same", Bucket::Token).is_err());
        assert!(l.check("same", Bucket::Identity).is_ok());
        assert!(l.check("same", Bucket::Identity).is_err());
        assert!(l.check("other", Bucket::Token).is_ok());
        assert!(l.check("other", Bucket::Identity).is_ok());
        // The namespaces cannot collide through the key text either.
        assert!(l.check("x", Bucket::Token).is_ok());
        assert!(l.check("token:x", Bucket::Identity).is_ok());
        assert_eq!(
            l.check("same", Bucket::Token),
            Err(RateLimited {
                retry_after_ms: 60_000
            })
        );
    }

    #[test]
    fn idle_buckets_are_swept_at_most_once_per_window() {
        let (l, clock) = limiter("2/second");
        assert!(l.check("a", Bucket::Token).is_ok());
        assert_eq!(l.tracked_buckets(), 1);
        // Less than a window since the limiter started: no sweep yet.
        clock.advance(Duration::from_millis(999));
        assert!(l.check("b", Bucket::Token).is_ok());
        assert_eq!(l.tracked_buckets(), 2);
        // A window has passed: the sweep drops `a` (full again for a while), keeps `b`.
        clock.advance(Duration::from_millis(1));
        assert!(l.check("c", Bucket::Token).is_ok());
        assert_eq!(l.tracked_buckets(), 2);
        // Within the next window no further sweep, even though `b` becomes idle.
        clock.advance(Duration::from_millis(900));
        assert!(l.check("d", Bucket::Token).is_ok());
        assert_eq!(l.tracked_buckets(), 3);
        clock.advance(Duration::from_millis(100));
        assert!(l.check("e", Bucket::Token).is_ok());
        // At t = 2000 ms: b (tat 1499) and c (tat 1500) are dropped; d and e stay.
        assert_eq!(l.tracked_buckets(), 2);
        // A dropped bucket starts full.
        assert!(l.check("a", Bucket::Token).is_ok());
        assert!(l.check("a", Bucket::Token).is_ok());
        assert!(l.check("a", Bucket::Token).is_err());
    }

    #[test]
    fn follows_the_runtime_clock() {
        let manual = ManualClock::new(1_700_000_000_000);
        let shared: SharedClock = Arc::new(manual.clone());
        let l = GovernorRateLimiter::with_clock(spec("2/second"), RuntimeGovernorClock(shared));
        assert!(l.check("k", Bucket::Token).is_ok());
        assert!(l.check("k", Bucket::Token).is_ok());
        assert_eq!(
            l.check("k", Bucket::Token),
            Err(RateLimited {
                retry_after_ms: 500
            })
        );
        manual.advance(1_000);
        assert!(l.check("k", Bucket::Token).is_ok());
    }

    #[tokio::test]
    async fn works_as_a_trait_object_on_the_default_clock() {
        let l: Arc<dyn RateLimiter> = Arc::new(GovernorRateLimiter::new(spec("2/second")));
        assert!(l.check("k", Bucket::Token).await.is_ok());
        assert!(l.check("k", Bucket::Token).await.is_ok());
        let denied = l.check("k", Bucket::Token).await.unwrap_err();
        // Real time passes between the calls; the wait is at most the refill period.
        assert!((1..=500).contains(&denied.retry_after_ms), "{denied:?}");
    }

    #[test]
    fn rate_limited_retry_after_secs() {
        // Its answer as an `ApiError`: `ops::error`'s tests.
        let denied = RateLimited {
            retry_after_ms: 1234,
        };
        assert_eq!(denied.retry_after_secs(), 2);
        assert_eq!(RateLimited { retry_after_ms: 1 }.retry_after_secs(), 1);
        assert_eq!(
            RateLimited {
                retry_after_ms: 3000
            }
            .retry_after_secs(),
            3
        );
    }
}
