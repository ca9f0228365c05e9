//! The connection's watchdog: what a connection did and when (its socket's reads and writes,
//! the requests it serves), and the one timer that closes it when idle or when it waits for a
//! request head past the header-read timeout.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// What a connection did and when (ms since `start`): its last byte read or written, how many
/// requests it is serving, since when it serves none, and whether it speaks HTTP/2.
#[derive(Clone)]
pub(super) struct Activity {
    start: Instant,
    shared: Arc<ActivityState>,
}

#[derive(Default)]
struct ActivityState {
    last_ms: AtomicU64,
    serving: AtomicU32,
    /// When `serving` last went to 0 (or the connection opened): since then the connection
    /// has been waiting for a request head.
    waiting_since_ms: AtomicU64,
    http2: AtomicBool,
}

/// Why the watchdog closed a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Closed {
    Idle,
    HeaderTimeout,
}

impl std::fmt::Display for Closed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Closed::Idle => "idle",
            Closed::HeaderTimeout => "no whole request head within the header-read timeout",
        })
    }
}

impl Activity {
    pub(super) fn new() -> Self {
        Activity {
            start: Instant::now(),
            shared: Arc::default(),
        }
    }

    fn now_ms(&self) -> u64 {
        millis(self.start.elapsed())
    }

    fn touch(&self) {
        self.shared.last_ms.store(self.now_ms(), Ordering::Relaxed);
    }

    /// Resolves when the connection must close: nothing read or written for `idle`, or, on
    /// HTTP/1, no request served and no whole head received for `header` (a slow or absent
    /// head, or a keep-alive connection that sends no next request). One timer per
    /// connection, woken every quarter of the shorter timeout, so a connection is closed
    /// within 1.25 times its timeout and a request costs no timer of its own.
    pub(super) async fn watch(&self, header: Duration, idle: Duration) -> Closed {
        let tick = (header.min(idle) / 4).max(Duration::from_millis(5));
        let (header_ms, idle_ms) = (millis(header), millis(idle));
        let state = &*self.shared;
        loop {
            tokio::time::sleep(tick).await;
            let now = self.now_ms();
            if now.saturating_sub(state.last_ms.load(Ordering::Relaxed)) >= idle_ms {
                return Closed::Idle;
            }
            let waiting =
                state.serving.load(Ordering::Acquire) == 0 && !state.http2.load(Ordering::Relaxed);
            if waiting
                && now.saturating_sub(state.waiting_since_ms.load(Ordering::Acquire)) >= header_ms
            {
                return Closed::HeaderTimeout;
            }
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A request being served on its connection: counted from its head until dropped.
pub(super) struct Serving(Activity);

impl Serving {
    pub(super) fn start(activity: &Activity, version: hyper::Version) -> Self {
        let state = &activity.shared;
        if version == hyper::Version::HTTP_2 {
            // Streams come and go on HTTP/2 without a head to wait for: only idle applies.
            state.http2.store(true, Ordering::Relaxed);
        }
        state.serving.fetch_add(1, Ordering::AcqRel);
        Serving(activity.clone())
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let state = &self.0.shared;
        // The time first: the watchdog reads `serving` then the time.
        state
            .waiting_since_ms
            .store(self.0.now_ms(), Ordering::Release);
        state.serving.fetch_sub(1, Ordering::AcqRel);
    }
}

/// An answer's body that keeps its request counted as served until hyper drops it.
pub(super) struct Served<B> {
    pub(super) body: B,
    /// Dropped with the body.
    pub(super) _serving: Serving,
}

impl<B: hyper::body::Body + Unpin> hyper::body::Body for Served<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// A socket that records its activity.
pub(super) struct ActivityIo {
    pub(super) inner: TcpStream,
    pub(super) activity: Activity,
}

impl AsyncRead for ActivityIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(poll, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.touch();
        }
        poll
    }
}

impl AsyncWrite for ActivityIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(poll, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        poll
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(poll, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        poll
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
