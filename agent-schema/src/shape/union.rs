//! Rule R8 of `annotations.md` §7.3: `oneOf`/`anyOf` as one enum of literals, as a
//! discriminated union, or as `"unknown"`.

use serde_json::Value;

use crate::shape::keywords::{same_literal_kind, Located};
use crate::shape::resolve::Resolver;
use crate::shape::{BranchModel, ObjectModel, SchemaError, TypeKind, TypeNode, UnionModel};

/// R8 over the (non-null) members of a `oneOf`/`anyOf`, each resolved at `budget` (a `$ref`
/// hop inside a member spends budget for that member only).
pub(crate) fn resolve_members<'a>(
    resolver: &mut Resolver<'a>,
    members: Vec<Located<'a>>,
    budget: u32,
) -> Result<TypeNode, SchemaError> {
    let mut nodes = Vec::with_capacity(members.len());
    for (member, pointer) in &members {
        nodes.push(resolver.resolve(member, pointer, budget)?);
    }
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
            return Ok(TypeNode {
                nullable: nodes.iter().any(|n| n.nullable),
                ..TypeNode::new(TypeKind::Enum(values))
            });
        }
        return Ok(TypeNode::unknown());
    }
    // (b) objects with a discriminant → discriminated union.
    let objects: Option<Vec<ObjectModel>> = nodes
        .into_iter()
        .map(|n| match n.kind {
            TypeKind::Object(o) => Some(o),
            _ => None,
        })
        .collect();
    Ok(match objects.and_then(discriminated_union) {
        Some(union) => TypeNode::new(TypeKind::Union(union)),
        // (c)
        None => TypeNode::unknown(),
    })
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
