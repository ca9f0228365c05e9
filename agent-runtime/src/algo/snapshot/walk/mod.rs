//! The incremental serializer: a [`serde::Serializer`] that walks a typed state against the
//! JSON tree of its previous serialization and updates the tree in place.
//!
//! Scalars are compared where they stand, so an unchanged state allocates nothing; a node
//! that differs is written into the tree and reported as a patch op. The ops are exactly
//! those of [`crate::algo::diff::diff`] (semantics §1) between the old and the new tree:
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
//!
//! A [`TrackedVec`](crate::TrackedVec) or [`TrackedMap`](crate::TrackedMap) the tree holds a
//! [`Mark`] for is walked sparsely: it sends only the elements (entries) of the chunks changed
//! since (see [`crate::algo::tracked::handshake`]), and the others are left as they stand,
//! unvisited.

use std::sync::Arc;

use serde::ser::{self, Serialize};
use serde_json::value::Serializer as ValueSer;
use serde_json::Value;
use tea_agent_schema::redact::{PlanNode, Step};

use super::marks::{Mark, Marks};
use crate::algo::diff::{diff_into, push_key, PatchOp};
use crate::algo::snapshot::olds::Olds;
use crate::algo::tracked::handshake::{self, Held};
use crate::algo::tree::{find, Node, NodeMap};

mod object;
mod seq;

use object::{ObjWalk, StructVariantWalk};
use seq::{SeqWalk, TupleVariantWalk};

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
    /// The marks of the tree before the walk.
    pub marks: Marks,
    /// The vectors walked in place: the marks to record once the walk is done.
    pub fresh: Vec<(String, Mark)>,
    /// A tree whose list elements this walk's new elements share when their text is the
    /// same (the stored tree shares the published one's).
    pub share: Option<Arc<Node>>,
    /// When kept (the stored tree's walk, for the commit's inverse): the values the walk
    /// overwrites or removes, recorded before it does.
    pub olds: Option<Olds>,
}

impl Ctx {
    /// The node of `value` as the element at the current path: packed when it is a
    /// container, sharing [`Self::share`]'s text there when it is the same.
    fn element(&self, value: &Value) -> Node {
        match (Node::element(value), &self.share) {
            (Node::Packed(raw), Some(share)) => match find(share, &self.path) {
                Some(Node::Packed(theirs)) if theirs.get() == raw.get() => {
                    Node::Packed(theirs.clone())
                }
                _ => Node::Packed(raw),
            },
            (node, _) => node,
        }
    }

    /// Keeps `old()`, the value at the current path the walk is about to overwrite or
    /// remove, when the walk keeps [`Self::olds`].
    fn record(&mut self, old: impl FnOnce() -> Value) {
        if let Some(olds) = &mut self.olds {
            olds.record(&self.path, old());
        }
    }

    fn replace(&mut self, value: Value) {
        self.ops.push(PatchOp::Replace {
            path: self.path.clone(),
            value,
        });
    }

    /// Answers a tracked collection's offer for the node at the current path, whose tree
    /// holds `held` elements: when the tree holds a mark for that collection, replies (the
    /// collection then sends only its changes) and gives its length. Also gives the mark
    /// to record once the node is walked.
    fn answer(
        &self,
        offer: Option<handshake::Offer>,
        held: usize,
    ) -> (Option<usize>, Option<Mark>) {
        let Some(o) = offer else {
            return (None, None);
        };
        let sparse = self
            .marks
            .get(&self.path)
            .filter(|seen| seen.id == o.id)
            .map(|seen| {
                handshake::reply(Held {
                    version: seen.version,
                    held,
                });
                o.len
            });
        let mark = Mark {
            id: o.id,
            version: o.version,
        };
        (sparse, Some(mark))
    }

