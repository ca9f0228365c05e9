//! How a [`PostgresStore`](super::PostgresStore) connects: its pool's size and timeouts
//! ([`PostgresOptions`]), and the checks made of a URL before connecting (TLS asked of a build
//! without it, a root certificate that does not read), so that a bad setting fails at open
//! with an error that names it.

use std::str::FromStr as _;
use std::time::Duration;

use serde::Deserialize;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgSslMode};

use super::StoreError;

/// The pool size and timeouts of a [`PostgresStore`](super::PostgresStore)
/// ([`PostgresStore::open_with`](super::PostgresStore::open_with); `open` takes the defaults).
///
/// Deserializable (from a config file, say) as the other option structs are
/// (`docs/operations.md` §Configuration): every key optional, unknown keys refused, durations
/// as `humantime` spells them; `"0s"` (or `null`) turns an optional timeout off:
///
/// ```json
/// {"max_connections": 16, "acquire_timeout": "5s", "statement_timeout": "30s"}
/// ```
///
/// Connecting has no timeout of its own: a connection is opened within the acquire timeout.
/// The `LISTEN` task that hears other replicas' writes holds one connection of its own,
/// outside the pool, opened with the same URL (and so the same TLS).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "snake_case")]
#[non_exhaustive]
pub struct PostgresOptions {
    /// The most connections the pool opens (default 8).
    pub max_connections: u32,
    /// Connections the pool keeps open even when idle (default 0).
    pub min_connections: u32,
    /// How long a statement waits for a pooled connection, opening one included, before it
    /// fails (default 10 s).
    #[serde(with = "humantime_serde")]
    pub acquire_timeout: Duration,
    /// An idle connection above `min_connections` is closed after this long (key
    /// default 10 min; `None`: never).
    #[serde(deserialize_with = "optional_duration")]
    pub idle_timeout: Option<Duration>,
    /// A connection is closed when released after having been open this long (key
    /// default 30 min; `None`: never).
    #[serde(deserialize_with = "optional_duration")]
    pub max_lifetime: Option<Duration>,
    /// PostgreSQL's `statement_timeout` on every connection: a statement running longer is
    /// cancelled by the server and fails (default `None`: the server's setting).
    #[serde(deserialize_with = "optional_duration")]
    pub statement_timeout: Option<Duration>,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            max_connections: 8,
            min_connections: 0,
            acquire_timeout: Duration::from_secs(10),
            idle_timeout: Some(Duration::from_secs(10 * 60)),
            max_lifetime: Some(Duration::from_secs(30 * 60)),
            statement_timeout: None,
        }
    }
}

impl PostgresOptions {
    /// The pool these options describe (the connect options apart).
    pub(crate) fn pool_options(&self) -> PgPoolOptions {
        PgPoolOptions::new()
            .max_connections(self.max_connections)
            .min_connections(self.min_connections)
            .acquire_timeout(self.acquire_timeout)
            .idle_timeout(self.idle_timeout)
            .max_lifetime(self.max_lifetime)
    }
}

/// An optional duration as `humantime` spells it: a zero one or `null` is `None`.
fn optional_duration<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    Ok(Option::<humantime_serde::Serde<Duration>>::deserialize(d)?
        .map(humantime_serde::Serde::into_inner)
        .filter(|d| !d.is_zero()))
}

/// The `sslmode` values that demand TLS.
fn demands_tls(mode: PgSslMode) -> bool {
    matches!(
        mode,
        PgSslMode::Require | PgSslMode::VerifyCa | PgSslMode::VerifyFull
    )
}

/// The `sslmode` value as written in a URL.
fn mode_name(mode: PgSslMode) -> &'static str {
    match mode {
        PgSslMode::Disable => "disable",
        PgSslMode::Allow => "allow",
        PgSslMode::Prefer => "prefer",
        PgSslMode::Require => "require",
        PgSslMode::VerifyCa => "verify-ca",
        PgSslMode::VerifyFull => "verify-full",
    }
}

/// Refuses a `sslmode` that demands TLS when this build has none (feature `postgres-tls`).
pub(crate) fn check_tls(mode: PgSslMode) -> Result<(), StoreError> {
    if demands_tls(mode) && !cfg!(feature = "postgres-tls") {
        return Err(StoreError::Unsupported(format!(
            "the PostgreSQL connection asks for TLS (sslmode={}) but this build has no TLS for \
             PostgreSQL: enable the cargo feature `postgres-tls` of tea-agent-runtime",
            mode_name(mode)
        )));
    }
    Ok(())
}

