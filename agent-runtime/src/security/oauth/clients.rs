//! OAuth clients: the ones configured in code ([`OAuthClient`]) and the ones that registered
//! themselves (RFC 7591), bounded in count and size; a registration that is not used expires.
//! Every client is public (`token_endpoint_auth_method: "none"`): PKCE binds its codes.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Deserialize;

use super::records::ClientRecord;
use super::redirect;
use super::store::OAuthStore;
use crate::security::store_error::{StoreError, StoreResult};

/// The longest client name accepted, in characters.
pub(crate) const MAX_CLIENT_NAME_CHARS: usize = 100;

/// The most redirect URIs one client registers.
pub(crate) const MAX_REDIRECT_URIS: usize = 8;

/// A client configured in code (`OAuthOptions::clients`): its id, the name the consent page
/// shows and its redirect URIs (checked at start-up as a registration's are). It never
/// expires.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct OAuthClient {
    /// The `client_id` it sends.
    pub client_id: String,
    /// The name shown to the person asked to consent.
    pub client_name: String,
    /// Its redirect URIs (https, or http on loopback, whose port then matches any port).
    pub redirect_uris: Vec<String>,
}

impl OAuthClient {
    /// A client with these fields.
    pub fn new(
        client_id: impl Into<String>,
        client_name: impl Into<String>,
        redirect_uris: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        OAuthClient {
            client_id: client_id.into(),
            client_name: client_name.into(),
            redirect_uris: redirect_uris.into_iter().map(Into::into).collect(),
        }
    }
}

/// The body of a registration (RFC 7591 §2): what this server reads of it. Unknown metadata
/// is ignored, as §2 asks.
#[derive(Debug, Deserialize)]
pub(crate) struct RegistrationRequest {
    #[serde(default)]
    redirect_uris: Option<Vec<String>>,
    #[serde(default)]
    client_name: Option<String>,
    #[serde(default)]
    token_endpoint_auth_method: Option<String>,
    #[serde(default)]
    grant_types: Option<Vec<String>>,
    #[serde(default)]
    response_types: Option<Vec<String>>,
}

/// Why a registration was refused (RFC 7591 §3.2.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RegistrationError {
    /// `invalid_redirect_uri`.
    RedirectUri(String),
    /// `invalid_client_metadata`.
    Metadata(String),
    /// Every slot is taken by a registration that has not expired.
    Full(usize),
    /// The store failed.
    Store(StoreError),
}

impl From<StoreError> for RegistrationError {
    fn from(e: StoreError) -> Self {
        RegistrationError::Store(e)
    }
}

impl RegistrationError {
    /// The OAuth error code.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            RegistrationError::RedirectUri(_) => "invalid_redirect_uri",
            RegistrationError::Metadata(_) => "invalid_client_metadata",
            RegistrationError::Full(_) => "temporarily_unavailable",
            RegistrationError::Store(_) => "server_error",
        }
    }

    /// The `error_description`.
    pub(crate) fn description(&self) -> String {
        match self {
            RegistrationError::RedirectUri(d) | RegistrationError::Metadata(d) => d.clone(),
            RegistrationError::Full(max) => format!(
                "the server holds {max} client registrations, the most it keeps: try again \
                 once unused ones expired"
            ),
            RegistrationError::Store(_) => "the store failed; try again".to_owned(),
        }
    }
}

/// Checks a client's name and redirect URIs.
fn check(name: &str, redirect_uris: &[String]) -> Result<(), RegistrationError> {
    if name.trim().is_empty()
        || name.chars().count() > MAX_CLIENT_NAME_CHARS
        || name.chars().any(char::is_control)
    {
        return Err(RegistrationError::Metadata(format!(
            "client_name must be 1 to {MAX_CLIENT_NAME_CHARS} characters without control \
             characters"
        )));
    }
    if redirect_uris.is_empty() || redirect_uris.len() > MAX_REDIRECT_URIS {
        return Err(RegistrationError::RedirectUri(format!(
            "redirect_uris must list 1 to {MAX_REDIRECT_URIS} URIs"
        )));
    }
    for uri in redirect_uris {
        redirect::check_registrable(uri).map_err(RegistrationError::RedirectUri)?;
    }
    Ok(())
}

impl RegistrationRequest {
    /// The client this registration describes, checked: redirect URIs as
    /// [`redirect::check_registrable`], a public client (auth method `none`) using the code
    /// and refresh grants and the `code` response type only.
    fn into_record(
        self,
        client_id: String,
        now: u64,
        expires_at: u64,
    ) -> Result<ClientRecord, RegistrationError> {
        let redirect_uris = self.redirect_uris.unwrap_or_default();
        let client_name = self
            .client_name
            .unwrap_or_else(|| "Unnamed client".to_owned());
        check(&client_name, &redirect_uris)?;
        if let Some(method) = self.token_endpoint_auth_method.as_deref() {
            if method != "none" {
                return Err(RegistrationError::Metadata(format!(
                    "token_endpoint_auth_method {method:?} is not supported: clients are \
                     public (\"none\") and use PKCE"
                )));
            }
        }
        for grant in self.grant_types.iter().flatten() {
            if !matches!(grant.as_str(), "authorization_code" | "refresh_token") {
                return Err(RegistrationError::Metadata(format!(
                    "grant_type {grant:?} is not supported (authorization_code, refresh_token)"
                )));
            }
        }
        for response in self.response_types.iter().flatten() {
            if response != "code" {
                return Err(RegistrationError::Metadata(format!(
                    "response_type {response:?} is not supported (code)"
                )));
            }
        }
        Ok(ClientRecord {
            client_id,
            client_name: client_name.trim().to_owned(),
            redirect_uris,
            registered_at: now,
            expires_at,
        })
    }
}

