//! The options of the agent server (`docs/lap.md` §1): the HTTP surface's, `/agent/mcp`'s
//! ([`McpOptions`], `docs/lap.md` §7.3) and pairing's ([`PairingOptions`], `docs/pairing.md`). Plain data,
//! read by the operation core and the surfaces alike.

use std::time::Duration;

use serde::Deserialize;

#[cfg(feature = "oauth")]
use crate::security::oauth::OAuthClient;
use crate::security::{
    loopback_hosts, IdentityKey, RateLimitSpec, TrustProxy, DEFAULT_IDENTITY_COOKIE_NAME,
};

/// Default per-token LAP limit.
pub const DEFAULT_RATE_LIMIT: &str = "30/minute";

/// Default of [`ServerOptions::sliding_ttl`]: one hour without use.
const DEFAULT_SLIDING_TTL: Duration = Duration::from_secs(60 * 60);

/// Default of [`ServerOptions::hard_expiry`]: a day from mint.
const DEFAULT_HARD_EXPIRY: Duration = Duration::from_secs(24 * 60 * 60);

/// Default of [`ServerOptions::anonymous_mint_rate`]: anonymous mints per client address.
pub(crate) const DEFAULT_ANONYMOUS_MINT_RATE: &str = "60/hour";

/// Options of the HTTP surface (`docs/lap.md` §1). Start from `ServerOptions::default()` and
/// set the fields you need: the struct is `#[non_exhaustive]`, so a new option never breaks a
/// caller.
///
/// It deserializes from a configuration file (`docs/operations.md` §Configuration): field
/// names as here, every field optional (its default), durations spelled as `humantime` reads
/// them (`"90s"`, `"10m"`), rate limits as `"30/minute"`, `mcp` and `pairing` as tables, an
/// unknown key an error that names it. The identity key is never read from a file (it lives in
/// the store).
#[derive(Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct ServerOptions {
    /// A caller without identity may mint, and gets an `anon-…` identity cookie.
    pub allow_anonymous: bool,
    /// Number of trusted appending proxies.
    pub trust_proxy: TrustProxy,
    /// The host app serves TLS itself (request origins are `https`).
    pub tls: bool,
    /// Base path of the LAP endpoints.
    pub lap_base_path: String,
    /// Inactivity expiry of tokens (default 1 h; `None` or zero disables it): a token unused
    /// this long answers 401 `auth-failed` with `reason: "idle"` (`docs/security.md` §Token
    /// lifetimes). A call, a paired app's open socket and a claim count as use.
    #[serde(with = "humantime_serde")]
    pub sliding_ttl: Option<Duration>,
    /// Hard lifetime of a token from its mint (default 24 h): past it the token answers 401
    /// `auth-failed` with `reason: "expired"`, whatever its use, and a paired session can no
    /// longer be claimed. A claim's rotated token keeps the mint's expiry.
    #[serde(with = "humantime_serde")]
    pub hard_expiry: Duration,
    /// Extra origins accepted for cookie-authenticated POSTs.
    pub allowed_origins: Vec<String>,
    /// Origins (exact `scheme://host[:port]`, as LLui's `corsOrigins`) whose pages may call the
    /// agent routes from the browser: preflights are answered, `Access-Control-Allow-Origin`
    /// echoes the origin with credentials allowed (the identity cookie), and the origin is
    /// accepted for cookie-authenticated POSTs as if in `allowed_origins`. Other origins get
    /// no CORS headers. Default none (`docs/security.md`, CORS).
    pub cors_origins: Vec<String>,
    /// Upper clamp of `timeoutMs` on `/message`, `/wait`, `/confirm-result`.
    #[serde(with = "humantime_serde")]
    pub max_wait: Duration,
    /// Name of the identity cookie.
    pub identity_cookie_name: String,
    /// Signing key of the identity cookie (`None`: 32 random bytes per process).
    #[serde(skip)]
    pub identity_key: Option<IdentityKey>,
    /// Per-token LAP rate limit (also used for mint, keyed by identity).
    pub rate_limit: RateLimitSpec,
    /// Mints by anonymous callers (a new `anon-…` identity, or one carried in its cookie) per
    /// client address (default `60/hour`), on top of
    /// `rate_limit`: anonymous identities are free, so the per-owner session cap does not
    /// bound a visitor (`docs/security.md` §Rate limits). Past it, mint answers 429.
    pub anonymous_mint_rate: RateLimitSpec,
    /// `Host` values accepted on every route but `/agent/mcp` (which has its own
    /// `mcp.allowed_hosts`, same default): a name matches any port, `name:port` only that
    /// port. Default [`loopback_hosts`] (`localhost`, `127.0.0.1`, `::1`); a deployment lists
    /// its own host names; empty accepts any host. Others get 403 `forbidden`.
    pub allowed_hosts: Vec<String>,
    /// The MCP endpoint `/agent/mcp` (`docs/lap.md` §7.3).
    #[cfg(feature = "mcp")]
    pub mcp: McpOptions,
    /// `/agent/ws` and paired sessions (`docs/pairing.md`).
    #[cfg(feature = "pairing")]
    pub pairing: PairingOptions,
    /// OAuth 2.1 for `/agent/mcp` (feature `oauth`, `docs/authorization.md`; off by default).
    #[cfg(feature = "oauth")]
    pub oauth: OAuthOptions,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            allow_anonymous: false,
            trust_proxy: TrustProxy::default(),
            tls: false,
            lap_base_path: "/agent/lap/v1".into(),
            sliding_ttl: Some(DEFAULT_SLIDING_TTL),
            hard_expiry: DEFAULT_HARD_EXPIRY,
            allowed_origins: Vec::new(),
            cors_origins: Vec::new(),
            max_wait: Duration::from_secs(120),
            identity_cookie_name: DEFAULT_IDENTITY_COOKIE_NAME.into(),
            identity_key: None,
            rate_limit: DEFAULT_RATE_LIMIT
                .parse()
                .expect("the default rate limit parses"),
            anonymous_mint_rate: DEFAULT_ANONYMOUS_MINT_RATE
                .parse()
                .expect("the default anonymous mint rate parses"),
            allowed_hosts: loopback_hosts(),
            #[cfg(feature = "mcp")]
            mcp: McpOptions::default(),
            #[cfg(feature = "pairing")]
            pairing: PairingOptions::default(),
            #[cfg(feature = "oauth")]
            oauth: OAuthOptions::default(),
        }
    }
}

