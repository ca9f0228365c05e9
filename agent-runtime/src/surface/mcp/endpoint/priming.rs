//! SSE priming events only for the revisions that define them (`docs/mcp.md` §Event streams).
//!
//! rmcp opens every event stream with a priming event (an id, a `retry` and empty data: SEP-1699,
//! in the 2025-11-25 revision and later) whatever the client negotiated. A client of an earlier
//! revision does not expect an event without a JSON-RPC message: Gemini CLI's bundled SDK parses
//! every event's data as JSON, fails on the empty one and drops the server. So for such a client
//! the admission layer takes the events with empty data out of the streams it passes on;
//! nothing else on the wire changes.

use axum::body::Body;
use axum::http::{header, HeaderMap};
use axum::response::Response;
use bytes::Bytes;
use futures::StreamExt as _;
use rmcp::model::ProtocolVersion;

/// The first revision with priming events.
const FIRST_PRIMING_REVISION: &str = "2025-11-25";

/// What a request to `/agent/mcp` tells of its client's revision: whether the streams it is
/// answered with may open with a priming event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ClientRevision {
    primes: bool,
}

impl ClientRevision {
    /// A request of a sessionless revision (2026-07-28 and later), which all prime.
    pub(super) const SESSIONLESS: ClientRevision = ClientRevision { primes: true };

    /// A request after `initialize`, or of a sessionless revision: its `MCP-Protocol-Version`
    /// header names the negotiated revision; without one, the spec says to assume 2025-03-26.
    pub(super) fn from_headers(headers: &HeaderMap) -> Self {
        let version = headers
            .get("mcp-protocol-version")
            .and_then(|v| v.to_str().ok());
        ClientRevision {
            primes: version.is_some_and(primes),
        }
    }

    /// An `initialize` that asks for `requested`: the revision rmcp negotiates for it, the one
    /// asked for when the server speaks it over `initialize`, else the newest such one.
    pub(super) fn at_initialize(requested: Option<&str>) -> Self {
        let known = requested.and_then(|asked| {
            ProtocolVersion::KNOWN_VERSIONS
                .iter()
                .find(|v| v.as_str() == asked && v.has_initialize())
        });
        let negotiated = known.unwrap_or(&ProtocolVersion::LATEST_WITH_INITIALIZE);
        ClientRevision {
            primes: primes(negotiated.as_str()),
        }
    }

    /// `response` as this client may read it: an event stream without its empty-data events
    /// for a client before 2025-11-25, anything else as it is.
    pub(super) fn shape(self, response: Response) -> Response {
        if self.primes || !is_event_stream(response.headers()) {
            return response;
        }
        response.map(|body| {
            Body::from_stream(body.into_data_stream().filter(|chunk| {
                let keep = !chunk.as_ref().is_ok_and(is_empty_data_event);
                std::future::ready(keep)
            }))
        })
    }
}

/// Revisions are dates, so they compare as strings.
fn primes(version: &str) -> bool {
    version >= FIRST_PRIMING_REVISION
}

fn is_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

/// Whether `frame` is one whole event (rmcp's SSE body writes each event, and each keep-alive
/// comment, as a frame of its own) whose data is empty: a priming event, or the `retry` rmcp
/// sends before it closes a stream. A frame that is not a whole event is never taken out.
fn is_empty_data_event(frame: &Bytes) -> bool {
    let Some(event) = frame.strip_suffix(b"\n\n") else {
        return false;
    };
    let mut has_data = false;
    for line in event.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let (field, value) = match line.iter().position(|b| *b == b':') {
            Some(colon) => (&line[..colon], &line[colon + 1..]),
            None => (line, &[][..]),
        };
        if field == b"data" {
            let value = value.strip_prefix(b" ").unwrap_or(value);
            if !value.is_empty() {
                return false;
            }
            has_data = true;
        }
    }
    has_data
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use http_body_util::BodyExt as _;

    #[test]
    fn revisions_from_2025_11_25_prime() {
        let with = |v: &'static str| {
            let mut h = HeaderMap::new();
            h.insert("mcp-protocol-version", HeaderValue::from_static(v));
            ClientRevision::from_headers(&h).primes
        };
        assert!(!with("2025-03-26"));
        assert!(!with("2025-06-18"));
        assert!(with("2025-11-25"));
        assert!(with("2026-07-28"));
        assert!(!ClientRevision::from_headers(&HeaderMap::new()).primes);
    }

    #[test]
    fn initialize_primes_as_negotiated() {
        assert!(!ClientRevision::at_initialize(Some("2024-11-05")).primes);
        assert!(!ClientRevision::at_initialize(Some("2025-06-18")).primes);
        assert!(ClientRevision::at_initialize(Some("2025-11-25")).primes);
        // Not a revision with `initialize` (or unknown): rmcp falls back to 2025-11-25.
        assert!(ClientRevision::at_initialize(Some("2026-07-28")).primes);
        assert!(ClientRevision::at_initialize(Some("1999-01-01")).primes);
        assert!(ClientRevision::at_initialize(None).primes);
    }

    #[test]
    fn only_whole_events_with_empty_data_are_empty_data_events() {
        let empty = |s: &'static str| is_empty_data_event(&Bytes::from_static(s.as_bytes()));
        assert!(empty("data: \nid: 0\nretry: 3000\n\n"));
        assert!(empty("data:\nretry: 3000\n\n"));
        assert!(empty("data: \r\nid: 0/1\r\n\n"));
        assert!(!empty("data: {\"jsonrpc\":\"2.0\"}\nid: 1/0\n\n"));
        assert!(!empty(":\n\n"));
        assert!(!empty("id: 0\nretry: 3000\n\n"));
        assert!(!empty("data: \nid: 0"));
    }

    #[tokio::test]
    async fn an_older_client_reads_the_stream_without_its_priming_event() {
        let frames: [&'static [u8]; 3] = [
            b"data: \nid: 0\nretry: 3000\n\n",
            b"data: {\"id\":1}\nid: 1\n\n",
            b":\n\n",
        ];
        let response = || {
            let chunks = frames.map(|f| Ok::<_, std::io::Error>(Bytes::from_static(f)));
            let mut r = Response::new(Body::from_stream(futures::stream::iter(chunks)));
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream"),
            );
            r
        };
        let read = |r: Response| async move {
            let bytes = r.into_body().collect().await.unwrap().to_bytes();
            String::from_utf8(bytes.to_vec()).unwrap()
        };
        let older = ClientRevision::at_initialize(Some("2025-06-18"));
        assert_eq!(
            read(older.shape(response())).await,
            "data: {\"id\":1}\nid: 1\n\n:\n\n"
        );
        let newer = ClientRevision::at_initialize(Some("2025-11-25"));
        assert_eq!(
            read(newer.shape(response())).await,
            "data: \nid: 0\nretry: 3000\n\ndata: {\"id\":1}\nid: 1\n\n:\n\n"
        );
    }
}
