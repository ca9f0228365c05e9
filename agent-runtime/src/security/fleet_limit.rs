//! Rate limits that hold for a fleet of replicas on one PostgreSQL store (`docs/stores.md`
//! §Limits across replicas): each `"<limit>:<bucket>:<key>"` has one shared token bucket in the
//! store
//! (the same bucket as [`super::GovernorRateLimiter`]'s: capacity = the count, continuous
//! refill of count per window), and a replica takes tokens from it in **slices**: one store
//! round trip leases up to a slice (a 64th of the count, at least one), spent locally, call by
//! call, until it is gone; then the next lease. An empty bucket answers how long until a token
//! refills, and the replica refuses that key locally until then (a flood of refused calls costs
//! no round trips).
//!
//! What a fleet can take beyond the allowance is what its replicas hold leased and unspent, at
//! most one slice each (a lease is spent within one window or dropped): with 3 replicas, 3/64
//! of the count. What a client can be refused below it is the same slices, leased by replicas
//! it no longer calls.
//!
//! A store that cannot be reached refuses the call ([`Refusal::Unavailable`]): never unlimited.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use parking_lot::Mutex;

use super::rate_limit::{Bucket, RateLimitSpec, RateLimited};
use super::store_error::{StoreError, StoreResult};

/// The longest a lease's round trip may take before the call is refused as unavailable.
const LEASE_TIMEOUT: Duration = Duration::from_secs(5);

/// The local entries are swept of spent and lapsed ones at most this often.
const LOCAL_SWEEP: Duration = Duration::from_secs(1);

/// The store's rows of full buckets are deleted at most this often (by each replica).
const STORE_SWEEP: Duration = Duration::from_secs(60);

/// What a lease of tokens got from the shared bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Lease {
    /// Tokens taken (0: the bucket is empty).
    pub(crate) granted: u32,
    /// With none granted: milliseconds until one token refills (at least 1).
    pub(crate) retry_after_ms: u64,
}

/// Where the shared buckets live: the PostgreSQL store's `agent_rate_budgets`.
pub(crate) trait RateBudgets: Send + Sync {
    /// Refills bucket `name` (capacity `capacity`, refilled over `window_ms`) to the store's
    /// clock, then takes up to `want` whole tokens from it, in one statement.
    fn lease<'a>(
        &'a self,
        name: &'a str,
        capacity: u32,
        window_ms: u64,
        want: u32,
    ) -> BoxFuture<'a, StoreResult<Lease>>;

    /// Deletes the buckets that are full again (they start full when next used); answers how
    /// many.
    fn sweep_budgets(&self) -> BoxFuture<'_, StoreResult<u64>>;
}

/// Why a call was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The bucket is empty: 429 with `retryAfterMs`.
    Limited(RateLimited),
    /// The shared bucket could not be read: the call is refused (fail closed).
    Unavailable(StoreError),
}

impl From<RateLimited> for Refusal {
    fn from(limited: RateLimited) -> Self {
        Refusal::Limited(limited)
    }
}

/// One key's tokens on this replica.
#[derive(Debug)]
struct Local {
    /// Leased tokens not spent yet.
    left: u32,
    /// When the leased tokens lapse (one window after the lease).
    lapses: Instant,
    /// Refused without asking the store until then (the bucket was empty).
    refused_until: Option<Instant>,
}

/// A rate limit shared by the replicas of a fleet through [`RateBudgets`].
pub(crate) struct FleetLimiter {
    /// Which limit this is (`rate`, `anonymous-mint`): the first part of its buckets' names,
    /// so two limits on the same bucket and key never share a row.
    limit: &'static str,
    spec: RateLimitSpec,
    store: Arc<dyn RateBudgets>,
    slice: u32,
    local: Mutex<Locals>,
}

#[derive(Debug)]
struct Locals {
    keys: HashMap<String, Local>,
    swept: Instant,
    store_swept: Instant,
}

impl std::fmt::Debug for FleetLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetLimiter")
            .field("spec", &self.spec.to_string())
            .field("slice", &self.slice)
            .finish_non_exhaustive()
    }
}

/// The slice a replica leases at once for `spec`: a 64th of the count, at least one.
pub(crate) fn slice_of(spec: RateLimitSpec) -> u32 {
    (spec.count() / 64).max(1)
}

