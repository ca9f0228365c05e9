//! Payloads from a variant's schema: the synthesizer of `payloadHint`
//! (`tea_agent_schema::synth`), widened into a generator driven by [`Draws`]. Choice 0 of every
//! value is the synthesized one (or an existing id for an id field), so a shrunk run sends the
//! plainest payload that still fails; the other choices are boundaries (the constraints'
//! limits, integer widths, empty and long strings), unicode, the variant's `@example`s and
//! values read from the agent's state. A payload just outside the schema is a valid one with
//! one thing broken ([`outside`]).

use serde_json::{Map, Number, Value};
use tea_agent_schema::shape::{FieldModel, ObjectModel, TypeKind, TypeNode, VariantModel};
use tea_agent_schema::synth::synth_type;

use super::plan::Draws;

/// Strings that agents' hosts send and apps do not foresee.
const ODD_STRINGS: &[&str] = &[
    "a",
    "é",
    "日本語のテキスト",
    "🦀 crab",
    "e\u{301}",
    "\u{202e}right to left",
    "   ",
    "\"quoted\" and \\ backslash",
    "<b>markup</b>",
    "null",
    "line\nbreak\ttab",
    "\u{0}",
];

/// Arrays are generated with at most this many elements (before the byte budget).
const MAX_ITEMS: usize = 4;

/// Objects nest at most this deep before the generator writes synthesized values.
const MAX_DEPTH: usize = 6;

/// What a payload is made from besides the schema.
#[derive(Debug, Default)]
pub(crate) struct Pool {
    /// String ids read from the agent's state (values of `id` and `…Id` keys).
    pub(crate) string_ids: Vec<String>,
    /// Number ids read from the agent's state.
    pub(crate) number_ids: Vec<Value>,
    /// The value the human seeds into every string (their own dispatches), if any.
    pub(crate) canary: Option<String>,
}

impl Pool {
    /// The ids of `state` (the agent's view).
    pub(crate) fn from_state(state: &Value) -> Pool {
        let mut pool = Pool::default();
        collect_ids(state, None, &mut pool);
        pool.string_ids.dedup();
        pool.number_ids.dedup();
        pool
    }
}

fn is_id_name(name: &str) -> bool {
    name == "id" || name.ends_with("Id") || name.ends_with("_id") || name == "key"
}

fn collect_ids(v: &Value, key: Option<&str>, pool: &mut Pool) {
    match v {
        Value::Object(o) => o.iter().for_each(|(k, v)| collect_ids(v, Some(k), pool)),
        Value::Array(a) => a.iter().for_each(|v| collect_ids(v, key, pool)),
        Value::String(s) if key.is_some_and(is_id_name) && pool.string_ids.len() < 64 => {
            pool.string_ids.push(s.clone());
        }
        Value::Number(_) if key.is_some_and(is_id_name) && pool.number_ids.len() < 64 => {
            pool.number_ids.push(v.clone());
        }
        _ => {}
    }
}

/// A generated message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Generated {
    pub(crate) msg: Value,
    /// Every value is known to be inside the schema (no `pattern`, `format`, `multipleOf` or
    /// `uniqueItems` the generator cannot honour, no value of an unknown schema): only then
    /// must the gate accept it.
    pub(crate) exact: bool,
}

/// A message of `variant`, or why the generator cannot make one.
pub(crate) fn message(
    variant: &VariantModel,
    draws: &mut Draws<'_>,
    pool: &Pool,
) -> Result<Generated, String> {
    let examples = examples(variant);
    // Choice 0 generates; 1..=n takes an `@example` as it is (not with a canary).
    let pick = if pool.canary.is_none() {
        draws.below(examples.len() + 1)
    } else {
        0
    };
    if pick > 0 {
        return Ok(Generated {
            msg: examples[pick - 1].clone(),
            exact: true,
        });
    }
    let mut gen = Gen {
        draws,
        pool,
        examples: &examples,
        exact: true,
    };
    let mut out = Map::new();
    out.insert("type".into(), Value::from(variant.wire_name.as_str()));
    gen.fields(&variant.payload, &mut out, 0).map_err(|field| {
        format!(
            "{}: field `{field}` has a schema the generator does not understand \
                 (serde_json::Value or alike) and no @example gives it a value",
            variant.wire_name
        )
    })?;
    Ok(Generated {
        msg: Value::Object(out),
        exact: gen.exact,
    })
}

/// The variant's `@example`s that parse as messages of it.
fn examples(variant: &VariantModel) -> Vec<Value> {
    variant
        .annotations
        .examples
        .iter()
        .filter_map(|e| serde_json::from_str::<Value>(e).ok())
        .filter(|v| v.get("type").and_then(Value::as_str) == Some(variant.wire_name.as_str()))
        .collect()
}

