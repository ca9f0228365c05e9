//! Argument lists and quoted strings (`docs/annotations.md` §3.1, §3.2).

use super::cursor::{Cursor, Failure};
use super::detail::Detail;
use super::json_form::capture_json;

/// One parsed argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Arg {
    /// The string value after unescaping and line wrapping, or the captured JSON text.
    pub(crate) value: String,
    /// True for the JSON form of `@example` (`{…}` / `[…]`).
    pub(crate) json: bool,
}

/// Parses an argument list; the cursor is just after the `(`. On success the cursor is just
/// after the closing `)`. `allow_json` admits the JSON form (`@example` only).
pub(crate) fn parse_list(cur: &mut Cursor<'_>, allow_json: bool) -> Result<Vec<Arg>, Failure> {
    let mut args = Vec::new();
    loop {
        // Where an argument (or the closing parenthesis) is expected.
        cur.skip_filler();
        match cur.peek() {
            None => return Err(cur.fail(Detail::UnclosedList)),
            Some(')') => {
                cur.bump();
                return Ok(args);
            }
            Some('"' | '“') => args.push(Arg {
                value: parse_string(cur)?,
                json: false,
            }),
            Some('{' | '[') if allow_json => args.push(Arg {
                value: capture_json(cur)?,
                json: true,
            }),
            Some(found) => return Err(cur.fail(Detail::ExpectedString { found })),
        }
        // After an argument: `,` or `)`.
        cur.skip_filler();
        match cur.peek() {
            None => return Err(cur.fail(Detail::UnclosedList)),
            Some(',') => {
                cur.bump();
            }
            Some(')') => {
                cur.bump();
                return Ok(args);
            }
            Some(found) => return Err(cur.fail(Detail::ExpectedCommaOrClose { found })),
        }
    }
}

/// Parses the list after a flag, which must be empty; the cursor is just after the `(`.
pub(crate) fn parse_empty_list(cur: &mut Cursor<'_>) -> Result<(), Failure> {
    cur.skip_filler();
    match cur.peek() {
        None => Err(cur.fail(Detail::UnclosedList)),
        Some(')') => {
            cur.bump();
            Ok(())
        }
        Some(found) => Err(cur.fail(Detail::FlagWithArguments { found })),
    }
}

/// Parses a quoted string; the cursor is on the opening `"` or `“`. On success the cursor is
/// just after the closing quote.
pub(crate) fn parse_string(cur: &mut Cursor<'_>) -> Result<String, Failure> {
    let (closer, unclosed) = match cur.bump() {
        Some('“') => ('”', Detail::UnclosedCurlyString),
        _ => ('"', Detail::UnclosedString),
    };
    let mut value = String::new();
    loop {
        match cur.peek() {
            None => return Err(cur.fail(unclosed)),
            Some('\\') => {
                cur.bump();
                match cur.peek() {
                    None => return Err(cur.fail(unclosed)),
                    Some(c @ ('"' | '“' | '”' | '\\')) => {
                        cur.bump();
                        value.push(c);
                    }
                    // A line break or `\r` after a backslash is still handled by the line
                    // rules; the backslash itself is kept.
                    Some('\n' | '\r') => value.push('\\'),
                    Some(c) => {
                        cur.bump();
                        value.push('\\');
                        value.push(c);
                    }
                }
            }
            Some('\n') => cur.wrap_line(&mut value),
            Some('\r') => {
                // A `\r` counts as whitespace and never ends up in a value.
                cur.bump();
                value.push(' ');
            }
            Some(c) => {
                cur.bump();
                if c == closer {
                    return Ok(value);
                }
                value.push(c);
            }
        }
    }
}
