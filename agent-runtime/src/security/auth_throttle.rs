//! Failed authentications per client address (`docs/security.md` §Rate limits): a bearer, a
//! `connect_session` token or an MCP session id that does not verify takes one from the
//! address's `auth-failure` bucket of the rate limiter. Once the bucket is empty the address is
//! blocked until it refills: its credentials are refused with 429 before any store lookup, and
//! nothing more is audited for it meanwhile, so a flood of bad credentials costs neither store
//! reads nor audit lines beyond the bucket's rate.

use parking_lot::Mutex;
use std::collections::HashMap;

use super::rate_limit::{Bucket, RateLimited, RateLimiter};

/// The most blocked addresses remembered at once; past it, the block ending first is forgotten.
const MAX_BLOCKED: usize = 4096;

/// An address blocked for failing too often.
#[derive(Debug, Clone, Copy)]
struct Block {
    /// Until when (ms since the epoch).
    until: u64,
    /// Credentials refused unchecked meanwhile (reported with the next block of the address).
    refused: u64,
}

/// What a failure did to its address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Counted; the address may go on (the failure is audited as usual).
    Counted,
    /// The address's failures are spent: it is now blocked for `retry_after_ms` (audited once,
    /// with the credentials `refused` unchecked during its previous block).
    Blocked {
        /// How long the block lasts.
        retry_after_ms: u64,
        /// Credentials refused during the address's previous block.
        refused: u64,
    },
}

/// The addresses blocked for failed authentications.
#[derive(Debug, Default)]
pub(crate) struct AuthThrottle {
    blocked: Mutex<HashMap<String, Block>>,
}

impl AuthThrottle {
    /// Before a credential of `address` is looked up at `now`: 429 while the address is
    /// blocked (the refusal is counted, not audited). `address` is called only when some
    /// address is blocked: the usual call, with nothing blocked, neither formats nor looks one
    /// up.
    pub(crate) fn check_by(
        &self,
        address: impl FnOnce() -> String,
        now: u64,
    ) -> Result<(), RateLimited> {
        let mut blocked = self.blocked.lock();
        if blocked.is_empty() {
            return Ok(());
        }
        match blocked.get_mut(&address()) {
            Some(block) if block.until > now => {
                block.refused += 1;
                crate::telemetry::rate_limited(Bucket::AuthFailure.as_str());
                Err(RateLimited {
                    retry_after_ms: block.until - now,
                })
            }
            _ => Ok(()),
        }
    }

    /// A credential of `address` failed at `now`: one taken from its `auth-failure` bucket;
    /// when none is left, the address is blocked until the bucket has one again.
    pub(crate) async fn failed(
        &self,
        limiter: &dyn RateLimiter,
        address: &str,
        now: u64,
    ) -> Failure {
        let Err(limited) = limiter.check(address, Bucket::AuthFailure).await else {
            return Failure::Counted;
        };
        let mut blocked = self.blocked.lock();
        let refused = blocked.get(address).map(|b| b.refused).unwrap_or_default();
        if blocked.len() >= MAX_BLOCKED && !blocked.contains_key(address) {
            blocked.retain(|_, b| b.until > now);
            if blocked.len() >= MAX_BLOCKED {
                let first = blocked
                    .iter()
                    .min_by_key(|(_, b)| b.until)
                    .map(|(a, _)| a.clone());
                if let Some(first) = first {
                    blocked.remove(&first);
                }
            }
        }
        blocked.insert(
            address.to_owned(),
            Block {
                until: now.saturating_add(limited.retry_after_ms),
                refused: 0,
            },
        );
        Failure::Blocked {
            retry_after_ms: limited.retry_after_ms,
            refused,
        }
    }

    /// How many addresses are remembered as blocked.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.blocked.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::GovernorRateLimiter;

    #[tokio::test]
    async fn an_address_is_blocked_once_its_failures_are_spent_and_only_it() {
        let limiter = GovernorRateLimiter::new("3/minute".parse().expect("spec"));
        let throttle = AuthThrottle::default();
        for _ in 0..3 {
            assert_eq!(throttle.check_by(|| "a".into(), 0), Ok(()));
            assert_eq!(throttle.failed(&limiter, "a", 0).await, Failure::Counted);
        }
        assert_eq!(throttle.check_by(|| "a".into(), 0), Ok(()));
        let Failure::Blocked {
            retry_after_ms,
            refused: 0,
        } = throttle.failed(&limiter, "a", 0).await
        else {
            panic!("the fourth failure blocks");
        };
        assert!((1..=20_000).contains(&retry_after_ms), "{retry_after_ms}");
        for _ in 0..5 {
            assert!(throttle.check_by(|| "a".into(), 10).is_err());
        }
        assert_eq!(throttle.check_by(|| "b".into(), 10), Ok(()));
        // The block ends with the wait; the refusals meanwhile are reported with the next one.
        assert_eq!(throttle.check_by(|| "a".into(), retry_after_ms), Ok(()));
        let next = throttle.failed(&limiter, "a", retry_after_ms).await;
        assert!(
            matches!(next, Failure::Blocked { refused: 5, .. }),
            "{next:?}"
        );
    }

    #[tokio::test]
    async fn blocked_addresses_are_bounded() {
        let limiter = GovernorRateLimiter::new("1/hour".parse().expect("spec"));
        let throttle = AuthThrottle::default();
        for i in 0..(MAX_BLOCKED + 10) {
            let address = format!("10.0.{}.{}", i / 256, i % 256);
            throttle.failed(&limiter, &address, 0).await;
            throttle.failed(&limiter, &address, 0).await;
        }
        assert_eq!(throttle.len(), MAX_BLOCKED);
    }
}
