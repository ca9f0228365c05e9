//! `#[derive(AgentMsg)]`.
