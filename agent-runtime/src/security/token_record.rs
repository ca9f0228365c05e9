//! The stored token record and its life cycle (`docs/lap.md` §2.2, §2.4): [`TokenRecord`] holds a
//! token's hash, never the token; [`TokenStatus`] is spelled once ([`TokenStatus::as_str`]),
//! for the wire, serde and the stores alike; [`AgentSession`] is its wire form.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The hard lifetime [`TokenRecord::minted`] gives a token: 24 h from mint, the default of
/// `ServerOptions::hard_expiry`, which a server's mint applies instead.
pub(super) const TOKEN_TTL_MS: u64 = 24 * 60 * 60 * 1000;

/// How long an expired record is kept before a mint sweeps it: 1 h.
pub(crate) const SWEEP_RETENTION_MS: u64 = 60 * 60 * 1000;

/// The most live (unexpired, unrevoked) tokens one hosted session can have: a mint of one
/// more for it (`{"session": id}`), or an OAuth grant of it, is refused until one is revoked.
pub(crate) const MAX_TOKENS_PER_SESSION: usize = 64;

/// The label a record takes on activation when it has none.
pub(crate) const DEFAULT_ACTIVE_LABEL: &str = "agent";

/// The label the wire form shows for a record without one.
pub(super) const UNKNOWN_LABEL: &str = "(unknown)";

/// The life-cycle status of a token record (docs/lap.md §2.2, §2.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "&'static str", try_from = "String")]
pub enum TokenStatus {
    /// Minted for a paired session, waiting for its app's socket.
    AwaitingWs,
    /// Minted, no successful LAP call yet.
    AwaitingClaude,
    /// At least one successful LAP call.
    Active,
    /// A paired app's socket closed: it re-pairs with the same bearer within its grace window,
    /// or its owner claims it (a rotated bearer) until the hard expiry.
    PendingResume,
    /// Revoked; the token answers 403 `revoked`.
    Revoked,
}

impl TokenStatus {
    /// The wire spelling (`awaiting-claude`, `active`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            TokenStatus::AwaitingWs => "awaiting-ws",
            TokenStatus::AwaitingClaude => "awaiting-claude",
            TokenStatus::Active => "active",
            TokenStatus::PendingResume => "pending-resume",
            TokenStatus::Revoked => "revoked",
        }
    }
}

impl TokenStatus {
    /// Every status.
    pub const ALL: [TokenStatus; 5] = [
        TokenStatus::AwaitingWs,
        TokenStatus::AwaitingClaude,
        TokenStatus::Active,
        TokenStatus::PendingResume,
        TokenStatus::Revoked,
    ];
}

/// A status spelled otherwise than [`TokenStatus::as_str`] does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown token status {0:?}")]
pub struct UnknownTokenStatus(pub String);

impl std::str::FromStr for TokenStatus {
    type Err = UnknownTokenStatus;

    /// The status spelled `s` ([`TokenStatus::as_str`] is the one spelling, also serde's).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TokenStatus::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| UnknownTokenStatus(s.to_owned()))
    }
}

impl From<TokenStatus> for &'static str {
    fn from(status: TokenStatus) -> Self {
        status.as_str()
    }
}

impl TryFrom<String> for TokenStatus {
    type Error = UnknownTokenStatus;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl fmt::Display for TokenStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What kind of session a token drives (`docs/lap.md` §2.2): one hosted in this process, or a
/// paired one, whose session lives in an app connected over `/agent/ws` (`docs/pairing.md`).
/// Set at mint and never changed; every decision that differs between the two reads it here.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "&'static str", try_from = "String")]
pub enum SessionKind {
    /// A session hosted by this server (`POST /agent/mint`, `mint {"session": id}`).
    #[default]
    Hosted,
    /// A paired session (`POST /agent/mint {"pair": true}`): the app holds the session.
    Paired,
}

impl SessionKind {
    /// The stored spelling: `hosted` or `paired`.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionKind::Hosted => "hosted",
            SessionKind::Paired => "paired",
        }
    }
}

/// A session kind spelled otherwise than [`SessionKind::as_str`] does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown session kind {0:?}")]
pub struct UnknownSessionKind(pub String);

