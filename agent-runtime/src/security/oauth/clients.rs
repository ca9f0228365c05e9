//! OAuth clients: the ones configured in code ([`OAuthClient`]) and the ones that registered
//! themselves (RFC 7591), bounded in count and size; a registration that is not used expires.
//! Every client is public (`token_endpoint_auth_method: "none"`): PKCE binds its codes.

use std::collections::HashMap;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use super::redirect;

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

/// A client as the server keeps it (plain data, so a durable store can keep it later).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ClientRecord {
    pub(crate) client_id: String,
    pub(crate) client_name: String,
    pub(crate) redirect_uris: Vec<String>,
    /// When it registered (ms); 0 for a configured client.
    pub(crate) registered_at: u64,
    /// When a grant or a token was last made for it (ms), if ever.
    pub(crate) last_used_at: Option<u64>,
    /// Registered over RFC 7591 (it expires), not configured.
    pub(crate) dynamic: bool,
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
}

impl RegistrationError {
    /// The OAuth error code.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            RegistrationError::RedirectUri(_) => "invalid_redirect_uri",
            RegistrationError::Metadata(_) => "invalid_client_metadata",
            RegistrationError::Full(_) => "temporarily_unavailable",
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
    fn into_record(self, client_id: String, now: u64) -> Result<ClientRecord, RegistrationError> {
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
            last_used_at: None,
            dynamic: true,
        })
    }
}

/// The clients of one server.
pub(crate) struct Clients {
    configured: HashMap<String, ClientRecord>,
    registered: Mutex<HashMap<String, ClientRecord>>,
    max_registered: usize,
    /// How long a registration never used is kept (ms).
    unused_ttl_ms: u64,
    /// How long a registration used once is kept after its last use (ms).
    idle_ttl_ms: u64,
}

impl Clients {
    /// The clients configured in code (refused when one does not check) and room for
    /// `max_registered` registrations.
    pub(crate) fn new(
        configured: &[OAuthClient],
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
                last_used_at: None,
                dynamic: false,
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
            registered: Mutex::new(HashMap::new()),
            max_registered,
            unused_ttl_ms,
            idle_ttl_ms,
        })
    }

    /// Registers the client `request` describes at `now`, after dropping the expired
    /// registrations.
    pub(crate) fn register(
        &self,
        request: RegistrationRequest,
        now: u64,
    ) -> Result<ClientRecord, RegistrationError> {
        let record = request.into_record(uuid::Uuid::new_v4().to_string(), now)?;
        let mut registered = self.registered.lock();
        registered.retain(|_, c| !self.expired(c, now));
        if registered.len() >= self.max_registered {
            return Err(RegistrationError::Full(self.max_registered));
        }
        registered.insert(record.client_id.clone(), record.clone());
        Ok(record)
    }

    fn expired(&self, client: &ClientRecord, now: u64) -> bool {
        let until = match client.last_used_at {
            None => client.registered_at.saturating_add(self.unused_ttl_ms),
            Some(used) => used.saturating_add(self.idle_ttl_ms),
        };
        client.dynamic && until <= now
    }

    /// The client `client_id`, unless it is unknown or its registration expired.
    pub(crate) fn find(&self, client_id: &str, now: u64) -> Option<ClientRecord> {
        if let Some(c) = self.configured.get(client_id) {
            return Some(c.clone());
        }
        let registered = self.registered.lock();
        registered
            .get(client_id)
            .filter(|c| !self.expired(c, now))
            .cloned()
    }

    /// A grant or a token was made for `client_id` at `now`: its registration is in use.
    pub(crate) fn used(&self, client_id: &str, now: u64) {
        if let Some(c) = self.registered.lock().get_mut(client_id) {
            c.last_used_at = Some(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(json: serde_json::Value) -> RegistrationRequest {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn a_registration_is_checked_bounded_and_expires_unused() {
        let clients = Clients::new(&[], 2, 1_000, 10_000).unwrap();
        let ok = serde_json::json!({
            "redirect_uris": ["http://localhost:1/cb"],
            "client_name": "Test",
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "logo_uri": "ignored",
        });
        let a = clients.register(request(ok.clone()), 0).unwrap();
        assert_eq!(a.client_name, "Test");
        assert!(clients.find(&a.client_id, 999).is_some());
        let b = clients.register(request(ok.clone()), 500).unwrap();
        assert_eq!(
            clients.register(request(ok.clone()), 900),
            Err(RegistrationError::Full(2))
        );
        // `a` expires unused at 1000, `b` is used and kept.
        clients.used(&b.client_id, 900);
        assert!(clients.find(&a.client_id, 1_000).is_none());
        assert!(clients.register(request(ok), 1_600).is_ok());
        assert!(clients.find(&b.client_id, 1_600).is_some());
        assert!(clients.find(&b.client_id, 10_900).is_none());
    }

    #[test]
    fn bad_metadata_is_refused_with_its_code() {
        let clients = Clients::new(&[], 8, 1_000, 1_000).unwrap();
        let refused = |json| clients.register(request(json), 0).unwrap_err().code();
        assert_eq!(refused(serde_json::json!({})), "invalid_redirect_uri");
        assert_eq!(
            refused(serde_json::json!({"redirect_uris": ["http://evil.example/cb"]})),
            "invalid_redirect_uri"
        );
        assert_eq!(
            refused(
                serde_json::json!({"redirect_uris": ["https://a.example/cb"],
                "token_endpoint_auth_method": "client_secret_basic"})
            ),
            "invalid_client_metadata"
        );
        assert_eq!(
            refused(
                serde_json::json!({"redirect_uris": ["https://a.example/cb"],
                "grant_types": ["implicit"]})
            ),
            "invalid_client_metadata"
        );
        assert_eq!(
            refused(
                serde_json::json!({"redirect_uris": ["https://a.example/cb"],
                "client_name": "a\u{1b}[31m"})
            ),
            "invalid_client_metadata"
        );
    }

    #[test]
    fn configured_clients_are_checked_and_never_expire() {
        let good = OAuthClient::new("cli", "CLI", ["http://127.0.0.1/cb"]);
        let clients = Clients::new(std::slice::from_ref(&good), 0, 1, 1).unwrap();
        assert!(clients.find("cli", u64::MAX).is_some());
        let bad = OAuthClient::new("x", "X", ["http://example.com/cb"]);
        assert!(Clients::new(&[bad], 0, 1, 1).is_err());
        assert!(Clients::new(&[good.clone(), good], 0, 1, 1).is_err());
    }
}