impl ServerOptions {
    /// [`Self::sliding_ttl`] in the clock's milliseconds.
    pub(crate) fn sliding_ttl_ms(&self) -> Option<u64> {
        self.sliding_ttl.map(crate::clock::millis)
    }

    /// [`Self::hard_expiry`] in the clock's milliseconds.
    pub(crate) fn hard_expiry_ms(&self) -> u64 {
        crate::clock::millis(self.hard_expiry)
    }

    /// [`Self::max_wait`] in milliseconds (the unit of a request's `timeoutMs`).
    pub(crate) fn max_wait_ms(&self) -> u64 {
        crate::clock::millis(self.max_wait)
    }
}

impl std::fmt::Debug for ServerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerOptions")
            .field("allow_anonymous", &self.allow_anonymous)
            .field("lap_base_path", &self.lap_base_path)
            .field("sliding_ttl", &self.sliding_ttl)
            .field("hard_expiry", &self.hard_expiry)
            .field("max_wait", &self.max_wait)
            .field("allowed_hosts", &self.allowed_hosts)
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "mcp")]
/// Options of `/agent/mcp` (`docs/lap.md` §1, §7.3).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct McpOptions {
    /// Serve `/agent/mcp` (default on).
    pub enabled: bool,
    /// Live sessions at most (default 64).
    pub max_sessions: usize,
    /// Live unauthenticated sessions at most (default 16; clamped to `[1, max_sessions]`).
    pub max_unauthenticated_sessions: usize,
    /// Live sessions bound to one token at most (default 8).
    pub max_sessions_per_token: usize,
    /// An authenticated session expires this long after its last request (default 30 min).
    #[serde(with = "humantime_serde")]
    pub idle_ttl: Duration,
    /// An unauthenticated session expires this long after its creation, whatever its traffic
    /// (default 30 min).
    #[serde(with = "humantime_serde")]
    pub unauthenticated_max_lifetime: Duration,
    /// `serverInfo.name` (default `agent`).
    pub server_name: String,
    /// `serverInfo.version` (default `1`).
    pub server_version: String,
    /// `Host` values accepted (`mcpAllowedHosts`; a name matches any port, `name:port` only
    /// that port; default `localhost`, `127.0.0.1`, `::1`). Empty accepts any host.
    pub allowed_hosts: Vec<String>,
    /// List the app's available actions as `do_<name>` tools next to the 16 (default on;
    /// `docs/mcp.md` §Action tools).
    pub action_tools: bool,
    /// 2026-07-28 `subscriptions/listen` streams one token holds open at once (default 8; at
    /// least 1): each watches the token's session; one more is refused until one closes.
    pub max_listens_per_token: usize,
    /// A `@requiresConfirm` message sent by an agent whose MCP client can ask its user
    /// (elicitation) is confirmed in that client too, beside the console: the first decision
    /// wins (default off; `docs/mcp.md` §Confirmation in the client, `docs/security.md`
    /// §Confirmation in the MCP client says what this trusts).
    pub confirm_in_client: bool,
    /// How long the client's user has to answer: the legacy revisions' `elicitation/create`
    /// waits this long, a 2026-07-28 `requestState` expires after it (default 10 min).
    #[serde(with = "humantime_serde")]
    pub confirm_in_client_ttl: Duration,
    /// The longest tool result or resource text an MCP answer carries, in characters (default
    /// 40,000; `docs/mcp.md` §Answers within a budget). A longer answer is a bounded view:
    /// its large arrays, objects and strings shortened to their first elements, `truncated:
    /// true`, and the `query_state` call that reads each elided part. Dense JSON is at least
    /// about 2 characters per token, so 40,000 characters stay under Claude Code's
    /// 25,000-token cap on a tool result with room to spare (and far under the ~150,000
    /// characters of claude.ai and Claude Desktop). At least 2,000.
    pub result_budget_chars: usize,
}