struct Gen<'d, 'a> {
    draws: &'d mut Draws<'a>,
    pool: &'d Pool,
    examples: &'d [Value],
    exact: bool,
}

impl Gen<'_, '_> {
    /// Fills `out` with `object`'s fields; `Err(field)` for a required field it cannot make.
    fn fields(
        &mut self,
        object: &ObjectModel,
        out: &mut Map<String, Value>,
        depth: usize,
    ) -> Result<(), String> {
        for field in &object.fields {
            if field.optional {
                // 0: as synthesized (with `@should` only), 1: left out, 2: given, 3: null.
                let choices = if field.ty.nullable { 4 } else { 3 };
                match self.draws.below(choices) {
                    0 if field.hint.is_none() => continue,
                    1 => continue,
                    3 => {
                        out.insert(field.name.clone(), Value::Null);
                        continue;
                    }
                    _ => {}
                }
                match self.value(&field.ty, &field.name, depth) {
                    Some(v) => {
                        out.insert(field.name.clone(), v);
                    }
                    None => continue,
                }
            } else {
                let v = self
                    .value(&field.ty, &field.name, depth)
                    .ok_or_else(|| field.name.clone())?;
                out.insert(field.name.clone(), v);
            }
        }
        Ok(())
    }

    /// A value of `node` for the field `name`; `None` for an unknown schema with no example.
    fn value(&mut self, node: &TypeNode, name: &str, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return synth_type(node);
        }
        match &node.kind {
            TypeKind::Unknown => {
                let from_examples: Vec<&Value> =
                    self.examples.iter().filter_map(|e| e.get(name)).collect();
                if from_examples.is_empty() {
                    return None;
                }
                self.exact = false;
                let i = self.draws.below(from_examples.len());
                Some(from_examples[i].clone())
            }
            TypeKind::String => Some(Value::String(self.string(node, name))),
            TypeKind::Number { integer } => Some(self.number(node, name, *integer)),
            TypeKind::Boolean => Some(Value::Bool(self.draws.below(2) == 1)),
            TypeKind::Enum(values) => {
                let i = self.draws.below(values.len());
                values.get(i).cloned()
            }
            TypeKind::Object(object) => {
                let mut out = Map::new();
                self.fields(object, &mut out, depth + 1).ok()?;
                Some(Value::Object(out))
            }
            TypeKind::Array(element) => {
                let c = &node.constraints;
                if c.unique_items {
                    self.exact = false;
                }
                let lo = c.min_items.unwrap_or(0) as usize;
                let hi = c
                    .max_items
                    .map_or(MAX_ITEMS, |m| (m as usize).min(MAX_ITEMS));
                // 0: as synthesized (one element), then 0, 2, 3, … elements.
                let lens: Vec<usize> = std::iter::once(1)
                    .chain(std::iter::once(0))
                    .chain(2..=MAX_ITEMS)
                    .filter(|n| (lo..=hi.max(lo)).contains(n))
                    .collect();
                let n = lens
                    .get(self.draws.below(lens.len()))
                    .copied()
                    .unwrap_or(lo);
                let items: Option<Vec<Value>> = (0..n)
                    .map(|_| self.value(element, name, depth + 1))
                    .collect();
                Some(Value::Array(items?))
            }
            TypeKind::Union(union) => {
                let branch = union.branches.get(self.draws.below(union.branches.len()))?;
                let mut out = Map::new();
                out.insert(
                    union.discriminant.clone(),
                    Value::from(branch.value.as_str()),
                );
                self.fields(&branch.payload, &mut out, depth + 1).ok()?;
                Some(Value::Object(out))
            }
        }
    }

    fn string(&mut self, node: &TypeNode, name: &str) -> String {
        let c = &node.constraints;
        if c.pattern.is_some() || c.format.is_some() {
            // Values the generator cannot be sure of: the examples', else the synthesized one.
            self.exact = false;
            let known: Vec<String> = self
                .examples
                .iter()
                .filter_map(|e| e.get(name).and_then(Value::as_str).map(str::to_string))
                .collect();
            return match known.is_empty() {
                true => String::new(),
                false => known[self.draws.below(known.len())].clone(),
            };
        }
        if let Some(canary) = &self.pool.canary {
            return canary.clone();
        }
        let mut choices: Vec<String> = Vec::new();
        if is_id_name(name) {
            choices.extend(self.pool.string_ids.iter().cloned());
        }
        choices.push(String::new());
        choices.extend(
            self.examples
                .iter()
                .filter_map(|e| e.get(name).and_then(Value::as_str).map(str::to_string)),
        );
        choices.extend(ODD_STRINGS.iter().map(|s| s.to_string()));
        if !is_id_name(name) {
            choices.extend(self.pool.string_ids.iter().take(4).cloned());
        }
        choices.push("missing-id-404".into());
        // Boundaries: the longest allowed, and (without a limit) 200, 201 and 1000 characters.
        match c.max_length {
            Some(max) => choices.push("x".repeat(max.min(4096) as usize)),
            None => {
                choices.push("x".repeat(200));
                choices.push("y".repeat(201));
                choices.push("ü".repeat(1000));
            }
        }
        let (lo, hi) = (
            c.min_length.unwrap_or(0) as usize,
            c.max_length.map_or(usize::MAX, |m| m as usize),
        );
        choices.retain(|s| (lo..=hi).contains(&s.chars().count()));
        if choices.is_empty() {
            return "a".repeat(lo);
        }
        let i = self.draws.below(choices.len());
        choices.swap_remove(i)
    }

    fn number(&mut self, node: &TypeNode, name: &str, integer: bool) -> Value {
        let c = &node.constraints;
        if c.multiple_of.is_some() {
            self.exact = false;
        }
        let (mut lo, mut hi) = integer_range(c.format.as_deref(), integer);
        let as_f = |n: &Option<Number>| n.as_ref().and_then(Number::as_f64);
        if let Some(m) = as_f(&c.minimum) {
            lo = lo.max(m);
        }
        if let Some(m) = as_f(&c.maximum) {
            hi = hi.min(m);
        }
        let ex_lo = as_f(&c.exclusive_minimum);
        let ex_hi = as_f(&c.exclusive_maximum);
        let mut choices: Vec<Value> = Vec::new();
        if is_id_name(name) {
            choices.extend(self.pool.number_ids.iter().cloned());
        }
        let mut push = |f: f64| {
            let inside =
                f >= lo && f <= hi && ex_lo.is_none_or(|m| f > m) && ex_hi.is_none_or(|m| f < m);
            if inside {
                choices.push(number(f, integer));
            }
        };
        for f in [
            0.0,
            1.0,
            -1.0,
            2.0,
            100.0,
            lo,
            hi,
            lo + 1.0,
            hi - 1.0,
            9_007_199_254_740_992.0,
        ] {
            push(f);
        }
        if !integer {
            for f in [0.5, -2.25, 1e-9, 1e300] {
                push(f);
            }
        }
        if choices.is_empty() {
            return synth_type(node).unwrap_or(Value::from(0));
        }
        let i = self.draws.below(choices.len());
        choices.swap_remove(i)
    }
}

