//! Building the doc text of an item from its `#[doc]` values (`docs/annotations.md` §1).

/// The doc text of one item, with the start offset of every `#[doc]` value in it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DocText {
    /// The values, each without ONE leading space, joined with `"\n"`.
    pub text: String,
    /// Byte offset in `text` where each value starts, in source order.
    starts: Vec<usize>,
}

impl DocText {
    /// The index of the `#[doc]` value (in source order) that holds `byte_offset` of
    /// [`DocText::text`]. A `"\n"` that joins two values belongs to the earlier one; offsets
    /// past the end belong to the last value. An empty doc text answers 0.
    pub fn segment_of(&self, byte_offset: usize) -> usize {
        // The number of segments starting at or before the offset, minus one.
        self.starts
            .partition_point(|&start| start <= byte_offset)
            .saturating_sub(1)
    }

    /// The number of `#[doc]` values the text was built from.
    pub fn segment_count(&self) -> usize {
        self.starts.len()
    }
}

/// Builds the doc text of an item: from each `#[doc]` value (source order) remove one leading
/// space if its first char is a space, then join the values with `"\n"`.
pub fn doc_text<'a>(values: impl IntoIterator<Item = &'a str>) -> DocText {
    let mut doc = DocText::default();
    for (index, value) in values.into_iter().enumerate() {
        if index > 0 {
            doc.text.push('\n');
        }
        doc.starts.push(doc.text.len());
        doc.text.push_str(value.strip_prefix(' ').unwrap_or(value));
    }
    doc
}
