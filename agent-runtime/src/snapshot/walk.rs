//! The incremental serializer: a [`serde::Serializer`] that walks a typed state against the
//! JSON tree of its previous serialization and updates the tree in place.
//!
//! Scalars are compared where they stand, so an unchanged state allocates nothing; a node
//! that differs is written into the tree and reported as a patch op. The ops are exactly
//! those of [`crate::diff::diff`] (semantics §1) between the old and the new tree:
//!
//! - a scalar, or a container of another kind than the tree's, is built with serde_json's
//!   own value serializer and settled with the diff (a `replace`, or the diff of two
//!   objects for an enum whose variant changed);
//! - an array walks its common prefix in place, then removes the surplus from the end down
//!   or appends the new tail with `add`s;
//! - an object walks its fields in place while their keys match the tree's, in order. At the
//!   first key that does not match, the rest of the fields are built and the object is
//!   settled like the diff does it: `remove`s of the old keys gone (in the old order, placed
//!   before the ops of the object's fields), then each remaining new key walked or added.
//!
//! Fields the redaction plan marks are never emitted: they never reach the tree or an op.

use std::collections::{HashMap, HashSet};

use agent_schema::redact::{PlanNode, Step};
use serde::ser::{self, Serialize, SerializeMap as _, Serializer as _};
use serde_json::value::Serializer as ValueSer;
use serde_json::{Map, Value};

use crate::diff::{diff_into, push_index, push_key, PatchOp};

type Error = serde_json::Error;
type ValueSeq = <ValueSer as ser::Serializer>::SerializeSeq;
type ValueTupleVariant = <ValueSer as ser::Serializer>::SerializeTupleVariant;
type ValueMap = <ValueSer as ser::Serializer>::SerializeMap;
type ValueStructVariant = <ValueSer as ser::Serializer>::SerializeStructVariant;

/// The walk's output so far: the path of the current node and the ops.
#[derive(Debug, Default)]
pub(crate) struct Ctx {
    pub path: String,
    pub ops: Vec<PatchOp>,
    /// Set when an object's keys changed order (or new keys came in the middle): its
    /// patch alone does not give the key order of the new tree.
    pub reordered: bool,
}

impl Ctx {
    fn replace(&mut self, value: Value) {
        self.ops.push(PatchOp::Replace {
            path: self.path.clone(),
            value,
        });
    }

    /// Records the ops from `target` to `new` and puts `new` in place.
    fn settle(&mut self, target: &mut Value, new: Value) {
        diff_into(target, &new, &mut self.path, &mut self.ops);
        *target = new;
    }
}

/// Walks `state` against `tree` (its previous serialization, redacted by `plan`): afterwards
/// `tree` is the new serialization and `ctx.ops` holds the ops from the old tree to it. On an
/// error the tree is left half-updated: throw it away.
pub(crate) fn walk<T: Serialize + ?Sized>(
    state: &T,
    tree: &mut Value,
    plan: Option<PlanNode<'_>>,
    ctx: &mut Ctx,
) -> Result<(), Error> {
    let done = state.serialize(Walker {
        target: tree,
        plan,
        ctx,
    })?;
    apply(tree, done);
    Ok(())
}

/// Serializes `value` from scratch, without the fields `plan` redacts.
pub(crate) fn build<T: Serialize + ?Sized>(
    value: &T,
    plan: Option<PlanNode<'_>>,
) -> Result<Value, Error> {
    let mut v = value.serialize(ValueSer)?;
    if let Some(p) = plan {
        p.strip(&mut v);
    }
    Ok(v)
}

/// What a walker leaves for its caller to do on the target once the walker's borrow ends.
#[must_use]
enum Done {
    /// Nothing.
    Same,
    /// The target object keeps its first `keep` entries, followed by `rest`.
    Splice {
        keep: usize,
        rest: Vec<(String, Value)>,
    },
    /// Apply to the single value of the target (a `{"Variant": {…}}` object).
    Inner(Box<Done>),
}

fn apply(target: &mut Value, done: Done) {
    match (done, target) {
        (Done::Same, _) => {}
        (Done::Splice { keep, rest }, Value::Object(map)) => {
            let old = std::mem::take(map);
            let mut new = Map::with_capacity(keep + rest.len());
            new.extend(old.into_iter().take(keep));
            new.extend(rest);
            *map = new;
        }
        (Done::Inner(inner), Value::Object(map)) => {
            if let Some(v) = map.values_mut().next() {
                apply(v, *inner);
            }
        }
        // Walkers only return these for objects.
        _ => {}
    }
}