#[cfg(feature = "mcp")]
impl Default for McpOptions {
    fn default() -> Self {
        McpOptions {
            enabled: true,
            max_sessions: 64,
            max_unauthenticated_sessions: 16,
            max_sessions_per_token: 8,
            idle_ttl: Duration::from_secs(30 * 60),
            unauthenticated_max_lifetime: Duration::from_secs(30 * 60),
            server_name: "agent".into(),
            server_version: "1".into(),
            result_budget_chars: 40_000,
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            action_tools: true,
            max_listens_per_token: 8,
            confirm_in_client: false,
            confirm_in_client_ttl: Duration::from_secs(10 * 60),
        }
    }
}

#[cfg(feature = "pairing")]
/// Options of pairing (`ServerOptions::pairing`).
#[derive(Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct PairingOptions {
    /// `POST /agent/mint` without a body mints a paired session (as LLui's server does);
    /// otherwise only `{"paired": true}` does and a bare mint starts a hosted session.
    pub mint_paired: bool,
    /// Mints may start hosted sessions (`{"paired": false}`, `{"session": …}`, or a bare mint
    /// without `mint_paired`). Off for a server that only relays paired sessions (the `relay`
    /// example): such a mint is 400 `invalid` (default on).
    pub hosted_mints: bool,
    /// How long a closed socket's app may come back with the same bearer, its buffers kept
    /// (default 60 s). Past it, until the token's hard expiry, the session is still listed by
    /// `/agent/resume/list` and only a claim (a rotated bearer) resumes it; zero makes every
    /// return a claim (LLui's `pendingResumeGraceMs: 0`).
    #[serde(with = "humantime_serde")]
    pub grace: Duration,
    /// How long a forwarded read waits for the app's answer before 504 (default 15 s).
    #[serde(with = "humantime_serde")]
    pub forward_timeout: Duration,
    /// How long confirmation outcomes are kept for `/confirm-result` (default 5 min).
    #[serde(with = "humantime_serde")]
    pub outcome_ttl: Duration,
    /// `Retry-After` of a 503 for a live record without a socket (default 5 s).
    #[serde(with = "humantime_serde")]
    pub retry_after: Duration,
    /// How long an upgraded socket may take to send its `hello` before it is closed with 1008
    /// (default 10 s).
    #[serde(with = "humantime_serde")]
    pub hello_timeout: Duration,
    /// A socket silent this long is pinged; when nothing arrives within this long after the
    /// ping, it is closed with 1001 (default 30 s; zero disables).
    #[serde(with = "humantime_serde")]
    pub ping_interval: Duration,
    /// How long one outbound frame may take to be written before the socket is dropped
    /// (default 10 s).
    #[serde(with = "humantime_serde")]
    pub write_timeout: Duration,
    /// How long a socket being closed (superseded, revoked, refused) may still flush queued
    /// frames and its close frame before it is dropped (default 1 s).
    #[serde(with = "humantime_serde")]
    pub close_grace: Duration,
    /// Bytes of frames queued for one socket (default 8 MiB; one frame always fits an empty
    /// queue). A call that does not fit answers 503 `app-not-reading`.
    pub outbound_bytes: usize,
    /// The largest `hello` kept, in bytes of its text (default 1 MiB); a larger one closes the
    /// socket with 1009.
    pub hello_bytes: usize,
    /// The largest `stateAfter` of one confirmation outcome kept (default 1 MiB); a larger one
    /// is answered as `null`.
    pub outcome_bytes: usize,
    /// Bytes of the outcomes of one paired session in all (default 4 MiB); the oldest go first.
    pub outcomes_bytes: usize,
    /// Bytes of the states that filled `/wait` watches of one session, not yet answered
    /// (default 4 MiB); an update that does not fit is answered as `null`.
    pub watch_bytes: usize,
    /// Bytes of the log ring of one paired session (default 1 MiB; also 100 entries); the
    /// oldest entries go first.
    pub log_bytes: usize,
    /// Live paired sessions one identity holds at most (default 16); one more mint is 429.
    pub max_sessions_per_identity: usize,
    /// Paired mints by anonymous identities, all together, per minute (default 32); more is
    /// 429.
    pub anonymous_mints_per_minute: usize,
    /// Native apps (no browser, so no `Origin` header: the Rust pairing client, a terminal
    /// app) may open `/agent/ws`. Off by default: an upgrade must carry an `Origin` that is
    /// the request's own or an allowed one, so an agent holding the session's token cannot
    /// open the app's socket from a plain HTTP client (`docs/pairing.md` §Who holds the
    /// socket). Turn it on only for servers that pair native apps (the examples do).
    pub native_apps: bool,
    /// The base URL the other replicas of a fleet reach this one at
    /// (`http://10.0.0.5:8789`; feature `fleet`, `docs/pairing.md` §A fleet of replicas):
    /// written in the lease of every socket it holds, so a paired session's calls arriving on
    /// another replica are carried here. Set, the fleet is on; it needs the PostgreSQL store
    /// and [`Self::fleet_secret`]. Default none: each replica answers only the sessions whose
    /// socket it holds.
    #[cfg(feature = "fleet")]
    pub fleet_address: Option<String>,
    /// The key every replica of the fleet shares (at least 32 characters): a hop between
    /// replicas is signed with it (HMAC-SHA256), and a replica serves a hop only when its
    /// signature is good. Never logged.
    #[cfg(feature = "fleet")]
    pub fleet_secret: Option<String>,
    /// How often a replica renews its sockets' leases (default 5 s); a lease not renewed for
    /// three periods is a dead replica's, never hopped to.
    #[cfg(feature = "fleet")]
    #[serde(with = "humantime_serde")]
    pub fleet_heartbeat: Option<Duration>,
}

