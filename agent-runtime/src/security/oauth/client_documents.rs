//! The clients known by their metadata documents: each document fetched (`document_fetch`),
//! checked (`metadata_document`) and kept a while, as its `Cache-Control: max-age` asks
//! within [`MIN_CACHE`] and [`MAX_CACHE`], [`MAX_CACHED`] of them at most. A refused
//! document is not kept: the next request fetches it again, within the fetch bounds.

use std::collections::HashMap;
use std::time::Duration;

use parking_lot::Mutex;

use super::document_fetch::{FetchOptions, Fetcher};
use super::metadata_document::{self, DocumentClient, DocumentError};

/// Documents kept at most.
pub(crate) const MAX_CACHED: usize = 256;

/// The shortest a document is kept (`no-store` and `max-age=0` included): one consent and its
/// code's exchange use it without a second fetch.
pub(crate) const MIN_CACHE: Duration = Duration::from_secs(60);

/// The longest a document is kept, whatever its `max-age`.
pub(crate) const MAX_CACHE: Duration = Duration::from_secs(24 * 60 * 60);

/// How long a document without `max-age` is kept.
pub(crate) const DEFAULT_CACHE: Duration = Duration::from_secs(10 * 60);

struct Cached {
    client: DocumentClient,
    expires_at: u64,
}

/// The document clients of one server.
pub(crate) struct ClientDocuments {
    fetcher: Fetcher,
    allow_loopback: bool,
    cache: Mutex<HashMap<String, Cached>>,
}

impl ClientDocuments {
    /// Fetches with `options`; `Err` names a root certificate that does not read.
    pub(crate) fn new(options: &FetchOptions) -> Result<Self, String> {
        Ok(ClientDocuments {
            fetcher: Fetcher::new(options)?,
            allow_loopback: options.allow_loopback,
            cache: Mutex::new(HashMap::new()),
        })
    }

    /// Whether `client_id` names a metadata document.
    pub(crate) fn is_document_id(&self, client_id: &str) -> bool {
        metadata_document::is_document_id(client_id, self.allow_loopback)
    }

    /// The client of `client_id` if its document is kept and fresh at `now` (ms).
    pub(crate) fn cached(&self, client_id: &str, now: u64) -> Option<DocumentClient> {
        self.cache
            .lock()
            .get(client_id)
            .filter(|c| c.expires_at > now)
            .map(|c| c.client.clone())
    }

    /// The client of `client_id`: its document fetched, checked and kept.
    pub(crate) async fn fetch(
        &self,
        client_id: &str,
        now: u64,
    ) -> Result<DocumentClient, DocumentError> {
        let url = metadata_document::check_url(client_id, self.allow_loopback)?;
        let fetched = self.fetcher.fetch(&url).await?;
        let client = metadata_document::parse(&url, &fetched.body)?;
        let keep = fetched
            .max_age
            .unwrap_or(DEFAULT_CACHE)
            .clamp(MIN_CACHE, MAX_CACHE);
        self.keep(client.clone(), now, keep);
        Ok(client)
    }

    /// Keeps `client` until `now + keep`, room made by dropping the expired documents, then
    /// the one that expires first.
    fn keep(&self, client: DocumentClient, now: u64, keep: Duration) {
        let expires_at = now.saturating_add(u64::try_from(keep.as_millis()).unwrap_or(u64::MAX));
        let mut cache = self.cache.lock();
        if !cache.contains_key(&client.client_id) && cache.len() >= MAX_CACHED {
            cache.retain(|_, c| c.expires_at > now);
            if cache.len() >= MAX_CACHED {
                let first = cache
                    .iter()
                    .min_by_key(|(_, c)| c.expires_at)
                    .map(|(id, _)| id.clone());
                if let Some(first) = first {
                    cache.remove(&first);
                }
            }
        }
        cache.insert(client.client_id.clone(), Cached { client, expires_at });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(n: usize) -> DocumentClient {
        DocumentClient {
            client_id: format!("https://c{n}.example/client.json"),
            client_name: format!("C{n}"),
            redirect_uris: vec!["https://c.example/cb".into()],
            host: format!("c{n}.example"),
        }
    }

    #[test]
    fn documents_are_kept_bounded_and_expire() {
        let documents = ClientDocuments::new(&FetchOptions::default()).unwrap();
        documents.keep(client(0), 0, Duration::from_secs(60));
        assert!(documents.cached(&client(0).client_id, 59_999).is_some());
        assert!(documents.cached(&client(0).client_id, 60_000).is_none());
        for n in 1..=MAX_CACHED {
            documents.keep(client(n), 0, Duration::from_secs(100 + n as u64));
        }
        // Full: client 0 was dropped first (the soonest to expire), then client 1.
        assert_eq!(documents.cache.lock().len(), MAX_CACHED);
        assert!(documents.cached(&client(0).client_id, 0).is_none());
        documents.keep(client(MAX_CACHED + 1), 0, Duration::from_secs(1000));
        assert_eq!(documents.cache.lock().len(), MAX_CACHED);
        assert!(documents.cached(&client(1).client_id, 0).is_none());
        assert!(documents.cached(&client(2).client_id, 0).is_some());
        // Past their time the expired ones make the room.
        documents.keep(client(9999), 500_000, Duration::from_secs(60));
        assert_eq!(documents.cache.lock().len(), 2);
    }

    #[tokio::test]
    async fn an_id_that_is_not_a_document_url_is_refused_before_any_fetch() {
        let documents = ClientDocuments::new(&FetchOptions::default()).unwrap();
        assert!(documents.is_document_id("https://x.example/a/../b"));
        let refused = documents
            .fetch("https://x.example/a/../b", 0)
            .await
            .unwrap_err();
        assert_eq!(refused.reason(), "invalid-url");
    }
}
