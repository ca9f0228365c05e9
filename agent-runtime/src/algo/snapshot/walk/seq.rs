//! Arrays (sequences, tuples, tuple structs and tuple variants) walked in place.

use agent_schema::redact::PlanNode;
use serde::ser::{self, Serialize};
use serde_json::Value;

use super::{apply, build, Ctx, Done, Error, ValueSeq, ValueTupleVariant, Walker};
use crate::algo::diff::{push_index, PatchOp};
use crate::algo::snapshot::marks::Mark;
use crate::algo::tracked::handshake;

/// An array walked in place, or built when the tree holds something else there.
pub(super) enum SeqWalk<'a, 'c, 'p> {
    InPlace {
        vec: &'a mut Vec<Value>,
        prev_len: usize,
        index: usize,
        item: Option<PlanNode<'p>>,
        ctx: &'c mut Ctx,
        /// For a tuple variant: the path length to restore at the end.
        base_path: Option<usize>,
        /// A tracked vector sending only its changed elements: its length.
        sparse: Option<usize>,
        /// A tracked vector: the mark to record when done.
        mark: Option<Mark>,
    },
    Build {
        inner: ValueSeq,
        target: &'a mut Value,
        plan: Option<PlanNode<'p>>,
        ctx: &'c mut Ctx,
    },
}

impl SeqWalk<'_, '_, '_> {
    pub(super) fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        match self {
            SeqWalk::InPlace {
                vec,
                prev_len,
                index,
                item,
                ctx,
                sparse,
                ..
            } => {
                if sparse.is_some() {
                    if let Some(at) = handshake::take_index() {
                        *index = at;
                    }
                }
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

    pub(super) fn finish(self) -> Result<Done, Error> {
        match self {
            SeqWalk::InPlace {
                vec,
                prev_len,
                mut index,
                ctx,
                base_path,
                sparse,
                mark,
                ..
            } => {
                if let Some(len) = sparse {
                    index = len;
                }
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
                if let Some(m) = mark {
                    ctx.fresh.push((ctx.path.clone(), m));
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
pub(super) enum TupleVariantWalk<'a, 'c, 'p> {
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
