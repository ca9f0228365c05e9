//! Fetching a client's metadata document: the one request this server makes to an address a
//! caller names, so it is bounded every way (`docs/authorization.md` §Client ID Metadata
//! Documents): `https` only, no redirect followed, no proxy, at most
//! [`MAX_DOCUMENT_BYTES`] read whatever `Content-Length` says, [`FETCH_TIMEOUT`] for the
//! whole exchange, [`MAX_FETCHES_IN_FLIGHT`] at once, and never to a loopback, private or
//! reserved address (SSRF): the addresses a name resolves to are checked by the resolver
//! the connection uses, so a name that changes its answer between a check and the connect
//! gains nothing.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use tokio::sync::Semaphore;
use url::{Host, Url};

use super::metadata_document::DocumentError;

/// The largest document read, in bytes (the draft's recommended 5 KiB).
pub(crate) const MAX_DOCUMENT_BYTES: usize = 5 * 1024;

/// The longest a fetch takes, from the connect to the last byte.
pub(crate) const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// Documents fetched at once at most; past it a request is answered
/// `temporarily_unavailable`.
pub(crate) const MAX_FETCHES_IN_FLIGHT: usize = 8;

/// What the fetcher accepts beyond the rules: test settings only.
#[derive(Debug, Clone, Default)]
pub(crate) struct FetchOptions {
    /// Fetch from loopback addresses, over `http` too (`OAuthOptions::test_loopback_documents`).
    pub(crate) allow_loopback: bool,
    /// Extra trusted root certificates, PEM (`OAuthOptions::test_document_roots`).
    pub(crate) root_certificates: Vec<String>,
}

/// A document as fetched: its body and its `Cache-Control: max-age`, if any.
#[derive(Debug)]
pub(crate) struct Fetched {
    pub(crate) body: Vec<u8>,
    /// `Some(0)` for `no-store` or `no-cache`.
    pub(crate) max_age: Option<Duration>,
}

/// The HTTP client of the document fetches.
pub(crate) struct Fetcher {
    client: reqwest::Client,
    in_flight: Arc<Semaphore>,
    allow_loopback: bool,
}

/// The refusal the resolver gives for a name whose addresses are not public; found again in
/// the request's error to tell it apart from other connect failures.
#[derive(Debug)]
struct NotPublic(String);

impl std::fmt::Display for NotPublic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotPublic {}

/// A resolver that answers only public addresses (and loopback ones when allowed).
struct PublicResolver {
    allow_loopback: bool,
}

impl Resolve for PublicResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow_loopback = self.allow_loopback;
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if let Some(bad) = found.iter().find(|a| !allowed(a.ip(), allow_loopback)) {
                // One bad address refuses the name: the connect could pick any of them.
                let refused = NotPublic(format!("{host} resolves to {}", bad.ip()));
                return Err(Box::new(refused) as Box<dyn std::error::Error + Send + Sync>);
            }
            let addrs: Addrs = Box::new(found.into_iter());
            Ok(addrs)
        })
    }
}

impl Fetcher {
    /// The fetcher `options` describe; `Err` names a root certificate that does not read.
    pub(crate) fn new(options: &FetchOptions) -> Result<Self, String> {
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .connect_timeout(FETCH_TIMEOUT)
            .timeout(FETCH_TIMEOUT)
            .https_only(!options.allow_loopback)
            .pool_max_idle_per_host(0)
            .user_agent(concat!(
                "agent-runtime/",
                env!("CARGO_PKG_VERSION"),
                " (OAuth client metadata)"
            ))
            .dns_resolver(Arc::new(PublicResolver {
                allow_loopback: options.allow_loopback,
            }));
        for pem in &options.root_certificates {
            let cert = reqwest::Certificate::from_pem(pem.as_bytes())
                .map_err(|e| format!("an OAuth test root certificate does not read: {e}"))?;
            builder = builder.add_root_certificate(cert);
        }
        let client = builder
            .build()
            .map_err(|e| format!("the OAuth document client cannot start: {e}"))?;
        Ok(Fetcher {
            client,
            in_flight: Arc::new(Semaphore::new(MAX_FETCHES_IN_FLIGHT)),
            allow_loopback: options.allow_loopback,
        })
    }

