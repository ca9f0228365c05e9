//! Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document, MCP
//! 2025-11-25): a `client_id` that is an `https` URL with a path names a JSON document the
//! client publishes there. This module says which ids are such URLs and what a fetched
//! document must hold to stand for a client; fetching is `document_fetch`, caching
//! `client_documents`.

use std::time::Duration;

use serde_json::Value;
use url::{Host, Url};

use super::clients::{MAX_CLIENT_NAME_CHARS, MAX_REDIRECT_URIS};
use super::redirect;

/// The longest `client_id` URL accepted, in bytes.
pub(crate) const MAX_DOCUMENT_URL_BYTES: usize = 2048;

/// A client described by its metadata document, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DocumentClient {
    /// The document's URL, which is the `client_id`.
    pub(crate) client_id: String,
    /// Its `client_name`, else the URL's host.
    pub(crate) client_name: String,
    pub(crate) redirect_uris: Vec<String>,
    /// The host that publishes the document (shown on the consent page).
    pub(crate) host: String,
}

/// Why a metadata document does not stand for a client. Each has its OAuth error code, a
/// reason word for the audit and a description for the person or the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DocumentError {
    /// The `client_id` is an `https` URL but not one a document may have.
    InvalidUrl(String),
    /// The document's host is (or resolves to) a loopback, private or reserved address.
    PrivateAddress(String),
    /// The fetch failed: no connection, a TLS failure, a status other than 200, a redirect.
    FetchFailed(String),
    /// The document did not arrive within the fetch's time bound (given).
    TooSlow(Duration),
    /// The document is larger than the bound (given, in bytes).
    TooBig(usize),
    /// The body is not a JSON object.
    NotJson(String),
    /// The document's `client_id` is not its URL.
    ClientIdMismatch,
    /// The document's metadata cannot stand for a client of this server.
    Metadata(String),
    /// Too many documents are being fetched, or this address asked for too many.
    Busy(String),
}

impl DocumentError {
    /// The OAuth error code.
    pub(crate) fn code(&self) -> &'static str {
        if self.is_busy() {
            "temporarily_unavailable"
        } else {
            "invalid_client"
        }
    }

    /// Whether it is a refusal for now only (`temporarily_unavailable`): the server is busy.
    pub(crate) fn is_busy(&self) -> bool {
        matches!(self, DocumentError::Busy(_))
    }

    /// The word the audit entry names the failure by.
    pub(crate) fn reason(&self) -> &'static str {
        match self {
            DocumentError::InvalidUrl(_) => "invalid-url",
            DocumentError::PrivateAddress(_) => "private-address",
            DocumentError::FetchFailed(_) => "fetch-failed",
            DocumentError::TooSlow(_) => "too-slow",
            DocumentError::TooBig(_) => "too-big",
            DocumentError::NotJson(_) => "not-json",
            DocumentError::ClientIdMismatch => "client-id-mismatch",
            DocumentError::Metadata(_) => "invalid-metadata",
            DocumentError::Busy(_) => "busy",
        }
    }

    /// The `error_description`.
    pub(crate) fn description(&self) -> String {
        match self {
            DocumentError::InvalidUrl(d) => {
                format!("the client_id is not a usable metadata document URL: {d}")
            }
            DocumentError::PrivateAddress(d) => format!(
                "the client's metadata document is on a private or loopback address, which \
                 this server does not fetch: {d}"
            ),
            DocumentError::FetchFailed(d) => {
                format!("the client's metadata document could not be fetched: {d}")
            }
            DocumentError::TooSlow(bound) => format!(
                "the client's metadata document did not arrive within {} s",
                bound.as_secs()
            ),
            DocumentError::TooBig(bound) => {
                format!("the client's metadata document is over {bound} bytes")
            }
            DocumentError::NotJson(d) => {
                format!("the client's metadata document is not a JSON object: {d}")
            }
            DocumentError::ClientIdMismatch => {
                "the client_id in the client's metadata document is not the document's URL"
                    .to_owned()
            }
            DocumentError::Metadata(d) => {
                format!("the client's metadata document cannot be used: {d}")
            }
            DocumentError::Busy(d) => d.clone(),
        }
    }
}

/// Whether `client_id` names a metadata document (rather than a registered or configured
/// client): an `https` URL, or with `allow_loopback` (tests only) an `http` one.
pub(crate) fn is_document_id(client_id: &str, allow_loopback: bool) -> bool {
    client_id.starts_with("https://") || (allow_loopback && client_id.starts_with("http://"))
}