/// Every field, the fleet's key shown only as set or not.
#[cfg(feature = "pairing")]
impl std::fmt::Debug for PairingOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("PairingOptions");
        d.field("mint_paired", &self.mint_paired)
            .field("hosted_mints", &self.hosted_mints)
            .field("native_apps", &self.native_apps)
            .field("grace", &self.grace)
            .field("forward_timeout", &self.forward_timeout)
            .field("outcome_ttl", &self.outcome_ttl)
            .field("retry_after", &self.retry_after)
            .field("hello_timeout", &self.hello_timeout)
            .field("ping_interval", &self.ping_interval)
            .field("write_timeout", &self.write_timeout)
            .field("close_grace", &self.close_grace)
            .field("outbound_bytes", &self.outbound_bytes)
            .field("hello_bytes", &self.hello_bytes)
            .field("outcome_bytes", &self.outcome_bytes)
            .field("outcomes_bytes", &self.outcomes_bytes)
            .field("watch_bytes", &self.watch_bytes)
            .field("log_bytes", &self.log_bytes)
            .field("max_sessions_per_identity", &self.max_sessions_per_identity)
            .field(
                "anonymous_mints_per_minute",
                &self.anonymous_mints_per_minute,
            );
        #[cfg(feature = "fleet")]
        d.field("fleet_address", &self.fleet_address)
            .field(
                "fleet_secret",
                &self.fleet_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("fleet_heartbeat", &self.fleet_heartbeat);
        d.finish()
    }
}

