//! The pairing client: hosts an app in this process and pairs it with a server.
