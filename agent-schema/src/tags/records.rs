//! From tag occurrences to records: variant annotations (§4), field tags (§4.1, §7.4), the
//! enum's own doc (E11) and the CEL sources to check (E6/E7).

use serde_json::Value;

use super::args::Arg;
use super::detail::Detail;
use super::errors::TagError;
use super::kind::TagErrorKind;
use super::scanner::{malformed, scan, Call, Event};
use super::tag::Tag;
use super::text::{first_line, line_of};
use crate::annotations::{DispatchMode, FieldTags, MessageAnnotations};

/// A CEL expression written in a doc text: the first argument of a well-formed
/// `@routeGated(…)` or the argument of a well-formed `@validates(…)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CelSource {
    /// Byte offset of the tag's `@` in the doc text.
    pub offset: usize,
    /// [`Tag::RouteGated`] or [`Tag::Validates`].
    pub tag: Tag,
    /// The expression after unescaping.
    pub source: String,
}

/// The annotation record of a variant from its doc text (§2, §4), or every error in it.
///
/// Reports E1, E2, E3, E4, E5 (an `@example` object whose `"type"` differs from
/// `wire_name`), E8 and every malformed call (D1 … D9), sorted by offset. CEL syntax is NOT
/// checked here: pair this with [`cel_sources`] and a CEL parser.
pub fn parse_variant_doc(doc: &str, wire_name: &str) -> Result<MessageAnnotations, Vec<TagError>> {
    let mut ann = MessageAnnotations::default();
    let mut errors = Vec::new();
    let mut flags = FlagOffsets::default();
    let mut seen = SeenCalls::default();
    for event in scan(doc) {
        let Some((at, tag, call)) = usable(event, &mut errors) else {
            continue;
        };
        if tag.is_state_tag() {
            errors.push(TagError::new(at, TagErrorKind::StateTagInMsg { tag }));
            continue;
        }
        if tag.is_field_tag() {
            errors.push(TagError::new(at, TagErrorKind::FieldTagOnVariant { tag }));
            continue;
        }
        let args = match checked_args(doc, at, tag, call, &mut errors) {
            Checked::Flag => {
                flags.record(tag, at);
                continue;
            }
            Checked::Skip => continue,
            Checked::Args(args) => args,
        };
        if seen.repeated(doc, at, tag, &mut errors) {
            continue;
        }
        let mut values = args.into_iter().map(|a| a.value);
        match tag {
            Tag::Intent => set_first(&mut ann.intent, values.next()),
            Tag::Warning => set_first(&mut ann.warning, values.next()),
            Tag::Example => {
                if let Some(value) = values.next() {
                    if let Some(kind) = wrong_example_type(&value, wire_name) {
                        errors.push(TagError::new(at, kind));
                    }
                    ann.examples.push(value);
                }
            }
            Tag::Emits => {
                for value in values {
                    if !ann.emits.contains(&value) {
                        ann.emits.push(value);
                    }
                }
            }
            Tag::RouteGated => {
                ann.route_gate = values.next();
                ann.route_gate_reason = values.next();
            }
            _ => {}
        }
    }
    ann.dispatch_mode = flags.apply(&mut ann, &mut errors);
    if errors.is_empty() {
        Ok(ann)
    } else {
        errors.sort_by_key(|e| e.offset);
        Err(errors)
    }
}

/// The tags of a named field of a struct variant from its doc text (§4.1), or every error
/// in it: E4, E9 (a variant tag on a field) and every malformed `@should`/`@validates` call.
/// CEL syntax is not checked (see [`cel_sources`]).
pub fn parse_field_doc(doc: &str) -> Result<FieldTags, Vec<TagError>> {
    field_tags(doc, true)
}

/// The tags of a field of any other type, read from its schemars description at host
/// start-up (§7.4): only `@should` and `@validates` are interpreted; other tags, known or
/// not, are ignored. Malformed `@should`/`@validates` calls are still errors.
pub fn parse_nested_field_doc(doc: &str) -> Result<FieldTags, Vec<TagError>> {
    field_tags(doc, false)
}

