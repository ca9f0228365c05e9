//! An HTTPS server of Client ID Metadata Documents for the OAuth tests: a throwaway CA made
//! here (rcgen) signs a certificate for `localhost`; the server under test trusts the CA
//! through `OAuthOptions::test_document_roots`. Each path answers what the test set for it
//! (a document, a slow one, a big one, a redirect…) and counts its fetches.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::response::Response;
use axum::Router;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use serde_json::{json, Value};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::{crypto::ring, ServerConfig};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

/// What a path answers.
#[derive(Clone)]
pub(crate) struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
    /// Sent without `Content-Length` (chunked).
    chunked: bool,
    delay: Duration,
}

impl Reply {
    /// 200 with `doc` as JSON, kept for `max_age` seconds.
    pub(crate) fn json(doc: &Value) -> Self {
        Reply {
            status: 200,
            headers: vec![
                ("content-type", "application/json".into()),
                ("cache-control", "max-age=300".into()),
            ],
            body: doc.to_string().into_bytes(),
            chunked: false,
            delay: Duration::ZERO,
        }
    }

    /// 200 with `body` as it is.
    pub(crate) fn raw(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Reply {
            status,
            headers: vec![("content-type", content_type.to_owned())],
            body: body.into(),
            chunked: false,
            delay: Duration::ZERO,
        }
    }

    /// A redirect to `location`.
    pub(crate) fn redirect(location: &str) -> Self {
        let mut reply = Reply::raw(302, "text/plain", "moved");
        reply.headers.push(("location", location.to_owned()));
        reply
    }

    /// The same, answered after `delay`.
    pub(crate) fn after(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// The same, sent without `Content-Length`.
    pub(crate) fn chunked(mut self) -> Self {
        self.chunked = true;
        self
    }
}

/// The document a well-behaved client publishes at `url`: a public client named `name`
/// redirecting to `redirect`.
pub(crate) fn document(url: &str, name: &str, redirect: &str) -> Value {
    json!({
        "client_id": url,
        "client_name": name,
        "redirect_uris": [redirect],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    })
}

type Routes = Arc<Mutex<HashMap<String, (Reply, usize)>>>;

/// The running server.
pub(crate) struct DocumentServer {
    /// `https://localhost:<port>`.
    pub(crate) base: String,
    /// The CA's certificate, PEM: what the server under test must trust.
    pub(crate) root_pem: String,
    routes: Routes,
}

impl DocumentServer {
    /// Starts on a loopback port.
    pub(crate) async fn start() -> Self {
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(rcgen::DnType::CommonName, "agent test documents CA");
        let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().expect("CA key"))
            .expect("CA certificate");
        let params = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .expect("server params");
        let key = KeyPair::generate().expect("server key");
        let cert = params.signed_by(&key, &ca).expect("server certificate");
        let config = ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .expect("TLS config");
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("address").port();
        let routes: Routes = Arc::default();
        let serve_routes = routes.clone();
        let app = Router::new().fallback(move |req: Request| answer(serve_routes.clone(), req));
        let tls = TlsListener {
            tcp: listener,
            acceptor: TlsAcceptor::from(Arc::new(config)),
        };
        tokio::spawn(async move {
            let _ = axum::serve(tls, app).await;
        });
        DocumentServer {
            base: format!("https://localhost:{port}"),
            root_pem: ca.pem(),
            routes,
        }
    }

    /// The URL of `path` (`/client.json`).
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// `path` answers `reply` from now on.
    pub(crate) fn serve(&self, path: &str, reply: Reply) {
        self.routes
            .lock()
            .unwrap()
            .insert(path.to_owned(), (reply, 0));
    }

    /// How many times `path` was fetched.
    pub(crate) fn fetches(&self, path: &str) -> usize {
        self.routes.lock().unwrap().get(path).map_or(0, |(_, n)| *n)
    }
}

async fn answer(routes: Routes, req: Request) -> Response {
    let reply = {
        let mut routes = routes.lock().unwrap();
        match routes.get_mut(req.uri().path()) {
            Some((reply, fetches)) => {
                *fetches += 1;
                Some(reply.clone())
            }
            None => None,
        }
    };
    let Some(reply) = reply else {
        let mut response = Response::new(Body::from("not found"));
        *response.status_mut() = StatusCode::NOT_FOUND;
        return response;
    };
    tokio::time::sleep(reply.delay).await;
    let body = if reply.chunked {
        let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
            reply.body.chunks(1024).map(|c| Ok(c.to_vec())).collect();
        Body::from_stream(futures::stream::iter(chunks))
    } else {
        Body::from(reply.body)
    };
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::from_u16(reply.status).expect("a status");
    for (name, value) in reply.headers {
        response
            .headers_mut()
            .insert(name, value.parse().expect("a header value"));
    }
    response
}

/// TLS over a TCP listener, for `axum::serve`: a handshake that fails drops that connection.
struct TlsListener {
    tcp: TcpListener,
    acceptor: TlsAcceptor,
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((stream, addr)) = self.tcp.accept().await else {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            };
            if let Ok(tls) = self.acceptor.accept(stream).await {
                return (tls, addr);
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}
