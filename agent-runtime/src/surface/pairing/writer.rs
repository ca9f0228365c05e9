//! The writing half of a paired socket (`docs/pairing.md` §Bounds), and what keeps the peer's
//! text out of the server's log raw.
//!
//! The writer sends what the hub queued, each frame within the write timeout (past it the
//! socket is dropped). On the close signal it stops whatever write is under way and gets the
//! close grace to flush what is queued and the close frame (then holds the socket 250 ms, so
//! the peer can read it); then the socket is dropped, whether the peer reads or not.

use std::time::{Duration, Instant};

use axum::extract::ws::{CloseFrame, Message, WebSocket};
use futures::stream::SplitSink;
use futures::SinkExt as _;

use crate::engine::paired::outbound::{OutboundRx, Outgoing};

/// How long a socket is kept after its close frame was sent, for the peer to read it.
pub(super) const CLOSE_LINGER: Duration = Duration::from_millis(250);

/// Invalid-frame warnings logged per socket and window; the rest are counted.
const WARNINGS_PER_WINDOW: u32 = 5;
/// The window of [`WARNINGS_PER_WINDOW`].
const WARNING_WINDOW: Duration = Duration::from_secs(10);

fn message(out: Outgoing) -> Message {
    match out {
        Outgoing::Text(t) => Message::Text(t.into()),
        Outgoing::Ping => Message::Ping(Default::default()),
    }
}

/// Writes the frames of `out` to `sink` until the close signal, a failed write or a write
/// over `write_timeout`.
pub(super) async fn write(
    mut sink: SplitSink<WebSocket, Message>,
    mut out: OutboundRx,
    write_timeout: Duration,
    grace: Duration,
) {
    let mut signal = out.close_signal();
    let code = loop {
        let next = tokio::select! {
            biased;
            code = signal.closed() => Err(code),
            next = out.recv() => Ok(next),
        };
        let item = match next {
            Err(code) => break code,
            Ok(None) => return,
            Ok(Some(item)) => item,
        };
        let bytes = item.bytes();
        let sent = tokio::select! {
            biased;
            code = signal.closed() => Err(code),
            r = tokio::time::timeout(write_timeout, sink.send(message(item))) => Ok(r),
        };
        match sent {
            Err(code) => break code,
            Ok(Ok(Ok(()))) => out.sent(bytes),
            Ok(Ok(Err(_))) => return,
            Ok(Err(_)) => {
                tracing::warn!(
                    timeout_ms = write_timeout.as_millis() as u64,
                    "pairing: a frame was not written in time; dropping the socket"
                );
                return;
            }
        }
    };
    let closed = tokio::time::timeout(grace, async {
        while let Some(item) = out.try_recv() {
            let bytes = item.bytes();
            sink.send(message(item)).await?;
            out.sent(bytes);
        }
        sink.send(Message::Close(Some(CloseFrame {
            code,
            reason: Default::default(),
        })))
        .await
    })
    .await;
    if matches!(closed, Ok(Ok(()))) {
        // Keep the socket a moment so the peer reads the close frame before the connection
        // goes (input left unread would otherwise reset it at once).
        tokio::time::sleep(CLOSE_LINGER.min(grace)).await;
    }
}

/// Text a peer chose, made safe for one log line: at most `max` bytes (cut on a character
/// boundary, then `…`), with newlines, escape characters and every other control character
/// escaped as Rust does (`\n`, `\u{1b}`).
pub(crate) fn escaped(text: &str, max: usize) -> String {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut s: String = text[..end].escape_debug().collect();
    if end < text.len() {
        s.push('…');
    }
    s
}

/// The rate limit of one socket's invalid-frame warnings: [`WARNINGS_PER_WINDOW`] per
/// [`WARNING_WINDOW`].
#[derive(Debug, Default)]
pub(super) struct WarnLimit {
    window: Option<Instant>,
    logged: u32,
    suppressed: u64,
}

impl WarnLimit {
    /// Whether to log one more warning at `now`: `Some(n)` with the warnings suppressed since
    /// the last one logged, `None` to stay silent.
    pub(super) fn allow(&mut self, now: Instant) -> Option<u64> {
        if self
            .window
            .is_none_or(|start| now.duration_since(start) >= WARNING_WINDOW)
        {
            self.window = Some(now);
            self.logged = 0;
        }
        if self.logged < WARNINGS_PER_WINDOW {
            self.logged += 1;
            Some(std::mem::take(&mut self.suppressed))
        } else {
            self.suppressed += 1;
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_text_is_escaped_and_cut() {
        let forged = "x\n2026-01-01T00:00:00Z ERROR forged\u{1b}[31m";
        let line = escaped(forged, 200);
        assert!(!line.contains('\n') && !line.contains('\u{1b}'), "{line}");
        assert_eq!(line, "x\\n2026-01-01T00:00:00Z ERROR forged\\u{1b}[31m");
        assert_eq!(escaped("ééé", 3), "é…");
        assert_eq!(escaped(&"a".repeat(1000), 10).len(), 10 + '…'.len_utf8());
    }

    #[test]
    fn warnings_are_rate_limited_per_window() {
        let mut limit = WarnLimit::default();
        let t0 = Instant::now();
        let logged: Vec<_> = (0..8).map(|_| limit.allow(t0)).collect();
        assert_eq!(logged.iter().filter(|l| l.is_some()).count(), 5);
        assert_eq!(limit.allow(t0 + WARNING_WINDOW), Some(3));
        assert_eq!(limit.allow(t0 + WARNING_WINDOW), Some(0));
    }
}