/// The range an integer of this `format` holds (schemars writes `uint32`, `int16`, …).
fn integer_range(format: Option<&str>, integer: bool) -> (f64, f64) {
    if !integer {
        return (f64::MIN, f64::MAX);
    }
    match format {
        Some("uint8") => (0.0, 255.0),
        Some("int8") => (-128.0, 127.0),
        Some("uint16") => (0.0, 65_535.0),
        Some("int16") => (-32_768.0, 32_767.0),
        Some("uint32") => (0.0, 4_294_967_295.0),
        Some("int32") => (-2_147_483_648.0, 2_147_483_647.0),
        Some("uint64") | Some("uint") => (0.0, 18_446_744_073_709_549_568.0),
        _ => (-9_223_372_036_854_774_784.0, 9_223_372_036_854_774_784.0),
    }
}

fn number(f: f64, integer: bool) -> Value {
    if integer {
        if f >= 0.0 && f <= u64::MAX as f64 {
            return Value::from(f as u64);
        }
        return Value::from(f as i64);
    }
    Number::from_f64(f).map_or(Value::from(0), Value::Number)
}

/// `valid` (a message of `variant`) with one thing broken so that it falls outside the
/// schema, and what was broken: a field left out, a wrong type, one over a limit, or (for a
/// variant without fields, and now and then) an unknown variant.
pub(crate) fn outside(
    variant: &VariantModel,
    valid: &Value,
    draws: &mut Draws<'_>,
) -> (Value, String) {
    let mut msg = valid.clone();
    let fields: Vec<&FieldModel> = variant
        .payload
        .fields
        .iter()
        .filter(|f| !matches!(f.ty.kind, TypeKind::Unknown))
        .collect();
    let unknown = || {
        (
            serde_json::json!({"type": format!("{}NoSuchVariant", variant.wire_name)}),
            "an unknown variant".to_string(),
        )
    };
    if fields.is_empty() || draws.below(8) == 7 {
        return unknown();
    }
    let field = fields[draws.below(fields.len())];
    let Some(obj) = msg.as_object_mut() else {
        return unknown();
    };
    if !field.optional && draws.below(3) == 0 {
        obj.remove(&field.name);
        return (msg, format!("`{}` left out", field.name));
    }
    let c = &field.ty.constraints;
    let broken = match &field.ty.kind {
        TypeKind::String if c.max_length.is_some_and(|m| m < 4096) && draws.below(2) == 0 => {
            let max = c.max_length.unwrap_or(0) as usize;
            (
                Value::String("z".repeat(max + 1)),
                "one character over maxLength",
            )
        }
        TypeKind::Number { .. } if c.maximum.is_some() && draws.below(2) == 0 => {
            let max = c.maximum.as_ref().and_then(Number::as_f64).unwrap_or(0.0);
            (number(max + 1.0, true), "one over its maximum")
        }
        TypeKind::String => (Value::from(12345), "a number for a string"),
        TypeKind::Number { .. } => (Value::from("1"), "a string for a number"),
        TypeKind::Boolean => (Value::from("yes"), "a string for a boolean"),
        TypeKind::Enum(_) => (Value::from("not-a-member"), "a value not in its enum"),
        TypeKind::Object(_) | TypeKind::Union(_) => {
            (Value::from("not an object"), "a string for an object")
        }
        TypeKind::Array(_) => (
            serde_json::json!({"not": "an array"}),
            "an object for an array",
        ),
        TypeKind::Unknown => return unknown(),
    };
    obj.insert(field.name.clone(), broken.0);
    (msg, format!("`{}`: {}", field.name, broken.1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tea_agent_schema::shape::{Constraints, TagSource};

    fn field(name: &str, ty: TypeNode) -> FieldModel {
        FieldModel {
            name: name.into(),
            optional: false,
            hint: None,
            validates: None,
            ty,
            pointer: String::new(),
            tag_source: TagSource::Derive,
        }
    }

    fn variant(fields: Vec<FieldModel>, examples: Vec<String>) -> VariantModel {
        let mut v = VariantModel {
            wire_name: "v".into(),
            payload: ObjectModel {
                fields,
                deny_unknown: false,
            },
            annotations: Default::default(),
            pointer: String::new(),
        };
        v.annotations.examples = examples;
        v
    }

    #[test]
    fn choice_zero_is_the_synthesized_hint_or_an_existing_id() {
        let v = variant(
            vec![
                field("id", TypeNode::new(TypeKind::String)),
                field("title", TypeNode::new(TypeKind::String)),
                field("n", TypeNode::new(TypeKind::Number { integer: true })),
            ],
            vec![],
        );
        let pool = Pool::from_state(&serde_json::json!({"items": [{"id": "t7"}]}));
        let g = message(&v, &mut Draws::new(&[]), &pool).unwrap();
        assert_eq!(
            g.msg,
            serde_json::json!({"type": "v", "id": "t7", "title": "", "n": 0})
        );
        assert!(g.exact);
    }

    #[test]
    fn strings_stay_within_their_lengths_and_numbers_within_their_bounds() {
        let mut s = TypeNode::new(TypeKind::String);
        s.constraints = Constraints {
            min_length: Some(2),
            max_length: Some(3),
            ..Constraints::default()
        };
        let mut n = TypeNode::new(TypeKind::Number { integer: true });
        n.constraints.format = Some("uint8".into());
        let v = variant(vec![field("s", s), field("n", n)], vec![]);
        for a in 0..40u32 {
            for b in 0..40u32 {
                let g = message(&v, &mut Draws::new(&[0, a, b]), &Pool::default()).unwrap();
                let len = g.msg["s"].as_str().unwrap().chars().count();
                assert!((2..=3).contains(&len), "{}", g.msg);
                let n = g.msg["n"].as_f64().unwrap();
                assert!((0.0..=255.0).contains(&n), "{}", g.msg);
            }
        }
    }

    #[test]
    fn an_unknown_field_takes_example_values_or_is_skipped_with_its_reason() {
        let v = variant(vec![field("data", TypeNode::unknown())], vec![]);
        let err = message(&v, &mut Draws::new(&[]), &Pool::default()).unwrap_err();
        assert!(err.contains("field `data`"), "{err}");
        let v = variant(
            vec![field("data", TypeNode::unknown())],
            vec![r#"{"type":"v","data":{"k":1}}"#.into()],
        );
        // Choice 0 generates, taking the example's value of the field.
        let g = message(&v, &mut Draws::new(&[0]), &Pool::default()).unwrap();
        assert_eq!(g.msg, serde_json::json!({"type": "v", "data": {"k": 1}}));
        assert!(!g.exact);
    }

    #[test]
    fn outside_breaks_one_thing() {
        let v = variant(
            vec![field("title", TypeNode::new(TypeKind::String))],
            vec![],
        );
        let valid = serde_json::json!({"type": "v", "title": "a"});
        let (msg, what) = outside(&v, &valid, &mut Draws::new(&[0, 1]));
        assert_eq!(
            msg,
            serde_json::json!({"type": "v", "title": 12345}),
            "{what}"
        );
        let (msg, what) = outside(&v, &valid, &mut Draws::new(&[0, 0, 0]));
        assert_eq!(msg, serde_json::json!({"type": "v"}), "{what}");
    }
}
