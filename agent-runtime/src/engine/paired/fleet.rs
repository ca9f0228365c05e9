//! This replica's place in a fleet (feature `fleet`, `docs/pairing.md` §A fleet of replicas):
//! its id and advertised address, the leases of the sockets it holds (in the shared
//! PostgreSQL store), the shared key that signs the hops between replicas, the HTTP client that
//! makes them, and what its heartbeat last saw of the backplane.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use parking_lot::Mutex;
use sha2::Sha256;

use crate::engine::paired::frames::ConfirmDecision;
use crate::engine::paired::hub::Hub;
use crate::engine::paired::link::Resolution;
use crate::engine::session::progress::DispatchWatch;
use crate::engine::store::fleet_leases::{FleetLeases, Lease, SocketLock, STATEMENT_TIMEOUT};
use crate::engine::store::fleet_proposals::FleetProposals;
use crate::engine::store::StoreError;

/// The header carrying a hop's time (milliseconds since the epoch, the signer's clock).
pub(crate) const TIME_HEADER: &str = "x-agent-fleet-time";
/// The header carrying a hop's signature (hex HMAC-SHA256).
pub(crate) const SIGNATURE_HEADER: &str = "x-agent-fleet-signature";
/// How far a hop's time may be from the receiver's clock: a signed request replayed later
/// than this is refused.
pub(crate) const SIGNATURE_WINDOW_MS: u64 = 30_000;
/// The shortest shared key accepted.
pub(crate) const MIN_SECRET_LEN: usize = 32;
/// Default of the heartbeat period.
pub(crate) const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(5);
/// A lease not renewed within this many heartbeat periods is a dead replica's.
pub(crate) const STALE_PERIODS: u32 = 3;

/// Why a fleet cannot be set up.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FleetSetupError {
    /// No shared key, or one too short.
    #[error("pairing.fleet_secret must be set to at least {MIN_SECRET_LEN} characters when pairing.fleet_address is")]
    Secret,
    /// The address is not an `http(s)://` base URL.
    #[error("pairing.fleet_address must be an http:// or https:// base URL, got {0:?}")]
    Address(String),
    /// The store is not PostgreSQL.
    #[error("a fleet (pairing.fleet_address) needs the PostgreSQL store the replicas share")]
    Store,
}

/// A socket this replica holds: its lease's epoch, and when it was claimed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Held {
    pub(crate) epoch: i64,
    pub(crate) since: Instant,
}

/// This replica in its fleet.
pub(crate) struct Fleet {
    replica: String,
    address: String,
    key: Vec<u8>,
    leases: FleetLeases,
    proposals: FleetProposals,
    heartbeat: Duration,
    held: Mutex<HashMap<String, Held>>,
    /// When the last heartbeat reached the store (ms since the epoch; 0: never).
    last_beat: AtomicU64,
    /// From when (ms since the epoch) this replica's heartbeats may remove the other replicas'
    /// stale rows: set at start and whenever its heartbeats reach the store again after a gap.
    sweeps_from: AtomicU64,
    client: reqwest::Client,
    /// The work of `/message` hops served here, by hop id, for the caller's `cancel` hop.
    follows: Mutex<HashMap<String, Arc<DispatchWatch>>>,
}

impl std::fmt::Debug for Fleet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fleet")
            .field("replica", &self.replica)
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