#[cfg(feature = "pairing")]
impl Default for PairingOptions {
    fn default() -> Self {
        PairingOptions {
            mint_paired: false,
            hosted_mints: true,
            native_apps: false,
            grace: Duration::from_secs(60),
            forward_timeout: Duration::from_secs(15),
            outcome_ttl: Duration::from_secs(5 * 60),
            retry_after: Duration::from_secs(5),
            hello_timeout: Duration::from_secs(10),
            ping_interval: Duration::from_secs(30),
            write_timeout: Duration::from_secs(10),
            close_grace: Duration::from_secs(1),
            outbound_bytes: 8 * 1024 * 1024,
            hello_bytes: 1024 * 1024,
            outcome_bytes: 1024 * 1024,
            outcomes_bytes: 4 * 1024 * 1024,
            watch_bytes: 4 * 1024 * 1024,
            log_bytes: 1024 * 1024,
            max_sessions_per_identity: 16,
            anonymous_mints_per_minute: 32,
            #[cfg(feature = "fleet")]
            fleet_address: None,
            #[cfg(feature = "fleet")]
            fleet_secret: None,
            #[cfg(feature = "fleet")]
            fleet_heartbeat: None,
        }
    }
}

#[cfg(feature = "oauth")]
/// OAuth 2.1 for `/agent/mcp` (`docs/authorization.md`): the server is its own authorization
/// server; a person consents in the browser (identified as in the console) and the MCP client
/// gets short-lived access tokens for one session.
///
/// Off by default: the tokens name the server's public URL (the issuer and the resource), which
/// a library cannot know, and a server that answers 401 to tokenless MCP requests changes what
/// an MCP client sees. The examples turn it on.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct OAuthOptions {
    /// Serve the authorization endpoints and accept access tokens on `/agent/mcp`; a request
    /// there without a credential is answered 401 with the metadata URL (default off).
    pub enabled: bool,
    /// The public origin of the server (`https://app.example`), the issuer of its metadata
    /// and the base of the resource URL. Set it on any deployment; `None` takes the request's
    /// origin (its `Host`, which `allowed_hosts` checks), meant for local use.
    pub issuer: Option<String>,
    /// Lifetime of an access token (default 1 h).
    #[serde(with = "humantime_serde")]
    pub access_token_ttl: Duration,
    /// Lifetime of a grant from consent: refresh tokens work until then (default 30 days);
    /// it is also the hard expiry of the grant's agent token record.
    #[serde(with = "humantime_serde")]
    pub grant_ttl: Duration,
    /// Lifetime of an authorization code (default 60 s).
    #[serde(with = "humantime_serde")]
    pub code_ttl: Duration,
    /// Dynamic client registrations kept at most (default 1024).
    pub max_registrations: usize,
    /// A registration no grant used expires after this (default 24 h); a used one this long
    /// after the grant's lifetime since its last use.
    #[serde(with = "humantime_serde")]
    pub registration_ttl: Duration,
    /// Authorization codes waiting to be exchanged at most (default 256).
    pub max_pending_codes: usize,
    /// Live grants at most (default 4096).
    pub max_grants: usize,
    /// Requests to the token, registration and revocation endpoints and the consent page
    /// (its view and its answer) per client address, one rate for all (default `60/minute`).
    pub endpoint_rate: RateLimitSpec,
    /// Clients configured in code (besides the ones that register themselves).
    pub clients: Vec<OAuthClient>,
    /// Keep accepting MCP sessions without a credential (bound later by `connect_session`
    /// with a pasted `agt_` token) while OAuth is on. Default off: an MCP client starts OAuth
    /// only when its first request is answered 401, so a server that accepts tokenless
    /// sessions is never connected by consent.
    pub tokenless_sessions: bool,
    /// Accept a `client_id` that is an `https` URL as a Client ID Metadata Document: the
    /// server fetches the document there (bounded in size and time, never from a private
    /// address) and keeps it a while (default on; `docs/authorization.md`).
    pub client_id_metadata_documents: bool,
    /// Test only: fetch metadata documents from loopback addresses, `http` included. Never
    /// set it on a server others reach: it lets a caller make the server fetch from its own
    /// machine. Not read from a configuration file.
    #[serde(skip)]
    pub test_loopback_documents: bool,
    /// Test only: extra root certificates (PEM) trusted when fetching metadata documents, for
    /// a test's throwaway certificate. Not read from a configuration file.
    #[serde(skip)]
    pub test_document_roots: Vec<String>,
}

