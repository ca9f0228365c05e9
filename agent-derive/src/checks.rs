//! Reading and checking the tags of every variant and field, collecting every error with the
//! span of the doc line that holds it.

use tea_agent_schema::shape::TypeNode;
use tea_agent_schema::tags::{
    cel_sources, check_enum_doc, parse_field_doc, parse_variant_doc, written_tags, Tag, TagError,
    TagErrorKind,
};
use tea_agent_schema::{FieldTags, MessageAnnotations};

use crate::cel_check::{cel_error, cel_type_errors};
use crate::docs::Docs;
use crate::errors::Errors;
use crate::model::{Field, Model, Variant};

/// What the derive emits for one variant of the agent surface.
pub(crate) struct Record<'m> {
    /// The variant.
    pub(crate) variant: &'m Variant,
    /// Its annotation record.
    pub(crate) annotations: MessageAnnotations,
    /// Its named fields with wire names: (wire name, tags).
    pub(crate) fields: Vec<(String, FieldTags)>,
}

/// Checks the enum's docs and every variant's and field's tags; returns the records of the
/// variants that are part of the agent surface (skipped variants are checked, not returned).
pub(crate) fn check<'m>(model: &'m Model, errors: &mut Errors) -> Vec<Record<'m>> {
    for error in check_enum_doc(model.docs.as_str()) {
        errors.push(model.docs.tag_error(&error, &model.ident));
    }
    let mut records = Vec::new();
    for variant in &model.variants {
        let record = check_variant(variant, errors);
        if !variant.skipped {
            records.push(record);
        }
    }
    records
}

/// The record of one variant; errors go to `errors`.
fn check_variant<'m>(variant: &'m Variant, errors: &mut Errors) -> Record<'m> {
    let docs = &variant.docs;
    let annotations = match parse_variant_doc(docs.as_str(), &variant.wire_name) {
        Ok(annotations) => annotations,
        Err(found) => {
            push_all(docs, &found, &variant.ident, errors);
            MessageAnnotations::default()
        }
    };
    check_cel(docs, Tag::RouteGated, &variant.ident, errors);
    let mut fields = Vec::new();
    for field in &variant.fields {
        if let Some(tags) = check_field(field, errors) {
            fields.push(tags);
        }
    }
    Record {
        variant,
        annotations,
        fields,
    }
}

/// The (wire name, tags) of a field with its own wire name; `None` for fields without one
/// (flatten, skip, newtype payload), where any field tag is E10.
fn check_field(field: &Field, errors: &mut Errors) -> Option<(String, FieldTags)> {
    let docs = &field.docs;
    let tags = match parse_field_doc(docs.as_str()) {
        Ok(tags) => tags,
        Err(found) => {
            push_all(docs, &found, &field.tokens, errors);
            FieldTags::default()
        }
    };
    let Some(wire_name) = &field.wire_name else {
        for (offset, tag) in written_tags(docs.as_str()) {
            if tag.is_field_tag() {
                let error = TagError::new(offset, TagErrorKind::FieldWithoutWireName { tag });
                errors.push(docs.tag_error(&error, &field.tokens));
            }
        }
        return None;
    };
    check_cel(docs, Tag::Validates, &field.tokens, errors);
    if let Some(ty) = &field.plain {
        check_cel_types(docs, ty, &field.tokens, errors);
    }
    Some((wire_name.clone(), tags))
}

/// E6/E7, E20, E21: every `tag` expression in `docs` must parse as CEL, stay within the
/// nesting limit and read only the variable of its tag.
fn check_cel(docs: &Docs, tag: Tag, fallback: &dyn quote::ToTokens, errors: &mut Errors) {
    for source in cel_sources(docs.as_str()) {
        if source.tag != tag {
            continue;
        }
        if let Some(kind) = cel_error(tag, &source.source) {
            let error = TagError::new(source.offset, kind);
            errors.push(docs.tag_error(&error, fallback));
        }
    }
}

/// E28: every `@validates` expression in `docs` that can be used type-checks against the
/// field's type `ty` (one error per problem, on the expression's doc line).
fn check_cel_types(
    docs: &Docs,
    ty: &TypeNode,
    fallback: &dyn quote::ToTokens,
    errors: &mut Errors,
) {
    for source in cel_sources(docs.as_str()) {
        if source.tag != Tag::Validates || cel_error(Tag::Validates, &source.source).is_some() {
            continue;
        }
        for kind in cel_type_errors(&source.source, ty) {
            let error = TagError::new(source.offset, kind);
            errors.push(docs.tag_error(&error, fallback));
        }
    }
}

/// Pushes tag errors of one doc text with their spans; a repeated tag also points at its
/// first occurrence.
fn push_all(docs: &Docs, found: &[TagError], fallback: &dyn quote::ToTokens, errors: &mut Errors) {
    for error in found {
        errors.push(docs.tag_error(error, fallback));
        if let (Some(first), TagErrorKind::DuplicateTag { tag, .. }) = (error.first, &error.kind) {
            errors.push(docs.error_at(first, fallback, format!("the first `{tag}` is here")));
        }
    }
}