/// Whether the doc text of a field of the app's state (read from its schemars description at
/// host start-up) carries `@redact`, or every error about it: E4 for a name close to
/// `@redact`, E17 for a misplaced one, a malformed `@redact(…)` (it takes no arguments).
/// Other tags, known or not, are ignored: state types may be shared with messages.
///
/// ```
/// use tea_agent_schema::tags::parse_state_field_doc;
///
/// assert_eq!(parse_state_field_doc("The API key.\n@redact"), Ok(true));
/// assert_eq!(parse_state_field_doc("Send to support@example.com"), Ok(false));
/// assert!(parse_state_field_doc("@redacted").is_err());
/// ```
pub fn parse_state_field_doc(doc: &str) -> Result<bool, Vec<TagError>> {
    let mut redact = false;
    let mut errors = Vec::new();
    for event in scan(doc) {
        let concerns_state = match &event {
            Event::Known { tag, .. } => tag.is_state_tag(),
            Event::Unknown { suggestion, .. } => suggestion.is_state_tag(),
        };
        if !concerns_state {
            continue;
        }
        let Some((at, tag, call)) = usable(event, &mut errors) else {
            continue;
        };
        if let Checked::Flag = checked_args(doc, at, tag, call, &mut errors) {
            redact = true;
        }
    }
    if errors.is_empty() {
        Ok(redact)
    } else {
        errors.sort_by_key(|e| e.offset);
        Err(errors)
    }
}

/// The errors of the derived enum's own doc text: E11 for every known tag there (outside
/// backticks and code blocks) and E4 for names close to a known tag.
pub fn check_enum_doc(doc: &str) -> Vec<TagError> {
    scan(doc)
        .into_iter()
        .map(|event| match event {
            Event::Known { at, .. } => TagError::new(at, TagErrorKind::TagOnEnum),
            Event::Unknown {
                at,
                name,
                suggestion,
            } => TagError::new(at, TagErrorKind::UnknownTag { name, suggestion }),
        })
        .collect()
}

/// Every CEL expression of `doc`, in order: the first argument of each well-formed
/// `@routeGated(…)` (1 or 2 arguments) and the argument of each well-formed `@validates(…)`
/// (exactly 1). Malformed calls are left out (they are reported by the parse functions).
/// The derive checks each with the CEL parser (E6/E7 via [`TagError::invalid_cel`]) and uses
/// `offset` to place the error on the right doc line.
pub fn cel_sources(doc: &str) -> Vec<CelSource> {
    scan(doc)
        .into_iter()
        .filter_map(|event| match event {
            Event::Known {
                at,
                tag: tag @ (Tag::RouteGated | Tag::Validates),
                call: Call::Args { args, .. },
                placement: None,
            } if arity_error(tag, args.len()).is_none() => Some(CelSource {
                offset: at,
                tag,
                source: args.into_iter().next()?.value,
            }),
            _ => None,
        })
        .collect()
}

/// Every known tag really written in `doc` (a flag, or a call tag followed by `(`, whether
/// well-formed or not), with the byte offset of its `@`, in order. Prose mentions of call tags
/// are left out. The derive uses it to report E10 on fields that have no wire name.
pub fn written_tags(doc: &str) -> Vec<(usize, Tag)> {
    scan(doc)
        .into_iter()
        .filter_map(|event| match event {
            Event::Known { at, tag, call, .. } if call.is_written() => Some((at, tag)),
            _ => None,
        })
        .collect()
}

