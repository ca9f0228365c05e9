//! The types the checker reasons with, read lazily from a raw JSON Schema (the state's) or
//! from a resolved [`TypeNode`] (a message field's): one level at a time, so recursive
//! schemas cost nothing until an expression walks into them.

use serde_json::{Map, Value};

use crate::shape::model::{ObjectModel, TypeKind, TypeNode};

/// The most `$ref` hops (and nested wrappers) one expansion follows; past it the type is
/// dynamic.
const MAX_HOPS: usize = 24;

/// A CEL type as far as the schema tells it.
#[derive(Debug, Clone)]
pub(crate) enum Ty<'a> {
    /// Anything: the schema does not say (a `serde_json::Value`, a custom schema), or the
    /// expression computes something the checker does not follow.
    Dyn,
    /// `null`.
    Null,
    /// A boolean.
    Bool,
    /// A signed integer (JSON integers are ints at run time).
    Int,
    /// An unsigned integer (only from `1u` literals and `uint(…)`).
    Uint,
    /// A double (JSON Schema `number`).
    Double,
    /// A string.
    String,
    /// Bytes.
    Bytes,
    /// A type value (`int`, `type(x)`).
    Type,
    /// One of these literals (strings, numbers or booleans).
    Enum(Vec<Value>),
    /// A list of items of this type.
    List(Box<Ty<'a>>),
    /// A map with string keys and values of this type.
    Map(Box<Ty<'a>>),
    /// An object with named fields.
    Object(Vec<Field<'a>>, Open<'a>),
    /// One of several shapes (an `anyOf`/`oneOf`, a discriminated union).
    OneOf(Vec<Ty<'a>>),
    /// This type or `null`.
    Opt(Box<Ty<'a>>),
    /// A raw JSON Schema node, not yet read.
    Schema(&'a Value),
    /// A model node, not yet read.
    Node(&'a TypeNode),
}

/// Whether an object takes keys besides its fields.
#[derive(Debug, Clone)]
pub(crate) enum Open<'a> {
    /// No other keys.
    Closed,
    /// Other keys, of this type.
    Extra(Box<Ty<'a>>),
}

/// A named field of an object.
#[derive(Debug, Clone)]
pub(crate) struct Field<'a> {
    /// The wire name.
    pub(crate) name: String,
    /// Its type.
    pub(crate) ty: Ty<'a>,
    /// Absent from `required`, or nullable.
    pub(crate) optional: bool,
}

impl<'a> Ty<'a> {
    /// The type with its outer lazy layers read (never `Schema` or `Node`). `root` is the
    /// schema `$ref`s resolve in.
    pub(crate) fn expand(&self, root: &'a Value) -> Ty<'a> {
        let mut ty = self.clone();
        for _ in 0..MAX_HOPS {
            ty = match ty {
                Ty::Schema(schema) => from_schema(root, schema),
                Ty::Node(node) => from_node(node),
                done => return done,
            };
        }
        Ty::Dyn
    }

    /// A short English name ("a list", "a number") for messages.
    pub(crate) fn describe(&self) -> &'static str {
        match self {
            Ty::Dyn | Ty::Schema(_) | Ty::Node(_) => "a value",
            Ty::Null => "null",
            Ty::Bool => "a boolean",
            Ty::Int | Ty::Uint | Ty::Double => "a number",
            Ty::String => "a string",
            Ty::Bytes => "bytes",
            Ty::Type => "a type",
            Ty::Enum(values) => match values.first() {
                Some(Value::Number(_)) => "a number",
                Some(Value::Bool(_)) => "a boolean",
                _ => "an enum value",
            },
            Ty::List(_) => "a list",
            Ty::Map(_) => "a map",
            Ty::Object(..) => "an object",
            Ty::OneOf(_) => "one of several shapes",
            Ty::Opt(inner) => inner.describe(),
        }
    }
}

/// One level of a model node.
fn from_node(node: &TypeNode) -> Ty<'_> {
    let ty = match &node.kind {
        TypeKind::Unknown => Ty::Dyn,
        TypeKind::String => Ty::String,
        TypeKind::Number { integer: true } => Ty::Int,
        TypeKind::Number { integer: false } => Ty::Double,
        TypeKind::Boolean => Ty::Bool,
        TypeKind::Enum(values) => Ty::Enum(values.clone()),
        TypeKind::Object(object) => object_of(object, None),
        TypeKind::Array(element) => Ty::List(Box::new(Ty::Node(element))),
        TypeKind::Union(union) => Ty::OneOf(
            union
                .branches
                .iter()
                .map(|b| object_of(&b.payload, Some((&union.discriminant, &b.value))))
                .collect(),
        ),
    };
    if node.nullable {
        Ty::Opt(Box::new(ty))
    } else {
        ty
    }
}

/// A model object, with a union branch's discriminant as a one-value enum field.
fn object_of<'a>(object: &'a ObjectModel, tag: Option<(&str, &str)>) -> Ty<'a> {
    let mut fields: Vec<Field<'a>> = object
        .fields
        .iter()
        .map(|f| Field {
            name: f.name.clone(),
            ty: Ty::Node(&f.ty),
            optional: f.optional,
        })
        .collect();
    if let Some((name, value)) = tag {
        fields.insert(
            0,
            Field {
                name: name.to_owned(),
                ty: Ty::Enum(vec![Value::String(value.to_owned())]),
                optional: false,
            },
        );
    }
    // The model keeps maps and open objects as unknown: an object here has named fields.
    Ty::Object(fields, Open::Closed)
}

/// One level of a raw JSON Schema node.
fn from_schema<'a>(root: &'a Value, node: &'a Value) -> Ty<'a> {
    let Value::Object(schema) = node else {
        return Ty::Dyn;
    };
    if let Some(Value::String(reference)) = schema.get("$ref") {
        let target = reference
            .strip_prefix("#/$defs/")
            .map(|n| ("$defs", n))
            .or_else(|| {
                reference
                    .strip_prefix("#/definitions/")
                    .map(|n| ("definitions", n))
            })
            .and_then(|(defs, name)| root.get(defs)?.get(name));
        let ty = match target {
            Some(target) => Ty::Schema(target),
            None if reference == "#" => Ty::Schema(root),
            None => Ty::Dyn,
        };
        return nullable(schema, ty);
    }
    if let Some(Value::Array(all)) = schema.get("allOf") {
        return match all.as_slice() {
            [only] => nullable(schema, Ty::Schema(only)),
            _ => Ty::Dyn,
        };
    }
    if let Some(c) = schema.get("const") {
        return literal_enum(std::slice::from_ref(c));
    }
    if let Some(Value::Array(values)) = schema.get("enum") {
        let (nulls, rest): (Vec<&Value>, Vec<&Value>) = values.iter().partition(|v| v.is_null());
        let rest: Vec<Value> = rest.into_iter().cloned().collect();
        let ty = literal_enum(&rest);
        return if nulls.is_empty() {
            ty
        } else {
            Ty::Opt(Box::new(ty))
        };
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(members)) = schema.get(key) {
            return members_of(schema, members);
        }
    }
    let (types, null) = types_of(schema);
    let ty = match types.as_slice() {
        [] if schema.contains_key("properties") => object_schema(schema),
        [] => Ty::Dyn,
        [one] => typed(schema, one),
        _ => Ty::Dyn,
    };
    if null || schema.get("nullable") == Some(&Value::Bool(true)) {
        Ty::Opt(Box::new(ty))
    } else {
        ty
    }
}