/// Whether `host` is the loopback interface (`localhost`, `127.0.0.0/8`, `[::1]`).
pub(crate) fn is_loopback_host(host: &Host<&str>) -> bool {
    match host {
        Host::Ipv4(ip) => ip.is_loopback(),
        Host::Ipv6(ip) => ip.is_loopback(),
        Host::Domain(d) => d.eq_ignore_ascii_case("localhost"),
    }
}

/// The document URL `client_id` is, checked (draft §3): `https`, a path other than `/`, no
/// fragment, no credentials, and written as its normal form (ids are compared as strings,
/// never normalized, so a URL whose parse differs, such as one with `..` segments, is
/// refused). `allow_loopback` (tests only) also takes `http` on loopback.
pub(crate) fn check_url(client_id: &str, allow_loopback: bool) -> Result<Url, DocumentError> {
    let invalid = |why: &str| Err(DocumentError::InvalidUrl(why.to_owned()));
    if client_id.len() > MAX_DOCUMENT_URL_BYTES {
        return invalid("it is longer than 2048 bytes");
    }
    let Ok(url) = Url::parse(client_id) else {
        return invalid("it is not a URL");
    };
    let Some(host) = url.host() else {
        return invalid("it has no host");
    };
    match url.scheme() {
        "https" => {}
        "http" if allow_loopback && is_loopback_host(&host) => {}
        _ => return invalid("it must be an https URL"),
    }
    if url.path() == "/" || url.path().is_empty() {
        return invalid("it must have a path");
    }
    if url.fragment().is_some() || client_id.contains('#') {
        return invalid("it must not have a fragment");
    }
    if !url.username().is_empty() || url.password().is_some() {
        return invalid("it must not carry credentials");
    }
    if url.as_str() != client_id {
        return invalid("it must be written in normal form (no dot segments, a lowercase host)");
    }
    Ok(url)
}

/// The client the document `bytes` fetched from `url` describes (draft §4, §6): a JSON
/// object whose `client_id` is `url` exactly, listing 1 to 8 redirect URIs this server
/// accepts, a public client (`token_endpoint_auth_method` absent or `none`: a secret or a key
/// is refused, this server verifies neither), using the code grant and response type.
pub(crate) fn parse(url: &Url, bytes: &[u8]) -> Result<DocumentClient, DocumentError> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        let mut why = e.to_string();
        why.truncate(200);
        DocumentError::NotJson(why)
    })?;
    let Value::Object(doc) = value else {
        return Err(DocumentError::NotJson(
            "the body is JSON but not an object".into(),
        ));
    };
    if doc.get("client_id").and_then(Value::as_str) != Some(url.as_str()) {
        return Err(DocumentError::ClientIdMismatch);
    }
    let metadata = |why: String| Err(DocumentError::Metadata(why));
    let redirect_uris: Vec<String> = match doc.get("redirect_uris") {
        Some(Value::Array(uris)) => {
            let strings: Option<Vec<String>> =
                uris.iter().map(|u| u.as_str().map(str::to_owned)).collect();
            match strings {
                Some(s) => s,
                None => return metadata("redirect_uris must be strings".into()),
            }
        }
        _ => return metadata("redirect_uris is missing".into()),
    };
    if redirect_uris.is_empty() || redirect_uris.len() > MAX_REDIRECT_URIS {
        return metadata(format!(
            "redirect_uris must list 1 to {MAX_REDIRECT_URIS} URIs"
        ));
    }
    for uri in &redirect_uris {
        redirect::check_registrable(uri).map_err(DocumentError::Metadata)?;
    }
    let host = url.host_str().unwrap_or_default().to_owned();
    let client_name = match doc.get("client_name") {
        None | Some(Value::Null) => host.clone(),
        Some(Value::String(name))
            if !name.trim().is_empty()
                && name.chars().count() <= MAX_CLIENT_NAME_CHARS
                && !name.chars().any(char::is_control) =>
        {
            name.trim().to_owned()
        }
        Some(_) => {
            return metadata(format!(
                "client_name must be 1 to {MAX_CLIENT_NAME_CHARS} characters without control \
                 characters"
            ))
        }
    };
    match doc.get("token_endpoint_auth_method") {
        None | Some(Value::Null) => {}
        Some(Value::String(m)) if m == "none" => {}
        Some(other) => {
            return metadata(format!(
                "token_endpoint_auth_method {other} is not accepted: this server verifies no \
                 client secret or key, so a document's client must be public (\"none\")"
            ))
        }
    }
    if doc.contains_key("client_secret") || doc.contains_key("client_secret_expires_at") {
        return metadata("a metadata document must not carry a client_secret".into());
    }
    if !lists(&doc, "grant_types", "authorization_code") {
        return metadata("grant_types does not include authorization_code".into());
    }
    if !lists(&doc, "response_types", "code") {
        return metadata("response_types does not include code".into());
    }
    Ok(DocumentClient {
        client_id: url.as_str().to_owned(),
        client_name,
        redirect_uris,
        host,
    })
}

