//! What the terminal todo app shows (pure: a [`Screen`] drawn into a ratatui frame).

use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, List, ListItem, ListState, Paragraph};
use ratatui::Frame;
use tea_agent_runtime::tea_agent_schema::protocol::{ConfirmEntry, LogEntry};

use super::keys::Mode;
use crate::todo::{Priority, State};

/// Everything one frame shows.
#[derive(Debug, Clone)]
pub struct Screen {
    /// The first lines: where the app is paired and how an agent connects.
    pub heading: String,
    /// The app's state (the person sees everything, the redacted key included).
    pub state: State,
    /// The agent's proposals waiting for the person, oldest first.
    pub pending: Vec<ConfirmEntry>,
    /// The newest activity-log entries, newest first.
    pub log: Vec<LogEntry>,
    /// Index of the selected todo.
    pub selected: usize,
    /// Navigating or typing a title.
    pub mode: Mode,
    /// The title being typed.
    pub input: String,
    /// The answer to the person's last command.
    pub status: String,
}

const HELP: &str =
    "↑/↓ select · space toggle · a add · d delete · s save · y/n approve/reject · q quit";

/// Draws `screen` into `frame`.
pub fn render(screen: &Screen, frame: &mut Frame) {
    let proposals = if screen.pending.is_empty() {
        0
    } else {
        screen.pending.len() as u16 + 2
    };
    let heading_lines = screen.heading.lines().count().max(1) as u16;
    let [heading, todos, proposals_area, log, input, help] = Layout::vertical([
        Constraint::Length(heading_lines),
        Constraint::Min(3),
        Constraint::Length(proposals),
        Constraint::Length(7),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    frame.render_widget(Paragraph::new(screen.heading.as_str()), heading);

    let items: Vec<ListItem> = screen
        .state
        .todos
        .iter()
        .map(|t| {
            let mark = if t.done { "[x]" } else { "[ ]" };
            let priority = match t.priority {
                Priority::High => " !",
                Priority::Normal | Priority::Low => "",
            };
            ListItem::new(format!("{mark} {} {}{priority}", t.id, t.title))
        })
        .collect();
    let title = format!(
        " todos ({}, {:?}) ",
        screen.state.todos.len(),
        screen.state.save
    )
    .to_lowercase();
    let list = List::new(items)
        .block(Block::default().borders(Borders::ALL).title(title))
        .highlight_style(Style::default().add_modifier(Modifier::REVERSED))
        .highlight_symbol("> ");
    let mut list_state = ListState::default();
    if !screen.state.todos.is_empty() {
        list_state.select(Some(screen.selected.min(screen.state.todos.len() - 1)));
    }
    frame.render_stateful_widget(list, todos, &mut list_state);

    if !screen.pending.is_empty() {
        let lines: Vec<Line> = screen
            .pending
            .iter()
            .map(|p| Line::from(format!("agent proposes: {} {}", p.intent, p.payload)))
            .collect();
        let block = Block::default()
            .borders(Borders::ALL)
            .title(" waiting for you: y approve · n reject (oldest first) ");
        frame.render_widget(Paragraph::new(lines).block(block), proposals_area);
    }

    let lines: Vec<Line> = screen
        .log
        .iter()
        .map(|e| {
            let kind = serde_json::to_value(e.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            let what = e.intent.as_deref().or(e.variant.as_deref()).unwrap_or("");
            Line::from(format!("{kind}: {what}"))
        })
        .collect();
    frame.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(" activity ")),
        log,
    );

    let prompt = match screen.mode {
        Mode::Typing => format!("new todo: {}_", screen.input),
        Mode::Navigating => screen.status.clone(),
    };
    frame.render_widget(Paragraph::new(prompt), input);
    frame.render_widget(Paragraph::new(HELP), help);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::todo::{Details, Filter, SaveStatus, Todo};
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;
    use serde_json::json;
    use tea_agent_runtime::tea_agent_schema::protocol::ConfirmStatus;

    fn screen() -> Screen {
        Screen {
            heading: "todo · paired".into(),
            state: State {
                todos: vec![Todo {
                    id: "t1".into(),
                    title: "buy milk".into(),
                    done: true,
                    priority: Priority::High,
                    details: Details {
                        notes: None,
                        tags: vec![],
                    },
                }]
                .into(),
                filter: Filter::All,
                save: SaveStatus::Saved,
                saves: 0,
                next_id: 1,
                api_key: "k".into(),
            },
            pending: vec![ConfirmEntry {
                id: "c1".into(),
                variant: "delete".into(),
                payload: json!({"id": "t1"}),
                intent: "delete a todo".into(),
                reason: None,
                proposed_at: 0,
                status: ConfirmStatus::Pending,
                tid: None,
                edited_payload: None,
            }],
            log: vec![],
            selected: 0,
            mode: Mode::Navigating,
            input: String::new(),
            status: "ready".into(),
        }
    }

    fn text(screen: &Screen) -> String {
        let mut terminal = Terminal::new(TestBackend::new(90, 20)).unwrap();
        terminal.draw(|f| render(screen, f)).unwrap();
        let buffer = terminal.backend().buffer().clone();
        (0..buffer.area.height)
            .map(|y| {
                (0..buffer.area.width)
                    .map(|x| buffer[(x, y)].symbol())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn shows_todos_proposals_and_the_prompt() {
        let mut s = screen();
        let shown = text(&s);
        assert!(shown.contains("> [x] t1 buy milk !"), "{shown}");
        assert!(
            shown.contains(r#"agent proposes: delete a todo {"id":"t1"}"#),
            "{shown}"
        );
        assert!(shown.contains("ready"), "{shown}");
        s.mode = Mode::Typing;
        s.input = "call mom".into();
        s.pending.clear();
        let shown = text(&s);
        assert!(shown.contains("new todo: call mom_"), "{shown}");
        assert!(!shown.contains("agent proposes"), "{shown}");
    }
}
