//! A terminal todo app that a person uses with the keyboard while an agent drives it through a
//! server it pairs with (feature `tui`): the [`TodoApp`] runs in this process, the agent's
//! changes show up live, and `@requiresConfirm` proposals are approved (`y`) or rejected
//! (`n`) here.
//!
//! `cargo run -p agent-examples --features tui --example tui-todo -- --server http://127.0.0.1:8788 [--token agt_…]`
//!
//! Without `--token` it mints a paired session on the server (anonymous minting, as the `todo`
//! example server allows) and shows the token to hand to the agent.

use std::time::Duration;

use agent_runtime::pairing::client::{mint, PairingClient, PairingConfig, PairingStatus};
use agent_runtime::session::{DispatchOptions, Session};
use agent_runtime::Host;
use agent_schema::protocol::ConfirmEntry;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, List, ListItem, ListState, Paragraph, Wrap};
use ratatui::Frame;
use serde_json::{json, Value};
use tokio::sync::watch;

use crate::todo::TodoApp;

/// The command line of `tui-todo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TuiOptions {
    /// The server's base URL.
    pub server: String,
    /// A token minted for a paired session; minted here when absent.
    pub token: Option<String>,
}

/// Parses `--server URL` (default `http://127.0.0.1:8788`) and `--token agt_…`.
pub fn parse_args(args: impl IntoIterator<Item = String>) -> Result<TuiOptions, String> {
    let mut opts = TuiOptions {
        server: "http://127.0.0.1:8788".into(),
        token: None,
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--server" => opts.server = value()?,
            "--token" => opts.token = Some(value()?),
            "-h" | "--help" => {
                return Err("usage: tui-todo [--server http://host:port] [--token agt_…]".into())
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(opts)
}

/// Runs the app until the person quits (`q`).
pub async fn run(opts: TuiOptions) -> Result<(), String> {
    let host = Host::new(TodoApp::default()).map_err(|e| e.to_string())?;
    let session = host.create_session(None).map_err(|e| e.to_string())?;
    let (config, token) = match opts.token {
        Some(token) => (PairingConfig::new(&opts.server, token.clone()), token),
        None => {
            let minted = mint(&opts.server, &[]).await?;
            (minted.config(&opts.server), minted.token)
        }
    };
    let client = PairingClient::new(&host, session.clone(), config).spawn();
    let status = client.status();
    let runtime = tokio::runtime::Handle::current();
    let ui = tokio::task::spawn_blocking(move || {
        let mut terminal = ratatui::init();
        let result = ui_loop(&mut terminal, &runtime, &session, &status, &token);
        ratatui::restore();
        result
    });
    let result = ui.await.map_err(|e| e.to_string())?;
    client.stop().await;
    result.map_err(|e| e.to_string())
}

/// What the person is doing.
#[derive(Default)]
struct Ui {
    list: ListState,
    /// The title being typed after `a`.
    input: Option<String>,
    /// The last line of feedback.
    note: String,
}

fn ui_loop(
    terminal: &mut ratatui::DefaultTerminal,
    runtime: &tokio::runtime::Handle,
    session: &Session<TodoApp>,
    status: &watch::Receiver<PairingStatus>,
    token: &str,
) -> std::io::Result<()> {
    let mut ui = Ui::default();
    ui.list.select(Some(0));
    loop {
        let state = session.state();
        let todos = state["todos"].as_array().cloned().unwrap_or_default();
        let pending = session.pending();
        let agent = status.borrow().clone();
        terminal.draw(|f| draw(f, &mut ui, &todos, pending.first(), &agent, token))?;
        if !event::poll(Duration::from_millis(100))? {
            continue;
        }
        let Event::Key(key) = event::read()? else {
            continue;
        };
        if key.kind != KeyEventKind::Press {
            continue;
        }
        let selected = ui
            .list
            .selected()
            .and_then(|i| todos.get(i))
            .and_then(|t| t["id"].as_str())
            .map(str::to_string);
        let dispatch = |msg: Value, ui: &mut Ui| {
            let result =
                runtime.block_on(session.dispatch_as_human(&msg, DispatchOptions::default()));
            ui.note = match result {
                Ok(r) => format!(
                    "{}: {}",
                    msg["type"].as_str().unwrap_or("?"),
                    serde_json::to_value(r)
                        .map(|v| v["status"].to_string())
                        .unwrap_or_default()
                ),
                Err(e) => e.to_string(),
            };
        };
        if let Some(input) = ui.input.as_mut() {
            match key.code {
                KeyCode::Enter => {
                    let title = ui.input.take().unwrap_or_default();
                    if !title.trim().is_empty() {
                        dispatch(json!({"type": "add", "title": title}), &mut ui);
                    }
                }
                KeyCode::Esc => ui.input = None,
                KeyCode::Backspace => {
                    input.pop();
                }
                KeyCode::Char(c) => input.push(c),
                _ => {}
            }
            continue;
        }
        match key.code {
            KeyCode::Char('q') | KeyCode::Esc => return Ok(()),
            KeyCode::Down | KeyCode::Char('j') => {
                let next = ui.list.selected().map_or(0, |i| i + 1);
                ui.list
                    .select(Some(next.min(todos.len().saturating_sub(1))));
            }
            KeyCode::Up | KeyCode::Char('k') => {
                let prev = ui.list.selected().map_or(0, |i| i.saturating_sub(1));
                ui.list.select(Some(prev));
            }
            KeyCode::Char('a') => ui.input = Some(String::new()),
            KeyCode::Char(' ') => {
                if let Some(id) = selected {
                    dispatch(json!({"type": "toggle", "id": id}), &mut ui);
                }
            }
            KeyCode::Char('d') => {
                if let Some(id) = selected {
                    dispatch(json!({"type": "delete", "id": id}), &mut ui);
                }
            }
            KeyCode::Char(c @ ('y' | 'n')) => {
                if let Some(p) = pending.first() {
                    let done = if c == 'y' {
                        session.approve(&p.id, None).map(|()| "approved")
                    } else {
                        session.reject(&p.id).map(|()| "rejected")
                    };
                    ui.note = match done {
                        Ok(what) => format!("{what} the agent's {}", p.variant),
                        Err(e) => e.to_string(),
                    };
                }
            }
            _ => {}
        }
    }
}

fn draw(
    f: &mut Frame,
    ui: &mut Ui,
    todos: &[Value],
    proposal: Option<&ConfirmEntry>,
    agent: &PairingStatus,
    token: &str,
) {
    let areas = Layout::vertical([
        Constraint::Length(3),
        Constraint::Min(3),
        Constraint::Length(if proposal.is_some() { 5 } else { 0 }),
        Constraint::Length(3),
    ])
    .split(f.area());
    let agent_text = match agent {
        PairingStatus::Connecting => "connecting…".to_string(),
        PairingStatus::Paired => "paired, waiting for the agent".to_string(),
        PairingStatus::Active => "an agent is driving".to_string(),
        PairingStatus::Revoked => "revoked".to_string(),
        PairingStatus::Stopped(why) => format!("stopped: {why}"),
    };
    f.render_widget(
        Paragraph::new(vec![
            Line::from(format!("agent: {agent_text}")),
            Line::from(format!("token for the agent: {token}")),
        ])
        .block(Block::default().borders(Borders::TOP).title("tui-todo")),
        areas[0],
    );
    let items: Vec<ListItem> = todos
        .iter()
        .map(|t| {
            let mark = if t["done"] == true { "[x]" } else { "[ ]" };
            ListItem::new(format!(
                "{mark} {} {} ({})",
                t["id"].as_str().unwrap_or(""),
                t["title"].as_str().unwrap_or(""),
                t["priority"].as_str().unwrap_or("")
            ))
        })
        .collect();
    let list = List::new(items)
        .block(Block::default().borders(Borders::ALL).title("todos"))
        .highlight_style(Style::default().add_modifier(Modifier::REVERSED))
        .highlight_symbol("> ");
    f.render_stateful_widget(list, areas[1], &mut ui.list);
    if let Some(p) = proposal {
        let text = format!(
            "The agent proposes {} {} (reason: {}). Press y to approve, n to reject.",
            p.variant,
            p.payload,
            p.reason.as_deref().unwrap_or("none given")
        );
        f.render_widget(
            Paragraph::new(text)
                .wrap(Wrap { trim: true })
                .style(Style::default().fg(Color::Yellow))
                .block(Block::default().borders(Borders::ALL).title("confirmation")),
            areas[2],
        );
    }
    let help = match &ui.input {
        Some(input) => format!("new todo: {input}_   (Enter adds, Esc cancels)"),
        None => format!(
            "a add  space toggle  d delete  j/k move  y/n decide  q quit   {}",
            ui.note
        ),
    };
    f.render_widget(
        Paragraph::new(help).block(Block::default().borders(Borders::TOP)),
        areas[3],
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_server_and_token() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            parse_args(args(&["--server", "http://h:1", "--token", "agt_x"])),
            Ok(TuiOptions {
                server: "http://h:1".into(),
                token: Some("agt_x".into())
            })
        );
        assert_eq!(
            parse_args(args(&[])).unwrap().server,
            "http://127.0.0.1:8788"
        );
        assert!(parse_args(args(&["--token"])).is_err());
        assert!(parse_args(args(&["--nope"])).is_err());
    }
}