impl std::str::FromStr for SessionKind {
    type Err = UnknownSessionKind;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [SessionKind::Hosted, SessionKind::Paired]
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| UnknownSessionKind(s.to_owned()))
    }
}

impl From<SessionKind> for &'static str {
    fn from(kind: SessionKind) -> Self {
        kind.as_str()
    }
}

impl TryFrom<String> for SessionKind {
    type Error = UnknownSessionKind;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

/// A stored token record (docs/lap.md §2.2). Holds the token's hash, never the token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenRecord {
    /// Token id, a UUID v4.
    pub tid: String,
    /// Lowercase hex SHA-256 of the whole token.
    pub token_hash: String,
    /// The owner identity, if any.
    pub uid: Option<String>,
    /// The session the token drives.
    pub session_id: String,
    /// Whether that session is hosted here or paired (set at mint; records stored before the
    /// field existed read as hosted unless their session id is a paired one).
    #[serde(default)]
    pub kind: SessionKind,
    /// The life-cycle status.
    pub status: TokenStatus,
    /// Mint time (ms since the epoch).
    pub created_at: u64,
    /// Hard expiry: mint time + the server's `hard_expiry` (24 h by default); a claim keeps it.
    pub expires_at: u64,
    /// Time of the last successful use (mint time initially).
    pub last_seen_at: u64,
    /// End of the grace window of a paired record in `pending-resume` (its app may re-pair
    /// with the same bearer until then; past it, until the hard expiry, only a claim resumes).
    pub pending_resume_until: Option<u64>,
    /// `scheme://host[:port]` of the mint request.
    pub origin: String,
    /// The agent's label, set on activation.
    pub label: Option<String>,
    /// What the token may do: a space-separated scope list (`app:read`, `app:act`;
    /// `docs/authorization.md` §Scopes), `None` for every scope (a minted `agt_` token). The
    /// record of an OAuth grant carries the scopes the person granted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

impl TokenRecord {
    /// The record a mint of a hosted session creates at `now`: a fresh UUID v4 `tid`, status
    /// `awaiting-claude`, `createdAt = lastSeenAt = now`, `expiresAt = now + 24 h` (a server's
    /// mint sets its own `hard_expiry` after), no label. A paired mint sets
    /// [`kind`](TokenRecord::kind) and its status after.
    pub fn minted(
        token_hash: String,
        uid: Option<String>,
        session_id: String,
        origin: String,
        now: u64,
    ) -> TokenRecord {
        TokenRecord {
            tid: uuid::Uuid::new_v4().to_string(),
            token_hash,
            uid,
            session_id,
            kind: SessionKind::Hosted,
            status: TokenStatus::AwaitingClaude,
            created_at: now,
            expires_at: now.saturating_add(TOKEN_TTL_MS),
            last_seen_at: now,
            pending_resume_until: None,
            origin,
            label: None,
            scope: None,
        }
    }

    /// The label activation gives the record: its own, or `agent` when it has none.
    pub fn activation_label(&self) -> &str {
        self.label.as_deref().unwrap_or(DEFAULT_ACTIVE_LABEL)
    }

    /// The wire form of this record.
    pub fn to_agent_session(&self) -> AgentSession {
        AgentSession::from(self)
    }
}

/// The wire form of a token record, `{tid, label, status, createdAt, lastSeenAt, sessionId,
/// scope?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSession {
    /// Token id.
    pub tid: String,
    /// The record's label, or `(unknown)`.
    pub label: String,
    /// The life-cycle status.
    pub status: TokenStatus,
    /// Mint time.
    pub created_at: u64,
    /// Time of the last successful use.
    pub last_seen_at: u64,
    /// The session the token drives (an addition to the reference's shape).
    pub session_id: String,
    /// The scopes the token is limited to, space-separated (an OAuth grant's, or a mint's
    /// `scope`); absent: every scope (an addition to the reference's shape).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

impl From<&TokenRecord> for AgentSession {
    fn from(record: &TokenRecord) -> Self {
        AgentSession {
            tid: record.tid.clone(),
            label: record
                .label
                .clone()
                .unwrap_or_else(|| UNKNOWN_LABEL.to_owned()),
            status: record.status,
            created_at: record.created_at,
            last_seen_at: record.last_seen_at,
            session_id: record.session_id.clone(),
            scope: record.scope.clone(),
        }
    }
}
