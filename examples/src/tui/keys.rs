//! What a key press means in the terminal todo app (pure: no terminal, no session).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// What the person asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Leave the app.
    Quit,
    /// Select the todo above.
    Up,
    /// Select the todo below.
    Down,
    /// Mark the selected todo done or not done.
    Toggle,
    /// Delete the selected todo (the person needs no confirmation).
    Delete,
    /// Save the list.
    Save,
    /// Start typing a new todo's title.
    StartAdding,
    /// A character of the title being typed.
    Type(char),
    /// Remove the last typed character.
    Backspace,
    /// Add the typed todo.
    Submit,
    /// Stop typing without adding.
    Cancel,
    /// Approve the oldest pending proposal of the agent.
    Approve,
    /// Reject the oldest pending proposal of the agent.
    Reject,
}

/// Whether the person is typing a title (keys are text then) or navigating.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Keys are commands.
    #[default]
    Navigating,
    /// Keys are the new todo's title.
    Typing,
}

/// The command of `key` in `mode`, if it has one.
pub fn command(mode: Mode, key: KeyEvent) -> Option<Command> {
    if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
        return Some(Command::Quit);
    }
    match mode {
        Mode::Typing => match key.code {
            KeyCode::Enter => Some(Command::Submit),
            KeyCode::Esc => Some(Command::Cancel),
            KeyCode::Backspace => Some(Command::Backspace),
            KeyCode::Char(c) => Some(Command::Type(c)),
            _ => None,
        },
        Mode::Navigating => match key.code {
            KeyCode::Char('q') | KeyCode::Esc => Some(Command::Quit),
            KeyCode::Up | KeyCode::Char('k') => Some(Command::Up),
            KeyCode::Down | KeyCode::Char('j') => Some(Command::Down),
            KeyCode::Char(' ') | KeyCode::Enter => Some(Command::Toggle),
            KeyCode::Char('d') => Some(Command::Delete),
            KeyCode::Char('s') => Some(Command::Save),
            KeyCode::Char('a') => Some(Command::StartAdding),
            KeyCode::Char('y') => Some(Command::Approve),
            KeyCode::Char('n') => Some(Command::Reject),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn letters_are_commands_when_navigating_and_text_when_typing() {
        assert_eq!(
            command(Mode::Navigating, key(KeyCode::Char('y'))),
            Some(Command::Approve)
        );
        assert_eq!(
            command(Mode::Typing, key(KeyCode::Char('y'))),
            Some(Command::Type('y'))
        );
        assert_eq!(
            command(Mode::Typing, key(KeyCode::Char('q'))),
            Some(Command::Type('q'))
        );
        assert_eq!(command(Mode::Navigating, key(KeyCode::F(5))), None);
    }

    #[test]
    fn ctrl_c_quits_in_every_mode() {
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(command(Mode::Typing, ctrl_c), Some(Command::Quit));
        assert_eq!(command(Mode::Navigating, ctrl_c), Some(Command::Quit));
    }
}
