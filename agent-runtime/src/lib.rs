//! Agent runtime.