/// Shared body of [`parse_field_doc`] (`strict`) and [`parse_nested_field_doc`]. Outside
/// `strict`, only what concerns the field tags is an error: variant tags and names close to
/// a variant tag are ignored there.
fn field_tags(doc: &str, strict: bool) -> Result<FieldTags, Vec<TagError>> {
    let mut tags = FieldTags::default();
    let mut errors = Vec::new();
    let mut seen = SeenCalls::default();
    for event in scan(doc) {
        let concerns_fields = match &event {
            Event::Known { tag, .. } => tag.is_field_tag(),
            Event::Unknown { suggestion, .. } => suggestion.is_field_tag(),
        };
        if !strict && !concerns_fields {
            continue;
        }
        let Some((at, tag, call)) = usable(event, &mut errors) else {
            continue;
        };
        if tag.is_state_tag() {
            errors.push(TagError::new(at, TagErrorKind::StateTagInMsg { tag }));
            continue;
        }
        if !tag.is_field_tag() {
            errors.push(TagError::new(at, TagErrorKind::VariantTagOnField { tag }));
            continue;
        }
        if let Checked::Args(args) = checked_args(doc, at, tag, call, &mut errors) {
            if seen.repeated(doc, at, tag, &mut errors) {
                continue;
            }
            let value = args.into_iter().next().map(|a| a.value);
            match tag {
                Tag::Should => tags.hint = value,
                _ => tags.validates = value,
            }
        }
    }
    if errors.is_empty() {
        Ok(tags)
    } else {
        Err(errors)
    }
}

/// A known tag that stands where a tag belongs and is written as its kind requires:
/// `(at, tag, call)`. Otherwise the error (E4, E17, E18) goes to `errors` and the answer is
/// `None`.
fn usable(event: Event, errors: &mut Vec<TagError>) -> Option<(usize, Tag, Call)> {
    match event {
        Event::Unknown {
            at,
            name,
            suggestion,
        } => {
            errors.push(TagError::new(
                at,
                TagErrorKind::UnknownTag { name, suggestion },
            ));
            None
        }
        Event::Known {
            at,
            tag,
            placement: Some(placement),
            ..
        } => {
            errors.push(TagError::new(
                at,
                TagErrorKind::Misplaced { tag, placement },
            ));
            None
        }
        Event::Known {
            at,
            tag,
            call: Call::Mention,
            ..
        } => {
            errors.push(TagError::new(at, TagErrorKind::CallWithoutList { tag }));
            None
        }
        Event::Known { at, tag, call, .. } => Some((at, tag, call)),
    }
}

/// Where each single-valued call tag was first written (E19).
#[derive(Default)]
struct SeenCalls {
    first: Vec<(Tag, usize)>,
}

impl SeenCalls {
    /// True (with E19 pushed) when `tag`, written at `at`, was already written; flags and
    /// `@example` may repeat.
    fn repeated(&mut self, doc: &str, at: usize, tag: Tag, errors: &mut Vec<TagError>) -> bool {
        if tag.is_flag() || tag == Tag::Example {
            return false;
        }
        if let Some(&(_, first)) = self.first.iter().find(|(t, _)| *t == tag) {
            let kind = TagErrorKind::DuplicateTag {
                tag,
                first_line: line_of(doc, first),
                line: line_of(doc, at),
            };
            errors.push(TagError::new(at, kind).with_first(first));
            return true;
        }
        self.first.push((tag, at));
        false
    }
}

/// What a call of a tag that belongs here amounts to.
enum Checked {
    /// A well-formed flag.
    Flag,
    /// A prose mention, or a call with an error (already pushed).
    Skip,
    /// A call whose arguments passed the arity and JSON checks.
    Args(Vec<Arg>),
}

