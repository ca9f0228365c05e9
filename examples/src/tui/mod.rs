//! The terminal todo app: a person uses the todo list with the keyboard while an agent drives
//! the same session; the person sees the agent's changes live and approves or rejects its
//! `@requiresConfirm` proposals with `y` / `n`.
//!
//! [`Controller`] turns key presses into session calls and keeps the [`Screen`]; [`run`] owns
//! the terminal. The session is a plain [`Session`], so the app runs the same whether it is
//! hosted in this process or paired with a server.

pub mod cli;
mod keys;
mod view;

use std::io;

use crossterm::event::{Event, EventStream, KeyEvent, KeyEventKind};
use futures::StreamExt as _;
use tea_agent_runtime::session::DispatchOptions;
use tea_agent_runtime::tea_agent_schema::protocol::WaitFor;
use tea_agent_runtime::Session;
use tokio::sync::watch;

pub use keys::{command, Command, Mode};
pub use view::{render, Screen};

use crate::todo::{Msg, TodoApp};

/// How many activity-log entries the screen shows.
const LOG_LINES: usize = 5;

/// Whether the app goes on after a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep running.
    Continue,
    /// The person quit.
    Quit,
}

/// The app's logic between the keyboard, the session and the screen.
pub struct Controller {
    session: Session<TodoApp>,
    screen: Screen,
}

impl Controller {
    /// A controller for `session`; `heading` is the screen's first line.
    pub fn new(session: Session<TodoApp>, heading: String) -> Controller {
        let state = session.with_state(Clone::clone);
        let screen = Screen {
            heading,
            state,
            pending: Vec::new(),
            log: Vec::new(),
            selected: 0,
            mode: Mode::Navigating,
            input: String::new(),
            status: "ready".into(),
        };
        let mut controller = Controller { session, screen };
        controller.refresh();
        controller
    }

    /// Replaces the screen's heading.
    pub fn set_heading(&mut self, heading: String) {
        self.screen.heading = heading;
    }

    /// What to draw now.
    pub fn screen(&self) -> &Screen {
        &self.screen
    }

    /// Re-reads the session: state, pending proposals and the activity log.
    pub fn refresh(&mut self) {
        self.screen.state = self.session.with_state(Clone::clone);
        self.screen.pending = self.session.pending();
        self.screen.log = self.session.recent_log(LOG_LINES, None);
        let count = self.screen.state.todos.len();
        self.screen.selected = self.screen.selected.min(count.saturating_sub(1));
    }

    /// Handles one key press.
    pub async fn key(&mut self, key: KeyEvent) -> Flow {
        match command(self.screen.mode, key) {
            Some(c) => self.run(c).await,
            None => Flow::Continue,
        }
    }

    /// Runs one command.
    pub async fn run(&mut self, command: Command) -> Flow {
        match command {
            Command::Quit => return Flow::Quit,
            Command::Up => self.screen.selected = self.screen.selected.saturating_sub(1),
            Command::Down => self.screen.selected += 1,
            Command::Toggle => {
                if let Some(id) = self.selected_id() {
                    self.dispatch(Msg::Toggle { id }).await;
                }
            }
            Command::Delete => {
                if let Some(id) = self.selected_id() {
                    self.dispatch(Msg::Delete { id }).await;
                }
            }
            Command::Save => self.dispatch(Msg::Save).await,
            Command::StartAdding => {
                self.screen.mode = Mode::Typing;
                self.screen.input.clear();
            }
            Command::Type(c) => self.screen.input.push(c),
            Command::Backspace => {
                self.screen.input.pop();
            }
            Command::Cancel => self.screen.mode = Mode::Navigating,
            Command::Submit => {
                self.screen.mode = Mode::Navigating;
                let title = std::mem::take(&mut self.screen.input);
                if !title.trim().is_empty() {
                    self.dispatch(Msg::Add {
                        title,
                        priority: None,
                    })
                    .await;
                }
            }
            Command::Approve | Command::Reject => self.decide(command == Command::Approve).await,
        }
        self.refresh();
        Flow::Continue
    }

    fn selected_id(&self) -> Option<String> {
        let todos = &self.screen.state.todos;
        todos
            .get(self.screen.selected.min(todos.len().saturating_sub(1)))
            .map(|t| t.id.clone())
    }

