//! The example apps as users run them: the counter, the relay, the todo list and its terminal
//! UI (in tmux). One test binary; each module was a test file of its own.

mod config;
mod counter;
#[cfg(feature = "full")]
mod relay;
mod todo;
mod todo_explore;
mod todo_transcript;
#[cfg(feature = "full")]
mod tui_todo;