/// The connect options of `url` with `options`' statement timeout, after the checks: the URL
/// parses, TLS is available when asked for, and the root certificate (`sslrootcert`, or
/// `$PGSSLROOTCERT`) reads and holds a PEM certificate when the server's is verified.
pub(crate) fn connect_options(
    url: &str,
    options: &PostgresOptions,
) -> Result<PgConnectOptions, StoreError> {
    // sqlx's message names the part that failed, never the URL (which may hold a password).
    let connect = PgConnectOptions::from_str(url)
        .map_err(|e| StoreError::Unsupported(format!("the PostgreSQL URL does not parse: {e}")))?;
    let mode = connect.get_ssl_mode();
    check_tls(mode)?;
    if matches!(mode, PgSslMode::VerifyCa | PgSslMode::VerifyFull) {
        if let Some(path) = root_cert(url) {
            check_root_cert(&path)?;
        }
    }
    Ok(match options.statement_timeout {
        Some(timeout) => connect.options([("statement_timeout", timeout.as_millis().to_string())]),
        None => connect,
    })
}

/// Why the root certificate at `path` cannot verify a server, if it cannot.
fn check_root_cert(path: &str) -> Result<(), StoreError> {
    let pem = std::fs::read(path).map_err(|e| {
        StoreError::Unsupported(format!(
            "the PostgreSQL root certificate (sslrootcert) {path:?} does not read: {e}"
        ))
    })?;
    if !pem
        .windows(b"-----BEGIN CERTIFICATE-----".len())
        .any(|w| w == b"-----BEGIN CERTIFICATE-----")
    {
        return Err(StoreError::Unsupported(format!(
            "the PostgreSQL root certificate (sslrootcert) {path:?} holds no PEM certificate"
        )));
    }
    Ok(())
}

/// The root certificate's path the URL names (`sslrootcert`, or sqlx's `ssl-root-cert` and
/// `ssl-ca`), else `$PGSSLROOTCERT`.
fn root_cert(url: &str) -> Option<String> {
    let query = url.split_once('?').map_or("", |(_, q)| q);
    let query = query.split_once('#').map_or(query, |(q, _)| q);
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .rev()
        .find(|(key, _)| matches!(*key, "sslrootcert" | "ssl-root-cert" | "ssl-ca"))
        .map(|(_, value)| percent_decode(value))
        .or_else(|| std::env::var("PGSSLROOTCERT").ok())
}

/// `value` with its `%XX` escapes (and `+`, a space in a query) decoded.
fn percent_decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |at: usize| bytes.get(at).and_then(|&b| char::from(b).to_digit(16));
        match (bytes[i], hex(i + 1), hex(i + 2)) {
            (b'%', Some(high), Some(low)) => {
                // Two hex digits: below 256.
                out.push(u8::try_from(high * 16 + low).unwrap_or(b'?'));
                i += 3;
                continue;
            }
            (b'+', _, _) => out.push(b' '),
            (b, _, _) => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_asking_for_tls_is_refused_without_the_feature_and_accepted_with_it() {
        for mode in ["require", "verify-ca", "verify-full"] {
            let url = format!("postgres://u@localhost/db?sslmode={mode}");
            let result = connect_options(&url, &PostgresOptions::default());
            if cfg!(feature = "postgres-tls") {
                assert!(result.is_ok(), "{mode}: {result:?}");
            } else {
                let err = result.expect_err(mode).to_string();
                assert!(err.contains("`postgres-tls`"), "{err}");
                assert!(err.contains(&format!("sslmode={mode}")), "{err}");
            }
        }
        for mode in ["disable", "allow", "prefer"] {
            let url = format!("postgres://u@localhost/db?sslmode={mode}");
            assert!(connect_options(&url, &PostgresOptions::default()).is_ok());
        }
    }

    #[test]
    fn the_root_certificate_is_read_from_the_query() {
        assert_eq!(
            root_cert("postgres://h/db?sslmode=verify-full&sslrootcert=%2Ftmp%2Fca%20x.pem#f"),
            Some("/tmp/ca x.pem".to_owned())
        );
        assert_eq!(percent_decode("a%2"), "a%2");
        assert_eq!(percent_decode("a%zz"), "a%zz");
    }

    #[test]
    fn options_deserialize_from_durations() {
        let options: PostgresOptions = serde_json::from_value(serde_json::json!({
            "max_connections": 2,
            "acquire_timeout": "1500ms",
            "idle_timeout": "0s",
            "statement_timeout": "30s",
        }))
        .expect("options");
        assert_eq!(options.max_connections, 2);
        assert_eq!(options.acquire_timeout, Duration::from_millis(1500));
        assert_eq!(options.idle_timeout, None);
        assert_eq!(
            options.max_lifetime,
            PostgresOptions::default().max_lifetime
        );
        assert_eq!(options.statement_timeout, Some(Duration::from_secs(30)));
        let unknown = serde_json::from_value::<PostgresOptions>(serde_json::json!({
            "acquire_timeout_ms": 5
        }));
        assert!(unknown.is_err());
        let bad = serde_json::from_value::<PostgresOptions>(serde_json::json!({
            "idle_timeout": "soon"
        }));
        assert!(bad.is_err());
    }
}
