//! Why a store call failed, for every store: token records here, sessions and the rest in the
//! engine's stores. A failure is an answer of its own ([`StoreResult`]), never read as "no
//! record" or as success (`docs/security.md` §Fail-closed behaviour).

/// Why a store call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The record exists already (a duplicate id).
    #[error("store conflict: {0}")]
    Conflict(String),
    /// The database failed or could not be reached.
    #[error("store failed: {0}")]
    Database(String),
    /// The store spec names a backend this build does not include, or does not parse.
    #[error("{0}")]
    Unsupported(String),
}

/// A store answer: the value, or why the database failed.
pub type StoreResult<T> = Result<T, StoreError>;