    /// Records the ops from `target` to `new` and puts `new` in place (packed when it is a
    /// container standing in an array).
    fn settle(&mut self, target: &mut Node, new: Value, in_array: bool) {
        let old = target.to_value();
        diff_into(&old, &new, &mut self.path, &mut self.ops);
        self.record(|| old);
        *target = if in_array {
            self.element(&new)
        } else {
            Node::from_value(new)
        };
    }
}

/// Walks `state` against `tree` (its previous serialization, redacted by `plan`): afterwards
/// `tree` is the new serialization and `ctx.ops` holds the ops from the old tree to it. On an
/// error the tree is left half-updated: throw it away.
pub(crate) fn walk<T: Serialize + ?Sized>(
    state: &T,
    tree: &mut Node,
    plan: Option<PlanNode<'_>>,
    ctx: &mut Ctx,
) -> Result<(), Error> {
    let done = state.serialize(Walker {
        target: tree,
        plan,
        ctx,
        in_array: false,
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

fn apply(target: &mut Node, done: Done) {
    match (done, target) {
        (Done::Same, _) => {}
        (Done::Splice { keep, rest }, Node::Object(map)) => {
            let old = std::mem::take(&mut **map);
            let mut new = NodeMap::with_capacity(keep + rest.len());
            new.extend(old.into_iter().take(keep));
            new.extend(rest.into_iter().map(|(k, v)| (k, Node::from_value(v))));
            **map = new;
        }
        (Done::Inner(inner), Node::Object(map)) => {
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

/// Walks one value against `target`.
struct Walker<'a, 'c, 'p> {
    target: &'a mut Node,
    plan: Option<PlanNode<'p>>,
    ctx: &'c mut Ctx,
    /// The target is an array's element (a container there is packed).
    in_array: bool,
}

impl<'a, 'c, 'p> Walker<'a, 'c, 'p> {
    fn scalar(self, new: Value) -> Result<Done, Error> {
        if !self.target.same_as(&new) {
            self.ctx.record(|| self.target.to_value());
            self.ctx.replace(new.clone());
            *self.target = Node::from_value(new);
        }
        Ok(Done::Same)
    }

    /// An array: walked in place when the tree holds one there (sparsely when `offer` comes
    /// from a tracked vector the tree holds a mark for), built otherwise.
    fn seq(
        self,
        len: Option<usize>,
        offer: Option<handshake::Offer>,
    ) -> Result<SeqWalk<'a, 'c, 'p>, Error> {
        if !matches!(self.target, Node::Array(_)) {
            return Ok(SeqWalk::Build {
                inner: ser::Serializer::serialize_seq(ValueSer, len)?,
                walker: self,
            });
        }
        let Walker {
            target, plan, ctx, ..
        } = self;
        let Node::Array(vec) = target else {
            unreachable!("checked just above")
        };
        let item = plan.map_or(Step::Plain, |p| p.item());
        let (sparse, mark) = ctx.answer(offer, vec.len());
        Ok(SeqWalk::InPlace {
            prev_len: vec.len(),
            vec,
            index: 0,
            item: plan_of(item),
            ctx,
            base_path: None,
            sparse,
            mark,
            added: Vec::new(),
        })
    }

    /// An object: walked in place when the tree holds one there (sparsely when `offer` comes
    /// from a tracked map the tree holds a mark for), built otherwise.
    fn map(
        self,
        len: Option<usize>,
        offer: Option<handshake::Offer>,
    ) -> Result<ObjWalk<'a, 'c, 'p>, Error> {
        if !matches!(self.target, Node::Object(_)) {
            return Ok(ObjWalk::Build {
                inner: ser::Serializer::serialize_map(ValueSer, len)?,
                walker: self,
            });
        }
        let Walker {
            target, plan, ctx, ..
        } = self;
        let Node::Object(map) = target else {
            unreachable!("checked just above")
        };
        let (sparse, mark) = ctx.answer(offer, map.len());
        Ok(ObjWalk::tracked(map, plan, ctx, sparse, mark))
    }

    /// Settles a value built from scratch (redacted by this node's plan).
    fn rebuilt(self, built: Result<Value, Error>) -> Result<Done, Error> {
        let mut v = built?;
        if let Some(p) = self.plan {
            p.strip(&mut v);
        }
        self.ctx.settle(self.target, v, self.in_array);
        Ok(Done::Same)
    }
}

/// The one value of `target` when it is `{variant: value}`.
fn variant_slot<'a>(target: &'a mut Node, variant: &str) -> Option<&'a mut Node> {
    match target {
        Node::Object(map) if map.len() == 1 => {
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
        if let Node::String(s) = &*self.target {
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
        if step == Step::Redact || variant_slot(&mut *self.target, variant).is_none() {
            let built = ValueSer.serialize_newtype_variant(name, index, variant, value);
            return self.rebuilt(built);
        }
        let Walker { target, ctx, .. } = self;
        let Some(slot) = variant_slot(target, variant) else {
            unreachable!("checked just above")
        };
        let base = ctx.path.len();
        push_key(&mut ctx.path, variant);
        let done = value.serialize(Walker {
            target: slot,
            plan: plan_of(step),
            ctx,
            in_array: false,
        })?;
        apply(slot, done);
        ctx.path.truncate(base);
        Ok(Done::Same)
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<SeqWalk<'a, 'c, 'p>, Error> {
        // First thing: a tracked vector's offer is only valid on entry.
        let offer = handshake::take_offer();
        self.seq(len, offer)
    }
    fn serialize_tuple(self, len: usize) -> Result<SeqWalk<'a, 'c, 'p>, Error> {
        self.seq(Some(len), None)
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<SeqWalk<'a, 'c, 'p>, Error> {
        self.seq(Some(len), None)
    }
    fn serialize_tuple_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<TupleVariantWalk<'a, 'c, 'p>, Error> {
        let step = field_step(self.plan, variant);
        if step == Step::Redact
            || !matches!(
                variant_slot(&mut *self.target, variant),
                Some(Node::Array(_))
            )
        {
            return Ok(TupleVariantWalk::Build {
                inner: ValueSer.serialize_tuple_variant(name, index, variant, len)?,
                walker: self,
            });
        }
        let Walker { target, ctx, .. } = self;
        let Some(Node::Array(vec)) = variant_slot(target, variant) else {
            unreachable!("checked just above")
        };
        let base = ctx.path.len();
        push_key(&mut ctx.path, variant);
        let item = plan_of(step).map_or(Step::Plain, |p| p.item());
        Ok(TupleVariantWalk::InPlace(SeqWalk::InPlace {
            prev_len: vec.len(),
            vec,
            index: 0,
            item: plan_of(item),
            ctx,
            base_path: Some(base),
            sparse: None,
            mark: None,
            added: Vec::new(),
        }))
    }
    fn serialize_map(self, len: Option<usize>) -> Result<ObjWalk<'a, 'c, 'p>, Error> {
        // First thing: a tracked map's offer is only valid on entry.
        let offer = handshake::take_offer();
        self.map(len, offer)
    }
    fn serialize_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<ObjWalk<'a, 'c, 'p>, Error> {
        self.map(Some(len), None)
    }
    fn serialize_struct_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<StructVariantWalk<'a, 'c, 'p>, Error> {
        let step = field_step(self.plan, variant);
        if step == Step::Redact
            || !matches!(
                variant_slot(&mut *self.target, variant),
                Some(Node::Object(_))
            )
        {
            return Ok(StructVariantWalk::Build {
                inner: ValueSer.serialize_struct_variant(name, index, variant, len)?,
                walker: self,
            });
        }
        let Walker { target, ctx, .. } = self;
        let Some(Node::Object(map)) = variant_slot(target, variant) else {
            unreachable!("checked just above")
        };
        let base = ctx.path.len();
        push_key(&mut ctx.path, variant);
        Ok(StructVariantWalk::InPlace {
            inner: ObjWalk::in_place(map, plan_of(step), ctx),
            base,
        })
    }
}