/// `ty`, or `ty` or null when the schema says `nullable: true`.
fn nullable<'a>(schema: &Map<String, Value>, ty: Ty<'a>) -> Ty<'a> {
    if schema.get("nullable") == Some(&Value::Bool(true)) {
        Ty::Opt(Box::new(ty))
    } else {
        ty
    }
}

/// An `enum`/`const`: literals of one JSON kind, else dynamic.
fn literal_enum<'a>(values: &[Value]) -> Ty<'a> {
    let kind = |v: &Value| match v {
        Value::String(_) => 1,
        Value::Number(_) => 2,
        Value::Bool(_) => 3,
        _ => 0,
    };
    match values.first().map(kind) {
        Some(k) if k != 0 && values.iter().all(|v| kind(v) == k) => Ty::Enum(values.to_vec()),
        _ => Ty::Dyn,
    }
}

/// An `anyOf`/`oneOf`: the non-null members; all literals of one kind make one enum.
fn members_of<'a>(schema: &'a Map<String, Value>, members: &'a [Value]) -> Ty<'a> {
    let is_null = |m: &Value| m.get("type") == Some(&Value::String("null".into()));
    let null = members.iter().any(is_null);
    let rest: Vec<&Value> = members.iter().filter(|m| !is_null(m)).collect();
    let literals: Option<Vec<Value>> = rest
        .iter()
        .map(|m| match (m.get("const"), m.get("enum")) {
            (Some(c), _) => Some(vec![c.clone()]),
            (None, Some(Value::Array(values))) => Some(values.clone()),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()
        .map(|lists| lists.concat());
    let ty = match (literals, rest.as_slice()) {
        (_, []) => Ty::Null,
        (_, [one]) => Ty::Schema(one),
        (Some(values), _) => literal_enum(&values),
        (None, _) => Ty::OneOf(rest.into_iter().map(Ty::Schema).collect()),
    };
    if null {
        Ty::Opt(Box::new(ty))
    } else {
        nullable(schema, ty)
    }
}

/// The `type` keyword's non-null types, and whether it allows null.
fn types_of(schema: &Map<String, Value>) -> (Vec<&str>, bool) {
    match schema.get("type") {
        Some(Value::String(t)) if t == "null" => (vec!["null"], false),
        Some(Value::String(t)) => (vec![t.as_str()], false),
        Some(Value::Array(ts)) => {
            let names: Vec<&str> = ts.iter().filter_map(Value::as_str).collect();
            let null = names.contains(&"null");
            let rest: Vec<&str> = names.into_iter().filter(|t| *t != "null").collect();
            if rest.is_empty() && null {
                (vec!["null"], false)
            } else {
                (rest, null)
            }
        }
        _ => (Vec::new(), false),
    }
}

/// A schema with one `type`.
fn typed<'a>(schema: &'a Map<String, Value>, ty: &str) -> Ty<'a> {
    match ty {
        "null" => Ty::Null,
        "boolean" => Ty::Bool,
        "integer" => Ty::Int,
        "number" => Ty::Double,
        "string" => Ty::String,
        "array" => match schema.get("items") {
            Some(items @ Value::Object(_)) => Ty::List(Box::new(Ty::Schema(items))),
            _ => Ty::List(Box::new(Ty::Dyn)),
        },
        "object" => object_schema(schema),
        _ => Ty::Dyn,
    }
}