/// Whether the array `field` of `doc` is absent or lists `value`.
fn lists(doc: &serde_json::Map<String, Value>, field: &str, value: &str) -> bool {
    match doc.get(field) {
        None | Some(Value::Null) => true,
        Some(Value::Array(items)) => items.iter().any(|i| i.as_str() == Some(value)),
        Some(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ID: &str = "https://client.example/oauth/client.json";

    fn parsed(doc: Value) -> Result<DocumentClient, DocumentError> {
        parse(&Url::parse(ID).unwrap(), doc.to_string().as_bytes())
    }

    #[test]
    fn which_ids_are_document_urls() {
        assert!(check_url(ID, false).is_ok());
        assert!(check_url("https://client.example:8443/c?v=1", false).is_ok());
        for bad in [
            "https://client.example",
            "https://client.example/",
            "https://client.example/a/../b",
            "https://client.example/c#frag",
            "https://user:pw@client.example/c",
            "https://CLIENT.example/c",
            "http://client.example/c",
            "http://localhost:8/c",
            "https://",
        ] {
            assert!(
                matches!(check_url(bad, false), Err(DocumentError::InvalidUrl(_))),
                "{bad}"
            );
        }
        assert!(check_url("http://localhost:8/c", true).is_ok());
        assert!(check_url("http://client.example/c", true).is_err());
        assert!(is_document_id(ID, false));
        assert!(!is_document_id(
            "1b4e28ba-2fa1-11d2-883f-0016d3cca427",
            false
        ));
        assert!(!is_document_id("http://localhost/c", false));
    }

    #[test]
    fn a_good_document_stands_for_a_public_client() {
        let client = parsed(json!({
            "client_id": ID, "client_name": " Claude ",
            "redirect_uris": ["https://claude.ai/cb", "http://127.0.0.1/cb"],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"], "token_endpoint_auth_method": "none",
            "logo_uri": "https://client.example/logo.png",
        }))
        .unwrap();
        assert_eq!(client.client_name, "Claude");
        assert_eq!(client.host, "client.example");
        assert_eq!(client.redirect_uris.len(), 2);
        let unnamed = parsed(json!({"client_id": ID, "redirect_uris": ["https://a.example/cb"]}));
        assert_eq!(unnamed.unwrap().client_name, "client.example");
    }

    #[test]
    fn each_bad_document_is_refused_with_its_reason() {
        let url = Url::parse(ID).unwrap();
        let reason = |r: Result<DocumentClient, DocumentError>| r.unwrap_err().reason();
        assert_eq!(reason(parse(&url, b"<html>")), "not-json");
        assert_eq!(reason(parsed(json!(["a"]))), "not-json");
        let redirect = json!(["https://a.example/cb"]);
        assert_eq!(
            reason(parsed(
                json!({"client_id": "https://client.example/other", "redirect_uris": redirect})
            )),
            "client-id-mismatch"
        );
        assert_eq!(
            reason(parsed(json!({"redirect_uris": redirect}))),
            "client-id-mismatch"
        );
        for bad in [
            json!({"client_id": ID}),
            json!({"client_id": ID, "redirect_uris": []}),
            json!({"client_id": ID, "redirect_uris": ["http://evil.example/cb"]}),
            json!({"client_id": ID, "redirect_uris": [1]}),
            json!({"client_id": ID, "redirect_uris": redirect, "token_endpoint_auth_method": "private_key_jwt"}),
            json!({"client_id": ID, "redirect_uris": redirect, "client_secret": "s"}),
            json!({"client_id": ID, "redirect_uris": redirect, "grant_types": ["client_credentials"]}),
            json!({"client_id": ID, "redirect_uris": redirect, "response_types": ["token"]}),
            json!({"client_id": ID, "redirect_uris": redirect, "client_name": "a\u{1b}[31m"}),
            json!({"client_id": ID, "redirect_uris": redirect, "client_name": 7}),
        ] {
            assert_eq!(reason(parsed(bad.clone())), "invalid-metadata", "{bad}");
        }
    }
}