impl Fleet {
    /// This replica's fleet: `address` (a base URL), the shared `secret`, the store's `pool`.
    pub(crate) fn new(
        address: &str,
        secret: Option<&str>,
        heartbeat: Option<Duration>,
        pool: Option<sqlx::PgPool>,
    ) -> Result<Self, FleetSetupError> {
        let secret = secret
            .filter(|s| s.len() >= MIN_SECRET_LEN)
            .ok_or(FleetSetupError::Secret)?;
        let address = address.trim_end_matches('/');
        if !(address.starts_with("http://") || address.starts_with("https://"))
            || address.contains(char::is_whitespace)
        {
            return Err(FleetSetupError::Address(address.to_owned()));
        }
        let pool = pool.ok_or(FleetSetupError::Store)?;
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(2))
            .pool_idle_timeout(Duration::from_secs(60))
            .tcp_nodelay(true)
            .build()
            .map_err(|_| FleetSetupError::Address(address.to_owned()))?;
        Ok(Fleet {
            replica: uuid::Uuid::new_v4().to_string(),
            address: address.to_owned(),
            key: secret.as_bytes().to_vec(),
            leases: FleetLeases::new(pool.clone()),
            proposals: FleetProposals::new(pool),
            heartbeat: heartbeat
                .filter(|d| !d.is_zero())
                .unwrap_or(DEFAULT_HEARTBEAT),
            held: Mutex::new(HashMap::new()),
            last_beat: AtomicU64::new(0),
            sweeps_from: AtomicU64::new(0),
            client,
            follows: Mutex::new(HashMap::new()),
        })
    }

    /// The HTTP client of the hops.
    pub(crate) fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// The heartbeat period.
    pub(crate) fn heartbeat_period(&self) -> Duration {
        self.heartbeat
    }

    /// How old a lease's heartbeat may be before its replica is taken for dead, in ms.
    fn stale_ms(&self) -> u64 {
        crate::clock::millis(self.heartbeat * STALE_PERIODS)
    }

    /// Whether the backplane answered this replica's heartbeat recently (within three
    /// periods).
    pub(crate) fn reaches_backplane(&self) -> bool {
        let now = wall_ms();
        let last = self.last_beat.load(Ordering::Relaxed);
        last != 0 && now.saturating_sub(last) <= self.stale_ms()
    }

    /// The signature of a hop to `path` with `body` at `time`.
    pub(crate) fn sign(&self, time: u64, path: &str, body: &[u8]) -> String {
        let mut mac = self.mac();
        mac.update(time.to_string().as_bytes());
        mac.update(b"\n");
        mac.update(path.as_bytes());
        mac.update(b"\n");
        mac.update(body);
        hex(&mac.finalize().into_bytes())
    }

    /// Whether `signature` signs a hop to `path` with `body` at `time`, and `time` is within
    /// the window of `now` (constant-time comparison).
    pub(crate) fn verify(
        &self,
        time: u64,
        signature: &str,
        path: &str,
        body: &[u8],
        now: u64,
    ) -> bool {
        if time.abs_diff(now) > SIGNATURE_WINDOW_MS {
            return false;
        }
        let Some(given) = unhex(signature) else {
            return false;
        };
        let mut mac = self.mac();
        mac.update(time.to_string().as_bytes());
        mac.update(b"\n");
        mac.update(path.as_bytes());
        mac.update(b"\n");
        mac.update(body);
        mac.verify_slice(&given).is_ok()
    }

    fn mac(&self) -> Hmac<Sha256> {
        // HMAC takes a key of any length.
        Hmac::<Sha256>::new_from_slice(&self.key).unwrap_or_else(|_| unreachable!())
    }

    /// Takes the fleet-wide lock of `tid`'s socket.
    pub(crate) async fn lock(&self, tid: &str) -> Result<SocketLock, StoreError> {
        self.leases.lock(tid).await
    }

    /// This replica now holds `tid`'s socket (under its lock): the lease before, when another
    /// live replica held it, and the new epoch.
    pub(crate) async fn claim(&self, tid: &str) -> Result<(Option<Lease>, i64), StoreError> {
        let now = wall_ms();
        let (before, epoch) = self
            .leases
            .claim(tid, &self.replica, &self.address, now)
            .await?;
        self.held.lock().insert(
            tid.to_owned(),
            Held {
                epoch,
                since: Instant::now(),
            },
        );
        let elsewhere = before.filter(|b| b.replica != self.replica && self.live(b, now));
        Ok((elsewhere, epoch))
    }

    /// This replica's socket of `tid` closed (under its lock): whether its lease was still
    /// this replica's (then the token's life cycle is this replica's to write; else a newer
    /// socket on another replica holds the session).
    pub(crate) async fn release(&self, tid: &str) -> Result<bool, StoreError> {
        let held = self.held.lock().remove(tid);
        match held {
            Some(held) => self.leases.release(tid, &self.replica, held.epoch).await,
            None => Ok(false),
        }
    }

    /// The app on this replica's socket of `tid` said (`hello`) whether it deduplicates keyed
    /// messages: recorded in the lease, for the replicas that carry calls to it.
    pub(crate) async fn app_dedupes(&self, tid: &str, dedupes: bool) -> Result<(), StoreError> {
        let held = self.held.lock().get(tid).copied();
        match held {
            Some(held) => {
                self.leases
                    .set_dedupes(tid, &self.replica, held.epoch, dedupes)
                    .await
            }
            None => Ok(()),
        }
    }

    /// Forgets `tid`'s socket without touching its lease (its close could not take the lock:
    /// the lease ages out, and its token stays as it was).
    pub(crate) fn forget(&self, tid: &str) {
        self.held.lock().remove(tid);
    }

    /// Whether `lease`'s replica renewed it within three periods of `now`.
    fn live(&self, lease: &Lease, now: u64) -> bool {
        (lease.heartbeat.max(0) as u64).saturating_add(self.stale_ms()) >= now
    }

    /// A socket of `tid` on another replica, at lease `epoch`, supersedes the one held here
    /// when that one's epoch is older: then it is forgotten (its close leaves the lease and
    /// the token to the newer socket) and the answer is true.
    pub(crate) fn superseded(&self, tid: &str, epoch: i64) -> bool {
        let mut held = self.held.lock();
        match held.get(tid) {
            Some(h) if h.epoch < epoch => {
                held.remove(tid);
                true
            }
            _ => false,
        }
    }

    /// The replica holding `tid`'s socket when it is another, live one (its heartbeat within
    /// three periods of `now`).
    pub(crate) async fn holder_elsewhere(&self, tid: &str) -> Result<Option<Lease>, StoreError> {
        let lease = self.leases.holder(tid).await?;
        let now = wall_ms();
        Ok(lease.filter(|l| l.replica != self.replica && self.live(l, now)))
    }

    /// One heartbeat: the leases renewed, the dead replicas' rows removed; answers
    /// the token ids whose socket this replica holds but whose lease is gone or another's
    /// (their sockets must close). Sockets claimed after `started` are not judged by it.
    ///
    /// A replica that was itself cut off from the store (at start, or after an outage) cannot
    /// tell a dead replica from a live one cut off as well: it removes the others' rows only
    /// once it has been beating for three periods again, which gives every live replica the
    /// time to renew its leases first. After an outage, also for [`STATEMENT_TIMEOUT`] more:
    /// another replica's heartbeat may have been waiting on the store for that long when it
    /// came back.
    pub(crate) async fn beat(&self, started: Instant) -> Result<Vec<String>, StoreError> {
        let now = wall_ms();
        let last = self.last_beat.load(Ordering::Relaxed);
        if last == 0 {
            self.sweeps_from
                .store(now.saturating_add(self.stale_ms()), Ordering::Relaxed);
        } else if now.saturating_sub(last) > self.stale_ms() {
            let wait = self.stale_ms() + crate::clock::millis(STATEMENT_TIMEOUT);
            self.sweeps_from
                .store(now.saturating_add(wait), Ordering::Relaxed);
        }
        // No row's heartbeat is below 0: a replica back from a gap removes none yet.
        let stale_before = if now >= self.sweeps_from.load(Ordering::Relaxed) {
            now.saturating_sub(self.stale_ms())
        } else {
            0
        };
        let tids: Vec<String> = self.held.lock().keys().cloned().collect();
        let renewed = self
            .leases
            .heartbeat(&self.replica, &tids, now, stale_before)
            .await?;
        self.last_beat.store(now.max(1), Ordering::Relaxed);
        let renewed: HashMap<String, i64> = renewed.into_iter().collect();
        let mut held = self.held.lock();
        let lost: Vec<String> = held
            .iter()
            .filter(|(tid, h)| h.since < started && renewed.get(*tid) != Some(&h.epoch))
            .map(|(tid, _)| tid.clone())
            .collect();
        for tid in &lost {
            held.remove(tid);
        }
        Ok(lost)
    }

    /// Records proposal `id` of `tid`, relayed by this replica (`docs/pairing.md` §A fleet of
    /// replicas), so a replica the app re-pairs with knows it.
    pub(crate) async fn proposed(&self, tid: &str, id: &str) -> Result<(), StoreError> {
        self.proposals.proposed(tid, id, wall_ms()).await
    }

    /// Records the decision `r` on proposal `id` of `tid` (its `stateAfter` only within
    /// `state_budget` bytes): whether the fleet had the proposal undecided.
    pub(crate) async fn decided(
        &self,
        tid: &str,
        id: &str,
        r: &Resolution,
        state_budget: usize,
    ) -> Result<bool, StoreError> {
        let decision = match (r.withdrawn, r.decision) {
            (true, _) => "withdrawn",
            (false, ConfirmDecision::Confirmed) => "confirmed",
            (false, ConfirmDecision::UserCancelled) => "user-cancelled",
        };
        let state = r
            .state_after
            .as_ref()
            .map(|s| s.get())
            .filter(|s| s.len() <= state_budget);
        self.proposals
            .decided(tid, id, decision, state, wall_ms())
            .await
    }

    /// Proposal `id` of `tid` as the fleet recorded it: `None` when no replica relayed it (or
    /// it was forgotten), else its decision, if made, as a [`Resolution`] decided `now` (the
    /// caller's clock).
    pub(crate) async fn stored_proposal(
        &self,
        tid: &str,
        id: &str,
        now: u64,
    ) -> Result<Option<Option<Resolution>>, StoreError> {
        let Some(stored) = self.proposals.proposal(tid, id).await? else {
            return Ok(None);
        };
        let resolution = stored.decision.as_deref().and_then(|d| {
            let (decision, withdrawn) = match d {
                "confirmed" => (ConfirmDecision::Confirmed, false),
                "user-cancelled" => (ConfirmDecision::UserCancelled, false),
                "withdrawn" => (ConfirmDecision::UserCancelled, true),
                _ => return None,
            };
            let state_after = stored
                .state_after
                .and_then(|s| serde_json::value::RawValue::from_string(s).ok());
            Some(Resolution {
                decision,
                state_after,
                at: now,
                withdrawn,
            })
        });
        Ok(Some(resolution))
    }

    /// Proposal `id` of `tid`, answered `pending-confirmation` by the app on this replica's
    /// socket, recorded for the fleet, with its decision when the app sent it already (with
    /// the answer). A store failure is logged and counted: the proposal is still waited on
    /// here, only a re-pair with another replica would not know it.
    pub(crate) async fn record_proposal(&self, hub: &Hub, tid: &str, id: &str, budget: usize) {
        let recorded = async {
            self.proposed(tid, id).await?;
            // A decision the app sent before the row existed was not recorded by its frame.
            if let Some(r) = hub.outcome(tid, id) {
                self.decided(tid, id, &r, budget).await?;
            }
            Ok::<_, StoreError>(())
        };
        if let Err(e) = recorded.await {
            tracing::error!(tid, confirm_id = id, "fleet: a proposal not recorded: {e}");
            crate::telemetry::fleet_hop_failed("store");
        }
    }

    /// Confirmation `id` of `tid`, unknown to this replica's relay: when another replica
    /// relayed it (the app re-paired here since), it is taken over, with its decision if the
    /// fleet recorded one, and the answer is true; false when no replica of the fleet
    /// relayed it. `now` is the relay's clock.
    pub(crate) async fn adopt(
        &self,
        hub: &Hub,
        tid: &str,
        id: &str,
        now: u64,
    ) -> Result<bool, StoreError> {
        let Some(decided) = self.stored_proposal(tid, id, now).await? else {
            return Ok(false);
        };
        let undecided = decided.is_none();
        hub.adopt_confirm(tid, id, decided);
        if undecided {
            // A decision the app sent on this socket before the relay knew the id was
            // recorded in the store only: read it once more, now that the relay keeps any.
            if let Some(Some(r)) = self.stored_proposal(tid, id, now).await? {
                hub.adopt_confirm(tid, id, Some(r));
            }
        }
        Ok(true)
    }

    /// Forgets the proposals proposed and decided more than `ttl` ago.
    pub(crate) async fn sweep_proposals(&self, ttl: Duration) -> Result<u64, StoreError> {
        let before = wall_ms().saturating_sub(crate::clock::millis(ttl));
        self.proposals.sweep(before).await
    }

    /// Keeps the work of `/message` hop `hop` for its caller's `cancel` hop while it runs.
    pub(crate) fn follow(&self, hop: &str, watch: Arc<DispatchWatch>) -> FollowGuard<'_> {
        self.follows.lock().insert(hop.to_owned(), watch);
        FollowGuard {
            fleet: self,
            hop: hop.to_owned(),
        }
    }

    /// The caller of hop `hop` gave up on its work: whether a hop of that id runs here.
    pub(crate) fn cancel(&self, hop: &str) -> bool {
        let watch = self.follows.lock().get(hop).cloned();
        match watch {
            Some(watch) => {
                watch.cancel();
                true
            }
            None => false,
        }
    }
}