fn plan_of(step: Step<'_>) -> Option<PlanNode<'_>> {
    match step {
        Step::Into(node) => Some(node),
        Step::Plain | Step::Redact => None,
    }
}

fn field_step<'p>(plan: Option<PlanNode<'p>>, key: &str) -> Step<'p> {
    match plan {
        Some(p) => p.field(key),
        None => Step::Plain,
    }
}

/// The object key serde_json gives `key` (strings as they are, numbers and the like as
/// their text; anything else is serde_json's error).
fn key_string<T: Serialize + ?Sized>(key: &T) -> Result<String, Error> {
    let mut map = ValueSer.serialize_map(Some(1))?;
    map.serialize_key(key)?;
    map.serialize_value(&())?;
    match map.end()? {
        Value::Object(m) => Ok(m.into_iter().next().map(|(k, _)| k).unwrap_or_default()),
        _ => Err(ser::Error::custom("map key did not serialize to a string")),
    }
}

/// Walks one value against `target`.
struct Walker<'a, 'c, 'p> {
    target: &'a mut Value,
    plan: Option<PlanNode<'p>>,
    ctx: &'c mut Ctx,
}

impl Walker<'_, '_, '_> {
    fn scalar(self, new: Value) -> Result<Done, Error> {
        if *self.target != new {
            self.ctx.replace(new.clone());
            *self.target = new;
        }
        Ok(Done::Same)
    }

    /// Settles a value built from scratch (redacted by this node's plan).
    fn rebuilt(self, built: Result<Value, Error>) -> Result<Done, Error> {
        let mut v = built?;
        if let Some(p) = self.plan {
            p.strip(&mut v);
        }
        self.ctx.settle(self.target, v);
        Ok(Done::Same)
    }
}

/// The one value of `target` when it is `{variant: value}`.
fn variant_slot<'a>(target: &'a mut Value, variant: &str) -> Option<&'a mut Value> {
    match target {
        Value::Object(map) if map.len() == 1 => {
            let (k, v) = map.iter_mut().next()?;
            (k == variant).then_some(v)
        }
        _ => None,
    }
}

impl<'a, 'c, 'p> ser::Serializer for Walker<'a, 'c, 'p> {
    type Ok = Done;
    type Error = Error;
    type SerializeSeq = SeqWalk<'a, 'c, 'p>;
    type SerializeTuple = SeqWalk<'a, 'c, 'p>;
    type SerializeTupleStruct = SeqWalk<'a, 'c, 'p>;
    type SerializeTupleVariant = TupleVariantWalk<'a, 'c, 'p>;
    type SerializeMap = ObjWalk<'a, 'c, 'p>;
    type SerializeStruct = ObjWalk<'a, 'c, 'p>;
    type SerializeStructVariant = StructVariantWalk<'a, 'c, 'p>;

