//! Example apps (library part, shared by the runnable examples and the tests).
