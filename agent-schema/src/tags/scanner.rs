//! Finding tag occurrences in a doc text (`docs/annotations.md` §1, §3).

use super::args::{parse_empty_list, parse_list, Arg};
use super::cursor::{Cursor, Failure};
use super::detail::Detail;
use super::errors::TagError;
use super::kind::{Placement, TagErrorKind};
use super::suggest::suggest;
use super::tag::Tag;
use super::text::{excerpt, is_space};

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
        /// `None` when the tag stands where a tag belongs; otherwise how it sits in prose.
        placement: Option<Placement>,
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
    /// A call tag not followed by `(` (E18).
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
    /// True unless this is a call tag without its list.
    pub(crate) fn is_written(&self) -> bool {
        !matches!(self, Call::Mention)
    }
}

/// Every tag occurrence of `doc`, in order.
///
/// An `@` starts a tag occurrence when an identifier follows it and the char before it is not
/// a letter, digit or `_` (so `support@example.com` is prose), outside fenced code blocks and
/// outside inline code spans (a backtick run closed by a run of the same length on the same
/// line). Argument lists are never scanned. A known tag right after punctuation, a flag right
/// before punctuation, and a known tag after prose on its line get a [`Placement`].
pub(crate) fn scan(doc: &str) -> Vec<Event> {
    let fenced = fenced_ranges(doc);
    let mut events = Vec::new();
    let mut pos = 0;
    // Text between here and a tag must be blank (or a list marker) for the tag to be in
    // position: the start of the line, or the end of the previous tag.
    let mut clean_from = 0;
    while let Some(c) = doc[pos..].chars().next() {
        if c == '\n' {
            pos += 1;
            clean_from = pos;
            continue;
        }
        if let Some(range) = fenced.iter().find(|r| r.contains(&pos)) {
            pos = range.end;
            continue;
        }
        if c == '`' {
            pos = skip_code_span(doc, pos);
            continue;
        }
        if c != '@' {
            pos += c.len_utf8();
            continue;
        }
        let at = pos;
        let name = identifier(&doc[at + 1..]);
        let before = doc[..at].chars().next_back();
        if name.is_empty() || before.is_some_and(|b| b.is_alphanumeric() || b == '_' || b == '@') {
            pos = at + 1;
            continue;
        }
        let after_name = at + 1 + name.len();
        let mut cur = Cursor::new(doc, after_name);
        if let Some(tag) = Tag::from_name(name) {
            let mut placement = placement_before(doc, clean_from, at, before);
            let call = read_call(&mut cur, tag);
            if placement.is_none() && matches!(call, Call::Flag) && cur.pos() == after_name {
                if let Some(next) = doc[after_name..].chars().next() {
                    if !is_space(next) {
                        placement = Some(Placement::GluedAfter(next));
                    }
                }
            }
            pos = match &call {
                Call::Flag | Call::Mention => cur.pos(),
                Call::Args { end, .. } | Call::Broken { end, .. } => *end,
            };
            events.push(Event::Known {
                at,
                tag,
                call,
                placement,
            });
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
            continue;
        }
        clean_from = pos;
    }
    events
}

/// How a known tag at `at` sits, judged by what comes before it: right after punctuation
/// (anything but whitespace or `)`), or after prose written since `clean_from`.
fn placement_before(
    doc: &str,
    clean_from: usize,
    at: usize,
    before: Option<char>,
) -> Option<Placement> {
    if let Some(b) = before {
        if !is_space(b) && b != ')' {
            return Some(Placement::GluedBefore(b));
        }
    }
    let prose = doc[clean_from.min(at)..at].trim_matches(is_space);
    match prose {
        "" | "*" | "-" | "+" => None,
        _ => Some(Placement::InSentence),
    }
}

/// Skips the backtick run at `pos` and, when a run of the same length closes it later on the
/// same line, the whole code span. Returns where scanning continues.
fn skip_code_span(doc: &str, pos: usize) -> usize {
    let run = doc[pos..].bytes().take_while(|&b| b == b'`').count();
    let after = pos + run;
    let line_end = doc[after..].find('\n').map_or(doc.len(), |i| after + i);
    let line = &doc[after..line_end];
    let mut i = 0;
    while let Some(found) = line[i..].find('`') {
        let start = i + found;
        let len = line[start..].bytes().take_while(|&b| b == b'`').count();
        if len == run {
            return after + start + len;
        }
        i = start + len;
    }
    after
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

/// `doc` without its known tags (`@intent("…")`, `@should("…")`, flags …): the prose a reader
/// sees, with runs of blanks left by the tags collapsed. Unknown tags stay (they are prose to
/// the scanner too).
pub fn prose_of(doc: &str) -> String {
    let mut out = String::with_capacity(doc.len());
    let mut from = 0;
    for event in scan(doc) {
        let Event::Known { at, tag, call, .. } = event else {
            continue;
        };
        let end = match call {
            Call::Args { end, .. } | Call::Broken { end, .. } => end,
            Call::Flag | Call::Mention => {
                let name_end = at + 1 + tag.name().len();
                if doc[name_end..].starts_with("()") {
                    name_end + 2
                } else {
                    name_end
                }
            }
        };
        if at >= from && end <= doc.len() {
            out.push_str(&doc[from..at]);
            from = end;
        }
    }
    out.push_str(&doc[from..]);
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod prose_tests {
    use super::prose_of;

    #[test]
    fn tags_are_removed_and_prose_kept() {
        assert_eq!(
            prose_of("The amount. @should(\"a value between 0 and 1000\") @validates(\"v >= 0\")"),
            "The amount."
        );
        assert_eq!(
            prose_of("@humanOnly Mail support@example.com"),
            "Mail support@example.com"
        );
        assert_eq!(prose_of("@requiresConfirm()"), "");
    }
}