    fn serialize_bool(self, v: bool) -> Result<Done, Error> {
        self.scalar(Value::Bool(v))
    }
    fn serialize_i8(self, v: i8) -> Result<Done, Error> {
        self.scalar(ValueSer.serialize_i8(v)?)
    }
    fn serialize_i16(self, v: i16) -> Result<Done, Error> {
        self.scalar(ValueSer.serialize_i16(v)?)
    }
    fn serialize_i32(self, v: i32) -> Result<Done, Error> {
        self.scalar(ValueSer.serialize_i32(v)?)
    }
    fn serialize_i64(self, v: i64) -> Result<Done, Error> {
        self.scalar(ValueSer.serialize_i64(v)?)
    }
    fn serialize_i128(self, v: i128) -> Result<Done, Error> {
        self.scalar(ValueSer.serialize_i128(v)?)
    }
    fn serialize_u8(self, v: u8) -> Result<Done, Error> {
        self.scalar(ValueSer.serialize_u8(v)?)
    }
    fn serialize_u16(self, v: u16) -> Result<Done, Error> {
        self.scalar(ValueSer.serialize_u16(v)?)
    }
    fn serialize_u32(self, v: u32) -> Result<Done, Error> {
        self.scalar(ValueSer.serialize_u32(v)?)
    }
    fn serialize_u64(self, v: u64) -> Result<Done, Error> {
        self.scalar(ValueSer.serialize_u64(v)?)
    }
    fn serialize_u128(self, v: u128) -> Result<Done, Error> {
        self.scalar(ValueSer.serialize_u128(v)?)
    }
    fn serialize_f32(self, v: f32) -> Result<Done, Error> {
        self.scalar(ValueSer.serialize_f32(v)?)
    }
    fn serialize_f64(self, v: f64) -> Result<Done, Error> {
        self.scalar(ValueSer.serialize_f64(v)?)
    }
    fn serialize_char(self, v: char) -> Result<Done, Error> {
        self.scalar(ValueSer.serialize_char(v)?)
    }
    fn serialize_str(self, v: &str) -> Result<Done, Error> {
        if let Value::String(s) = &*self.target {
            if s == v {
                return Ok(Done::Same);
            }
        }
        self.scalar(Value::String(v.to_owned()))
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<Done, Error> {
        let built = ValueSer.serialize_bytes(v);
        self.rebuilt(built)
    }
    fn serialize_none(self) -> Result<Done, Error> {
        self.scalar(Value::Null)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Done, Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<Done, Error> {
        self.scalar(Value::Null)
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<Done, Error> {
        self.scalar(Value::Null)
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<Done, Error> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<Done, Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<Done, Error> {
        let step = field_step(self.plan, variant);
        if step != Step::Redact {
            let Walker { target, plan, ctx } = self;
            if let Some(slot) = variant_slot(target, variant) {
                let base = ctx.path.len();
                push_key(&mut ctx.path, variant);
                let done = value.serialize(Walker {
                    target: slot,
                    plan: plan_of(step),
                    ctx,
                })?;
                apply(slot, done);
                ctx.path.truncate(base);
                return Ok(Done::Same);
            }
            let built = ValueSer.serialize_newtype_variant(name, index, variant, value);
            return Walker { target, plan, ctx }.rebuilt(built);
        }
        let built = ValueSer.serialize_newtype_variant(name, index, variant, value);
        self.rebuilt(built)
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<SeqWalk<'a, 'c, 'p>, Error> {
        let Walker { target, plan, ctx } = self;
        let item = plan.map_or(Step::Plain, |p| p.item());
        Ok(match target {
            Value::Array(vec) => SeqWalk::InPlace {
                prev_len: vec.len(),
                vec,
                index: 0,
                item: plan_of(item),
                ctx,
                base_path: None,
            },
            target => SeqWalk::Build {
                inner: ValueSer.serialize_seq(len)?,
                target,
                plan,
                ctx,
            },
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<SeqWalk<'a, 'c, 'p>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<SeqWalk<'a, 'c, 'p>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<TupleVariantWalk<'a, 'c, 'p>, Error> {
        let step = field_step(self.plan, variant);
        let Walker { target, plan, ctx } = self;
        if step != Step::Redact && matches!(variant_slot(target, variant), Some(Value::Array(_))) {
            let Some(Value::Array(vec)) = variant_slot(target, variant) else {
                unreachable!("checked just above")
            };
            let base = ctx.path.len();
            push_key(&mut ctx.path, variant);
            let item = plan_of(step).map_or(Step::Plain, |p| p.item());
            return Ok(TupleVariantWalk::InPlace(SeqWalk::InPlace {
                prev_len: vec.len(),
                vec,
                index: 0,
                item: plan_of(item),
                ctx,
                base_path: Some(base),
            }));
        }
        Ok(TupleVariantWalk::Build {
            inner: ValueSer.serialize_tuple_variant(name, index, variant, len)?,
            target,
            plan,
            ctx,
        })
    }
    fn serialize_map(self, len: Option<usize>) -> Result<ObjWalk<'a, 'c, 'p>, Error> {
        let Walker { target, plan, ctx } = self;
        match target {
            Value::Object(map) => Ok(ObjWalk::in_place(map, plan, ctx)),
            target => Ok(ObjWalk::Build {
                inner: ValueSer.serialize_map(len)?,
                target,
                plan,
                ctx,
            }),
        }
    }
    fn serialize_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<ObjWalk<'a, 'c, 'p>, Error> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<StructVariantWalk<'a, 'c, 'p>, Error> {
        let step = field_step(self.plan, variant);
        let Walker { target, plan, ctx } = self;
        if step != Step::Redact && matches!(variant_slot(target, variant), Some(Value::Object(_))) {
            let Some(Value::Object(map)) = variant_slot(target, variant) else {
                unreachable!("checked just above")
            };
            let base = ctx.path.len();
            push_key(&mut ctx.path, variant);
            return Ok(StructVariantWalk::InPlace {
                inner: ObjWalk::in_place(map, plan_of(step), ctx),
                base,
            });
        }
        Ok(StructVariantWalk::Build {
            inner: ValueSer.serialize_struct_variant(name, index, variant, len)?,
            target,
            plan,
            ctx,
        })
    }
}

/// An array walked in place, or built when the tree holds something else there.
enum SeqWalk<'a, 'c, 'p> {
    InPlace {
        vec: &'a mut Vec<Value>,
        prev_len: usize,
        index: usize,
        item: Option<PlanNode<'p>>,
        ctx: &'c mut Ctx,
        /// For a tuple variant: the path length to restore at the end.
        base_path: Option<usize>,
    },
    Build {
        inner: ValueSeq,
        target: &'a mut Value,
        plan: Option<PlanNode<'p>>,
        ctx: &'c mut Ctx,
    },
}

impl SeqWalk<'_, '_, '_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        match self {
            SeqWalk::InPlace {
                vec,
                prev_len,
                index,
                item,
                ctx,
                ..
            } => {
                if *index < *prev_len {
                    let base = ctx.path.len();
                    push_index(&mut ctx.path, *index);
                    let slot = &mut vec[*index];
                    let done = value.serialize(Walker {
                        target: slot,
                        plan: *item,
                        ctx,
                    })?;
                    apply(slot, done);
                    ctx.path.truncate(base);
                } else {
                    vec.push(build(value, *item)?);
                }
                *index += 1;
                Ok(())
            }
            SeqWalk::Build { inner, .. } => ser::SerializeSeq::serialize_element(inner, value),
        }
    }

    fn finish(self) -> Result<Done, Error> {
        match self {
            SeqWalk::InPlace {
                vec,
                prev_len,
                index,
                ctx,
                base_path,
                ..
            } => {
                let base = ctx.path.len();
                for i in (index..prev_len).rev() {
                    push_index(&mut ctx.path, i);
                    ctx.ops.push(PatchOp::Remove {
                        path: ctx.path.clone(),
                    });
                    ctx.path.truncate(base);
                }
                vec.truncate(index);
                for (i, v) in vec.iter().enumerate().skip(prev_len) {
                    push_index(&mut ctx.path, i);
                    ctx.ops.push(PatchOp::Add {
                        path: ctx.path.clone(),
                        value: v.clone(),
                    });
                    ctx.path.truncate(base);
                }
                if let Some(b) = base_path {
                    ctx.path.truncate(b);
                }
                Ok(Done::Same)
            }
            SeqWalk::Build {
                inner,
                target,
                plan,
                ctx,
            } => Walker { target, plan, ctx }.rebuilt(ser::SerializeSeq::end(inner)),
        }
    }
}

impl ser::SerializeSeq for SeqWalk<'_, '_, '_> {
    type Ok = Done;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<Done, Error> {
        self.finish()
    }
}

