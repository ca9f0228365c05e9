//! E4: closeness to a known tag.

use crate::tags::{osa_distance, suggest, Tag};

fn osa(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    osa_distance(&a, &b)
}

#[test]
fn distance() {
    assert_eq!(osa("", ""), 0);
    assert_eq!(osa("abc", ""), 3);
    assert_eq!(osa("intnet", "intent"), 1);
    assert_eq!(osa("ca", "abc"), 3);
    assert_eq!(osa("kitten", "sitting"), 3);
    assert_eq!(osa("requireconfirm", "requiresconfirm"), 1);
}

#[test]
fn close_names() {
    assert_eq!(suggest("HumanOnly"), Some(Tag::HumanOnly));
    assert_eq!(suggest("INTENT"), Some(Tag::Intent));
    assert_eq!(suggest("intnet"), Some(Tag::Intent));
    assert_eq!(suggest("requireConfirm"), Some(Tag::RequiresConfirm));
    assert_eq!(suggest("emit"), Some(Tag::Emits));
    assert_eq!(suggest("examples"), Some(Tag::Example));
    assert_eq!(suggest("warn"), Some(Tag::Warning));
    assert_eq!(suggest("human"), Some(Tag::HumanOnly));
    assert_eq!(suggest("route"), Some(Tag::RouteGated));
    assert_eq!(suggest("valid"), Some(Tag::Validates));
    assert_eq!(suggest("shold"), Some(Tag::Should));
}

#[test]
fn names_that_are_not_close() {
    for name in [
        "see",
        "todo",
        "internal",
        "someOtherTag",
        "foo",
        "alice",
        "emi",
        "hum",
    ] {
        assert_eq!(suggest(name), None, "{name}");
    }
}

#[test]
fn ties_go_to_the_earlier_row() {
    use crate::tags::suggest::closest;
    // Equal distances: the earlier entry wins.
    assert_eq!(closest("abcf", &["abcd", "abce"]), Some(0));
    assert_eq!(closest("abcf", &["abce", "abcd"]), Some(0));
    // A smaller distance beats an earlier row, and beats a prefix match.
    assert_eq!(closest("abcdx", &["abcdzzzz", "abcdy"]), Some(1));
    // With the real table ties cannot happen: any two known tags are at least 5 apart, so no
    // name is within 2 of two of them.
    for a in Tag::ALL {
        for b in Tag::ALL {
            if a != b {
                assert!(osa(&a.name().to_lowercase(), &b.name().to_lowercase()) >= 5);
            }
        }
    }
}
