//! Who may do what, and what the server gives away: authentication throttling, CORS, the
//! identity cookie, minting labels and audit, the token lifecycle, hostile HTTP and
//! redaction. One test binary; each module was a test file of its own.

mod auth_throttle;
mod cors;
mod hostile_http;
mod identity_cookie;
#[cfg(feature = "full")]
mod mint_diagnostics;
mod mint_labels_audit;
mod redaction;
mod redaction_upgrade;
mod token_expiry;
#[cfg(feature = "full")]
mod token_lifecycle;