impl ser::SerializeTuple for SeqWalk<'_, '_, '_> {
    type Ok = Done;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<Done, Error> {
        self.finish()
    }
}

impl ser::SerializeTupleStruct for SeqWalk<'_, '_, '_> {
    type Ok = Done;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<Done, Error> {
        self.finish()
    }
}

/// `{"Variant": [...]}`.
enum TupleVariantWalk<'a, 'c, 'p> {
    InPlace(SeqWalk<'a, 'c, 'p>),
    Build {
        inner: ValueTupleVariant,
        target: &'a mut Value,
        plan: Option<PlanNode<'p>>,
        ctx: &'c mut Ctx,
    },
}

impl ser::SerializeTupleVariant for TupleVariantWalk<'_, '_, '_> {
    type Ok = Done;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        match self {
            TupleVariantWalk::InPlace(seq) => seq.element(value),
            TupleVariantWalk::Build { inner, .. } => {
                ser::SerializeTupleVariant::serialize_field(inner, value)
            }
        }
    }
    fn end(self) -> Result<Done, Error> {
        match self {
            TupleVariantWalk::InPlace(seq) => seq.finish(),
            TupleVariantWalk::Build {
                inner,
                target,
                plan,
                ctx,
            } => Walker { target, plan, ctx }.rebuilt(ser::SerializeTupleVariant::end(inner)),
        }
    }
}