/// Removes a hop's work from [`Fleet::follow`]'s map when the hop ends, whatever ends it.
pub(crate) struct FollowGuard<'a> {
    fleet: &'a Fleet,
    hop: String,
}

impl Drop for FollowGuard<'_> {
    fn drop(&mut self) {
        self.fleet.follows.lock().remove(&self.hop);
    }
}

/// The most bytes of a decision's `stateAfter` the fleet records: one outcome's budget, and
/// a token's 64 proposals within the budget of all its outcomes (`docs/pairing.md` §Bounds).
pub(crate) fn recorded_state_budget(outcome_bytes: usize, outcomes_bytes: usize) -> usize {
    outcome_bytes.min(outcomes_bytes / crate::engine::paired::link::MAX_KNOWN_CONFIRMS)
}

/// The wall clock in milliseconds since the epoch: leases and signatures are compared across
/// replicas, so they use the machines' clocks (kept within seconds of each other by NTP), never
/// the server's injectable clock.
pub(crate) fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || text.len() > 128 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fleet() -> Fleet {
        let pool = sqlx::postgres::PgPoolOptions::new()
            .connect_lazy("postgres://nobody@127.0.0.1:1/none")
            .unwrap();
        Fleet::new(
            "http://10.0.0.1:8789/",
            Some("a shared key of at least thirty-two chars"),
            None,
            Some(pool),
        )
        .unwrap()
    }

    #[tokio::test]
    async fn a_signature_verifies_only_for_its_path_body_key_and_window() {
        let f = fleet();
        let sig = f.sign(1_000_000, "/agent/fleet/v1/call", b"{}");
        assert!(f.verify(1_000_000, &sig, "/agent/fleet/v1/call", b"{}", 1_010_000));
        assert!(!f.verify(1_000_000, &sig, "/agent/fleet/v1/cancel", b"{}", 1_000_000));
        assert!(!f.verify(1_000_000, &sig, "/agent/fleet/v1/call", b"{ }", 1_000_000));
        assert!(!f.verify(1_000_001, &sig, "/agent/fleet/v1/call", b"{}", 1_000_000));
        assert!(!f.verify(1_000_000, &sig, "/agent/fleet/v1/call", b"{}", 1_040_000));
        assert!(!f.verify(1_000_000, "zz", "/agent/fleet/v1/call", b"{}", 1_000_000));
        let other = Fleet::new(
            "http://10.0.0.2:8789",
            Some("another shared key, thirty-two chars long"),
            None,
            Some(
                sqlx::postgres::PgPoolOptions::new()
                    .connect_lazy("postgres://nobody@127.0.0.1:1/none")
                    .unwrap(),
            ),
        )
        .unwrap();
        assert!(!other.verify(1_000_000, &sig, "/agent/fleet/v1/call", b"{}", 1_000_000));
        assert_eq!(f.address, "http://10.0.0.1:8789");
    }

    #[tokio::test]
    async fn setup_refuses_a_short_key_a_bad_address_and_no_postgres() {
        let pool = || {
            Some(
                sqlx::postgres::PgPoolOptions::new()
                    .connect_lazy("postgres://nobody@127.0.0.1:1/none")
                    .unwrap(),
            )
        };
        let key = Some("a shared key of at least thirty-two chars");
        assert!(matches!(
            Fleet::new("http://a:1", Some("short"), None, pool()),
            Err(FleetSetupError::Secret)
        ));
        assert!(matches!(
            Fleet::new("a:1", key, None, pool()),
            Err(FleetSetupError::Address(_))
        ));
        assert!(matches!(
            Fleet::new("http://a:1", key, None, None),
            Err(FleetSetupError::Store)
        ));
    }
}
