//! The body-read timeout: a request body that fails when it produces no data for the timeout
//! while it is read, its timer armed only while the body waits for bytes.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// A request body that fails when it produces no data for `timeout` while it is read.
///
/// The timer is armed when the body has nothing ready and dropped as soon as a frame comes,
/// so a body already in the connection's buffer never registers one (unlike
/// `tower_http::timeout::TimeoutBody`, which arms it before every read).
pub(super) struct ReadTimeoutBody<B> {
    pub(super) body: B,
    pub(super) timeout: Duration,
    pub(super) sleep: Option<Pin<Box<tokio::time::Sleep>>>,
}

/// The error of a request body that produced no data within the body-read timeout.
#[derive(Debug)]
struct BodyReadTimedOut(Duration);

impl std::fmt::Display for BodyReadTimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the request body sent nothing for {:?}", self.0)
    }
}

impl std::error::Error for BodyReadTimedOut {}

impl<B> hyper::body::Body for ReadTimeoutBody<B>
where
    B: hyper::body::Body + Unpin,
    B::Error: Into<axum::BoxError>,
{
    type Data = B::Data;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        let this = &mut *self;
        if let Poll::Ready(frame) = Pin::new(&mut this.body).poll_frame(cx) {
            this.sleep = None;
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        let timeout = this.timeout;
        let sleep = this
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyReadTimedOut(timeout))))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use std::future::poll_fn;

    use axum::body::Bytes;
    use http_body_util::Full;
    use hyper::body::{Body as _, Frame};

    use std::time::Instant;

    use super::*;

    /// A body that never produces anything: a client that stopped sending.
    struct Stalled;

    impl hyper::body::Body for Stalled {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            Poll::Pending
        }
    }

    fn bounded<B>(body: B) -> ReadTimeoutBody<B> {
        ReadTimeoutBody {
            body,
            timeout: Duration::from_millis(50),
            sleep: None,
        }
    }

    #[tokio::test]
    async fn a_body_already_read_arms_no_timer() {
        let mut body = bounded(Full::new(Bytes::from_static(b"{\"msg\":1}")));
        let frame = poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await;
        let data = frame.expect("a frame").expect("no error").into_data();
        assert_eq!(data.expect("data").as_ref(), b"{\"msg\":1}");
        assert!(body.sleep.is_none(), "a ready body registered a timer");
        assert!(poll_fn(|cx| Pin::new(&mut body).poll_frame(cx))
            .await
            .is_none());
        assert!(body.sleep.is_none());
    }

    #[tokio::test]
    async fn a_stalled_body_fails_after_the_timeout() {
        let mut body = bounded(Stalled);
        let started = Instant::now();
        let frame = poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await;
        let error = frame.expect("an end").expect_err("a timeout");
        assert!(started.elapsed() >= Duration::from_millis(50));
        assert_eq!(error.to_string(), "the request body sent nothing for 50ms");
    }
}