/// Checks a call of `tag` written at `at`: malformed lists (D1–D6, D9), arity (D7) and,
/// for `@example`, that a quoted value is JSON (D8). Errors are pushed to `errors`.
fn checked_args(doc: &str, at: usize, tag: Tag, call: Call, errors: &mut Vec<TagError>) -> Checked {
    match call {
        Call::Flag => Checked::Flag,
        Call::Mention => {
            errors.push(TagError::new(at, TagErrorKind::CallWithoutList { tag }));
            Checked::Skip
        }
        Call::Broken { detail, end } => {
            errors.push(malformed(doc, at, end, tag, detail));
            Checked::Skip
        }
        Call::Args { args, end } => {
            if let Some(detail) = arity_error(tag, args.len()) {
                errors.push(malformed(doc, at, end, tag, detail));
                return Checked::Skip;
            }
            if tag == Tag::Example {
                if let Some(arg) = args.iter().find(|a| !a.json) {
                    if let Err(err) = serde_json::from_str::<Value>(&arg.value) {
                        let error = first_line(&err.to_string()).to_owned();
                        errors.push(malformed(
                            doc,
                            at,
                            end,
                            tag,
                            Detail::ExampleNotJson { error },
                        ));
                        return Checked::Skip;
                    }
                }
            }
            Checked::Args(args)
        }
    }
}

/// The D7 detail when `count` arguments do not fit `tag` (§2).
fn arity_error(tag: Tag, count: usize) -> Option<Detail> {
    match tag {
        Tag::Emits if count == 0 => Some(Detail::AtLeastOne { found: count }),
        Tag::Emits => None,
        Tag::RouteGated if !(1..=2).contains(&count) => Some(Detail::OneOrTwo { found: count }),
        Tag::RouteGated => None,
        _ if count != 1 => Some(Detail::ExactlyOne { found: count }),
        _ => None,
    }
}

/// E5 when `example` is a JSON object whose `"type"` is not the string `wire_name`.
/// Payload-only objects (no `"type"`), arrays and scalars pass.
fn wrong_example_type(example: &str, wire_name: &str) -> Option<TagErrorKind> {
    let Ok(Value::Object(object)) = serde_json::from_str::<Value>(example) else {
        return None;
    };
    let found = object.get("type")?;
    if found.as_str() == Some(wire_name) {
        return None;
    }
    Some(TagErrorKind::ExampleWrongType {
        found: found.to_string(),
        wire_name: wire_name.to_owned(),
    })
}

/// Keeps the first value: sets `slot` only when it is still empty.
fn set_first(slot: &mut Option<String>, value: Option<String>) {
    if slot.is_none() {
        *slot = value;
    }
}

/// Where each flag was first written.
#[derive(Default)]
struct FlagOffsets {
    requires_confirm: Option<usize>,
    human_only: Option<usize>,
    agent_only: Option<usize>,
    always_affordable: Option<usize>,
}

impl FlagOffsets {
    /// Notes the flag `tag` written at `at` (the first occurrence counts).
    fn record(&mut self, tag: Tag, at: usize) {
        let slot = match tag {
            Tag::RequiresConfirm => &mut self.requires_confirm,
            Tag::HumanOnly => &mut self.human_only,
            Tag::AgentOnly => &mut self.agent_only,
            Tag::AlwaysAffordable => &mut self.always_affordable,
            _ => return,
        };
        slot.get_or_insert(at);
    }

    /// Sets the flag fields of `ann`, pushes E1/E2/E3, and returns the dispatch mode.
    fn apply(&self, ann: &mut MessageAnnotations, errors: &mut Vec<TagError>) -> DispatchMode {
        ann.requires_confirm = self.requires_confirm.is_some();
        ann.always_affordable = self.always_affordable.is_some();
        if let (Some(human), Some(agent)) = (self.human_only, self.agent_only) {
            errors.push(TagError::new(
                human.max(agent),
                TagErrorKind::HumanAndAgentOnly,
            ));
        }
        if self.human_only.is_some() {
            if let Some(at) = self.requires_confirm {
                errors.push(TagError::new(at, TagErrorKind::ConfirmOnHumanOnly));
            }
            if let Some(at) = self.always_affordable {
                errors.push(TagError::new(at, TagErrorKind::AffordableOnHumanOnly));
            }
        }
        match (self.human_only, self.agent_only) {
            (Some(_), None) => DispatchMode::HumanOnly,
            (None, Some(_)) => DispatchMode::AgentOnly,
            _ => DispatchMode::Shared,
        }
    }
}
