//! JSON Pointer and `$ref` helpers.

use serde_json::Value;

/// Escapes one JSON Pointer segment (RFC 6901): `~` → `~0`, then `/` → `~1`.
pub fn escape_segment(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// Appends `segment` (escaped) to `pointer`.
pub(crate) fn child(pointer: &str, segment: &str) -> String {
    format!("{pointer}/{}", escape_segment(segment))
}

/// Looks up a local `$ref` target. Only `#/$defs/<name>` and `#/definitions/<name>` are
/// followed (the fragment is percent-decoded, then the name JSON-Pointer-unescaped). Returns the
/// target and its canonical JSON Pointer, or `None` for any other or a dangling reference.
pub(crate) fn ref_target<'a>(root: &'a Value, reference: &str) -> Option<(&'a Value, String)> {
    let fragment = percent_decode(reference.strip_prefix('#')?)?;
    let (container, name) = if let Some(n) = fragment.strip_prefix("/$defs/") {
        ("$defs", n)
    } else if let Some(n) = fragment.strip_prefix("/definitions/") {
        ("definitions", n)
    } else {
        return None;
    };
    if name.contains('/') {
        return None;
    }
    let name = name.replace("~1", "/").replace("~0", "~");
    let target = root.get(container)?.get(&name)?;
    Some((target, format!("/{container}/{}", escape_segment(&name))))
}

/// Decodes `%XX` escapes; `None` when an escape is malformed or the bytes are not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    if !s.contains('%') {
        return Some(s.to_owned());
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn escapes_segments() {
        assert_eq!(escape_segment("a/b~c"), "a~1b~0c");
        assert_eq!(
            child("/$defs/X/properties", "a/b"),
            "/$defs/X/properties/a~1b"
        );
    }

    #[test]
    fn follows_local_definitions_only() {
        let root = json!({"$defs": {"A": {"type": "string"}, "a/b": {"type": "number"},
            "Ünï": {"type": "boolean"}},
            "definitions": {"B": {"type": "boolean"}}});
        assert_eq!(
            ref_target(&root, "#/$defs/A"),
            Some((&json!({"type": "string"}), "/$defs/A".to_owned()))
        );
        assert_eq!(ref_target(&root, "#/$defs/a~1b").unwrap().1, "/$defs/a~1b");
        assert_eq!(
            ref_target(&root, "#/$defs/%C3%9Cn%C3%AF").unwrap().1,
            "/$defs/Ünï"
        );
        assert_eq!(
            ref_target(&root, "#/definitions/B").unwrap().1,
            "/definitions/B"
        );
        assert_eq!(ref_target(&root, "#/$defs/Missing"), None);
        assert_eq!(ref_target(&root, "other.json#/$defs/A"), None);
        assert_eq!(ref_target(&root, "#/properties/x"), None);
        assert_eq!(ref_target(&root, "#/$defs/A/properties"), None);
        assert_eq!(ref_target(&root, "#/$defs/%Z1"), None);
    }
}