    /// Fetches the document at `url` (already checked by `metadata_document::check_url`).
    pub(crate) async fn fetch(&self, url: &Url) -> Result<Fetched, DocumentError> {
        // An address written in the URL is never resolved: it is checked here.
        let literal = match url.host() {
            Some(Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
            Some(Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
            _ => None,
        };
        if let Some(ip) = literal.filter(|ip| !allowed(*ip, self.allow_loopback)) {
            return Err(DocumentError::PrivateAddress(format!("{ip}")));
        }
        let Ok(_permit) = self.in_flight.clone().try_acquire_owned() else {
            return Err(DocumentError::Busy(format!(
                "{MAX_FETCHES_IN_FLIGHT} client metadata documents are being fetched, the most \
                 at once: try again shortly"
            )));
        };
        match tokio::time::timeout(FETCH_TIMEOUT, self.exchange(url)).await {
            Ok(fetched) => fetched,
            Err(_) => Err(DocumentError::TooSlow(FETCH_TIMEOUT)),
        }
    }

    async fn exchange(&self, url: &Url) -> Result<Fetched, DocumentError> {
        let mut response = self
            .client
            .get(url.clone())
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(failure)?;
        let status = response.status();
        if status.is_redirection() {
            return Err(DocumentError::FetchFailed(format!(
                "it answered {status}: redirects are not followed"
            )));
        }
        if status != reqwest::StatusCode::OK {
            return Err(DocumentError::FetchFailed(format!("it answered {status}")));
        }
        if response
            .content_length()
            .is_some_and(|n| n > MAX_DOCUMENT_BYTES as u64)
        {
            return Err(DocumentError::TooBig(MAX_DOCUMENT_BYTES));
        }
        let max_age = response
            .headers()
            .get_all(reqwest::header::CACHE_CONTROL)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .filter_map(max_age_of)
            .min();
        // Read with a cap: the length announced is not trusted.
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(failure)? {
            if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
                return Err(DocumentError::TooBig(MAX_DOCUMENT_BYTES));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Fetched { body, max_age })
    }
}

/// A request's failure as the document error it is.
fn failure(e: reqwest::Error) -> DocumentError {
    if e.is_timeout() {
        return DocumentError::TooSlow(FETCH_TIMEOUT);
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    let mut chain = Vec::new();
    while let Some(err) = source {
        if let Some(not_public) = not_public_in(err) {
            return DocumentError::PrivateAddress(not_public.0.clone());
        }
        chain.push(err.to_string());
        source = err.source();
    }
    let mut why = chain.join(": ");
    why.truncate(300);
    DocumentError::FetchFailed(why)
}

/// The resolver's refusal, if `err` is it (or an I/O error wrapping it, whose `source`
/// skips the wrapped error).
fn not_public_in<'a>(err: &'a (dyn std::error::Error + 'static)) -> Option<&'a NotPublic> {
    if let Some(found) = err.downcast_ref::<NotPublic>() {
        return Some(found);
    }
    err.downcast_ref::<std::io::Error>()
        .and_then(|io| io.get_ref())
        .and_then(|inner| inner.downcast_ref::<NotPublic>())
}

/// The `max-age` a `Cache-Control` value gives (`no-store`, `no-cache`: zero).
pub(crate) fn max_age_of(value: &str) -> Option<Duration> {
    let mut found = None;
    for directive in value.split(',') {
        let directive = directive.trim().to_ascii_lowercase();
        if directive == "no-store" || directive == "no-cache" {
            return Some(Duration::ZERO);
        }
        if let Some(seconds) = directive.strip_prefix("max-age=") {
            found = seconds
                .trim_matches('"')
                .parse::<u64>()
                .ok()
                .map(Duration::from_secs);
        }
    }
    found
}

/// Whether a document may be fetched from `ip`: a public address, or loopback when allowed.
pub(crate) fn allowed(ip: IpAddr, allow_loopback: bool) -> bool {
    is_public(ip) || (allow_loopback && ip.to_canonical().is_loopback())
}

/// Whether `ip` is a public unicast address: not loopback, private, link-local (cloud
/// metadata services live there), shared, documentation, benchmarking, multicast or reserved;
/// an IPv6 address embedding an IPv4 one (mapped, NAT64, 6to4) is judged by it.
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_documentation()
        || ip.is_multicast()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (b == 18 || b == 19))
        || a >= 240)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    let s = ip.segments();
    let embedded = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) reach the IPv4 address they embed.
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        return is_public_v4(embedded(s[6], s[7]));
    }
    if s[0] == 0x2002 {
        return is_public_v4(embedded(s[1], s[2]));
    }
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (s[0] & 0xfe00) == 0xfc00 // unique local
        || (s[0] & 0xffc0) == 0xfe80 // link-local
        || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated)
        || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
        || (s[0] == 0x2001 && s[1] == 0) // Teredo
        || (s[0] == 0x0100 && s[1..4] == [0, 0, 0]) // discard
        || s[0] == 0) // the rest of ::/16: IPv4-compatible and reserved
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn only_public_addresses_are_fetched_from() {
        for public in [
            "93.184.216.34",
            "1.1.1.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert!(is_public(ip(public)), "{public}");
        }
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "198.18.0.1",
            "240.0.0.1",
            "192.0.0.8",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "ff02::1",
            "2001:db8::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
            "::127.0.0.1",
        ] {
            assert!(!is_public(ip(private)), "{private}");
        }
        assert!(allowed(ip("127.0.0.1"), true));
        assert!(allowed(ip("::1"), true));
        assert!(!allowed(ip("127.0.0.1"), false));
        assert!(!allowed(ip("10.0.0.1"), true));
    }

    #[test]
    fn cache_control_gives_the_max_age() {
        assert_eq!(
            max_age_of("public, max-age=600"),
            Some(Duration::from_secs(600))
        );
        assert_eq!(max_age_of("MAX-AGE=\"30\""), Some(Duration::from_secs(30)));
        assert_eq!(max_age_of("no-store"), Some(Duration::ZERO));
        assert_eq!(max_age_of("max-age=60, no-cache"), Some(Duration::ZERO));
        assert_eq!(max_age_of("public"), None);
        assert_eq!(max_age_of("max-age=soon"), None);
    }

    #[tokio::test]
    async fn an_address_in_the_url_is_checked_before_any_connect() {
        let fetcher = Fetcher::new(&FetchOptions::default()).unwrap();
        let url = Url::parse("https://127.0.0.1:9/client.json").unwrap();
        let refused = fetcher.fetch(&url).await.unwrap_err();
        assert_eq!(refused.reason(), "private-address");
        let url = Url::parse("https://[::1]:9/client.json").unwrap();
        assert_eq!(
            fetcher.fetch(&url).await.unwrap_err().reason(),
            "private-address"
        );
    }
}
