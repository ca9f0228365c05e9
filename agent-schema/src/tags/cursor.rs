//! A char cursor over the doc text, and the whitespace rules shared by argument lists,
//! quoted strings and JSON literals (`docs/annotations.md` §3.1–§3.3).

use super::detail::Detail;

/// A position in the doc text that only moves forward.
#[derive(Debug, Clone)]
pub(crate) struct Cursor<'a> {
    doc: &'a str,
    pos: usize,
}

/// A parse failure: what is wrong and the byte offset where it was found (the end of the doc
/// text for "never closed" errors).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub(crate) detail: Detail,
    pub(crate) at: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at byte offset `pos` (a char boundary) of `doc`.
    pub(crate) fn new(doc: &'a str, pos: usize) -> Cursor<'a> {
        Cursor { doc, pos }
    }

    /// The current byte offset.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// The char at the cursor, if any.
    pub(crate) fn peek(&self) -> Option<char> {
        self.doc[self.pos..].chars().next()
    }

    /// Moves past the char at the cursor and returns it.
    pub(crate) fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    /// Skips spaces and tabs only (between a tag name and its `(`).
    pub(crate) fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.bump();
        }
    }

    /// Skips filler between the tokens of an argument list: spaces, tabs, `\r`, and newlines
    /// each followed by optional spaces/tabs and ONE optional `*` (a block-comment prefix).
    pub(crate) fn skip_filler(&mut self) {
        loop {
            match self.peek() {
                Some(' ' | '\t' | '\r') => {
                    self.bump();
                }
                Some('\n') => {
                    self.bump();
                    self.skip_blanks();
                    if self.peek() == Some('*') {
                        self.bump();
                    }
                }
                _ => return,
            }
        }
    }

    /// At a newline inside a string or JSON literal: trims trailing spaces, tabs and `\r` off
    /// `value`, skips the newline, leading spaces/tabs/`\r`, one optional `*` and further
    /// spaces/tabs, then appends exactly one space.
    pub(crate) fn wrap_line(&mut self, value: &mut String) {
        debug_assert_eq!(self.peek(), Some('\n'));
        self.bump();
        while matches!(self.peek(), Some(' ' | '\t' | '\r')) {
            self.bump();
        }
        if self.peek() == Some('*') {
            self.bump();
        }
        self.skip_blanks();
        let kept = value.trim_end_matches([' ', '\t', '\r']).len();
        value.truncate(kept);
        value.push(' ');
    }

    /// A failure with `detail` at the cursor.
    pub(crate) fn fail(&self, detail: Detail) -> Failure {
        Failure {
            detail,
            at: self.pos,
        }
    }

    /// The byte offset where a broken call ends (§6.1): just after the next `)` at or after
    /// `from` on the same line, else the end of that line (before its `\n`).
    pub(crate) fn broken_end(&self, from: usize) -> usize {
        let rest = &self.doc[from..];
        let line_end = rest.find('\n').unwrap_or(rest.len());
        match rest[..line_end].find(')') {
            Some(close) => from + close + 1,
            None => from + line_end,
        }
    }
}
