//! Which client a `client_id` is, for the authorization and token endpoints: a configured or
//! registered one (`Clients::find`), else, when the id is a metadata document URL and
//! documents are accepted, the client its document describes (kept, or fetched).

use super::metadata_document::DocumentError;
use super::OAuth;
use crate::security::Bucket;

/// A client the endpoints may deal with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResolvedClient {
    pub(crate) client_id: String,
    pub(crate) client_name: String,
    pub(crate) redirect_uris: Vec<String>,
    /// The host publishing its metadata document; `None` for a configured or registered one.
    pub(crate) document_host: Option<String>,
}

/// Why a `client_id` is no client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ClientRefused {
    /// Neither configured nor registered (or its registration expired), nor a document URL.
    Unknown,
    /// Its metadata document does not stand for a client.
    Document(DocumentError),
    /// The store of registrations could not be read (an error, never "unknown").
    Store(crate::security::StoreError),
}

/// The client `client_id` at `now`. A document not kept is fetched; `fetcher` (the client
/// address of the request) is then counted against the endpoints' rate, so one address
/// cannot make the server fetch without end (`None`: the request was counted already).
pub(crate) async fn resolve_client(
    oauth: &OAuth,
    client_id: &str,
    now: u64,
    fetcher: Option<&str>,
) -> Result<ResolvedClient, ClientRefused> {
    let registered = oauth
        .clients
        .find(client_id, now)
        .await
        .map_err(ClientRefused::Store)?;
    if let Some(c) = registered {
        return Ok(ResolvedClient {
            client_id: c.client_id,
            client_name: c.client_name,
            redirect_uris: c.redirect_uris,
            document_host: None,
        });
    }
    let Some(documents) = oauth
        .documents
        .as_ref()
        .filter(|d| d.is_document_id(client_id))
    else {
        return Err(ClientRefused::Unknown);
    };
    let client = match documents.cached(client_id, now) {
        Some(client) => client,
        None => {
            if let Some(address) = fetcher {
                if let Err(limited) = oauth.limiter.check(address, Bucket::Identity) {
                    return Err(ClientRefused::Document(DocumentError::Busy(format!(
                        "too many requests from this address; retry in {} s",
                        limited.retry_after_secs()
                    ))));
                }
            }
            documents
                .fetch(client_id, now)
                .await
                .map_err(ClientRefused::Document)?
        }
    };
    Ok(ResolvedClient {
        client_id: client.client_id,
        client_name: client.client_name,
        redirect_uris: client.redirect_uris,
        document_host: Some(client.host),
    })
}