#[cfg(feature = "oauth")]
impl Default for OAuthOptions {
    fn default() -> Self {
        OAuthOptions {
            enabled: false,
            issuer: None,
            access_token_ttl: Duration::from_secs(60 * 60),
            grant_ttl: Duration::from_secs(30 * 24 * 60 * 60),
            code_ttl: Duration::from_secs(60),
            max_registrations: 1024,
            registration_ttl: Duration::from_secs(24 * 60 * 60),
            max_pending_codes: 256,
            max_grants: 4096,
            endpoint_rate: "60/minute".parse().expect("the default rate parses"),
            clients: Vec::new(),
            tokenless_sessions: false,
            client_id_metadata_documents: true,
            test_loopback_documents: false,
            test_document_roots: Vec::new(),
        }
    }
}

#[cfg(feature = "oauth")]
impl OAuthOptions {
    /// The OAuth state these options describe (`None` when off), its records in `store`
    /// (a durable store's), else in memory; `Err` names a configured client that does not
    /// check.
    pub(crate) fn build(
        &self,
        store: Option<std::sync::Arc<dyn crate::security::oauth::OAuthStore>>,
    ) -> Result<Option<crate::security::oauth::OAuth>, String> {
        use crate::clock::millis;
        use crate::security::oauth::{
            ClientDocuments, Clients, FetchOptions, Grants, Limits, MemoryOAuthStore, OAuth,
        };
        if !self.enabled {
            return Ok(None);
        }
        if let Some(issuer) = &self.issuer {
            crate::security::oauth::check_issuer(issuer)?;
        }
        let store = store.unwrap_or_else(|| {
            crate::engine::store::Measured::new(
                std::sync::Arc::new(MemoryOAuthStore::new()),
                crate::engine::store::StoreKind::Memory,
            )
        });
        let clients = Clients::new(
            &self.clients,
            store.clone(),
            self.max_registrations,
            millis(self.registration_ttl),
            millis(self.grant_ttl),
        )?;
        let grants = Grants::new(
            store,
            Limits {
                code_ttl_ms: millis(self.code_ttl),
                access_ttl_ms: millis(self.access_token_ttl),
                grant_ttl_ms: millis(self.grant_ttl),
                max_codes: self.max_pending_codes,
                max_grants: self.max_grants,
            },
        );
        let limiter = crate::security::GovernorRateLimiter::new(self.endpoint_rate);
        let documents = if self.client_id_metadata_documents {
            Some(ClientDocuments::new(&FetchOptions {
                allow_loopback: self.test_loopback_documents,
                root_certificates: self.test_document_roots.clone(),
            })?)
        } else {
            None
        };
        Ok(Some(OAuth {
            clients,
            documents,
            grants,
            limiter,
        }))
    }
}

#[cfg(test)]
#[path = "options_tests.rs"]
mod tests;