    async fn dispatch(&mut self, msg: Msg) {
        let opts = DispatchOptions::waiting_for(WaitFor::Idle);
        self.screen.status = match self.session.dispatch_msg(msg, opts).await {
            Ok(_) => "done".into(),
            Err(e) => format!("failed: {e}"),
        };
    }

    /// Approves or rejects the oldest pending proposal.
    async fn decide(&mut self, approve: bool) {
        let Some(oldest) = self.session.pending().into_iter().next() else {
            self.screen.status = "no proposal is waiting".into();
            return;
        };
        let decided = if approve {
            self.session.approve(&oldest.id, None).await
        } else {
            self.session.reject(&oldest.id).await
        };
        self.screen.status = match (decided, approve) {
            (Ok(()), true) => format!("approved: {}", oldest.intent),
            (Ok(()), false) => format!("rejected: {}", oldest.intent),
            (Err(e), _) => format!("could not decide: {e}"),
        };
    }
}

/// Runs the app in the terminal until the person quits or the session closes; `heading` is the
/// screen's first lines, redrawn when it changes (the pairing status).
pub async fn run(session: Session<TodoApp>, heading: watch::Receiver<String>) -> io::Result<()> {
    let mut terminal = ratatui::init();
    let result = event_loop(&mut terminal, session, heading).await;
    ratatui::restore();
    result
}

async fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    session: Session<TodoApp>,
    mut heading: watch::Receiver<String>,
) -> io::Result<()> {
    let mut keys = EventStream::new();
    let mut events = session.subscribe(None);
    let first = heading.borrow_and_update().clone();
    let mut controller = Controller::new(session.clone(), first);
    let mut heading_open = true;
    loop {
        terminal.draw(|f| render(controller.screen(), f))?;
        tokio::select! {
            key = keys.next() => match key {
                Some(Ok(Event::Key(k))) if k.kind == KeyEventKind::Press => {
                    if controller.key(k).await == Flow::Quit {
                        return Ok(());
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e),
                None => return Ok(()),
            },
            // Any change of the session (the agent's commits, proposals, log lines) redraws.
            event = events.next() => match event {
                Some(_) => controller.refresh(),
                None => return Ok(()),
            },
            changed = heading.changed(), if heading_open => match changed {
                Ok(()) => controller.set_heading(heading.borrow_and_update().clone()),
                Err(_) => heading_open = false,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tea_agent_runtime::Host;

    #[tokio::test]
    async fn the_person_types_a_todo_and_approves_the_agents_delete() {
        let host = Host::new(TodoApp::default()).unwrap();
        let session = host.create_session(None).unwrap();
        let mut c = Controller::new(session.clone(), "todo".into());
        c.run(Command::StartAdding).await;
        for ch in "milk".chars() {
            c.run(Command::Type(ch)).await;
        }
        c.run(Command::Submit).await;
        let todos = &c.screen().state.todos;
        let added = todos.last().expect("added");
        assert_eq!(added.title, "milk");
        let (id, count) = (added.id.clone(), todos.len());

        // The agent asks to delete it: the person sees the proposal, then approves it.
        let proposed = session
            .send_message(
                &json!({"type": "delete", "id": id}),
                None,
                DispatchOptions::waiting_for(WaitFor::None),
                None,
            )
            .await
            .unwrap();
        assert_eq!(
            serde_json::to_value(&proposed).unwrap()["status"],
            "pending-confirmation"
        );
        c.refresh();
        assert_eq!(c.screen().pending.len(), 1);
        assert_eq!(c.run(Command::Approve).await, Flow::Continue);
        assert_eq!(c.screen().status, "approved: delete a todo");
        // The approved message commits on the session's task.
        for _ in 0..100 {
            c.refresh();
            if c.screen().state.todos.len() < count {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert!(c.screen().state.todos.iter().all(|t| t.id != id));
        assert_eq!(c.screen().state.todos.len(), count - 1);
        assert!(c.screen().pending.is_empty());
        c.run(Command::Reject).await;
        assert_eq!(c.screen().status, "no proposal is waiting");
        assert_eq!(c.run(Command::Quit).await, Flow::Quit);
    }
}