impl FleetLimiter {
    /// Limit `limit` of `spec`, drawing from `store`.
    pub(crate) fn new(
        limit: &'static str,
        spec: RateLimitSpec,
        store: Arc<dyn RateBudgets>,
    ) -> Self {
        let now = Instant::now();
        FleetLimiter {
            limit,
            spec,
            store,
            slice: slice_of(spec),
            local: Mutex::new(Locals {
                keys: HashMap::new(),
                swept: now,
                store_swept: now,
            }),
        }
    }

    /// Takes one token of `"<limit>:<bucket>:<key>"`: from this replica's lease when it has
    /// one, else from the shared bucket (one round trip, leasing a slice).
    pub(crate) async fn check(&self, key: &str, bucket: Bucket) -> Result<(), Refusal> {
        let bucket = bucket.as_str();
        let mut name = String::with_capacity(self.limit.len() + bucket.len() + 2 + key.len());
        name.push_str(self.limit);
        name.push(':');
        name.push_str(bucket);
        name.push(':');
        name.push_str(key);
        let now = Instant::now();
        let sweep_store = {
            let mut locals = self.local.lock();
            let sweep_store = locals.sweep(now);
            if let Some(local) = locals.keys.get_mut(&name) {
                if let Some(until) = local.refused_until {
                    if until > now {
                        return Err(Refusal::Limited(RateLimited {
                            retry_after_ms: ceil_ms(until - now),
                        }));
                    }
                    local.refused_until = None;
                }
                if local.left > 0 && local.lapses > now {
                    local.left -= 1;
                    return Ok(());
                }
            }
            sweep_store
        };
        if sweep_store {
            let store = self.store.clone();
            tokio::spawn(async move {
                if let Err(e) = store.sweep_budgets().await {
                    tracing::warn!(target: "tea_agent_runtime::store", "sweeping the rate budgets failed: {e}");
                }
            });
        }
        let window_ms = u64::try_from(self.spec.window().as_millis()).unwrap_or(u64::MAX);
        let lease = self
            .store
            .lease(&name, self.spec.count(), window_ms, self.slice);
        let lease = match tokio::time::timeout(LEASE_TIMEOUT, lease).await {
            Ok(Ok(lease)) => lease,
            Ok(Err(e)) => return Err(Refusal::Unavailable(e)),
            Err(_) => {
                return Err(Refusal::Unavailable(StoreError::Database(format!(
                    "no answer within {} s",
                    LEASE_TIMEOUT.as_secs()
                ))))
            }
        };
        let now = Instant::now();
        let mut locals = self.local.lock();
        let local = locals.keys.entry(name).or_insert(Local {
            left: 0,
            lapses: now,
            refused_until: None,
        });
        if lease.granted == 0 {
            let wait = Duration::from_millis(lease.retry_after_ms.max(1));
            local.refused_until = Some(now + wait);
            return Err(Refusal::Limited(RateLimited {
                retry_after_ms: lease.retry_after_ms.max(1),
            }));
        }
        // Tokens still held (another call leased meanwhile) are kept with the new ones.
        if local.lapses <= now {
            local.left = 0;
        }
        local.left = local.left.saturating_add(lease.granted - 1);
        local.lapses = now + self.spec.window();
        local.refused_until = None;
        Ok(())
    }

    /// How many keys this replica holds tokens or a refusal for.
    #[cfg(test)]
    fn tracked(&self) -> usize {
        self.local.lock().keys.len()
    }
}

impl Locals {
    /// Drops the keys with nothing left to spend and no refusal running (at most once per
    /// [`LOCAL_SWEEP`]); answers whether the store's full buckets are due for a sweep.
    fn sweep(&mut self, now: Instant) -> bool {
        if now.duration_since(self.swept) >= LOCAL_SWEEP {
            self.keys.retain(|_, local| {
                (local.left > 0 && local.lapses > now)
                    || local.refused_until.is_some_and(|until| until > now)
            });
            self.swept = now;
        }
        if now.duration_since(self.store_swept) >= STORE_SWEEP {
            self.store_swept = now;
            return true;
        }
        false
    }
}

