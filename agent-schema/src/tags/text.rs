//! Text helpers of the grammar: its whitespace, the first line of a message, the line of an
//! offset, and the EXCERPT of a malformed call (`docs/annotations.md` §6.1).
//!
//! Layering: depends on nothing else in `tags`.

/// The 1-based line of the doc text `doc` holding byte `offset`.
pub fn line_of(doc: &str, offset: usize) -> usize {
    doc[..offset.min(doc.len())].matches('\n').count() + 1
}

/// The first line of `text` (without its line break).
pub fn first_line(text: &str) -> &str {
    text.split(['\n', '\r']).next().unwrap_or("")
}

/// The EXCERPT of a malformed call (§6.1): every whitespace run that contains a newline
/// (together with one optional `*` after each newline) becomes one space; the result is
/// trimmed; past 60 chars it is cut to its first 59 chars plus `…`.
pub fn excerpt(call_text: &str) -> String {
    let chars: Vec<char> = call_text.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if !is_space(chars[i]) {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let start = i;
        let mut has_newline = false;
        while i < chars.len() && is_space(chars[i]) {
            if chars[i] == '\n' {
                has_newline = true;
                i += 1;
                while i < chars.len() && matches!(chars[i], ' ' | '\t') {
                    i += 1;
                }
                if i < chars.len() && chars[i] == '*' {
                    i += 1;
                }
            } else {
                i += 1;
            }
        }
        if has_newline {
            out.push(' ');
        } else {
            out.extend(&chars[start..i]);
        }
    }
    let trimmed = out.trim_matches(is_space);
    if trimmed.chars().count() > 60 {
        let mut cut: String = trimmed.chars().take(59).collect();
        cut.push('…');
        cut
    } else {
        trimmed.to_owned()
    }
}

/// Whitespace of the grammar: space, tab, `\n`, `\r`.
pub(crate) fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}
