//! The JSON form of `@example` (`docs/annotations.md` §3.3).

use super::cursor::{Cursor, Failure};
use super::detail::Detail;
use super::text::first_line;

/// Captures a JSON object/array literal; the cursor is on the opening `{` or `[`. On success
/// the cursor is just after the matching closer and the captured text (newlines collapsed
/// like a string's line wrap, otherwise verbatim) is returned; it parses as strict JSON.
pub(crate) fn capture_json(cur: &mut Cursor<'_>) -> Result<String, Failure> {
    let opener = cur.peek().unwrap_or('{');
    let unbalanced = Detail::UnbalancedJson { opener };
    let mut text = String::new();
    let mut stack: Vec<char> = Vec::new();
    let mut in_string = false;
    loop {
        let Some(c) = cur.peek() else {
            return Err(cur.fail(unbalanced));
        };
        match c {
            '\n' => {
                cur.wrap_line(&mut text);
                continue;
            }
            '\r' => {
                // A `\r` counts as whitespace and never ends up in a value.
                cur.bump();
                text.push(' ');
                continue;
            }
            _ => {}
        }
        if in_string {
            match c {
                '\\' => {
                    cur.bump();
                    text.push('\\');
                    match cur.peek() {
                        None => return Err(cur.fail(unbalanced)),
                        // Line breaks keep their own rule.
                        Some('\n' | '\r') => {}
                        Some(next) => {
                            cur.bump();
                            text.push(next);
                        }
                    }
                    continue;
                }
                '"' => in_string = false,
                _ => {}
            }
        } else {
            match c {
                '"' => in_string = true,
                '{' | '[' => stack.push(c),
                '}' | ']' => {
                    let expected = if c == '}' { '{' } else { '[' };
                    if stack.pop() != Some(expected) {
                        return Err(cur.fail(unbalanced));
                    }
                }
                _ => {}
            }
        }
        cur.bump();
        text.push(c);
        if stack.is_empty() {
            break;
        }
    }
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(_) => Ok(text),
        Err(err) => Err(cur.fail(Detail::InvalidJsonLiteral {
            error: first_line(&err.to_string()).to_owned(),
        })),
    }
}
