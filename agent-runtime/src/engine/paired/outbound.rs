//! The outbound side of one paired socket (`docs/pairing.md` §Bounds): frames queued as text,
//! bounded in bytes, and a close signal that does not wait behind them, so a socket whose peer
//! stops reading can always be closed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::{mpsc, watch};

use super::frames::ServerFrame;

/// Close codes the server sends (RFC 6455 §7.4.1).
pub(crate) mod close_code {
    /// Normal closure: superseded by a newer socket, revoked, refused version.
    pub(crate) const NORMAL: u16 = 1000;
    /// Going away: the socket stopped answering pings.
    pub(crate) const AWAY: u16 = 1001;
    /// A protocol error.
    pub(crate) const PROTOCOL: u16 = 1002;
    /// Data that is not what the frame says (invalid UTF-8 text).
    pub(crate) const PAYLOAD: u16 = 1007;
    /// A policy violation: no `hello` in time, too many invalid frames.
    pub(crate) const POLICY: u16 = 1008;
    /// A message over the frame cap.
    pub(crate) const TOO_BIG: u16 = 1009;
    /// The server could not do its part (the token store failed on accept).
    pub(crate) const INTERNAL: u16 = 1011;
}

/// What the writer of a socket sends.
#[derive(Debug)]
pub(crate) enum Outgoing {
    /// A text frame.
    Text(String),
    /// A ping (liveness).
    Ping,
}

impl Outgoing {
    /// Its bytes in the queue.
    pub(crate) fn bytes(&self) -> usize {
        match self {
            Outgoing::Text(t) => t.len(),
            Outgoing::Ping => 0,
        }
    }
}

/// Why a frame was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The socket is closing or gone.
    Closed,
    /// The queue is full: the app is not reading its socket.
    Full,
}

/// The hub's handle on a socket's queue.
#[derive(Debug)]
pub(crate) struct Outbound {
    tx: mpsc::UnboundedSender<Outgoing>,
    queued: Arc<AtomicUsize>,
    limit: usize,
    close: watch::Sender<Option<u16>>,
}

/// The writer's end: frames in order, and the close signal.
#[derive(Debug)]
pub(crate) struct OutboundRx {
    rx: mpsc::UnboundedReceiver<Outgoing>,
    queued: Arc<AtomicUsize>,
    close: watch::Receiver<Option<u16>>,
}

/// A queue holding at most `limit` bytes of text (one frame is always accepted into an empty
/// queue, so a frame up to the frame cap can be sent).
pub(crate) fn outbound(limit: usize) -> (Outbound, OutboundRx) {
    let (tx, rx) = mpsc::unbounded_channel();
    let queued = Arc::new(AtomicUsize::new(0));
    let (close, close_rx) = watch::channel(None);
    (
        Outbound {
            tx,
            queued: queued.clone(),
            limit,
            close,
        },
        OutboundRx {
            rx,
            queued,
            close: close_rx,
        },
    )
}

impl Outbound {
    /// Queues `frame`.
    pub(crate) fn push(&self, frame: &ServerFrame) -> Result<(), Refused> {
        self.queue(Outgoing::Text(frame.to_text()))
    }

    /// Queues a ping.
    pub(crate) fn ping(&self) -> Result<(), Refused> {
        self.queue(Outgoing::Ping)
    }

    fn queue(&self, out: Outgoing) -> Result<(), Refused> {
        if self.close.borrow().is_some() || self.tx.is_closed() {
            return Err(Refused::Closed);
        }
        let n = out.bytes();
        let before = self.queued.fetch_add(n, Ordering::AcqRel);
        if before > 0 && before + n > self.limit {
            self.queued.fetch_sub(n, Ordering::AcqRel);
            return Err(Refused::Full);
        }
        self.tx.send(out).map_err(|_| {
            self.queued.fetch_sub(n, Ordering::AcqRel);
            Refused::Closed
        })
    }

    /// Tells the writer to close with `code` (the first code given wins). Frames already
    /// queued get the writer's short close grace; a blocked write does not hold the close.
    pub(crate) fn close(&self, code: u16) {
        self.close.send_if_modified(|c| {
            if c.is_none() {
                *c = Some(code);
                true
            } else {
                false
            }
        });
    }

    /// Bytes queued now.
    #[cfg(test)]
    fn queued(&self) -> usize {
        self.queued.load(Ordering::Acquire)
    }
}

impl OutboundRx {
    /// The next frame; `None` when the hub dropped the socket.
    pub(crate) async fn recv(&mut self) -> Option<Outgoing> {
        self.rx.recv().await
    }

    /// A frame already queued, without waiting.
    pub(crate) fn try_recv(&mut self) -> Option<Outgoing> {
        self.rx.try_recv().ok()
    }

    /// Marks a frame of `bytes` as written (its bytes leave the queue).
    pub(crate) fn sent(&self, bytes: usize) {
        self.queued.fetch_sub(bytes, Ordering::AcqRel);
    }

    /// The close signal, to wait on beside [`OutboundRx::recv`].
    pub(crate) fn close_signal(&self) -> CloseSignal {
        CloseSignal(self.close.clone())
    }
}

/// The close signal of a socket.
#[derive(Debug)]
pub(crate) struct CloseSignal(watch::Receiver<Option<u16>>);

impl CloseSignal {
    /// Waits for the close signal; answers its code (`NORMAL` when the hub dropped the socket).
    pub(crate) async fn closed(&mut self) -> u16 {
        match self.0.wait_for(Option::is_some).await {
            Ok(code) => code.unwrap_or(close_code::NORMAL),
            Err(_) => close_code::NORMAL,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_in_bytes_and_closed_at_once() {
        let (out, mut rx) = outbound(100);
        let big = ServerFrame::Unwatch {
            id: "x".repeat(150),
        };
        // One frame always fits an empty queue; then the bytes count.
        assert_eq!(out.push(&big), Ok(()));
        assert_eq!(out.push(&ServerFrame::Active {}), Err(Refused::Full));
        let first = rx.try_recv().unwrap();
        rx.sent(first.bytes());
        assert_eq!(out.queued(), 0);
        assert_eq!(out.push(&ServerFrame::Active {}), Ok(()));
        out.close(close_code::TOO_BIG);
        out.close(close_code::NORMAL);
        assert_eq!(out.push(&ServerFrame::Active {}), Err(Refused::Closed));
        let code = futures::executor::block_on(rx.close_signal().closed());
        assert_eq!(code, close_code::TOO_BIG);
    }
}