/// The fields not walked in place: the old entries left from the first key that did not
/// match, and the new fields from there on, built.
struct Rest<'a> {
    prev: Vec<(&'a String, &'a mut Value)>,
    next: Vec<(String, Value)>,
}

/// An object (a struct or a map) walked in place, or built when the tree holds something
/// else there.
enum ObjWalk<'a, 'c, 'p> {
    InPlace {
        ctx: &'c mut Ctx,
        plan: Option<PlanNode<'p>>,
        /// Where the ops of this object start (removes go there).
        ops_start: usize,
        /// Entries walked in place so far.
        kept: usize,
        /// The old entry at the current position.
        ahead: Option<(&'a String, &'a mut Value)>,
        iter: serde_json::map::IterMut<'a>,
        rest: Option<Rest<'a>>,
        /// A map key waiting for its value.
        key: Option<String>,
    },
    Build {
        inner: ValueMap,
        target: &'a mut Value,
        plan: Option<PlanNode<'p>>,
        ctx: &'c mut Ctx,
    },
}

impl<'a, 'c, 'p> ObjWalk<'a, 'c, 'p> {
    fn in_place(
        map: &'a mut Map<String, Value>,
        plan: Option<PlanNode<'p>>,
        ctx: &'c mut Ctx,
    ) -> Self {
        let mut iter = map.iter_mut();
        ObjWalk::InPlace {
            ops_start: ctx.ops.len(),
            ctx,
            plan,
            kept: 0,
            ahead: iter.next(),
            iter,
            rest: None,
            key: None,
        }
    }

    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), Error> {
        let ObjWalk::InPlace {
            ctx,
            plan,
            kept,
            ahead,
            iter,
            rest,
            ..
        } = self
        else {
            unreachable!("build mode fields go to serde_json")
        };
        let step = field_step(*plan, key);
        if step == Step::Redact {
            return Ok(());
        }
        let child = plan_of(step);
        if let Some(rest) = rest {
            rest.next.push((key.to_owned(), build(value, child)?));
            return Ok(());
        }
        match ahead.take() {
            Some((k, slot)) if k == key => {
                let base = ctx.path.len();
                push_key(&mut ctx.path, key);
                let done = value.serialize(Walker {
                    target: slot,
                    plan: child,
                    ctx,
                })?;
                apply(slot, done);
                ctx.path.truncate(base);
                *kept += 1;
                *ahead = iter.next();
            }
            other => {
                let mut prev: Vec<(&'a String, &'a mut Value)> = other.into_iter().collect();
                prev.extend(iter);
                *rest = Some(Rest {
                    prev,
                    next: vec![(key.to_owned(), build(value, child)?)],
                });
            }
        }
        Ok(())
    }

    fn finish(self) -> Result<Done, Error> {
        match self {
            ObjWalk::Build {
                inner,
                target,
                plan,
                ctx,
            } => Walker { target, plan, ctx }.rebuilt(ser::SerializeMap::end(inner)),
            ObjWalk::InPlace {
                ctx,
                ops_start,
                kept,
                ahead,
                iter,
                rest,
                ..
            } => {
                let base = ctx.path.len();
                let rest = match rest {
                    Some(rest) => rest,
                    None => {
                        let Some(first) = ahead else {
                            return Ok(Done::Same);
                        };
                        // Trailing old keys the new value does not have.
                        let gone: Vec<PatchOp> = std::iter::once(first)
                            .chain(iter)
                            .map(|(k, _)| {
                                push_key(&mut ctx.path, k);
                                let path = ctx.path.clone();
                                ctx.path.truncate(base);
                                PatchOp::Remove { path }
                            })
                            .collect();
                        ctx.ops.splice(ops_start..ops_start, gone);
                        return Ok(Done::Splice {
                            keep: kept,
                            rest: Vec::new(),
                        });
                    }
                };
                ctx.reordered = true;
                let next_keys: HashSet<&str> = rest.next.iter().map(|(k, _)| k.as_str()).collect();
                let prev_at: HashMap<&str, usize> = rest
                    .prev
                    .iter()
                    .enumerate()
                    .map(|(i, (k, _))| (k.as_str(), i))
                    .collect();
                let gone: Vec<PatchOp> = rest
                    .prev
                    .iter()
                    .filter(|(k, _)| !next_keys.contains(k.as_str()))
                    .map(|(k, _)| {
                        push_key(&mut ctx.path, k);
                        let path = ctx.path.clone();
                        ctx.path.truncate(base);
                        PatchOp::Remove { path }
                    })
                    .collect();
                for (k, n) in &rest.next {
                    push_key(&mut ctx.path, k);
                    match prev_at.get(k.as_str()) {
                        Some(&i) => diff_into(rest.prev[i].1, n, &mut ctx.path, &mut ctx.ops),
                        None => ctx.ops.push(PatchOp::Add {
                            path: ctx.path.clone(),
                            value: n.clone(),
                        }),
                    }
                    ctx.path.truncate(base);
                }
                ctx.ops.splice(ops_start..ops_start, gone);
                Ok(Done::Splice {
                    keep: kept,
                    rest: rest.next,
                })
            }
        }
    }
}