/// An object schema: named fields, a map (`additionalProperties` only), or dynamic.
fn object_schema<'a>(schema: &'a Map<String, Value>) -> Ty<'a> {
    let extra = match schema.get("additionalProperties") {
        Some(Value::Bool(false)) => None,
        Some(values @ Value::Object(_)) => Some(Ty::Schema(values)),
        _ => Some(Ty::Dyn),
    };
    let open_patterns = schema.contains_key("patternProperties");
    let Some(Value::Object(properties)) = schema.get("properties") else {
        return match extra {
            Some(Ty::Dyn) | None if open_patterns => Ty::Dyn,
            Some(values) => Ty::Map(Box::new(values)),
            None => Ty::Object(Vec::new(), Open::Closed),
        };
    };
    let required: Vec<&str> = match schema.get("required") {
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let fields = properties
        .iter()
        .map(|(name, property)| Field {
            name: name.clone(),
            ty: Ty::Schema(property),
            optional: !required.contains(&name.as_str()),
        })
        .collect();
    let open = match extra {
        // schemars leaves `additionalProperties` out of a struct's schema: such an object
        // is closed as far as field reads go (its keys are its fields).
        Some(Ty::Dyn) if !schema.contains_key("additionalProperties") && !open_patterns => {
            Open::Closed
        }
        Some(values) => Open::Extra(Box::new(values)),
        None => Open::Closed,
    };
    Ty::Object(fields, open)
}
