//! Rule R8 of `docs/annotations.md` §7.3: the resolved members of a `oneOf`/`anyOf` as one enum of
//! literals, as a discriminated union, or as `"unknown"`.
//!
//! Layering: depends only on `model` and `keywords`. Resolving the members is `resolve.rs`'s
//! (`Resolver::resolve_members`), which hands the resolved nodes to [`union_of`].

use serde_json::Value;

use crate::shape::keywords::same_literal_kind;
use crate::shape::model::{BranchModel, ObjectModel, TypeKind, TypeNode, UnionModel};

/// R8 over the resolved (non-null) members of a `oneOf`/`anyOf`, in member order.
pub(crate) fn union_of(nodes: Vec<TypeNode>) -> TypeNode {
    // (a) literals of one primitive kind → one enum, values in member order.
    if nodes.iter().all(|n| matches!(n.kind, TypeKind::Enum(_))) {
        let values: Vec<Value> = nodes
            .iter()
            .flat_map(|n| match &n.kind {
                TypeKind::Enum(values) => values.clone(),
                _ => Vec::new(),
            })
            .collect();
        if same_literal_kind(values.iter()) {
            return TypeNode {
                nullable: nodes.iter().any(|n| n.nullable),
                ..TypeNode::new(TypeKind::Enum(values))
            };
        }
        return TypeNode::unknown();
    }
    // (b) objects with a discriminant → discriminated union.
    let objects: Option<Vec<ObjectModel>> = nodes
        .into_iter()
        .map(|n| match n.kind {
            TypeKind::Object(o) => Some(o),
            _ => None,
        })
        .collect();
    match objects.and_then(discriminated_union) {
        Some(union) => TypeNode::new(TypeKind::Union(union)),
        // (c)
        None => TypeNode::unknown(),
    }
}

/// The value of a field whose type is a single string literal.
fn string_literal(object: &ObjectModel, name: &str) -> Option<String> {
    match &object.field(name)?.ty.kind {
        TypeKind::Enum(values) => match values.as_slice() {
            [Value::String(s)] => Some(s.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// Finds the discriminant: the first property name, in the first branch's order, that is a
/// string literal in every branch with pairwise distinct values. `None` when there is none.
pub(crate) fn discriminated_union(objects: Vec<ObjectModel>) -> Option<UnionModel> {
    let first = objects.first()?;
    let (name, values) = first.fields.iter().find_map(|candidate| {
        let values: Vec<String> = objects
            .iter()
            .map(|o| string_literal(o, &candidate.name))
            .collect::<Option<_>>()?;
        let distinct = values
            .iter()
            .enumerate()
            .all(|(i, v)| !values[..i].contains(v));
        distinct.then(|| (candidate.name.clone(), values))
    })?;
    let branches = objects
        .into_iter()
        .zip(values)
        .map(|(object, value)| BranchModel {
            value,
            payload: ObjectModel {
                fields: object
                    .fields
                    .into_iter()
                    .filter(|f| f.name != name)
                    .collect(),
                deny_unknown: object.deny_unknown,
            },
        })
        .collect();
    Some(UnionModel {
        discriminant: name,
        branches,
    })
}