/// Rounds a wait up to whole milliseconds, at least 1.
fn ceil_ms(wait: Duration) -> u64 {
    let ms = wait.as_nanos().div_ceil(1_000_000);
    u64::try_from(ms).unwrap_or(u64::MAX).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    /// The shared bucket's arithmetic in the process (what PostgreSQL's statement does), with
    /// a frozen clock: no refill during a test.
    #[derive(Default)]
    struct Budgets {
        tokens: Mutex<HashMap<String, f64>>,
        leases: AtomicUsize,
        down: AtomicBool,
    }

    impl RateBudgets for Budgets {
        fn lease<'a>(
            &'a self,
            name: &'a str,
            capacity: u32,
            _window_ms: u64,
            want: u32,
        ) -> BoxFuture<'a, StoreResult<Lease>> {
            Box::pin(async move {
                if self.down.load(Ordering::SeqCst) {
                    return Err(StoreError::Database("connection refused".into()));
                }
                self.leases.fetch_add(1, Ordering::SeqCst);
                let mut tokens = self.tokens.lock();
                let left = tokens.entry(name.to_owned()).or_insert(f64::from(capacity));
                let granted = (left.floor() as u32).min(want);
                *left -= f64::from(granted);
                Ok(Lease {
                    granted,
                    retry_after_ms: if granted == 0 { 1000 } else { 0 },
                })
            })
        }

        fn sweep_budgets(&self) -> BoxFuture<'_, StoreResult<u64>> {
            Box::pin(async { Ok(0) })
        }
    }

    fn spec(s: &str) -> RateLimitSpec {
        s.parse().expect("spec")
    }

    #[test]
    fn slices_are_a_64th_of_the_count() {
        assert_eq!(slice_of(spec("30/minute")), 1);
        assert_eq!(slice_of(spec("64/minute")), 1);
        assert_eq!(slice_of(spec("640/minute")), 10);
        assert_eq!(slice_of(spec("100000/second")), 1562);
    }

    #[tokio::test]
    async fn three_replicas_share_one_allowance() {
        let store = Arc::new(Budgets::default());
        let replicas: Vec<FleetLimiter> = (0..3)
            .map(|_| FleetLimiter::new("rate", spec("640/minute"), store.clone()))
            .collect();
        let mut allowed = 0;
        for i in 0..3000 {
            if replicas[i % 3].check("t", Bucket::Token).await.is_ok() {
                allowed += 1;
            }
        }
        // Never more than the bucket gave out; less by at most the slices held unspent.
        assert!((640 - 3 * 10..=640).contains(&allowed), "{allowed}");
        // One round trip per slice, and none for the refusals after the first per replica.
        assert!(store.leases.load(Ordering::SeqCst) <= 64 + 3 + 3);
        // Another key has its own bucket.
        assert!(replicas[0].check("u", Bucket::Token).await.is_ok());
        assert!(replicas[0].check("t", Bucket::Identity).await.is_ok());
    }

    #[tokio::test]
    async fn a_refusal_says_when_and_is_kept_locally() {
        let store = Arc::new(Budgets::default());
        let limiter = FleetLimiter::new("rate", spec("2/minute"), store.clone());
        assert!(limiter.check("k", Bucket::Mint).await.is_ok());
        assert!(limiter.check("k", Bucket::Mint).await.is_ok());
        let Err(Refusal::Limited(limited)) = limiter.check("k", Bucket::Mint).await else {
            panic!("the third is refused");
        };
        assert!((1..=1000).contains(&limited.retry_after_ms), "{limited:?}");
        let leases = store.leases.load(Ordering::SeqCst);
        assert!(limiter.check("k", Bucket::Mint).await.is_err());
        assert_eq!(store.leases.load(Ordering::SeqCst), leases);
        assert_eq!(limiter.tracked(), 1);
    }

    #[tokio::test]
    async fn an_unreachable_store_refuses() {
        let store = Arc::new(Budgets::default());
        let limiter = FleetLimiter::new("rate", spec("100/minute"), store.clone());
        assert!(limiter.check("k", Bucket::Token).await.is_ok());
        store.down.store(true, Ordering::SeqCst);
        // Its slice of one is spent: the next call needs the store, and is refused.
        match limiter.check("k", Bucket::Token).await {
            Err(Refusal::Unavailable(StoreError::Database(reason))) => {
                assert!(reason.contains("connection refused"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        store.down.store(false, Ordering::SeqCst);
        assert!(limiter.check("k", Bucket::Token).await.is_ok());
    }
}
