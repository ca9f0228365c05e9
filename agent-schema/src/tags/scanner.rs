//! Finding tag occurrences in a doc text (`annotations.md` §1, §3).

use super::args::{parse_empty_list, parse_list, Arg};
use super::cursor::{Cursor, Failure};
use super::errors::{excerpt, Detail, TagError, TagErrorKind};
use super::suggest::suggest;
use super::tag::Tag;

/// One tag occurrence, in doc order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    /// A known tag.
    Known {
        /// Byte offset of the `@`.
        at: usize,
        /// Which tag.
        tag: Tag,
        /// What follows it.
        call: Call,
    },
    /// An unknown tag name close to a known tag (E4).
    Unknown {
        /// Byte offset of the `@`.
        at: usize,
        /// The name as written.
        name: String,
        /// The closest known tag.
        suggestion: Tag,
    },
}

/// What follows a known tag name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Call {
    /// A flag, bare or with an empty `()`.
    Flag,
    /// A call tag not followed by `(`: a prose mention, ignored.
    Mention,
    /// A call tag with a well-formed argument list (arity not checked yet).
    Args {
        /// The arguments.
        args: Vec<Arg>,
        /// Byte offset just after the closing `)`.
        end: usize,
    },
    /// A malformed list (after a flag or a call tag).
    Broken {
        /// What is wrong.
        detail: Detail,
        /// Byte offset where the broken call ends (§6.1).
        end: usize,
    },
}

impl Call {
    /// True unless this is a prose mention: the tag is really written there.
    pub(crate) fn is_written(&self) -> bool {
        !matches!(self, Call::Mention)
    }
}

/// Every tag occurrence of `doc`, in order.
pub(crate) fn scan(doc: &str) -> Vec<Event> {
    let fenced = fenced_ranges(doc);
    let mut events = Vec::new();
    let mut pos = 0;
    while let Some(found) = doc[pos..].find('@') {
        let at = pos + found;
        pos = at + 1;
        if !starts_tag(doc, at) || fenced.iter().any(|r| r.contains(&at)) {
            continue;
        }
        let name = identifier(&doc[at + 1..]);
        if name.is_empty() {
            continue;
        }
        let after_name = at + 1 + name.len();
        let mut cur = Cursor::new(doc, after_name);
        if let Some(tag) = Tag::from_name(name) {
            let call = read_call(&mut cur, tag);
            pos = match &call {
                Call::Flag | Call::Mention => cur.pos(),
                Call::Args { end, .. } | Call::Broken { end, .. } => *end,
            };
            events.push(Event::Known { at, tag, call });
        } else if let Some(suggestion) = suggest(name) {
            // Skip the argument list of a misspelled call, so its text is not scanned.
            cur.skip_blanks();
            pos = if cur.peek() == Some('(') {
                cur.bump();
                match parse_list(&mut cur, true) {
                    Ok(_) => cur.pos(),
                    Err(failure) => cur.broken_end(failure.at),
                }
            } else {
                after_name
            };
            events.push(Event::Unknown {
                at,
                name: name.to_owned(),
                suggestion,
            });
        } else {
            pos = after_name;
        }
    }
    events
}

/// Reads what follows a known tag name; the cursor is just after the name.
fn read_call(cur: &mut Cursor<'_>, tag: Tag) -> Call {
    let mut probe = cur.clone();
    probe.skip_blanks();
    if probe.peek() != Some('(') {
        // Scanning continues right after the name.
        return if tag.is_flag() {
            Call::Flag
        } else {
            Call::Mention
        };
    }
    *cur = probe;
    cur.bump();
    let result = if tag.is_flag() {
        parse_empty_list(cur).map(|()| None)
    } else {
        parse_list(cur, tag.accepts_json()).map(Some)
    };
    match result {
        Ok(None) => Call::Flag,
        Ok(Some(args)) => Call::Args {
            args,
            end: cur.pos(),
        },
        Err(Failure { detail, at }) => Call::Broken {
            detail,
            end: cur.broken_end(at),
        },
    }
}

/// A malformed-call error for the call of `tag` written at `at` and ending at `end`.
pub(crate) fn malformed(doc: &str, at: usize, end: usize, tag: Tag, detail: Detail) -> TagError {
    TagError::new(
        at,
        TagErrorKind::Malformed {
            tag: tag.name().to_owned(),
            detail,
            excerpt: excerpt(&doc[at..end]),
        },
    )
}

/// True when the `@` at `at` may start a tag: it is the first char, or follows whitespace
/// (space, tab, `\n`, `\r`) or `)`.
fn starts_tag(doc: &str, at: usize) -> bool {
    match doc[..at].chars().next_back() {
        None => true,
        Some(c) => matches!(c, ' ' | '\t' | '\n' | '\r' | ')'),
    }
}

/// The identifier `[A-Za-z_][A-Za-z0-9_]*` at the start of `text`, taken maximally ("" if none).
fn identifier(text: &str) -> &str {
    let bytes = text.as_bytes();
    if !bytes
        .first()
        .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_')
    {
        return "";
    }
    let len = bytes
        .iter()
        .position(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
        .unwrap_or(bytes.len());
    &text[..len]
}

/// The byte ranges of lines that are not scanned for tags: fence lines (after leading
/// whitespace, three backticks or three tildes) and every line between an opening fence line
/// and the next fence line. An unclosed fence runs to the end of the doc text.
fn fenced_ranges(doc: &str) -> Vec<std::ops::Range<usize>> {
    let mut ranges: Vec<std::ops::Range<usize>> = Vec::new();
    let mut in_fence = false;
    let mut start = 0;
    for line in doc.split('\n') {
        let end = start + line.len();
        let text = line.trim_start_matches([' ', '\t', '\r']);
        let is_fence = text.starts_with("```") || text.starts_with("~~~");
        if is_fence || in_fence {
            match ranges.last_mut() {
                Some(last) if last.end + 1 == start => last.end = end,
                _ => ranges.push(start..end),
            }
        }
        if is_fence {
            in_fence = !in_fence;
        }
        start = end + 1;
    }
    ranges
}
