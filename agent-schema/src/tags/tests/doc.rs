//! §1: the doc text.

use crate::tags::doc_text;

#[test]
fn one_leading_space_removed_and_joined() {
    let doc = doc_text([" a", "  b", "c", "", " "]);
    assert_eq!(doc.text, "a\n b\nc\n\n");
    assert_eq!(doc.segment_count(), 5);
}

#[test]
fn segment_of_finds_the_attribute() {
    let doc = doc_text([" first line", " @humanOnly", "", " @intent(\"x\")"]);
    let at = doc.text.find("@humanOnly").unwrap();
    assert_eq!(doc.segment_of(at), 1);
    assert_eq!(doc.segment_of(doc.text.find("@intent").unwrap()), 3);
    assert_eq!(doc.segment_of(0), 0);
    // The joining newline belongs to the earlier value; past the end is the last.
    assert_eq!(doc.segment_of("first line".len()), 0);
    assert_eq!(doc.segment_of(10_000), 3);
    // An empty value still has its own segment.
    let gap = doc.text.find("\n\n").unwrap();
    assert_eq!(doc.segment_of(gap), 1);
    assert_eq!(doc.segment_of(gap + 1), 2);
    assert_eq!(doc.segment_of(gap + 2), 3);
}

#[test]
fn empty_doc() {
    let doc = doc_text(std::iter::empty());
    assert_eq!(doc.text, "");
    assert_eq!(doc.segment_of(0), 0);
    assert_eq!(doc.segment_count(), 0);
}

#[test]
fn block_comment_value_keeps_its_lines() {
    let doc = doc_text(["* Title\n * @humanOnly\n "]);
    assert_eq!(doc.text, "* Title\n * @humanOnly\n ");
    assert_eq!(doc.segment_of(doc.text.find('@').unwrap()), 0);
}