/// The clients of one server: the configured ones, and the registrations in its store.
pub(crate) struct Clients {
    configured: HashMap<String, ClientRecord>,
    store: Arc<dyn OAuthStore>,
    max_registered: usize,
    /// How long a registration never used is kept (ms).
    unused_ttl_ms: u64,
    /// How long a registration used once is kept after its last use (ms).
    idle_ttl_ms: u64,
}

impl Clients {
    /// The clients configured in code (refused when one does not check) and room for
    /// `max_registered` registrations in `store`.
    pub(crate) fn new(
        configured: &[OAuthClient],
        store: Arc<dyn OAuthStore>,
        max_registered: usize,
        unused_ttl_ms: u64,
        idle_ttl_ms: u64,
    ) -> Result<Self, String> {
        let mut map = HashMap::new();
        for c in configured {
            check(&c.client_name, &c.redirect_uris)
                .map_err(|e| format!("OAuth client {:?}: {}", c.client_id, e.description()))?;
            if c.client_id.is_empty() || c.client_id.len() > 255 {
                return Err("an OAuth client id must be 1 to 255 bytes".to_owned());
            }
            let record = ClientRecord {
                client_id: c.client_id.clone(),
                client_name: c.client_name.clone(),
                redirect_uris: c.redirect_uris.clone(),
                registered_at: 0,
                expires_at: u64::MAX,
            };
            if map.insert(c.client_id.clone(), record).is_some() {
                return Err(format!(
                    "OAuth client {:?} is configured twice",
                    c.client_id
                ));
            }
        }
        Ok(Clients {
            configured: map,
            store,
            max_registered,
            unused_ttl_ms,
            idle_ttl_ms,
        })
    }

    /// Registers the client `request` describes at `now` (the expired registrations are
    /// dropped first).
    pub(crate) async fn register(
        &self,
        request: RegistrationRequest,
        now: u64,
    ) -> Result<ClientRecord, RegistrationError> {
        let expires_at = now.saturating_add(self.unused_ttl_ms);
        let record = request.into_record(uuid::Uuid::new_v4().to_string(), now, expires_at)?;
        let max = self.max_registered as u64;
        if !self.store.register_client(record.clone(), max, now).await? {
            return Err(RegistrationError::Full(self.max_registered));
        }
        Ok(record)
    }

    /// The client `client_id`, unless it is unknown or its registration expired.
    pub(crate) async fn find(
        &self,
        client_id: &str,
        now: u64,
    ) -> StoreResult<Option<ClientRecord>> {
        if let Some(c) = self.configured.get(client_id) {
            return Ok(Some(c.clone()));
        }
        // A registration's id is a UUID: anything longer is not looked up.
        if client_id.len() > 64 {
            return Ok(None);
        }
        self.store.find_client(client_id, now).await
    }

    /// A grant or a token was made for `client_id` at `now`: its registration is in use.
    pub(crate) async fn used(&self, client_id: &str, now: u64) -> StoreResult<()> {
        if self.configured.contains_key(client_id) {
            return Ok(());
        }
        let until = now.saturating_add(self.idle_ttl_ms);
        self.store.client_used(client_id, until).await
    }
}

#[cfg(test)]
mod tests {
    use super::super::memory::MemoryOAuthStore;
    use super::*;

    fn memory() -> Arc<dyn OAuthStore> {
        Arc::new(MemoryOAuthStore::new())
    }

    fn request(json: serde_json::Value) -> RegistrationRequest {
        serde_json::from_value(json).unwrap()
    }

    #[tokio::test]
    async fn bad_metadata_is_refused_with_its_code() {
        let clients = Clients::new(&[], memory(), 8, 1_000, 1_000).unwrap();
        let refused = |json| {
            let request = request(json);
            let clients = &clients;
            async move { clients.register(request, 0).await.unwrap_err().code() }
        };
        assert_eq!(refused(serde_json::json!({})).await, "invalid_redirect_uri");
        assert_eq!(
            refused(serde_json::json!({"redirect_uris": ["http://evil.example/cb"]})).await,
            "invalid_redirect_uri"
        );
        assert_eq!(
            refused(
                serde_json::json!({"redirect_uris": ["https://a.example/cb"],
                "token_endpoint_auth_method": "client_secret_basic"})
            )
            .await,
            "invalid_client_metadata"
        );
        assert_eq!(
            refused(
                serde_json::json!({"redirect_uris": ["https://a.example/cb"],
                "grant_types": ["implicit"]})
            )
            .await,
            "invalid_client_metadata"
        );
        assert_eq!(
            refused(
                serde_json::json!({"redirect_uris": ["https://a.example/cb"],
                "client_name": "a\u{1b}[31m"})
            )
            .await,
            "invalid_client_metadata"
        );
    }

    #[tokio::test]
    async fn configured_clients_are_checked_and_never_expire() {
        let good = OAuthClient::new("cli", "CLI", ["http://127.0.0.1/cb"]);
        let clients = Clients::new(std::slice::from_ref(&good), memory(), 0, 1, 1).unwrap();
        assert!(clients.find("cli", u64::MAX).await.unwrap().is_some());
        let bad = OAuthClient::new("x", "X", ["http://example.com/cb"]);
        assert!(Clients::new(&[bad], memory(), 0, 1, 1).is_err());
        assert!(Clients::new(&[good.clone(), good], memory(), 0, 1, 1).is_err());
    }
}