impl ser::SerializeMap for ObjWalk<'_, '_, '_> {
    type Ok = Done;
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        match self {
            ObjWalk::InPlace { key: slot, .. } => {
                *slot = Some(key_string(key)?);
                Ok(())
            }
            ObjWalk::Build { inner, .. } => inner.serialize_key(key),
        }
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        match self {
            ObjWalk::InPlace { key, .. } => {
                let k = key
                    .take()
                    .ok_or_else(|| ser::Error::custom("map value before its key"))?;
                self.field(&k, value)
            }
            ObjWalk::Build { inner, .. } => inner.serialize_value(value),
        }
    }
    fn end(self) -> Result<Done, Error> {
        self.finish()
    }
}

impl ser::SerializeStruct for ObjWalk<'_, '_, '_> {
    type Ok = Done;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        match self {
            ObjWalk::InPlace { .. } => self.field(key, value),
            ObjWalk::Build { inner, .. } => inner.serialize_entry(key, value),
        }
    }
    fn end(self) -> Result<Done, Error> {
        self.finish()
    }
}

/// `{"Variant": {...}}`.
enum StructVariantWalk<'a, 'c, 'p> {
    InPlace {
        inner: ObjWalk<'a, 'c, 'p>,
        /// The path length before the variant's key.
        base: usize,
    },
    Build {
        inner: ValueStructVariant,
        target: &'a mut Value,
        plan: Option<PlanNode<'p>>,
        ctx: &'c mut Ctx,
    },
}

impl ser::SerializeStructVariant for StructVariantWalk<'_, '_, '_> {
    type Ok = Done;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        match self {
            StructVariantWalk::InPlace { inner, .. } => inner.field(key, value),
            StructVariantWalk::Build { inner, .. } => {
                ser::SerializeStructVariant::serialize_field(inner, key, value)
            }
        }
    }
    fn end(self) -> Result<Done, Error> {
        match self {
            StructVariantWalk::InPlace { inner, base } => {
                // `finish` consumes the walker holding `ctx`: `finish_at` cuts the path after.
                let done = finish_at(inner, base)?;
                Ok(match done {
                    Done::Same => Done::Same,
                    other => Done::Inner(Box::new(other)),
                })
            }
            StructVariantWalk::Build {
                inner,
                target,
                plan,
                ctx,
            } => Walker { target, plan, ctx }.rebuilt(ser::SerializeStructVariant::end(inner)),
        }
    }
}

/// Finishes an in-place object walk, then cuts the path back to `base`.
fn finish_at(walk: ObjWalk<'_, '_, '_>, base: usize) -> Result<Done, Error> {
    match walk {
        ObjWalk::InPlace {
            ctx,
            plan,
            ops_start,
            kept,
            ahead,
            iter,
            rest,
            key,
        } => {
            let path_ctx: &mut Ctx = ctx;
            let done = ObjWalk::InPlace {
                ctx: &mut *path_ctx,
                plan,
                ops_start,
                kept,
                ahead,
                iter,
                rest,
                key,
            }
            .finish()?;
            path_ctx.path.truncate(base);
            Ok(done)
        }
        build => build.finish(),
    }
}
